//! An ensemble member's write path: the shared [`RaftCore`] (`crate::consensus`) standing in for ZAB
//! (see [`super::server`]'s module docs for the protocol), and the leader-side session
//! tracker that belongs to one Raft term.
//!
//! This is the only file of the zk family that names the Raft core, its driver and its
//! parameters: everything else sees plain values ([`Ready`], [`PeerMsg`]).

use super::db::Txn;
use super::params::ZkParams;
use super::proto::PeerMsg;
use super::session::SessionTracker;
use super::tree::SessionId;
use crate::consensus::core::{AsyncOutput, Outgoing, ProposeError, RaftCore, Role};
pub(super) use crate::consensus::driver::{drive, RaftHost};
#[cfg(test)]
pub(super) use crate::consensus::testkit::Cluster;
use crate::consensus::{Fsync, RaftConfig as RaftParams, ReadMode};
use crate::sim::Disk;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The Raft parameters an ensemble runs with: Raft ticks every `tick_ms / 5` of the
/// node's local clock (election timeout 10 to 20 Raft ticks, heartbeats every 2), so a
/// leader fails over within about half a session timeout.
pub(crate) fn raft_params(p: &ZkParams) -> RaftParams {
    RaftParams {
        nodes: p.servers,
        tick_ms: (p.tick_ms / 5).max(1),
        election_tick: 10,
        heartbeat_tick: 2,
        check_quorum: true,
        pre_vote: true,
        read: ReadMode::ReadIndex,
        fsync: Fsync::Always,
        ..RaftParams::default()
    }
}

/// A Raft entry's payload: a transaction and the proposer's id for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Proposal {
    /// The proposer's id for it (a random draw), to answer its client.
    pub(super) id: u64,
    /// The transaction.
    pub(super) txn: Txn,
}

impl Proposal {
    /// The entry's bytes.
    pub(super) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a proposal serialises")
    }

    /// The proposal in a committed entry; `None` for a new leader's no-op entry (or bytes
    /// that are no proposal).
    pub(super) fn decode(data: &[u8]) -> Option<Proposal> {
        (!data.is_empty())
            .then(|| serde_json::from_slice(data).ok())
            .flatten()
    }
}

/// The leader-side session tracker and the term (ZooKeeper's epoch) it was built in.
pub(super) struct Leading {
    /// The Raft term the tracker was built in.
    pub(super) epoch: u64,
    /// Expiry decisions of this term.
    pub(super) tracker: SessionTracker,
}

/// The leader changed (Raft's soft state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LeaderChange {
    /// The leader this server believes in (index + 1), 0 for none.
    pub(super) leader: u64,
    /// Whether this server's Raft core is that leader.
    pub(super) leading: bool,
}

/// One Raft Ready in the zk family's terms, in the order to act on it.
#[derive(Debug, Default)]
pub(super) struct Ready {
    /// The leadership, if it changed.
    pub(super) leader: Option<LeaderChange>,
    /// Committed entries (index, bytes), in log order.
    pub(super) committed: Vec<(u64, Vec<u8>)>,
    /// ReadIndex answers: (index, the read's id).
    pub(super) reads: Vec<(u64, u64)>,
    /// Messages to send at once, to peer index.
    pub(super) messages: Vec<(usize, PeerMsg)>,
    /// The number of this Ready, to confirm once its writes are on disk.
    pub(super) persist: Option<u64>,
}

/// The Raft side of an ensemble server.
pub(super) struct Ensemble {
    raft: RaftCore,
    /// The leader as of the last Ready handled (index + 1; 0: none).
    pub(super) lead: u64,
    /// Sessions this server's clients touched since the last report to the leader.
    pub(super) touched: BTreeSet<SessionId>,
    /// The session tracker while this server leads the term it was built in.
    pub(super) leading: Option<Leading>,
    /// This server's proposals whose requests wait for them to be applied here.
    pub(super) proposed: BTreeSet<u64>,
    /// ReadIndex requests by id, before Raft answered them.
    pub(super) reads: BTreeSet<u64>,
    /// ReadIndex answers (index, id) waiting for the apply index.
    pub(super) pending_reads: Vec<(u64, u64)>,
    /// Readies whose writes are not on disk yet, with the messages that wait for them.
    unsynced: VecDeque<(u64, Vec<(usize, PeerMsg)>)>,
}

/// To whom a Raft message goes, as a peer message.
fn to_peer(m: Outgoing) -> (usize, PeerMsg) {
    ((m.to - 1) as usize, PeerMsg::Raft(m.encode()))
}

impl Ensemble {
    /// Member `me` of the ensemble, from whatever its disk holds.
    pub(super) fn new(me: usize, params: &ZkParams, disk: &mut Disk, seed: u64) -> Ensemble {
        let raft = RaftCore::new(me as u64 + 1, &raft_params(params), disk, seed)
            .expect("valid raft configuration");
        Ensemble {
            raft,
            lead: 0,
            touched: BTreeSet::new(),
            leading: None,
            proposed: BTreeSet::new(),
            reads: BTreeSet::new(),
            pending_reads: Vec::new(),
            unsynced: VecDeque::new(),
        }
    }

    /// The current Raft term.
    pub(super) fn term(&self) -> u64 {
        self.raft.term()
    }

    /// Whether Raft has a Ready to handle.
    pub(super) fn has_ready(&self) -> bool {
        self.raft.has_ready()
    }

    /// One Raft tick.
    pub(super) fn tick(&mut self) {
        self.raft.tick();
    }

    /// A Raft message from a peer (a malformed one changes nothing).
    pub(super) fn step(&mut self, bytes: &[u8]) {
        let _ = self.raft.step_bytes(bytes);
    }

    /// Propose a client's transaction; false if Raft dropped it (no leader known).
    pub(super) fn propose(&mut self, p: &Proposal) -> bool {
        match self.raft.propose(p.encode()) {
            Ok(()) => true,
            Err(ProposeError::Dropped) | Err(ProposeError::Raft(_)) => false,
        }
    }

    /// Propose a transaction the server decided on its own (a session close, a container
    /// delete): only while its Raft core is the leader of the term its session tracker
    /// was built in. Returns whether Raft took it.
    ///
    /// raft-rs has a follower forward a proposal to the leader it knows, which appends
    /// it in *its* term. So a deposed leader — its core stepped a message of the new
    /// leader, its server has not yet handled the Ready that drops the tracker — would
    /// have its expiry decisions committed by a leader that considers those sessions
    /// live. ZooKeeper cannot do this: a proposal carries its leader's epoch and
    /// learners reject an older one, and each new leader builds its session tracker
    /// anew. Here the tracker is rebuilt whenever the node leads a term it was not built
    /// in, and a server-originated proposal is appended only by the leader of that term,
    /// so its entry carries the tracker's epoch as its Raft term: Raft never changes an
    /// entry's term, and an entry of a deposed term never commits. Checking the role
    /// alone is not enough: a node that lost and regained leadership between two Readies
    /// would act on a tracker that missed the touches the other leader saw in between.
    pub(super) fn propose_own(&mut self, p: &Proposal) -> bool {
        let epoch = self.leading.as_ref().map(|l| l.epoch);
        propose_own(&mut self.raft, epoch, p.encode())
    }

    /// Start a ReadIndex round with id `rid`.
    pub(super) fn read_index(&mut self, rid: u64) {
        self.raft.read_index(rid.to_be_bytes().to_vec());
        self.reads.insert(rid);
    }

    /// Take the next Ready: what it asks now, and what waits for the disk (kept until
    /// [`Ensemble::persisted`]).
    pub(super) fn ready(&mut self, disk: &mut Disk) -> Ready {
        let AsyncOutput {
            now: out,
            after_sync,
            persist,
        } = self.raft.process_ready_async(disk);
        if let Some(ready) = persist {
            let acks = after_sync.into_iter().map(to_peer).collect();
            self.unsynced.push_back((ready, acks));
        }
        Ready {
            leader: out.soft_state.map(|ss| LeaderChange {
                leader: ss.leader_id,
                leading: ss.role == Role::Leader,
            }),
            committed: out
                .committed
                .into_iter()
                .map(|c| (c.index, c.data))
                .collect(),
            reads: out
                .read_states
                .into_iter()
                .filter_map(|rs| {
                    let id = rs.ctx.get(..8)?;
                    Some((
                        rs.index,
                        u64::from_be_bytes(id.try_into().expect("8 bytes")),
                    ))
                })
                .collect(),
            messages: out.messages.into_iter().map(to_peer).collect(),
            persist,
        }
    }

    /// Readies up to number `ready` are on disk: their acknowledgements, in order (Raft
    /// is told).
    pub(super) fn persisted(&mut self, ready: u64) -> Vec<(usize, PeerMsg)> {
        let mut acks = Vec::new();
        while self.unsynced.front().is_some_and(|(n, _)| *n <= ready) {
            acks.extend(self.unsynced.pop_front().expect("checked").1);
        }
        self.raft.on_persisted(ready);
        acks
    }

    /// The ReadIndex answers whose index is applied (`applied`), in arrival order.
    pub(super) fn reads_done(&mut self, answers: Vec<(u64, u64)>, applied: u64) -> Vec<u64> {
        for (index, rid) in answers {
            if self.reads.remove(&rid) {
                self.pending_reads.push((index, rid));
            }
        }
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_reads)
            .into_iter()
            .partition(|(index, _)| *index <= applied);
        self.pending_reads = waiting;
        ready.into_iter().map(|(_, rid)| rid).collect()
    }

    /// Keep the leader-side session tracker in step with the Raft core: a leader of a
    /// term its tracker was not built in starts every session over with a full timeout
    /// (ZooKeeper's new leader loading its database); a non-leader has none.
    pub(super) fn track_epoch(
        &mut self,
        sessions: &BTreeMap<SessionId, u64>,
        tick_ms: u64,
        now: i64,
    ) {
        if !self.raft.is_leader() {
            self.leading = None;
            return;
        }
        let term = self.raft.term();
        if self.leading.as_ref().is_some_and(|l| l.epoch == term) {
            return;
        }
        tracing::debug!(term, "leading: every session starts over");
        let mut tracker = SessionTracker::new(tick_ms);
        for (&id, &timeout) in sessions {
            tracker.add(id, timeout, now);
        }
        self.leading = Some(Leading {
            epoch: term,
            tracker,
        });
    }
}

/// [`Ensemble::propose_own`] on a bare Raft core whose session tracker was built in
/// `epoch`.
fn propose_own(core: &mut RaftCore, epoch: Option<u64>, data: Vec<u8>) -> bool {
    if !core.is_leader() || epoch != Some(core.term()) {
        tracing::debug!(
            term = core.term(),
            ?epoch,
            "not leading the tracker's epoch: not proposing"
        );
        return false;
    }
    // Dropped (it should not be, as leader): the expirer proposes it again.
    core.propose(data).is_ok()
}

#[cfg(test)]
#[path = "ensemble_tests.rs"]
mod tests;
