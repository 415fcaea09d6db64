//! The model against MySQL 8 / InnoDB's documented behaviour (REPEATABLE READ, the
//! default `innodb_rollback_on_timeout = OFF`, affected rows = changed rows).

use super::*;
use crate::sim::Disk;

const MS: i64 = 1_000_000;

fn cfg() -> Config {
    Config {
        lock_wait_timeout_ns: 500 * MS,
        wait_timeout_ns: 2000 * MS,
    }
}

fn at(ms: i64) -> Now {
    Now {
        mono_ns: ms * MS,
        wall_ms: 1_000_000 + ms,
    }
}

fn insert(name: &str, owner: &str) -> Statement {
    Statement::Insert {
        name: name.into(),
        owner: owner.into(),
    }
}

fn for_update(name: &str) -> Statement {
    Statement::Select {
        name: name.into(),
        for_update: true,
        nextval: None,
    }
}

fn select(name: &str) -> Statement {
    Statement::Select {
        name: name.into(),
        for_update: false,
        nextval: None,
    }
}

fn bump(name: &str) -> Statement {
    Statement::Update {
        name: name.into(),
        cond: Cond::default(),
        set: Set {
            bump_version: true,
            ..Set::default()
        },
    }
}

fn affected(r: Option<Reply>) -> u64 {
    match r {
        Some(Reply::Ok { affected, .. }) => affected,
        other => panic!("expected OK, got {other:?}"),
    }
}

fn row(r: Option<Reply>) -> Option<Row> {
    match r {
        Some(Reply::Row { row, .. }) => row,
        other => panic!("expected a row, got {other:?}"),
    }
}

#[test]
fn a_duplicate_name_is_error_1062_and_ids_are_never_reused() {
    let mut db = Db::new(cfg());
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    let first = db.execute(a, insert("L", "a"), at(1));
    assert_eq!(
        first,
        Some(Reply::Ok {
            affected: 1,
            insert_id: Some(1)
        })
    );
    let dup = db.execute(b, insert("L", "b"), at(2)).unwrap();
    assert_eq!(dup.code(), Some(ER_DUP_ENTRY));
    assert!(format!("{dup:?}").contains("Duplicate entry 'L' for key 'method_lock.name'"));
    assert_eq!(
        affected(db.execute(
            a,
            Statement::Delete {
                name: "L".into(),
                owner: None
            },
            at(3)
        )),
        1
    );
    // AUTO_INCREMENT moves on: the duplicate used up id 2 (as InnoDB's allocation before
    // the insert does), and a deleted row's id is not handed out again.
    let again = db.execute(b, insert("L", "b"), at(4));
    assert_eq!(
        again,
        Some(Reply::Ok {
            affected: 1,
            insert_id: Some(3)
        })
    );
    assert_eq!(
        db.rows()["L"].updated_at_ms,
        at(4).wall_ms,
        "NOW() is the server's wall clock"
    );
}

#[test]
fn update_and_delete_count_changed_rows() {
    let mut db = Db::new(cfg());
    let a = db.connect(at(0));
    db.execute(a, insert("L", ""), at(0));
    let set_owner = |owner: &str, cond: Cond| Statement::Update {
        name: "L".into(),
        cond,
        set: Set {
            owner: Some(owner.into()),
            ..Set::default()
        },
    };
    // Setting the value that is already there matches one row but changes none.
    assert_eq!(
        affected(db.execute(a, set_owner("", Cond::default()), at(1))),
        0
    );
    assert_eq!(
        affected(db.execute(a, set_owner("x", Cond::default()), at(2))),
        1
    );
    let stale_version = Cond {
        version: Some(7),
        ..Cond::default()
    };
    assert_eq!(
        affected(db.execute(a, set_owner("y", stale_version), at(3))),
        0
    );
    let wrong_owner = Statement::Delete {
        name: "L".into(),
        owner: Some("y".into()),
    };
    assert_eq!(affected(db.execute(a, wrong_owner, at(4))), 0);
    let right_owner = Statement::Delete {
        name: "L".into(),
        owner: Some("x".into()),
    };
    assert_eq!(affected(db.execute(a, right_owner.clone(), at(5))), 1);
    assert_eq!(
        affected(db.execute(a, right_owner, at(6))),
        0,
        "no such row"
    );
    assert_eq!(affected(db.execute(a, bump("L"), at(7))), 0, "no such row");
}

#[test]
fn for_update_blocks_and_grants_in_fifo_order() {
    let mut db = Db::new(cfg());
    let (a, b, c) = (db.connect(at(0)), db.connect(at(0)), db.connect(at(0)));
    db.execute(a, insert("L", ""), at(0));
    for s in [a, b, c] {
        assert_eq!(affected(db.execute(s, Statement::Begin, at(1))), 0);
    }
    assert!(row(db.execute(a, for_update("L"), at(2))).is_some());
    assert_eq!(db.execute(b, for_update("L"), at(3)), None, "b waits");
    assert_eq!(db.execute(c, for_update("L"), at(4)), None, "c waits");
    assert_eq!(db.lock_holder("L"), Some((a, vec![b, c])));
    db.take_effects();
    assert_eq!(affected(db.execute(a, Statement::Commit, at(5))), 0);
    let fx = db.take_effects();
    assert_eq!(fx.replies.len(), 1);
    assert_eq!(fx.replies[0].0, b, "the first waiter gets the lock");
    assert!(matches!(fx.replies[0].1, Reply::Row { row: Some(_), .. }));
    assert!(
        fx.expired.is_empty(),
        "a COMMIT is the holder's own release"
    );
    assert_eq!(db.lock_holder("L"), Some((b, vec![c])));
    db.execute(b, Statement::Rollback, at(6));
    assert_eq!(db.take_effects().replies[0].0, c);
}

#[test]
fn a_lock_wait_timeout_fails_the_statement_with_1205_and_keeps_the_transaction() {
    let mut db = Db::new(cfg());
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    db.execute(a, insert("L", ""), at(0));
    db.execute(a, Statement::Begin, at(0));
    db.execute(a, for_update("L"), at(0));
    db.execute(b, Statement::Begin, at(10));
    db.execute(b, Statement::NextVal { seq: "s".into() }, at(10));
    assert_eq!(db.execute(b, for_update("L"), at(10)), None);
    db.tick(at(509));
    assert!(db.take_effects().replies.is_empty(), "not yet");
    db.tick(at(510));
    let fx = db.take_effects();
    assert_eq!(fx.replies.len(), 1);
    assert_eq!(fx.replies[0].0, b);
    assert_eq!(fx.replies[0].1.code(), Some(ER_LOCK_WAIT_TIMEOUT));
    assert_eq!(db.lock_holder("L"), Some((a, vec![])), "b left the queue");
    // Only the statement failed: b's transaction is open, and waits again if asked.
    assert_eq!(db.execute(b, for_update("L"), at(520)), None);
    db.execute(a, Statement::Commit, at(530));
    assert_eq!(db.take_effects().replies[0].0, b);
}

#[test]
fn a_statement_sent_while_one_waits_is_out_of_sync() {
    let mut db = Db::new(cfg());
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    db.execute(a, insert("L", ""), at(0));
    db.execute(a, Statement::Begin, at(0));
    db.execute(a, for_update("L"), at(0));
    assert_eq!(db.execute(b, for_update("L"), at(1)), None);
    let r = db.execute(b, Statement::Ping, at(2)).unwrap();
    assert_eq!(r.code(), Some(CR_COMMANDS_OUT_OF_SYNC));
}

#[test]
fn a_closed_session_rolls_back_and_its_row_lock_goes_to_the_next_in_line() {
    let mut db = Db::new(cfg());
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    db.execute(a, insert("L", ""), at(0));
    db.execute(a, Statement::Begin, at(1));
    let v0 = row(db.execute(a, for_update("L"), at(1))).unwrap().version;
    assert_eq!(affected(db.execute(a, bump("L"), at(2))), 1);
    db.execute(b, Statement::Begin, at(3));
    assert_eq!(db.execute(b, for_update("L"), at(3)), None);
    db.take_effects();
    db.disconnect(a, at(4));
    let fx = db.take_effects();
    assert_eq!(fx.expired, ["L"], "the server ended a's hold");
    assert!(fx.redo.is_empty(), "nothing committed");
    let (who, reply) = &fx.replies[0];
    assert_eq!(*who, b);
    // The bump was rolled back: b reads the version a had bumped away from, and bumping
    // it hands b the very version a holds as its "token".
    let Reply::Row { row: Some(r), .. } = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(r.version, v0);
    db.execute(b, bump("L"), at(5));
    assert_eq!(db.rows()["L"].version, v0 + 1);
}

#[test]
fn an_idle_session_is_ended_after_wait_timeout() {
    let mut db = Db::new(cfg());
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    db.execute(a, insert("L", ""), at(0));
    db.execute(a, Statement::Begin, at(100));
    db.execute(a, for_update("L"), at(100));
    // A session waiting for a lock is not idle.
    db.execute(b, for_update("L"), at(1700));
    db.tick(at(2099));
    assert!(db.take_effects().killed.is_empty());
    db.tick(at(2100));
    let fx = db.take_effects();
    assert_eq!(fx.killed, [a]);
    assert_eq!(fx.expired, ["L"]);
    assert_eq!(fx.replies.len(), 1);
    assert_eq!(fx.replies[0].0, b);
    // b's autocommit locking read released the lock right after.
    assert_eq!(db.lock_holder("L"), None);
}

#[test]
fn an_autocommit_write_waits_for_the_row_lock() {
    let mut db = Db::new(cfg());
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    db.execute(a, insert("L", "a"), at(0));
    db.execute(a, Statement::Begin, at(1));
    db.execute(a, for_update("L"), at(1));
    let del = Statement::Delete {
        name: "L".into(),
        owner: None,
    };
    assert_eq!(db.execute(b, del, at(2)), None);
    db.take_effects();
    db.execute(a, Statement::Commit, at(3));
    let fx = db.take_effects();
    assert_eq!(fx.replies, [(b, Reply::ok(1))]);
    assert_eq!(fx.redo, [Redo::Commit(vec![Change::Del("L".into())])]);
    assert!(db.rows().is_empty());
    assert_eq!(db.lock_holder("L"), None);
}

#[test]
fn a_plain_select_never_waits_and_reads_the_committed_row() {
    let mut db = Db::new(cfg());
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    db.execute(a, insert("L", ""), at(0));
    db.execute(a, Statement::Begin, at(1));
    db.execute(a, for_update("L"), at(1));
    db.execute(a, bump("L"), at(1));
    assert_eq!(row(db.execute(b, select("L"), at(2))).unwrap().version, 0);
    assert_eq!(row(db.execute(a, select("L"), at(2))).unwrap().version, 1);
    db.execute(a, Statement::Commit, at(3));
    assert_eq!(row(db.execute(b, select("L"), at(4))).unwrap().version, 1);
    assert_eq!(row(db.execute(b, select("M"), at(4))), None);
}

#[test]
fn begin_inside_a_transaction_commits_it() {
    let mut db = Db::new(cfg());
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    db.execute(a, insert("L", ""), at(0));
    db.execute(a, Statement::Begin, at(1));
    db.execute(a, bump("L"), at(1));
    db.execute(a, Statement::Begin, at(2));
    assert_eq!(row(db.execute(b, select("L"), at(3))).unwrap().version, 1);
    assert_eq!(db.lock_holder("L"), None);
}

#[test]
fn the_cleaner_deletes_rows_older_than_now_on_the_server_clock() {
    let mut db = Db::new(cfg());
    let a = db.connect(at(0));
    db.execute(a, insert("L", "a"), at(0));
    db.execute(a, insert("M", "a"), at(600));
    db.take_effects();
    let clean = Statement::DeleteOlder { ms: 1000 };
    assert_eq!(
        affected(db.execute(a, clean.clone(), at(1000))),
        0,
        "not older: equal"
    );
    assert_eq!(affected(db.execute(a, clean.clone(), at(1001))), 1);
    let fx = db.take_effects();
    assert_eq!(fx.expired, ["L"]);
    assert!(db.rows().contains_key("M"));
    // The server's wall clock decides: stepped forward, it expires M early.
    let jumped = Now {
        mono_ns: 1002 * MS,
        wall_ms: at(1602).wall_ms,
    };
    assert_eq!(affected(db.execute(a, clean, jumped)), 1);
}

#[test]
fn an_optimistic_takeover_needs_a_free_or_stale_row() {
    let mut db = Db::new(cfg());
    let a = db.connect(at(0));
    db.execute(a, insert("L", ""), at(0));
    let cas = |who: &str, version: u64| Statement::Update {
        name: "L".into(),
        cond: Cond {
            version: Some(version),
            free_or_older_than_ms: Some(1000),
            ..Cond::default()
        },
        set: Set {
            owner: Some(who.into()),
            bump_version: true,
            touch: true,
        },
    };
    assert_eq!(affected(db.execute(a, cas("x", 0), at(10))), 1);
    assert_eq!(
        affected(db.execute(a, cas("y", 0), at(20))),
        0,
        "version moved on"
    );
    assert_eq!(
        affected(db.execute(a, cas("y", 1), at(500))),
        0,
        "held and fresh"
    );
    db.take_effects();
    assert_eq!(
        affected(db.execute(a, cas("y", 1), at(1011))),
        1,
        "stale: taken over"
    );
    assert_eq!(db.take_effects().expired, ["L"]);
    assert_eq!(db.rows()["L"].owner, "y");
    assert_eq!(db.rows()["L"].version, 2);
}

#[test]
fn sequence_values_are_not_rolled_back() {
    let mut db = Db::new(cfg());
    let a = db.connect(at(0));
    db.execute(a, Statement::Begin, at(0));
    let next = || Statement::NextVal { seq: "s".into() };
    assert_eq!(db.execute(a, next(), at(1)), Some(Reply::Value(1)));
    db.execute(a, Statement::Rollback, at(2));
    assert_eq!(db.execute(a, next(), at(3)), Some(Reply::Value(2)));
}

#[test]
fn nextval_in_a_locking_read_is_drawn_with_the_grant() {
    let mut db = Db::new(cfg());
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    db.execute(a, insert("L", ""), at(0));
    let locked_next = || Statement::Select {
        name: "L".into(),
        for_update: true,
        nextval: Some("s".into()),
    };
    assert_eq!(
        locked_next().sql(),
        "SELECT *, NEXTVAL(s) FROM method_lock WHERE name = 'L' FOR UPDATE"
    );
    db.execute(a, Statement::Begin, at(1));
    let Some(Reply::Row { nextval, .. }) = db.execute(a, locked_next(), at(1)) else {
        panic!()
    };
    assert_eq!(nextval, Some(1));
    db.execute(b, Statement::Begin, at(2));
    assert_eq!(
        db.execute(b, locked_next(), at(2)),
        None,
        "b waits, draws nothing yet"
    );
    db.take_effects();
    db.disconnect(a, at(3));
    let fx = db.take_effects();
    let Reply::Row { nextval, .. } = &fx.replies[0].1 else {
        panic!()
    };
    assert_eq!(*nextval, Some(2), "drawn when granted, after a's rollback");
    assert_eq!(
        db.execute(
            b,
            Statement::Select {
                name: "M".into(),
                for_update: true,
                nextval: Some("s".into())
            },
            at(4)
        ),
        Some(Reply::Row {
            row: None,
            nextval: None
        }),
        "no row, no value"
    );
}

#[test]
fn a_crash_keeps_synced_commits_only() {
    let mut disk = Disk::new();
    let mut db = Db::new(cfg());
    let a = db.connect(at(0));
    let log = |db: &mut Db, disk: &mut Disk, sync: bool| {
        disk.append("redo", &Db::encode_redo(&db.take_effects().redo));
        if sync {
            disk.fsync("redo");
        }
    };
    db.execute(a, insert("L", "a"), at(0));
    db.execute(a, Statement::NextVal { seq: "s".into() }, at(0));
    log(&mut db, &mut disk, true);
    db.execute(a, insert("M", "a"), at(1));
    log(&mut db, &mut disk, false); // fsync = none: not flushed yet
    let before_crash = Db::recover(cfg(), disk.read("redo"));
    assert_eq!(before_crash.rows().len(), 2);
    disk.crash();
    let mut db = Db::recover(cfg(), disk.read("redo"));
    assert_eq!(
        db.rows().keys().collect::<Vec<_>>(),
        ["L"],
        "M's commit is lost"
    );
    let a = db.connect(at(2));
    // The lost allocation is handed out again; the synced ones are not.
    assert_eq!(
        db.execute(a, insert("N", "a"), at(2)),
        Some(Reply::Ok {
            affected: 1,
            insert_id: Some(2)
        })
    );
    assert_eq!(
        db.execute(a, Statement::NextVal { seq: "s".into() }, at(2)),
        Some(Reply::Value(2))
    );
    // A torn last line ends the log.
    let mut torn = Db::encode_redo(&[Redo::AutoInc(9)]);
    torn.extend_from_slice(b"{\"commit\":[{\"put\"");
    assert_eq!(Db::recover(cfg(), &torn).auto_increment, 9);
}

#[test]
fn statements_travel_as_json() {
    let s = Statement::Update {
        name: "L".into(),
        cond: Cond {
            version: Some(3),
            ..Cond::default()
        },
        set: Set {
            owner: Some("c".into()),
            bump_version: true,
            touch: false,
        },
    };
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(
        json,
        r#"{"op":"update","name":"L","cond":{"version":3},"set":{"owner":"c","bump_version":true}}"#
    );
    assert_eq!(serde_json::from_str::<Statement>(&json).unwrap(), s);
    assert_eq!(
        s.sql(),
        "UPDATE method_lock SET owner = 'c', version = version + 1 WHERE name = 'L' AND version = 3"
    );
    let e = serde_json::to_string(&Reply::error(1205, "ER_LOCK_WAIT_TIMEOUT", "x")).unwrap();
    assert_eq!(
        e,
        r#"{"error":{"code":1205,"name":"ER_LOCK_WAIT_TIMEOUT","message":"x"}}"#
    );
}
