//! Database locks (`algorithm = "db"`): the most common distributed lock in practice, a
//! row in a relational database, in the three schemes of the MySQL articles — a unique
//! row (`INSERT` to lock, `DELETE` to unlock, a cleaner deleting rows older than a
//! timeout), `SELECT … FOR UPDATE` in a transaction held open for the critical section,
//! and optimistic concurrency on a `version` column. Catalogue row 20 and the
//! `sims/db-*.toml` scenarios test the articles' claim "reliability: ZooKeeper > cache >
//! database" against the same checks as every other lock.
//!
//! - [`model::Db`]: the server as a pure state machine (one InnoDB-like table, sessions,
//!   transactions, FIFO row-lock queues, table locks for unindexed scans, deadlock
//!   detection, MySQL's named locks, `innodb_lock_wait_timeout`, `wait_timeout`, a redo
//!   log);
//! - [`sql`]: SQL text in (parsed with `sqlparser`, MySQL dialect), MySQL's reply out;
//! - [`node`]: its network loop on `db-0`, speaking MySQL's protocol
//!   ([`crate::net::mysql`]), durability on the node's disk; the same node serves real
//!   clients under `locksim serve db`;
//! - [`cleaner`]: the scheduled job on node `cleaner`;
//! - [`DbLock`]: the client, every scheme and variant a parameter ([`params`]);
//! - [`real`]: live mode against a real MariaDB (`locksim live`), the cleaner in a
//!   locksim process of its own;
//! - with `standby = true` ([`standby`]'s keys): [`replication`] ships `db-0`'s redo to
//!   the standby `db-1` (asynchronously, or semi-synchronously), and [`manager`]
//!   (`db-manager`, MHA-like) promotes `db-1` when `db-0` has been down for
//!   `down_after_ms`; clients know both hosts (catalogue row 23).
//!
//! # Which clock decides what
//!
//! - `updated_at` and the cleaner's `NOW()` are the database's *wall* clock: a forward
//!   step there ends unique-row and optimistic leases early, exactly like Redis's expiry.
//! - `innodb_lock_wait_timeout` and `wait_timeout` run on the database's *monotonic*
//!   clock; a for-update hold ends when the server has seen its session idle for
//!   `wait_timeout`, whatever the client believes.
//! - The client's lease (`valid_until`) runs on the client's monotonic clock from the
//!   send of the statement that started the server's timer.
//!
//! # Checks
//!
//! Every standard check is defined. `lock-linearizable` needs the server to say when it
//! ends a hold the client did not release, and it does: `db-0` records an `expire` event
//! when the cleaner's `DELETE` removes a row, when an optimistic compare-and-set takes
//! over a stale row, and when it rolls back the transaction of a session that closed or
//! idled past `wait_timeout` (for-update). What it cannot say is a crash: a for-update
//! row lock vanishes with the server's memory without an event (as does a commit lost
//! with `fsync = "none"`), and the check then fails — truthfully, the lock was lost.
//!
//! Live (`locksim live`, [`real`]), against a real MariaDB, `lock-linearizable` is not
//! checked: MariaDB does not say whose hold ended when a `DELETE` removed a row or it
//! rolled back a session, so those `expire` events do not exist there.
//!
//! A failover is the lock service's own act, recorded (`promote` on `db-1`, `failover`
//! on `db-manager`), yet with asynchronous replication the promoted standby may lack the
//! newest lock rows: their holds end without an `expire`, so `lock-linearizable` fails,
//! as it does for a Redis failover (row 5) — truthfully, the service lost the lock. The
//! same loss reissues `AUTO_INCREMENT` ids (`token-order`). With semi-synchronous
//! replication (and a timeout longer than the outage) an answered commit is on the
//! standby, and every check holds.

pub(crate) mod cleaner;
mod client;
mod manager;
pub(crate) mod model;
pub(crate) mod node;
pub(crate) mod params;
mod read_reply;
mod real;
mod replication;
mod session;
pub(crate) mod sql;
mod standby;
mod standby_params;

pub(crate) use client::DbLock;
pub(crate) use params::DbParams;

use crate::locks::{Algorithm, LocalBoxFuture, LockClient, ParamDoc, ParamError};
use crate::real::RealCluster;
use crate::sim::NodeCtx;
use std::rc::Rc;

impl Algorithm for DbParams {
    const NAME: &'static str = "db";
    const ABOUT: &'static str =
        "a lock row in a MySQL-like database: unique-row + cleaner, SELECT ... FOR UPDATE, or optimistic versions";

    fn params() -> Vec<ParamDoc> {
        params::DOCS.to_vec()
    }

    fn validate(&self) -> Result<(), ParamError> {
        DbParams::validate(self)
    }

    fn servers(&self) -> Vec<String> {
        let mut v = self.db_hosts(); // failover (issue 41): db-0, and db-1 with a standby
        if self.cleaner_timeout_ms.is_some() {
            v.push("cleaner".to_string());
        }
        if self.standby {
            v.push(standby::MANAGER.to_string()); // failover (issue 41)
        }
        v
    }

    /// The databases; the cleaner and the failover manager keep nothing on disk.
    fn disk_nodes(&self) -> Vec<String> {
        self.db_hosts()
    }

    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        let p = self.clone();
        if ctx.name() == "cleaner" {
            Box::pin(cleaner::cleaner_main(ctx, p))
        } else if ctx.name() == standby::MANAGER {
            Box::pin(manager::manager_main(ctx, p)) // failover (issue 41)
        } else {
            Box::pin(node::db_main(ctx, p))
        }
    }

    fn client(&self) -> Box<dyn LockClient> {
        Box::new(DbLock::new(self.clone()))
    }

    fn lease_ms(&self) -> Option<u64> {
        self.ttl()
    }

    /// A real MariaDB as `db-0`, the cleaner as locksim's code in a process (see
    /// [`real`]); `standby = true` is refused there.
    fn real(&self) -> Option<Rc<dyn RealCluster>> {
        Some(Rc::new(real::RealDb::new(self.clone())))
    }

    /// MariaDB's timeouts are whole seconds: the clients take them so too.
    fn for_real(&self) -> Self {
        real::for_real(self)
    }

    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        // The scheme's defaults, as the client runs them (`ttl_ms` stays null for a
        // unique row without a cleaner: no lease); a standby's defaults (issue 41).
        let mut table = crate::locks::table_of(self);
        self.standby_table(&mut table);
        let token = serde_json::to_value(self.token()).unwrap_or(serde_json::Value::Null);
        table.insert("token".into(), token);
        table.insert("ttl_ms".into(), self.ttl().into());
        table
    }

    fn fencing_token(&self) -> Option<&'static str> {
        match self.token() {
            params::Token::None => None,
            params::Token::Id => Some("the lock row's AUTO_INCREMENT id"),
            params::Token::Version => {
                Some("the row's version column, bumped in the locking transaction")
            }
            params::Token::Sequence => {
                Some("NEXTVAL of a sequence, drawn when the row lock is granted")
            }
        }
    }
}
