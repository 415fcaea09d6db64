//! A Raft server node (`raft-N`): the network edge and the loops that drive a
//! [`RaftCore`] and its [`Service`] from the node's context.
//!
//! # Shape (after etcd's server)
//!
//! One `Rc<RefCell<Server>>` holds the core, the service, the server's own view of the
//! leadership and the requests waiting for Raft. Several pausable tasks share it:
//!
//! * **Peer receivers** (the accept loop on [`PEER_PORT`]): step every Raft message of a
//!   batch into the core at once and wake the Raft loop — like etcd's raft node
//!   goroutine, which steps messages while the Ready loop is busy. A step can change the
//!   *Raft-level* role at once; the *server-level* view (etcd's `s.lead`, the lessor's
//!   primary flag) changes only when the Raft loop handles the Ready that reports it.
//! * **The Raft loop** (the node's main task; etcd's `raftNode.start`): woken by work or
//!   by its tick timer. Each wake: (1) at a tick, the lessor's expiry check; (2) handle
//!   the Ready: persist (fsync per `fsync`), update the server-level leadership and the
//!   lessor ([`Service::on_role`]), apply committed entries and answer their proposers,
//!   answer reads, queue outgoing messages; (3) at a tick, [`RaftCore::tick`] every
//!   `tick_ms` of the node's *local monotonic* clock (so drift, jumps of the monotonic
//!   offset and pauses reach Raft) and handle that Ready. The order is deliberate: a
//!   lessor that runs before the Ready loop has caught up is etcd's #15247 interleaving,
//!   and a first check after a stall sees the stale tick time, as etcd's would (see
//!   "Catalogue row 18" below).
//! * **Peer senders**, one per peer (etcd's rafthttp pipeline): a bounded queue that drops
//!   new messages when full; each batch is one request whose tiny acknowledgement must
//!   arrive within half an election timeout, else the connection is dropped and the next
//!   batch reconnects. Lost batches are lost: Raft retransmits.
//! * **Client connections** on [`CLIENT_PORT`], one task each, requests in turn:
//!   proposals (Txn, Put, DeleteRange, LeaseGrant, LeaseRevoke) go to the core (a follower
//!   forwards them to its leader) and are answered when *this* node applies them, or with
//!   `Timeout` after `request_timeout_ms`; reads per the `read` key; LeaseKeepAlive by the
//!   server-level leader's lessor — a follower answers `NotLeader` with the leader it
//!   knows as a hint and the client retries there (one hop less than etcd, same outcome),
//!   or, with `forward_lease_calls` (as `locksim serve` runs, for real clients), forwards
//!   it to that leader as etcd does ([`forward`]); a keepalive of an expired lease is held, as etcd's `Renew` blocks, until
//!   the revoke is applied (`LeaseNotFound`) or the node is demoted (`NotLeader`: the
//!   client retries at the new leader, whose promotion extended every lease), or the
//!   request timeout passes; `WaitDelete` from the applied state, like an etcd watch.
//!
//! # Lessor check (`lessor_check`)
//!
//! Every `lessor_check_ms` (at the first tick of the round; etcd: 500 ms) the primary
//! lessor lists the leases it considers expired and the node proposes a `LeaseRevoke`
//! for each. With `"none"` it proposes at once (etcd before
//! PR #16822). With `"ensure-leadership"` (etcd's `ensureLeadership`) it proposes at once
//! only if the Raft loop ticked within the last 3 ticks (etcd's `isActive`); otherwise a
//! task runs a ReadIndex round and proposes only if it succeeds and Raft still names this
//! node leader. The same gate guards LeaseKeepAlive.
//!
//! # Catalogue row 18: what a stale leader can do here
//!
//! * **Cut off from its peers, not from its clients** (`check_quorum = false`): it keeps
//!   ticking and believes it leads, so its lessor keeps renewing the leases of clients
//!   that talk to it — `ensure-leadership` does not help, the node is active — while the
//!   new leader, which never sees those renewals, revokes them: a false renew
//!   (`sims/raft-18-stuck-old-leader.toml`). `check_quorum = true` makes it step down
//!   within an election timeout, and the new leader's lessor extends every lease by one
//!   election timeout when it takes over.
//! * **Whole-process pause**: on resume its lessor acts on stale beliefs at once (the
//!   lessor check runs before the Ready that would demote it), but its Raft core is still
//!   in the old term: the new leader could not reach it during the pause (its sender's
//!   batches time out and its new connections wait for the paused node's accept loop), so
//!   with `lessor_check = "none"` its revokes are appended in the old term and discarded
//!   when it steps down one round trip later, and with `"ensure-leadership"` (not ticked
//!   for the length of the pause) it asks ReadIndex first. The harmful interleaving of
//!   etcd #15247 — Raft already stepped down, the server not yet, the lessor's revokes
//!   forwarded to the new leader — needs a Raft loop stuck while the node keeps stepping
//!   messages: a `disk-stall` fault (`sims/raft-18-disk-stall.toml`; the pause is
//!   `sims/raft-18-paused-old-leader.toml`).
//!
//! # History
//!
//! The node records `event`s: `leader` {term} when it becomes leader; `apply`
//! {index, term, hash} for every committed entry it applies (hash = FNV-1a of the entry's
//! bytes, as 16 hex digits; a restarted node applies its log again from index 1); and
//! `expire` (key = the lock) when it applies a `LeaseRevoke` that deletes the key owning a
//! lock (the first-created key under `lock/`) and it was the leader when that Ready began
//! or is now — the node that committed the entry, which applies it before any other can
//! learn of the commit (even if a higher term deposed it in the same Ready). The value
//! {index} lets a later leader's second record of the same entry (it had not applied it
//! before taking over) be dropped (see [`super::invariants`]). A revoke a client asked
//! for (its `LeaseRevoke` call; locksim's own clients never make it) is a `revoke`
//! instead. Served (`locksim serve`), these values also name the lease and the deleted
//! keys, and a revoke's keys that own no lock get an event of their own (see
//! `record_revoke`).

use super::etcd_api::ApiError;
use super::etcd_grpc::EtcdService;
use super::kv::lock_delay::is_delay_lease;
use super::kv::{LeaseId, RangeRequest, RangeResponse, Request, Response, Revoker, ServiceError};
use super::lease::{ticked_recently, LeaseError};
use super::params::{LessorCheck, RaftParams, ReadMode};
use super::service::{Proposal, Service};
use super::wire::{CLIENT_PORT, PEER_PORT};
use crate::consensus::core::{Committed, Output, ProposeError, RaftCore, Role, SoftState};
use crate::consensus::driver::{self, RaftHost};
use crate::history::values::{Apply, Leader, RaftExpire};
use crate::history::{fnv1a, names, EventType, EventValue};
use crate::net::{serve_peers, GrpcChannel, Mesh};
use crate::sim::NodeCtx;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};

#[path = "node_calls.rs"]
mod calls;
#[path = "node_forward.rs"]
mod forward;
#[path = "node_watch.rs"]
mod watch;

/// The Raft id (1-based) of node `raft-N`.
pub(crate) fn raft_id(name: &str) -> u64 {
    name.strip_prefix("raft-")
        .and_then(|n| n.parse::<u64>().ok())
        .map(|n| n + 1)
        .unwrap_or_else(|| panic!("{name} is not a Raft node"))
}

/// The node name of Raft id `id`.
pub(crate) fn node_name(id: u64) -> String {
    format!("raft-{}", id - 1)
}

/// A read waiting for the node to apply its read index.
struct PendingRead {
    index: u64,
    done: oneshot::Sender<()>,
}

/// The state the node's tasks share.
struct Server {
    id: u64,
    core: RaftCore,
    service: Service,
    /// The leader as of the last Ready handled (etcd's `s.lead`).
    lead: u64,
    /// Local monotonic time of the last tick, ns.
    last_tick_ns: i64,
    /// Proposals waiting to be applied here, by proposal id.
    waiters: BTreeMap<u64, oneshot::Sender<Result<Response, ServiceError>>>,
    /// ReadIndex requests by context id, before Raft answered them.
    reads: BTreeMap<u64, oneshot::Sender<()>>,
    /// ReadIndex answers waiting for the apply index.
    pending_reads: Vec<PendingRead>,
}

impl Server {
    fn is_leader(&self) -> bool {
        self.lead == self.id
    }
}

/// One node: its context, parameters, shared state and wake-ups. Cheap to clone.
#[derive(Clone)]
struct Node {
    ctx: NodeCtx,
    params: Rc<RaftParams>,
    server: Rc<RefCell<Server>>,
    /// Wakes the Raft loop (work to handle).
    wake: Rc<Notify>,
    /// Outboxes to the peers (index = Raft id − 1), drained by the shared senders.
    mesh: Mesh,
    /// Woken when a Ready applied entries or changed the role: keepalives of expired
    /// leases wait on it for the revoke or the demotion.
    lessor_changed: Rc<Notify>,
    /// Woken when a Ready applied entries: watch streams look for new events.
    applied: Rc<Notify>,
    /// Channels to the leaders this node forwarded lessor calls to, by Raft id.
    leader_channels: Rc<RefCell<BTreeMap<u64, GrpcChannel>>>,
}

/// What a Raft node runs, from start to crash. Recovers the log from the node's disk; a
/// restarted node re-applies it from index 1.
pub(crate) async fn server_main(ctx: NodeCtx, params: RaftParams) {
    let id = raft_id(ctx.name());
    let seed = ctx.rand_u64();
    let core = {
        let mut disk = ctx.disk();
        RaftCore::new(id, &params.raft_config(), &mut disk, seed).expect("valid raft configuration")
    };
    let n = params.nodes as usize;
    let server = Server {
        id,
        core,
        service: Service::new(&params),
        lead: 0,
        last_tick_ns: ctx.mono_ns(),
        waiters: BTreeMap::new(),
        reads: BTreeMap::new(),
        pending_reads: Vec::new(),
    };
    let node = Node {
        ctx: ctx.clone(),
        params: Rc::new(params),
        server: Rc::new(RefCell::new(server)),
        wake: Rc::new(Notify::new()),
        mesh: Mesh::new(n),
        lessor_changed: Rc::new(Notify::new()),
        applied: Rc::new(Notify::new()),
        leader_channels: Rc::default(),
    };
    // etcd's rafthttp pipeline: each batch's acknowledgement must arrive within half an
    // election timeout, else the connection is replaced.
    let hosts: Vec<String> = (1..=n as u64).map(node_name).collect();
    let timeout = Duration::from_millis((node.params.election_timeout_ms() / 2).max(1));
    node.mesh
        .spawn_senders(&ctx, (id - 1) as usize, &hosts, PEER_PORT, timeout);
    let receiver = node.clone();
    ctx.spawn(serve_peers(ctx.clone(), PEER_PORT, move |_ctx, msg| {
        receiver.step_message(msg)
    }));
    let (calls, serve_calls) = mpsc::unbounded_channel();
    ctx.spawn(calls::dispatch(node.clone(), serve_calls));
    let service = EtcdService::new(calls, node.params.second_ms());
    ctx.spawn(client_listener(node.clone(), service));
    raft_loop(node).await
}

impl Node {
    fn tick_ns(&self) -> i64 {
        self.params.tick_ms as i64 * 1_000_000
    }

    fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.params.request_timeout_ms())
    }

    /// Step a message from a peer (Raft-level state changes now; the server's view when
    /// the Raft loop handles the Ready).
    fn step_message(&self, msg: &[u8]) {
        // A message for another cluster or a malformed one changes nothing.
        let _ = self.server.borrow_mut().core.step_bytes(msg);
        self.wake.notify_one();
    }

    /// The server's view of the leadership follows a Ready's soft state (etcd's
    /// `updateLeadership`): the lessor is promoted or demoted with it.
    fn update_leadership(&self, s: &mut Server, ss: SoftState) {
        let was_leader = s.is_leader();
        s.lead = ss.leader_id;
        let leader = ss.role == Role::Leader;
        if leader && !was_leader {
            let term = s.core.term();
            tracing::debug!(term, "became leader");
            self.ctx.record(
                self.ctx
                    .event(EventType::Event, names::LEADER)
                    .value(Leader { term }.to_json()),
            );
        }
        if was_leader && !leader {
            tracing::debug!(lead = ss.leader_id, "lost leadership");
        }
        s.service.on_role(leader);
    }

    /// Handle every pending Ready: persist, update the server's view of the leadership,
    /// apply, answer, queue messages. As in etcd's raft loop, the leadership is taken
    /// from the Ready before its entries are saved; a stalled disk then holds the loop in
    /// the save while the peer receivers go on stepping messages (etcd's `wal.Save`), so
    /// the next leadership change reaches the server only with the next Ready.
    async fn handle_ready(&self) {
        let out: Output = {
            let mut s = self.server.borrow_mut();
            if !s.core.has_ready() {
                return;
            }
            let mut disk = self.ctx.disk();
            s.core.process_ready(&mut disk)
        };
        // Led when this Ready began or leads now: then Raft was leader when the commit
        // index advanced, so this node applies the new entries before any other can.
        let led = {
            let mut s = self.server.borrow_mut();
            let led = s.is_leader() || out.soft_state.is_some_and(|ss| ss.role == Role::Leader);
            if let Some(ss) = out.soft_state {
                self.update_leadership(&mut s, ss);
            }
            led
        };
        if out.synced {
            self.ctx.wait_disk().await;
        }
        let now = self.ctx.mono_ns();
        let mut s = self.server.borrow_mut();
        // Apply before sending: in the simulation both take no time, and a follower can
        // only learn of a commit from a message sent after its leader applied it.
        for c in &out.committed {
            self.apply(&mut s, c, led, now);
        }
        for rs in out.read_states {
            let Some(rid) = rs
                .ctx
                .get(..8)
                .map(|b| u64::from_be_bytes(b.try_into().expect("8")))
            else {
                continue;
            };
            if let Some(done) = s.reads.remove(&rid) {
                s.pending_reads.push(PendingRead {
                    index: rs.index,
                    done,
                });
            }
        }
        let applied = s.service.store().applied_index();
        let (ready, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut s.pending_reads)
            .into_iter()
            .partition(|r| r.index <= applied);
        s.pending_reads = waiting;
        for r in ready {
            let _ = r.done.send(());
        }
        if !out.committed.is_empty() {
            self.applied.notify_waiters();
        }
        if out.soft_state.is_some() || !out.committed.is_empty() {
            self.lessor_changed.notify_waiters();
        }
        for m in out.messages {
            // Dropped when the peer's outbox is full, as etcd does: Raft retransmits.
            let _ = self.mesh.send((m.to - 1) as usize, m.encode());
        }
    }

    /// Apply one committed entry: record it; record an `expire` when a revoke removes a
    /// lock's owner key and this node is the first to apply it (`led`: it committed the
    /// entry as leader; see the module docs); apply it; answer its proposer if it waits
    /// here.
    fn apply(&self, s: &mut Server, c: &Committed, led: bool, now: i64) {
        // Hex: EDN and JSON readers lose u64 precision past 2^53.
        let hash = format!("{:016x}", fnv1a(&c.data));
        let value = Apply {
            hash,
            index: c.index,
            term: c.term,
        };
        self.ctx.record(
            self.ctx
                .event(EventType::Event, names::APPLY)
                .value(value.to_json()),
        );
        if led && !c.data.is_empty() {
            if let Ok(Proposal {
                req: Request::LeaseRevoke { id, by },
                ..
            }) = Proposal::decode(&c.data)
            {
                self.record_revoke(&s.service, id, by, c.index);
            }
        }
        let leader = s.is_leader();
        if let Some(applied) = s.service.apply(c, leader, now) {
            if let Some(w) = s.waiters.remove(&applied.id) {
                let _ = w.send(applied.result);
            }
        }
    }

    /// Record what the revoke of lease `id` at log `index`, about to be applied, takes:
    /// an `expire` (the lessor's revoke: the TTL ran out) or a `revoke` (its client's call)
    /// per lock whose owner key it deletes, `key` = the lock.
    ///
    /// Served (`locksim serve`, a live context), each also names the lease and the keys,
    /// and the lease's other keys get one more event without a `key`: a real client's
    /// lock need not follow etcd's `concurrency.Mutex` layout (python-etcd3 locks one key,
    /// `/locks/<name>`), so any leased key may have held a lock, and a user watching
    /// `--events` must see it go. A simulation records the owners only, as before: its
    /// history is the checks' input, and the other keys are waiters no check reads.
    fn record_revoke(&self, service: &Service, id: LeaseId, by: Revoker, index: u64) {
        let f = match by {
            Revoker::Lessor => names::EXPIRE,
            Revoker::Client => names::REVOKE,
        };
        let served = self.ctx.live().is_some();
        let value = |keys: Vec<String>| {
            if served {
                RaftExpire {
                    index,
                    keys,
                    lease: Some(format!("{id:016x}")),
                }
            } else {
                RaftExpire::at(index)
            }
        };
        let owners = owned_locks(service, id);
        for (lock, key) in &owners {
            tracing::debug!(lease = id, lock, "lease revoke removes the owner");
            self.ctx.record(
                self.ctx
                    .event(EventType::Event, f)
                    .key(lock.clone())
                    .value(value(vec![key.clone()]).to_json()),
            );
        }
        if !served || is_delay_lease(id) {
            return;
        }
        let Some(lease) = service.store().lease(id) else {
            return;
        };
        let others: Vec<String> = lease
            .keys
            .iter()
            .filter(|k| !owners.iter().any(|(_, key)| key == *k))
            .cloned()
            .collect();
        // A lease with no keys left held nothing: its expiry is still worth a line (a
        // client stopped its keep-alives).
        if !others.is_empty() || owners.is_empty() {
            self.ctx.record(
                self.ctx
                    .event(EventType::Event, f)
                    .value(value(others).to_json()),
            );
        }
    }

    /// The lessor's periodic check (see the module docs).
    fn lessor_check(&self, now: i64) {
        let expired = self.server.borrow_mut().service.expired_leases(now);
        if expired.is_empty() {
            return;
        }
        let gate = self.params.lessor_check == LessorCheck::EnsureLeadership
            && !ticked_recently(self.server.borrow().last_tick_ns, now, self.params.tick_ms);
        if !gate {
            self.propose_revokes(&expired);
            return;
        }
        // etcd runs the check in its own goroutine: the Raft loop must keep running for
        // the ReadIndex round to complete. That goroutine judges `isActive` at once, as
        // this check just did; judging it again after the Raft loop's next tick would
        // let a node that a stalled disk kept from hearing of its deposition pass
        // (etcd #15247), so the task goes straight to the ReadIndex round.
        let node = self.clone();
        self.ctx.spawn(async move {
            if node.confirm_leadership().await {
                node.propose_revokes(&expired);
            } else {
                tracing::debug!(?expired, "not revoking: leadership not confirmed");
            }
        });
    }

    fn propose_revokes(&self, leases: &[LeaseId]) {
        {
            let mut s = self.server.borrow_mut();
            for &id in leases {
                tracing::debug!(lease = id, "proposing revoke of an expired lease");
                let p = Proposal {
                    id: self.ctx.rand_u64(),
                    req: Request::lease_expiry(id),
                };
                // Dropped without a leader: the lessor lists it again later.
                let _ = s.core.propose(p.encode());
            }
        }
        self.wake.notify_one();
    }

    /// etcd's `ensureLeadership`: active (ticked within 3 ticks), or a ReadIndex round
    /// succeeded and Raft still names this node leader.
    async fn ensure_leadership(&self) -> bool {
        let now = self.ctx.mono_ns();
        if ticked_recently(self.server.borrow().last_tick_ns, now, self.params.tick_ms) {
            return true;
        }
        self.confirm_leadership().await
    }

    /// The slow half of `ensureLeadership`: a ReadIndex round succeeds and Raft still
    /// names this node leader.
    async fn confirm_leadership(&self) -> bool {
        if self.read_barrier().await.is_err() {
            return false;
        }
        let s = self.server.borrow();
        s.core.leader_id() == s.id
    }

    /// A ReadIndex round: returns once this node has applied the index the leader
    /// confirmed (or fails after the request timeout).
    async fn read_barrier(&self) -> Result<(), ApiError> {
        let rid = self.ctx.rand_u64();
        let (tx, rx) = oneshot::channel();
        {
            let mut s = self.server.borrow_mut();
            s.core.read_index(rid.to_be_bytes().to_vec());
            s.reads.insert(rid, tx);
        }
        self.wake.notify_one();
        match self.ctx.timeout(self.request_timeout(), rx).await {
            Ok(Ok(())) => Ok(()),
            _ => {
                self.server.borrow_mut().reads.remove(&rid);
                Err(ApiError::Timeout)
            }
        }
    }

    async fn propose(&self, req: Request) -> Result<Response, ApiError> {
        let pid = self.ctx.rand_u64();
        let (tx, rx) = oneshot::channel();
        {
            let mut s = self.server.borrow_mut();
            match s.core.propose(Proposal { id: pid, req }.encode()) {
                Ok(()) => {
                    s.waiters.insert(pid, tx);
                }
                Err(ProposeError::Dropped) | Err(ProposeError::Raft(_)) => {
                    return Err(ApiError::NoLeader);
                }
            }
        }
        self.wake.notify_one();
        match self.ctx.timeout(self.request_timeout(), rx).await {
            Ok(Ok(Ok(resp))) => Ok(resp),
            Ok(Ok(Err(e))) => Err(ApiError::Service(e)),
            _ => {
                self.server.borrow_mut().waiters.remove(&pid);
                Err(ApiError::Timeout)
            }
        }
    }

    /// A read: after a ReadIndex round unless the node reads locally or the request is
    /// `serializable` (etcd serves those from its own state).
    async fn range(&self, r: RangeRequest) -> Result<RangeResponse, ApiError> {
        if self.params.read != ReadMode::Local && !r.serializable {
            self.read_barrier().await?;
        }
        let s = self.server.borrow();
        Ok(s.service.store().range(&r)?)
    }

    /// LeaseKeepAlive: the TTL granted, ms.
    async fn keep_alive(&self, id: LeaseId) -> Result<u64, ApiError> {
        if !self.server.borrow().is_leader() {
            return Err(not_leader(&self.server.borrow()));
        }
        if self.params.lessor_check == LessorCheck::EnsureLeadership
            && !self.ensure_leadership().await
        {
            let s = self.server.borrow();
            return Err(ApiError::NotLeader {
                hint: s.core.leader_id(),
            });
        }
        let deadline = self.ctx.mono_ns() + self.request_timeout().as_nanos() as i64;
        loop {
            // Registered before the check: a Ready handled after it still wakes us.
            let changed = self.lessor_changed.notified();
            let now = self.ctx.mono_ns();
            if let Some(reply) = self.renew(id, now) {
                return reply;
            }
            let left = (deadline - now).max(0) as u64;
            if self
                .ctx
                .timeout(Duration::from_nanos(left), changed)
                .await
                .is_err()
            {
                return Err(ApiError::Timeout);
            }
        }
    }

    /// One renew attempt at `now`: the answer, or `None` while the lease is expired and
    /// its revoke not yet applied (the caller waits for the next change).
    fn renew(&self, id: LeaseId, now: i64) -> Option<Result<u64, ApiError>> {
        let mut s = self.server.borrow_mut();
        match s.service.keep_alive(id, now) {
            Ok(ttl_ms) => {
                tracing::debug!(lease = id, "lease renewed");
                Some(Ok(ttl_ms))
            }
            // Leader, but the lessor is not promoted yet (its term's no-op is not
            // applied), or demoted while this renew waited: the client retries at the new
            // leader, whose promotion extended every lease.
            Err(LeaseError::NotPrimary) => Some(Err(not_leader(&s))),
            // Revoked (possibly while this renew waited).
            Err(LeaseError::NotFound) => Some(Err(ServiceError::LeaseNotFound.into())),
            // etcd's `Renew` blocks on an expired lease until its revoke applies or the
            // lessor is demoted; the request timeout bounds the wait here (the client
            // gives up on the request then anyway).
            Err(LeaseError::Expired) => None,
        }
    }
}

/// `NotLeader`, with the leader this node knows as a hint.
fn not_leader(s: &Server) -> ApiError {
    ApiError::NotLeader {
        hint: if s.lead != 0 {
            s.lead
        } else {
            s.core.leader_id()
        },
    }
}

/// The keys of lease `id` that own their lock (the first-created key under `lock/`), each
/// with its lock name. A delay lease owns nothing: its key only holds a lock-delay, and
/// the holder's `expire` was recorded when its own lease was revoked.
fn owned_locks(service: &Service, id: LeaseId) -> Vec<(String, String)> {
    let store = service.store();
    if is_delay_lease(id) {
        return Vec::new();
    }
    let Some(lease) = store.lease(id) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for key in &lease.keys {
        let Some((lock, _)) = key.rsplit_once('/') else {
            continue;
        };
        let first = store.range(&RangeRequest::first_created(format!("{lock}/")));
        let owner = first.ok().and_then(|r| r.kvs.into_iter().next());
        if owner.is_some_and(|kv| &kv.key == key) {
            out.push((lock.to_string(), key.clone()));
        }
    }
    out
}

/// The raft family's side of the shared Raft driver (see the module docs for the order of
/// its steps): etcd's lessor check at the first tick of each `lessor_check_ms` round.
struct EtcdHost {
    node: Node,
    lessor_every: i64,
    next_lessor_check: Cell<i64>,
}

impl RaftHost for EtcdHost {
    async fn handle_ready(&self) {
        self.node.handle_ready().await;
    }

    fn tick(&self, now: i64) {
        let mut s = self.node.server.borrow_mut();
        s.core.tick();
        s.last_tick_ns = now;
    }

    // etcd's lessor runs its own 500 ms loop; here it runs at the first tick of each
    // `lessor_check_ms` round (a tick is far shorter than a round).
    fn before_tick(&self, now: i64) {
        if now >= self.next_lessor_check.get() {
            self.node.lessor_check(now);
            self.next_lessor_check.set(now + self.lessor_every);
        }
    }
}

/// The Raft loop: the shared driver with etcd's lessor check.
async fn raft_loop(node: Node) {
    let ctx = node.ctx.clone();
    let host = EtcdHost {
        lessor_every: node.params.lessor_check_ms() as i64 * 1_000_000,
        next_lessor_check: Cell::new(ctx.mono_ns()),
        node: node.clone(),
    };
    driver::drive(&ctx, &node.wake, node.tick_ns(), &host).await
}

/// Accepts lock clients: one HTTP/2 connection each, serving etcd's gRPC services.
async fn client_listener(node: Node, service: EtcdService) {
    let listener = crate::net::listen(&node.ctx, CLIENT_PORT)
        .await
        .expect("bind on a fresh simulated host cannot fail");
    loop {
        let Ok(stream) = listener.accept().await else {
            continue;
        };
        let router = service.clone().router();
        let ctx = node.ctx.clone();
        node.ctx.spawn(async move {
            // A connection that fails is the client's to redo.
            let _ = crate::net::serve_grpc_connection(ctx, stream, router).await;
        });
    }
}
