//! The lock table: exclusive locks on rows, on the whole table (a locking scan that no
//! index narrows) and on `GET_LOCK` names, each with a FIFO queue of waiters, and the
//! deadlock check a wait makes before it queues.

use super::*;

/// What a session locks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum LockKey {
    /// The row with this `name` (or, for a missing row, the name an `INSERT` claims).
    Row(String),
    /// Every row and every gap: a locking statement whose `WHERE` uses no index
    /// (InnoDB's next-key locks on a full scan).
    Table,
    /// A named lock (`GET_LOCK`), the session's rather than the transaction's.
    Named(String),
}

impl Db {
    /// The lock `conn` must wait for before it may lock row `name`: the table lock or
    /// the row lock another transaction holds.
    pub(super) fn row_blocker(&self, conn: ConnId, name: &str) -> Option<LockKey> {
        if self.held_by_other(conn, &LockKey::Table) {
            return Some(LockKey::Table);
        }
        let key = LockKey::Row(name.to_string());
        self.held_by_other(conn, &key).then_some(key)
    }

    /// The lock `conn` must wait for before it may lock the whole table: the table lock
    /// or the first row lock another transaction holds.
    pub(super) fn table_blocker(&self, conn: ConnId) -> Option<LockKey> {
        if self.held_by_other(conn, &LockKey::Table) {
            return Some(LockKey::Table);
        }
        self.locks
            .iter()
            .find(|(k, l)| matches!(k, LockKey::Row(_)) && l.holder != conn)
            .map(|(k, _)| k.clone())
    }

    /// Whether another session holds `key`.
    pub(super) fn held_by_other(&self, conn: ConnId, key: &LockKey) -> bool {
        self.locks.get(key).is_some_and(|l| l.holder != conn)
    }

    /// Lock `key` for `conn`'s transaction (it must be free or `conn`'s).
    pub(super) fn take_lock(&mut self, conn: ConnId, key: LockKey) {
        self.locks.entry(key.clone()).or_insert(RowLock {
            holder: conn,
            waiters: VecDeque::new(),
        });
        let s = self.sessions.get_mut(&conn).expect("live session");
        s.locks.insert(key);
    }

    /// Release every transactional lock of `conn`, each to the first waiter in line.
    pub(super) fn release_locks(&mut self, conn: ConnId) {
        let s = self.sessions.get_mut(&conn).expect("live session");
        for key in std::mem::take(&mut s.locks) {
            self.hand_on(key);
        }
    }

    /// Give the lock `key` to the first waiter in line, or free it.
    pub(super) fn hand_on(&mut self, key: LockKey) {
        let l = self.locks.get_mut(&key).expect("held locks exist");
        match l.waiters.pop_front() {
            Some(next) => {
                l.holder = next;
                self.grants.push_back((next, key));
            }
            None => {
                self.locks.remove(&key);
            }
        }
    }

    /// Queue `conn`'s statement behind the holder of `on`, or, when that wait would
    /// close a cycle of waits, fail it at once with 1213: the requester is the victim
    /// (InnoDB's choice when the transactions weigh the same) and its transaction rolls
    /// back. The reply is that error; `None` when it waits.
    pub(super) fn wait(
        &mut self,
        conn: ConnId,
        stmt: Statement,
        projection: Option<Projection>,
        on: LockKey,
        deadline_ns: i64,
    ) -> Option<Reply> {
        if self.closes_cycle(conn, &on) {
            let reply = Reply::error(
                ER_LOCK_DEADLOCK,
                "ER_LOCK_DEADLOCK",
                "Deadlock found when trying to get lock; try restarting transaction",
            );
            // A named lock is no part of the transaction: only the GET_LOCK fails.
            if !matches!(on, LockKey::Named(_)) {
                self.rollback(conn, false);
            }
            return Some(reply);
        }
        self.locks
            .get_mut(&on)
            .expect("waits only on a held lock")
            .waiters
            .push_back(conn);
        let s = self.sessions.get_mut(&conn).expect("live session");
        s.waiting = Some(Waiting {
            stmt,
            projection,
            on,
            deadline_ns,
        });
        None
    }

    /// Whether `conn` waiting for `on` closes a cycle in the waits-for graph. Each
    /// session waits for at most one lock and each lock has one holder, so the graph is
    /// a chain from `on`'s holder.
    fn closes_cycle(&self, conn: ConnId, on: &LockKey) -> bool {
        let mut key = on.clone();
        for _ in 0..=self.sessions.len() {
            let Some(holder) = self.locks.get(&key).map(|l| l.holder) else {
                return false;
            };
            if holder == conn {
                return true;
            }
            match self.sessions.get(&holder).and_then(|s| s.waiting.as_ref()) {
                Some(w) => key = w.on.clone(),
                None => return false,
            }
        }
        false
    }
}
