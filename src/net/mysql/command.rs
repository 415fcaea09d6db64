//! The command phase's requests: a command byte, then its argument. The text protocol's
//! commands locksim speaks; any other is [`Command::Other`], which the server answers
//! with error 1047 (`ER_UNKNOWN_COM_ERROR`).

use super::error::WireError;

/// `COM_QUIT`.
const COM_QUIT: u8 = 0x01;
/// `COM_INIT_DB`.
const COM_INIT_DB: u8 = 0x02;
/// `COM_QUERY`.
const COM_QUERY: u8 = 0x03;
/// `COM_PING`.
const COM_PING: u8 = 0x0e;

/// A client's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// `COM_QUIT`: the client closes the connection (no reply).
    Quit,
    /// `COM_INIT_DB`: make this database the default (`USE db`).
    InitDb(String),
    /// `COM_QUERY`: run this statement's text.
    Query(String),
    /// `COM_PING`: is the server alive.
    Ping,
    /// Any other command, by its code.
    Other(u8),
}

impl Command {
    /// The command packet's payload.
    pub(crate) fn encode(&self) -> Vec<u8> {
        match self {
            Command::Quit => vec![COM_QUIT],
            Command::Ping => vec![COM_PING],
            Command::InitDb(db) => [&[COM_INIT_DB][..], db.as_bytes()].concat(),
            Command::Query(sql) => [&[COM_QUERY][..], sql.as_bytes()].concat(),
            Command::Other(code) => vec![*code],
        }
    }

    /// Reads a command packet's payload (text that is not UTF-8 is replaced, so that
    /// the statement's parser reports it).
    pub(crate) fn decode(payload: &[u8]) -> Result<Command, WireError> {
        let (&code, arg) = payload.split_first().ok_or(WireError::Malformed {
            expected: "a command byte",
        })?;
        let text = || String::from_utf8_lossy(arg).into_owned();
        Ok(match code {
            COM_QUIT => Command::Quit,
            COM_INIT_DB => Command::InitDb(text()),
            COM_QUERY => Command::Query(text()),
            COM_PING => Command::Ping,
            other => Command::Other(other),
        })
    }
}
