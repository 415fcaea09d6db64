//! The replicated part of the etcd-like service: a revisioned key-value store with leases,
//! applied from committed Raft entries. Pure and deterministic (`BTreeMap`s only).
//!
//! Semantics follow etcd v3's MVCC store (`server/storage/mvcc`) and apply layer
//! (`server/etcdserver/apply`), for the subset the etcd lock recipe
//! (`client/v3/concurrency/mutex.go`) and its sessions use:
//!
//! * **Revisions.** The store starts at revision 1 (an empty etcd cluster reports
//!   `header.revision = 1`, and its first put gets revision 2). Every write request (a
//!   `Put`, a `DeleteRange` that deleted something, a `Txn` whose chosen branch changed
//!   something, a `LeaseRevoke` that deleted keys) increments the revision by exactly one;
//!   every key it touches gets that revision. Requests that change nothing (a read-only
//!   txn, a delete of a missing key, a lease grant) leave it alone.
//! * **Per key.** `create_revision` is the revision of the put that created the key (since
//!   its last deletion), `mod_revision` that of its last put, `version` the number of puts
//!   since creation (1 after the first; a deleted key is gone, and a re-created one starts
//!   again at version 1 with a new `create_revision`).
//! * **Txn.** Every compare is evaluated against the state before the txn; a compare on a
//!   missing key sees `create_revision = mod_revision = version = lease = 0`, and a value
//!   compare on a missing key is false (etcd's `applyCompare`). The chosen branch's ops run
//!   in order; a range inside a txn sees the txn's earlier writes and reports the revision
//!   the txn will have. A put naming a lease that does not exist fails the whole request
//!   with [`ServiceError::LeaseNotFound`] and changes nothing (etcd checks the chosen
//!   branch before applying it).
//! * **Range.** One key, or every key with a prefix; `min/max_create_revision` filters;
//!   sort by key (default) or by create revision, ascending or descending (stable, ties in
//!   key order); `limit`. `count` is the number of keys in the range before the
//!   create-revision filters and the limit (as etcd's `rr.Count`); `more` says the limit
//!   cut the answer. The lock recipe's queries are ranges: `WithFirstCreate()` = prefix,
//!   sort by create ascending, limit 1 (the owner); `WithLastCreate() +
//!   WithMaxCreateRev(myRev - 1)` = prefix, sort by create descending, limit 1,
//!   `max_create_revision = myRev - 1` (the waiter just ahead, `waitDeletes`).
//! * **Leases.** `LeaseGrant` records a lease with its TTL, raised to the minimum TTL
//!   (⌈1.5 × election timeout⌉, etcd's `minLeaseTTL`); granting an existing id is
//!   [`ServiceError::LeaseExists`]. A put with a lease attaches the key (re-putting with
//!   another lease, or none, moves it). `LeaseRevoke` deletes every attached key, in key
//!   order, under one new revision (etcd's `lessor.Revoke`), then forgets the lease. *When*
//!   a lease expires is not decided here: the leader's lessor ([`super::lease`]) decides it
//!   on its own clock and proposes a revoke, which every node applies from the log.
//! * **Deletions** are recorded per key with their revision, so a node can answer "has key
//!   K been deleted at or after revision R" ([`Store::first_delete_at_or_after`]): the
//!   delete events an etcd watch on K from revision R would deliver (`waitDelete`). Puts
//!   are not recorded; the history is never compacted (a lock workload deletes a few keys
//!   per acquire: kilobytes per simulated minute).

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A lease id; 0 means "no lease" (etcd's `NoLease`).
pub type LeaseId = u64;

/// A key and its metadata, as etcd's `mvccpb.KeyValue`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// Revision of the put that created the key.
    pub create_revision: u64,
    /// Revision of the last put.
    pub mod_revision: u64,
    /// Puts since creation (1 after the first).
    pub version: u64,
    /// Attached lease, 0 for none.
    pub lease: LeaseId,
}

/// Which keys a range, delete or compare covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeySpec {
    /// The key, or the prefix.
    pub key: String,
    /// Every key starting with `key` (etcd's `WithPrefix()`).
    #[serde(default)]
    pub prefix: bool,
}

impl KeySpec {
    /// Exactly `key`.
    pub fn key(key: impl Into<String>) -> KeySpec {
        KeySpec {
            key: key.into(),
            prefix: false,
        }
    }

    /// Every key starting with `prefix`.
    pub fn prefix(prefix: impl Into<String>) -> KeySpec {
        KeySpec {
            key: prefix.into(),
            prefix: true,
        }
    }

    fn matches(&self, k: &str) -> bool {
        if self.prefix {
            k.starts_with(&self.key)
        } else {
            k == self.key
        }
    }
}

/// Sort order of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sort {
    /// By key, ascending (etcd's default).
    #[default]
    Key,
    /// By create revision, ascending (`WithFirstCreate`).
    CreateAscend,
    /// By create revision, descending (`WithLastCreate`).
    CreateDescend,
}

/// A range read (etcd's `RangeRequest`, the subset used).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeRequest {
    /// Keys to read.
    pub keys: KeySpec,
    /// Order.
    #[serde(default)]
    pub sort: Sort,
    /// At most this many keys, 0 for all.
    #[serde(default)]
    pub limit: u64,
    /// Only keys with `create_revision ≤` this (0: no filter; `WithMaxCreateRev`).
    #[serde(default)]
    pub max_create_revision: u64,
    /// Only keys with `create_revision ≥` this (0: no filter; `WithMinCreateRev`).
    #[serde(default)]
    pub min_create_revision: u64,
}

impl RangeRequest {
    /// Read one key.
    pub fn get(key: impl Into<String>) -> RangeRequest {
        RangeRequest {
            keys: KeySpec::key(key),
            sort: Sort::Key,
            limit: 0,
            max_create_revision: 0,
            min_create_revision: 0,
        }
    }

    /// The oldest key under `prefix` (etcd's `OpGet(pfx, WithFirstCreate()...)`).
    pub fn first_created(prefix: impl Into<String>) -> RangeRequest {
        RangeRequest {
            keys: KeySpec::prefix(prefix),
            sort: Sort::CreateAscend,
            limit: 1,
            ..RangeRequest::get("")
        }
    }

    /// The newest key under `prefix` created at or before `max_create_revision` (etcd's
    /// `Get(pfx, WithLastCreate()..., WithMaxCreateRev(rev))`, as in `waitDeletes`).
    pub fn last_created_at_or_before(
        prefix: impl Into<String>,
        max_create_revision: u64,
    ) -> RangeRequest {
        RangeRequest {
            keys: KeySpec::prefix(prefix),
            sort: Sort::CreateDescend,
            limit: 1,
            max_create_revision,
            min_create_revision: 0,
        }
    }
}

/// A range's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeResponse {
    /// Store revision the read saw.
    pub revision: u64,
    /// Matching keys, sorted and limited.
    pub kvs: Vec<KeyValue>,
    /// Keys in the range before filters and limit.
    pub count: u64,
    /// The limit cut the answer.
    pub more: bool,
}

/// What a compare looks at (etcd's `Compare.target`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompareTarget {
    /// `create_revision` against a revision.
    Create(u64),
    /// `mod_revision` against a revision.
    Mod(u64),
    /// `version` against a count.
    Version(u64),
    /// The value against a string (false on a missing key).
    Value(String),
    /// The attached lease against an id.
    Lease(LeaseId),
}

/// How a compare compares (etcd's `Compare.result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompareResult {
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `<` (actual < given)
    Less,
    /// `>` (actual > given)
    Greater,
}

/// One txn guard: `actual(key) result target`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compare {
    /// The key.
    pub key: String,
    /// How to compare.
    pub result: CompareResult,
    /// What to compare, and with what.
    pub target: CompareTarget,
}

impl Compare {
    /// `create_revision(key) == rev` (etcd `Compare(CreateRevision(key), "=", rev)`; with
    /// `rev = 0`: the key does not exist).
    pub fn create_revision_is(key: impl Into<String>, rev: u64) -> Compare {
        Compare {
            key: key.into(),
            result: CompareResult::Equal,
            target: CompareTarget::Create(rev),
        }
    }
}

/// An operation inside a txn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxnOp {
    /// Put.
    Put(PutRequest),
    /// Delete.
    DeleteRange(KeySpec),
    /// Read.
    Range(RangeRequest),
}

/// A put.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutRequest {
    /// Key.
    pub key: String,
    /// Value.
    #[serde(default)]
    pub value: String,
    /// Lease to attach, 0 for none.
    #[serde(default)]
    pub lease: LeaseId,
}

/// A transaction: `if all(compare) then success else failure`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnRequest {
    /// Guards, all must hold.
    pub compare: Vec<Compare>,
    /// Ops when they hold.
    pub success: Vec<TxnOp>,
    /// Ops when one fails.
    pub failure: Vec<TxnOp>,
}

/// A request applied through the Raft log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Request {
    /// Put a key.
    Put(PutRequest),
    /// Delete a key or a prefix.
    DeleteRange(KeySpec),
    /// Read through the log (linearizable without ReadIndex).
    Range(RangeRequest),
    /// A transaction.
    Txn(TxnRequest),
    /// Grant a lease with a caller-chosen id (non-zero) and TTL.
    LeaseGrant {
        /// The id.
        id: LeaseId,
        /// Requested TTL, ms (raised to the minimum).
        ttl_ms: u64,
    },
    /// Revoke a lease and delete its keys (also how an expiry is applied).
    LeaseRevoke {
        /// The id.
        id: LeaseId,
    },
}

/// The answer to one txn op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OpResponse {
    /// A put happened.
    Put,
    /// This many keys were deleted.
    DeleteRange {
        /// Count.
        deleted: u64,
    },
    /// A read.
    Range(RangeResponse),
}

/// The answer to a [`Request`]. `revision` is the response header's revision: the store's
/// revision after the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Response {
    /// Put done.
    Put {
        /// Header revision (the key's new `mod_revision`).
        revision: u64,
    },
    /// Delete done.
    DeleteRange {
        /// Header revision.
        revision: u64,
        /// Keys deleted.
        deleted: u64,
    },
    /// A read through the log.
    Range(RangeResponse),
    /// Txn done.
    Txn {
        /// Header revision.
        revision: u64,
        /// The compares held (the success branch ran).
        succeeded: bool,
        /// One answer per op of the branch that ran.
        responses: Vec<OpResponse>,
    },
    /// Lease granted.
    LeaseGrant {
        /// Header revision.
        revision: u64,
        /// The id.
        id: LeaseId,
        /// The TTL granted, ms.
        ttl_ms: u64,
    },
    /// Lease revoked.
    LeaseRevoke {
        /// Header revision.
        revision: u64,
    },
}

impl Response {
    /// The header revision.
    pub fn revision(&self) -> u64 {
        match self {
            Response::Put { revision }
            | Response::DeleteRange { revision, .. }
            | Response::Txn { revision, .. }
            | Response::LeaseGrant { revision, .. }
            | Response::LeaseRevoke { revision } => *revision,
            Response::Range(r) => r.revision,
        }
    }
}

/// Why a request failed (it changed nothing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServiceError {
    /// etcd `ErrLeaseNotFound` ("requested lease not found").
    LeaseNotFound,
    /// etcd `ErrLeaseExists`.
    LeaseExists,
    /// The entry did not decode (a bug).
    Decode(String),
}

impl fmt::Display for ServiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceError::LeaseNotFound => write!(f, "requested lease not found"),
            ServiceError::LeaseExists => write!(f, "lease already exists"),
            ServiceError::Decode(e) => write!(f, "undecodable entry: {e}"),
        }
    }
}

impl std::error::Error for ServiceError {}

/// A lease as the replicated state knows it (its expiry is the lessor's business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// TTL granted, ms.
    pub ttl_ms: u64,
    /// Attached keys.
    pub keys: BTreeSet<String>,
}

/// The replicated store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    revision: u64,
    kvs: BTreeMap<String, KeyValue>,
    leases: BTreeMap<LeaseId, Lease>,
    deletions: BTreeMap<String, Vec<u64>>,
    min_lease_ttl_ms: u64,
    applied_index: u64,
    /// Chubby's lock-delay, ms (0: off); see [`lock_delay`].
    lock_delay_ms: u64,
}

/// A write in progress: the revision it will get if it changes anything.
struct Write {
    rev: u64,
    changed: bool,
}

impl Store {
    /// An empty store at revision 1; granted TTLs are raised to `min_lease_ttl_ms`.
    pub fn new(min_lease_ttl_ms: u64) -> Store {
        Store {
            revision: 1,
            kvs: BTreeMap::new(),
            leases: BTreeMap::new(),
            deletions: BTreeMap::new(),
            min_lease_ttl_ms,
            applied_index: 0,
            lock_delay_ms: 0,
        }
    }

    /// Current revision.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Index of the last Raft entry applied.
    pub fn applied_index(&self) -> u64 {
        self.applied_index
    }

    /// Note that the entry at `index` was applied (no-ops included).
    pub fn set_applied_index(&mut self, index: u64) {
        debug_assert!(index > self.applied_index, "apply in order");
        self.applied_index = index;
    }

    /// One key.
    pub fn get(&self, key: &str) -> Option<&KeyValue> {
        self.kvs.get(key)
    }

    /// A lease.
    pub fn lease(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(&id)
    }

    /// Every lease, by id.
    pub fn leases(&self) -> impl Iterator<Item = (LeaseId, &Lease)> {
        self.leases.iter().map(|(&id, l)| (id, l))
    }

    /// The minimum lease TTL, ms.
    pub fn min_lease_ttl_ms(&self) -> u64 {
        self.min_lease_ttl_ms
    }

    /// The first revision ≥ `rev` at which `key` was deleted, if any: what a watch on
    /// `key` from `rev` would report as its first delete event.
    pub fn first_delete_at_or_after(&self, key: &str, rev: u64) -> Option<u64> {
        let revs = self.deletions.get(key)?;
        let i = revs.partition_point(|&r| r < rev);
        revs.get(i).copied()
    }

    /// A read of the current state (not through the log: the caller decides whether it
    /// is linearizable).
    pub fn range(&self, r: &RangeRequest) -> RangeResponse {
        self.range_at(r, self.revision)
    }

    fn range_at(&self, r: &RangeRequest, revision: u64) -> RangeResponse {
        let in_range: Vec<&KeyValue> = if r.keys.prefix {
            self.kvs
                .range(r.keys.key.clone()..)
                .take_while(|(k, _)| k.starts_with(&r.keys.key))
                .map(|(_, kv)| kv)
                .collect()
        } else {
            self.kvs.get(&r.keys.key).into_iter().collect()
        };
        let count = in_range.len() as u64;
        let mut kvs: Vec<KeyValue> = in_range
            .into_iter()
            .filter(|kv| r.max_create_revision == 0 || kv.create_revision <= r.max_create_revision)
            .filter(|kv| r.min_create_revision == 0 || kv.create_revision >= r.min_create_revision)
            .cloned()
            .collect();
        match r.sort {
            Sort::Key => {}
            Sort::CreateAscend => kvs.sort_by_key(|kv| kv.create_revision),
            Sort::CreateDescend => kvs.sort_by_key(|kv| std::cmp::Reverse(kv.create_revision)),
        }
        let mut more = false;
        if r.limit > 0 && kvs.len() as u64 > r.limit {
            kvs.truncate(r.limit as usize);
            more = true;
        }
        RangeResponse {
            revision,
            kvs,
            count,
            more,
        }
    }

    fn compare(&self, c: &Compare) -> bool {
        let kv = self.kvs.get(&c.key);
        let ord = match (&c.target, kv) {
            (CompareTarget::Value(_), None) => return false,
            (CompareTarget::Value(v), Some(kv)) => kv.value.as_str().cmp(v.as_str()),
            (CompareTarget::Create(n), _) => kv.map_or(0, |kv| kv.create_revision).cmp(n),
            (CompareTarget::Mod(n), _) => kv.map_or(0, |kv| kv.mod_revision).cmp(n),
            (CompareTarget::Version(n), _) => kv.map_or(0, |kv| kv.version).cmp(n),
            (CompareTarget::Lease(n), _) => kv.map_or(0, |kv| kv.lease).cmp(n),
        };
        use std::cmp::Ordering::*;
        match c.result {
            CompareResult::Equal => ord == Equal,
            CompareResult::NotEqual => ord != Equal,
            CompareResult::Less => ord == Less,
            CompareResult::Greater => ord == Greater,
        }
    }

    fn check_leases<'a>(
        &self,
        puts: impl IntoIterator<Item = &'a PutRequest>,
    ) -> Result<(), ServiceError> {
        for p in puts {
            if p.lease != 0 && !self.leases.contains_key(&p.lease) {
                return Err(ServiceError::LeaseNotFound);
            }
        }
        Ok(())
    }

    fn put(&mut self, w: &mut Write, p: &PutRequest) {
        let rev = w.rev;
        let old_lease = match self.kvs.get_mut(&p.key) {
            Some(kv) => {
                let old = kv.lease;
                kv.value = p.value.clone();
                kv.mod_revision = rev;
                kv.version += 1;
                kv.lease = p.lease;
                old
            }
            None => {
                self.kvs.insert(
                    p.key.clone(),
                    KeyValue {
                        key: p.key.clone(),
                        value: p.value.clone(),
                        create_revision: rev,
                        mod_revision: rev,
                        version: 1,
                        lease: p.lease,
                    },
                );
                0
            }
        };
        if old_lease != p.lease {
            if let Some(l) = self.leases.get_mut(&old_lease) {
                l.keys.remove(&p.key);
            }
        }
        if let Some(l) = self.leases.get_mut(&p.lease) {
            l.keys.insert(p.key.clone());
        }
        w.changed = true;
    }

    fn delete(&mut self, w: &mut Write, keys: &KeySpec) -> u64 {
        let doomed: Vec<String> = if keys.prefix {
            self.kvs
                .range(keys.key.clone()..)
                .take_while(|(k, _)| keys.matches(k))
                .map(|(k, _)| k.clone())
                .collect()
        } else {
            self.kvs
                .get(&keys.key)
                .map(|kv| kv.key.clone())
                .into_iter()
                .collect()
        };
        for k in &doomed {
            self.delete_key(w, k);
        }
        doomed.len() as u64
    }

    fn delete_key(&mut self, w: &mut Write, key: &str) {
        if let Some(kv) = self.kvs.remove(key) {
            if let Some(l) = self.leases.get_mut(&kv.lease) {
                l.keys.remove(key);
            }
            self.deletions
                .entry(key.to_string())
                .or_default()
                .push(w.rev);
            w.changed = true;
        }
    }

    fn run_op(&mut self, w: &mut Write, op: &TxnOp) -> OpResponse {
        match op {
            TxnOp::Put(p) => {
                self.put(w, p);
                OpResponse::Put
            }
            TxnOp::DeleteRange(keys) => OpResponse::DeleteRange {
                deleted: self.delete(w, keys),
            },
            TxnOp::Range(r) => {
                let seen = if w.changed { w.rev } else { self.revision };
                OpResponse::Range(self.range_at(r, seen))
            }
        }
    }

    /// Apply a request committed at log `index`. A failed request changes nothing but the
    /// applied index.
    pub fn apply(&mut self, index: u64, req: &Request) -> Result<Response, ServiceError> {
        self.set_applied_index(index);
        let mut w = Write {
            rev: self.revision + 1,
            changed: false,
        };
        let result = match req {
            Request::Put(p) => {
                self.check_leases([p])?;
                self.put(&mut w, p);
                Ok(Response::Put { revision: w.rev })
            }
            Request::DeleteRange(keys) => {
                let deleted = self.delete(&mut w, keys);
                let revision = if w.changed { w.rev } else { self.revision };
                Ok(Response::DeleteRange { revision, deleted })
            }
            Request::Range(r) => Ok(Response::Range(self.range(r))),
            Request::Txn(t) => {
                let succeeded = t.compare.iter().all(|c| self.compare(c));
                let ops = if succeeded { &t.success } else { &t.failure };
                self.check_leases(ops.iter().filter_map(|op| match op {
                    TxnOp::Put(p) => Some(p),
                    _ => None,
                }))?;
                let responses = ops.iter().map(|op| self.run_op(&mut w, op)).collect();
                let revision = if w.changed { w.rev } else { self.revision };
                Ok(Response::Txn {
                    revision,
                    succeeded,
                    responses,
                })
            }
            Request::LeaseGrant { id, ttl_ms } => {
                if *id == 0 {
                    return Err(ServiceError::LeaseNotFound);
                }
                if self.leases.contains_key(id) {
                    return Err(ServiceError::LeaseExists);
                }
                let ttl_ms = (*ttl_ms).max(self.min_lease_ttl_ms);
                self.leases.insert(
                    *id,
                    Lease {
                        ttl_ms,
                        keys: BTreeSet::new(),
                    },
                );
                Ok(Response::LeaseGrant {
                    revision: self.revision,
                    id: *id,
                    ttl_ms,
                })
            }
            Request::LeaseRevoke { id } => {
                let Some(lease) = self.leases.get(id) else {
                    return Err(ServiceError::LeaseNotFound);
                };
                let keys: Vec<String> = lease.keys.iter().cloned().collect();
                self.leases.remove(id);
                self.revoke_keys(&mut w, *id, &keys);
                let revision = if w.changed { w.rev } else { self.revision };
                Ok(Response::LeaseRevoke { revision })
            }
        };
        if w.changed {
            self.revision = w.rev;
        }
        result
    }
}

#[path = "lock_delay.rs"]
pub mod lock_delay;

#[cfg(test)]
#[path = "kv_tests.rs"]
mod tests;
