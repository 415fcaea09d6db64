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
//! same), then a keepalive every TTL/3 of the client's monotonic clock, spawned with
//! `ctx.spawn` (so it freezes with its process). A keepalive answered with a TTL moves the
//! session's validity to *answer time + TTL* (etcd's `ka.deadline`); `LeaseNotFound` or
//! `LeaseExpired` ends the session; a session whose validity passes without an answer
//! ends too (etcd's `deadlineLoop` closing the keepalive channel). A lock call then makes
//! a new session.

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

/// A lease kept alive in the background (etcd's `Session`).
pub struct Session {
    /// The lease.
    pub lease: LeaseId,
    /// End of validity on the client's monotonic clock, ns: last keepalive answer + TTL.
    pub valid_until: Rc<Cell<i64>>,
    /// Set when the keepalive task learns the lease is gone or gives up.
    pub lost: Rc<Cell<bool>>,
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
        let lost = Rc::new(Cell::new(false));
        let task = keepalive(
            ctx.clone(),
            EtcdClient::new(params, preferred),
            lease,
            ttl_ms,
            valid_until.clone(),
            lost.clone(),
        );
        tracing::debug!(lease, ttl_ms, "session started");
        Ok(Session {
            lease,
            valid_until,
            lost,
            keepalive: ctx.spawn(task),
        })
    }

    /// Whether the session can still be used: not lost, validity ahead of `now_ns`.
    pub fn alive(&self, now_ns: i64) -> bool {
        !self.lost.get() && now_ns < self.valid_until.get()
    }

    /// Stop keeping the lease alive (etcd's `Orphan`): it expires on its own.
    pub fn orphan(&self) {
        self.keepalive.abort();
        self.lost.set(true);
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

/// The keepalive loop of one session (see the module docs).
async fn keepalive(
    ctx: NodeCtx,
    mut client: EtcdClient,
    lease: LeaseId,
    ttl_ms: u64,
    valid_until: Rc<Cell<i64>>,
    lost: Rc<Cell<bool>>,
) {
    let every = Duration::from_millis((ttl_ms / 3).max(1));
    loop {
        ctx.sleep(every).await;
        loop {
            let deadline = valid_until.get();
            if ctx.mono_ns() >= deadline {
                tracing::debug!(lease, "session expired: no keepalive answer within the TTL");
                lost.set(true);
                return;
            }
            let req = ClientRequest::KeepAlive { id: lease };
            match client.call(&ctx, &req, true, deadline).await {
                Ok(ClientReply::KeepAlive { ttl_ms }) => {
                    let node = client.preferred.get();
                    tracing::debug!(lease, node, "keepalive answered by raft-{node}");
                    valid_until.set(ctx.mono_ns() + ms(ttl_ms));
                    break;
                }
                Err(CallFailure::Reply(ReplyError::LeaseNotFound | ReplyError::LeaseExpired)) => {
                    tracing::debug!(lease, "session lost: the leader does not know the lease");
                    lost.set(true);
                    return;
                }
                // Retried inside `call` until the validity ends; the check above decides.
                _ => ctx.sleep(client.tick).await,
            }
        }
    }
}
