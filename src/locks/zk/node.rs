//! A server node's I/O around its [`ZkCore`]: the only place that awaits (the write
//! path's disk and Raft, ReadIndex rounds, the standalone [`LogGate`]) and performs the
//! core's [`Effect`]s — watch channels of the client connections, history records, the
//! requests waiting for their writes, the peer mesh — in the order the core returns them.

use super::core::{ConnId, Effect, Record, WriteResult, ZkCore};
use super::db::{Op, Txn, TxnOk};
use super::params::ZkParams;
use super::proto::{decode_peer, encode_peer, PeerMsg, Request, Response};
use super::tree::{SessionId, WatchedEvent, ZkError, Zxid};
use super::txn_log::{append_log, LogGate};
use crate::history::values::{Leader, ZkExpire};
use crate::history::{names, EventType, EventValue};
use crate::net::Mesh;
use crate::sim::NodeCtx;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};

/// The I/O of a write path (the core holds its state).
pub(super) enum WritePath {
    /// Standalone: the request pipeline behind the transaction log (see [`LogGate`]).
    Standalone(Rc<LogGate>),
    /// An ensemble member: its peers and the requests waiting on Raft.
    Ensemble(Replication),
}

/// What an ensemble member's requests wait on.
pub(super) struct Replication {
    /// Outboxes to the other servers.
    pub(super) mesh: Mesh,
    /// Wakes the Raft loop.
    pub(super) wake: Notify,
    /// Proposals of this server's clients, waiting to be applied here.
    waiters: RefCell<BTreeMap<u64, oneshot::Sender<(Zxid, WriteResult)>>>,
    /// `sync`s waiting for their ReadIndex rounds.
    reads: RefCell<BTreeMap<u64, oneshot::Sender<()>>>,
}

impl Replication {
    /// An ensemble of `servers`.
    pub(super) fn new(servers: usize) -> Replication {
        Replication {
            mesh: Mesh::new(servers),
            wake: Notify::new(),
            waiters: RefCell::default(),
            reads: RefCell::default(),
        }
    }
}

/// One server: its context, parameters, core and write path. Cheap to clone.
#[derive(Clone)]
pub(super) struct Node {
    pub(super) ctx: NodeCtx,
    pub(super) params: Rc<ZkParams>,
    pub(super) me: usize,
    core: Rc<RefCell<ZkCore>>,
    /// The watch channel of each open connection (dropped: the connection closes).
    watch_tx: Rc<RefCell<BTreeMap<ConnId, mpsc::UnboundedSender<WatchedEvent>>>>,
    pub(super) path: Rc<WritePath>,
}

impl Node {
    /// Server `me` around `core`.
    pub(super) fn new(
        ctx: NodeCtx,
        params: ZkParams,
        me: usize,
        core: ZkCore,
        path: WritePath,
    ) -> Node {
        Node {
            ctx,
            params: Rc::new(params),
            me,
            core: Rc::new(RefCell::new(core)),
            watch_tx: Rc::default(),
            path: Rc::new(path),
        }
    }

    /// ZooKeeper's tick, ns.
    pub(super) fn tick_ns(&self) -> i64 {
        self.params.tick_ms as i64 * 1_000_000
    }

    /// Perform the core's effects, in order.
    pub(super) fn perform(&self, effects: Vec<Effect>) {
        for effect in effects {
            match effect {
                Effect::Watch { conn, event } => {
                    if let Some(tx) = self.watch_tx.borrow().get(&conn) {
                        let _ = tx.send(event);
                    }
                }
                // Dropping the watch sender closes the connection.
                Effect::Close { conn } => drop(self.watch_tx.borrow_mut().remove(&conn)),
                Effect::Record(r) => self.record(r),
                Effect::Answer { id, zxid, result } => {
                    let waiter = match &*self.path {
                        WritePath::Ensemble(r) => r.waiters.borrow_mut().remove(&id),
                        WritePath::Standalone(_) => None,
                    };
                    if let Some(w) = waiter {
                        let _ = w.send((zxid, result));
                    }
                }
                Effect::ReadDone { id } => {
                    let read = match &*self.path {
                        WritePath::Ensemble(r) => r.reads.borrow_mut().remove(&id),
                        WritePath::Standalone(_) => None,
                    };
                    if let Some(done) = read {
                        let _ = done.send(());
                    }
                }
                Effect::ToPeer { to, msg } => {
                    if let WritePath::Ensemble(r) = &*self.path {
                        r.mesh.send(to, encode_peer(&msg));
                    }
                }
                Effect::Persist { ready } => self.persist(ready),
            }
        }
    }

    fn record(&self, r: Record) {
        let ctx = &self.ctx;
        match r {
            Record::Leader { term } => ctx.record(
                ctx.event(EventType::Event, names::LEADER)
                    .value(Leader { term }.to_json()),
            ),
            Record::Expire {
                owner,
                zxid,
                by_client,
            } => {
                tracing::debug!(
                    lock = owner.lock,
                    node = owner.path,
                    "a session close deleted the lock's owner"
                );
                let value = ZkExpire {
                    node: owner.path,
                    session: format!("0x{:x}", owner.session),
                    zxid,
                };
                ctx.record(
                    ctx.event(EventType::Event, closed_by(by_client))
                        .key(owner.lock)
                        .value(value.to_json()),
                );
            }
            // Served only: see `Record::Deleted`.
            Record::Deleted {
                path,
                session,
                zxid,
                by_client,
            } if ctx.live().is_some() => {
                let value = ZkExpire {
                    node: path,
                    session: format!("0x{session:x}"),
                    zxid,
                };
                ctx.record(
                    ctx.event(EventType::Event, closed_by(by_client))
                        .value(value.to_json()),
                );
            }
            Record::Deleted { .. } => {}
        }
    }

    /// Raft Ready `ready` has writes for the disk: acknowledge once they are on it.
    fn persist(&self, ready: u64) {
        if self.ctx.disk_stall_left_ns() == 0 {
            self.persisted(ready);
            return;
        }
        let node = self.clone();
        self.ctx.spawn(async move {
            node.ctx.wait_disk().await;
            node.persisted(ready);
            if let WritePath::Ensemble(r) = &*node.path {
                r.wake.notify_one();
            }
        });
    }

    fn persisted(&self, ready: u64) {
        let effects = self.core.borrow_mut().persisted(ready);
        self.perform(effects);
    }

    /// Whether this server leads (standalone: always).
    pub(super) fn is_leader(&self) -> bool {
        self.core.borrow().is_leader()
    }

    /// A member of an ensemble that does not lead it.
    pub(super) fn is_follower(&self) -> bool {
        self.core.borrow().is_follower()
    }

    /// Whether the server serves clients (an ensemble member needs a known leader).
    pub(super) fn serving(&self) -> bool {
        self.core.borrow().serving()
    }

    /// The last applied zxid.
    pub(super) fn last_zxid(&self) -> Zxid {
        self.core.borrow().last_zxid()
    }

    /// The negotiated timeout of a live session, ms.
    pub(super) fn session_timeout(&self, session: SessionId) -> Option<u64> {
        self.core.borrow().session_timeout(session)
    }

    /// The server (index + 1) that owns a live session.
    pub(super) fn owner(&self, session: SessionId) -> Option<u64> {
        self.core.borrow().owner(session)
    }

    /// The server heard from `session`.
    pub(super) fn touch(&self, session: SessionId) -> bool {
        let now = self.ctx.mono_ns();
        self.core.borrow_mut().touch(session, now)
    }

    /// A connection of `session` opens, its watches going to `watches`: its id.
    pub(super) fn open_conn(
        &self,
        session: SessionId,
        watches: mpsc::UnboundedSender<WatchedEvent>,
    ) -> ConnId {
        let cid = self.core.borrow_mut().open_conn(session);
        self.watch_tx.borrow_mut().insert(cid, watches);
        cid
    }

    /// Connection `cid` ended.
    pub(super) fn close_conn(&self, cid: ConnId) {
        self.watch_tx.borrow_mut().remove(&cid);
        self.core.borrow_mut().close_conn(cid);
    }

    /// The sessions whose expiry is due now (see [`ZkCore::expire_due`]).
    pub(super) fn expire_due(&self, now: i64) -> Vec<SessionId> {
        self.core.borrow_mut().expire_due(now)
    }

    /// The empty containers to delete.
    pub(super) fn container_candidates(&self) -> Vec<String> {
        self.core.borrow().container_candidates()
    }

    /// A follower reports the sessions its clients touched to its leader.
    pub(super) fn report_touches(&self) {
        let effects = self.core.borrow_mut().touch_report();
        self.perform(effects);
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
        let r = match &*self.path {
            WritePath::Standalone(gate) => return self.log_and_apply(gate, &txn).await,
            WritePath::Ensemble(r) => r,
        };
        let id = self.ctx.rand_u64();
        let (tx, rx) = oneshot::channel();
        if !self.core.borrow_mut().propose(id, txn) {
            return None;
        }
        r.waiters.borrow_mut().insert(id, tx);
        r.wake.notify_one();
        let timeout = Duration::from_millis(self.params.negotiated_timeout_ms());
        match self.ctx.timeout(timeout, rx).await {
            Ok(Ok(result)) => Some(result),
            _ => {
                r.waiters.borrow_mut().remove(&id);
                self.core.borrow_mut().forget_proposal(id);
                None
            }
        }
    }

    /// Standalone: append `txn` to the transaction log, and apply it once the fsync is
    /// done, in its turn through the [`LogGate`]. Once appended, the transaction is
    /// applied even if the caller stops waiting (its client went away): the log and the
    /// tree never part.
    async fn log_and_apply(&self, gate: &Rc<LogGate>, txn: &Txn) -> Option<(Zxid, WriteResult)> {
        let turn = gate.turn().await;
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
        let now = self.ctx.mono_ns();
        let (zxid, result, effects) = self.core.borrow_mut().apply_logged(txn, now);
        self.perform(effects);
        (zxid, result)
    }

    /// Run a transaction nobody waits for (session closes, container deletes): proposed
    /// as the leader of an ensemble; standalone, logged and applied in its turn.
    pub(super) async fn run_own_txn(&self, txn: Txn) {
        match &*self.path {
            WritePath::Standalone(gate) => {
                // Nobody waits for its result.
                let _ = self.log_and_apply(gate, &txn).await;
            }
            WritePath::Ensemble(r) => {
                let id = self.ctx.rand_u64();
                self.core.borrow_mut().propose_own(id, txn);
                r.wake.notify_one();
            }
        }
    }

    /// A ReadIndex round (ensemble `sync`): true once this server has applied everything
    /// committed before it.
    async fn read_barrier(&self) -> bool {
        let rid = self.ctx.rand_u64();
        let WritePath::Ensemble(r) = &*self.path else {
            return true;
        };
        let (tx, rx) = oneshot::channel();
        self.core.borrow_mut().read_index(rid);
        r.reads.borrow_mut().insert(rid, tx);
        r.wake.notify_one();
        let timeout = Duration::from_millis(self.params.negotiated_timeout_ms());
        match self.ctx.timeout(timeout, rx).await {
            Ok(Ok(())) => true,
            _ => {
                r.reads.borrow_mut().remove(&rid);
                self.core.borrow_mut().forget_read(rid);
                false
            }
        }
    }

    /// Answer one request of connection `cid` (session `session`). `None`: close the
    /// connection without an answer.
    pub(super) async fn serve(
        &self,
        cid: ConnId,
        session: SessionId,
        req: Request,
    ) -> Option<Response> {
        // Standalone, a read queues behind the writes being logged (a write takes its
        // own turn).
        let _turn = match &*self.path {
            WritePath::Standalone(gate) if !req.is_write() => Some(gate.turn().await),
            _ => None,
        };
        let write = |op| self.write(op, session);
        match req {
            Request::Ping => Some(Response::Pong),
            Request::Create {
                path, data, mode, ..
            } => reply(write(Op::Create { path, data, mode }).await),
            Request::Delete { path, version } => reply(write(Op::Delete { path, version }).await),
            Request::SetData {
                path,
                data,
                version,
            } => reply(
                write(Op::SetData {
                    path,
                    data,
                    version,
                })
                .await,
            ),
            Request::CloseSession => reply(write(Op::CloseSession).await),
            Request::Exists { path, watch } => {
                Some(match self.core.borrow_mut().exists(cid, &path, watch) {
                    Ok(stat) => Response::Exists { stat },
                    Err(e) => Response::Err(e),
                })
            }
            Request::GetData { path, watch } => {
                Some(match self.core.borrow_mut().get_data(cid, &path, watch) {
                    Ok((data, stat)) => Response::Data { data, stat },
                    Err(e) => Response::Err(e),
                })
            }
            Request::GetChildren { path, watch, .. } => Some(
                match self.core.borrow_mut().get_children(cid, &path, watch) {
                    Ok((children, stat)) => Response::Children { children, stat },
                    Err(e) => Response::Err(e),
                },
            ),
            Request::Sync { path } => self
                .read_barrier()
                .await
                .then_some(Response::Synced { path }),
            Request::Rejected { err, .. } => Some(Response::Err(err)),
            Request::CheckWatches { path, kind } => {
                let core = self.core.borrow();
                Some(match core.check_watches(&path, kind) {
                    Ok(()) => Response::WatchesChecked,
                    Err(e) => Response::Err(e),
                })
            }
            Request::RemoveWatches { path, kind } => {
                let mut core = self.core.borrow_mut();
                Some(match core.remove_watches(cid, &path, kind) {
                    Ok(()) => Response::WatchesRemoved,
                    Err(e) => Response::Err(e),
                })
            }
            Request::SetWatches {
                relative_zxid,
                data,
                exist,
                child,
            } => {
                let effects =
                    self.core
                        .borrow_mut()
                        .set_watches(cid, relative_zxid, [&data, &exist, &child]);
                self.perform(effects);
                Some(Response::WatchesSet)
            }
            Request::Connect { .. } => None,
        }
    }

    /// A message from another server.
    pub(super) fn on_peer(&self, bytes: &[u8]) {
        let Ok(msg) = decode_peer(bytes) else {
            return;
        };
        let raft = matches!(msg, PeerMsg::Raft(_));
        let now = self.ctx.mono_ns();
        self.core.borrow_mut().peer_message(msg, now);
        if let (true, WritePath::Ensemble(r)) = (raft, &*self.path) {
            r.wake.notify_one();
        }
    }

    /// Handle every pending Raft Ready (see [`ZkCore::handle_ready`]).
    pub(super) fn handle_readies(&self) {
        while self.core.borrow().has_ready() {
            let effects = {
                let mut disk = self.ctx.disk();
                let now = self.ctx.mono_ns();
                self.core.borrow_mut().handle_ready(&mut disk, now)
            };
            self.perform(effects);
        }
    }

    /// One Raft tick.
    pub(super) fn tick(&self) {
        self.core.borrow_mut().tick();
    }
}

/// A write's answer to its client.
fn reply(r: Option<(Zxid, WriteResult)>) -> Option<Response> {
    let (_, result) = r?;
    Some(match result {
        Ok(TxnOk::Created { path, stat }) => Response::Created { path, stat },
        Ok(TxnOk::Deleted) => Response::Deleted,
        Ok(TxnOk::Set { stat }) => Response::Set { stat },
        Ok(TxnOk::SessionClosed) => Response::Closed,
        Ok(TxnOk::SessionCreated { .. } | TxnOk::OwnerSet) => Response::Err(ZkError::BadArguments),
        Err(e) => Response::Err(e),
    })
}

/// The event a session close's deletions are recorded as: `revoke` when its client
/// closed it (`closeSession`: the holder gave its nodes up), `expire` when the server
/// expired it.
fn closed_by(by_client: bool) -> &'static str {
    if by_client {
        names::REVOKE
    } else {
        names::EXPIRE
    }
}
