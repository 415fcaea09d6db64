//! Lock algorithms: each provides server node(s) and a client implementing [`LockClient`].
//!
//! Variants are parameters of one client (see the scenario's `[lock]` keys), never copies
//! of a client that differ in one line.

pub mod raft;
pub mod redis;
pub mod redlock;

use crate::scenario::{Algorithm, LockParams, Scenario};
use crate::sim::NodeCtx;
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

/// A boxed, non-`Send` future (node code runs on one thread).
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A granted lock, as the client believes it.
#[derive(Debug, Clone)]
pub struct Grant {
    /// Lock name.
    pub lock: String,
    /// Fencing token, when the algorithm has one.
    pub token: Option<u64>,
    /// The unique value identifying this holder to the servers (e.g. the Redis value).
    pub owner_value: String,
    /// End of validity on the client's local monotonic clock, ns, for lease locks. Shared
    /// with a renewal task, which moves it forward.
    pub valid_until: Option<Rc<Cell<i64>>>,
}

impl Grant {
    /// The local monotonic deadline of the lease, if any.
    pub fn valid_until_ns(&self) -> Option<i64> {
        self.valid_until.as_ref().map(|c| c.get())
    }
}

/// Why an acquire or release did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// Definitely did not take effect (lock busy until the timeout, or refused).
    Failed(String),
    /// May have taken effect: a request timed out or its connection broke.
    Indeterminate(String),
}

impl LockError {
    /// The human reason.
    pub fn reason(&self) -> &str {
        match self {
            LockError::Failed(r) | LockError::Indeterminate(r) => r,
        }
    }
}

/// A lock client: one per client node, used by the workload.
pub trait LockClient {
    /// Try to acquire `lock` within `timeout` of local time.
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        timeout: Duration,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>>;

    /// Release a grant. `Ok(true)` if the servers released *this* holder's lock,
    /// `Ok(false)` if it was no longer held by it.
    fn release<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>>;

    /// Best-effort release of whatever an acquire with an unknown outcome may have taken
    /// (so an indeterminate acquire does not block everyone for a whole lease).
    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>>;
}

/// The client for the scenario's algorithm.
pub fn client_for(scenario: &Scenario) -> Box<dyn LockClient> {
    match &scenario.lock {
        LockParams::Redis(p) => Box::new(redis::RedisLock::new(p.clone(), scenario.algorithm)),
        LockParams::Redlock(p) => Box::new(redlock::Redlock::new(p.clone())),
    }
}

/// The main loop of lock server `ctx.name()`.
pub async fn server_main(scenario: &Scenario, ctx: NodeCtx) {
    match (&scenario.algorithm, &scenario.lock) {
        (Algorithm::RedisReplicated, LockParams::Redis(p)) => {
            redis::replicated_main(ctx, p.clone(), scenario.servers()).await
        }
        (_, LockParams::Redis(p)) => redis::serve_node(ctx, p.persistence).await,
        (_, LockParams::Redlock(p)) => redlock::server_main(ctx, p).await,
    }
}

/// Parameters of every algorithm, for `locksim list`: (algorithm, key, default, meaning).
pub const PARAMETERS: &[(&str, &str, &str, &str)] = &[
    ("redis", "ttl_ms", "1000", "lease time"),
    (
        "redis",
        "acquire",
        "set-nx-px",
        "set-nx-px | setnx-then-expire",
    ),
    (
        "redis",
        "unlock",
        "compare-and-delete",
        "compare-and-delete | del",
    ),
    (
        "redis",
        "token",
        "none",
        "none | incr (INCR a counter atomically with the acquire)",
    ),
    (
        "redis",
        "renew",
        "none",
        "none | watchdog (extend every ttl/3 while held)",
    ),
    (
        "redis",
        "persistence",
        "none",
        "none | everysec | always (AOF fsync policy)",
    ),
    (
        "redis",
        "request_timeout_ms",
        "200",
        "per-request deadline (client local time)",
    ),
    (
        "redis",
        "retry_delay_ms",
        "[20, 60]",
        "delay between acquire attempts",
    ),
    (
        "redis",
        "drift_factor",
        "0.01",
        "validity = ttl - elapsed - (ttl * factor + 2 ms)",
    ),
];
