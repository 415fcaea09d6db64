//! `[lock]` for `algorithm = "redis"` and `"redis-replicated"`: every variant of the
//! Redis lock client and server is a key here.

use super::model::ServerConfig;
use crate::locks::param::{self, KeyError, ParamDoc, Range};
use serde::{Deserialize, Serialize};

/// How the Redis lock is acquired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Acquire {
    /// `SET key value NX PX ttl`: atomic.
    SetNxPx,
    /// `SETNX key value` then `PEXPIRE key ttl`: a crash in between leaves a key that never
    /// expires (catalogue row 3).
    SetnxThenExpire,
}

/// How the Redis lock is released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Unlock {
    /// The redis.io script: delete only if the value is still ours.
    CompareAndDelete,
    /// Plain `DEL`: deletes whoever's lock is there (catalogue row 2).
    Del,
}

/// Where a fencing token comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TokenSource {
    /// No token.
    None,
    /// `INCR` of a counter key, atomically with the acquire.
    Incr,
}

/// Lease renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Renew {
    /// The lease runs for `ttl_ms` and is never extended.
    None,
    /// Redisson-style watchdog: extend to `ttl_ms` every `ttl_ms / 3` while held.
    Watchdog,
}

/// Redis persistence (`appendonly` + `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Persistence {
    /// No persistence: a restart comes back empty.
    None,
    /// AOF fsynced once a second: a crash loses up to a second of writes.
    Everysec,
    /// AOF fsynced before every reply.
    Always,
}

/// How the lock client calls the user's scripts (`[lock] scripts.convention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Convention {
    /// Redisson's `RLock` (its scripts run unchanged; see `sims/scripts/`):
    ///
    /// * acquire: `KEYS = [lock]`, `ARGV = [ttl_ms, owner]`; nil when granted (or
    ///   re-entered), else an integer (the holder's remaining PTTL: busy);
    /// * release: `KEYS = [lock, channel, latch]`, `ARGV = ["0", ttl_ms, owner,
    ///   "publish", latch_ms]` (`channel` = `redisson_lock__channel:{lock}`, `latch` =
    ///   `redisson_unlock_latch:{lock}:<request>`, the request id being the owner, or
    ///   `<owner>:inner<depth>` for an inner release of a re-entered lock: Redisson's is
    ///   fresh per unlock call); 1 released, 0 still held (a re-entrant count left), nil
    ///   not the owner's;
    /// * extend: `KEYS = [lock]`, `ARGV = [ttl_ms, owner]`; 1 renewed, 0 lost.
    #[default]
    Redisson,
    /// The owner-token convention of redis.io, redis-py and node-redlock: every script
    /// gets `KEYS = [lock]`, `ARGV = [owner, ttl_ms]`. Acquire: an integer >= 1 or `OK`
    /// granted, 0 or nil busy; it may be left out, and the `acquire` key's commands run
    /// (redis-py acquires with `SET NX PX`). Release: >= 1 released, 0 not the owner's.
    /// Extend: >= 1 renewed, 0 lost.
    Token,
}

/// `[lock] scripts = { acquire = "a.lua", release = "r.lua", extend = "e.lua" }`: the
/// user's own lock scripts, run by the model's Lua engine, called as
/// [`Convention`] says. Paths are relative to the scenario file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScriptFiles {
    /// The calling convention [redisson].
    #[serde(default)]
    pub convention: Convention,
    /// The acquire script's path (required by the Redisson convention).
    pub acquire: Option<String>,
    /// The release script's path.
    pub release: String,
    /// The extend (renewal) script's path; needed with `renew = "watchdog"`.
    pub extend: Option<String>,
    /// The scripts' text, read by [`RedisParams::load_files`].
    #[serde(skip)]
    pub text: Option<ScriptTexts>,
}

/// The text of the user's lock scripts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ScriptTexts {
    /// Acquire, if given.
    pub acquire: Option<String>,
    /// Release.
    pub release: String,
    /// Extend, if given.
    pub extend: Option<String>,
}

/// `[lock]` for `algorithm = "redis"`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RedisParams {
    /// Lease time in ms [1000].
    #[serde(default = "default_ttl")]
    pub ttl_ms: u64,
    /// Acquire variant [set-nx-px].
    #[serde(default = "default_acquire")]
    pub acquire: Acquire,
    /// Unlock variant [compare-and-delete].
    #[serde(default = "default_unlock")]
    pub unlock: Unlock,
    /// Fencing token source [none].
    #[serde(default = "default_token")]
    pub token: TokenSource,
    /// Renewal [none].
    #[serde(default = "default_renew")]
    pub renew: Renew,
    /// Server persistence [none].
    #[serde(default = "default_persistence")]
    pub persistence: Persistence,
    /// Per-request deadline, client local ms [200].
    #[serde(default = "default_request_timeout")]
    pub request_timeout_ms: u64,
    /// Delay between acquire attempts, local ms [[20, 60]].
    #[serde(default = "default_retry_delay")]
    pub retry_delay_ms: Range<u64>,
    /// Clock-drift allowance subtracted from the lease: `ttl × factor + 2 ms` [0.01].
    #[serde(default = "default_drift_factor")]
    pub drift_factor: f64,
    /// The user's own acquire/release/extend scripts, replacing `acquire`, `unlock` and
    /// `token` [none].
    pub scripts: Option<ScriptFiles>,
    /// The servers' `busy-reply-threshold`, ms: a script still running after this long
    /// is taken never to end, and clients get `BUSY` until `SCRIPT KILL` [5000].
    #[serde(default = "default_busy_reply_threshold")]
    pub busy_reply_threshold_ms: u64,
    /// `redis-replicated` only: number of replicas [2].
    pub replicas: Option<u32>,
    /// `redis-replicated` only: number of sentinels [3] (quorum: a majority of them).
    pub sentinels: Option<u32>,
    /// `redis-replicated` only: a sentinel considers the primary down after this long
    /// without a reply to PING [1000].
    pub down_after_ms: Option<u64>,
    /// `redis-replicated` only: delay before a replica applies each replicated command,
    /// ms [[0, 50]].
    pub replication_lag_ms: Option<Range<u64>>,
    /// `redis-replicated` only: after acquiring, the client runs `WAIT wait_replicas
    /// wait_timeout_ms` and treats fewer acknowledgements as a failed acquire [0: no WAIT].
    pub wait_replicas: Option<u32>,
    /// `redis-replicated` only: the WAIT timeout, ms [100].
    pub wait_timeout_ms: Option<u64>,
}

/// Replication settings of `redis-replicated`, with defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Replication {
    /// Number of replicas.
    pub replicas: u32,
    /// Number of sentinels.
    pub sentinels: u32,
    /// Down-after period, ms.
    pub down_after_ms: u64,
    /// Replication lag range, ms.
    pub lag_ms: Range<u64>,
    /// Replicas to WAIT for after an acquire (0: no WAIT).
    pub wait_replicas: u32,
    /// WAIT timeout, ms.
    pub wait_timeout_ms: u64,
}

impl RedisParams {
    /// The effective `[lock]` table (see `Algorithm::effective_table`): the shared keys,
    /// and with `replicated` the replication keys with their defaults.
    pub(crate) fn effective_table(
        &self,
        replicated: bool,
    ) -> serde_json::Map<String, serde_json::Value> {
        use serde_json::json;
        let mut table = crate::locks::table_of(self);
        let r = self.replication();
        let replication = [
            ("replicas", json!(r.replicas)),
            ("sentinels", json!(r.sentinels)),
            ("down_after_ms", json!(r.down_after_ms)),
            ("replication_lag_ms", json!(r.lag_ms)),
            ("wait_replicas", json!(r.wait_replicas)),
            ("wait_timeout_ms", json!(r.wait_timeout_ms)),
        ];
        for (key, value) in replication {
            table.remove(key);
            if replicated {
                table.insert(key.to_string(), value);
            }
        }
        table
    }

    /// The replication settings with their defaults.
    pub(crate) fn replication(&self) -> Replication {
        Replication {
            replicas: self.replicas.unwrap_or(2),
            sentinels: self.sentinels.unwrap_or(3),
            down_after_ms: self.down_after_ms.unwrap_or(1000),
            lag_ms: self.replication_lag_ms.unwrap_or(Range([0, 50])),
            wait_replicas: self.wait_replicas.unwrap_or(0),
            wait_timeout_ms: self.wait_timeout_ms.unwrap_or(100),
        }
    }

    /// The servers' configuration.
    pub(crate) fn server_config(&self) -> ServerConfig {
        ServerConfig {
            busy_reply_threshold_ms: self.busy_reply_threshold_ms,
            ..ServerConfig::default()
        }
    }

    /// The replication-only keys that are set (an error for plain `redis`).
    pub(crate) fn replication_keys_set(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        for (k, set) in [
            ("replicas", self.replicas.is_some()),
            ("sentinels", self.sentinels.is_some()),
            ("down_after_ms", self.down_after_ms.is_some()),
            ("replication_lag_ms", self.replication_lag_ms.is_some()),
            ("wait_replicas", self.wait_replicas.is_some()),
            ("wait_timeout_ms", self.wait_timeout_ms.is_some()),
        ] {
            if set {
                v.push(k);
            }
        }
        v
    }
}

pub(crate) fn default_ttl() -> u64 {
    1000
}
fn default_acquire() -> Acquire {
    Acquire::SetNxPx
}
fn default_unlock() -> Unlock {
    Unlock::CompareAndDelete
}
fn default_token() -> TokenSource {
    TokenSource::None
}
fn default_renew() -> Renew {
    Renew::None
}
pub(crate) fn default_persistence() -> Persistence {
    Persistence::None
}
fn default_request_timeout() -> u64 {
    200
}
fn default_retry_delay() -> Range<u64> {
    Range([20, 60])
}
pub(crate) fn default_drift_factor() -> f64 {
    0.01
}
fn default_busy_reply_threshold() -> u64 {
    ServerConfig::default().busy_reply_threshold_ms
}

/// The longest `busy_reply_threshold_ms`: a script that never ends runs that long in Lua
/// before the model stops it (10 s of simulated Lua is a few seconds of real time).
const MAX_BUSY_REPLY_THRESHOLD_MS: u64 = 10_000;

impl RedisParams {
    /// Validate the keys both deployments share, and the replication keys' values.
    pub(crate) fn validate(&self) -> Result<(), KeyError> {
        param::positive("ttl_ms", self.ttl_ms)?;
        param::positive("request_timeout_ms", self.request_timeout_ms)?;
        param::range("retry_delay_ms", &self.retry_delay_ms)?;
        param::fraction("drift_factor", self.drift_factor)?;
        param::between(
            "busy_reply_threshold_ms",
            self.busy_reply_threshold_ms,
            1,
            MAX_BUSY_REPLY_THRESHOLD_MS,
        )?;
        let r = self.replication();
        param::between("replicas", r.replicas as u64, 1, 8)?;
        param::between("sentinels", r.sentinels as u64, 1, 7)?;
        param::positive("down_after_ms", r.down_after_ms)?;
        param::range("replication_lag_ms", &r.lag_ms)?;
        param::positive("wait_timeout_ms", r.wait_timeout_ms)?;
        if let Some(sc) = &self.scripts {
            sc.validate(self)?;
        }
        if r.wait_replicas > r.replicas {
            return Err(KeyError::new(
                "wait_replicas",
                format!(
                    "expected at most replicas = {}, got {}",
                    r.replicas, r.wait_replicas
                ),
            ));
        }
        Ok(())
    }
}

impl ScriptFiles {
    /// The other keys the scripts replace must be left at their defaults, and the
    /// scripts the convention and `renew` need must be there.
    fn validate(&self, p: &RedisParams) -> Result<(), KeyError> {
        if p.unlock != Unlock::CompareAndDelete {
            return Err(KeyError::new(
                "scripts",
                "the release script replaces `unlock`: leave it at its default",
            ));
        }
        let replaces_acquire = self.acquire.is_some() || self.convention == Convention::Redisson;
        if replaces_acquire && (p.acquire != Acquire::SetNxPx || p.token != TokenSource::None) {
            return Err(KeyError::new(
                "scripts",
                "the acquire script replaces `acquire` and `token`: leave those at their defaults",
            ));
        }
        if self.convention == Convention::Redisson && self.acquire.is_none() {
            return Err(KeyError::new(
                "scripts.acquire",
                "required with convention = \"redisson\" (only convention = \"token\" can acquire with the `acquire` key's commands)",
            ));
        }
        if p.renew == Renew::Watchdog && self.extend.is_none() {
            return Err(KeyError::new(
                "scripts.extend",
                "required with renew = \"watchdog\" (the watchdog renews with it)",
            ));
        }
        Ok(())
    }
}

impl RedisParams {
    /// Read the user's lock scripts, paths relative to `dir` (the scenario's folder),
    /// and compile each, so a missing, unreadable or broken script is a configuration
    /// error rather than an error reply in every history.
    pub(crate) fn load_files(&mut self, dir: &std::path::Path) -> Result<(), KeyError> {
        let Some(sc) = &mut self.scripts else {
            return Ok(());
        };
        let read = |key: &str, rel: &str| {
            let path = dir.join(rel);
            let text = read_script(key, &path)?;
            super::model::lua::check_compiles(&text).map_err(|e| {
                KeyError::new(
                    key,
                    format!("the script `{}` does not compile: {e}", path.display()),
                )
                .under_key("scripts")
            })?;
            Ok(text)
        };
        let text = ScriptTexts {
            acquire: sc
                .acquire
                .as_deref()
                .map(|a| read("acquire", a))
                .transpose()?,
            release: read("release", &sc.release)?,
            extend: sc
                .extend
                .as_deref()
                .map(|e| read("extend", e))
                .transpose()?,
        };
        sc.text = Some(text);
        Ok(())
    }
}

/// The largest lock script accepted, bytes: the cap on a scenario file (4 MiB), far
/// more than any lock script needs, while `/dev/zero` or a huge file cannot exhaust
/// memory.
pub(crate) const MAX_SCRIPT_BYTES: u64 = 4 << 20;

/// The text of the script `scripts.<key>` names, or what is wrong with the file.
fn read_script(key: &str, path: &std::path::Path) -> Result<String, KeyError> {
    use crate::user_file::{read_text_capped, ReadError};
    read_text_capped(path, MAX_SCRIPT_BYTES).map_err(|e| {
        let message = match e {
            ReadError::TooLarge(cap) => format!(
                "the script `{}` is larger than {cap} bytes, the most a script may be",
                path.display()
            ),
            _ => format!("cannot read the script `{}`: {e}", path.display()),
        };
        KeyError::new(key, message).under_key("scripts")
    })
}

/// The keys of both Redis deployments.
pub(crate) const SHARED_DOCS: &[ParamDoc] = &[
    ParamDoc::new("ttl_ms", "1000", "lease time, ms"),
    ParamDoc::new("acquire", "\"set-nx-px\"", "set-nx-px | setnx-then-expire (two steps: a crash between them leaves a key that never expires)"),
    ParamDoc::new("unlock", "\"compare-and-delete\"", "compare-and-delete | del (deletes whoever holds it)"),
    ParamDoc::new("token", "\"none\"", "none | incr (INCR a counter atomically with the acquire: a fencing token)"),
    ParamDoc::new("renew", "\"none\"", "none | watchdog (extend to ttl every ttl/3 while held, as Redisson)"),
    ParamDoc::new("persistence", "\"none\"", "none | everysec | always (AOF fsync policy)"),
    ParamDoc::new("request_timeout_ms", "200", "per-request deadline, client local ms"),
    ParamDoc::new("retry_delay_ms", "[20, 60]", "delay between acquire attempts, local ms"),
    ParamDoc::new("drift_factor", "0.01", "validity = ttl - elapsed - (ttl * factor + 2 ms)"),
    ParamDoc::new("busy_reply_threshold_ms", "5000", "the servers' busy-reply-threshold (1 to 10000): a script still running then is taken never to end; others get BUSY until SCRIPT KILL"),
    ParamDoc::new(
        "scripts",
        "none",
        "your own Lua lock scripts: { acquire = \"a.lua\", release = \"r.lua\", extend = \"e.lua\" }, \
         paths relative to the scenario file; extend is needed with renew = \"watchdog\". \
         convention = \"redisson\" [default]: Redisson RLock's KEYS/ARGV and replies (sims/scripts/); \
         \"token\": KEYS = [lock], ARGV = [owner, ttl_ms] (redis.io, redis-py, node-redlock), \
         replies >= 1 done, 0 busy / not the owner's; acquire may be left out (then the `acquire` key's commands)",
    ),
];

/// The keys only `redis-replicated` has.
pub(crate) const REPLICATION_DOCS: &[ParamDoc] = &[
    ParamDoc::new(
        "replicas",
        "2",
        "asynchronous replicas redis-1..redis-N (1 to 8)",
    ),
    ParamDoc::new(
        "sentinels",
        "3",
        "sentinels (1 to 7); quorum: a majority of them",
    ),
    ParamDoc::new(
        "down_after_ms",
        "1000",
        "a sentinel considers the primary down after this long without a PING reply",
    ),
    ParamDoc::new(
        "replication_lag_ms",
        "[0, 50]",
        "delay before a replica applies each replicated command",
    ),
    ParamDoc::new(
        "wait_replicas",
        "0",
        "after acquiring, WAIT for this many replica acks (fewer: give the lock back); 0 = no WAIT",
    ),
    ParamDoc::new("wait_timeout_ms", "100", "the WAIT timeout"),
];
