//! The one database and table the model has: `locksim.method_lock`, and the answers
//! to `CREATE TABLE` and `USE`.

use super::errors;
use crate::net::mysql::ServerError;
use sqlparser::ast::{ObjectName, TableFactor};

/// The database's name.
pub(crate) const DATABASE: &str = "locksim";

/// The table's name.
pub(crate) const TABLE: &str = "method_lock";

/// The parts of a dotted name.
fn parts(n: &ObjectName) -> Vec<String> {
    n.0.iter()
        .map(|p| {
            p.as_ident()
                .map_or_else(|| p.to_string(), |i| i.value.clone())
        })
        .collect()
}

/// Whether `n` names `method_lock` (optionally `locksim.method_lock`). Names are
/// case-sensitive, as on a Linux server.
pub(crate) fn is_ours(n: &ObjectName) -> bool {
    match parts(n).as_slice() {
        [t] => t == TABLE,
        [d, t] => d == DATABASE && t == TABLE,
        _ => false,
    }
}

/// `Ok` for `method_lock`, else 1146 for the table named.
pub(crate) fn check_name(n: &ObjectName) -> Result<(), ServerError> {
    if is_ours(n) {
        return Ok(());
    }
    match parts(n).as_slice() {
        [t] => Err(errors::no_such_table(DATABASE, t)),
        [d, t] => Err(errors::no_such_table(d, t)),
        _ => Err(errors::unsupported(&n.to_string())),
    }
}

/// A `FROM` item: `method_lock` without anything around it.
pub(crate) fn check(t: &TableFactor) -> Result<(), ServerError> {
    match t {
        TableFactor::Table {
            name,
            args: None,
            with_hints,
            partitions,
            ..
        } if with_hints.is_empty() && partitions.is_empty() => check_name(name),
        other => Err(errors::unsupported(&other.to_string())),
    }
}

/// `USE db`.
pub(crate) fn use_database(n: &ObjectName) -> Result<(), ServerError> {
    match parts(n).as_slice() {
        [d] if d == DATABASE => Ok(()),
        [d] => Err(errors::unknown_database(d)),
        _ => Err(errors::unsupported(&format!("USE {n}"))),
    }
}
