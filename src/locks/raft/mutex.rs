//! etcd's lock recipe (`client/v3/concurrency/mutex.go` and `key.go`) as a
//! [`LockClient`], over a [`Session`].
//!
//! `Lock`:
//!
//! 1. `myKey = prefix/leaseID` (hex), then one Txn:
//!    `If(CreateRevision(myKey) == 0) Then(Put(myKey, "", lease), Get(prefix, FirstCreate))
//!    Else(Get(myKey), Get(prefix, FirstCreate))`. `myRev` is the Txn's revision (or the
//!    existing key's create revision). If the first-created key is ours, we own the lock.
//! 2. Otherwise `waitDeletes(prefix, myRev − 1)`: read the last key created at or before
//!    `myRev − 1`; none left means every key ahead of us is gone; else wait for that key's
//!    delete — a `WaitDelete` long poll that the node answers from its applied state like
//!    an etcd watch, re-reading after each answer or `NotYet` (a polling fallback: a node
//!    that never shows the delete cannot hang the waiter) — and read again.
//! 3. With `post_wait_check` (PR #11408, the fix for #11456): `Get(myKey)`; gone means the
//!    session expired while waiting (`ErrSessionExpired`). Without it the waiter is granted
//!    a lock whose key its lease already lost.
//!
//! The fault point [`FaultPoint::MidAcquire`] sits between 1 and 2: a pause armed there
//! strikes a waiter (catalogue row 16).
//!
//! With `on_session_lost = "stop"` the holder also waits on its session's `Done()`
//! ([`LockClient::lost`]) and stops working when the session ends. Either way, a
//! keepalive that learns the lease is gone cuts the grant's validity to that moment.
//!
//! `TryLock` (`acquire = "try"`): the same Txn; if another key was created first, delete
//! ours and fail with `ErrLocked`, never waiting.
//!
//! Re-entry is not counted: a second `Lock` by the same session finds its own key (the
//! Txn's `Else` branch) and returns at once with the same key and revision; the first
//! `Unlock` deletes that key, releasing the lock under the outer holder, and a second
//! `Unlock` fails on the client with `ErrLockReleased` (`myKey` was reset), sending
//! nothing.
//!
//! `Unlock` = `Delete(myKey)`, sent as a Txn that also reads the lock's first key (see
//! [`unlock`]). The fencing token is `myRev` (`token = "revision"`).
//!
//! # Outcomes (Jepsen's convention)
//!
//! * `Failed` only when no key of this attempt can exist: the Txn was refused before Raft
//!   took it, or failed (`LeaseNotFound`) without writing.
//! * `Indeterminate` once the Txn may have created the key: its answer was lost; the wait
//!   timed out; or the post-wait check found the key gone — it may have owned the lock
//!   for a while before its lease was revoked (the node then recorded an `expire`). The
//!   workload's `abandon` deletes the key.
//! * A release or abandon that did not surely delete leaves the session orphaned (its
//!   lease expires on its own): a later acquire with the same lease would find the old
//!   key and reuse its revision as a token.

use super::client::{CallFailure, EtcdClient, Session};
use super::etcd_api::ApiError;
use super::kv::{
    Compare, DeleteRequest, KeySpec, LeaseId, OpResponse, PutRequest, RangeRequest, RangeResponse,
    Request, Response, ServiceError, TxnOp, TxnRequest, TxnResponse,
};
use super::params::{OnSessionLost, RaftParams, RaftToken};
use crate::locks::{Grant, LocalBoxFuture, LockClient, LockError, Wait};
use crate::sim::{FaultPoint, NodeCtx};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// The key of session `lease` under lock `lock` (etcd: `fmt.Sprintf("%s%x", pfx, lease)`).
pub(crate) fn my_key(lock: &str, lease: LeaseId) -> String {
    format!("{lock}/{lease:x}")
}

/// The key prefix of lock `lock` (etcd's `NewMutex` appends the slash).
pub(crate) fn prefix(lock: &str) -> String {
    format!("{lock}/")
}

/// `tryAcquire`'s Txn.
pub(crate) fn try_acquire(key: &str, prefix: &str, lease: LeaseId) -> TxnRequest {
    let owner = TxnOp::Range(RangeRequest::first_created(prefix));
    TxnRequest {
        compare: vec![Compare::create_revision_is(key, 0)],
        success: vec![TxnOp::Put(PutRequest::new(key, "", lease)), owner.clone()],
        failure: vec![TxnOp::Range(RangeRequest::get(key)), owner],
    }
}

/// What `tryAcquire`'s answer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acquired {
    /// Our key is the first created: we own the lock. `my_rev` is its create revision.
    Owner {
        /// The key's create revision.
        my_rev: u64,
    },
    /// Keys created before ours exist: wait for them.
    Wait {
        /// The key's create revision.
        my_rev: u64,
    },
}

/// A reply to the lock Txn that is not the one `tryAcquire` sent for (a server bug, or
/// a reply to another request): what the client cannot tell apart from a lost reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TxnReplyError {
    /// Not a Txn response (the reply, as debug text).
    NotATxn(String),
    /// A Txn op response that is not a range (as debug text).
    NotARange(String),
    /// The Else branch found no key, though ours was created before it.
    NoKey,
}

impl std::fmt::Display for TxnReplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TxnReplyError::NotATxn(r) => write!(f, "unexpected reply to the lock Txn: {r}"),
            TxnReplyError::NotARange(r) => write!(f, "unexpected Txn op response {r}"),
            TxnReplyError::NoKey => write!(f, "the Txn's Else branch found no key"),
        }
    }
}

impl std::error::Error for TxnReplyError {}

/// Read `tryAcquire`'s Txn response.
pub(crate) fn after_txn(resp: &Response) -> Result<Acquired, TxnReplyError> {
    let Response::Txn(TxnResponse {
        revision,
        succeeded,
        responses,
    }) = resp
    else {
        return Err(TxnReplyError::NotATxn(format!("{resp:?}")));
    };
    let range = |i: usize| match responses.get(i) {
        Some(OpResponse::Range(r)) => Ok(r),
        other => Err(TxnReplyError::NotARange(format!("{other:?}"))),
    };
    let my_rev = if *succeeded {
        *revision
    } else {
        range(0)?
            .kvs
            .first()
            .map(|kv| kv.create_revision)
            .ok_or(TxnReplyError::NoKey)?
    };
    let owner = range(1)?.kvs.first().map(|kv| kv.create_revision);
    Ok(match owner {
        None => Acquired::Owner { my_rev },
        Some(r) if r == my_rev => Acquired::Owner { my_rev },
        Some(_) => Acquired::Wait { my_rev },
    })
}

/// Why waiting for the keys ahead of ours ended without seeing them go.
#[derive(Debug)]
enum WaitError {
    /// The acquire's deadline passed.
    TimedOut,
    /// Reading the keys ahead failed.
    Read(CallFailure),
}

impl std::fmt::Display for WaitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WaitError::TimedOut => write!(f, "timed out"),
            WaitError::Read(e) => write!(f, "{e}"),
        }
    }
}

/// `waitDeletes`' read: the last key created at or before `max_rev` under `prefix`.
pub(crate) fn keys_ahead(prefix: &str, max_rev: u64) -> RangeRequest {
    RangeRequest::last_created_at_or_before(prefix, max_rev)
}

/// The key to wait for, with the revision to watch from; `None`: nothing is ahead.
pub(crate) fn next_wait(resp: &RangeResponse) -> Option<(String, u64)> {
    resp.kvs.first().map(|kv| (kv.key.clone(), resp.revision))
}

/// The post-wait check: our key still exists.
pub(crate) fn still_ours(resp: &RangeResponse) -> bool {
    !resp.kvs.is_empty()
}

/// The etcd Mutex client of one client node.
pub(crate) struct EtcdMutex {
    params: RaftParams,
    preferred: Rc<Cell<usize>>,
    /// Made on first use (its channels belong to the client node).
    client: Option<EtcdClient>,
    session: Option<Session>,
    /// The key of the last acquire attempt, which `abandon` deletes.
    last_key: Option<String>,
    /// etcd's `m.myKey` after a lock: the key an `Unlock` deletes. `None` once unlocked
    /// (etcd sets it to `"\x00"`): a second `Unlock` is `ErrLockReleased`.
    my_key: Option<String>,
    started: bool,
}

impl EtcdMutex {
    /// A client for a cluster with these parameters.
    pub(crate) fn new(params: RaftParams) -> EtcdMutex {
        let preferred = Rc::new(Cell::new(0));
        EtcdMutex {
            client: None,
            preferred,
            params,
            session: None,
            last_key: None,
            my_key: None,
            started: false,
        }
    }

    /// The client, made on first use.
    fn client(&mut self, ctx: &NodeCtx) -> &mut EtcdClient {
        let (params, preferred) = (&self.params, &self.preferred);
        self.client
            .get_or_insert_with(|| EtcdClient::new(ctx, params, preferred.clone()))
    }

    fn start(&mut self, ctx: &NodeCtx) {
        if !self.started {
            // Spread clients over the nodes (client-N starts at raft-(N mod nodes)).
            let n = ctx
                .name()
                .rsplit('-')
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0);
            self.preferred.set(n % self.params.nodes as usize);
            self.started = true;
        }
    }

    fn orphan_session(&mut self) {
        if let Some(s) = self.session.take() {
            tracing::debug!(lease = s.lease, "orphaning the session");
            s.orphan();
        }
    }

    /// A live session, made anew if there is none or it ended.
    async fn session(&mut self, ctx: &NodeCtx, deadline: i64) -> Result<LeaseId, CallFailure> {
        if let Some(s) = &self.session {
            if s.alive(ctx.mono_ns()) {
                return Ok(s.lease);
            }
        }
        self.orphan_session();
        let s = Session::start(
            ctx,
            self.client
                .get_or_insert_with(|| EtcdClient::new(ctx, &self.params, self.preferred.clone())),
            &self.params,
            self.preferred.clone(),
            deadline,
        )
        .await?;
        let lease = s.lease;
        self.session = Some(s);
        Ok(lease)
    }

    fn grant(&self, lock: &str, key: String, my_rev: u64) -> Grant {
        Grant {
            lock: lock.to_string(),
            token: (self.params.token == RaftToken::Revision).then_some(my_rev),
            owner_value: key,
            valid_until: self.session.as_ref().map(|s| s.valid_until.clone()),
        }
    }

    async fn lock(&mut self, ctx: &NodeCtx, lock: &str, wait: Wait) -> Result<Grant, LockError> {
        self.start(ctx);
        let deadline = wait.deadline_ns(ctx);
        let pfx = prefix(lock);
        let (key, acquired) = loop {
            let lease = self
                .session(ctx, deadline)
                .await
                .map_err(|e| LockError::Failed(format!("no session: {e}")))?;
            let key = my_key(lock, lease);
            self.last_key = Some(key.clone());
            self.my_key = Some(key.clone());
            let txn = Request::Txn(try_acquire(&key, &pfx, lease));
            match self.client(ctx).propose(ctx, txn, deadline).await {
                Ok(resp) => match after_txn(&resp) {
                    Ok(a) => break (key, a),
                    Err(e) => return Err(LockError::Indeterminate(e.to_string())),
                },
                // The lease is gone (the Txn wrote nothing): a new session, if time allows.
                Err(CallFailure::Reply(ApiError::Service(ServiceError::LeaseNotFound))) => {
                    self.orphan_session();
                    if ctx.mono_ns() >= deadline {
                        return Err(LockError::Failed("session expired".into()));
                    }
                }
                Err(f) if f.maybe_applied() => {
                    return Err(LockError::Indeterminate(format!("lock txn: {f}")))
                }
                Err(f) => return Err(LockError::Failed(format!("lock txn: {f}"))),
            }
        };
        let my_rev = match acquired {
            Acquired::Owner { my_rev } => return Ok(self.grant(lock, key, my_rev)),
            Acquired::Wait { .. } if wait.once() => return Err(self.locked(ctx, &key).await),
            Acquired::Wait { my_rev } => my_rev,
        };
        // Our key is queued behind others: a pause here outlives the session (row 16).
        ctx.fault_point(FaultPoint::MidAcquire).await;
        self.wait_deletes(ctx, &pfx, my_rev - 1, deadline)
            .await
            .map_err(|e| LockError::Indeterminate(format!("waiting for the keys ahead: {e}")))?;
        if self.params.post_wait_check {
            let r = self
                .client(ctx)
                .range(ctx, RangeRequest::get(&key), deadline)
                .await
                .map_err(|e| LockError::Indeterminate(format!("post-wait check: {e}")))?;
            if !still_ours(&r) {
                tracing::debug!(key, "post-wait check: the session expired while waiting");
                return Err(LockError::Indeterminate(
                    "session expired while waiting: the key is gone (it may have owned the lock \
                     until its lease was revoked)"
                        .into(),
                ));
            }
        }
        Ok(self.grant(lock, key, my_rev))
    }

    /// `TryLock` found another key first: "Cannot lock, so delete the key" and fail with
    /// `ErrLocked`; if the delete's outcome is unknown the key may still queue us.
    async fn locked(&mut self, ctx: &NodeCtx, key: &str) -> LockError {
        self.my_key = None;
        let why = "busy: mutex: Locked by another session (ErrLocked)";
        match self.delete(ctx, key).await {
            Ok(_) => LockError::Failed(why.into()),
            Err(e) => LockError::Indeterminate(format!("{why}; deleting our key: {}", e.reason())),
        }
    }

    /// etcd's `waitDeletes` (see the module docs).
    async fn wait_deletes(
        &mut self,
        ctx: &NodeCtx,
        pfx: &str,
        max_rev: u64,
        deadline: i64,
    ) -> Result<(), WaitError> {
        let wait = Duration::from_millis((self.params.request_timeout_ms() / 2).max(1));
        loop {
            if ctx.mono_ns() >= deadline {
                return Err(WaitError::TimedOut);
            }
            let r = self
                .client(ctx)
                .range(ctx, keys_ahead(pfx, max_rev), deadline)
                .await
                .map_err(WaitError::Read)?;
            let Some((key, rev)) = next_wait(&r) else {
                return Ok(());
            };
            // Either way, read again: a watch that saw no delete within its wait (or
            // broke) is a polling fallback, so a node that never shows the delete cannot
            // hang the waiter.
            if let Err(e) = self.client(ctx).watch_delete(ctx, &key, rev, wait).await {
                tracing::debug!(key, "watch failed: {e}");
                let c = self.client(ctx);
                c.next_node();
                ctx.sleep(c.tick()).await;
            }
        }
    }

    /// Unlock: delete `key`. `Ok(true)` if that released the lock (the key existed and
    /// was the lock's first key), `Ok(false)` if it did not (the key was gone, or it was
    /// only a waiter's key: an abandoned attempt that never owned the lock).
    async fn delete(&mut self, ctx: &NodeCtx, key: &str) -> Result<bool, LockError> {
        // Past a lease's worth of trying, the key is gone with the lease anyway.
        let deadline = ctx.mono_ns() + self.params.ttl_ms as i64 * 1_000_000;
        let lock = key.rsplit_once('/').map_or(key, |(l, _)| l);
        let req = Request::Txn(unlock(key, &prefix(lock)));
        match self.client(ctx).propose(ctx, req, deadline).await {
            Ok(resp) => match released(&resp, key) {
                Some(r) => Ok(r),
                None => {
                    self.orphan_session();
                    Err(LockError::Indeterminate(format!(
                        "unexpected reply {resp:?}"
                    )))
                }
            },
            Err(f) => {
                self.orphan_session();
                if f.maybe_applied() {
                    Err(LockError::Indeterminate(format!("unlock: {f}")))
                } else {
                    Err(LockError::Failed(format!("unlock: {f}")))
                }
            }
        }
    }
}

/// Unlock as a Txn: read the lock's first key, then delete ours. etcd's `Unlock` is a plain
/// `Delete`; the read changes nothing and lets the history say whether the delete
/// released the lock or only removed a waiter's key.
pub(crate) fn unlock(key: &str, prefix: &str) -> TxnRequest {
    TxnRequest {
        compare: vec![],
        success: vec![
            TxnOp::Range(RangeRequest::first_created(prefix)),
            TxnOp::DeleteRange(DeleteRequest::of(KeySpec::key(key))),
        ],
        failure: vec![],
    }
}

/// Whether [`unlock`]'s answer says it released the lock; `None` for an unexpected reply.
pub(crate) fn released(resp: &Response, key: &str) -> Option<bool> {
    let Response::Txn(TxnResponse { responses, .. }) = resp else {
        return None;
    };
    match &responses[..] {
        [OpResponse::Range(first), OpResponse::DeleteRange(d)] => {
            Some(d.deleted > 0 && first.kvs.first().is_some_and(|kv| kv.key == key))
        }
        _ => None,
    }
}

impl LockClient for EtcdMutex {
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
            self.start(ctx);
            self.last_key = None;
            // `Unlock` after an `Unlock` (a re-entered lock's outer release): etcd's
            // client answers `ErrLockReleased` and sends nothing.
            if self.my_key.take().is_none() {
                return Err(LockError::Failed(
                    "lock has been released (ErrLockReleased)".into(),
                ));
            }
            self.delete(ctx, &grant.owner_value).await
        })
    }

    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            self.start(ctx);
            match self.last_key.take() {
                Some(key) if key.starts_with(&prefix(lock)) => self.delete(ctx, &key).await,
                _ => Ok(false),
            }
        })
    }

    /// With `on_session_lost = "stop"`: the session's `Done()` (see [`Session::done`]).
    fn lost<'a>(&'a self, ctx: &'a NodeCtx, grant: &'a Grant) -> Option<LocalBoxFuture<'a, ()>> {
        let _ = ctx;
        if self.params.on_session_lost != OnSessionLost::Stop {
            return None;
        }
        let session = self.session.as_ref()?;
        // Only the session the grant was made under: its key names the lease.
        if grant.owner_value.rsplit('/').next() != Some(&format!("{:x}", session.lease)) {
            return None;
        }
        Some(Box::pin(session.done()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::raft::kv::Store;

    /// A store with leases 1..=n granted (revision stays 1).
    fn store(n: u64) -> (Store, u64) {
        let mut s = Store::new(150);
        let mut index = 0;
        for id in 1..=n {
            index += 1;
            s.apply(index, &Request::LeaseGrant { id, ttl_ms: 1000 })
                .unwrap();
        }
        (s, index)
    }

    fn apply(s: &mut Store, index: &mut u64, req: Request) -> Response {
        *index += 1;
        s.apply(*index, &req).unwrap()
    }

    fn lock(s: &mut Store, index: &mut u64, lease: LeaseId) -> Acquired {
        let key = my_key("L", lease);
        let resp = apply(
            s,
            index,
            Request::Txn(try_acquire(&key, &prefix("L"), lease)),
        );
        after_txn(&resp).unwrap()
    }

    /// `waitDeletes` on the store's current state: the key still ahead of `my_rev`.
    fn ahead(s: &Store, my_rev: u64) -> Option<String> {
        next_wait(&s.range(&keys_ahead(&prefix("L"), my_rev - 1)).unwrap()).map(|(k, _)| k)
    }

    #[test]
    fn the_first_key_owns_and_a_retry_reuses_its_revision() {
        let (mut s, mut i) = store(2);
        assert_eq!(lock(&mut s, &mut i, 1), Acquired::Owner { my_rev: 2 });
        // The same session again: the Else branch finds its key and its revision.
        assert_eq!(lock(&mut s, &mut i, 1), Acquired::Owner { my_rev: 2 });
        assert_eq!(lock(&mut s, &mut i, 2), Acquired::Wait { my_rev: 3 });
        assert_eq!(s.get("L/1").unwrap().lease, 1);
        assert_eq!(s.get("L/2").unwrap().create_revision, 3);
    }

    #[test]
    fn a_waiter_is_granted_exactly_when_every_lower_key_is_gone() {
        let (mut s, mut i) = store(4);
        assert_eq!(lock(&mut s, &mut i, 1), Acquired::Owner { my_rev: 2 });
        assert_eq!(lock(&mut s, &mut i, 2), Acquired::Wait { my_rev: 3 });
        assert_eq!(lock(&mut s, &mut i, 3), Acquired::Wait { my_rev: 4 });
        // The third waits for the key just ahead of it (the last created below it).
        assert_eq!(ahead(&s, 4).as_deref(), Some("L/2"));
        assert_eq!(ahead(&s, 3).as_deref(), Some("L/1"));
        // The second's key goes first (its session ended): the third now waits on the
        // owner, and is not granted although its predecessor is gone.
        apply(&mut s, &mut i, Request::lease_expiry(2));
        assert_eq!(ahead(&s, 4).as_deref(), Some("L/1"));
        // A key created later never blocks anyone ahead of it.
        assert_eq!(lock(&mut s, &mut i, 4), Acquired::Wait { my_rev: 6 });
        assert_eq!(ahead(&s, 4).as_deref(), Some("L/1"));
        // The owner unlocks: every key below the third's is gone, so it is granted, and
        // it is the first-created key, as a fresh Txn would say.
        apply(
            &mut s,
            &mut i,
            Request::DeleteRange(DeleteRequest::of(KeySpec::key(my_key("L", 1)))),
        );
        assert_eq!(ahead(&s, 4), None);
        assert!(still_ours(&s.range(&RangeRequest::get("L/3")).unwrap()));
        assert_eq!(
            s.range(&RangeRequest::first_created("L/")).unwrap().kvs[0].key,
            "L/3"
        );
        assert_eq!(ahead(&s, 6).as_deref(), Some("L/3"));
    }

    #[test]
    fn the_post_wait_check_catches_a_session_that_expired_while_waiting() {
        let (mut s, mut i) = store(3);
        assert_eq!(lock(&mut s, &mut i, 1), Acquired::Owner { my_rev: 2 });
        assert_eq!(lock(&mut s, &mut i, 2), Acquired::Wait { my_rev: 3 });
        // The waiter's lease expires while it waits (etcd #11456), then the owner unlocks
        // and a third client takes the lock.
        apply(&mut s, &mut i, Request::lease_expiry(2));
        apply(
            &mut s,
            &mut i,
            Request::DeleteRange(DeleteRequest::of(KeySpec::key(my_key("L", 1)))),
        );
        assert_eq!(lock(&mut s, &mut i, 3), Acquired::Owner { my_rev: 6 });
        // The waiter wakes: nothing is ahead of it any more, so without the check it
        // would be granted while the third client holds the lock ...
        assert_eq!(ahead(&s, 3), None);
        // ... and the check sees its key is gone.
        assert!(!still_ours(
            &s.range(&RangeRequest::get(my_key("L", 2))).unwrap()
        ));
    }

    #[test]
    fn unlock_says_whether_it_released_the_lock() {
        let (mut s, mut i) = store(2);
        lock(&mut s, &mut i, 1);
        lock(&mut s, &mut i, 2);
        // The waiter gives up: its key goes, the lock stays with the owner.
        let r = apply(&mut s, &mut i, Request::Txn(unlock("L/2", "L/")));
        assert_eq!(released(&r, "L/2"), Some(false));
        let r = apply(&mut s, &mut i, Request::Txn(unlock("L/1", "L/")));
        assert_eq!(released(&r, "L/1"), Some(true));
        let r = apply(&mut s, &mut i, Request::Txn(unlock("L/1", "L/")));
        assert_eq!(released(&r, "L/1"), Some(false), "nothing left to release");
        assert!(s.get("L/1").is_none() && s.get("L/2").is_none());
    }

    #[test]
    fn a_txn_on_a_revoked_lease_writes_nothing() {
        let (mut s, mut i) = store(1);
        apply(&mut s, &mut i, Request::lease_expiry(1));
        i += 1;
        let r = s.apply(i, &Request::Txn(try_acquire("L/1", "L/", 1)));
        assert_eq!(r, Err(ServiceError::LeaseNotFound));
        assert!(s.get("L/1").is_none());
    }
}
