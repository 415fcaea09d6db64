//! Redlock through whole runs: runs are deterministic, and the row 7 history tells the
//! story Kleppmann tells — which client held which nodes, the jumped clock, and the two
//! overlapping majorities.

use locksim::history::{to_jsonl, Event, EventType};
use locksim::{check_run, run, Scenario, Verdict};
use std::path::Path;

fn load(name: &str) -> Scenario {
    Scenario::load(Path::new(&format!("sims/{name}.toml"))).expect("valid scenario")
}

#[test]
fn redlock_runs_are_deterministic() {
    for name in [
        "redlock-baseline",
        "redlock-07-node-clock-jump-random",
        "redlock-08-fast-restart-random",
        "redlock-10-wall-clock-step-random",
    ] {
        let s = load(name);
        for seed in 0..4 {
            let a = run(&s, seed);
            let b = run(&s, seed);
            assert!(a.error.is_none(), "{name} seed {seed}: {:?}", a.error);
            assert_eq!(
                to_jsonl(&a.history),
                to_jsonl(&b.history),
                "{name} seed {seed} differs between two runs"
            );
        }
    }
}

/// The nodes a `majority` event says granted the lock.
fn nodes(e: &Event) -> Vec<String> {
    serde_json::from_value(e.value.as_ref().expect("value")["nodes"].clone()).expect("nodes")
}

#[test]
fn row_7_history_shows_two_majorities_sharing_the_jumped_node() {
    let s = load("redlock-07-node-clock-jump");
    let r = run(&s, 0);
    let reports = check_run(&s, &r);
    let mutex = reports.iter().find(|c| c.name == "mutex").expect("mutex");
    assert_eq!(mutex.verdict, Verdict::Violated);
    let h = &r.history;
    // redis-2's wall clock jumped 2 s ahead of true time at 1200 ms.
    let jump = h
        .iter()
        .find(|e| e.f == "clock-jump")
        .expect("clock jump recorded");
    assert_eq!(jump.time_ns, 1_200_000_000);
    assert_eq!(jump.nodes.as_deref(), Some(&["redis-2".to_string()][..]));
    // Each client's majority is its three reachable nodes; both include redis-2.
    let majorities: Vec<&Event> = h
        .iter()
        .filter(|e| e.kind == EventType::Event && e.f == "majority")
        .collect();
    for m in &majorities {
        let expected = match m.process.as_str() {
            "client-0" => ["redis-0", "redis-1", "redis-2"],
            _ => ["redis-2", "redis-3", "redis-4"],
        };
        // Only while the partitions last (until 3000 ms).
        if m.time_ns < 3_000_000_000 {
            assert_eq!(nodes(m), expected, "{m:?}");
        }
    }
    // The overlap: one client's majority came right after the jump, while the other held.
    let v = &mutex.violations[0];
    let holders: Vec<&str> = v
        .events
        .iter()
        .map(|&i| h[i as usize].process.as_str())
        .collect();
    assert!(holders.contains(&"client-0") && holders.contains(&"client-1"));
}
