//! The client's side of etcd's v3 API: the store's vocabulary ([`super::kv`]) as etcd's
//! protobuf requests, and etcd's responses back. The inverse of [`super::etcd_api`]; the
//! round trip is the identity on every value the client sends (tested).

use super::etcdpb::{etcdserverpb as pb, mvccpb};
use super::kv::{
    bytes_of, text_of, Compare, CompareResult, CompareTarget, DeleteRequest, DeleteResponse,
    KeySpec, KeyValue, OpResponse, PutRequest, PutResponse, RangeRequest, RangeResponse, SortOrder,
    SortTarget, TxnOp, TxnRequest, TxnResponse,
};

fn header_revision(h: &Option<pb::ResponseHeader>) -> u64 {
    h.as_ref().map_or(0, |h| h.revision.max(0) as u64)
}

/// etcd's `mvccpb.KeyValue` as the store's.
pub(crate) fn kv_of(kv: mvccpb::KeyValue) -> KeyValue {
    KeyValue {
        key: text_of(kv.key),
        value: text_of(kv.value),
        create_revision: kv.create_revision.max(0) as u64,
        mod_revision: kv.mod_revision.max(0) as u64,
        version: kv.version.max(0) as u64,
        lease: kv.lease as u64,
    }
}

/// A range as etcd's `RangeRequest`.
pub(crate) fn range_pb(r: &RangeRequest) -> pb::RangeRequest {
    use pb::range_request::{SortOrder as O, SortTarget as T};
    let sort_order = match r.sort_order {
        SortOrder::None => O::None,
        SortOrder::Ascend => O::Ascend,
        SortOrder::Descend => O::Descend,
    };
    let sort_target = match r.sort_target {
        SortTarget::Key => T::Key,
        SortTarget::Version => T::Version,
        SortTarget::Create => T::Create,
        SortTarget::Mod => T::Mod,
        SortTarget::Value => T::Value,
    };
    pb::RangeRequest {
        key: bytes_of(&r.keys.key),
        range_end: bytes_of(&r.keys.range_end),
        limit: r.limit as i64,
        revision: r.revision as i64,
        sort_order: sort_order as i32,
        sort_target: sort_target as i32,
        serializable: r.serializable,
        keys_only: r.keys_only,
        count_only: r.count_only,
        min_mod_revision: r.min_mod_revision as i64,
        max_mod_revision: r.max_mod_revision as i64,
        min_create_revision: r.min_create_revision as i64,
        max_create_revision: r.max_create_revision as i64,
    }
}

/// A put as etcd's `PutRequest`.
pub(crate) fn put_pb(p: &PutRequest) -> pb::PutRequest {
    pb::PutRequest {
        key: bytes_of(&p.key),
        value: bytes_of(&p.value),
        lease: p.lease as i64,
        prev_kv: p.prev_kv,
        ignore_value: p.ignore_value,
        ignore_lease: p.ignore_lease,
    }
}

/// A delete as etcd's `DeleteRangeRequest`.
pub(crate) fn delete_pb(d: &DeleteRequest) -> pb::DeleteRangeRequest {
    pb::DeleteRangeRequest {
        key: bytes_of(&d.keys.key),
        range_end: bytes_of(&d.keys.range_end),
        prev_kv: d.prev_kv,
    }
}

fn compare_pb(c: &Compare) -> pb::Compare {
    use pb::compare::{CompareResult as R, CompareTarget as T, TargetUnion as U};
    let result = match c.result {
        CompareResult::Equal => R::Equal,
        CompareResult::NotEqual => R::NotEqual,
        CompareResult::Less => R::Less,
        CompareResult::Greater => R::Greater,
    };
    let (target, union) = match &c.target {
        CompareTarget::Version(n) => (T::Version, U::Version(*n as i64)),
        CompareTarget::Create(n) => (T::Create, U::CreateRevision(*n as i64)),
        CompareTarget::Mod(n) => (T::Mod, U::ModRevision(*n as i64)),
        CompareTarget::Value(v) => (T::Value, U::Value(bytes_of(v))),
        CompareTarget::Lease(n) => (T::Lease, U::Lease(*n as i64)),
    };
    pb::Compare {
        result: result as i32,
        target: target as i32,
        key: bytes_of(&c.keys.key),
        range_end: bytes_of(&c.keys.range_end),
        target_union: Some(union),
    }
}

fn op_pb(op: &TxnOp) -> pb::RequestOp {
    use pb::request_op::Request as R;
    let request = match op {
        TxnOp::Range(r) => R::RequestRange(range_pb(r)),
        TxnOp::Put(p) => R::RequestPut(put_pb(p)),
        TxnOp::DeleteRange(d) => R::RequestDeleteRange(delete_pb(d)),
        TxnOp::Txn(t) => R::RequestTxn(txn_pb(t)),
    };
    pb::RequestOp {
        request: Some(request),
    }
}

/// A txn as etcd's `TxnRequest`.
pub(crate) fn txn_pb(t: &TxnRequest) -> pb::TxnRequest {
    pb::TxnRequest {
        compare: t.compare.iter().map(compare_pb).collect(),
        success: t.success.iter().map(op_pb).collect(),
        failure: t.failure.iter().map(op_pb).collect(),
    }
}

/// etcd's `RangeResponse` as the store's.
pub(crate) fn range_of(r: pb::RangeResponse) -> RangeResponse {
    RangeResponse {
        revision: header_revision(&r.header),
        kvs: r.kvs.into_iter().map(kv_of).collect(),
        count: r.count.max(0) as u64,
        more: r.more,
    }
}

/// etcd's `PutResponse` as the store's.
pub(crate) fn put_of(r: pb::PutResponse) -> PutResponse {
    PutResponse {
        revision: header_revision(&r.header),
        prev_kv: r.prev_kv.map(kv_of),
    }
}

/// etcd's `DeleteRangeResponse` as the store's.
pub(crate) fn delete_of(r: pb::DeleteRangeResponse) -> DeleteResponse {
    DeleteResponse {
        revision: header_revision(&r.header),
        deleted: r.deleted.max(0) as u64,
        prev_kvs: r.prev_kvs.into_iter().map(kv_of).collect(),
    }
}

/// etcd's `TxnResponse` as the store's (an empty `ResponseOp` reads as an empty range).
pub(crate) fn txn_of(r: pb::TxnResponse) -> TxnResponse {
    use pb::response_op::Response as R;
    let responses = r
        .responses
        .into_iter()
        .map(|op| match op.response {
            Some(R::ResponseRange(r)) => OpResponse::Range(range_of(r)),
            Some(R::ResponsePut(p)) => OpResponse::Put(put_of(p)),
            Some(R::ResponseDeleteRange(d)) => OpResponse::DeleteRange(delete_of(d)),
            Some(R::ResponseTxn(t)) => OpResponse::Txn(txn_of(t)),
            None => OpResponse::Range(range_of(pb::RangeResponse::default())),
        })
        .collect();
    TxnResponse {
        revision: header_revision(&r.header),
        succeeded: r.succeeded,
        responses,
    }
}

/// A watch of `keys` from revision `start` (0: from now).
pub(crate) fn watch_create_pb(keys: &KeySpec, start: u64) -> pb::WatchRequest {
    pb::WatchRequest {
        request_union: Some(pb::watch_request::RequestUnion::CreateRequest(
            pb::WatchCreateRequest {
                key: bytes_of(&keys.key),
                range_end: bytes_of(&keys.range_end),
                start_revision: start as i64,
                ..Default::default()
            },
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::etcd_api;
    use super::super::kv::LeaseId;
    use super::*;

    fn put(key: &str, lease: LeaseId) -> TxnOp {
        TxnOp::Put(PutRequest {
            prev_kv: true,
            ..PutRequest::new(key, "v", lease)
        })
    }

    #[test]
    fn the_lock_recipes_requests_survive_the_wire() {
        let t = TxnRequest {
            compare: vec![
                Compare::create_revision_is("L/1", 0),
                Compare {
                    keys: KeySpec::prefix("L/"),
                    result: CompareResult::Less,
                    target: CompareTarget::Value("x".into()),
                },
            ],
            success: vec![
                put("L/1", 7),
                TxnOp::Range(RangeRequest::first_created("L/")),
            ],
            failure: vec![
                TxnOp::Range(RangeRequest::last_created_at_or_before("L/", 9)),
                TxnOp::DeleteRange(DeleteRequest::of(KeySpec::from_key("c"))),
                TxnOp::Txn(Box::new(TxnRequest {
                    compare: vec![],
                    success: vec![put("b", 0)],
                    failure: vec![],
                })),
            ],
        };
        assert_eq!(etcd_api::txn_request(txn_pb(&t)), Ok(t));
    }

    #[test]
    fn responses_survive_the_wire() {
        let kv = KeyValue {
            key: "k".into(),
            value: "v".into(),
            create_revision: 2,
            mod_revision: 3,
            version: 2,
            lease: 5,
        };
        let r = TxnResponse {
            revision: 4,
            succeeded: true,
            responses: vec![
                OpResponse::Put(PutResponse {
                    revision: 4,
                    prev_kv: Some(kv.clone()),
                }),
                OpResponse::Range(RangeResponse {
                    revision: 4,
                    kvs: vec![kv.clone()],
                    count: 3,
                    more: true,
                }),
                OpResponse::DeleteRange(DeleteResponse {
                    revision: 4,
                    deleted: 1,
                    prev_kvs: vec![kv],
                }),
            ],
        };
        let ids = etcd_api::HeaderIds::default();
        assert_eq!(txn_of(etcd_api::txn_response(r.clone(), Some(&ids))), r);
    }
}
