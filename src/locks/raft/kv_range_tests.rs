//! Ranges (intervals, sort, limit, filters), puts and deletes with their flags, nested
//! transactions, reads at past revisions, compaction and the watch events of the store.

use super::*;

fn keys_of(r: &RangeResponse) -> Vec<String> {
    r.kvs.iter().map(|kv| kv.key.clone()).collect()
}

/// etcd's `key` + `range_end`: the interval `[key, end)`.
fn span(key: &str, end: &str) -> KeySpec {
    KeySpec {
        key: key.into(),
        range_end: end.into(),
    }
}

fn txn(compare: Vec<Compare>, success: Vec<TxnOp>, failure: Vec<TxnOp>) -> Request {
    Request::Txn(TxnRequest {
        compare,
        success,
        failure,
    })
}

fn txn_response(r: Result<Response, ServiceError>) -> TxnResponse {
    match r {
        Ok(Response::Txn(t)) => t,
        other => panic!("{other:?}"),
    }
}

fn put_value_op(key: &str, value: &str) -> TxnOp {
    TxnOp::Put(PutRequest::new(key, value, 0))
}

/// Keys a, ab, b, c, ca, d, put in that order at revisions 2..=7.
fn six_keys() -> T {
    let mut t = T::new();
    for k in ["a", "ab", "b", "c", "ca", "d"] {
        t.put(k, k, 0).unwrap();
    }
    t
}

/// Four keys with distinct orders on every sort target (revision 7):
/// a: create 3, mod 7, version 2, "z"; b: 5, 5, 1, "x"; c: 2, 6, 2, "w"; d: 4, 4, 1, "y".
fn sortable() -> T {
    let mut t = T::new();
    for (k, v) in [
        ("c", "v"),
        ("a", "z"),
        ("d", "y"),
        ("b", "x"),
        ("c", "w"),
        ("a", "z"),
    ] {
        t.put(k, v, 0).unwrap();
    }
    t
}

#[test]
fn range_end_selects_etcd_intervals() {
    let t = six_keys();
    let ks = |keys: KeySpec| keys_of(&t.range(&RangeRequest::of(keys)));
    // etcd: an empty range_end names the single key `key`.
    assert_eq!(ks(KeySpec::key("b")), ["b"]);
    assert!(ks(KeySpec::key("bb")).is_empty());
    // etcd: a range_end names the half-open interval [key, range_end)...
    assert_eq!(ks(span("a", "c")), ["a", "ab", "b"]);
    // ...which is empty when range_end ≤ key.
    assert!(ks(span("c", "a")).is_empty());
    // etcd: range_end "\0" names every key ≥ key (WithFromKey).
    assert_eq!(ks(KeySpec::from_key("b")), ["b", "c", "ca", "d"]);
    // etcd GetPrefixRangeEnd: WithPrefix(p) is [p, p with its last byte incremented).
    assert_eq!(KeySpec::prefix("c"), span("c", "d"));
    assert_eq!(ks(KeySpec::prefix("c")), ["c", "ca"]);
    // etcd clientv3 WithPrefix on the empty key: key "\0", range_end "\0", every key.
    assert_eq!(KeySpec::prefix(""), span("\0", "\0"));
    assert_eq!(ks(KeySpec::prefix("")), ["a", "ab", "b", "c", "ca", "d"]);
}

#[test]
fn count_is_before_filters_and_limit_and_more_says_the_limit_cut() {
    let t = six_keys(); // a:2 ab:3 b:4 c:5 ca:6 d:7
    let all = |limit, min_create_revision| {
        t.range(&RangeRequest {
            limit,
            min_create_revision,
            ..RangeRequest::of(KeySpec::prefix(""))
        })
    };
    let seen = |r: RangeResponse| (keys_of(&r), r.count, r.more);
    // etcd: count is every key in the range (rr.Count), before the limit; more says the
    // limit cut the answer.
    assert_eq!(seen(all(2, 0)), (vec!["a".into(), "ab".into()], 6, true));
    assert!(!seen(all(6, 0)).2, "a limit that cuts nothing");
    assert_eq!(seen(all(0, 0)), (keys_of(&all(0, 0)), 6, false));
    assert_eq!(keys_of(&all(0, 0)).len(), 6, "limit 0: no limit");
    // etcd (pruneKVs before the limit): the filters prune first, the limit cuts what is
    // left, and count still counts the whole range.
    assert_eq!(seen(all(2, 5)), (vec!["c".into(), "ca".into()], 6, true));
    assert_eq!(
        seen(all(3, 5)),
        (vec!["c".into(), "ca".into(), "d".into()], 6, false)
    );
    // etcd: a single key counts 1 or 0.
    assert_eq!(t.range(&RangeRequest::get("b")).count, 1);
    assert_eq!(t.range(&RangeRequest::get("bb")).count, 0);
}

#[test]
fn sort_by_every_target_and_order() {
    let t = sortable();
    let sorted = |sort_order, sort_target| {
        keys_of(&t.range(&RangeRequest {
            sort_order,
            sort_target,
            ..RangeRequest::of(KeySpec::prefix(""))
        }))
        .concat()
    };
    let (none, asc, desc) = (SortOrder::None, SortOrder::Ascend, SortOrder::Descend);
    // etcd: order NONE on the key is the store's key order; ASCEND/DESCEND sort by key.
    assert_eq!(sorted(none, SortTarget::Key), "abcd");
    assert_eq!(sorted(asc, SortTarget::Key), "abcd");
    assert_eq!(sorted(desc, SortTarget::Key), "dcba");
    // etcd: a target other than KEY with order NONE sorts ASCEND.
    assert_eq!(sorted(none, SortTarget::Create), "cadb");
    assert_eq!(sorted(none, SortTarget::Mod), "dbca");
    assert_eq!(sorted(none, SortTarget::Version), "bdac");
    assert_eq!(sorted(none, SortTarget::Value), "cbda");
    // etcd kvSortByCreate/Mod/Version/Value, ASCEND.
    assert_eq!(sorted(asc, SortTarget::Create), "cadb");
    assert_eq!(sorted(asc, SortTarget::Mod), "dbca");
    assert_eq!(sorted(asc, SortTarget::Value), "cbda");
    // etcd: DESCEND is sort.Reverse.
    assert_eq!(sorted(desc, SortTarget::Create), "bdac");
    assert_eq!(sorted(desc, SortTarget::Mod), "acbd");
    assert_eq!(sorted(desc, SortTarget::Value), "adbc");
    // etcd sort.Sort is an insertion sort below 13 keys, stable: ties (versions 1: b, d;
    // 2: a, c) keep key order, ascending and descending (not "cadb", the reverse of
    // the ascending answer).
    assert_eq!(sorted(asc, SortTarget::Version), "bdac");
    assert_eq!(sorted(desc, SortTarget::Version), "acbd");
}

#[test]
fn keys_only_and_count_only() {
    let t = sortable();
    let all = RangeRequest::of(KeySpec::prefix(""));
    let plain = t.range(&all);
    // etcd: keys_only leaves the values out (nil) and keeps everything else.
    let r = t.range(&RangeRequest {
        keys_only: true,
        ..all.clone()
    });
    let without_values: Vec<KeyValue> = plain
        .kvs
        .iter()
        .map(|kv| KeyValue {
            value: String::new(),
            ..kv.clone()
        })
        .collect();
    assert_eq!(r.kvs, without_values);
    assert_eq!((r.count, r.revision), (4, 7));
    // etcd: count_only answers no keys, only the count.
    let r = t.range(&RangeRequest {
        count_only: true,
        ..all.clone()
    });
    assert!(r.kvs.is_empty());
    assert_eq!((r.count, r.more, r.revision), (4, false, 7));
}

/// etcd 3.4 `rangeKeys` with `Count` returns no KVs, so Range's limit check
/// (`len(rr.KVs) > r.Limit`) never sets `more` for a count_only read.
#[test]
#[ignore = "kv_range::answer sets `more` before count_only clears the keys; etcd 3.4 answers more = false"]
fn count_only_never_says_more() {
    let t = six_keys();
    let r = t.range(&RangeRequest {
        count_only: true,
        limit: 2,
        ..RangeRequest::of(KeySpec::prefix(""))
    });
    assert_eq!((r.kvs.len(), r.count, r.more), (0, 6, false));
}

#[test]
fn revision_filters() {
    let t = sortable(); // (create, mod): a (3, 7), b (5, 5), c (2, 6), d (4, 4)
    let filtered = |min_mod, max_mod, min_create, max_create| {
        let r = t.range(&RangeRequest {
            min_mod_revision: min_mod,
            max_mod_revision: max_mod,
            min_create_revision: min_create,
            max_create_revision: max_create,
            ..RangeRequest::of(KeySpec::prefix(""))
        });
        assert_eq!(r.count, 4, "etcd: count is before the filters");
        keys_of(&r).concat()
    };
    // etcd: min/max_mod_revision keep mod_revision ≥ min / ≤ max (0: no bound).
    assert_eq!(filtered(6, 0, 0, 0), "ac");
    assert_eq!(filtered(0, 5, 0, 0), "bd");
    assert_eq!(filtered(5, 6, 0, 0), "bc");
    // etcd: min/max_create_revision likewise on create_revision.
    assert_eq!(filtered(0, 0, 4, 0), "bd");
    assert_eq!(filtered(0, 0, 0, 3), "ac");
    assert_eq!(filtered(0, 0, 3, 4), "ad");
    // etcd: the filters combine.
    assert_eq!(filtered(0, 6, 3, 0), "bd");
    assert_eq!(filtered(7, 0, 0, 2), "");
}

#[test]
fn put_prev_kv_is_the_key_before_and_absent_on_a_new_key() {
    let mut t = T::new();
    let put_prev = |key: &str, value: &str| {
        Request::Put(PutRequest {
            prev_kv: true,
            ..PutRequest::new(key, value, 0)
        })
    };
    // etcd Put: prev_kv is unset when the key did not exist.
    assert_eq!(
        t.apply(put_prev("k", "v1")),
        Ok(Response::Put(PutResponse {
            revision: 2,
            prev_kv: None
        }))
    );
    // etcd Put: with prev_kv, the key as it was before the put.
    let before = t.s.get("k").cloned();
    assert!(before.is_some());
    assert_eq!(
        t.apply(put_prev("k", "v2")),
        Ok(Response::Put(PutResponse {
            revision: 3,
            prev_kv: before
        }))
    );
    // etcd Put: without prev_kv, none.
    assert_eq!(t.put("k", "v3", 0), Ok(put_response(4)));
    // etcd: in a txn, prev_kv reads through the write txn: it sees the txn's earlier put.
    let r = txn_response(t.apply(txn(
        vec![],
        vec![
            put_value_op("k", "v4"),
            TxnOp::Put(PutRequest {
                prev_kv: true,
                ..PutRequest::new("k", "v5", 0)
            }),
        ],
        vec![],
    )));
    let OpResponse::Put(p) = &r.responses[1] else {
        panic!("{r:?}")
    };
    let prev = p.prev_kv.as_ref().unwrap();
    assert_eq!((prev.value.as_str(), prev.version), ("v4", 4));
}

#[test]
fn ignore_value_and_ignore_lease_keep_the_old_ones() {
    let mut t = T::new();
    t.grant(5, 1000).unwrap();
    t.put("k", "v", 5).unwrap(); // rev 2
    let put = |key: &str, value: &str, lease, ignore_value, ignore_lease| {
        Request::Put(PutRequest {
            ignore_value,
            ignore_lease,
            ..PutRequest::new(key, value, lease)
        })
    };
    let state = |t: &T| {
        let kv = t.s.get("k").unwrap();
        (kv.value.clone(), kv.mod_revision, kv.version, kv.lease)
    };
    // etcd Put ignore_value: the value stays; the put is still a write (mod, version).
    t.apply(put("k", "", 5, true, false)).unwrap();
    assert_eq!(state(&t), ("v".into(), 3, 2, 5));
    // etcd Put ignore_lease: the lease stays, and the key stays attached to it.
    t.apply(put("k", "w", 0, false, true)).unwrap();
    assert_eq!(state(&t), ("w".into(), 4, 3, 5));
    assert!(t.s.lease(5).unwrap().keys.contains("k"));
    // Both at once: only the revisions move.
    t.apply(put("k", "", 0, true, true)).unwrap();
    assert_eq!(state(&t), ("w".into(), 5, 4, 5));
    // etcd Put: ErrKeyNotFound on a missing key; nothing changes.
    for (iv, il) in [(true, false), (false, true), (true, true)] {
        assert_eq!(
            t.apply(put("missing", "", 0, iv, il)),
            Err(ServiceError::KeyNotFound)
        );
    }
    assert!(t.s.get("missing").is_none());
    assert_eq!(t.s.revision(), 5);
    assert!(t.s.events_since(6).is_empty());
    // etcd checkRequestPut reads the view before the txn: the key must exist before it,
    // even if an earlier op of the same txn creates it; the txn then changes nothing.
    let r = t.apply(txn(
        vec![],
        vec![
            put_value_op("fresh", "x"),
            TxnOp::Put(PutRequest {
                ignore_value: true,
                ..PutRequest::new("fresh", "", 0)
            }),
        ],
        vec![],
    ));
    assert_eq!(r, Err(ServiceError::KeyNotFound));
    assert!(t.s.get("fresh").is_none());
    assert_eq!(t.s.revision(), 5);
    // The key kept its lease: revoking the lease deletes it.
    t.apply(Request::lease_expiry(5)).unwrap();
    assert!(t.s.get("k").is_none());
}

/// etcd 3.4 `applierV3backend.Put` outside a txn looks the lease up before it reads the
/// key: `ErrLeaseNotFound` wins over `ErrKeyNotFound` (inside a txn, `checkRequestPut`
/// checks the key first).
#[test]
#[ignore = "Store::check_put checks the key before the lease for a plain Put; etcd 3.4 answers LeaseNotFound"]
fn a_plain_put_checks_its_lease_before_its_key() {
    let mut t = T::new();
    let r = t.apply(Request::Put(PutRequest {
        ignore_value: true,
        ..PutRequest::new("missing", "", 99)
    }));
    assert_eq!(r, Err(ServiceError::LeaseNotFound));
}

#[test]
fn a_put_with_an_unknown_lease_fails_the_whole_txn() {
    let mut t = T::new();
    t.grant(5, 1000).unwrap();
    t.put("a", "1", 0).unwrap(); // rev 2
    t.put("b", "1", 0).unwrap(); // rev 3
    let before = t.s.clone();
    // etcd Txn: checkRequestPut over the chosen branch before any op runs; an unknown
    // lease is ErrLeaseNotFound and no op of the txn is applied.
    let r = t.apply(txn(
        vec![],
        vec![
            put_op("a", 5),
            TxnOp::DeleteRange(DeleteRequest::of(KeySpec::key("b"))),
            put_op("c", 99),
        ],
        vec![],
    ));
    assert_eq!(r, Err(ServiceError::LeaseNotFound));
    assert_eq!(t.s.get("a"), before.get("a"));
    assert!(t.s.get("b").is_some() && t.s.get("c").is_none());
    assert!(t.s.lease(5).unwrap().keys.is_empty());
    assert_eq!(t.s.revision(), 3);
    assert_eq!(t.s.events_since(0), before.events_since(0));
    assert_eq!(t.s.applied_index(), before.applied_index() + 1);
}

#[test]
fn delete_prev_kvs_and_a_delete_of_nothing() {
    let mut t = six_keys(); // revision 7
    let doomed: Vec<KeyValue> = ["a", "ab", "b"]
        .iter()
        .map(|k| t.s.get(k).unwrap().clone())
        .collect();
    let delete_prev = |keys| {
        Request::DeleteRange(DeleteRequest {
            prev_kv: true,
            ..DeleteRequest::of(keys)
        })
    };
    // etcd DeleteRange prev_kv: the deleted keys as they were, in key order, under one
    // new revision.
    assert_eq!(
        t.apply(delete_prev(span("a", "c"))),
        Ok(Response::DeleteRange(DeleteResponse {
            revision: 8,
            deleted: 3,
            prev_kvs: doomed
        }))
    );
    assert_eq!(
        keys_of(&t.range(&RangeRequest::of(KeySpec::prefix("")))),
        ["c", "ca", "d"]
    );
    // etcd DeleteRange: without prev_kv, no prev_kvs.
    assert_eq!(t.delete(KeySpec::prefix("c")), Ok(delete_response(9, 2)));
    // etcd storeTxnWrite.DeleteRange: deleting nothing keeps the revision and writes no
    // event.
    assert_eq!(
        t.apply(delete_prev(span("a", "c"))),
        Ok(Response::DeleteRange(DeleteResponse {
            revision: 9,
            deleted: 0,
            prev_kvs: vec![]
        }))
    );
    assert_eq!(t.s.revision(), 9);
    assert!(t.s.events_since(10).is_empty());
}

#[test]
fn a_compare_over_a_range_needs_every_key_and_an_empty_range_is_zeros() {
    let mut t = T::new();
    t.put("k/1", "x", 0).unwrap(); // rev 2
    t.put("k/2", "y", 0).unwrap(); // rev 3
    let holds = |t: &mut T, keys: KeySpec, result, target| {
        let r = txn_response(t.apply(txn(
            vec![Compare {
                keys,
                result,
                target,
            }],
            vec![],
            vec![],
        )));
        r.succeeded
    };
    use CompareResult::*;
    use CompareTarget::*;
    let k = || KeySpec::prefix("k/");
    // etcd applyCompare: every key of [key, range_end) must satisfy the compare.
    assert!(holds(&mut t, k(), Greater, Create(1)));
    assert!(
        !holds(&mut t, k(), Greater, Create(2)),
        "k/1 was created at 2"
    );
    assert!(holds(&mut t, k(), Less, Mod(4)));
    assert!(holds(&mut t, k(), Equal, Version(1)));
    assert!(!holds(&mut t, k(), Equal, Value("x".into())), "k/2 is y");
    assert!(holds(&mut t, span("k/1", "k/2"), Equal, Value("x".into())));
    assert!(holds(&mut t, KeySpec::from_key("k/"), NotEqual, Lease(7)));
    // etcd applyCompare: an empty range compares as one key with every field zero...
    let none = || KeySpec::prefix("none/");
    assert!(holds(&mut t, none(), Equal, Create(0)));
    assert!(holds(&mut t, none(), Equal, Mod(0)));
    assert!(holds(&mut t, none(), Equal, Version(0)));
    assert!(holds(&mut t, none(), Equal, Lease(0)));
    assert!(!holds(&mut t, none(), Greater, Mod(0)));
    // ...except that a value compare on it is false, whatever the result.
    assert!(!holds(&mut t, none(), NotEqual, Value("x".into())));
    assert!(!holds(&mut t, none(), Equal, Value(String::new())));
    assert!(!holds(&mut t, none(), Less, Value("zzz".into())));
    assert_eq!(t.s.revision(), 3, "compares alone write nothing");
}

#[test]
fn a_nested_txn_compares_against_the_state_before_the_outer_txn() {
    let mut t = T::new();
    t.grant(5, 1000).unwrap();
    t.put("flag", "on", 0).unwrap(); // rev 2
    use CompareResult::Equal;
    let flag_on = Compare {
        keys: KeySpec::key("flag"),
        result: Equal,
        target: CompareTarget::Value("on".into()),
    };
    let nested = TxnRequest {
        compare: vec![flag_on, Compare::create_revision_is("new", 0)],
        success: vec![put_op("saw-before", 0)],
        failure: vec![put_op("saw-after", 0)],
    };
    // etcd compareToPath: the compares of every txn on the chosen path, nested ones
    // included, are evaluated on the read view before any op of the outer txn runs.
    let r = txn_response(t.apply(txn(
        vec![],
        vec![
            TxnOp::DeleteRange(DeleteRequest::of(KeySpec::key("flag"))),
            put_op("new", 0),
            TxnOp::Txn(Box::new(nested)),
        ],
        vec![],
    )));
    assert_eq!((r.revision, r.succeeded), (3, true));
    let OpResponse::Txn(inner) = &r.responses[2] else {
        panic!("{r:?}")
    };
    assert!(
        inner.succeeded,
        "the flag was on and `new` absent before the txn"
    );
    assert!(t.s.get("flag").is_none() && t.s.get("new").is_some());
    assert_eq!(
        t.kv("saw-before"),
        (3, 3, 1),
        "run in the outer txn's revision"
    );
    assert!(t.s.get("saw-after").is_none());
    // etcd checkRequests follows the same path: the nested branch that will run names an
    // unknown lease, so the whole txn fails, although `x` exists once its first op ran...
    let nested = |lease_then, lease_else| {
        TxnOp::Txn(Box::new(TxnRequest {
            compare: vec![Compare::create_revision_is("x", 0)],
            success: vec![put_op("y", lease_then)],
            failure: vec![put_op("y", lease_else)],
        }))
    };
    let r = t.apply(txn(vec![], vec![put_op("x", 0), nested(99, 5)], vec![]));
    assert_eq!(r, Err(ServiceError::LeaseNotFound));
    assert!(t.s.get("x").is_none());
    assert_eq!(t.s.revision(), 3);
    // ...and the branch that will not run is not checked.
    let r = txn_response(t.apply(txn(vec![], vec![put_op("x", 0), nested(5, 99)], vec![])));
    assert_eq!(r.revision, 4);
    assert_eq!(t.s.get("y").unwrap().lease, 5);
}

#[test]
fn a_range_in_a_txn_sees_the_revision_before_its_first_write_then_its_own() {
    let mut t = T::new();
    t.put("a", "1", 0).unwrap(); // rev 2
    let get = |k: &str| TxnOp::Range(RangeRequest::get(k));
    let r = txn_response(t.apply(txn(
        vec![],
        vec![
            get("a"),
            TxnOp::DeleteRange(DeleteRequest::of(KeySpec::key("nothing"))),
            get("b"),
            put_value_op("b", "2"),
            get("b"),
            get("a"),
        ],
        vec![],
    )));
    let seen: Vec<(u64, Vec<String>)> = r
        .responses
        .iter()
        .map(|op| match op {
            OpResponse::Range(rr) => (rr.revision, keys_of(rr)),
            OpResponse::DeleteRange(d) => (d.revision, vec![]),
            OpResponse::Put(p) => (p.revision, vec![]),
            other => panic!("{other:?}"),
        })
        .collect();
    // etcd storeTxnWrite.Range: beginRev until the txn changed something (a delete of
    // nothing changes nothing), then beginRev + 1, with the txn's own writes visible.
    assert_eq!(
        seen,
        vec![
            (2, vec!["a".into()]),
            (2, vec![]),
            (2, vec![]),
            (3, vec![]),
            (3, vec!["b".into()]),
            (3, vec!["a".into()]),
        ]
    );
    assert_eq!(r.revision, 3);
    // etcd Txn: a read-only txn answers the current revision.
    let r = txn_response(t.apply(txn(vec![], vec![get("b")], vec![])));
    assert_eq!(r.revision, 3);
}

/// k: "v1" at 2, "v2" at 3, deleted at 4, "v3" at 5; other: put at 6.
fn history() -> T {
    let mut t = T::new();
    t.put("k", "v1", 0).unwrap();
    t.put("k", "v2", 0).unwrap();
    t.delete(KeySpec::key("k")).unwrap();
    t.put("k", "v3", 0).unwrap();
    t.put("other", "o", 0).unwrap();
    assert_eq!(t.s.revision(), 6);
    t
}

fn read_at(t: &T, revision: u64) -> Result<RangeResponse, ServiceError> {
    t.s.range(&RangeRequest {
        revision,
        ..RangeRequest::of(KeySpec::prefix(""))
    })
}

#[test]
fn a_read_at_a_past_revision_sees_the_store_as_it_was() {
    let t = history();
    let at = |rev| {
        let r = read_at(&t, rev).unwrap();
        let kvs: Vec<(String, String, u64, u64, u64)> = r
            .kvs
            .iter()
            .map(|kv| {
                let (k, v) = (kv.key.clone(), kv.value.clone());
                (k, v, kv.create_revision, kv.mod_revision, kv.version)
            })
            .collect();
        (kvs, r.count)
    };
    let kv = |v: &str, c, m, ver| ("k".to_string(), v.to_string(), c, m, ver);
    // etcd Range with revision = a past revision: the keys as they were at it.
    assert_eq!(at(1), (vec![], 0));
    assert_eq!(at(2), (vec![kv("v1", 2, 2, 1)], 1));
    assert_eq!(at(3), (vec![kv("v2", 2, 3, 2)], 1));
    assert_eq!(at(4), (vec![], 0), "deleted at 4");
    assert_eq!(
        at(5),
        (vec![kv("v3", 5, 5, 1)], 1),
        "re-created: version 1 again"
    );
    // etcd: the current revision, or 0, is the current state.
    assert_eq!(read_at(&t, 6).unwrap().kvs, read_at(&t, 0).unwrap().kvs);
    assert_eq!(read_at(&t, 0).unwrap().kvs.len(), 2);
    // etcd rangeKeys: a revision after the current one is ErrFutureRev.
    assert_eq!(read_at(&t, 7), Err(ServiceError::FutureRev));
    // Limits, filters and sorting apply to the past state.
    let r =
        t.s.range(&RangeRequest {
            revision: 3,
            min_mod_revision: 3,
            ..RangeRequest::get("k")
        })
        .unwrap();
    assert_eq!((keys_of(&r), r.count), (vec!["k".into()], 1));
}

/// etcd 3.4 `rangeKeys` answers `Rev: curRev` whatever `ro.Rev`, and Range copies it to
/// the header: a historical read is headed with the store's current revision.
#[test]
#[ignore = "Store::range_seen answers the requested revision as RangeResponse::revision; etcd 3.4's header is the current one"]
fn a_read_at_a_past_revision_is_headed_with_the_current_revision() {
    let t = history();
    assert_eq!(read_at(&t, 3).unwrap().revision, 6);
}

#[test]
fn a_compacted_revision_cannot_be_read() {
    let mut t = history();
    t.apply(Request::Compact { revision: 4 }).unwrap();
    // etcd rangeKeys: rev < compactMainRev is ErrCompacted; the compacted revision itself
    // and later ones still read; a future one is still ErrFutureRev.
    assert_eq!(read_at(&t, 3), Err(ServiceError::Compacted));
    assert_eq!(read_at(&t, 2), Err(ServiceError::Compacted));
    assert!(read_at(&t, 4).unwrap().kvs.is_empty());
    assert_eq!(keys_of(&read_at(&t, 5).unwrap()), ["k"]);
    assert_eq!(read_at(&t, 7), Err(ServiceError::FutureRev));
    // etcd checkRequestRange: a range at a compacted revision fails the whole txn before
    // any op runs...
    let past = |revision| {
        TxnOp::Range(RangeRequest {
            revision,
            ..RangeRequest::get("k")
        })
    };
    let r = t.apply(txn(vec![], vec![put_op("z", 0), past(3)], vec![]));
    assert_eq!(r, Err(ServiceError::Compacted));
    // ...and so does one after the revision before the txn, even the one the txn's own
    // write would create (checked against rv.Rev()).
    let r = t.apply(txn(vec![], vec![put_op("z", 0), past(7)], vec![]));
    assert_eq!(r, Err(ServiceError::FutureRev));
    assert!(t.s.get("z").is_none());
    assert_eq!(t.s.revision(), 6);
    // A past revision that is still there reads inside a txn.
    let r = txn_response(t.apply(txn(vec![], vec![put_op("z", 0), past(5)], vec![])));
    let OpResponse::Range(rr) = &r.responses[1] else {
        panic!("{r:?}")
    };
    assert_eq!(rr.kvs[0].value, "v3");
    assert_eq!(r.revision, 7);
}

#[test]
fn compact_bounds_and_revision() {
    let mut t = history(); // revision 6
    let compact = |t: &mut T, revision| t.apply(Request::Compact { revision });
    // etcd Compact: a revision after the current one is ErrFutureRev.
    assert_eq!(compact(&mut t, 7), Err(ServiceError::FutureRev));
    assert_eq!(t.s.compacted(), 0);
    // etcd Compact: the header is the current revision, which compaction does not move.
    assert_eq!(compact(&mut t, 3), Ok(Response::Compact { revision: 6 }));
    assert_eq!((t.s.compacted(), t.s.revision()), (3, 6));
    // etcd Compact: at or before the compacted revision is ErrCompacted.
    assert_eq!(compact(&mut t, 3), Err(ServiceError::Compacted));
    assert_eq!(compact(&mut t, 2), Err(ServiceError::Compacted));
    assert_eq!(t.s.compacted(), 3);
    // Up to the current revision.
    assert_eq!(compact(&mut t, 6), Ok(Response::Compact { revision: 6 }));
    assert_eq!((t.s.compacted(), t.s.revision()), (6, 6));
    // The current state is untouched and the next write gets the next revision.
    assert_eq!(read_at(&t, 0).unwrap().count, 2);
    assert_eq!(t.put("k", "v4", 0), Ok(put_response(7)));
}

#[test]
fn events_record_puts_and_deletes_with_prev_kv() {
    let mut t = T::new();
    t.grant(5, 1000).unwrap();
    t.put("a", "1", 0).unwrap(); // 2
    t.put("a", "2", 0).unwrap(); // 3
    t.put("b", "x", 5).unwrap(); // 4
    t.delete(KeySpec::key("a")).unwrap(); // 5
    t.apply(Request::lease_expiry(5)).unwrap(); // 6
    let kv = |key: &str, value: &str, create, m, version, lease| KeyValue {
        key: key.into(),
        value: value.into(),
        create_revision: create,
        mod_revision: m,
        version,
        lease,
    };
    // etcd: a delete event's kv is the tombstone, the key and the delete's revision as
    // mod_revision, every other field zero (watchableStoreTxnWrite.End).
    let tombstone = |key: &str, rev| KeyValue {
        key: key.into(),
        mod_revision: rev,
        ..KeyValue::default()
    };
    let event = |kind, kv, prev_kv| Event { kind, kv, prev_kv };
    let (a1, a2, b) = (
        kv("a", "1", 2, 2, 1, 0),
        kv("a", "2", 2, 3, 2, 0),
        kv("b", "x", 4, 4, 1, 5),
    );
    use EventKind::{Delete, Put};
    // etcd watch: every change in revision order; prev_kv is the key before the change
    // (none for a creation); a lease revoke deletes its keys (lessor.Revoke).
    let all = [
        event(Put, a1.clone(), None),
        event(Put, a2.clone(), Some(a1)),
        event(Put, b.clone(), None),
        event(Delete, tombstone("a", 5), Some(a2)),
        event(Delete, tombstone("b", 6), Some(b)),
    ];
    assert_eq!(t.s.events_since(0), &all[..]);
    assert_eq!(t.s.events_since(2), &all[..]);
    // A watch from revision r sees the events at r and after.
    assert_eq!(t.s.events_since(4), &all[2..]);
    assert_eq!(t.s.events_since(6), &all[4..]);
    assert!(t.s.events_since(7).is_empty());
    assert_eq!(
        all.iter().map(Event::revision).collect::<Vec<_>>(),
        [2, 3, 4, 5, 6]
    );
    // waitDelete: the first delete of the key at or after a revision (puts do not count).
    assert_eq!(t.s.first_delete_at_or_after("a", 0), Some(5));
    assert_eq!(t.s.first_delete_at_or_after("a", 5), Some(5));
    assert_eq!(t.s.first_delete_at_or_after("a", 6), None);
    assert_eq!(t.s.first_delete_at_or_after("b", 3), Some(6));
    assert_eq!(t.s.first_delete_at_or_after("c", 0), None);
    // A txn's events share its revision.
    t.apply(txn(
        vec![],
        vec![put_value_op("c", "1"), put_value_op("d", "1")],
        vec![],
    ))
    .unwrap();
    let revs: Vec<(String, u64)> =
        t.s.events_since(7)
            .iter()
            .map(|e| (e.kv.key.clone(), e.revision()))
            .collect();
    assert_eq!(revs, [("c".to_string(), 7), ("d".to_string(), 7)]);
}

/// etcd 3.4's watch server (`v3rpc/watch.go`) fills an event's prev_kv by reading the
/// key at `ModRevision - 1`: when one txn changes a key twice, both events carry the key
/// as it was before the txn, not the txn's intermediate version.
#[test]
#[ignore = "Event::prev_kv is the key before each change, also inside a txn; etcd 3.4's watch reads it at ModRevision - 1"]
fn a_watch_prev_kv_is_the_key_before_the_revision() {
    let mut t = T::new();
    t.put("a", "0", 0).unwrap(); // 2
    let before = t.s.get("a").cloned();
    t.apply(txn(
        vec![],
        vec![
            put_value_op("a", "1"),
            TxnOp::DeleteRange(DeleteRequest::of(KeySpec::key("a"))),
        ],
        vec![],
    ))
    .unwrap();
    let prevs: Vec<Option<KeyValue>> =
        t.s.events_since(3)
            .iter()
            .map(|e| e.prev_kv.clone())
            .collect();
    assert_eq!(prevs, vec![before.clone(), before]);
}
