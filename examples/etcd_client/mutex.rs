//! The lock client: etcd-client's `lock()` and `unlock()` on a lease of its own, as a
//! Rust service using etcd's Lock service writes it.
//!
//! **Acquire** ([`LockClient::acquire`]):
//!
//! 1. Grant a lease and keep it alive ([`KeptLease::grant`]).
//! 2. `lock(name, LockOptions::new().with_lease(id))`: etcd's Lock service queues the
//!    key `name/<lease id in hex>` and answers once every key ahead of it is gone. The
//!    call waits as long as the acquire may ([`Wait`]'s deadline). etcd's Lock service
//!    has no try-lock: a non-blocking acquire (`acquire = "try"`) waits at most its own
//!    duration.
//! 3. `get(key)`: the key's create revision is the fencing token (the position etcd
//!    gave the key in the lock's queue; the answer's header revision is not one, see
//!    `token` in `locksim list`). A key that is gone means the lease was revoked while
//!    `lock()` waited (etcd 3.4's lock server answers such a waiter anyway, etcd #11456):
//!    the acquire fails.
//!
//! **Release**: `unlock(key)`, then `lease_revoke(id)`. etcd's `Unlock` answers only a
//! header, so whether it released the lock is learned around it: a `get` of the lock's
//! keys before (our key gone: the lease's expiry took it, nothing to release; our key
//! the oldest: it owns the lock) and `lease_time_to_live` after (a live lease means no
//! expiry took the key: the unlock did). Whatever these cannot tell (a key that was
//! still waiting, a lease that may have expired around the unlock) is reported as
//! indeterminate, never guessed.
//!
//! **Outcomes**: `Failed` when nothing of the attempt can exist (refused, or never
//! sent); `Indeterminate` once a request that may have written went unanswered. After
//! an indeterminate acquire the workload calls [`LockClient::abandon`], which unlocks
//! the attempt's key and revokes its lease.

use super::endpoints::{Endpoints, Failure, Retry};
use super::lease::{KeepAlive, KeptLease};
use super::EtcdClientLock;
use locksim::plugin::*;
use std::time::Duration;

/// A lease and the key `lock()` queues under it (etcd's lock server names it
/// `name/<lease id in hex>`).
struct Attempt {
    lease: KeptLease,
    key: String,
}

/// The lock client of one client node.
pub struct EtcdClientMutex {
    params: EtcdClientLock,
    /// Made on first use: its channels belong to the client node.
    endpoints: Option<Endpoints>,
    /// The lease of the current grant, or of an attempt whose outcome is unknown.
    attempt: Option<Attempt>,
}

impl EtcdClientMutex {
    /// A client for a cluster with these parameters.
    pub fn new(params: EtcdClientLock) -> EtcdClientMutex {
        EtcdClientMutex {
            params,
            endpoints: None,
            attempt: None,
        }
    }

    /// The server client-N starts with: raft-(N mod nodes), spreading clients over them.
    fn first_node(&self, ctx: &NodeCtx) -> usize {
        let n = ctx.name().rsplit('-').next().and_then(|n| n.parse().ok());
        n.unwrap_or(0)
    }

    async fn endpoints(&mut self, ctx: &NodeCtx) -> &mut Endpoints {
        if self.endpoints.is_none() {
            let (nodes, first) = (self.params.nodes(), self.first_node(ctx));
            let timeout = self.params.request_timeout();
            self.endpoints = Some(Endpoints::new(ctx, &nodes, first, timeout).await);
        }
        self.endpoints.as_mut().expect("made above")
    }

    /// Steps 1–3 of an acquire (see the module docs).
    async fn lock(&mut self, ctx: &NodeCtx, lock: &str, wait: Wait) -> Result<Grant, LockError> {
        let deadline = wait.deadline_ns(ctx);
        // A lease left by an attempt nobody abandoned: it holds nothing we rely on.
        if let Some(old) = self.attempt.take() {
            let _ = old.lease.revoke(ctx, self.endpoints(ctx).await).await;
        }
        let how = KeepAlive {
            nodes: self.params.nodes(),
            first: self.first_node(ctx),
            second: self.params.second(),
            request_timeout: self.params.request_timeout(),
        };
        let ttl_s = self.params.ttl_seconds();
        let endpoints = self.endpoints(ctx).await;

        // 1. The lease.
        let lease = KeptLease::grant(ctx, endpoints, ttl_s, how, deadline)
            .await
            .map_err(|f| LockError::Failed(format!("lease grant: {}", f.reason())))?;
        let (id, valid_until) = (lease.id, lease.valid_until.clone());
        let key = format!("{lock}/{id:x}");
        self.attempt = Some(Attempt { lease, key });
        let endpoints = self.endpoints.as_mut().expect("made above");

        // 2. lock(), waiting until the acquire's deadline; retried on the next server
        // only when the request surely was not taken.
        let answer = loop {
            let left = Duration::from_nanos((deadline - ctx.mono_ns()).max(0) as u64);
            let options = etcd_client::LockOptions::new().with_lease(id);
            let name = lock.to_string();
            let call =
                |mut c: etcd_client::Client| async move { c.lock(name, Some(options)).await };
            match endpoints.once(ctx, left, call).await {
                Ok(answer) => break answer,
                Err(Failure::NotApplied(_)) if ctx.mono_ns() < deadline => {
                    ctx.sleep(endpoints.request_timeout() / 20).await;
                }
                Err(Failure::MaybeApplied(why)) => {
                    return Err(LockError::Indeterminate(format!("lock: {why}")));
                }
                Err(Failure::NotApplied(why) | Failure::Refused(why)) => {
                    // Nothing was queued: the lease is of no use.
                    self.give_up(ctx).await;
                    return Err(LockError::Failed(wait.gave_up(&format!("lock: {why}"))));
                }
            }
        };
        let key = String::from_utf8_lossy(answer.key()).into_owned();
        if let Some(attempt) = &mut self.attempt {
            attempt.key = key.clone();
        }
        let endpoints = self.endpoints.as_mut().expect("made above");

        // 3. The key's create revision: the fencing token.
        let read_until = deadline.max(ctx.mono_ns() + nanos(endpoints.request_timeout()));
        let read = endpoints
            .call(ctx, Retry::Read, read_until, |mut c| {
                let key = key.clone();
                async move { c.get(key, None).await }
            })
            .await
            .map_err(|f| {
                LockError::Indeterminate(format!("reading the lock key: {}", f.reason()))
            })?;
        let Some(kv) = read.kvs().first() else {
            return Err(LockError::Indeterminate(
                "lock() answered, but the key is gone: the lease was revoked while it waited \
                 (it may have owned the lock until then)"
                    .into(),
            ));
        };
        Ok(Grant {
            lock: lock.to_string(),
            token: self.params.fencing().then_some(kv.create_revision() as u64),
            owner_value: key,
            valid_until: Some(valid_until),
        })
    }

    /// A failed attempt: revoke its lease (best effort).
    async fn give_up(&mut self, ctx: &NodeCtx) {
        if let Some(attempt) = self.attempt.take() {
            let _ = attempt.lease.revoke(ctx, self.endpoints(ctx).await).await;
        }
    }

    /// Unlock the attempt's key and revoke its lease: whether that released the lock
    /// (see the module docs).
    async fn unlock(&mut self, ctx: &NodeCtx, attempt: Attempt) -> Result<bool, LockError> {
        let Attempt { lease, key } = attempt;
        let id = lease.id;
        let lease_ttl = Duration::from_millis(self.params.lease_ms().unwrap_or(0));
        let endpoints = self.endpoints(ctx).await;
        // Past a lease's worth of trying, the key is gone with the lease anyway.
        let deadline = ctx.mono_ns() + nanos(endpoints.request_timeout().max(lease_ttl));
        // The lock's keys, oldest first: the first one owns the lock.
        let prefix = match key.rsplit_once('/') {
            Some((lock, _)) => format!("{lock}/"),
            None => key.clone(),
        };
        let queue = |mut c: etcd_client::Client| {
            let prefix = prefix.clone();
            let oldest_first = etcd_client::GetOptions::new().with_prefix().with_sort(
                etcd_client::SortTarget::Create,
                etcd_client::SortOrder::Ascend,
            );
            async move { c.get(prefix, Some(oldest_first)).await }
        };
        let before = endpoints.call(ctx, Retry::Read, deadline, queue).await;
        let there = before.ok().map(|r| position(r.kvs(), &key));
        let unlock = |mut c: etcd_client::Client| {
            let key = key.clone();
            async move { c.unlock(key).await }
        };
        let unlocked = endpoints.call(ctx, Retry::Write, deadline, unlock).await;
        let ttl = |mut c: etcd_client::Client| async move { c.lease_time_to_live(id, None).await };
        let alive = match (&unlocked, there) {
            (Ok(_), Some(Place::Owner)) => endpoints
                .call(ctx, Retry::Read, deadline, ttl)
                .await
                .ok()
                .map(|r| r.ttl() > 0),
            _ => None,
        };
        let revoked = lease.revoke(ctx, endpoints).await;
        match (unlocked, there, alive) {
            // The key was gone before we unlocked: its lease expired, nothing to release.
            (_, Some(Place::Gone), _) => Ok(false),
            (Ok(_), Some(Place::Owner), Some(true)) => Ok(true),
            // A waiter's key (an abandoned attempt) may have become the owner's
            // between the read and the unlock.
            (Ok(_), Some(Place::Waiting), _) => Err(LockError::Indeterminate(
                "unlocked a key that was waiting for the lock when read".into(),
            )),
            (Ok(_), ..) => Err(LockError::Indeterminate(
                "unlocked, but the lease may have expired around the unlock".into(),
            )),
            // Neither the unlock nor the revoke can have freed the key.
            (Err(Failure::NotApplied(why) | Failure::Refused(why)), ..)
                if matches!(revoked, Err(Failure::NotApplied(_) | Failure::Refused(_))) =>
            {
                Err(LockError::Failed(format!("unlock: {why}")))
            }
            (Err(f), ..) => Err(LockError::Indeterminate(format!(
                "unlock: {} (the lease revoke may have freed the key)",
                f.reason()
            ))),
        }
    }
}

/// Where a key stood in its lock's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The oldest key: it owns the lock.
    Owner,
    /// Behind another key.
    Waiting,
    /// Not there.
    Gone,
}

/// Where `key` is among the lock's keys `oldest_first`.
fn position(oldest_first: &[etcd_client::KeyValue], key: &str) -> Place {
    match oldest_first
        .iter()
        .position(|kv| kv.key() == key.as_bytes())
    {
        Some(0) => Place::Owner,
        Some(_) => Place::Waiting,
        None => Place::Gone,
    }
}

fn nanos(d: Duration) -> i64 {
    d.as_nanos() as i64
}

impl LockClient for EtcdClientMutex {
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        wait: Wait,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(self.lock(ctx, lock, wait))
    }

    fn release<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            match self.attempt.take() {
                Some(attempt) if attempt.key == grant.owner_value => {
                    self.unlock(ctx, attempt).await
                }
                other => {
                    self.attempt = other;
                    Err(LockError::Failed("not holding this grant's lease".into()))
                }
            }
        })
    }

    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            match self.attempt.take() {
                Some(attempt) if attempt.key.starts_with(&format!("{lock}/")) => {
                    self.unlock(ctx, attempt).await
                }
                other => {
                    self.attempt = other;
                    Ok(false)
                }
            }
        })
    }
}
