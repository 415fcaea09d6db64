//! Real lock libraries under locksim's faults: catalogue rows run live with an adapter of
//! `clients/` as the client (docs/external-clients.md) against real servers on loopback,
//! a few seconds each. The libraries are installed by `scripts/test` (Debian packages,
//! and pip/npm into `target/clients/`); a test whose library is missing fails and says
//! how to install it: a comparison must never skip silently.

// ==== redis-py and node-redlock (clients/redis-py, clients/node-redlock) ====
mod redis_libraries {
    use std::path::Path;
    use std::process::Command;

    const BIN: &str = env!("CARGO_BIN_EXE_locksim");

    /// Fail, saying how to install it, unless the adapter's pinned library is installed
    /// (`stamp` is the file scripts/test leaves beside it).
    fn require(library: &str, stamp: &str, tools: &[&str]) {
        for tool in tools {
            let found = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(
                found,
                "{tool} not found: this test runs {library} and does not skip. Run the tests \
                 with scripts/test, which installs it."
            );
        }
        assert!(
            Path::new(stamp).exists(),
            "{library} is not installed ({stamp} is missing): this test runs it and does not \
             skip. Run scripts/test, which installs it into target/clients/."
        );
    }

    /// `locksim live SCENARIO --duration D --client CLIENT` in a TMPDIR of its own (left
    /// empty by the run): exit code, stdout, stderr.
    fn live_with(client: &str, scenario: &str, duration: &str) -> (i32, String, String) {
        static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp =
            std::env::temp_dir().join(format!("locksim-clients-test-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let out = Command::new("timeout")
            .arg("60")
            .arg(BIN)
            .args(["live", scenario, "--duration", duration, "--client", client])
            .env("TMPDIR", &tmp)
            .output()
            .expect("locksim runs");
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let _ = std::fs::remove_dir_all(&tmp);
        assert!(left.is_empty(), "the run of {scenario} left {left:?}");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Row 1 with redis-py's `Lock`: the holder pauses past its lease between its validity
    /// check and its write, as with locksim's own client, and mutual exclusion breaks.
    #[test]
    fn redis_py_row_1_pause_past_lease_violates_mutex() {
        require(
            "redis-py",
            "target/clients/python/.pinned",
            &["python3", "redis-server"],
        );
        let (code, out, err) = live_with(
            "clients/redis-py/run",
            "sims/redis-01-pause-past-lease.toml",
            "4s",
        );
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(
            out.contains("mutex                violated"),
            "{out}\n{err}"
        );
        assert!(out.contains("expectations met"), "{out}\n{err}");
    }

    /// Row 11 with node-redlock: the Redlock holder pauses after its validity check on
    /// three real redis-servers, its keys expire everywhere, and mutual exclusion breaks.
    #[test]
    fn node_redlock_row_11_pause_after_acquire_violates_mutex() {
        require(
            "node-redlock",
            "target/clients/node/.pinned",
            &["node", "redis-server"],
        );
        let (code, out, err) = live_with(
            "clients/node-redlock/run",
            "sims/redlock-11-pause-after-acquire.toml",
            "6s",
        );
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(
            out.contains("mutex                violated"),
            "{out}\n{err}"
        );
        assert!(out.contains("expectations met"), "{out}\n{err}");
    }
}
// ==== end redis-py and node-redlock ====
