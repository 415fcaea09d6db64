//! Users' lock scripts that misbehave, in simulation: one that never ends, one that
//! writes and never ends, one that allocates without bound, and one that is merely slow.
//! Each run must finish, deterministically, with what a real server would have shown the
//! clients (`BUSY`, Lua's memory error, a server frozen while the script runs).

use locksim::check::{LIVENESS, MUTEX};
use locksim::history::{acquire_errors, Event, EventType};
use locksim::{check_run, run, Scenario, Verdict};
use std::path::Path;

/// Two clients locking for `ms` through the user's acquire script `acquire` (owner-token
/// convention), servers with a 500 ms `busy-reply-threshold`; a request waits up to 1 s.
fn scenario(acquire: &str, ms: u64) -> Scenario {
    scenario_of("redis", acquire, ms)
}

/// [`scenario`] for `algorithm`.
fn scenario_of(algorithm: &str, acquire: &str, ms: u64) -> Scenario {
    let text = format!(
        "name = \"hostile-script\"\nalgorithm = \"{algorithm}\"\nduration_ms = {ms}\n\
         [lock]\nttl_ms = 600\nrequest_timeout_ms = 1000\nbusy_reply_threshold_ms = 500\n\
         scripts = {{ convention = \"token\", acquire = \"{acquire}\", release = \"release.lua\" }}\n\
         [workload]\nclients = 2\nfencing = false\ncheck_validity = false\nwork_ms = [20, 40]\n"
    );
    Scenario::parse(Path::new("tests/fixtures/hostile_scripts/s.toml"), &text)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The nodes' freezes for scripts (`busy` events, never faults): (true time ms, duration
/// ms). No `resume` follows them.
fn script_freezes(history: &[Event]) -> Vec<(u64, f64)> {
    history
        .iter()
        .filter(|e| e.f == "busy" && e.value.as_ref().is_some_and(|v| v["at"] == "script"))
        .map(|e| {
            let v = e.value.as_ref().expect("a pause has a value");
            (e.time_ns / 1_000_000, v["duration_ms"].as_f64().unwrap())
        })
        .collect()
}

/// Whether a client was told `text` (an operation's reason quotes the reply).
fn told(history: &[Event], text: &str) -> bool {
    history.iter().any(|e| {
        e.process.starts_with("client-") && e.reason.as_deref().is_some_and(|r| r.contains(text))
    })
}

fn grants(history: &[Event]) -> usize {
    history
        .iter()
        .filter(|e| e.f == "acquire" && e.kind == EventType::Ok)
        .count()
}

/// Runs seed 0 twice: the histories must be identical.
fn run_twice(s: &Scenario) -> locksim::RunResult {
    let a = run(s, 0);
    let b = run(s, 0);
    assert!(a.error.is_none(), "{:?}", a.error);
    assert_eq!(a.history, b.history, "the same seed gave two histories");
    a
}

#[test]
fn a_script_that_never_ends_freezes_its_server_then_clients_get_busy() {
    for script in ["endless.lua", "writes-then-endless.lua"] {
        let s = scenario(script, 3000);
        let r = run_twice(&s);
        // One freeze of the threshold, then the server answers (BUSY) without running it.
        let freezes = script_freezes(&r.history);
        assert_eq!(freezes.len(), 1, "{script}: {freezes:?}");
        assert!(r.history.iter().all(|e| e.process != "nemesis"), "{script}");
        assert_eq!(freezes[0].1, 500.0, "{script}");
        assert_eq!(grants(&r.history), 0, "{script}");
        assert!(
            told(&r.history, "BUSY Redis is busy running a script"),
            "{script}"
        );
        // The run's summary names it: every acquire but the script's own failed on BUSY.
        let why = acquire_errors(&r.history).expect("acquires got error replies");
        assert!(
            why.error.starts_with("BUSY Redis is busy"),
            "{script}: {why:?}"
        );
        assert!(why.count + 2 >= why.acquires, "{script}: {why:?}");
    }
}

#[test]
fn a_script_that_allocates_without_bound_gets_an_error_and_the_run_ends() {
    // Each attempt allocates up to the 2 MiB cap: a short run.
    let s = scenario("grows.lua", 600);
    let r = run_twice(&s);
    assert!(script_freezes(&r.history).is_empty());
    assert_eq!(grants(&r.history), 0);
    assert!(told(&r.history, "not enough memory"));
    let why = acquire_errors(&r.history).expect("acquires got error replies");
    assert_eq!((why.distinct, why.count), (1, why.acquires), "{why:?}");
    assert!(why.error.ends_with("not enough memory"), "{why:?}");
}

#[test]
fn a_slow_script_costs_simulated_time_and_the_lock_still_works() {
    let s = scenario("slow-acquire.lua", 2000);
    let r = run_twice(&s);
    let freezes = script_freezes(&r.history);
    assert!(!freezes.is_empty());
    for (_, ms) in &freezes {
        assert!((150.0..=250.0).contains(ms), "{freezes:?}");
    }
    assert!(grants(&r.history) >= 2);
    assert_eq!(check_run(&s, &r).verdict(&MUTEX), Verdict::Holds);
}

#[test]
fn sentinels_kill_a_script_that_never_ends() {
    // Real Sentinel sends SCRIPT KILL to a primary that is down and answers BUSY: the
    // killed script's client has long timed out, but redis-0 serves again, and the next
    // acquire runs the script there once more.
    let on_primary = |r: &locksim::RunResult| {
        r.history
            .iter()
            .filter(|e| e.f == "busy" && e.process == "redis-0")
            .count()
    };
    let s = scenario_of("redis-replicated", "endless.lua", 4000);
    let r = run_twice(&s);
    assert!(on_primary(&r) >= 2, "{}", on_primary(&r));
    // Sentinels cannot kill one that wrote: redis-0 stays busy, failovers move clients on.
    let s = scenario_of("redis-replicated", "writes-then-endless.lua", 4000);
    let r = run_twice(&s);
    assert_eq!(on_primary(&r), 1);
    assert!(r.history.iter().any(|e| e.f == "promote"));
}

#[test]
fn a_slow_script_is_not_a_fault_liveness_still_fails() {
    // The server's busy time is its own work, not a fault that heals: the liveness
    // window runs from the start, and a script that never grants violates it.
    let s = scenario("slow-never-grants.lua", 6000);
    let r = run_twice(&s);
    assert!(!script_freezes(&r.history).is_empty());
    assert!(r.history.iter().all(|e| e.process != "nemesis"));
    assert_eq!(check_run(&s, &r).verdict(&LIVENESS), Verdict::Violated);
}
