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

/// `drive.py --family F --client C --check CHECKS`: its output, after asserting it passed.
fn drive(family: &str, client: &str, checks: &str) -> String {
    let out = Command::new("timeout")
        .args([
            "120",
            "python3",
            "tests/clients/drive.py",
            "--family",
            family,
        ])
        .args(["--client", client, "--check", checks])
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "drive.py failed:\n{stdout}\n{stderr}");
    stdout
}

#[test]
fn curator_adapter_refuses_a_try_and_reports_suspended_as_lost() {
    need_curator();
    // Contention is row 14's (below); two JVMs per check make this the longest test here.
    let out = drive("zk", "clients/curator/run", "try,lost");
    assert!(out.contains("2 passed, 0 failed"), "{out}");
    assert!(out.contains("\"reason\":\"SUSPENDED\""), "{out}");
}

#[test]
fn etcd_mutex_adapter_contends_refuses_a_try_a_lost_waiter_and_reports_an_expired_session() {
    need_etcd_mutex();
    let out = drive("etcd", "clients/etcd-mutex/run", "all");
    assert!(out.contains("4 passed, 0 failed"), "{out}");
    assert!(out.contains("session expired"), "{out}");
    // Row 16's waiter: etcdctl reads its key after Mutex.Lock and gives up.
    assert!(out.contains("lock lost on init"), "{out}");
}
