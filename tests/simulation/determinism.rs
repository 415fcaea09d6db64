//! Determinism: a run is a pure function of (scenario, seed). Every seed of a sweep, run
//! twice, gives byte-identical histories; so does a sweep on 1 thread vs 2.

use locksim::history::{hash, to_jsonl};
use locksim::{run, Scenario};
use std::path::Path;

fn load(name: &str) -> Scenario {
    Scenario::load(Path::new(&format!("sims/{name}.toml"))).expect("valid scenario")
}

/// Scenarios that exercise every fault kind: pauses, partitions, crashes, clock faults,
/// disk stalls.
const MIXED: &[&str] = &[
    "redis-baseline-fenced",
    "redis-03-setnx-then-expire-random",
    "redis-04-server-clock-jump-random",
    "redis-12-watchdog-starvation-random",
    "redis-05-async-failover-random",
    "redis-06-minority-primary-random",
    "db-for-update-partition-random",
    "db-baseline",
    "raft-baseline",
    "raft-16-waiter-lease-expires-random",
    "raft-18-stuck-old-leader-random",
    "raft-18-disk-stall-random",
    "raft-19-stale-read-random",
    "raft-fsync-none",
    "zk-15-lost-create-reply-random",
    "zk-baseline",
];

/// Raft scenarios whose sweeps must agree on 1 and 2 threads.
const RAFT: &[&str] = &["raft-baseline", "raft-18-stuck-old-leader-random"];

#[test]
fn same_seed_same_history_bytes() {
    for name in MIXED {
        let s = load(name);
        for seed in 0..8 {
            let a = run(&s, seed);
            let b = run(&s, seed);
            assert!(a.error.is_none(), "{name} seed {seed}: {:?}", a.error);
            assert!(a.history.len() > 50, "{name} seed {seed}: too few events");
            assert_eq!(
                to_jsonl(&a.history),
                to_jsonl(&b.history),
                "{name} seed {seed} differs between two runs"
            );
        }
    }
}

#[test]
fn different_seeds_differ() {
    let s = load("redis-baseline-fenced");
    let hashes: std::collections::BTreeSet<u64> =
        (0..10).map(|seed| hash(&run(&s, seed).history)).collect();
    assert_eq!(hashes.len(), 10, "seeds must explore different executions");
}

#[test]
fn one_thread_and_two_threads_agree() {
    let s = load("redis-baseline-fenced");
    let seeds: Vec<u64> = (0..12).collect();
    let one = locksim::sweep::sweep(&s, &seeds, 1, &|_| {});
    let two = locksim::sweep::sweep(&s, &seeds, 2, &|_| {});
    let h1: Vec<&str> = one.iter().map(|o| o.history_hash.as_str()).collect();
    let h2: Vec<&str> = two.iter().map(|o| o.history_hash.as_str()).collect();
    assert_eq!(h1, h2);
    for name in RAFT {
        let s = load(name);
        let seeds: Vec<u64> = (0..6).collect();
        let one = locksim::sweep::sweep(&s, &seeds, 1, &|_| {});
        let two = locksim::sweep::sweep(&s, &seeds, 2, &|_| {});
        let h1: Vec<&str> = one.iter().map(|o| o.history_hash.as_str()).collect();
        let h2: Vec<&str> = two.iter().map(|o| o.history_hash.as_str()).collect();
        assert_eq!(h1, h2, "{name}");
    }
}

/// A run's applied fault schedule, replayed with nothing drawn, is the same run: what a
/// shrinker relies on to cut a violating schedule down.
#[test]
fn the_applied_schedule_replays_the_run() {
    for name in MIXED {
        let s = load(name);
        for seed in 0..4 {
            let a = run(&s, seed);
            assert!(
                !a.schedule.is_empty(),
                "{name} seed {seed}: no faults applied"
            );
            let b = locksim::run_with_schedule(&s, seed, a.schedule.clone());
            assert_eq!(b.schedule, a.schedule);
            assert_eq!(
                to_jsonl(&a.history),
                to_jsonl(&b.history),
                "{name} seed {seed}: replaying the applied schedule differs"
            );
        }
    }
}
