//! The `etcd-client` family: locksim's etcd model as the servers, etcd-client's own
//! `lock()` / `unlock()` on a kept-alive lease as the lock client.
//!
//! * [`EtcdClientLock`] (this file) is the `[lock]` table: the raft model's own table,
//!   read by the model, plus what the client makes of it. Every server key is the
//!   model's; of the keys locksim's own etcd client reads, the ones this client does not
//!   honour are refused (a scenario never runs with a key silently ignored).
//! * [`endpoints`]: one etcd-client `Client` per server over a [`SendGrpcChannel`], and
//!   failover between them.
//! * [`lease`]: the lease and the task that keeps it alive.
//! * [`mutex`]: the [`LockClient`] the workload calls, on etcd-client's `lock()`.

pub mod endpoints;
pub mod lease;
pub mod mutex;

use locksim::plugin::models::Raft;
use locksim::plugin::*;
use std::time::Duration;

/// Keys of locksim's own etcd client this client cannot honour, with why (see
/// [`EtcdClientLock::refused`]).
const REFUSED: &[(&str, &str)] = &[
    (
        "keepalive_retry_ms",
        "this client renews its lease a third of the TTL after each answer, as etcd's \
         clientv3 does, not in rounds",
    ),
    (
        "deadline_check_ms",
        "this client has no deadline loop: its lease validity is the last keepalive \
         answer + TTL",
    ),
];

/// `algorithm = "etcd-client"`: the raft model's `[lock]` table
/// ([`locksim::plugin::models::Raft`]); the lock client is etcd-client's.
///
/// Of the keys locksim's own client reads, this one honours `ttl_ms` (the lease it
/// grants, in the model's wire seconds), `request_timeout_ms` (each request's deadline),
/// `token` (`"revision"`: the lock key's create revision; `"none"`: no token),
/// `post_wait_check = true` (it reads its key after `lock()` returns) and
/// `on_session_lost = "continue"` (it keeps working until the workload's validity
/// check). Any other value of these, and the keys in [`REFUSED`], are refused by
/// [`Algorithm::validate`] with the key named.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(try_from = "toml::Table")]
pub struct EtcdClientLock {
    /// The model's table: servers and their timers.
    model: Raft,
    /// Whether grants carry the lock key's create revision as their token.
    fencing: bool,
    /// The first key set to something this client does not do, with why.
    refused: Option<(String, String)>,
}

impl TryFrom<toml::Table> for EtcdClientLock {
    type Error = String;

    /// The model reads the whole table (an unknown key or a bad value fails here, as
    /// with `algorithm = "raft"`); then the client's own keys are looked at.
    fn try_from(table: toml::Table) -> Result<EtcdClientLock, String> {
        let model: Raft = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| e.message().to_string())?;
        let text = |key: &str| table.get(key).and_then(|v| v.as_str().map(str::to_owned));
        let mut refused = REFUSED
            .iter()
            .find(|(key, _)| table.contains_key(*key))
            .map(|(key, why)| (key.to_string(), why.to_string()));
        if table.get("post_wait_check").and_then(|v| v.as_bool()) == Some(false) {
            refused.get_or_insert((
                "post_wait_check".into(),
                "this client always reads its key after lock() returns (etcd-client's \
                 lock() has no check of its own); expected true"
                    .into(),
            ));
        }
        if text("on_session_lost").is_some_and(|v| v != "continue") {
            refused.get_or_insert((
                "on_session_lost".into(),
                "this client keeps working until the workload's validity check; expected \
                 \"continue\""
                    .into(),
            ));
        }
        Ok(EtcdClientLock {
            model,
            fencing: text("token").as_deref() != Some("none"),
            refused,
        })
    }
}

impl EtcdClientLock {
    /// The servers' names, `raft-0 ..`.
    pub fn nodes(&self) -> Vec<String> {
        self.model.servers()
    }

    /// The lease TTL in etcd's wire seconds, which the model runs at its cluster's pace:
    /// one wire second lasts [`Raft::second_ms`] (an election timeout, 100 ms by
    /// default), so `ttl_ms = 500` is a grant of 5 "seconds" lasting 500 ms. The model
    /// refuses a `ttl_ms` that is not a whole number of them.
    pub fn ttl_seconds(&self) -> i64 {
        (self.model.lease_ms().unwrap_or(0) / self.model.second_ms()) as i64
    }

    /// One wire second of the model, as a duration (a keepalive's TTL × this).
    pub fn second(&self) -> Duration {
        Duration::from_millis(self.model.second_ms())
    }

    /// Each request's deadline on the client's clock (`request_timeout_ms`).
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.model.request_timeout_ms())
    }

    /// Whether grants carry a fencing token.
    pub fn fencing(&self) -> bool {
        self.fencing
    }
}

impl Algorithm for EtcdClientLock {
    const NAME: &'static str = "etcd-client";
    const ABOUT: &'static str =
        "etcd-client's lock() on a kept-alive lease, against locksim's etcd model (raft)";

    fn params() -> Vec<ParamDoc> {
        Raft::params()
    }

    fn validate(&self) -> Result<(), ParamError> {
        Algorithm::validate(&self.model)?;
        match &self.refused {
            Some((key, why)) => Err(ParamError::new(
                key,
                format!("not honoured by the etcd-client example: {why}"),
            )),
            None => Ok(()),
        }
    }

    fn servers(&self) -> Vec<String> {
        self.model.servers()
    }

    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        self.model.server_main(ctx)
    }

    fn client(&self) -> Box<dyn LockClient> {
        Box::new(mutex::EtcdClientMutex::new(self.clone()))
    }

    fn lease_ms(&self) -> Option<u64> {
        self.model.lease_ms()
    }

    fn checks(&self) -> Vec<&'static Check> {
        self.model.checks()
    }

    fn fencing_token(&self) -> Option<&'static str> {
        self.fencing
            .then_some("the lock key's create revision (a get after etcd-client's lock())")
    }

    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        self.model.effective_table()
    }
}
