//! Raft, as the replicated families share it: a pure core on raft-rs ([`core`]), the loop
//! that ticks it on a node's local clock ([`driver`]), its log on the node's disk
//! ([`storage`]) and what it is configured with ([`config`]). The etcd family
//! (`locks::raft`) puts an etcd-like service on top; the ZooKeeper family (`locks::zk`)
//! its ensemble's write path. Neither family imports the other.

pub(crate) mod config;
pub(crate) mod core;
pub(crate) mod driver;
pub(crate) mod storage;

#[cfg(test)]
pub(crate) mod testkit;

pub(crate) use config::{Fsync, RaftConfig, ReadMode};
