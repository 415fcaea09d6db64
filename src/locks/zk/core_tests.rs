//! The core, one input at a time (openraft's engine tests): set a state, hand the core
//! one input, assert the effects it returns and the state it leaves.

use super::*;
use crate::locks::zk::ensemble::Leading;
use crate::locks::zk::params::ZkParams;
use crate::locks::zk::tree::{CreateMode, EventKind};

const MS: i64 = 1_000_000;
/// ZooKeeper's tick in these tests, ms.
const TICK: u64 = 100;
/// A session timeout, ms.
const TIMEOUT: u64 = 1000;

fn txn(session: SessionId, owner: u64, op: Op) -> Txn {
    Txn {
        session,
        owner,
        time_ms: 7,
        op,
    }
}

fn create(path: &str, mode: CreateMode) -> Op {
    Op::Create {
        path: path.into(),
        data: vec![],
        mode,
    }
}

fn set_data(path: &str) -> Op {
    Op::SetData {
        path: path.into(),
        data: vec![1],
        version: -1,
    }
}

/// A standalone server (index 0) with sessions 1 and 2 opened through it at time 0.
fn standalone() -> ZkCore {
    let (mut core, replayed) = ZkCore::standalone(0, TICK, &[], 0);
    assert!(replayed.is_empty());
    for s in [1, 2] {
        let open = Op::CreateSession {
            timeout_ms: TIMEOUT,
        };
        let (_, opened, _) = core.apply_logged(&txn(s, 1, open), 0);
        assert!(opened.is_ok());
    }
    core
}

/// Apply a client's write through server 0 and expect it to succeed.
fn write(core: &mut ZkCore, session: SessionId, op: Op) -> TxnOk {
    let (_, result, _) = core.apply_logged(&txn(session, 1, op), 0);
    result.expect("the write succeeds")
}

/// Member 0 of a three-server ensemble that knows no leader yet.
fn ensemble_member() -> ZkCore {
    let params = ZkParams {
        servers: 3,
        ..ZkParams::default()
    };
    let raft = Ensemble::new(0, &params, &mut Disk::new(), 1);
    ZkCore::ensemble(0, TICK, raft)
}

fn ensemble(core: &mut ZkCore) -> &mut Ensemble {
    match &mut core.log {
        WriteLog::Ensemble(e) => e,
        WriteLog::Standalone { .. } => panic!("standalone"),
    }
}

/// A committed entry carrying `txn` under proposal id `id`.
fn entry(id: u64, txn: Txn) -> Vec<u8> {
    Proposal { id, txn }.encode()
}

#[test]
fn a_session_expires_between_its_timeout_and_a_tick_later() {
    let mut core = standalone();
    assert!(core.expire_due(1099 * MS).is_empty());
    assert_eq!(core.expire_due(1100 * MS), vec![1, 2]);
    // Marked closing: a late touch does not revive a session, and it is not due again
    // until its close is two ticks overdue.
    assert!(!core.touch(1, 1101 * MS));
    assert!(core.expire_due(1200 * MS).is_empty());
    assert_eq!(core.tracks(1), Some(false));
}

#[test]
fn a_touch_moves_a_sessions_expiry_later() {
    let mut core = standalone();
    assert!(core.touch(1, 450 * MS));
    assert_eq!(core.expire_due(1100 * MS), vec![2]);
    // Session 2's close, not applied two ticks on, is due again with it.
    assert_eq!(core.expire_due(1500 * MS), vec![1, 2]);
    assert!(!core.touch(9, 0), "an unknown session");
}

#[test]
fn a_session_close_closes_its_connections_fires_watches_and_records_the_lost_lock() {
    let mut core = standalone();
    let (c1, c2) = (core.open_conn(1), core.open_conn(2));
    write(&mut core, 1, create("/locks", CreateMode::Container));
    write(&mut core, 1, create("/locks/L", CreateMode::Container));
    let seq = CreateMode::EphemeralSequential;
    let TxnOk::Created { path: owner, .. } = write(&mut core, 1, create("/locks/L/lock-", seq))
    else {
        panic!()
    };
    write(&mut core, 2, create("/locks/L/lock-", seq));
    core.get_data(c2, &owner, true).unwrap();
    // The expirer's close (owner 0: the server's own transaction).
    let (zxid, result, effects) = core.apply_logged(&txn(1, 0, Op::CloseSession), 5 * MS);
    assert_eq!(result, Ok(TxnOk::SessionClosed));
    assert_eq!(
        effects,
        vec![
            Effect::Watch {
                conn: c2,
                event: WatchedEvent {
                    kind: EventKind::NodeDeleted,
                    path: owner.clone(),
                    zxid
                }
            },
            Effect::Close { conn: c1 },
            Effect::Record(Record::Expire {
                owner: LostOwner {
                    lock: "L".into(),
                    path: owner,
                    session: 1
                },
                zxid,
                by_client: false
            }),
        ]
    );
    assert_eq!(core.conns().keys().copied().collect::<Vec<_>>(), vec![c2]);
    assert_eq!(core.session_timeout(1), None);
    assert_eq!(core.tracks(1), Some(false), "no longer tracked");
}

#[test]
fn a_watch_fires_once() {
    let mut core = standalone();
    let c = core.open_conn(1);
    write(&mut core, 1, create("/a", CreateMode::Persistent));
    core.get_data(c, "/a", true).unwrap();
    let (zxid, _, effects) = core.apply_logged(&txn(1, 1, set_data("/a")), 0);
    let fired = WatchedEvent {
        kind: EventKind::NodeDataChanged,
        path: "/a".into(),
        zxid,
    };
    assert_eq!(
        effects,
        vec![Effect::Watch {
            conn: c,
            event: fired
        }]
    );
    let (_, _, again) = core.apply_logged(&txn(1, 1, set_data("/a")), 0);
    assert_eq!(again, vec![], "the watch is gone");
    assert_eq!(core.db().tree.watch_count(), 0);
}

#[test]
fn a_closed_connection_leaves_no_watch_behind() {
    let mut core = standalone();
    let c = core.open_conn(1);
    write(&mut core, 1, create("/a", CreateMode::Persistent));
    core.exists(c, "/a", true).unwrap();
    core.get_children(c, "/a", true).unwrap();
    core.close_conn(c);
    assert!(core.conns().is_empty());
    assert_eq!(core.db().tree.watch_count(), 0);
    let (_, _, effects) = core.apply_logged(&txn(1, 1, set_data("/a")), 0);
    assert_eq!(effects, vec![]);
}

#[test]
fn set_watches_fires_at_once_what_changed_since_the_clients_zxid() {
    let mut core = standalone();
    write(&mut core, 1, create("/a", CreateMode::Persistent));
    let seen = core.last_zxid();
    write(&mut core, 1, set_data("/a"));
    let c = core.open_conn(1);
    let effects = core.set_watches(c, seen, [&["/a".into()], &["/b".into()], &[]]);
    assert_eq!(
        effects,
        vec![Effect::Watch {
            conn: c,
            event: WatchedEvent {
                kind: EventKind::NodeDataChanged,
                path: "/a".into(),
                zxid: core.last_zxid()
            }
        }]
    );
    assert_eq!(core.db().tree.watch_count(), 1, "/b's exist watch is set");
}

#[test]
fn an_ephemeral_sequential_create_is_numbered_by_its_parent_and_fires_its_child_watch() {
    let mut core = standalone();
    let c = core.open_conn(2);
    write(&mut core, 1, create("/p", CreateMode::Persistent));
    write(&mut core, 1, create("/p/x", CreateMode::Persistent));
    core.get_children(c, "/p", true).unwrap();
    let op = create("/p/lock-", CreateMode::EphemeralSequential);
    let (zxid, result, effects) = core.apply_logged(&txn(1, 1, op), 0);
    let Ok(TxnOk::Created { path, stat }) = result else {
        panic!("{result:?}")
    };
    assert_eq!(path, "/p/lock-0000000001");
    assert_eq!((stat.czxid, stat.ephemeral_owner), (zxid, 1));
    assert_eq!(
        effects,
        vec![Effect::Watch {
            conn: c,
            event: WatchedEvent {
                kind: EventKind::NodeChildrenChanged,
                path: "/p".into(),
                zxid
            }
        }]
    );
    assert_eq!(core.db().tree.ephemerals(1), vec![path]);
}

#[test]
fn a_revalidated_session_is_touched_when_its_move_is_applied() {
    let mut core = standalone();
    // Server 1 (owner 2) revalidates session 1 at 900 ms.
    let (_, result, effects) = core.apply_logged(&txn(1, 2, Op::SetOwner), 900 * MS);
    assert_eq!((result, effects), (Ok(TxnOk::OwnerSet), vec![]));
    assert_eq!(core.owner(1), Some(2));
    assert_eq!(core.expire_due(1100 * MS), vec![2], "session 1 was touched");
    // Session 2's close, not applied two ticks on, is due again with it.
    assert_eq!(core.expire_due(2000 * MS), vec![1, 2]);
}

#[test]
fn a_write_through_the_server_a_session_moved_away_from_fails() {
    let mut core = standalone();
    let (_, moved, _) = core.apply_logged(&txn(1, 2, Op::SetOwner), 0);
    assert_eq!(moved, Ok(TxnOk::OwnerSet));
    let (_, result, effects) =
        core.apply_logged(&txn(1, 1, create("/x", CreateMode::Ephemeral)), 0);
    assert_eq!((result, effects), (Err(ZkError::SessionMoved), vec![]));
    assert_eq!(core.db().tree.stat("/x"), None);
}

#[test]
fn a_restart_replays_the_log_records_its_expires_and_tracks_every_session_anew() {
    let seq = CreateMode::EphemeralSequential;
    let logged = [
        txn(1, 1, Op::CreateSession { timeout_ms: 1000 }),
        txn(1, 1, create("/locks", CreateMode::Container)),
        txn(1, 1, create("/locks/L", CreateMode::Container)),
        txn(1, 1, create("/locks/L/lock-", seq)),
        txn(2, 1, Op::CreateSession { timeout_ms: 1000 }),
        txn(1, 0, Op::CloseSession),
    ];
    let (mut core, effects) = ZkCore::standalone(0, TICK, &logged, 5000 * MS);
    assert_eq!(
        effects,
        vec![Effect::Record(Record::Expire {
            owner: LostOwner {
                lock: "L".into(),
                path: "/locks/L/lock-0000000000".into(),
                session: 1
            },
            zxid: 6,
            by_client: false
        })]
    );
    assert_eq!(core.last_zxid(), 6);
    assert!(core.expire_due(6000 * MS).is_empty(), "a full timeout anew");
    assert_eq!(core.expire_due(6100 * MS), vec![2]);
}

#[test]
fn losing_the_leader_closes_every_client_connection() {
    let mut core = ensemble_member();
    let effects = core.leader_changed(LeaderChange {
        leader: 2,
        leading: false,
    });
    assert_eq!(effects, vec![]);
    assert!(core.serving() && core.is_follower());
    let (a, b) = (core.open_conn(5), core.open_conn(6));
    let effects = core.leader_changed(LeaderChange {
        leader: 0,
        leading: false,
    });
    assert_eq!(
        effects,
        vec![Effect::Close { conn: a }, Effect::Close { conn: b }]
    );
    assert!(core.conns().is_empty());
    assert!(!core.serving());
}

#[test]
fn becoming_the_leader_is_recorded_once() {
    let mut core = ensemble_member();
    let term = ensemble(&mut core).term();
    let leading = LeaderChange {
        leader: 1,
        leading: true,
    };
    assert_eq!(
        core.leader_changed(leading),
        vec![Effect::Record(Record::Leader { term })]
    );
    assert!(core.is_leader() && !core.is_follower());
    assert_eq!(core.leader_changed(leading), vec![]);
}

#[test]
fn a_committed_entry_is_answered_only_on_the_server_that_proposed_it() {
    let mut core = ensemble_member();
    let open = |id| {
        let t = txn(id, 2, Op::CreateSession { timeout_ms: 1000 });
        entry(id, t)
    };
    // Another server's proposal: applied, nobody here to answer.
    assert_eq!(core.apply_committed(1, &open(7), 0), vec![]);
    assert_eq!(core.session_timeout(7), Some(1000));
    ensemble(&mut core).proposed.insert(8);
    assert_eq!(
        core.apply_committed(2, &open(8), 0),
        vec![Effect::Answer {
            id: 8,
            zxid: 2,
            result: Ok(TxnOk::SessionCreated { timeout_ms: 1000 })
        }]
    );
    assert!(ensemble(&mut core).proposed.is_empty());
    // A new leader's no-op entry takes a zxid and does nothing else.
    assert_eq!(core.apply_committed(3, &[], 0), vec![]);
    assert_eq!(core.last_zxid(), 3);
}

#[test]
fn a_follower_reports_the_sessions_its_clients_touched_to_its_leader() {
    let mut core = ensemble_member();
    core.leader_changed(LeaderChange {
        leader: 3,
        leading: false,
    });
    let open = txn(4, 1, Op::CreateSession { timeout_ms: 1000 });
    core.apply_committed(1, &entry(1, open), 0);
    assert!(core.touch(4, 0));
    assert!(!core.touch(5, 0), "an unknown session");
    assert_eq!(
        core.touch_report(),
        vec![Effect::ToPeer {
            to: 2,
            msg: PeerMsg::Touch { sessions: vec![4] }
        }]
    );
    assert_eq!(core.touch_report(), vec![], "nothing new to report");
}

#[test]
fn the_leader_takes_its_followers_touches() {
    let mut core = ensemble_member();
    let open = txn(4, 2, Op::CreateSession { timeout_ms: 1000 });
    core.apply_committed(1, &entry(1, open), 0);
    let mut tracker = SessionTracker::new(TICK);
    tracker.add(4, 1000, 0);
    ensemble(&mut core).leading = Some(Leading { epoch: 1, tracker });
    core.peer_message(PeerMsg::Touch { sessions: vec![4] }, 900 * MS);
    assert!(core.expire_due(1100 * MS).is_empty());
    assert_eq!(core.expire_due(2000 * MS), vec![4]);
}

#[test]
fn a_server_without_a_leader_refuses_proposals() {
    let mut core = ensemble_member();
    let open = txn(4, 1, Op::CreateSession { timeout_ms: 1000 });
    assert!(!core.propose(9, open.clone()));
    assert!(ensemble(&mut core).proposed.is_empty());
    assert!(
        !core.propose_own(9, open),
        "not the leader of its tracker's term"
    );
}
