//! A Redis lock written on the real `redis` crate (redis-rs), run under locksim's faults
//! and checks: the way a Rust team tests the lock code it ships.
//!
//! The lock is the single-instance one of redis.io: acquire with `SET lock <value> NX
//! PX <ttl>`, release with the compare-and-delete Lua script, and, when fenced, an
//! acquire script that `INCR`s a counter with the `SET` for a fencing token. It runs
//! against locksim's Redis model, on simulated TCP, with every node's clock, pauses and
//! randomness in the seed: a failing seed replays byte for byte.
//!
//! ```text
//! # the tests: row 1 unfenced and fenced over a few seeds, each seed run twice
//! cargo test --profile fast-build --example redis_rs_lock
//!
//! # the whole locksim command line, with algorithm = "redis-rs" beside locksim's own
//! cargo run --release --example redis_rs_lock -- run examples/redis_rs/row-01.toml --seeds 0..50
//! cargo run --release --example redis_rs_lock -- run examples/redis_rs/row-01-fenced.toml --seeds 0..50
//! cargo run --release --example redis_rs_lock -- replay examples/redis_rs/row-01.toml --seed 3 --svg row-01.svg
//! cargo run --release --example redis_rs_lock -- list
//! ```
//!
//! # Walkthrough
//!
//! **1. The dependency.** `redis` with tokio's async connection and scripts, no default
//! features (no TLS, no cluster, no connection manager):
//!
//! ```toml
//! [dev-dependencies]
//! locksim = "..."
//! redis = { version = "=1.8.1", default-features = false, features = ["tokio-comp", "script"] }
//! ```
//!
//! and, in the crate's own `.cargo/config.toml`, the flag that lets turmoil seed tokio
//! (locksim's is not inherited; without it a `tokio::select!` in redis-rs or your code
//! picks its branch at random and a seed does not replay):
//!
//! ```toml
//! [build]
//! rustflags = ["--cfg", "tokio_unstable"]
//! ```
//!
//! **2. The connection** (`redis_rs/connection.rs`). redis-rs's
//! `MultiplexedConnection::new_with_config(&info, stream, config)` runs on any stream
//! that is `AsyncRead + AsyncWrite + Send`, and returns the future that drives it.
//! [`SendTcp`](locksim::plugin::SendTcp) connects on the node's simulated network and
//! gives a `Send` stream (a simulation runs on one thread, so the node's `Rc`-based
//! stream is wrapped in a thread-pinned, checked `Send`); the driver is spawned with
//! `NodeCtx::spawn`, so a pause freezes it with the node. A request that times out drops
//! the connection: simulated TCP does not retransmit, and a connection whose reply was
//! lost stays wedged.
//!
//! **3. The lock** (`redis_rs/client.rs`): a [`LockClient`](locksim::plugin::LockClient)
//! whose acquire and release are redis-rs calls. What locksim needs from it: a
//! [`Grant`](locksim::plugin::Grant) with the value that names the holder, the fencing
//! token if any, and the lease end on the node's clock; and errors that say whether the
//! request may have taken effect (a timeout after sending: `Indeterminate`) or surely
//! did not (a refused connect: `Failed`).
//!
//! **4. The family** (`redis_rs/mod.rs`): `algorithm = "redis-rs"`, whose `[lock]`
//! table is the Redis model's ([`models::Redis`](locksim::plugin::models::Redis)): the
//! servers, the lease and the fencing token come from the model, the client is ours. Keys
//! that choose a variant the redis-rs client does not implement (`acquire`, `unlock`,
//! `renew`, `scripts`) are refused, naming the key (`redis_rs/settings.rs`).
//!
//! **5. The scenarios** (`redis_rs/row-01.toml`, `redis_rs/row-01-fenced.toml`):
//! catalogue row 1 (`sims/redis-01-pause-past-lease*.toml`) with `algorithm =
//! "redis-rs"`. `client-0` pauses 1.5 s between its validity check and its write, with a
//! 1 s lease: mutual exclusion breaks on some seeds; unfenced, the storage takes the stale
//! write (`counter` violated); fenced, it refuses it (`fencing` and `counter` hold).
//!
//! **6. The tests** (below): the expectations of both files over ten seeds; two seeds
//! of each run twice with their history bytes compared
//! ([`assert_deterministic`](locksim::plugin::assert_deterministic), which also fails if
//! redis-rs started a task outside the node); a partition that swallows replies (the
//! client drops the connection and is granted the lock again on a new one); the refused
//! keys; and the build's `tokio_unstable` flag.
//!
//! **7. The command line** (`main`): [`locksim::cli::main_with`] with this family gives
//! `run`, `replay`, `shrink`, `report` and `list` for `algorithm = "redis-rs"`.
//!
//! What cannot be simulated: a library's own `std::time` reads see the machine's clock
//! (redis-rs's connection does not read it on this path); redis-rs's response timeout
//! runs on tokio's clock, the true simulated time, so a node's clock-drift fault does not
//! stretch it as it stretches deadlines on the node's own clock.

mod redis_rs;

use locksim::plugin::Family;
use redis_rs::RedisRsLock;
use std::process::ExitCode;

/// The families this binary adds to locksim's own: `redis-rs`.
const FAMILIES: &[Family] = &[Family::of::<RedisRsLock>()];

fn main() -> ExitCode {
    locksim::cli::main_with(FAMILIES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use locksim::plugin::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    /// Seeds of the sweep: row 1's violation shows on every one (200 of 200 seeds in a
    /// longer sweep), so a few keep the test short.
    const SWEEP: std::ops::Range<u64> = 0..10;

    /// A scenario file of `examples/redis_rs/`.
    fn scenario(file: &str) -> Scenario {
        let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "examples", "redis_rs", file]
            .iter()
            .collect();
        Scenario::load_with(&path, FAMILIES).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Run the sweep and compare each check's verdicts with the scenario's `[expect]`:
    /// `holds` on every seed, `violated` on at least one. Returns the unmet ones.
    fn unmet_expectations(scenario: &Scenario) -> Vec<String> {
        // check name -> (seeds violating it, seeds with no verdict)
        let mut seen: BTreeMap<String, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
        for seed in SWEEP {
            let result = run(scenario, seed);
            assert_eq!(result.error, None, "seed {seed}: harness error");
            // redis-rs spawns nothing itself: its driver runs through NodeCtx::spawn.
            assert!(
                result.escaped_tasks.is_empty(),
                "seed {seed}: tasks escaped the node context: {:?}",
                result.escaped_tasks
            );
            for report in check_run(scenario, &result).into_vec() {
                let entry = seen.entry(report.name.to_string()).or_default();
                match report.verdict {
                    Verdict::Violated => entry.0.push(seed),
                    Verdict::Unknown => entry.1.push(seed),
                    Verdict::Holds => {}
                }
            }
        }
        let mut unmet = Vec::new();
        for (check, expect) in &scenario.expect {
            let Some((violated, unknown)) = seen.get(check) else {
                unmet.push(format!("{check}: expected {expect:?}, but it never ran"));
                continue;
            };
            let met = match expect {
                Expect::Holds => violated.is_empty() && unknown.is_empty(),
                Expect::Violated => !violated.is_empty(),
                Expect::Any => true,
            };
            if !met {
                unmet.push(format!(
                    "{check}: expected {expect:?}; violated on seeds {violated:?}, no verdict on {unknown:?}"
                ));
            }
        }
        unmet
    }

    #[test]
    fn this_build_seeds_tokio() {
        // Without `--cfg tokio_unstable` a seed of redis-rs code would not replay.
        check_tokio_seeded().unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn unfenced_row_1_breaks_mutex_and_the_counter() {
        let s = scenario("row-01.toml");
        assert_eq!(s.expect.get("mutex"), Some(&Expect::Violated));
        assert_eq!(s.expect.get("counter"), Some(&Expect::Violated));
        let unmet = unmet_expectations(&s);
        assert!(unmet.is_empty(), "not met: {unmet:#?}");
    }

    #[test]
    fn fenced_row_1_breaks_mutex_but_the_token_keeps_the_counter() {
        let s = scenario("row-01-fenced.toml");
        assert_eq!(s.expect.get("mutex"), Some(&Expect::Violated));
        assert_eq!(s.expect.get("counter"), Some(&Expect::Holds));
        assert_eq!(s.expect.get("fencing"), Some(&Expect::Holds));
        let unmet = unmet_expectations(&s);
        assert!(unmet.is_empty(), "not met: {unmet:#?}");
    }

    #[test]
    fn each_seed_replays_byte_for_byte() {
        for file in ["row-01.toml", "row-01-fenced.toml"] {
            let s = scenario(file);
            for seed in 0..2 {
                assert_deterministic(&s, seed);
            }
        }
    }

    /// `redis-0` cut off from everyone for 600 ms: requests in flight then time out
    /// (redis-rs's response timeout), and connects fail until the partition heals.
    const LOST_REPLIES: &str = r#"
name = "redis-rs-lost-replies"
algorithm = "redis-rs"
duration_ms = 4000

[lock]
ttl_ms = 1000
token = "incr"

[workload]
clients = 3
fencing = true

[[faults.at]]
at_ms = 1000
kind = "partition"
nodes = ["redis-0"]
duration_ms = 600
"#;

    #[test]
    fn a_lost_reply_drops_the_connection_and_the_next_request_reconnects() {
        let s = Scenario::parse_with("lost-replies.toml".as_ref(), LOST_REPLIES, FAMILIES)
            .unwrap_or_else(|e| panic!("{e}"));
        let heal_ns = 1_600_000_000;
        let mut timed_out = 0;
        for seed in 0..2 {
            assert_deterministic(&s, seed);
            let result = run(&s, seed);
            let reports = check_run(&s, &result);
            for check in [&TOKEN_ORDER, &FENCING, &COUNTER, &LIVENESS] {
                assert_eq!(
                    reports.verdict(check),
                    Verdict::Holds,
                    "seed {seed}: {}",
                    check.name
                );
            }
            // A request the partition swallowed ended with an unknown outcome ...
            let unknown: Vec<&Event> = result
                .history
                .iter()
                .filter(|e| e.kind == EventType::Info && e.f == "acquire")
                .filter(|e| e.reason.as_deref().is_some_and(|r| r.contains("timed out")))
                .collect();
            timed_out += unknown.len();
            // ... and that client, on a new connection, was granted the lock again.
            for e in unknown {
                let again = result.history.iter().any(|g| {
                    g.process == e.process
                        && g.kind == EventType::Ok
                        && g.f == "acquire"
                        && g.time_ns > heal_ns
                });
                assert!(
                    again,
                    "seed {seed}: {} never acquired after the heal",
                    e.process
                );
            }
        }
        assert!(
            timed_out > 0,
            "no acquire timed out: the partition missed every request"
        );
    }

    #[test]
    fn variants_the_client_does_not_implement_are_refused_by_key() {
        let text = std::fs::read_to_string(
            [env!("CARGO_MANIFEST_DIR"), "examples/redis_rs/row-01.toml"]
                .iter()
                .collect::<PathBuf>(),
        )
        .unwrap();
        for (key, value) in [
            ("acquire", "\"setnx-then-expire\""),
            ("unlock", "\"del\""),
            ("renew", "\"watchdog\""),
            ("scripts", "{ release = \"r.lua\" }"),
        ] {
            let changed = text.replace("ttl_ms = 1000", &format!("ttl_ms = 1000\n{key} = {value}"));
            let err = match Scenario::parse_with("row-01.toml".as_ref(), &changed, FAMILIES) {
                Ok(_) => panic!("{key} = {value} was accepted"),
                Err(e) => e.to_string(),
            };
            assert!(err.contains(&format!("lock.{key}")), "{key}: {err}");
            assert!(err.contains("redis-rs client"), "{key}: {err}");
        }
        // The keys it honours are accepted, and the model's own checks still apply.
        let fine = text.replace(
            "ttl_ms = 1000",
            "ttl_ms = 1000\ntoken = \"incr\"\npersistence = \"always\"",
        );
        assert!(Scenario::parse_with("row-01.toml".as_ref(), &fine, FAMILIES).is_ok());
        let zero = text.replace("ttl_ms = 1000", "ttl_ms = 0");
        let err = Scenario::parse_with("row-01.toml".as_ref(), &zero, FAMILIES).unwrap_err();
        assert!(err.to_string().contains("lock.ttl_ms"), "{err}");
    }
}
