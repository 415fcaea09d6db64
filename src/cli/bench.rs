//! `locksim bench`: harness speed against turmoil's raw floor, and checker throughput.
//!
//! The floor is an empty turmoil simulation with the same hosts, tick and duration: the
//! cost turmoil itself charges per host per tick. The harness overhead is the ratio.
//! A line measures the Redis model's Lua scripts against plain commands.

use crate::scenario::Scenario;
use std::path::Path;
use std::time::{Duration, Instant};

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
    ("db (unique row)", DB),
    ("raft (3 nodes)", RAFT),
    ("zk (3 servers)", ZK),
];

/// Run the benchmark with `seeds` seeds per measurement; print the numbers.
pub fn bench_command(seeds: u64) -> u8 {
    println!("harness, per family ({seeds} seeds each, 1 thread, tick 1 ms):");
    let mut first = None;
    for (label, text) in FAMILIES {
        let scenario =
            Scenario::parse(Path::new("<bench>"), text).expect("the built-in scenarios are valid");
        let r = bench_family(&scenario, seeds);
        println!(
            "  {label:<22} {:>2} hosts  {:7.2} seeds/s  {:7.1} sim s/wall s  raw floor {:7.2} seeds/s  overhead {:.2}x",
            r.hosts,
            seeds as f64 / r.harness_s,
            seeds as f64 * r.sim_s / r.harness_s,
            seeds as f64 / r.raw_s,
            r.harness_s / r.raw_s
        );
        first.get_or_insert((scenario, r.histories));
    }
    // What Lua costs the redis family: its scripts against plain commands.
    bench_scripts(20_000);
    let (scenario, histories) = first.expect("at least one family");
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
        "checks: {:.0} history events/s over the first family's runs ({} events per pass, {reps} passes, all checks)",
        (events * reps) as f64 / check,
        events
    );
    // The linearizability checker on hard generated histories (many concurrent
    // processes; the not-linearizable ones make the search explore).
    let opts = crate::linearizability::CheckOptions {
        timeout: Some(crate::linearizability::DEFAULT_TIMEOUT),
        ..crate::linearizability::CheckOptions::default()
    };
    bench_checker(&opts);
    0
}

/// The linearizability checker on generated cas-register histories of 10,000 operations:
/// the corrupted twin (one read no order can explain) and the linearizable one, for 20 to
/// 50 processes; the corrupted ones again without the pre-pass (the search and its
/// windows alone); and a changed read the pre-pass cannot refute.
fn bench_checker(opts: &crate::linearizability::CheckOptions) {
    use crate::linearizability::generate::{time_cas_check, time_changed_read_check};
    for procs in [20, 30, 40, 50] {
        for linearizable in [false, true] {
            println!(
                "{}",
                time_cas_check(1, 10_000, procs, linearizable, opts).line()
            );
        }
    }
    let no_prepass = crate::linearizability::CheckOptions {
        prepass: false,
        ..*opts
    };
    for procs in [30, 40, 50] {
        let m = time_cas_check(1, 10_000, procs, false, &no_prepass);
        println!("{} (without the pre-pass)", m.line());
    }
    // Operation 4278 reads 2; read 1 it is a violation only a search can find (see the
    // sweep in `window_tests.rs`).
    let m = time_changed_read_check(1, 10_000, 40, (4278, 1), opts);
    println!("{} (one read changed: 4278 reads 1)", m.line());
}

/// One family's measurement.
struct FamilyBench {
    hosts: usize,
    sim_s: f64,
    harness_s: f64,
    raw_s: f64,
    histories: Vec<crate::RunResult>,
}

fn bench_family(scenario: &Scenario, seeds: u64) -> FamilyBench {
    let hosts = scenario.nodes();
    let start = Instant::now();
    let histories: Vec<crate::RunResult> =
        (0..seeds).map(|seed| crate::run(scenario, seed)).collect();
    let harness_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    for seed in 0..seeds {
        raw_floor(&hosts, scenario.duration_ms, seed);
    }
    let raw_s = start.elapsed().as_secs_f64();
    FamilyBench {
        hosts: hosts.len(),
        sim_s: scenario.duration_ms as f64 / 1e3,
        harness_s,
        raw_s,
        histories,
    }
}

/// Redisson's `RLock` scripts, as `sims/scripts/` has them: the cost of a user script.
const REDISSON_LOCK: &str = include_str!("../../sims/scripts/redisson-lock.lua");
const REDISSON_UNLOCK: &str = include_str!("../../sims/scripts/redisson-unlock.lua");

/// One acquire + release pair on the Redis model alone, three ways: plain commands
/// (`SET NX PX`, `DEL`), the project's scripts (token acquire, compare-and-delete) and
/// Redisson's, both by `EVALSHA` in the embedded Lua 5.1. Also a fresh interpreter, which
/// every server (every seed, every restart) builds at its first script.
fn bench_scripts(pairs: u32) {
    use crate::locks::redis::model::{
        script_sha, RedisServer, TOKEN_ACQUIRE_SCRIPT, UNLOCK_SCRIPT,
    };
    let words =
        |ws: &[&str]| -> Vec<Vec<u8>> { ws.iter().map(|w| w.as_bytes().to_vec()).collect() };
    let evalsha = |script: &str, keys: &[&str], args: &[&str]| {
        let (sha, n) = (script_sha(script), keys.len().to_string());
        let mut v = vec!["EVALSHA", sha.as_str(), n.as_str()];
        v.extend_from_slice(keys);
        v.extend_from_slice(args);
        words(&v)
    };
    let pair_us = |scripts: &[&str], acquire: Vec<Vec<u8>>, release: Vec<Vec<u8>>| {
        let mut server = RedisServer::new();
        let mut client = server.connect();
        for s in scripts {
            server.execute_as(&mut client, 0, &words(&["SCRIPT", "LOAD", s]));
        }
        let start = Instant::now();
        for i in 0..pairs {
            let now = i64::from(i);
            std::hint::black_box(server.execute_as(&mut client, now, &acquire));
            std::hint::black_box(server.execute_as(&mut client, now, &release));
        }
        start.elapsed().as_secs_f64() * 1e6 / f64::from(pairs)
    };
    let (lock, owner) = ("L", "client-0:00000000deadbeef");
    let plain = pair_us(
        &[],
        words(&["SET", lock, owner, "NX", "PX", "1000"]),
        words(&["DEL", lock]),
    );
    let ours = pair_us(
        &[TOKEN_ACQUIRE_SCRIPT, UNLOCK_SCRIPT],
        evalsha(TOKEN_ACQUIRE_SCRIPT, &[lock, "L:token"], &[owner, "1000"]),
        evalsha(UNLOCK_SCRIPT, &[lock], &[owner]),
    );
    let (channel, latch) = ("redisson_lock__channel:{L}", "redisson_unlock_latch:{L}:x");
    let redisson = pair_us(
        &[REDISSON_LOCK, REDISSON_UNLOCK],
        evalsha(REDISSON_LOCK, &[lock], &["1000", owner]),
        evalsha(
            REDISSON_UNLOCK,
            &[lock, channel, latch],
            &["0", "1000", owner, "publish", "1"],
        ),
    );
    let fresh = 200;
    let start = Instant::now();
    for _ in 0..fresh {
        let mut server = RedisServer::new();
        let mut client = server.connect();
        std::hint::black_box(server.execute_as(
            &mut client,
            0,
            &words(&["SCRIPT", "LOAD", UNLOCK_SCRIPT]),
        ));
    }
    let fresh_us = start.elapsed().as_secs_f64() * 1e6 / f64::from(fresh);
    println!(
        "lua scripts (Redis model alone, acquire + release, {pairs} pairs): SET NX PX + DEL {plain:.1} us; \
         token acquire + compare-and-delete scripts {ours:.1} us ({:.1}x); Redisson's lock + unlock {redisson:.1} us ({:.1}x); \
         a server's first script (new Lua 5.1 interpreter) {fresh_us:.0} us",
        ours / plain,
        redisson / plain
    );
    bench_endless_script();
}

/// What a script that never ends costs in real time: the model runs it to its budget
/// (Redis's default 5 s `busy-reply-threshold` of simulated Lua) once per busy period.
fn bench_endless_script() {
    use crate::locks::redis::model::RedisServer;
    let mut server = RedisServer::new();
    let mut client = server.connect();
    let eval: Vec<Vec<u8>> = ["EVAL", "while true do end", "0"]
        .iter()
        .map(|w| w.as_bytes().to_vec())
        .collect();
    let start = Instant::now();
    let out = std::hint::black_box(server.execute_as(&mut client, 0, &eval));
    let wall = start.elapsed().as_secs_f64();
    let instructions = out.script.map_or(0, |r| r.instructions);
    println!(
        "lua: a script that never ends, run to the default budget ({:.0} M instructions, 5 s of simulated Lua): {wall:.2} s, {:.0} M instructions/s",
        instructions as f64 / 1e6,
        instructions as f64 / 1e6 / wall
    );
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
