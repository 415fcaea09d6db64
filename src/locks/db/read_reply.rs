//! What a statement's MySQL reply means to the lock client: the wire's [`QueryResult`]
//! read back into the client's typed [`Reply`] for the statement it sent. The same
//! reading serves the model and a real MariaDB, so it goes by column *names*, never by
//! position.

use super::model::{DbError, Reply, Row, Statement};
use crate::net::mysql::{Column, QueryResult};
use crate::net::CallError;

/// `stmt`'s reply, or an I/O error when the result is not what that statement returns
/// (a server that answers a `SELECT` with an OK packet is not one the client can trust).
pub(crate) fn read_reply(stmt: &Statement, result: QueryResult) -> Result<Reply, CallError> {
    match result {
        QueryResult::Ok {
            affected_rows,
            last_insert_id,
            ..
        } => Ok(Reply::Ok {
            affected: affected_rows,
            insert_id: (matches!(stmt, Statement::Insert { .. }) && last_insert_id > 0)
                .then_some(last_insert_id),
        }),
        QueryResult::Err(e) => Ok(Reply::Error(DbError {
            name: error_name(e.code),
            code: e.code,
            message: e.message,
        })),
        QueryResult::Rows { columns, rows } => read_rows(stmt, &columns, &rows),
    }
}

/// The symbolic name of the errors the client tells apart (the rest by number).
fn error_name(code: u16) -> String {
    match code {
        1062 => "ER_DUP_ENTRY".into(),
        1205 => "ER_LOCK_WAIT_TIMEOUT".into(),
        1213 => "ER_LOCK_DEADLOCK".into(),
        1290 => "ER_OPTION_PREVENTS_STATEMENT".into(),
        c => format!("ER_{c}"),
    }
}

fn unexpected(stmt: &Statement, what: &str) -> CallError {
    CallError::Io(format!("unexpected reply to {}: {what}", stmt.sql()))
}

fn read_rows(
    stmt: &Statement,
    columns: &[Column],
    rows: &[Vec<Option<String>>],
) -> Result<Reply, CallError> {
    match stmt {
        Statement::Select { .. } => {
            let Some(values) = rows.first() else {
                return Ok(Reply::Row {
                    row: None,
                    nextval: None,
                });
            };
            let get = |name: &str| {
                columns
                    .iter()
                    .position(|c| c.name.eq_ignore_ascii_case(name))
                    .and_then(|i| values.get(i).cloned().flatten())
            };
            let number = |name: &str| {
                get(name)
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| unexpected(stmt, &format!("no number in column {name}")))
            };
            let row = Row {
                id: number("id")?,
                name: get("name").unwrap_or_default(),
                owner: get("owner").unwrap_or_default(),
                version: number("version")?,
                // The client never reads the row's time: the server's clock decides.
                updated_at_ms: 0,
            };
            let nextval = columns
                .iter()
                .position(|c| c.name.to_ascii_uppercase().starts_with("NEXTVAL("))
                .map(|i| {
                    values
                        .get(i)
                        .cloned()
                        .flatten()
                        .and_then(|v| v.parse::<u64>().ok())
                        .ok_or_else(|| unexpected(stmt, "no NEXTVAL value"))
                })
                .transpose()?;
            Ok(Reply::Row {
                row: Some(row),
                nextval,
            })
        }
        Statement::NextVal { .. } => rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .and_then(|v| v.parse::<u64>().ok())
            .map(Reply::Value)
            .ok_or_else(|| unexpected(stmt, "no sequence value")),
        // A named-lock function's one column: a number, or NULL (an error, or nobody's).
        Statement::GetLock { .. }
        | Statement::ReleaseLock { .. }
        | Statement::IsFreeLock { .. }
        | Statement::IsUsedLock { .. }
        | Statement::ReleaseAllLocks => {
            let value = rows
                .first()
                .and_then(|r| r.first())
                .ok_or_else(|| unexpected(stmt, "no value"))?;
            match value {
                None => Ok(Reply::Scalar(None)),
                Some(v) => v
                    .parse::<i64>()
                    .map(|n| Reply::Scalar(Some(n)))
                    .map_err(|_| unexpected(stmt, &format!("not a number: {v}"))),
            }
        }
        // `SELECT 1`, a connection test: any result set is an answer.
        Statement::Ping => Ok(Reply::Ok {
            affected: 0,
            insert_id: None,
        }),
        _ => Err(unexpected(stmt, "a result set")),
    }
}
