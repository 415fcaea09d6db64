//! `[lock]` for `algorithm = "redlock"`: every assumption of the Redlock debate is a key.

use crate::locks::param::{self, KeyError, ParamDoc, Range};
use crate::locks::redis::params::{default_drift_factor, default_persistence, default_ttl};
use crate::locks::redis::Persistence;
use serde::{Deserialize, Serialize};

/// Which clock a Redlock client measures elapsed acquisition time with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ClockKind {
    /// The monotonic clock: immune to wall-clock steps.
    Monotonic,
    /// The wall clock, as the reference clients that call `time()` do.
    Wall,
}

/// `[lock]` for `algorithm = "redlock"` (redis.io, "Distributed Locks with Redis"): the
/// algorithm's value.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Redlock {
    /// Number of independent Redis nodes `redis-0 .. redis-N-1` [5].
    #[serde(default = "default_redlock_nodes")]
    pub nodes: u32,
    /// Lease time in ms [1000].
    #[serde(default = "default_ttl")]
    pub ttl_ms: u64,
    /// Drift allowance: `drift = ttl × factor + 2 ms` [0.01].
    #[serde(default = "default_drift_factor")]
    pub drift_factor: f64,
    /// Clock used to measure the acquisition time [monotonic].
    #[serde(default = "default_clock_kind")]
    pub clock: ClockKind,
    /// Refuse a majority whose remaining validity is not positive [true]. `false` models a
    /// client that returns as soon as a majority answers, without re-checking.
    #[serde(default = "default_true")]
    pub reject_expired: bool,
    /// Per-node request deadline, local ms [50] (small against the TTL, as the spec asks).
    #[serde(default = "default_node_timeout")]
    pub node_timeout_ms: u64,
    /// Attempts per acquire before giving up [3].
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Random delay between attempts, local ms [[50, 150]].
    #[serde(default = "default_redlock_retry_delay")]
    pub retry_delay_ms: Range<u64>,
    /// Each node's persistence [none].
    #[serde(default = "default_persistence")]
    pub persistence: Persistence,
    /// A restarted node stays unavailable this long before serving (antirez's delayed
    /// restart; at least the max TTL makes a fast restart safe) [0].
    #[serde(default)]
    pub restart_delay_ms: u64,
}

fn default_redlock_nodes() -> u32 {
    5
}
fn default_clock_kind() -> ClockKind {
    ClockKind::Monotonic
}
fn default_node_timeout() -> u64 {
    50
}
fn default_retries() -> u32 {
    3
}
fn default_redlock_retry_delay() -> Range<u64> {
    Range([50, 150])
}

fn default_true() -> bool {
    true
}

/// Check values serde cannot.
pub(crate) fn validate(p: &Redlock) -> Result<(), KeyError> {
    param::between("nodes", p.nodes as u64, 1, 15)?;
    param::positive("ttl_ms", p.ttl_ms)?;
    param::positive("node_timeout_ms", p.node_timeout_ms)?;
    param::positive("retries", p.retries as u64)?;
    param::range("retry_delay_ms", &p.retry_delay_ms)?;
    param::fraction("drift_factor", p.drift_factor)?;
    param::at_most_an_hour("restart_delay_ms", p.restart_delay_ms)
}

/// The keys, for `locksim list`.
pub(crate) const DOCS: &[ParamDoc] = &[
    ParamDoc::new("nodes", "5", "independent Redis nodes redis-0..redis-N-1 (1 to 15)"),
    ParamDoc::new("ttl_ms", "1000", "lease time, ms"),
    ParamDoc::new("drift_factor", "0.01", "drift allowance: validity = ttl - elapsed - (ttl * factor + 2 ms)"),
    ParamDoc::new("clock", "\"monotonic\"", "monotonic | wall: the clock the client measures the acquisition with"),
    ParamDoc::new("reject_expired", "true", "refuse a majority whose remaining validity is not positive (false: a client that skips the re-check)"),
    ParamDoc::new("node_timeout_ms", "50", "per-node request deadline, local ms (small against the TTL)"),
    ParamDoc::new("retries", "3", "attempts per acquire"),
    ParamDoc::new("retry_delay_ms", "[50, 150]", "random delay between attempts, local ms"),
    ParamDoc::new("persistence", "\"none\"", "none | everysec | always: each node's AOF fsync policy"),
    ParamDoc::new("restart_delay_ms", "0", "a restarted node stays unavailable this long (antirez's delayed restart)"),
];
