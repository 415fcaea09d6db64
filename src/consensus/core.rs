//! [`RaftCore`]: raft-rs's `RawNode` (a port of etcd's Raft as a pure state machine),
//! persisted to the node's [`Disk`], with every random draw taken from a seeded RNG.
//!
//! The node's network loop drives it: [`RaftCore::tick`] every `tick_ms` of the node's
//! *local* monotonic clock, [`RaftCore::step_bytes`] for every message received,
//! [`RaftCore::propose`] / [`RaftCore::read_index`] for client requests, and after any of
//! those [`RaftCore::process_ready`], which persists what Raft asks to persist (fsync per
//! [`RaftConfig::fsync`]), then returns what to send, what to apply and what changed. The core
//! does no I/O of its own and reads no clock.
//!
//! # Determinism (raft-rs 0.7, read from its source)
//!
//! * **Election timeout.** `Raft::reset_randomized_election_timeout` draws from
//!   `rand::thread_rng()` (an OS-seeded, thread-local RNG) whenever `Raft::reset` runs,
//!   i.e. in `become_follower`, `become_candidate` and `become_leader` (also once in
//!   `Raft::new`). `become_pre_candidate` does not reset. The draw is forced only when
//!   `max_election_tick = min_election_tick + 1` (then every node has the same timeout and
//!   elections can collide forever). We keep the range `[election_tick, 2 × election_tick)`
//!   and overwrite the drawn value with one from a `ChaCha8Rng::seed_from_u64(seed)` we
//!   own, through `Raft::set_randomized_election_timeout` (public, `#[doc(hidden)]`, asserts
//!   the value is in range). The overwrite happens at the end of every call that can step
//!   the state machine (`new`, `tick`, `step`, `propose`, `read_index`, `campaign`,
//!   `process_ready`), whenever `(term, role)` differs from what it was at the end of the
//!   previous call or the timeout differs from the one we set. The only place raft-rs reads
//!   the timeout is `tick_election`, *before* it steps `MsgHup`, so a value that lives only
//!   until the end of the call that drew it is never read. Every `reset` changes
//!   `(term, role)` by the end of its call (it comes with `become_follower` at a higher term
//!   or from another role, `become_candidate` at term + 1, or `become_leader` from
//!   candidate), so the redraw decision never depends on the thread-local draw;
//!   [`CoreStats::unexplained_resets`] counts resets detected only by the value, which
//!   would be a hole in that argument (tests assert it stays 0). The rule also redraws
//!   when a follower becomes pre-candidate, where raft-rs keeps the old value: harmless,
//!   the value is still uniform over the same range. The thread-local RNG is
//!   still *advanced* by raft-rs, which is harmless: nothing else in a run reads it.
//!   Tests: `tests::thread_rng_does_not_leak_into_runs`,
//!   `tests::timeouts_come_from_the_node_seed`, `tests::raft_rs_alone_draws_from_thread_rng`.
//! * **Hash maps.** Progress tracking, votes, read-only requests and quorum sets use
//!   `HashMap`/`HashSet` with `BuildHasherDefault<FxHasher>` (the private aliases at the
//!   end of raft-rs's `lib.rs`): a fixed hasher with no random state, so iteration order
//!   (which decides the order of `bcast_append` / `bcast_heartbeat` messages) is a pure
//!   function of the operations performed. FxHash hashes `usize` words: the order is the same on every 64-bit
//!   machine. `quorum::AckIndexer` is a std `HashMap` with `RandomState`, but only test
//!   code builds one.
//! * **Time and threads.** raft-rs reads no clock (`Instant` appears only in doc
//!   examples) and spawns no thread; the default logger (which reads the thread name) is
//!   not used: we pass `slog::Discard`.
//! * **Encoding.** rust-protobuf 2's generated writers emit fields in a fixed order and
//!   `eraftpb` has no map fields, so encoded messages are byte-for-byte reproducible.
//!
//! # Durability
//!
//! [`RaftCore::process_ready`] writes the hard state and the new entries to the WAL
//! ([`super::storage`]) *before* handing out any message, and with `fsync = always` syncs
//! them before that too, so a vote or an append acknowledgement never leaves the node
//! before what it acknowledges is durable. (raft-rs allows a leader to send appends before
//! its own write, thesis §10.2.1; we do not bother: the simulated disk is instantaneous.)
//! With `fsync = none` nothing is ever synced: a crash loses everything the node wrote,
//! including votes and acknowledged entries, and the cluster can lose committed writes.
//!
//! # Things the caller must know
//!
//! * raft-rs silently drops a ReadIndex request when there is no leader, or when the leader
//!   has not yet committed an entry of its term; a follower forwards both proposals and
//!   ReadIndex requests to the leader it knows, and the network can lose them. Every
//!   request therefore needs a deadline and a retry above this layer, and proposals carry
//!   their own request id (see the service module) to match what gets applied.
//! * There is no log compaction and no snapshot; a restarted node re-applies the whole log
//!   (the first ready after [`RaftCore::new`] returns every entry up to the recovered
//!   commit index; `applied` starts at 0 because the service state lives in memory only).
//! * `read = "local"` never reaches this layer: the node answers from its applied state.

use super::config::{RaftConfig, ReadMode};
use super::storage::{self, Wal};
use crate::sim::Disk;
use protobuf::Message as _;
use raft::prelude::{Entry, EntryType, Message};
use raft::storage::MemStorage;
#[cfg(test)]
use raft::Storage;
use raft::{Config, RawNode, ReadOnlyOption, StateRole};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// A node's Raft role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Role {
    /// Follows a leader (or waits for one).
    Follower,
    /// Asking for pre-votes (no term change yet).
    PreCandidate,
    /// Asking for votes.
    Candidate,
    /// The leader of its term.
    Leader,
}

impl From<StateRole> for Role {
    fn from(r: StateRole) -> Role {
        match r {
            StateRole::Follower => Role::Follower,
            StateRole::PreCandidate => Role::PreCandidate,
            StateRole::Candidate => Role::Candidate,
            StateRole::Leader => Role::Leader,
        }
    }
}

/// A message to send to peer `to`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outgoing {
    /// Raft id of the destination (1-based; node `raft-(to - 1)`).
    pub to: u64,
    /// The message.
    pub msg: Message,
}

impl Outgoing {
    /// The message as protobuf bytes (what goes on the wire; see [`RaftCore::step_bytes`]).
    pub(crate) fn encode(&self) -> Vec<u8> {
        self.msg.write_to_bytes().expect("encode raft message")
    }

    /// The raft-rs message type, for traces.
    #[cfg(test)]
    pub(crate) fn msg_type(&self) -> raft::prelude::MessageType {
        self.msg.get_msg_type()
    }
}

/// A committed log entry, to apply in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Committed {
    /// Log index.
    pub index: u64,
    /// Term the entry was proposed in.
    pub term: u64,
    /// The proposal's bytes; empty for the no-op entry a new leader appends (etcd promotes
    /// its lessor when the leader applies it).
    pub data: Vec<u8>,
}

/// A ReadIndex answer: once the node has applied `index`, a read with context `ctx` is
/// linearizable (or lease-based, per `read`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadState {
    /// The commit index at the time the leader confirmed the read.
    pub index: u64,
    /// The context given to [`RaftCore::read_index`].
    pub ctx: Vec<u8>,
}

/// Leader or role changed (Raft's soft state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SoftState {
    /// The leader this node believes in, 0 for none.
    pub leader_id: u64,
    /// This node's role.
    pub role: Role,
}

/// What [`RaftCore::process_ready`] hands back, in the order to act on it: the writes are
/// already on disk (and synced with `fsync = always`), so send the messages, apply the
/// committed entries, then answer the read states whose index has been applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Output {
    /// Messages to send, in order.
    pub messages: Vec<Outgoing>,
    /// Newly committed entries, in log order.
    pub committed: Vec<Committed>,
    /// ReadIndex answers.
    pub read_states: Vec<ReadState>,
    /// The latest soft state, if it changed.
    pub soft_state: Option<SoftState>,
    /// An fsync happened.
    pub synced: bool,
}

impl Output {}

/// What [`RaftCore::process_ready_async`] hands back: `now` can be acted on at once (its
/// messages sent, its committed entries applied: raft-rs hands out only entries this node
/// has persisted); `after_sync` are the messages that must wait until this node's log is
/// on disk (acknowledgements of appends, votes), to send once Ready `persist` is
/// confirmed with [`RaftCore::on_persisted`].
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AsyncOutput {
    /// What needs no fsync first.
    pub now: Output,
    /// What waits for this node's fsync.
    pub after_sync: Vec<Outgoing>,
    /// The number of the last Ready handed out, to confirm once its writes are durable.
    pub persist: Option<u64>,
}

/// Why a proposal was refused at once (a proposal that was accepted can still be lost).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProposeError {
    /// raft-rs dropped it: no known leader, or a leader transfer is under way.
    Dropped,
    /// Any other raft-rs error.
    Raft(String),
}

impl fmt::Display for ProposeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProposeError::Dropped => write!(f, "proposal dropped (no leader)"),
            ProposeError::Raft(e) => write!(f, "raft: {e}"),
        }
    }
}

impl std::error::Error for ProposeError {}

/// Counters, for tests and traces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CoreStats {
    /// Election timeouts drawn from the seeded RNG.
    pub timeout_draws: u64,
    /// Resets of the randomized timeout detected only because its value changed while
    /// `(term, role)` did not: must stay 0 (see the module docs).
    pub unexplained_resets: u64,
    /// Readies processed.
    pub readies: u64,
    /// Entries recovered from disk at start.
    pub recovered_entries: u64,
    /// Bytes of a torn or corrupt WAL tail dropped at start.
    pub recovered_dropped_bytes: u64,
}

/// One node's Raft state machine over its disk.
pub(crate) struct RaftCore {
    raw: RawNode<MemStorage>,
    wal: Wal,
    rng: ChaCha8Rng,
    min_timeout: usize,
    max_timeout: usize,
    timeout: usize,
    seen: (u64, StateRole),
    stats: CoreStats,
}

impl fmt::Debug for RaftCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RaftCore")
            .field("id", &self.id())
            .field("role", &self.role())
            .field("term", &self.term())
            .field("leader_id", &self.leader_id())
            .field("commit", &self.commit_index())
            .field("last_index", &self.last_index())
            .finish()
    }
}

/// The raft-rs configuration for node `id` (voters are `1..=params.nodes`).
pub(crate) fn raft_config(id: u64, params: &RaftConfig) -> Config {
    let mut c = Config::new(id);
    c.election_tick = params.election_tick as usize;
    c.heartbeat_tick = params.heartbeat_tick as usize;
    c.min_election_tick = params.election_tick as usize;
    c.max_election_tick = 2 * params.election_tick as usize;
    c.check_quorum = params.check_quorum;
    c.pre_vote = params.pre_vote;
    c.read_only_option = match params.read {
        ReadMode::Lease => ReadOnlyOption::LeaseBased,
        ReadMode::ReadIndex | ReadMode::Local => ReadOnlyOption::Safe,
    };
    c.applied = 0;
    c.max_size_per_msg = params.max_size_per_msg;
    c.max_inflight_msgs = params.max_inflight_msgs;
    c
}

impl RaftConfig {
    /// Whether raft-rs accepts this configuration (what [`RaftCore::new`] checks first).
    #[cfg(test)]
    pub(crate) fn validate(&self) -> Result<(), raft::Error> {
        raft_config(1, self).validate()
    }
}

impl RaftCore {
    /// Start node `id` (1-based) from whatever its disk holds: a fresh node on an empty
    /// disk, a restarted one otherwise. `seed` seeds the election-timeout RNG (the node
    /// context's `rand_u64()`; draw a new one at every start).
    pub(crate) fn new(
        id: u64,
        params: &RaftConfig,
        disk: &mut Disk,
        seed: u64,
    ) -> Result<RaftCore, raft::Error> {
        let recovered = storage::recover(disk);
        let store = storage::mem_storage(&recovered, u64::from(params.nodes));
        let config = raft_config(id, params);
        config.validate()?;
        let logger = slog::Logger::root(slog::Discard, slog::o!());
        let raw = RawNode::new(&config, store, &logger)?;
        let seen = (raw.raft.term, raw.raft.state);
        let mut core = RaftCore {
            raw,
            wal: Wal::new(params.fsync),
            rng: ChaCha8Rng::seed_from_u64(seed),
            min_timeout: config.min_election_tick(),
            max_timeout: config.max_election_tick(),
            timeout: 0,
            seen,
            stats: CoreStats {
                recovered_entries: recovered.entries.len() as u64,
                recovered_dropped_bytes: recovered.dropped_bytes as u64,
                ..CoreStats::default()
            },
        };
        core.draw_timeout();
        Ok(core)
    }

    fn draw_timeout(&mut self) {
        let t = self.rng.gen_range(self.min_timeout..self.max_timeout);
        self.raw.raft.set_randomized_election_timeout(t);
        self.timeout = t;
        self.stats.timeout_draws += 1;
    }

    /// Replace a timeout raft-rs drew from `thread_rng` by one from our RNG (module docs).
    fn fix_timeout(&mut self) {
        let now = (self.raw.raft.term, self.raw.raft.state);
        let value_changed = self.raw.raft.randomized_election_timeout() != self.timeout;
        if now != self.seen || value_changed {
            if now == self.seen {
                self.stats.unexplained_resets += 1;
            }
            self.seen = now;
            self.draw_timeout();
        }
    }

    /// Advance Raft's logical clock by one tick. Returns whether a ready may be pending.
    pub(crate) fn tick(&mut self) -> bool {
        let r = self.raw.tick();
        self.fix_timeout();
        r
    }

    /// Step a message received from a peer.
    ///
    /// A heartbeat whose commit index is past this node's last entry (the leader believes
    /// this node holds entries it lost: only after a crash with `fsync = none`) makes
    /// raft-rs panic, "to_commit N is out of range [last_index M]", as etcd's raft does
    /// ("Was the raft log corrupted, truncated, or lost?"). That panic is the node's crash
    /// (the harness records it and a supervisor restarts the node), so the node
    /// crash-loops as a real etcd member does until the leader's next append repairs it.
    pub(crate) fn step(&mut self, msg: Message) -> Result<(), raft::Error> {
        let r = self.raw.step(msg);
        self.fix_timeout();
        r
    }

    /// Decode protobuf bytes from the wire and step them.
    pub(crate) fn step_bytes(&mut self, bytes: &[u8]) -> Result<(), raft::Error> {
        let msg = Message::parse_from_bytes(bytes).map_err(raft::Error::CodecError)?;
        self.step(msg)
    }

    /// Propose `data` as a log entry. `Ok` means raft-rs took it (appended as leader, or
    /// forwarded to the leader it knows): it may still never commit.
    pub(crate) fn propose(&mut self, data: Vec<u8>) -> Result<(), ProposeError> {
        debug_assert!(!data.is_empty(), "empty data is the leader's no-op");
        let r = self.raw.propose(Vec::new(), data);
        self.fix_timeout();
        match r {
            Ok(()) => Ok(()),
            Err(raft::Error::ProposalDropped) => Err(ProposeError::Dropped),
            Err(e) => Err(ProposeError::Raft(e.to_string())),
        }
    }

    /// Ask for a read index with a caller-chosen unique context. The answer, if any, comes
    /// back as a [`ReadState`] with the same context from a later `process_ready`.
    pub(crate) fn read_index(&mut self, ctx: Vec<u8>) {
        self.raw.read_index(ctx);
        self.fix_timeout();
    }

    /// Whether [`RaftCore::process_ready`] has anything to do.
    pub(crate) fn has_ready(&self) -> bool {
        self.raw.has_ready()
    }

    /// Persist what Raft asks to persist, then return what to send and apply. Drains
    /// every pending ready.
    pub(crate) fn process_ready(&mut self, disk: &mut Disk) -> Output {
        let mut out = Output::default();
        while self.raw.has_ready() {
            self.stats.readies += 1;
            let mut rd = self.raw.ready();
            if let Some(ss) = soft_state(&rd) {
                out.soft_state = Some(ss);
            }
            out.synced |= self.save(&rd, disk);
            push_messages(&mut out, rd.take_messages());
            push_messages(&mut out, rd.take_persisted_messages());
            push_committed(&mut out, rd.take_committed_entries());
            out.read_states
                .extend(rd.take_read_states().into_iter().map(|r| ReadState {
                    index: r.index,
                    ctx: r.request_ctx,
                }));
            let mut light = self.raw.advance(rd);
            if let Some(commit) = light.commit_index() {
                let hs = {
                    let mut store = self.raw.mut_store().wl();
                    store.mut_hard_state().commit = commit;
                    store.hard_state().clone()
                };
                // Unsynced: a lost commit index is relearned from the leader.
                self.wal.save_hard_state(disk, &hs);
            }
            push_messages(&mut out, light.take_messages());
            push_committed(&mut out, light.take_committed_entries());
            self.raw.advance_apply();
        }
        self.fix_timeout();
        out
    }

    /// Like [`RaftCore::process_ready`], for a driver that persists asynchronously
    /// (ZooKeeper's servers: a slow log holds only this server's acknowledgements, while
    /// it goes on heartbeating, forwarding and applying). The writes are handed to the
    /// disk (an fsync started); raft-rs counts them persisted only at
    /// [`RaftCore::on_persisted`], so a leader whose own log lags commits with its
    /// followers' copies alone.
    pub(crate) fn process_ready_async(&mut self, disk: &mut Disk) -> AsyncOutput {
        let mut out = AsyncOutput::default();
        while self.raw.has_ready() {
            self.stats.readies += 1;
            let mut rd = self.raw.ready();
            if let Some(ss) = soft_state(&rd) {
                out.now.soft_state = Some(ss);
            }
            out.now.synced |= self.save(&rd, disk);
            push_messages(&mut out.now, rd.take_messages());
            out.after_sync.extend(
                rd.take_persisted_messages()
                    .into_iter()
                    .map(|msg| Outgoing { to: msg.to, msg }),
            );
            push_committed(&mut out.now, rd.take_committed_entries());
            out.now
                .read_states
                .extend(rd.take_read_states().into_iter().map(|r| ReadState {
                    index: r.index,
                    ctx: r.request_ctx,
                }));
            out.persist = Some(rd.number());
            self.raw.advance_append_async(rd);
            self.raw.advance_apply();
        }
        self.fix_timeout();
        out
    }

    /// The writes of every Ready up to number `ready` are durable (see
    /// [`RaftCore::process_ready_async`]); what that allows comes with the next Ready.
    pub(crate) fn on_persisted(&mut self, ready: u64) {
        self.raw.on_persist_ready(ready);
    }

    /// Write a Ready's hard state and entries to the WAL and raft-rs's storage, and
    /// start their fsync; true when one was started.
    fn save(&mut self, rd: &raft::Ready, disk: &mut Disk) -> bool {
        if let Some(hs) = rd.hs() {
            self.wal.save_hard_state(disk, hs);
            self.raw.mut_store().wl().set_hardstate(hs.clone());
        }
        if !rd.entries().is_empty() {
            self.wal.append_entries(disk, rd.entries());
            self.raw
                .mut_store()
                .wl()
                .append(rd.entries())
                .expect("append to MemStorage");
        }
        self.wal.sync(disk)
    }

    /// This node's Raft id.
    pub(crate) fn id(&self) -> u64 {
        self.raw.raft.id
    }

    /// Current role.
    pub(crate) fn role(&self) -> Role {
        self.raw.raft.state.into()
    }

    /// Whether this node believes it is the leader.
    pub(crate) fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    /// Current term.
    pub(crate) fn term(&self) -> u64 {
        self.raw.raft.term
    }

    /// The leader this node believes in, 0 for none.
    pub(crate) fn leader_id(&self) -> u64 {
        self.raw.raft.leader_id
    }

    /// Highest index known committed.
    pub(crate) fn commit_index(&self) -> u64 {
        self.raw.raft.raft_log.committed
    }

    /// Index of the last log entry.
    pub(crate) fn last_index(&self) -> u64 {
        self.raw.raft.raft_log.last_index()
    }

    /// The current randomized election timeout, in ticks.
    #[cfg(test)]
    pub(crate) fn election_timeout_ticks(&self) -> usize {
        self.raw.raft.randomized_election_timeout()
    }

    /// Counters.
    #[cfg(test)]
    pub(crate) fn stats(&self) -> &CoreStats {
        &self.stats
    }

    /// The persisted log `[1, last]` (what has gone through `process_ready`).
    #[cfg(test)]
    pub(crate) fn log(&self) -> Vec<Entry> {
        let store = self.raw.store();
        let last = store.last_index().expect("last index");
        if last == 0 {
            return Vec::new();
        }
        store
            .entries(1, last + 1, None, raft::GetEntriesContext::empty(false))
            .expect("entries")
    }
}

/// A Ready's new soft state, if any (and no snapshot: the log is never compacted).
fn soft_state(rd: &raft::Ready) -> Option<SoftState> {
    assert!(
        rd.snapshot().get_metadata().index == 0,
        "no compaction, so no snapshot is ever sent"
    );
    rd.ss().map(|ss| SoftState {
        leader_id: ss.leader_id,
        role: ss.raft_state.into(),
    })
}

fn push_messages(out: &mut Output, msgs: Vec<Message>) {
    out.messages
        .extend(msgs.into_iter().map(|msg| Outgoing { to: msg.to, msg }));
}

fn push_committed(out: &mut Output, entries: Vec<Entry>) {
    for e in entries {
        // Membership is fixed (`nodes`); no conf change is ever proposed.
        assert_eq!(e.get_entry_type(), EntryType::EntryNormal);
        out.committed.push(Committed {
            index: e.index,
            term: e.term,
            data: e.data.to_vec(),
        });
    }
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
