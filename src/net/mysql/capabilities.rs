//! Capability flags (`CLIENT_*`): what each side of a connection supports, exchanged in
//! the handshake. The connection uses the flags both sides set.

/// `CLIENT_LONG_PASSWORD` (MariaDB reads this bit as `CLIENT_MYSQL`).
pub(crate) const CLIENT_LONG_PASSWORD: u32 = 1;
/// `CLIENT_FOUND_ROWS`: affected rows count the rows matched, not the rows changed.
pub(crate) const CLIENT_FOUND_ROWS: u32 = 1 << 1;
/// `CLIENT_LONG_FLAG`: column definitions carry all flags.
pub(crate) const CLIENT_LONG_FLAG: u32 = 1 << 2;
/// `CLIENT_CONNECT_WITH_DB`: the handshake response names a database.
pub(crate) const CLIENT_CONNECT_WITH_DB: u32 = 1 << 3;
/// `CLIENT_COMPRESS` (never offered).
pub(crate) const CLIENT_COMPRESS: u32 = 1 << 5;
/// `CLIENT_PROTOCOL_41`: the 4.1 protocol (SQLSTATEs in ERR, status in EOF).
pub(crate) const CLIENT_PROTOCOL_41: u32 = 1 << 9;
/// `CLIENT_SSL` (never offered).
pub(crate) const CLIENT_SSL: u32 = 1 << 11;
/// `CLIENT_TRANSACTIONS`: status flags in OK and EOF.
pub(crate) const CLIENT_TRANSACTIONS: u32 = 1 << 13;
/// `CLIENT_SECURE_CONNECTION`: the auth response has a 1-byte length.
pub(crate) const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
/// `CLIENT_MULTI_STATEMENTS` (never offered).
pub(crate) const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
/// `CLIENT_PLUGIN_AUTH`: the handshake names authentication plugins.
pub(crate) const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
/// `CLIENT_CONNECT_ATTRS`: the handshake response ends with connection attributes.
pub(crate) const CLIENT_CONNECT_ATTRS: u32 = 1 << 20;
/// `CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA`: the auth response is length-encoded.
pub(crate) const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
/// `CLIENT_DEPRECATE_EOF` (never offered: classic EOF packets suit old and new clients).
pub(crate) const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;

/// What locksim's server offers. Not `CLIENT_SSL`, `CLIENT_COMPRESS`,
/// `CLIENT_MULTI_STATEMENTS`, `CLIENT_MULTI_RESULTS` (one statement, one result) nor
/// `CLIENT_DEPRECATE_EOF`. `CLIENT_FOUND_ROWS` is offered, never forced: the client
/// chooses.
pub(crate) const SERVER_CAPABILITIES: u32 = CLIENT_LONG_PASSWORD
    | CLIENT_FOUND_ROWS
    | CLIENT_LONG_FLAG
    | CLIENT_CONNECT_WITH_DB
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_PLUGIN_AUTH
    | CLIENT_CONNECT_ATTRS
    | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA;

/// What the server never offers: TLS, compression, several statements in one
/// `COM_QUERY`, and OK packets in place of EOF.
const NEVER_OFFERED: u32 =
    CLIENT_SSL | CLIENT_COMPRESS | CLIENT_MULTI_STATEMENTS | CLIENT_DEPRECATE_EOF;
const _: () = assert!(SERVER_CAPABILITIES & NEVER_OFFERED == 0);

/// What locksim's client asks for (masked with what the server offers; plus
/// `CLIENT_CONNECT_WITH_DB` when it names a database).
pub(crate) const CLIENT_CAPABILITIES: u32 = CLIENT_LONG_PASSWORD
    | CLIENT_LONG_FLAG
    | CLIENT_PROTOCOL_41
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_PLUGIN_AUTH
    | CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA;

/// The character set both sides announce: 45, `utf8mb4_general_ci`.
pub(crate) const CHARSET_UTF8MB4: u8 = 45;
/// The character set of numeric and temporal columns: 63, `binary`.
pub(crate) const CHARSET_BINARY: u8 = 63;
