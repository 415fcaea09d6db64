//! ZooKeeper's client protocol, as its documentation and jute definitions
//! (`zookeeper.jute`) describe it: length-prefixed frames ([`Frames`](crate::net::Frames))
//! each holding one [jute](super::jute) record sequence.
//!
//! A connection opens with a `ConnectRequest` (protocol version, the client's last seen
//! zxid, the timeout asked for, the session id — 0 for a new session — and its password,
//! then an optional read-only flag), answered by a `ConnectResponse` (a timeout of 0 and
//! session 0 when the session is expired or unknown). Then each request is a
//! `RequestHeader` (xid, operation code) and its record; each reply a `ReplyHeader` (xid,
//! the server's last zxid, an error code) and, on success, the operation's response
//! record. Pings have xid −2, watch notifications xid −1 (zxid −1) with a `WatcherEvent`.
//! A reply's record depends on the request's operation, which the client knows by xid.

use super::jute::{DecodeError, Reader, Writer};

mod peer;
mod reply;
mod request;

use super::tree::{CreateMode, EventKind, SessionId, Stat, WatchKind, WatchedEvent, ZkError, Zxid};
pub(crate) use peer::{decode_peer, encode_peer, PeerMsg};
pub use reply::decode_reply;
pub(crate) use reply::encode_reply;
pub(crate) use request::decode_request;
pub use request::encode_request;
use serde::{Deserialize, Serialize};

/// Where a server serves clients (ZooKeeper's `clientPort`).
pub(crate) const CLIENT_PORT: u16 = 2181;
/// Where servers of an ensemble exchange Raft messages and session touches
/// (ZooKeeper's quorum port).
pub(crate) const PEER_PORT: u16 = 2888;

/// The xid of a ping.
pub const PING_XID: i32 = -2;
/// The xid of a watch notification.
pub(crate) const NOTIFICATION_XID: i32 = -1;
/// The xid ZooKeeper's client gives `setWatches` after a reconnect.
pub(crate) const SET_WATCHES_XID: i32 = -8;
/// A session password's length (ZooKeeper's 16 random bytes).
pub const PASSWD_LEN: usize = 16;

/// The operation codes this server serves (`ZooDefs.OpCode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpCode {
    /// `create`: the reply has the path only.
    Create,
    /// `delete`.
    Delete,
    /// `exists`.
    Exists,
    /// `getData`.
    GetData,
    /// `setData`.
    SetData,
    /// `getChildren`: the reply has the names only.
    GetChildren,
    /// `sync`.
    Sync,
    /// `ping`.
    Ping,
    /// `getChildren2`: names and the parent's stat.
    GetChildren2,
    /// `create2`: path and stat.
    Create2,
    /// `createContainer`: path and stat.
    CreateContainer,
    /// `checkWatches`: whether the connection has a watch (the reply has no record).
    CheckWatches,
    /// `removeWatches`: remove the connection's watches (the reply has no record).
    RemoveWatches,
    /// `setWatches`.
    SetWatches,
    /// `closeSession`.
    CloseSession,
}

impl OpCode {
    const ALL: [OpCode; 15] = [
        OpCode::Create,
        OpCode::Delete,
        OpCode::Exists,
        OpCode::GetData,
        OpCode::SetData,
        OpCode::GetChildren,
        OpCode::Sync,
        OpCode::Ping,
        OpCode::GetChildren2,
        OpCode::Create2,
        OpCode::CreateContainer,
        OpCode::CheckWatches,
        OpCode::RemoveWatches,
        OpCode::SetWatches,
        OpCode::CloseSession,
    ];

    /// ZooKeeper's number for it.
    pub fn code(self) -> i32 {
        match self {
            OpCode::Create => 1,
            OpCode::Delete => 2,
            OpCode::Exists => 3,
            OpCode::GetData => 4,
            OpCode::SetData => 5,
            OpCode::GetChildren => 8,
            OpCode::Sync => 9,
            OpCode::Ping => 11,
            OpCode::GetChildren2 => 12,
            OpCode::Create2 => 15,
            OpCode::CheckWatches => 17,
            OpCode::RemoveWatches => 18,
            OpCode::CreateContainer => 19,
            OpCode::SetWatches => 101,
            OpCode::CloseSession => -11,
        }
    }

    /// The operation numbered `code`, if this server serves it.
    pub fn from_code(code: i32) -> Option<OpCode> {
        OpCode::ALL.into_iter().find(|op| op.code() == code)
    }
}

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
        /// The session's password (zeros for a new session).
        passwd: Vec<u8>,
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
        /// Whether the reply carries the node's stat (`create2`, `createContainer`; what
        /// Curator sends) or only its path (`create`).
        with_stat: bool,
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
        /// Whether the reply carries the parent's stat (`getChildren2`).
        with_stat: bool,
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
    /// Whether this connection has a watch of `kind` on `path` (`checkWatches`; the
    /// Java client sends it when one of several watchers of a path is removed).
    CheckWatches {
        /// Path.
        path: String,
        /// Which watches.
        kind: WatchKind,
    },
    /// Remove this connection's watches of `kind` on `path` (`removeWatches`).
    RemoveWatches {
        /// Path.
        path: String,
        /// Which watches.
        kind: WatchKind,
    },
    /// End the session now.
    CloseSession,
    /// A request the server answers with an error without running it: an operation it
    /// does not serve (`Unimplemented`) or arguments it rejects (`BadArguments`).
    Rejected {
        /// The operation's number, as sent.
        op: i32,
        /// The answer.
        err: ZkError,
    },
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

    /// Its operation (`None` for the handshake and for a rejected operation).
    pub fn op(&self) -> Option<OpCode> {
        Some(match self {
            Request::Connect { .. } | Request::Rejected { .. } => return None,
            Request::Ping => OpCode::Ping,
            Request::Create {
                mode: CreateMode::Container,
                ..
            } => OpCode::CreateContainer,
            Request::Create {
                with_stat: true, ..
            } => OpCode::Create2,
            Request::Create { .. } => OpCode::Create,
            Request::Delete { .. } => OpCode::Delete,
            Request::SetData { .. } => OpCode::SetData,
            Request::Exists { .. } => OpCode::Exists,
            Request::GetData { .. } => OpCode::GetData,
            Request::GetChildren {
                with_stat: true, ..
            } => OpCode::GetChildren2,
            Request::GetChildren { .. } => OpCode::GetChildren,
            Request::Sync { .. } => OpCode::Sync,
            Request::SetWatches { .. } => OpCode::SetWatches,
            Request::CheckWatches { .. } => OpCode::CheckWatches,
            Request::RemoveWatches { .. } => OpCode::RemoveWatches,
            Request::CloseSession => OpCode::CloseSession,
        })
    }
}

/// A client frame: a request with its xid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientFrame {
    /// Client-chosen id, echoed in the reply.
    pub xid: i32,
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
        /// The session's password, to present when reconnecting.
        passwd: Vec<u8>,
    },
    /// The session asked for is expired (ZooKeeper answers with timeout 0, then closes).
    Expired,
    /// A ping's answer.
    Pong,
    /// A create's result.
    Created {
        /// Actual path.
        path: String,
        /// Its stat (all zero when the request was a plain `create`, whose reply has
        /// none).
        stat: Stat,
    },
    /// A delete's result.
    Deleted,
    /// `exists`: the stat, if the node exists (on the wire, a missing node is the error
    /// `NoNode`).
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
        /// The parent's stat (all zero for a plain `getChildren`, whose reply has none).
        stat: Stat,
    },
    /// `setData`.
    Set {
        /// New stat.
        stat: Stat,
    },
    /// `sync` done.
    Synced {
        /// The path synced (echoed).
        path: String,
    },
    /// `setWatches` done.
    WatchesSet,
    /// `checkWatches`: the watch is there.
    WatchesChecked,
    /// `removeWatches`: removed.
    WatchesRemoved,
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
        xid: i32,
        /// The server's last zxid when it answered.
        zxid: Zxid,
        /// The body.
        resp: Response,
    },
    /// A watch fired (the wire carries no zxid for it: it reads as 0).
    Watch(WatchedEvent),
}

/// A session's password: 16 bytes derived from its id (ZooKeeper's derivation is its
/// own; a client only echoes them back).
pub(crate) fn session_passwd(session: SessionId) -> Vec<u8> {
    let mut x = session ^ 0xb341_5c00;
    (0..PASSWD_LEN / 8)
        .flat_map(|_| {
            // SplitMix64.
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)).to_be_bytes()
        })
        .collect()
}

fn mode_flags(mode: CreateMode) -> i32 {
    match mode {
        CreateMode::Persistent => 0,
        CreateMode::Ephemeral => 1,
        CreateMode::PersistentSequential => 2,
        CreateMode::EphemeralSequential => 3,
        CreateMode::Container => 4,
    }
}

fn flags_mode(flags: i32) -> Option<CreateMode> {
    Some(match flags {
        0 => CreateMode::Persistent,
        1 => CreateMode::Ephemeral,
        2 => CreateMode::PersistentSequential,
        3 => CreateMode::EphemeralSequential,
        4 => CreateMode::Container,
        _ => return None,
    })
}

fn watch_kind_code(kind: WatchKind) -> i32 {
    match kind {
        WatchKind::Children => 1,
        WatchKind::Data => 2,
        WatchKind::Any => 3,
    }
}

fn code_watch_kind(code: i32) -> Option<WatchKind> {
    Some(match code {
        1 => WatchKind::Children,
        2 => WatchKind::Data,
        3 => WatchKind::Any,
        _ => return None,
    })
}

fn event_type(kind: EventKind) -> i32 {
    match kind {
        EventKind::NodeCreated => 1,
        EventKind::NodeDeleted => 2,
        EventKind::NodeDataChanged => 3,
        EventKind::NodeChildrenChanged => 4,
    }
}

/// `KeeperState.SyncConnected`: the state every notification of a live connection has.
const SYNC_CONNECTED: i32 = 3;
/// `ZooDefs.Perms.ALL`.
const PERMS_ALL: i32 = 31;

fn write_stat(w: &mut Writer, s: &Stat) {
    w.long(s.czxid as i64)
        .long(s.mzxid as i64)
        .long(s.ctime)
        .long(s.mtime)
        .int(s.version)
        // DataNode.copyStat: the stored cversion counts creates; the reported one counts
        // changes, a create and a delete for every child no longer there.
        .int(s.cversion * 2 - s.num_children as i32)
        .int(0) // aversion: ACLs never change here
        .long(s.ephemeral_owner as i64)
        .int(s.data_length as i32)
        .int(s.num_children as i32)
        .long(s.pzxid as i64);
}

fn read_stat(r: &mut Reader) -> Result<Stat, DecodeError> {
    let czxid = r.long("stat.czxid")? as u64;
    let mzxid = r.long("stat.mzxid")? as u64;
    let ctime = r.long("stat.ctime")?;
    let mtime = r.long("stat.mtime")?;
    let version = r.int("stat.version")?;
    let cversion = r.int("stat.cversion")?;
    let _aversion = r.int("stat.aversion")?;
    let ephemeral_owner = r.long("stat.ephemeralOwner")? as u64;
    let data_length = r.int("stat.dataLength")? as u32;
    let num_children = r.int("stat.numChildren")? as u32;
    let pzxid = r.long("stat.pzxid")? as u64;
    // Back to creates (see write_stat).
    let cversion = (cversion + num_children as i32) / 2;
    Ok(Stat {
        czxid,
        mzxid,
        pzxid,
        ctime,
        mtime,
        version,
        cversion,
        ephemeral_owner,
        num_children,
        data_length,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat() -> Stat {
        Stat {
            czxid: 5,
            mzxid: 6,
            pzxid: 7,
            ctime: 1_700_000_000_000,
            mtime: 1_700_000_000_001,
            version: 2,
            cversion: 3,
            ephemeral_owner: 0x0100_0000_0000_0001,
            num_children: 4,
            data_length: 1,
        }
    }

    fn round_trip(req: Request, resp: Response) {
        let f = ClientFrame { xid: 7, req };
        let mut out = Vec::new();
        encode_request(&f, &mut out);
        let handshake = matches!(f.req, Request::Connect { .. });
        let back = decode_request(&out[4..], handshake).unwrap();
        assert_eq!(back.req, f.req);
        let op = f.req.op();
        let reply = ServerFrame::Reply {
            xid: if handshake { 0 } else { 7 },
            zxid: if handshake { 0 } else { 9 },
            resp,
        };
        let mut out = Vec::new();
        encode_reply(&reply, op, &mut out);
        let back = decode_reply(&out[4..], handshake, |x| (x == 7).then_some(op).flatten());
        assert_eq!(back.unwrap(), reply);
    }

    #[test]
    fn every_request_and_reply_round_trips() {
        let s = stat();
        let p = || "/locks/L".to_string();
        let passwd = session_passwd(42);
        assert_eq!(passwd.len(), PASSWD_LEN);
        let connect = Request::Connect {
            session: 42,
            timeout_ms: 1000,
            last_zxid: 3,
            passwd: passwd.clone(),
        };
        let connected = Response::Connected {
            session: 42,
            timeout_ms: 1000,
            passwd,
        };
        round_trip(connect.clone(), connected);
        round_trip(connect, Response::Expired);
        round_trip(Request::Ping, Response::Pong);
        for (mode, with_stat) in [
            (CreateMode::EphemeralSequential, true),
            (CreateMode::Persistent, true),
            (CreateMode::Container, true),
        ] {
            let req = Request::Create {
                path: p(),
                data: vec![1, 2],
                mode,
                with_stat,
            };
            round_trip(req, Response::Created { path: p(), stat: s });
        }
        let plain = Request::Create {
            path: p(),
            data: vec![],
            mode: CreateMode::Ephemeral,
            with_stat: false,
        };
        let created = Response::Created {
            path: p(),
            stat: Stat::default(),
        };
        round_trip(plain.clone(), created);
        round_trip(plain, Response::Err(ZkError::NodeExists));
        let delete = Request::Delete {
            path: p(),
            version: -1,
        };
        round_trip(delete.clone(), Response::Deleted);
        round_trip(delete, Response::Err(ZkError::NotEmpty));
        let set = Request::SetData {
            path: p(),
            data: vec![9],
            version: 2,
        };
        round_trip(set.clone(), Response::Set { stat: s });
        round_trip(set, Response::Err(ZkError::BadVersion));
        let exists = Request::Exists {
            path: p(),
            watch: true,
        };
        round_trip(exists.clone(), Response::Exists { stat: Some(s) });
        round_trip(exists, Response::Exists { stat: None });
        let get = Request::GetData {
            path: p(),
            watch: false,
        };
        round_trip(
            get,
            Response::Data {
                data: vec![7],
                stat: s,
            },
        );
        for with_stat in [true, false] {
            let req = Request::GetChildren {
                path: p(),
                watch: true,
                with_stat,
            };
            let stat = if with_stat { s } else { Stat::default() };
            let children = vec!["a".to_string(), "b".to_string()];
            round_trip(req, Response::Children { children, stat });
        }
        round_trip(Request::Sync { path: p() }, Response::Synced { path: p() });
        let watches = Request::SetWatches {
            relative_zxid: 12,
            data: vec![p()],
            exist: vec![],
            child: vec!["/x".into()],
        };
        round_trip(watches, Response::WatchesSet);
        for kind in [WatchKind::Children, WatchKind::Data, WatchKind::Any] {
            let check = Request::CheckWatches { path: p(), kind };
            round_trip(check.clone(), Response::WatchesChecked);
            round_trip(check, Response::Err(ZkError::NoWatcher));
            let remove = Request::RemoveWatches { path: p(), kind };
            round_trip(remove.clone(), Response::WatchesRemoved);
            round_trip(remove, Response::Err(ZkError::NoWatcher));
        }
        round_trip(Request::CloseSession, Response::Closed);
        round_trip(
            Request::Ping,
            Response::Err(ZkError::Other(-127)), // Throttled: not one of ours
        );
    }

    #[test]
    fn the_bytes_are_zookeepers() {
        // An exists("/a", watch) request: header (xid 1, op 3), path, watch.
        let f = ClientFrame {
            xid: 1,
            req: Request::Exists {
                path: "/a".into(),
                watch: true,
            },
        };
        let mut out = Vec::new();
        encode_request(&f, &mut out);
        assert_eq!(
            out,
            [0, 0, 0, 15, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 2, b'/', b'a', 1]
        );
        // A missing node: the reply header alone, with NoNode (-101).
        let r = ServerFrame::Reply {
            xid: 1,
            zxid: 4,
            resp: Response::Exists { stat: None },
        };
        let mut out = Vec::new();
        encode_reply(&r, Some(OpCode::Exists), &mut out);
        assert_eq!(
            out,
            [0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0x9b]
        );
        // A notification: xid -1, zxid -1, err 0, then type, state 3, path.
        let w = ServerFrame::Watch(WatchedEvent {
            kind: EventKind::NodeDeleted,
            path: "/a".into(),
            zxid: 0,
        });
        let mut out = Vec::new();
        encode_reply(&w, None, &mut out);
        assert_eq!(&out[4..16], &[0xff; 12]);
        assert_eq!(&out[16..20], &[0; 4]);
        assert_eq!(
            &out[20..],
            &[0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 2, b'/', b'a']
        );
    }

    #[test]
    fn bad_requests_are_rejected_or_refused() {
        let header = |xid: i32, op: i32| {
            let mut w = Writer::new();
            w.int(xid).int(op);
            w
        };
        // multi (14): not served, answered Unimplemented.
        let f = decode_request(&header(4, 14).into_bytes(), false).unwrap();
        assert_eq!(
            f.req,
            Request::Rejected {
                op: 14,
                err: ZkError::Unimplemented
            }
        );
        // A TTL create mode through create: BadArguments, as CreateMode.fromFlag.
        let mut w = header(5, 1);
        w.string("/t").buffer(&[]).int(0).int(5);
        let f = decode_request(&w.into_bytes(), false).unwrap();
        assert!(matches!(
            f.req,
            Request::Rejected {
                err: ZkError::BadArguments,
                ..
            }
        ));
        // checkWatches (17) and removeWatches (18) with a type that is not Children (1),
        // Data (2) or Any (3): MarshallingError, as WatcherType.fromInt fails.
        for op in [17, 18] {
            let mut w = header(7, op);
            w.string("/w").int(4);
            let f = decode_request(&w.into_bytes(), false).unwrap();
            let err = ZkError::MarshallingError;
            assert_eq!(f.req, Request::Rejected { op, err });
        }
        // Truncated or overlong records are errors.
        let mut w = header(6, 3);
        w.string("/a");
        assert!(decode_request(&w.into_bytes(), false).is_err());
        let mut w = header(6, 3);
        w.string("/a").bool(false).int(0);
        let e = decode_request(&w.into_bytes(), false).unwrap_err();
        assert!(e.what.contains("after its end"), "{e}");
        // A reply to nothing outstanding.
        let mut w = Writer::new();
        w.int(99).long(1).int(0);
        assert!(decode_reply(&w.into_bytes(), false, |_| None).is_err());
    }
}
