//! The replies to a command as packets: OK, ERR, and a text result set (column count,
//! column definitions, EOF, rows, EOF), encoded from a [`QueryResult`] by the server and
//! decoded back into one by the client ([`ReplyDecoder`]).
//!
//! EOF packets are the classic ones (`CLIENT_DEPRECATE_EOF` is never agreed), so old and
//! new clients read the same bytes. A column's catalog, schema and table are written as
//! `def` and empty names and are not kept when read: [`QueryResult`] holds names and types.

use super::capabilities::{CHARSET_BINARY, CHARSET_UTF8MB4};
use super::error::WireError;
use super::packet::encode_packet;
use super::payload::{put_lenenc_bytes, put_lenenc_int, Reader};
use super::result::{Column, ColumnType, QueryResult, ServerError};

/// An OK packet's first byte.
const OK: u8 = 0x00;
/// An ERR packet's first byte.
pub(crate) const ERR: u8 = 0xFF;
/// An EOF packet's first byte.
const EOF: u8 = 0xFE;
/// A NULL value in a text row.
const NULL: u8 = 0xFB;
/// `BINARY_FLAG`.
const BINARY_FLAG: u16 = 0x0080;
/// `NUM_FLAG`.
const NUM_FLAG: u16 = 0x8000;

/// Append `result` as the packets answering a command, the first with sequence id `seq`;
/// `status` goes into the EOF packets of a result set (an OK packet carries its own).
/// Returns the sequence id the next packet of the exchange would take.
pub(crate) fn encode_reply(
    result: &QueryResult,
    status: u16,
    seq: u8,
    out: &mut Vec<u8>,
) -> Result<u8, WireError> {
    let mut seq = seq;
    let mut put = |payload: &[u8], out: &mut Vec<u8>| -> Result<(), WireError> {
        encode_packet(seq, payload, out)?;
        seq = seq.wrapping_add(1);
        Ok(())
    };
    match result {
        QueryResult::Ok {
            affected_rows,
            last_insert_id,
            warnings,
            status,
        } => put(
            &ok_payload(*affected_rows, *last_insert_id, *status, *warnings),
            out,
        )?,
        QueryResult::Err(e) => put(&err_payload(e), out)?,
        QueryResult::Rows { columns, rows } => {
            let mut count = Vec::new();
            put_lenenc_int(&mut count, columns.len() as u64);
            put(&count, out)?;
            for column in columns {
                put(&column_payload(column), out)?;
            }
            put(&eof_payload(status), out)?;
            for row in rows {
                put(&row_payload(row), out)?;
            }
            put(&eof_payload(status), out)?;
        }
    }
    Ok(seq)
}

/// An OK packet's payload.
pub(crate) fn ok_payload(
    affected_rows: u64,
    last_insert_id: u64,
    status: u16,
    warnings: u16,
) -> Vec<u8> {
    let mut out = vec![OK];
    put_lenenc_int(&mut out, affected_rows);
    put_lenenc_int(&mut out, last_insert_id);
    out.extend_from_slice(&status.to_le_bytes());
    out.extend_from_slice(&warnings.to_le_bytes());
    out
}

/// An ERR packet's payload (the SQLSTATE cut or padded to its five characters).
pub(crate) fn err_payload(e: &ServerError) -> Vec<u8> {
    let mut out = vec![ERR];
    out.extend_from_slice(&e.code.to_le_bytes());
    out.push(b'#');
    let mut state: Vec<u8> = e.sqlstate.bytes().take(5).collect();
    state.resize(5, b'0');
    out.extend_from_slice(&state);
    out.extend_from_slice(e.message.as_bytes());
    out
}

fn eof_payload(status: u16) -> Vec<u8> {
    let mut out = vec![EOF];
    out.extend_from_slice(&0u16.to_le_bytes()); // warnings
    out.extend_from_slice(&status.to_le_bytes());
    out
}

/// A Column Definition 41: charset, display length, flags and decimals as MariaDB reports
/// them for such a column, closely enough for clients to convert the text.
fn column_payload(column: &Column) -> Vec<u8> {
    let (charset, length, flags, decimals): (u8, u32, u16, u8) = match column.column_type {
        ColumnType::Long => (CHARSET_BINARY, 11, BINARY_FLAG | NUM_FLAG, 0),
        ColumnType::LongLong => (CHARSET_BINARY, 20, BINARY_FLAG | NUM_FLAG, 0),
        ColumnType::VarString | ColumnType::Other(_) => (CHARSET_UTF8MB4, 1024, 0, 0x27),
        ColumnType::Timestamp => (CHARSET_BINARY, 19, BINARY_FLAG, 0),
        ColumnType::DateTime => (CHARSET_BINARY, 23, BINARY_FLAG, 3),
        ColumnType::Null => (CHARSET_BINARY, 0, BINARY_FLAG, 0),
    };
    let mut out = Vec::with_capacity(32 + column.name.len() * 2);
    put_lenenc_bytes(&mut out, b"def");
    put_lenenc_bytes(&mut out, b""); // schema
    put_lenenc_bytes(&mut out, b""); // table
    put_lenenc_bytes(&mut out, b""); // org_table
    put_lenenc_bytes(&mut out, column.name.as_bytes());
    put_lenenc_bytes(&mut out, b""); // org_name
    out.push(0x0c); // the length of the fixed-size fields
    out.extend_from_slice(&u16::from(charset).to_le_bytes());
    out.extend_from_slice(&length.to_le_bytes());
    out.push(column.column_type.code());
    out.extend_from_slice(&flags.to_le_bytes());
    out.push(decimals);
    out.extend_from_slice(&[0, 0]);
    out
}

fn row_payload(row: &[Option<String>]) -> Vec<u8> {
    let mut out = Vec::new();
    for value in row {
        match value {
            None => out.push(NULL),
            Some(v) => put_lenenc_bytes(&mut out, v.as_bytes()),
        }
    }
    out
}

/// Reads an OK packet's payload (first byte 0x00) into [`QueryResult::Ok`].
pub(crate) fn decode_ok(payload: &[u8]) -> Result<QueryResult, WireError> {
    let mut r = Reader::new(payload);
    r.u8("an OK packet")?;
    Ok(QueryResult::Ok {
        affected_rows: r.lenenc_int("an OK packet's affected rows")?,
        last_insert_id: r.lenenc_int("an OK packet's last insert id")?,
        status: r.u16("an OK packet's status flags")?,
        warnings: r.u16("an OK packet's warning count")?,
    })
}

/// Reads an ERR packet's payload (first byte 0xFF). An ERR sent before the handshake
/// completed may lack the SQLSTATE: `HY000` then.
pub(crate) fn decode_err(payload: &[u8]) -> Result<ServerError, WireError> {
    let mut r = Reader::new(payload);
    r.u8("an ERR packet")?;
    let code = r.u16("an ERR packet's error number")?;
    let sqlstate = if r.peek() == Some(b'#') {
        r.u8("")?;
        String::from_utf8_lossy(r.bytes(5, "an ERR packet's SQLSTATE")?).into_owned()
    } else {
        "HY000".to_string()
    };
    let message = String::from_utf8_lossy(r.rest()).into_owned();
    Ok(ServerError {
        code,
        sqlstate,
        message,
    })
}

/// Whether a payload is an EOF packet (0xFE and shorter than 9 bytes: a row whose first
/// value's length starts with 0xFE is at least 9 bytes long).
fn is_eof(payload: &[u8]) -> bool {
    payload.first() == Some(&EOF) && payload.len() < 9
}

/// Where a [`ReplyDecoder`] is in the reply.
#[derive(Debug)]
enum Stage {
    /// Nothing read yet.
    First,
    /// Reading column definitions; this many are due in all.
    Columns(usize),
    /// The EOF after the column definitions is due.
    ColumnsEof,
    /// Reading rows until an EOF.
    Rows,
    /// The reply is complete.
    Done,
}

/// Turns the packets answering one command back into a [`QueryResult`] (sans-io: the
/// caller reads packets and checks their sequence ids).
#[derive(Debug)]
pub(crate) struct ReplyDecoder {
    stage: Stage,
    columns: Vec<Column>,
    rows: Vec<Vec<Option<String>>>,
}

impl Default for ReplyDecoder {
    fn default() -> Self {
        ReplyDecoder {
            stage: Stage::First,
            columns: Vec::new(),
            rows: Vec::new(),
        }
    }
}

impl ReplyDecoder {
    /// Reads the reply's next packet payload: the result once it is complete.
    pub(crate) fn push(&mut self, payload: &[u8]) -> Result<Option<QueryResult>, WireError> {
        let first_byte = payload.first().copied().unwrap_or(0);
        match self.stage {
            Stage::First => match first_byte {
                OK => self.finish(decode_ok(payload)),
                ERR => self.finish(decode_err(payload).map(QueryResult::Err)),
                NULL | EOF => Err(WireError::Unexpected {
                    expected: "OK, ERR or a result set's column count",
                    first_byte,
                }),
                _ => {
                    let mut r = Reader::new(payload);
                    let n = r.lenenc_int("a result set's column count")?;
                    let n = usize::try_from(n)
                        .ok()
                        .filter(|&n| n > 0 && n <= 4096)
                        .ok_or(WireError::Malformed {
                            expected: "a column count between 1 and 4096",
                        })?;
                    self.stage = Stage::Columns(n);
                    Ok(None)
                }
            },
            Stage::Columns(n) => {
                self.columns.push(decode_column(payload)?);
                if self.columns.len() == n {
                    self.stage = Stage::ColumnsEof;
                }
                Ok(None)
            }
            Stage::ColumnsEof if is_eof(payload) => {
                self.stage = Stage::Rows;
                Ok(None)
            }
            Stage::ColumnsEof => Err(WireError::Unexpected {
                expected: "the EOF after the column definitions",
                first_byte,
            }),
            Stage::Rows if is_eof(payload) => {
                let result = QueryResult::Rows {
                    columns: std::mem::take(&mut self.columns),
                    rows: std::mem::take(&mut self.rows),
                };
                self.finish(Ok(result))
            }
            // A statement can fail while its rows are sent.
            Stage::Rows if first_byte == ERR => {
                self.finish(decode_err(payload).map(QueryResult::Err))
            }
            Stage::Rows => {
                let row = decode_row(payload, self.columns.len())?;
                self.rows.push(row);
                Ok(None)
            }
            Stage::Done => Err(WireError::Unexpected {
                expected: "nothing (the reply was complete)",
                first_byte,
            }),
        }
    }

    fn finish(
        &mut self,
        result: Result<QueryResult, WireError>,
    ) -> Result<Option<QueryResult>, WireError> {
        self.stage = Stage::Done;
        result.map(Some)
    }
}

/// Reads a Column Definition 41, keeping the name and type.
fn decode_column(payload: &[u8]) -> Result<Column, WireError> {
    let mut r = Reader::new(payload);
    for field in [
        "a column's catalog",
        "a column's schema",
        "a column's table",
        "a column's original table",
    ] {
        r.lenenc_bytes(field)?;
    }
    let name = r.lenenc_str("a column's name")?;
    r.lenenc_bytes("a column's original name")?;
    r.lenenc_int("the length of a column's fixed fields")?;
    r.u16("a column's character set")?;
    r.u32("a column's length")?;
    let code = r.u8("a column's type")?;
    Ok(Column {
        name,
        column_type: ColumnType::of_code(code),
    })
}

/// Reads a text row of `n` values.
fn decode_row(payload: &[u8], n: usize) -> Result<Vec<Option<String>>, WireError> {
    let mut r = Reader::new(payload);
    let mut row = Vec::with_capacity(n);
    for _ in 0..n {
        if r.peek() == Some(NULL) {
            r.u8("")?;
            row.push(None);
        } else {
            row.push(Some(r.lenenc_str("a row's value")?));
        }
    }
    if !r.is_empty() {
        return Err(WireError::Malformed {
            expected: "a row with as many values as columns",
        });
    }
    Ok(row)
}
