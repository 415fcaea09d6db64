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

use std::collections::{BTreeMap, BTreeSet};

#[path = "kv_request.rs"]
mod request;
pub(crate) use request::*;

/// A lease as the replicated state knows it (its expiry is the lessor's business).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Lease {
    /// TTL granted, ms.
    pub ttl_ms: u64,
    /// Attached keys.
    pub keys: BTreeSet<String>,
}

/// What a change did to a key (etcd's `mvccpb.Event_EventType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// Created or updated.
    Put,
    /// Deleted.
    Delete,
}

/// One change to one key, as a watch delivers it (etcd's `mvccpb.Event`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    /// Put or delete.
    pub kind: EventKind,
    /// The key after a put; after a delete, its tombstone: the key and the delete's
    /// revision as `mod_revision`, everything else zero (as etcd's).
    pub kv: KeyValue,
    /// The key before the change, if it existed.
    pub prev_kv: Option<KeyValue>,
}

impl Event {
    /// The revision of the change.
    pub(crate) fn revision(&self) -> u64 {
        self.kv.mod_revision
    }
}

/// The replicated store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Store {
    revision: u64,
    /// Revisions before this one are forgotten (etcd's `compactMainRev`; 0: none).
    compacted: u64,
    kvs: BTreeMap<String, KeyValue>,
    leases: BTreeMap<LeaseId, Lease>,
    /// Every change since revision 1, in order. Compaction only moves `compacted`: the
    /// events before it stay, so that a read at any later revision can be rebuilt.
    events: Vec<Event>,
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

impl Write {
    /// The revision a read inside the write sees (etcd's `storeTxnWrite.Range`): the
    /// write's own once it changed something.
    fn seen(&self) -> u64 {
        if self.changed {
            self.rev
        } else {
            self.rev - 1
        }
    }
}

impl Store {
    /// An empty store at revision 1; granted TTLs are raised to `min_lease_ttl_ms`.
    pub(crate) fn new(min_lease_ttl_ms: u64) -> Store {
        Store {
            revision: 1,
            compacted: 0,
            kvs: BTreeMap::new(),
            leases: BTreeMap::new(),
            events: Vec::new(),
            min_lease_ttl_ms,
            applied_index: 0,
            lock_delay_ms: 0,
        }
    }

    /// Current revision.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// The compacted revision (0: never compacted).
    pub(crate) fn compacted(&self) -> u64 {
        self.compacted
    }

    /// Index of the last Raft entry applied.
    pub(crate) fn applied_index(&self) -> u64 {
        self.applied_index
    }

    /// Note that the entry at `index` was applied (no-ops included).
    pub(crate) fn set_applied_index(&mut self, index: u64) {
        debug_assert!(index > self.applied_index, "apply in order");
        self.applied_index = index;
    }

    /// One key.
    #[cfg(test)]
    pub(crate) fn get(&self, key: &str) -> Option<&KeyValue> {
        self.kvs.get(key)
    }

    /// A lease.
    pub(crate) fn lease(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(&id)
    }

    /// Every lease, by id.
    pub(crate) fn leases(&self) -> impl Iterator<Item = (LeaseId, &Lease)> {
        self.leases.iter().map(|(&id, l)| (id, l))
    }

    /// The changes at revision `rev` and after, in order (a watch from `rev`).
    pub(crate) fn events_since(&self, rev: u64) -> &[Event] {
        let i = self.events.partition_point(|e| e.revision() < rev);
        &self.events[i..]
    }

    /// The first revision ≥ `rev` at which `key` was deleted, if any: what a watch on
    /// `key` from `rev` would report as its first delete event.
    #[cfg(test)]
    pub(crate) fn first_delete_at_or_after(&self, key: &str, rev: u64) -> Option<u64> {
        self.events_since(rev)
            .iter()
            .find(|e| e.kind == EventKind::Delete && e.kv.key == key)
            .map(Event::revision)
    }

    /// Whether a read at `rev` (0: now) can be served: etcd's `ErrFutureRev` and
    /// `ErrCompacted` otherwise.
    pub(crate) fn check_revision(&self, rev: u64, now: u64) -> Result<(), ServiceError> {
        if rev > now {
            return Err(ServiceError::FutureRev);
        }
        if rev != 0 && rev < self.compacted {
            return Err(ServiceError::Compacted);
        }
        Ok(())
    }

    /// A read of the current state (not through the log: the caller decides whether it
    /// is linearizable).
    pub(crate) fn range(&self, r: &RangeRequest) -> Result<RangeResponse, ServiceError> {
        self.range_seen(r, self.revision)
    }

    /// A read by a request that sees revision `seen` (a txn's ranges see its writes).
    fn range_seen(&self, r: &RangeRequest, seen: u64) -> Result<RangeResponse, ServiceError> {
        self.check_revision(r.revision, seen)?;
        if r.revision == 0 || r.revision == seen {
            return Ok(range::answer(r, seen, range::in_range(&self.kvs, &r.keys)));
        }
        // etcd heads a read of the past with the current revision.
        let past = self.kvs_at(r.revision);
        Ok(range::answer(r, seen, range::in_range(&past, &r.keys)))
    }

    /// The keys as they were at revision `rev`, rebuilt from the events.
    fn kvs_at(&self, rev: u64) -> BTreeMap<String, KeyValue> {
        let mut kvs = BTreeMap::new();
        for e in self.events.iter().take_while(|e| e.revision() <= rev) {
            match e.kind {
                EventKind::Put => kvs.insert(e.kv.key.clone(), e.kv.clone()),
                EventKind::Delete => kvs.remove(&e.kv.key),
            };
        }
        kvs
    }

    /// Whether compare `c` holds: for every key in its range (a missing key compares as
    /// all zeros, and its value compare fails: etcd's `applyCompare`).
    fn compare(&self, c: &Compare) -> bool {
        let kvs = range::in_range(&self.kvs, &c.keys);
        if kvs.is_empty() {
            if matches!(c.target, CompareTarget::Value(_)) {
                return false;
            }
            return range::compare_kv(c, &KeyValue::default());
        }
        kvs.iter().all(|kv| range::compare_kv(c, kv))
    }

    /// The ops a txn will run: its compares (and those of the txns nested in the chosen
    /// branch) evaluated against the state before any of them (etcd's `compareToPath`).
    fn txn_path<'t>(&self, t: &'t TxnRequest) -> TxnPath<'t> {
        let succeeded = t.compare.iter().all(|c| self.compare(c));
        let ops = if succeeded { &t.success } else { &t.failure };
        let nested = ops
            .iter()
            .filter_map(|op| match op {
                TxnOp::Txn(t) => Some(self.txn_path(t)),
                _ => None,
            })
            .collect();
        TxnPath {
            succeeded,
            ops,
            nested,
        }
    }

    /// etcd's `checkRequests` over the chosen path: puts name existing leases (and
    /// existing keys when they keep the value or lease), ranges name served revisions.
    fn check_path(&self, path: &TxnPath<'_>) -> Result<(), ServiceError> {
        for op in path.ops {
            match op {
                TxnOp::Put(p) => self.check_put(p)?,
                TxnOp::Range(r) if r.revision != 0 => {
                    self.check_revision(r.revision, self.revision)?
                }
                _ => {}
            }
        }
        path.nested.iter().try_for_each(|n| self.check_path(n))
    }

    fn check_put(&self, p: &PutRequest) -> Result<(), ServiceError> {
        if (p.ignore_value || p.ignore_lease) && !self.kvs.contains_key(&p.key) {
            return Err(ServiceError::KeyNotFound);
        }
        if p.lease != 0 && !self.leases.contains_key(&p.lease) {
            return Err(ServiceError::LeaseNotFound);
        }
        Ok(())
    }

    fn put(&mut self, w: &mut Write, p: &PutRequest) -> PutResponse {
        let rev = w.rev;
        let prev = self.kvs.get(&p.key).cloned();
        let kv = match &prev {
            Some(old) => KeyValue {
                key: p.key.clone(),
                value: if p.ignore_value {
                    old.value.clone()
                } else {
                    p.value.clone()
                },
                create_revision: old.create_revision,
                mod_revision: rev,
                version: old.version + 1,
                lease: if p.ignore_lease { old.lease } else { p.lease },
            },
            None => KeyValue {
                key: p.key.clone(),
                value: p.value.clone(),
                create_revision: rev,
                mod_revision: rev,
                version: 1,
                lease: p.lease,
            },
        };
        let old_lease = prev.as_ref().map_or(0, |kv| kv.lease);
        if old_lease != kv.lease {
            if let Some(l) = self.leases.get_mut(&old_lease) {
                l.keys.remove(&p.key);
            }
        }
        if let Some(l) = self.leases.get_mut(&kv.lease) {
            l.keys.insert(p.key.clone());
        }
        self.record_put(w, kv, prev.clone());
        PutResponse {
            revision: rev,
            prev_kv: if p.prev_kv { prev } else { None },
        }
    }

    /// Store `kv` (written by `w`) and record its event.
    fn record_put(&mut self, w: &mut Write, kv: KeyValue, prev_kv: Option<KeyValue>) {
        self.kvs.insert(kv.key.clone(), kv.clone());
        self.events.push(Event {
            kind: EventKind::Put,
            kv,
            prev_kv,
        });
        w.changed = true;
    }

    fn delete(&mut self, w: &mut Write, d: &DeleteRequest) -> DeleteResponse {
        let doomed: Vec<KeyValue> = range::in_range(&self.kvs, &d.keys)
            .into_iter()
            .cloned()
            .collect();
        for kv in &doomed {
            self.delete_key(w, &kv.key);
        }
        DeleteResponse {
            revision: w.seen(),
            deleted: doomed.len() as u64,
            prev_kvs: if d.prev_kv { doomed } else { Vec::new() },
        }
    }

    fn delete_key(&mut self, w: &mut Write, key: &str) {
        if let Some(kv) = self.kvs.remove(key) {
            if let Some(l) = self.leases.get_mut(&kv.lease) {
                l.keys.remove(key);
            }
            let tombstone = KeyValue {
                key: key.to_string(),
                mod_revision: w.rev,
                ..KeyValue::default()
            };
            self.events.push(Event {
                kind: EventKind::Delete,
                kv: tombstone,
                prev_kv: Some(kv),
            });
            w.changed = true;
        }
    }

    /// Run the ops of a checked path in order.
    fn run_path(&mut self, w: &mut Write, path: &TxnPath<'_>) -> TxnResponse {
        let mut nested = path.nested.iter();
        let mut responses = Vec::with_capacity(path.ops.len());
        for op in path.ops {
            let r = match op {
                TxnOp::Put(p) => OpResponse::Put(self.put(w, p)),
                TxnOp::DeleteRange(d) => OpResponse::DeleteRange(self.delete(w, d)),
                TxnOp::Range(r) => {
                    let seen = w.seen();
                    let answer = self.range_seen(r, seen);
                    OpResponse::Range(answer.expect("revisions checked before the txn ran"))
                }
                TxnOp::Txn(_) => {
                    let n = nested.next().expect("one path per nested txn");
                    OpResponse::Txn(self.run_path(w, n))
                }
            };
            responses.push(r);
        }
        TxnResponse {
            revision: w.seen(),
            succeeded: path.succeeded,
            responses,
        }
    }

    fn txn(&mut self, w: &mut Write, t: &TxnRequest) -> Result<TxnResponse, ServiceError> {
        let path = self.txn_path(t);
        self.check_path(&path)?;
        let mut r = self.run_path(w, &path);
        r.revision = w.seen();
        Ok(r)
    }

    fn grant(&mut self, id: LeaseId, ttl_ms: u64) -> Result<Response, ServiceError> {
        if id == 0 {
            return Err(ServiceError::LeaseNotFound);
        }
        if self.leases.contains_key(&id) {
            return Err(ServiceError::LeaseExists);
        }
        let ttl_ms = ttl_ms.max(self.min_lease_ttl_ms);
        let keys = BTreeSet::new();
        self.leases.insert(id, Lease { ttl_ms, keys });
        Ok(Response::LeaseGrant {
            revision: self.revision,
            id,
            ttl_ms,
        })
    }

    fn revoke(&mut self, w: &mut Write, id: LeaseId) -> Result<Response, ServiceError> {
        let Some(lease) = self.leases.remove(&id) else {
            return Err(ServiceError::LeaseNotFound);
        };
        let keys: Vec<String> = lease.keys.into_iter().collect();
        self.revoke_keys(w, id, &keys);
        Ok(Response::LeaseRevoke { revision: w.seen() })
    }

    /// etcd's `Compact`: `ErrCompacted` at or before the compacted revision,
    /// `ErrFutureRev` after the current one.
    fn compact(&mut self, rev: u64) -> Result<Response, ServiceError> {
        if rev <= self.compacted {
            return Err(ServiceError::Compacted);
        }
        if rev > self.revision {
            return Err(ServiceError::FutureRev);
        }
        self.compacted = rev;
        Ok(Response::Compact {
            revision: self.revision,
        })
    }

    /// Apply a request committed at log `index`. A failed request changes nothing but the
    /// applied index.
    pub(crate) fn apply(&mut self, index: u64, req: &Request) -> Result<Response, ServiceError> {
        self.set_applied_index(index);
        let mut w = Write {
            rev: self.revision + 1,
            changed: false,
        };
        let result = match req {
            Request::Put(p) => self
                .check_put(p)
                .map(|()| Response::Put(self.put(&mut w, p))),
            Request::DeleteRange(d) => Ok(Response::DeleteRange(self.delete(&mut w, d))),
            Request::Range(r) => self.range(r).map(Response::Range),
            Request::Txn(t) => self.txn(&mut w, t).map(Response::Txn),
            Request::LeaseGrant { id, ttl_ms } => self.grant(*id, *ttl_ms),
            Request::LeaseRevoke { id, .. } => self.revoke(&mut w, *id),
            Request::Compact { revision } => self.compact(*revision),
        };
        if w.changed {
            self.revision = w.rev;
        }
        result
    }
}

/// The chosen branch of a txn and, for each txn nested in it, its own path.
struct TxnPath<'t> {
    succeeded: bool,
    ops: &'t [TxnOp],
    nested: Vec<TxnPath<'t>>,
}

#[path = "kv_range.rs"]
mod range;

#[path = "lock_delay.rs"]
pub(crate) mod lock_delay;

#[cfg(test)]
#[path = "kv_tests.rs"]
mod tests;
