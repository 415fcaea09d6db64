//! How the reply to a statement that came as SQL text is shown: the select list's
//! columns, named as the statement wrote them, or an OK packet. A statement that waits
//! for a lock keeps its projection, so its result is shown the same way when it comes.

use super::*;
use crate::net::mysql::{Column, ColumnType, ServerError};

/// What one output column holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Out {
    /// A column of the row.
    Field(Field),
    /// The row's `NEXTVAL(seq)`.
    NextVal,
    /// The statement's scalar (a named-lock function's value, a lone `NEXTVAL`).
    Scalar,
    /// A value known before the statement ran (`1`, `@@version`, `CONNECTION_ID()`).
    Const(Option<String>, ColumnType),
}

/// One column of a result set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutColumn {
    /// The name the client sees (alias, or the expression as written).
    pub name: String,
    /// Its value.
    pub out: Out,
}

/// How a reply is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Projection {
    /// An OK packet (or ERR).
    Ok,
    /// A result set with these columns, one row per row the statement found (one row
    /// for a scalar).
    Columns(Vec<OutColumn>),
}

/// `MYSQL_TYPE_LONG`: what MariaDB reports for the named-lock functions.
pub(crate) const TYPE_LONG: ColumnType = ColumnType::Long;

impl Out {
    fn column_type(&self) -> ColumnType {
        match self {
            Out::Field(Field::Id | Field::Version) | Out::NextVal => ColumnType::LongLong,
            Out::Field(Field::Name | Field::Owner) => ColumnType::VarString,
            Out::Field(Field::UpdatedAt) => ColumnType::Timestamp,
            Out::Scalar => TYPE_LONG,
            Out::Const(_, t) => *t,
        }
    }
}

impl Projection {
    /// A result set of these columns with rows computed without the model.
    pub(crate) fn with_rows(&self, rows: Vec<Vec<Option<String>>>) -> QueryResult {
        let columns = match self {
            Projection::Ok => Vec::new(),
            Projection::Columns(cols) => cols
                .iter()
                .map(|c| Column {
                    name: c.name.clone(),
                    column_type: c.out.column_type(),
                })
                .collect(),
        };
        QueryResult::Rows { columns, rows }
    }

    /// The reply as a `QueryResult`, with the session's status flags.
    pub(crate) fn project(&self, reply: &Reply, status: u16) -> QueryResult {
        match (self, reply) {
            (_, Reply::Error(e)) => QueryResult::Err(server_error(e)),
            (Projection::Ok, _) | (Projection::Columns(_), Reply::Ok { .. }) => {
                let (affected_rows, last_insert_id) = match reply {
                    Reply::Ok {
                        affected,
                        insert_id,
                    } => (*affected, insert_id.unwrap_or(0)),
                    _ => (0, 0),
                };
                QueryResult::Ok {
                    affected_rows,
                    last_insert_id,
                    warnings: 0,
                    status,
                }
            }
            (Projection::Columns(cols), reply) => {
                let columns = cols
                    .iter()
                    .map(|c| Column {
                        name: c.name.clone(),
                        column_type: c.out.column_type(),
                    })
                    .collect();
                let rows = match reply {
                    Reply::Rows { rows, nextvals } => rows
                        .iter()
                        .enumerate()
                        .map(|(i, r)| row_values(cols, Some(r), nextvals.get(i).copied(), None))
                        .collect(),
                    Reply::Row { row, nextval } => row
                        .iter()
                        .map(|r| row_values(cols, Some(r), *nextval, None))
                        .collect(),
                    Reply::Value(v) => vec![row_values(cols, None, Some(*v), Some(*v as i64))],
                    Reply::Scalar(v) => vec![row_values(cols, None, None, *v)],
                    Reply::Ok { .. } | Reply::Error(_) => Vec::new(),
                };
                QueryResult::Rows { columns, rows }
            }
        }
    }
}

fn row_values(
    cols: &[OutColumn],
    row: Option<&Row>,
    nextval: Option<u64>,
    scalar: Option<i64>,
) -> Vec<Option<String>> {
    cols.iter()
        .map(|c| match &c.out {
            Out::Field(f) => row.map(|r| field_text(r, *f)),
            Out::NextVal => nextval.map(|v| v.to_string()),
            Out::Scalar => scalar.map(|v| v.to_string()),
            Out::Const(v, _) => v.clone(),
        })
        .collect()
}

/// A column's value as the text protocol carries it.
pub(crate) fn field_text(r: &Row, f: Field) -> String {
    match f {
        Field::Id => r.id.to_string(),
        Field::Name => r.name.clone(),
        Field::Owner => r.owner.clone(),
        Field::Version => r.version.to_string(),
        Field::UpdatedAt => timestamp_text(r.updated_at_ms),
    }
}

/// `TIMESTAMP(3)` text, UTC (the server's time zone): `2026-11-29 04:05:06.789`.
pub(crate) fn timestamp_text(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let in_day = ms.rem_euclid(86_400_000);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// The ERR packet of a model error: MySQL's SQLSTATE for its number, and MariaDB's
/// wording where it differs from the model's (the key of a duplicate is `'name'`).
pub(crate) fn server_error(e: &DbError) -> ServerError {
    let message = match e.code {
        ER_DUP_ENTRY => e
            .message
            .replace("for key 'method_lock.name'", "for key 'name'"),
        _ => e.message.clone(),
    };
    ServerError {
        code: e.code,
        sqlstate: sqlstate(e.code).to_string(),
        message,
    }
}

/// MySQL's SQLSTATE for an error number (its error reference).
pub(crate) fn sqlstate(code: u16) -> &'static str {
    match code {
        1062 => "23000",
        1213 => "40001",
        1050 => "42S01",
        1146 => "42S02",
        1054 => "42S22",
        1049 | 1064 | 1065 | 1115 | 1231 | 1232 | 1235 => "42000",
        1136 => "21S01",
        _ => "HY000",
    }
}
