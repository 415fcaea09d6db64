//! Users' own lock scripts (`[lock] scripts = { ... }`) in simulation: the lock scripts of
//! redis-py, node-redlock and Redisson acquire, extend (watchdog) and release through the
//! model's Lua engine. Work takes two to three leases, so mutual exclusion holds only if
//! the extend script really renews; the same run without renewal is the control. A script
//! that raises an error leaves its error replies in the history, named.

use locksim::check::{COUNTER, LIVENESS, MUTEX};
use locksim::history::{acquire_errors, ErrorReply, Event, EventType};
use locksim::{check_run, run, Scenario, Verdict};
use std::path::Path;

/// A fault-free run of three clients whose work outlasts the 300 ms lease.
fn scenario(lock: &str) -> Scenario {
    let text = format!(
        "name = \"user-scripts\"\nalgorithm = \"redis\"\nduration_ms = 6000\n\
         [lock]\nttl_ms = 300\n{lock}\n\
         [workload]\nclients = 3\nfencing = false\ncheck_validity = false\nwork_ms = [600, 900]\n"
    );
    // Script paths are relative to the scenario file: the fixtures' folder.
    Scenario::parse(Path::new("tests/fixtures/lock_scripts/user.toml"), &text)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Every grant is renewed past its lease and released by the script: mutex and counter
/// hold, and every release completes `ok`.
fn acquires_extends_and_releases(scripts: &str) {
    let s = scenario(&format!("renew = \"watchdog\"\nscripts = {scripts}"));
    for seed in 0..4 {
        let r = run(&s, seed);
        assert!(r.error.is_none(), "seed {seed}: {:?}", r.error);
        for check in [&MUTEX, &COUNTER, &LIVENESS] {
            assert_eq!(
                check_run(&s, &r).verdict(check),
                Verdict::Holds,
                "seed {seed}: {check:?}"
            );
        }
        let count = |f: &str, kind: EventType| {
            r.history
                .iter()
                .filter(|e| e.f == f && e.kind == kind && e.process.starts_with("client-"))
                .count()
        };
        let (acquired, released) = (
            count("acquire", EventType::Ok),
            count("release", EventType::Ok),
        );
        assert!(acquired >= 4, "seed {seed}: only {acquired} grants");
        assert_eq!(
            count("release", EventType::Fail),
            0,
            "seed {seed}: a release failed"
        );
        assert_eq!(
            count("release", EventType::Info),
            0,
            "seed {seed}: a release unknown"
        );
        // The last grant may still be held when the run ends.
        assert!(
            released + 1 >= acquired,
            "seed {seed}: {acquired} grants, {released} releases"
        );
    }
    // The control: without renewal the same work outlasts the lease and overlaps.
    let bare = scenario(&format!("scripts = {scripts}"));
    let violated =
        (0..4).any(|seed| check_run(&bare, &run(&bare, seed)).verdict(&MUTEX) == Verdict::Violated);
    assert!(
        violated,
        "without the extend script's renewal the leases must lapse"
    );
}

#[test]
fn redis_py_scripts_extend_and_release_a_set_nx_px_lock() {
    // redis-py acquires with SET NX PX (the `acquire` key's default), not a script.
    acquires_extends_and_releases(
        "{ convention = \"token\", release = \"redis-py-release.lua\", extend = \"redis-py-reacquire.lua\" }",
    );
    acquires_extends_and_releases(
        "{ convention = \"token\", release = \"redis-py-release.lua\", extend = \"redis-py-extend.lua\" }",
    );
}

#[test]
fn node_redlock_scripts_acquire_extend_and_release() {
    acquires_extends_and_releases(
        "{ convention = \"token\", acquire = \"node-redlock-acquire.lua\", \
         release = \"node-redlock-release.lua\", extend = \"node-redlock-extend.lua\" }",
    );
}

#[test]
fn redisson_scripts_acquire_extend_and_release_a_hash_lock() {
    acquires_extends_and_releases(
        "{ acquire = \"../../../sims/scripts/redisson-lock.lua\", \
         release = \"../../../sims/scripts/redisson-unlock.lua\", \
         extend = \"../../../sims/scripts/redisson-renew.lua\" }",
    );
}

#[test]
fn a_release_script_error_is_a_failed_release() {
    // A script written for another convention (a hash lock's on a string key): Redis
    // answers WRONGTYPE, the release fails and the lock stays until its lease runs out.
    let s = scenario(
        "scripts = { convention = \"token\", release = \"../../../sims/scripts/redisson-renew.lua\" }",
    );
    let r = run(&s, 0);
    let failed = r
        .history
        .iter()
        .filter(|e| e.f == "release" && e.kind == EventType::Fail)
        .count();
    assert!(failed > 0, "the wrong release script must fail to release");
}

#[test]
fn an_acquire_script_that_always_errors_is_recorded_and_named() {
    // `error("boom")`: every EVAL gets an error reply; nobody ever acquires.
    let s = Scenario::load(Path::new("tests/fixtures/lock_scripts/boom.toml")).unwrap();
    let r = run(&s, 0);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(check_run(&s, &r).verdict(&LIVENESS), Verdict::Violated);
    let replies: Vec<ErrorReply> = r.history.iter().filter_map(ErrorReply::of).collect();
    assert!(!replies.is_empty(), "the error replies are in the history");
    for reply in &replies {
        assert_eq!((reply.script, reply.server), ("acquire", Some("redis-0")));
        assert!(
            reply.text.starts_with("ERR user_script:3: boom script: "),
            "{}",
            reply.text
        );
    }
    // Each reply ends its acquire as before: `info` (a script may have written before
    // raising), recorded after the reply's event.
    let unknown: Vec<&Event> = r
        .history
        .iter()
        .filter(|e| e.f == "acquire" && e.kind == EventType::Info)
        .collect();
    assert_eq!(unknown.len(), replies.len());
    assert!(unknown
        .iter()
        .all(|e| e.reason.as_deref().is_some_and(|r| r.contains("boom"))));
    let d = acquire_errors(&r.history).expect("no grant, error replies: a diagnosis");
    assert_eq!(d.count, replies.len() as u64);
    assert_eq!((d.acquires, d.distinct), (d.count, 1));
    assert!(
        d.describe().starts_with("every acquire ("),
        "{}",
        d.describe()
    );
    assert!(d.error.contains("boom"), "{}", d.error);
}

#[test]
fn scripts_that_behave_record_no_error_reply() {
    let s = scenario(
        "renew = \"watchdog\"\nscripts = { convention = \"token\", \
         acquire = \"node-redlock-acquire.lua\", release = \"node-redlock-release.lua\", \
         extend = \"node-redlock-extend.lua\" }",
    );
    let r = run(&s, 0);
    assert!(r.history.iter().all(|e| ErrorReply::of(e).is_none()));
    assert_eq!(acquire_errors(&r.history), None);
}
