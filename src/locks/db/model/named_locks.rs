//! MariaDB's named locks (`GET_LOCK`, `RELEASE_LOCK`, `IS_FREE_LOCK`, `IS_USED_LOCK`,
//! `RELEASE_ALL_LOCKS`): exclusive, re-entrant per session with a count, held by the
//! session rather than its transaction (COMMIT and ROLLBACK leave them), released when
//! the session ends — which the server announces as the end of that lock's hold.
//! A `GET_LOCK` that must wait queues in the same FIFO lock table as row locks.

use super::*;

impl Db {
    /// `GET_LOCK(name, timeout)`: 1 at once when free or already ours (one more
    /// re-entry), else wait (0 after the timeout, in the statement's deadline).
    pub(super) fn get_lock(&mut self, conn: ConnId, name: &str) -> Step {
        let key = LockKey::Named(name.to_string());
        if self.held_by_other(conn, &key) {
            return Step::Wait(key);
        }
        self.locks.entry(key).or_insert(RowLock {
            holder: conn,
            waiters: VecDeque::new(),
        });
        let s = self.sessions.get_mut(&conn).expect("live session");
        *s.named.entry(name.to_string()).or_default() += 1;
        Step::Done(Reply::Scalar(Some(1)))
    }

    /// `RELEASE_LOCK(name)`: 1 (one re-entry released), 0 when another session holds
    /// it, NULL when nobody does.
    pub(super) fn release_named(&mut self, conn: ConnId, name: &str) -> Step {
        let key = LockKey::Named(name.to_string());
        let Some(holder) = self.locks.get(&key).map(|l| l.holder) else {
            return Step::Done(Reply::Scalar(None));
        };
        if holder != conn {
            return Step::Done(Reply::Scalar(Some(0)));
        }
        let s = self.sessions.get_mut(&conn).expect("live session");
        let count = s.named.get_mut(name).expect("the holder counts its lock");
        *count -= 1;
        if *count == 0 {
            s.named.remove(name);
            self.hand_on(key);
        }
        Step::Done(Reply::Scalar(Some(1)))
    }

    /// `IS_FREE_LOCK(name)`: 1 when nobody holds it, else 0.
    pub(super) fn is_free_lock(&self, name: &str) -> Step {
        let used = self.locks.contains_key(&LockKey::Named(name.to_string()));
        Step::Done(Reply::Scalar(Some(i64::from(!used))))
    }

    /// `IS_USED_LOCK(name)`: the holder's connection id, or NULL.
    pub(super) fn is_used_lock(&self, name: &str) -> Step {
        let holder = self.locks.get(&LockKey::Named(name.to_string()));
        Step::Done(Reply::Scalar(holder.map(|l| l.holder as i64)))
    }

    /// `RELEASE_ALL_LOCKS()`: how many holds (re-entries counted) were released.
    pub(super) fn release_all_named(&mut self, conn: ConnId) -> Step {
        let s = self.sessions.get_mut(&conn).expect("live session");
        let named = std::mem::take(&mut s.named);
        let count: u32 = named.values().sum();
        for name in named.into_keys() {
            self.hand_on(LockKey::Named(name));
        }
        Step::Done(Reply::Scalar(Some(i64::from(count))))
    }

    /// The session ends: its named locks go to their next waiters, and each is a hold
    /// the server ended.
    pub(super) fn end_named_locks(&mut self, conn: ConnId) {
        let Some(s) = self.sessions.get_mut(&conn) else {
            return;
        };
        let named = std::mem::take(&mut s.named);
        for name in named.into_keys() {
            self.fx.expired.push(name.clone());
            self.hand_on(LockKey::Named(name));
        }
    }
}
