//! The real lock libraries in `clients/` (issue 39): each adapter driven on its own against
//! a real server by `tests/clients/drive.py` (contention, `try`, a `lost` notice after a
//! SIGSTOP past the session, a waiter frozen past its session), and run live by locksim
//! on a catalogue row of its family.
//!
//! Needs Java 17 with `javac`, Debian's `libcurator-recipes-java`, `zookeeper`,
//! `etcd-server`, `etcd-client` and `python3` (`scripts/test` installs them): a test whose
//! tool is missing fails and says what to install.

use locksim::history::Event;
use locksim::EventType;
use std::path::Path;
use std::process::Command;

/// Panics, naming the Debian package, unless `tool` (a command, or an absolute path) exists.
fn need(tool: &str, package: &str) {
    let present = if tool.starts_with('/') {
        Path::new(tool).exists()
    } else {
        Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    assert!(
        present,
        "{tool} not found: run the tests with scripts/test, which installs it, or \
         `apt-get install -y {package}`"
    );
}

fn need_curator() {
    need("java", "default-jdk-headless");
    need("javac", "default-jdk-headless");
    need(
        "/usr/share/java/curator-recipes.jar",
        "libcurator-recipes-java",
    );
    need("/usr/share/java/slf4j-simple.jar", "libslf4j-java");
    need("/usr/share/java/zookeeper.jar", "zookeeper");
}

fn need_etcd_mutex() {
    need("python3", "python3");
    need("etcd", "etcd-server");
    need("etcdctl", "etcd-client");
}

/// `drive.py --adapter A --algorithm ALG --lock LOCK --check CHECKS`: its stdout and
/// stderr (the adapters' logs), after asserting it passed.
fn drive(adapter: &str, algorithm: &str, lock: &str, checks: &str) -> String {
    let _alone = alone();
    let out = Command::new("timeout")
        .args([
            "120",
            "python3",
            "tests/clients/drive.py",
            "--adapter",
            adapter,
        ])
        .args(["--algorithm", algorithm, "--lock", lock, "--check", checks])
        .output()
        .expect("python3 runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "drive.py failed:\n{text}");
    text
}

#[test]
fn curator_adapter_answers_odd_requests_and_reports_suspended_as_lost() {
    need_curator();
    // Contention is row 14's (below); every JVM takes seconds to start, so only two checks.
    let lock = r#"{"session_timeout_ms": 1000, "on_suspended": "stop"}"#;
    let out = drive("clients/curator/run", "zk", lock, "odd,lost");
    assert!(out.contains("passed, 0 failed"), "{out}");
    assert!(out.contains("connection SUSPENDED"), "{out}");
}

#[test]
fn etcd_mutex_adapter_contends_reports_an_expired_session_and_gives_up_a_lost_waiter() {
    need_etcd_mutex();
    let lock = r#"{"ttl_ms": 1000, "on_session_lost": "stop"}"#;
    let out = drive(
        "clients/etcd-mutex/run",
        "raft",
        lock,
        "contend,odd,lost,waiter",
    );
    assert!(out.contains("passed, 0 failed"), "{out}");
    assert!(out.contains("session expired"), "{out}");
    // Row 16's waiter: etcdctl reads its key after Mutex.Lock and gives up (`unknown`:
    // the key may have owned the lock until its lease ran out).
    assert!(out.contains("lock lost on init"), "{out}");
}

/// The tests here take the machine one at a time: JVMs and real servers starting side by
/// side on 2 cores start too late for the scenarios' fault times.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// `locksim live SCENARIO --duration D --client CLIENT --history H`: exit code, stdout
/// and stderr, and the history.
fn live(scenario: &str, duration: &str, client: &str) -> (i32, String, Vec<Event>) {
    let history = std::env::temp_dir().join(format!(
        "locksim-clients-{}-{}.jsonl",
        std::process::id(),
        Path::new(scenario).file_stem().unwrap().to_string_lossy()
    ));
    let out = Command::new("timeout")
        .args(["150", env!("CARGO_BIN_EXE_locksim"), "live", scenario])
        .args(["--duration", duration, "--client", client, "--history"])
        .arg(&history)
        .output()
        .expect("locksim runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let events = std::fs::read_to_string(&history).unwrap_or_default();
    let _ = std::fs::remove_file(&history);
    let history = locksim::history::from_jsonl(&events).unwrap_or_default();
    (out.status.code().unwrap_or(-1), text, history)
}

/// Whether `node` was granted the lock at least once.
fn held(history: &[Event], node: &str) -> bool {
    history
        .iter()
        .any(|e| e.process == node && e.f == "acquire" && e.kind == EventType::Ok)
}

#[test]
fn row_14_curator_on_a_real_ensemble_violates_mutex_and_its_control_holds() {
    need_curator();
    // Curator's InterProcessMutex ignores SUSPENDED (CURATOR-206): cut off while it
    // holds, it keeps working after its session expired and the next waiter is in.
    let _alone = alone();
    let (code, out, history) = live(
        "tests/fixtures/live/zk-14-ensemble-curator.toml",
        "10s",
        "clients/curator/run",
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        held(&history, "client-0"),
        "client-0 never held the lock (its JVM started too late?):\n{out}"
    );
    assert!(out.contains("mutex                violated"), "{out}");
    // Listening (on_suspended = "stop"): the adapter's `lost` notice stops the work.
    let (code, out, history) = live(
        "tests/fixtures/live/zk-14-ensemble-curator-stop.toml",
        "10s",
        "clients/curator/run",
    );
    assert_eq!(code, 0, "{out}");
    // Else the control holds for want of a holder to cut off.
    assert!(
        held(&history, "client-0"),
        "client-0 never held the lock (its JVM started too late?):\n{out}"
    );
    assert!(out.contains("mutex                holds"), "{out}");
}

#[test]
fn row_17_etcd_mutex_paused_holder_violates_mutex_and_the_revision_fences_it() {
    need_etcd_mutex();
    let _alone = alone();
    let (code, out, _) = live(
        "sims/raft-17-pause-in-critical-section.toml",
        "6s",
        "clients/etcd-mutex/run",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("fencing              holds"), "{out}");
}

/// Row 16 with `etcdctl lock`: client-0 is frozen while it waits in `Mutex.Lock`, past its
/// 1 s lease, as locksim's client is in the row (which violates `mutex` without the
/// post-wait check). etcdctl reads its key after `Lock` returns, finds it gone and gives
/// up (`lock lost on init`): the library behaves as the row's control, and `mutex` holds.
#[test]
fn row_16_etcdctl_waiter_frozen_past_its_lease_gives_up_and_mutex_holds() {
    need_etcd_mutex();
    let _alone = alone();
    let (code, out, history) = live(
        "tests/fixtures/live/raft-16-waiting.toml",
        "6s",
        "clients/etcd-mutex/run",
    );
    let pause = history
        .iter()
        .find(|e| e.f == "pause" && e.nodes == Some(vec!["client-0".to_string()]))
        .unwrap_or_else(|| panic!("the pause at `waiting` never struck:\n{out}"));
    let at = pause.value.as_ref().map(|v| v["at"].clone());
    assert_eq!(at, Some("waiting".into()), "{out}");
    // The scenario expects locksim's client's violation; the library's run differs there.
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("mutex                holds"), "{out}");
    assert!(out.contains("lock lost on init"), "{out}");
}

/// Row 1 with redis-py's `Lock`: the holder pauses past its lease between its validity
/// check and its write, as with locksim's own client, and mutual exclusion breaks.
#[test]
fn redis_py_row_1_pause_past_lease_violates_mutex() {
    need_pinned("redis-py", "target/clients/python/.pinned");
    violates_mutex(
        "sims/redis-01-pause-past-lease.toml",
        "4s",
        "clients/redis-py/run",
    );
}

/// Row 11 with node-redlock: the Redlock holder pauses after its validity check on
/// three real redis-servers, its keys expire everywhere, and mutual exclusion breaks.
#[test]
fn node_redlock_row_11_pause_after_acquire_violates_mutex() {
    need("node", "nodejs");
    need_pinned("node-redlock", "target/clients/node/.pinned");
    violates_mutex(
        "sims/redlock-11-pause-after-acquire.toml",
        "6s",
        "clients/node-redlock/run",
    );
}

/// `scenario` live on real redis-servers with `client` violates `mutex` and meets its
/// expectations.
fn violates_mutex(scenario: &str, duration: &str, client: &str) {
    need("redis-server", "redis-server");
    let _alone = alone();
    let (code, out, _) = live(scenario, duration, client);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("expectations met"), "{out}");
}

/// Panics unless the pinned packages of `library` are installed (`stamp` is the file
/// scripts/test leaves beside them in target/clients/).
fn need_pinned(library: &str, stamp: &str) {
    assert!(
        Path::new(stamp).exists(),
        "{library} is not installed ({stamp} is missing): run the tests with scripts/test, \
         which installs it into target/clients/"
    );
}
