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

// --- The client against real Redis node models: release, majorities, partitions. ---

/// A short Redlock scenario with `extra` appended.
fn world(extra: &str) -> Scenario {
    let text = format!(
        "name = \"t\"\nalgorithm = \"redlock\"\nduration_ms = 3000\nliveness_ms = 1000\n{extra}"
    );
    Scenario::parse(Path::new("redlock-test.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
}

fn events<'h>(h: &'h [Event], kind: EventType, f: &str) -> Vec<&'h Event> {
    h.iter().filter(|e| e.kind == kind && e.f == f).collect()
}

/// The nodes named by a `majority` event.
fn granted(e: &Event) -> Vec<String> {
    let v = e.value.as_ref().expect("majority events carry a value");
    serde_json::from_value(v["nodes"].clone()).expect("a list of node names")
}

#[test]
fn release_deletes_the_key_on_every_node() {
    // One client, no faults: every grant is on all five nodes and every release
    // deletes all five keys, so no key is ever left to expire.
    let s = world("[lock]\nttl_ms = 500\n[workload]\nclients = 1\n");
    for seed in 0..3 {
        let r = run(&s, seed);
        let h = &r.history;
        let grants = events(h, EventType::Ok, "acquire");
        assert!(
            grants.len() > 10,
            "seed {seed}: only {} grants",
            grants.len()
        );
        for m in events(h, EventType::Event, "majority") {
            assert_eq!(granted(m).len(), 5, "{m:?}");
        }
        let releases = events(h, EventType::Ok, "release");
        assert!(releases.len() >= grants.len() - 1);
        // A release that deleted no majority is recorded as `fail`.
        assert!(
            events(h, EventType::Fail, "release").is_empty(),
            "seed {seed}: a release did not delete a majority"
        );
        let expired = events(h, EventType::Event, "expire");
        assert!(
            expired.is_empty(),
            "seed {seed}: keys left behind: {expired:?}"
        );
    }
}

#[test]
fn a_majority_is_enough_and_required() {
    // Two of five nodes down: every grant comes from the other three.
    let two_down = world(
        "[lock]\nttl_ms = 500\n[workload]\nclients = 2\n\
         [[faults.at]]\nat_ms = 0\nkind = \"crash\"\nnodes = [\"redis-0\", \"redis-3\"]\n",
    );
    let r = run(&two_down, 1);
    let majorities = events(&r.history, EventType::Event, "majority");
    assert!(majorities.len() > 5);
    for m in &majorities {
        assert_eq!(granted(m), ["redis-1", "redis-2", "redis-4"], "{m:?}");
    }
    assert!(!events(&r.history, EventType::Ok, "release").is_empty());
    assert!(events(&r.history, EventType::Fail, "release").is_empty());
    // Three of five down: nobody ever holds the lock, and the failures are definite
    // (a refused connection cannot have set a key).
    let three_down = world(
        "[lock]\nttl_ms = 500\n[workload]\nclients = 2\n\
         [[faults.at]]\nat_ms = 0\nkind = \"crash\"\nnodes = [\"redis-0\", \"redis-1\", \"redis-3\"]\n",
    );
    let r = run(&three_down, 1);
    assert!(events(&r.history, EventType::Ok, "acquire").is_empty());
    assert!(!events(&r.history, EventType::Fail, "acquire").is_empty());
}

#[test]
fn a_partitioned_holder_releases_its_majority() {
    // client-0 never reaches redis-3 and redis-4: it holds and releases on 0, 1, 2.
    let s = world(
        "[lock]\nttl_ms = 500\n[workload]\nclients = 1\n\
         [[faults.at]]\nat_ms = 0\nkind = \"partition\"\nnodes = [\"client-0\"]\npeers = [\"redis-3\", \"redis-4\"]\n",
    );
    let r = run(&s, 2);
    let majorities = events(&r.history, EventType::Event, "majority");
    assert!(majorities.len() > 5);
    for m in &majorities {
        assert_eq!(granted(m), ["redis-0", "redis-1", "redis-2"], "{m:?}");
    }
    assert!(!events(&r.history, EventType::Ok, "release").is_empty());
    assert!(events(&r.history, EventType::Fail, "release").is_empty());
    assert!(events(&r.history, EventType::Event, "expire").is_empty());
}
