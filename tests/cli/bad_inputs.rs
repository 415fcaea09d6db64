//! The regression corpus of broken and extreme inputs: every one is rejected with exit 2
//! and a message naming the file and where, never a panic, a hang or a blow-up. Each
//! command runs under a 10 s timeout and a 1 GiB address-space limit.
//!
//! - `tests/bad_inputs/*.toml`: small scenarios; the first line says what the message
//!   must contain (`# expect: fragment | fragment`).
//! - Generated here: inputs too big to commit (a 5 MB key, a 50 MB schedule), non-UTF-8
//!   bytes, and bad command lines.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_locksim");

/// Run locksim with `args` under a time and memory limit: (exit code, stdout, stderr).
fn locksim(args: &[&str]) -> (i32, String, String) {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let script = format!(
        "ulimit -v 1048576; exec timeout 10 {BIN} {}",
        quoted.join(" ")
    );
    let start = Instant::now();
    let out = Command::new("bash")
        .args(["-c", &script])
        .output()
        .expect("bash runs");
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{args:?} took too long"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_rejected(args: &[&str], needles: &[&str]) {
    let (code, _, err) = locksim(args);
    assert_eq!(code, 2, "{args:?} must exit 2, got {code}: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(
        err.len() < 4096,
        "{args:?}: message too long ({} bytes)",
        err.len()
    );
    for n in needles {
        assert!(err.contains(n), "{args:?}: expected `{n}` in: {err}");
    }
}

fn corpus() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("tests/bad_inputs")
        .expect("tests/bad_inputs exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_scenario_in_the_corpus_is_rejected_with_file_and_place() {
    let files = corpus();
    assert!(files.len() >= 20, "corpus missing: {files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let header = text.lines().next().unwrap_or_default();
        let expect = header
            .strip_prefix("# expect:")
            .unwrap_or_else(|| panic!("{}: first line must be `# expect: ...`", f.display()));
        let mut needles: Vec<&str> = expect.split('|').map(str::trim).collect();
        let name = f.file_name().unwrap().to_str().unwrap();
        needles.push(name);
        let path = f.to_str().unwrap();
        assert_rejected(&["run", path, "--seed", "0", "--quiet"], &needles);
        // The same file through `replay` is the same error.
        assert_rejected(&["replay", path, "--seed", "0"], &needles);
    }
}

/// This test process's scratch folder.
fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locksim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn temp(name: &str, bytes: &[u8]) -> String {
    let p = scratch().join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

const HEAD: &str =
    "name = \"bad\"\nalgorithm = \"redis\"\nduration_ms = 3000\n[lock]\nttl_ms = 500\n";

#[test]
fn generated_inputs_are_rejected_without_blowing_up() {
    // A 5 MB key: rejected by size before parsing.
    let huge = temp(
        "huge-key.toml",
        format!("{HEAD}{} = 1\n", "k".repeat(5_000_000)).as_bytes(),
    );
    assert_rejected(
        &["run", &huge, "--seed", "0"],
        &["huge-key.toml", "larger than"],
    );
    // A 5000-character key is named, not echoed.
    let long = temp(
        "long-key.toml",
        format!("{HEAD}{} = 1\n", "k".repeat(5000)).as_bytes(),
    );
    assert_rejected(
        &["run", &long, "--seed", "0"],
        &["long-key.toml", "(5000 characters)"],
    );
    // Non-UTF-8 bytes: named with their line.
    let mut bytes = HEAD.as_bytes().to_vec();
    bytes.extend_from_slice(b"description = \"\xff\xfe\"\n");
    let bin = temp("binary.toml", &bytes);
    assert_rejected(
        &["run", &bin, "--seed", "0"],
        &["binary.toml", "not UTF-8", "line 6"],
    );
    // 1.28 M explicit faults in 50 MB: rejected by size, in constant memory.
    let entry =
        "[[faults.at]]\nat_ms = 1\nkind = \"pause\"\nnodes = [\"client-0\"]\nduration_ms = 1\n";
    let big = temp(
        "big-schedule.toml",
        format!("{HEAD}{}", entry.repeat(700_000)).as_bytes(),
    );
    assert_rejected(
        &["run", &big, "--seed", "0"],
        &["big-schedule.toml", "larger than"],
    );
    // Just over the explicit-fault limit, within the size limit.
    let many = temp(
        "many-faults.toml",
        format!("{HEAD}{}", entry.repeat(10_001)).as_bytes(),
    );
    assert_rejected(
        &["run", &many, "--seed", "0"],
        &["many-faults.toml", "at most 10000"],
    );
    // A directory is not a scenario.
    let dir = std::env::temp_dir().to_string_lossy().into_owned();
    assert_rejected(&["run", &dir, "--seed", "0"], &["cannot read"]);
}

/// A script or scenario that is a device, a FIFO or too big is refused by what it is
/// or by its size, never read to the end (`/dev/zero` grew past 3 GB; opening a FIFO
/// waited for a writer forever).
#[test]
fn user_named_files_must_be_regular_and_small() {
    let script = |name: &str| {
        format!("{HEAD}scripts = {{ convention = \"token\", release = \"{name}\" }}\n")
    };
    // One byte over the cap, in a Lua comment: it would compile.
    let big = format!("--{}\n", "x".repeat(4 << 20));
    temp("big.lua", big.as_bytes());
    let s = temp("big-script.toml", script("big.lua").as_bytes());
    assert_rejected(
        &["run", &s, "--seed", "0"],
        &[
            "lock.scripts.release",
            "big.lua` is larger than 4194304 bytes, the most a script may be",
        ],
    );
    let fifo = scratch().join("fifo.lua").to_string_lossy().into_owned();
    let _ = std::fs::remove_file(&fifo);
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {fifo}");
    let s = temp("fifo-script.toml", script("fifo.lua").as_bytes());
    assert_rejected(
        &["run", &s, "--seed", "0"],
        &["lock.scripts.release", "it is a FIFO, not a regular file"],
    );
    // The scenario itself, through every command that reads one.
    assert_rejected(&["run", &fifo, "--seed", "0"], &["it is a FIFO"]);
    for cmd in ["run", "replay", "shrink"] {
        assert_rejected(
            &[cmd, "/dev/zero", "--seed", "0"],
            &["/dev/zero: cannot read file: it is a character device, not a regular file"],
        );
    }
}

#[test]
fn bad_command_lines_are_rejected() {
    let s = "sims/redis-01-pause-past-lease.toml";
    for (args, needle) in [
        (vec!["run", s, "--seed", "-1"], "invalid value '-1'"),
        (vec!["run", s, "--jobs", "0"], "--jobs"),
        (vec!["run", s, "--jobs", "-3"], "--jobs"),
        (
            vec!["run", s, "--seed", "7", "--shard", "2/2"],
            "selects no seed",
        ),
        (vec!["run", s, "--seeds", "5..5"], "A < B"),
        (
            vec!["run", s, "--seeds", "0..99999999999999999999999"],
            "not a seed number",
        ),
        (vec!["run", s, "--shard", "0/0"], "--shard"),
        (vec!["replay", s, "--seed", "-7"], "invalid value '-7'"),
        (vec!["bench", "--seeds", "0"], "--seeds"),
        (
            vec!["bench", "--matrix", "no-such-matrix.toml"],
            "no-such-matrix.toml",
        ),
        (
            vec!["serve", "sql"],
            "cannot be served; families: zk, raft, redis, db",
        ),
        (
            vec!["serve", "db", "--nodes", "3"],
            "the database model is served as one server",
        ),
        (
            vec!["serve", "raft", "--nodes", "4"],
            "expected 1 (one server), 3 or 5",
        ),
        (vec!["serve", "redis", "--nodes", "3"], "one primary"),
        (
            vec!["serve", "zk", "--nodes", "2"],
            "expected 1 (one server), 3 or 5",
        ),
        (vec!["serve", "zk", "--tick-ms", "0"], "--tick-ms 0"),
        (
            vec!["serve", "zk", "--port", "65535", "--nodes", "3"],
            "no room",
        ),
    ] {
        assert_rejected(&args, &[needle]);
    }
}

/// `locksim run ARGS --json - --quiet` under a 1 GiB memory limit and `timeout -s KILL 60`,
/// the watchdog that keeps a test from hanging CI (`--foreground` makes it forward our
/// TERM to locksim once; without it, it signals its process group too, and a second TERM
/// ends the run before its summary). Its stdout is drained by the thread returned: a
/// full pipe would block the run's writes, and a process blocked in write(2) cannot act
/// on a signal.
fn watched_run(args: &str) -> (std::process::Child, std::thread::JoinHandle<String>) {
    let mut child = Command::new("bash")
        .args([
            "-c",
            &format!(
                "ulimit -v 1048576; exec timeout --foreground -s KILL 60 {BIN} run {args} --json - --quiet"
            ),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("runs");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        out
    });
    (child, reader)
}

/// `--seeds 0..u64::MAX` streams: the first seeds' lines come out at once, memory stays
/// flat, and SIGTERM ends it with the summary of the finished seeds and exit 143.
#[test]
fn an_endless_sweep_streams_and_stops_cleanly_on_sigterm() {
    let (mut child, reader) =
        watched_run("sims/redis-01-pause-past-lease.toml --seeds 0..18446744073709551615 --jobs 1");
    std::thread::sleep(Duration::from_secs(3));
    // `timeout` forwards TERM to locksim.
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = child.wait().unwrap();
    let out = reader.join().unwrap();
    assert_eq!(status.code(), Some(143), "{out}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON lines"))
        .collect();
    assert!(lines.len() >= 2, "{out}");
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["interrupted"], true);
    assert_eq!(summary["expect_met"], false);
    assert_eq!(summary["seeds"].as_u64().unwrap() as usize, lines.len() - 1);
    assert_eq!(lines[0]["seed"], 0);
    assert!(Path::new(BIN).exists());
}

/// The densest random nemesis accepted over the longest run: every kind, one fault per
/// 100 ms for an hour (a fault every millisecond is refused: see
/// `bad_inputs/random-faults-too-dense.toml`).
const DENSEST_HOUR: &str =
    "name = \"densest-hour\"\nalgorithm = \"redis\"\nduration_ms = 3600000\n\
    [lock]\nttl_ms = 500\n[faults]\ninterval_ms = [100, 100]\n\
    pause = { nodes = \"clients\", duration_ms = [1, 5] }\n\
    partition = { nodes = \"all\", duration_ms = [1, 5] }\n\
    clock = { nodes = \"all\", jump_ms = [-5, 5] }\n\
    crash = { nodes = \"all\", down_ms = [1, 5] }\n";

/// SIGTERM in the middle of one long seed ends the run within seconds (not after the
/// seed, nor after checking its partial history), with exit 143 and the summary of no
/// finished seed.
#[test]
fn sigterm_mid_seed_ends_the_densest_hour_promptly() {
    let s = temp("densest-hour.toml", DENSEST_HOUR.as_bytes());
    let (mut child, reader) = watched_run(&format!("'{s}' --seed 0"));
    // Long enough to be well inside the seed (the hour takes most of a minute).
    std::thread::sleep(Duration::from_secs(2));
    let sent = Instant::now();
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    let out = reader.join().unwrap();
    // About half a second on an idle machine; generous for a loaded one.
    assert!(took < Duration::from_secs(5), "exit took {took:?}");
    assert_eq!(status.code(), Some(143), "{out}");
    let summary: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(summary["summary"]["interrupted"], true, "{out}");
    assert_eq!(summary["summary"]["seeds"], 0, "{out}");
}
