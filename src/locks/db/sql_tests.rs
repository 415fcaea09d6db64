//! SQL text in, `QueryResult` out: every form the seeds, the articles and real clients
//! send, with MariaDB 10.11's column names, error numbers, SQLSTATEs and messages.

use super::*;
use crate::locks::db::model::Config;
use crate::net::mysql::{ColumnType, SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS};

const MS: i64 = 1_000_000;

fn db() -> Db {
    Db::new(Config {
        lock_wait_timeout_ns: 50_000 * MS,
        wait_timeout_ns: 28_800_000 * MS,
    })
}

fn at(ms: i64) -> Now {
    Now {
        mono_ns: ms * MS,
        wall_ms: 1_764_000_000_000 + ms,
    }
}

fn q(db: &mut Db, conn: ConnId, sql: &str) -> QueryResult {
    execute_sql(db, conn, sql, at(1)).unwrap_or_else(|| panic!("{sql} waits"))
}

fn affected(r: &QueryResult) -> u64 {
    match r {
        QueryResult::Ok { affected_rows, .. } => *affected_rows,
        other => panic!("expected OK, got {other:?}"),
    }
}

fn status(r: &QueryResult) -> u16 {
    match r {
        QueryResult::Ok { status, .. } => *status,
        other => panic!("expected OK, got {other:?}"),
    }
}

fn names(r: &QueryResult) -> Vec<String> {
    match r {
        QueryResult::Rows { columns, .. } => columns.iter().map(|c| c.name.clone()).collect(),
        other => panic!("expected rows, got {other:?}"),
    }
}

fn rows(r: &QueryResult) -> Vec<Vec<Option<String>>> {
    match r {
        QueryResult::Rows { rows, .. } => rows.clone(),
        other => panic!("expected rows, got {other:?}"),
    }
}

fn one(r: &QueryResult) -> Option<String> {
    let rows = rows(r);
    assert_eq!(rows.len(), 1, "{r:?}");
    rows[0][0].clone()
}

fn err(r: &QueryResult) -> (u16, String, String) {
    match r {
        QueryResult::Err(e) => (e.code, e.sqlstate.clone(), e.message.clone()),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn the_articles_insert_select_update_delete() {
    let mut db = db();
    let c = db.connect(at(0));
    let r = q(
        &mut db,
        c,
        "INSERT INTO method_lock (name, owner) VALUES ('L', 'a')",
    );
    assert_eq!(
        r,
        QueryResult::Ok {
            affected_rows: 1,
            last_insert_id: 1,
            warnings: 0,
            status: SERVER_STATUS_AUTOCOMMIT
        }
    );
    let r = q(&mut db, c, "SELECT * FROM method_lock WHERE name = 'L'");
    assert_eq!(names(&r), ["id", "name", "owner", "version", "updated_at"]);
    assert_eq!(
        rows(&r),
        [vec![
            Some("1".into()),
            Some("L".into()),
            Some("a".into()),
            Some("0".into()),
            Some("2025-11-24 16:00:00.001".into())
        ]]
    );
    let r = q(
        &mut db,
        c,
        "UPDATE method_lock SET owner = 'b', version = version + 1, updated_at = NOW(3) WHERE name = 'L' AND version = 0",
    );
    assert_eq!(affected(&r), 1);
    let r = q(
        &mut db,
        c,
        "update method_lock set owner = 'c', version = version + 1 where name = 'L' and version = 0",
    );
    assert_eq!(affected(&r), 0, "the version moved on");
    let r = q(
        &mut db,
        c,
        "SELECT owner, version AS v FROM method_lock WHERE name = 'L'",
    );
    assert_eq!(names(&r), ["owner", "v"]);
    assert_eq!(rows(&r), [vec![Some("b".into()), Some("1".into())]]);
    let r = q(
        &mut db,
        c,
        "DELETE FROM method_lock WHERE name = 'L' AND owner = 'a'",
    );
    assert_eq!(affected(&r), 0);
    let r = q(
        &mut db,
        c,
        "DELETE FROM method_lock WHERE name = 'L' AND owner = 'b'",
    );
    assert_eq!(affected(&r), 1);
    let r = q(
        &mut db,
        c,
        "SELECT * FROM method_lock WHERE name = 'L' FOR UPDATE",
    );
    assert!(rows(&r).is_empty());
    assert_eq!(
        one(&q(&mut db, c, "SELECT LAST_INSERT_ID()")),
        Some("1".into())
    );
}

#[test]
fn a_duplicate_is_1062_with_mariadbs_key_name() {
    let mut db = db();
    let c = db.connect(at(0));
    q(
        &mut db,
        c,
        "INSERT INTO method_lock (name, owner, version, updated_at) VALUES ('L', 'a', 0, NOW(3))",
    );
    let r = q(
        &mut db,
        c,
        "INSERT INTO method_lock (name, owner) VALUES ('L', 'b')",
    );
    assert_eq!(
        err(&r),
        (
            1062,
            "23000".into(),
            "Duplicate entry 'L' for key 'name'".into()
        )
    );
}

#[test]
fn expression_columns_are_named_as_written() {
    let mut db = db();
    let c = db.connect(at(0));
    let r = q(
        &mut db,
        c,
        "SELECT GET_LOCK('a',  1), @@SESSION.autocommit, 1+1 AS two, 'x', CONNECTION_ID( )",
    );
    match &r {
        QueryResult::Rows { columns, rows } => {
            let n: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(
                n,
                [
                    "GET_LOCK('a',  1)",
                    "@@SESSION.autocommit",
                    "two",
                    "x",
                    "CONNECTION_ID( )",
                ]
            );
            assert_eq!(columns[0].column_type, ColumnType::Long);
            assert_eq!(rows[0][0].as_deref(), Some("1"));
            assert_eq!(rows[0][1].as_deref(), Some("1"));
            assert_eq!(rows[0][3].as_deref(), Some("x"));
            assert_eq!(rows[0][4].as_deref(), Some(c.to_string().as_str()));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn what_clients_send_on_connect() {
    let mut db = db();
    let c = db.connect(at(0));
    for sql in [
        "SET NAMES utf8mb4",
        "SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci",
        "SET autocommit = 1",
        "SET AUTOCOMMIT=1",
        "SET SESSION innodb_lock_wait_timeout = 5",
        "SET wait_timeout = 60",
        "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
        "USE locksim",
        "BEGIN",
        "COMMIT",
        "START TRANSACTION",
        "ROLLBACK",
    ] {
        assert!(
            matches!(q(&mut db, c, sql), QueryResult::Ok { .. }),
            "{sql}"
        );
    }
    let r = q(&mut db, c, "SELECT @@version_comment LIMIT 1");
    assert_eq!(names(&r), ["@@version_comment"]);
    assert_eq!(one(&r), Some("locksim".into()));
    assert!(rows(&q(&mut db, c, "SELECT @@version_comment LIMIT 0")).is_empty());
    assert_eq!(
        one(&q(&mut db, c, "SELECT @@innodb_lock_wait_timeout")),
        Some("5".into())
    );
    assert_eq!(
        one(&q(&mut db, c, "SELECT @@session.wait_timeout")),
        Some("60".into())
    );
    assert_eq!(
        one(&q(&mut db, c, "SELECT @@tx_isolation")),
        Some("REPEATABLE-READ".into())
    );
    assert_eq!(
        one(&q(&mut db, c, "SELECT @@transaction_isolation")),
        Some("REPEATABLE-READ".into())
    );
    assert_eq!(
        one(&q(&mut db, c, "SELECT @@max_allowed_packet")),
        Some("16777216".into())
    );
    assert!(one(&q(&mut db, c, "SELECT @@version")).is_some_and(|v| v.contains("MariaDB")));
    assert_eq!(
        one(&q(&mut db, c, "SELECT DATABASE()")),
        Some("locksim".into())
    );
    assert_eq!(one(&q(&mut db, c, "SELECT 1")), Some("1".into()));
    assert_eq!(
        one(&q(&mut db, c, "SELECT NEXTVAL(lock_seq)")),
        Some("1".into())
    );
    assert_eq!(
        one(&q(&mut db, c, "SELECT NEXTVAL(lock_seq)")),
        Some("2".into())
    );
    let r = q(
        &mut db,
        c,
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    );
    assert_eq!(err(&r).0, 1235);
    assert_eq!(err(&q(&mut db, c, "SET NAMES klingon")).0, 1115);
    assert_eq!(
        err(&q(&mut db, c, "SET innodb_lock_wait_timeout = 0")).0,
        1231
    );
    assert_eq!(
        err(&q(&mut db, c, "SET no_such_thing = 1")),
        (
            1193,
            "HY000".into(),
            "Unknown system variable 'no_such_thing'".into()
        )
    );
    assert_eq!(err(&q(&mut db, c, "SELECT @@no_such_thing")).0, 1193);
    assert_eq!(
        err(&q(&mut db, c, "USE mysql")),
        (1049, "42000".into(), "Unknown database 'mysql'".into())
    );
}

#[test]
fn create_table_answers_as_for_an_existing_table() {
    let mut db = db();
    let c = db.connect(at(0));
    let ddl = "CREATE TABLE method_lock (id BIGINT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(64) NOT NULL, owner VARCHAR(64) NOT NULL DEFAULT '', version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(3) NOT NULL, UNIQUE KEY name (name)) ENGINE=InnoDB";
    assert_eq!(
        err(&q(&mut db, c, ddl)),
        (
            1050,
            "42S01".into(),
            "Table 'method_lock' already exists".into()
        )
    );
    let ine = ddl.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS");
    assert!(matches!(
        q(&mut db, c, &ine),
        QueryResult::Ok { warnings: 1, .. }
    ));
}

#[test]
fn everything_else_is_mysqls_error() {
    let mut db = db();
    let c = db.connect(at(0));
    let (code, state, msg) = err(&q(&mut db, c, "SELEC 1"));
    assert_eq!((code, state.as_str()), (1064, "42000"));
    assert_eq!(
        msg,
        "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near 'SELEC 1' at line 1"
    );
    assert_eq!(
        err(&q(&mut db, c, "SELECT * FROM locks WHERE name = 'a'")),
        (
            1146,
            "42S02".into(),
            "Table 'locksim.locks' doesn't exist".into()
        )
    );
    assert_eq!(
        err(&q(
            &mut db,
            c,
            "SELECT * FROM method_lock WHERE holder = 'a'"
        )),
        (
            1054,
            "42S22".into(),
            "Unknown column 'holder' in 'WHERE'".into()
        )
    );
    assert_eq!(
        err(&q(&mut db, c, "SELECT holder FROM method_lock")),
        (
            1054,
            "42S22".into(),
            "Unknown column 'holder' in 'SELECT'".into()
        )
    );
    assert_eq!(
        err(&q(
            &mut db,
            c,
            "INSERT INTO method_lock (name, holder) VALUES ('a', 'b')"
        ))
        .0,
        1054
    );
    for sql in [
        "DROP TABLE method_lock",
        "SELECT COUNT(*) FROM method_lock",
        "SELECT * FROM method_lock ORDER BY id",
        "SELECT * FROM method_lock WHERE owner = 0",
        "INSERT INTO method_lock (name, owner) VALUES ('a', 'b'), ('c', 'd')",
        "UPDATE method_lock SET version = 7 WHERE name = 'a'",
        "SET GLOBAL wait_timeout = 5",
        "SELECT * FROM method_lock LOCK IN SHARE MODE",
    ] {
        let (code, state, msg) = err(&q(&mut db, c, sql));
        assert!(code == 1235 || code == 1064, "{sql}: {code} {msg}");
        assert_eq!(state, "42000", "{sql}");
    }
    assert_eq!(err(&q(&mut db, c, "")).0, 1065);
    assert_eq!(err(&q(&mut db, c, "SELECT 1; SELECT 2")).0, 1064);
    assert_eq!(
        err(&q(
            &mut db,
            c,
            "INSERT INTO method_lock (name, owner) VALUES ('a')"
        ))
        .0,
        1136
    );
}

#[test]
fn the_cleaner_deletes_old_rows_by_the_servers_clock() {
    let mut db = db();
    let c = db.connect(at(0));
    q(
        &mut db,
        c,
        "INSERT INTO method_lock (name, owner) VALUES ('old', 'a')",
    );
    let ins = "INSERT INTO method_lock (name, owner) VALUES ('new', 'b')";
    execute_sql(&mut db, c, ins, at(4000)).expect("no wait");
    let _ = db.take_effects();
    let sql = "DELETE FROM method_lock WHERE updated_at < NOW(3) - INTERVAL 2 SECOND";
    let r = execute_sql(&mut db, c, sql, at(5000)).expect("no wait");
    assert_eq!(affected(&r), 1);
    assert_eq!(
        db.take_effects().expired,
        ["old"],
        "the server ended old's hold"
    );
    assert_eq!(db.rows().keys().collect::<Vec<_>>(), ["new"]);
}

fn qa(db: &mut Db, conn: ConnId, sql: &str, ms: i64) -> Option<QueryResult> {
    execute_sql(db, conn, sql, at(ms))
}

/// The results of statements that had waited, by session.
fn later(db: &mut Db) -> Vec<(ConnId, QueryResult)> {
    db.take_effects().results
}

#[test]
fn with_autocommit_off_a_for_update_holds_its_row_until_commit() {
    let mut db = db();
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    q(
        &mut db,
        a,
        "INSERT INTO method_lock (name, owner) VALUES ('L', '')",
    );
    let r = q(&mut db, a, "SET autocommit = 0");
    assert_eq!(status(&r), 0, "neither autocommit nor in a transaction");
    assert_eq!(one(&q(&mut db, a, "SELECT @@autocommit")), Some("0".into()));
    let r = q(
        &mut db,
        a,
        "SELECT * FROM method_lock WHERE name = 'L' FOR UPDATE",
    );
    assert_eq!(rows(&r).len(), 1);
    let r = q(
        &mut db,
        a,
        "UPDATE method_lock SET owner = 'a' WHERE name = 'L'",
    );
    assert_eq!(status(&r), SERVER_STATUS_IN_TRANS);
    let sql = "SELECT owner FROM method_lock WHERE name = 'L' FOR UPDATE";
    assert_eq!(qa(&mut db, b, sql, 2), None, "b waits for a's row lock");
    let r = q(&mut db, a, "COMMIT");
    assert_eq!(status(&r), 0);
    let done = later(&mut db);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0, b);
    assert_eq!(rows(&done[0].1), [vec![Some("a".into())]]);
    let r = q(&mut db, a, "SET autocommit = 1");
    assert_eq!(status(&r), SERVER_STATUS_AUTOCOMMIT);
}

#[test]
fn a_lock_wait_times_out_with_1205_after_the_sessions_setting() {
    let mut db = db();
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    q(
        &mut db,
        a,
        "INSERT INTO method_lock (name, owner) VALUES ('L', '')",
    );
    q(&mut db, a, "BEGIN");
    q(
        &mut db,
        a,
        "SELECT * FROM method_lock WHERE name = 'L' FOR UPDATE",
    );
    q(&mut db, b, "SET SESSION innodb_lock_wait_timeout = 1");
    let del = "DELETE FROM method_lock WHERE name = 'L'";
    assert_eq!(qa(&mut db, b, del, 1), None);
    db.tick(at(1000));
    assert!(later(&mut db).is_empty(), "not yet");
    db.tick(at(1001));
    let done = later(&mut db);
    let msg = "Lock wait timeout exceeded; try restarting transaction";
    assert_eq!(err(&done[0].1), (1205, "HY000".into(), msg.into()));
}

#[test]
fn named_locks_are_reentrant_session_scoped_and_not_transactional() {
    let mut db = db();
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    let get = "SELECT GET_LOCK('x', 10)";
    assert_eq!(one(&q(&mut db, a, get)), Some("1".into()));
    assert_eq!(one(&q(&mut db, a, get)), Some("1".into()));
    assert_eq!(qa(&mut db, b, "SELECT GET_LOCK('x', 0.5)", 1), None);
    db.tick(at(500));
    assert!(later(&mut db).is_empty());
    db.tick(at(501));
    let timed_out = later(&mut db);
    assert_eq!(
        one(&timed_out[0].1),
        Some("0".into()),
        "a timeout is 0, not an error"
    );
    let try_now = q(&mut db, b, "SELECT GET_LOCK('x', 0)");
    assert_eq!(
        one(&try_now),
        Some("0".into()),
        "a zero timeout answers at once"
    );
    let used = q(&mut db, b, "SELECT IS_USED_LOCK('x')");
    assert_eq!(one(&used), Some(a.to_string()));
    let free = "SELECT IS_FREE_LOCK('x')";
    assert_eq!(one(&q(&mut db, b, free)), Some("0".into()));
    assert_eq!(
        one(&q(&mut db, b, "SELECT RELEASE_LOCK('x')")),
        Some("0".into())
    );
    assert_eq!(one(&q(&mut db, b, "SELECT RELEASE_LOCK('nobody')")), None);
    assert_eq!(one(&q(&mut db, b, "SELECT IS_USED_LOCK('nobody')")), None);
    q(&mut db, a, "BEGIN");
    q(&mut db, a, "ROLLBACK");
    assert_eq!(
        one(&q(&mut db, b, free)),
        Some("0".into()),
        "not transactional"
    );
    // One RELEASE_LOCK per GET_LOCK.
    assert_eq!(
        one(&q(&mut db, a, "SELECT RELEASE_LOCK('x')")),
        Some("1".into())
    );
    assert_eq!(one(&q(&mut db, b, free)), Some("0".into()));
    assert_eq!(qa(&mut db, b, "SELECT GET_LOCK('x', -1) AS got", 2), None);
    let _ = db.take_effects();
    db.disconnect(a, at(3));
    let fx = db.take_effects();
    assert_eq!(fx.expired, ["x"], "the server ended a's hold");
    assert_eq!(fx.results.len(), 1);
    assert_eq!(names(&fx.results[0].1), ["got"]);
    assert_eq!(one(&fx.results[0].1), Some("1".into()));
    assert_eq!(
        one(&q(&mut db, b, "SELECT GET_LOCK('y', 0)")),
        Some("1".into())
    );
    let all = q(&mut db, b, "SELECT RELEASE_ALL_LOCKS()");
    assert_eq!(one(&all), Some("2".into()));
    assert_eq!(one(&q(&mut db, b, free)), Some("1".into()));
}

#[test]
fn a_for_update_without_an_index_locks_the_table_and_with_one_a_row() {
    let mut db = db();
    let (a, b, c) = (db.connect(at(0)), db.connect(at(0)), db.connect(at(0)));
    q(
        &mut db,
        a,
        "INSERT INTO method_lock (name, owner) VALUES ('L', 'x')",
    );
    q(
        &mut db,
        a,
        "INSERT INTO method_lock (name, owner) VALUES ('M', 'y')",
    );
    let lock_m = "SELECT id FROM method_lock WHERE name = 'M' FOR UPDATE";
    // By the unique index: one row; others proceed.
    q(&mut db, a, "BEGIN");
    q(
        &mut db,
        a,
        "SELECT * FROM method_lock WHERE name = 'L' FOR UPDATE",
    );
    let ins = q(&mut db, b, "INSERT INTO method_lock (name) VALUES ('N')");
    assert_eq!(affected(&ins), 1);
    assert_eq!(rows(&q(&mut db, c, lock_m)).len(), 1);
    q(&mut db, a, "COMMIT");
    // By an unindexed column: every row and the inserts wait.
    q(&mut db, a, "BEGIN");
    let r = q(
        &mut db,
        a,
        "SELECT name FROM method_lock WHERE owner = 'x' FOR UPDATE",
    );
    assert_eq!(rows(&r), [vec![Some("L".into())]]);
    let ins = "INSERT INTO method_lock (name) VALUES ('O')";
    assert_eq!(qa(&mut db, b, ins, 2), None);
    assert_eq!(
        qa(&mut db, c, lock_m, 2),
        None,
        "M is y's, yet the scan locked it"
    );
    assert!(later(&mut db).is_empty());
    q(&mut db, a, "COMMIT");
    let done = later(&mut db);
    let who: Vec<ConnId> = done.iter().map(|(s, _)| *s).collect();
    assert_eq!(who, [b, c]);
}

#[test]
fn a_wait_that_closes_a_cycle_is_1213_and_rolls_the_requester_back() {
    let mut db = db();
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    q(
        &mut db,
        a,
        "INSERT INTO method_lock (name, owner) VALUES ('L', '')",
    );
    q(
        &mut db,
        a,
        "INSERT INTO method_lock (name, owner) VALUES ('M', '')",
    );
    q(&mut db, a, "BEGIN");
    q(
        &mut db,
        a,
        "UPDATE method_lock SET owner = 'a' WHERE name = 'L'",
    );
    q(&mut db, b, "START TRANSACTION");
    q(
        &mut db,
        b,
        "UPDATE method_lock SET owner = 'b' WHERE name = 'M'",
    );
    let sql = "SELECT * FROM method_lock WHERE name = 'M' FOR UPDATE";
    assert_eq!(qa(&mut db, a, sql, 2), None);
    let r = q(
        &mut db,
        b,
        "SELECT * FROM method_lock WHERE name = 'L' FOR UPDATE",
    );
    let msg = "Deadlock found when trying to get lock; try restarting transaction";
    assert_eq!(err(&r), (1213, "40001".into(), msg.into()));
    let in_trans = q(&mut db, b, "SELECT @@in_transaction");
    assert_eq!(one(&in_trans), Some("0".into()));
    let done = later(&mut db);
    assert_eq!(done[0].0, a, "b's rollback released M to a");
    assert_eq!(
        rows(&done[0].1)[0][2],
        Some(String::new()),
        "b's change was undone"
    );
}

#[test]
fn get_lock_cycles_are_1213_too() {
    let mut db = db();
    let (a, b) = (db.connect(at(0)), db.connect(at(0)));
    q(&mut db, a, "SELECT GET_LOCK('p', 0)");
    q(&mut db, b, "SELECT GET_LOCK('q', 0)");
    assert_eq!(qa(&mut db, a, "SELECT GET_LOCK('q', 100)", 1), None);
    assert_eq!(err(&q(&mut db, b, "SELECT GET_LOCK('p', 100)")).0, 1213);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
    #[test]
    fn sql_ish_text_never_panics(
        words in proptest::collection::vec(proptest::sample::select(vec![
            "SELECT", "*", "FROM", "method_lock", "WHERE", "name", "owner", "version", "=",
            "<", "'a'", "1", "-1", "0.5", "AND", "OR", "(", ")", ",", "FOR", "UPDATE",
            "INSERT", "INTO", "VALUES", "DELETE", "SET", "version + 1", "NOW(3)", "-",
            "INTERVAL", "SECOND", "GET_LOCK", "RELEASE_LOCK", "@@autocommit", "@@session.x",
            "BEGIN", "COMMIT", "LIMIT", "AS", ";", "NULL", "'\u{e9}'", "CREATE", "TABLE",
            "IF NOT EXISTS", "\n",
        ]), 0..14),
        junk in "\\PC{0,12}",
    ) {
        let mut db = db();
        let c = db.connect(at(0));
        let sql = format!("{} {junk}", words.join(" "));
        let _ = execute_sql(&mut db, c, &sql, at(1));
        let _ = execute_sql(&mut db, c, &words.join(""), at(2));
        db.tick(at(100_000_000));
    }
}
