//! locksim's MySQL client: logs in with `mysql_native_password` (following an
//! AuthSwitchRequest to it), then sends text-protocol commands and reads their replies
//! as [`QueryResult`]s. Generic over the stream, so it runs over turmoil's simulated TCP,
//! a real socket, or an in-memory duplex. No timers: the caller bounds each call.

use super::auth::{native_password_response, NATIVE_PASSWORD};
use super::capabilities::{CHARSET_UTF8MB4, CLIENT_CAPABILITIES, CLIENT_CONNECT_WITH_DB};
use super::command::Command;
use super::error::WireError;
use super::handshake::{AuthSwitch, Greeting, HandshakeResponse, AUTH_SWITCH};
use super::packet::{encode_packet, Packet, PacketDecoder, MAX_PAYLOAD};
use super::reply::{decode_err, ReplyDecoder, ERR};
use super::result::QueryResult;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// How many AuthSwitchRequests a login follows before giving up (a server that keeps
/// switching is broken).
const MAX_AUTH_SWITCHES: usize = 2;

/// A logged-in MySQL connection.
#[derive(Debug)]
pub struct MysqlClient<S> {
    stream: S,
    decoder: PacketDecoder,
    server_version: String,
    connection_id: u32,
}

impl<S: AsyncRead + AsyncWrite + Unpin> MysqlClient<S> {
    /// Logs in as `user` with `password` on `stream`, making `database` the default if
    /// given. A server's ERR during the login is [`WireError::LoginRefused`].
    pub async fn connect(
        stream: S,
        user: &str,
        password: &str,
        database: Option<&str>,
    ) -> Result<Self, WireError> {
        let mut client = MysqlClient {
            stream,
            decoder: PacketDecoder::default(),
            server_version: String::new(),
            connection_id: 0,
        };
        let greeting = client.read_packet(0).await?;
        if greeting.payload.first() == Some(&ERR) {
            return Err(WireError::LoginRefused(decode_err(&greeting.payload)?));
        }
        let greeting = Greeting::decode(&greeting.payload)?;
        client.server_version = greeting.server_version.clone();
        client.connection_id = greeting.connection_id;
        let mut capabilities = CLIENT_CAPABILITIES & greeting.capabilities;
        if database.is_some() {
            capabilities |= CLIENT_CONNECT_WITH_DB;
        }
        let response = HandshakeResponse {
            capabilities,
            max_packet: MAX_PAYLOAD as u32,
            charset: CHARSET_UTF8MB4,
            user: user.to_string(),
            auth_response: native_password_response(password.as_bytes(), &greeting.scramble),
            database: database.map(str::to_string),
            auth_plugin: Some(NATIVE_PASSWORD.to_string()),
        };
        client.write_packet(1, &response.encode()).await?;
        client.finish_login(password, 2).await?;
        Ok(client)
    }

    /// Reads the server's answer to the login from sequence id `seq` on, following
    /// AuthSwitchRequests to `mysql_native_password`.
    async fn finish_login(&mut self, password: &str, mut seq: u8) -> Result<(), WireError> {
        for _ in 0..=MAX_AUTH_SWITCHES {
            let packet = self.read_packet(seq).await?;
            let first_byte = packet.payload.first().copied().unwrap_or(0);
            match first_byte {
                0x00 => return Ok(()),
                ERR => return Err(WireError::LoginRefused(decode_err(&packet.payload)?)),
                AUTH_SWITCH => {
                    let switch = AuthSwitch::decode(&packet.payload)?;
                    if switch.plugin != NATIVE_PASSWORD {
                        return Err(WireError::Unsupported {
                            what: format!("authentication plugin {}", switch.plugin),
                        });
                    }
                    let answer = native_password_response(password.as_bytes(), &switch.data);
                    self.write_packet(seq.wrapping_add(1), &answer).await?;
                    seq = seq.wrapping_add(2);
                }
                _ => {
                    return Err(WireError::Unexpected {
                        expected: "OK, ERR or an auth switch request after the login",
                        first_byte,
                    })
                }
            }
        }
        Err(WireError::Unsupported {
            what: "more than two authentication switches".into(),
        })
    }

    /// The server's version string, from its greeting.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// The connection's id, from the server's greeting.
    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }

    /// Runs `sql` (`COM_QUERY`): the server's OK, ERR or result set.
    pub async fn query(&mut self, sql: &str) -> Result<QueryResult, WireError> {
        self.command(&Command::Query(sql.to_string())).await
    }

    /// Makes `database` the default (`COM_INIT_DB`): OK, or ERR (1049: unknown database).
    pub async fn init_db(&mut self, database: &str) -> Result<QueryResult, WireError> {
        self.command(&Command::InitDb(database.to_string())).await
    }

    /// Asks whether the server is alive (`COM_PING`): OK.
    pub async fn ping(&mut self) -> Result<QueryResult, WireError> {
        self.command(&Command::Ping).await
    }

    /// Says goodbye (`COM_QUIT`, which has no reply) and closes the stream.
    pub async fn quit(mut self) -> Result<(), WireError> {
        self.write_packet(0, &Command::Quit.encode()).await?;
        self.stream.shutdown().await?;
        Ok(())
    }

    /// Sends `command` and reads its reply.
    async fn command(&mut self, command: &Command) -> Result<QueryResult, WireError> {
        if self.decoder.has_partial() {
            // Bytes nobody asked for: the connection's order is lost.
            return Err(WireError::Unexpected {
                expected: "no packet before a command's reply",
                first_byte: 0,
            });
        }
        self.write_packet(0, &command.encode()).await?;
        let mut reply = ReplyDecoder::default();
        let mut seq = 1u8;
        loop {
            let packet = self.read_packet(seq).await?;
            seq = seq.wrapping_add(1);
            if let Some(result) = reply.push(&packet.payload)? {
                return Ok(result);
            }
        }
    }

    async fn write_packet(&mut self, seq: u8, payload: &[u8]) -> Result<(), WireError> {
        let mut out = Vec::with_capacity(payload.len() + 4);
        encode_packet(seq, payload, &mut out)?;
        self.stream.write_all(&out).await?;
        self.stream.flush().await?;
        Ok(())
    }

    /// Reads the next packet, which must carry sequence id `seq`.
    async fn read_packet(&mut self, seq: u8) -> Result<Packet, WireError> {
        let mut buf = [0u8; 8192];
        loop {
            if let Some(packet) = self.decoder.next_packet()? {
                if packet.seq != seq {
                    return Err(WireError::OutOfOrder {
                        expected: seq,
                        got: packet.seq,
                    });
                }
                return Ok(packet);
            }
            let n = self.stream.read(&mut buf).await?;
            if n == 0 {
                return Err(WireError::Closed);
            }
            self.decoder.feed(&buf[..n]);
        }
    }
}
