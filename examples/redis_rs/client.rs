//! The lock, as a redis-rs user writes it (redis.io's "Distributed Locks with Redis",
//! single instance):
//!
//! - **acquire**: `SET lock <value> NX PX <ttl>`, `<value>` unique to this acquire. With
//!   a fencing token (`token = "incr"`), a script does the `SET` and, only if it set the
//!   key, `INCR`s the counter `<lock>:token` and returns it: atomic, so no other client's
//!   token can fall between the grant and its token;
//! - **release**: a script that deletes the key only if it still holds our value (a
//!   plain `DEL` would delete the lock of whoever acquired after our lease ran out);
//! - **validity**: the lease is counted on this node's monotonic clock from *before* the
//!   request was sent, less a drift allowance: `start + ttl − (ttl × drift_factor + 2 ms)`.
//!   The workload checks it before each write and writes with the grant's token.
//!
//! This is the protocol of locksim's own Redis client with `acquire = "set-nx-px"`,
//! `unlock = "compare-and-delete"` and `token = "none" | "incr"`, so the family's
//! verdicts can be compared with `algorithm = "redis"`'s on the same scenarios.

use super::connection::Link;
use super::settings::ClientSettings;
use locksim::plugin::*;
use redis::{AsyncTypedCommands, ExistenceCheck, Script, SetExpiry, SetOptions};
use std::cell::Cell;
use std::rc::Rc;

/// `KEYS[1]` the lock, `KEYS[2]` its token counter; `ARGV[1]` our value, `ARGV[2]` the
/// lease in ms. The new token if the lock was free, else nil (Lua's false).
const ACQUIRE_WITH_TOKEN: &str = r#"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return redis.call('INCR', KEYS[2])
end
return false
"#;

/// `KEYS[1]` the lock, `ARGV[1]` our value: delete the lock only if it is still ours.
/// 1 if deleted, 0 if it was gone or someone else's.
const COMPARE_AND_DELETE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"#;

/// One client node's lock.
pub struct RedisRsClient {
    settings: ClientSettings,
    link: Link,
    /// redis-rs scripts: `EVALSHA`, then `SCRIPT LOAD` and `EVALSHA` again on `NOSCRIPT`.
    acquire_with_token: Script,
    compare_and_delete: Script,
    /// The value of the latest acquire: what `abandon` releases after an acquire whose
    /// outcome is unknown.
    last_value: Option<String>,
}

/// What one acquire request found.
enum Attempt {
    /// The key is ours, with its fencing token when the lock is fenced.
    Granted(Option<u64>),
    /// Someone else holds it.
    Busy,
}

impl RedisRsClient {
    /// A client with these settings; it connects on its first request.
    pub fn new(settings: ClientSettings) -> RedisRsClient {
        RedisRsClient {
            link: Link::new(settings.request_timeout()),
            settings,
            acquire_with_token: Script::new(ACQUIRE_WITH_TOKEN),
            compare_and_delete: Script::new(COMPARE_AND_DELETE),
            last_value: None,
        }
    }

    /// One acquire request: `SET NX PX`, or the token script when fenced.
    async fn attempt(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        value: &str,
    ) -> Result<Attempt, LockError> {
        let mut conn = self.link.connection(ctx).await?;
        let ttl = self.settings.ttl_ms;
        if self.settings.fenced() {
            let reply: Result<Option<u64>, _> = self
                .acquire_with_token
                .key(lock)
                .key(format!("{lock}:token"))
                .arg(value)
                .arg(ttl)
                .invoke_async(&mut conn)
                .await;
            return Ok(match self.link.outcome(reply)? {
                Some(token) => Attempt::Granted(Some(token)),
                None => Attempt::Busy,
            });
        }
        let options = SetOptions::default()
            .conditional_set(ExistenceCheck::NX)
            .with_expiration(SetExpiry::PX(ttl));
        // `OK` when set, nil when the key exists.
        let reply = conn.set_options(lock, value, options).await;
        Ok(match self.link.outcome(reply)? {
            Some(_) => Attempt::Granted(None),
            None => Attempt::Busy,
        })
    }

    /// The lease end on this node's monotonic clock, for a request sent at `start_ns`.
    fn lease_end(&self, start_ns: i64) -> i64 {
        let ttl_ns = self.settings.ttl_ms as f64 * 1e6;
        let drift_ns = ttl_ns * self.settings.drift_factor + 2e6;
        start_ns + (ttl_ns - drift_ns) as i64
    }

    async fn acquire_lock(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        wait: Wait,
    ) -> Result<Grant, LockError> {
        // A value unique to this acquire, from the node's seeded randomness: the same
        // on every run of a seed.
        let value = format!("{}:{:016x}", ctx.name(), ctx.rand_u64());
        self.last_value = Some(value.clone());
        let deadline = wait.deadline_ns(ctx);
        loop {
            // The lease starts no later than the request leaves this node.
            let start = ctx.mono_ns();
            let why = match self.attempt(ctx, lock, &value).await {
                Ok(Attempt::Granted(token)) => {
                    return Ok(Grant {
                        lock: lock.to_string(),
                        token,
                        owner_value: value,
                        valid_until: Some(Rc::new(Cell::new(self.lease_end(start)))),
                    });
                }
                Ok(Attempt::Busy) => "lock busy".to_string(),
                // The SET may have landed with its reply lost: end the operation with an
                // unknown outcome (the workload then abandons it), not retry and hide a
                // grant from the history.
                Err(LockError::Indeterminate(e)) => {
                    return Err(LockError::Indeterminate(format!("attempt: {e}")));
                }
                Err(LockError::Failed(e)) => e,
            };
            if wait.once() || ctx.mono_ns() >= deadline {
                return Err(LockError::Failed(wait.gave_up(&why)));
            }
            ctx.sleep_ms_in(self.settings.retry_delay_ms).await;
        }
    }

    /// The compare-and-delete script for `value`: whether it deleted our lock.
    async fn unlock(&mut self, ctx: &NodeCtx, lock: &str, value: &str) -> Result<bool, LockError> {
        let mut conn = self.link.connection(ctx).await?;
        let reply: Result<i64, _> = self
            .compare_and_delete
            .key(lock)
            .arg(value)
            .invoke_async(&mut conn)
            .await;
        Ok(self.link.outcome(reply)? > 0)
    }
}

impl LockClient for RedisRsClient {
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        wait: Wait,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(self.acquire_lock(ctx, lock, wait))
    }

    fn release<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(self.unlock(ctx, &grant.lock, &grant.owner_value))
    }

    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            match self.last_value.clone() {
                Some(value) => self.unlock(ctx, lock, &value).await,
                None => Ok(false),
            }
        })
    }
}
