//! External clients in live mode (docs/external-clients.md), with the dependency-free
//! Python adapter for the redis family in tests/fixtures/clients/: row 1 violates mutex
//! with it as with locksim's own client, a pause at a fault point stops the adapter
//! too, the proxies count its connections as its node's, a crash kills it and a clock
//! fault is listed as not applied; and adapters that break the protocol end the run
//! with exit code 2 and a message naming the client, the command and the line. A few
//! seconds each. Needs `redis-server` and `python3` (scripts/test installs them).

use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_locksim");

/// A scratch folder of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locksim-ext-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `locksim live ARGS` with `env`, in its own TMPDIR: exit code, stdout, stderr. Nothing
/// may be left in the TMPDIR.
fn live(name: &str, args: &[&str], env: &[(&str, &Path)]) -> (i32, String, String) {
    let tmp = scratch(&format!("{name}-tmp"));
    let out = Command::new("timeout")
        .arg("90")
        .arg(BIN)
        .arg("live")
        .args(args)
        .env("TMPDIR", &tmp)
        .envs(env.iter().copied())
        .output()
        .expect("locksim runs");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{args:?} left {left:?}");
    let _ = std::fs::remove_dir_all(&tmp);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The monotonic times (ns) an adapter's heartbeat thread wrote.
fn beats(file: &Path) -> Vec<u64> {
    std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect()
}

/// The longest gap between two heartbeats, ms.
fn longest_gap_ms(beats: &[u64]) -> u64 {
    beats
        .windows(2)
        .map(|w| (w[1] - w[0]) / 1_000_000)
        .max()
        .unwrap_or(0)
}

/// Whether the process whose pid an adapter wrote to `pid_file` still runs (a zombie
/// does not: its parent, the killed node process, is gone, and an init that does not
/// reap may keep it listed).
fn alive(pid_file: &Path) -> bool {
    let pid =
        std::fs::read_to_string(pid_file).unwrap_or_else(|e| panic!("{}: {e}", pid_file.display()));
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
    state.is_some_and(|s| !s.starts_with('Z') && !s.starts_with('X'))
}

#[test]
fn row_1_with_the_adapter_violates_mutex_and_the_pause_stops_the_adapter_too() {
    let (beat_dir, pid_dir) = (scratch("row1-beats"), scratch("row1-pids"));
    let (code, out, err) = live(
        "row1",
        &[
            "sims/redis-01-pause-past-lease.toml",
            "--duration",
            "4s",
            "--client",
            "python3 tests/fixtures/clients/redis_adapter.py",
        ],
        &[("HEARTBEAT_DIR", &beat_dir), ("PID_DIR", &pid_dir)],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("the external client `python3"), "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("expectations met"), "{out}");
    // client-0 stopped its whole process group at before-write for 1.5 s: its adapter's
    // heartbeat thread was silent as long; client-1's, never paused, never was.
    let paused = longest_gap_ms(&beats(&beat_dir.join("client-0-0.beats")));
    assert!(
        (1400..3000).contains(&paused),
        "client-0's adapter ran on: {paused} ms"
    );
    let running = longest_gap_ms(&beats(&beat_dir.join("client-1-0.beats")));
    assert!(running < 700, "client-1's adapter stalled {running} ms");
    // The adapters' connections are their nodes' in the proxies' table.
    for c in ["client-0", "client-1", "client-2"] {
        assert!(out.contains(&format!("{c}→redis-0 ×")), "{c}: {out}");
    }
    assert!(!out.contains("unknown source"), "{out}");
    // Every adapter ended with the run.
    for c in ["client-0", "client-1", "client-2"] {
        assert!(
            !alive(&pid_dir.join(format!("{c}-0.pid"))),
            "{c}'s adapter lives"
        );
    }
    let _ = (
        std::fs::remove_dir_all(beat_dir),
        std::fs::remove_dir_all(pid_dir),
    );
}

#[test]
fn a_crash_kills_the_adapter_and_a_clock_fault_or_an_inner_fault_point_is_not_applied() {
    let pid_dir = scratch("faults-pids");
    let (code, out, err) = live(
        "faults",
        &["tests/fixtures/clients/faults.toml", "--duration", "3s"],
        &[("PID_DIR", &pid_dir)],
    );
    assert!(code == 0 || code == 1, "{out}\n{err}");
    assert!(
        out.contains("not applied live: ") && out.contains("ClockJump { node: \"client-0\""),
        "{out}"
    );
    // A fault point inside locksim's own client is never reached by a library: listed.
    assert!(
        out.lines()
            .any(|l| l.contains("not applied live: ") && l.contains("MidAcquire")),
        "{out}"
    );
    // client-1's first adapter died with the crash; the restarted node ran a second.
    let (first, second) = (
        pid_dir.join("client-1-0.pid"),
        pid_dir.join("client-1-1.pid"),
    );
    assert!(
        second.exists(),
        "no adapter for client-1's second incarnation"
    );
    assert!(!alive(&first) && !alive(&second));
    let _ = std::fs::remove_dir_all(pid_dir);
}

/// Run one client with adapter `client` (for `--client`), expecting exit 2 and every
/// `needle` in its message.
fn rejected(name: &str, scenario: &str, client: Option<&str>, needles: &[&str]) {
    let mut args = vec![scenario, "--duration", "3s"];
    if let Some(c) = client {
        args.extend(["--client", c]);
    }
    let (code, out, err) = live(name, &args, &[]);
    assert_eq!(code, 2, "{name}: {out}\n{err}");
    assert!(!err.contains("panicked"), "{name}: {err}");
    for n in needles {
        assert!(err.contains(n), "{name}: expected `{n}` in: {err}");
    }
}

const ONE: &str = "tests/fixtures/clients/one-client.toml";
const BAD: &str = "python3 tests/fixtures/clients/bad_adapter.py";

#[test]
fn a_malformed_line_ends_the_run_naming_the_client_command_and_line() {
    rejected(
        "malformed",
        ONE,
        Some(&format!("{BAD} malformed")),
        &[
            "client-0's external client `python3 tests/fixtures/clients/bad_adapter.py malformed`",
            "line 1 of its output, \"hello, locksim\": not a JSON object",
        ],
    );
}

#[test]
fn an_unknown_reply_a_wrong_id_and_a_missing_field_end_the_run() {
    rejected(
        "unknown-verb",
        ONE,
        Some(&format!("{BAD} unknown-verb")),
        &[
            "client-0's external client",
            "line 1 of its output",
            "unknown reply `ok`",
        ],
    );
    rejected(
        "wrong-id",
        ONE,
        Some(&format!("{BAD} wrong-id")),
        &["a reply to id 8, but the outstanding request is id 1"],
    );
    rejected(
        "missing-field",
        ONE,
        Some(&format!("{BAD} missing-field")),
        &["field `grant`: expected a string"],
    );
}

#[test]
fn an_adapter_that_exits_or_cannot_start_ends_the_run() {
    rejected(
        "exits",
        ONE,
        Some(&format!("{BAD} exits")),
        &["it ended its output while its node ran (exit status: 3)"],
    );
    rejected(
        "not-found",
        ONE,
        Some("./no-such-adapter --flag"),
        &[
            "client-0's external client `./no-such-adapter --flag`",
            "cannot start it: ./no-such-adapter: No such file or directory",
        ],
    );
}

#[test]
fn an_adapter_that_hangs_ends_the_run_after_its_grace() {
    // The scenario's own [workload.client], its path taken from the scenario's folder.
    let started = std::time::Instant::now();
    rejected(
        "hangs",
        "tests/fixtures/clients/hangs.toml",
        None,
        &[
            "tests/fixtures/clients/./bad_adapter.py hangs`",
            "no reply to {\"id\":1,\"op\":\"acquire\"",
            "200 + 300 ms",
        ],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}
