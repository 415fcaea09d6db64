//! `locksim serve db`, witnessed by real clients: MariaDB's own command-line client
//! (`mariadb`, Debian's `mariadb-client` 10.11) and PyMySQL 1.1.1 (pinned in
//! `serve_db_pymysql.txt`, installed by `scripts/test` into `target/clients/python`) run
//! the seeds' three schemes (a unique row, `SELECT … FOR UPDATE`, an optimistic
//! `version`) and MySQL's named locks against the model on loopback. The replies
//! themselves are compared with a real MariaDB by `tests/fidelity/db.rs`.
//!
//! Without `mariadb` or the pinned PyMySQL the tests fail and say how to install them:
//! they never skip.

use crate::support::served;

use locksim::testing::ServeFamily;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `mariadb` against the model on `port`, as user `me` in database `locksim`: tab-separated
/// output (`--batch`), no table-name completion on connect (`-A`), output flushed after
/// each statement (`--unbuffered`), killed after 30 s should the model never answer.
fn mariadb(port: u16) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.args(["-s", "KILL", "30", "mariadb", "-h", "127.0.0.1"])
        .args(["-P", &port.to_string(), "-u", "me", "locksim"])
        .args(["--batch", "-A", "--unbuffered"]);
    cmd
}

/// Runs `sql` with `mariadb -e`: its stdout, or a panic with its stderr.
fn mariadb_ok(port: u16, sql: &str) -> String {
    let out = mariadb_run(port, sql);
    assert!(
        out.status.success(),
        "mariadb -e {sql:?}: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn mariadb_run(port: u16, sql: &str) -> std::process::Output {
    need_mariadb();
    mariadb(port)
        .args(["-e", sql])
        .output()
        .expect("timeout and mariadb run")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Panics, naming the Debian package, unless the `mariadb` client is installed.
fn need_mariadb() {
    let found = Command::new("mariadb").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "mariadb not found: run the tests with scripts/test, which installs it, or \
         `apt-get install -y mariadb-client`"
    );
}

#[test]
fn the_mariadb_client_runs_each_scheme_and_get_lock_against_serve_db() {
    let model = served::serve(ServeFamily::Db, 1, 100);
    let port = model.port();

    // A unique row: the second INSERT of a name fails on the key; only the owner deletes.
    let insert = "INSERT INTO method_lock (name, owner) VALUES ('cli-unique', 'a')";
    assert_eq!(mariadb_ok(port, insert), "");
    let again = mariadb_run(port, insert);
    assert!(!again.status.success());
    // (mariadb prints the failed statement before the error: --print-query-on-error.)
    let error = text(&again.stderr);
    assert!(
        error.ends_with(
            "\nERROR 1062 (23000) at line 1: Duplicate entry 'cli-unique' for key 'name'\n"
        ),
        "{error}"
    );
    let delete = "DELETE FROM method_lock WHERE name = 'cli-unique' AND owner = 'b'; \
                  SELECT owner FROM method_lock WHERE name = 'cli-unique'; \
                  DELETE FROM method_lock WHERE name = 'cli-unique' AND owner = 'a'; \
                  SELECT owner FROM method_lock WHERE name = 'cli-unique'";
    assert_eq!(
        mariadb_ok(port, delete),
        "owner\na\n",
        "b's DELETE left a's row; a's removed it (an empty result prints nothing)"
    );

    for_update_waits_for_the_holders_commit(port);

    // Optimistic: the UPDATE at version 0 takes the row once; a second one at version 0
    // matches nothing, so the row keeps the first owner and version 1.
    mariadb_ok(port, "INSERT INTO method_lock (name) VALUES ('cli-opt')");
    let take = |who: &str| {
        format!(
            "UPDATE method_lock SET owner = '{who}', version = version + 1 \
             WHERE name = 'cli-opt' AND version = 0"
        )
    };
    let verbose = |sql: &str| {
        let out = mariadb(port)
            .arg("-vvv")
            .args(["-e", sql])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    assert!(verbose(&take("a")).contains("Query OK, 1 row affected"));
    assert!(verbose(&take("b")).contains("Query OK, 0 rows affected"));
    assert_eq!(
        mariadb_ok(
            port,
            "SELECT owner, version FROM method_lock WHERE name = 'cli-opt'"
        ),
        "owner\tversion\na\t1\n"
    );

    // Named locks: held by one session, refused to another, free once released.
    let lock = "SELECT GET_LOCK('cli-L', 10); SELECT CONNECTION_ID() AS id";
    let (mut holder, printed) = Held::start(port, lock, 4);
    let id = printed
        .strip_prefix("GET_LOCK('cli-L', 10)\n1\nid\n")
        .unwrap_or_else(|| panic!("{printed:?}"));
    let other = "SELECT GET_LOCK('cli-L', 0); SELECT IS_FREE_LOCK('cli-L'); \
                 SELECT IS_USED_LOCK('cli-L')";
    assert_eq!(
        mariadb_ok(port, other),
        format!("GET_LOCK('cli-L', 0)\n0\nIS_FREE_LOCK('cli-L')\n0\nIS_USED_LOCK('cli-L')\n{id}")
    );
    holder.feed("SELECT RELEASE_LOCK('cli-L');\n");
    holder.finish();
    assert_eq!(
        mariadb_ok(
            port,
            "SELECT IS_FREE_LOCK('cli-L'); SELECT GET_LOCK('cli-L', 0)"
        ),
        "IS_FREE_LOCK('cli-L')\n1\nGET_LOCK('cli-L', 0)\n1\n"
    );
}

/// Two `mariadb` processes: the first locks the row with `SELECT … FOR UPDATE` in a
/// transaction and keeps it open (its stdin stays open); the second's locking read waits
/// until the first commits, a second later.
fn for_update_waits_for_the_holders_commit(port: u16) {
    mariadb_ok(port, "INSERT INTO method_lock (name) VALUES ('cli-fu')");
    let lock = "BEGIN; SELECT owner FROM method_lock WHERE name = 'cli-fu' FOR UPDATE";
    let (mut first, printed) = Held::start(port, lock, 2);
    assert_eq!(printed, "owner\n\n", "the row, unowned");
    let second = std::thread::spawn(move || {
        let start = Instant::now();
        let read = "BEGIN; SELECT owner FROM method_lock WHERE name = 'cli-fu' FOR UPDATE; COMMIT";
        (mariadb_ok(port, read), start.elapsed())
    });
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        !second.is_finished(),
        "the second locking read did not wait"
    );
    first.feed("UPDATE method_lock SET owner = 'first' WHERE name = 'cli-fu'; COMMIT;\n");
    let (out, waited) = second.join().unwrap();
    first.finish();
    assert_eq!(out, "owner\nfirst\n", "it reads the committed row");
    assert!(
        (Duration::from_millis(700)..Duration::from_secs(5)).contains(&waited),
        "the second waited {waited:?}, about a second expected"
    );
}

/// A `mariadb` process reading statements from its stdin, kept open: its session (and
/// transaction, and named locks) lasts until [`Held::finish`].
struct Held {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Held {
    /// Starts it with `sql`; returns it and the first `lines` lines it printed.
    fn start(port: u16, sql: &str, lines: usize) -> (Held, String) {
        need_mariadb();
        let mut child = mariadb(port)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("timeout and mariadb run");
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut held = Held { child, out };
        held.feed(&format!("{sql};\n"));
        let mut seen = String::new();
        for _ in 0..lines {
            let n = held.out.read_line(&mut seen).unwrap();
            assert!(n > 0, "mariadb ended after {seen:?}");
        }
        (held, seen)
    }

    fn feed(&mut self, sql: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(sql.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Closes its stdin and waits for it to end.
    fn finish(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "mariadb ended with {status}");
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn packages() -> PathBuf {
    repo().join("target/clients/python")
}

/// PyMySQL, with its defaults (autocommit off), runs `serve_db_pymysql.py`: each
/// scheme and the named locks, one line per step.
#[test]
fn pymysql_runs_each_scheme_and_get_lock_against_serve_db() {
    let check = "import pymysql; assert pymysql.VERSION_STRING == '1.1.1', pymysql.VERSION_STRING";
    let python = |args: &[&str]| {
        Command::new("timeout")
            .args(["-s", "KILL", "60", "python3"])
            .args(args)
            .env("PYTHONPATH", packages())
            .current_dir(repo())
            .output()
    };
    let found = python(&["-c", check]);
    assert!(
        found.as_ref().is_ok_and(|o| o.status.success()),
        "PyMySQL 1.1.1 is not installed in {}: this test runs the real library and does not \
         skip. Run it through scripts/test, which installs it, or: python3 -m pip install \
         --no-deps --target target/clients/python -r tests/cli/serve_db_pymysql.txt\n\
         (python3 said: {})",
        packages().display(),
        match &found {
            Ok(o) => text(&o.stderr).trim().to_string(),
            Err(e) => format!("cannot run python3: {e}"),
        }
    );
    let model = served::serve(ServeFamily::Db, 1, 100);
    let port = model.port().to_string();
    let out = python(&["tests/cli/serve_db_pymysql.py", &port]).expect("python3 runs");
    let printed = text(&out.stdout);
    assert!(
        out.status.success(),
        "PyMySQL against serve db:\n{printed}\n{}",
        text(&out.stderr)
    );
    let expected = "\
connected: autocommit False
unique: a inserts, 1 row
unique: b gets error 1062
unique: b's delete of a's row deletes 0
unique: a deletes 1
for-update: a locks 1 row
for-update: b still waits after 1 s: True
for-update: b gets the row after a's commit: waited >= 0.7 s: True
for-update: b reads owner a
optimistic: a's update at version 0 changes 1
optimistic: b's update at version 0 changes 0
optimistic: row a 1
named: a GET_LOCK 1
named: b GET_LOCK timeout 0 0
named: IS_USED_LOCK is a's connection id: True
named: a RELEASE_LOCK 1
named: b GET_LOCK 1
named: after b's connection closed IS_FREE_LOCK 1
all ok
";
    assert_eq!(printed, expected);
}
