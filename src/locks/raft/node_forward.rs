//! A follower's lessor calls, forwarded to the leader (`forward_lease_calls`): etcd's
//! server forwards `LeaseRenew`, `LeaseTimeToLive` and `LeaseLeases` from a follower to
//! the leader it knows (`etcdserver/v3_server.go`, over the peer HTTP API) and answers
//! the client itself with the leader's numbers under its own header. Here the follower
//! calls the leader's client port, with the same gRPC clients the lock client uses, and
//! gives up after the request timeout, as etcd's forward does.
//!
//! Off, a follower answers `NotLeader` with a leader hint and the client retries there
//! (locksim's own client does; `etcdctl lease keep-alive` against a follower does not).

use super::super::etcd_api::ApiError;
use super::super::etcd_grpc::{LeaseTtl, FORWARDED};
use super::super::etcdpb::etcdserverpb as pb;
use super::super::etcdpb::etcdserverpb::lease_client::LeaseClient;
use super::super::kv::{text_of, LeaseId};
use super::super::wire::CLIENT_PORT;
use super::{node_name, Node};
use crate::net::GrpcChannel;
use std::future::Future;
use tonic::Status;

impl Node {
    /// Where a lessor call goes when this node cannot answer it with `refused`: the
    /// leader named by the `NotLeader` hint, when `forward` (forwarding is on and the
    /// call was not forwarded here) and that is another node.
    pub(super) fn forward_to(
        &self,
        refused: &ApiError,
        forward: bool,
    ) -> Option<LeaseClient<GrpcChannel>> {
        let ApiError::NotLeader { hint } = *refused else {
            return None;
        };
        let me = self.server.borrow().id;
        if !forward || hint == 0 || hint == me {
            return None;
        }
        let mut channels = self.leader_channels.borrow_mut();
        let channel = channels
            .entry(hint)
            .or_insert_with(|| GrpcChannel::new(self.ctx.clone(), &node_name(hint), CLIENT_PORT));
        Some(LeaseClient::new(channel.clone()))
    }

    /// A forwarded call's answer within the request timeout; a status the leader sent
    /// stays as it is, a timeout is etcd's.
    async fn forwarded<T>(
        &self,
        call: impl Future<Output = Result<T, Status>>,
    ) -> Result<T, ApiError> {
        match self.ctx.timeout(self.request_timeout(), call).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(status)) => Err(ApiError::of_status(&status)
                .unwrap_or_else(|| ApiError::Other(status.code() as i32, status.message().into()))),
            Err(_) => {
                // The connection may be wedged (a simulated link drops segments and
                // never retransmits): the next forward opens a new one.
                self.leader_channels.borrow_mut().clear();
                Err(ApiError::Timeout)
            }
        }
    }

    /// A renew forwarded to the leader: the TTL it granted, ms (0: it knows no such
    /// lease).
    pub(super) async fn forward_keep_alive(
        &self,
        mut leader: LeaseClient<GrpcChannel>,
        id: i64,
    ) -> Result<u64, ApiError> {
        let second_ms = self.params.second_ms();
        let request = forwarded(tokio_stream::iter([pb::LeaseKeepAliveRequest { id }]));
        self.forwarded(async move {
            let mut answers = leader.lease_keep_alive(request).await?.into_inner();
            let answer = answers
                .message()
                .await?
                .ok_or_else(|| Status::unavailable("the leader ended the keepalive stream"))?;
            Ok(answer.ttl.max(0) as u64 * second_ms)
        })
        .await
    }

    /// `LeaseTimeToLive` forwarded to the leader.
    pub(super) async fn forward_time_to_live(
        &self,
        mut leader: LeaseClient<GrpcChannel>,
        id: LeaseId,
        keys: bool,
    ) -> Result<LeaseTtl, ApiError> {
        let second_ms = self.params.second_ms() as i64;
        let request = forwarded(pb::LeaseTimeToLiveRequest {
            id: id as i64,
            keys,
        });
        self.forwarded(async move {
            let r = leader.lease_time_to_live(request).await?.into_inner();
            Ok(LeaseTtl {
                remaining_ms: if r.ttl < 0 { -1 } else { r.ttl * second_ms },
                granted_ms: r.granted_ttl.max(0) as u64 * second_ms as u64,
                keys: r.keys.into_iter().map(text_of).collect(),
            })
        })
        .await
    }

    /// `LeaseLeases` forwarded to the leader.
    pub(super) async fn forward_leases(
        &self,
        mut leader: LeaseClient<GrpcChannel>,
    ) -> Result<Vec<LeaseId>, ApiError> {
        self.forwarded(async move {
            let r = leader
                .lease_leases(forwarded(pb::LeaseLeasesRequest {}))
                .await?;
            Ok(r.into_inner().leases.iter().map(|l| l.id as u64).collect())
        })
        .await
    }
}

/// `message` marked as forwarded ([`FORWARDED`]): the leader serves it and does not
/// forward it again.
fn forwarded<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert(FORWARDED, tonic::metadata::MetadataValue::from_static("1"));
    request
}
