//! The replicated state machine: ZooKeeper's `ZKDatabase` (the [`DataTree`] plus the
//! table of live sessions and their timeouts) and the transactions that change it.
//!
//! A [`Txn`] is a client's write request as it enters the total order (ZooKeeper logs
//! the transaction `PrepRequestProcessor` made of it; we log the request and let
//! [`ZkDb::apply`] do both steps). Applying is deterministic, so every server that
//! applies the same transactions in the same order computes the same results, errors
//! included — as in ZooKeeper, where a failed write still takes a zxid (`ErrorTxn`).
//! Every write checks its session first (`SessionTracker.checkSession`): a write of a
//! closed session fails with `SessionExpired`, so no ephemeral node ever outlives its
//! session; a write sent through a server that is not the session's *owner* fails with
//! `SessionMoved`. A session's owner is the server it was created on, and moves when the
//! client reconnects to another server (ZooKeeper's leader sets it when that server
//! revalidates the session; here an [`Op::SetOwner`] goes through the log and the server
//! answers the client once it is applied). So a request still in flight through the old
//! server — stuck in a paused server, say — cannot be applied after the client moved on:
//! it is either ordered before the move (and then visible to everything the client does
//! on the new server) or fails. The converse race exists too (ZOOKEEPER-710): a move
//! through a server the client gave up on can be ordered *after* the move through the
//! server it is on now, and every write it sends there then fails `SessionMoved`. As in
//! ZooKeeper, the server then closes the connection instead of answering, so the client
//! reconnects and moves the session back.
//!
//! The database knows nothing of the lock recipe: which nodes own which locks is the
//! recipe's layout ([`super::mutex::layout`]).

use super::jute::DecodeError;
use super::tree::{CreateMode, DataTree, Fired, SessionId, Stat, ZkError, Zxid};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A write request in the total order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Op {
    /// Open session `Txn::session` with this (negotiated) timeout.
    CreateSession {
        /// Timeout, ms.
        timeout_ms: u64,
    },
    /// Close the session: delete its ephemerals.
    CloseSession,
    /// The session's client reconnected through `Txn::owner`.
    SetOwner,
    /// Create a node.
    Create {
        /// Path (a sequential node gets a suffix).
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
    /// The container manager deletes an empty container.
    DeleteContainer {
        /// Path.
        path: String,
    },
}

/// [`DecodeError::format`] of a transaction.
pub(crate) const TXN: &str = "txn";

/// A transaction: who asked, through which server, when (the proposer's wall clock, for
/// `ctime`/`mtime`), what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Txn {
    /// The session (0 for the server's own: container deletion).
    pub session: SessionId,
    /// The server the client sent it through (index + 1); 0 for a server's own
    /// transactions (expiry, containers), which are not owner-checked.
    pub owner: u64,
    /// The proposer's wall clock, ms.
    pub time_ms: i64,
    /// The request.
    pub op: Op,
}

impl Txn {
    /// JSON bytes (fields in declaration order, no maps: a pure function of the value).
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a txn serialises")
    }

    /// Decode [`Txn::encode`]'s bytes (one line of JSON, so its column is the byte).
    pub(crate) fn decode(bytes: &[u8]) -> Result<Txn, DecodeError> {
        serde_json::from_slice(bytes)
            .map_err(|e| DecodeError::new(TXN, e.column().saturating_sub(1), e.to_string()))
    }
}

/// A successful transaction's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TxnOk {
    /// A session was opened.
    SessionCreated {
        /// Its timeout, ms.
        timeout_ms: u64,
    },
    /// A session was closed.
    SessionClosed,
    /// A session's owner moved.
    OwnerSet,
    /// A node was created (create2: the path and the stat).
    Created {
        /// Actual path.
        path: String,
        /// Its stat.
        stat: Stat,
    },
    /// A node was deleted.
    Deleted,
    /// Data was set.
    Set {
        /// The new stat.
        stat: Stat,
    },
}

/// What applying one transaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// Its zxid.
    pub zxid: Zxid,
    /// The result.
    pub result: Result<TxnOk, ZkError>,
    /// Watches it fired.
    pub fired: Fired,
}

/// The database: the tree, the live sessions, the last applied zxid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ZkDb {
    /// The znode tree (and the server's watches).
    pub tree: DataTree,
    sessions: BTreeMap<SessionId, u64>,
    owners: BTreeMap<SessionId, u64>,
    last_zxid: Zxid,
}

impl ZkDb {
    /// An empty database.
    pub(crate) fn new() -> ZkDb {
        ZkDb::default()
    }

    /// The last applied zxid.
    pub(crate) fn last_zxid(&self) -> Zxid {
        self.last_zxid
    }

    /// Live sessions and their timeouts, ms.
    pub(crate) fn sessions(&self) -> &BTreeMap<SessionId, u64> {
        &self.sessions
    }

    /// Whether `session` is live.
    pub(crate) fn has_session(&self, session: SessionId) -> bool {
        self.sessions.contains_key(&session)
    }

    /// The server (index + 1) that owns a live session.
    pub(crate) fn owner(&self, session: SessionId) -> Option<u64> {
        self.owners.get(&session).copied()
    }

    /// Note a zxid that carries no transaction (an ensemble's leader no-op): reads then
    /// report it as the last zxid.
    pub(crate) fn skip(&mut self, zxid: Zxid) {
        self.last_zxid = self.last_zxid.max(zxid);
    }

    /// Apply `txn` as transaction `zxid` (> every zxid applied before).
    pub(crate) fn apply(&mut self, zxid: Zxid, txn: &Txn) -> Applied {
        debug_assert!(zxid > self.last_zxid, "zxids increase");
        self.last_zxid = zxid;
        let mut fired = Fired::new();
        let result = self.run(zxid, txn, &mut fired);
        Applied {
            zxid,
            result,
            fired,
        }
    }

    fn run(&mut self, zxid: Zxid, txn: &Txn, fired: &mut Fired) -> Result<TxnOk, ZkError> {
        let live = txn.session == 0 || self.sessions.contains_key(&txn.session);
        let moved = txn.owner != 0
            && txn.session != 0
            && self
                .owners
                .get(&txn.session)
                .is_some_and(|&o| o != txn.owner);
        let t = txn.time_ms;
        match &txn.op {
            Op::CreateSession { timeout_ms } => {
                self.sessions.insert(txn.session, *timeout_ms);
                self.owners.insert(txn.session, txn.owner);
                Ok(TxnOk::SessionCreated {
                    timeout_ms: *timeout_ms,
                })
            }
            Op::SetOwner => {
                if !live {
                    return Err(ZkError::SessionExpired);
                }
                self.owners.insert(txn.session, txn.owner);
                Ok(TxnOk::OwnerSet)
            }
            _ if !live => Err(ZkError::SessionExpired),
            _ if moved => Err(ZkError::SessionMoved),
            Op::CloseSession => {
                self.sessions.remove(&txn.session);
                self.owners.remove(&txn.session);
                self.tree.kill_session(txn.session, zxid, fired);
                Ok(TxnOk::SessionClosed)
            }
            Op::Create { path, data, mode } => {
                let (path, stat) =
                    self.tree
                        .create(path, data, *mode, txn.session, zxid, t, fired)?;
                Ok(TxnOk::Created { path, stat })
            }
            Op::Delete { path, version } => {
                self.tree.delete(path, *version, zxid, fired)?;
                Ok(TxnOk::Deleted)
            }
            Op::SetData {
                path,
                data,
                version,
            } => {
                let stat = self.tree.set_data(path, data, *version, zxid, t, fired)?;
                Ok(TxnOk::Set { stat })
            }
            Op::DeleteContainer { path } => {
                self.tree.delete_container(path, zxid, fired)?;
                Ok(TxnOk::Deleted)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::zk::tree::{EventKind, WatchedEvent};

    struct Db {
        db: ZkDb,
        zxid: Zxid,
    }

    impl Db {
        fn new() -> Db {
            let mut d = Db {
                db: ZkDb::new(),
                zxid: 0,
            };
            for s in [1, 2] {
                d.run(s, Op::CreateSession { timeout_ms: 1000 });
            }
            d
        }

        fn run(&mut self, session: SessionId, op: Op) -> Applied {
            self.zxid += 1;
            self.db.apply(
                self.zxid,
                &Txn {
                    session,
                    owner: 1,
                    time_ms: 7,
                    op,
                },
            )
        }

        fn create(
            &mut self,
            session: SessionId,
            path: &str,
            mode: CreateMode,
        ) -> Result<String, ZkError> {
            let r = self.run(
                session,
                Op::Create {
                    path: path.into(),
                    data: b"x".to_vec(),
                    mode,
                },
            );
            match r.result? {
                TxnOk::Created { path, .. } => Ok(path),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn sequential_names_count_creates_from_the_parents_cversion() {
        let mut d = Db::new();
        d.create(1, "/locks", CreateMode::Container).unwrap();
        d.create(1, "/locks/L", CreateMode::Container).unwrap();
        let a = d
            .create(1, "/locks/L/lock-", CreateMode::EphemeralSequential)
            .unwrap();
        let b = d
            .create(2, "/locks/L/lock-", CreateMode::EphemeralSequential)
            .unwrap();
        assert_eq!(a, "/locks/L/lock-0000000000");
        assert_eq!(b, "/locks/L/lock-0000000001");
        // A delete does not give a number back: the parent's cversion counts creates.
        d.run(
            1,
            Op::Delete {
                path: a,
                version: -1,
            },
        );
        let c = d
            .create(1, "/locks/L/lock-", CreateMode::EphemeralSequential)
            .unwrap();
        assert_eq!(c, "/locks/L/lock-0000000002");
        let parent = d.db.tree.stat("/locks/L").unwrap();
        assert_eq!((parent.cversion, parent.num_children), (3, 2));
        // Protected names sort by what follows "lock-".
        let g = d
            .create(2, "/locks/L/_c_0000-lock-", CreateMode::EphemeralSequential)
            .unwrap();
        assert_eq!(g, "/locks/L/_c_0000-lock-0000000003");
        // The parent deleted and created again: numbering starts over (why czxid, not the
        // sequence, is the safe token).
        for p in [b, c, g] {
            d.run(
                1,
                Op::Delete {
                    path: p,
                    version: -1,
                },
            );
        }
        assert_eq!(
            d.db.tree.container_candidates(),
            vec!["/locks/L".to_string()]
        );
        assert!(d
            .run(
                0,
                Op::DeleteContainer {
                    path: "/locks/L".into()
                }
            )
            .result
            .is_ok());
        d.create(1, "/locks/L", CreateMode::Container).unwrap();
        let again = d
            .create(1, "/locks/L/lock-", CreateMode::EphemeralSequential)
            .unwrap();
        assert_eq!(again, "/locks/L/lock-0000000000");
    }

    #[test]
    fn stats_carry_zxids_and_versions() {
        let mut d = Db::new();
        let r = d.run(
            1,
            Op::Create {
                path: "/a".into(),
                data: vec![],
                mode: CreateMode::Persistent,
            },
        );
        let Ok(TxnOk::Created { stat, .. }) = r.result else {
            panic!()
        };
        assert_eq!(
            (stat.czxid, stat.mzxid, stat.version, stat.ctime),
            (r.zxid, r.zxid, 0, 7)
        );
        let r2 = d.run(
            1,
            Op::SetData {
                path: "/a".into(),
                data: b"y".to_vec(),
                version: 0,
            },
        );
        let Ok(TxnOk::Set { stat }) = r2.result else {
            panic!()
        };
        assert_eq!((stat.czxid, stat.mzxid, stat.version), (r.zxid, r2.zxid, 1));
        let root = d.db.tree.stat("/").unwrap();
        assert_eq!((root.cversion, root.pzxid), (1, r.zxid));
        assert_eq!(d.db.last_zxid(), r2.zxid);
    }

    #[test]
    fn zookeepers_error_codes() {
        let mut d = Db::new();
        let create = |d: &mut Db, p: &str, m| d.create(1, p, m);
        assert_eq!(
            create(&mut d, "/a/b", CreateMode::Persistent),
            Err(ZkError::NoNode)
        );
        create(&mut d, "/a", CreateMode::Persistent).unwrap();
        assert_eq!(
            create(&mut d, "/a", CreateMode::Persistent),
            Err(ZkError::NodeExists)
        );
        create(&mut d, "/a/b", CreateMode::Persistent).unwrap();
        let del = |d: &mut Db, p: &str, v| {
            d.run(
                1,
                Op::Delete {
                    path: p.into(),
                    version: v,
                },
            )
            .result
        };
        assert_eq!(del(&mut d, "/a", -1), Err(ZkError::NotEmpty));
        assert_eq!(del(&mut d, "/a/b", 3), Err(ZkError::BadVersion));
        assert_eq!(del(&mut d, "/nope", -1), Err(ZkError::NoNode));
        let set = d.run(
            1,
            Op::SetData {
                path: "/a/b".into(),
                data: vec![],
                version: 5,
            },
        );
        assert_eq!(set.result, Err(ZkError::BadVersion));
        assert_eq!(del(&mut d, "/a/b", 0), Ok(TxnOk::Deleted));
        create(&mut d, "/e", CreateMode::Ephemeral).unwrap();
        assert_eq!(
            create(&mut d, "/e/child", CreateMode::Persistent),
            Err(ZkError::NoChildrenForEphemerals)
        );
        assert_eq!(
            create(&mut d, "relative", CreateMode::Persistent),
            Err(ZkError::BadArguments)
        );
        assert_eq!(ZkError::NoNode.code(), -101);
        assert_eq!(
            ZkError::NodeExists.to_string(),
            "KeeperErrorCode = NodeExists"
        );
    }

    #[test]
    fn a_session_close_deletes_its_ephemerals_and_fires_their_watches() {
        let mut d = Db::new();
        d.create(1, "/locks", CreateMode::Container).unwrap();
        d.create(1, "/locks/L", CreateMode::Container).unwrap();
        let owner = d
            .create(1, "/locks/L/lock-", CreateMode::EphemeralSequential)
            .unwrap();
        d.create(2, "/locks/L/lock-", CreateMode::EphemeralSequential)
            .unwrap();
        let second = d
            .create(1, "/locks/L/lock-", CreateMode::EphemeralSequential)
            .unwrap();
        // The waiter watches its predecessor (getData with a watch).
        d.db.tree.get_data(&owner, Some(42)).unwrap();
        let closed = d.run(1, Op::CloseSession);
        assert_eq!(closed.result, Ok(TxnOk::SessionClosed));
        assert!(d.db.tree.stat(&owner).is_none() && d.db.tree.stat(&second).is_none());
        assert_eq!(
            closed.fired,
            vec![(
                42,
                WatchedEvent {
                    kind: EventKind::NodeDeleted,
                    path: owner,
                    zxid: closed.zxid
                }
            )]
        );
        // A closed session can write nothing, nor close again.
        assert_eq!(
            d.create(1, "/x", CreateMode::Ephemeral),
            Err(ZkError::SessionExpired)
        );
        assert_eq!(
            d.run(1, Op::CloseSession).result,
            Err(ZkError::SessionExpired)
        );
        assert!(!d.db.has_session(1) && d.db.has_session(2));
    }

    #[test]
    fn watches_are_one_shot_and_fire_in_zxid_order() {
        let mut d = Db::new();
        d.create(1, "/p", CreateMode::Persistent).unwrap();
        let t = &mut d.db.tree;
        t.get_data("/p", Some(1)).unwrap();
        t.get_children("/p", Some(1)).unwrap();
        assert_eq!(
            t.exists("/p/c", Some(2)).unwrap(),
            None,
            "exists watches a missing node"
        );
        assert_eq!(t.get_data("/missing", Some(3)), Err(ZkError::NoNode));
        assert_eq!(t.get_children("/missing", Some(3)), Err(ZkError::NoNode));
        assert_eq!(
            t.watch_count(),
            3,
            "no watch is left on a missing node by getData"
        );
        let created = d.create(1, "/p/c", CreateMode::Persistent);
        assert!(created.is_ok());
        let set1 = d.run(
            1,
            Op::SetData {
                path: "/p".into(),
                data: vec![1],
                version: -1,
            },
        );
        let set2 = d.run(
            1,
            Op::SetData {
                path: "/p".into(),
                data: vec![2],
                version: -1,
            },
        );
        assert_eq!(set1.fired.len(), 1, "the data watch fires once");
        assert!(set2.fired.is_empty(), "and is gone");
        assert_eq!(set1.fired[0].1.kind, EventKind::NodeDataChanged);
        assert_eq!(d.db.tree.watch_count(), 0);
        // setWatches after a reconnect fires what changed since the client's last zxid.
        let last = d.db.last_zxid();
        let mut fired = Vec::new();
        d.db.tree.set_watches(
            set1.zxid - 1,
            [
                &["/p".into(), "/gone".into()],
                &["/p/c".into(), "/q".into()],
                &["/p".into()],
            ],
            9,
            last,
            &mut fired,
        );
        let got: Vec<(String, EventKind)> = fired
            .iter()
            .map(|(_, e)| (e.path.clone(), e.kind))
            .collect();
        assert_eq!(
            got,
            vec![
                ("/p".to_string(), EventKind::NodeDataChanged),
                ("/gone".to_string(), EventKind::NodeDeleted),
                ("/p/c".to_string(), EventKind::NodeCreated),
            ]
        );
        assert_eq!(
            d.db.tree.watch_count(),
            2,
            "/q's exist and /p's child watch are set"
        );
        d.db.tree.remove_watcher(9);
        assert_eq!(d.db.tree.watch_count(), 0);
    }

    #[test]
    fn create_fires_the_exist_and_child_watches_with_its_zxid() {
        let mut d = Db::new();
        d.create(1, "/p", CreateMode::Persistent).unwrap();
        d.db.tree.get_children("/p", Some(1)).unwrap();
        d.db.tree.exists("/p/c", Some(2)).unwrap();
        let r = d.run(
            1,
            Op::Create {
                path: "/p/c".into(),
                data: vec![],
                mode: CreateMode::Persistent,
            },
        );
        let got: Vec<(u64, EventKind, Zxid)> =
            r.fired.iter().map(|(w, e)| (*w, e.kind, e.zxid)).collect();
        assert_eq!(
            got,
            vec![
                (2, EventKind::NodeCreated, r.zxid),
                (1, EventKind::NodeChildrenChanged, r.zxid)
            ]
        );
    }

    #[test]
    fn a_write_through_a_server_that_no_longer_owns_the_session_fails() {
        let mut d = Db::new();
        assert_eq!(d.db.owner(1), Some(1));
        // The client reconnected through server 2.
        d.zxid += 1;
        let moved = d.db.apply(
            d.zxid,
            &Txn {
                session: 1,
                owner: 2,
                time_ms: 0,
                op: Op::SetOwner,
            },
        );
        assert_eq!(moved.result, Ok(TxnOk::OwnerSet));
        // A create still in flight through server 1 (as `Db::run` sends it).
        assert_eq!(
            d.create(1, "/x", CreateMode::Ephemeral),
            Err(ZkError::SessionMoved)
        );
        assert!(d.db.tree.stat("/x").is_none());
        // Server-side transactions (owner 0) are not checked: expiry closes it.
        d.zxid += 1;
        let closed = d.db.apply(
            d.zxid,
            &Txn {
                session: 1,
                owner: 0,
                time_ms: 0,
                op: Op::CloseSession,
            },
        );
        assert_eq!(closed.result, Ok(TxnOk::SessionClosed));
        assert_eq!(d.db.owner(1), None);
    }

    #[test]
    fn txns_round_trip_as_bytes() {
        let t = Txn {
            session: 3,
            owner: 2,
            time_ms: 9,
            op: Op::Delete {
                path: "/a".into(),
                version: -1,
            },
        };
        assert_eq!(Txn::decode(&t.encode()).unwrap(), t);
        let e = Txn::decode(b"{\"session\":x}").unwrap_err();
        assert!(
            matches!(
                e,
                DecodeError {
                    format: TXN,
                    at: 11,
                    ..
                }
            ),
            "{e}"
        );
    }
}
