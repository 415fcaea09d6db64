//! What a Raft core is configured with: cluster size, timing in ticks, the read and
//! fsync policies, and raft-rs's flow-control limits. The etcd family fills it from its
//! `[lock]` keys (`RaftParams::raft_config`); the zk family's ensemble from its own.

use serde::Deserialize;

/// How a node answers a read (the `read` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ReadMode {
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

/// When a node fsyncs its Raft log (the `fsync` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Fsync {
    /// Before any message that acknowledges the written state leaves the node (as Raft
    /// requires: persist before responding).
    Always,
    /// Never: a crash loses every entry and vote the node acknowledged. Unsafe on
    /// purpose: a cluster can lose committed writes.
    None,
}

/// A Raft cluster's configuration, as every one of its cores takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RaftConfig {
    /// Voters, Raft ids `1..=nodes` [3].
    pub nodes: u32,
    /// Length of one tick on the node's local monotonic clock, ms [10]: the driver's
    /// period ([`super::driver::drive`]).
    pub tick_ms: u64,
    /// Election timeout in ticks [10]; each node draws its randomized timeout from
    /// `[election_tick, 2 × election_tick)` with its own seeded RNG.
    pub election_tick: u64,
    /// Heartbeat interval in ticks [2].
    pub heartbeat_tick: u64,
    /// A leader steps down without a quorum for an election timeout [true].
    pub check_quorum: bool,
    /// Pre-vote round before an election [true].
    pub pre_vote: bool,
    /// How reads are answered [read-index].
    pub read: ReadMode,
    /// When the log is fsynced [always].
    pub fsync: Fsync,
    /// Bytes of entries per append message [1 MiB] (0 would mean one entry per message).
    pub max_size_per_msg: u64,
    /// Appends a leader keeps in flight to one follower [256].
    pub max_inflight_msgs: usize,
}

impl Default for RaftConfig {
    fn default() -> Self {
        RaftConfig {
            nodes: 3,
            tick_ms: 10,
            election_tick: 10,
            heartbeat_tick: 2,
            check_quorum: true,
            pre_vote: true,
            read: ReadMode::ReadIndex,
            fsync: Fsync::Always,
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
        }
    }
}
