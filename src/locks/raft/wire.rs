//! What travels between lock clients and Raft nodes, and between Raft nodes, over the
//! shared transport's length-prefixed [`Frames`](crate::net::Frames).
//!
//! * **Client port** ([`CLIENT_PORT`]): one JSON [`ClientRequest`] per frame, answered by
//!   one JSON [`ClientReply`] frame, strictly in turn on a connection (the client's
//!   [`Remote`](crate::net::Remote) has one request in flight). JSON via `serde_json`:
//!   fields in declaration order and no maps, so the bytes are a pure function of the
//!   value.
//! * **Peer port** ([`PEER_PORT`]): one frame carries a batch of raft-rs messages (each a
//!   4-byte big-endian length and its protobuf bytes); the receiver steps them all and
//!   answers an empty frame: the tiny acknowledgement that lets a sender notice a
//!   connection wedged by a partition (its deadline passes) and replace it.

use super::kv::{LeaseId, RangeRequest, Request, Response, ServiceError};
use serde::{Deserialize, Serialize};

/// Where a Raft node serves lock clients (etcd's client port).
pub const CLIENT_PORT: u16 = 2379;
/// Where a Raft node receives Raft messages from its peers (etcd's peer port).
pub const PEER_PORT: u16 = 2380;

/// A lock client's request to one Raft node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientRequest {
    /// Propose through the Raft log (Txn, Put, DeleteRange, LeaseGrant, LeaseRevoke);
    /// answered when the node has applied it.
    Propose(Request),
    /// A read, answered as the node's `read` mode says (ReadIndex, leader lease, or its
    /// own applied state).
    Range(RangeRequest),
    /// LeaseKeepAlive: answered by the leader's lessor.
    KeepAlive {
        /// The lease.
        id: LeaseId,
    },
    /// A watch for the first delete of `key` at or after revision `rev` (etcd's
    /// `waitDelete`), answered from the node's applied state as soon as it shows the
    /// delete, or with [`ClientReply::NotYet`] after `wait_ms` of the node's local time.
    WaitDelete {
        /// The key.
        key: String,
        /// Watch from this revision.
        rev: u64,
        /// How long the node holds the request open, local ms.
        wait_ms: u64,
    },
}

/// A Raft node's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientReply {
    /// The proposal was applied (or the read answered) with this response.
    Ok(Response),
    /// The lease was renewed for this TTL, ms.
    KeepAlive {
        /// TTL granted, ms.
        ttl_ms: u64,
    },
    /// The watched key was deleted at this revision.
    Deleted {
        /// Revision of the delete.
        revision: u64,
    },
    /// The watch saw no delete within its wait.
    NotYet,
    /// The request failed.
    Err(ReplyError),
}

/// Why a node did not serve a request, and whether it may have taken effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyError {
    /// This node's lessor is not the leader's: ask node `hint` (a Raft id, 0 for unknown).
    /// Nothing happened.
    NotLeader {
        /// The leader this node believes in, 0 for none.
        hint: u64,
    },
    /// raft-rs dropped the proposal (no leader known): nothing happened.
    NoLeader,
    /// No answer within the node's deadline: a proposal may still be applied.
    Timeout,
    /// Applied, and failed without changing anything.
    Service(ServiceError),
    /// KeepAlive of a lease the leader does not know (revoked or never granted). A
    /// keepalive of an expired lease waits for its revoke and then gets this (etcd
    /// answers TTL 0).
    LeaseNotFound,
}

impl ReplyError {
    /// Whether the request may have taken effect although it failed.
    pub fn maybe_applied(&self) -> bool {
        matches!(self, ReplyError::Timeout)
    }
}

impl std::fmt::Display for ReplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplyError::NotLeader { hint } => write!(f, "not leader (hint raft id {hint})"),
            ReplyError::NoLeader => write!(f, "no leader: proposal dropped"),
            ReplyError::Timeout => write!(f, "timed out in the server"),
            ReplyError::Service(e) => write!(f, "{e}"),
            ReplyError::LeaseNotFound => write!(f, "lease not found"),
        }
    }
}

/// Encode a JSON value as one frame.
pub fn encode_json<T: Serialize>(value: &T, out: &mut Vec<u8>) {
    let bytes = serde_json::to_vec(value).expect("wire types serialise");
    crate::net::encode_frame(&bytes, out);
}

/// A frame holding a request.
pub fn request_frame(req: &ClientRequest) -> Vec<u8> {
    let mut out = Vec::new();
    encode_json(req, &mut out);
    out
}

/// Decode a frame's JSON payload.
pub fn decode_json<T: for<'de> Deserialize<'de>>(payload: &[u8]) -> Result<T, String> {
    serde_json::from_slice(payload).map_err(|e| e.to_string())
}

/// Append raft-rs message bytes to a batch payload.
pub fn push_message(batch: &mut Vec<u8>, msg: &[u8]) {
    let len = u32::try_from(msg.len()).expect("raft messages are smaller than 4 GiB");
    batch.extend_from_slice(&len.to_be_bytes());
    batch.extend_from_slice(msg);
}

/// Split a batch payload into message bytes; a torn batch yields its whole messages.
pub fn split_batch(mut payload: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while payload.len() >= 4 {
        let len = u32::from_be_bytes(payload[..4].try_into().expect("4 bytes")) as usize;
        let Some(msg) = payload.get(4..4 + len) else {
            break;
        };
        out.push(msg);
        payload = &payload[4 + len..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_round_trip() {
        let mut b = Vec::new();
        push_message(&mut b, b"abc");
        push_message(&mut b, b"");
        push_message(&mut b, b"de");
        assert_eq!(split_batch(&b), vec![&b"abc"[..], b"", b"de"]);
        assert_eq!(split_batch(&b[..b.len() - 1]), vec![&b"abc"[..], b""]);
    }

    #[test]
    fn requests_round_trip_as_json() {
        let r = ClientRequest::WaitDelete {
            key: "L/1f".into(),
            rev: 9,
            wait_ms: 50,
        };
        let f = request_frame(&r);
        let back: ClientRequest = decode_json(&f[4..]).unwrap();
        assert_eq!(back, r);
        let e = ClientReply::Err(ReplyError::NotLeader { hint: 2 });
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"err":{"not-leader":{"hint":2}}}"#
        );
        assert!(ReplyError::Timeout.maybe_applied());
        assert!(!ReplyError::NoLeader.maybe_applied());
    }
}
