//! Tests of the typed disconnect and state reasons: each reads as it is recorded.

use super::*;

/// The reasons are the `reason` text of `connection` events: the text is the interface.
#[test]
fn reasons_read_as_they_are_recorded() {
    let lost = |d| StateReason::Lost(d).to_string();
    assert_eq!(lost(Disconnect::HandleReplaced), "handle replaced");
    assert_eq!(lost(Disconnect::WriteFailed), "write failed");
    assert_eq!(lost(Disconnect::NoReply { ms: 12 }), "no reply for 12 ms");
    assert_eq!(
        lost(Disconnect::Closed("eof".into())),
        "connection closed: eof"
    );
    assert_eq!(
        lost(Disconnect::Protocol("short".into())),
        "protocol error: short"
    );
    let host = "zk-0".to_string();
    let connected = |new_timeout_ms| StateReason::Connected {
        host: host.clone(),
        session: 0x1f,
        new_timeout_ms,
    };
    assert_eq!(
        connected(Some(400)).to_string(),
        "zk-0: new session 0x1f, timeout 400 ms"
    );
    assert_eq!(connected(None).to_string(), "zk-0: session 0x1f");
    assert_eq!(
        StateReason::Expired {
            host: host.clone(),
            session: 0x1f
        }
        .to_string(),
        "zk-0: session 0x1f expired"
    );
    assert_eq!(
        StateReason::TimedOut { elapsed_ms: 401 }.to_string(),
        "session timeout elapsed while SUSPENDED (401 ms): injecting an expiration"
    );
}
