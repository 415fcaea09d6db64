//! Live mode against real servers on loopback (a few seconds each): redis-server, an
//! etcd cluster, a ZooKeeper ensemble and MariaDB, every link through locksim's proxies.
//! Rows 1, 6, 16, 17 and 20 find their violations for real (and the controls of rows 16
//! and 20 hold), server faults are inflicted with real signals, partitions between
//! servers are real, and no process is left behind. Needs `redis-server`, `etcd`,
//! `zookeeper` and `mariadb-server` (CI's `.ci/run` installs them).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_locksim");

/// Live runs share the machine; a run whose verdict hangs on real timing (a Sentinel
/// failover inside a 3 s partition) takes it alone: beside a ZooKeeper ensemble starting
/// up, row 6's failover once came too late to violate anything.
static LIVE: std::sync::RwLock<()> = std::sync::RwLock::new(());

thread_local! {
    static ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with no other live run going on.
fn alone<T>(f: impl FnOnce() -> T) -> T {
    let _only = LIVE.write().unwrap_or_else(|e| e.into_inner());
    ALONE.set(true);
    let r = f();
    ALONE.set(false);
    r
}

fn live(args: &[&str]) -> (i32, String, String) {
    let _shared = (!ALONE.get()).then(|| LIVE.read().unwrap_or_else(|e| e.into_inner()));
    // Its own TMPDIR, where locksim keeps the servers' data folders: after the run no
    // server whose command line names it may run, and nothing may be left in it.
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = std::env::temp_dir().join(format!("locksim-live-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let out = Command::new("timeout")
        .arg("90")
        .arg(BIN)
        .arg("live")
        .args(args)
        .env("TMPDIR", &tmp)
        .output()
        .expect("locksim runs");
    let tmp_name = tmp.to_str().unwrap();
    assert_eq!(
        servers_of(tmp_name),
        "",
        "servers outlived the run {args:?}"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        left.is_empty(),
        "the run {args:?} left {left:?} in {tmp_name}"
    );
    let _ = std::fs::remove_dir_all(&tmp);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `locksim live SCENARIO --duration D --history <temp file>`: exit code, stdout, stderr
/// and the history it wrote (empty if none).
fn live_history(scenario: &str, duration: &str) -> (i32, String, String, Vec<locksim::Event>) {
    live_history_with(scenario, duration, &[])
}

/// [`live_history`] with more arguments (`--servers model`).
fn live_history_with(
    scenario: &str,
    duration: &str,
    more: &[&str],
) -> (i32, String, String, Vec<locksim::Event>) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let h = std::env::temp_dir().join(format!("locksim-live-{}-{n}.jsonl", std::process::id()));
    let mut args = vec![
        scenario,
        "--duration",
        duration,
        "--history",
        h.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    let (code, out, err) = live(&args);
    let text = std::fs::read_to_string(&h).unwrap_or_default();
    let _ = std::fs::remove_file(&h);
    let events = locksim::history::from_jsonl(&text).unwrap();
    (code, out, err, events)
}

#[test]
fn row_1_live_violates_mutex_and_meets_its_expectations() {
    let (code, out, err, events) = live_history("sims/redis-01-pause-past-lease.toml", "4s");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("expectations met"), "{out}");
    assert!(events
        .iter()
        .any(|e| e.f == "pause" && e.process == "nemesis"));
    // client-0 ran in its own process and stopped itself with SIGSTOP at the armed
    // point; locksim sent SIGCONT only once the kernel showed it stopped.
    assert!(
        events.iter().any(|e| e.f == "resume"
            && e.nodes.as_deref() == Some(&["client-0".to_string()][..])
            && e.value == Some(serde_json::json!({"signal": "SIGCONT"}))),
        "no SIGCONT of client-0"
    );
    // Real Redis's expirations are recorded, as the model records its own.
    assert!(events
        .iter()
        .any(|e| e.f == "expire" && e.process == "redis-0"));
}

#[test]
fn server_pause_and_crash_are_real_signals_and_nothing_is_left_running() {
    let (code, out, err, events) = live_history("tests/fixtures/live/server-faults.toml", "5s");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("not applied live") && out.contains("ClockJump { node: \"redis-0\""),
        "{out}"
    );
    assert!(events.iter().any(|e| e.f == "partition") && events.iter().any(|e| e.f == "heal"));
    // client-0 was cut off from 4000 to 4300 ms: none of its requests completed ok then.
    let cut_off_ok = events.iter().any(|e| {
        e.process == "client-0"
            && e.kind == locksim::EventType::Ok
            && (4_010_000_000..4_290_000_000).contains(&e.time_ns)
    });
    assert!(!cut_off_ok, "client-0 got a reply over a cut link");
    for f in ["pause", "resume", "crash", "restart"] {
        assert!(
            events.iter().any(|e| e.f == f
                && e.nodes
                    .as_ref()
                    .is_some_and(|n| n.contains(&"redis-0".to_string()))),
            "no {f} of redis-0"
        );
    }
    // While redis-0 was stopped (1000..2000 ms) no lock request completed.
    let done_in_pause = events.iter().any(|e| {
        e.process.starts_with("client-")
            && e.kind != locksim::EventType::Invoke
            && (e.f == "acquire" || e.f == "release")
            && (1_050_000_000..1_950_000_000).contains(&e.time_ns)
            && e.reason.as_deref().is_none_or(|r| !r.contains("timeout"))
    });
    assert!(!done_in_pause, "a stopped server answered");
}

#[test]
fn client_pause_and_crash_are_real_signals_to_client_processes() {
    let (code, out, err, events) = live_history("tests/fixtures/live/client-faults.toml", "5s");
    assert_eq!(code, 0, "{out}\n{err}");
    let of = |e: &locksim::Event, node: &str| e.nodes.as_deref() == Some(&[node.to_string()][..]);
    assert!(events.iter().any(|e| e.f == "pause"
        && of(e, "client-1")
        && e.value.as_ref().is_some_and(|v| v["signal"] == "SIGSTOP")));
    assert!(events.iter().any(|e| e.f == "resume" && of(e, "client-1")));
    // A stopped process records nothing: client-1 is silent for its 800 ms pause.
    let (from, to) = (1_000_000_000, 1_800_000_000);
    let stopped = |e: &&locksim::Event| {
        (e.time_ns > from + 5_000_000 && e.time_ns < to - 5_000_000) || e.f == "resume"
    };
    let resume = events
        .iter()
        .find(|e| e.f == "resume" && of(e, "client-1"))
        .unwrap();
    assert!(resume.time_ns >= to, "resumed early at {}", resume.time_ns);
    let spoke = events
        .iter()
        .filter(stopped)
        .find(|e| e.process == "client-1" && e.time_ns < resume.time_ns);
    assert!(spoke.is_none(), "client-1 acted while stopped: {spoke:?}");
    // client-2 was SIGKILLed at 2500 ms: its open operation is indeterminate, and its
    // next process (restarted at 2800 ms) takes part again.
    assert!(events.iter().any(|e| e.f == "crash" && of(e, "client-2")));
    let restart = events
        .iter()
        .find(|e| e.f == "restart" && of(e, "client-2"))
        .expect("client-2 restarted");
    assert!(events
        .iter()
        .any(|e| e.process == "client-2" && e.time_ns > restart.time_ns));
    let silent_while_down = events.iter().all(|e| {
        e.process != "client-2"
            || e.kind == locksim::EventType::Info
            || !(2_510_000_000..2_790_000_000).contains(&e.time_ns)
    });
    assert!(silent_while_down, "client-2 acted while killed");
    // client-1's wall clock stepped 100 s forward at 3800 ms, in its own process: the
    // events it records afterwards carry the stepped reading.
    let epoch_ms = locksim::testing::EPOCH_NS / 1_000_000;
    let ahead = |e: &locksim::Event| {
        e.wall_ms
            .map(|w| w - epoch_ms - (e.time_ns / 1_000_000) as i64)
    };
    // (The order reaches the process through a pipe: skip the first 50 ms.)
    let (before, after): (Vec<_>, Vec<_>) = events
        .iter()
        .filter(|e| e.process == "client-1" && e.wall_ms.is_some())
        .filter(|e| !(3_800_000_000..3_850_000_000).contains(&e.time_ns))
        .partition(|e| e.time_ns < 3_800_000_000);
    assert!(
        before.iter().all(|e| ahead(e).unwrap().abs() <= 1),
        "{before:?}"
    );
    assert!(
        !after.is_empty()
            && after
                .iter()
                .all(|e| (ahead(e).unwrap() - 100_000).abs() <= 5),
        "{after:?}"
    );
}

#[test]
fn replicated_live_fails_over_with_real_sentinels() {
    let (code, out, err, events) =
        live_history("tests/fixtures/live/replicated-failover.toml", "8s");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(events.iter().any(|e| e.f == "crash"));
    assert!(
        !events.iter().any(|e| e.f == "restart"),
        "redis-0 stays down"
    );
    // redis-0 crashed at 1500 ms for good: grants after it came from a replica the
    // sentinels promoted.
    let after = events.iter().filter(|e| {
        e.f == "acquire" && e.kind == locksim::EventType::Ok && e.time_ns > 1_600_000_000
    });
    assert!(after.count() >= 3, "no failover: {out}");
}

#[test]
fn killing_locksim_itself_takes_its_processes_with_it() {
    // One redis-server and three clients.
    kill_locksim_mid_run("tests/fixtures/live/client-faults.toml", 4);
}

#[test]
fn killing_locksim_itself_takes_its_etcd_members_with_it() {
    // Three etcd members and two clients.
    kill_locksim_mid_run("sims/raft-17-pause-in-critical-section.toml", 5);
}

/// Start a live run of `scenario`, SIGKILL locksim once its `processes` children run,
/// and check none of them outlives it, and that the next run removes the data folder
/// the killed one could not.
fn kill_locksim_mid_run(scenario: &str, processes: usize) {
    let tmp = std::env::temp_dir().join(format!(
        "locksim-kill-test-{}-{processes}",
        std::process::id()
    ));
    std::fs::create_dir_all(&tmp).unwrap();
    // No chance to clean up: the kernel ends the servers and client processes
    // (PR_SET_PDEATHSIG), so nothing outlives a SIGKILLed locksim.
    let mut child = Command::new(BIN)
        .args(["live", scenario, "--duration", "30s"])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("locksim starts");
    let pid = child.id().to_string();
    let started = std::time::Instant::now();
    let children: Vec<String> = loop {
        let out = Command::new("pgrep").args(["-P", &pid]).output().unwrap();
        let found: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if found.len() >= processes {
            break found;
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("locksim did not start its {processes} processes within 20 s: {found:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let alive = |p: &String| {
        Command::new("kill")
            .args(["-0", p])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    let folder = tmp.join(format!("locksim-live-{pid}"));
    assert!(folder.exists(), "no data folder {folder:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while children.iter().any(alive) {
        if std::time::Instant::now() > deadline {
            for p in &children {
                let _ = Command::new("kill").args(["-KILL", p]).status();
            }
            panic!("processes outlived a SIGKILLed locksim: {children:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The next live run (here one refused at once: live failover with MariaDB's own
    // replication is not built) removes the orphaned folder.
    let status = Command::new(BIN)
        .args([
            "live",
            "sims/db-23-failover-loses-the-row.toml",
            "--duration",
            "1s",
        ])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
    assert!(!folder.exists(), "{folder:?} outlived the next run");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
#[ignore = "real timing decides whether a second majority forms: run on a quiet machine"]
fn row_8_live_redlock_restarted_node_gives_a_second_majority() {
    // Real partitions of the in-process clients, a real SIGKILL and restart of redis-2
    // without persistence; timing is real, so look over a few seeds (in simulation 48
    // of 100 seeds violate; live, seeds 1 and 3 of 0..4 did when this was written).
    let violated = (0..8).any(|seed| {
        let seed = seed.to_string();
        let (code, out, err) = live(&[
            "sims/redlock-08-fast-restart.toml",
            "--duration",
            "3s",
            "--seed",
            &seed,
        ]);
        assert!(code == 0 || code == 1, "{out}\n{err}");
        out.contains("mutex                violated")
    });
    assert!(violated, "no live seed of row 8 violated mutex");
}

#[test]
fn live_rejects_what_it_cannot_run_and_bad_durations() {
    // Every built-in family runs live; db's failover (standby) does not: refused before
    // any banner, with what is missing.
    let (code, out, err) = live(&["sims/db-23-failover-loses-the-row.toml", "--duration", "1s"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "a banner before the refusal: {out}");
    assert!(
        err.contains("cannot run this against real MariaDB")
            && err.contains(
                "standby = true: live failover with MariaDB's own replication is not built"
            ),
        "{err}"
    );
    let (code, _, err) = live(&["sims/redis-01-pause-past-lease.toml", "--duration", "soon"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad --duration"), "{err}");
}

/// The `pgrep` pattern of every server live mode starts: the real ones, and locksim's
/// model servers (`--servers model`).
const SERVERS: &str =
    "redis-server|/usr/bin/etcd |QuorumPeerMain|ZooKeeperServerMain|serve-node|mariadbd";

/// Servers still running whose command line names `root` (their data folders are under
/// it).
fn servers_of(root: &str) -> String {
    let out = Command::new("pgrep")
        .args(["-af", SERVERS])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(root))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn row_6_live_minority_primary_keeps_granting_behind_real_partitions() {
    // redis-0 and client-0 are cut off from 2000 to 5000 ms, from the replicas and the
    // Sentinels too: the proxies carry replication and Sentinel traffic.
    //
    // Real Sentinels decide when the majority side finds the new primary: the leader
    // promotes a replica about 1.7 s into the partition, but a client keeps asking the
    // Sentinel that answered it last, and the other Sentinels learn of the switch from the
    // leader's hello, published every 2 s. So in some runs (2 of 55 measured) no client
    // on the majority side reaches the new primary before the heal. Such a run shows
    // nothing either way and is run again, at most three times; a run in which the majority
    // side was granted the lock during the partition must show two holders.
    rerun_while_nothing_shown(|| {
        let (code, out, err, events) =
            alone(|| live_history("sims/redis-06-minority-primary.toml", "7s"));
        if granted_during_partition(&events, "client-0") == 0 {
            return Err(format!(
                "no client on the majority side was granted the lock during the partition (did the Sentinels fail over?)\n{out}\n{err}"
            ));
        }
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(out.contains("mutex                violated"), "{out}");
        assert!(
            out.contains("between servers:")
                && out.contains("sentinel-0→redis-0")
                && out.contains("redis-1→redis-0"),
            "replication and Sentinel links were not proxied: {out}"
        );
        Ok(())
    });
}

/// Runs `attempt` again while it returns `Err(why)`, three runs at most: a live run in
/// which real timing kept the failure under test from happening shows nothing either way.
/// What every run must show, `attempt` asserts; the third `Err` fails the test.
fn rerun_while_nothing_shown(mut attempt: impl FnMut() -> Result<(), String>) {
    const RUNS: u32 = 3;
    for run in 1..=RUNS {
        match attempt() {
            Ok(()) => return,
            Err(why) if run < RUNS => eprintln!("run {run} of {RUNS} showed nothing: {why}"),
            Err(why) => panic!("{RUNS} runs showed nothing; the last: {why}"),
        }
    }
}

/// Acquires granted, while the history's first partition lasted, to clients other than
/// `cut_off` (the client inside it).
fn granted_during_partition(events: &[locksim::Event], cut_off: &str) -> usize {
    let at = |f: &str| events.iter().find(|e| e.f == f).map(|e| e.time_ns);
    let (Some(from), Some(to)) = (at("partition"), at("heal")) else {
        panic!("the history has no partition and heal");
    };
    events
        .iter()
        .filter(|e| {
            e.f == "acquire"
                && e.kind == locksim::EventType::Ok
                && e.process != cut_off
                && (from..to).contains(&e.time_ns)
        })
        .count()
}

#[test]
fn row_17_live_real_etcd_pause_violates_mutex_and_the_revision_fences() {
    // Alone, as row 6: the violation needs the pause to outlast etcd's lease in real
    // time, and with other live runs loading both cores it twice failed to show.
    let (code, out, err, events) =
        alone(|| live_history("sims/raft-17-pause-in-critical-section.toml", "6s"));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("real etcd"), "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("counter              holds"), "{out}");
    // etcd's TTLs are whole seconds: 500 ms is granted as 1 s, and said so.
    assert!(
        out.contains("not applied live: ttl_ms: 1000 ms, not 500"),
        "{out}"
    );
    // The model's Raft events do not exist live: those checks are not claimed.
    assert!(
        out.contains("raft-log             not checked live"),
        "{out}"
    );
    assert!(
        raft_links_were_proxied(&out),
        "Raft's links were not proxied: {out}"
    );
    assert!(events
        .iter()
        .any(|e| e.f == "resume" && e.value == Some(serde_json::json!({"signal": "SIGCONT"}))));
}

#[test]
fn row_16_live_waiter_whose_lease_expired_takes_the_lock_and_its_control_holds() {
    // client-0 wakes from its pause with its lease gone and is granted at once; it holds
    // only until its read comes back STALE (about 20 ms, fenced), so whether another client
    // holds then is real timing: in some runs the grant falls between two holders (seen in
    // a rehearsal, with other live runs loading the machine). Such a run shows nothing
    // either way and is run again, at most three times.
    rerun_while_nothing_shown(|| {
        let (code, out, err, events) = live_history("sims/raft-16-waiter-lease-expires.toml", "6s");
        assert!(
            granted_with_expired_lease(&events, "client-0"),
            "client-0 was never granted the lock with its lease expired: {out}\n{err}"
        );
        if !out.contains("mutex                violated") {
            return Err(format!(
                "client-0's grant with an expired lease fell between two holders\n{out}"
            ));
        }
        assert_eq!(code, 0, "{out}\n{err}");
        Ok(())
    });
    let (code, out, err) = live(&[
        "sims/raft-16-waiter-lease-expires-checked.toml",
        "--duration",
        "6s",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("mutex                holds"), "{out}");
}

/// Whether `client` was granted the lock when its own clock already counted its lease out
/// (`valid_ms` 0).
fn granted_with_expired_lease(events: &[locksim::Event], client: &str) -> bool {
    events.iter().any(|e| {
        e.process == client
            && e.f == "acquire"
            && e.kind == locksim::EventType::Ok
            && e.valid_ms == Some(0)
    })
}

/// Whether the history has a nemesis event `f` of `node`.
fn nemesis(events: &[locksim::Event], f: &str, node: &str) -> bool {
    events.iter().any(|e| {
        e.f == f
            && e.nodes
                .as_ref()
                .is_some_and(|n| n.contains(&node.to_string()))
    })
}

/// Granted acquires after `from_ms`.
fn grants_after(events: &[locksim::Event], from_ms: u64) -> usize {
    events
        .iter()
        .filter(|e| {
            e.f == "acquire" && e.kind == locksim::EventType::Ok && e.time_ns > from_ms * 1_000_000
        })
        .count()
}

#[test]
fn etcd_members_partitioned_paused_and_crashed_for_real() {
    // raft-0 is cut off from the other members (not from the clients) for 2 s: the
    // proxies hold Raft's traffic, the majority elects, and clients keep locking; then
    // raft-1 is SIGSTOPped and raft-2 SIGKILLed and restarted. Alone and 8 s long: with
    // other live runs beside it, a 6 s run once ended before the first grant after the
    // restart (at 4.5 s) on an idle 2-core machine.
    let (code, out, err, events) =
        alone(|| live_history("tests/fixtures/live/raft-member-partition.toml", "8s"));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(events.iter().any(|e| e.f == "partition"));
    assert!(nemesis(&events, "pause", "raft-1") && nemesis(&events, "resume", "raft-1"));
    assert!(nemesis(&events, "crash", "raft-2") && nemesis(&events, "restart", "raft-2"));
    assert!(grants_after(&events, 1000) >= 3, "{out}");
    assert!(
        grants_after(&events, 4500) >= 1,
        "no grant after the restart: {out}"
    );
}

#[test]
fn zookeeper_servers_paused_and_crashed_for_real() {
    let (code, out, err, events) = live_history("tests/fixtures/live/zk-server-faults.toml", "6s");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(nemesis(&events, "pause", "zk-0") && nemesis(&events, "resume", "zk-0"));
    assert!(nemesis(&events, "crash", "zk-1") && nemesis(&events, "restart", "zk-1"));
    assert!(
        grants_after(&events, 3000) >= 1,
        "no grant after the restart: {out}"
    );
}

#[test]
fn an_interrupted_run_kills_its_servers() {
    interrupt_mid_run("tests/fixtures/live/server-faults.toml", 1500);
}

#[test]
fn an_interrupt_while_a_zookeeper_ensemble_starts_kills_it_too() {
    // The JVMs take a second or more to serve: the interrupt comes while locksim waits.
    interrupt_mid_run("tests/fixtures/live/zk-13-ensemble.toml", 300);
}

/// Start a live run of `scenario` in its own TMPDIR, interrupt it (SIGINT to its process
/// group) once it has children and `after_ms` have passed: it must exit 130 and leave no
/// process and nothing in the TMPDIR.
fn interrupt_mid_run(scenario: &str, after_ms: u64) {
    // In its own process group, which gets the SIGINT, as a terminal's Ctrl-C does.
    use std::os::unix::process::CommandExt;
    let tmp = std::env::temp_dir().join(format!(
        "locksim-interrupt-test-{}-{after_ms}",
        std::process::id()
    ));
    std::fs::create_dir_all(&tmp).unwrap();
    // Beside the TMPDIR, which must end empty: what locksim said, for a failure message.
    let stderr_path = tmp.with_extension("stderr");
    let stderr = std::fs::File::create(&stderr_path).unwrap();
    let mut child = Command::new(BIN)
        .args(["live", scenario, "--duration", "30s"])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .expect("locksim starts");
    std::thread::sleep(std::time::Duration::from_millis(after_ms));
    // Every server locksim starts is its child: note them (waiting for a slow start-up
    // on a loaded machine), interrupt, and none may be alive afterwards.
    let pid = child.id().to_string();
    let started = std::time::Instant::now();
    let servers: Vec<String> = loop {
        let out = Command::new("pgrep").args(["-P", &pid]).output().unwrap();
        let found: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect();
        if !found.is_empty() {
            break found;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let said = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!("locksim live ended ({status}) before a server ran:\n{said}");
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            let said = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            panic!("no server ran as a child of locksim within 30 s; it said:\n{said}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Command::new("kill")
        .args(["-INT", "--", &format!("-{pid}")])
        .status()
        .unwrap();
    // A watchdog, so a run that ignores the signal fails the test instead of hanging CI.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            for s in &servers {
                let _ = Command::new("kill").args(["-KILL", s]).status();
            }
            panic!("locksim live did not end within 30 s of SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    for s in servers {
        let alive = Command::new("kill")
            .args(["-0", &s])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(!alive, "server {s} survived the interrupt");
    }
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "the interrupted run left {left:?}");
    let _ = std::fs::remove_dir_all(&tmp);
    let _ = std::fs::remove_file(&stderr_path);
}

#[test]
fn row_13_live_real_zookeeper_session_expiry_by_a_real_pause() {
    let (code, out, err, events) = live_history("sims/zk-13-session-expiry-pause.toml", "5s");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("real ZooKeeper"), "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("counter              holds"), "{out}");
    // The server's session expiry, read from its transaction log, is in the history.
    assert!(events.iter().any(|e| e.f == "expire"), "no expire recorded");
}

#[test]
fn row_13_live_against_a_zookeeper_ensemble_of_three() {
    let (code, out, err) = live(&[
        "tests/fixtures/live/zk-13-ensemble.toml",
        "--duration",
        "5s",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(
        ["zk-0→", "zk-1→", "zk-2→"].iter().all(|l| out.contains(l)),
        "the ensemble's own links were not proxied: {out}"
    );
}

#[test]
fn row_14_live_a_proxied_partition_suspends_the_holder_and_its_twin_stops() {
    // Cut off from every server of the ensemble by the proxies while it works:
    // ignoring SUSPENDED loses an update; the twin that stops keeps the counter.
    let (code, out, err) = live(&[
        "tests/fixtures/live/zk-14-ensemble.toml",
        "--duration",
        "6s",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("counter              violated"), "{out}");
    let (code, out, err) = live(&[
        "tests/fixtures/live/zk-14-ensemble-stop.toml",
        "--duration",
        "6s",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("counter              holds"), "{out}");
}

#[test]
#[ignore = "the one-server rows 14 take 16 s; their ensemble versions run in CI"]
fn row_14_live_against_one_zookeeper_server() {
    let (code, out, err) = live(&["sims/zk-14-suspended-holder.toml", "--duration", "8s"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("mutex                violated"), "{out}");
    let (code, out, err) = live(&["sims/zk-14-suspended-holder-stop.toml", "--duration", "8s"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("counter              holds"), "{out}");
}

#[test]
fn killing_locksim_itself_takes_its_zookeeper_ensemble_with_it() {
    // Three JVMs and three clients.
    kill_locksim_mid_run("tests/fixtures/live/zk-13-ensemble.toml", 6);
}

// --servers model: locksim's own model servers, one `locksim serve-node` process each,
// behind the same proxies and faulted as the real ones.

#[test]
fn row_1_with_model_servers_violates_mutex_as_against_real_redis() {
    let (code, out, err, events) = live_history_with(
        "sims/redis-01-pause-past-lease.toml",
        "4s",
        &["--servers", "model"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("locksim's Redis model (--servers model)"),
        "{out}"
    );
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(
        out.contains("events against model servers; expectations met"),
        "{out}"
    );
    // The model server records its own expirations, and they reach the history.
    assert!(events
        .iter()
        .any(|e| e.f == "expire" && e.process == "redis-0"));
}

#[test]
fn row_13_with_model_servers_the_session_expires_under_a_real_pause() {
    let (code, out, err, events) = live_history_with(
        "sims/zk-13-session-expiry-pause.toml",
        "5s",
        &["--servers", "model"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("locksim's ZooKeeper model"), "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("counter              holds"), "{out}");
    assert!(out.contains("lock-linearizable    holds"), "{out}");
    assert!(events
        .iter()
        .any(|e| e.f == "expire" && e.process == "zk-0"));
}

#[test]
fn row_17_with_model_servers_checks_raft_s_own_invariants_live() {
    let (code, out, err, _) = alone(|| {
        live_history_with(
            "sims/raft-17-pause-in-critical-section.toml",
            "6s",
            &["--servers", "model"],
        )
    });
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("locksim's etcd model"), "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("counter              holds"), "{out}");
    // The model servers' Raft events are in the history: these checks run live.
    for check in ["raft-election-safety", "raft-log", "raft-apply"] {
        assert!(out.contains(&format!("{check:<21}holds")), "{out}");
    }
    assert!(
        raft_links_were_proxied(&out),
        "Raft's links were not proxied: {out}"
    );
}

#[test]
fn a_model_server_is_paused_with_sigstop_and_one_with_a_disk_is_not_crashed() {
    let (code, out, err, events) = live_history_with(
        "tests/fixtures/live/zk-server-faults.toml",
        "6s",
        &["--servers", "model"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    // zk-0's process was stopped and continued by signals.
    assert!(nemesis(&events, "pause", "zk-0"), "{out}");
    assert!(events.iter().any(|e| e.f == "resume"
        && e.nodes.as_deref() == Some(&["zk-0".to_string()][..])
        && e.value == Some(serde_json::json!({"signal": "SIGCONT"}))));
    // zk-1's disk lives in its process: its crash is listed, not faked.
    assert!(
        out.contains("not applied live")
            && out.contains("Crash { node: \"zk-1\"")
            && out.contains("could not resume from its disk"),
        "{out}"
    );
    assert!(!nemesis(&events, "crash", "zk-1"));
    assert!(
        grants_after(&events, 2000) >= 1,
        "no grant after the pause: {out}"
    );
}

#[test]
fn servers_flag_rejects_bad_values_and_families_without_a_served_model() {
    let (code, _, err) = live(&["sims/redis-01-pause-past-lease.toml", "--servers", "fake"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad --servers `fake`: expected `real`"),
        "{err}"
    );
    let (code, _, err) = live(&["sims/db-20-expiring-row-fenced.toml", "--servers", "model"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--servers model runs the models of algorithm = \"redis\"")
            && err.contains("\"zk\"")
            && err.contains("not \"db\""),
        "{err}"
    );
}

/// Whether the run's summary lists a proxied link between two Raft servers. Which pairs
/// talk depends on which server real timing elects, so any such link will do (a leader
/// at raft-2 never links raft-0 to raft-1).
fn raft_links_were_proxied(out: &str) -> bool {
    let between = out
        .lines()
        .find_map(|line| line.split("between servers: ").nth(1))
        .unwrap_or_default();
    between.contains("raft-") && between.contains('→')
}

#[test]
fn row_20_live_real_mariadb_cleaner_deletes_a_paused_holder_s_row_and_the_id_fences() {
    // client-0 stops itself with SIGSTOP after its INSERT, for 1.3 s; the cleaner (a
    // locksim process of its own, through db-0's proxy) deletes its row after 1 s of
    // MariaDB's NOW(3); client-1 inserts its own; client-0 wakes and deletes it by name.
    // Whether client-0's by-name DELETE lands while the next holder still writes (the
    // lost update `counter` expects) is real timing: seed 0 showed it, seeds 1 and 2 did
    // not; two holders at once (`mutex`) every time.
    let (code, out, err, events) = live_history("sims/db-20-expiring-row.toml", "4s");
    assert!(code == 0 || code == 1, "{out}\n{err}");
    assert!(out.contains("real MariaDB"), "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("fencing              holds"), "{out}");
    assert!(
        out.contains("lock-linearizable    not checked live"),
        "{out}"
    );
    assert!(
        out.contains("cleaner→db-0"),
        "the cleaner's link was not proxied: {out}"
    );
    assert!(events.iter().any(|e| e.f == "resume"
        && e.nodes.as_deref() == Some(&["client-0".to_string()][..])
        && e.value == Some(serde_json::json!({"signal": "SIGCONT"}))));
    // The control: the row's AUTO_INCREMENT id fences client-0's late write.
    let (code, out, err) = live(&["sims/db-20-expiring-row-fenced.toml", "--duration", "4s"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("fencing              holds"), "{out}");
    assert!(out.contains("counter              holds"), "{out}");
    assert!(out.contains("expectations met"), "{out}");
}

#[test]
fn for_update_live_a_cut_holder_s_row_lock_ends_with_mariadb_s_wait_timeout() {
    // client-0 is cut off from db-0 from 1000 to 4000 ms, holding a FOR UPDATE row lock:
    // MariaDB keeps it until the session has idled for wait_timeout (1 s) and rolls it
    // back; client-1 then gets the row. Mutual exclusion and the counter hold.
    let (code, out, err, events) = live_history("sims/db-for-update-partition.toml", "6s");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("mutex                holds"), "{out}");
    assert!(out.contains("expectations met"), "{out}");
    assert!(
        out.contains("lock_wait_timeout_ms = 300 runs as innodb_lock_wait_timeout = 1 s"),
        "{out}"
    );
    assert!(events.iter().any(|e| e.f == "partition") && events.iter().any(|e| e.f == "heal"));
    // client-1 held the lock while client-0 was cut off.
    let held = events.iter().any(|e| {
        e.process == "client-1"
            && e.f == "acquire"
            && e.kind == locksim::EventType::Ok
            && (1_000_000_000..4_000_000_000).contains(&e.time_ns)
    });
    assert!(
        held,
        "client-1 never got the row while client-0 was cut off"
    );
}

#[test]
fn mariadb_is_paused_and_crashed_for_real_and_recovers_its_rows() {
    let (code, out, err, events) = live_history("tests/fixtures/live/db-server-faults.toml", "5s");
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("expectations met"), "{out}");
    for f in ["pause", "resume", "crash", "restart"] {
        assert!(
            events
                .iter()
                .any(|e| e.f == f && e.nodes.as_deref() == Some(&["db-0".to_string()][..])),
            "no {f} of db-0"
        );
    }
    // Grants after the restart: InnoDB recovered and served again.
    assert!(grants_after(&events, 3_500) > 0, "{out}");
}
