//! A real client library against the Redis model: python-redis-lock 4.0.1 (pinned, with
//! redis-py, in `target/clients/python`, where `scripts/test` installs them) runs the
//! same holder-and-waiter script (`python_redis_lock.py`) against `locksim serve redis`
//! and against a real `redis-server`. Its waiters block in `BLPOP` on the lock's signal
//! list and must get the lock promptly when the holder releases, an acquire with a
//! timeout must give up after it, and `reset_all()` (a script calling `KEYS`) must free
//! the locks and wake a waiter: on both servers alike.
//!
//! Without the pinned packages (or `python3`) the test fails and says how to install
//! them: it never skips.

use crate::support::{real_redis, served};

use locksim::testing::ServeFamily;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The exact versions `scripts/test` installs (tests/fidelity/python_redis_lock.txt).
const PINS: &[(&str, &str)] = &[("redis_lock", "4.0.1"), ("redis", "8.1.0")];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn packages() -> PathBuf {
    repo().join("target/clients/python")
}

fn python(args: &[&str]) -> Command {
    let mut cmd = Command::new("python3");
    cmd.args(args)
        .env("PYTHONPATH", packages())
        .current_dir(repo());
    cmd
}

/// Panics, saying how to install them, unless the pinned packages import.
fn require_packages() {
    let check = PINS
        .iter()
        .map(|(module, version)| {
            format!(
                "import {module}; assert {module}.__version__ == '{version}', {module}.__version__"
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let out = python(&["-c", &check]).output();
    let ok = out.as_ref().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "python-redis-lock 4.0.1 and redis-py 8.1.0 are not installed in {}: this test runs \
         the real library and does not skip. Run it through scripts/test, which installs \
         them, or: python3 -m pip install --no-deps --target target/clients/python -r \
         tests/fidelity/python_redis_lock.txt\n(python3 said: {})",
        packages().display(),
        match &out {
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
            Err(e) => format!("cannot run python3: {e}"),
        }
    );
}

/// Runs the script against the server on `port`: its output, or a panic naming `server`.
fn run_script(port: u16, server: &str) -> String {
    let script = "tests/fidelity/python_redis_lock.py";
    let out = python(&[script, &port.to_string()])
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("all ok"),
        "python-redis-lock against {server}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn python_redis_lock_waiters_work_against_the_model_as_against_redis_server() {
    require_packages();
    let model = served::serve(ServeFamily::Redis, 1, 100);
    let on_model = run_script(model.port(), "locksim serve redis");
    let real = real_redis::start_server(&[]);
    let on_real = run_script(real.port, "redis-server");
    assert_eq!(on_model, on_real, "the steps differ between the servers");
}
