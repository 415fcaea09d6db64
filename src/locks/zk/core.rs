//! The pure core of a ZooKeeper server: its state — the database, the client
//! connections, the write path with its session tracking — behind inputs that return
//! [`Effect`]s, in the order the node must perform them (openraft's engine, raft-rs's
//! `Ready`). Nothing here awaits, sleeps, draws a random number or touches the network:
//! the node ([`super::node`]) feeds it requests, ticks, peer messages and Raft Readies,
//! and performs what comes back — watch notifications and connection closes on its
//! client connections, history records, answers to the requests waiting on it, messages
//! to its peers. The order of the effects is the order in which ZooKeeper's server acts
//! (watches before the reply that reflects a later state; a session's connections
//! closed once its close is applied), and the simulation's histories depend on it.
//!
//! The write path is one of two ([`WriteLog`]): a standalone server's transaction log,
//! whose expiry decisions are always its own, or an ensemble member's Raft log, where
//! only the leader of a term decides expiry (see [`super::server`]).

use super::db::{Applied, Op, Txn, TxnOk, ZkDb};
use super::ensemble::{Ensemble, LeaderChange, Proposal};
use super::mutex::layout::{lost_owners, other_ephemerals, LostOwner};
use super::proto::PeerMsg;
use super::session::SessionTracker;
use super::tree::{SessionId, Stat, WatchKind, WatchedEvent, ZkError, Zxid};
use crate::sim::Disk;
use std::collections::BTreeMap;

/// A client connection's id on its server (also its watcher id in the tree).
pub(super) type ConnId = u64;

/// A write's result, as its client is answered.
pub(super) type WriteResult = Result<TxnOk, ZkError>;

/// Something the node does for the core, in order.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Effect {
    /// Send a watch notification on connection `conn`.
    Watch {
        /// The connection.
        conn: ConnId,
        /// What fired.
        event: WatchedEvent,
    },
    /// Close connection `conn` (its session closed, or the server lost its leader).
    Close {
        /// The connection.
        conn: ConnId,
    },
    /// Record a history event.
    Record(Record),
    /// This server's proposal `id` is applied here: answer the request waiting for it.
    Answer {
        /// The proposal's id.
        id: u64,
        /// Its zxid.
        zxid: Zxid,
        /// Its result.
        result: WriteResult,
    },
    /// ReadIndex round `id` is done: this server applied everything committed before it.
    ReadDone {
        /// The round's id.
        id: u64,
    },
    /// Send a message to peer `to` (server index).
    ToPeer {
        /// The peer's index.
        to: usize,
        /// The message.
        msg: PeerMsg,
    },
    /// Raft Ready number `ready` has writes to make durable: once the disk has them,
    /// hand the number back to [`ZkCore::persisted`].
    Persist {
        /// The Ready's number.
        ready: u64,
    },
}

/// A history event a server records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Record {
    /// This server became the leader of Raft term `term`.
    Leader {
        /// The term.
        term: u64,
    },
    /// A session close (transaction `zxid`) deleted the node that owned a lock.
    Expire {
        /// The lock and its owner node.
        owner: LostOwner,
        /// The close's zxid.
        zxid: Zxid,
        /// Its client asked for the close (`closeSession`): not an expiry. Never in
        /// simulation, whose clients do not close their sessions.
        by_client: bool,
    },
    /// A session close (transaction `zxid`) deleted an ephemeral node that owns no lock
    /// in the recipe's layout ([`other_ephemerals`]). Served, it is an `expire` without a
    /// lock; a simulation does not record it (the workload's only such nodes are waiters,
    /// whose loss no check reads).
    Deleted {
        /// The node's path.
        path: String,
        /// Its session.
        session: SessionId,
        /// The close's zxid.
        zxid: Zxid,
        /// Its client asked for the close, as in [`Record::Expire`].
        by_client: bool,
    },
}

/// What a session close deletes, read before it does: the lock owners, then the other
/// ephemeral nodes.
#[derive(Debug, Default)]
struct Closed {
    owners: Vec<LostOwner>,
    others: Vec<(String, SessionId)>,
    /// A client's `closeSession` (its server is the transaction's owner), not the
    /// expirer's (owner 0).
    by_client: bool,
}

/// How writes reach the total order, and who decides session expiry.
pub(super) enum WriteLog {
    /// `servers = 1`: the transaction log on this node's disk; the server's own tracker
    /// decides every expiry.
    Standalone {
        /// Every live session's expiry bucket.
        tracker: SessionTracker,
    },
    /// A member of an ensemble: Raft stands in for ZAB; the leader of a term decides
    /// expiry.
    Ensemble(Box<Ensemble>),
}

impl WriteLog {
    /// The session tracker that decides expiry here now, if this server decides it.
    fn tracker(&mut self) -> Option<&mut SessionTracker> {
        match self {
            WriteLog::Standalone { tracker } => Some(tracker),
            WriteLog::Ensemble(e) => e.leading.as_mut().map(|l| &mut l.tracker),
        }
    }
}

/// A server's state and its rules (see the module docs).
pub(super) struct ZkCore {
    /// This server's index (`zk-N`).
    me: usize,
    /// ZooKeeper's tick, ms: the session trackers' bucket width.
    tick_ms: u64,
    db: ZkDb,
    /// Open client connections and their sessions.
    conns: BTreeMap<ConnId, SessionId>,
    next_conn: ConnId,
    log: WriteLog,
}

impl ZkCore {
    fn new(me: usize, tick_ms: u64, log: WriteLog) -> ZkCore {
        ZkCore {
            me,
            tick_ms,
            db: ZkDb::new(),
            conns: BTreeMap::new(),
            next_conn: 1,
            log,
        }
    }

    /// A standalone server that replays its transaction log (`logged`: the zxid of each
    /// is its position plus one) and, like ZooKeeper loading its database, starts every
    /// live session over with a full timeout at `now`. The effects are the replay's
    /// `expire` records.
    pub(super) fn standalone(
        me: usize,
        tick_ms: u64,
        logged: &[Txn],
        now: i64,
    ) -> (ZkCore, Vec<Effect>) {
        let tracker = SessionTracker::new(tick_ms);
        let mut core = ZkCore::new(me, tick_ms, WriteLog::Standalone { tracker });
        let mut out = Vec::new();
        for (i, txn) in logged.iter().enumerate() {
            let (applied, lost) = core.apply(i as u64 + 1, txn);
            out.extend(expire_records(lost, applied.zxid));
        }
        let sessions: Vec<(SessionId, u64)> =
            core.db.sessions().iter().map(|(&s, &t)| (s, t)).collect();
        if let Some(t) = core.log.tracker() {
            for (id, timeout) in sessions {
                t.add(id, timeout, now);
            }
        }
        (core, out)
    }

    /// A member of an ensemble, its Raft side recovered from its disk (its state comes
    /// back as Raft hands out the committed entries again).
    pub(super) fn ensemble(me: usize, tick_ms: u64, raft: Ensemble) -> ZkCore {
        ZkCore::new(me, tick_ms, WriteLog::Ensemble(Box::new(raft)))
    }

    /// This server as a Raft id (index + 1).
    fn raft_id(&self) -> u64 {
        self.me as u64 + 1
    }

    /// The database.
    #[cfg(test)]
    pub(super) fn db(&self) -> &ZkDb {
        &self.db
    }

    /// The last applied zxid.
    pub(super) fn last_zxid(&self) -> Zxid {
        self.db.last_zxid()
    }

    /// The negotiated timeout of a live session, ms.
    pub(super) fn session_timeout(&self, session: SessionId) -> Option<u64> {
        self.db.sessions().get(&session).copied()
    }

    /// The server (index + 1) that owns a live session.
    pub(super) fn owner(&self, session: SessionId) -> Option<u64> {
        self.db.owner(session)
    }

    /// Open connections and their sessions.
    #[cfg(test)]
    pub(super) fn conns(&self) -> &BTreeMap<ConnId, SessionId> {
        &self.conns
    }

    /// Whether this server leads (a standalone server always does), as of the last
    /// Ready handled.
    pub(super) fn is_leader(&self) -> bool {
        match &self.log {
            WriteLog::Standalone { .. } => true,
            WriteLog::Ensemble(e) => e.lead == self.raft_id(),
        }
    }

    /// A member of an ensemble that does not lead it.
    pub(super) fn is_follower(&self) -> bool {
        matches!(self.log, WriteLog::Ensemble(_)) && !self.is_leader()
    }

    /// Whether the server serves clients (an ensemble member needs a known leader).
    pub(super) fn serving(&self) -> bool {
        !matches!(&self.log, WriteLog::Ensemble(e) if e.lead == 0)
    }

    /// Whether the session tracker here has `session` live (not closing), if this
    /// server tracks expiry.
    #[cfg(test)]
    pub(super) fn tracks(&mut self, session: SessionId) -> Option<bool> {
        self.log.tracker().map(|t| t.is_live(session))
    }

    /// The empty containers that once had children (ZooKeeper's `ContainerManager`).
    pub(super) fn container_candidates(&self) -> Vec<String> {
        self.db.tree.container_candidates()
    }

    /// A client connection of `session` opens: its id.
    pub(super) fn open_conn(&mut self, session: SessionId) -> ConnId {
        let cid = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(cid, session);
        cid
    }

    /// Connection `cid` ended: it and its watches are gone.
    pub(super) fn close_conn(&mut self, cid: ConnId) {
        self.conns.remove(&cid);
        self.db.tree.remove_watcher(cid);
    }

    /// The server heard from `session` at `now` (ZooKeeper's `submitRequest` touching
    /// it). False if the session is not live. A follower notes it for its next report
    /// to the leader.
    pub(super) fn touch(&mut self, session: SessionId, now: i64) -> bool {
        let leader = self.is_leader();
        if !self.db.has_session(session) {
            return false;
        }
        if let WriteLog::Ensemble(e) = &mut self.log {
            if !leader {
                e.touched.insert(session);
                return true;
            }
        }
        match self.log.tracker() {
            Some(t) => t.touch(session, now),
            None => true,
        }
    }

    /// `exists`, setting connection `cid`'s watch if asked.
    pub(super) fn exists(
        &mut self,
        cid: ConnId,
        path: &str,
        watch: bool,
    ) -> Result<Option<Stat>, ZkError> {
        self.db.tree.exists(path, watch.then_some(cid))
    }

    /// `getData`, setting connection `cid`'s watch if asked.
    pub(super) fn get_data(
        &mut self,
        cid: ConnId,
        path: &str,
        watch: bool,
    ) -> Result<(Vec<u8>, Stat), ZkError> {
        self.db.tree.get_data(path, watch.then_some(cid))
    }

    /// `getChildren`, setting connection `cid`'s watch if asked.
    pub(super) fn get_children(
        &mut self,
        cid: ConnId,
        path: &str,
        watch: bool,
    ) -> Result<(Vec<String>, Stat), ZkError> {
        self.db.tree.get_children(path, watch.then_some(cid))
    }

    /// `checkWatches`: `NoWatcher` unless `path` has a watch of `kind` (nothing changes
    /// either way). As ZooKeeper 3.8.0 does, whoever set it, not only this connection;
    /// and a path with no `/` at all is a `MarshallingError` (its `WatchManager` cuts
    /// the path at its last `/` and fails).
    pub(super) fn check_watches(&self, path: &str, kind: WatchKind) -> Result<(), ZkError> {
        if !path.is_empty() && !path.contains('/') {
            return Err(ZkError::MarshallingError);
        }
        match self.db.tree.is_watched(path, kind) {
            true => Ok(()),
            false => Err(ZkError::NoWatcher),
        }
    }

    /// `removeWatches`: remove connection `cid`'s watches of `kind` on `path`;
    /// `NoWatcher` if it had none.
    pub(super) fn remove_watches(
        &mut self,
        cid: ConnId,
        path: &str,
        kind: WatchKind,
    ) -> Result<(), ZkError> {
        match self.db.tree.remove_watch(path, kind, cid) {
            true => Ok(()),
            false => Err(ZkError::NoWatcher),
        }
    }

    /// `setWatches` after a reconnect: the watches of connection `cid` on the `data`,
    /// `exist` and `child` paths, fired at once for what changed since the client's
    /// `relative_zxid`.
    pub(super) fn set_watches(
        &mut self,
        cid: ConnId,
        relative_zxid: Zxid,
        paths: [&[String]; 3],
    ) -> Vec<Effect> {
        let last = self.db.last_zxid();
        let mut fired = Vec::new();
        self.db
            .tree
            .set_watches(relative_zxid, paths, cid, last, &mut fired);
        let mut out = Vec::new();
        if self.conns.contains_key(&cid) {
            for (_, event) in fired {
                out.push(Effect::Watch { conn: cid, event });
            }
        }
        out
    }

    /// Apply `txn` as `zxid`, naming the lock owners a session close deletes (read
    /// before the close deletes them).
    fn apply(&mut self, zxid: Zxid, txn: &Txn) -> (Applied, Closed) {
        let closed = match txn.op {
            Op::CloseSession => {
                let owners = lost_owners(&self.db.tree, txn.session);
                let others = other_ephemerals(&self.db.tree, txn.session, &owners)
                    .into_iter()
                    .map(|path| (path, txn.session))
                    .collect();
                Closed {
                    owners,
                    others,
                    by_client: txn.owner != 0,
                }
            }
            _ => Closed::default(),
        };
        let applied = self.db.apply(zxid, txn);
        let lost = match applied.result {
            Ok(TxnOk::SessionClosed) => closed,
            _ => Closed::default(),
        };
        (applied, lost)
    }

    /// Everything a transaction did besides its result: watches out, sessions tracked
    /// or closed (with their connections), lock owners lost recorded.
    fn after_apply(&mut self, txn: &Txn, applied: &Applied, lost: Closed, now: i64) -> Vec<Effect> {
        let mut out = Vec::new();
        for (w, event) in &applied.fired {
            if self.conns.contains_key(w) {
                out.push(Effect::Watch {
                    conn: *w,
                    event: event.clone(),
                });
            }
        }
        match (&txn.op, &applied.result) {
            (Op::CreateSession { timeout_ms }, Ok(_)) => {
                if let Some(t) = self.log.tracker() {
                    t.add(txn.session, *timeout_ms, now);
                }
            }
            (Op::SetOwner, Ok(_)) => {
                // A session that moves here was revalidated with the leader, which
                // touches it then (Leader.revalidateSession), not half a tick later with
                // the follower's report: a partition right after the reconnect must not
                // let it expire early.
                if let Some(t) = self.log.tracker() {
                    t.touch(txn.session, now);
                }
            }
            (Op::CloseSession, Ok(_)) => {
                if let Some(t) = self.log.tracker() {
                    t.remove(txn.session);
                }
                let closed: Vec<ConnId> = self
                    .conns
                    .iter()
                    .filter(|(_, s)| **s == txn.session)
                    .map(|(c, _)| *c)
                    .collect();
                for conn in closed {
                    self.conns.remove(&conn);
                    out.push(Effect::Close { conn });
                }
            }
            _ => {}
        }
        out.extend(expire_records(lost, applied.zxid));
        out
    }

    /// Standalone: `txn` is on disk; apply it as the next zxid at local time `now`.
    /// Returns its zxid and result, and what it did besides.
    pub(super) fn apply_logged(&mut self, txn: &Txn, now: i64) -> (Zxid, WriteResult, Vec<Effect>) {
        let zxid = self.db.last_zxid() + 1;
        let (applied, lost) = self.apply(zxid, txn);
        let out = self.after_apply(txn, &applied, lost, now);
        (zxid, applied.result, out)
    }

    /// Ensemble: apply committed entry `index` (`data`, a [`Proposal`] or a new
    /// leader's empty no-op) and answer its proposer if that is this server.
    pub(super) fn apply_committed(&mut self, index: u64, data: &[u8], now: i64) -> Vec<Effect> {
        let Some(p) = Proposal::decode(data) else {
            self.db.skip(index);
            return Vec::new();
        };
        let (applied, lost) = self.apply(index, &p.txn);
        let mut out = self.after_apply(&p.txn, &applied, lost, now);
        let ours = match &mut self.log {
            WriteLog::Ensemble(e) => e.proposed.remove(&p.id),
            WriteLog::Standalone { .. } => false,
        };
        if ours {
            out.push(Effect::Answer {
                id: p.id,
                zxid: index,
                result: applied.result,
            });
        }
        out
    }

    /// Ensemble: the leader changed. A new leadership of ours is recorded; without a
    /// leader the client connections close (a ZooKeeper follower that loses its leader
    /// stops serving).
    pub(super) fn leader_changed(&mut self, change: LeaderChange) -> Vec<Effect> {
        let me = self.raft_id();
        let WriteLog::Ensemble(e) = &mut self.log else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let was_leader = e.lead == me;
        e.lead = change.leader;
        if change.leading && !was_leader {
            out.push(Effect::Record(Record::Leader { term: e.term() }));
        }
        if e.lead == 0 && !self.conns.is_empty() {
            tracing::debug!("no leader: closing client connections");
            for conn in std::mem::take(&mut self.conns).into_keys() {
                out.push(Effect::Close { conn });
            }
        }
        out
    }

    /// Ensemble: whether Raft has a Ready to handle.
    pub(super) fn has_ready(&self) -> bool {
        matches!(&self.log, WriteLog::Ensemble(e) if e.has_ready())
    }

    /// Ensemble: handle one Raft Ready at local time `now`, as ZooKeeper's servers do
    /// with a log that is slow: the leadership is taken from the Ready at once;
    /// heartbeats, appends and forwarded proposals go out at once; only this server's
    /// acknowledgements (and votes) wait until its log is on disk ([`Effect::Persist`]).
    /// A stalled disk therefore holds a server's share of the quorum, not its part in
    /// the ensemble: a leader keeps leading and commits with its followers' copies, as
    /// Zab's leader does.
    pub(super) fn handle_ready(&mut self, disk: &mut Disk, now: i64) -> Vec<Effect> {
        let WriteLog::Ensemble(e) = &mut self.log else {
            return Vec::new();
        };
        let ready = e.ready(disk);
        let mut out = Vec::new();
        if let Some(change) = ready.leader {
            out.extend(self.leader_changed(change));
        }
        self.track_epoch(now);
        for (index, data) in ready.committed {
            out.extend(self.apply_committed(index, &data, now));
        }
        let applied = self.db.last_zxid();
        if let WriteLog::Ensemble(e) = &mut self.log {
            for id in e.reads_done(ready.reads, applied) {
                out.push(Effect::ReadDone { id });
            }
        }
        for (to, msg) in ready.messages {
            out.push(Effect::ToPeer { to, msg });
        }
        if let Some(ready) = ready.persist {
            out.push(Effect::Persist { ready });
        }
        out
    }

    /// Keep the leader-side session tracker in step with the Raft core (see
    /// [`Ensemble::track_epoch`]).
    fn track_epoch(&mut self, now: i64) {
        if let WriteLog::Ensemble(e) = &mut self.log {
            e.track_epoch(self.db.sessions(), self.tick_ms, now);
        }
    }

    /// Ensemble: Readies up to number `ready` are on disk; their acknowledgements go out.
    pub(super) fn persisted(&mut self, ready: u64) -> Vec<Effect> {
        let WriteLog::Ensemble(e) = &mut self.log else {
            return Vec::new();
        };
        e.persisted(ready)
            .into_iter()
            .map(|(to, msg)| Effect::ToPeer { to, msg })
            .collect()
    }

    /// Ensemble: one Raft tick.
    pub(super) fn tick(&mut self) {
        if let WriteLog::Ensemble(e) = &mut self.log {
            e.tick();
        }
    }

    /// A message from another server at local time `now`: a Raft message, or a
    /// follower's report of the sessions its clients touched (the leader's tracker
    /// takes them).
    pub(super) fn peer_message(&mut self, msg: PeerMsg, now: i64) {
        match msg {
            PeerMsg::Raft(bytes) => {
                if let WriteLog::Ensemble(e) = &mut self.log {
                    e.step(&bytes);
                }
            }
            PeerMsg::Touch { sessions } => {
                if let Some(t) = self.log.tracker() {
                    for id in sessions {
                        t.touch(id, now);
                    }
                }
            }
        }
    }

    /// Ensemble: propose a client's transaction under `id`; false if Raft dropped it (no
    /// leader). Its [`Effect::Answer`] comes once it is applied here.
    pub(super) fn propose(&mut self, id: u64, txn: Txn) -> bool {
        let WriteLog::Ensemble(e) = &mut self.log else {
            return false;
        };
        let taken = e.propose(&Proposal { id, txn });
        if taken {
            e.proposed.insert(id);
        }
        taken
    }

    /// Ensemble: the request waiting for proposal `id` gave up.
    pub(super) fn forget_proposal(&mut self, id: u64) {
        if let WriteLog::Ensemble(e) = &mut self.log {
            e.proposed.remove(&id);
        }
    }

    /// Ensemble: propose a transaction this server decided on its own (a session close,
    /// a container delete), only as the leader of its tracker's term
    /// ([`Ensemble::propose_own`]). Nobody waits for its answer.
    pub(super) fn propose_own(&mut self, id: u64, txn: Txn) -> bool {
        match &mut self.log {
            WriteLog::Ensemble(e) => e.propose_own(&Proposal { id, txn }),
            WriteLog::Standalone { .. } => false,
        }
    }

    /// Ensemble: start ReadIndex round `id` (a `sync`); [`Effect::ReadDone`] comes once
    /// this server has applied everything committed before it.
    pub(super) fn read_index(&mut self, id: u64) {
        if let WriteLog::Ensemble(e) = &mut self.log {
            e.read_index(id);
        }
    }

    /// Ensemble: the `sync` waiting for ReadIndex round `id` gave up.
    pub(super) fn forget_read(&mut self, id: u64) {
        if let WriteLog::Ensemble(e) = &mut self.log {
            e.reads.remove(&id);
            e.pending_reads.retain(|(_, rid)| *rid != id);
        }
    }

    /// The sessions whose expiry is due at local time `now`, if this server decides
    /// expiry, to close (and, in an ensemble, those whose close was proposed two ticks
    /// ago and not applied: proposed again).
    pub(super) fn expire_due(&mut self, now: i64) -> Vec<SessionId> {
        let tick_ns = self.tick_ms as i64 * 1_000_000;
        let Some(t) = self.log.tracker() else {
            return Vec::new();
        };
        let mut due = t.expire(now);
        due.extend(t.stale_closing(now, 2 * tick_ns));
        due.retain(|id| self.db.has_session(*id));
        due
    }

    /// Ensemble: a follower's report to its leader of the sessions its clients touched
    /// since the last one (ZooKeeper's learner ping), if there is anything to report.
    pub(super) fn touch_report(&mut self) -> Vec<Effect> {
        let me = self.raft_id();
        let WriteLog::Ensemble(e) = &mut self.log else {
            return Vec::new();
        };
        if e.lead == 0 || e.lead == me || e.touched.is_empty() {
            return Vec::new();
        }
        let sessions = std::mem::take(&mut e.touched).into_iter().collect();
        vec![Effect::ToPeer {
            to: (e.lead - 1) as usize,
            msg: PeerMsg::Touch { sessions },
        }]
    }
}

/// The `expire` records of the lock owners a session close (`zxid`) deleted, then those
/// of its other ephemeral nodes.
fn expire_records(lost: Closed, zxid: Zxid) -> impl Iterator<Item = Effect> {
    let by_client = lost.by_client;
    let owners = lost.owners.into_iter().map(move |owner| Record::Expire {
        owner,
        zxid,
        by_client,
    });
    let others = lost
        .others
        .into_iter()
        .map(move |(path, session)| Record::Deleted {
            path,
            session,
            zxid,
            by_client,
        });
    owners.chain(others).map(Effect::Record)
}

#[cfg(test)]
#[path = "core_tests.rs"]
mod tests;
