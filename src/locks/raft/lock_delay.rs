//! Chubby's *lock-delay* on the etcd-like store (`lock_delay_ms`): when a lock is freed
//! because its holder's session failed — a `LeaseRevoke` deletes the key that owns it —
//! no one else may own that lock for `lock_delay_ms`. A release (a `Delete` of the key,
//! or a revoke of a key that only waited) frees it at once, as in Chubby.
//!
//! # How it is enforced
//!
//! etcd's lock recipe has no "grant" step the server could hold back: a waiter owns the
//! lock as soon as every key created before its own is gone (it waits for the deletion
//! of the previous key). So the delay must be a key. When a revoke deletes a lock's
//! holder key `P/<lease>`, the store puts in its place a *delay key*
//! `P/lock-delay-<lease>` with the holder's create revision (so it stays ahead of every
//! waiter) attached to a fresh *delay lease* of TTL `lock_delay_ms`, and records the
//! holder key's deletion (a waiter watching it reads again, finds the delay key and
//! waits for it). The delay lease expires like any lease: the primary lessor decides it
//! on the leader's clock and proposes its revoke, which deletes the delay key through
//! the log. The id of a delay lease has its top bit set (client leases have 63 bits), so
//! no client can renew it, and the stale holder's own `Delete(P/<lease>)` deletes
//! nothing.
//!
//! Why here, in the replicated state machine, and timed by the lessor: the delay is
//! between two log positions (the revoke and the delay key's revoke), so every replica
//! agrees at every index whether the lock may have a new owner, and reads served by any
//! node (ReadIndex or not) see the same thing. A delay measured by the waiter would run
//! on the clock of a process that may itself be paused or drifting; one measured by each
//! replica at apply time would let replicas disagree. The one clock that decides is the
//! one etcd already trusts with lease expiry, with the same failure modes: a new leader
//! extends every lease by an election timeout when it takes over, which only makes the
//! delay longer (the safe side).

use super::{Lease, LeaseId, Store, Write};
use std::collections::BTreeSet;

/// The bit that marks a delay lease.
const DELAY_LEASE: LeaseId = 1 << 63;

/// The name of a delay key's last segment.
const DELAY_KEY: &str = "lock-delay-";

/// Whether `id` is a delay lease (granted by a revoke, never by a client).
pub(crate) fn is_delay_lease(id: LeaseId) -> bool {
    id & DELAY_LEASE != 0
}

/// The delay lease a revoke at revision `rev` grants.
pub(crate) fn delay_lease_id(rev: u64) -> LeaseId {
    DELAY_LEASE | rev
}

/// The lock prefix of `key` (everything up to its last `/`, inclusive), if any.
fn lock_prefix(key: &str) -> Option<&str> {
    key.rfind('/').map(|i| &key[..=i])
}

impl Store {
    /// Set the lock-delay, ms (0: off).
    pub(crate) fn set_lock_delay_ms(&mut self, ms: u64) {
        self.lock_delay_ms = ms;
    }

    /// Whether `key` owns its lock: the first-created key under its prefix.
    fn owns_lock(&self, key: &str) -> bool {
        let Some(prefix) = lock_prefix(key) else {
            return false;
        };
        let Some(kv) = self.kvs.get(key) else {
            return false;
        };
        !self
            .kvs
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .any(|(_, other)| other.create_revision < kv.create_revision)
    }

    /// A revoke of lease `id` deletes `keys`: each key that owns its lock is replaced by
    /// a delay key on a new delay lease (when the delay is on and `id` is a client's
    /// lease); every key's deletion is recorded.
    pub(super) fn revoke_keys(&mut self, w: &mut Write, id: LeaseId, keys: &[String]) {
        let delayed: Vec<String> = if self.lock_delay_ms > 0 && !is_delay_lease(id) {
            keys.iter().filter(|k| self.owns_lock(k)).cloned().collect()
        } else {
            Vec::new()
        };
        let delay_id = delay_lease_id(w.rev);
        let mut delay_keys = BTreeSet::new();
        for k in keys {
            let holder = delayed.contains(k).then(|| self.kvs.get(k).cloned());
            self.delete_key(w, k);
            let Some(Some(mut kv)) = holder else {
                continue;
            };
            let Some(prefix) = lock_prefix(k) else {
                continue;
            };
            kv.key = format!("{prefix}{DELAY_KEY}{id:x}");
            kv.mod_revision = w.rev;
            kv.version = 1;
            kv.lease = delay_id;
            delay_keys.insert(kv.key.clone());
            self.record_put(w, kv, None);
        }
        if !delay_keys.is_empty() {
            tracing::debug!(lease = id, ?delay_keys, "lock-delay: holder keys kept");
            self.leases.insert(
                delay_id,
                Lease {
                    ttl_ms: self.lock_delay_ms,
                    keys: delay_keys,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::raft::kv::{
        DeleteRequest, DeleteResponse, KeySpec, PutRequest, RangeRequest, RangeResponse, Request,
        Response,
    };

    fn put(s: &mut Store, i: &mut u64, key: &str, lease: LeaseId) -> u64 {
        *i += 1;
        let r = s.apply(*i, &Request::Put(PutRequest::new(key, "", lease)));
        r.unwrap().revision()
    }

    fn apply(s: &mut Store, i: &mut u64, req: Request) -> Response {
        *i += 1;
        s.apply(*i, &req).unwrap()
    }

    /// A store with the delay on, leases 1 (holder of L) and 2 (waiter on L).
    fn two_keys() -> (Store, u64) {
        let mut s = Store::new(150);
        s.set_lock_delay_ms(1000);
        let mut i = 0;
        for id in [1, 2] {
            apply(&mut s, &mut i, Request::LeaseGrant { id, ttl_ms: 500 });
        }
        put(&mut s, &mut i, "L/1", 1);
        put(&mut s, &mut i, "L/2", 2);
        (s, i)
    }

    fn first_created(s: &Store, prefix: &str) -> RangeResponse {
        s.range(&RangeRequest::first_created(prefix)).unwrap()
    }

    fn first(s: &Store) -> String {
        first_created(s, "L/").kvs[0].key.clone()
    }

    fn delete(key: &str) -> Request {
        Request::DeleteRange(DeleteRequest::of(KeySpec::key(key)))
    }

    #[test]
    fn a_revoked_holder_leaves_a_delay_key_ahead_of_the_waiters() {
        let (mut s, mut i) = two_keys();
        let holder_rev = s.get("L/1").unwrap().create_revision;
        let r = apply(&mut s, &mut i, Request::lease_expiry(1));
        let rev = r.revision();
        assert!(s.get("L/1").is_none());
        assert_eq!(s.first_delete_at_or_after("L/1", 0), Some(rev));
        let delay = s.get("L/lock-delay-1").expect("a delay key");
        assert_eq!(delay.create_revision, holder_rev);
        assert_eq!(delay.lease, delay_lease_id(rev));
        assert!(is_delay_lease(delay.lease));
        assert_eq!(s.lease(delay_lease_id(rev)).unwrap().ttl_ms, 1000);
        assert_eq!(first(&s), "L/lock-delay-1", "the waiter does not own L");
        // The stale holder's unlock deletes nothing.
        let r = apply(&mut s, &mut i, delete("L/1"));
        assert!(matches!(
            r,
            Response::DeleteRange(DeleteResponse { deleted: 0, .. })
        ));
        // The delay lease's revoke frees the lock, with no further delay.
        let r = apply(&mut s, &mut i, Request::lease_expiry(delay_lease_id(rev)));
        assert_eq!(
            s.first_delete_at_or_after("L/lock-delay-1", 0),
            Some(r.revision())
        );
        assert_eq!(first(&s), "L/2");
        assert!(s.leases().all(|(id, _)| !is_delay_lease(id)));
    }

    #[test]
    fn releases_and_revoked_waiters_free_at_once() {
        let (mut s, mut i) = two_keys();
        // A waiter's revoke: nothing to delay.
        apply(&mut s, &mut i, Request::lease_expiry(2));
        assert_eq!(first_created(&s, "L/").count, 1);
        // A release.
        apply(&mut s, &mut i, delete("L/1"));
        assert_eq!(first_created(&s, "L/").count, 0);
        // Off: a revoked holder's key simply goes.
        let (mut s, mut i) = two_keys();
        s.set_lock_delay_ms(0);
        apply(&mut s, &mut i, Request::lease_expiry(1));
        assert_eq!(first(&s), "L/2");
    }

    #[test]
    fn keys_outside_a_lock_are_not_delayed() {
        let mut s = Store::new(150);
        s.set_lock_delay_ms(1000);
        let mut i = 0;
        apply(&mut s, &mut i, Request::LeaseGrant { id: 5, ttl_ms: 500 });
        put(&mut s, &mut i, "plain", 5);
        apply(&mut s, &mut i, Request::lease_expiry(5));
        assert_eq!(first_created(&s, "").count, 0);
    }
}
