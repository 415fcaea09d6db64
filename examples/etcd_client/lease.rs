//! A lease and the task that keeps it alive, with etcd-client's lease calls.
//!
//! 1. `lease_grant(ttl)`: the TTL in etcd's wire seconds (see
//!    [`super::EtcdClientLock::ttl_seconds`]). The lease is valid until the answer's
//!    arrival + the TTL granted, on the node's local monotonic clock.
//! 2. The keepalive task, spawned with [`NodeCtx::spawn`] so that a pause of the node
//!    freezes it with the lock holder (catalogue row 17 is exactly that):
//!    `lease_keep_alive(id)` opens etcd's bidirectional keepalive stream, sends the
//!    first renew and reads its answer itself (its error `lease not found` for a lease
//!    the server does not know; otherwise the lease is renewed for its TTL). Each renew
//!    answered moves the validity to *answer + TTL* (etcd clientv3's `ka.deadline`);
//!    the next renew (`keeper.keep_alive()`, read back with `stream.message()`) goes a
//!    third of the TTL later, as clientv3 sends it. An answer with TTL 0 means the
//!    lease is gone (revoked after it expired): the validity is cut to now and the
//!    task ends. A failed or unanswered renew moves on to the next server, on a new
//!    stream (at once after a `not leader` refusal: the model's followers refuse
//!    renews unless `forward_lease_calls = true`).
//! 3. [`KeptLease::revoke`]: stop the task and `lease_revoke(id)`.

use super::endpoints::{Endpoints, Failure, Retry};
use locksim::plugin::*;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// A granted lease, kept alive by a task of the node.
pub struct KeptLease {
    /// The lease id the server chose.
    pub id: i64,
    /// End of validity on the node's monotonic clock, ns (shared with the task and with
    /// the grants made under the lease).
    pub valid_until: Rc<Cell<i64>>,
    keepalive: tokio::task::JoinHandle<()>,
}

/// What the keepalive task needs to know.
#[derive(Clone)]
pub struct KeepAlive {
    /// The servers.
    pub nodes: Vec<String>,
    /// The server to start with.
    pub first: usize,
    /// One wire second of the model.
    pub second: Duration,
    /// Each renew's deadline.
    pub request_timeout: Duration,
}

impl KeptLease {
    /// Grant a lease of `ttl_s` wire seconds and start keeping it alive. `Err` when the
    /// grant got no answer before `deadline_ns` (a lease granted without our knowing
    /// simply expires: nobody keeps it alive).
    pub async fn grant(
        ctx: &NodeCtx,
        endpoints: &mut Endpoints,
        ttl_s: i64,
        how: KeepAlive,
        deadline_ns: i64,
    ) -> Result<KeptLease, Failure> {
        let granted = endpoints
            .call(ctx, Retry::Write, deadline_ns, |mut c| async move {
                c.lease_grant(ttl_s, None).await
            })
            .await?;
        let ttl = how.second * granted.ttl().max(0) as u32;
        let valid_until = Rc::new(Cell::new(ctx.mono_ns() + nanos(ttl)));
        let id = granted.id();
        let task = keep_alive(ctx.clone(), id, ttl, valid_until.clone(), how);
        Ok(KeptLease {
            id,
            valid_until,
            keepalive: ctx.spawn(task),
        })
    }

    /// Stop keeping the lease alive, and revoke it (best effort: if the revoke fails
    /// the lease expires on its own). Whether the revoke surely did not happen.
    pub async fn revoke(self, ctx: &NodeCtx, endpoints: &mut Endpoints) -> Result<(), Failure> {
        self.keepalive.abort();
        let id = self.id;
        let deadline = ctx.mono_ns() + endpoints.request_timeout().as_nanos() as i64;
        endpoints
            .call(ctx, Retry::Write, deadline, |mut c| async move {
                c.lease_revoke(id).await
            })
            .await
            .map(drop)
    }
}

impl Drop for KeptLease {
    fn drop(&mut self) {
        self.keepalive.abort();
    }
}

/// The keepalive task: renews until an answer says the lease is gone.
async fn keep_alive(
    ctx: NodeCtx,
    id: i64,
    ttl: Duration,
    valid_until: Rc<Cell<i64>>,
    how: KeepAlive,
) {
    let mut endpoints = Endpoints::new(&ctx, &how.nodes, how.first, how.request_timeout).await;
    // The first renew goes at once (clientv3's first `nextKeepAlive` is the grant's
    // time); then a third of the TTL after each answer; after a failure, a little sooner.
    let retry = (ttl / 10).max(Duration::from_millis(1));
    loop {
        match renew_on_a_stream(&ctx, &mut endpoints, id, &valid_until, how.second, ttl).await {
            Renewals::LeaseGone => {
                valid_until.set(valid_until.get().min(ctx.mono_ns()));
                return;
            }
            // A follower's refusal: the next server at once (anything else waits: a
            // crashed server refuses connections at once, and a loop that never sleeps
            // would stop simulated time).
            Renewals::Failed(Failure::NotApplied(why)) if why.contains("not leader") => {
                tracing::debug!(lease = id, why, "keepalive refused: next server");
            }
            Renewals::Failed(f) => {
                tracing::debug!(
                    lease = id,
                    why = f.reason(),
                    "keepalive failed: next server"
                );
                ctx.sleep(retry).await;
            }
        }
    }
}

/// How a keepalive stream ended.
enum Renewals {
    /// An answer with TTL 0: the lease is gone.
    LeaseGone,
    /// The stream failed, or a renew got no answer in time (the preferred server is
    /// the next one now).
    Failed(Failure),
}

/// Renew on one keepalive stream (etcd-client's `LeaseKeeper` and
/// `LeaseKeepAliveStream`) at the preferred server, a third of the `granted` TTL after
/// each answer, until it fails or says the lease is gone.
async fn renew_on_a_stream(
    ctx: &NodeCtx,
    endpoints: &mut Endpoints,
    id: i64,
    valid_until: &Cell<i64>,
    second: Duration,
    granted: Duration,
) -> Renewals {
    let every = granted / 3;
    let limit = endpoints.request_timeout();
    // Opening the stream sends the first renew and reads its answer itself: a lease
    // the server does not know is etcd-client's `LeaseKeepAliveError("lease not
    // found")`; else the lease was renewed (for its granted TTL, which etcd-client
    // does not show).
    let open = |mut c: etcd_client::Client| async move { c.lease_keep_alive(id).await };
    let (mut keeper, mut answers) = match endpoints.once(ctx, limit, open).await {
        Ok(stream) => stream,
        Err(Failure::NotApplied(why)) if why.contains("lease not found") => {
            return Renewals::LeaseGone
        }
        Err(f) => return Renewals::Failed(f),
    };
    valid_until.set(ctx.mono_ns() + nanos(granted));
    let failure = loop {
        ctx.sleep(every).await;
        if let Err(e) = keeper.keep_alive().await {
            break Failure::of(&e);
        }
        match ctx.timeout(limit, answers.message()).await {
            Ok(Ok(Some(answer))) if answer.ttl() <= 0 => return Renewals::LeaseGone,
            Ok(Ok(Some(answer))) => {
                let ttl = second * answer.ttl() as u32;
                valid_until.set(ctx.mono_ns() + nanos(ttl));
            }
            Ok(Ok(None)) => break Failure::MaybeApplied("the keepalive stream ended".into()),
            Ok(Err(e)) => break Failure::of(&e),
            Err(Elapsed) => {
                endpoints.reset().await;
                break Failure::MaybeApplied(format!("no keepalive answer within {limit:?}"));
            }
        }
    };
    endpoints.next();
    Renewals::Failed(failure)
}

fn nanos(d: Duration) -> i64 {
    d.as_nanos() as i64
}
