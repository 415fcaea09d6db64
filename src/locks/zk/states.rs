//! What the client knows of its connection, as types: Curator's states, why a
//! connection ended, and why the state changed (the `connection` event's `reason`).

use super::tree::SessionId;

/// Curator's connection states (`org.apache.curator.framework.state.ConnectionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CuratorState {
    /// Never connected yet.
    Latent,
    /// First connection.
    Connected,
    /// The connection is lost; the session may still be alive on the servers.
    Suspended,
    /// A connection is back (same session, or a new one after LOST).
    Reconnected,
    /// The session is gone (reported expired, or a session timeout passed while
    /// SUSPENDED).
    Lost,
}

impl CuratorState {
    /// Curator's name for it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            CuratorState::Latent => "LATENT",
            CuratorState::Connected => "CONNECTED",
            CuratorState::Suspended => "SUSPENDED",
            CuratorState::Reconnected => "RECONNECTED",
            CuratorState::Lost => "LOST",
        }
    }
}

/// Why a connection to a server was lost: the `reason` of the `connection` event that
/// SUSPENDED records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Disconnect {
    /// Curator replaced the handle (after LOST) while the connection was up.
    HandleReplaced,
    /// A request or ping could not be written.
    WriteFailed,
    /// Nothing came from the server for the read timeout, in ms.
    NoReply {
        /// How long nothing came, in ms.
        ms: i64,
    },
    /// Reading failed: the server closed the connection (the error's text).
    Closed(String),
    /// A frame from the server did not decode (the decoder's error text).
    Protocol(String),
}

impl std::fmt::Display for Disconnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Disconnect::HandleReplaced => f.write_str("handle replaced"),
            Disconnect::WriteFailed => f.write_str("write failed"),
            Disconnect::NoReply { ms } => write!(f, "no reply for {ms} ms"),
            Disconnect::Closed(e) => write!(f, "connection closed: {e}"),
            Disconnect::Protocol(e) => write!(f, "protocol error: {e}"),
        }
    }
}

/// Why the Curator connection state changed: the `reason` of the `connection` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StateReason {
    /// A connection to `host` is up with `session`.
    Connected {
        /// The server.
        host: String,
        /// The session.
        session: SessionId,
        /// The negotiated timeout, if the session is new (a handshake without a session,
        /// or after the old one expired).
        new_timeout_ms: Option<u64>,
    },
    /// The connection was lost.
    Lost(Disconnect),
    /// A server answered the handshake: `session` expired.
    Expired {
        /// The server.
        host: String,
        /// The expired session.
        session: SessionId,
    },
    /// SUSPENDED for a whole session timeout (`elapsed_ms` on the wall clock): Curator
    /// injects an expiration.
    TimedOut {
        /// Wall-clock time since SUSPENDED, in ms.
        elapsed_ms: i64,
    },
}

impl std::fmt::Display for StateReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateReason::Connected {
                host,
                session,
                new_timeout_ms: Some(t),
            } => write!(f, "{host}: new session 0x{session:x}, timeout {t} ms"),
            StateReason::Connected {
                host,
                session,
                new_timeout_ms: None,
            } => write!(f, "{host}: session 0x{session:x}"),
            StateReason::Lost(d) => d.fmt(f),
            StateReason::Expired { host, session } => {
                write!(f, "{host}: session 0x{session:x} expired")
            }
            StateReason::TimedOut { elapsed_ms } => write!(
                f,
                "session timeout elapsed while SUSPENDED ({elapsed_ms} ms): injecting an expiration"
            ),
        }
    }
}

#[cfg(test)]
#[path = "states_tests.rs"]
mod tests;
