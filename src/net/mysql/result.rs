//! What one statement answers, as MySQL's text protocol carries it: an OK packet, an
//! ERR packet, or a result set of text rows.

/// A column of a result set: its name as the server reports it and its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The column's name (the select list's alias or expression text).
    pub name: String,
    /// The column's type.
    pub column_type: ColumnType,
}

/// The column types locksim's server reports (MySQL's `MYSQL_TYPE_*` codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// `MYSQL_TYPE_LONG` (3): INT, and what MariaDB reports for integer literals
    /// (`SELECT 1`) and `GET_LOCK()`/`RELEASE_LOCK()`.
    Long,
    /// `MYSQL_TYPE_LONGLONG` (8): BIGINT, `COUNT(*)`.
    LongLong,
    /// `MYSQL_TYPE_VAR_STRING` (253): VARCHAR and string expressions.
    VarString,
    /// `MYSQL_TYPE_TIMESTAMP` (7).
    Timestamp,
    /// `MYSQL_TYPE_DATETIME` (12): `NOW(3)`.
    DateTime,
    /// `MYSQL_TYPE_NULL` (6): a bare `NULL`.
    Null,
    /// Any other code, as read from a real server.
    Other(u8),
}

impl ColumnType {
    /// The protocol's type code.
    pub fn code(self) -> u8 {
        match self {
            ColumnType::Long => 3,
            ColumnType::LongLong => 8,
            ColumnType::VarString => 253,
            ColumnType::Timestamp => 7,
            ColumnType::DateTime => 12,
            ColumnType::Null => 6,
            ColumnType::Other(c) => c,
        }
    }

    /// The type of a protocol code.
    pub fn of_code(code: u8) -> ColumnType {
        match code {
            3 => ColumnType::Long,
            8 => ColumnType::LongLong,
            253 => ColumnType::VarString,
            7 => ColumnType::Timestamp,
            12 => ColumnType::DateTime,
            6 => ColumnType::Null,
            c => ColumnType::Other(c),
        }
    }
}

/// An ERR packet: MySQL's error number, SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    /// The error number, e.g. 1062 (`ER_DUP_ENTRY`).
    pub code: u16,
    /// The five-character SQLSTATE, e.g. `23000`.
    pub sqlstate: String,
    /// The message.
    pub message: String,
}

/// The answer to one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryResult {
    /// An OK packet.
    Ok {
        /// Rows changed (MySQL's default: changed, not matched).
        affected_rows: u64,
        /// The `AUTO_INCREMENT` id an `INSERT` assigned (0: none).
        last_insert_id: u64,
        /// Warnings the statement raised.
        warnings: u16,
        /// `SERVER_STATUS_*` flags (in a transaction, autocommit).
        status: u16,
    },
    /// An ERR packet.
    Err(ServerError),
    /// A result set of text rows (`None`: SQL NULL).
    Rows {
        /// The columns.
        columns: Vec<Column>,
        /// The rows, each value as text.
        rows: Vec<Vec<Option<String>>>,
    },
}

/// `SERVER_STATUS_IN_TRANS`: a transaction is open.
pub const SERVER_STATUS_IN_TRANS: u16 = 0x0001;
/// `SERVER_STATUS_AUTOCOMMIT`: the session autocommits.
pub const SERVER_STATUS_AUTOCOMMIT: u16 = 0x0002;
