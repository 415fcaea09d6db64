//! A ZooKeeper server node (`zk-N`): client connections, sessions and their expiry,
//! watches, and the write path — a transaction log on the node's disk when standalone,
//! the Raft core when in an ensemble.
//!
//! # Standalone (`servers = 1`)
//!
//! A write gets the next zxid, is appended to the transaction log on the node's disk and
//! fsynced (ZooKeeper's `forceSync = yes`), then applied and answered; while an fsync
//! waits for a stalled disk, every later request waits behind it ([`LogGate`]). A
//! restart replays the log and, like ZooKeeper loading its database, starts every live
//! session over with a full timeout, so clients that reconnect in time keep their
//! sessions and their ephemeral nodes.
//!
//! # Ensemble (`servers = 3 | 5`)
//!
//! The [`RaftCore`] of the Raft family stands in for ZAB: every write (and every session
//! open and close) is proposed as a Raft entry; its zxid is the entry's log index; every
//! server applies the committed entries in order and the server the client is connected
//! to answers once *it* has applied the write. Reads are served from the local applied
//! state (ZooKeeper's sequential consistency: a client's requests are answered in order,
//! so it sees its own writes; `sync` is a ReadIndex round after which the server has
//! applied everything committed before it). As a ZooKeeper follower that loses its
//! leader stops serving, a server that knows no Raft leader closes its client
//! connections and refuses new ones. A server's log persists asynchronously: only its
//! acknowledgements and votes wait for the fsync, as in Zab, so a slow disk costs a
//! server its share of the quorum, not its heartbeats, forwarding or applies.
//!
//! Session expiry is the leader's (`LeaderSessionTracker`): a new leader starts every
//! session over with a full timeout; followers report the sessions their clients touched
//! every half tick (ZooKeeper's learner ping); the leader proposes `closeSession` for
//! each expired bucket, and again if it was not applied within two ticks. The tracker
//! belongs to one Raft term (ZooKeeper's epoch), and a server proposes the transactions
//! it decides on its own only as the leader of that term (`propose_own`), never through
//! a follower's forwarding. Raft ticks every `tick_ms / 5` of the node's local clock (election timeout 10 to 20 Raft ticks,
//! heartbeats every 2), so a leader fails over within about half a session timeout.
//!
//! # Connections
//!
//! One task per connection reads its requests as they arrive, each touching its session
//! (ZooKeeper's `submitRequest`), and answers them strictly in order (a write is answered
//! once applied, and a later read waits for it, as ZooKeeper's per-session ordering), and
//! sends watch notifications as the transactions that fire them are applied — always
//! before any reply that reflects a later state. A connection closes when its session is
//! closed, so a client learns of an expiry only when it reconnects and is told `Expired`.
//! A client whose last seen zxid is ahead of the server is refused (it must try another
//! server), as in `ZooKeeperServer.processConnectRequest`.
//!
//! # History
//!
//! A server records `leader` ({term}) when it becomes the leader of an ensemble, and
//! `expire` (key = the lock) when a session close deletes the node that
//! owns a lock (see [`super::db`]), with `{zxid, node, session}`. Every server of an
//! ensemble records it when it applies the entry (and again after a restart, which
//! re-applies its log): the family's `lock-linearizable` keeps the first record of each
//! zxid.

use super::db::{Applied, Op, Txn, TxnOk, ZkDb};
use super::params::ZkParams;
use super::proto::{decode_peer, encode_peer, PeerMsg, Request, Response, PEER_PORT};
use super::session::SessionTracker;
use super::tree::{SessionId, WatchedEvent, ZkError, Zxid};
use super::txn_log::{append_log, read_log, LogGate};
use crate::consensus::core::{
    AsyncOutput, Committed, Outgoing, ProposeError, RaftCore, ReadState, Role, SoftState,
};
use crate::consensus::driver::{self, RaftHost};
use crate::consensus::{Fsync, RaftConfig as RaftParams, ReadMode};
use crate::history::values::{Leader, ZkExpire};
use crate::history::{names, EventType, EventValue};
use crate::net::{serve_peers, Mesh};
use crate::sim::NodeCtx;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};

/// The index of server `zk-N`.
pub fn server_index(name: &str) -> usize {
    name.strip_prefix("zk-")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{name} is not a ZooKeeper server"))
}

/// The Raft parameters an ensemble runs with (see the module docs).
pub fn raft_params(p: &ZkParams) -> RaftParams {
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
struct Proposal {
    id: u64,
    txn: Txn,
}

pub(super) struct ConnEntry {
    pub(super) session: SessionId,
    pub(super) watches: mpsc::UnboundedSender<WatchedEvent>,
}

type WriteResult = Result<TxnOk, ZkError>;

/// The Raft side of an ensemble server.
struct Ensemble {
    core: RaftCore,
    /// The leader as of the last Ready handled (0: none).
    lead: u64,
    /// Proposals of this server's clients, waiting to be applied here.
    waiters: BTreeMap<u64, oneshot::Sender<(Zxid, WriteResult)>>,
    /// ReadIndex requests by id, before Raft answered them.
    reads: BTreeMap<u64, oneshot::Sender<()>>,
    /// ReadIndex answers waiting for the apply index.
    pending_reads: Vec<(u64, oneshot::Sender<()>)>,
    /// Sessions this server's clients touched since the last report to the leader.
    touched: BTreeSet<SessionId>,
    /// The Raft term (ZooKeeper's epoch) the leader-side session tracker was built in.
    epoch: Option<u64>,
    /// Readies whose writes are not on disk yet, with the messages that wait for them.
    unsynced: VecDeque<(u64, Vec<Outgoing>)>,
}

pub(super) struct Server {
    pub(super) db: ZkDb,
    /// Expiry decisions: always when standalone, only on the leader of an ensemble.
    pub(super) tracker: Option<SessionTracker>,
    pub(super) conns: BTreeMap<u64, ConnEntry>,
    pub(super) next_conn: u64,
    ens: Option<Ensemble>,
}

/// One server: its context, parameters, shared state and wake-ups. Cheap to clone.
#[derive(Clone)]
pub(super) struct Node {
    pub(super) ctx: NodeCtx,
    pub(super) params: Rc<ZkParams>,
    pub(super) me: usize,
    pub(super) s: Rc<RefCell<Server>>,
    /// Wakes the Raft loop.
    pub(super) wake: Rc<Notify>,
    pub(super) mesh: Option<Mesh>,
    /// Standalone: the request pipeline behind the transaction log (see [`LogGate`]).
    pub(super) log_gate: Rc<LogGate>,
}

/// What server `zk-N` runs, from start to crash.
pub async fn server_main(ctx: NodeCtx, params: ZkParams) {
    let me = server_index(ctx.name());
    let now = ctx.mono_ns();
    let ensemble = params.servers > 1;
    let mut server = Server {
        db: ZkDb::new(),
        tracker: None,
        conns: BTreeMap::new(),
        next_conn: 1,
        ens: None,
    };
    if ensemble {
        let seed = ctx.rand_u64();
        let core = {
            let mut disk = ctx.disk();
            RaftCore::new(me as u64 + 1, &raft_params(&params), &mut disk, seed)
                .expect("valid raft configuration")
        };
        server.ens = Some(Ensemble {
            core,
            lead: 0,
            waiters: BTreeMap::new(),
            reads: BTreeMap::new(),
            pending_reads: Vec::new(),
            touched: BTreeSet::new(),
            epoch: None,
            unsynced: VecDeque::new(),
        });
    } else {
        let txns = read_log(&mut ctx.disk());
        let mut tracker = SessionTracker::new(params.tick_ms);
        for (i, txn) in txns.iter().enumerate() {
            let applied = server.db.apply(i as u64 + 1, txn);
            record_lost_owners(&ctx, &applied);
        }
        for (&id, &timeout) in server.db.sessions() {
            tracker.add(id, timeout, now);
        }
        server.tracker = Some(tracker);
    }
    let node = Node {
        mesh: ensemble.then(|| Mesh::new(params.servers as usize)),
        ctx: ctx.clone(),
        params: Rc::new(params),
        me,
        s: Rc::new(RefCell::new(server)),
        wake: Rc::new(Notify::new()),
        log_gate: Rc::default(),
    };
    ctx.spawn(super::connection::client_listener(node.clone()));
    ctx.spawn(expirer(node.clone()));
    ctx.spawn(container_manager(node.clone()));
    if let Some(mesh) = &node.mesh {
        let hosts: Vec<String> = (0..node.params.servers)
            .map(|i| format!("zk-{i}"))
            .collect();
        // A batch not acknowledged within a tick is dropped with its connection (Raft
        // retransmits). A tick is half the Raft election timeout (`raft_params`).
        let timeout = Duration::from_millis(node.params.tick_ms);
        mesh.spawn_senders(&ctx, me, &hosts, PEER_PORT, timeout);
        let receiver = node.clone();
        ctx.spawn(serve_peers(ctx.clone(), PEER_PORT, move |_ctx, msg| {
            receiver.on_peer(msg)
        }));
        ctx.spawn(touch_reporter(node.clone()));
        raft_loop(node).await
    } else {
        std::future::pending::<()>().await
    }
}

fn record_lost_owners(ctx: &NodeCtx, applied: &Applied) {
    for o in &applied.lost_owners {
        tracing::debug!(
            lock = o.lock,
            node = o.path,
            "a session close deleted the lock's owner"
        );
        ctx.record(
            ctx.event(EventType::Event, names::EXPIRE)
                .key(o.lock.clone())
                .value(
                    ZkExpire {
                        node: o.path.clone(),
                        session: format!("0x{:x}", o.session),
                        zxid: applied.zxid,
                    }
                    .to_json(),
                ),
        );
    }
}

impl Node {
    fn tick_ns(&self) -> i64 {
        self.params.tick_ms as i64 * 1_000_000
    }

    /// A member of an ensemble that does not lead it.
    pub(super) fn is_follower(&self) -> bool {
        self.s.borrow().ens.is_some() && !self.is_leader()
    }

    pub(super) fn is_leader(&self) -> bool {
        let s = self.s.borrow();
        match &s.ens {
            None => true,
            Some(e) => e.lead == self.me as u64 + 1,
        }
    }

    /// Whether the server serves clients (an ensemble member needs a known leader).
    pub(super) fn serving(&self) -> bool {
        !matches!(&self.s.borrow().ens, Some(e) if e.lead == 0)
    }

    pub(super) fn last_zxid(&self) -> Zxid {
        self.s.borrow().db.last_zxid()
    }

    /// The server heard from `session`.
    pub(super) fn touch(&self, session: SessionId) -> bool {
        let now = self.ctx.mono_ns();
        let leader = self.is_leader();
        let mut s = self.s.borrow_mut();
        if !s.db.has_session(session) {
            return false;
        }
        if let Some(e) = s.ens.as_mut() {
            if !leader {
                e.touched.insert(session);
                return true;
            }
        }
        match s.tracker.as_mut() {
            Some(t) => t.touch(session, now),
            None => true,
        }
    }

    /// Everything a transaction did besides its result: watches out, sessions tracked or
    /// closed (with their connections), lock owners lost recorded.
    fn after_apply(&self, txn: &Txn, applied: &Applied) {
        let now = self.ctx.mono_ns();
        let mut s = self.s.borrow_mut();
        for (w, ev) in &applied.fired {
            if let Some(c) = s.conns.get(w) {
                let _ = c.watches.send(ev.clone());
            }
        }
        match (&txn.op, &applied.result) {
            (Op::CreateSession { timeout_ms }, Ok(_)) => {
                if let Some(t) = s.tracker.as_mut() {
                    t.add(txn.session, *timeout_ms, now);
                }
            }
            (Op::SetOwner, Ok(_)) => {
                // A session that moves here was revalidated with the leader, which
                // touches it then (Leader.revalidateSession), not half a tick later with
                // the follower's report: a partition right after the reconnect must not
                // let it expire early.
                if let Some(t) = s.tracker.as_mut() {
                    t.touch(txn.session, now);
                }
            }
            (Op::CloseSession, Ok(_)) => {
                if let Some(t) = s.tracker.as_mut() {
                    t.remove(txn.session);
                }
                // Dropping the watch sender closes the connection.
                s.conns.retain(|_, c| c.session != txn.session);
            }
            _ => {}
        }
        drop(s);
        record_lost_owners(&self.ctx, applied);
    }

    /// Run a write through the total order and return its zxid and result once applied
    /// here; `None` if it could not be (no leader, or not applied within the session
    /// timeout): the connection is then closed, as a ZooKeeper follower does when its
    /// leader is gone.
    pub(super) async fn write(&self, op: Op, session: SessionId) -> Option<(Zxid, WriteResult)> {
        let txn = Txn {
            session,
            owner: self.me as u64 + 1,
            time_ms: self.ctx.wall_ms(),
            op,
        };
        if self.s.borrow().ens.is_none() {
            return self.log_and_apply(&txn).await;
        }
        let id = self.ctx.rand_u64();
        let (tx, rx) = oneshot::channel();
        {
            let mut s = self.s.borrow_mut();
            let e = s.ens.as_mut().expect("ensemble");
            match e.core.propose(Proposal { id, txn }.encode()) {
                Ok(()) => {
                    e.waiters.insert(id, tx);
                }
                Err(ProposeError::Dropped) | Err(ProposeError::Raft(_)) => return None,
            }
        }
        self.wake.notify_one();
        let timeout = Duration::from_millis(self.params.negotiated_timeout_ms());
        match self.ctx.timeout(timeout, rx).await {
            Ok(Ok(r)) => Some(r),
            _ => {
                if let Some(e) = self.s.borrow_mut().ens.as_mut() {
                    e.waiters.remove(&id);
                }
                None
            }
        }
    }

    /// Standalone: append `txn` to the transaction log, and apply it once the fsync is
    /// done, in its turn through the [`LogGate`]. Once appended, the transaction is
    /// applied even if the caller stops waiting (its client went away): the log and the
    /// tree never part.
    async fn log_and_apply(&self, txn: &Txn) -> Option<(Zxid, WriteResult)> {
        let turn = self.log_gate.turn().await;
        append_log(&mut self.ctx.disk(), txn);
        if self.ctx.disk_stall_left_ns() == 0 {
            return Some(self.apply_logged(txn));
        }
        let (tx, rx) = oneshot::channel();
        let (node, txn) = (self.clone(), txn.clone());
        self.ctx.spawn(async move {
            let _turn = turn;
            node.ctx.wait_disk().await;
            let _ = tx.send(node.apply_logged(&txn));
        });
        // Only a crash, which takes the caller too, stops the applier.
        rx.await.ok()
    }

    fn apply_logged(&self, txn: &Txn) -> (Zxid, WriteResult) {
        let zxid = self.last_zxid() + 1;
        let applied = self.s.borrow_mut().db.apply(zxid, txn);
        self.after_apply(txn, &applied);
        (zxid, applied.result)
    }

    /// Run a transaction nobody waits for (session closes, container deletes): proposed
    /// as the leader of an ensemble; standalone, logged and applied in its turn.
    async fn run_own_txn(&self, txn: Txn) {
        if self.s.borrow().ens.is_none() {
            // Nobody waits for its result.
            let _ = self.log_and_apply(&txn).await;
            return;
        }
        let id = self.ctx.rand_u64();
        if let Some(e) = self.s.borrow_mut().ens.as_mut() {
            propose_own(&mut e.core, e.epoch, Proposal { id, txn }.encode());
        }
        self.wake.notify_one();
    }

    /// A ReadIndex round (ensemble `sync`): true once this server has applied everything
    /// committed before it.
    async fn read_barrier(&self) -> bool {
        let rid = self.ctx.rand_u64();
        let (tx, rx) = oneshot::channel();
        {
            let mut s = self.s.borrow_mut();
            let Some(e) = s.ens.as_mut() else {
                return true;
            };
            e.core.read_index(rid.to_be_bytes().to_vec());
            e.reads.insert(rid, tx);
        }
        self.wake.notify_one();
        let timeout = Duration::from_millis(self.params.negotiated_timeout_ms());
        match self.ctx.timeout(timeout, rx).await {
            Ok(Ok(())) => true,
            _ => {
                if let Some(e) = self.s.borrow_mut().ens.as_mut() {
                    e.reads.remove(&rid);
                }
                false
            }
        }
    }

    /// Answer one request of connection `cid` (session `session`). `None`: close the
    /// connection without an answer.
    pub(super) async fn serve(
        &self,
        cid: u64,
        session: SessionId,
        req: Request,
    ) -> Option<Response> {
        let reply = |r: Option<(Zxid, WriteResult)>| -> Option<Response> {
            let (_, result) = r?;
            Some(match result {
                Ok(TxnOk::Created { path, stat }) => Response::Created { path, stat },
                Ok(TxnOk::Deleted) => Response::Deleted,
                Ok(TxnOk::Set { stat }) => Response::Set { stat },
                Ok(TxnOk::SessionClosed) => Response::Closed,
                Ok(TxnOk::SessionCreated { .. } | TxnOk::OwnerSet) => {
                    Response::Err(ZkError::BadArguments)
                }
                Err(e) => Response::Err(e),
            })
        };
        // Standalone, a read queues behind the writes being logged (a write takes its
        // own turn).
        let standalone_read = self.s.borrow().ens.is_none() && !req.is_write();
        let _turn = match standalone_read {
            true => Some(self.log_gate.turn().await),
            false => None,
        };
        match req {
            Request::Ping => Some(Response::Pong),
            Request::Create {
                path, data, mode, ..
            } => reply(self.write(Op::Create { path, data, mode }, session).await),
            Request::Delete { path, version } => {
                reply(self.write(Op::Delete { path, version }, session).await)
            }
            Request::SetData {
                path,
                data,
                version,
            } => reply(
                self.write(
                    Op::SetData {
                        path,
                        data,
                        version,
                    },
                    session,
                )
                .await,
            ),
            Request::CloseSession => reply(self.write(Op::CloseSession, session).await),
            Request::Exists { path, watch } => {
                let mut s = self.s.borrow_mut();
                Some(match s.db.tree.exists(&path, watch.then_some(cid)) {
                    Ok(stat) => Response::Exists { stat },
                    Err(e) => Response::Err(e),
                })
            }
            Request::GetData { path, watch } => {
                let mut s = self.s.borrow_mut();
                Some(match s.db.tree.get_data(&path, watch.then_some(cid)) {
                    Ok((data, stat)) => Response::Data { data, stat },
                    Err(e) => Response::Err(e),
                })
            }
            Request::GetChildren { path, watch, .. } => {
                let mut s = self.s.borrow_mut();
                Some(match s.db.tree.get_children(&path, watch.then_some(cid)) {
                    Ok((children, stat)) => Response::Children { children, stat },
                    Err(e) => Response::Err(e),
                })
            }
            Request::Sync { path } => self
                .read_barrier()
                .await
                .then_some(Response::Synced { path }),
            Request::Rejected { err, .. } => Some(Response::Err(err)),
            Request::SetWatches {
                relative_zxid,
                data,
                exist,
                child,
            } => {
                let mut s = self.s.borrow_mut();
                let last = s.db.last_zxid();
                let mut fired = Vec::new();
                s.db.tree.set_watches(
                    relative_zxid,
                    [&data, &exist, &child],
                    cid,
                    last,
                    &mut fired,
                );
                if let Some(c) = s.conns.get(&cid) {
                    for (_, ev) in fired {
                        let _ = c.watches.send(ev);
                    }
                }
                Some(Response::WatchesSet)
            }
            Request::Connect { .. } => None,
        }
    }

    /// A message from another server.
    fn on_peer(&self, bytes: &[u8]) {
        match decode_peer(bytes) {
            Ok(PeerMsg::Raft(msg)) => {
                if let Some(e) = self.s.borrow_mut().ens.as_mut() {
                    // A malformed message changes nothing.
                    let _ = e.core.step_bytes(&msg);
                }
                self.wake.notify_one();
            }
            Ok(PeerMsg::Touch { sessions }) => {
                let now = self.ctx.mono_ns();
                let mut s = self.s.borrow_mut();
                if let Some(t) = s.tracker.as_mut() {
                    for id in sessions {
                        t.touch(id, now);
                    }
                }
            }
            Err(_) => {}
        }
    }

    /// Keep the leader-side session tracker in step with the Raft core: a leader of a
    /// term its tracker was not built in starts every session over with a full timeout
    /// (ZooKeeper's new leader loading its database); a non-leader has none.
    fn track_epoch(&self, now: i64) {
        let mut s = self.s.borrow_mut();
        let s = &mut *s;
        let Some(e) = s.ens.as_mut() else {
            return;
        };
        if !e.core.is_leader() {
            s.tracker = None;
            e.epoch = None;
            return;
        }
        let term = e.core.term();
        if e.epoch == Some(term) {
            return;
        }
        tracing::debug!(term, "leading: every session starts over");
        let mut t = SessionTracker::new(self.params.tick_ms);
        for (&id, &timeout) in s.db.sessions() {
            t.add(id, timeout, now);
        }
        s.tracker = Some(t);
        e.epoch = Some(term);
    }

    /// Handle every pending Raft Ready: leadership, applies, reads, messages, as
    /// ZooKeeper's servers do with a log that is slow: the leadership is taken from the
    /// Ready at once; heartbeats, appends and forwarded proposals go out at once; only
    /// this server's acknowledgements (and votes) wait until its log is on disk
    /// ([`RaftCore::process_ready_async`]). A stalled disk therefore holds a server's
    /// share of the quorum, not its part in the ensemble: a leader keeps leading and
    /// commits with its followers' copies, as Zab's leader does.
    async fn handle_ready(&self) {
        while self.has_ready() {
            self.handle_one_ready();
        }
    }

    fn has_ready(&self) -> bool {
        matches!(&self.s.borrow().ens, Some(e) if e.core.has_ready())
    }

    fn handle_one_ready(&self) {
        let AsyncOutput {
            now: out,
            after_sync,
            persist,
        } = {
            let mut s = self.s.borrow_mut();
            let Some(e) = s.ens.as_mut() else {
                return;
            };
            let mut disk = self.ctx.disk();
            e.core.process_ready_async(&mut disk)
        };
        let now = self.ctx.mono_ns();
        if let Some(ss) = out.soft_state {
            self.on_soft_state(ss);
        }
        self.track_epoch(now);
        for c in &out.committed {
            self.apply_committed(c);
        }
        self.answer_reads(out.read_states);
        self.send(out.messages);
        if let Some(ready) = persist {
            if let Some(e) = self.s.borrow_mut().ens.as_mut() {
                e.unsynced.push_back((ready, after_sync));
            }
            if self.ctx.disk_stall_left_ns() == 0 {
                self.persisted(ready);
            } else {
                let node = self.clone();
                self.ctx.spawn(async move {
                    node.ctx.wait_disk().await;
                    node.persisted(ready);
                    node.wake.notify_one();
                });
            }
        }
    }

    /// The leader changed: record a new leadership of ours; without a leader, close the
    /// client connections (a ZooKeeper follower that loses its leader stops serving).
    fn on_soft_state(&self, ss: SoftState) {
        let mut s = self.s.borrow_mut();
        let s = &mut *s;
        let e = s.ens.as_mut().expect("ensemble");
        let was_leader = e.lead == self.me as u64 + 1;
        e.lead = ss.leader_id;
        if ss.role == Role::Leader && !was_leader {
            let term = e.core.term();
            self.ctx.record(
                self.ctx
                    .event(EventType::Event, names::LEADER)
                    .value(Leader { term }.to_json()),
            );
        }
        if e.lead == 0 && !s.conns.is_empty() {
            tracing::debug!("no leader: closing client connections");
            s.conns.clear();
        }
    }

    /// Apply one committed entry and answer the client that proposed it here.
    fn apply_committed(&self, c: &Committed) {
        let proposal = (!c.data.is_empty())
            .then(|| serde_json::from_slice::<Proposal>(&c.data).ok())
            .flatten();
        let Some(p) = proposal else {
            // A new leader's no-op entry (or bytes that are no proposal).
            self.s.borrow_mut().db.skip(c.index);
            return;
        };
        let applied = self.s.borrow_mut().db.apply(c.index, &p.txn);
        self.after_apply(&p.txn, &applied);
        let waiter = self
            .s
            .borrow_mut()
            .ens
            .as_mut()
            .and_then(|e| e.waiters.remove(&p.id));
        if let Some(w) = waiter {
            let _ = w.send((c.index, applied.result));
        }
    }

    /// Take Raft's ReadIndex answers, and release the reads whose index is applied.
    fn answer_reads(&self, read_states: Vec<ReadState>) {
        let mut s = self.s.borrow_mut();
        let s = &mut *s;
        let applied = s.db.last_zxid();
        let e = s.ens.as_mut().expect("ensemble");
        for rs in read_states {
            let Some(rid) = rs
                .ctx
                .get(..8)
                .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
            else {
                continue;
            };
            if let Some(done) = e.reads.remove(&rid) {
                e.pending_reads.push((rs.index, done));
            }
        }
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut e.pending_reads)
            .into_iter()
            .partition(|(index, _)| *index <= applied);
        e.pending_reads = waiting;
        for (_, done) in ready {
            let _ = done.send(());
        }
    }

    /// Readies up to number `ready` are on disk: send their acknowledgements, in order,
    /// and tell Raft.
    fn persisted(&self, ready: u64) {
        let acks = {
            let mut s = self.s.borrow_mut();
            let Some(e) = s.ens.as_mut() else {
                return;
            };
            let mut acks = Vec::new();
            while e.unsynced.front().is_some_and(|(n, _)| *n <= ready) {
                acks.extend(e.unsynced.pop_front().expect("checked").1);
            }
            e.core.on_persisted(ready);
            acks
        };
        self.send(acks);
    }

    fn send(&self, messages: Vec<Outgoing>) {
        if let Some(mesh) = &self.mesh {
            for m in messages {
                mesh.send((m.to - 1) as usize, encode_peer(&PeerMsg::Raft(m.encode())));
            }
        }
    }
}

/// Propose a transaction the server decided on its own (a session close, a container
/// delete): only while its Raft core is the leader of `epoch`, the term its session
/// tracker was built in. Returns whether Raft took it.
///
/// raft-rs has a follower forward a proposal to the leader it knows, which appends it
/// in *its* term. So a deposed leader — its core stepped a message of the new leader,
/// its server has not yet handled the Ready that drops the tracker — would have its
/// expiry decisions committed by a leader that considers those sessions live. ZooKeeper
/// cannot do this: a proposal carries its leader's epoch and learners reject an older
/// one, and each new leader builds its session tracker anew. Here the tracker is
/// rebuilt whenever the node leads a term it was not built in (`handle_ready`), and a
/// server-originated proposal is appended only by the leader of that term, so its entry
/// carries the tracker's epoch as its Raft term: Raft never changes an entry's term, and
/// an entry of a deposed term never commits. Checking the role alone is not enough: a
/// node that lost and regained leadership between two Readies would act on a tracker
/// that missed the touches the other leader saw in between.
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

impl Proposal {
    fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a proposal serialises")
    }
}

impl RaftHost for Node {
    async fn handle_ready(&self) {
        Node::handle_ready(self).await;
    }

    fn tick(&self, _now: i64) {
        if let Some(e) = self.s.borrow_mut().ens.as_mut() {
            e.core.tick();
        }
    }
}

/// The Raft loop: the shared Raft driver, ticking on the local clock.
async fn raft_loop(node: Node) {
    let tick_ns = raft_params(&node.params).tick_ms as i64 * 1_000_000;
    let ctx = node.ctx.clone();
    driver::drive(&ctx, &node.wake.clone(), tick_ns, &node).await
}

/// The session expirer: at every tick boundary of the local clock, close the sessions
/// whose bucket is due (and, in an ensemble, propose again closes that were lost).
async fn expirer(node: Node) {
    let ctx = node.ctx.clone();
    let tick = node.tick_ns();
    loop {
        let now = ctx.mono_ns();
        let next = (now.div_euclid(tick) + 1) * tick;
        ctx.sleep(Duration::from_nanos((next - now).max(1) as u64))
            .await;
        let now = ctx.mono_ns();
        let expired = {
            let mut s = node.s.borrow_mut();
            let Some(t) = s.tracker.as_mut() else {
                continue;
            };
            let mut v = t.expire(now);
            v.extend(t.stale_closing(now, 2 * tick));
            v.retain(|id| s.db.has_session(*id));
            v
        };
        for id in expired {
            tracing::debug!(session = format!("0x{id:x}"), "session expired");
            node.run_own_txn(Txn {
                session: id,
                owner: 0,
                time_ms: ctx.wall_ms(),
                op: Op::CloseSession,
            })
            .await;
        }
    }
}

/// ZooKeeper's `ContainerManager`: every `container_check_ms`, delete the empty
/// containers that once had children (standalone, or the leader of an ensemble).
async fn container_manager(node: Node) {
    let ctx = node.ctx.clone();
    let every = Duration::from_millis(node.params.container_check_ms);
    loop {
        ctx.sleep(every).await;
        if !node.is_leader() {
            continue;
        }
        let candidates = node.s.borrow().db.tree.container_candidates();
        for path in candidates {
            tracing::debug!(path, "deleting an empty container");
            node.run_own_txn(Txn {
                session: 0,
                owner: 0,
                time_ms: ctx.wall_ms(),
                op: Op::DeleteContainer { path },
            })
            .await;
        }
    }
}

/// A follower reports the sessions its clients touched to the leader every half tick.
async fn touch_reporter(node: Node) {
    let ctx = node.ctx.clone();
    let every = Duration::from_nanos((node.tick_ns() / 2).max(1) as u64);
    loop {
        ctx.sleep(every).await;
        let (lead, sessions) = {
            let mut s = node.s.borrow_mut();
            let Some(e) = s.ens.as_mut() else {
                return;
            };
            if e.lead == 0 || e.lead == node.me as u64 + 1 || e.touched.is_empty() {
                continue;
            }
            (e.lead, std::mem::take(&mut e.touched))
        };
        if let Some(mesh) = &node.mesh {
            let sessions = sessions.into_iter().collect();
            mesh.send(
                (lead - 1) as usize,
                encode_peer(&PeerMsg::Touch { sessions }),
            );
        }
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
