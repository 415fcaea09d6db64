//! What can go wrong on MySQL's wire, for either side: the transport, a packet that does
//! not parse, a peer that breaks the protocol's order, a server that refuses the login.

use super::result::ServerError;
use std::fmt;
use std::io;

/// An error of MySQL's wire protocol.
#[derive(Debug)]
pub enum WireError {
    /// The transport failed.
    Io(io::Error),
    /// The peer closed the connection (mid-packet or while a reply was due).
    Closed,
    /// A packet's payload ended before a field was complete, or a field did not parse.
    Malformed {
        /// What was being read (`"an OK packet's status flags"`).
        expected: &'static str,
    },
    /// A payload longer than one packet carries (16 MiB − 1): MySQL splits such payloads
    /// over several packets, which locksim does not support.
    PayloadTooLarge {
        /// The payload's length.
        len: usize,
    },
    /// A packet whose length is exactly 16 MiB − 1, announcing a multi-packet payload
    /// (not supported).
    MultiPacketPayload,
    /// A packet arrived with another sequence id than the protocol's order gives.
    OutOfOrder {
        /// The sequence id due.
        expected: u8,
        /// The one that came.
        got: u8,
    },
    /// A packet of another kind than the protocol allows here.
    Unexpected {
        /// What was allowed (`"OK, ERR or a column count"`).
        expected: &'static str,
        /// The packet's first byte (0 for an empty payload).
        first_byte: u8,
    },
    /// The client asked for something locksim's side does not speak (TLS, a pre-4.1
    /// handshake, an authentication plugin other than `mysql_native_password`).
    Unsupported {
        /// What was asked for.
        what: String,
    },
    /// The server refused the login with this error.
    LoginRefused(ServerError),
    /// The server state machine was asked to reply while no command awaits an answer.
    NothingToAnswer,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Io(e) => write!(f, "MySQL connection: {e}"),
            WireError::Closed => write!(f, "MySQL connection closed by the peer"),
            WireError::Malformed { expected } => {
                write!(f, "malformed MySQL packet: expected {expected}")
            }
            WireError::PayloadTooLarge { len } => write!(
                f,
                "MySQL payload of {len} bytes is larger than one packet (16 MiB - 1); \
                 multi-packet payloads are not supported"
            ),
            WireError::MultiPacketPayload => write!(
                f,
                "MySQL packet announces a multi-packet payload (16 MiB or more), \
                 which is not supported"
            ),
            WireError::OutOfOrder { expected, got } => write!(
                f,
                "MySQL packet out of order: sequence id {got}, expected {expected}"
            ),
            WireError::Unexpected {
                expected,
                first_byte,
            } => write!(
                f,
                "unexpected MySQL packet (first byte 0x{first_byte:02x}): expected {expected}"
            ),
            WireError::Unsupported { what } => write!(f, "not supported on MySQL's wire: {what}"),
            WireError::LoginRefused(e) => write!(
                f,
                "MySQL server refused the login: ERROR {} ({}): {}",
                e.code, e.sqlstate, e.message
            ),
            WireError::NothingToAnswer => write!(f, "no MySQL command awaits a reply"),
        }
    }
}

impl std::error::Error for WireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WireError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            WireError::Closed
        } else {
            WireError::Io(e)
        }
    }
}
