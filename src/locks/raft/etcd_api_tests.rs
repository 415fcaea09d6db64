//! Checked against etcd 3.4.23 (Debian's `/usr/bin/etcd`) through its JSON gateway
//! (`POST /v3/kv/txn` and friends, which take every protobuf field as is): the codes,
//! messages and accept/refuse outcomes below are what it answered.

use super::*;

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn range_pb(key: &str) -> pb::RangeRequest {
    pb::RangeRequest {
        key: b(key),
        ..Default::default()
    }
}

fn put_pb(key: &str, value: &str) -> pb::PutRequest {
    pb::PutRequest {
        key: b(key),
        value: b(value),
        ..Default::default()
    }
}

fn op(r: pb::request_op::Request) -> pb::RequestOp {
    pb::RequestOp { request: Some(r) }
}

fn put(key: &str) -> pb::RequestOp {
    op(pb::request_op::Request::RequestPut(put_pb(key, "v")))
}

fn get(key: &str) -> pb::RequestOp {
    op(pb::request_op::Request::RequestRange(range_pb(key)))
}

fn del(key: &str, range_end: &str) -> pb::RequestOp {
    op(pb::request_op::Request::RequestDeleteRange(
        pb::DeleteRangeRequest {
            key: b(key),
            range_end: b(range_end),
            prev_kv: false,
        },
    ))
}

fn txn_pb(success: Vec<pb::RequestOp>, failure: Vec<pb::RequestOp>) -> pb::TxnRequest {
    pb::TxnRequest {
        compare: vec![],
        success,
        failure,
    }
}

fn nested(success: Vec<pb::RequestOp>, failure: Vec<pb::RequestOp>) -> pb::RequestOp {
    op(pb::request_op::Request::RequestTxn(txn_pb(
        success, failure,
    )))
}

fn version_is(key: &str, n: i64) -> pb::Compare {
    pb::Compare {
        key: b(key),
        target_union: Some(pb::compare::TargetUnion::Version(n)),
        ..Default::default()
    }
}

fn puts(n: usize) -> Vec<pb::RequestOp> {
    (0..n).map(|i| put(&format!("k{i}"))).collect()
}

fn check(success: Vec<pb::RequestOp>, failure: Vec<pb::RequestOp>) -> Result<(), ApiError> {
    txn_request(txn_pb(success, failure)).map(|_| ())
}

fn compare_of(c: pb::Compare) -> Compare {
    let t = txn_request(pb::TxnRequest {
        compare: vec![c],
        ..Default::default()
    })
    .unwrap();
    t.compare.into_iter().next().unwrap()
}

fn kv(key: &str) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: "v".into(),
        create_revision: 2,
        mod_revision: 3,
        version: 2,
        lease: 5,
    }
}

fn ids() -> HeaderIds {
    HeaderIds {
        cluster_id: 11,
        member_id: 22,
        raft_term: 3,
        revision: 9,
    }
}

fn header(revision: i64) -> Option<pb::ResponseHeader> {
    Some(pb::ResponseHeader {
        cluster_id: 11,
        member_id: 22,
        revision,
        raft_term: 3,
    })
}

fn bare(revision: i64) -> Option<pb::ResponseHeader> {
    Some(pb::ResponseHeader {
        revision,
        ..Default::default()
    })
}

// ---- errors ----

#[test]
fn every_error_has_etcds_code_and_message() {
    let cases = [
        (
            ApiError::EmptyKey,
            Code::InvalidArgument,
            "etcdserver: key is not provided",
        ),
        (
            ApiError::ValueProvided,
            Code::InvalidArgument,
            "etcdserver: value is provided",
        ),
        (
            ApiError::LeaseProvided,
            Code::InvalidArgument,
            "etcdserver: lease is provided",
        ),
        (
            ApiError::TooManyOps,
            Code::InvalidArgument,
            "etcdserver: too many operations in txn request",
        ),
        (
            ApiError::DuplicateKey,
            Code::InvalidArgument,
            "etcdserver: duplicate key given in txn request",
        ),
        (
            ApiError::LeaseTtlTooLarge,
            Code::OutOfRange,
            "etcdserver: too large lease TTL",
        ),
        (
            ApiError::Service(ServiceError::LeaseNotFound),
            Code::NotFound,
            "etcdserver: requested lease not found",
        ),
        (
            ApiError::Service(ServiceError::LeaseExists),
            Code::FailedPrecondition,
            "etcdserver: lease already exists",
        ),
        (
            ApiError::Service(ServiceError::KeyNotFound),
            Code::InvalidArgument,
            "etcdserver: key not found",
        ),
        (
            ApiError::Service(ServiceError::Compacted),
            Code::OutOfRange,
            "etcdserver: mvcc: required revision has been compacted",
        ),
        (
            ApiError::Service(ServiceError::FutureRev),
            Code::OutOfRange,
            "etcdserver: mvcc: required revision is a future revision",
        ),
        (
            ApiError::NotLeader { hint: 2 },
            Code::FailedPrecondition,
            "etcdserver: not leader",
        ),
        (
            ApiError::NoLeader,
            Code::Unavailable,
            "etcdserver: no leader",
        ),
        (
            ApiError::Timeout,
            Code::Unavailable,
            "etcdserver: request timed out",
        ),
    ];
    for (e, code, msg) in cases {
        let s = e.status();
        assert_eq!((s.code(), s.message()), (code, msg), "{e:?}");
        assert_eq!(e.to_string(), msg);
    }
}

#[test]
fn an_undecodable_entry_is_internal() {
    let s = ApiError::Service(ServiceError::Decode("bad".into())).status();
    assert_eq!(s.code(), Code::Internal);
    assert_eq!(s.message(), "undecodable entry: bad");
}

#[test]
fn other_keeps_the_code_and_message_it_was_given() {
    let s = ApiError::Other(Code::DataLoss as i32, "gone".into()).status();
    assert_eq!((s.code(), s.message()), (Code::DataLoss, "gone"));
}

#[test]
fn not_leader_round_trips_with_its_hint() {
    let s = ApiError::NotLeader { hint: 3 }.status();
    assert_eq!(
        s.metadata().get(LEADER_HINT).unwrap().to_str().unwrap(),
        "3"
    );
    assert_eq!(
        ApiError::of_status(&s),
        Some(ApiError::NotLeader { hint: 3 })
    );
}

#[test]
fn not_leader_without_a_readable_hint_reads_as_hint_zero() {
    let plain = Status::new(Code::FailedPrecondition, "etcdserver: not leader");
    assert_eq!(
        ApiError::of_status(&plain),
        Some(ApiError::NotLeader { hint: 0 })
    );
    let mut junk = plain.clone();
    junk.metadata_mut()
        .insert(LEADER_HINT, "x".parse().unwrap());
    assert_eq!(
        ApiError::of_status(&junk),
        Some(ApiError::NotLeader { hint: 0 })
    );
}

#[test]
fn the_errors_the_client_acts_on_round_trip() {
    for e in [
        ApiError::NoLeader,
        ApiError::Timeout,
        ApiError::Service(ServiceError::LeaseNotFound),
    ] {
        assert_eq!(ApiError::of_status(&e.status()), Some(e));
    }
}

#[test]
fn other_statuses_are_not_acted_on() {
    for e in [
        ApiError::EmptyKey,
        ApiError::DuplicateKey,
        ApiError::Service(ServiceError::Compacted),
        ApiError::Service(ServiceError::LeaseExists),
    ] {
        assert_eq!(ApiError::of_status(&e.status()), None, "{e:?}");
    }
    // The message alone is not enough: the code must be etcd's too.
    let s = Status::new(Code::Internal, "etcdserver: no leader");
    assert_eq!(ApiError::of_status(&s), None);
}

#[test]
fn only_a_timeout_may_have_applied() {
    assert!(ApiError::Timeout.maybe_applied());
    for e in [
        ApiError::NoLeader,
        ApiError::NotLeader { hint: 1 },
        ApiError::Service(ServiceError::LeaseNotFound),
        ApiError::DuplicateKey,
        ApiError::Other(Code::Unavailable as i32, "x".into()),
    ] {
        assert!(!e.maybe_applied(), "{e:?}");
    }
}

// ---- range, put, delete ----

#[test]
fn a_range_without_a_key_is_refused() {
    assert_eq!(range_request(range_pb("")), Err(ApiError::EmptyKey));
}

#[test]
fn a_delete_without_a_key_is_refused() {
    let d = pb::DeleteRangeRequest {
        range_end: b("z"),
        ..Default::default()
    };
    assert_eq!(delete_request(d), Err(ApiError::EmptyKey));
}

#[test]
fn a_put_without_a_key_is_refused_before_its_flags() {
    let p = pb::PutRequest {
        ignore_value: true,
        ignore_lease: true,
        lease: 5,
        ..put_pb("", "x")
    };
    assert_eq!(put_request(p), Err(ApiError::EmptyKey));
}

#[test]
fn ignore_value_with_a_value_is_refused_before_ignore_lease_with_a_lease() {
    let p = pb::PutRequest {
        ignore_value: true,
        ignore_lease: true,
        lease: 5,
        ..put_pb("k", "x")
    };
    assert_eq!(put_request(p), Err(ApiError::ValueProvided));
}

#[test]
fn ignore_lease_with_a_lease_is_refused_even_a_negative_one() {
    for lease in [5, -1] {
        let p = pb::PutRequest {
            ignore_lease: true,
            lease,
            ..put_pb("k", "v")
        };
        assert_eq!(put_request(p), Err(ApiError::LeaseProvided));
    }
}

#[test]
fn ignore_flags_alone_pass_through() {
    let p = pb::PutRequest {
        ignore_value: true,
        ignore_lease: true,
        prev_kv: true,
        ..put_pb("k", "")
    };
    assert_eq!(
        put_request(p),
        Ok(PutRequest {
            prev_kv: true,
            ignore_value: true,
            ignore_lease: true,
            ..PutRequest::new("k", "", 0)
        })
    );
}

#[test]
fn a_negative_lease_names_no_lease_there_can_be() {
    // etcd answers "requested lease not found" for lease -3; u64::MAX is never granted.
    let p = pb::PutRequest {
        lease: -3,
        ..put_pb("k", "v")
    };
    assert_eq!(put_request(p).unwrap().lease, u64::MAX);
}

#[test]
fn a_range_carries_its_fields_over() {
    use pb::range_request::{SortOrder as O, SortTarget as T};
    let r = pb::RangeRequest {
        range_end: b("l"),
        limit: 3,
        revision: 4,
        sort_order: O::Descend as i32,
        sort_target: T::Mod as i32,
        serializable: true,
        keys_only: true,
        count_only: true,
        min_mod_revision: 5,
        max_mod_revision: 6,
        min_create_revision: 7,
        max_create_revision: 8,
        ..range_pb("k")
    };
    assert_eq!(
        range_request(r),
        Ok(RangeRequest {
            keys: KeySpec {
                key: "k".into(),
                range_end: "l".into(),
            },
            limit: 3,
            revision: 4,
            sort_order: SortOrder::Descend,
            sort_target: SortTarget::Mod,
            serializable: true,
            keys_only: true,
            count_only: true,
            min_mod_revision: 5,
            max_mod_revision: 6,
            min_create_revision: 7,
            max_create_revision: 8,
        })
    );
}

#[test]
fn negative_revision_limit_and_min_filters_read_as_none() {
    // etcd: a revision ≤ 0 reads the current one, a limit ≤ 0 is no limit, and a min
    // filter below every revision keeps every key.
    let r = pb::RangeRequest {
        limit: -2,
        revision: -5,
        min_mod_revision: -1,
        min_create_revision: -1,
        ..range_pb("k")
    };
    assert_eq!(range_request(r), Ok(RangeRequest::get("k")));
}

#[test]
fn a_negative_max_filter_keeps_no_key() {
    // etcd applies any non-zero max filter: `max_mod_revision: -1` answered count 1 and
    // no kvs. Every key's revisions are ≥ 2, so 1 keeps none either.
    let r = pb::RangeRequest {
        max_mod_revision: -1,
        max_create_revision: -7,
        ..range_pb("k")
    };
    let r = range_request(r).unwrap();
    assert_eq!((r.max_mod_revision, r.max_create_revision), (1, 1));
}

#[test]
fn unknown_sort_values_read_as_the_defaults() {
    // etcd 3.4 takes unknown enum values as they are: sort_order 7 answers unsorted;
    // sort_target 9 with sort_order NONE crashed the server (a nil sorter). The model
    // answers by key instead.
    let r = pb::RangeRequest {
        sort_order: 7,
        sort_target: 9,
        ..range_pb("k")
    };
    let r = range_request(r).unwrap();
    assert_eq!(
        (r.sort_order, r.sort_target),
        (SortOrder::None, SortTarget::Key)
    );
}

#[test]
fn any_bytes_come_back_as_they_were_sent() {
    // etcd's keys and values are bytes: python-etcd3's lock value is a binary uuid.
    let bytes = vec![0x00, 0x7f, 0x80, 0xc3, 0xa9, 0xfe, 0xff];
    let p = pb::PutRequest {
        value: bytes.clone(),
        ..put_pb("k", "")
    };
    let put = put_request(p).unwrap();
    let kv = KeyValue {
        key: put.key.clone(),
        value: put.value.clone(),
        create_revision: 2,
        mod_revision: 2,
        version: 1,
        lease: 0,
    };
    assert_eq!(kv_pb(kv).value, bytes);
    let r = pb::RangeRequest {
        key: bytes.clone(),
        range_end: vec![0xff, 0xff],
        ..Default::default()
    };
    let range = range_request(r).unwrap();
    assert_eq!(super::super::kv::bytes_of(&range.keys.key), bytes);
    assert_eq!(
        super::super::kv::bytes_of(&range.keys.range_end),
        [0xff, 0xff]
    );
}

#[test]
fn keys_order_as_their_bytes() {
    use super::super::kv::text_of;
    let mut keys = vec![vec![0xc3, 0xa9], vec![0x7a], vec![0xff], vec![0x80, 0x00]];
    let mut texts: Vec<String> = keys.iter().cloned().map(text_of).collect();
    keys.sort();
    texts.sort();
    let back: Vec<Vec<u8>> = texts
        .iter()
        .map(|t| super::super::kv::bytes_of(t))
        .collect();
    assert_eq!(back, keys);
}

#[test]
fn a_prefix_ends_past_its_last_byte_below_0xff() {
    use super::super::kv::{bytes_of, text_of, KeySpec};
    let p = KeySpec::prefix(text_of(vec![b'a', 0xff]));
    assert_eq!(bytes_of(&p.range_end), [b'b']);
    let p = KeySpec::prefix(text_of(vec![b'a', 0xc3]));
    assert_eq!(bytes_of(&p.range_end), [b'a', 0xc4]);
    assert_eq!(KeySpec::prefix(text_of(vec![0xff])).range_end, "\0");
}

// ---- compares ----

#[test]
fn a_compare_without_a_key_is_refused() {
    let t = pb::TxnRequest {
        compare: vec![version_is("", 0)],
        ..Default::default()
    };
    assert_eq!(txn_request(t), Err(ApiError::EmptyKey));
}

#[test]
fn a_compare_carries_its_target_and_result_over() {
    use pb::compare::{CompareResult as R, CompareTarget as T, TargetUnion as U};
    let c = |target: T, result: R, union: U| pb::Compare {
        result: result as i32,
        target: target as i32,
        key: b("k"),
        range_end: b("l"),
        target_union: Some(union),
    };
    let keys = KeySpec {
        key: "k".into(),
        range_end: "l".into(),
    };
    let cases = [
        (
            c(T::Version, R::Equal, U::Version(1)),
            CompareResult::Equal,
            CompareTarget::Version(1),
        ),
        (
            c(T::Create, R::Greater, U::CreateRevision(2)),
            CompareResult::Greater,
            CompareTarget::Create(2),
        ),
        (
            c(T::Mod, R::Less, U::ModRevision(3)),
            CompareResult::Less,
            CompareTarget::Mod(3),
        ),
        (
            c(T::Lease, R::NotEqual, U::Lease(4)),
            CompareResult::NotEqual,
            CompareTarget::Lease(4),
        ),
        (
            c(T::Value, R::Equal, U::Value(b("x"))),
            CompareResult::Equal,
            CompareTarget::Value("x".into()),
        ),
    ];
    for (pb, result, target) in cases {
        let keys = keys.clone();
        assert_eq!(
            compare_of(pb),
            Compare {
                keys,
                result,
                target
            }
        );
    }
}

#[test]
fn a_compare_operand_in_another_arm_reads_as_zero() {
    // etcd reads it with the target's getter: CREATE > (version 5) held for a key
    // created at revision 2, CREATE > (create_revision 5) did not.
    let c = pb::Compare {
        result: pb::compare::CompareResult::Greater as i32,
        target: pb::compare::CompareTarget::Create as i32,
        ..version_is("k", 5)
    };
    assert_eq!(compare_of(c).target, CompareTarget::Create(0));
}

#[test]
fn every_value_is_greater_than_a_negative_compare_operand() {
    // etcd on a missing key (version 0) against version -1: EQUAL and LESS failed,
    // NOT_EQUAL and GREATER held; the same for a lease compare against -1.
    use pb::compare::{CompareResult as R, CompareTarget as T, TargetUnion as U};
    let never = (CompareResult::Less, 0);
    let always = (CompareResult::NotEqual, u64::MAX);
    for (result, expect) in [
        (R::Equal, never),
        (R::Less, never),
        (R::NotEqual, always),
        (R::Greater, always),
    ] {
        let c = pb::Compare {
            result: result as i32,
            ..version_is("k", -1)
        };
        let c = compare_of(c);
        assert_eq!(c.result, expect.0, "{result:?}");
        assert_eq!(c.target, CompareTarget::Version(expect.1), "{result:?}");
        let c = pb::Compare {
            result: result as i32,
            target: T::Lease as i32,
            target_union: Some(U::Lease(-1)),
            ..version_is("k", 0)
        };
        let c = compare_of(c);
        assert_eq!(c.result, expect.0, "{result:?}");
        assert_eq!(c.target, CompareTarget::Lease(expect.1), "{result:?}");
    }
}

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
