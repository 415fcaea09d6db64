//! The server's session tracker: ZooKeeper's `SessionTrackerImpl` over an `ExpiryQueue`
//! (apache/zookeeper, read at 53a78e36f), as a pure structure driven by the server's
//! *local monotonic* clock (ZooKeeper uses `Time.currentElapsedTime()`, i.e. `nanoTime`).
//!
//! Sessions live in buckets of one tick (`expirationInterval = tickTime`): a touch at
//! local time `now` moves a session to the bucket `roundToNextInterval(now + timeout)`
//! = `((now + timeout) / tick + 1) × tick` (only ever later). The expirer wakes at each
//! bucket's time and expires the whole bucket, marking its sessions closing
//! (`setSessionClosing`) so a late touch cannot revive them; the server then runs
//! `closeSession` through its write path. A session is therefore expired between
//! `timeout` and `timeout + tick` after the last request the server received from it,
//! measured on the server's clock: a drifting or paused server expires early or late.
//!
//! In an ensemble only the leader tracks expiry (`LeaderSessionTracker`): followers
//! forward the sessions their clients touched, and a new leader starts every session
//! over with a full timeout, as ZooKeeper's leader does when it loads its database.

use super::tree::SessionId;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tracked {
    timeout_ns: i64,
    bucket: i64,
    /// Local time the session was marked closing, if it was.
    closing_since: Option<i64>,
}

/// Sessions and their expiry buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionTracker {
    interval_ns: i64,
    sessions: BTreeMap<SessionId, Tracked>,
    buckets: BTreeMap<i64, BTreeSet<SessionId>>,
}

impl SessionTracker {
    /// A tracker with buckets of `tick_ms`.
    pub(crate) fn new(tick_ms: u64) -> SessionTracker {
        SessionTracker {
            interval_ns: tick_ms as i64 * 1_000_000,
            sessions: BTreeMap::new(),
            buckets: BTreeMap::new(),
        }
    }

    fn round(&self, t: i64) -> i64 {
        (t.div_euclid(self.interval_ns) + 1) * self.interval_ns
    }

    /// Track `session` with `timeout_ms`, touched at `now` (a new session, or every
    /// session when a server starts or a leader takes over).
    pub(crate) fn add(&mut self, session: SessionId, timeout_ms: u64, now: i64) {
        self.remove(session);
        let timeout_ns = timeout_ms as i64 * 1_000_000;
        let bucket = self.round(now + timeout_ns);
        self.sessions.insert(
            session,
            Tracked {
                timeout_ns,
                bucket,
                closing_since: None,
            },
        );
        self.buckets.entry(bucket).or_default().insert(session);
    }

    /// The server heard from `session` at `now`. False if the session is unknown or
    /// closing (ZooKeeper then answers `SessionExpired`).
    pub(crate) fn touch(&mut self, session: SessionId, now: i64) -> bool {
        let interval = self.interval_ns;
        let round = |t: i64| (t.div_euclid(interval) + 1) * interval;
        let Some(s) = self.sessions.get_mut(&session) else {
            return false;
        };
        if s.closing_since.is_some() {
            return false;
        }
        let bucket = round(now + s.timeout_ns);
        if bucket > s.bucket {
            let old = std::mem::replace(&mut s.bucket, bucket);
            if let Some(set) = self.buckets.get_mut(&old) {
                set.remove(&session);
                if set.is_empty() {
                    self.buckets.remove(&old);
                }
            }
            self.buckets.entry(bucket).or_default().insert(session);
        }
        true
    }

    /// Stop tracking `session` (it was closed).
    pub(crate) fn remove(&mut self, session: SessionId) {
        if let Some(s) = self.sessions.remove(&session) {
            if let Some(set) = self.buckets.get_mut(&s.bucket) {
                set.remove(&session);
                if set.is_empty() {
                    self.buckets.remove(&s.bucket);
                }
            }
        }
    }

    /// Whether `session` is tracked and not closing.
    #[cfg(test)]
    pub(crate) fn is_live(&self, session: SessionId) -> bool {
        self.sessions
            .get(&session)
            .is_some_and(|s| s.closing_since.is_none())
    }

    /// The local time of the next bucket to expire, if any.
    #[cfg(test)]
    pub(crate) fn next_expiration(&self) -> Option<i64> {
        self.buckets.keys().next().copied()
    }

    /// Expire every bucket due at `now`: the sessions are marked closing and returned,
    /// in bucket then id order.
    pub(crate) fn expire(&mut self, now: i64) -> Vec<SessionId> {
        let mut out = Vec::new();
        while let Some(entry) = self.buckets.first_entry() {
            if *entry.key() > now {
                break;
            }
            for id in entry.remove() {
                if let Some(s) = self.sessions.get_mut(&id) {
                    s.closing_since = Some(now);
                }
                out.push(id);
            }
        }
        out
    }

    /// Sessions marked closing at least `after_ns` ago (their `closeSession` was lost:
    /// an ensemble proposes it again); their mark is renewed to `now`.
    pub(crate) fn stale_closing(&mut self, now: i64, after_ns: i64) -> Vec<SessionId> {
        let mut out = Vec::new();
        for (id, s) in self.sessions.iter_mut() {
            if let Some(since) = s.closing_since {
                if now - since >= after_ns {
                    s.closing_since = Some(now);
                    out.push(*id);
                }
            }
        }
        out
    }

    /// Whether no session is tracked.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn a_session_expires_between_timeout_and_timeout_plus_a_tick_after_its_last_touch() {
        let mut t = SessionTracker::new(100);
        t.add(1, 1000, 0);
        // Bucket: (0 + 1000) / 100 + 1 = 11 ticks.
        assert_eq!(t.next_expiration(), Some(1100 * MS));
        assert!(t.touch(1, 450 * MS));
        assert_eq!(t.next_expiration(), Some(1500 * MS));
        assert!(t.expire(1499 * MS).is_empty());
        assert_eq!(t.expire(1500 * MS), vec![1]);
        // Closing: a late touch does not revive it.
        assert!(!t.touch(1, 1501 * MS));
        assert!(!t.is_live(1));
        assert_eq!(t.stale_closing(1600 * MS, 200 * MS), Vec::<u64>::new());
        assert_eq!(t.stale_closing(1700 * MS, 200 * MS), vec![1]);
        t.remove(1);
        assert!(t.is_empty());
        assert!(!t.touch(1, 1800 * MS));
    }

    #[test]
    fn touches_only_move_sessions_later_and_buckets_expire_together() {
        let mut t = SessionTracker::new(100);
        t.add(1, 1000, 0);
        t.add(2, 1000, 50 * MS);
        assert_eq!(t.next_expiration(), Some(1100 * MS));
        assert_eq!(t.expire(1100 * MS), vec![1, 2]);
        t.add(3, 2000, 0);
        assert!(t.touch(3, 0));
        assert_eq!(t.next_expiration(), Some(2100 * MS));
    }
}
