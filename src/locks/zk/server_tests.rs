//! Tests of the server node's naming.

use super::*;

#[test]
fn server_names() {
    assert_eq!(server_index("zk-2"), 2);
}
