//! `[lock]` for `algorithm = "zk"`: the ensemble, ZooKeeper's session settings and every
//! variant of the Curator `InterProcessMutex` client.

use crate::locks::param::{self, KeyError, ParamDoc};
use serde::{Deserialize, Serialize};

/// What a lock holder does when Curator reports the connection SUSPENDED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum OnSuspended {
    /// Keep acting as the holder: what `InterProcessMutex` does on its own, and what
    /// CURATOR-206 calls "by design" (it is the application's job to listen).
    Continue,
    /// Treat SUSPENDED (and LOST) as having lost the lock: the grant's validity ends at
    /// once, the workload stops working and skips its write (Curator's lock docs: "If a
    /// SUSPENDED state is reported you cannot be certain that you still hold the lock
    /// unless you subsequently receive a RECONNECTED state").
    Stop,
}

/// Where the fencing token of a grant comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ZkToken {
    /// The `czxid` of the holder's lock node: the zxid of its create, globally increasing.
    Czxid,
    /// The node's 10-digit sequence suffix: per parent, and reset when the (container)
    /// parent is deleted and created again, so it can go backwards.
    Sequence,
    /// No token: the workload writes unfenced.
    None,
}

/// `[lock]` for `algorithm = "zk"`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ZkParams {
    /// Servers `zk-0 .. zk-N-1`: 1 (standalone), 3 or 5 (an ensemble) [1].
    #[serde(default = "default_servers")]
    pub servers: u32,
    /// ZooKeeper's `tickTime`, server local ms [100]: session expiry buckets, the
    /// negotiated timeout's bounds (2 to 20 ticks) and, in an ensemble, the Raft timing.
    #[serde(default = "default_tick")]
    pub tick_ms: u64,
    /// The session timeout the client asks for, ms [1000]; the server clamps it to
    /// `[2, 20] × tick_ms`.
    #[serde(default = "default_session_timeout")]
    pub session_timeout_ms: u64,
    /// Curator's protected mode (`_c_<GUID>-` prefix) [true].
    #[serde(default = "default_true")]
    pub protected: bool,
    /// What the holder does on SUSPENDED [continue].
    #[serde(default = "default_on_suspended")]
    pub on_suspended: OnSuspended,
    /// Fencing token [czxid].
    #[serde(default = "default_token")]
    pub token: ZkToken,
    /// Curator's `connectionTimeoutMs`: how long an operation waits for a connection
    /// before failing with ConnectionLoss, client local ms [500].
    #[serde(default = "default_connection_timeout")]
    pub connection_timeout_ms: u64,
    /// Curator's retry policy (`ExponentialBackoffRetry`): retries per operation [3].
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// `ExponentialBackoffRetry`'s base sleep, client local ms [20]: retry n sleeps
    /// `base × max(1, random(0 .. 2^(n+1)))`.
    #[serde(default = "default_retry_base")]
    pub retry_base_ms: u64,
    /// How often the server (the leader in an ensemble) deletes empty container nodes
    /// that once had children (ZooKeeper's `znode.container.checkIntervalMs`), local
    /// ms [1000].
    #[serde(default = "default_container_check")]
    pub container_check_ms: u64,
}

fn default_servers() -> u32 {
    1
}
fn default_tick() -> u64 {
    100
}
fn default_session_timeout() -> u64 {
    1000
}
fn default_true() -> bool {
    true
}
fn default_on_suspended() -> OnSuspended {
    OnSuspended::Continue
}
fn default_token() -> ZkToken {
    ZkToken::Czxid
}
fn default_connection_timeout() -> u64 {
    500
}
fn default_retries() -> u32 {
    3
}
fn default_retry_base() -> u64 {
    20
}
fn default_container_check() -> u64 {
    1000
}

impl Default for ZkParams {
    fn default() -> Self {
        toml::from_str("").expect("defaults parse")
    }
}

impl ZkParams {
    /// The session timeout the servers grant: the asked one clamped to
    /// `[2 × tick, 20 × tick]` (ZooKeeper's default min/max session timeouts).
    pub(crate) fn negotiated_timeout_ms(&self) -> u64 {
        negotiate(self.session_timeout_ms, self.tick_ms)
    }

    /// Check values serde cannot.
    pub(crate) fn validate(&self) -> Result<(), KeyError> {
        if ![1, 3, 5].contains(&self.servers) {
            return Err(KeyError::new(
                "servers",
                format!("expected 1, 3 or 5, got {}", self.servers),
            ));
        }
        param::positive("tick_ms", self.tick_ms)?;
        if self.tick_ms < 5 {
            // The Raft tick of an ensemble is a fifth of it.
            return Err(KeyError::new(
                "tick_ms",
                format!("expected at least 5, got {}", self.tick_ms),
            ));
        }
        param::positive("session_timeout_ms", self.session_timeout_ms)?;
        param::positive("connection_timeout_ms", self.connection_timeout_ms)?;
        param::between("retries", self.retries as u64, 0, 20)?;
        param::positive("retry_base_ms", self.retry_base_ms)?;
        param::positive("container_check_ms", self.container_check_ms)
    }
}

/// ZooKeeper's negotiation: `min(max(asked, 2 × tick), 20 × tick)`.
pub(crate) fn negotiate(asked_ms: u64, tick_ms: u64) -> u64 {
    asked_ms.clamp(2 * tick_ms, 20 * tick_ms)
}

/// The keys, for `locksim list`.
pub(crate) const DOCS: &[ParamDoc] = &[
    ParamDoc::new(
        "servers",
        "1",
        "servers zk-0..zk-N-1: 1 (standalone), 3 or 5 (an ensemble replicated by Raft)",
    ),
    ParamDoc::new(
        "tick_ms",
        "100",
        "ZooKeeper's tickTime: expiry buckets; negotiated timeout in [2, 20] ticks",
    ),
    ParamDoc::new(
        "session_timeout_ms",
        "1000",
        "session timeout the client asks for (clamped by the server)",
    ),
    ParamDoc::new(
        "protected",
        "true",
        "Curator's protected mode: a _c_<GUID>- prefix finds a node whose create reply was lost",
    ),
    ParamDoc::new(
        "on_suspended",
        "\"continue\"",
        "continue | stop: a holder that stops treats SUSPENDED as losing the lock",
    ),
    ParamDoc::new(
        "token",
        "\"czxid\"",
        "czxid | sequence | none: fencing token (the sequence resets with its container parent)",
    ),
    ParamDoc::new(
        "connection_timeout_ms",
        "500",
        "Curator's connectionTimeoutMs: an operation waits this long for a connection",
    ),
    ParamDoc::new(
        "retries",
        "3",
        "Curator's ExponentialBackoffRetry: retries per operation",
    ),
    ParamDoc::new(
        "retry_base_ms",
        "20",
        "ExponentialBackoffRetry's base sleep, local ms",
    ),
    ParamDoc::new(
        "container_check_ms",
        "1000",
        "how often empty container nodes are deleted (znode.container.checkIntervalMs)",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_error::KeyPath;

    #[test]
    fn defaults_and_negotiation() {
        let p = ZkParams::default();
        assert_eq!((p.servers, p.tick_ms, p.session_timeout_ms), (1, 100, 1000));
        assert!(p.protected);
        assert_eq!(p.on_suspended, OnSuspended::Continue);
        assert_eq!(p.token, ZkToken::Czxid);
        p.validate().unwrap();
        assert_eq!(p.negotiated_timeout_ms(), 1000);
        assert_eq!(negotiate(50, 100), 200);
        assert_eq!(negotiate(5000, 100), 2000);
    }

    #[test]
    fn bad_values_name_the_key() {
        let p: ZkParams = toml::from_str("servers = 2").unwrap();
        assert_eq!(p.validate().unwrap_err().path(), &KeyPath::key("servers"));
        let e = toml::from_str::<ZkParams>("on_suspended = \"pause\"").unwrap_err();
        assert!(e.to_string().contains("pause"), "{e}");
        let e = toml::from_str::<ZkParams>("session_timeout = 5").unwrap_err();
        assert!(e.to_string().contains("session_timeout"), "{e}");
    }
}
