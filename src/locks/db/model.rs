//! The database server as a pure state machine: one InnoDB-like table, sessions with
//! autocommit statements and transactions, exclusive row locks with FIFO waiter queues,
//! lock wait and idle timeouts, a redo log. No I/O and no clock of its own: every call
//! gets the server's clocks ([`Now`]) and the effects are collected for the node
//! ([`Effects`]) to write to disk, record and send.
//!
//! The table is the articles' `method_lock`:
//!
//! ```sql
//! CREATE TABLE method_lock (
//!   id         BIGINT AUTO_INCREMENT PRIMARY KEY,
//!   name       VARCHAR(64) NOT NULL,
//!   owner      VARCHAR(64) NOT NULL DEFAULT '',
//!   version    BIGINT NOT NULL DEFAULT 0,
//!   updated_at TIMESTAMP(3) NOT NULL,          -- NOW(3) of the server's wall clock
//!   UNIQUE KEY name (name)
//! ) ENGINE = InnoDB;
//! ```
//!
//! What follows MySQL 8 / InnoDB (REPEATABLE READ) as documented:
//!
//! - a duplicate `name` fails with 1062 `ER_DUP_ENTRY`;
//! - `UPDATE` and `DELETE` return the number of rows *changed* (an `UPDATE` that sets
//!   what is already there affects 0 rows, MySQL's default without `CLIENT_FOUND_ROWS`);
//! - locking statements (`SELECT … FOR UPDATE`, `UPDATE`, `DELETE`, `INSERT`) take an
//!   exclusive lock on the row found by the unique index and keep it to the end of the
//!   transaction; a statement that needs a lock another transaction holds waits in a
//!   FIFO queue, and after `lock_wait_timeout` fails with 1205 `ER_LOCK_WAIT_TIMEOUT`
//!   (only the statement fails; the transaction stays open, as with the default
//!   `innodb_rollback_on_timeout = OFF`);
//! - a plain `SELECT` never waits: it reads the last committed version of the row;
//! - `BEGIN` inside a transaction commits it first (implicit commit);
//! - a session that closes, or that the server ends after `wait_timeout` of idleness, has
//!   its transaction rolled back and its row locks released;
//! - `AUTO_INCREMENT` and sequence values are never rolled back.
//!
//! - a locking statement whose `WHERE` no index narrows (`owner`, `version`,
//!   `updated_at` have none) locks the whole table: every row, and inserts wait (InnoDB's
//!   next-key locks on a full scan); an equality on `name` (UNIQUE) or `id` (PRIMARY
//!   KEY) locks one row;
//! - a wait that would close a cycle of waits fails at once with 1213
//!   `ER_LOCK_DEADLOCK`, and the requester's transaction rolls back (InnoDB's victim when
//!   the transactions weigh the same);
//! - named locks (`GET_LOCK`) are the session's, re-entrant, kept through COMMIT and
//!   ROLLBACK, queued FIFO in the same lock table, released when the session ends;
//! - with `autocommit` off, a statement on the table opens a transaction.
//!
//! Simplifications: one table; exclusive locks only (an `INSERT` of a duplicate waits
//! for an exclusive lock where InnoDB takes a shared one, which conflicts the same way
//! with the exclusive holders here); no gap locks through an index (a locking read of a
//! missing row locks nothing); a table-locking scan waits for each row lock before it
//! takes any, where InnoDB locks row by row as it scans.
//!
//! Lock ends the lock service itself decides are announced as [`Effects::expired`] (the
//! node records them as `expire` events for `lock-linearizable`): rows the cleaner's
//! `DELETE … WHERE updated_at < NOW() - INTERVAL` removes, optimistic takeovers of a
//! stale row, row locks of a transaction the server rolls back because its session
//! ended, and named locks of an ended session. Each is announced when it commits.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

mod locking;
mod named_locks;
mod projection;
mod scan;
mod statement;
use crate::net::mysql::QueryResult;
pub(crate) use locking::LockKey;
pub(crate) use projection::{
    sqlstate as projection_sqlstate, timestamp_text, Out, OutColumn, Projection,
};
pub(crate) use scan::{CmpOp, Field, Filter, Operand};
pub(crate) use statement::Statement;

/// A session (connection) id, as `CONNECTION_ID()`.
pub(crate) type ConnId = u64;

/// `ER_DUP_ENTRY`.
pub(crate) const ER_DUP_ENTRY: u16 = 1062;
/// `ER_LOCK_WAIT_TIMEOUT`.
pub(crate) const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
/// `ER_LOCK_DEADLOCK`.
pub(crate) const ER_LOCK_DEADLOCK: u16 = 1213;
/// `CR_COMMANDS_OUT_OF_SYNC`: a statement sent while the previous one is still running.
pub(crate) const CR_COMMANDS_OUT_OF_SYNC: u16 = 2014;

/// One row of `method_lock`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Row {
    /// `AUTO_INCREMENT` id.
    pub id: u64,
    /// The lock name (unique).
    pub name: String,
    /// Who holds it (`''`: nobody, for the schemes that keep the row).
    pub owner: String,
    /// Optimistic-concurrency version.
    pub version: u64,
    /// `NOW(3)` of the server's wall clock at the last insert or touch, ms.
    pub updated_at_ms: i64,
}

/// The extra conditions of an `UPDATE … WHERE name = ?`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Cond {
    /// `AND owner = ?`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// `AND version = ?`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// `AND (owner = '' OR updated_at < NOW(3) - INTERVAL ? * 1000 MICROSECOND)`: free, or
    /// held so long ago that it may be taken over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_or_older_than_ms: Option<u64>,
}

/// The `SET` clause of an `UPDATE`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Set {
    /// `owner = ?`
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// `version = version + 1`
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bump_version: bool,
    /// `updated_at = NOW(3)`
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub touch: bool,
}

impl Set {
    /// `old` as this `SET` leaves it; `wall_ms` is the server's `NOW(3)`.
    pub(crate) fn applied_to(&self, old: &Row, wall_ms: i64) -> Row {
        let mut new = old.clone();
        if let Some(o) = &self.owner {
            new.owner = o.clone();
        }
        if self.bump_version {
            new.version += 1;
        }
        if self.touch {
            new.updated_at_ms = wall_ms;
        }
        new
    }
}

/// A server error: MySQL's code, its symbolic name and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DbError {
    /// MySQL error code, e.g. 1062.
    pub code: u16,
    /// Symbolic name, e.g. `ER_DUP_ENTRY`.
    pub name: String,
    /// The message.
    pub message: String,
}

/// The reply to a statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Reply {
    /// A statement without a result set: rows changed, and `LAST_INSERT_ID()` of an insert.
    Ok {
        /// Rows changed.
        affected: u64,
        /// The id an `INSERT` assigned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        insert_id: Option<u64>,
    },
    /// A `SELECT`'s row (none: no such row), and its `NEXTVAL` if asked for.
    Row {
        /// The row.
        row: Option<Row>,
        /// The sequence value drawn for it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nextval: Option<u64>,
    },
    /// A scalar (`NEXTVAL`).
    Value(u64),
    /// The rows a filtered `SELECT` found, each with its `NEXTVAL` when asked for.
    Rows {
        /// The rows, in primary-key order.
        rows: Vec<Row>,
        /// One sequence value per row (empty: none asked for).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        nextvals: Vec<u64>,
    },
    /// An integer or NULL (the named-lock functions).
    Scalar(Option<i64>),
    /// An error.
    Error(DbError),
}

impl Reply {
    fn ok(affected: u64) -> Reply {
        Reply::Ok {
            affected,
            insert_id: None,
        }
    }

    /// An error reply.
    pub(crate) fn error(code: u16, name: &str, message: impl Into<String>) -> Reply {
        Reply::Error(DbError {
            code,
            name: name.to_string(),
            message: message.into(),
        })
    }

    /// The error code, if an error.
    pub(crate) fn code(&self) -> Option<u16> {
        match self {
            Reply::Error(e) => Some(e.code),
            _ => None,
        }
    }
}

/// One change of a committed transaction: the row's final image or its deletion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Change {
    /// The row as committed.
    Put(Row),
    /// The row was deleted.
    Del(String),
}

/// A redo log record. One record per line, so a commit is atomic on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Redo {
    /// A committed transaction.
    Commit(Vec<Change>),
    /// An `AUTO_INCREMENT` value was handed out (written at allocation, not at commit).
    AutoInc(u64),
    /// A sequence value was handed out.
    Seq(String, u64),
}

/// The server's clocks at a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Now {
    /// Monotonic, ns: timeouts.
    pub mono_ns: i64,
    /// Wall, ms: `NOW()`.
    pub wall_ms: i64,
}

/// Server settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Config {
    /// `innodb_lock_wait_timeout`, ns.
    pub lock_wait_timeout_ns: i64,
    /// `wait_timeout`, ns.
    pub wait_timeout_ns: i64,
}

/// What the node must do after a call: collected, then taken with [`Db::take_effects`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    /// Replies to *other* sessions whose waiting statement finished (granted or timed out).
    pub replies: Vec<(ConnId, Reply)>,
    /// The same for statements that came as SQL text ([`Db::execute_projected`]): their
    /// replies projected as the statement asked.
    pub results: Vec<(ConnId, QueryResult)>,
    /// Redo records to append (and flush, per policy) before any reply is sent.
    pub redo: Vec<Redo>,
    /// Lock names whose hold the server ended (record `expire`).
    pub expired: Vec<String>,
    /// Sessions the server ended (idle past `wait_timeout`): close their connections.
    pub killed: Vec<ConnId>,
}

struct RowLock {
    holder: ConnId,
    waiters: VecDeque<ConnId>,
}

struct Waiting {
    stmt: Statement,
    /// How the reply is shown, for a statement that came as SQL text.
    projection: Option<Projection>,
    on: LockKey,
    deadline_ns: i64,
}

/// A session's settings, as `SET` changes them and `SELECT @@…` reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SessionVars {
    /// `@@autocommit`.
    pub autocommit: bool,
    /// `@@innodb_lock_wait_timeout`, ns.
    pub lock_wait_timeout_ns: i64,
    /// `@@wait_timeout`, ns.
    pub wait_timeout_ns: i64,
    /// `LAST_INSERT_ID()`.
    pub last_insert_id: u64,
}

#[derive(Default)]
struct Session {
    in_txn: bool,
    /// Row and table locks of the transaction (named locks are not transactional).
    locks: BTreeSet<LockKey>,
    /// `GET_LOCK` names held, with their re-entry counts.
    named: BTreeMap<String, u32>,
    /// Settings; `None` before a session starts (never: set at connect).
    vars: Option<SessionVars>,
    /// Before-images, oldest first.
    undo: Vec<(String, Option<Row>)>,
    /// Lock ends to announce when this transaction commits.
    expired: Vec<String>,
    waiting: Option<Waiting>,
    last_active_ns: i64,
}

enum Step {
    Done(Reply),
    Wait(LockKey),
}

/// The database server.
pub(crate) struct Db {
    cfg: Config,
    rows: BTreeMap<String, Row>,
    auto_increment: u64,
    sequences: BTreeMap<String, u64>,
    locks: BTreeMap<LockKey, RowLock>,
    sessions: BTreeMap<ConnId, Session>,
    next_conn: ConnId,
    /// Locks handed to a waiter whose statement has not been re-run yet.
    grants: VecDeque<(ConnId, LockKey)>,
    fx: Effects,
}

impl Db {
    /// An empty database.
    pub(crate) fn new(cfg: Config) -> Db {
        Db {
            cfg,
            rows: BTreeMap::new(),
            auto_increment: 0,
            sequences: BTreeMap::new(),
            locks: BTreeMap::new(),
            sessions: BTreeMap::new(),
            next_conn: 1,
            grants: VecDeque::new(),
            fx: Effects::default(),
        }
    }

    /// Crash recovery: replay a redo log (JSON lines). A torn last line (a crash in the
    /// middle of a write) ends the log.
    pub(crate) fn recover(cfg: Config, log: &[u8]) -> Db {
        let mut db = Db::new(cfg);
        for line in log.split(|&b| b == b'\n') {
            let Ok(rec) = serde_json::from_slice::<Redo>(line) else {
                break;
            };
            match rec {
                Redo::Commit(changes) => {
                    for c in changes {
                        match c {
                            Change::Put(row) => {
                                db.auto_increment = db.auto_increment.max(row.id);
                                db.rows.insert(row.name.clone(), row);
                            }
                            Change::Del(name) => {
                                db.rows.remove(&name);
                            }
                        }
                    }
                }
                Redo::AutoInc(n) => db.auto_increment = db.auto_increment.max(n),
                Redo::Seq(name, v) => {
                    let s = db.sequences.entry(name).or_default();
                    *s = (*s).max(v);
                }
            }
        }
        db
    }

    // --- failover (issue 41): the standby applies the primary's redo (replication.rs) ---
    /// A standby applies redo records shipped by its primary, as recovery replays them
    /// (rows, `AUTO_INCREMENT` and sequences end as the primary's), and logs them to its
    /// own redo log ([`Effects::redo`]), so its log is the primary's, record for record.
    /// No row locks are taken: a read-only server's sessions never hold a row's undo.
    pub(crate) fn apply_replicated(&mut self, records: &[Redo]) {
        for rec in records {
            match rec {
                Redo::Commit(changes) => {
                    for c in changes {
                        match c {
                            Change::Put(row) => {
                                self.auto_increment = self.auto_increment.max(row.id);
                                self.rows.insert(row.name.clone(), row.clone());
                            }
                            Change::Del(name) => {
                                self.rows.remove(name);
                            }
                        }
                    }
                }
                Redo::AutoInc(n) => self.auto_increment = self.auto_increment.max(*n),
                Redo::Seq(name, v) => {
                    let s = self.sequences.entry(name.clone()).or_default();
                    *s = (*s).max(*v);
                }
            }
        }
        self.fx.redo.extend_from_slice(records);
    }
    // --- end failover ---

    /// Encode redo records as log lines.
    pub(crate) fn encode_redo(records: &[Redo]) -> Vec<u8> {
        let mut out = Vec::new();
        for r in records {
            serde_json::to_writer(&mut out, r).expect("redo records serialise");
            out.push(b'\n');
        }
        out
    }

    /// The committed and uncommitted rows, by name (for tests and traces).
    pub(crate) fn rows(&self) -> &BTreeMap<String, Row> {
        &self.rows
    }

    /// The session holding the row lock on `name`, and the sessions waiting for it.
    #[cfg(test)]
    pub(crate) fn lock_holder(&self, name: &str) -> Option<(ConnId, Vec<ConnId>)> {
        self.locks
            .get(&LockKey::Row(name.to_string()))
            .map(|l| (l.holder, l.waiters.iter().copied().collect()))
    }

    /// Open a session.
    pub(crate) fn connect(&mut self, now: Now) -> ConnId {
        let c = self.next_conn;
        self.next_conn += 1;
        self.sessions.insert(
            c,
            Session {
                last_active_ns: now.mono_ns,
                vars: Some(SessionVars {
                    autocommit: true,
                    lock_wait_timeout_ns: self.cfg.lock_wait_timeout_ns,
                    wait_timeout_ns: self.cfg.wait_timeout_ns,
                    last_insert_id: 0,
                }),
                ..Session::default()
            },
        );
        c
    }

    /// Session `conn`'s settings (None: no such session).
    pub(crate) fn vars(&self, conn: ConnId) -> Option<SessionVars> {
        self.sessions.get(&conn).and_then(|s| s.vars)
    }

    /// Change session `conn`'s settings. Turning autocommit on commits an open
    /// transaction, as MySQL does.
    pub(crate) fn set_vars(&mut self, conn: ConnId, vars: SessionVars, now: Now) {
        let Some(s) = self.sessions.get_mut(&conn) else {
            return;
        };
        s.last_active_ns = now.mono_ns;
        let was = s.vars.replace(vars);
        if vars.autocommit && was.is_some_and(|v| !v.autocommit) && s.in_txn {
            self.commit(conn);
            self.sessions.get_mut(&conn).expect("live").in_txn = false;
            self.pump(now);
        }
    }

    /// A statement the SQL front-end answered itself: the session is active.
    pub(crate) fn touch(&mut self, conn: ConnId, now: Now) {
        if let Some(s) = self.sessions.get_mut(&conn) {
            s.last_active_ns = now.mono_ns;
        }
    }

    /// The `SERVER_STATUS_*` flags of session `conn`: in a transaction, autocommit.
    pub(crate) fn status(&self, conn: ConnId) -> u16 {
        use crate::net::mysql::{SERVER_STATUS_AUTOCOMMIT, SERVER_STATUS_IN_TRANS};
        let Some(s) = self.sessions.get(&conn) else {
            return 0;
        };
        let mut st = 0;
        if s.in_txn {
            st |= SERVER_STATUS_IN_TRANS;
        }
        if s.vars.is_some_and(|v| v.autocommit) {
            st |= SERVER_STATUS_AUTOCOMMIT;
        }
        st
    }

    /// Run a statement of session `conn`. `None`: it waits for a row lock, and its reply
    /// comes later in [`Effects::replies`]. The model's tests drive it so; the node runs
    /// SQL text ([`crate::locks::db::sql::execute_sql`]).
    #[cfg(test)]
    pub(crate) fn execute(&mut self, conn: ConnId, stmt: Statement, now: Now) -> Option<Reply> {
        self.run(conn, stmt, None, now)
    }

    /// Run a statement that came as SQL text; its reply is shown as `projection` asks.
    /// `None`: it waits for a lock, and its result comes later in [`Effects::results`].
    pub(crate) fn execute_projected(
        &mut self,
        conn: ConnId,
        stmt: Statement,
        projection: Projection,
        now: Now,
    ) -> Option<QueryResult> {
        let reply = self.run(conn, stmt, Some(projection.clone()), now)?;
        Some(projection.project(&reply, self.status(conn)))
    }

    fn run(
        &mut self,
        conn: ConnId,
        stmt: Statement,
        projection: Option<Projection>,
        now: Now,
    ) -> Option<Reply> {
        let Some(s) = self.sessions.get_mut(&conn) else {
            return Some(Reply::error(
                CR_COMMANDS_OUT_OF_SYNC,
                "CR_SERVER_LOST",
                "no such session",
            ));
        };
        if s.waiting.is_some() {
            return Some(Reply::error(
                CR_COMMANDS_OUT_OF_SYNC,
                "CR_COMMANDS_OUT_OF_SYNC",
                "Commands out of sync; you can't run this command now",
            ));
        }
        s.last_active_ns = now.mono_ns;
        // With autocommit off, a statement on the table opens a transaction that only
        // COMMIT or ROLLBACK ends.
        if s.vars.is_some_and(|v| !v.autocommit) && stmt.touches_table() {
            s.in_txn = true;
        }
        let lock_wait_ns = s
            .vars
            .map_or(self.cfg.lock_wait_timeout_ns, |v| v.lock_wait_timeout_ns);
        let reply = match self.step(conn, &stmt, now) {
            Step::Done(reply) => {
                self.finish(conn, &reply);
                Some(reply)
            }
            Step::Wait(on) => {
                let deadline = stmt.wait_deadline(now.mono_ns, lock_wait_ns);
                if deadline <= now.mono_ns {
                    // `GET_LOCK(name, 0)`: a try, answered at once.
                    let reply = stmt.timed_out();
                    self.finish(conn, &reply);
                    Some(reply)
                } else {
                    self.wait(conn, stmt, projection, on, deadline)
                }
            }
        };
        self.pump(now);
        reply
    }

    /// Session `conn` closed (the client hung up or its connection broke): roll its
    /// transaction back and release its locks.
    pub(crate) fn disconnect(&mut self, conn: ConnId, now: Now) {
        self.end_session(conn);
        self.pump(now);
    }

    /// Time passes: statements waiting past `lock_wait_timeout` fail with 1205 (a
    /// `GET_LOCK` past its own timeout returns 0), and sessions idle for `wait_timeout`
    /// are ended.
    pub(crate) fn tick(&mut self, now: Now) {
        let timed_out: Vec<ConnId> = self
            .sessions
            .iter()
            .filter(|(_, s)| {
                s.waiting
                    .as_ref()
                    .is_some_and(|w| w.deadline_ns <= now.mono_ns)
            })
            .map(|(c, _)| *c)
            .collect();
        for c in timed_out {
            let s = self.sessions.get_mut(&c).expect("listed above");
            let w = s.waiting.take().expect("listed above");
            s.last_active_ns = now.mono_ns;
            if let Some(l) = self.locks.get_mut(&w.on) {
                l.waiters.retain(|x| *x != c);
            }
            let reply = w.stmt.timed_out();
            self.finish(c, &reply);
            self.reply_later(c, w.projection, reply);
        }
        let default_wait = self.cfg.wait_timeout_ns;
        let idle: Vec<ConnId> = self
            .sessions
            .iter()
            .filter(|(_, s)| {
                let limit = s.vars.map_or(default_wait, |v| v.wait_timeout_ns);
                s.waiting.is_none() && now.mono_ns - s.last_active_ns >= limit
            })
            .map(|(c, _)| *c)
            .collect();
        for c in idle {
            self.end_session(c);
            self.fx.killed.push(c);
        }
        self.pump(now);
    }

    /// Take what the node must do.
    pub(crate) fn take_effects(&mut self) -> Effects {
        std::mem::take(&mut self.fx)
    }

    /// The reply of a statement that had waited, to be sent by the node.
    fn reply_later(&mut self, conn: ConnId, projection: Option<Projection>, reply: Reply) {
        match projection {
            Some(p) => {
                let r = p.project(&reply, self.status(conn));
                self.fx.results.push((conn, r));
            }
            None => self.fx.replies.push((conn, reply)),
        }
    }

    fn end_session(&mut self, conn: ConnId) {
        let Some(s) = self.sessions.get_mut(&conn) else {
            return;
        };
        if let Some(w) = s.waiting.take() {
            if let Some(l) = self.locks.get_mut(&w.on) {
                l.waiters.retain(|x| *x != conn);
            }
        }
        // The row locks of an open transaction are lock holds the server now ends; the
        // locks an autocommit statement took are not.
        let announce = s.in_txn;
        self.rollback(conn, announce);
        self.end_named_locks(conn);
        self.sessions.remove(&conn);
    }

    /// After a statement finished: an autocommit statement commits (or, failed, rolls
    /// back) at once.
    fn finish(&mut self, conn: ConnId, reply: &Reply) {
        if let Reply::Ok {
            insert_id: Some(id),
            ..
        } = reply
        {
            if let Some(v) = self.sessions.get_mut(&conn).and_then(|s| s.vars.as_mut()) {
                v.last_insert_id = *id;
            }
        }
        let in_txn = self.sessions.get(&conn).is_some_and(|s| s.in_txn);
        if !in_txn {
            if matches!(reply, Reply::Error(_)) {
                self.rollback(conn, false);
            } else {
                self.commit(conn);
            }
        }
    }

    /// Re-run the statements of waiters that were handed a lock, until none is left.
    fn pump(&mut self, now: Now) {
        while let Some((conn, key)) = self.grants.pop_front() {
            let Some(s) = self.sessions.get_mut(&conn) else {
                // Its session ended meanwhile: the lock goes on down the line.
                self.hand_on(key);
                continue;
            };
            let Some(w) = s.waiting.take() else {
                s.locks.insert(key);
                continue;
            };
            s.last_active_ns = now.mono_ns;
            if let LockKey::Named(name) = &key {
                // A named lock is the session's, not the transaction's.
                *s.named.entry(name.clone()).or_default() += 1;
                self.reply_later(conn, w.projection, Reply::Scalar(Some(1)));
                continue;
            }
            s.locks.insert(key);
            match self.step(conn, &w.stmt, now) {
                Step::Done(reply) => {
                    self.finish(conn, &reply);
                    self.reply_later(conn, w.projection, reply);
                }
                Step::Wait(on) => {
                    if let Some(reply) =
                        self.wait(conn, w.stmt, w.projection.clone(), on, w.deadline_ns)
                    {
                        self.reply_later(conn, w.projection, reply);
                    }
                }
            }
        }
    }

    fn commit(&mut self, conn: ConnId) {
        let s = self.sessions.get_mut(&conn).expect("live session");
        let touched: BTreeSet<String> = s.undo.drain(..).map(|(n, _)| n).collect();
        let expired = std::mem::take(&mut s.expired);
        if !touched.is_empty() {
            let changes = touched
                .into_iter()
                .map(|n| match self.rows.get(&n) {
                    Some(r) => Change::Put(r.clone()),
                    None => Change::Del(n),
                })
                .collect();
            self.fx.redo.push(Redo::Commit(changes));
        }
        self.fx.expired.extend(expired);
        self.release_locks(conn);
    }

    /// Undo the transaction's changes; `announce`: its row locks are holds the server
    /// ends (its session is gone).
    fn rollback(&mut self, conn: ConnId, announce: bool) {
        let s = self.sessions.get_mut(&conn).expect("live session");
        let undo = std::mem::take(&mut s.undo);
        s.expired.clear();
        s.in_txn = false;
        if announce {
            let rows = s.locks.iter().filter_map(|k| match k {
                LockKey::Row(n) => Some(n.clone()),
                _ => None,
            });
            self.fx.expired.extend(rows);
        }
        for (name, before) in undo.into_iter().rev() {
            match before {
                Some(r) => {
                    self.rows.insert(name, r);
                }
                None => {
                    self.rows.remove(&name);
                }
            }
        }
        self.release_locks(conn);
    }

    /// Change row `name` (None: delete), keeping its before-image for rollback.
    fn write(&mut self, conn: ConnId, name: &str, after: Option<Row>) {
        let before = match after {
            Some(r) => self.rows.insert(name.to_string(), r),
            None => self.rows.remove(name),
        };
        let s = self.sessions.get_mut(&conn).expect("live session");
        s.undo.push((name.to_string(), before));
    }

    /// The last committed version of `name` as `conn` sees it (a consistent read): a row
    /// another transaction changed and still holds reads as its before-image.
    fn committed_view(&self, conn: ConnId, name: &str) -> Option<Row> {
        let key = LockKey::Row(name.to_string());
        if let Some(l) = self.locks.get(&key).filter(|l| l.holder != conn) {
            if let Some(s) = self.sessions.get(&l.holder) {
                if let Some((_, before)) = s.undo.iter().find(|(n, _)| n == name) {
                    return before.clone();
                }
            }
        }
        self.rows.get(name).cloned()
    }

    /// Run `stmt` for session `conn`, or say which row lock it waits for.
    fn step(&mut self, conn: ConnId, stmt: &Statement, now: Now) -> Step {
        match stmt {
            Statement::Ping => Step::Done(Reply::ok(0)),
            Statement::Begin => self.begin(conn),
            Statement::Commit => self.commit_statement(conn),
            Statement::Rollback => {
                if self.sessions[&conn].in_txn {
                    self.rollback(conn, false);
                }
                Step::Done(Reply::ok(0))
            }
            Statement::Insert { name, owner } => self.insert(conn, name, owner, now),
            Statement::Select {
                name,
                for_update,
                nextval,
            } => self.select(conn, name, *for_update, nextval.as_deref()),
            Statement::Update { name, cond, set } => self.update(conn, name, cond, set, now),
            Statement::Delete { name, owner } => self.delete(conn, name, owner.as_deref()),
            Statement::DeleteOlder { ms } => self.delete_older(conn, *ms, now),
            Statement::NextVal { seq } => Step::Done(Reply::Value(self.next_value(seq))),
            Statement::Query {
                filter,
                for_update,
                nextval,
            } => self.query(conn, filter, *for_update, nextval.as_deref(), now),
            Statement::UpdateWhere { filter, set } => self.update_where(conn, filter, set, now),
            Statement::DeleteWhere { filter } => self.delete_where(conn, filter, now),
            Statement::GetLock { name, .. } => self.get_lock(conn, name),
            Statement::ReleaseLock { name } => self.release_named(conn, name),
            Statement::IsFreeLock { name } => self.is_free_lock(name),
            Statement::IsUsedLock { name } => self.is_used_lock(name),
            Statement::ReleaseAllLocks => self.release_all_named(conn),
        }
    }

    /// `BEGIN`: an open transaction commits first (implicit commit).
    fn begin(&mut self, conn: ConnId) -> Step {
        if self.sessions[&conn].in_txn {
            self.commit(conn);
        }
        self.sessions.get_mut(&conn).expect("live").in_txn = true;
        Step::Done(Reply::ok(0))
    }

    /// `COMMIT`: a no-op outside a transaction.
    fn commit_statement(&mut self, conn: ConnId) -> Step {
        if self.sessions[&conn].in_txn {
            self.commit(conn);
            self.sessions.get_mut(&conn).expect("live").in_txn = false;
        }
        Step::Done(Reply::ok(0))
    }

    /// `INSERT`: a new row, locked, or `ER_DUP_ENTRY` when the name is taken.
    fn insert(&mut self, conn: ConnId, name: &str, owner: &str, now: Now) -> Step {
        if let Some(k) = self.row_blocker(conn, name) {
            return Step::Wait(k);
        }
        // InnoDB allocates the id before it meets the duplicate (a failed INSERT uses one
        // up, as MariaDB's does), and writes it at allocation: a rolled-back insert's id
        // is never handed out again.
        self.auto_increment += 1;
        let id = self.auto_increment;
        self.fx.redo.push(Redo::AutoInc(id));
        if self.rows.contains_key(name) {
            return Step::Done(Reply::error(
                ER_DUP_ENTRY,
                "ER_DUP_ENTRY",
                format!("Duplicate entry '{name}' for key 'method_lock.name'"),
            ));
        }
        self.take_lock(conn, LockKey::Row(name.to_string()));
        let row = Row {
            id,
            name: name.to_string(),
            owner: owner.to_string(),
            version: 0,
            updated_at_ms: now.wall_ms,
        };
        self.write(conn, name, Some(row));
        Step::Done(Reply::Ok {
            affected: 1,
            insert_id: Some(id),
        })
    }

    /// `SELECT`: a locking read (`FOR UPDATE`) or a consistent one, and the next value
    /// of a sequence when the row exists.
    fn select(
        &mut self,
        conn: ConnId,
        name: &str,
        for_update: bool,
        nextval: Option<&str>,
    ) -> Step {
        let row = if for_update {
            if let Some(k) = self.row_blocker(conn, name) {
                return Step::Wait(k);
            }
            let row = self.rows.get(name).cloned();
            if row.is_some() {
                self.take_lock(conn, LockKey::Row(name.to_string()));
            }
            row
        } else {
            self.committed_view(conn, name)
        };
        let nextval = match (&row, nextval) {
            (Some(_), Some(seq)) => Some(self.next_value(seq)),
            _ => None,
        };
        Step::Done(Reply::Row { row, nextval })
    }

    /// `UPDATE`: change the row when it matches `cond`; a takeover of a stale row ends
    /// its holder's hold.
    fn update(&mut self, conn: ConnId, name: &str, cond: &Cond, set: &Set, now: Now) -> Step {
        if let Some(k) = self.row_blocker(conn, name) {
            return Step::Wait(k);
        }
        let Some(old) = self.rows.get(name).cloned() else {
            return Step::Done(Reply::ok(0));
        };
        self.take_lock(conn, LockKey::Row(name.to_string()));
        let stale = |ms: u64| old.updated_at_ms < now.wall_ms - ms as i64;
        let matches = cond.owner.as_ref().is_none_or(|o| *o == old.owner)
            && cond.version.is_none_or(|v| v == old.version)
            && cond
                .free_or_older_than_ms
                .is_none_or(|ms| old.owner.is_empty() || stale(ms));
        if !matches {
            return Step::Done(Reply::ok(0));
        }
        let new = set.applied_to(&old, now.wall_ms);
        // MySQL counts changed rows: setting what is there affects none.
        if new == old {
            return Step::Done(Reply::ok(0));
        }
        if cond.free_or_older_than_ms.is_some() && !old.owner.is_empty() {
            // A takeover: the server ends the stale holder's hold.
            let s = self.sessions.get_mut(&conn).expect("live session");
            s.expired.push(name.to_string());
        }
        self.write(conn, name, Some(new));
        Step::Done(Reply::ok(1))
    }

    /// `DELETE`: the row, when it has `owner` (any owner when None).
    fn delete(&mut self, conn: ConnId, name: &str, owner: Option<&str>) -> Step {
        if let Some(k) = self.row_blocker(conn, name) {
            return Step::Wait(k);
        }
        let Some(old) = self.rows.get(name) else {
            return Step::Done(Reply::ok(0));
        };
        let matches = owner.is_none_or(|o| o == old.owner);
        self.take_lock(conn, LockKey::Row(name.to_string()));
        if !matches {
            return Step::Done(Reply::ok(0));
        }
        self.write(conn, name, None);
        Step::Done(Reply::ok(1))
    }

    /// `DELETE ... WHERE updated_at < now - ms`: every stale row, each an ended hold.
    fn delete_older(&mut self, conn: ConnId, ms: u64, now: Now) -> Step {
        let cutoff = now.wall_ms - ms as i64;
        let old: Vec<String> = self
            .rows
            .values()
            .filter(|r| r.updated_at_ms < cutoff)
            .map(|r| r.name.to_string())
            .collect();
        // Wait for the first row another transaction holds, then start over.
        if let Some(k) = old.iter().find_map(|n| self.row_blocker(conn, n)) {
            return Step::Wait(k);
        }
        for n in &old {
            self.take_lock(conn, LockKey::Row(n.clone()));
            self.write(conn, n, None);
            let s = self.sessions.get_mut(&conn).expect("live session");
            s.expired.push(n.clone());
        }
        Step::Done(Reply::ok(old.len() as u64))
    }

    /// Draw from sequence `seq`: written to the log at once, never rolled back.
    fn next_value(&mut self, seq: &str) -> u64 {
        let v = self.sequences.entry(seq.to_string()).or_default();
        *v += 1;
        let v = *v;
        self.fx.redo.push(Redo::Seq(seq.to_string(), v));
        v
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
