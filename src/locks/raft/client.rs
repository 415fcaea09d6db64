//! The lock client's view of the cluster: an etcd-like client over the Raft nodes' client
//! port ([`EtcdClient`]) and a [`Session`] (etcd's `concurrency.Session`: a lease kept
//! alive by a background task).
//!
//! # Endpoints and retries
//!
//! The client talks to one *preferred* node (shared by the lock calls and the keepalive
//! task of a client node, starting at `client-N`'s `N mod nodes`). A `NotLeader` answer
//! moves it to the hinted leader; a timeout, a broken connection or `NoLeader` moves it to
//! the next node. A request is retried inside one call only when it cannot have taken
//! effect: a read, a keepalive, a watch, or a proposal that was refused before Raft took
//! it (`NoLeader`, a failed connect). A proposal whose answer was lost is reported as
//! such, never retried: retrying would hide an effect from the history.
//!
//! # Session (client/v3/concurrency/session.go)
//!
//! `LeaseGrant` with a client-chosen random id (etcd's server picks it; the effect is the
//! same), then the keepalive task, spawned with `ctx.spawn` (so it freezes with its
//! process), which runs etcd's two client loops (client/v3/lease.go):
//!
//! * **send** (`sendKeepAliveLoop`): rounds `keepalive_retry_ms` apart (etcd: 500 ms). The
//!   first keepalive goes at once after the grant; after an answer the next is due a
//!   third of the TTL later, sent at the first round after that; a keepalive without an
//!   answer is sent again at the next round. An answer with a TTL moves the session's
//!   validity to *answer time + TTL* (etcd's `ka.deadline`); `LeaseNotFound` (etcd's TTL
//!   0, which the server sends once an expired lease's revoke is applied) ends the
//!   session and cuts the validity to now.
//! * **deadline** (`deadlineLoop`): every `deadline_check_ms` (etcd: 1 s), a session
//!   whose validity passed without an answer ends.
//!
//! The end of a session is etcd's `Session.Done()`: with `on_session_lost = "stop"` the
//! holder stops working then. A lock call makes a new session. Unlike etcd, the first
//! deadline is the grant's answer + TTL, not the client's `firstKeepAliveTimeout` (dial
//! timeout + 1 s): the grant's validity never outlives the TTL the server promised.

use super::kv::{LeaseId, RangeRequest, RangeResponse, Request, Response};
use super::params::RaftParams;
use super::wire::{
    decode_json, request_frame, ClientReply, ClientRequest, ReplyError, CLIENT_PORT,
};
use crate::net::{CallError, Frames, Remote};
use crate::sim::NodeCtx;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;

/// Why a call got no useful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallFailure {
    /// The node answered with an error.
    Reply(ReplyError),
    /// No answer: the transport failed.
    Transport(CallError),
}

impl CallFailure {
    /// Whether the request may have taken effect.
    pub fn maybe_applied(&self) -> bool {
        match self {
            CallFailure::Reply(e) => e.maybe_applied(),
            CallFailure::Transport(e) => e.maybe_applied(),
        }
    }
}

impl std::fmt::Display for CallFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallFailure::Reply(e) => write!(f, "{e}"),
            CallFailure::Transport(e) => write!(f, "{e}"),
        }
    }
}

/// A client of the Raft cluster (one per task: a [`Remote`] has one request in flight).
pub struct EtcdClient {
    remotes: Vec<Remote<Frames>>,
    preferred: Rc<Cell<usize>>,
    tick: Duration,
}

impl EtcdClient {
    /// A client of `params.nodes` nodes whose requests time out after
    /// `request_timeout_ms`, preferring the node `preferred` names (shared).
    pub fn new(params: &RaftParams, preferred: Rc<Cell<usize>>) -> EtcdClient {
        let timeout = Duration::from_millis(params.request_timeout_ms());
        EtcdClient {
            remotes: (0..params.nodes)
                .map(|i| Remote::new(&format!("raft-{i}"), CLIENT_PORT, timeout, Frames))
                .collect(),
            preferred,
            tick: Duration::from_millis(params.tick_ms),
        }
    }

    /// The per-request deadline.
    pub fn timeout(&self) -> Duration {
        self.remotes[0].timeout()
    }

    fn next(&self) {
        let n = self.remotes.len();
        self.preferred.set((self.preferred.get() + 1) % n);
    }

    /// Follow a failure's hint, or move on to the next node.
    fn redirect(&self, f: &CallFailure) {
        match f {
            CallFailure::Reply(ReplyError::NotLeader { hint })
                if *hint >= 1 && *hint as usize <= self.remotes.len() =>
            {
                let to = (*hint - 1) as usize;
                if to == self.preferred.get() {
                    self.next();
                } else {
                    self.preferred.set(to);
                }
            }
            _ => self.next(),
        }
    }

    /// One request to the preferred node, no retry.
    pub async fn call_once(
        &mut self,
        ctx: &NodeCtx,
        req: &ClientRequest,
    ) -> Result<ClientReply, CallFailure> {
        let i = self.preferred.get() % self.remotes.len();
        let frame = request_frame(req);
        let payload = self.remotes[i]
            .request(ctx, &frame)
            .await
            .map_err(CallFailure::Transport)?;
        match decode_json::<ClientReply>(&payload) {
            Ok(ClientReply::Err(e)) => Err(CallFailure::Reply(e)),
            Ok(r) => Ok(r),
            Err(e) => {
                self.remotes[i].disconnect();
                Err(CallFailure::Transport(CallError::Io(e)))
            }
        }
    }

    /// A request with retries, on other nodes, while it cannot have taken effect and
    /// `deadline` (local mono ns) has not passed. `idempotent`: it has no effect at all
    /// (a read, a keepalive, a watch), so even a lost answer is retried.
    pub async fn call(
        &mut self,
        ctx: &NodeCtx,
        req: &ClientRequest,
        idempotent: bool,
        deadline: i64,
    ) -> Result<ClientReply, CallFailure> {
        loop {
            let failure = match self.call_once(ctx, req).await {
                Ok(r) => return Ok(r),
                Err(f) => f,
            };
            let retry = match &failure {
                CallFailure::Reply(ReplyError::NotLeader { .. } | ReplyError::NoLeader) => true,
                CallFailure::Reply(ReplyError::Timeout) | CallFailure::Transport(_) => {
                    idempotent || !failure.maybe_applied()
                }
                CallFailure::Reply(_) => false,
            };
            if !retry || ctx.mono_ns() >= deadline {
                return Err(failure);
            }
            let before = self.preferred.get();
            self.redirect(&failure);
            // Only a hint to another node is worth following at once. Otherwise the
            // cluster needs a moment (an election, a new leader applying its first entry)
            // or the node is down: do not spin (a refused connect also costs turmoil an
            // ephemeral port that is never given back).
            let hinted_elsewhere = match failure {
                CallFailure::Reply(ReplyError::NotLeader { hint }) => {
                    hint != 0 && hint as usize != before + 1
                }
                _ => false,
            };
            if !hinted_elsewhere {
                ctx.sleep(self.tick).await;
            }
        }
    }

    /// Propose `req` through the log: the response, or why not (`maybe_applied` says
    /// whether it may still have taken effect).
    pub async fn propose(
        &mut self,
        ctx: &NodeCtx,
        req: Request,
        deadline: i64,
    ) -> Result<Response, CallFailure> {
        match self
            .call(ctx, &ClientRequest::Propose(req), false, deadline)
            .await?
        {
            ClientReply::Ok(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// A read (per the nodes' `read` mode), retried until `deadline`.
    pub async fn range(
        &mut self,
        ctx: &NodeCtx,
        r: RangeRequest,
        deadline: i64,
    ) -> Result<RangeResponse, CallFailure> {
        match self
            .call(ctx, &ClientRequest::Range(r), true, deadline)
            .await?
        {
            ClientReply::Ok(Response::Range(r)) => Ok(r),
            other => Err(unexpected(other)),
        }
    }
}

fn unexpected(reply: ClientReply) -> CallFailure {
    CallFailure::Transport(CallError::Io(format!("unexpected reply {reply:?}")))
}

/// What a session's keepalive task shares with its holder.
struct Shared {
    /// End of validity on the client's monotonic clock, ns: last keepalive answer + TTL,
    /// cut to the moment a keepalive learns the lease is gone.
    valid_until: Rc<Cell<i64>>,
    /// Set when the session ends (etcd's `Done()` closes).
    lost: Cell<bool>,
    /// Woken when the session ends.
    done: Notify,
}

impl Shared {
    fn end(&self) {
        self.lost.set(true);
        self.done.notify_waiters();
    }
}

/// A lease kept alive in the background (etcd's `Session`).
pub struct Session {
    /// The lease.
    pub lease: LeaseId,
    /// End of validity on the client's monotonic clock, ns (shared with the grants made
    /// under this session): last keepalive answer + TTL.
    pub valid_until: Rc<Cell<i64>>,
    shared: Rc<Shared>,
    keepalive: tokio::task::JoinHandle<()>,
}

impl Session {
    /// Grant a lease (a random id) and start keeping it alive. `Err` when the grant got
    /// no answer before `deadline` (a lease granted without our knowing simply expires).
    pub async fn start(
        ctx: &NodeCtx,
        client: &mut EtcdClient,
        params: &RaftParams,
        preferred: Rc<Cell<usize>>,
        deadline: i64,
    ) -> Result<Session, CallFailure> {
        // 63 bits, never 0 (etcd's NoLease): printable as a positive hex key suffix.
        let lease = (ctx.rand_u64() >> 1).max(1);
        let req = Request::LeaseGrant {
            id: lease,
            ttl_ms: params.ttl_ms,
        };
        let ttl_ms = match client.propose(ctx, req, deadline).await? {
            Response::LeaseGrant { ttl_ms, .. } => ttl_ms,
            other => return Err(unexpected(ClientReply::Ok(other))),
        };
        let valid_until = Rc::new(Cell::new(ctx.mono_ns() + ms(ttl_ms)));
        let shared = Rc::new(Shared {
            valid_until: valid_until.clone(),
            lost: Cell::new(false),
            done: Notify::new(),
        });
        let task = keepalive(
            ctx.clone(),
            EtcdClient::new(params, preferred),
            lease,
            Timers::of(params),
            shared.clone(),
        );
        tracing::debug!(lease, ttl_ms, "session started");
        Ok(Session {
            lease,
            valid_until,
            shared,
            keepalive: ctx.spawn(task),
        })
    }

    /// Whether the session can still be used: not ended, validity ahead of `now_ns`.
    pub fn alive(&self, now_ns: i64) -> bool {
        !self.shared.lost.get() && now_ns < self.valid_until.get()
    }

    /// Completes when the session ends (etcd's `Session.Done()`): a keepalive answer
    /// said the lease is gone, the deadline check found no answer within the TTL, or the
    /// session was orphaned.
    pub fn done(&self) -> impl std::future::Future<Output = ()> + 'static {
        let shared = self.shared.clone();
        async move {
            loop {
                // Registered before the check, so an end in between still wakes us.
                let woken = shared.done.notified();
                if shared.lost.get() {
                    return;
                }
                woken.await;
            }
        }
    }

    /// Stop keeping the lease alive (etcd's `Orphan`): it expires on its own.
    pub fn orphan(&self) {
        self.keepalive.abort();
        self.shared.end();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.keepalive.abort();
    }
}

fn ms(ms: u64) -> i64 {
    ms as i64 * 1_000_000
}

/// The client's keepalive timers (see the module docs).
#[derive(Debug, Clone, Copy)]
struct Timers {
    /// The send loop's round.
    retry: Duration,
    /// The deadline loop's period.
    deadline_check: Duration,
}

impl Timers {
    fn of(params: &RaftParams) -> Timers {
        Timers {
            retry: Duration::from_millis(params.keepalive_retry_ms()),
            deadline_check: Duration::from_millis(params.deadline_check_ms()),
        }
    }
}

/// The keepalive task of one session: etcd's send loop and deadline loop side by side;
/// the session ends when either does.
async fn keepalive(
    ctx: NodeCtx,
    mut client: EtcdClient,
    lease: LeaseId,
    timers: Timers,
    shared: Rc<Shared>,
) {
    tokio::select! {
        biased;
        _ = deadline_loop(&ctx, &shared, timers.deadline_check) => {
            tracing::debug!(lease, "session expired: no keepalive answer within the TTL");
        }
        _ = send_loop(&ctx, &mut client, lease, &shared, timers.retry) => {
            tracing::debug!(lease, "session lost: the leader does not know the lease");
        }
    }
    shared.end();
}

/// etcd's `deadlineLoop`: every `every`, end the session if its deadline passed.
async fn deadline_loop(ctx: &NodeCtx, shared: &Shared, every: Duration) {
    loop {
        ctx.sleep(every).await;
        if ctx.mono_ns() > shared.valid_until.get() {
            return;
        }
    }
}

/// etcd's `sendKeepAliveLoop`: each round, send a keepalive if the next one is due (the
/// first at once; then a third of the TTL after each answer; an unanswered one again at
/// the next round), then wait a round. Returns when an answer says the lease is gone,
/// after cutting the validity to now.
async fn send_loop(
    ctx: &NodeCtx,
    client: &mut EtcdClient,
    lease: LeaseId,
    shared: &Shared,
    every: Duration,
) {
    let mut next = ctx.mono_ns();
    loop {
        if ctx.mono_ns() >= next {
            match renew(ctx, client, lease).await {
                Ok(ttl_ms) => {
                    let now = ctx.mono_ns();
                    shared.valid_until.set(now + ms(ttl_ms));
                    next = now + ms(ttl_ms) / 3;
                }
                Err(Some(ReplyError::LeaseNotFound)) => {
                    let now = ctx.mono_ns();
                    shared.valid_until.set(shared.valid_until.get().min(now));
                    return;
                }
                // No answer: sent again next round.
                Err(_) => {}
            }
        }
        ctx.sleep(every).await;
    }
}

/// One keepalive: the TTL, or the node's error (`None`: no answer). `NotLeader` and
/// `NoLeader` are retried on the hinted (or next) node for up to a request timeout, as
/// etcd's server forwards a renew to the leader and waits for one to exist.
async fn renew(
    ctx: &NodeCtx,
    client: &mut EtcdClient,
    lease: LeaseId,
) -> Result<u64, Option<ReplyError>> {
    let req = ClientRequest::KeepAlive { id: lease };
    let deadline = ctx.mono_ns() + client.timeout().as_nanos() as i64;
    loop {
        let before = client.preferred.get();
        let failure = match client.call_once(ctx, &req).await {
            Ok(ClientReply::KeepAlive { ttl_ms }) => {
                tracing::debug!(lease, node = before, "keepalive answered by raft-{before}");
                return Ok(ttl_ms);
            }
            Ok(_) => return Err(None),
            Err(f) => f,
        };
        client.redirect(&failure);
        match failure {
            CallFailure::Reply(ReplyError::NotLeader { hint })
                if hint != 0 && hint as usize != before + 1 && ctx.mono_ns() < deadline => {}
            CallFailure::Reply(ReplyError::NotLeader { .. } | ReplyError::NoLeader)
                if ctx.mono_ns() < deadline =>
            {
                ctx.sleep(client.tick).await
            }
            CallFailure::Reply(e) => return Err(Some(e)),
            CallFailure::Transport(_) => return Err(None),
        }
    }
}
