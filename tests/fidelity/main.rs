//! Differential fidelity, in one binary: the same requests go to locksim's models and to
//! the real servers they model (redis-server, etcd, ZooKeeper), and the replies are
//! compared (`mariadb_wire`: locksim's MySQL client against a real MariaDB, and the
//! `mariadb` client against locksim's server side). Each family's sections are tests of
//! their own that share one real server (started by the first test that needs it,
//! stopped when the process ends), so one section that differs shows beside the others
//! that pass. `cargo test --profile fast-build --test fidelity zk::` runs one family. Real client
//! libraries run against a model and the real server alike too (`python_redis_lock`:
//! python-redis-lock's blocking waiters).

#[path = "../support/mod.rs"]
mod support;

mod db;
mod etcd;
mod mariadb_wire;
mod python_redis_lock;
mod redis;
mod redis_node;
mod zk;
