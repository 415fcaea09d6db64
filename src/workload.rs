//! What clients do: acquire → read → work → (validity check) → write → release → think,
//! recording every invocation and completion Jepsen-style.
//!
//! The counter workload makes lost updates visible: each holder reads the counter, works,
//! and writes counter + 1. If two clients ever act as holders at once, both read the same
//! value and one increment is lost — unless the storage fences the stale one out.
//!
//! A lock client that learns mid-work that it lost the lock ([`LockClient::lost`]: a
//! Curator holder treating SUSPENDED as a loss) cuts the work short; the validity check
//! then skips the write.
//!
//! Between the validity check and the write sits a *pause point*: a pause armed with
//! `at = "before-write"` strikes there. No client code can close that window; only the
//! resource can (Kleppmann, "How to do distributed locking", 2016). The points passed
//! here are listed in [`Workload::FAULT_POINTS`], which the scenario validates against.
//! One of them, `waiting`, is no line but a state: an acquire outstanding long enough to
//! be queued behind the holder ([`NodeCtx::waiting`]), so a pause reaches a client while
//! its lock library waits, whoever wrote the library.
//!
//! With `reentrant = true` the holder re-acquires the lock it holds before reading and
//! gives that inner grant back after the read, then works and writes under the outer
//! grant and releases it: `acquire, acquire*, read, release*, work, write, release` (the
//! starred events carry `"reentrant": true`). A client that is not re-entrant shows it:
//! the inner acquire fails or waits (a `SET NX` finds its own key), or the inner release
//! frees the lock under the outer holder (etcd), so that another client is granted while
//! the outer holder still works. Without the option nothing of this runs, and the events
//! and random draws are those of the plain loop.

use crate::history::{names, EventType};
use crate::locks::{Grant, LockClient, LockError, Wait, NO_LEASE_NS};
use crate::resource::{StorageClient, StorageReply};
use crate::scenario::Workload;
use crate::sim::{FaultPoint, NodeCtx};
use std::time::Duration;

/// The lock every client contends for.
pub(crate) const LOCK: &str = "L";
/// The storage key of the counter.
pub(crate) const COUNTER: &str = "counter";

/// A client node's main loop with lock client `lock` (runs until the simulation ends or
/// the node crashes).
pub(crate) async fn client_main(ctx: NodeCtx, w: &Workload, mut lock: Box<dyn LockClient>) {
    let mut storage = StorageClient::new(Duration::from_millis(w.storage_timeout_ms));
    let wait = w.acquire.wait(w.acquire_timeout_ms);
    // Stagger the start so clients do not move in lockstep.
    ctx.sleep_ms_in(*w.think_ms).await;
    loop {
        let grant = match acquire(&ctx, &mut *lock, wait, false).await {
            Ok(g) => g,
            Err(kind) => {
                if kind == EventType::Info {
                    release(&ctx, &mut *lock, None, "abandon", false).await;
                }
                ctx.sleep_ms_in(*w.think_ms).await;
                continue;
            }
        };
        ctx.fault_point(FaultPoint::AfterAcquire).await;
        let token = if w.fencing { grant.token } else { None };
        let reason = critical_section(&ctx, w, &mut storage, &mut *lock, &grant, token).await;
        release(&ctx, &mut *lock, Some(&grant), reason, false).await;
        ctx.sleep_ms_in(*w.think_ms).await;
    }
}

/// One acquire, recorded (`inner`: a re-entrant one, marked so). On failure, the type
/// of the recorded completion (`fail` or `info`).
async fn acquire(
    ctx: &NodeCtx,
    lock: &mut dyn LockClient,
    wait: Wait,
    inner: bool,
) -> Result<Grant, EventType> {
    let acquire = |kind| ctx.event(kind, names::ACQUIRE).lock(LOCK).reentrant(inner);
    ctx.record(acquire(EventType::Invoke));
    match ctx.waiting(lock.acquire(ctx, LOCK, wait)).await {
        Ok(g) => {
            tracing::debug!(token = ?g.token, inner, "acquired {LOCK}");
            let mut e = acquire(EventType::Ok).token(g.token);
            // A grant that has no lease (but may be lost) records no validity.
            e.valid_ms = g
                .valid_until_ns()
                .filter(|&v| v != NO_LEASE_NS)
                .map(|v| ((v - ctx.mono_ns()).max(0) / 1_000_000) as u64);
            ctx.record(e);
            Ok(g)
        }
        Err(err) => {
            tracing::debug!(reason = err.reason(), inner, "acquire failed");
            let kind = match err {
                LockError::Failed(_) => EventType::Fail,
                LockError::Indeterminate(_) => EventType::Info,
            };
            ctx.record(acquire(kind).reason(err.reason()));
            Err(kind)
        }
    }
}

/// The storage read; `None` when it failed (recorded either way).
async fn read_counter(
    ctx: &NodeCtx,
    storage: &mut StorageClient,
    token: Option<u64>,
) -> Option<i64> {
    ctx.record(
        ctx.event(EventType::Invoke, names::READ)
            .key(COUNTER)
            .token(token),
    );
    match storage.read(ctx, COUNTER, token).await {
        Ok(StorageReply::Ok(v)) => {
            ctx.record(
                ctx.event(EventType::Ok, names::READ)
                    .key(COUNTER)
                    .token(token)
                    .value(v),
            );
            Some(v)
        }
        Ok(StorageReply::Rejected(e)) => {
            ctx.record(
                ctx.event(EventType::Fail, names::READ)
                    .key(COUNTER)
                    .token(token)
                    .reason(e),
            );
            None
        }
        Err(e) => {
            // A read has no effect, so a lost reply is simply a failed read.
            ctx.record(
                ctx.event(EventType::Fail, names::READ)
                    .key(COUNTER)
                    .token(token)
                    .reason(e.to_string()),
            );
            None
        }
    }
}

/// The read, nested in a re-entrant acquire and its release when the workload re-enters
/// (an inner acquire that did not succeed has nothing to release).
async fn nested_read(
    ctx: &NodeCtx,
    w: &Workload,
    storage: &mut StorageClient,
    lock: &mut dyn LockClient,
    token: Option<u64>,
) -> Option<i64> {
    if !w.reentrant {
        return read_counter(ctx, storage, token).await;
    }
    let wait = w.acquire.wait(w.acquire_timeout_ms);
    let inner = acquire(ctx, lock, wait, true).await.ok();
    let value = read_counter(ctx, storage, token).await;
    if let Some(g) = inner {
        release(ctx, lock, Some(&g), "done", true).await;
    }
    value
}

/// Read, work, check validity, write. Returns the reason for the release that follows:
/// `done`, `expired` (the lease ran out by the local clock: the write was skipped) or
/// `read-failed`.
async fn critical_section(
    ctx: &NodeCtx,
    w: &Workload,
    storage: &mut StorageClient,
    lock: &mut dyn LockClient,
    grant: &Grant,
    token: Option<u64>,
) -> &'static str {
    let Some(value) = nested_read(ctx, w, storage, lock, token).await else {
        return "read-failed";
    };
    match lock.lost(ctx, grant) {
        // A client that learns it lost the lock stops working at once (the check below
        // then skips the write); others work their whole slice.
        Some(lost) => {
            tokio::select! {
                biased;
                _ = ctx.sleep_ms_in(*w.work_ms) => {}
                _ = lost => tracing::debug!("the lock client lost the grant: stop working"),
            }
        }
        None => ctx.sleep_ms_in(*w.work_ms).await,
    }
    if w.check_validity {
        if let Some(until) = grant.valid_until_ns() {
            if ctx.mono_ns() >= until {
                tracing::debug!(
                    mono_ns = ctx.mono_ns(),
                    until,
                    "lease expired: skipping the write"
                );
                return "expired";
            }
        }
    }
    ctx.fault_point(FaultPoint::BeforeWrite).await;
    let new = value + 1;
    ctx.record(
        ctx.event(EventType::Invoke, names::WRITE)
            .key(COUNTER)
            .token(token)
            .value(new),
    );
    let done = match storage.write(ctx, COUNTER, new, token).await {
        Ok(StorageReply::Ok(a)) => ctx
            .event(EventType::Ok, names::WRITE)
            .key(COUNTER)
            .token(token)
            .value(new)
            .accepted(a == 1),
        Ok(StorageReply::Rejected(e)) => ctx
            .event(EventType::Fail, names::WRITE)
            .key(COUNTER)
            .token(token)
            .value(new)
            .reason(e),
        Err(e) => {
            let kind = if e.maybe_applied() {
                EventType::Info
            } else {
                EventType::Fail
            };
            ctx.event(kind, names::WRITE)
                .key(COUNTER)
                .token(token)
                .value(new)
                .reason(e.to_string())
        }
    };
    ctx.record(done);
    "done"
}

/// One release (of `grant`, or `abandon` without one), recorded; `inner`: the release
/// of a re-entrant acquire, marked so.
async fn release(
    ctx: &NodeCtx,
    lock: &mut dyn LockClient,
    grant: Option<&Grant>,
    reason: &str,
    inner: bool,
) {
    let token = grant.and_then(|g| g.token);
    ctx.record(
        ctx.event(EventType::Invoke, names::RELEASE)
            .lock(LOCK)
            .token(token)
            .reason(reason)
            .reentrant(inner),
    );
    let result = match grant {
        Some(g) => lock.release(ctx, g).await,
        None => lock.abandon(ctx, LOCK).await,
    };
    let done = match result {
        Ok(true) => ctx
            .event(EventType::Ok, names::RELEASE)
            .lock(LOCK)
            .token(token),
        // Nothing of ours was there (the lease had run out): this release did not happen.
        Ok(false) => ctx
            .event(EventType::Fail, names::RELEASE)
            .lock(LOCK)
            .token(token)
            .reason("not held"),
        Err(LockError::Failed(r)) => ctx
            .event(EventType::Fail, names::RELEASE)
            .lock(LOCK)
            .token(token)
            .reason(r),
        Err(LockError::Indeterminate(r)) => ctx
            .event(EventType::Info, names::RELEASE)
            .lock(LOCK)
            .token(token)
            .reason(r),
    };
    ctx.record(done.reentrant(inner));
}
