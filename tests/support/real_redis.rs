//! A real `redis-server` (Debian's package) on a free loopback port, for the differential
//! tests; killed when dropped (or by its watchdog when the test process dies without
//! dropping it). Without the binary it fails and says how to install it:
//! a comparison must never skip silently.
//!
//! A test reaches it as `crate::support::real_redis` (see `mod.rs`).

use super::watchdog::Watchdog;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A real redis-server process, killed when dropped.
pub struct RealServer {
    child: Child,
    /// Its loopback port.
    pub port: u16,
    dir: PathBuf,
    watchdog: Option<Watchdog>,
}

impl Drop for RealServer {
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

fn redis_server_binary() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")])
        .map(|d| d.join("redis-server"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "redis-server not found on PATH: this test compares the model with a real \
                 Redis 7 server and does not skip. Run the tests with scripts/test, which \
                 installs it, or install it with `apt-get install -y redis-server`."
            )
        })
}

/// Starts a real server with `extra` arguments (`--requirepass x`), no persistence, and
/// returns once it listens.
pub fn start_server(extra: &[&str]) -> RealServer {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port();
    let dir = std::env::temp_dir().join(format!("locksim-fidelity-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let port_s = port.to_string();
    let mut args = vec![
        "--port",
        &port_s,
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--dir",
    ];
    let dir_s = dir.to_string_lossy().into_owned();
    args.push(&dir_s);
    args.extend_from_slice(extra);
    let child = Command::new(redis_server_binary())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server starts");
    let watchdog = Watchdog::start(child.id(), &dir, "locksim-redis-watchdog");
    let server = RealServer {
        child,
        port,
        dir,
        watchdog,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "redis-server did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}
