//! Where a Raft node listens, and what travels there:
//!
//! * **Client port** ([`CLIENT_PORT`]): etcd's v3 gRPC API over HTTP/2
//!   ([`super::etcd_grpc`] serves it, [`super::client`] calls it), so `etcdctl` and any
//!   etcd client reach the model too (`locksim serve raft`).
//! * **Peer port** ([`PEER_PORT`]): raft-rs's protobuf messages, batched and acknowledged
//!   by the shared peer transport ([`crate::net::Mesh`]), as a ZooKeeper ensemble's are.

/// Where a Raft node serves lock clients (etcd's client port).
pub(crate) const CLIENT_PORT: u16 = 2379;
/// Where a Raft node receives Raft messages from its peers (etcd's peer port).
pub(crate) const PEER_PORT: u16 = 2380;
