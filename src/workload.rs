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

use crate::history::{names, EventType};
use crate::locks::{Grant, LockClient, LockError};
use crate::resource::{StorageClient, StorageReply};
use crate::scenario::Workload;
use crate::sim::{FaultPoint, NodeCtx};
use std::time::Duration;

/// The lock every client contends for.
pub const LOCK: &str = "L";
/// The storage key of the counter.
pub const COUNTER: &str = "counter";

/// A client node's main loop with lock client `lock` (runs until the simulation ends or
/// the node crashes).
pub async fn client_main(ctx: NodeCtx, w: &Workload, mut lock: Box<dyn LockClient>) {
    let mut storage = StorageClient::new(Duration::from_millis(w.storage_timeout_ms));
    let acquire_timeout = Duration::from_millis(w.acquire_timeout_ms);
    // Stagger the start so clients do not move in lockstep.
    ctx.sleep_ms_in(*w.think_ms).await;
    loop {
        ctx.record(ctx.event(EventType::Invoke, names::ACQUIRE).lock(LOCK));
        let grant = match lock.acquire(&ctx, LOCK, acquire_timeout).await {
            Ok(g) => {
                tracing::debug!(token = ?g.token, "acquired {LOCK}");
                let mut e = ctx
                    .event(EventType::Ok, names::ACQUIRE)
                    .lock(LOCK)
                    .token(g.token);
                e.valid_ms = g
                    .valid_until_ns()
                    .map(|v| ((v - ctx.mono_ns()).max(0) / 1_000_000) as u64);
                ctx.record(e);
                g
            }
            Err(err) => {
                tracing::debug!(reason = err.reason(), "acquire failed");
                let kind = match err {
                    LockError::Failed(_) => EventType::Fail,
                    LockError::Indeterminate(_) => EventType::Info,
                };
                ctx.record(
                    ctx.event(kind, names::ACQUIRE)
                        .lock(LOCK)
                        .reason(err.reason()),
                );
                if kind == EventType::Info {
                    release(&ctx, &mut *lock, None, "abandon").await;
                }
                ctx.sleep_ms_in(*w.think_ms).await;
                continue;
            }
        };
        ctx.fault_point(FaultPoint::AfterAcquire).await;
        let token = if w.fencing { grant.token } else { None };
        let reason = critical_section(&ctx, w, &mut storage, &*lock, &grant, token).await;
        release(&ctx, &mut *lock, Some(&grant), reason).await;
        ctx.sleep_ms_in(*w.think_ms).await;
    }
}

/// Read, work, check validity, write. Returns the reason for the release that follows:
/// `done`, `expired` (the lease ran out by the local clock: the write was skipped) or
/// `read-failed`.
async fn critical_section(
    ctx: &NodeCtx,
    w: &Workload,
    storage: &mut StorageClient,
    lock: &dyn LockClient,
    grant: &Grant,
    token: Option<u64>,
) -> &'static str {
    ctx.record(
        ctx.event(EventType::Invoke, names::READ)
            .key(COUNTER)
            .token(token),
    );
    let value = match storage.read(ctx, COUNTER, token).await {
        Ok(StorageReply::Ok(v)) => {
            ctx.record(
                ctx.event(EventType::Ok, names::READ)
                    .key(COUNTER)
                    .token(token)
                    .value(v),
            );
            v
        }
        Ok(StorageReply::Rejected(e)) => {
            ctx.record(
                ctx.event(EventType::Fail, names::READ)
                    .key(COUNTER)
                    .token(token)
                    .reason(e),
            );
            return "read-failed";
        }
        Err(e) => {
            // A read has no effect, so a lost reply is simply a failed read.
            ctx.record(
                ctx.event(EventType::Fail, names::READ)
                    .key(COUNTER)
                    .token(token)
                    .reason(e.to_string()),
            );
            return "read-failed";
        }
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

async fn release(ctx: &NodeCtx, lock: &mut dyn LockClient, grant: Option<&Grant>, reason: &str) {
    let token = grant.and_then(|g| g.token);
    ctx.record(
        ctx.event(EventType::Invoke, names::RELEASE)
            .lock(LOCK)
            .token(token)
            .reason(reason),
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
    ctx.record(done);
}
