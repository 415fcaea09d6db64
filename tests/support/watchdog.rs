//! What the real-server supports (`real_etcd.rs`, `real_redis.rs`, `real_zk.rs`) share: a watchdog that
//! kills a server the test process left behind, and the tail of a server's log.

use std::fs;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

/// A `sh` that kills a server and removes its directory once its stdin closes, that is
/// when the test process dies without dropping the server's handle (killed,
/// `process::exit`).
pub struct Watchdog {
    child: Child,
    _stdin: ChildStdin,
}

impl Watchdog {
    /// Starts the watchdog of the server `pid` with data folder `dir`, named `name` in
    /// `ps`; best effort, as it only matters when the test process dies abnormally.
    pub fn start(pid: u32, dir: &Path, name: &str) -> Option<Watchdog> {
        let mut child = Command::new("/bin/sh")
            .args([
                "-c",
                "read _ignored; kill -9 \"$1\"; sleep 0.2; rm -rf \"$2\"",
                name,
            ])
            .arg(pid.to_string())
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        Some(Watchdog {
            child,
            _stdin: stdin,
        })
    }

    /// Ends the watchdog without letting it act (the test stops the server itself); the
    /// watchdog goes first, so that it can never signal a reused pid.
    pub fn disarm(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last `lines` lines of the file at `path` (or why it cannot be read).
pub fn tail(path: &Path, lines: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}
