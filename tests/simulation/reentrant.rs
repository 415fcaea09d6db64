//! Acquire modes and re-entry through whole runs: the defaults change no history, and
//! each family's re-entry and try behave as its real client does (the `sims/*-reentrant*`
//! and `sims/*-try*` files; the catalogue checks their `[expect]` over more seeds).

use locksim::check::{MUTEX, REENTRANT};
use locksim::history::{to_jsonl, Event, EventType};
use locksim::{check_run, run, CheckReports, Scenario, Verdict};
use std::path::Path;

fn load(name: &str) -> Scenario {
    Scenario::load(Path::new(&format!("sims/{name}.toml"))).expect("valid scenario")
}

/// The completions of the re-entrant (`inner`) or plain acquires of clients.
fn acquires(h: &[Event], inner: bool) -> Vec<&Event> {
    h.iter()
        .filter(|e| e.f == "acquire" && e.kind != EventType::Invoke)
        .filter(|e| e.process.starts_with("client-") && e.is_reentrant() == inner)
        .collect()
}

/// One run of `s`, which must not fail in the harness: its check reports and history.
fn checked(s: &Scenario, seed: u64) -> (CheckReports, Vec<Event>) {
    let r = run(s, seed);
    assert!(r.error.is_none(), "{}: {:?}", s.name, r.error);
    (check_run(s, &r), r.history)
}

/// Writing the defaults out changes nothing: same events, same random draws.
#[test]
fn the_defaults_leave_every_history_as_it_was() {
    for name in ["redis-baseline-fenced", "zk-baseline", "db-baseline"] {
        let path = format!("sims/{name}.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let explicit = text.replace(
            "[workload]\n",
            "[workload]\nacquire = \"wait\"\nreentrant = false\n",
        );
        assert_ne!(text, explicit, "{name} has a [workload] table");
        let a = Scenario::parse(Path::new(&path), &text).unwrap();
        let b = Scenario::parse(Path::new(&path), &explicit).unwrap();
        for seed in 0..2 {
            let (ha, hb) = (run(&a, seed).history, run(&b, seed).history);
            assert!(ha.iter().all(|e| e.reentrant.is_none()), "{name}");
            assert_eq!(to_jsonl(&ha), to_jsonl(&hb), "{name} seed {seed}");
        }
    }
}

#[test]
fn curator_and_redisson_count_a_reentry() {
    for name in ["zk-reentrant", "redis-reentrant-redisson"] {
        let (c, h) = checked(&load(name), 0);
        assert_eq!(c.verdict(&REENTRANT), Verdict::Holds, "{name}");
        let inner = acquires(&h, true);
        assert!(!inner.is_empty(), "{name}: re-entry exercised");
        assert!(inner.iter().all(|e| e.kind == EventType::Ok), "{name}");
    }
    // Curator counts on the client: no request, no time.
    let (_, h) = checked(&load("zk-reentrant"), 0);
    let invokes: Vec<&Event> = h
        .iter()
        .filter(|e| e.is_reentrant() && e.f == "acquire" && e.kind == EventType::Invoke)
        .collect();
    for (i, ok) in invokes.iter().zip(acquires(&h, true)) {
        assert_eq!(i.time_ns, ok.time_ns);
    }
}

/// etcd's Mutex: the second Lock returns at once, the inner Unlock frees the lock under
/// the outer holder, and the outer Unlock is `ErrLockReleased`.
#[test]
fn etcd_reentry_returns_at_once_and_the_inner_unlock_frees_the_lock() {
    let (c, h) = checked(&load("raft-reentrant"), 0);
    assert_eq!(c.verdict(&REENTRANT), Verdict::Violated);
    assert!(acquires(&h, true).iter().all(|e| e.kind == EventType::Ok));
    let outer_releases: Vec<&Event> = h
        .iter()
        .filter(|e| e.f == "release" && e.kind == EventType::Fail && !e.is_reentrant())
        .collect();
    assert!(!outer_releases.is_empty());
    assert!(outer_releases
        .iter()
        .all(|e| e.reason.as_deref() == Some("lock has been released (ErrLockReleased)")));
}

#[test]
fn a_set_nx_reentry_finds_its_own_key_busy() {
    let (c, h) = checked(&load("redis-reentrant-set-nx"), 0);
    assert_eq!(c.verdict(&REENTRANT), Verdict::Violated);
    let inner = acquires(&h, true);
    assert!(!inner.is_empty());
    assert!(inner
        .iter()
        .all(|e| e.kind == EventType::Fail && e.reason.as_deref() == Some("busy: lock busy")));
}

/// A try that finds the lock held fails at once with the family's reason.
#[test]
fn tries_fail_busy_with_the_real_clients_reason() {
    for (name, reason) in [
        ("zk-try", "busy: another lock node sorts first (acquire(0))"),
        (
            "raft-try",
            "busy: mutex: Locked by another session (ErrLocked)",
        ),
    ] {
        let (c, h) = checked(&load(name), 0);
        assert_eq!(c.verdict(&MUTEX), Verdict::Holds, "{name}");
        let fails: Vec<&Event> = acquires(&h, false)
            .into_iter()
            .filter(|e| e.kind == EventType::Fail)
            .collect();
        assert!(!fails.is_empty(), "{name}: some try found the lock held");
        assert!(
            fails.iter().all(|e| e.reason.as_deref() == Some(reason)),
            "{name}: {:?}",
            fails.iter().map(|e| &e.reason).collect::<Vec<_>>()
        );
    }
}
