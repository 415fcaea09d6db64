//! Redlock: a lock held on a majority of N independent Redis nodes, as specified in
//! redis.io, "Distributed Locks with Redis" (the Redlock algorithm,
//! <https://redis.io/docs/latest/develop/use/patterns/distributed-locks/>).
//!
//! The client, per the specification:
//!
//! 1. draws a unique random value and records the start time;
//! 2. sends `SET lock value NX PX ttl` to all N nodes at once, each with a per-node
//!    deadline (`node_timeout_ms`) that is small against the TTL;
//! 3. computes `elapsed = now − start` and `validity = ttl − elapsed − drift`, where
//!    `drift = ttl × drift_factor + 2 ms`;
//! 4. holds the lock iff at least `N/2 + 1` nodes said OK and `validity > 0`;
//! 5. otherwise unlocks on *all* nodes (the compare-and-delete script, also on nodes that
//!    seemed not to answer) and retries after a random delay.
//!
//! Release is the compare-and-delete script on every node; extension is the
//! compare-and-`PEXPIRE` script on every node, successful on a majority within the
//! validity time.
//!
//! The debate this module lets you replay: M. Kleppmann, "How to do distributed locking"
//! (2016, <https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html>)
//! argues that Redlock depends on bounded clock jumps, pauses and network delay, and has no
//! fencing token; antirez, "Is Redlock safe?" (2016, <http://antirez.com/news/101>)
//! answers that monotonic elapsed-time checks handle pauses *during* acquisition and that
//! delayed restarts (or `fsync=always`) handle crashes. Every assumption is a parameter:
//! `clock = monotonic | wall` (the reference clients that call `time()`), `reject_expired`
//! (a client that skips the validity re-check), node `persistence` and `restart_delay_ms`
//! (antirez's delayed restart, in [`server_main`]). Catalogue rows 7–11 are in
//! `sims/redlock-*.toml`.
//!
//! The algorithm is a pure core ([`core`]: [`drift_ns`], [`validity_ns`], [`elapsed_ns`],
//! [`quorum`], [`tally`], [`decide`]) with the I/O at the edge ([`client::RedlockClient`]). Each
//! attempt that reaches a majority is recorded as a client `event` `majority` whose value
//! names the nodes that granted and the validity computed, so a replay shows which client
//! held which nodes.

mod client;
pub(crate) mod core;
pub(crate) mod params;

pub(crate) use client::RedlockClient;
pub(crate) use params::Redlock;

use crate::check::{Check, STANDARD};
use crate::locks::redis::RealRedis;
use crate::locks::{Algorithm, LocalBoxFuture, LockClient, ParamDoc, ParamError};
use crate::real::RealCluster;
use crate::sim::{FaultPoint, NodeCtx};
use std::rc::Rc;
use std::time::Duration;

impl Algorithm for Redlock {
    const NAME: &'static str = "redlock";
    const ABOUT: &'static str =
        "a lock held on a majority of N independent Redis nodes (redis.io's Redlock)";

    fn params() -> Vec<ParamDoc> {
        params::DOCS.to_vec()
    }

    fn validate(&self) -> Result<(), ParamError> {
        params::validate(self)
    }

    fn servers(&self) -> Vec<String> {
        (0..self.nodes).map(|i| format!("redis-{i}")).collect()
    }

    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        Box::pin(server_main(ctx, self.clone()))
    }

    fn client(&self) -> Box<dyn LockClient> {
        Box::new(RedlockClient::new(self.clone()))
    }

    fn lease_ms(&self) -> Option<u64> {
        Some(self.ttl_ms)
    }

    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        crate::locks::table_of(self)
    }

    fn real(&self) -> Option<Rc<dyn RealCluster>> {
        let model_only = (self.restart_delay_ms > 0)
            .then(|| "restart_delay_ms (a real restart is immediate)".to_string());
        Some(Rc::new(RealRedis {
            servers: self.servers(),
            persistence: self.persistence,
            down_after_ms: None,
            model_only: model_only.into_iter().collect(),
        }))
    }

    /// Every standard check but the ones [`Algorithm::omitted_checks`] names.
    fn checks(&self) -> Vec<&'static Check> {
        let omitted = Algorithm::omitted_checks(self);
        STANDARD
            .iter()
            .copied()
            .filter(|&c| omitted.iter().all(|&(o, _)| o != c))
            .collect()
    }

    /// Redlock hands out no fencing token (Kleppmann's objection).
    fn fencing_token(&self) -> Option<&'static str> {
        None
    }

    /// `lock-linearizable` needs one authoritative lock server whose expirations are the
    /// lock's; here each of N nodes expires its own copy of the key.
    fn omitted_checks(&self) -> Vec<(&'static Check, &'static str)> {
        vec![(
            &crate::check::LOCK_LINEARIZABLE,
            "no single server holds the lock: each of the N nodes expires its own copy of the key, and the lock's lifetime is a client-side majority computation",
        )]
    }

    /// Between the replies and the validity computation (catalogue row 9).
    fn client_fault_points(&self) -> &'static [FaultPoint] {
        &[FaultPoint::MidAcquire]
    }
}

/// A Redis node of a Redlock deployment: after a restart it stays down for
/// `restart_delay_ms` before serving (antirez's delayed restart), then serves as usual.
pub(crate) async fn server_main(ctx: NodeCtx, params: Redlock) {
    if ctx.incarnation() > 0 && params.restart_delay_ms > 0 {
        ctx.sleep(Duration::from_millis(params.restart_delay_ms))
            .await;
    }
    crate::locks::redis::serve_node(ctx, params.persistence).await
}
