//! Differential fidelity, in one binary: the same requests go to locksim's models and to
//! the real servers they model (redis-server, etcd, ZooKeeper), and the replies are
//! compared. Each family's sections are tests of their own that share one real server
//! (started by the first test that needs it, stopped when the process ends), so one
//! section that differs shows beside the others that pass. `cargo test --release --test
//! fidelity zk::` runs one family.

#[path = "../support/mod.rs"]
mod support;

mod etcd;
mod redis;
mod redis_node;
mod zk;
