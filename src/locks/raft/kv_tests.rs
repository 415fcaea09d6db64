use super::*;

const MIN_TTL: u64 = 150;

struct T {
    s: Store,
    index: u64,
}

impl T {
    fn new() -> T {
        T {
            s: Store::new(MIN_TTL),
            index: 0,
        }
    }

    fn apply(&mut self, req: Request) -> Result<Response, ServiceError> {
        self.index += 1;
        // Every request goes through its wire form, as it would through the log.
        let wire = serde_json::to_vec(&req).unwrap();
        let req: Request = serde_json::from_slice(&wire).unwrap();
        self.s.apply(self.index, &req)
    }

    fn put(&mut self, key: &str, value: &str, lease: LeaseId) -> Result<Response, ServiceError> {
        self.apply(Request::Put(PutRequest::new(key, value, lease)))
    }

    fn delete(&mut self, keys: KeySpec) -> Result<Response, ServiceError> {
        self.apply(Request::DeleteRange(DeleteRequest::of(keys)))
    }

    fn range(&self, r: &RangeRequest) -> RangeResponse {
        self.s.range(r).unwrap()
    }

    fn kv(&self, key: &str) -> (u64, u64, u64) {
        let kv = self.s.get(key).unwrap();
        (kv.create_revision, kv.mod_revision, kv.version)
    }

    fn grant(&mut self, id: LeaseId, ttl_ms: u64) -> Result<Response, ServiceError> {
        self.apply(Request::LeaseGrant { id, ttl_ms })
    }
}

fn put_op(key: &str, lease: LeaseId) -> TxnOp {
    TxnOp::Put(PutRequest::new(key, "", lease))
}

fn put_response(revision: u64) -> Response {
    Response::Put(PutResponse {
        revision,
        prev_kv: None,
    })
}

fn delete_response(revision: u64, deleted: u64) -> Response {
    Response::DeleteRange(DeleteResponse {
        revision,
        deleted,
        prev_kvs: vec![],
    })
}

#[test]
fn create_mod_revision_and_version_follow_etcd() {
    let mut t = T::new();
    assert_eq!(t.s.revision(), 1, "an empty etcd reports revision 1");
    assert_eq!(t.put("foo", "a", 0), Ok(put_response(2)));
    assert_eq!(t.kv("foo"), (2, 2, 1));
    assert_eq!(t.put("foo", "b", 0), Ok(put_response(3)));
    assert_eq!(t.kv("foo"), (2, 3, 2));
    t.put("bar", "x", 0).unwrap();
    assert_eq!(t.kv("bar"), (4, 4, 1));
    let del = t.delete(KeySpec::key("foo")).unwrap();
    assert_eq!(del, delete_response(5, 1));
    // Deleting nothing writes nothing.
    let del = t.delete(KeySpec::key("foo")).unwrap();
    assert_eq!(del, delete_response(5, 0));
    // Re-created: new create revision, version starts again.
    t.put("foo", "c", 0).unwrap();
    assert_eq!(t.kv("foo"), (6, 6, 1));
    assert_eq!(t.s.get("foo").unwrap().value, "c");
    assert_eq!(t.s.applied_index(), 6);
}

#[test]
fn one_revision_per_write_txn_none_for_reads() {
    let mut t = T::new();
    let r = t
        .apply(Request::Txn(TxnRequest {
            compare: vec![],
            success: vec![put_op("a", 0), put_op("b", 0), put_op("a", 0)],
            failure: vec![],
        }))
        .unwrap();
    assert_eq!(r.revision(), 2);
    assert_eq!(t.kv("a"), (2, 2, 2));
    assert_eq!(t.kv("b"), (2, 2, 1));
    let r = t
        .apply(Request::Txn(TxnRequest {
            compare: vec![],
            success: vec![TxnOp::Range(RangeRequest::get("a"))],
            failure: vec![],
        }))
        .unwrap();
    assert_eq!(r.revision(), 2, "a read-only txn does not write");
    let r = t.delete(KeySpec::prefix("")).unwrap();
    assert_eq!(r, delete_response(3, 2));
    assert_eq!(t.s.first_delete_at_or_after("a", 0), Some(3));
    assert_eq!(t.s.first_delete_at_or_after("b", 3), Some(3));
    assert_eq!(t.s.first_delete_at_or_after("b", 4), None);
}

#[test]
fn txn_compare_on_create_revision_is_the_mutex_acquire() {
    // tryAcquire: If(CreateRevision(myKey) = 0).Then(Put(myKey, lease), Get(pfx,
    // FirstCreate)).Else(Get(myKey), Get(pfx, FirstCreate)).
    let try_acquire = |t: &mut T, key: &str, lease: LeaseId| {
        t.apply(Request::Txn(TxnRequest {
            compare: vec![Compare::create_revision_is(key, 0)],
            success: vec![
                put_op(key, lease),
                TxnOp::Range(RangeRequest::first_created("lock/")),
            ],
            failure: vec![
                TxnOp::Range(RangeRequest::get(key)),
                TxnOp::Range(RangeRequest::first_created("lock/")),
            ],
        }))
        .unwrap()
    };
    let owner = |r: &Response| match r {
        Response::Txn(TxnResponse { responses, .. }) => match &responses[1] {
            OpResponse::Range(rr) => rr.kvs[0].clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let mut t = T::new();
    t.grant(7, 1000).unwrap();
    t.grant(8, 1000).unwrap();
    let a = try_acquire(&mut t, "lock/7", 7);
    let Response::Txn(TxnResponse {
        revision: my_rev,
        succeeded: true,
        ..
    }) = a
    else {
        panic!("{a:?}")
    };
    // The range after the put sees it, at the txn's revision: myRev = header revision.
    assert_eq!(owner(&a).key, "lock/7");
    assert_eq!(owner(&a).create_revision, my_rev);
    let b = try_acquire(&mut t, "lock/8", 8);
    assert_eq!(owner(&b).key, "lock/7", "the oldest key owns the lock");
    // Retrying with the same key takes the else branch and changes nothing.
    let rev = t.s.revision();
    let again = try_acquire(&mut t, "lock/8", 8);
    let Response::Txn(TxnResponse {
        revision,
        succeeded: false,
        responses,
    }) = &again
    else {
        panic!("{again:?}")
    };
    assert_eq!(*revision, rev);
    let OpResponse::Range(mine) = &responses[0] else {
        panic!()
    };
    assert_eq!(mine.kvs[0].create_revision, my_rev + 1);
}

#[test]
fn compare_targets_and_missing_keys() {
    let mut t = T::new();
    t.put("k", "v", 0).unwrap();
    let holds = |t: &mut T, c: Compare| match t
        .apply(Request::Txn(TxnRequest {
            compare: vec![c],
            success: vec![],
            failure: vec![],
        }))
        .unwrap()
    {
        Response::Txn(TxnResponse { succeeded, .. }) => succeeded,
        r => panic!("{r:?}"),
    };
    let cmp = |key: &str, result, target| Compare {
        keys: KeySpec::key(key),
        result,
        target,
    };
    use CompareResult::*;
    use CompareTarget::*;
    assert!(holds(&mut t, cmp("k", Equal, Create(2))));
    assert!(holds(&mut t, cmp("k", Greater, Mod(1))));
    assert!(holds(&mut t, cmp("k", Less, Version(2))));
    assert!(holds(&mut t, cmp("k", Equal, Value("v".into()))));
    assert!(holds(&mut t, cmp("k", NotEqual, Value("w".into()))));
    assert!(holds(&mut t, cmp("k", Equal, Lease(0))));
    // A missing key has zero revisions, version and lease...
    assert!(holds(&mut t, cmp("nope", Equal, Create(0))));
    assert!(holds(&mut t, cmp("nope", Equal, Version(0))));
    // ...and a value compare on it always fails, even "!=".
    assert!(!holds(&mut t, cmp("nope", NotEqual, Value("x".into()))));
}

#[test]
fn range_last_created_below_a_revision() {
    let mut t = T::new();
    t.put("lock/c", "", 0).unwrap(); // create 2
    t.put("lock/a", "", 0).unwrap(); // create 3
    t.put("lock/b", "", 0).unwrap(); // create 4
    t.put("other", "", 0).unwrap(); // create 5
    t.put("lock/c", "", 0).unwrap(); // mod 6, create stays 2
    let key = |r: RangeResponse| r.kvs.iter().map(|kv| kv.key.clone()).collect::<Vec<_>>();
    // waitDeletes(pfx, myRev - 1) for myRev = 4: the waiter just ahead is lock/a.
    let r = t.range(&RangeRequest::last_created_at_or_before("lock/", 3));
    assert_eq!(key(r.clone()), vec!["lock/a"]);
    assert_eq!((r.count, r.more, r.revision), (3, true, 6));
    assert_eq!(
        key(t.range(&RangeRequest::last_created_at_or_before("lock/", 2))),
        vec!["lock/c"]
    );
    assert!(t
        .range(&RangeRequest::last_created_at_or_before("lock/", 1))
        .kvs
        .is_empty());
    assert_eq!(
        key(t.range(&RangeRequest::first_created("lock/"))),
        vec!["lock/c"]
    );
    let all = t.range(&RangeRequest::of(KeySpec::prefix("lock/")));
    assert_eq!(
        key(all),
        vec!["lock/a", "lock/b", "lock/c"],
        "key order by default"
    );
    let newest_first = t.range(&RangeRequest {
        sort_order: SortOrder::Descend,
        sort_target: SortTarget::Create,
        min_create_revision: 3,
        ..RangeRequest::of(KeySpec::prefix("lock/"))
    });
    assert_eq!(key(newest_first), vec!["lock/b", "lock/a"]);
}

#[test]
fn leases_attach_revoke_and_reject_missing_ids() {
    let mut t = T::new();
    assert_eq!(
        t.grant(5, 10),
        Ok(Response::LeaseGrant {
            revision: 1,
            id: 5,
            ttl_ms: MIN_TTL
        }),
        "TTL raised to the minimum, no revision"
    );
    assert_eq!(t.grant(5, 1000), Err(ServiceError::LeaseExists));
    assert_eq!(t.grant(0, 1000), Err(ServiceError::LeaseNotFound));
    t.grant(6, 1000).unwrap();
    t.put("x", "", 5).unwrap(); // rev 2
    t.put("y", "", 5).unwrap(); // rev 3
    t.put("z", "", 6).unwrap(); // rev 4
    t.put("z", "", 5).unwrap(); // rev 5: moved to lease 5
    t.put("y", "", 0).unwrap(); // rev 6: detached
    assert_eq!(
        t.s.lease(5)
            .unwrap()
            .keys
            .iter()
            .cloned()
            .collect::<Vec<_>>(),
        vec!["x", "z"]
    );
    assert!(t.s.lease(6).unwrap().keys.is_empty());
    // A put naming a missing lease fails and writes nothing.
    assert_eq!(t.put("w", "", 99), Err(ServiceError::LeaseNotFound));
    assert_eq!(t.s.revision(), 6);
    assert!(t.s.get("w").is_none());
    // So does a txn whose chosen branch names one; the other branch is not checked.
    let txn = |lease_then, lease_else, cond| {
        Request::Txn(TxnRequest {
            compare: vec![Compare::create_revision_is("x", if cond { 2 } else { 0 })],
            success: vec![put_op("t", lease_then)],
            failure: vec![put_op("t", lease_else)],
        })
    };
    assert_eq!(t.apply(txn(99, 5, true)), Err(ServiceError::LeaseNotFound));
    assert_eq!(t.s.revision(), 6);
    assert!(t.apply(txn(5, 99, true)).is_ok());
    assert_eq!(t.s.revision(), 7);
    // Revoke: every attached key goes, under one revision, in key order.
    assert_eq!(
        t.apply(Request::lease_expiry(5)),
        Ok(Response::LeaseRevoke { revision: 8 })
    );
    for k in ["t", "x", "z"] {
        assert!(t.s.get(k).is_none());
        assert_eq!(t.s.first_delete_at_or_after(k, 8), Some(8));
    }
    assert!(t.s.get("y").is_some());
    assert!(t.s.lease(5).is_none());
    assert_eq!(
        t.apply(Request::lease_expiry(5)),
        Err(ServiceError::LeaseNotFound)
    );
    // Revoking a lease without keys writes nothing.
    assert_eq!(
        t.apply(Request::lease_expiry(6)),
        Ok(Response::LeaseRevoke { revision: 8 })
    );
}

/// etcd #11456 on the store alone: a waiter's lease is revoked while it waits for the
/// owner; when the owner releases, `waitDeletes` finds nobody ahead, and only the
/// post-wait `Get(myKey)` reveals the waiter's key is gone (ErrSessionExpired).
#[test]
fn a_waiter_whose_lease_died_is_caught_by_the_post_wait_check() {
    let mut t = T::new();
    t.grant(1, 1000).unwrap();
    t.grant(2, 1000).unwrap();
    let acquire = |t: &mut T, key: &str, lease| {
        t.apply(Request::Txn(TxnRequest {
            compare: vec![Compare::create_revision_is(key, 0)],
            success: vec![put_op(key, lease)],
            failure: vec![],
        }))
        .unwrap()
        .revision()
    };
    let rev_a = acquire(&mut t, "L/1", 1);
    let rev_b = acquire(&mut t, "L/2", 2);
    assert!(rev_b > rev_a);
    // B waits for the key just ahead of it.
    let ahead = t.range(&RangeRequest::last_created_at_or_before("L/", rev_b - 1));
    assert_eq!(ahead.kvs[0].key, "L/1");
    let watch_from = ahead.revision;
    // B's lease expires (the leader proposes its revoke), then A releases.
    t.apply(Request::lease_expiry(2)).unwrap();
    t.delete(KeySpec::key("L/1")).unwrap();
    assert!(t.s.first_delete_at_or_after("L/1", watch_from).is_some());
    // waitDeletes loops: nobody is ahead any more.
    assert!(t
        .range(&RangeRequest::last_created_at_or_before("L/", rev_b - 1))
        .kvs
        .is_empty());
    // Without the post-wait check B now believes it holds the lock. With it:
    assert!(
        t.range(&RangeRequest::get("L/2")).kvs.is_empty(),
        "session expired"
    );
}

#[test]
fn request_encoding_is_stable_json() {
    let req = Request::Txn(TxnRequest {
        compare: vec![Compare::create_revision_is("k", 0)],
        success: vec![put_op("k", 3)],
        failure: vec![TxnOp::Range(RangeRequest::get("k"))],
    });
    let json = serde_json::to_string(&req).unwrap();
    assert_eq!(
        json,
        concat!(
            r#"{"txn":{"compare":[{"keys":{"key":"k"},"result":"equal","target":{"create":0}}],"#,
            r#""success":[{"put":{"key":"k","value":"","lease":3,"prev_kv":false,"#,
            r#""ignore_value":false,"ignore_lease":false}}],"#,
            r#""failure":[{"range":{"keys":{"key":"k"},"limit":0,"revision":0,"#,
            r#""sort_order":"none","sort_target":"key","serializable":false,"#,
            r#""keys_only":false,"count_only":false,"min_mod_revision":0,"#,
            r#""max_mod_revision":0,"min_create_revision":0,"max_create_revision":0}}]}}"#
        )
    );
    assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), req);
}

// ---- etcd 3.4 semantics of the store: each test checks facts of etcd v3.4's apply layer
// (`etcdserver/apply.go`) and MVCC store (`mvcc/kvstore_txn.go`), cited on each assertion.

#[path = "kv_range_tests.rs"]
mod ranges;
