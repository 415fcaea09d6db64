//! The single-node Redis lock client, every published variant as a parameter.
//!
//! * `acquire = set-nx-px`: `SET lock value NX PX ttl` (redis.io, "Distributed Locks with
//!   Redis"); with `token = incr` a script sets the key and `INCR`s a counter atomically.
//! * `acquire = setnx-then-expire`: the old two-step pattern, `SETNX` then `PEXPIRE`; a
//!   crash between them leaves a key with no TTL: nobody ever acquires again.
//! * `unlock = compare-and-delete` (the redis.io script) or `del` (deletes whoever holds
//!   it — a holder that paused past its lease deletes its successor's lock).
//! * `renew = watchdog`: like Redisson, a task extends the lease every `ttl / 3` with a
//!   compare-and-pexpire script while the lock is held. It is frozen with its process.
//! * `scripts = { acquire, release, extend }`: the user's own Lua scripts, called with
//!   Redisson's `RLock` convention or the owner-token one ([`super::Convention`]), run by
//!   the server's Lua engine.
//!
//! Validity is measured on the client's monotonic clock from *before* the request that
//! set the key: `valid_until = start + ttl − (ttl × drift_factor + 2 ms)`.
//!
//! Every error reply to a lock script call (a script that raised an error, `BUSY`, `OOM`)
//! is recorded as an `error-reply` event ([`crate::history::ERROR_REPLY`]) before the
//! client acts on it as it always has: the operation's own record says only how it
//! ended, the event says what the server said.

use super::endpoint::{Call, Endpoint};
use super::model::{EXTEND_SCRIPT, TOKEN_ACQUIRE_SCRIPT, UNLOCK_SCRIPT};
use super::params::{Acquire, Convention, RedisParams, Renew, ScriptTexts, TokenSource, Unlock};
use super::resp::Value;
use crate::history::{names, ErrorReply};
use crate::locks::{Grant, LocalBoxFuture, LockClient, LockError, Wait};
use crate::net::CallError;
use crate::sim::{FaultPoint, NodeCtx};
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// The Redis lock client.
pub(crate) struct RedisLock {
    params: RedisParams,
    remote: Endpoint,
    /// `WAIT` for this many replicas (and this long, ms) after acquiring; `redis-replicated`.
    wait: Option<(u32, u64)>,
    /// The value of the most recent acquire attempt (to clean up after an unknown outcome).
    last_value: Option<String>,
    watchdog: Option<tokio::task::JoinHandle<()>>,
    /// The user's scripts (`[lock] scripts`), shared with the watchdog task.
    scripts: Option<Rc<UserScripts>>,
    /// The owner value of the grant held now and how many acquires it stands for (more
    /// than one only after a re-entrant acquire: see [`RedisLock::reentrant_value`]).
    held: Option<(String, u32)>,
}

/// The user's lock scripts and how to call them.
struct UserScripts {
    convention: Convention,
    text: ScriptTexts,
}

impl UserScripts {
    /// `ARGV` of acquire and extend: Redisson's `[ttl, owner]`, or `[owner, ttl]`.
    fn owner_args<'a>(&self, ttl: &'a str, value: &'a str) -> [&'a str; 2] {
        match self.convention {
            Convention::Redisson => [ttl, value],
            Convention::Token => [value, ttl],
        }
    }
}

/// Outcome of one acquire attempt.
enum Attempt {
    Granted(Option<u64>),
    Busy,
}

impl RedisLock {
    /// A client that reaches the server through `remote` (`redis-0`, or the primary the
    /// sentinels name) and, with `wait = Some((n, ms))`, runs `WAIT n ms` after each
    /// grant (`redis-replicated`).
    pub(crate) fn new(
        params: RedisParams,
        remote: Endpoint,
        wait: Option<(u32, u64)>,
    ) -> RedisLock {
        let scripts = params.scripts.as_ref().and_then(|s| {
            let text = s.text.clone()?;
            Some(Rc::new(UserScripts {
                convention: s.convention,
                text,
            }))
        });
        RedisLock {
            scripts,
            params,
            remote,
            wait,
            last_value: None,
            watchdog: None,
            held: None,
        }
    }

    /// The owner value a re-entrant acquire sends. Redisson's owner is
    /// `<client id>:<thread id>`, the same for every acquire of the thread, so its script
    /// finds its own field and counts up (`HINCRBY`); every other convention draws a
    /// fresh value per acquire (redis-py's token), which finds the key taken.
    fn reentrant_value(&self) -> Option<String> {
        let redisson = self
            .scripts
            .as_ref()
            .is_some_and(|us| us.convention == Convention::Redisson && us.text.acquire.is_some());
        self.held
            .as_ref()
            .filter(|_| redisson)
            .map(|(v, _)| v.clone())
    }

    fn lease_end(params: &RedisParams, start_mono_ns: i64) -> i64 {
        let ttl = params.ttl_ms as f64 * 1e6;
        let drift = ttl * params.drift_factor + 2e6;
        start_mono_ns + (ttl - drift) as i64
    }

    async fn attempt(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        value: &str,
    ) -> Result<Attempt, CallError> {
        let ttl = self.params.ttl_ms.to_string();
        let token_key = format!("{lock}:token");
        if let Some(us) = self.scripts.clone() {
            if let Some(script) = &us.text.acquire {
                let (keys, args) = ([lock], us.owner_args(&ttl, value));
                let r =
                    lock_eval(&mut self.remote, ctx, Script::Acquire, script, &keys, &args).await?;
                return match (us.convention, r) {
                    // Redisson's tryLockInnerAsync: nil granted, the holder's PTTL busy.
                    (Convention::Redisson, Value::Bulk(None)) => Ok(Attempt::Granted(None)),
                    (Convention::Redisson, Value::Integer(_)) => Ok(Attempt::Busy),
                    (Convention::Token, Value::Integer(n)) if n >= 1 => Ok(Attempt::Granted(None)),
                    (Convention::Token, Value::Simple(s)) if s == "OK" => {
                        Ok(Attempt::Granted(None))
                    }
                    (Convention::Token, Value::Integer(0) | Value::Bulk(None)) => Ok(Attempt::Busy),
                    // The server refused to run it (another script holds it): nothing
                    // happened, so try again later, as when the lock is held.
                    (_, Value::Error(e)) if e.starts_with("BUSY ") => Ok(Attempt::Busy),
                    (_, other) => Err(CallError::Io(format!("acquire script replied {other:?}"))),
                };
            }
        }
        match self.params.acquire {
            Acquire::SetNxPx => {
                if self.params.token == TokenSource::Incr {
                    let r = lock_eval(
                        &mut self.remote,
                        ctx,
                        Script::Acquire,
                        TOKEN_ACQUIRE_SCRIPT,
                        &[lock, &token_key],
                        &[value, &ttl],
                    )
                    .await?;
                    Ok(match r {
                        Value::Integer(t) => Attempt::Granted(Some(t as u64)),
                        _ => Attempt::Busy,
                    })
                } else {
                    let args: [&[u8]; 6] = [
                        b"SET",
                        lock.as_bytes(),
                        value.as_bytes(),
                        b"NX",
                        b"PX",
                        ttl.as_bytes(),
                    ];
                    let r = self.remote.call(ctx, &args).await?;
                    Ok(match r {
                        Value::Simple(s) if s == "OK" => Attempt::Granted(None),
                        _ => Attempt::Busy,
                    })
                }
            }
            Acquire::SetnxThenExpire => {
                let args: [&[u8]; 3] = [b"SETNX", lock.as_bytes(), value.as_bytes()];
                if self.remote.call(ctx, &args).await? != Value::Integer(1) {
                    return Ok(Attempt::Busy);
                }
                // The key exists with no TTL until the PEXPIRE below lands.
                ctx.fault_point(FaultPoint::MidAcquire).await;
                let token = if self.params.token == TokenSource::Incr {
                    let args: [&[u8]; 2] = [b"INCR", token_key.as_bytes()];
                    match self.remote.call(ctx, &args).await? {
                        Value::Integer(t) => Some(t as u64),
                        other => return Err(CallError::Io(format!("INCR replied {other:?}"))),
                    }
                } else {
                    None
                };
                let args: [&[u8]; 3] = [b"PEXPIRE", lock.as_bytes(), ttl.as_bytes()];
                self.remote.call(ctx, &args).await?;
                Ok(Attempt::Granted(token))
            }
        }
    }

    fn start_watchdog(&mut self, ctx: &NodeCtx, lock: &str, value: &str, lease: Rc<Cell<i64>>) {
        let params = self.params.clone();
        let scripts = self.scripts.clone();
        let (ctx2, lock, value) = (ctx.clone(), lock.to_string(), value.to_string());
        let mut remote = self.remote.fresh();
        let handle = ctx.spawn(async move {
            let ttl = params.ttl_ms.to_string();
            loop {
                ctx2.sleep(Duration::from_millis((params.ttl_ms / 3).max(1)))
                    .await;
                let start = ctx2.mono_ns();
                let user = scripts
                    .as_deref()
                    .and_then(|us| Some((us, us.text.extend.as_ref()?)));
                let (script, args) = match user {
                    Some((us, script)) => (script.as_str(), us.owner_args(&ttl, &value)),
                    None => (EXTEND_SCRIPT, [value.as_str(), ttl.as_str()]),
                };
                let renewed =
                    lock_eval(&mut remote, &ctx2, Script::Extend, script, &[&lock], &args).await;
                match renewed {
                    Ok(Value::Integer(n)) if n >= 1 => lease.set(Self::lease_end(&params, start)),
                    // The key is gone or someone else's: the lock is lost; stop renewing.
                    Ok(_) => return,
                    Err(_) => {}
                }
            }
        });
        self.watchdog = Some(handle);
    }

    /// `WAIT n ms` after a grant: fewer acknowledgements than asked for and the client
    /// gives the lock back and retries, rather than hold a lock a failover could lose.
    async fn replicated(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        value: &str,
        token: Option<u64>,
        n: u32,
        ms: u64,
    ) -> Result<Attempt, CallError> {
        let (n_s, ms_s) = (n.to_string(), ms.to_string());
        let args: [&[u8]; 3] = [b"WAIT", n_s.as_bytes(), ms_s.as_bytes()];
        match self.remote.call(ctx, &args).await? {
            Value::Integer(k) if k >= n as i64 => Ok(Attempt::Granted(token)),
            _ => {
                // Give it back with the compare-and-delete (or the user's release), never
                // a plain DEL: this grant is ours.
                match self.scripts.clone() {
                    Some(us) => {
                        let _ = self.script_unlock(ctx, &us, lock, value, value).await;
                    }
                    None => {
                        let (remote, release) = (&mut self.remote, Script::Release);
                        let _ =
                            lock_eval(remote, ctx, release, UNLOCK_SCRIPT, &[lock], &[value]).await;
                    }
                }
                Ok(Attempt::Busy)
            }
        }
    }

    fn stop_watchdog(&mut self) {
        if let Some(h) = self.watchdog.take() {
            h.abort();
        }
    }

    async fn unlock(&mut self, ctx: &NodeCtx, lock: &str, value: &str) -> Result<bool, LockError> {
        // An inner release of a re-entered Redisson lock keeps the renewal going, as
        // Redisson's `cancelExpirationRenewal` does while the thread's count is above 0.
        let depth = match &self.held {
            Some((v, n)) if v == value => *n,
            _ => 1,
        };
        let nested = depth > 1;
        match &mut self.held {
            Some((_, n)) if nested => *n -= 1,
            _ => self.held = None,
        }
        if !nested {
            self.stop_watchdog();
        }
        if let Some(us) = self.scripts.clone() {
            // Redisson names the unlock latch by a request id fresh for each unlock call;
            // the owner stands for it, unique per unlock unless the lock was re-entered.
            let request = match nested {
                true => format!("{value}:inner{depth}"),
                false => value.to_string(),
            };
            return match self.script_unlock(ctx, &us, lock, value, &request).await {
                // The count went down and the lock stays ours: the inner release's success.
                Err(LockError::Failed(r)) if nested && r.starts_with("still held") => Ok(true),
                r => r,
            };
        }
        let r = match self.params.unlock {
            Unlock::CompareAndDelete => {
                let (remote, release) = (&mut self.remote, Script::Release);
                lock_eval(remote, ctx, release, UNLOCK_SCRIPT, &[lock], &[value]).await
            }
            Unlock::Del => {
                let args: [&[u8]; 2] = [b"DEL", lock.as_bytes()];
                self.remote.call(ctx, &args).await
            }
        };
        match r {
            Ok(Value::Integer(n)) => Ok(n > 0),
            Ok(other) => Err(LockError::Failed(format!("unexpected reply {other:?}"))),
            Err(e) if e.maybe_applied() => Err(LockError::Indeterminate(e.to_string())),
            Err(e) => Err(LockError::Failed(e.to_string())),
        }
    }

    /// Release with the user's script, called as its convention says (`request`: the id
    /// of this unlock call, which names Redisson's unlock latch).
    async fn script_unlock(
        &mut self,
        ctx: &NodeCtx,
        us: &UserScripts,
        lock: &str,
        value: &str,
        request: &str,
    ) -> Result<bool, LockError> {
        let ttl = self.params.ttl_ms.to_string();
        let script = &us.text.release;
        let r = match us.convention {
            Convention::Redisson => {
                // Redisson's unlockInnerAsync.
                let channel = format!("redisson_lock__channel:{{{lock}}}");
                let latch = format!("redisson_unlock_latch:{{{lock}}}:{request}");
                let keys = [lock, channel.as_str(), latch.as_str()];
                let args = ["0", ttl.as_str(), value, "publish", ttl.as_str()];
                lock_eval(&mut self.remote, ctx, Script::Release, script, &keys, &args).await
            }
            Convention::Token => {
                let (keys, args) = ([lock], [value, ttl.as_str()]);
                lock_eval(&mut self.remote, ctx, Script::Release, script, &keys, &args).await
            }
        };
        match (us.convention, r) {
            (Convention::Redisson, Ok(Value::Integer(1))) => Ok(true),
            (Convention::Redisson, Ok(Value::Integer(0))) => Err(LockError::Failed(
                "still held: the release script left a re-entrant count".into(),
            )),
            (Convention::Redisson, Ok(Value::Bulk(None))) => Ok(false),
            (Convention::Token, Ok(Value::Integer(n))) => Ok(n >= 1),
            (_, Ok(other)) => Err(LockError::Failed(format!("unexpected reply {other:?}"))),
            (_, Err(e)) if e.maybe_applied() => Err(LockError::Indeterminate(e.to_string())),
            (_, Err(e)) => Err(LockError::Failed(e.to_string())),
        }
    }

    async fn acquire_impl(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        wait: Wait,
    ) -> Result<Grant, LockError> {
        let reentrant = self.reentrant_value();
        let value = match &reentrant {
            Some(v) => v.clone(),
            None => format!("{}:{:016x}", ctx.name(), ctx.rand_u64()),
        };
        self.last_value = Some(value.clone());
        let deadline = wait.deadline_ns(ctx);
        loop {
            let start = ctx.mono_ns();
            let attempt = self.attempt(ctx, lock, &value).await;
            let attempt = match (attempt, self.wait) {
                (Ok(Attempt::Granted(t)), Some((n, ms))) => {
                    self.replicated(ctx, lock, &value, t, n, ms).await
                }
                (other, _) => other,
            };
            let why = match attempt {
                Ok(Attempt::Granted(token)) => {
                    let lease = Rc::new(Cell::new(Self::lease_end(&self.params, start)));
                    match &mut self.held {
                        // Re-entered: one more count, and the watchdog already runs.
                        Some((v, n)) if reentrant.as_ref() == Some(v) => *n += 1,
                        _ => {
                            self.held = Some((value.clone(), 1));
                            if self.params.renew == Renew::Watchdog {
                                self.start_watchdog(ctx, lock, &value, lease.clone());
                            }
                        }
                    }
                    return Ok(Grant {
                        lock: lock.to_string(),
                        token,
                        owner_value: value,
                        valid_until: Some(lease),
                    });
                }
                Ok(Attempt::Busy) => "lock busy".to_string(),
                // The request may have set the key (and taken a token) with its reply
                // lost. Retrying inside this operation would hide that grant from the
                // history, so the operation ends here with an unknown outcome; the caller
                // abandons it and starts a new one (as Jepsen clients do).
                Err(e) if e.maybe_applied() => {
                    return Err(LockError::Indeterminate(format!("attempt {e}")));
                }
                Err(e) => e.to_string(),
            };
            if wait.once() || ctx.mono_ns() >= deadline {
                return Err(LockError::Failed(wait.gave_up(&why)));
            }
            ctx.sleep_ms_in(*self.params.retry_delay_ms).await;
        }
    }
}

/// Which lock script a call runs: the `script` of an `error-reply` event.
#[derive(Debug, Clone, Copy)]
enum Script {
    Acquire,
    Release,
    Extend,
}

impl Script {
    fn name(self) -> &'static str {
        match self {
            Script::Acquire => names::ACQUIRE,
            Script::Release => names::RELEASE,
            Script::Extend => "extend",
        }
    }
}

/// [`eval`] for this client's lock scripts (the user's or the built-in ones), `KEYS[1]`
/// being the lock: an error reply is recorded as an `error-reply` event
/// ([`crate::history::ERROR_REPLY`]), then returned unchanged, so the operation ends as
/// it would without the record. Only error replies add events: a run whose scripts never
/// fail records exactly what it did before.
async fn lock_eval(
    remote: &mut Endpoint,
    ctx: &NodeCtx,
    script: Script,
    text: &str,
    keys: &[&str],
    args: &[&str],
) -> Result<Value, CallError> {
    let reply = eval(remote, ctx, text, keys, args).await;
    if let Ok(Value::Error(e)) = &reply {
        let error = ErrorReply {
            script: script.name(),
            server: remote.server(),
            text: e,
        };
        ctx.record(error.event(ctx.name(), keys.first().copied().unwrap_or_default()));
    }
    reply
}

/// `EVALSHA`, falling back to `EVAL` on `NOSCRIPT`, as Redis client libraries do.
/// Shared with the Redlock client.
pub(crate) async fn eval(
    remote: &mut impl Call,
    ctx: &NodeCtx,
    script: &str,
    keys: &[&str],
    args: &[&str],
) -> Result<Value, CallError> {
    let sha = super::model::script_sha(script);
    let numkeys = keys.len().to_string();
    let mut cmd: Vec<&[u8]> = vec![b"EVALSHA", sha.as_bytes(), numkeys.as_bytes()];
    cmd.extend(keys.iter().map(|k| k.as_bytes()));
    cmd.extend(args.iter().map(|a| a.as_bytes()));
    match remote.call(ctx, &cmd).await? {
        Value::Error(e) if e.starts_with("NOSCRIPT") => {
            cmd[0] = b"EVAL";
            cmd[1] = script.as_bytes();
            remote.call(ctx, &cmd).await
        }
        v => Ok(v),
    }
}

impl LockClient for RedisLock {
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
        Box::pin(self.unlock(ctx, &grant.lock, &grant.owner_value))
    }

    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            match self.last_value.clone() {
                Some(v) => self.unlock(ctx, lock, &v).await,
                None => Ok(false),
            }
        })
    }
}
