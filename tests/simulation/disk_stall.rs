//! The `disk-stall` fault, observed through whole runs: the process keeps running while
//! its fsyncs wait, and what waits differs by family as it does in the real systems.
//! Redis with `appendfsync always` blocks as a whole (its one thread fsyncs before
//! replying) while `everysec` answers on; a database answers a commit only once its redo
//! is on disk; a Raft node cannot acknowledge what it has not logged.

use locksim::history::{Event, EventType};
use locksim::{run, Scenario};
use std::path::Path;

fn scenario(algorithm: &str, extra: &str) -> Scenario {
    let text = format!(
        "name = \"d\"\nalgorithm = \"{algorithm}\"\nduration_ms = 4000\nliveness_ms = 1000\n{extra}"
    );
    Scenario::parse(Path::new("disk-stall.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
}

const STALL: &str = "[[faults.at]]\nat_ms = 1000\nkind = \"disk-stall\"\nduration_ms = 1000\n";

/// Acquire completions (`ok`) by clients, in true ms.
fn grants(h: &[Event]) -> Vec<u64> {
    h.iter()
        .filter(|e| e.process.starts_with("client-") && e.f == "acquire")
        .filter(|e| e.kind == EventType::Ok)
        .map(|e| e.time_ns / 1_000_000)
        .collect()
}

/// Grants strictly inside the stall, after the replies already on the wire (a hop takes
/// at most 10 ms; a Raft acquire's last reads take a few).
fn grants_during_stall(h: &[Event]) -> Vec<u64> {
    grants(h)
        .into_iter()
        .filter(|t| (1030..2000).contains(t))
        .collect()
}

fn nemesis(h: &[Event], f: &str) -> Vec<u64> {
    h.iter()
        .filter(|e| e.process == "nemesis" && e.f == f)
        .map(|e| e.time_ns / 1_000_000)
        .collect()
}

const WORKLOAD: &str = "[workload]\nclients = 3\nwork_ms = [20, 60]\nthink_ms = [0, 20]\n";

#[test]
fn redis_always_freezes_from_its_first_fsync_until_the_disk_recovers() {
    let s = scenario(
        "redis",
        &format!("[lock]\nttl_ms = 500\npersistence = \"always\"\n{WORKLOAD}{STALL}nodes = [\"redis-0\"]\n"),
    );
    for seed in 0..4 {
        let h = run(&s, seed).history;
        assert_eq!(nemesis(&h, "disk-stall"), [1000], "seed {seed}");
        assert_eq!(nemesis(&h, "disk-ready"), [2000], "seed {seed}");
        assert!(
            grants_during_stall(&h).is_empty(),
            "seed {seed}: {:?}",
            grants(&h)
        );
        // The freeze is recorded as a pause that strikes at the fsync.
        let pause = h
            .iter()
            .find(|e| e.process == "nemesis" && e.f == "pause")
            .expect("a pause at the fsync");
        assert_eq!(pause.value.as_ref().unwrap()["at"], "fsync");
        assert!(
            grants(&h).iter().any(|&t| t >= 2000),
            "seed {seed}: {:?}",
            grants(&h)
        );
    }
}

#[test]
fn redis_everysec_answers_on_while_its_background_fsync_waits() {
    let s = scenario(
        "redis",
        &format!("[lock]\nttl_ms = 3000\npersistence = \"everysec\"\n{WORKLOAD}{STALL}nodes = [\"redis-0\"]\n"),
    );
    let h = run(&s, 0).history;
    assert!(!grants_during_stall(&h).is_empty(), "{:?}", grants(&h));
    assert!(nemesis(&h, "pause").is_empty());
}

#[test]
fn a_database_answers_a_commit_once_its_redo_is_on_disk() {
    let stalled = |fsync: &str| {
        scenario(
            "db",
            &format!("[lock]\nscheme = \"unique-row\"\nfsync = \"{fsync}\"\n{WORKLOAD}{STALL}nodes = [\"db-0\"]\n"),
        )
    };
    for seed in 0..4 {
        let h = run(&stalled("always"), seed).history;
        assert!(
            grants_during_stall(&h).is_empty(),
            "seed {seed}: {:?}",
            grants(&h)
        );
        assert!(
            grants(&h).iter().any(|t| (2000..2100).contains(t)),
            "seed {seed}"
        );
        // A server that flushes once a second answers on (and may lose the commits).
        let h = run(&stalled("none"), seed).history;
        assert!(
            !grants_during_stall(&h).is_empty(),
            "seed {seed}: {:?}",
            grants(&h)
        );
    }
}

#[test]
fn raft_commits_nothing_while_every_disk_is_stalled() {
    let s = scenario(
        "raft",
        &format!(
            "[lock]\nnodes = 3\nttl_ms = 500\n{WORKLOAD}{STALL}nodes = [\"raft-0\", \"raft-1\", \"raft-2\"]\n"
        ),
    );
    for seed in 0..4 {
        let h = run(&s, seed).history;
        assert!(
            grants_during_stall(&h).is_empty(),
            "seed {seed}: {:?}",
            grants(&h)
        );
        assert!(
            grants(&h).iter().any(|&t| t >= 2000),
            "seed {seed}: {:?}",
            grants(&h)
        );
    }
}

#[test]
fn a_stall_names_only_nodes_with_a_disk() {
    let err = |algorithm: &str, extra: &str| {
        let text = format!("name = \"d\"\nalgorithm = \"{algorithm}\"\nduration_ms = 4000\nliveness_ms = 1000\n{extra}");
        Scenario::parse(Path::new("d.toml"), &text)
            .expect_err("rejected")
            .to_string()
    };
    let e = err("redis", &format!("{STALL}nodes = [\"client-0\"]\n"));
    assert!(
        e.contains("`client-0` has no disk") && e.contains("redis-0"),
        "{e}"
    );
    let e = err(
        "redis-replicated",
        &format!("{STALL}nodes = [\"sentinel-0\"]\n"),
    );
    assert!(
        e.contains("`sentinel-0` has no disk") && e.contains("redis-1"),
        "{e}"
    );
    let e = err(
        "db",
        "[lock]\ncleaner_timeout_ms = 500\n[faults]\ndisk-stall = { nodes = [\"cleaner\"], duration_ms = [1, 2] }\n",
    );
    assert!(
        e.contains("faults.disk-stall.nodes") && e.contains("db-0"),
        "{e}"
    );
}

#[test]
fn stalls_replay_byte_for_byte() {
    let random = "[faults]\ninterval_ms = [200, 600]\ndisk-stall = { nodes = \"servers\", duration_ms = [50, 800] }\n";
    for (algorithm, lock) in [
        ("redis", "[lock]\nttl_ms = 500\npersistence = \"always\"\n"),
        (
            "db",
            "[lock]\nscheme = \"unique-row\"\ncleaner_timeout_ms = 500\n",
        ),
        ("zk", "[lock]\nservers = 1\n"),
        ("zk", "[lock]\nservers = 3\n"),
    ] {
        let s = scenario(algorithm, &format!("{lock}{WORKLOAD}{random}"));
        for seed in 0..3 {
            let (a, b) = (run(&s, seed), run(&s, seed));
            assert!(!nemesis(&a.history, "disk-stall").is_empty());
            assert_eq!(
                locksim::history::to_jsonl(&a.history),
                locksim::history::to_jsonl(&b.history),
                "{algorithm} seed {seed}"
            );
        }
    }
}
