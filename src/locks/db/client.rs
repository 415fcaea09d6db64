//! The database lock client: the four schemes of the articles as one [`LockClient`].
//!
//! | scheme | acquire | token | release | lease the client believes |
//! |---|---|---|---|---|
//! | unique-row | `INSERT` (1062: busy) | the row's `AUTO_INCREMENT` id | `DELETE … WHERE name [AND owner]` | `cleaner_timeout_ms` from the `INSERT`'s send |
//! | for-update | `BEGIN; SELECT *, NEXTVAL(lock_seq) … FOR UPDATE` (1205: busy) | the `NEXTVAL` drawn with the grant (or the version bumped in the transaction afterwards) | `COMMIT` on the same connection | `wait_timeout_ms` from the last statement's send |
//! | optimistic | `SELECT` the version, then `UPDATE … WHERE version = ? AND (owner = '' OR stale)` | the version it set | `UPDATE … SET owner = '' WHERE name [AND owner]` | `ttl_ms` from the `UPDATE`'s send |
//! | named-lock | `SELECT GET_LOCK(name, wait)` (0: busy) | `SELECT NEXTVAL(lock_seq)` on the holding session after the grant | `SELECT RELEASE_LOCK(name)` on the same connection | `wait_timeout_ms` from the `GET_LOCK`'s send |
//!
//! Outcomes map to [`LockError`] honestly: a statement that changes the lock (`INSERT`,
//! the locking read, the compare-and-set) whose reply is lost ends the acquire as
//! [`LockError::Indeterminate`] (it may have taken the lock); a duplicate key, a lock
//! wait timeout, a failed compare-and-set or a refused connection is a busy attempt, and
//! after the acquire timeout [`LockError::Failed`].
//!
//! Validity (`valid_until`) is measured on the client's monotonic clock from the send of
//! the statement that started the server's timer, minus `ttl × drift_factor + 2 ms`.

use super::model::{Cond, Reply, Set, Statement, ER_DUP_ENTRY, ER_LOCK_WAIT_TIMEOUT};
use super::params::{DbParams, Release, Scheme, Token};
use super::session::Session;
use crate::locks::{Grant, LocalBoxFuture, LockClient, LockError, Wait};
use crate::net::CallError;
use crate::sim::NodeCtx;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// The sequence `for-update` tokens come from.
pub(crate) const TOKEN_SEQ: &str = "lock_seq";

/// The database lock client.
pub(crate) struct DbLock {
    p: DbParams,
    session: Session,
    timeout: Duration,
    /// The lock row exists (for-update and optimistic keep one row per lock).
    row_ready: bool,
    /// The owner value of the latest acquire: what an abandon releases.
    last_owner: Option<String>,
    /// for-update: the latest acquire's transaction (its connection's generation) and
    /// whether its row lock was granted; named-lock: the connection whose session holds
    /// the named lock (session-scoped, so the same mechanism).
    txn: Option<(u64, bool)>,
}

/// One acquire attempt that did not end the operation.
enum Attempt {
    Granted(Grant),
    Busy(String),
}

/// Why the lock's row could not be made sure of: which step, and what it got.
#[derive(Debug)]
enum RowError {
    /// Reading the row.
    Reading(RowFailure),
    /// Inserting the missing row.
    Creating(RowFailure),
}

/// A statement's outcome that is not the row or its insert.
#[derive(Debug)]
enum RowFailure {
    /// An unexpected reply (an error code).
    Reply(Reply),
    /// No reply.
    Call(CallError),
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (step, failure) = match self {
            RowError::Reading(x) => ("reading", x),
            RowError::Creating(x) => ("creating", x),
        };
        match failure {
            RowFailure::Reply(r) => write!(f, "{step} the lock row: {r:?}"),
            RowFailure::Call(e) => write!(f, "{step} the lock row: {e}"),
        }
    }
}

impl DbLock {
    /// A client of `db-0`.
    pub(crate) fn new(p: DbParams) -> DbLock {
        // A pool tests a connection idle for half the server's wait_timeout.
        let idle_test = Duration::from_millis((p.wait_timeout_ms / 2).max(1));
        DbLock {
            timeout: Duration::from_millis(p.request_timeout_ms),
            session: Session::with_hosts(&p.db_hosts(), idle_test), // failover: db-0[, db-1]
            p,
            row_ready: false,
            last_owner: None,
            txn: None,
        }
    }

    fn grant(&self, lock: &str, owner: &str, token: Option<u64>, start_ns: i64) -> Grant {
        let valid_until = self.p.ttl().map(|ttl| {
            let ttl = ttl as f64 * 1e6;
            let drift = ttl * self.p.drift_factor + 2e6;
            Rc::new(Cell::new(start_ns + (ttl - drift) as i64))
        });
        let token = if self.p.token() == Token::None {
            None
        } else {
            token
        };
        Grant {
            lock: lock.to_string(),
            token,
            owner_value: owner.to_string(),
            valid_until,
        }
    }

    /// The owner condition of a release: by owner, or none (by name).
    fn release_owner(&self, owner: &str) -> Option<String> {
        match self.p.release {
            Release::ByOwner => Some(owner.to_string()),
            Release::ByName => None,
        }
    }

    /// Make sure the lock's row exists (for-update, optimistic): read it, insert it if
    /// missing. Returns why not, if it could not.
    async fn ensure_row(&mut self, ctx: &NodeCtx, lock: &str) -> Result<(), RowError> {
        if self.row_ready {
            return Ok(());
        }
        let select = Statement::Select {
            name: lock.to_string(),
            for_update: false,
            nextval: None,
        };
        match self.session.call(ctx, &select, self.timeout).await {
            Ok(Reply::Row { row: Some(_), .. }) => {}
            Ok(Reply::Row { row: None, .. }) => {
                let insert = Statement::Insert {
                    name: lock.to_string(),
                    owner: String::new(),
                };
                match self.session.call(ctx, &insert, self.timeout).await {
                    Ok(Reply::Ok { .. }) => {}
                    Ok(r) if r.code() == Some(ER_DUP_ENTRY) => {}
                    Ok(r) => return Err(RowError::Creating(RowFailure::Reply(r))),
                    Err(e) => return Err(RowError::Creating(RowFailure::Call(e))),
                }
            }
            Ok(r) => return Err(RowError::Reading(RowFailure::Reply(r))),
            Err(e) => return Err(RowError::Reading(RowFailure::Call(e))),
        }
        self.row_ready = true;
        Ok(())
    }

    async fn try_unique_row(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        owner: &str,
    ) -> Result<Attempt, LockError> {
        let start = ctx.mono_ns();
        let insert = Statement::Insert {
            name: lock.to_string(),
            owner: owner.to_string(),
        };
        match self.session.call(ctx, &insert, self.timeout).await {
            Ok(Reply::Ok { insert_id, .. }) => {
                Ok(Attempt::Granted(self.grant(lock, owner, insert_id, start)))
            }
            Ok(r) if r.code() == Some(ER_DUP_ENTRY) => Ok(Attempt::Busy("duplicate entry".into())),
            Ok(r) => Ok(Attempt::Busy(format!("{r:?}"))),
            Err(e) => lost(e, "INSERT"),
        }
    }

    async fn try_optimistic(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        owner: &str,
    ) -> Result<Attempt, LockError> {
        if let Err(why) = self.ensure_row(ctx, lock).await {
            return Ok(Attempt::Busy(why.to_string()));
        }
        let select = Statement::Select {
            name: lock.to_string(),
            for_update: false,
            nextval: None,
        };
        let row = match self.session.call(ctx, &select, self.timeout).await {
            Ok(Reply::Row { row: Some(row), .. }) => row,
            Ok(Reply::Row { row: None, .. }) => {
                self.row_ready = false;
                return Ok(Attempt::Busy("no lock row".into()));
            }
            Ok(r) => return Ok(Attempt::Busy(format!("{r:?}"))),
            // A read has no effect.
            Err(e) => return Ok(Attempt::Busy(e.to_string())),
        };
        let start = ctx.mono_ns();
        let cas = Statement::Update {
            name: lock.to_string(),
            cond: Cond {
                version: Some(row.version),
                free_or_older_than_ms: self.p.ttl(),
                ..Cond::default()
            },
            set: Set {
                owner: Some(owner.to_string()),
                bump_version: true,
                touch: true,
            },
        };
        match self.session.call(ctx, &cas, self.timeout).await {
            Ok(Reply::Ok { affected: 1, .. }) => Ok(Attempt::Granted(self.grant(
                lock,
                owner,
                Some(row.version + 1),
                start,
            ))),
            Ok(Reply::Ok { .. }) if row.owner.is_empty() => {
                Ok(Attempt::Busy("the version moved on".into()))
            }
            Ok(Reply::Ok { .. }) => Ok(Attempt::Busy(format!("held by {}", row.owner))),
            Ok(r) => Ok(Attempt::Busy(format!("{r:?}"))),
            Err(e) => lost(e, "UPDATE"),
        }
    }

    async fn try_for_update(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        owner: &str,
    ) -> Result<Attempt, LockError> {
        if let Err(why) = self.ensure_row(ctx, lock).await {
            return Ok(Attempt::Busy(why.to_string()));
        }
        match self
            .session
            .call(ctx, &Statement::Begin, self.timeout)
            .await
        {
            Ok(Reply::Ok { .. }) => {}
            Ok(r) => return Ok(Attempt::Busy(format!("BEGIN: {r:?}"))),
            // A BEGIN takes nothing; its connection is gone, and with it the transaction.
            Err(e) => return Ok(Attempt::Busy(format!("BEGIN: {e}"))),
        }
        let gen = self.session.generation();
        self.txn = Some((gen, false));
        let lock_wait = Duration::from_millis(self.p.lock_wait_timeout_ms);
        let mut start = ctx.mono_ns();
        // The sequence value is drawn in the locking read itself, so every grant has
        // one even when its reply is lost (a NEXTVAL after the grant would leave a
        // granted, tokenless hold behind a lost reply).
        let select = Statement::Select {
            name: lock.to_string(),
            for_update: true,
            nextval: (self.p.token() == Token::Sequence).then(|| TOKEN_SEQ.to_string()),
        };
        let (row, nextval) = match self
            .session
            .call_in_txn(ctx, gen, &select, self.timeout + lock_wait)
            .await
        {
            Ok(Reply::Row {
                row: Some(row),
                nextval,
            }) => (row, nextval),
            Ok(r) => {
                // 1205 (lock wait timeout), or no row: end the transaction and retry.
                if matches!(r, Reply::Row { row: None, .. }) {
                    self.row_ready = false;
                }
                let _ = self
                    .session
                    .call_in_txn(ctx, gen, &Statement::Rollback, self.timeout)
                    .await;
                self.txn = None;
                return Ok(Attempt::Busy(match r.code() {
                    Some(ER_LOCK_WAIT_TIMEOUT) => "lock wait timeout (1205)".into(),
                    _ => format!("SELECT ... FOR UPDATE: {r:?}"),
                }));
            }
            Err(e) => return lost(e, "SELECT ... FOR UPDATE"),
        };
        self.txn = Some((gen, true));
        let token = match self.p.token() {
            Token::None | Token::Id => None,
            Token::Sequence => nextval,
            Token::Version => {
                start = ctx.mono_ns();
                let bump = Statement::Update {
                    name: lock.to_string(),
                    cond: Cond::default(),
                    set: Set {
                        bump_version: true,
                        ..Set::default()
                    },
                };
                // The row lock is ours: nobody else can move the version meanwhile.
                match self
                    .session
                    .call_in_txn(ctx, gen, &bump, self.timeout)
                    .await
                {
                    Ok(Reply::Ok { affected: 1, .. }) => Some(row.version + 1),
                    Ok(r) => return Err(LockError::Indeterminate(format!("UPDATE: {r:?}"))),
                    Err(e) => return Err(LockError::Indeterminate(format!("UPDATE: {e}"))),
                }
            }
        };
        Ok(Attempt::Granted(self.grant(lock, owner, token, start)))
    }

    /// named-lock: `GET_LOCK` waiting up to the acquire's remaining time (0 for a try),
    /// then the token drawn on the same session. The session holds the lock until it
    /// releases it or ends, so a sequence value drawn on it while it lives is larger
    /// than any earlier holder's and smaller than any later one's.
    async fn try_named_lock(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        owner: &str,
        wait_ns: i64,
    ) -> Result<Attempt, LockError> {
        let start = ctx.mono_ns();
        let get = Statement::GetLock {
            name: lock.to_string(),
            timeout_ns: wait_ns,
        };
        // The server may wait `wait_ns` before it answers: the socket timeout covers it.
        let timeout = self.timeout + Duration::from_nanos(wait_ns as u64);
        match self.session.call(ctx, &get, timeout).await {
            Ok(Reply::Scalar(Some(1))) => {}
            Ok(Reply::Scalar(Some(0))) => return Ok(Attempt::Busy("GET_LOCK returned 0".into())),
            Ok(r) => return Ok(Attempt::Busy(format!("GET_LOCK: {r:?}"))),
            // A lost reply may hide a grant; the session dropped its connection, so the
            // server releases that grant once it sees the close (or at wait_timeout).
            Err(e) => return lost(e, "GET_LOCK"),
        }
        let gen = self.session.generation();
        self.txn = Some((gen, true));
        let token = match self.p.token() {
            Token::Sequence => {
                let next = Statement::NextVal {
                    seq: TOKEN_SEQ.to_string(),
                };
                // Held but tokenless if this fails: the abandon releases it.
                match self
                    .session
                    .call_in_txn(ctx, gen, &next, self.timeout)
                    .await
                {
                    Ok(Reply::Value(v)) => Some(v),
                    Ok(r) => return Err(LockError::Indeterminate(format!("NEXTVAL: {r:?}"))),
                    Err(e) => return Err(LockError::Indeterminate(format!("NEXTVAL: {e}"))),
                }
            }
            _ => None,
        };
        Ok(Attempt::Granted(self.grant(lock, owner, token, start)))
    }

    async fn acquire_impl(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        wait: Wait,
    ) -> Result<Grant, LockError> {
        let owner = format!("{}:{:016x}", ctx.name(), ctx.rand_u64());
        self.last_owner = Some(owner.clone());
        self.txn = None;
        let deadline = wait.deadline_ns(ctx);
        loop {
            let attempt = match self.p.scheme {
                Scheme::UniqueRow => self.try_unique_row(ctx, lock, &owner).await?,
                Scheme::ForUpdate => self.try_for_update(ctx, lock, &owner).await?,
                Scheme::Optimistic => self.try_optimistic(ctx, lock, &owner).await?,
                Scheme::NamedLock => {
                    let wait_ns = if wait.once() {
                        0
                    } else {
                        (deadline - ctx.mono_ns()).max(0)
                    };
                    self.try_named_lock(ctx, lock, &owner, wait_ns).await?
                }
            };
            let why = match attempt {
                Attempt::Granted(g) => return Ok(g),
                Attempt::Busy(why) => why,
            };
            if wait.once() || ctx.mono_ns() >= deadline {
                return Err(LockError::Failed(wait.gave_up(&why)));
            }
            ctx.sleep_ms_in(*self.p.retry_delay_ms).await;
        }
    }

    /// Release the row of `owner` (unique-row, optimistic), by owner or by name.
    async fn release_row(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        owner: &str,
    ) -> Result<bool, LockError> {
        let stmt = match self.p.scheme {
            Scheme::UniqueRow => Statement::Delete {
                name: lock.to_string(),
                owner: self.release_owner(owner),
            },
            _ => Statement::Update {
                name: lock.to_string(),
                cond: Cond {
                    owner: self.release_owner(owner),
                    ..Cond::default()
                },
                set: Set {
                    owner: Some(String::new()),
                    ..Set::default()
                },
            },
        };
        match self.session.call(ctx, &stmt, self.timeout).await {
            Ok(Reply::Ok { affected, .. }) => Ok(affected > 0),
            Ok(r) => Err(LockError::Failed(format!("{r:?}"))),
            Err(e) if e.maybe_applied() => Err(LockError::Indeterminate(e.to_string())),
            Err(e) => Err(LockError::Failed(e.to_string())),
        }
    }

    /// End the for-update transaction with `stmt` (`COMMIT` to release, `ROLLBACK` to
    /// abandon), or a named lock's hold with `RELEASE_LOCK` (1: released; 0: another
    /// session's; NULL: nobody's). `Ok(false)` when its connection, and so the
    /// transaction or the session's named lock, is gone.
    async fn end_txn(&mut self, ctx: &NodeCtx, stmt: Statement) -> Result<bool, LockError> {
        let Some((gen, held)) = self.txn.take() else {
            return Ok(false);
        };
        match self
            .session
            .call_in_txn(ctx, gen, &stmt, self.timeout)
            .await
        {
            Ok(Reply::Ok { .. }) | Ok(Reply::Scalar(Some(1))) => Ok(held),
            // RELEASE_LOCK: the lock is not this session's (any more).
            Ok(Reply::Scalar(Some(0) | None)) => Ok(false),
            Ok(r) => Err(LockError::Failed(format!("{r:?}"))),
            // The server rolled it back (or released the named lock) when the connection went (an `expire` there).
            Err(CallError::Connect(_)) => Ok(false),
            Err(e) => Err(LockError::Indeterminate(e.to_string())),
        }
    }
}

/// A lock-changing statement's reply was lost: the attempt's outcome is unknown, and
/// the operation ends here (retrying inside it would hide a grant from the history).
/// A refused connection sent nothing: just a busy attempt.
fn lost(e: CallError, what: &str) -> Result<Attempt, LockError> {
    if e.maybe_applied() {
        Err(LockError::Indeterminate(format!("{what}: {e}")))
    } else {
        Ok(Attempt::Busy(format!("{what}: {e}")))
    }
}

impl LockClient for DbLock {
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        wait: Wait,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(self.acquire_impl(ctx, lock, wait))
    }

    fn release<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            match self.p.scheme {
                Scheme::ForUpdate => self.end_txn(ctx, Statement::Commit).await,
                Scheme::NamedLock => {
                    let stmt = Statement::ReleaseLock {
                        name: grant.lock.clone(),
                    };
                    self.end_txn(ctx, stmt).await
                }
                _ => self.release_row(ctx, &grant.lock, &grant.owner_value).await,
            }
        })
    }

    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            match (self.p.scheme, self.last_owner.clone()) {
                (Scheme::ForUpdate, _) => self.end_txn(ctx, Statement::Rollback).await,
                // Granted (a lost NEXTVAL): release it; a lost GET_LOCK reply dropped the
                // connection, and the server releases whatever it granted on it.
                (Scheme::NamedLock, _) => {
                    let stmt = Statement::ReleaseLock {
                        name: lock.to_string(),
                    };
                    self.end_txn(ctx, stmt).await
                }
                (_, Some(owner)) => self.release_row(ctx, lock, &owner).await,
                (_, None) => Ok(false),
            }
        })
    }
}
