//! The real lock libraries in `clients/` (issue 39): each adapter driven on its own against
//! a real server by `tests/clients/drive.py` (contention, `try`, a `lost` notice after a
//! SIGSTOP past the session, a waiter frozen past its session), and run live by locksim
//! on a catalogue row of its family.
//!
//! Needs Java 17 with `javac`, Debian's `libcurator-recipes-java`, `zookeeper`,
//! `etcd-server`, `etcd-client` and `python3` (`scripts/test` installs them): a test whose
//! tool is missing fails and says what to install.

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
fn etcd_mutex_adapter_contends_reports_an_expired_session_and_refuses_a_lost_waiter() {
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
    // Row 16's waiter: etcdctl reads its key after Mutex.Lock and gives up.
    assert!(out.contains("lock lost on init"), "{out}");
}

/// `locksim live SCENARIO --duration D --client CLIENT`: exit code and stdout.
fn live(scenario: &str, duration: &str, client: &str) -> (i32, String) {
    let out = Command::new("timeout")
        .args(["150", env!("CARGO_BIN_EXE_locksim"), "live", scenario])
        .args(["--duration", duration, "--client", client])
        .output()
        .expect("locksim runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let text = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn row_14_curator_on_a_real_ensemble_violates_mutex_and_its_control_holds() {
    need_curator();
    // Curator's InterProcessMutex ignores SUSPENDED (CURATOR-206): cut off while it
    // holds, it keeps working after its session expired and the next waiter is in.
    let (code, out) = live(
        "tests/fixtures/live/zk-14-ensemble-curator.toml",
        "10s",
        "clients/curator/run",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    // Listening (on_suspended = "stop"): the adapter's `lost` notice stops the work.
    let (code, out) = live(
        "tests/fixtures/live/zk-14-ensemble-curator-stop.toml",
        "10s",
        "clients/curator/run",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("mutex                holds"), "{out}");
}

#[test]
fn row_17_etcd_mutex_paused_holder_violates_mutex_and_the_revision_fences_it() {
    need_etcd_mutex();
    let (code, out) = live(
        "sims/raft-17-pause-in-critical-section.toml",
        "6s",
        "clients/etcd-mutex/run",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("mutex                violated"), "{out}");
    assert!(out.contains("fencing              holds"), "{out}");
}
