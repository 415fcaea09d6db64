//! One client node's redis-rs connection to `redis-0`, over locksim's simulated TCP.
//!
//! redis-rs's `MultiplexedConnection` normally opens its own socket and spawns its own
//! driver task with `tokio::spawn`. Both would escape the simulation: a real socket is
//! not turmoil's network, and a task spawned with `tokio::spawn` is not frozen when a
//! fault pauses the node. `MultiplexedConnection::new_with_config` takes the stream and
//! hands the driver back instead, so here
//!
//! 1. the stream comes from [`SendTcp`] (simulated TCP, `Send` as redis-rs requires,
//!    the connect deadline on the node's own clock);
//! 2. the driver is spawned with [`NodeCtx::spawn`]: it pauses and dies with the node;
//! 3. a request that timed out or failed on the wire drops the connection, and the next
//!    request opens a new one. Simulated TCP does not retransmit, so a connection whose
//!    reply was lost (a partition, a paused server) stays wedged: reusing it would make
//!    every later request time out too.

use locksim::plugin::*;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ErrorKind, RedisConnectionInfo, RedisError};
use std::time::Duration;
use tokio::task::JoinHandle;

/// The Redis model's node and port (`models::Redis` serves 6379 on `redis-0`).
const SERVER: (&str, u16) = ("redis-0", 6379);

/// A connection opened on first use and again after a failure.
pub struct Link {
    /// Connect deadline and redis-rs's response timeout.
    timeout: Duration,
    /// The open connection and its driver task, if any.
    open: Option<Open>,
}

/// An open redis-rs connection and the node task that drives its socket.
struct Open {
    conn: MultiplexedConnection,
    driver: JoinHandle<()>,
}

impl Link {
    /// No connection yet; requests get `timeout` each.
    pub fn new(timeout: Duration) -> Link {
        Link {
            timeout,
            open: None,
        }
    }

    /// The open connection, opening one if there is none (or its driver ended: the
    /// server closed it). A failure here sent no command: [`LockError::Failed`].
    pub async fn connection(&mut self, ctx: &NodeCtx) -> Result<MultiplexedConnection, LockError> {
        if self.open.as_ref().is_some_and(|o| o.driver.is_finished()) {
            self.close();
        }
        if let Some(open) = &self.open {
            // A clone shares the connection (redis-rs multiplexes requests on it).
            return Ok(open.conn.clone());
        }
        let open = self.open_new(ctx).await?;
        let conn = open.conn.clone();
        self.open = Some(open);
        Ok(conn)
    }

    async fn open_new(&self, ctx: &NodeCtx) -> Result<Open, LockError> {
        // Step 1: a simulated TCP connection, within the deadline of the node's clock.
        let (host, port) = SERVER;
        let stream = match SendTcp.connect(ctx, host, port, self.timeout).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Err(LockError::Failed(format!("connect: {e}"))),
            Err(Elapsed) => return Err(LockError::Failed("connect timed out".into())),
        };
        // Step 2: redis-rs on that stream. `skip_set_lib_name`: no `CLIENT SETINFO` on
        // connect; with no password, no database and RESP2, the setup sends nothing.
        let info = RedisConnectionInfo::default().set_skip_set_lib_name();
        // redis-rs's response timeout runs on tokio's clock, which turmoil simulates:
        // the true simulated time, not the node's local clock (a clock-drift fault does
        // not stretch it; locksim's own client's deadline is on the local clock).
        let config = AsyncConnectionConfig::new().set_response_timeout(Some(self.timeout));
        let setup = MultiplexedConnection::new_with_config(&info, stream, config);
        let (conn, driver) = match ctx.timeout(self.timeout, setup).await {
            Ok(Ok(made)) => made,
            Ok(Err(e)) => return Err(LockError::Failed(format!("connection setup: {e}"))),
            Err(Elapsed) => return Err(LockError::Failed("connection setup timed out".into())),
        };
        // Step 3: the driver reads and writes the socket; spawned on the node, it is
        // frozen by a pause and killed by a crash like the rest of the node.
        let driver = ctx.spawn(driver);
        Ok(Open { conn, driver })
    }

    /// A request's result as the lock sees it. A reply, even an error reply, means the
    /// server answered: the connection stays. Anything else (redis-rs's response timeout,
    /// a closed or reset connection) may have come after the command reached the server,
    /// so its outcome is unknown ([`LockError::Indeterminate`]), and the connection is
    /// dropped for a fresh one.
    pub fn outcome<T>(&mut self, result: Result<T, RedisError>) -> Result<T, LockError> {
        match result {
            Ok(value) => Ok(value),
            Err(e) if matches!(e.kind(), ErrorKind::Server(_)) => {
                Err(LockError::Failed(format!("redis replied: {e}")))
            }
            Err(e) => {
                self.close();
                Err(LockError::Indeterminate(e.to_string()))
            }
        }
    }

    /// Drop the connection and stop its driver.
    fn close(&mut self) {
        if let Some(open) = self.open.take() {
            open.driver.abort();
        }
    }
}
