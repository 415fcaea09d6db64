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

#[path = "etcd_api_txn_tests.rs"]
mod txn;
