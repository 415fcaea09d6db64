//! Database locks through whole runs: each scheme against the `db-0` node over simulated
//! TCP, which clock decides a row's age, what a partitioned FOR UPDATE holder keeps, and
//! the `[lock]` keys' validation.

use locksim::check::{COUNTER, FENCING, LIVENESS, LOCK_LINEARIZABLE, MUTEX, TOKEN_ORDER};
use locksim::history::{Event, EventType};
use locksim::{check_run, run, Scenario, Verdict};
use std::path::Path;

/// A short db scenario with `extra` appended.
fn world(extra: &str) -> Scenario {
    world_of(3000, extra)
}

/// A db scenario of `duration_ms` with `extra` appended.
fn world_of(duration_ms: u64, extra: &str) -> Scenario {
    let text = format!(
        "name = \"t\"\nalgorithm = \"db\"\nduration_ms = {duration_ms}\nliveness_ms = 1000\n{extra}"
    );
    Scenario::parse(Path::new("db-test.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
}

fn events<'h>(h: &'h [Event], kind: EventType, f: &str) -> Vec<&'h Event> {
    h.iter().filter(|e| e.kind == kind && e.f == f).collect()
}

#[test]
fn every_scheme_grants_in_token_order_and_releases_cleanly() {
    for scheme in ["unique-row", "for-update", "optimistic", "named-lock"] {
        let s = world(&format!(
            "[lock]\nscheme = \"{scheme}\"\n[workload]\nclients = 2\nwork_ms = [5, 20]\n"
        ));
        for seed in 0..3 {
            let r = run(&s, seed);
            assert!(r.error.is_none(), "{scheme} seed {seed}: {:?}", r.error);
            let h = &r.history;
            let grants = events(h, EventType::Ok, "acquire");
            assert!(grants.len() > 20, "{scheme} seed {seed}: {}", grants.len());
            // Grants are serialised by the lock, so the tokens rise with true time.
            let tokens: Vec<u64> = grants.iter().map(|e| e.token.expect("a token")).collect();
            assert!(
                tokens.windows(2).all(|w| w[0] < w[1]),
                "{scheme} seed {seed}: {tokens:?}"
            );
            assert!(events(h, EventType::Fail, "release").is_empty(), "{scheme}");
            assert!(events(h, EventType::Info, "acquire").is_empty(), "{scheme}");
            assert!(events(h, EventType::Event, "expire").is_empty(), "{scheme}");
            for check in [&MUTEX, &COUNTER, &LOCK_LINEARIZABLE, &LIVENESS] {
                assert_eq!(
                    check_run(&s, &r).verdict(check),
                    Verdict::Holds,
                    "{scheme} {check:?}"
                );
            }
        }
    }
}

#[test]
fn a_partitioned_for_update_holder_keeps_its_lock_until_wait_timeout() {
    let s = Scenario::load(Path::new("sims/db-for-update-partition.toml")).unwrap();
    let cut = 1_000_000_000u64;
    let mut seen = 0;
    for seed in 0..10 {
        let r = run(&s, seed);
        let h = &r.history;
        // Seeds where client-0 holds the lock when it is cut off from db-0.
        let Some(grant) = h.iter().rfind(|e| {
            e.process == "client-0"
                && e.f == "acquire"
                && e.kind == EventType::Ok
                && e.time_ns < cut
        }) else {
            continue;
        };
        let release = h
            .iter()
            .find(|e| {
                e.process == "client-0"
                    && e.f == "release"
                    && e.kind == EventType::Invoke
                    && e.time_ns > grant.time_ns
            })
            .expect("a release follows");
        if release.time_ns < cut {
            continue;
        }
        seen += 1;
        // Its COMMIT is lost in the partition: unknown outcome.
        let done = h
            .iter()
            .find(|e| e.process == "client-0" && e.f == "release" && e.index > release.index)
            .unwrap();
        assert_eq!(done.kind, EventType::Info, "seed {seed}: {done:?}");
        // The server ends the session once it has been idle for wait_timeout: 1 s after
        // it granted the lock (client-0's last statement; the client saw the grant up to
        // one latency later), on a 10 ms housekeeping tick.
        let expire = events(h, EventType::Event, "expire")
            .into_iter()
            .find(|e| e.time_ns > grant.time_ns)
            .expect("the server rolls the transaction back");
        let idle = expire.time_ns - grant.time_ns;
        assert!(
            (990_000_000..1_025_000_000).contains(&idle),
            "seed {seed}: expired {idle} ns after the grant"
        );
        // Nobody else held the lock in between; a waiter gets it soon after (it may be
        // between a 1205 and its retry).
        let next = h
            .iter()
            .find(|e| e.f == "acquire" && e.kind == EventType::Ok && e.time_ns > grant.time_ns)
            .unwrap();
        assert_ne!(next.process, "client-0");
        assert!(next.time_ns >= expire.time_ns, "seed {seed}");
        assert!(next.time_ns - expire.time_ns < 400_000_000, "seed {seed}");
    }
    assert!(
        seen >= 2,
        "only {seen} seeds cut client-0 off while it held the lock"
    );
}

#[test]
fn a_named_lock_whose_session_the_server_ends_goes_to_the_next_client() {
    // client-0 is frozen right after GET_LOCK grants it: its session idles past
    // wait_timeout, the server ends it (an `expire`), and the waiter is granted.
    let s = world(
        "[lock]\nscheme = \"named-lock\"\nwait_timeout_ms = 500\n\
         [workload]\nclients = 2\nwork_ms = [5, 20]\n\
         [[faults.at]]\nat_ms = 300\nkind = \"pause\"\nnodes = [\"client-0\"]\n\
         duration_ms = 1500\nat = \"after-acquire\"\n",
    );
    let mut seen = 0;
    for seed in 0..3 {
        let r = run(&s, seed);
        assert!(r.error.is_none(), "seed {seed}: {:?}", r.error);
        let h = &r.history;
        let Some(pause) = h.iter().find(|e| e.f == "pause") else {
            continue;
        };
        let grant = h
            .iter()
            .rfind(|e| {
                e.process == "client-0"
                    && e.f == "acquire"
                    && e.kind == EventType::Ok
                    && e.time_ns <= pause.time_ns
            })
            .expect("paused right after a grant");
        let expire = events(h, EventType::Event, "expire")
            .into_iter()
            .find(|e| e.time_ns > grant.time_ns)
            .expect("the server ends the idle session");
        let next = h
            .iter()
            .find(|e| e.f == "acquire" && e.kind == EventType::Ok && e.time_ns > grant.time_ns)
            .expect("the waiter is granted");
        assert_eq!(next.process, "client-1", "seed {seed}");
        assert!(next.time_ns >= expire.time_ns, "seed {seed}");
        assert!(
            next.token.unwrap() > grant.token.unwrap(),
            "seed {seed}: {next:?} after {grant:?}"
        );
        // The next grant comes while client-0 is still frozen.
        assert!(next.time_ns < pause.time_ns + 1_500_000_000, "seed {seed}");
        seen += 1;
    }
    assert!(seen >= 2, "only {seen} seeds paused client-0");
}

#[test]
fn the_cleaner_judges_age_by_the_database_clock() {
    // Lease 1000 ms. A holder paused for 1.3 s loses its row 1000..1100 ms after the
    // INSERT (the cleaner runs every 100 ms).
    let base = "[lock]\ncleaner_timeout_ms = 1000\n[workload]\nclients = 2\nwork_ms = [5, 20]\n";
    let expiries = |extra: &str| -> Vec<u64> {
        let s = world(&format!("{base}{extra}"));
        let r = run(&s, 1);
        let h = &r.history;
        events(h, EventType::Event, "expire")
            .into_iter()
            .map(|e| {
                // Age of the row: since the last grant before the expiry.
                let grant = h
                    .iter()
                    .rfind(|g| g.f == "acquire" && g.kind == EventType::Ok && g.time_ns < e.time_ns)
                    .expect("a grant before");
                (e.time_ns - grant.time_ns) / 1_000_000
            })
            .collect()
    };
    let pause = "[[faults.at]]\nat_ms = 500\nkind = \"pause\"\nnodes = [\"client-0\"]\nduration_ms = 1300\nat = \"after-acquire\"\n";
    let plain = expiries(pause);
    assert_eq!(plain.len(), 1, "{plain:?}");
    assert!((1000..1120).contains(&plain[0]), "{plain:?}");
    // The cleaner's own wall clock 5 s ahead changes nothing: NOW() is the database's.
    let cleaner_jump = "[[faults.at]]\nat_ms = 100\nkind = \"clock-jump\"\nnodes = [\"cleaner\"]\ndelta_ms = 5000\n";
    assert_eq!(expiries(&format!("{pause}{cleaner_jump}")), plain);
    // The database's wall clock stepping 2 s forward makes the paused holder's row,
    // about half a second old, "old".
    let db_jump =
        "[[faults.at]]\nat_ms = 1000\nkind = \"clock-jump\"\nnodes = [\"db-0\"]\ndelta_ms = 2000\n";
    let early = expiries(&format!("{pause}{db_jump}"));
    assert_eq!(early.len(), 1, "{early:?}");
    assert!(early[0] < 1000, "{early:?}");
}

#[test]
fn without_a_cleaner_a_crashed_holder_blocks_everyone() {
    let crash = "[[faults.at]]\nat_ms = 300\nkind = \"crash\"\nnodes = [\"client-0\"]\nat = \"after-acquire\"\n";
    let stuck = world(&format!("[lock]\nscheme = \"unique-row\"\n{crash}"));
    let r = run(&stuck, 0);
    assert_eq!(check_run(&stuck, &r).verdict(&LIVENESS), Verdict::Violated);
    let cleaned = world(&format!(
        "[lock]\nscheme = \"unique-row\"\ncleaner_timeout_ms = 500\n{crash}"
    ));
    let r = run(&cleaned, 0);
    assert_eq!(check_run(&cleaned, &r).verdict(&LIVENESS), Verdict::Holds);
    assert_eq!(events(&r.history, EventType::Event, "expire").len(), 1);
}

#[test]
fn an_unknown_acquire_outcome_is_abandoned() {
    // Partitions cut INSERTs and FOR UPDATEs off mid-flight: such an acquire ends as
    // `info`, and the client then gives back whatever it may have taken.
    for scheme in ["unique-row", "for-update", "optimistic"] {
        let s = world_of(
            6000,
            &format!(
                "[lock]\nscheme = \"{scheme}\"\n[workload]\nclients = 3\n\
                 [faults]\ninterval_ms = [100, 300]\npartition = {{ nodes = \"clients\", duration_ms = [50, 400] }}\n"
            ),
        );
        let mut infos = 0;
        for seed in 0..4 {
            let r = run(&s, seed);
            let h = &r.history;
            for e in events(h, EventType::Info, "acquire") {
                infos += 1;
                let next = h
                    .iter()
                    .find(|n| n.process == e.process && n.index > e.index)
                    .expect("the client goes on");
                assert_eq!((next.kind, next.f.as_str()), (EventType::Invoke, "release"));
                assert_eq!(next.reason.as_deref(), Some("abandon"));
            }
            for check in [&TOKEN_ORDER, &FENCING, &COUNTER, &LOCK_LINEARIZABLE] {
                assert_eq!(
                    check_run(&s, &r).verdict(check),
                    Verdict::Holds,
                    "{scheme} {check:?} seed {seed}"
                );
            }
        }
        assert!(infos > 0, "{scheme}: no acquire with an unknown outcome");
    }
}

#[test]
fn lock_keys_are_checked() {
    let err = |lock: &str| {
        let text = format!("name = \"t\"\nalgorithm = \"db\"\nduration_ms = 1000\n[lock]\n{lock}");
        Scenario::parse(Path::new("db.toml"), &text)
            .map(|_| ())
            .unwrap_err()
            .message()
    };
    let e = err("scheme = \"for-update\"\ncleaner_timeout_ms = 1000\n");
    assert!(
        e.contains("cleaner_timeout_ms") && e.contains("unique-row"),
        "{e}"
    );
    let e = err("scheme = \"for-update\"\nrelease = \"by-name\"\n");
    assert!(e.contains("COMMIT"), "{e}");
    let e = err("scheme = \"optimistic\"\ntoken = \"sequence\"\n");
    assert!(
        e.contains("`lock.token`") && e.contains("\"version\" or \"none\""),
        "{e}"
    );
    // The standby's keys need the standby.
    let e = err("replication = \"semi-sync\"\n");
    assert!(
        e.contains("`lock.replication`") && e.contains("standby = true"),
        "{e}"
    );
    let e = err("standby = true\nreplication = \"sync\"\n");
    assert!(e.contains("replication"), "{e}");
    let e = err("schema = \"unique-row\"\n");
    assert!(e.contains("unknown field `schema`"), "{e}");
    // The nodes: db-0, and the cleaner only with a timeout.
    assert_eq!(world("").servers(), ["db-0"]);
    assert_eq!(
        world("[lock]\ncleaner_timeout_ms = 700\n").servers(),
        ["db-0", "cleaner"]
    );
    assert_eq!(
        world("[lock]\ncleaner_timeout_ms = 700\nstandby = true\n").servers(),
        ["db-0", "db-1", "cleaner", "db-manager"]
    );
    assert_eq!(
        world("[lock]\ncleaner_timeout_ms = 700\n").liveness_ms,
        1000
    );
    assert_eq!(
        world("[lock]\nscheme = \"for-update\"\n").lock.lease_ms(),
        Some(2000)
    );
}

/// A unique-row lock with a standby `lag_ms` behind: db-0 crashes at `crash_ms` for 1.5 s,
/// the manager fails over after 500 ms; `extra` is appended.
fn failover_world(replication: &str, lag_ms: [u64; 2], crash_ms: u64, extra: &str) -> Scenario {
    world_of(
        6000,
        &format!(
            "[lock]\nscheme = \"unique-row\"\ncleaner_timeout_ms = 4000\ntoken = \"id\"\n\
             request_timeout_ms = 1000\nstandby = true\nreplication = \"{replication}\"\n\
             semi_sync_timeout_ms = 60000\nreplication_lag_ms = {lag_ms:?}\ndown_after_ms = 500\n\
             [workload]\nclients = 3\nwork_ms = [2000, 2500]\n\
             [[faults.at]]\nat_ms = {crash_ms}\nkind = \"crash\"\nnodes = [\"db-0\"]\ndown_ms = 1500\n{extra}"
        ),
    )
}

#[test]
fn a_failover_promotes_the_standby_and_the_old_primary_stays_read_only() {
    // After the failover db-0 restarts (1650 ms); then the clients are cut off from
    // db-1 and can reach only db-0, which refuses every INSERT with 1290.
    let cut = "[[faults.at]]\nat_ms = 2500\nkind = \"partition\"\nnodes = [\"db-1\"]\n\
               peers = [\"client-0\", \"client-1\", \"client-2\"]\nduration_ms = 2000\n";
    let s = failover_world("async", [200, 400], 150, cut);
    for seed in 0..2 {
        let r = run(&s, seed);
        assert!(r.error.is_none(), "seed {seed}: {:?}", r.error);
        let h = &r.history;
        let promote = events(h, EventType::Event, "promote");
        assert_eq!(promote.len(), 1, "seed {seed}: one promotion");
        assert_eq!(promote[0].process, "db-1");
        let failover = events(h, EventType::Event, "failover");
        assert_eq!(failover.len(), 1, "seed {seed}");
        assert_eq!(failover[0].process, "db-manager");
        // Promoted down_after_ms after db-0's last answer (a period before the crash at
        // 150 ms at most), within a few periods.
        let at = promote[0].time_ns;
        assert!(
            (550_000_000..900_000_000).contains(&at),
            "seed {seed}: {at}"
        );
        // While only db-0 is reachable, nobody is granted and db-0 says why.
        let grants_cut_off = events(h, EventType::Ok, "acquire")
            .into_iter()
            .filter(|e| (2_600_000_000..4_500_000_000).contains(&e.time_ns))
            .count();
        assert_eq!(grants_cut_off, 0, "seed {seed}");
        let refused = h.iter().any(|e| {
            e.time_ns > 2_600_000_000 && e.reason.as_deref().is_some_and(|r| r.contains("1290"))
        });
        assert!(refused, "seed {seed}: no 1290 from the read-only db-0");
        // Once healed, db-1 grants again.
        let later = events(h, EventType::Ok, "acquire")
            .into_iter()
            .any(|e| e.time_ns > 4_500_000_000);
        assert!(later, "seed {seed}: no grant after the heal");
    }
}

/// The first grant, before `before_ns`, and the same client's next release.
fn first_grant_and_release(h: &[Event], before_ns: u64) -> Option<(&Event, &Event)> {
    let grant = h
        .iter()
        .find(|e| e.f == "acquire" && e.kind == EventType::Ok && e.time_ns < before_ns)?;
    let release = h.iter().find(|e| {
        e.process == grant.process
            && e.f == "release"
            && e.kind != EventType::Invoke
            && e.index > grant.index
    })?;
    Some((grant, release))
}

#[test]
fn semi_sync_keeps_the_row_across_a_crash_right_after_the_grant() {
    // db-0 crashes at 700 ms, within the lag after the first grant: with semi-sync the
    // INSERT was answered (by then: its ack took 200-400 ms) once the standby had the
    // row; async answered at once and the row, 1-1.5 s behind, never left db-0.
    let crash_ns = 700_000_000;
    let mut kept = 0;
    for seed in 0..3 {
        let s = failover_world("semi-sync", [200, 400], 700, "");
        let r = run(&s, seed);
        assert!(r.error.is_none(), "seed {seed}: {:?}", r.error);
        assert_eq!(events(&r.history, EventType::Event, "promote").len(), 1);
        // (Holds are longer than the test world's liveness window: no liveness check.)
        for check in [&MUTEX, &TOKEN_ORDER, &LOCK_LINEARIZABLE] {
            assert_eq!(
                check_run(&s, &r).verdict(check),
                Verdict::Holds,
                "{check:?}"
            );
        }
        let Some((grant, release)) = first_grant_and_release(&r.history, crash_ns) else {
            continue;
        };
        // The holder's DELETE found its row on the promoted standby.
        assert!(grant.time_ns < crash_ns);
        assert_eq!(release.kind, EventType::Ok, "seed {seed}: {release:?}");
        kept += 1;

        let s = failover_world("async", [1000, 1500], 700, "");
        let r = run(&s, seed);
        let (_, release) = first_grant_and_release(&r.history, crash_ns).expect("a grant");
        assert_eq!(
            release.kind,
            EventType::Fail,
            "async seed {seed}: {release:?}"
        );
        assert_eq!(check_run(&s, &r).verdict(&MUTEX), Verdict::Violated);
    }
    assert!(kept >= 2, "only {kept} seeds granted before the crash");
}
