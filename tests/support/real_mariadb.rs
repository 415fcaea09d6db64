//! A real MariaDB (Debian's `mariadb-server`, 10.11) on a free loopback port, with a fresh
//! data folder (InnoDB, no binary log, no grant tables: every user logs in, with any
//! password), for the tests that compare locksim's MySQL wire and db model with it.
//! Killed when dropped (or by its watchdog when the test process dies without dropping
//! it, a panic included: the handle is dropped while unwinding). Without the binaries it
//! fails and says how to install them: a comparison must never skip silently.
//!
//! A test reaches it as `crate::support::real_mariadb` (see `mod.rs`).

use super::watchdog::{tail, Watchdog};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A real mariadbd process, killed when dropped.
pub struct RealMariaDb {
    child: Child,
    /// Its loopback port.
    pub port: u16,
    dir: PathBuf,
    watchdog: Option<Watchdog>,
}

impl Drop for RealMariaDb {
    fn drop(&mut self) {
        // The watchdog goes first, so that it can never signal a reused pid.
        if let Some(w) = self.watchdog.take() {
            w.disarm();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The first of `candidates` (absolute paths: `/usr/sbin` is not on a non-root PATH)
/// that exists.
fn binary(candidates: &[&str]) -> PathBuf {
    candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{} not found: this test compares locksim with a real MariaDB 10.11 and \
                 does not skip. Run the tests with scripts/test, which installs it, or \
                 install it with `apt-get install -y mariadb-server mariadb-client`.",
                candidates[0]
            )
        })
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Creates the system tables in `data` (`mariadb-install-db`, under a second).
fn install_db(data: &Path) {
    let mut install = Command::new(binary(&[
        "/usr/bin/mariadb-install-db",
        "/usr/local/bin/mariadb-install-db",
    ]));
    install
        .arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
    if running_as_root() {
        install.arg("--user=root");
    }
    let out = install.output().expect("mariadb-install-db runs");
    assert!(
        out.status.success(),
        "mariadb-install-db failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts a fresh server and returns once it accepts connections.
pub fn start_server() -> RealMariaDb {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port();
    let dir = std::env::temp_dir().join(format!("locksim-mariadb-{}-{port}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("a temporary directory");
    install_db(&data);
    let log = dir.join("mariadbd.log");
    let mut server = Command::new(binary(&["/usr/sbin/mariadbd", "/usr/local/sbin/mariadbd"]));
    server
        .arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--port={port}"))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--socket={}", dir.join("sock").display()))
        .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
        .arg(format!("--log-error={}", log.display()))
        .args([
            "--skip-grant-tables",
            "--innodb-buffer-pool-size=16M",
            "--skip-log-bin",
        ]);
    if running_as_root() {
        server.arg("--user=root");
    }
    let child = server
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mariadbd starts");
    let watchdog = Watchdog::start(child.id(), &dir, "locksim-mariadb-watchdog");
    let mut server = RealMariaDb {
        child,
        port,
        dir,
        watchdog,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!("mariadbd exited ({status}):\n{}", tail(&log, 30));
        }
        assert!(
            Instant::now() < deadline,
            "mariadbd did not listen on {port} within 30 s:\n{}",
            tail(&log, 30)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}
