//! Apache Curator 5 (Debian's jars) against ZooKeeper and against the model: the cases
//! of `tests/fixtures/curator/CuratorCases.java` (a lock holder's `close()` lets a
//! waiter in within a second; `InterProcessSemaphoreMutex` acquires, contended, without
//! a dropped connection), run by one JVM against each side in turn. Both sides must
//! pass every case (a case failing on both is still a failure), and their transcripts
//! (case names and ok/fail, not timings) are compared like every other section's.
//!
//! The class path comes from `clients/curator/classpath.sh`; without it or `javac` the
//! section fails and says what to install (`scripts/test` installs both).

use super::Side;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// How long one run of every case may take (each case bounds its own waits by 15 s).
const RUN_TIMEOUT: Duration = Duration::from_secs(90);

/// The JVM serving every run: its input, its output lines, its log.
struct Cases {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    log: PathBuf,
}

impl Drop for Cases {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JVM, started by the first run and kept for the others.
static CASES: Mutex<Option<Cases>> = Mutex::new(None);

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Curator's class path, from the shared script (it names the packages it misses).
fn class_path() -> String {
    let script = repo("clients/curator/classpath.sh");
    let out = Command::new(&script)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: {} (scripts/test installs what the tests need)",
        script.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Compiles the cases with `javac` and starts one JVM running them.
fn start() -> Cases {
    let class_path = class_path();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("curator-cases");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a folder for the compiled cases");
    let source = repo("tests/fixtures/curator/CuratorCases.java");
    let javac = Command::new("javac")
        .args(["-nowarn", "-d"])
        .arg(&dir)
        .args(["-cp", &class_path])
        .arg(&source)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "javac: {e}: the Curator cases need a JDK \
                 (apt-get install -y default-jdk-headless; scripts/test installs it)"
            )
        });
    assert!(
        javac.status.success(),
        "javac {} failed:\n{}",
        source.display(),
        String::from_utf8_lossy(&javac.stderr)
    );
    let log = dir.join("jvm.log");
    let stderr = std::fs::File::create(&log).expect("the JVM's log");
    let mut child = Command::new("java")
        // Small and quick to start (C1 only, one GC thread); no SASL: the servers have
        // no JAAS configuration.
        .args(["-Xmx96m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"])
        .args(["-XX:-UsePerfData", "-Dzookeeper.sasl.client=false", "-cp"])
        .arg(format!("{}:{class_path}", dir.display()))
        .arg("CuratorCases")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("java: {e}: install a JDK (default-jdk-headless)"));
    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let (tx, lines) = mpsc::channel();
    // A thread of its own, so that a JVM that hangs fails the test instead of hanging it.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Cases {
        child,
        stdin,
        lines,
        log,
    }
}

/// Every case against the server on `port`: its output lines, up to `done`.
fn run_cases(port: u16) -> Vec<String> {
    let mut guard = CASES.lock().unwrap_or_else(PoisonError::into_inner);
    let cases = guard.get_or_insert_with(start);
    writeln!(cases.stdin, "run 127.0.0.1:{port}").expect("the JVM reads its input");
    cases.stdin.flush().expect("the JVM reads its input");
    let mut out = Vec::new();
    loop {
        match cases.lines.recv_timeout(RUN_TIMEOUT) {
            Ok(line) if line == "done" => return out,
            Ok(line) => out.push(line),
            Err(e) => {
                let log = std::fs::read_to_string(&cases.log).unwrap_or_default();
                *guard = None;
                panic!("the Curator JVM stopped answering ({e}) after {out:?}; its log:\n{log}");
            }
        }
    }
}

/// The section: every case on this side, recorded as `ok` or `fail`; a failure panics
/// once all ran, with every reason.
pub(super) fn curator(side: &mut Side) {
    let mut failures = Vec::new();
    for line in run_cases(side.port) {
        println!("curator on port {}: {line}", side.port);
        let mut words = line.splitn(3, ' ');
        let (verdict, case) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        side.record(&format!("curator: {case}"), verdict.to_string());
        if verdict != "ok" {
            failures.push(line.clone());
        }
    }
    assert!(failures.is_empty(), "Curator cases failed: {failures:?}");
}
