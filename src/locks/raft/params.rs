//! `[lock]` keys of `algorithm = "raft"` (`locksim list --params raft` prints them).
//!
//! Times are in ms of a node's *local* monotonic clock: a node ticks its Raft core every
//! `tick_ms` of its own clock, so a drifting clock makes its elections and heartbeats run
//! fast or slow, exactly as a real server's `time.Ticker` does.

use crate::consensus::RaftConfig;
use crate::locks::param::{self, KeyError, ParamDoc};
use serde::{Deserialize, Serialize};

/// The `read` and `fsync` keys are the Raft core's own policies.
pub(crate) use crate::consensus::{Fsync, ReadMode};

/// Whether the leader's lessor checks its leadership before revoking expired leases
/// (the `lessor_check` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LessorCheck {
    /// etcd ≥ 3.5.13 (PR #16822, issue #15247): skip the check if the node ticked within
    /// the last 3 ticks, else confirm leadership with a ReadIndex round before proposing
    /// revokes.
    EnsureLeadership,
    /// Revoke whenever the local lessor believes the lease expired (etcd before the fix).
    None,
}

/// Where the fencing token of a grant comes from (the `token` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RaftToken {
    /// The create revision of the holder's key (etcd's `Mutex.Key()` create revision,
    /// `myRev`). Not `Mutex.Header().Revision`: that is the store revision of the last
    /// response the mutex saw, which for a waiter is the revision of the read that ended
    /// its wait — larger than its key's, and not assigned to it alone.
    Revision,
    /// No token: the workload writes unfenced.
    None,
}

/// What a lock holder does when its session ends (the `on_session_lost` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum OnSessionLost {
    /// Keep working until the workload's validity check: what etcd's `Mutex` does on its
    /// own (it never looks at the session again).
    Continue,
    /// Stop working as soon as the session ends: a holder that also waits on
    /// `session.Done()`, which closes when a keepalive answer says the lease is gone or
    /// the client's deadline check finds no answer within the TTL.
    Stop,
}

/// The `[lock]` table of `algorithm = "raft"`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RaftParams {
    /// Number of Raft servers `raft-0 .. raft-N-1` (Raft ids 1..=N) [3].
    #[serde(default = "default_nodes")]
    pub(crate) nodes: u32,
    /// Lease TTL requested by lock clients, ms [1000]. Must be at least
    /// ⌈1.5 × election timeout⌉ (etcd's minimum lease TTL; etcd raises a shorter
    /// TTL silently, here the scenario is rejected).
    #[serde(default = "default_ttl")]
    pub(crate) ttl_ms: u64,
    /// Length of one Raft tick on the node's local monotonic clock, ms [10].
    #[serde(default = "default_tick")]
    pub(crate) tick_ms: u64,
    /// Election timeout in ticks [10]; each node draws its randomized timeout from
    /// `[election_tick, 2 × election_tick)` with its own seeded RNG.
    #[serde(default = "default_election_tick")]
    pub(crate) election_tick: u64,
    /// Heartbeat interval in ticks [2]; must be below `election_tick`.
    #[serde(default = "default_heartbeat_tick")]
    pub(crate) heartbeat_tick: u64,
    /// A leader steps down when it has not heard from a quorum for an election timeout
    /// [true]. Needed by `read = "lease"`.
    #[serde(default = "default_true")]
    pub(crate) check_quorum: bool,
    /// Pre-vote round before an election, so a rejoining node does not depose a healthy
    /// leader [true].
    #[serde(default = "default_true")]
    pub(crate) pre_vote: bool,
    /// How reads are answered [read-index].
    #[serde(default = "default_read")]
    pub(crate) read: ReadMode,
    /// Leadership check before revoking expired leases [ensure-leadership].
    #[serde(default = "default_lessor_check")]
    pub(crate) lessor_check: LessorCheck,
    /// After waiting for the keys before its own to be deleted, the lock client checks that
    /// its own key still exists (etcd #11456's fix) [true].
    #[serde(default = "default_true")]
    pub(crate) post_wait_check: bool,
    /// Fencing token source [revision].
    #[serde(default = "default_token")]
    pub(crate) token: RaftToken,
    /// Raft log fsync policy [always].
    #[serde(default = "default_fsync")]
    pub(crate) fsync: Fsync,
    /// A lock client's per-request deadline, local ms [2 × election timeout]; see
    /// [`RaftParams::request_timeout_ms`].
    #[serde(default)]
    pub(crate) request_timeout_ms: Option<u64>,
    /// What a holder does when its session ends [continue].
    #[serde(default = "default_on_session_lost")]
    pub(crate) on_session_lost: OnSessionLost,
    /// The client's keepalive round, local ms (etcd's `sendKeepAliveLoop` waits
    /// `retryConnWait`, 500 ms, between rounds; a keepalive without an answer is sent
    /// again at the next round) [scaled, see [`RaftParams::etcd_scaled_ms`]].
    #[serde(default)]
    pub(crate) keepalive_retry_ms: Option<u64>,
    /// The client's `deadlineLoop` period (etcd: 1 s): how often it ends a session whose
    /// deadline passed without a keepalive answer [scaled].
    #[serde(default)]
    pub(crate) deadline_check_ms: Option<u64>,
    /// The lessor's `runLoop` period (etcd: 500 ms): how often the leader looks for
    /// expired leases [scaled].
    #[serde(default)]
    pub(crate) lessor_check_ms: Option<u64>,
    /// How long an expired lease waits before its revoke is proposed again (etcd's
    /// `ExpiredLeasesRetryInterval`, which the server sets to its request timeout,
    /// 5 s + 2 × election timeout) [scaled].
    #[serde(default)]
    pub(crate) revoke_retry_ms: Option<u64>,
    /// Chubby's lock-delay, ms of the leader's lessor clock [0: off]: a lock freed by a
    /// lease revoke (its holder's session failed) gets no new owner for this long; a
    /// release frees it at once. See [`super::kv::lock_delay`].
    #[serde(default)]
    pub(crate) lock_delay_ms: u64,
    /// A follower forwards the lessor calls (`LeaseKeepAlive`, `LeaseTimeToLive`,
    /// `LeaseLeases`) to its leader, as etcd does, instead of answering `NotLeader` with
    /// a hint for the client to follow [false: locksim's client follows the hint, one hop
    /// less; `locksim serve` forwards, for real clients that do not].
    #[serde(default)]
    pub(crate) forward_lease_calls: bool,
    /// Against real etcd (live mode, [`RaftParams::for_real`]): etcd's timers and lease
    /// seconds are real ones, not scaled to the cluster's pace. Not a `[lock]` key.
    #[serde(skip)]
    pub(crate) real_etcd: bool,
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
fn default_on_session_lost() -> OnSessionLost {
    OnSessionLost::Continue
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
            request_timeout_ms: None,
            on_session_lost: default_on_session_lost(),
            keepalive_retry_ms: None,
            deadline_check_ms: None,
            lessor_check_ms: None,
            revoke_retry_ms: None,
            lock_delay_ms: 0,
            forward_lease_calls: false,
            real_etcd: false,
        }
    }
}

impl RaftParams {
    /// What each node's Raft core runs with: the Raft keys of the table.
    pub(crate) fn raft_config(&self) -> RaftConfig {
        RaftConfig {
            nodes: self.nodes,
            tick_ms: self.tick_ms,
            election_tick: self.election_tick,
            heartbeat_tick: self.heartbeat_tick,
            check_quorum: self.check_quorum,
            pre_vote: self.pre_vote,
            read: self.read,
            fsync: self.fsync,
            ..RaftConfig::default()
        }
    }

    /// The election timeout (the minimum randomized one), local ms.
    pub(crate) fn election_timeout_ms(&self) -> u64 {
        self.election_tick * self.tick_ms
    }

    /// etcd's minimum lease TTL, ⌈1.5 × election timeout⌉, ms (etcd computes it in whole
    /// seconds: `minTTL := time.Duration((3*electionTicks)/2) * heartbeat`, rounded up).
    pub(crate) fn min_lease_ttl_ms(&self) -> u64 {
        let second = self.second_ms();
        (3 * self.election_timeout_ms())
            .div_ceil(2)
            .div_ceil(second)
            * second
    }

    /// How long one second of etcd's wire API lasts here, ms: lease TTLs travel in whole
    /// seconds, each one election timeout long (`election_tick × tick_ms`: 1000 ms at
    /// etcd's default 100 ms heartbeat, 100 ms in the simulations' ten-times-faster
    /// clusters; against real etcd a real second). A client of the model grants a lease
    /// of `ttl_ms / second_ms()` seconds and reads a keepalive's TTL × `second_ms()`.
    pub fn second_ms(&self) -> u64 {
        self.etcd_scaled_ms(1000)
    }

    /// A client's per-request deadline, local ms: `request_timeout_ms`, or two election
    /// timeouts (a request to a dead leader gives up in time to find the next one within
    /// a lease).
    pub fn request_timeout_ms(&self) -> u64 {
        self.request_timeout_ms
            .unwrap_or(2 * self.election_timeout_ms())
    }

    /// etcd's fixed timer `etcd_ms` at this cluster's pace: `etcd_ms × election timeout
    /// / 1 s`, at least 1 ms. etcd hard-codes these timers for its default 1 s election
    /// timeout; the model runs Raft ten times faster by default (10 ms ticks), and the
    /// sub-second TTLs of its scenarios would not survive etcd's absolute 500 ms rounds.
    pub(crate) fn etcd_scaled_ms(&self, etcd_ms: u64) -> u64 {
        if self.real_etcd {
            return etcd_ms;
        }
        (etcd_ms * self.election_timeout_ms() / 1000).max(1)
    }

    /// These parameters against real etcd: its timers (the client's keepalive round and
    /// deadline check) and lease seconds are real ones, and the TTL is rounded up to
    /// whole seconds and etcd's minimum, as etcd grants it. The model's servers run
    /// with them too (`locksim live --servers model`), forwarding lessor calls to the
    /// leader as etcd does (a real client library does not follow locksim's hints).
    pub(crate) fn for_real(&self) -> RaftParams {
        let mut real = RaftParams {
            real_etcd: true,
            forward_lease_calls: true,
            ..self.clone()
        };
        real.ttl_ms = self.ttl_ms.max(real.min_lease_ttl_ms()).div_ceil(1000) * 1000;
        real
    }

    /// The client's keepalive round, local ms (etcd: 500 ms).
    pub(crate) fn keepalive_retry_ms(&self) -> u64 {
        self.keepalive_retry_ms
            .unwrap_or_else(|| self.etcd_scaled_ms(500))
    }

    /// The client's deadline check period, local ms (etcd: 1 s).
    pub(crate) fn deadline_check_ms(&self) -> u64 {
        self.deadline_check_ms
            .unwrap_or_else(|| self.etcd_scaled_ms(1000))
    }

    /// The lessor's expiry check period, local ms (etcd: 500 ms).
    pub(crate) fn lessor_check_ms(&self) -> u64 {
        self.lessor_check_ms
            .unwrap_or_else(|| self.etcd_scaled_ms(500))
    }

    /// How long before an expired lease's revoke is proposed again, local ms (etcd: its
    /// request timeout, 5 s + 2 × election timeout).
    pub(crate) fn revoke_retry_ms(&self) -> u64 {
        self.revoke_retry_ms
            .unwrap_or_else(|| self.etcd_scaled_ms(5000) + 2 * self.election_timeout_ms())
    }

    /// Check ranges and combinations; the error names the key (relative to `[lock]`).
    pub(crate) fn validate(&self) -> Result<(), KeyError> {
        param::between("nodes", u64::from(self.nodes), 1, 9)?;
        param::positive("tick_ms", self.tick_ms)?;
        param::positive("heartbeat_tick", self.heartbeat_tick)?;
        if self.election_tick <= self.heartbeat_tick {
            return Err(KeyError::new(
                "election_tick",
                format!(
                    "expected more ticks than lock.heartbeat_tick ({}), got {}",
                    self.heartbeat_tick, self.election_tick
                ),
            ));
        }
        param::between("election_tick", self.election_tick, 2, 1_000)?;
        // Derived times must stay within an hour too.
        param::at_most_an_hour("tick_ms", 2 * self.election_timeout_ms())?;
        param::positive("ttl_ms", self.ttl_ms)?;
        if !self.ttl_ms.is_multiple_of(self.second_ms()) {
            return Err(KeyError::new(
                "ttl_ms",
                format!(
                    "expected a multiple of {} (etcd's lease TTLs are whole seconds; a second \
                     here lasts one election timeout, {} ticks × {} ms), got {}",
                    self.second_ms(),
                    self.election_tick,
                    self.tick_ms,
                    self.ttl_ms
                ),
            ));
        }
        if self.ttl_ms < self.min_lease_ttl_ms() {
            return Err(KeyError::new(
                "ttl_ms",
                format!(
                    "expected at least {} (⌈1.5 × election timeout⌉ = ⌈1.5 × {} ticks × {} ms⌉, \
                     etcd's minimum lease TTL), got {}",
                    self.min_lease_ttl_ms(),
                    self.election_tick,
                    self.tick_ms,
                    self.ttl_ms
                ),
            ));
        }
        if let Some(t) = self.request_timeout_ms {
            param::positive("request_timeout_ms", t)?;
        }
        for (key, v) in [
            ("keepalive_retry_ms", self.keepalive_retry_ms),
            ("deadline_check_ms", self.deadline_check_ms),
            ("lessor_check_ms", self.lessor_check_ms),
            ("revoke_retry_ms", self.revoke_retry_ms),
        ] {
            if let Some(v) = v {
                param::positive(key, v)?;
            }
        }
        param::at_most_an_hour("lock_delay_ms", self.lock_delay_ms)?;
        if self.read == ReadMode::Lease && !self.check_quorum {
            return Err(KeyError::new(
                "read",
                "expected \"read-index\" or \"local\" when lock.check_quorum = false (raft-rs \
                 lease reads require check_quorum), got \"lease\"",
            ));
        }
        Ok(())
    }
}

/// The keys, for `locksim list`.
pub(crate) const DOCS: &[ParamDoc] = &[
    ParamDoc::new("nodes", "3", "Raft servers raft-0..raft-N-1 (1 to 9)"),
    ParamDoc::new("ttl_ms", "1000", "lease TTL of a lock session, ms (at least ⌈1.5 × election timeout⌉, etcd's minimum)"),
    ParamDoc::new("tick_ms", "10", "one Raft tick on the node's local monotonic clock, ms"),
    ParamDoc::new("election_tick", "10", "election timeout in ticks (each node draws from [election_tick, 2 × election_tick))"),
    ParamDoc::new("heartbeat_tick", "2", "heartbeat interval in ticks (below election_tick)"),
    ParamDoc::new("check_quorum", "true", "a leader steps down after an election timeout without hearing from a quorum"),
    ParamDoc::new("pre_vote", "true", "pre-vote round before an election (a rejoining node cannot depose a healthy leader)"),
    ParamDoc::new("read", "\"read-index\"", "read-index | lease | local: how a node answers a read (ReadIndex round, leader lease, or its own applied state)"),
    ParamDoc::new("lessor_check", "\"ensure-leadership\"", "ensure-leadership | none: before revoking or renewing, a leader that has not ticked in 3 ticks confirms leadership with ReadIndex (etcd's fix for #15247)"),
    ParamDoc::new("post_wait_check", "true", "after waiting for the keys ahead, the lock client checks its own key still exists (etcd PR #11408, issue #11456)"),
    ParamDoc::new("token", "\"revision\"", "revision | none: fencing token = the create revision of the holder's key"),
    ParamDoc::new("fsync", "\"always\"", "always | none: Raft log fsync before acknowledging (none loses acknowledged entries and votes on a crash)"),
    ParamDoc::new("request_timeout_ms", "", "a client's per-request deadline, local ms [2 × election timeout]"),
    ParamDoc::new("on_session_lost", "\"continue\"", "continue | stop: a holder that stops ends its work when its session ends (etcd's Session.Done())"),
    ParamDoc::new("keepalive_retry_ms", "", "client keepalive round, local ms: an unanswered keepalive is resent [etcd's 500 ms × election timeout / 1 s]"),
    ParamDoc::new("deadline_check_ms", "", "how often the client ends sessions past their deadline, local ms [etcd's 1 s × election timeout / 1 s]"),
    ParamDoc::new("lessor_check_ms", "", "how often the leader's lessor looks for expired leases, local ms [etcd's 500 ms × election timeout / 1 s]"),
    ParamDoc::new("revoke_retry_ms", "", "an expired lease's revoke is proposed again after this, local ms [etcd's request timeout: 5 s × election timeout / 1 s + 2 × election timeout]"),
    ParamDoc::new("forward_lease_calls", "false", "a follower forwards keepalives, TimeToLive and Leases to its leader as etcd does (false: it answers NotLeader with a hint, which locksim's client follows)"),
    ParamDoc::new("lock_delay_ms", "0", "Chubby's lock-delay, ms of the leader's clock: a lock freed by a lease revoke (not a release) gets no new owner for this long (0: off)"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_error::KeyPath;

    fn parse(text: &str) -> Result<RaftParams, toml::de::Error> {
        toml::from_str::<RaftParams>(text)
    }

    #[test]
    fn defaults_are_valid_and_documented_values() {
        let p = parse("").unwrap();
        assert_eq!(p, RaftParams::default());
        assert_eq!(p.nodes, 3);
        assert_eq!((p.tick_ms, p.election_tick, p.heartbeat_tick), (10, 10, 2));
        assert_eq!(p.election_timeout_ms(), 100);
        assert_eq!(p.min_lease_ttl_ms(), 200);
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
            request_timeout_ms = 70
            lock_delay_ms = 1000
            "#,
        )
        .unwrap();
        assert_eq!(p.nodes, 5);
        assert_eq!(p.read, ReadMode::Local);
        assert_eq!(p.lessor_check, LessorCheck::None);
        assert_eq!(p.token, RaftToken::None);
        assert_eq!(p.fsync, Fsync::None);
        assert_eq!(p.request_timeout_ms(), 70);
        assert_eq!(p.lock_delay_ms, 1000);
        p.validate().unwrap();
        assert_eq!(parse("read = \"lease\"").unwrap().read, ReadMode::Lease);
    }

    #[test]
    fn unknown_keys_and_values_are_errors() {
        assert!(parse("election_ticks = 3")
            .unwrap_err()
            .to_string()
            .contains("election_ticks"));
        assert!(parse("read = \"quorum\"")
            .unwrap_err()
            .to_string()
            .contains("quorum"));
    }

    #[test]
    fn validate_names_the_key() {
        let bad = |p: RaftParams, key: &str| {
            let e = p.validate().unwrap_err();
            assert_eq!(e.path(), &KeyPath::key(key), "{e}");
            assert!(e.message.starts_with("expected"), "{e}");
        };
        let d = RaftParams::default;
        bad(RaftParams { nodes: 0, ..d() }, "nodes");
        bad(RaftParams { nodes: 10, ..d() }, "nodes");
        bad(RaftParams { tick_ms: 0, ..d() }, "tick_ms");
        bad(
            RaftParams {
                heartbeat_tick: 0,
                ..d()
            },
            "heartbeat_tick",
        );
        bad(
            RaftParams {
                election_tick: 2,
                ..d()
            },
            "election_tick",
        );
        bad(RaftParams { ttl_ms: 150, ..d() }, "ttl_ms");
        RaftParams { ttl_ms: 200, ..d() }.validate().unwrap();
        bad(
            RaftParams {
                read: ReadMode::Lease,
                check_quorum: false,
                ..d()
            },
            "read",
        );
        bad(
            RaftParams {
                request_timeout_ms: Some(0),
                ..d()
            },
            "request_timeout_ms",
        );
        bad(
            RaftParams {
                tick_ms: 3_600_000,
                ttl_ms: 3_600_000,
                ..d()
            },
            "tick_ms",
        );
        bad(
            RaftParams {
                lock_delay_ms: 3_600_001,
                ..d()
            },
            "lock_delay_ms",
        );
        assert_eq!(d().request_timeout_ms(), 200);
        for key in [
            "keepalive_retry_ms",
            "deadline_check_ms",
            "lessor_check_ms",
            "revoke_retry_ms",
        ] {
            let p = parse(&format!("{key} = 0")).unwrap();
            bad(p, key);
            let p = parse(&format!("{key} = 3600001")).unwrap();
            bad(p, key);
        }
    }

    #[test]
    fn etcd_timers_default_to_etcds_values_at_the_clusters_pace() {
        let d = RaftParams::default();
        // etcd: 500 ms, 1 s, 500 ms and 5 s + 2 × 1 s, against a 1 s election timeout;
        // here the election timeout is 100 ms.
        assert_eq!(d.keepalive_retry_ms(), 50);
        assert_eq!(d.deadline_check_ms(), 100);
        assert_eq!(d.lessor_check_ms(), 50);
        assert_eq!(d.revoke_retry_ms(), 700);
        assert_eq!(d.on_session_lost, OnSessionLost::Continue);
        let slow = parse("tick_ms = 100").unwrap();
        assert_eq!(
            (slow.keepalive_retry_ms(), slow.deadline_check_ms()),
            (500, 1000)
        );
        assert_eq!(
            (slow.lessor_check_ms(), slow.revoke_retry_ms()),
            (500, 7000)
        );
        let set = parse(
            r#"
            keepalive_retry_ms = 7
            deadline_check_ms = 8
            lessor_check_ms = 9
            revoke_retry_ms = 10
            on_session_lost = "stop"
            "#,
        )
        .unwrap();
        set.validate().unwrap();
        assert_eq!(set.keepalive_retry_ms(), 7);
        assert_eq!(set.deadline_check_ms(), 8);
        assert_eq!(set.lessor_check_ms(), 9);
        assert_eq!(set.revoke_retry_ms(), 10);
        assert_eq!(set.on_session_lost, OnSessionLost::Stop);
        assert!(parse("on_session_lost = \"pause\"").is_err());
    }

    #[test]
    fn every_key_is_documented() {
        let keys: Vec<&str> = DOCS.iter().map(|d| d.key).collect();
        for k in [
            "nodes",
            "ttl_ms",
            "tick_ms",
            "election_tick",
            "heartbeat_tick",
            "check_quorum",
            "pre_vote",
            "read",
            "lessor_check",
            "post_wait_check",
            "token",
            "fsync",
            "request_timeout_ms",
            "on_session_lost",
            "keepalive_retry_ms",
            "deadline_check_ms",
            "lessor_check_ms",
            "revoke_retry_ms",
            "lock_delay_ms",
            "forward_lease_calls",
        ] {
            assert!(keys.contains(&k), "{k} undocumented");
        }
        assert_eq!(keys.len(), 20);
    }
}
