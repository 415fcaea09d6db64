//! Database locks (`algorithm = "db"`): the most common distributed lock in practice, a
//! row in a relational database, in the three schemes of the MySQL articles — a unique
//! row (`INSERT` to lock, `DELETE` to unlock, a cleaner deleting rows older than a
//! timeout), `SELECT … FOR UPDATE` in a transaction held open for the critical section,
//! and optimistic concurrency on a `version` column. Catalogue row 20 and the
//! `sims/db-*.toml` scenarios test the articles' claim "reliability: ZooKeeper > cache >
//! database" against the same checks as every other lock.
//!
//! - [`model::Db`]: the server as a pure state machine (one InnoDB-like table, sessions,
//!   transactions, FIFO row-lock queues, `innodb_lock_wait_timeout`, `wait_timeout`, a
//!   redo log);
//! - [`node`]: its network loop on `db-0` (JSON statements in length-prefixed frames,
//!   MySQL error codes), durability on the node's disk;
//! - [`cleaner`]: the scheduled job on node `cleaner`;
//! - [`DbLock`]: the client, every scheme and variant a parameter ([`params`]).
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
//! There is no replicated standby (DESIGN's `standby` key, the articles' "two databases"):
//! one server, so the key is unknown rather than accepted and ignored.

pub(crate) mod cleaner;
mod client;
pub(crate) mod model;
pub(crate) mod node;
pub(crate) mod params;
mod read_reply;
mod session;
pub(crate) mod sql;

pub(crate) use client::DbLock;
pub(crate) use params::DbParams;

use crate::locks::{Algorithm, LocalBoxFuture, LockClient, ParamDoc, ParamError};
use crate::sim::NodeCtx;

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
        let mut v = vec!["db-0".to_string()];
        if self.cleaner_timeout_ms.is_some() {
            v.push("cleaner".to_string());
        }
        v
    }

    /// The database; the cleaner keeps nothing on disk.
    fn disk_nodes(&self) -> Vec<String> {
        vec!["db-0".to_string()]
    }

    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        let p = self.clone();
        if ctx.name() == "cleaner" {
            Box::pin(cleaner::cleaner_main(ctx, p))
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

    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        crate::locks::table_of(self)
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
