//! A Raft node's client port: etcd's v3 gRPC services (KV, Watch, Lease, Cluster,
//! Maintenance, and the Lock service, [`super::lock_service`]). Each RPC is checked and converted by [`super::etcd_api`] here, then handed
//! to the node as a [`Call`]: tonic's services must be `Send`, the node's state is not, so
//! the node serves its calls in its own pausable tasks ([`super::node`]).
//!
//! TTLs: etcd's wire counts lease TTLs in seconds; one second here lasts the cluster's
//! `second_ms` (1000 in `locksim serve`, 100 in simulations, whose clusters run etcd's
//! timings ten times faster: a 10 ms tick for etcd's 100 ms heartbeat).

use super::etcd_api::{self as api, ApiError, HeaderIds, MAX_LEASE_TTL_S};
use super::etcdpb::etcdserverpb as pb;
use super::etcdpb::etcdserverpb::watch_server;
use super::etcdpb::etcdserverpb::{cluster_server, kv_server, lease_server, maintenance_server};
use super::etcdpb::v3lockpb::lock_server;
use super::kv::{bytes_of, LeaseId, RangeRequest, RangeResponse, Request, Response, Revoker};
use crate::net::GrpcRouter;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::{mpsc, oneshot};
use tonic::{Status, Streaming};

/// Where a node's answer to a [`Call`] goes: the answer and the header fields, or why not.
pub(crate) type Reply<T> = oneshot::Sender<Result<(T, HeaderIds), ApiError>>;

/// A stream of answers to a streaming RPC.
pub(crate) type Replies<T> = mpsc::Sender<Result<T, Status>>;

/// A lease as `LeaseTimeToLive` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseTtl {
    /// Remaining, ms (negative: the lease does not exist).
    pub remaining_ms: i64,
    /// Granted, ms.
    pub granted_ms: u64,
    /// Attached keys (when asked for).
    pub keys: Vec<String>,
}

/// A member as `MemberList` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberInfo {
    /// etcd's member id.
    pub id: u64,
    /// The node's name.
    pub name: String,
    /// Where its peers reach it.
    pub peer_url: String,
    /// Where clients reach it.
    pub client_url: String,
}

/// What `Status` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatusInfo {
    /// The leader's member id (0: none known).
    pub leader: u64,
    /// Last log index.
    pub raft_index: u64,
    /// Applied index.
    pub applied_index: u64,
}

/// What the gRPC services ask of the node.
pub(crate) enum Call {
    /// A request through the Raft log (a `LeaseGrant` with id 0 gets one from the node).
    Propose(Request, Reply<Response>),
    /// A read (per the node's `read` mode; `serializable` reads its own state).
    Range(RangeRequest, Reply<RangeResponse>),
    /// `LeaseTimeToLive`: by the leader's lessor.
    TimeToLive {
        /// The lease.
        id: LeaseId,
        /// List its keys.
        keys: bool,
        /// The answer.
        reply: Reply<LeaseTtl>,
    },
    /// `LeaseLeases`.
    Leases(Reply<Vec<LeaseId>>),
    /// `MemberList`.
    Members(Reply<Vec<MemberInfo>>),
    /// `Status`.
    Status(Reply<StatusInfo>),
    /// A `LeaseKeepAlive` stream.
    KeepAlive(
        Streaming<pb::LeaseKeepAliveRequest>,
        Replies<pb::LeaseKeepAliveResponse>,
    ),
    /// A `Watch` stream.
    Watch(Streaming<pb::WatchRequest>, Replies<pb::WatchResponse>),
    /// Answer once `key` is deleted at revision `from` or later, as a watch on `key` from
    /// `from` would report it (the Lock service's wait for the keys ahead).
    WaitDelete {
        /// The key.
        key: String,
        /// The first revision to look at.
        from: u64,
        /// Answered once the delete is applied here.
        reply: Reply<()>,
    },
    /// A lessor call another node forwarded here: served, never forwarded again (a
    /// follower that believes in a leader that believes in it would bounce it forever).
    Forwarded(Box<Call>),
}

/// The metadata key that marks a lessor call one node forwarded to another.
pub(crate) const FORWARDED: &str = "locksim-forwarded";

/// `call`, marked [`Call::Forwarded`] when `meta` says another node forwarded it.
fn hop(meta: &tonic::metadata::MetadataMap, call: Call) -> Call {
    if meta.contains_key(FORWARDED) {
        Call::Forwarded(Box::new(call))
    } else {
        call
    }
}

/// The services of one node: every RPC becomes a [`Call`] on `calls`.
#[derive(Clone)]
pub(crate) struct EtcdService {
    calls: mpsc::UnboundedSender<Call>,
    second_ms: u64,
}

/// How many answers a streaming RPC buffers before its node-side task waits.
const STREAM_BUFFER: usize = 64;

impl EtcdService {
    /// Services that hand their calls to `calls`; lease TTLs count seconds of
    /// `second_ms`.
    pub(crate) fn new(calls: mpsc::UnboundedSender<Call>, second_ms: u64) -> EtcdService {
        EtcdService { calls, second_ms }
    }

    /// The router serving every service on one connection.
    pub(crate) fn router(self) -> GrpcRouter {
        GrpcRouter::new()
            .serving(kv_server::KvServer::new(self.clone()))
            .serving(watch_server::WatchServer::new(self.clone()))
            .serving(lease_server::LeaseServer::new(self.clone()))
            .serving(cluster_server::ClusterServer::new(self.clone()))
            .serving(maintenance_server::MaintenanceServer::new(self.clone()))
            .serving(lock_server::LockServer::new(self))
    }

    /// Where the calls go.
    pub(super) fn calls(&self) -> &mpsc::UnboundedSender<Call> {
        &self.calls
    }

    /// Hand a call to the node and wait for its answer.
    pub(super) async fn ask<T>(
        &self,
        call: impl FnOnce(Reply<T>) -> Call,
    ) -> Result<(T, HeaderIds), Status> {
        let (tx, rx) = oneshot::channel();
        self.calls.send(call(tx)).map_err(|_| stopped())?;
        match rx.await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => Err(e.status()),
            Err(_) => Err(stopped()),
        }
    }

    pub(super) async fn propose(&self, req: Request) -> Result<(Response, HeaderIds), Status> {
        self.ask(|r| Call::Propose(req, r)).await
    }

    /// `ttl_s` seconds of the cluster's, in ms.
    pub(super) fn ttl_ms(&self, ttl_s: i64) -> u64 {
        (ttl_s.max(0) as u64).saturating_mul(self.second_ms)
    }

    fn ttl_s(&self, ttl_ms: u64) -> i64 {
        (ttl_ms / self.second_ms) as i64
    }

    /// A streaming RPC: the node serves `requests` into a fresh channel.
    fn stream<Q, A>(
        &self,
        requests: Streaming<Q>,
        call: impl FnOnce(Streaming<Q>, Replies<A>) -> Call,
    ) -> Result<tonic::Response<BoxStream<A>>, Status>
    where
        A: Send + 'static,
    {
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        self.calls.send(call(requests, tx)).map_err(|_| stopped())?;
        Ok(tonic::Response::new(Box::pin(ReplyStream(rx))))
    }
}

/// The node is gone (crashed, or the server stopped): what a client sees of a dead peer.
fn stopped() -> Status {
    Status::unavailable("locksim: the node stopped")
}

/// A node's answer of the wrong kind (a bug).
pub(super) fn unexpected(r: Response) -> Status {
    Status::internal(format!("locksim: unexpected answer {r:?}"))
}

fn invalid(e: ApiError) -> Status {
    e.status()
}

/// The answers of a streaming RPC, as tonic wants them.
pub(crate) struct ReplyStream<T>(mpsc::Receiver<Result<T, Status>>);

impl<T> tokio_stream::Stream for ReplyStream<T> {
    type Item = Result<T, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_recv(cx)
    }
}

type Rpc<T> = Result<tonic::Response<T>, Status>;

/// A streaming RPC's answers, as the generated services want them.
pub(crate) type BoxStream<T> = Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl kv_server::Kv for EtcdService {
    async fn range(&self, req: tonic::Request<pb::RangeRequest>) -> Rpc<pb::RangeResponse> {
        let r = api::range_request(req.into_inner()).map_err(invalid)?;
        let (resp, ids) = self.ask(|reply| Call::Range(r, reply)).await?;
        Ok(tonic::Response::new(api::range_response(resp, Some(&ids))))
    }

    async fn put(&self, req: tonic::Request<pb::PutRequest>) -> Rpc<pb::PutResponse> {
        let p = api::put_request(req.into_inner()).map_err(invalid)?;
        match self.propose(Request::Put(p)).await? {
            (Response::Put(r), ids) => Ok(tonic::Response::new(api::put_response(r, Some(&ids)))),
            (other, _) => Err(unexpected(other)),
        }
    }

    async fn delete_range(
        &self,
        req: tonic::Request<pb::DeleteRangeRequest>,
    ) -> Rpc<pb::DeleteRangeResponse> {
        let d = api::delete_request(req.into_inner()).map_err(invalid)?;
        match self.propose(Request::DeleteRange(d)).await? {
            (Response::DeleteRange(r), ids) => {
                Ok(tonic::Response::new(api::delete_response(r, Some(&ids))))
            }
            (other, _) => Err(unexpected(other)),
        }
    }

    async fn txn(&self, req: tonic::Request<pb::TxnRequest>) -> Rpc<pb::TxnResponse> {
        let t = api::txn_request(req.into_inner()).map_err(invalid)?;
        match self.propose(Request::Txn(t)).await? {
            (Response::Txn(r), ids) => Ok(tonic::Response::new(api::txn_response(r, Some(&ids)))),
            (other, _) => Err(unexpected(other)),
        }
    }

    async fn compact(
        &self,
        req: tonic::Request<pb::CompactionRequest>,
    ) -> Rpc<pb::CompactionResponse> {
        let revision = req.into_inner().revision.max(0) as u64;
        match self.propose(Request::Compact { revision }).await? {
            (Response::Compact { revision }, ids) => {
                Ok(tonic::Response::new(pb::CompactionResponse {
                    header: ids.header(revision),
                }))
            }
            (other, _) => Err(unexpected(other)),
        }
    }
}

#[tonic::async_trait]
impl lease_server::Lease for EtcdService {
    async fn lease_grant(
        &self,
        req: tonic::Request<pb::LeaseGrantRequest>,
    ) -> Rpc<pb::LeaseGrantResponse> {
        let r = req.into_inner();
        if r.ttl > MAX_LEASE_TTL_S {
            return Err(ApiError::LeaseTtlTooLarge.status());
        }
        // etcd grants a negative id like any other; the model's ids are unsigned and
        // their top bit marks its own lock-delay leases, so it refuses one (a
        // deliberate difference, tests/fidelity/etcd.rs).
        let Ok(id) = u64::try_from(r.id) else {
            return Err(Status::invalid_argument(
                "locksim: negative lease ids are reserved for the model's lock-delay leases",
            ));
        };
        let ttl_ms = self.ttl_ms(r.ttl);
        match self.propose(Request::LeaseGrant { id, ttl_ms }).await? {
            (
                Response::LeaseGrant {
                    revision,
                    id,
                    ttl_ms,
                },
                ids,
            ) => Ok(tonic::Response::new(pb::LeaseGrantResponse {
                header: ids.header(revision),
                id: id as i64,
                ttl: self.ttl_s(ttl_ms),
                error: String::new(),
            })),
            (other, _) => Err(unexpected(other)),
        }
    }

    async fn lease_revoke(
        &self,
        req: tonic::Request<pb::LeaseRevokeRequest>,
    ) -> Rpc<pb::LeaseRevokeResponse> {
        let id = u64::try_from(req.into_inner().id).unwrap_or(u64::MAX);
        match self
            .propose(Request::LeaseRevoke {
                id,
                by: Revoker::Client,
            })
            .await?
        {
            (Response::LeaseRevoke { revision }, ids) => {
                Ok(tonic::Response::new(pb::LeaseRevokeResponse {
                    header: ids.header(revision),
                }))
            }
            (other, _) => Err(unexpected(other)),
        }
    }

    async fn lease_keep_alive(
        &self,
        req: tonic::Request<Streaming<pb::LeaseKeepAliveRequest>>,
    ) -> Rpc<BoxStream<pb::LeaseKeepAliveResponse>> {
        let meta = req.metadata().clone();
        self.stream(req.into_inner(), |requests, replies| {
            hop(&meta, Call::KeepAlive(requests, replies))
        })
    }

    async fn lease_time_to_live(
        &self,
        req: tonic::Request<pb::LeaseTimeToLiveRequest>,
    ) -> Rpc<pb::LeaseTimeToLiveResponse> {
        let meta = req.metadata().clone();
        let r = req.into_inner();
        let id = u64::try_from(r.id).unwrap_or(u64::MAX);
        let keys = r.keys;
        let (ttl, ids) = self
            .ask(|reply| hop(&meta, Call::TimeToLive { id, keys, reply }))
            .await?;
        let remaining = if ttl.remaining_ms < 0 {
            -1
        } else {
            ttl.remaining_ms / self.second_ms as i64
        };
        Ok(tonic::Response::new(pb::LeaseTimeToLiveResponse {
            header: ids.header(0),
            id: r.id,
            ttl: remaining,
            granted_ttl: self.ttl_s(ttl.granted_ms),
            keys: ttl.keys.iter().map(|k| bytes_of(k)).collect(),
        }))
    }

    async fn lease_leases(
        &self,
        req: tonic::Request<pb::LeaseLeasesRequest>,
    ) -> Rpc<pb::LeaseLeasesResponse> {
        let meta = req.metadata();
        let (leases, ids) = self.ask(|reply| hop(meta, Call::Leases(reply))).await?;
        Ok(tonic::Response::new(pb::LeaseLeasesResponse {
            header: ids.header(0),
            leases: leases
                .into_iter()
                .map(|id| pb::LeaseStatus { id: id as i64 })
                .collect(),
        }))
    }
}

#[tonic::async_trait]
impl watch_server::Watch for EtcdService {
    async fn watch(
        &self,
        req: tonic::Request<Streaming<pb::WatchRequest>>,
    ) -> Rpc<BoxStream<pb::WatchResponse>> {
        self.stream(req.into_inner(), Call::Watch)
    }
}

#[tonic::async_trait]
impl cluster_server::Cluster for EtcdService {
    async fn member_list(
        &self,
        _req: tonic::Request<pb::MemberListRequest>,
    ) -> Rpc<pb::MemberListResponse> {
        let (members, ids) = self.ask(Call::Members).await?;
        Ok(tonic::Response::new(pb::MemberListResponse {
            header: ids.without_revision(),
            members: members
                .into_iter()
                .map(|m| pb::Member {
                    id: m.id,
                    name: m.name,
                    peer_ur_ls: vec![m.peer_url],
                    client_ur_ls: vec![m.client_url],
                    is_learner: false,
                })
                .collect(),
        }))
    }
}

/// The etcd release whose API the model follows, as `Status` reports it.
pub(crate) const VERSION: &str = "3.4.23";

#[tonic::async_trait]
impl maintenance_server::Maintenance for EtcdService {
    async fn status(&self, _req: tonic::Request<pb::StatusRequest>) -> Rpc<pb::StatusResponse> {
        let (st, ids) = self.ask(Call::Status).await?;
        Ok(tonic::Response::new(pb::StatusResponse {
            header: ids.header(0),
            version: VERSION.into(),
            leader: st.leader,
            raft_index: st.raft_index,
            raft_term: ids.raft_term,
            raft_applied_index: st.applied_index,
            ..Default::default()
        }))
    }
}
