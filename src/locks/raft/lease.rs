//! The leader-local part of leases: etcd's *lessor* (`server/lease/lessor.go`), which
//! decides on the leader's own clock when a lease has expired.
//!
//! What is replicated (a lease's id, TTL and attached keys) lives in [`super::kv::Store`];
//! what is not lives here, on one node, in that node's local monotonic time (ns):
//!
//! * Only the **primary** lessor (the Raft leader's) tracks expiries. A lessor is promoted
//!   when its node, as leader, applies the empty entry of its term — etcd's
//!   `applyEntryNormal`: "promote lessor when the local member is leader and finished
//!   applying all entries from the last term" — and `Promote(extend)` sets every lease's
//!   expiry to `now + extend + TTL`, `extend` being the election timeout
//!   (`s.Cfg.ElectionTimeout()`), so leases survive a leader change (a client gets at
//!   least a full TTL to reach the new leader). It is demoted when the node stops being
//!   leader (`updateLeadership` → `Demote`): expiries become "forever".
//! * A lease granted while primary expires `TTL` after its grant is *applied* there
//!   (`Grant` → `refresh(0)`).
//! * `renew` (LeaseKeepAlive) is answered by the primary alone, from its clock, without
//!   going through the log — so a deposed leader that still believes it leads renews
//!   leases the real leader knows nothing of (catalogue row 18). A renew of an expired
//!   lease fails with [`LeaseError::Expired`] and the node holds the request, as etcd's
//!   `Renew` blocks, until the revoke is applied or the lessor is demoted.
//! * [`Lessor::expired`] lists the leases past their expiry; the node proposes a
//!   `LeaseRevoke` for each, and every node deletes the keys when the revoke is applied. A
//!   lease is listed again `retry` after each listing until the revoke applies (etcd's
//!   `expiredLeaseRetryInterval`). etcd's server sets it to its request timeout,
//!   `ReqTimeout() = 5 s + 2 × election timeout` (7 s with the default 1 s election
//!   timeout); the lessor's own 3 s default (`defaultExpiredleaseRetryInterval`) applies
//!   only when that is left 0, as in etcd's unit tests. Here it is the `revoke_retry_ms`
//!   key, by default that request timeout scaled to the cluster's election timeout
//!   ([`super::params::RaftParams::revoke_retry_ms`]); a retry is a second proposal of the
//!   same revoke, and applying a revoke of a lease already gone changes nothing.
//! * Not modelled: checkpoints of the remaining TTL (etcd's default interval is 5 min, so
//!   they never fire for short leases) and the revoke rate limit.
//!
//! # What the node must provide (`lessor_check`)
//!
//! etcd's `revokeExpiredLeases` (PR #16822, issue #15247) revokes only if
//! `ensureLeadership()`: true at once when the node's Raft loop ticked within the last
//! 3 ticks ([`ticked_recently`], etcd's `isActive`: `latestTickTs + 3 × TickMs > now`);
//! otherwise the node runs a ReadIndex round and revokes only if the read succeeds and the
//! Raft leader is still itself. So the node must record the local monotonic time of its
//! last [`crate::consensus::core::RaftCore::tick`], pass its local monotonic time to every lessor
//! call, and with `lessor_check = "none"` propose revokes without either check.

use super::kv::{LeaseId, Store};
use std::collections::BTreeMap;
use std::fmt;

/// Why a renew failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseError {
    /// This node's lessor is not the primary (etcd `ErrNotPrimary`): ask the leader.
    NotPrimary,
    /// No such lease (etcd `ErrLeaseNotFound`).
    NotFound,
    /// The lease is past its expiry and waiting to be revoked.
    Expired,
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseError::NotPrimary => write!(f, "not a primary lessor"),
            LeaseError::NotFound => write!(f, "lease not found"),
            LeaseError::Expired => write!(f, "lease expired"),
        }
    }
}

impl std::error::Error for LeaseError {}

/// etcd's `isActive`: the Raft loop ticked within the last 3 ticks (local ns).
pub(crate) fn ticked_recently(last_tick_ns: i64, now_ns: i64, tick_ms: u64) -> bool {
    last_tick_ns + 3 * tick_ms as i64 * 1_000_000 > now_ns
}

/// One node's lessor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lessor {
    primary: bool,
    /// Expiry per lease (local ns), only while primary.
    expiry: BTreeMap<LeaseId, i64>,
    /// When an expired lease may be listed again.
    relist: BTreeMap<LeaseId, i64>,
    retry_ns: i64,
}

impl Lessor {
    /// A demoted lessor; expired leases are listed again every `retry_ns`.
    pub(crate) fn new(retry_ns: i64) -> Lessor {
        Lessor {
            primary: false,
            expiry: BTreeMap::new(),
            relist: BTreeMap::new(),
            retry_ns,
        }
    }

    /// Whether this is the primary lessor.
    pub(crate) fn is_primary(&self) -> bool {
        self.primary
    }

    /// Become primary: every lease in `store` expires `extend_ns + TTL` from `now_ns`.
    pub(crate) fn promote(&mut self, store: &Store, now_ns: i64, extend_ns: i64) {
        self.primary = true;
        self.expiry = store
            .leases()
            .map(|(id, l)| (id, now_ns + extend_ns + ms(l.ttl_ms)))
            .collect();
        self.relist.clear();
    }

    /// Stop being primary: no expiries.
    pub(crate) fn demote(&mut self) {
        self.primary = false;
        self.expiry.clear();
        self.relist.clear();
    }

    /// A grant of `id` with `ttl_ms` was applied at `now_ns`.
    pub(crate) fn granted(&mut self, id: LeaseId, ttl_ms: u64, now_ns: i64) {
        if self.primary {
            self.expiry.insert(id, now_ns + ms(ttl_ms));
        }
    }

    /// A revoke of `id` was applied.
    pub(crate) fn revoked(&mut self, id: LeaseId) {
        self.expiry.remove(&id);
        self.relist.remove(&id);
    }

    /// LeaseKeepAlive: the lease now expires a full TTL from `now_ns`. Returns the TTL, ms.
    pub(crate) fn renew(
        &mut self,
        store: &Store,
        id: LeaseId,
        now_ns: i64,
    ) -> Result<u64, LeaseError> {
        if !self.primary {
            return Err(LeaseError::NotPrimary);
        }
        let lease = store.lease(id).ok_or(LeaseError::NotFound)?;
        let expiry = self.expiry.get_mut(&id).ok_or(LeaseError::NotFound)?;
        if *expiry <= now_ns {
            return Err(LeaseError::Expired);
        }
        *expiry = now_ns + ms(lease.ttl_ms);
        Ok(lease.ttl_ms)
    }

    /// Time left on lease `id` at `now_ns` (primary only; may be ≤ 0 once expired).
    pub(crate) fn remaining_ns(&self, id: LeaseId, now_ns: i64) -> Option<i64> {
        self.expiry.get(&id).map(|e| e - now_ns)
    }

    /// Leases past their expiry at `now_ns` that were not listed within the last
    /// `retry`, in id order: propose a `LeaseRevoke` for each.
    pub(crate) fn expired(&mut self, now_ns: i64) -> Vec<LeaseId> {
        if !self.primary {
            return Vec::new();
        }
        let due: Vec<LeaseId> = self
            .expiry
            .iter()
            .filter(|&(id, &e)| {
                e <= now_ns && !matches!(self.relist.get(id), Some(&r) if r > now_ns)
            })
            .map(|(&id, _)| id)
            .collect();
        for &id in &due {
            self.relist.insert(id, now_ns + self.retry_ns);
        }
        due
    }
}

fn ms(ms: u64) -> i64 {
    ms as i64 * 1_000_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::raft::kv::Request;

    const MS: i64 = 1_000_000;

    fn store_with(leases: &[(LeaseId, u64)]) -> Store {
        let mut s = Store::new(150);
        for (i, &(id, ttl_ms)) in leases.iter().enumerate() {
            s.apply(i as u64 + 1, &Request::LeaseGrant { id, ttl_ms })
                .unwrap();
        }
        s
    }

    #[test]
    fn only_the_primary_tracks_and_renews() {
        let s = store_with(&[(1, 1000)]);
        let mut l = Lessor::new(300 * MS);
        l.granted(1, 1000, 0);
        assert_eq!(l.renew(&s, 1, 0), Err(LeaseError::NotPrimary));
        assert!(l.expired(i64::MAX).is_empty());
        assert_eq!(l.remaining_ns(1, 0), None, "forever while not primary");
        l.promote(&s, 5_000 * MS, 100 * MS);
        assert_eq!(
            l.remaining_ns(1, 5_000 * MS),
            Some(1_100 * MS),
            "TTL + extend"
        );
        assert_eq!(l.renew(&s, 1, 5_500 * MS), Ok(1000));
        assert_eq!(l.remaining_ns(1, 5_500 * MS), Some(1_000 * MS));
        assert_eq!(l.renew(&s, 2, 5_500 * MS), Err(LeaseError::NotFound));
        l.demote();
        assert_eq!(l.renew(&s, 1, 5_500 * MS), Err(LeaseError::NotPrimary));
    }

    #[test]
    fn expiry_lists_then_relists_until_revoked() {
        let s = store_with(&[(1, 200), (2, 1000)]);
        let mut l = Lessor::new(300 * MS);
        l.promote(&s, 0, 100 * MS);
        assert!(l.expired(299 * MS).is_empty());
        assert_eq!(l.expired(300 * MS), vec![1]);
        assert!(
            l.expired(400 * MS).is_empty(),
            "listed once per retry interval"
        );
        assert_eq!(l.renew(&s, 1, 400 * MS), Err(LeaseError::Expired));
        assert_eq!(l.expired(600 * MS), vec![1]);
        l.revoked(1);
        assert!(l.expired(700 * MS).is_empty());
        assert_eq!(l.expired(1_100 * MS), vec![2]);
        // A grant applied on the primary expires a TTL later.
        l.granted(3, 500, 2_000 * MS);
        assert_eq!(l.expired(2_500 * MS), vec![2, 3]);
    }

    #[test]
    fn ticked_recently_is_three_ticks() {
        assert!(ticked_recently(0, 29 * MS, 10));
        assert!(!ticked_recently(0, 30 * MS, 10));
    }
}
