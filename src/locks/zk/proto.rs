//! What travels between ZooKeeper clients and servers, over the shared transport's
//! length-prefixed [`Frames`](crate::net::Frames): one JSON value per frame (`serde_json`,
//! fields in declaration order and no maps, so the bytes are a pure function of the
//! value).
//!
//! As in ZooKeeper's protocol, a connection opens with a `ConnectRequest` (session 0 for a
//! new session, the client's last seen zxid), then carries requests tagged with a client
//! xid, pings (xid -2), replies in request order (each stamped with the server's last
//! zxid) and watch notifications (xid -1) interleaved with them in the order the server
//! produced them.

use super::tree::{CreateMode, SessionId, Stat, WatchedEvent, ZkError, Zxid};
use serde::{Deserialize, Serialize};

/// Where a server serves clients (ZooKeeper's `clientPort`).
pub const CLIENT_PORT: u16 = 2181;
/// Where servers of an ensemble exchange Raft messages and session touches
/// (ZooKeeper's quorum port).
pub const PEER_PORT: u16 = 2888;

/// The xid of a ping.
pub const PING_XID: i64 = -2;

/// A client's request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Request {
    /// The first message of a connection.
    Connect {
        /// 0 for a new session.
        session: SessionId,
        /// The timeout asked for, ms.
        timeout_ms: u64,
        /// The last zxid the client has seen: a server behind it refuses the client.
        last_zxid: Zxid,
    },
    /// Keep the session alive.
    Ping,
    /// Create a node.
    Create {
        /// Path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Mode.
        mode: CreateMode,
    },
    /// Delete a node.
    Delete {
        /// Path.
        path: String,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// Set a node's data.
    SetData {
        /// Path.
        path: String,
        /// Data.
        data: Vec<u8>,
        /// Expected version, -1 for any.
        version: i32,
    },
    /// Stat a node, optionally watching it (even if missing).
    Exists {
        /// Path.
        path: String,
        /// Set a watch.
        watch: bool,
    },
    /// Read a node, optionally watching it.
    GetData {
        /// Path.
        path: String,
        /// Set a watch.
        watch: bool,
    },
    /// List a node's children, optionally watching them.
    GetChildren {
        /// Path.
        path: String,
        /// Set a watch.
        watch: bool,
    },
    /// Catch up with the leader before answering (reads after it see every write
    /// committed before it).
    Sync {
        /// Path (echoed).
        path: String,
    },
    /// Re-register the client's watches on a new connection.
    SetWatches {
        /// The client's last zxid: changes after it fire at once.
        relative_zxid: Zxid,
        /// Data watches.
        data: Vec<String>,
        /// Exist watches (on missing nodes).
        exist: Vec<String>,
        /// Child watches.
        child: Vec<String>,
    },
    /// End the session now.
    CloseSession,
}

impl Request {
    /// Whether it goes through the total order.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Request::Create { .. }
                | Request::Delete { .. }
                | Request::SetData { .. }
                | Request::CloseSession
        )
    }
}

/// A client frame: a request with its xid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientFrame {
    /// Client-chosen id, echoed in the reply.
    pub xid: i64,
    /// The request.
    pub req: Request,
}

/// A reply's body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Response {
    /// Session established.
    Connected {
        /// The session.
        session: SessionId,
        /// The negotiated timeout, ms.
        timeout_ms: u64,
    },
    /// The session asked for is expired (ZooKeeper answers with timeout 0, then closes).
    Expired,
    /// A ping's answer.
    Pong,
    /// A create's result.
    Created {
        /// Actual path.
        path: String,
        /// Its stat.
        stat: Stat,
    },
    /// A delete's result.
    Deleted,
    /// `exists`: the stat, if the node exists.
    Exists {
        /// Stat.
        stat: Option<Stat>,
    },
    /// `getData`.
    Data {
        /// Data.
        data: Vec<u8>,
        /// Stat.
        stat: Stat,
    },
    /// `getChildren` (sorted by name).
    Children {
        /// Child names.
        children: Vec<String>,
        /// The parent's stat.
        stat: Stat,
    },
    /// `setData`.
    Set {
        /// New stat.
        stat: Stat,
    },
    /// `sync` done.
    Synced,
    /// `setWatches` done.
    WatchesSet,
    /// `closeSession` done.
    Closed,
    /// The request failed.
    Err(ZkError),
}

/// A server frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerFrame {
    /// The reply to request `xid`.
    Reply {
        /// The request's xid.
        xid: i64,
        /// The server's last zxid when it answered.
        zxid: Zxid,
        /// The body.
        resp: Response,
    },
    /// A watch fired.
    Watch(WatchedEvent),
}

/// A message between servers of an ensemble.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerMsg {
    /// raft-rs message bytes (protobuf).
    Raft(Vec<u8>),
    /// A follower's clients touched these sessions (ZooKeeper's learner ping reply).
    Touch {
        /// Sessions touched since the last report.
        sessions: Vec<SessionId>,
    },
}

/// Encode a JSON value as one frame.
pub fn frame<T: Serialize>(value: &T, out: &mut Vec<u8>) {
    let bytes = serde_json::to_vec(value).expect("wire types serialise");
    crate::net::encode_frame(&bytes, out);
}

/// Decode one frame's JSON payload.
pub fn decode<T: for<'de> Deserialize<'de>>(payload: &[u8]) -> Result<T, String> {
    serde_json::from_slice(payload).map_err(|e| e.to_string())
}

/// A peer message's bytes: raft messages go as a tag byte and their protobuf bytes
/// (compact: they are most of the traffic), others as JSON.
pub fn encode_peer(msg: &PeerMsg) -> Vec<u8> {
    match msg {
        PeerMsg::Raft(bytes) => {
            let mut out = Vec::with_capacity(bytes.len() + 1);
            out.push(0);
            out.extend_from_slice(bytes);
            out
        }
        other => {
            let mut out = vec![1];
            out.extend(serde_json::to_vec(other).expect("peer messages serialise"));
            out
        }
    }
}

/// Decode [`encode_peer`]'s bytes.
pub fn decode_peer(bytes: &[u8]) -> Result<PeerMsg, String> {
    match bytes.split_first() {
        Some((0, rest)) => Ok(PeerMsg::Raft(rest.to_vec())),
        Some((1, rest)) => decode(rest),
        _ => Err("unknown peer message".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let f = ClientFrame {
            xid: 3,
            req: Request::Create {
                path: "/locks/L/lock-".into(),
                data: vec![1],
                mode: CreateMode::EphemeralSequential,
            },
        };
        let mut out = Vec::new();
        frame(&f, &mut out);
        assert_eq!(decode::<ClientFrame>(&out[4..]).unwrap(), f);
        let r = ServerFrame::Reply {
            xid: 3,
            zxid: 9,
            resp: Response::Err(ZkError::NodeExists),
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"reply":{"xid":3,"zxid":9,"resp":{"err":"node-exists"}}}"#
        );
        for m in [
            PeerMsg::Raft(vec![1, 2, 3]),
            PeerMsg::Touch { sessions: vec![7] },
        ] {
            assert_eq!(decode_peer(&encode_peer(&m)).unwrap(), m);
        }
    }
}
