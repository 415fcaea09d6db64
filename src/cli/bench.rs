//! `locksim bench`: harness speed against turmoil's raw floor, and checker throughput.
//!
//! The floor is an empty turmoil simulation with the same hosts, tick and duration: the
//! cost turmoil itself charges per host per tick. The harness overhead is the ratio. Two
//! scenarios: the standard single-Redis one and a 3-server ZooKeeper ensemble with 3
//! clients.

use crate::scenario::Scenario;
use std::path::Path;
use std::time::{Duration, Instant};

/// The standard benchmark scenario: 1 Redis server, 3 clients, storage, 10 s, pauses.
pub const STANDARD: &str = r#"
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

/// The ZooKeeper benchmark scenario: a 3-server ensemble, 3 Curator clients, storage,
/// 10 s, pauses.
pub const ZK: &str = r#"
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

/// Run the benchmark with `seeds` seeds per measurement; print the numbers.
pub fn bench_command(seeds: u64) -> u8 {
    let scenario =
        Scenario::parse(Path::new("<bench>"), STANDARD).expect("the built-in scenario is valid");
    let histories = measure("standard scenario", &scenario, seeds);
    let zk = Scenario::parse(Path::new("<bench>"), ZK).expect("the built-in scenario is valid");
    measure("zookeeper scenario", &zk, seeds);

    let events: usize = histories.iter().map(|r| r.history.len()).sum();
    let start = Instant::now();
    let reps = 20;
    for _ in 0..reps {
        for r in &histories {
            std::hint::black_box(crate::check_run(&scenario, r));
        }
    }
    let check = start.elapsed().as_secs_f64();
    println!(
        "checks:    {:.0} events/s ({} events per pass of the standard scenario, {reps} passes, all checks)",
        (events * reps) as f64 / check,
        events
    );
    0
}

/// Run `seeds` seeds of `scenario` and the raw floor with the same hosts; print both.
fn measure(label: &str, scenario: &Scenario, seeds: u64) -> Vec<crate::sim::RunResult> {
    let hosts = scenario.nodes();
    let sim_s = scenario.duration_ms as f64 / 1e3;

    let start = Instant::now();
    let mut histories = Vec::new();
    for seed in 0..seeds {
        histories.push(crate::run(scenario, seed));
    }
    let harness = start.elapsed().as_secs_f64();

    let start = Instant::now();
    for seed in 0..seeds {
        raw_floor(&hosts, scenario.duration_ms, seed);
    }
    let raw = start.elapsed().as_secs_f64();

    println!(
        "{label}: {} hosts ({}), tick 1 ms, {sim_s} simulated s, {seeds} seeds (1 thread)",
        hosts.len(),
        scenario.algorithm()
    );
    println!(
        "  harness:   {:8.2} seeds/s  {:8.1} simulated s per wall s  ({:.1} ms/seed)",
        seeds as f64 / harness,
        seeds as f64 * sim_s / harness,
        harness * 1e3 / seeds as f64
    );
    println!(
        "  raw floor: {:8.2} seeds/s  {:8.1} simulated s per wall s  ({:.1} ms/seed, empty hosts)",
        seeds as f64 / raw,
        seeds as f64 * sim_s / raw,
        raw * 1e3 / seeds as f64
    );
    println!("  overhead:  {:.2}x the raw floor", harness / raw);
    histories
}

/// An empty turmoil simulation with the same hosts, tick and duration.
fn raw_floor(hosts: &[String], duration_ms: u64, seed: u64) {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_millis(duration_ms + 1000))
        .tick_duration(crate::sim::TICK)
        .rng_seed(seed)
        .build();
    for h in hosts {
        sim.host(h.as_str(), || async {
            std::future::pending::<()>().await;
            Ok(())
        });
    }
    while sim.elapsed() < Duration::from_millis(duration_ms) {
        sim.step().expect("idle hosts do not fail");
    }
}
