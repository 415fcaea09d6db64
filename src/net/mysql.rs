//! MySQL's client/server protocol (the wire MariaDB and MySQL speak), both sides: the
//! packets, the handshake, `COM_QUERY`'s text protocol and its replies. The database
//! family's server answers real clients (`mariadb`, PyMySQL) with it, and locksim's own
//! client speaks it to the model in simulation and to a real MariaDB.
//!
//! [`QueryResult`] is the vocabulary both sides share: what one statement answered.
//! [`ServerConn`] is one connection's server side, sans-io (bytes in, events out, replies
//! in, bytes out); [`MysqlClient`] is the client, over any async stream.
//!
//! From the bottom up: [`packet`] frames payloads, [`payload`] reads and writes their
//! fields, [`capabilities`] lists the `CLIENT_*` flags, [`handshake`] and [`auth`] log
//! in, [`command`] and [`reply`] carry the command phase.

mod auth;
mod capabilities;
mod client;
mod command;
mod error;
mod handshake;
mod packet;
mod payload;
mod reply;
mod result;
mod server;
#[cfg(test)]
mod tests;

pub use client::MysqlClient;
pub use error::WireError;
pub use result::{
    Column, ColumnType, QueryResult, ServerError, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS,
};
pub use server::{ServerConn, ServerEvent, ServerHello};
