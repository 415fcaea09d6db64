//! `bench`'s family lines: each built-in family on the same 10 s workload (3 clients,
//! fenced storage, random client pauses), against the raw turmoil floor of its hosts.

use super::floor::raw_floor;
use crate::scenario::Scenario;
use std::path::Path;
use std::time::Instant;

/// The standard benchmark scenario: 1 Redis server, 3 clients, storage, 10 s, pauses.
pub(crate) const STANDARD: &str = r#"
name = "bench-standard"
description = "1 Redis server, 3 clients, fenced storage, random pauses"
algorithm = "redis"
duration_ms = 10000
[lock]
ttl_ms = 1000
token = "incr"
[workload]
clients = 3
[faults]
pause = { nodes = "clients", duration_ms = [500, 2000] }
"#;

/// The database benchmark scenario: db-0 and its cleaner, storage, 3 clients, 10 s,
/// pauses (a unique-row lock with AUTO_INCREMENT tokens).
pub(crate) const DB: &str = r#"
name = "bench-db"
description = "db-0 with a cleaner, 3 clients, fenced storage, random pauses"
algorithm = "db"
duration_ms = 10000
[lock]
scheme = "unique-row"
cleaner_timeout_ms = 1000
[workload]
clients = 3
[faults]
pause = { nodes = "clients", duration_ms = [500, 2000] }
"#;

/// The replicated-Redis benchmark scenario: a primary, 2 replicas and 3 Sentinels, 3
/// clients, storage, 10 s, pauses.
pub(crate) const REDIS_REPLICATED: &str = r#"
name = "bench-redis-replicated"
description = "A Redis primary, 2 async replicas and 3 Sentinels, 3 clients, fenced storage, random pauses"
algorithm = "redis-replicated"
duration_ms = 10000
[lock]
ttl_ms = 1000
token = "incr"
replicas = 2
sentinels = 3
[workload]
clients = 3
[faults]
pause = { nodes = "clients", duration_ms = [500, 2000] }
"#;

/// The Redlock benchmark scenario: 5 independent Redis nodes, 3 clients, storage (no
/// token: Redlock has none), 10 s, pauses.
pub(crate) const REDLOCK: &str = r#"
name = "bench-redlock"
description = "Redlock over 5 Redis nodes, 3 clients, storage, random pauses"
algorithm = "redlock"
duration_ms = 10000
[lock]
nodes = 5
ttl_ms = 1000
[workload]
clients = 3
fencing = false
[faults]
pause = { nodes = "clients", duration_ms = [500, 2000] }
"#;

/// The Raft benchmark scenario: 3 Raft nodes, 3 clients, storage, 10 s, pauses.
pub(crate) const RAFT: &str = r#"
name = "bench-raft"
description = "3 Raft nodes, 3 etcd Mutex clients, fenced storage, random pauses"
algorithm = "raft"
duration_ms = 10000
[lock]
ttl_ms = 1000
[workload]
clients = 3
[faults]
pause = { nodes = "clients", duration_ms = [500, 2000] }
"#;

/// The ZooKeeper benchmark scenario: a 3-server ensemble, 3 Curator clients, storage,
/// 10 s, pauses.
pub(crate) const ZK: &str = r#"
name = "bench-zk"
description = "3 ZooKeeper servers (Raft-replicated), 3 Curator InterProcessMutex clients, fenced storage, random pauses"
algorithm = "zk"
duration_ms = 10000
[lock]
servers = 3
session_timeout_ms = 1000
[workload]
clients = 3
[faults]
pause = { nodes = "clients", duration_ms = [500, 2000] }
"#;

/// One benchmark line per algorithm family: (label, scenario). Each runs 10 simulated
/// seconds with 3 clients and storage, so the lines compare.
pub(crate) const FAMILIES: &[(&str, &str)] = &[
    ("redis (1 server)", STANDARD),
    ("redis-replicated (3+3)", REDIS_REPLICATED),
    ("redlock (5 nodes)", REDLOCK),
    ("db (unique row)", DB),
    ("raft (3 nodes)", RAFT),
    ("zk (3 servers)", ZK),
];

/// One family's measurement.
pub(super) struct FamilyBench {
    /// The line's label.
    pub(super) label: &'static str,
    /// Hosts in the simulation (servers, clients, storage).
    pub(super) hosts: usize,
    /// Seeds run.
    pub(super) seeds: u64,
    /// Simulated seconds per seed.
    pub(super) sim_s: f64,
    /// Wall seconds the harness took for all seeds (runs and their checks).
    pub(super) harness_s: f64,
    /// Wall seconds the raw floor took for as many seeds.
    pub(super) raw_s: f64,
    /// The runs, for the checker line.
    pub(super) histories: Vec<crate::RunResult>,
}

impl FamilyBench {
    /// Seeds per wall second through the harness.
    pub(super) fn seeds_per_s(&self) -> f64 {
        self.seeds as f64 / self.harness_s
    }
    /// Simulated seconds per wall second.
    pub(super) fn sim_per_wall(&self) -> f64 {
        self.seeds_per_s() * self.sim_s
    }
    /// Seeds per wall second of the raw floor.
    pub(super) fn floor_seeds_per_s(&self) -> f64 {
        self.seeds as f64 / self.raw_s
    }
    /// The harness's time over the floor's.
    pub(super) fn overhead(&self) -> f64 {
        self.harness_s / self.raw_s
    }
}

/// Run every family's scenario over seeds `0..seeds`, calling `on_family` after each.
pub(super) fn bench_families(
    seeds: u64,
    on_family: &mut dyn FnMut(&FamilyBench),
) -> Vec<(Scenario, FamilyBench)> {
    FAMILIES
        .iter()
        .map(|(label, text)| {
            let scenario = Scenario::parse(Path::new("<bench>"), text)
                .expect("the built-in scenarios are valid");
            let r = bench_family(label, &scenario, seeds);
            on_family(&r);
            (scenario, r)
        })
        .collect()
}

/// One family: each seed through the harness, then through the floor, alternately, so a
/// change in the machine's speed during the measurement reaches both sides alike.
fn bench_family(label: &'static str, scenario: &Scenario, seeds: u64) -> FamilyBench {
    let hosts = scenario.nodes();
    let (mut harness_s, mut raw_s) = (0.0, 0.0);
    let mut histories = Vec::new();
    for seed in 0..seeds {
        let start = Instant::now();
        histories.push(crate::run(scenario, seed));
        harness_s += start.elapsed().as_secs_f64();
        let start = Instant::now();
        raw_floor(&hosts, scenario.duration_ms, seed);
        raw_s += start.elapsed().as_secs_f64();
    }
    FamilyBench {
        label,
        hosts: hosts.len(),
        seeds,
        sim_s: scenario.duration_ms as f64 / 1e3,
        harness_s,
        raw_s,
        histories,
    }
}
