//! Live mode against real redis-server processes on loopback (a few seconds each): row 1
//! finds its `mutex` violation for real, server faults are inflicted with real signals,
//! and no process is left behind. Needs `redis-server` (CI's `.ci/run` installs it).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_locksim");

fn live(args: &[&str]) -> (i32, String, String) {
    let out = Command::new("timeout")
        .arg("60")
        .arg(BIN)
        .arg("live")
        .args(args)
        .output()
        .expect("locksim runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `locksim live SCENARIO --duration D --history <temp file>`: exit code, stdout, stderr
/// and the history it wrote (empty if none).
fn live_history(scenario: &str, duration: &str) -> (i32, String, String, Vec<locksim::Event>) {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let h = std::env::temp_dir().join(format!("locksim-live-{}-{n}.jsonl", std::process::id()));
    let args = [
        scenario,
        "--duration",
        duration,
        "--history",
        h.to_str().unwrap(),
    ];
    let (code, out, err) = live(&args);
    let text = std::fs::read_to_string(&h).unwrap_or_default();
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
    let epoch_ms = locksim::sim::EPOCH_NS / 1_000_000;
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
    // No chance to clean up: the kernel ends the servers and client processes
    // (PR_SET_PDEATHSIG), so nothing outlives a SIGKILLed locksim.
    let mut child = Command::new(BIN)
        .args([
            "live",
            "tests/fixtures/live/client-faults.toml",
            "--duration",
            "30s",
        ])
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
        // One redis-server and three clients.
        if found.len() >= 4 {
            break found;
        }
        if started.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("locksim did not start its 4 processes within 10 s: {found:?}");
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
fn live_rejects_other_algorithms_and_bad_durations() {
    let (code, _, err) = live(&["sims/raft-baseline.toml", "--duration", "1s"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "live mode runs algorithm = \"redis\", \"redis-replicated\" or \"redlock\" only"
        ),
        "{err}"
    );
    let (code, _, err) = live(&["sims/redis-01-pause-past-lease.toml", "--duration", "soon"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad --duration"), "{err}");
}

#[test]
fn an_interrupted_run_kills_its_servers() {
    // In its own process group, which gets the SIGINT, as a terminal's Ctrl-C does.
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(BIN)
        .args([
            "live",
            "tests/fixtures/live/server-faults.toml",
            "--duration",
            "30s",
        ])
        .stdout(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("locksim starts");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // Every redis-server locksim starts is its child: note them (waiting for a slow
    // start-up on a loaded machine), interrupt, and none may be alive afterwards.
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
        if started.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("no redis-server ran as a child of locksim within 11.5 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
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
        assert!(!alive, "redis-server {s} survived the interrupt");
    }
}
