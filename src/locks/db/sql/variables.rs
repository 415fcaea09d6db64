//! Session variables: what `SET` may change (`autocommit`, `innodb_lock_wait_timeout`,
//! `wait_timeout`, the isolation level, the character set) and what `SELECT @@…` reads.

use super::errors;
use super::expr;
use crate::locks::db::model::{ConnId, Db, Now, SessionVars};
use crate::net::mysql::{ColumnType, ServerError};
use sqlparser::ast::{
    ContextModifier, Expr, Ident, ObjectName, Set, TransactionIsolationLevel, TransactionMode,
    Value,
};

/// The version locksim's server reports (`@@version`, `VERSION()`).
pub(crate) const SERVER_VERSION: &str = "10.11.19-MariaDB-locksim";

/// `@@max_allowed_packet`: MariaDB's default.
const MAX_ALLOWED_PACKET: u64 = 16 * 1024 * 1024;

/// The character sets `SET NAMES` accepts (the wire carries bytes; locksim compares
/// names bytewise whichever is chosen).
const CHARSETS: [&str; 6] = ["utf8mb4", "utf8", "utf8mb3", "latin1", "binary", "ascii"];

/// Whole seconds of a nanosecond setting (a model configured in milliseconds shows
/// the fraction, e.g. `0.500`).
fn seconds_text(ns: i64) -> String {
    if ns % 1_000_000_000 == 0 {
        (ns / 1_000_000_000).to_string()
    } else {
        format!("{:.3}", ns as f64 / 1e9)
    }
}

/// The value and type of `@@name` (name without `@@` and scope) for session `conn`.
pub(crate) fn read(
    db: &Db,
    conn: ConnId,
    name: &str,
) -> Result<(Option<String>, ColumnType), ServerError> {
    let vars = db
        .vars(conn)
        .ok_or_else(|| errors::unsupported("a closed session"))?;
    let int = |v: String| Ok((Some(v), ColumnType::LongLong));
    let text = |v: &str| Ok((Some(v.to_string()), ColumnType::VarString));
    match name.to_ascii_lowercase().as_str() {
        "version" => text(SERVER_VERSION),
        "version_comment" => text("locksim"),
        "autocommit" => int(u8::from(vars.autocommit).to_string()),
        "tx_isolation" | "transaction_isolation" => text("REPEATABLE-READ"),
        "innodb_lock_wait_timeout" => int(seconds_text(vars.lock_wait_timeout_ns)),
        "wait_timeout" | "interactive_timeout" => int(seconds_text(vars.wait_timeout_ns)),
        "max_allowed_packet" => int(MAX_ALLOWED_PACKET.to_string()),
        "tx_read_only" | "transaction_read_only" | "in_transaction" => {
            let in_trans = db.status(conn) & crate::net::mysql::SERVER_STATUS_IN_TRANS != 0;
            int(if name.eq_ignore_ascii_case("in_transaction") {
                u8::from(in_trans).to_string()
            } else {
                "0".into()
            })
        }
        "character_set_client" | "character_set_connection" | "character_set_results" => {
            text("utf8mb4")
        }
        "collation_connection" => text("utf8mb4_general_ci"),
        "lower_case_table_names" => int("0".into()),
        "time_zone" | "system_time_zone" => text("UTC"),
        "sql_mode" => text("STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"),
        _ => Err(errors::unknown_variable(name)),
    }
}

/// The variable an `@@…` expression reads, without `@@` and scope.
pub(crate) fn system_variable(e: &Expr) -> Option<String> {
    let strip = |s: &str| s.strip_prefix("@@").map(str::to_string);
    match e {
        Expr::Identifier(Ident { value, .. }) => strip(value),
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            let scope = strip(&parts[0].value)?;
            let known = ["session", "global", "local"];
            known
                .iter()
                .any(|k| scope.eq_ignore_ascii_case(k))
                .then(|| parts[1].value.clone())
        }
        _ => None,
    }
}

/// Run a `SET` statement: Ok with the new settings applied.
pub(crate) fn set(db: &mut Db, conn: ConnId, stmt: &Set, now: Now) -> Result<(), ServerError> {
    let mut vars = db
        .vars(conn)
        .ok_or_else(|| errors::unsupported("a closed session"))?;
    match stmt {
        Set::SetNames { charset_name, .. } => {
            let cs = charset_name.value.to_ascii_lowercase();
            if !CHARSETS.contains(&cs.as_str()) {
                return Err(errors::unknown_charset(&charset_name.value));
            }
        }
        Set::SetNamesDefault {} => {}
        Set::SingleAssignment {
            scope,
            hivevar: false,
            variable,
            values,
        } if values.len() == 1 => assign(&mut vars, scope.as_ref(), variable, &values[0])?,
        Set::MultipleAssignments { assignments } => {
            for a in assignments {
                assign(&mut vars, a.scope.as_ref(), &a.name, &a.value)?;
            }
        }
        // Without SESSION the level is for the next transaction: the same single level.
        Set::SetTransaction {
            modes,
            snapshot: None,
            ..
        } => {
            for m in modes {
                if !matches!(
                    m,
                    TransactionMode::IsolationLevel(TransactionIsolationLevel::RepeatableRead)
                ) {
                    return Err(errors::unsupported(&format!("SET TRANSACTION {m}")));
                }
            }
        }
        other => return Err(errors::unsupported(&other.to_string())),
    }
    db.set_vars(conn, vars, now);
    Ok(())
}

/// One `name = value` of a `SET`.
fn assign(
    vars: &mut SessionVars,
    scope: Option<&ContextModifier>,
    variable: &ObjectName,
    value: &Expr,
) -> Result<(), ServerError> {
    if matches!(scope, Some(ContextModifier::Global)) {
        return Err(errors::unsupported("SET GLOBAL"));
    }
    let full = variable.to_string();
    let name = match system_variable(&Expr::CompoundIdentifier(
        variable
            .0
            .iter()
            .filter_map(|p| p.as_ident().cloned())
            .collect(),
    )) {
        Some(n) => n,
        None => full.trim_start_matches("@@").to_string(),
    };
    if name.starts_with('@') {
        return Err(errors::unsupported("user variables"));
    }
    let lower = name.to_ascii_lowercase();
    let shown = value.to_string();
    let seconds = |max: i64| -> Result<i64, ServerError> {
        let n = expr::integer(value).ok_or_else(|| errors::wrong_type(&lower))?;
        // MariaDB clamps an out-of-range value (with a warning); locksim refuses it.
        if !(1..=max).contains(&n) {
            return Err(errors::wrong_value(&lower, &shown));
        }
        Ok(n * 1_000_000_000)
    };
    match lower.as_str() {
        "autocommit" => {
            vars.autocommit = match value {
                Expr::Value(v) => match &v.value {
                    Value::Number(n, _) if n == "1" => true,
                    Value::Number(n, _) if n == "0" => false,
                    Value::Boolean(b) => *b,
                    Value::SingleQuotedString(s) if s.eq_ignore_ascii_case("on") => true,
                    Value::SingleQuotedString(s) if s.eq_ignore_ascii_case("off") => false,
                    _ => return Err(errors::wrong_value(&lower, &shown)),
                },
                Expr::Identifier(i) if i.value.eq_ignore_ascii_case("on") => true,
                Expr::Identifier(i) if i.value.eq_ignore_ascii_case("off") => false,
                _ => return Err(errors::wrong_value(&lower, &shown)),
            }
        }
        "innodb_lock_wait_timeout" => vars.lock_wait_timeout_ns = seconds(1_073_741_824)?,
        "wait_timeout" => vars.wait_timeout_ns = seconds(31_536_000)?,
        "tx_isolation" | "transaction_isolation" => {
            let level = expr::string(value).unwrap_or_else(|| shown.clone());
            if !level.eq_ignore_ascii_case("REPEATABLE-READ") {
                return Err(errors::unsupported(&format!("SET {lower} = {shown}")));
            }
        }
        "character_set_client" | "character_set_connection" | "character_set_results" => {
            let cs = expr::string(value).unwrap_or_else(|| shown.clone());
            if !expr::is_null(value) && !CHARSETS.contains(&cs.to_ascii_lowercase().as_str()) {
                return Err(errors::unknown_charset(&cs));
            }
        }
        _ => {
            return match read_only_known(&lower) {
                true => Err(errors::unsupported(&format!("SET {lower}"))),
                false => Err(errors::unknown_variable(&name)),
            }
        }
    }
    Ok(())
}

/// Variables `SELECT @@…` knows but `SET` may not change.
fn read_only_known(name: &str) -> bool {
    matches!(
        name,
        "version"
            | "version_comment"
            | "max_allowed_packet"
            | "interactive_timeout"
            | "collation_connection"
            | "lower_case_table_names"
            | "time_zone"
            | "system_time_zone"
            | "sql_mode"
            | "tx_read_only"
            | "transaction_read_only"
            | "in_transaction"
    )
}
