//! The connection phase's packets: the server's Initial Handshake (protocol 10), the
//! client's HandshakeResponse41, and the server's AuthSwitchRequest asking the client to
//! answer with another authentication plugin. Each encodes (the side that sends it) and
//! decodes (the side that reads it).

use super::capabilities::{
    CLIENT_CONNECT_WITH_DB, CLIENT_PLUGIN_AUTH, CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
    CLIENT_PROTOCOL_41, CLIENT_SECURE_CONNECTION, CLIENT_SSL,
};
use super::error::WireError;
use super::payload::{put_lenenc_bytes, put_nul_str, Reader};

/// The protocol version of every server since MySQL 3.21.
const PROTOCOL_VERSION: u8 = 10;
/// An AuthSwitchRequest's first byte.
pub(crate) const AUTH_SWITCH: u8 = 0xFE;
/// The length of the scramble locksim's server sends.
pub(crate) const SCRAMBLE_LEN: usize = 20;

/// The server's Initial Handshake packet (v10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Greeting {
    /// The server's version string (`10.11.19-MariaDB-locksim`).
    pub server_version: String,
    /// The connection's id.
    pub connection_id: u32,
    /// The authentication challenge (20 bytes from locksim's server).
    pub scramble: Vec<u8>,
    /// The server's `CLIENT_*` capability flags.
    pub capabilities: u32,
    /// The server's character set.
    pub charset: u8,
    /// `SERVER_STATUS_*` flags.
    pub status: u16,
    /// The default authentication plugin.
    pub auth_plugin: String,
}

impl Greeting {
    /// The packet's payload.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = vec![PROTOCOL_VERSION];
        put_nul_str(&mut out, self.server_version.as_bytes());
        out.extend_from_slice(&self.connection_id.to_le_bytes());
        let (part1, part2) = self.scramble.split_at(self.scramble.len().min(8));
        out.extend_from_slice(part1);
        out.resize(out.len() + 8 - part1.len(), 0);
        out.push(0); // filler
        out.extend_from_slice(&(self.capabilities as u16).to_le_bytes());
        out.push(self.charset);
        out.extend_from_slice(&self.status.to_le_bytes());
        out.extend_from_slice(&((self.capabilities >> 16) as u16).to_le_bytes());
        // The auth data's length counts the scramble and its terminating NUL.
        out.push((self.scramble.len() + 1).min(255) as u8);
        out.extend_from_slice(&[0; 10]); // reserved
                                         // The second part is at least 13 bytes, NUL included.
        let mut rest = part2.to_vec();
        rest.resize(rest.len().max(12), 0);
        put_nul_str(&mut out, &rest);
        put_nul_str(&mut out, self.auth_plugin.as_bytes());
        out
    }

    /// Reads the packet's payload (an ERR packet is for the caller to tell apart first).
    pub(crate) fn decode(payload: &[u8]) -> Result<Greeting, WireError> {
        let mut r = Reader::new(payload);
        let version = r.u8("the handshake's protocol version")?;
        if version != PROTOCOL_VERSION {
            return Err(WireError::Unsupported {
                what: format!("handshake protocol version {version} (10 is spoken)"),
            });
        }
        let server_version = r.nul_str("the server's version")?;
        let connection_id = r.u32("the connection id")?;
        let mut scramble = r.bytes(8, "the scramble's first part")?.to_vec();
        r.u8("the handshake's filler")?;
        let low = r.u16("the capability flags")?;
        // A handshake may end here (very old servers); locksim speaks 4.1 and later.
        let charset = r.u8("the character set")?;
        let status = r.u16("the status flags")?;
        let high = r.u16("the upper capability flags")?;
        let capabilities = u32::from(low) | u32::from(high) << 16;
        let auth_len = r.u8("the auth data's length")?;
        r.bytes(10, "the handshake's reserved bytes")?;
        if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            let len = usize::from(auth_len).saturating_sub(8).max(13);
            let part2 = r.bytes(len, "the scramble's second part")?;
            let part2 = part2.strip_suffix(&[0]).unwrap_or(part2);
            scramble.extend_from_slice(part2);
        }
        let auth_plugin = if capabilities & CLIENT_PLUGIN_AUTH != 0 {
            nul_or_rest(&mut r)
        } else {
            String::new()
        };
        Ok(Greeting {
            server_version,
            connection_id,
            scramble,
            capabilities,
            charset,
            status,
            auth_plugin,
        })
    }
}

/// A NUL-terminated string, or the rest of the payload when its NUL is missing (some
/// clients leave the last string of a packet unterminated).
fn nul_or_rest(r: &mut Reader<'_>) -> String {
    match r.nul_str("") {
        Ok(s) => s,
        Err(_) => String::from_utf8_lossy(r.rest()).into_owned(),
    }
}

/// The client's HandshakeResponse41.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HandshakeResponse {
    /// The client's `CLIENT_*` capability flags (as sent: the layout follows them).
    pub capabilities: u32,
    /// The largest packet the client accepts.
    pub max_packet: u32,
    /// The client's character set.
    pub charset: u8,
    /// The user name.
    pub user: String,
    /// The authentication plugin's answer to the scramble.
    pub auth_response: Vec<u8>,
    /// The database to use (`CLIENT_CONNECT_WITH_DB`).
    pub database: Option<String>,
    /// The plugin that computed `auth_response` (`CLIENT_PLUGIN_AUTH`).
    pub auth_plugin: Option<String>,
}

impl HandshakeResponse {
    /// The packet's payload, laid out as `capabilities` say.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let caps = self.capabilities;
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&caps.to_le_bytes());
        out.extend_from_slice(&self.max_packet.to_le_bytes());
        out.push(self.charset);
        out.extend_from_slice(&[0; 23]);
        put_nul_str(&mut out, self.user.as_bytes());
        if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            put_lenenc_bytes(&mut out, &self.auth_response);
        } else if caps & CLIENT_SECURE_CONNECTION != 0 {
            let len = self.auth_response.len().min(255);
            out.push(len as u8);
            out.extend_from_slice(&self.auth_response[..len]);
        } else {
            put_nul_str(&mut out, &self.auth_response);
        }
        if caps & CLIENT_CONNECT_WITH_DB != 0 {
            put_nul_str(&mut out, self.database.as_deref().unwrap_or("").as_bytes());
        }
        if caps & CLIENT_PLUGIN_AUTH != 0 {
            put_nul_str(
                &mut out,
                self.auth_plugin.as_deref().unwrap_or("").as_bytes(),
            );
        }
        out
    }

    /// Reads the packet's payload. A pre-4.1 response and an SSL request (the client
    /// wants TLS, which is not offered) are refused.
    pub(crate) fn decode(payload: &[u8]) -> Result<HandshakeResponse, WireError> {
        let mut r = Reader::new(payload);
        let capabilities = r.u32("the client's capability flags")?;
        if capabilities & CLIENT_PROTOCOL_41 == 0 {
            return Err(WireError::Unsupported {
                what: "a pre-4.1 handshake response".into(),
            });
        }
        let max_packet = r.u32("the client's max packet size")?;
        let charset = r.u8("the client's character set")?;
        r.bytes(23, "the handshake response's filler")?;
        if r.is_empty() && capabilities & CLIENT_SSL != 0 {
            return Err(WireError::Unsupported {
                what: "TLS (an SSL request)".into(),
            });
        }
        let user = r.nul_str("the user name")?;
        let auth_response = if capabilities & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
            r.lenenc_bytes("the auth response")?
        } else if capabilities & CLIENT_SECURE_CONNECTION != 0 {
            let len = r.u8("the auth response's length")?;
            r.bytes(usize::from(len), "the auth response")?
        } else {
            r.nul_bytes("the auth response")?
        }
        .to_vec();
        let database = if capabilities & CLIENT_CONNECT_WITH_DB != 0 {
            Some(nul_or_rest(&mut r)).filter(|d| !d.is_empty())
        } else {
            None
        };
        let auth_plugin = if capabilities & CLIENT_PLUGIN_AUTH != 0 {
            Some(nul_or_rest(&mut r)).filter(|p| !p.is_empty())
        } else {
            None
        };
        // Connection attributes (CLIENT_CONNECT_ATTRS) follow; nothing reads them.
        Ok(HandshakeResponse {
            capabilities,
            max_packet,
            charset,
            user,
            auth_response,
            database,
            auth_plugin,
        })
    }
}

/// The server's AuthSwitchRequest: answer again with `plugin`, using `data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuthSwitch {
    /// The plugin to use.
    pub plugin: String,
    /// Its challenge (the scramble, for `mysql_native_password`).
    pub data: Vec<u8>,
}

impl AuthSwitch {
    /// The packet's payload.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = vec![AUTH_SWITCH];
        put_nul_str(&mut out, self.plugin.as_bytes());
        put_nul_str(&mut out, &self.data);
        out
    }

    /// Reads the packet's payload (its first byte is 0xFE).
    pub(crate) fn decode(payload: &[u8]) -> Result<AuthSwitch, WireError> {
        let mut r = Reader::new(payload);
        let first = r.u8("an auth switch request")?;
        if first != AUTH_SWITCH {
            return Err(WireError::Unexpected {
                expected: "an auth switch request",
                first_byte: first,
            });
        }
        let plugin = r.nul_str("the auth switch's plugin name")?;
        let data = r.rest();
        let data = data.strip_suffix(&[0]).unwrap_or(data).to_vec();
        Ok(AuthSwitch { plugin, data })
    }
}
