//! One connection's server side as a sans-io state machine: the caller feeds the bytes it
//! reads ([`ServerConn::receive`]), takes the events ([`ServerConn::next_event`]: a login,
//! a query, a ping, ...), answers each with [`ServerConn::reply`], and writes what
//! [`ServerConn::take_output`] returns. No I/O, no clock, no randomness: the scramble is
//! the caller's, so a simulated server stays deterministic.
//!
//! locksim's server is a test server: it accepts every user and every password (it never
//! checks the auth response). A client asking for another plugin than
//! `mysql_native_password` (MySQL 8's clients ask for `caching_sha2_password`) is sent an
//! AuthSwitchRequest first, and its answer is accepted too.

use super::auth::NATIVE_PASSWORD;
use super::capabilities::{CHARSET_UTF8MB4, CLIENT_FOUND_ROWS, SERVER_CAPABILITIES};
use super::command::Command;
use super::error::WireError;
use super::handshake::{AuthSwitch, Greeting, HandshakeResponse, SCRAMBLE_LEN};
use super::packet::{encode_packet, Packet, PacketDecoder};
use super::reply::{encode_reply, err_payload};
use super::result::{QueryResult, ServerError};

/// What the server says about itself in the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerHello {
    /// The version string clients show (`10.11.19-MariaDB-locksim`).
    pub server_version: String,
    /// The connection's id (`CONNECTION_ID()`).
    pub connection_id: u32,
    /// The authentication challenge: the caller's, so that runs stay deterministic.
    pub scramble: [u8; SCRAMBLE_LEN],
    /// The `SERVER_STATUS_*` flags of a new session.
    pub status: u16,
}

/// What a client asked for: each but [`ServerEvent::Quit`] awaits one
/// [`ServerConn::reply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// The handshake is done: reply OK to let the client in, or an error to refuse it
    /// (say, 1049 for an unknown database).
    Login {
        /// The user name.
        user: String,
        /// The database the client named (`CLIENT_CONNECT_WITH_DB`).
        database: Option<String>,
        /// The client asked for `CLIENT_FOUND_ROWS`: an `UPDATE`'s affected rows count
        /// the rows matched, not the rows changed.
        found_rows: bool,
    },
    /// `COM_QUERY`: a statement's text.
    Query(String),
    /// `COM_INIT_DB`: make this database the default.
    InitDb(String),
    /// `COM_PING`.
    Ping,
    /// `COM_QUIT`: the client is leaving; close the connection after writing the output.
    Quit,
}

/// Where the connection is.
#[derive(Debug)]
enum Phase {
    /// The greeting was sent; the HandshakeResponse is due.
    Handshake,
    /// An AuthSwitchRequest was sent; the client's new answer is due.
    AuthSwitch(LoginFacts),
    /// The login awaits the caller's reply.
    LoginReply,
    /// Waiting for a command.
    Commands,
    /// A command awaits the caller's reply.
    CommandReply,
    /// The connection is over (quit, refused, or broken): write the output, then close.
    Closed,
}

/// What a login's event reports, kept across an auth switch.
#[derive(Debug)]
struct LoginFacts {
    user: String,
    database: Option<String>,
    found_rows: bool,
}

impl LoginFacts {
    fn into_event(self) -> ServerEvent {
        ServerEvent::Login {
            user: self.user,
            database: self.database,
            found_rows: self.found_rows,
        }
    }
}

/// `ER_HANDSHAKE_ERROR`.
const ER_HANDSHAKE_ERROR: u16 = 1043;
/// `ER_UNKNOWN_COM_ERROR`.
const ER_UNKNOWN_COM_ERROR: u16 = 1047;
/// `ER_NET_PACKET_TOO_LARGE`.
const ER_NET_PACKET_TOO_LARGE: u16 = 1153;
/// `ER_NET_READ_ERROR`.
const ER_NET_READ_ERROR: u16 = 1158;
/// `ER_NET_PACKETS_OUT_OF_ORDER`.
const ER_NET_PACKETS_OUT_OF_ORDER: u16 = 1156;

/// The server side of one connection.
#[derive(Debug)]
pub struct ServerConn {
    phase: Phase,
    decoder: PacketDecoder,
    output: Vec<u8>,
    /// The sequence id the next packet sent takes (the last received one's + 1).
    seq: u8,
    status: u16,
    scramble: [u8; SCRAMBLE_LEN],
}

impl ServerConn {
    /// A new connection; its output holds the greeting already.
    pub fn new(hello: &ServerHello) -> ServerConn {
        let greeting = Greeting {
            server_version: hello.server_version.clone(),
            connection_id: hello.connection_id,
            scramble: hello.scramble.to_vec(),
            capabilities: SERVER_CAPABILITIES,
            charset: CHARSET_UTF8MB4,
            status: hello.status,
            auth_plugin: NATIVE_PASSWORD.to_string(),
        };
        let mut output = Vec::new();
        encode_packet(0, &greeting.encode(), &mut output)
            .expect("a greeting is far smaller than a packet");
        ServerConn {
            phase: Phase::Handshake,
            decoder: PacketDecoder::default(),
            output,
            seq: 1,
            status: hello.status,
            scramble: hello.scramble,
        }
    }

    /// Bytes read from the client.
    pub fn receive(&mut self, bytes: &[u8]) {
        self.decoder.feed(bytes);
    }

    /// The session's `SERVER_STATUS_*` flags, for the EOF packets of result sets (an OK
    /// packet carries the flags its [`QueryResult::Ok`] holds).
    pub fn set_status(&mut self, status: u16) {
        self.status = status;
    }

    /// The bytes to write to the client, taken.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.output)
    }

    /// Whether an event awaits [`ServerConn::reply`].
    pub fn awaits_reply(&self) -> bool {
        matches!(self.phase, Phase::LoginReply | Phase::CommandReply)
    }

    /// Whether the connection is over: the caller writes the output, then closes.
    pub fn is_closed(&self) -> bool {
        matches!(self.phase, Phase::Closed)
    }

    /// The next event, `None` until the bytes received complete one (or while an event
    /// awaits its reply: the client waits for it before sending more). A protocol error
    /// queues an ERR packet for the client, closes the connection, and is returned.
    /// Unknown commands are answered here (error 1047) and raise no event.
    pub fn next_event(&mut self) -> Result<Option<ServerEvent>, WireError> {
        loop {
            if self.awaits_reply() || self.is_closed() {
                return Ok(None);
            }
            let packet = match self.decoder.next_packet() {
                Ok(Some(p)) => p,
                Ok(None) => return Ok(None),
                Err(e) => {
                    return Err(self.fail(
                        ER_NET_PACKET_TOO_LARGE,
                        "Got a packet bigger than 'max_allowed_packet' bytes",
                        e,
                    ))
                }
            };
            let expected = if matches!(self.phase, Phase::Commands) {
                0
            } else {
                self.seq
            };
            if packet.seq != expected {
                let e = WireError::OutOfOrder {
                    expected,
                    got: packet.seq,
                };
                return Err(self.fail(ER_NET_PACKETS_OUT_OF_ORDER, "Got packets out of order", e));
            }
            self.seq = packet.seq.wrapping_add(1);
            if let Some(event) = self.on_packet(packet)? {
                return Ok(Some(event));
            }
        }
    }

    fn on_packet(&mut self, packet: Packet) -> Result<Option<ServerEvent>, WireError> {
        match std::mem::replace(&mut self.phase, Phase::Closed) {
            Phase::Handshake => self.on_handshake_response(&packet.payload),
            Phase::AuthSwitch(facts) => {
                // Any answer is accepted: a test server.
                self.phase = Phase::LoginReply;
                Ok(Some(facts.into_event()))
            }
            Phase::Commands => self.on_command(&packet.payload),
            // next_event reads no packet in the other phases.
            other => {
                self.phase = other;
                Ok(None)
            }
        }
    }

    fn on_handshake_response(&mut self, payload: &[u8]) -> Result<Option<ServerEvent>, WireError> {
        let response = match HandshakeResponse::decode(payload) {
            Ok(r) => r,
            Err(e) => return Err(self.fail(ER_HANDSHAKE_ERROR, "Bad handshake", e)),
        };
        let facts = LoginFacts {
            user: response.user,
            database: response.database,
            found_rows: response.capabilities & CLIENT_FOUND_ROWS != 0,
        };
        match response.auth_plugin.as_deref() {
            Some(plugin) if plugin != NATIVE_PASSWORD => {
                let switch = AuthSwitch {
                    plugin: NATIVE_PASSWORD.to_string(),
                    data: self.scramble.to_vec(),
                };
                self.send(&switch.encode());
                self.phase = Phase::AuthSwitch(facts);
                Ok(None)
            }
            _ => {
                self.phase = Phase::LoginReply;
                Ok(Some(facts.into_event()))
            }
        }
    }

    fn on_command(&mut self, payload: &[u8]) -> Result<Option<ServerEvent>, WireError> {
        let command = match Command::decode(payload) {
            Ok(c) => c,
            Err(e) => {
                return Err(self.fail(
                    ER_NET_READ_ERROR,
                    "Got an error reading communication packets",
                    e,
                ))
            }
        };
        self.phase = Phase::CommandReply;
        Ok(Some(match command {
            Command::Quit => {
                self.phase = Phase::Closed;
                ServerEvent::Quit
            }
            Command::InitDb(db) => ServerEvent::InitDb(db),
            Command::Query(sql) => ServerEvent::Query(sql),
            Command::Ping => ServerEvent::Ping,
            Command::Other(_) => {
                self.send(&err_payload(&ServerError {
                    code: ER_UNKNOWN_COM_ERROR,
                    sqlstate: "08S01".into(),
                    message: "Unknown command".into(),
                }));
                self.phase = Phase::Commands;
                return Ok(None);
            }
        }))
    }

    /// Answer the event that awaits a reply. A refused login closes the connection.
    pub fn reply(&mut self, result: &QueryResult) -> Result<(), WireError> {
        let next = match self.phase {
            Phase::LoginReply if matches!(result, QueryResult::Err(_)) => Phase::Closed,
            Phase::LoginReply | Phase::CommandReply => Phase::Commands,
            _ => return Err(WireError::NothingToAnswer),
        };
        let mut out = Vec::new();
        match encode_reply(result, self.status, self.seq, &mut out) {
            Ok(seq) => {
                self.output.extend_from_slice(&out);
                self.seq = seq;
                self.phase = next;
                Ok(())
            }
            // A result too large for a packet: the client is told, the session goes on.
            Err(e @ WireError::PayloadTooLarge { .. }) => {
                self.send(&err_payload(&ServerError {
                    code: ER_NET_PACKET_TOO_LARGE,
                    sqlstate: "08S01".into(),
                    message: "Result of a packet bigger than 'max_allowed_packet' bytes".into(),
                }));
                self.phase = next;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Queue one packet with the next sequence id.
    fn send(&mut self, payload: &[u8]) {
        // Only the server's own small packets go through here.
        if encode_packet(self.seq, payload, &mut self.output).is_ok() {
            self.seq = self.seq.wrapping_add(1);
        }
    }

    /// Queue an ERR packet telling the client why, close, and hand the error back.
    fn fail(&mut self, code: u16, message: &str, e: WireError) -> WireError {
        self.send(&err_payload(&ServerError {
            code,
            sqlstate: "08S01".into(),
            message: message.into(),
        }));
        self.phase = Phase::Closed;
        e
    }
}
