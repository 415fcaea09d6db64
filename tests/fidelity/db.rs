//! Differential fidelity of the database model: the same SQL, through locksim's own MySQL
//! client, goes to a real MariaDB 10.11 (Debian's `mariadb-server`, a fresh data folder on
//! a free loopback port) and to the model served by `locksim serve db` (in this process),
//! and every reply is compared: columns (names and types), rows, affected rows, insert ids,
//! the transaction status flags, error numbers and SQLSTATEs (and the messages of the
//! errors a lock client reads), and who waits for whom, and for how long within a
//! tolerance. What differs on purpose is normalised here, each with its reason:
//!
//! - time values (`updated_at`, `NOW(3)`): two servers' clocks;
//! - connection ids (`CONNECTION_ID()`, `IS_USED_LOCK()`): each server numbers its own, so
//!   an id is compared as *which of the test's connections* it is;
//! - the messages of syntax and not-supported errors: MariaDB quotes its parser's position,
//!   the model names what it does not run; the number and SQLSTATE are compared;
//! - status flags other than "in a transaction" and "autocommit" (MariaDB reports
//!   `SERVER_STATUS_NO_INDEX_USED` and session-state changes the model does not track).

use crate::support::{real_mariadb, served};
use locksim::testing::mysql::{
    ColumnType, MysqlClient, QueryResult, WireError, SERVER_STATUS_AUTOCOMMIT,
    SERVER_STATUS_IN_TRANS,
};
use locksim::testing::ServeFamily;
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

type Client = MysqlClient<TcpStream>;
type Done = (Client, Result<QueryResult, WireError>, Duration);

/// One server's side of a test connection: ready, or running a statement.
enum Slot {
    Idle(Client),
    Busy(JoinHandle<Done>),
    Closed,
}

/// The same connection to both servers, and each server's id for it.
struct Pair {
    real: Slot,
    model: Slot,
}

/// What the harness compares: a reply with what differs on purpose normalised.
#[derive(Debug, PartialEq)]
enum Seen {
    Ok {
        affected_rows: u64,
        last_insert_id: u64,
        warnings: u16,
        status: u16,
    },
    Err {
        code: u16,
        sqlstate: String,
        message: String,
    },
    Rows {
        columns: Vec<(String, ColumnType)>,
        rows: Vec<Vec<Option<String>>>,
    },
    Failed(String),
}

/// Errors whose text a lock client reads or a user sees in its logs: compared word for word.
const MESSAGES_COMPARED: &[u16] = &[1050, 1062, 1146, 1205, 1213];

struct Harness {
    rt: tokio::runtime::Runtime,
    real_port: u16,
    model_port: u16,
    pairs: Vec<Pair>,
    /// Per connection: (MariaDB's id, the model's id).
    ids: Vec<(u32, u32)>,
    compared: usize,
}

impl Harness {
    fn open(&mut self) -> usize {
        let (real, model) = self.rt.block_on(async {
            (
                connect(self.real_port).await,
                connect(self.model_port).await,
            )
        });
        self.ids.push((real.connection_id(), model.connection_id()));
        self.pairs.push(Pair {
            real: Slot::Idle(real),
            model: Slot::Idle(model),
        });
        self.pairs.len() - 1
    }

    /// Starts `sql` on both servers without waiting for the replies.
    fn send(&mut self, conn: usize, sql: &str) {
        let pair = &mut self.pairs[conn];
        for slot in [&mut pair.real, &mut pair.model] {
            let Slot::Idle(mut client) = std::mem::replace(slot, Slot::Closed) else {
                panic!("connection {conn} is busy or closed: cannot send {sql}");
            };
            let sql = sql.to_string();
            *slot = Slot::Busy(self.rt.spawn(async move {
                let start = Instant::now();
                let r = client.query(&sql).await;
                (client, r, start.elapsed())
            }));
        }
    }

    /// Waits for both replies on `conn` and asserts they are the same; returns the
    /// slower one's time.
    fn expect_same(&mut self, conn: usize, what: &str) -> Duration {
        let pair = &mut self.pairs[conn];
        let mut seen = Vec::new();
        let mut took = Duration::ZERO;
        for (i, slot) in [&mut pair.real, &mut pair.model].into_iter().enumerate() {
            let Slot::Busy(task) = std::mem::replace(slot, Slot::Closed) else {
                panic!("{what}: nothing was sent on connection {conn}");
            };
            let (client, reply, elapsed) = self
                .rt
                .block_on(async { tokio::time::timeout(Duration::from_secs(30), task).await })
                .unwrap_or_else(|_| panic!("{what}: no reply within 30 s"))
                .expect("the statement's task");
            *slot = Slot::Idle(client);
            took = took.max(elapsed);
            seen.push(normalise(reply, &self.ids, i == 0));
        }
        let model = seen.pop().expect("two replies");
        let real = seen.pop().expect("two replies");
        assert_eq!(model, real, "{what}: the model (left) differs from MariaDB");
        self.compared += 1;
        took
    }

    /// Runs `sql` on both and compares the replies.
    fn same(&mut self, conn: usize, sql: &str) -> Duration {
        self.send(conn, sql);
        self.expect_same(conn, sql)
    }

    /// Neither server has answered `conn` after `ms`.
    fn quiet(&mut self, conn: usize, ms: u64, what: &str) {
        self.rt
            .block_on(async { tokio::time::sleep(Duration::from_millis(ms)).await });
        let pair = &self.pairs[conn];
        for (side, slot) in [("MariaDB", &pair.real), ("the model", &pair.model)] {
            let Slot::Busy(task) = slot else {
                panic!("{what}: nothing is running on connection {conn}");
            };
            assert!(!task.is_finished(), "{what}: {side} answered already");
        }
        self.compared += 1;
    }

    /// Closes `conn`'s connections (TCP close, no COM_QUIT), as a client process that died.
    fn close(&mut self, conn: usize) {
        let pair = &mut self.pairs[conn];
        for slot in [&mut pair.real, &mut pair.model] {
            match std::mem::replace(slot, Slot::Closed) {
                Slot::Busy(task) => task.abort(),
                Slot::Idle(client) => drop(client),
                Slot::Closed => {}
            }
        }
        // Both servers notice the close on their next read.
        self.rt
            .block_on(async { tokio::time::sleep(Duration::from_millis(100)).await });
    }
}

async fn connect(port: u16) -> Client {
    let stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    MysqlClient::connect(stream, "root", "", Some("locksim"))
        .await
        .expect("log in")
}

/// `reply` with what differs on purpose between the servers normalised (see the module
/// doc); `real` says whose connection ids the values are.
fn normalise(reply: Result<QueryResult, WireError>, ids: &[(u32, u32)], real: bool) -> Seen {
    match reply {
        Err(e) => Seen::Failed(e.to_string()),
        Ok(QueryResult::Ok {
            affected_rows,
            last_insert_id,
            warnings,
            status,
        }) => Seen::Ok {
            affected_rows,
            last_insert_id,
            warnings,
            status: status & (SERVER_STATUS_IN_TRANS | SERVER_STATUS_AUTOCOMMIT),
        },
        Ok(QueryResult::Err(e)) => Seen::Err {
            message: if MESSAGES_COMPARED.contains(&e.code) {
                e.message
            } else {
                String::new()
            },
            code: e.code,
            sqlstate: e.sqlstate,
        },
        Ok(QueryResult::Rows { columns, rows }) => {
            let by_id = |v: &str| {
                ids.iter()
                    .position(|&(r, m)| v == if real { r } else { m }.to_string())
                    .map_or(v.to_string(), |i| format!("<connection {i}>"))
            };
            let rows = rows
                .into_iter()
                .map(|row| {
                    row.into_iter()
                        .zip(&columns)
                        .map(|(v, c)| {
                            let n = c.name.to_ascii_lowercase();
                            v.map(|v| {
                                if n.contains("updated_at") || n.contains("now(") {
                                    "<time>".to_string()
                                } else if n.contains("is_used_lock") || n.contains("connection_id")
                                {
                                    by_id(&v)
                                } else {
                                    v
                                }
                            })
                        })
                        .collect()
                })
                .collect();
            Seen::Rows {
                columns: columns
                    .into_iter()
                    .map(|c| (c.name, c.column_type))
                    .collect(),
                rows,
            }
        }
    }
}

/// The articles' table, as the model has it, and the sequence for-update tokens come from.
const SCHEMA: &[&str] = &[
    "CREATE DATABASE locksim",
    "CREATE TABLE locksim.method_lock (\
       id BIGINT AUTO_INCREMENT PRIMARY KEY, \
       name VARCHAR(64) NOT NULL, \
       owner VARCHAR(64) NOT NULL DEFAULT '', \
       version BIGINT NOT NULL DEFAULT 0, \
       updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), \
       UNIQUE KEY name (name)) ENGINE = InnoDB",
    "CREATE SEQUENCE locksim.lock_seq",
];

/// Runs `cases` against a fresh MariaDB and a served model side by side; the number of
/// replies compared (every one equal, or `cases` panicked).
fn against_mariadb(cases: impl FnOnce(&mut Harness)) -> usize {
    let real = real_mariadb::start_server();
    let model = served::serve(ServeFamily::Db, 1, 100);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let stream = TcpStream::connect(("127.0.0.1", real.port))
            .await
            .expect("connect");
        let mut c = MysqlClient::connect(stream, "root", "", None)
            .await
            .expect("log in");
        for sql in SCHEMA {
            let r = c.query(sql).await.expect("the schema");
            assert!(matches!(r, QueryResult::Ok { .. }), "{sql}: {r:?}");
        }
    });
    let mut h = Harness {
        rt,
        real_port: real.port,
        model_port: model.port(),
        pairs: Vec::new(),
        ids: Vec::new(),
        compared: 0,
    };
    cases(&mut h);
    eprintln!("{} replies compared, all equal", h.compared);
    h.compared
}

/// The connection-time chatter of real clients (mariadb CLI, PyMySQL, JDBC).
fn connect_chatter(h: &mut Harness) {
    let a = h.open();
    for sql in [
        "SET NAMES utf8mb4",
        "SET autocommit = 0",
        "SELECT @@autocommit",
        "SET autocommit = 1",
        "SELECT @@autocommit, @@innodb_lock_wait_timeout",
        "SELECT @@tx_isolation",
        "SELECT DATABASE()",
        "SELECT 1",
        "SELECT 1 AS one",
        "SELECT * FROM no_such_table",
        "SELEKT 1",
        "CREATE TABLE method_lock (id BIGINT AUTO_INCREMENT PRIMARY KEY)",
    ] {
        h.same(a, sql);
    }
}

/// Unique row: INSERT locks, a duplicate is refused with 1062, DELETE unlocks.
fn unique_row(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.same(
        a,
        "INSERT INTO method_lock (name, owner) VALUES ('u1', 'a')",
    );
    h.same(
        b,
        "INSERT INTO method_lock (name, owner) VALUES ('u1', 'b')",
    );
    h.same(
        b,
        "SELECT id, name, owner, version FROM method_lock WHERE name = 'u1'",
    );
    h.same(
        b,
        "DELETE FROM method_lock WHERE name = 'u1' AND owner = 'b'",
    );
    h.same(
        a,
        "DELETE FROM method_lock WHERE name = 'u1' AND owner = 'a'",
    );
    h.same(
        b,
        "INSERT INTO method_lock (name, owner) VALUES ('u1', 'b')",
    );
    h.same(b, "SELECT LAST_INSERT_ID()");
    h.same(b, "DELETE FROM method_lock WHERE name = 'u1'");
}

/// SELECT … FOR UPDATE: the second locking read waits for the first transaction's end;
/// a plain read does not wait; with a short lock wait timeout it fails with 1205.
fn for_update(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.same(a, "INSERT INTO method_lock (name, owner) VALUES ('f1', '')");
    h.same(a, "BEGIN");
    h.same(
        a,
        "SELECT name, owner, version FROM method_lock WHERE name = 'f1' FOR UPDATE",
    );
    h.same(b, "BEGIN");
    h.same(b, "SELECT name, owner FROM method_lock WHERE name = 'f1'");
    h.send(
        b,
        "SELECT name, owner FROM method_lock WHERE name = 'f1' FOR UPDATE",
    );
    h.quiet(b, 300, "a locking read behind a holder");
    h.same(
        a,
        "UPDATE method_lock SET version = version + 1 WHERE name = 'f1'",
    );
    h.same(a, "COMMIT");
    h.expect_same(b, "the waiter, granted at the holder's commit");
    h.same(b, "COMMIT");
    // Lock wait timeout.
    h.same(b, "SET SESSION innodb_lock_wait_timeout = 1");
    h.same(a, "BEGIN");
    h.same(
        a,
        "SELECT version FROM method_lock WHERE name = 'f1' FOR UPDATE",
    );
    h.same(b, "BEGIN");
    let t = h
        .same(
            b,
            "SELECT version FROM method_lock WHERE name = 'f1' FOR UPDATE",
        )
        .as_millis();
    assert!((900..2500).contains(&t), "1205 after {t} ms");
    h.same(b, "ROLLBACK");
    h.same(a, "ROLLBACK");
    h.same(a, "DELETE FROM method_lock WHERE name = 'f1'");
}

/// A connection that dies with its transaction open: its row lock is released.
fn dead_holder(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.same(a, "INSERT INTO method_lock (name, owner) VALUES ('d1', '')");
    h.same(a, "BEGIN");
    h.same(
        a,
        "SELECT name FROM method_lock WHERE name = 'd1' FOR UPDATE",
    );
    h.same(b, "BEGIN");
    h.send(
        b,
        "SELECT name FROM method_lock WHERE name = 'd1' FOR UPDATE",
    );
    h.quiet(b, 300, "a locking read behind a holder");
    h.close(a);
    h.expect_same(b, "the waiter, granted when the holder's connection closed");
    h.same(b, "ROLLBACK");
    h.same(b, "DELETE FROM method_lock WHERE name = 'd1'");
}

/// Optimistic versions: the compare-and-set of the stale version changes nothing.
fn optimistic(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.same(
        a,
        "INSERT INTO method_lock (name, owner, version) VALUES ('o1', '', 0)",
    );
    h.same(a, "SELECT version FROM method_lock WHERE name = 'o1'");
    h.same(b, "SELECT version FROM method_lock WHERE name = 'o1'");
    h.same(a, "UPDATE method_lock SET owner = 'a', version = version + 1 WHERE name = 'o1' AND version = 0");
    h.same(b, "UPDATE method_lock SET owner = 'b', version = version + 1 WHERE name = 'o1' AND version = 0");
    h.same(
        b,
        "SELECT owner, version FROM method_lock WHERE name = 'o1'",
    );
    h.same(
        a,
        "UPDATE method_lock SET owner = '' WHERE name = 'o1' AND owner = 'a'",
    );
    h.same(a, "DELETE FROM method_lock WHERE name = 'o1'");
}

/// autocommit = 0 (PyMySQL's default): a locking read outside BEGIN holds to COMMIT.
fn autocommit_off(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.same(a, "INSERT INTO method_lock (name, owner) VALUES ('ac', '')");
    h.same(a, "SET autocommit = 0");
    h.same(
        a,
        "SELECT name FROM method_lock WHERE name = 'ac' FOR UPDATE",
    );
    h.send(
        b,
        "SELECT name FROM method_lock WHERE name = 'ac' FOR UPDATE",
    );
    h.quiet(b, 300, "behind an autocommit = 0 holder");
    h.same(a, "COMMIT");
    h.expect_same(b, "granted at COMMIT");
    h.same(a, "SET autocommit = 1");
    h.same(a, "DELETE FROM method_lock WHERE name = 'ac'");
}

/// A locking read on a column with no index locks every row, and inserts wait too.
fn unindexed_for_update(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.same(
        a,
        "INSERT INTO method_lock (name, owner) VALUES ('t1', 'x')",
    );
    h.same(
        a,
        "INSERT INTO method_lock (name, owner) VALUES ('t2', 'y')",
    );
    h.same(a, "BEGIN");
    h.same(
        a,
        "SELECT name FROM method_lock WHERE owner = 'x' FOR UPDATE",
    );
    h.same(b, "BEGIN");
    h.send(
        b,
        "SELECT name FROM method_lock WHERE name = 't2' FOR UPDATE",
    );
    h.quiet(b, 300, "another row, behind a table scan's locks");
    h.same(a, "COMMIT");
    h.expect_same(b, "granted at the scan's COMMIT");
    h.same(b, "COMMIT");
    h.same(a, "DELETE FROM method_lock WHERE name = 't1'");
    h.same(a, "DELETE FROM method_lock WHERE name = 't2'");
}

/// Two transactions locking two rows in opposite orders: the second wait is a deadlock,
/// the requester is rolled back with 1213 and the other proceeds.
fn deadlock(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.same(a, "INSERT INTO method_lock (name, owner) VALUES ('k1', '')");
    h.same(a, "INSERT INTO method_lock (name, owner) VALUES ('k2', '')");
    h.same(a, "BEGIN");
    h.same(b, "BEGIN");
    h.same(
        a,
        "SELECT name FROM method_lock WHERE name = 'k1' FOR UPDATE",
    );
    h.same(
        b,
        "SELECT name FROM method_lock WHERE name = 'k2' FOR UPDATE",
    );
    h.send(
        a,
        "SELECT name FROM method_lock WHERE name = 'k2' FOR UPDATE",
    );
    h.quiet(a, 300, "a waits for b");
    h.same(
        b,
        "SELECT name FROM method_lock WHERE name = 'k1' FOR UPDATE",
    );
    h.expect_same(a, "a, granted once b was rolled back");
    h.same(a, "COMMIT");
    h.same(b, "COMMIT");
    h.same(a, "DELETE FROM method_lock WHERE name = 'k1'");
    h.same(a, "DELETE FROM method_lock WHERE name = 'k2'");
}

/// MySQL's named locks: session-scoped, re-entrant, released when the session ends.
fn named_locks(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.same(a, "SELECT GET_LOCK('n1', 1)");
    h.same(a, "SELECT GET_LOCK('n1', 1)");
    h.same(b, "SELECT IS_FREE_LOCK('n1')");
    h.same(b, "SELECT IS_USED_LOCK('n1')");
    let t = h.same(b, "SELECT GET_LOCK('n1', 1)").as_millis();
    assert!(
        (900..2500).contains(&t),
        "GET_LOCK's 1 s timeout after {t} ms"
    );
    h.same(b, "SELECT RELEASE_LOCK('n1')");
    h.same(a, "SELECT RELEASE_LOCK('n1')");
    h.same(a, "SELECT RELEASE_LOCK('n1')");
    h.same(a, "SELECT RELEASE_LOCK('n1')");
    h.same(a, "SELECT RELEASE_LOCK('nobody')");
    h.same(a, "SELECT GET_LOCK('n2', 0)");
    h.send(b, "SELECT GET_LOCK('n2', 10)");
    h.quiet(b, 300, "GET_LOCK behind a holder");
    h.close(a);
    h.expect_same(b, "GET_LOCK granted when the holder's connection closed");
    h.same(b, "SELECT RELEASE_ALL_LOCKS()");
}

#[test]
fn connecting_clients_get_the_same_answers() {
    assert!(against_mariadb(connect_chatter) >= 12, "steps went missing");
}

#[test]
fn the_three_schemes_answer_like_mariadb() {
    let compared = against_mariadb(|h| {
        unique_row(h);
        for_update(h);
        optimistic(h);
        autocommit_off(h);
        dead_holder(h);
    });
    assert!(compared >= 50, "steps went missing");
}

#[test]
fn innodb_locking_answers_like_mariadb() {
    let compared = against_mariadb(|h| {
        unindexed_for_update(h);
        deadlock(h);
    });
    assert!(compared >= 24, "steps went missing");
}

#[test]
fn named_locks_answer_like_mariadb() {
    assert!(against_mariadb(named_locks) >= 14, "steps went missing");
}
