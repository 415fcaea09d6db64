//! The vocabulary of the etcd-like store: etcd v3's requests and responses
//! (`etcdserverpb`), as plain Rust values. The gRPC layer ([`super::super::etcd_api`])
//! converts etcd's protobuf messages to and from these; the Raft log carries them as JSON
//! ([`super::super::service::Proposal`]).
//!
//! Keys and values are etcd's bytes, kept as strings of one `char` per byte
//! ([`text_of`], [`bytes_of`]). Lease TTLs are in milliseconds
//! here; on the wire they are etcd's seconds, each lasting the cluster's `second_ms`.

use serde::{Deserialize, Serialize};

/// A lease id; 0 means "no lease" (etcd's `NoLease`).
pub(crate) type LeaseId = u64;

/// A key and its metadata, as etcd's `mvccpb.KeyValue`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct KeyValue {
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

/// Which keys a range, delete, compare or watch covers: etcd's `key` and `range_end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct KeySpec {
    /// The key, or the first key of the interval.
    pub key: String,
    /// Empty: `key` alone. `"\0"`: every key ≥ `key`. Otherwise the interval
    /// `[key, range_end)`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub range_end: String,
}

impl KeySpec {
    /// Exactly `key`.
    pub(crate) fn key(key: impl Into<String>) -> KeySpec {
        KeySpec {
            key: key.into(),
            range_end: String::new(),
        }
    }

    /// Every key starting with `prefix` (etcd's `WithPrefix()`; the empty prefix is every
    /// key, as etcd's `"\0"` key with `"\0"` end).
    pub(crate) fn prefix(prefix: impl Into<String>) -> KeySpec {
        let key = prefix.into();
        if key.is_empty() {
            return KeySpec {
                key: "\0".into(),
                range_end: "\0".into(),
            };
        }
        let range_end = prefix_end(&key);
        KeySpec { key, range_end }
    }

    /// Every key ≥ `key` (etcd's `WithFromKey()`).
    #[cfg(test)]
    pub(crate) fn from_key(key: impl Into<String>) -> KeySpec {
        KeySpec {
            key: key.into(),
            range_end: "\0".into(),
        }
    }

    /// Whether this names one key.
    pub(crate) fn is_single(&self) -> bool {
        self.range_end.is_empty()
    }

    /// Whether `k` is in the range.
    pub(crate) fn contains(&self, k: &str) -> bool {
        match self.range_end.as_str() {
            "" => k == self.key,
            "\0" => k >= self.key.as_str(),
            end => k >= self.key.as_str() && k < end,
        }
    }
}

/// The least key greater than every key starting with `prefix` (etcd's
/// `GetPrefixRangeEnd`): the prefix with its last byte incremented, dropping the 0xff
/// bytes that cannot be.
fn prefix_end(prefix: &str) -> String {
    let mut bytes = bytes_of(prefix);
    while let Some(last) = bytes.pop() {
        if last < 0xff {
            bytes.push(last + 1);
            return text_of(bytes);
        }
    }
    "\0".into()
}

/// etcd's keys and values are bytes; the store keeps them as `String`s of one `char`
/// per byte (U+0000 to U+00FF), so that any bytes a client sends come back as they were
/// and keys order as their bytes do. ASCII, all locksim's own clients send, is the same
/// either way.
pub(crate) fn text_of(bytes: Vec<u8>) -> String {
    bytes.into_iter().map(char::from).collect()
}

/// The bytes a key or value stands for (the inverse of [`text_of`]); a `char` above
/// U+00FF, which no client can have sent, goes out as its UTF-8.
pub(crate) fn bytes_of(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match u8::try_from(c) {
            Ok(b) => out.push(b),
            Err(_) => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

/// Sort order of a range (etcd's `SortOrder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SortOrder {
    /// As stored: by key (etcd's default).
    #[default]
    None,
    /// Ascending.
    Ascend,
    /// Descending.
    Descend,
}

/// What a range sorts by (etcd's `SortTarget`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SortTarget {
    /// The key.
    #[default]
    Key,
    /// The version.
    Version,
    /// The create revision.
    Create,
    /// The mod revision.
    Mod,
    /// The value.
    Value,
}

/// A range read (etcd's `RangeRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RangeRequest {
    /// Keys to read.
    pub keys: KeySpec,
    /// At most this many keys, 0 for all.
    #[serde(default)]
    pub limit: u64,
    /// Read the store as of this revision (0: the current one).
    #[serde(default)]
    pub revision: u64,
    /// Order.
    #[serde(default)]
    pub sort_order: SortOrder,
    /// Sort by.
    #[serde(default)]
    pub sort_target: SortTarget,
    /// Served from the node's own state without a quorum check (etcd's `serializable`).
    #[serde(default)]
    pub serializable: bool,
    /// Leave the values out.
    #[serde(default)]
    pub keys_only: bool,
    /// Only count.
    #[serde(default)]
    pub count_only: bool,
    /// Only keys with `mod_revision ≥` this (0: no filter).
    #[serde(default)]
    pub min_mod_revision: u64,
    /// Only keys with `mod_revision ≤` this (0: no filter).
    #[serde(default)]
    pub max_mod_revision: u64,
    /// Only keys with `create_revision ≥` this (0: no filter; `WithMinCreateRev`).
    #[serde(default)]
    pub min_create_revision: u64,
    /// Only keys with `create_revision ≤` this (0: no filter; `WithMaxCreateRev`).
    #[serde(default)]
    pub max_create_revision: u64,
}

impl RangeRequest {
    /// Read the keys of `keys`, in key order.
    pub(crate) fn of(keys: KeySpec) -> RangeRequest {
        RangeRequest {
            keys,
            limit: 0,
            revision: 0,
            sort_order: SortOrder::None,
            sort_target: SortTarget::Key,
            serializable: false,
            keys_only: false,
            count_only: false,
            min_mod_revision: 0,
            max_mod_revision: 0,
            min_create_revision: 0,
            max_create_revision: 0,
        }
    }

    /// Read one key.
    pub(crate) fn get(key: impl Into<String>) -> RangeRequest {
        RangeRequest::of(KeySpec::key(key))
    }

    /// The oldest key under `prefix` (etcd's `OpGet(pfx, WithFirstCreate()...)`).
    pub(crate) fn first_created(prefix: impl Into<String>) -> RangeRequest {
        RangeRequest {
            limit: 1,
            sort_order: SortOrder::Ascend,
            sort_target: SortTarget::Create,
            ..RangeRequest::of(KeySpec::prefix(prefix))
        }
    }

    /// The newest key under `prefix` created at or before `max_create_revision` (etcd's
    /// `Get(pfx, WithLastCreate()..., WithMaxCreateRev(rev))`, as in `waitDeletes`).
    pub(crate) fn last_created_at_or_before(
        prefix: impl Into<String>,
        max_create_revision: u64,
    ) -> RangeRequest {
        RangeRequest {
            limit: 1,
            sort_order: SortOrder::Descend,
            sort_target: SortTarget::Create,
            max_create_revision,
            ..RangeRequest::of(KeySpec::prefix(prefix))
        }
    }

    /// Whether a filter on revisions applies.
    pub(super) fn filters(&self) -> bool {
        self.min_mod_revision != 0
            || self.max_mod_revision != 0
            || self.min_create_revision != 0
            || self.max_create_revision != 0
    }

    /// Whether `kv` passes the revision filters.
    pub(super) fn passes(&self, kv: &KeyValue) -> bool {
        let at_least = |min: u64, v: u64| min == 0 || v >= min;
        let at_most = |max: u64, v: u64| max == 0 || v <= max;
        at_least(self.min_mod_revision, kv.mod_revision)
            && at_most(self.max_mod_revision, kv.mod_revision)
            && at_least(self.min_create_revision, kv.create_revision)
            && at_most(self.max_create_revision, kv.create_revision)
    }
}

/// A range's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RangeResponse {
    /// Store revision the read saw.
    pub revision: u64,
    /// Matching keys, sorted and limited (empty with `count_only`).
    pub kvs: Vec<KeyValue>,
    /// Keys in the range before filters and limit.
    pub count: u64,
    /// The limit cut the answer.
    pub more: bool,
}

/// What a compare looks at (etcd's `Compare.target` and its value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum CompareTarget {
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
pub(crate) enum CompareResult {
    /// `=`
    Equal,
    /// `!=`
    NotEqual,
    /// `<` (actual < given)
    Less,
    /// `>` (actual > given)
    Greater,
}

/// One txn guard: `actual(key) result target`, for every key of `keys`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Compare {
    /// The key, or the keys.
    pub keys: KeySpec,
    /// How to compare.
    pub result: CompareResult,
    /// What to compare, and with what.
    pub target: CompareTarget,
}

impl Compare {
    /// `create_revision(key) == rev` (etcd `Compare(CreateRevision(key), "=", rev)`; with
    /// `rev = 0`: the key does not exist).
    pub(crate) fn create_revision_is(key: impl Into<String>, rev: u64) -> Compare {
        Compare {
            keys: KeySpec::key(key),
            result: CompareResult::Equal,
            target: CompareTarget::Create(rev),
        }
    }
}

/// A put (etcd's `PutRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PutRequest {
    /// Key.
    pub key: String,
    /// Value.
    #[serde(default)]
    pub value: String,
    /// Lease to attach, 0 for none.
    #[serde(default)]
    pub lease: LeaseId,
    /// Answer with the key as it was.
    #[serde(default)]
    pub prev_kv: bool,
    /// Keep the current value (the key must exist).
    #[serde(default)]
    pub ignore_value: bool,
    /// Keep the current lease (the key must exist).
    #[serde(default)]
    pub ignore_lease: bool,
}

impl PutRequest {
    /// Put `value` at `key` under `lease` (0: none).
    pub(crate) fn new(
        key: impl Into<String>,
        value: impl Into<String>,
        lease: LeaseId,
    ) -> PutRequest {
        PutRequest {
            key: key.into(),
            value: value.into(),
            lease,
            prev_kv: false,
            ignore_value: false,
            ignore_lease: false,
        }
    }
}

/// A delete (etcd's `DeleteRangeRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeleteRequest {
    /// The keys.
    pub keys: KeySpec,
    /// Answer with the deleted keys.
    #[serde(default)]
    pub prev_kv: bool,
}

impl DeleteRequest {
    /// Delete `keys`.
    pub(crate) fn of(keys: KeySpec) -> DeleteRequest {
        DeleteRequest {
            keys,
            prev_kv: false,
        }
    }
}

/// An operation inside a txn (etcd's `RequestOp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TxnOp {
    /// Read.
    Range(RangeRequest),
    /// Put.
    Put(PutRequest),
    /// Delete.
    DeleteRange(DeleteRequest),
    /// A nested transaction.
    Txn(Box<TxnRequest>),
}

/// A transaction: `if all(compare) then success else failure`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TxnRequest {
    /// Guards, all must hold.
    pub compare: Vec<Compare>,
    /// Ops when they hold.
    pub success: Vec<TxnOp>,
    /// Ops when one fails.
    pub failure: Vec<TxnOp>,
}

/// Who asked for a lease revoke: the servers record an expiry and a client's own revoke
/// under different names (`expire`, `revoke`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Revoker {
    /// The leader's lessor: the lease's TTL ran out.
    #[default]
    Lessor,
    /// A client's `LeaseRevoke` call (etcd's `Lease/LeaseRevoke`; locksim's own lock
    /// clients never make it).
    Client,
}

impl Revoker {
    /// Whether the lessor asked (the entry's encoding then omits the field).
    fn is_lessor(&self) -> bool {
        *self == Revoker::Lessor
    }
}

/// A request applied through the Raft log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Request {
    /// Put a key.
    Put(PutRequest),
    /// Delete a key or a range.
    DeleteRange(DeleteRequest),
    /// Read through the log (linearizable without ReadIndex).
    Range(RangeRequest),
    /// A transaction.
    Txn(TxnRequest),
    /// Grant a lease with an id chosen before proposing (non-zero) and a TTL.
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
        /// Who asked: the lessor (an expiry, written as before, so the log entries and
        /// their `apply` hashes of every simulated run stay the same) or a client.
        #[serde(default, skip_serializing_if = "Revoker::is_lessor")]
        by: Revoker,
    },
    /// Forget the history before `revision` (etcd's `Compact`).
    Compact {
        /// The new compacted revision.
        revision: u64,
    },
}

impl Request {
    /// The lessor's revoke of expired lease `id`.
    pub(crate) fn lease_expiry(id: LeaseId) -> Request {
        Request::LeaseRevoke {
            id,
            by: Revoker::Lessor,
        }
    }
}

/// A put's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PutResponse {
    /// Header revision (the key's new `mod_revision`).
    pub revision: u64,
    /// The key before the put, if asked for and it existed.
    pub prev_kv: Option<KeyValue>,
}

/// A delete's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeleteResponse {
    /// Header revision.
    pub revision: u64,
    /// Keys deleted.
    pub deleted: u64,
    /// The deleted keys, if asked for.
    pub prev_kvs: Vec<KeyValue>,
}

/// A txn's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TxnResponse {
    /// Header revision.
    pub revision: u64,
    /// The compares held (the success branch ran).
    pub succeeded: bool,
    /// One answer per op of the branch that ran.
    pub responses: Vec<OpResponse>,
}

/// The answer to one txn op (etcd's `ResponseOp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum OpResponse {
    /// A read.
    Range(RangeResponse),
    /// A put.
    Put(PutResponse),
    /// A delete.
    DeleteRange(DeleteResponse),
    /// A nested txn.
    Txn(TxnResponse),
}

/// The answer to a [`Request`]. `revision` is the response header's revision: the store's
/// revision after the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Response {
    /// Put done.
    Put(PutResponse),
    /// Delete done.
    DeleteRange(DeleteResponse),
    /// A read through the log.
    Range(RangeResponse),
    /// Txn done.
    Txn(TxnResponse),
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
    /// History compacted.
    Compact {
        /// Header revision.
        revision: u64,
    },
}

impl Response {
    /// The header revision.
    pub(crate) fn revision(&self) -> u64 {
        match self {
            Response::Put(r) => r.revision,
            Response::DeleteRange(r) => r.revision,
            Response::Range(r) => r.revision,
            Response::Txn(r) => r.revision,
            Response::LeaseGrant { revision, .. }
            | Response::LeaseRevoke { revision }
            | Response::Compact { revision } => *revision,
        }
    }
}

/// Why a request failed (it changed nothing). The texts are etcd's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ServiceError {
    /// etcd `ErrLeaseNotFound`.
    LeaseNotFound,
    /// etcd `ErrLeaseExists`.
    LeaseExists,
    /// etcd `ErrKeyNotFound`: `ignore_value` or `ignore_lease` on a missing key.
    KeyNotFound,
    /// etcd `ErrCompacted`: the revision asked for is before the compacted one.
    Compacted,
    /// etcd `ErrFutureRev`: the revision asked for is after the current one.
    FutureRev,
    /// The entry did not decode (a bug).
    Decode(String),
}

impl std::fmt::Display for ServiceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServiceError::LeaseNotFound => write!(f, "etcdserver: requested lease not found"),
            ServiceError::LeaseExists => write!(f, "etcdserver: lease already exists"),
            ServiceError::KeyNotFound => write!(f, "etcdserver: key not found"),
            ServiceError::Compacted => {
                write!(f, "etcdserver: mvcc: required revision has been compacted")
            }
            ServiceError::FutureRev => {
                write!(
                    f,
                    "etcdserver: mvcc: required revision is a future revision"
                )
            }
            ServiceError::Decode(e) => write!(f, "undecodable entry: {e}"),
        }
    }
}

impl std::error::Error for ServiceError {}
