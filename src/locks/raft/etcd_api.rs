//! etcd's v3 API in front of the store: etcd's protobuf requests become the store's
//! vocabulary ([`super::kv`]) after the checks etcd's gRPC layer makes
//! (`etcdserver/api/v3rpc/key.go`: `checkRangeRequest`, `checkPutRequest`,
//! `checkTxnRequest`, `checkIntervals`), and the store's answers become etcd's protobuf
//! responses. Errors are etcd's gRPC statuses (`api/v3rpc/rpctypes`): same code, same
//! message.
//!
//! Pure: no I/O, no clock. The gRPC service ([`super::etcd_grpc`]) calls it on one side of
//! the node, the client ([`super::client`]) uses the same messages on the other.

use super::etcdpb::{etcdserverpb as pb, mvccpb};
use super::kv::{
    bytes_of, text_of, Compare, CompareResult, CompareTarget, DeleteRequest, DeleteResponse,
    KeySpec, KeyValue, LeaseId, OpResponse, PutRequest, PutResponse, RangeRequest, RangeResponse,
    ServiceError, SortOrder, SortTarget, TxnOp, TxnRequest, TxnResponse,
};
use std::collections::BTreeSet;
use tonic::{Code, Status};

/// etcd's default `--max-txn-ops`: the most compares, or ops in one branch, of a txn.
pub(crate) const MAX_TXN_OPS: usize = 128;
/// etcd's `MaxLeaseTTL`, seconds.
pub(crate) const MAX_LEASE_TTL_S: i64 = 9_000_000_000;

/// Why the API refused or failed a request: etcd's `rpctypes` errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApiError {
    /// `ErrGRPCEmptyKey`.
    EmptyKey,
    /// `ErrGRPCValueProvided`: `ignore_value` with a value.
    ValueProvided,
    /// `ErrGRPCLeaseProvided`: `ignore_lease` with a lease.
    LeaseProvided,
    /// `ErrGRPCTooManyOps`.
    TooManyOps,
    /// `ErrGRPCDuplicateKey`: a txn writes one key twice.
    DuplicateKey,
    /// `ErrGRPCLeaseTTLTooLarge`.
    LeaseTtlTooLarge,
    /// The store refused it (`ErrGRPCLeaseNotFound`, `ErrGRPCCompacted`, ...).
    Service(ServiceError),
    /// `ErrGRPCNotLeader`: this node's lessor is not the leader's; `hint` is the raft id
    /// of the leader it believes in (0: none), sent in the `locksim-leader` metadata.
    NotLeader {
        /// The leader's raft id, 0 for unknown.
        hint: u64,
    },
    /// `ErrGRPCNoLeader`: raft-rs dropped the proposal.
    NoLeader,
    /// `ErrGRPCTimeout`: no answer within the node's deadline (it may still apply).
    Timeout,
    /// Another status a node answered: its code and message.
    Other(i32, String),
}

/// The metadata key carrying a [`ApiError::NotLeader`] hint (the model's addition; etcd
/// forwards instead).
pub(crate) const LEADER_HINT: &str = "locksim-leader";

impl ApiError {
    /// The gRPC status etcd answers.
    pub(crate) fn status(&self) -> Status {
        let (code, msg): (Code, String) = match self {
            ApiError::EmptyKey => (
                Code::InvalidArgument,
                "etcdserver: key is not provided".into(),
            ),
            ApiError::ValueProvided => (
                Code::InvalidArgument,
                "etcdserver: value is provided".into(),
            ),
            ApiError::LeaseProvided => (
                Code::InvalidArgument,
                "etcdserver: lease is provided".into(),
            ),
            ApiError::TooManyOps => (
                Code::InvalidArgument,
                "etcdserver: too many operations in txn request".into(),
            ),
            ApiError::DuplicateKey => (
                Code::InvalidArgument,
                "etcdserver: duplicate key given in txn request".into(),
            ),
            ApiError::LeaseTtlTooLarge => {
                (Code::OutOfRange, "etcdserver: too large lease TTL".into())
            }
            ApiError::Service(e) => (service_code(e), e.to_string()),
            ApiError::NotLeader { hint } => {
                let mut s = Status::new(Code::FailedPrecondition, "etcdserver: not leader");
                if let Ok(v) = hint.to_string().parse() {
                    s.metadata_mut().insert(LEADER_HINT, v);
                }
                return s;
            }
            ApiError::NoLeader => (Code::Unavailable, "etcdserver: no leader".into()),
            ApiError::Timeout => (Code::Unavailable, "etcdserver: request timed out".into()),
            ApiError::Other(code, msg) => (Code::from_i32(*code), msg.clone()),
        };
        Status::new(code, msg)
    }

    /// The error a status carries, if it is one of etcd's the client acts on.
    pub(crate) fn of_status(s: &Status) -> Option<ApiError> {
        let e = match (s.code(), s.message()) {
            (Code::FailedPrecondition, "etcdserver: not leader") => ApiError::NotLeader {
                hint: s
                    .metadata()
                    .get(LEADER_HINT)
                    .and_then(|v| v.to_str().ok()?.parse().ok())
                    .unwrap_or(0),
            },
            (Code::Unavailable, "etcdserver: no leader") => ApiError::NoLeader,
            (Code::Unavailable, "etcdserver: request timed out") => ApiError::Timeout,
            (Code::NotFound, "etcdserver: requested lease not found") => {
                ApiError::Service(ServiceError::LeaseNotFound)
            }
            _ => return None,
        };
        Some(e)
    }

    /// Whether the request may have taken effect although it failed.
    pub(crate) fn maybe_applied(&self) -> bool {
        matches!(self, ApiError::Timeout)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.status().message())
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> ApiError {
        ApiError::Service(e)
    }
}

fn service_code(e: &ServiceError) -> Code {
    match e {
        ServiceError::LeaseNotFound => Code::NotFound,
        ServiceError::LeaseExists => Code::FailedPrecondition,
        ServiceError::KeyNotFound => Code::InvalidArgument,
        ServiceError::Compacted | ServiceError::FutureRev => Code::OutOfRange,
        ServiceError::Decode(_) => Code::Internal,
    }
}

/// Bytes from the wire as the store keeps them (any bytes: see [`text_of`]).
fn text(bytes: Vec<u8>) -> String {
    text_of(bytes)
}

fn key_spec(key: Vec<u8>, range_end: Vec<u8>) -> Result<KeySpec, ApiError> {
    if key.is_empty() {
        return Err(ApiError::EmptyKey);
    }
    Ok(KeySpec {
        key: text(key),
        range_end: text(range_end),
    })
}

/// A revision or filter from the wire: etcd treats a negative one as none.
fn rev(v: i64) -> u64 {
    v.max(0) as u64
}

/// A `max_*_revision` filter from the wire: etcd applies any non-zero one, and a negative
/// one keeps no key (every key's revisions are ≥ 2, so 1 says the same).
fn max_filter(v: i64) -> u64 {
    if v < 0 {
        1
    } else {
        v as u64
    }
}

/// A lease id from the wire: a negative one names no lease there can be.
fn lease_id(v: i64) -> LeaseId {
    if v < 0 {
        u64::MAX
    } else {
        v as u64
    }
}

/// etcd's `RangeRequest`, checked.
pub(crate) fn range_request(r: pb::RangeRequest) -> Result<RangeRequest, ApiError> {
    use pb::range_request::{SortOrder as O, SortTarget as T};
    let sort_order = match O::try_from(r.sort_order) {
        Ok(O::Ascend) => SortOrder::Ascend,
        Ok(O::Descend) => SortOrder::Descend,
        _ => SortOrder::None,
    };
    let sort_target = match T::try_from(r.sort_target) {
        Ok(T::Version) => SortTarget::Version,
        Ok(T::Create) => SortTarget::Create,
        Ok(T::Mod) => SortTarget::Mod,
        Ok(T::Value) => SortTarget::Value,
        _ => SortTarget::Key,
    };
    Ok(RangeRequest {
        keys: key_spec(r.key, r.range_end)?,
        limit: rev(r.limit),
        revision: rev(r.revision),
        sort_order,
        sort_target,
        serializable: r.serializable,
        keys_only: r.keys_only,
        count_only: r.count_only,
        min_mod_revision: rev(r.min_mod_revision),
        max_mod_revision: max_filter(r.max_mod_revision),
        min_create_revision: rev(r.min_create_revision),
        max_create_revision: max_filter(r.max_create_revision),
    })
}

/// etcd's `PutRequest`, checked.
pub(crate) fn put_request(r: pb::PutRequest) -> Result<PutRequest, ApiError> {
    if r.key.is_empty() {
        return Err(ApiError::EmptyKey);
    }
    if r.ignore_value && !r.value.is_empty() {
        return Err(ApiError::ValueProvided);
    }
    if r.ignore_lease && r.lease != 0 {
        return Err(ApiError::LeaseProvided);
    }
    Ok(PutRequest {
        key: text(r.key),
        value: text(r.value),
        lease: lease_id(r.lease),
        prev_kv: r.prev_kv,
        ignore_value: r.ignore_value,
        ignore_lease: r.ignore_lease,
    })
}

/// etcd's `DeleteRangeRequest`, checked.
pub(crate) fn delete_request(r: pb::DeleteRangeRequest) -> Result<DeleteRequest, ApiError> {
    Ok(DeleteRequest {
        keys: key_spec(r.key, r.range_end)?,
        prev_kv: r.prev_kv,
    })
}

/// etcd's `TxnRequest`, checked (`checkTxnRequest`, then `checkIntervals`).
pub(crate) fn txn_request(r: pb::TxnRequest) -> Result<TxnRequest, ApiError> {
    let t = txn(r, MAX_TXN_OPS)?;
    check_intervals(&t.success)?;
    check_intervals(&t.failure)?;
    Ok(t)
}

/// `checkTxnRequest`: at most `max_ops` compares and ops per branch, nested txns within
/// what is left of the budget; every key given.
fn txn(r: pb::TxnRequest, max_ops: usize) -> Result<TxnRequest, ApiError> {
    let ops = r.compare.len().max(r.success.len()).max(r.failure.len());
    if ops > max_ops {
        return Err(ApiError::TooManyOps);
    }
    let compare = r
        .compare
        .into_iter()
        .map(compare)
        .collect::<Result<_, _>>()?;
    let budget = max_ops - ops;
    let branch = |b: Vec<pb::RequestOp>| -> Result<Vec<TxnOp>, ApiError> {
        b.into_iter().map(|op| request_op(op, budget)).collect()
    };
    Ok(TxnRequest {
        compare,
        success: branch(r.success)?,
        failure: branch(r.failure)?,
    })
}

fn request_op(op: pb::RequestOp, budget: usize) -> Result<TxnOp, ApiError> {
    use pb::request_op::Request as R;
    match op.request {
        Some(R::RequestRange(r)) => range_request(r).map(TxnOp::Range),
        Some(R::RequestPut(p)) => put_request(p).map(TxnOp::Put),
        Some(R::RequestDeleteRange(d)) => delete_request(d).map(TxnOp::DeleteRange),
        Some(R::RequestTxn(t)) => txn(t, budget).map(|t| TxnOp::Txn(Box::new(t))),
        // etcd's checkRequestOp: "empty op / nil entry".
        None => Err(ApiError::Service(ServiceError::KeyNotFound)),
    }
}

fn compare(c: pb::Compare) -> Result<Compare, ApiError> {
    use pb::compare::{CompareResult as R, CompareTarget as T, TargetUnion as U};
    let keys = key_spec(c.key, c.range_end)?;
    let mut result = match R::try_from(c.result) {
        Ok(R::Greater) => CompareResult::Greater,
        Ok(R::Less) => CompareResult::Less,
        Ok(R::NotEqual) => CompareResult::NotEqual,
        _ => CompareResult::Equal,
    };
    let union = c.target_union;
    // etcd reads the operand with the target's own getter (`GetCreateRevision()`, ...):
    // another arm of the union reads as 0.
    let target = T::try_from(c.target).unwrap_or(T::Version);
    let number = match (target, &union) {
        (T::Version, Some(U::Version(n)))
        | (T::Create, Some(U::CreateRevision(n)))
        | (T::Mod, Some(U::ModRevision(n)))
        | (T::Lease, Some(U::Lease(n))) => *n,
        _ => 0,
    };
    // etcd compares int64s: every value a key has (≥ 0) is greater than a negative
    // operand. Say the same with one the model's u64s hold (no value is u64::MAX).
    let number = match u64::try_from(number) {
        Ok(n) => n,
        Err(_) if matches!(result, CompareResult::Equal | CompareResult::Less) => {
            result = CompareResult::Less;
            0
        }
        Err(_) => {
            result = CompareResult::NotEqual;
            u64::MAX
        }
    };
    let target = match target {
        T::Create => CompareTarget::Create(number),
        T::Mod => CompareTarget::Mod(number),
        T::Value => match union {
            Some(U::Value(v)) => CompareTarget::Value(text(v)),
            _ => CompareTarget::Value(String::new()),
        },
        T::Lease => CompareTarget::Lease(number),
        T::Version => CompareTarget::Version(number),
    };
    Ok(Compare {
        keys,
        result,
        target,
    })
}

/// What one branch writes: the keys it puts and the ranges it deletes.
#[derive(Default)]
struct Writes {
    puts: BTreeSet<String>,
    dels: Vec<KeySpec>,
}

impl Writes {
    /// Whether a delete meets `key` as etcd's interval tree sees it: there a `"\0"` range
    /// end is the interval `[key, "\0")`, which no key meets (etcd 3.4 accepts
    /// `del --from-key a` and `put b` in one branch).
    fn deletes(&self, key: &str) -> bool {
        self.dels
            .iter()
            .any(|d| d.range_end != "\0" && d.contains(key))
    }
}

/// `checkIntervals`: no key put twice, and none put and deleted, on any one path through
/// a branch (a nested txn's two branches exclude each other, so they may overlap).
fn check_intervals(ops: &[TxnOp]) -> Result<Writes, ApiError> {
    let mut w = Writes::default();
    for op in ops {
        if let TxnOp::DeleteRange(d) = op {
            w.dels.push(d.keys.clone());
        }
    }
    for op in ops {
        let TxnOp::Txn(t) = op else { continue };
        let then = check_intervals(&t.success)?;
        let other = check_intervals(&t.failure)?;
        for k in &then.puts {
            if w.puts.contains(k) || w.deletes(k) {
                return Err(ApiError::DuplicateKey);
            }
        }
        for k in &other.puts {
            let clash = w.puts.contains(k) && !then.puts.contains(k);
            if clash || w.deletes(k) {
                return Err(ApiError::DuplicateKey);
            }
        }
        w.puts.extend(then.puts.into_iter().chain(other.puts));
        w.dels.extend(then.dels.into_iter().chain(other.dels));
    }
    for op in ops {
        let TxnOp::Put(p) = op else { continue };
        if !w.puts.insert(p.key.clone()) || w.deletes(&p.key) {
            return Err(ApiError::DuplicateKey);
        }
    }
    Ok(w)
}

/// A key as etcd's `mvccpb.KeyValue`.
pub(crate) fn kv_pb(kv: KeyValue) -> mvccpb::KeyValue {
    mvccpb::KeyValue {
        key: bytes_of(&kv.key),
        create_revision: kv.create_revision as i64,
        mod_revision: kv.mod_revision as i64,
        version: kv.version as i64,
        value: bytes_of(&kv.value),
        lease: kv.lease as i64,
    }
}

/// The fields of a response header a node fills in (etcd's `header.fill`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HeaderIds {
    /// The cluster's id.
    pub cluster_id: u64,
    /// The answering member's id.
    pub member_id: u64,
    /// The member's Raft term.
    pub raft_term: u64,
    /// The store's revision when the node answered.
    pub revision: u64,
}

impl HeaderIds {
    /// A full header at `revision` (0: the store's revision when the node answered, as
    /// etcd's `header.fill`).
    pub(crate) fn header(&self, revision: u64) -> Option<pb::ResponseHeader> {
        let revision = if revision == 0 {
            self.revision
        } else {
            revision
        };
        Some(pb::ResponseHeader {
            cluster_id: self.cluster_id,
            member_id: self.member_id,
            revision: revision as i64,
            raft_term: self.raft_term,
        })
    }

    /// A header without a revision (etcd's `MemberList`, a watch canceled by compaction).
    pub(crate) fn without_revision(&self) -> Option<pb::ResponseHeader> {
        Some(pb::ResponseHeader {
            revision: 0,
            ..self.header(0)?
        })
    }
}

/// A header that only carries a revision: what etcd puts in the responses inside a txn.
fn bare_header(revision: u64) -> Option<pb::ResponseHeader> {
    HeaderIds::default().header(revision)
}

/// A range's answer; `header` fills the top-level header (inside a txn it is bare).
pub(crate) fn range_response(r: RangeResponse, ids: Option<&HeaderIds>) -> pb::RangeResponse {
    pb::RangeResponse {
        header: ids.map_or_else(|| bare_header(r.revision), |h| h.header(r.revision)),
        kvs: r.kvs.into_iter().map(kv_pb).collect(),
        more: r.more,
        count: r.count as i64,
    }
}

/// A put's answer.
pub(crate) fn put_response(r: PutResponse, ids: Option<&HeaderIds>) -> pb::PutResponse {
    pb::PutResponse {
        header: ids.map_or_else(|| bare_header(r.revision), |h| h.header(r.revision)),
        prev_kv: r.prev_kv.map(kv_pb),
    }
}

/// A delete's answer.
pub(crate) fn delete_response(
    r: DeleteResponse,
    ids: Option<&HeaderIds>,
) -> pb::DeleteRangeResponse {
    pb::DeleteRangeResponse {
        header: ids.map_or_else(|| bare_header(r.revision), |h| h.header(r.revision)),
        deleted: r.deleted as i64,
        prev_kvs: r.prev_kvs.into_iter().map(kv_pb).collect(),
    }
}

/// A txn's answer.
pub(crate) fn txn_response(r: TxnResponse, ids: Option<&HeaderIds>) -> pb::TxnResponse {
    use pb::response_op::Response as R;
    let responses = r
        .responses
        .into_iter()
        .map(|op| pb::ResponseOp {
            response: Some(match op {
                OpResponse::Range(r) => R::ResponseRange(range_response(r, None)),
                OpResponse::Put(p) => R::ResponsePut(put_response(p, None)),
                OpResponse::DeleteRange(d) => R::ResponseDeleteRange(delete_response(d, None)),
                OpResponse::Txn(t) => R::ResponseTxn(txn_response(t, None)),
            }),
        })
        .collect();
    // etcd leaves a nested txn's header empty.
    let header = ids.map_or_else(
        || Some(pb::ResponseHeader::default()),
        |h| h.header(r.revision),
    );
    pb::TxnResponse {
        header,
        succeeded: r.succeeded,
        responses,
    }
}

#[cfg(test)]
#[path = "etcd_api_tests.rs"]
mod tests;
