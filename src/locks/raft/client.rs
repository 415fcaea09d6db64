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

use super::etcd_api::ApiError;
use super::etcd_client_api as wire;
use super::etcdpb::etcdserverpb as pb;
use super::etcdpb::etcdserverpb::watch_client::WatchClient;
use super::etcdpb::etcdserverpb::{kv_client::KvClient, lease_client::LeaseClient};
use super::kv::{KeySpec, LeaseId, RangeRequest, RangeResponse, Request, Response, ServiceError};
use super::params::RaftParams;
use super::wire::CLIENT_PORT;
use crate::net::{ChannelError, Deadlines, GrpcChannel};
use crate::sim::NodeCtx;
use std::cell::Cell;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tonic::Status;

/// Why a call got no useful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallFailure {
    /// The node answered with one of etcd's errors.
    Reply(ApiError),
    /// No answer: the transport failed. `sent`: the request may have reached the node.
    Transport {
        /// The request may have reached the node.
        sent: bool,
        /// What failed.
        error: String,
    },
}

impl CallFailure {
    /// Whether the request may have taken effect.
    pub(crate) fn maybe_applied(&self) -> bool {
        match self {
            CallFailure::Reply(e) => e.maybe_applied(),
            CallFailure::Transport { sent, .. } => *sent,
        }
    }

    /// What a failed RPC's status says: one of etcd's errors, or the transport's.
    fn of_status(s: Status) -> CallFailure {
        if let Some(e) = ApiError::of_status(&s) {
            return CallFailure::Reply(e);
        }
        let channel = std::error::Error::source(&s).and_then(|e| e.downcast_ref::<ChannelError>());
        match channel {
            Some(c) => CallFailure::Transport {
                sent: c.sent(),
                error: c.to_string(),
            },
            // The node answered with another status: nothing applied, nothing to retry.
            None if s.code() != tonic::Code::Unknown && s.code() != tonic::Code::Unavailable => {
                CallFailure::Reply(ApiError::Other(s.code() as i32, s.message().to_string()))
            }
            None => CallFailure::Transport {
                sent: true,
                error: s.to_string(),
            },
        }
    }
}

impl std::fmt::Display for CallFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallFailure::Reply(e) => write!(f, "{e}"),
            CallFailure::Transport { error, .. } => write!(f, "{error}"),
        }
    }
}

/// A client of the Raft cluster over etcd's gRPC API: one channel per node.
pub(crate) struct EtcdClient {
    channels: Vec<GrpcChannel>,
    preferred: Rc<Cell<usize>>,
    tick: Duration,
    timeout: Duration,
    second_ms: u64,
}

impl EtcdClient {
    /// A client of `params.nodes` nodes whose requests time out after
    /// `request_timeout_ms`, preferring the node `preferred` names (shared).
    pub(crate) fn new(
        ctx: &NodeCtx,
        params: &RaftParams,
        preferred: Rc<Cell<usize>>,
    ) -> EtcdClient {
        let timeout = Duration::from_millis(params.request_timeout_ms());
        let deadlines = Deadlines {
            connect: timeout,
            call: timeout,
        };
        EtcdClient {
            channels: (0..params.nodes)
                .map(|i| {
                    GrpcChannel::with_deadlines(
                        ctx.clone(),
                        &format!("raft-{i}"),
                        CLIENT_PORT,
                        deadlines,
                    )
                })
                .collect(),
            preferred,
            tick: Duration::from_millis(params.tick_ms),
            timeout,
            second_ms: params.second_ms(),
        }
    }

    /// The per-request deadline.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Move on to the next node.
    pub(crate) fn next_node(&self) {
        self.next();
    }

    /// The nodes' Raft tick: how long to wait before trying again.
    pub(crate) fn tick(&self) -> Duration {
        self.tick
    }

    fn next(&self) {
        let n = self.channels.len();
        self.preferred.set((self.preferred.get() + 1) % n);
    }

    /// Follow a failure's hint, or move on to the next node.
    fn redirect(&self, f: &CallFailure) {
        match f {
            CallFailure::Reply(ApiError::NotLeader { hint })
                if *hint >= 1 && *hint as usize <= self.channels.len() =>
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

    fn channel(&self) -> GrpcChannel {
        self.channels[self.preferred.get() % self.channels.len()].clone()
    }

    /// One request to the preferred node, no retry.
    pub(crate) async fn call_once(&self, req: &Request) -> Result<Response, CallFailure> {
        let mut kv = KvClient::new(self.channel());
        let mut lease = LeaseClient::new(self.channel());
        let answer = match req {
            Request::Put(p) => kv
                .put(wire::put_pb(p))
                .await
                .map(|r| Response::Put(wire::put_of(r.into_inner()))),
            Request::DeleteRange(d) => kv
                .delete_range(wire::delete_pb(d))
                .await
                .map(|r| Response::DeleteRange(wire::delete_of(r.into_inner()))),
            Request::Range(r) => kv
                .range(wire::range_pb(r))
                .await
                .map(|r| Response::Range(wire::range_of(r.into_inner()))),
            Request::Txn(t) => kv
                .txn(wire::txn_pb(t))
                .await
                .map(|r| Response::Txn(wire::txn_of(r.into_inner()))),
            Request::Compact { revision } => kv
                .compact(pb::CompactionRequest {
                    revision: *revision as i64,
                    physical: false,
                })
                .await
                .map(|r| Response::Compact {
                    revision: r.into_inner().header.map_or(0, |h| h.revision as u64),
                }),
            Request::LeaseGrant { id, ttl_ms } => lease
                .lease_grant(pb::LeaseGrantRequest {
                    ttl: ttl_ms.div_ceil(self.second_ms) as i64,
                    id: *id as i64,
                })
                .await
                .map(|r| {
                    let r = r.into_inner();
                    Response::LeaseGrant {
                        revision: r.header.map_or(0, |h| h.revision as u64),
                        id: r.id as u64,
                        ttl_ms: r.ttl.max(0) as u64 * self.second_ms,
                    }
                }),
            Request::LeaseRevoke { id, .. } => lease
                .lease_revoke(pb::LeaseRevokeRequest { id: *id as i64 })
                .await
                .map(|r| Response::LeaseRevoke {
                    revision: r.into_inner().header.map_or(0, |h| h.revision as u64),
                }),
        };
        answer.map_err(CallFailure::of_status)
    }

    /// A request with retries, on other nodes, while it cannot have taken effect and
    /// `deadline` (local mono ns) has not passed. `idempotent`: it has no effect at all
    /// (a read), so even a lost answer is retried.
    pub(crate) async fn call(
        &mut self,
        ctx: &NodeCtx,
        req: &Request,
        idempotent: bool,
        deadline: i64,
    ) -> Result<Response, CallFailure> {
        loop {
            let failure = match self.call_once(req).await {
                Ok(r) => return Ok(r),
                Err(f) => f,
            };
            let retry = match &failure {
                CallFailure::Reply(ApiError::NotLeader { .. } | ApiError::NoLeader) => true,
                CallFailure::Reply(ApiError::Timeout) | CallFailure::Transport { .. } => {
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
                CallFailure::Reply(ApiError::NotLeader { hint }) => {
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
    pub(crate) async fn propose(
        &mut self,
        ctx: &NodeCtx,
        req: Request,
        deadline: i64,
    ) -> Result<Response, CallFailure> {
        self.call(ctx, &req, false, deadline).await
    }

    /// A read (per the nodes' `read` mode), retried until `deadline`.
    pub(crate) async fn range(
        &mut self,
        ctx: &NodeCtx,
        r: RangeRequest,
        deadline: i64,
    ) -> Result<RangeResponse, CallFailure> {
        match self.call(ctx, &Request::Range(r), true, deadline).await? {
            Response::Range(r) => Ok(r),
            other => Err(unexpected(other)),
        }
    }

    /// One keepalive on a `LeaseKeepAlive` stream of the preferred node: the TTL granted,
    /// ms (0: the lease is gone, etcd's answer to a renew of an unknown lease).
    pub(crate) async fn keep_alive_once(
        &self,
        ctx: &NodeCtx,
        lease: LeaseId,
    ) -> Result<u64, CallFailure> {
        let (tx, rx) = mpsc::channel(1);
        let _ = tx.try_send(pb::LeaseKeepAliveRequest { id: lease as i64 });
        let mut client = LeaseClient::new(self.channel());
        let answer = async {
            let mut replies = client
                .lease_keep_alive(Requests(rx))
                .await
                .map_err(CallFailure::of_status)?
                .into_inner();
            match replies.message().await {
                Ok(Some(r)) => Ok(r.ttl.max(0) as u64 * self.second_ms),
                Ok(None) => Err(lost("the keepalive stream ended")),
                Err(s) => Err(CallFailure::of_status(s)),
            }
        };
        let out = ctx.timeout(self.timeout, answer).await;
        drop(tx);
        out.unwrap_or_else(|_| Err(lost("keepalive: deadline passed")))
    }

    /// A watch on `key` from revision `rev` at the preferred node: `Ok(true)` once it
    /// reports a delete of the key, `Ok(false)` if none came within `wait` (local time).
    pub(crate) async fn watch_delete(
        &self,
        ctx: &NodeCtx,
        key: &str,
        rev: u64,
        wait: Duration,
    ) -> Result<bool, CallFailure> {
        let (tx, rx) = mpsc::channel(1);
        let _ = tx.try_send(wire::watch_create_pb(&KeySpec::key(key), rev));
        let mut client = WatchClient::new(self.channel());
        let watch = async {
            let mut replies = client
                .watch(Requests(rx))
                .await
                .map_err(CallFailure::of_status)?
                .into_inner();
            loop {
                match replies.message().await {
                    Ok(Some(r)) if r.canceled => return Err(lost("the watch was canceled")),
                    Ok(Some(r)) => {
                        let delete = super::etcdpb::mvccpb::event::EventType::Delete as i32;
                        if r.events.iter().any(|e| e.r#type == delete) {
                            return Ok(true);
                        }
                    }
                    Ok(None) => return Err(lost("the watch stream ended")),
                    Err(s) => return Err(CallFailure::of_status(s)),
                }
            }
        };
        let out = ctx.timeout(wait, watch).await;
        drop(tx);
        out.unwrap_or(Ok(false))
    }
}

fn lost(what: &str) -> CallFailure {
    CallFailure::Transport {
        sent: true,
        error: what.to_string(),
    }
}

fn unexpected(reply: Response) -> CallFailure {
    lost(&format!("unexpected reply {reply:?}"))
}

/// The requests of a client stream: what the sender half sends, until it is dropped.
struct Requests<T>(mpsc::Receiver<T>);

impl<T> tokio_stream::Stream for Requests<T> {
    type Item = T;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.0.poll_recv(cx)
    }
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
pub(crate) struct Session {
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
    pub(crate) async fn start(
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
            other => return Err(unexpected(other)),
        };
        let valid_until = Rc::new(Cell::new(ctx.mono_ns() + ms(ttl_ms)));
        let shared = Rc::new(Shared {
            valid_until: valid_until.clone(),
            lost: Cell::new(false),
            done: Notify::new(),
        });
        let task = keepalive(
            ctx.clone(),
            EtcdClient::new(ctx, params, preferred),
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
    pub(crate) fn alive(&self, now_ns: i64) -> bool {
        !self.shared.lost.get() && now_ns < self.valid_until.get()
    }

    /// Completes when the session ends (etcd's `Session.Done()`): a keepalive answer
    /// said the lease is gone, the deadline check found no answer within the TTL, or the
    /// session was orphaned.
    pub(crate) fn done(&self) -> impl std::future::Future<Output = ()> + 'static {
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
    pub(crate) fn orphan(&self) {
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
                Err(Some(ApiError::Service(ServiceError::LeaseNotFound))) => {
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

/// One keepalive: the TTL, or the node's error (`None`: no answer; a TTL of 0 is
/// `LeaseNotFound`). `NotLeader` and `NoLeader` are retried on the hinted (or next) node
/// for up to a request timeout, as etcd's server forwards a renew to the leader and
/// waits for one to exist.
async fn renew(
    ctx: &NodeCtx,
    client: &mut EtcdClient,
    lease: LeaseId,
) -> Result<u64, Option<ApiError>> {
    let deadline = ctx.mono_ns() + client.timeout().as_nanos() as i64;
    loop {
        let before = client.preferred.get();
        let failure = match client.keep_alive_once(ctx, lease).await {
            Ok(0) => return Err(Some(ApiError::Service(ServiceError::LeaseNotFound))),
            Ok(ttl_ms) => {
                tracing::debug!(lease, node = before, "keepalive answered by raft-{before}");
                return Ok(ttl_ms);
            }
            Err(f) => f,
        };
        client.redirect(&failure);
        match failure {
            CallFailure::Reply(ApiError::NotLeader { hint })
                if hint != 0 && hint as usize != before + 1 && ctx.mono_ns() < deadline => {}
            CallFailure::Reply(ApiError::NotLeader { .. } | ApiError::NoLeader)
                if ctx.mono_ns() < deadline =>
            {
                ctx.sleep(client.tick).await
            }
            CallFailure::Reply(e) => return Err(Some(e)),
            CallFailure::Transport { .. } => return Err(None),
        }
    }
}
