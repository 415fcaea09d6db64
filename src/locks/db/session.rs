//! A client's connection to the database, as a JDBC connection from a pool: one TCP
//! connection carrying one statement at a time, each with its own deadline on the
//! caller's local clock.
//!
//! Unlike [`Remote`](crate::net::Remote) it never reconnects behind the caller's back in
//! the middle of a transaction: a transaction lives and dies with its connection, so the
//! caller asks for [`Session::call_in_txn`] and learns that the connection is gone
//! instead of running `COMMIT` on a fresh one (where it would succeed, committing
//! nothing — the hazard of JDBC's `autoReconnect`). And like a pool it tests a
//! connection that has been idle a while before using it (`SELECT 1`), since the server
//! may have ended the session after `wait_timeout`.

use super::model::{Reply, Statement};
use super::node::{DATABASE, DB_PORT};
use super::read_reply::read_reply;
use crate::net::mysql::MysqlClient;
use crate::net::{CallError, Connector, SimStream, SimTcp};
use crate::sim::NodeCtx;
use std::time::Duration;

/// One database connection (reconnecting lazily when it is used again after a failure).
pub(crate) struct Session {
    host: String,
    conn: Option<MysqlClient<SimStream>>,
    /// Bumped at each new connection: a transaction belongs to one generation.
    generation: u64,
    /// Local monotonic time of the last reply, ns.
    last_used_ns: i64,
    /// Test the connection first when it has been idle this long (local ns).
    idle_test_ns: i64,
}

impl Session {
    /// A session to `host` that tests its connection after `idle_test` of idleness.
    pub(crate) fn new(host: &str, idle_test: Duration) -> Session {
        Session {
            host: host.to_string(),
            conn: None,
            generation: 0,
            last_used_ns: 0,
            idle_test_ns: idle_test.as_nanos() as i64,
        }
    }

    /// The current connection's generation (changes at every reconnect).
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Run `stmt` within `timeout`, connecting first if needed; an idle connection is
    /// tested with `SELECT 1` first and replaced if it fails.
    pub(crate) async fn call(
        &mut self,
        ctx: &NodeCtx,
        stmt: &Statement,
        timeout: Duration,
    ) -> Result<Reply, CallError> {
        if self.conn.is_some() && ctx.mono_ns() - self.last_used_ns >= self.idle_test_ns {
            // A failed test has no effect; the statement then goes on a new connection.
            let _ = self.send(ctx, &Statement::Ping, timeout).await;
        }
        if self.conn.is_none() {
            self.conn = Some(self.connect(ctx, timeout).await?);
            self.generation += 1;
        }
        self.send(ctx, stmt, timeout).await
    }

    /// Run `stmt` on the connection of generation `generation` only: if that connection
    /// is gone, so is its transaction, and nothing is sent (`Connect` error).
    pub(crate) async fn call_in_txn(
        &mut self,
        ctx: &NodeCtx,
        generation: u64,
        stmt: &Statement,
        timeout: Duration,
    ) -> Result<Reply, CallError> {
        if self.conn.is_none() || self.generation != generation {
            return Err(CallError::Connect(
                "the transaction's connection is gone".into(),
            ));
        }
        self.send(ctx, stmt, timeout).await
    }

    /// A new connection, logged in (the handshake counts against `timeout`).
    async fn connect(
        &self,
        ctx: &NodeCtx,
        timeout: Duration,
    ) -> Result<MysqlClient<SimStream>, CallError> {
        let stream = match SimTcp.connect(ctx, &self.host, DB_PORT, timeout).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(CallError::Connect(e.to_string())),
            Err(_) => return Err(CallError::Connect("timeout".into())),
        };
        // Any user: the server is a test server and accepts every login.
        let login = MysqlClient::connect(stream, "locksim", "", Some(DATABASE));
        match ctx.timeout(timeout, login).await {
            Ok(Ok(c)) => Ok(c),
            Ok(Err(e)) => Err(CallError::Connect(format!("login: {e}"))),
            Err(_) => Err(CallError::Connect("login: timeout".into())),
        }
    }

    async fn send(
        &mut self,
        ctx: &NodeCtx,
        stmt: &Statement,
        timeout: Duration,
    ) -> Result<Reply, CallError> {
        let conn = self.conn.as_mut().expect("connected by the caller");
        let result = match ctx.timeout(timeout, conn.query(&stmt.sql())).await {
            Ok(Ok(result)) => read_reply(stmt, result),
            Ok(Err(e)) => Err(CallError::Io(e.to_string())),
            Err(_) => Err(CallError::Timeout),
        };
        match &result {
            Ok(_) => self.last_used_ns = ctx.mono_ns(),
            // A late reply must never be read as the next statement's: drop the
            // connection (the server sees it close and rolls back).
            Err(_) => self.conn = None,
        }
        result
    }
}
