//! How a range is answered and a compare decided, on any view of the keys (the current
//! one or one rebuilt at a past revision). etcd 3.4's `applierV3backend.Range`:
//!
//! * `count` is the number of keys in `[key, range_end)` at the revision, before the
//!   revision filters and the limit.
//! * Without a sort order and without revision filters, the store reads at most
//!   `limit + 1` keys, in key order, *before* sorting (etcd fetches one extra for
//!   `more`, and only fetches everything when it must sort or filter): a target other
//!   than the key with no order then sorts only those (measured against etcd 3.4).
//! * The revision filters prune, then the sort: a target other than the key with no order
//!   sorts ascending (the store already returns keys in order). Ties keep key order (etcd
//!   sorts with Go's `sort.Sort`, an insertion sort below 13 elements, stable there).
//! * The limit cuts what is left, and `more` says it did.
//! * `keys_only` drops the values, `count_only` every key; a `count_only` answer is
//!   never `more` (etcd's store returns no keys to cut).

use super::{Compare, CompareResult, CompareTarget, KeySpec, KeyValue};
use super::{RangeRequest, RangeResponse, SortOrder, SortTarget};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The keys of `kvs` in `keys`, in key order.
pub(super) fn in_range<'a>(
    kvs: &'a BTreeMap<String, KeyValue>,
    keys: &KeySpec,
) -> Vec<&'a KeyValue> {
    if keys.is_single() {
        return kvs.get(&keys.key).into_iter().collect();
    }
    kvs.range(keys.key.clone()..)
        .take_while(|(k, _)| keys.contains(k))
        .map(|(_, kv)| kv)
        .collect()
}

/// The answer to `r` from `found` (the keys in its range, in key order) at `revision`.
pub(super) fn answer(r: &RangeRequest, revision: u64, found: Vec<&KeyValue>) -> RangeResponse {
    let count = found.len() as u64;
    let mut kvs: Vec<KeyValue> = found
        .into_iter()
        .filter(|kv| !r.filters() || r.passes(kv))
        .cloned()
        .collect();
    if r.count_only {
        return RangeResponse {
            revision,
            kvs: Vec::new(),
            count,
            more: false,
        };
    }
    let fetch_all = r.sort_order != SortOrder::None || r.filters();
    if !fetch_all && r.limit > 0 {
        kvs.truncate(usize::try_from(r.limit.saturating_add(1)).unwrap_or(usize::MAX));
    }
    sort(&mut kvs, r.sort_order, r.sort_target);
    let more = r.limit > 0 && kvs.len() as u64 > r.limit;
    if more {
        kvs.truncate(r.limit as usize);
    }
    if r.keys_only {
        kvs.iter_mut().for_each(|kv| kv.value.clear());
    }
    RangeResponse {
        revision,
        kvs,
        count,
        more,
    }
}

fn sort(kvs: &mut [KeyValue], order: SortOrder, target: SortTarget) {
    let order = match (order, target) {
        (SortOrder::None, SortTarget::Key) => return,
        (SortOrder::None, _) => SortOrder::Ascend,
        (o, _) => o,
    };
    let by = |a: &KeyValue, b: &KeyValue| match target {
        SortTarget::Key => a.key.cmp(&b.key),
        SortTarget::Version => a.version.cmp(&b.version),
        SortTarget::Create => a.create_revision.cmp(&b.create_revision),
        SortTarget::Mod => a.mod_revision.cmp(&b.mod_revision),
        SortTarget::Value => a.value.cmp(&b.value),
    };
    match order {
        SortOrder::Descend => kvs.sort_by(|a, b| by(b, a)),
        _ => kvs.sort_by(by),
    }
}

/// Whether one key satisfies a compare (etcd's `compareKV`).
pub(super) fn compare_kv(c: &Compare, kv: &KeyValue) -> bool {
    let ord = match &c.target {
        CompareTarget::Value(v) => kv.value.as_str().cmp(v.as_str()),
        CompareTarget::Create(n) => kv.create_revision.cmp(n),
        CompareTarget::Mod(n) => kv.mod_revision.cmp(n),
        CompareTarget::Version(n) => kv.version.cmp(n),
        CompareTarget::Lease(n) => kv.lease.cmp(n),
    };
    match c.result {
        CompareResult::Equal => ord == Ordering::Equal,
        CompareResult::NotEqual => ord != Ordering::Equal,
        CompareResult::Less => ord == Ordering::Less,
        CompareResult::Greater => ord == Ordering::Greater,
    }
}
