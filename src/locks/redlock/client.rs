//! The Redlock client: the I/O edge around [`super::core`]. Requests go to all N nodes
//! at once, each with its own deadline, and the replies are counted by the pure core.

use super::core::{decide, elapsed_ns, quorum, tally, validity_ns, Decision, NodeReply, Stamp};
use super::params::Redlock;
use crate::history::names;
use crate::history::EventType;
#[cfg(test)]
use crate::locks::redis::model::EXTEND_SCRIPT;
use crate::locks::redis::model::UNLOCK_SCRIPT;
use crate::locks::redis::{eval, redis_remote, Call, RedisRemote, REDIS_PORT};
use crate::locks::{Grant, LocalBoxFuture, LockClient, LockError, Wait};
use crate::sim::{join_all, FaultPoint, NodeCtx};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// The Redlock client over `redis-0 .. redis-{nodes-1}`.
pub(crate) struct RedlockClient {
    params: Redlock,
    /// One connection per node, each with the per-node deadline.
    remotes: Vec<RedisRemote>,
    /// The value of the most recent acquire (to clean up after an unknown outcome).
    last_value: Option<String>,
}

impl RedlockClient {
    /// A client over `redis-0 .. redis-{nodes-1}`.
    pub(crate) fn new(params: Redlock) -> RedlockClient {
        let timeout = Duration::from_millis(params.node_timeout_ms);
        let remotes = (0..params.nodes)
            .map(|i| redis_remote(&format!("redis-{i}"), REDIS_PORT, timeout))
            .collect();
        RedlockClient {
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
        wait: Wait,
    ) -> Result<Grant, LockError> {
        let p = self.params.clone();
        let n = self.remotes.len();
        let value = format!("{}:{:016x}", ctx.name(), ctx.rand_u64());
        self.last_value = Some(value.clone());
        let deadline = wait.deadline_ns(ctx);
        // A try is one round (one attempt on every node).
        let rounds = if wait.once() { 1 } else { p.retries };
        // Why the attempts failed; a request that may have set a key makes it unknown.
        let mut maybe_set = false;
        let mut last = String::new();
        for attempt in 1..=rounds {
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
                ctx.record(
                    ctx.event(EventType::Event, names::MAJORITY)
                        .lock(lock)
                        .value(serde_json::json!({
                            "nodes": nodes,
                            "elapsed_ms": elapsed as f64 / 1e6,
                            "validity_ms": validity as f64 / 1e6,
                            "held": decision == Decision::Held,
                        })),
                );
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
            if attempt == rounds || ctx.mono_ns() >= deadline {
                break;
            }
            ctx.sleep_ms_in(*p.retry_delay_ms).await;
        }
        if wait.once() && !maybe_set {
            return Err(LockError::Failed(format!(
                "busy: no lock in one round; {last}"
            )));
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
    #[cfg(test)]
    pub(crate) async fn extend(&mut self, ctx: &NodeCtx, grant: &Grant) -> Result<bool, LockError> {
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

impl LockClient for RedlockClient {
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        wait: Wait,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(self.acquire_impl(ctx, lock, wait))
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

    const MS: i64 = 1_000_000;

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
                    crate::locks::redis::serve_node(ctx, crate::locks::redis::Persistence::None)
                        .await;
                    Ok(())
                }
            });
        }
        sim.client("client-0", async {
            let ctx = NodeCtx::new(Rc::new(NodeState::new("client-0", 1)), Recorder::new());
            let params: Redlock = toml::from_str("nodes = 3\nttl_ms = 500").unwrap();
            let mut rl = RedlockClient::new(params);
            let g = rl
                .acquire(&ctx, "L", Wait::For(Duration::from_secs(1)))
                .await
                .unwrap();
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
}
