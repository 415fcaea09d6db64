//! Which `[lock]` keys the redis-rs client honours.
//!
//! The family takes the `[lock]` table of `algorithm = "redis"` as it is, but the
//! redis-rs client implements one variant of the lock: `SET NX PX` (with the `INCR`
//! script when fenced) and the compare-and-delete release. A key that chooses another
//! variant (`acquire = "setnx-then-expire"`, `unlock = "del"`, `renew = "watchdog"`,
//! `scripts = {...}`) is refused, naming the key, rather than silently ignored.
//!
//! The model's parameters are private to locksim, so the client reads them the way an
//! external client does: from the model's *effective table*
//! ([`Algorithm::effective_table`]), every key with its value, defaults filled in. Every
//! key there must be one this file knows: a key the model gains later fails every
//! scenario of this family (and the example's tests) until it is placed in one of the
//! lists below.

use locksim::plugin::*;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::time::Duration;

/// Keys whose value the redis-rs client reads ([`ClientSettings`]).
const READ_BY_CLIENT: &[&str] = &[
    "ttl_ms",
    "token",
    "request_timeout_ms",
    "retry_delay_ms",
    "drift_factor",
];

/// Keys the Redis model (the server) reads: honoured whatever the client.
const READ_BY_SERVER: &[&str] = &["persistence", "busy_reply_threshold_ms"];

/// Keys choosing a variant the redis-rs client does not implement: only their default
/// is accepted (`None`: the key must be absent, its effective value null).
const DEFAULT_ONLY: &[(&str, Option<&str>)] = &[
    ("acquire", Some("set-nx-px")),
    ("unlock", Some("compare-and-delete")),
    ("renew", Some("none")),
    ("scripts", None),
];

/// What the redis-rs client reads from the `[lock]` table.
#[derive(Debug, Clone, Deserialize)]
pub struct ClientSettings {
    /// The lease, ms: the `PX` of the `SET`.
    pub ttl_ms: u64,
    /// `"none"` or `"incr"` (a fencing token from the acquire script's `INCR`).
    token: String,
    /// The per-request deadline, ms: redis-rs's response timeout and the connect deadline.
    request_timeout_ms: u64,
    /// The pause between acquire attempts, local ms, drawn uniformly from `[lo, hi]`.
    pub retry_delay_ms: [u64; 2],
    /// The clock-drift allowance taken off the lease: `ttl × factor + 2 ms`.
    pub drift_factor: f64,
}

impl ClientSettings {
    /// The settings of `model`'s table, or the first key the client cannot honour.
    pub fn of(model: &models::Redis) -> Result<ClientSettings, ParamError> {
        let table = model.effective_table();
        check_keys(&table)?;
        serde_json::from_value(Value::Object(table))
            .map_err(|e| ParamError::here(format!("the redis-rs client cannot read it: {e}")))
    }

    /// Whether the acquire takes a fencing token (`token = "incr"`).
    pub fn fenced(&self) -> bool {
        self.token == "incr"
    }

    /// The per-request deadline.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
}

/// Every key of the effective table is read by the client or the server, or is at the
/// one value the client implements.
fn check_keys(table: &Map<String, Value>) -> Result<(), ParamError> {
    for (key, value) in table {
        if READ_BY_CLIENT.contains(&key.as_str()) || READ_BY_SERVER.contains(&key.as_str()) {
            continue;
        }
        let Some((_, only)) = DEFAULT_ONLY.iter().find(|(k, _)| k == key) else {
            return Err(ParamError::new(
                key,
                "the redis-rs client does not know this key of the Redis model: it would be \
                 ignored (examples/redis_rs/settings.rs lists the keys it honours)",
            ));
        };
        let is_default = match only {
            Some(only) => value.as_str() == Some(*only),
            None => value.is_null(),
        };
        if !is_default {
            let message = match only {
                Some(only) => format!(
                    "the redis-rs client implements only {key} = \"{only}\" (got {value}); use \
                     algorithm = \"redis\" for the other variants"
                ),
                None => "the redis-rs client runs its own scripts, so it cannot run these; use \
                         algorithm = \"redis\" for your own lock scripts"
                    .to_string(),
            };
            return Err(ParamError::new(key, message));
        }
    }
    Ok(())
}

/// The model's key documentation, the keys this client takes only at their default
/// saying so (for `locksim list`).
pub fn documented(model_docs: Vec<ParamDoc>) -> Vec<ParamDoc> {
    model_docs
        .into_iter()
        .map(|doc| match doc.key {
            "acquire" => ParamDoc::new(doc.key, doc.default, "set-nx-px only (redis-rs client)"),
            "unlock" => ParamDoc::new(
                doc.key,
                doc.default,
                "compare-and-delete only (redis-rs client)",
            ),
            "renew" => ParamDoc::new(doc.key, doc.default, "none only (redis-rs client)"),
            "request_timeout_ms" => ParamDoc::new(
                doc.key,
                doc.default,
                "per-request deadline, ms: the connect deadline (client local ms) and \
                 redis-rs's response timeout (tokio's clock: true simulated ms)",
            ),
            "scripts" => ParamDoc::new(
                doc.key,
                doc.default,
                "not supported: the redis-rs client runs its own scripts",
            ),
            _ => doc,
        })
        .collect()
}
