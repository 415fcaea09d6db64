//! How a node serves the calls of its gRPC front ([`super::super::etcd_grpc`]): unary
//! calls answer once; a `LeaseKeepAlive` stream renews lease after lease; a `Watch` stream
//! and the Lock service's `WaitDelete` are served by [`super::watch`].

use super::super::etcd_api::{ApiError, HeaderIds};
use super::super::etcd_grpc::{Call, LeaseTtl, MemberInfo, Replies, Reply, StatusInfo};
use super::super::etcdpb::etcdserverpb as pb;
use super::super::kv::lock_delay::is_delay_lease;
use super::super::kv::{LeaseId, Request};
use super::{node_name, Node};
use tokio::sync::mpsc;
use tonic::Streaming;

/// etcd's member id of Raft node `id`: a hash of its name (etcd hashes its peer URLs and
/// the cluster token), stable across runs.
pub(crate) fn member_id(id: u64) -> u64 {
    crate::history::fnv1a(node_name(id).as_bytes())
}

/// The cluster id of a cluster of `nodes` (etcd hashes its members' ids).
pub(crate) fn cluster_id(nodes: u64) -> u64 {
    crate::history::fnv1a(format!("locksim-raft-{nodes}").as_bytes())
}

/// Serves the node's calls, each in a task of its own, until the services are gone.
pub(super) async fn dispatch(node: Node, mut calls: mpsc::UnboundedReceiver<Call>) {
    while let Some(call) = calls.recv().await {
        node.ctx.spawn(node.clone().serve_call(call));
    }
}

impl Node {
    /// The header fields this node fills in now.
    pub(super) fn ids(&self) -> HeaderIds {
        let s = self.server.borrow();
        HeaderIds {
            cluster_id: cluster_id(u64::from(self.params.nodes)),
            member_id: member_id(s.id),
            raft_term: s.core.term(),
            revision: s.service.store().revision(),
        }
    }

    fn answer<T>(&self, reply: Reply<T>, answer: Result<T, ApiError>) {
        let _ = reply.send(answer.map(|a| (a, self.ids())));
    }

    async fn serve_call(self, call: Call) {
        match call {
            Call::Forwarded(call) => self.serve(*call, false).await,
            call => {
                let forward = self.params.forward_lease_calls;
                self.serve(call, forward).await
            }
        }
    }

    /// Serve `call`; `forward`: a lessor call this node cannot answer goes to its leader.
    async fn serve(self, call: Call, forward: bool) {
        match call {
            Call::Propose(req, reply) => {
                let req = self.with_lease_id(req);
                let answer = self.propose(req).await;
                self.answer(reply, answer);
            }
            Call::Range(r, reply) => {
                let answer = self.range(r).await;
                self.answer(reply, answer);
            }
            Call::TimeToLive { id, keys, reply } => {
                let answer = self.time_to_live(id, keys, forward).await;
                self.answer(reply, answer);
            }
            Call::Leases(reply) => {
                let answer = self.leases(forward).await;
                self.answer(reply, answer);
            }
            Call::Members(reply) => self.answer(reply, Ok(self.members())),
            Call::Status(reply) => self.answer(reply, Ok(self.status())),
            Call::KeepAlive(requests, replies) => {
                self.keep_alive_stream(requests, replies, forward).await
            }
            Call::Watch(requests, replies) => super::watch::serve(self, requests, replies).await,
            Call::WaitDelete {
                key,
                from,
                mut reply,
            } => {
                // A waiter that gave up stops the wait (its key is deleted anyway).
                let answer = tokio::select! {
                    biased;
                    () = reply.closed() => None,
                    answer = super::watch::wait_delete(&self, &key, from) => Some(answer),
                };
                if let Some(answer) = answer {
                    self.answer(reply, answer);
                }
            }
            // Marked once, at the gRPC edge.
            Call::Forwarded(call) => Box::pin(self.serve(*call, false)).await,
        }
    }

    /// A `LeaseGrant` without an id gets one here, before it is proposed (etcd's server
    /// draws it from its request id generator; here from the node's seeded RNG): 63 bits
    /// (the top one marks lock-delay leases), never 0.
    fn with_lease_id(&self, req: Request) -> Request {
        match req {
            Request::LeaseGrant { id: 0, ttl_ms } => Request::LeaseGrant {
                id: (self.ctx.rand_u64() >> 1).max(1),
                ttl_ms,
            },
            other => other,
        }
    }

    /// `LeaseTimeToLive`, by the leader's lessor (etcd forwards it there): a lease it does
    /// not know has TTL −1.
    async fn time_to_live(
        &self,
        id: LeaseId,
        keys: bool,
        forward: bool,
    ) -> Result<LeaseTtl, ApiError> {
        if let Err(refused) = self.leader_only().await {
            let leader = self.forward_to(&refused, forward).ok_or(refused)?;
            return self.forward_time_to_live(leader, id, keys).await;
        }
        let s = self.server.borrow();
        let Some(lease) = s.service.store().lease(id) else {
            return Ok(LeaseTtl {
                remaining_ms: -1,
                granted_ms: 0,
                keys: Vec::new(),
            });
        };
        let now = self.ctx.mono_ns();
        let remaining_ns = s.service.lessor().remaining_ns(id, now).unwrap_or(0);
        Ok(LeaseTtl {
            remaining_ms: remaining_ns.max(0) / 1_000_000,
            granted_ms: lease.ttl_ms,
            keys: if keys {
                lease.keys.iter().cloned().collect()
            } else {
                Vec::new()
            },
        })
    }

    /// `LeaseLeases`: the leases a client granted (not the lock-delay ones), soonest
    /// expiry first, as etcd's lessor sorts them (`leasesByExpiry`); ties by id.
    async fn leases(&self, forward: bool) -> Result<Vec<LeaseId>, ApiError> {
        if let Err(refused) = self.leader_only().await {
            let leader = self.forward_to(&refused, forward).ok_or(refused)?;
            return self.forward_leases(leader).await;
        }
        let s = self.server.borrow();
        let now = self.ctx.mono_ns();
        let lessor = s.service.lessor();
        let mut ids: Vec<(i64, LeaseId)> = s
            .service
            .store()
            .leases()
            .map(|(id, _)| id)
            .filter(|&id| !is_delay_lease(id))
            .map(|id| (lessor.remaining_ns(id, now).unwrap_or(i64::MAX), id))
            .collect();
        ids.sort_unstable();
        Ok(ids.into_iter().map(|(_, id)| id).collect())
    }

    /// Fails unless this node is the server-level leader (etcd forwards lessor calls to
    /// the leader, as this node does with `forward_lease_calls`; else the client retries
    /// at the hinted one).
    async fn leader_only(&self) -> Result<(), ApiError> {
        let s = self.server.borrow();
        if s.is_leader() {
            Ok(())
        } else {
            Err(super::not_leader(&s))
        }
    }

    fn members(&self) -> Vec<MemberInfo> {
        (1..=u64::from(self.params.nodes))
            .map(|id| {
                let name = node_name(id);
                MemberInfo {
                    id: member_id(id),
                    peer_url: self.url(&name, super::PEER_PORT),
                    client_url: self.url(&name, super::CLIENT_PORT),
                    name,
                }
            })
            .collect()
    }

    /// Where `host:port` is reached: its loopback port in a live run.
    fn url(&self, host: &str, port: u16) -> String {
        match self.ctx.live().and_then(|l| l.port_of(host, port)) {
            Some(p) => format!("http://127.0.0.1:{p}"),
            None => format!("http://{host}:{port}"),
        }
    }

    fn status(&self) -> StatusInfo {
        let s = self.server.borrow();
        let lead = if s.lead != 0 {
            s.lead
        } else {
            s.core.leader_id()
        };
        StatusInfo {
            leader: if lead == 0 { 0 } else { member_id(lead) },
            raft_index: s.core.last_index(),
            applied_index: s.service.store().applied_index(),
        }
    }

    /// One `LeaseKeepAlive` stream: each request renews its lease and is answered with
    /// the granted TTL, or TTL 0 for a lease the leader does not know (etcd's answer to
    /// `ErrLeaseNotFound`). Any other failure ends the stream with its status.
    async fn keep_alive_stream(
        &self,
        mut requests: Streaming<pb::LeaseKeepAliveRequest>,
        replies: Replies<pb::LeaseKeepAliveResponse>,
        forward: bool,
    ) {
        let second_ms = self.params.second_ms();
        while let Ok(Some(req)) = requests.message().await {
            let id = u64::try_from(req.id).unwrap_or(u64::MAX);
            let renewed = match self.keep_alive(id).await {
                Err(refused) => match self.forward_to(&refused, forward) {
                    Some(leader) => self.forward_keep_alive(leader, req.id).await,
                    None => Err(refused),
                },
                renewed => renewed,
            };
            let ttl_ms = match renewed {
                Ok(ttl_ms) => ttl_ms,
                Err(ApiError::Service(super::ServiceError::LeaseNotFound)) => 0,
                Err(e) => {
                    let _ = replies.send(Err(e.status())).await;
                    return;
                }
            };
            let answer = pb::LeaseKeepAliveResponse {
                header: self.ids().header(0),
                id: req.id,
                ttl: (ttl_ms / second_ms) as i64,
            };
            if replies.send(Ok(answer)).await.is_err() {
                return;
            }
        }
    }
}
