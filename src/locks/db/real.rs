//! The db family's real counterpart for live mode: Debian's MariaDB (`mariadbd`, 10.11)
//! as `db-0`, on its own data folder, and the cleaner as locksim's own code in a process
//! of its own.
//!
//! - **`db-0`** is a `mariadbd` listening where the run says, InnoDB, no binary log, no
//!   grant tables (every login is accepted, as the model's). Its data folder starts
//!   empty and is kept across a crash: a SIGKILL and a restart resume with InnoDB's
//!   crash recovery on the same folder. It has no `mysql` system schema
//!   (`mariadb-install-db` is not run): with the grant tables skipped, nothing a lock
//!   does reads it (users, time zone names, replication state, stored routines), and
//!   the server starts in 0.3 s instead of the 3–4 s the install takes (MariaDB logs a
//!   warning for each table it does not find). At every start an `--init-file` creates,
//!   if missing, what the model has: database `locksim`, table `method_lock` (the
//!   model's columns, `UNIQUE KEY name`, `AUTO_INCREMENT id`) and the sequence
//!   `lock_seq` the `sequence` tokens come from.
//! - `[lock]`'s server settings become server options: `lock_wait_timeout_ms` →
//!   `innodb_lock_wait_timeout` and `wait_timeout_ms` → `wait_timeout` (both whole
//!   seconds, rounded up: the clients' values follow, see [`for_real`]), and `fsync` →
//!   `innodb_flush_log_at_trx_commit` (`always`: 1; `none`: 0, not 2 — a crash here is a
//!   SIGKILL of the process, which 2 survives, since it has written every commit to the
//!   OS; 0 loses up to a second of commits to a process crash, as the model's `none`
//!   does).
//! - **The cleaner** (with `cleaner_timeout_ms`) runs the simulation's cleaner code
//!   (`cleaner.rs`: every `cleaner_interval_ms`, `DELETE … WHERE updated_at < NOW(3) -
//!   INTERVAL …`) in `locksim serve-node`, a process of its own, which reaches MariaDB
//!   through `db-0`'s proxy. So its interval is kept to the millisecond, its pauses and
//!   crashes are real signals, and a partition between it and `db-0` cuts a real link.
//!   MariaDB's own event scheduler (`CREATE EVENT … EVERY n SECOND`) would run inside
//!   `db-0`, in whole seconds, and faults of node `cleaner` would mean nothing.
//!
//! Not built: `standby = true` (catalogue row 23). It would need a second `mariadbd`
//! (`db-1`) with `server_id`s, the binary log on `db-0` (`log_bin`, `binlog_format =
//! ROW`), `CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = <db-0's proxy>,
//! MASTER_USE_GTID = slave_pos` and `START SLAVE` on `db-1` (so replication crosses the
//! proxies), `read_only = ON` on the standby (clients move on at its 1290), the
//! semi-sync variables (`rpl_semi_sync_master_enabled`, `…_timeout`,
//! `rpl_semi_sync_slave_enabled`) for `replication = "semi-sync"`, `replication_lag_ms`
//! as `MASTER_DELAY` (whole seconds) or a proxy latency on that link only, and a
//! manager process (`db-manager`: locksim's own `manager.rs` in `serve-node`, whose
//! promotion sends `STOP SLAVE; SET GLOBAL read_only = OFF` to `db-1` instead of the
//! model's promote message), plus a way to record the `promote`/`failover` events the
//! model records. Live mode refuses it ([`RealCluster::refusal`]).

use super::node::{DATABASE, DB_PORT};
use super::params::{DbParams, Fsync, Scheme};
use crate::net::mysql::{MysqlClient, QueryResult};
use crate::real::{
    find_binary, locksim_binary, Addresses, ModelCluster, Patience, RealCluster, RealPort,
    ServedModel, WaitError,
};
use std::cell::RefCell;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The database node.
const DB: &str = "db-0";
/// The cleaner node (see [`super::cleaner`]).
const CLEANER: &str = "cleaner";
/// The label of `db-0`'s one port.
const MYSQL: &str = "mysql";

/// What the model's table, sequence and database are in MariaDB's SQL: created at
/// every start of `db-0`, if missing.
const SCHEMA: &str = "CREATE DATABASE IF NOT EXISTS locksim;\n\
CREATE TABLE IF NOT EXISTS locksim.method_lock (\
id BIGINT AUTO_INCREMENT PRIMARY KEY, \
name VARCHAR(64) NOT NULL, \
owner VARCHAR(64) NOT NULL DEFAULT '', \
version BIGINT NOT NULL DEFAULT 0, \
updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), \
UNIQUE KEY name (name)) ENGINE = InnoDB;\n\
CREATE SEQUENCE IF NOT EXISTS locksim.lock_seq;\n";

/// A whole number of seconds, rounded up, at least 1 (MariaDB's timeouts are whole
/// seconds, and 0 means "do not wait" for `innodb_lock_wait_timeout`).
pub(crate) fn whole_seconds(ms: u64) -> u64 {
    ms.div_ceil(1000).max(1)
}

/// `params` as the clients run them against MariaDB: the timeouts the server rounds to
/// whole seconds, rounded the same, so that a client's statement deadline covers the
/// server's lock wait and its lease is the server's `wait_timeout`. Named locks keep
/// their wait (`GET_LOCK` takes fractions of a second).
pub(crate) fn for_real(params: &DbParams) -> DbParams {
    let mut p = params.clone();
    if p.scheme != Scheme::NamedLock {
        p.lock_wait_timeout_ms = whole_seconds(p.lock_wait_timeout_ms) * 1000;
    }
    p.wait_timeout_ms = whole_seconds(p.wait_timeout_ms) * 1000;
    p
}

/// A real MariaDB (and the cleaner as a locksim process) for a live run.
#[derive(Debug)]
pub(crate) struct RealDb {
    /// The scenario's `[lock]`, as written.
    params: DbParams,
    /// The cleaner's `locksim serve-node` process, once its command was asked for.
    cleaner: RefCell<Option<ModelCluster>>,
}

impl RealDb {
    /// The servers for `params`.
    pub(crate) fn new(params: DbParams) -> RealDb {
        RealDb {
            params,
            cleaner: RefCell::new(None),
        }
    }

    /// `mariadbd` for `db-0`, on `dir/data` (made at the first start, kept after).
    fn mariadbd(&self, dir: &Path, addrs: &Addresses) -> io::Result<Command> {
        let data = dir.join("data");
        std::fs::create_dir_all(&data)?;
        let init = dir.join("init.sql");
        std::fs::write(&init, SCHEMA)?;
        let fsync = match self.params.fsync {
            Fsync::Always => "1",
            Fsync::None => "0",
        };
        let mut cmd = Command::new(sbin("mariadbd", "mariadb-server")?);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--port={}", addrs.listen(DB, MYSQL)))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--socket={}", dir.join("sock").display()))
            .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
            .arg(format!("--init-file={}", init.display()))
            .args(["--skip-grant-tables", "--skip-log-bin"])
            .args(["--innodb-buffer-pool-size=16M", "--skip-name-resolve"])
            .arg(format!(
                "--innodb-lock-wait-timeout={}",
                whole_seconds(self.params.lock_wait_timeout_ms)
            ))
            .arg(format!(
                "--wait-timeout={}",
                whole_seconds(self.params.wait_timeout_ms)
            ))
            .arg(format!("--innodb-flush-log-at-trx-commit={fsync}"));
        if running_as_root() {
            cmd.arg("--user=root");
        }
        Ok(cmd)
    }

    /// `locksim serve-node` running the cleaner, its parameters from a scenario file
    /// written in its folder (the run's `[lock]`), its address book naming `db-0`'s
    /// proxy.
    fn cleaner(&self, dir: &Path, addrs: &Addresses) -> io::Result<Command> {
        let mut slot = self.cleaner.borrow_mut();
        if slot.is_none() {
            let scenario = dir.join("cleaner.toml");
            let lock = toml::to_string(&self.params).map_err(io::Error::other)?;
            let text = format!(
                "name = \"{CLEANER}\"\nalgorithm = \"db\"\nduration_ms = 1\n\n[lock]\n{lock}"
            );
            std::fs::write(&scenario, text)?;
            let model = ServedModel {
                system: "locksim's cleaner",
                ports: vec![
                    (DB.to_string(), self.ports(DB)),
                    (CLEANER.to_string(), Vec::new()),
                ],
                disk_nodes: Vec::new(),
                not_applied: Vec::new(),
            };
            *slot = Some(ModelCluster::new(model, &scenario, &locksim_binary()?));
        }
        slot.as_ref()
            .expect("set above")
            .command(CLEANER, dir, addrs)
    }
}

impl RealCluster for RealDb {
    fn system(&self) -> &'static str {
        "MariaDB"
    }

    /// `db-0`'s MySQL port; the cleaner listens on none.
    fn ports(&self, node: &str) -> Vec<RealPort> {
        if node == CLEANER {
            return Vec::new();
        }
        vec![RealPort {
            label: MYSQL,
            sim_port: Some(DB_PORT),
        }]
    }

    fn command(&self, node: &str, dir: &Path, addrs: &Addresses) -> io::Result<Command> {
        if node == CLEANER {
            self.cleaner(dir, addrs)
        } else {
            self.mariadbd(dir, addrs)
        }
    }

    /// MariaDB opens its port before it has run its init file: ready once a login into
    /// `locksim` finds the table and the sequence.
    fn wait_ready(&self, addrs: &Addresses, patience: &Patience) -> Result<(), WaitError> {
        let port = addrs.listen(DB, MYSQL);
        patience.wait("MariaDB's schema (database locksim)", || has_schema(port))
    }

    fn refusal(&self) -> Option<String> {
        self.params.standby.then(|| {
            "standby = true: live failover with MariaDB's own replication is not built \
             (a second mariadbd replicating from db-0 through the proxies, and a manager \
             promoting it); run it in simulation"
                .to_string()
        })
    }

    fn not_applied(&self) -> Vec<String> {
        let p = &self.params;
        let mut out = Vec::new();
        let lock_wait = whole_seconds(p.lock_wait_timeout_ms);
        if lock_wait * 1000 != p.lock_wait_timeout_ms {
            out.push(format!(
                "lock_wait_timeout_ms = {} runs as innodb_lock_wait_timeout = {lock_wait} s \
                 (whole seconds){}",
                p.lock_wait_timeout_ms,
                if p.scheme == Scheme::NamedLock {
                    ""
                } else {
                    "; the clients' statement deadlines follow"
                }
            ));
        }
        let wait = whole_seconds(p.wait_timeout_ms);
        if wait * 1000 != p.wait_timeout_ms {
            out.push(format!(
                "wait_timeout_ms = {} runs as wait_timeout = {wait} s (whole seconds); the \
                 clients' value follows",
                p.wait_timeout_ms
            ));
        }
        if p.fsync == Fsync::None {
            out.push(
                "fsync = \"none\" runs as innodb_flush_log_at_trx_commit = 0 (a SIGKILL of \
                 mariadbd loses up to a second of commits; with 2 it would lose none)"
                    .to_string(),
            );
        }
        out
    }

    fn unchecked(&self) -> Vec<(&'static str, &'static str)> {
        vec![(
            "lock-linearizable",
            "needs db-0's record of each hold the server itself ended (the cleaner's DELETE \
             of a row, a session's rollback after wait_timeout or a closed connection, an \
             optimistic takeover); MariaDB says how many rows a statement changed, not whose \
             hold ended",
        )]
    }

    /// Whatever the cleaner process recorded (nothing today; kept so it is never lost).
    fn recorded_events(&self, epoch_ns: u64) -> Vec<crate::history::Event> {
        self.cleaner
            .borrow()
            .as_ref()
            .map(|c| c.recorded_events(epoch_ns))
            .unwrap_or_default()
    }
}

/// Whether the MariaDB on `port` lets `locksim` log into its database and read the
/// table and the sequence (a blocking look, in a thread of its own: the caller runs
/// inside live mode's runtime).
fn has_schema(port: u16) -> bool {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return false;
        };
        rt.block_on(async {
            let look = async {
                let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .ok()?;
                let mut c = MysqlClient::connect(stream, "locksim", "", Some(DATABASE))
                    .await
                    .ok()?;
                for sql in [
                    "SELECT COUNT(*) FROM method_lock",
                    "SELECT COUNT(*) FROM lock_seq",
                ] {
                    if !matches!(c.query(sql).await.ok()?, QueryResult::Rows { .. }) {
                        return None;
                    }
                }
                Some(())
            };
            tokio::time::timeout(Duration::from_secs(1), look)
                .await
                .ok()
                .flatten()
                .is_some()
        })
    })
    .join()
    .unwrap_or(false)
}

/// A server binary: in `/usr/sbin` (not on a non-root `PATH`), else as
/// [`find_binary`] finds it.
fn sbin(name: &str, package: &str) -> io::Result<PathBuf> {
    ["/usr/sbin", "/usr/local/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .map_or_else(|| find_binary(name, package), Ok)
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_round_up_to_whole_seconds_and_clients_follow() {
        assert_eq!(whole_seconds(300), 1);
        assert_eq!(whole_seconds(1000), 1);
        assert_eq!(whole_seconds(1500), 2);
        let mut p = DbParams::mariadb_defaults();
        p.lock_wait_timeout_ms = 1500;
        p.wait_timeout_ms = 1000;
        let real = RealDb::new(p.clone());
        assert_eq!(
            real.not_applied(),
            vec![
                "lock_wait_timeout_ms = 1500 runs as innodb_lock_wait_timeout = 2 s (whole \
                 seconds); the clients' statement deadlines follow"
                    .to_string()
            ]
        );
        let r = for_real(&p);
        assert_eq!((r.lock_wait_timeout_ms, r.wait_timeout_ms), (2000, 1000));
    }

    #[test]
    fn standby_is_refused_and_the_cleaner_has_no_port() {
        let mut p = DbParams::mariadb_defaults();
        assert!(RealDb::new(p.clone()).refusal().is_none());
        p.standby = true;
        let why = RealDb::new(p).refusal().expect("refused");
        assert!(why.contains("not built"), "{why}");
        let real = RealDb::new(DbParams::mariadb_defaults());
        assert!(real.ports(CLEANER).is_empty());
        assert_eq!(real.ports(DB)[0].sim_port, Some(DB_PORT));
    }

    #[test]
    fn the_cleaner_s_scenario_is_the_run_s_lock_table() {
        let mut p = DbParams::mariadb_defaults();
        p.cleaner_timeout_ms = Some(1000);
        let lock = toml::to_string(&p).unwrap();
        let back: DbParams = toml::from_str(&lock).unwrap();
        assert_eq!(back, p);
    }
}
