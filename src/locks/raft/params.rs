//! `[lock]` keys of `algorithm = "raft"` (DESIGN.md, the `raft` row of the key table).
//!
//! Times are in ms of a node's *local* monotonic clock: a node ticks its Raft core every
//! `tick_ms` of its own clock, so a drifting clock makes its elections and heartbeats run
//! fast or slow, exactly as a real server's `time.Ticker` does.

use serde::Deserialize;
use std::fmt;

/// How a node answers a read (the `read` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadMode {
    /// Raft ReadIndex (raft-rs `ReadOnlyOption::Safe`): the leader confirms its leadership
    /// with a heartbeat round to a quorum before answering; the answer waits until the
    /// node has applied up to the read index. Linearizable.
    ReadIndex,
    /// Leader lease (raft-rs `ReadOnlyOption::LeaseBased`): the leader answers with its
    /// commit index at once, trusting `check_quorum` to have made it step down before a
    /// new leader could exist. Depends on ticks running at the same rate everywhere: a
    /// leader whose clock runs slow answers stale reads (catalogue row 19).
    Lease,
    /// Answer from the node's local applied state without asking Raft at all (etcd's
    /// serializable reads). Stale on a follower or a deposed leader.
    Local,
}

/// Whether the leader's lessor checks its leadership before revoking expired leases
/// (the `lessor_check` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LessorCheck {
    /// etcd ≥ 3.5.13 (PR #16822, issue #15247): skip the check if the node ticked within
    /// the last 3 ticks, else confirm leadership with a ReadIndex round before proposing
    /// revokes.
    EnsureLeadership,
    /// Revoke whenever the local lessor believes the lease expired (etcd before the fix).
    None,
}

/// Where the fencing token of a grant comes from (the `token` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RaftToken {
    /// The create revision of the holder's key (etcd's `Mutex.Header().Revision`).
    Revision,
    /// No token: the workload writes unfenced.
    None,
}

/// When a node fsyncs its Raft log (the `fsync` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fsync {
    /// Before any message that acknowledges the written state leaves the node (as Raft
    /// requires: persist before responding).
    Always,
    /// Never: a crash loses every entry and vote the node acknowledged. Unsafe on
    /// purpose: a cluster can lose committed writes.
    None,
}

/// The `[lock]` table of `algorithm = "raft"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaftParams {
    /// Number of Raft servers `raft-0 .. raft-N-1` (Raft ids 1..=N) [3].
    #[serde(default = "default_nodes")]
    pub nodes: u32,
    /// Lease TTL requested by lock clients, ms [1000]. Must be at least
    /// ⌈1.5 × election timeout⌉ (etcd's minimum lease TTL; etcd raises a shorter
    /// TTL silently, here the scenario is rejected).
    #[serde(default = "default_ttl")]
    pub ttl_ms: u64,
    /// Length of one Raft tick on the node's local monotonic clock, ms [10].
    #[serde(default = "default_tick")]
    pub tick_ms: u64,
    /// Election timeout in ticks [10]; each node draws its randomized timeout from
    /// `[election_tick, 2 × election_tick)` with its own seeded RNG.
    #[serde(default = "default_election_tick")]
    pub election_tick: u64,
    /// Heartbeat interval in ticks [2]; must be below `election_tick`.
    #[serde(default = "default_heartbeat_tick")]
    pub heartbeat_tick: u64,
    /// A leader steps down when it has not heard from a quorum for an election timeout
    /// [true]. Needed by `read = "lease"`.
    #[serde(default = "default_true")]
    pub check_quorum: bool,
    /// Pre-vote round before an election, so a rejoining node does not depose a healthy
    /// leader [true].
    #[serde(default = "default_true")]
    pub pre_vote: bool,
    /// How reads are answered [read-index].
    #[serde(default = "default_read")]
    pub read: ReadMode,
    /// Leadership check before revoking expired leases [ensure-leadership].
    #[serde(default = "default_lessor_check")]
    pub lessor_check: LessorCheck,
    /// After waiting for the keys before its own to be deleted, the lock client checks that
    /// its own key still exists (etcd #11456's fix) [true].
    #[serde(default = "default_true")]
    pub post_wait_check: bool,
    /// Fencing token source [revision].
    #[serde(default = "default_token")]
    pub token: RaftToken,
    /// Raft log fsync policy [always].
    #[serde(default = "default_fsync")]
    pub fsync: Fsync,
}

fn default_nodes() -> u32 {
    3
}
fn default_ttl() -> u64 {
    1000
}
fn default_tick() -> u64 {
    10
}
fn default_election_tick() -> u64 {
    10
}
fn default_heartbeat_tick() -> u64 {
    2
}
fn default_true() -> bool {
    true
}
fn default_read() -> ReadMode {
    ReadMode::ReadIndex
}
fn default_lessor_check() -> LessorCheck {
    LessorCheck::EnsureLeadership
}
fn default_token() -> RaftToken {
    RaftToken::Revision
}
fn default_fsync() -> Fsync {
    Fsync::Always
}

impl Default for RaftParams {
    fn default() -> Self {
        RaftParams {
            nodes: default_nodes(),
            ttl_ms: default_ttl(),
            tick_ms: default_tick(),
            election_tick: default_election_tick(),
            heartbeat_tick: default_heartbeat_tick(),
            check_quorum: true,
            pre_vote: true,
            read: default_read(),
            lessor_check: default_lessor_check(),
            post_wait_check: true,
            token: default_token(),
            fsync: default_fsync(),
        }
    }
}

/// A `[lock]` key with a value out of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The key, e.g. `lock.election_tick`.
    pub key: &'static str,
    /// What was expected, with the value found.
    pub expected: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: expected {}", self.key, self.expected)
    }
}

impl std::error::Error for ParamError {}

impl RaftParams {
    /// The election timeout (the minimum randomized one), local ms.
    pub fn election_timeout_ms(&self) -> u64 {
        self.election_tick * self.tick_ms
    }

    /// etcd's minimum lease TTL, ⌈1.5 × election timeout⌉, ms (etcd computes it in whole
    /// seconds: `minTTL := time.Duration((3*electionTicks)/2) * heartbeat`, rounded up).
    pub fn min_lease_ttl_ms(&self) -> u64 {
        (3 * self.election_timeout_ms()).div_ceil(2)
    }

    /// Check ranges and combinations; the error names the key.
    pub fn validate(&self) -> Result<(), ParamError> {
        let err = |key, expected: String| Err(ParamError { key, expected });
        if !(1..=9).contains(&self.nodes) {
            return err(
                "lock.nodes",
                format!("a cluster size in 1..=9, got {}", self.nodes),
            );
        }
        if self.tick_ms == 0 {
            return err("lock.tick_ms", "a tick length ≥ 1 ms, got 0".into());
        }
        if self.heartbeat_tick == 0 {
            return err("lock.heartbeat_tick", "≥ 1 tick, got 0".into());
        }
        if self.election_tick <= self.heartbeat_tick {
            return err(
                "lock.election_tick",
                format!(
                    "more ticks than lock.heartbeat_tick ({}), got {}",
                    self.heartbeat_tick, self.election_tick
                ),
            );
        }
        if self.election_tick > 1_000_000 {
            return err(
                "lock.election_tick",
                format!("at most 1000000 ticks, got {}", self.election_tick),
            );
        }
        if self.ttl_ms < self.min_lease_ttl_ms() {
            return err(
                "lock.ttl_ms",
                format!(
                    "≥ {} (⌈1.5 × election timeout⌉ = ⌈1.5 × {} ticks × {} ms⌉, etcd's minimum \
                     lease TTL), got {}",
                    self.min_lease_ttl_ms(),
                    self.election_tick,
                    self.tick_ms,
                    self.ttl_ms
                ),
            );
        }
        if self.read == ReadMode::Lease && !self.check_quorum {
            return err(
                "lock.read",
                "\"read-index\" or \"local\" when lock.check_quorum = false (raft-rs lease \
                 reads require check_quorum), got \"lease\""
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RaftParams, String> {
        toml::from_str::<RaftParams>(text).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_valid_and_documented_values() {
        let p = parse("").unwrap();
        assert_eq!(p, RaftParams::default());
        assert_eq!(p.nodes, 3);
        assert_eq!((p.tick_ms, p.election_tick, p.heartbeat_tick), (10, 10, 2));
        assert_eq!(p.election_timeout_ms(), 100);
        assert_eq!(p.min_lease_ttl_ms(), 150);
        assert!(p.check_quorum && p.pre_vote && p.post_wait_check);
        assert_eq!(p.read, ReadMode::ReadIndex);
        assert_eq!(p.lessor_check, LessorCheck::EnsureLeadership);
        assert_eq!(p.token, RaftToken::Revision);
        assert_eq!(p.fsync, Fsync::Always);
        p.validate().unwrap();
    }

    #[test]
    fn every_key_parses() {
        let p = parse(
            r#"
            nodes = 5
            ttl_ms = 400
            tick_ms = 5
            election_tick = 20
            heartbeat_tick = 4
            check_quorum = false
            pre_vote = false
            read = "local"
            lessor_check = "none"
            post_wait_check = false
            token = "none"
            fsync = "none"
            "#,
        )
        .unwrap();
        assert_eq!(p.nodes, 5);
        assert_eq!(p.read, ReadMode::Local);
        assert_eq!(p.lessor_check, LessorCheck::None);
        assert_eq!(p.token, RaftToken::None);
        assert_eq!(p.fsync, Fsync::None);
        p.validate().unwrap();
        assert_eq!(parse("read = \"lease\"").unwrap().read, ReadMode::Lease);
    }

    #[test]
    fn unknown_keys_and_values_are_errors() {
        assert!(parse("election_ticks = 3")
            .unwrap_err()
            .contains("election_ticks"));
        assert!(parse("read = \"quorum\"").unwrap_err().contains("quorum"));
    }

    #[test]
    fn validate_names_the_key() {
        let bad = |p: RaftParams, key: &str| {
            let e = p.validate().unwrap_err();
            assert_eq!(e.key, key, "{e}");
            assert!(e.to_string().starts_with(key), "{e}");
        };
        let d = RaftParams::default;
        bad(RaftParams { nodes: 0, ..d() }, "lock.nodes");
        bad(RaftParams { tick_ms: 0, ..d() }, "lock.tick_ms");
        bad(
            RaftParams {
                heartbeat_tick: 0,
                ..d()
            },
            "lock.heartbeat_tick",
        );
        bad(
            RaftParams {
                election_tick: 2,
                ..d()
            },
            "lock.election_tick",
        );
        bad(RaftParams { ttl_ms: 149, ..d() }, "lock.ttl_ms");
        RaftParams { ttl_ms: 150, ..d() }.validate().unwrap();
        bad(
            RaftParams {
                read: ReadMode::Lease,
                check_quorum: false,
                ..d()
            },
            "lock.read",
        );
    }
}
