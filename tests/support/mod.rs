//! What the integration test binaries share, in one place: the real servers the models
//! are compared with (`real_redis`, `real_etcd`, `real_zk`, `real_mariadb`, with the `watchdog` that
//! kills one a dead test process left behind), a family's model served on loopback
//! (`served`), and how many tests share one server: kept until the process ends
//! (`kept`), their sections run once each and in order (`in_order`).
//!
//! A group binary (`tests/<group>/main.rs`) includes it with
//! `#[path = "../support/mod.rs"] mod support;`.
#![allow(dead_code)] // Each test binary uses only part of it.

pub mod in_order;
pub mod kept;
pub mod real_etcd;
pub mod real_mariadb;
pub mod real_redis;
pub mod real_zk;
pub mod served;
pub mod watchdog;
