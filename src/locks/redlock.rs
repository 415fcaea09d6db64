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
//! The algorithm is a pure core ([`drift_ns`], [`validity_ns`], [`elapsed_ns`],
//! [`quorum`], [`tally`], [`decide`]) with the I/O at the edge ([`Redlock`]). Each
//! attempt that reaches a majority is recorded as a client `event` `majority` whose value
//! names the nodes that granted and the validity computed, so a replay shows which client
//! held which nodes.

use super::redis::conn::{CallError, Remote};
use super::redis::resp::Value;
use super::redis::server::{EXTEND_SCRIPT, UNLOCK_SCRIPT};
use super::redis::{eval, REDIS_PORT};
use crate::history::EventType;
use crate::locks::{Grant, LocalBoxFuture, LockClient, LockError};
use crate::scenario::{ClockKind, FaultPoint, RedlockParams};
use crate::sim::NodeCtx;
use std::cell::Cell;
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

const MS: i64 = 1_000_000;

/// A Redis node of a Redlock deployment: after a restart it stays down for
/// `restart_delay_ms` before serving (antirez's delayed restart), then serves as usual.
pub async fn server_main(ctx: NodeCtx, params: &RedlockParams) {
    if ctx.incarnation() > 0 && params.restart_delay_ms > 0 {
        ctx.sleep(Duration::from_millis(params.restart_delay_ms))
            .await;
    }
    super::redis::serve_node(ctx, params.persistence).await
}

// ---------------------------------------------------------------------------------------
// The pure core.
// ---------------------------------------------------------------------------------------

/// The clock-drift allowance, ns: `ttl × drift_factor + 2 ms` (the spec's "plus 2
/// milliseconds for Redis expires precision").
pub fn drift_ns(ttl_ms: u64, drift_factor: f64) -> i64 {
    (ttl_ms as f64 * 1e6 * drift_factor) as i64 + 2 * MS
}

/// The remaining validity of a lock whose acquisition took `elapsed_ns`, ns:
/// `ttl − elapsed − drift`. Zero or negative means the lock may already have expired on
/// the nodes.
pub fn validity_ns(ttl_ms: u64, elapsed_ns: i64, drift_factor: f64) -> i64 {
    ttl_ms as i64 * MS - elapsed_ns - drift_ns(ttl_ms, drift_factor)
}

/// A reading of the client's clocks: monotonic ns and wall ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Monotonic clock, ns.
    pub mono_ns: i64,
    /// Wall clock, ms since the Unix epoch.
    pub wall_ms: i64,
}

impl Stamp {
    /// Read `ctx`'s clocks now.
    pub fn now(ctx: &NodeCtx) -> Stamp {
        Stamp {
            mono_ns: ctx.mono_ns(),
            wall_ms: ctx.wall_ms(),
        }
    }
}

/// Time elapsed from `from` to `to` as measured by `clock`, ns. By the wall clock it can
/// be negative (the clock stepped back) or far too large (it stepped forward).
pub fn elapsed_ns(clock: ClockKind, from: Stamp, to: Stamp) -> i64 {
    match clock {
        ClockKind::Monotonic => to.mono_ns - from.mono_ns,
        ClockKind::Wall => (to.wall_ms - from.wall_ms) * MS,
    }
}

/// How many nodes make a majority of `nodes`: `N/2 + 1`.
pub fn quorum(nodes: usize) -> usize {
    nodes / 2 + 1
}

/// One node's answer to a lock request (`SET NX PX`, or a script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeReply {
    /// The node did it (`OK`, or the script returned 1).
    Yes,
    /// The node answered no (the key is someone else's, or absent).
    No,
    /// Could not connect: the request definitely did not run.
    Unreachable,
    /// No reply in time, or the connection broke: the request may have run.
    TimedOut,
}

impl NodeReply {
    /// Classify the result of a `SET lock value NX PX ttl`.
    pub fn from_set(r: &Result<Value, CallError>) -> NodeReply {
        match r {
            Ok(Value::Simple(s)) if s == "OK" => NodeReply::Yes,
            Ok(_) => NodeReply::No,
            Err(e) => NodeReply::from_error(e),
        }
    }

    /// Classify the result of a script that returns 1 on success (unlock, extend).
    pub fn from_script(r: &Result<Value, CallError>) -> NodeReply {
        match r {
            Ok(Value::Integer(1)) => NodeReply::Yes,
            Ok(_) => NodeReply::No,
            Err(e) => NodeReply::from_error(e),
        }
    }

    fn from_error(e: &CallError) -> NodeReply {
        if e.maybe_applied() {
            NodeReply::TimedOut
        } else {
            NodeReply::Unreachable
        }
    }
}

/// The replies of one round, counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tally {
    /// Nodes that said yes.
    pub yes: usize,
    /// Nodes that said no.
    pub no: usize,
    /// Nodes that could not be reached.
    pub unreachable: usize,
    /// Nodes whose reply never came (the request may have run: counted as no).
    pub timed_out: usize,
}

/// Count a round's replies. Only an explicit yes counts toward the majority: a node that
/// timed out counts as no, even if it may have set the key.
pub fn tally(replies: &[NodeReply]) -> Tally {
    let mut t = Tally::default();
    for r in replies {
        match r {
            NodeReply::Yes => t.yes += 1,
            NodeReply::No => t.no += 1,
            NodeReply::Unreachable => t.unreachable += 1,
            NodeReply::TimedOut => t.timed_out += 1,
        }
    }
    t
}

/// The verdict on one acquisition attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A majority granted and (if checked) validity is left: the lock is held.
    Held,
    /// Fewer than `N/2 + 1` nodes granted.
    NoMajority,
    /// A majority granted, but the acquisition took so long that no validity is left.
    Expired,
}

/// Decide an attempt: held iff `yes ≥ N/2 + 1` and (`validity > 0` or the client does not
/// re-check validity, `reject_expired = false`).
pub fn decide(nodes: usize, yes: usize, validity_ns: i64, reject_expired: bool) -> Decision {
    if yes < quorum(nodes) {
        Decision::NoMajority
    } else if validity_ns <= 0 && reject_expired {
        Decision::Expired
    } else {
        Decision::Held
    }
}

/// Run every future concurrently on the current task and return their outputs in input
/// order. Each wake-up polls the unfinished futures in index order, so the interleaving is
/// deterministic (no `tokio::spawn`, no randomised `select!`).
pub async fn join_all<'a, T>(futures: Vec<LocalBoxFuture<'a, T>>) -> Vec<T> {
    let mut futures: Vec<Option<LocalBoxFuture<'a, T>>> = futures.into_iter().map(Some).collect();
    let mut out: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, result) in futures.iter_mut().zip(out.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => {
                        *result = Some(v);
                        *slot = None;
                    }
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter()
        .map(|v| v.expect("every future completed"))
        .collect()
}

// ---------------------------------------------------------------------------------------
// The I/O edge.
// ---------------------------------------------------------------------------------------

/// The Redlock client over `redis-0 .. redis-{nodes-1}`.
pub struct Redlock {
    params: RedlockParams,
    /// One connection per node, each with the per-node deadline.
    remotes: Vec<Remote>,
    /// The value of the most recent acquire (to clean up after an unknown outcome).
    last_value: Option<String>,
}

impl Redlock {
    /// A client over `redis-0 .. redis-{nodes-1}`.
    pub fn new(params: RedlockParams) -> Redlock {
        let timeout = Duration::from_millis(params.node_timeout_ms);
        let remotes = (0..params.nodes)
            .map(|i| Remote::new(&format!("redis-{i}"), REDIS_PORT, timeout))
            .collect();
        Redlock {
            params,
            remotes,
            last_value: None,
        }
    }

    /// `SET lock value NX PX ttl` on every node at once.
    async fn set_all(&mut self, ctx: &NodeCtx, lock: &str, value: &str) -> Vec<NodeReply> {
        let ttl = self.params.ttl_ms.to_string();
        let ttl = ttl.as_str();
        let futures: Vec<LocalBoxFuture<'_, NodeReply>> = self
            .remotes
            .iter_mut()
            .map(|remote| {
                Box::pin(async move {
                    let args: [&[u8]; 6] = [
                        b"SET",
                        lock.as_bytes(),
                        value.as_bytes(),
                        b"NX",
                        b"PX",
                        ttl.as_bytes(),
                    ];
                    NodeReply::from_set(&remote.call(ctx, &args).await)
                }) as LocalBoxFuture<'_, NodeReply>
            })
            .collect();
        join_all(futures).await
    }

    /// Run `script` with `KEYS = [lock]` and `args` on every node at once.
    async fn script_all(
        &mut self,
        ctx: &NodeCtx,
        script: &str,
        lock: &str,
        args: &[&str],
    ) -> Vec<NodeReply> {
        let futures: Vec<LocalBoxFuture<'_, NodeReply>> = self
            .remotes
            .iter_mut()
            .map(|remote| {
                Box::pin(async move {
                    NodeReply::from_script(&eval(remote, ctx, script, &[lock], args).await)
                }) as LocalBoxFuture<'_, NodeReply>
            })
            .collect();
        join_all(futures).await
    }

    /// Compare-and-delete on every node; `true` if a majority deleted this holder's key.
    async fn unlock_all(&mut self, ctx: &NodeCtx, lock: &str, value: &str) -> bool {
        let replies = self.script_all(ctx, UNLOCK_SCRIPT, lock, &[value]).await;
        let t = tally(&replies);
        tracing::debug!(?t, "redlock: unlocked {lock} on all nodes");
        t.yes >= quorum(self.remotes.len())
    }

    /// Names of the nodes whose reply was yes.
    fn granted_by(&self, replies: &[NodeReply]) -> Vec<String> {
        self.remotes
            .iter()
            .zip(replies)
            .filter(|(_, r)| **r == NodeReply::Yes)
            .map(|(remote, _)| remote.host().to_string())
            .collect()
    }

    async fn acquire_impl(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        timeout: Duration,
    ) -> Result<Grant, LockError> {
        let p = self.params.clone();
        let n = self.remotes.len();
        let value = format!("{}:{:016x}", ctx.name(), ctx.rand_u64());
        self.last_value = Some(value.clone());
        let deadline = ctx.mono_ns() + timeout.as_nanos() as i64;
        // Why the attempts failed; a request that may have set a key makes it unknown.
        let mut maybe_set = false;
        let mut last = String::new();
        for attempt in 1..=p.retries {
            let start = Stamp::now(ctx);
            let replies = self.set_all(ctx, lock, &value).await;
            // Catalogue row 9: a pause here (replies in, validity not yet computed).
            ctx.fault_point(FaultPoint::MidAcquire).await;
            let now = Stamp::now(ctx);
            let elapsed = elapsed_ns(p.clock, start, now);
            let validity = validity_ns(p.ttl_ms, elapsed, p.drift_factor);
            let t = tally(&replies);
            let decision = decide(n, t.yes, validity, p.reject_expired);
            let nodes = self.granted_by(&replies);
            tracing::debug!(
                attempt,
                ?t,
                ?nodes,
                elapsed_ms = elapsed as f64 / 1e6,
                validity_ms = validity as f64 / 1e6,
                ?decision,
                "redlock: attempt on {lock}"
            );
            if t.yes >= quorum(n) {
                ctx.record(ctx.event(EventType::Event, "majority").lock(lock).value(
                    serde_json::json!({
                        "nodes": nodes,
                        "elapsed_ms": elapsed as f64 / 1e6,
                        "validity_ms": validity as f64 / 1e6,
                        "held": decision == Decision::Held,
                    }),
                ));
            }
            if decision == Decision::Held {
                // Validity runs from now; express it on the monotonic clock the workload
                // checks (with `clock = wall` the *amount* came from the wall clock).
                let until = now.mono_ns + validity;
                return Ok(Grant {
                    lock: lock.to_string(),
                    token: None,
                    owner_value: value,
                    valid_until: Some(Rc::new(Cell::new(until))),
                });
            }
            maybe_set |= t.timed_out > 0;
            last = match decision {
                Decision::Expired => format!(
                    "attempt {attempt}: majority ({} of {n}) but validity {:.1} ms",
                    t.yes,
                    validity as f64 / 1e6
                ),
                _ => format!(
                    "attempt {attempt}: {} of {n} nodes granted ({} busy, {} unreachable, {} timed out)",
                    t.yes, t.no, t.unreachable, t.timed_out
                ),
            };
            self.unlock_all(ctx, lock, &value).await;
            if attempt == p.retries || ctx.mono_ns() >= deadline {
                break;
            }
            ctx.sleep_ms_in(p.retry_delay_ms).await;
        }
        Err(if maybe_set {
            LockError::Indeterminate(format!("no lock; a SET may have applied; {last}"))
        } else {
            LockError::Failed(format!("no lock; {last}"))
        })
    }

    /// Extend a held lock to a full TTL (the compare-and-`PEXPIRE` script on every node).
    /// Succeeds, and moves `grant`'s deadline, iff a majority extended it within the
    /// validity time (measured as for an acquire).
    pub async fn extend(&mut self, ctx: &NodeCtx, grant: &Grant) -> Result<bool, LockError> {
        let p = self.params.clone();
        let start = Stamp::now(ctx);
        let ttl = p.ttl_ms.to_string();
        let replies = self
            .script_all(ctx, EXTEND_SCRIPT, &grant.lock, &[&grant.owner_value, &ttl])
            .await;
        let now = Stamp::now(ctx);
        let validity = validity_ns(p.ttl_ms, elapsed_ns(p.clock, start, now), p.drift_factor);
        let t = tally(&replies);
        if decide(self.remotes.len(), t.yes, validity, true) != Decision::Held {
            return Ok(false);
        }
        if let Some(until) = &grant.valid_until {
            until.set(now.mono_ns + validity);
        }
        Ok(true)
    }
}

impl LockClient for Redlock {
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        timeout: Duration,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(self.acquire_impl(ctx, lock, timeout))
    }

    fn release<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move { Ok(self.unlock_all(ctx, &grant.lock, &grant.owner_value).await) })
    }

    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            match self.last_value.clone() {
                Some(v) => Ok(self.unlock_all(ctx, lock, &v).await),
                None => Ok(false),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_arithmetic() {
        // drift = 1000 × 0.01 + 2 = 12 ms.
        assert_eq!(drift_ns(1000, 0.01), 12 * MS);
        assert_eq!(drift_ns(1000, 0.0), 2 * MS);
        assert_eq!(validity_ns(1000, 0, 0.01), 988 * MS);
        assert_eq!(validity_ns(1000, 30 * MS, 0.01), 958 * MS);
        // Exactly used up, and past it.
        assert_eq!(validity_ns(1000, 988 * MS, 0.01), 0);
        assert_eq!(validity_ns(1000, 1500 * MS, 0.01), -512 * MS);
        // A wall clock stepped back makes elapsed negative: validity exceeds the TTL.
        assert_eq!(validity_ns(1000, -2000 * MS, 0.01), 2988 * MS);
        // The spec's example: TTL 10 s.
        assert_eq!(validity_ns(10_000, 5 * MS, 0.01), (10_000 - 5 - 102) * MS);
    }

    #[test]
    fn elapsed_by_clock() {
        let a = Stamp {
            mono_ns: 100 * MS,
            wall_ms: 10_000,
        };
        // 1.5 s of real time; the wall clock stepped back 2 s meanwhile.
        let b = Stamp {
            mono_ns: 1600 * MS,
            wall_ms: 9_500,
        };
        assert_eq!(elapsed_ns(ClockKind::Monotonic, a, b), 1500 * MS);
        assert_eq!(elapsed_ns(ClockKind::Wall, a, b), -500 * MS);
        let v_mono = validity_ns(1000, elapsed_ns(ClockKind::Monotonic, a, b), 0.01);
        let v_wall = validity_ns(1000, elapsed_ns(ClockKind::Wall, a, b), 0.01);
        assert_eq!(decide(5, 5, v_mono, true), Decision::Expired);
        assert_eq!(decide(5, 5, v_wall, true), Decision::Held);
    }

    #[test]
    fn majority_sizes() {
        assert_eq!(quorum(1), 1);
        assert_eq!(quorum(2), 2);
        assert_eq!(quorum(3), 2);
        assert_eq!(quorum(4), 3);
        assert_eq!(quorum(5), 3);
    }

    #[test]
    fn majority_counting_with_timeouts() {
        use NodeReply::*;
        // Three yes of five: a majority.
        let t = tally(&[Yes, Yes, Yes, Unreachable, TimedOut]);
        assert_eq!(
            t,
            Tally {
                yes: 3,
                no: 0,
                unreachable: 1,
                timed_out: 1
            }
        );
        assert_eq!(decide(5, t.yes, 500 * MS, true), Decision::Held);
        // Two yes and two timeouts: the timeouts may have set the key, but count as no.
        let t = tally(&[Yes, Yes, TimedOut, TimedOut, No]);
        assert_eq!(t.yes, 2);
        assert_eq!(t.timed_out, 2);
        assert_eq!(decide(5, t.yes, 500 * MS, true), Decision::NoMajority);
        // No majority is no majority, whether or not validity is checked.
        assert_eq!(decide(5, 2, 500 * MS, false), Decision::NoMajority);
    }

    #[test]
    fn replies_are_classified() {
        let ok = Ok(Value::Simple("OK".into()));
        assert_eq!(NodeReply::from_set(&ok), NodeReply::Yes);
        assert_eq!(NodeReply::from_set(&Ok(Value::nil())), NodeReply::No);
        assert_eq!(
            NodeReply::from_set(&Err(CallError::Timeout)),
            NodeReply::TimedOut
        );
        assert_eq!(
            NodeReply::from_set(&Err(CallError::Io("reset".into()))),
            NodeReply::TimedOut
        );
        assert_eq!(
            NodeReply::from_set(&Err(CallError::Connect("refused".into()))),
            NodeReply::Unreachable
        );
        assert_eq!(
            NodeReply::from_script(&Ok(Value::Integer(1))),
            NodeReply::Yes
        );
        assert_eq!(
            NodeReply::from_script(&Ok(Value::Integer(0))),
            NodeReply::No
        );
    }

    #[test]
    fn the_decision() {
        // Majority and validity: held.
        assert_eq!(decide(5, 3, MS, true), Decision::Held);
        // Majority, validity used up: a correct client refuses...
        assert_eq!(decide(5, 5, 0, true), Decision::Expired);
        assert_eq!(decide(5, 5, -MS, true), Decision::Expired);
        // ...a client that does not re-check holds an expired lock.
        assert_eq!(decide(5, 5, -MS, false), Decision::Held);
    }

    // --- World-level tests: the client against real Redis node models over turmoil. ---

    use crate::history::Event;
    use crate::scenario::Scenario;

    fn world(extra: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nalgorithm = \"redlock\"\nduration_ms = 3000\nliveness_ms = 1000\n{extra}"
        );
        Scenario::parse(std::path::Path::new("redlock-test.toml"), &text)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn events<'h>(h: &'h [Event], kind: EventType, f: &str) -> Vec<&'h Event> {
        h.iter().filter(|e| e.kind == kind && e.f == f).collect()
    }

    /// The nodes named by a `majority` event.
    fn granted(e: &Event) -> Vec<String> {
        let v = e.value.as_ref().expect("majority events carry a value");
        serde_json::from_value(v["nodes"].clone()).expect("a list of node names")
    }

    #[test]
    fn release_deletes_the_key_on_every_node() {
        // One client, no faults: every grant is on all five nodes and every release
        // deletes all five keys, so no key is ever left to expire.
        let s = world("[lock]\nttl_ms = 500\n[workload]\nclients = 1\n");
        for seed in 0..3 {
            let r = crate::run(&s, seed);
            let h = &r.history;
            let grants = events(h, EventType::Ok, "acquire");
            assert!(
                grants.len() > 10,
                "seed {seed}: only {} grants",
                grants.len()
            );
            for m in events(h, EventType::Event, "majority") {
                assert_eq!(granted(m).len(), 5, "{m:?}");
            }
            let releases = events(h, EventType::Ok, "release");
            assert!(releases.len() >= grants.len() - 1);
            // A release that deleted no majority is recorded as `fail`.
            assert!(
                events(h, EventType::Fail, "release").is_empty(),
                "seed {seed}: a release did not delete a majority"
            );
            let expired = events(h, EventType::Event, "expire");
            assert!(
                expired.is_empty(),
                "seed {seed}: keys left behind: {expired:?}"
            );
        }
    }

    #[test]
    fn a_majority_is_enough_and_required() {
        // Two of five nodes down: every grant comes from the other three.
        let two_down = world(
            "[lock]\nttl_ms = 500\n[workload]\nclients = 2\n\
             [[faults.at]]\nat_ms = 0\nkind = \"crash\"\nnodes = [\"redis-0\", \"redis-3\"]\n",
        );
        let r = crate::run(&two_down, 1);
        let majorities = events(&r.history, EventType::Event, "majority");
        assert!(majorities.len() > 5);
        for m in &majorities {
            assert_eq!(granted(m), ["redis-1", "redis-2", "redis-4"], "{m:?}");
        }
        assert!(!events(&r.history, EventType::Ok, "release").is_empty());
        assert!(events(&r.history, EventType::Fail, "release").is_empty());
        // Three of five down: nobody ever holds the lock, and the failures are definite
        // (a refused connection cannot have set a key).
        let three_down = world(
            "[lock]\nttl_ms = 500\n[workload]\nclients = 2\n\
             [[faults.at]]\nat_ms = 0\nkind = \"crash\"\nnodes = [\"redis-0\", \"redis-1\", \"redis-3\"]\n",
        );
        let r = crate::run(&three_down, 1);
        assert!(events(&r.history, EventType::Ok, "acquire").is_empty());
        assert!(!events(&r.history, EventType::Fail, "acquire").is_empty());
    }

    #[test]
    fn a_partitioned_holder_releases_its_majority() {
        // client-0 never reaches redis-3 and redis-4: it holds and releases on 0, 1, 2.
        let s = world(
            "[lock]\nttl_ms = 500\n[workload]\nclients = 1\n\
             [[faults.at]]\nat_ms = 0\nkind = \"partition\"\nnodes = [\"client-0\"]\npeers = [\"redis-3\", \"redis-4\"]\n",
        );
        let r = crate::run(&s, 2);
        let majorities = events(&r.history, EventType::Event, "majority");
        assert!(majorities.len() > 5);
        for m in &majorities {
            assert_eq!(granted(m), ["redis-0", "redis-1", "redis-2"], "{m:?}");
        }
        assert!(!events(&r.history, EventType::Ok, "release").is_empty());
        assert!(events(&r.history, EventType::Fail, "release").is_empty());
        assert!(events(&r.history, EventType::Event, "expire").is_empty());
    }

    #[test]
    fn extend_moves_the_deadline_and_needs_the_key() {
        use crate::history::Recorder;
        use crate::sim::NodeState;
        let mut sim = turmoil::Builder::new()
            .simulation_duration(Duration::from_secs(10))
            .tick_duration(Duration::from_millis(1))
            .min_message_latency(Duration::from_millis(1))
            .max_message_latency(Duration::from_millis(5))
            .tcp_capacity(65536)
            .build();
        for i in 0..3 {
            let name = format!("redis-{i}");
            let state = Rc::new(NodeState::new(&name, 1));
            sim.host(name.as_str(), move || {
                let ctx = NodeCtx::new(state.clone(), Recorder::new());
                async move {
                    crate::locks::redis::serve_node(ctx, crate::scenario::Persistence::None).await;
                    Ok(())
                }
            });
        }
        sim.client("client-0", async {
            let ctx = NodeCtx::new(Rc::new(NodeState::new("client-0", 1)), Recorder::new());
            let params: RedlockParams = toml::from_str("nodes = 3\nttl_ms = 500").unwrap();
            let mut rl = Redlock::new(params);
            let g = rl.acquire(&ctx, "L", Duration::from_secs(1)).await.unwrap();
            let first = g.valid_until_ns().unwrap();
            ctx.sleep(Duration::from_millis(300)).await;
            assert!(rl.extend(&ctx, &g).await.unwrap());
            let second = g.valid_until_ns().unwrap();
            assert!(second >= first + 290 * MS, "{first} -> {second}");
            // Past the first lease: the extended key is still ours to delete.
            ctx.sleep(Duration::from_millis(400)).await;
            assert!(ctx.mono_ns() > first);
            assert!(rl.release(&ctx, &g).await.unwrap());
            // Gone: neither a second release nor an extension finds it.
            assert!(!rl.release(&ctx, &g).await.unwrap());
            assert!(!rl.extend(&ctx, &g).await.unwrap());
            assert_eq!(g.valid_until_ns(), Some(second));
            Ok(())
        });
        sim.run().unwrap();
    }

    #[test]
    fn join_all_keeps_order_and_runs_concurrently() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let t0 = tokio::time::Instant::now();
            let futures: Vec<LocalBoxFuture<'_, u64>> = [30u64, 10, 20]
                .into_iter()
                .map(|ms| {
                    Box::pin(async move {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                        ms
                    }) as LocalBoxFuture<'_, u64>
                })
                .collect();
            assert_eq!(join_all(futures).await, vec![30, 10, 20]);
            // Concurrent: the slowest, not the sum.
            assert_eq!(t0.elapsed(), Duration::from_millis(30));
            assert!(join_all::<u8>(Vec::new()).await.is_empty());
        });
    }
}
