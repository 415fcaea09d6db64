//! The Raft lock family: a Raft core on raft-rs driven by node clocks, and an etcd-like
//! service (revisioned KV, leases, deletion notifications) applied from its log.
//!
//! Everything here is pure and I/O-free: the node's network loop (wired later) ticks the
//! core on its local clock, feeds it messages, persists through the node's `Disk`, sends
//! what the core returns and applies committed entries to the service.
//!
//! * [`params`]: the `[lock]` keys of `algorithm = "raft"`.
//! * [`core`]: [`core::RaftCore`], raft-rs's `RawNode` with seeded election timeouts.
//! * [`storage`]: the write-ahead log on the node's disk and its crash recovery.
//! * [`kv`]: the replicated revisioned KV with leases (etcd MVCC semantics).
//! * [`lease`]: the leader-local lessor that decides lease expiry.
//! * [`service`]: proposal encoding and the node-facing service API.

pub mod core;
pub mod kv;
pub mod lease;
pub mod params;
pub mod service;
pub mod storage;

#[cfg(test)]
mod testkit;
