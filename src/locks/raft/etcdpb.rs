//! etcd 3.4's v3 gRPC API, generated at build time from `proto/etcd/` (locksim's own
//! .proto text for the subset it serves): prost messages, tonic clients
//! (`kv_client::KvClient`, …, `lock_client::LockClient`) and servers
//! (`kv_server::KvServer`, …).
//!
//! The generated code has no `connect`/`serve` of its own (tonic is built without its
//! `transport`): clients run over [`crate::net::GrpcChannel`] and servers behind
//! [`crate::net::serve_grpc_connection`], both on the node's deterministic executor.
//! Every server method not overridden answers `Unimplemented`.

/// Key-value records (etcd's `mvccpb`): `KeyValue`, `Event`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod mvccpb {
    include!(concat!(env!("OUT_DIR"), "/mvccpb.rs"));
}

/// Requests, responses and services (etcd's `etcdserverpb`): KV, Watch, Lease,
/// Cluster (`MemberList`) and Maintenance (`Status`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod etcdserverpb {
    include!(concat!(env!("OUT_DIR"), "/etcdserverpb.rs"));
}

/// etcd's Lock service (`v3lockpb`): `Lock` and `Unlock`, served by the raft model
/// (`locks/raft/lock_service.rs`).
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v3lockpb {
    include!(concat!(env!("OUT_DIR"), "/v3lockpb.rs"));
}
