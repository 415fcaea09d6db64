//! Transactions as etcd 3.4.23 checks them (sizes, ops, overlapping intervals as its
//! `checkIntervals` finds them), and the protobuf responses built from the model's.

use super::*;

// ---- txn: sizes ----

#[test]
fn a_txn_of_max_ops_everywhere_is_accepted() {
    let t = pb::TxnRequest {
        compare: (0..MAX_TXN_OPS)
            .map(|i| version_is(&format!("c{i}"), 0))
            .collect(),
        success: puts(MAX_TXN_OPS),
        failure: puts(MAX_TXN_OPS),
    };
    assert!(txn_request(t).is_ok());
}

#[test]
fn one_compare_too_many_is_refused() {
    let t = pb::TxnRequest {
        compare: (0..=MAX_TXN_OPS)
            .map(|i| version_is(&format!("c{i}"), 0))
            .collect(),
        ..Default::default()
    };
    assert_eq!(txn_request(t), Err(ApiError::TooManyOps));
}

#[test]
fn one_op_too_many_in_either_branch_is_refused() {
    assert_eq!(
        check(puts(MAX_TXN_OPS + 1), vec![]),
        Err(ApiError::TooManyOps)
    );
    assert_eq!(
        check(vec![], puts(MAX_TXN_OPS + 1)),
        Err(ApiError::TooManyOps)
    );
}

#[test]
fn too_many_ops_is_found_before_an_empty_key() {
    let mut ops = puts(MAX_TXN_OPS + 1);
    ops[0] = put("");
    assert_eq!(check(ops, vec![]), Err(ApiError::TooManyOps));
}

#[test]
fn a_nested_txn_gets_what_the_outer_one_leaves() {
    // etcd: 100 compares and a nested txn of 28 puts passed; of 29, too many.
    let outer = |inner: usize| pb::TxnRequest {
        compare: (0..100).map(|i| version_is(&format!("c{i}"), 0)).collect(),
        success: vec![nested(puts(inner), vec![])],
        failure: vec![],
    };
    assert!(txn_request(outer(MAX_TXN_OPS - 100)).is_ok());
    assert_eq!(
        txn_request(outer(MAX_TXN_OPS - 99)),
        Err(ApiError::TooManyOps)
    );
}

#[test]
fn a_nested_txns_budget_shrinks_again_at_each_level() {
    // Outer: 64 ops, leaving 64; middle: 60 ops, leaving 4; inner: 5 is too many.
    let inner = |n: usize| nested(puts(n), vec![]);
    let middle = |n: usize| {
        let mut ops: Vec<_> = (0..59).map(|i| get(&format!("m{i}"))).collect();
        ops.push(inner(n));
        nested(ops, vec![])
    };
    let outer = |n: usize| {
        let mut ops: Vec<_> = (0..63).map(|i| get(&format!("o{i}"))).collect();
        ops.push(middle(n));
        check(ops, vec![])
    };
    assert_eq!(outer(4), Ok(()));
    assert_eq!(outer(5), Err(ApiError::TooManyOps));
}

// ---- txn: ops ----

#[test]
fn a_request_op_without_a_request_is_key_not_found() {
    // etcd's checkRequestOp: "empty op / nil entry" → ErrGRPCKeyNotFound (observed).
    let empty = pb::RequestOp { request: None };
    let e = Err(ApiError::Service(ServiceError::KeyNotFound));
    assert_eq!(check(vec![empty.clone()], vec![]), e);
    assert_eq!(check(vec![], vec![empty.clone()]), e);
    assert_eq!(check(vec![nested(vec![], vec![empty])], vec![]), e);
}

#[test]
fn an_op_without_a_key_is_refused_at_any_depth() {
    assert_eq!(check(vec![get("")], vec![]), Err(ApiError::EmptyKey));
    assert_eq!(check(vec![], vec![del("", "")]), Err(ApiError::EmptyKey));
    let deep = nested(vec![nested(vec![], vec![put("")])], vec![]);
    assert_eq!(check(vec![deep], vec![]), Err(ApiError::EmptyKey));
}

#[test]
fn ops_of_every_kind_carry_over() {
    let t = txn_request(txn_pb(
        vec![
            get("a"),
            put("b"),
            del("c", "d"),
            nested(vec![put("e")], vec![]),
        ],
        vec![],
    ))
    .unwrap();
    assert_eq!(
        t.success,
        vec![
            TxnOp::Range(RangeRequest::get("a")),
            TxnOp::Put(PutRequest::new("b", "v", 0)),
            TxnOp::DeleteRange(DeleteRequest::of(KeySpec {
                key: "c".into(),
                range_end: "d".into(),
            })),
            TxnOp::Txn(Box::new(TxnRequest {
                compare: vec![],
                success: vec![TxnOp::Put(PutRequest::new("e", "v", 0))],
                failure: vec![],
            })),
        ]
    );
}

// ---- txn: checkIntervals ----

#[test]
fn a_key_put_twice_in_one_branch_is_a_duplicate() {
    assert_eq!(
        check(vec![put("a"), put("a")], vec![]),
        Err(ApiError::DuplicateKey)
    );
    assert_eq!(
        check(vec![], vec![put("a"), put("a")]),
        Err(ApiError::DuplicateKey)
    );
}

#[test]
fn the_two_branches_may_put_the_same_key() {
    assert_eq!(check(vec![put("a")], vec![put("a")]), Ok(()));
}

#[test]
fn reads_do_not_count_as_writes() {
    assert_eq!(check(vec![get("a"), put("a"), get("a")], vec![]), Ok(()));
}

#[test]
fn a_put_of_a_deleted_key_is_a_duplicate_in_either_order() {
    assert_eq!(
        check(vec![del("a", ""), put("a")], vec![]),
        Err(ApiError::DuplicateKey)
    );
    assert_eq!(
        check(vec![put("a"), del("a", "")], vec![]),
        Err(ApiError::DuplicateKey)
    );
}

#[test]
fn a_put_inside_a_deleted_range_is_a_duplicate() {
    assert_eq!(
        check(vec![del("a", "c"), put("b")], vec![]),
        Err(ApiError::DuplicateKey)
    );
    assert_eq!(
        check(vec![put("b"), del("a", "c")], vec![]),
        Err(ApiError::DuplicateKey)
    );
    assert_eq!(
        check(vec![del("a", "c"), put("a")], vec![]),
        Err(ApiError::DuplicateKey)
    );
}

#[test]
fn a_put_outside_a_deleted_range_is_fine() {
    // The range end is exclusive.
    assert_eq!(check(vec![del("a", "c"), put("c")], vec![]), Ok(()));
    assert_eq!(check(vec![del("b", "c"), put("a")], vec![]), Ok(()));
    assert_eq!(check(vec![del("a", ""), put("ab")], vec![]), Ok(()));
}

#[test]
fn a_put_after_a_from_key_delete_passes_as_in_etcd() {
    // etcd's interval tree takes range end "\0" literally: [a, "\0") is empty, so etcd
    // 3.4 accepted `del --from-key a; put b` and `del "\0" "\0"; put b` in one branch.
    assert_eq!(check(vec![del("a", "\0"), put("b")], vec![]), Ok(()));
    assert_eq!(check(vec![del("\0", "\0"), put("b")], vec![]), Ok(()));
    assert_eq!(
        check(vec![nested(vec![del("a", "\0")], vec![]), put("b")], vec![]),
        Ok(())
    );
}

#[test]
fn a_nested_txns_branches_may_put_the_same_key() {
    // Observed: etcd accepted it and answered with the nested txn's header empty.
    assert_eq!(
        check(vec![nested(vec![put("a")], vec![put("a")])], vec![]),
        Ok(())
    );
}

#[test]
fn a_nested_put_clashes_with_an_outer_put_from_either_branch() {
    let d = Err(ApiError::DuplicateKey);
    assert_eq!(
        check(
            vec![nested(vec![put("a")], vec![put("b")]), put("a")],
            vec![]
        ),
        d
    );
    assert_eq!(
        check(
            vec![nested(vec![put("a")], vec![put("b")]), put("b")],
            vec![]
        ),
        d
    );
    // The outer put's position does not matter: nested txns are checked first.
    assert_eq!(
        check(vec![put("b"), nested(vec![], vec![put("b")])], vec![]),
        d
    );
}

#[test]
fn two_nested_txns_may_not_put_the_same_key() {
    // Both could run, whichever branches they take (observed, in both orders).
    let d = Err(ApiError::DuplicateKey);
    let then_a = || nested(vec![put("a")], vec![]);
    let else_a = || nested(vec![], vec![put("a")]);
    assert_eq!(check(vec![then_a(), else_a()], vec![]), d);
    assert_eq!(check(vec![else_a(), then_a()], vec![]), d);
    assert_eq!(check(vec![then_a(), then_a()], vec![]), d);
}

#[test]
fn an_outer_delete_covers_a_nested_put() {
    let t = nested(vec![put("a")], vec![put("a")]);
    assert_eq!(
        check(vec![t, del("a", "")], vec![]),
        Err(ApiError::DuplicateKey)
    );
    let e = nested(vec![], vec![put("b")]);
    assert_eq!(
        check(vec![del("a", "c"), e], vec![]),
        Err(ApiError::DuplicateKey)
    );
}

#[test]
fn a_nested_delete_covers_a_later_put() {
    let t = || nested(vec![del("a", "c")], vec![]);
    assert_eq!(
        check(vec![t(), put("b")], vec![]),
        Err(ApiError::DuplicateKey)
    );
    let n = nested(vec![put("b")], vec![]);
    assert_eq!(check(vec![t(), n], vec![]), Err(ApiError::DuplicateKey));
}

#[test]
fn a_nested_txn_may_put_in_one_branch_what_it_deletes_in_the_other() {
    // Observed: etcd accepted `txn(then: put b, else: del [a, c))`.
    assert_eq!(
        check(vec![nested(vec![put("b")], vec![del("a", "c")])], vec![]),
        Ok(())
    );
}

#[test]
fn a_nested_delete_does_not_reach_an_earlier_nested_put() {
    // etcd merges a nested txn's deletes only after checking its puts, so a later
    // sibling's delete is not held against an earlier sibling's put (unsure whether
    // intended; it is what checkIntervals in etcd 3.4's key.go does).
    let first = nested(vec![put("b")], vec![]);
    let second = nested(vec![del("a", "c")], vec![]);
    assert_eq!(check(vec![first, second], vec![]), Ok(()));
}

#[test]
fn duplicates_deep_inside_are_found() {
    let deep = nested(vec![nested(vec![put("a"), put("a")], vec![])], vec![]);
    assert_eq!(check(vec![], vec![deep]), Err(ApiError::DuplicateKey));
}

// ---- responses ----

#[test]
fn a_key_value_converts_field_by_field() {
    assert_eq!(
        kv_pb(kv("k")),
        mvccpb::KeyValue {
            key: b("k"),
            create_revision: 2,
            mod_revision: 3,
            version: 2,
            value: b("v"),
            lease: 5,
        }
    );
}

#[test]
fn a_top_level_header_comes_from_the_ids() {
    let r = RangeResponse {
        revision: 7,
        kvs: vec![kv("k")],
        count: 4,
        more: true,
    };
    assert_eq!(
        range_response(r, Some(&ids())),
        pb::RangeResponse {
            header: header(7),
            kvs: vec![kv_pb(kv("k"))],
            more: true,
            count: 4,
        }
    );
}

#[test]
fn a_zero_revision_takes_the_nodes() {
    let r = PutResponse {
        revision: 0,
        prev_kv: None,
    };
    assert_eq!(put_response(r, Some(&ids())).header, header(9));
}

#[test]
fn a_header_without_revision_keeps_the_rest() {
    assert_eq!(ids().without_revision(), header(0));
}

#[test]
fn put_and_delete_responses_carry_their_fields() {
    let p = PutResponse {
        revision: 4,
        prev_kv: Some(kv("k")),
    };
    assert_eq!(
        put_response(p, Some(&ids())),
        pb::PutResponse {
            header: header(4),
            prev_kv: Some(kv_pb(kv("k"))),
        }
    );
    let d = DeleteResponse {
        revision: 5,
        deleted: 2,
        prev_kvs: vec![kv("a"), kv("b")],
    };
    assert_eq!(
        delete_response(d, Some(&ids())),
        pb::DeleteRangeResponse {
            header: header(5),
            deleted: 2,
            prev_kvs: vec![kv_pb(kv("a")), kv_pb(kv("b"))],
        }
    );
}

#[test]
fn responses_inside_a_txn_carry_only_their_revision() {
    use pb::response_op::Response as R;
    let r = TxnResponse {
        revision: 6,
        succeeded: true,
        responses: vec![
            OpResponse::Put(PutResponse {
                revision: 6,
                prev_kv: None,
            }),
            OpResponse::Range(RangeResponse {
                revision: 6,
                kvs: vec![],
                count: 0,
                more: false,
            }),
            OpResponse::DeleteRange(DeleteResponse {
                revision: 6,
                deleted: 0,
                prev_kvs: vec![],
            }),
        ],
    };
    let t = txn_response(r, Some(&ids()));
    assert_eq!(t.header, header(6));
    assert!(t.succeeded);
    let headers: Vec<_> = t
        .responses
        .into_iter()
        .map(|op| match op.response {
            Some(R::ResponsePut(p)) => p.header,
            Some(R::ResponseRange(r)) => r.header,
            Some(R::ResponseDeleteRange(d)) => d.header,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(headers, vec![bare(6); 3]);
}

#[test]
fn a_nested_txns_header_is_empty() {
    // Observed: `"response_txn":{"header":{},...,"responses":[{"response_put":
    // {"header":{"revision":"5"}}}]}`.
    use pb::response_op::Response as R;
    let inner = TxnResponse {
        revision: 5,
        succeeded: false,
        responses: vec![OpResponse::Put(PutResponse {
            revision: 5,
            prev_kv: None,
        })],
    };
    let r = TxnResponse {
        revision: 5,
        succeeded: true,
        responses: vec![OpResponse::Txn(inner)],
    };
    let t = txn_response(r, Some(&ids()));
    let Some(R::ResponseTxn(n)) = t.responses.into_iter().next().unwrap().response else {
        panic!("not a txn")
    };
    assert_eq!(n.header, Some(pb::ResponseHeader::default()));
    assert!(!n.succeeded);
    let Some(R::ResponsePut(p)) = n.responses.into_iter().next().unwrap().response else {
        panic!("not a put")
    };
    assert_eq!(p.header, bare(5));
}
