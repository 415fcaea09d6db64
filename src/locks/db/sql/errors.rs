//! The ERR packets the SQL front-end itself answers with: MySQL's error numbers,
//! SQLSTATEs (MySQL's error reference) and MariaDB's wording.

use crate::locks::db::model::projection_sqlstate as sqlstate;
use crate::net::mysql::ServerError;

/// An error with MySQL's number and the SQLSTATE that goes with it.
pub(crate) fn error(code: u16, message: impl Into<String>) -> ServerError {
    ServerError {
        code,
        sqlstate: sqlstate(code).to_string(),
        message: message.into(),
    }
}

/// 1064 `ER_PARSE_ERROR`: `near` is the text from where reading failed.
pub(crate) fn syntax(near: &str, line: u64) -> ServerError {
    let near: String = near.chars().take(80).collect();
    error(
        1064,
        format!(
            "You have an error in your SQL syntax; check the manual that corresponds to your \
             MariaDB server version for the right syntax to use near '{near}' at line {line}"
        ),
    )
}

/// 1065 `ER_EMPTY_QUERY`.
pub(crate) fn empty() -> ServerError {
    error(1065, "Query was empty")
}

/// 1146 `ER_NO_SUCH_TABLE`.
pub(crate) fn no_such_table(db: &str, table: &str) -> ServerError {
    error(1146, format!("Table '{db}.{table}' doesn't exist"))
}

/// 1050 `ER_TABLE_EXISTS_ERROR`.
pub(crate) fn table_exists(table: &str) -> ServerError {
    error(1050, format!("Table '{table}' already exists"))
}

/// 1049 `ER_BAD_DB_ERROR`.
pub(crate) fn unknown_database(db: &str) -> ServerError {
    error(1049, format!("Unknown database '{db}'"))
}

/// 1054 `ER_BAD_FIELD_ERROR`; `clause` as MariaDB 10.11 names it (`WHERE`, `SELECT`,
/// `SET`, `INSERT INTO`; MySQL says `where clause`, `field list`).
pub(crate) fn unknown_column(column: &str, clause: &str) -> ServerError {
    error(1054, format!("Unknown column '{column}' in '{clause}'"))
}

/// 1193 `ER_UNKNOWN_SYSTEM_VARIABLE`.
pub(crate) fn unknown_variable(name: &str) -> ServerError {
    error(1193, format!("Unknown system variable '{name}'"))
}

/// 1231 `ER_WRONG_VALUE_FOR_VAR`.
pub(crate) fn wrong_value(var: &str, value: &str) -> ServerError {
    error(
        1231,
        format!("Variable '{var}' can't be set to the value of '{value}'"),
    )
}

/// 1115 `ER_UNKNOWN_CHARACTER_SET`.
pub(crate) fn unknown_charset(name: &str) -> ServerError {
    error(1115, format!("Unknown character set: '{name}'"))
}

/// 1136 `ER_WRONG_VALUE_COUNT_ON_ROW`.
pub(crate) fn value_count() -> ServerError {
    error(1136, "Column count doesn't match value count at row 1")
}

/// 1364 `ER_NO_DEFAULT_FOR_FIELD`.
pub(crate) fn no_default(column: &str) -> ServerError {
    error(
        1364,
        format!("Field '{column}' doesn't have a default value"),
    )
}

/// 1235 `ER_NOT_SUPPORTED_YET`, worded for locksim: valid SQL the model does not run.
pub(crate) fn unsupported(what: &str) -> ServerError {
    error(
        1235,
        format!("This version of locksim's MariaDB model doesn't yet support '{what}'"),
    )
}

/// 1232 `ER_WRONG_TYPE_FOR_VAR`.
pub(crate) fn wrong_type(var: &str) -> ServerError {
    error(1232, format!("Incorrect argument type to variable '{var}'"))
}
