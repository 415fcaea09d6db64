//! `[lock]` for `algorithm = "db"`: the four lock schemes of the database articles and
//! the server settings they depend on, each a key.

use crate::locks::param::{self, KeyError, ParamDoc, Range};
use serde::{Deserialize, Serialize};

/// How a client uses the table as a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Scheme {
    /// `INSERT` a row (a unique index on the name refuses a second one), `DELETE` it to
    /// release; a cleaner deletes rows older than `cleaner_timeout_ms`.
    UniqueRow,
    /// `BEGIN; SELECT … FOR UPDATE` and keep the transaction open for the whole critical
    /// section; `COMMIT` releases the row lock.
    ForUpdate,
    /// Read the row's `version`, then `UPDATE … SET owner = me, version = version + 1
    /// WHERE version = read` (compare-and-set); rows older than `ttl_ms` may be taken over.
    Optimistic,
    /// MySQL's named locks: `SELECT GET_LOCK(name, wait)` (1: granted, 0: busy after the
    /// wait), `SELECT RELEASE_LOCK(name)` on the same connection. The lock is the
    /// session's: the server releases it when the session ends (connection closed, or
    /// idle past `wait_timeout`), whether or not the holder is still working.
    NamedLock,
}

/// What a unique-row or optimistic release matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Release {
    /// `WHERE name = ?`: whoever's row it is now (catalogue row 20).
    ByName,
    /// `WHERE name = ? AND owner = ?`, the owner value unique to this acquire.
    ByOwner,
}

/// When the server makes a commit durable (`innodb_flush_log_at_trx_commit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Fsync {
    /// Flush the redo log at every commit (`= 1`, the default).
    Always,
    /// Write at commit, flush once a second (`= 2`): a crash loses up to a second of
    /// commits and sequence values.
    None,
}

/// Where a fencing token comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Token {
    /// No token.
    None,
    /// unique-row: the inserted row's `AUTO_INCREMENT` id (`LAST_INSERT_ID()`), never
    /// reused because InnoDB never rolls an allocation back.
    Id,
    /// optimistic: the version the compare-and-set committed. for-update: `UPDATE … SET
    /// version = version + 1` inside the transaction — *unsound*: when the server rolls
    /// a dead holder's transaction back, the next holder gets the same version.
    Version,
    /// for-update: `SELECT *, NEXTVAL(lock_seq) … FOR UPDATE`, drawn when the row lock is
    /// granted; a sequence is not transactional, so a rolled-back holder's value is never
    /// handed out again. named-lock: `SELECT NEXTVAL(lock_seq)` on the holding session
    /// right after the grant (while that session lives, nobody else holds the lock).
    Sequence,
}

/// `[lock]` for `algorithm = "db"`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DbParams {
    /// The lock scheme [unique-row].
    #[serde(default = "default_scheme")]
    pub scheme: Scheme,
    /// unique-row: the cleaner deletes rows whose `updated_at` is older than this by the
    /// database's `NOW()` [none: no cleaner].
    pub cleaner_timeout_ms: Option<u64>,
    /// How often the cleaner runs, cleaner's local ms [100].
    #[serde(default = "default_cleaner_interval")]
    pub cleaner_interval_ms: u64,
    /// What a release matches [by-owner].
    #[serde(default = "default_release")]
    pub release: Release,
    /// `innodb_lock_wait_timeout`: a statement waiting for a row lock this long fails
    /// with error 1205, server ms [500].
    #[serde(default = "default_lock_wait_timeout")]
    pub lock_wait_timeout_ms: u64,
    /// `wait_timeout`: the server ends a session idle this long, rolling its transaction
    /// back, server ms [2000].
    #[serde(default = "default_wait_timeout")]
    pub wait_timeout_ms: u64,
    /// Redo log flushing [always].
    #[serde(default = "default_fsync")]
    pub fsync: Fsync,
    /// The fencing token [the scheme's sound one: id, sequence, version].
    pub token: Option<Token>,
    /// The lease the client believes it holds, for the workload's validity check
    /// [unique-row: cleaner_timeout_ms (none without a cleaner); for-update and
    /// named-lock: wait_timeout_ms; optimistic: 1000, also the takeover age].
    pub ttl_ms: Option<u64>,
    /// Per-statement deadline, client local ms [200] (a `SELECT … FOR UPDATE` gets
    /// `lock_wait_timeout_ms` more, as a driver's socket timeout must).
    #[serde(default = "default_request_timeout")]
    pub request_timeout_ms: u64,
    /// Delay between acquire attempts, client local ms [[20, 60]].
    #[serde(default = "default_retry_delay")]
    pub retry_delay_ms: Range<u64>,
    /// Clock-drift allowance subtracted from the lease: `ttl × factor + 2 ms` [0.01].
    #[serde(default = "default_drift_factor")]
    pub drift_factor: f64,
    // --- failover (issue 41): a replicated standby; defaults and checks in standby_params.rs ---
    /// Run a standby `db-1` and the failover manager `db-manager` [false].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub standby: bool,
    /// standby: when a commit is answered [async].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication: Option<super::standby::Replication>,
    /// standby: delay before the primary ships a commit's redo, ms [[0, 50]].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication_lag_ms: Option<Range<u64>>,
    /// standby: the manager fails over after the primary is down this long, ms [1000].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down_after_ms: Option<u64>,
    /// semi-sync: `rpl_semi_sync_master_timeout`, ms [10000].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semi_sync_timeout_ms: Option<u64>,
    // --- end failover ---
}

fn default_scheme() -> Scheme {
    Scheme::UniqueRow
}
fn default_cleaner_interval() -> u64 {
    100
}
fn default_release() -> Release {
    Release::ByOwner
}
fn default_lock_wait_timeout() -> u64 {
    500
}
fn default_wait_timeout() -> u64 {
    2000
}
fn default_fsync() -> Fsync {
    Fsync::Always
}
fn default_request_timeout() -> u64 {
    200
}
fn default_retry_delay() -> Range<u64> {
    Range([20, 60])
}
fn default_drift_factor() -> f64 {
    0.01
}

impl DbParams {
    /// MariaDB's own server defaults (`innodb_lock_wait_timeout` 50 s, `wait_timeout`
    /// 8 hours, a flush at every commit): what `locksim serve db` runs with, so a real
    /// client meets the timeouts it would meet on a stock server. Simulations use the
    /// `[lock]` table's shorter defaults.
    pub(crate) fn mariadb_defaults() -> DbParams {
        DbParams {
            scheme: default_scheme(),
            cleaner_timeout_ms: None,
            cleaner_interval_ms: default_cleaner_interval(),
            release: default_release(),
            lock_wait_timeout_ms: 50_000,
            wait_timeout_ms: 28_800_000,
            fsync: Fsync::Always,
            token: None,
            ttl_ms: None,
            request_timeout_ms: default_request_timeout(),
            retry_delay_ms: default_retry_delay(),
            drift_factor: default_drift_factor(),
            standby: false,
            replication: None,
            replication_lag_ms: None,
            down_after_ms: None,
            semi_sync_timeout_ms: None,
        }
    }
}

/// The optimistic scheme's lease and takeover age when `ttl_ms` is not given.
const OPTIMISTIC_TTL_MS: u64 = 1000;

impl DbParams {
    /// The fencing token, with the scheme's default applied.
    pub(crate) fn token(&self) -> Token {
        self.token.unwrap_or(match self.scheme {
            Scheme::UniqueRow => Token::Id,
            Scheme::ForUpdate | Scheme::NamedLock => Token::Sequence,
            Scheme::Optimistic => Token::Version,
        })
    }

    /// The lease the client believes it holds, with the scheme's default applied.
    pub(crate) fn ttl(&self) -> Option<u64> {
        self.ttl_ms.or(match self.scheme {
            Scheme::UniqueRow => self.cleaner_timeout_ms,
            Scheme::ForUpdate | Scheme::NamedLock => Some(self.wait_timeout_ms),
            Scheme::Optimistic => Some(OPTIMISTIC_TTL_MS),
        })
    }

    /// Check values serde cannot.
    pub(crate) fn validate(&self) -> Result<(), KeyError> {
        if let Some(t) = self.cleaner_timeout_ms {
            if self.scheme != Scheme::UniqueRow {
                return Err(KeyError::new(
                    "cleaner_timeout_ms",
                    "only valid with scheme = \"unique-row\" (the cleaner deletes lock rows)",
                ));
            }
            param::positive("cleaner_timeout_ms", t)?;
        }
        if self.scheme == Scheme::ForUpdate && self.release == Release::ByName {
            return Err(KeyError::new(
                "release",
                "for-update releases with COMMIT; expected \"by-owner\" (the default)",
            ));
        }
        if self.scheme == Scheme::NamedLock && self.release == Release::ByName {
            return Err(KeyError::new(
                "release",
                "named-lock releases with RELEASE_LOCK on its own session; expected \"by-owner\" (the default)",
            ));
        }
        let ok = match (self.scheme, self.token()) {
            (_, Token::None) => true,
            (Scheme::UniqueRow, t) => t == Token::Id,
            (Scheme::ForUpdate, t) => matches!(t, Token::Sequence | Token::Version),
            (Scheme::Optimistic, t) => t == Token::Version,
            (Scheme::NamedLock, t) => t == Token::Sequence,
        };
        if !ok {
            let expected = match self.scheme {
                Scheme::UniqueRow => "\"id\" or \"none\"",
                Scheme::ForUpdate => "\"sequence\", \"version\" or \"none\"",
                Scheme::Optimistic => "\"version\" or \"none\"",
                Scheme::NamedLock => "\"sequence\" or \"none\"",
            };
            return Err(KeyError::new(
                "token",
                format!("expected {expected} for this scheme"),
            ));
        }
        param::positive("cleaner_interval_ms", self.cleaner_interval_ms)?;
        param::positive("lock_wait_timeout_ms", self.lock_wait_timeout_ms)?;
        param::positive("wait_timeout_ms", self.wait_timeout_ms)?;
        if let Some(t) = self.ttl_ms {
            param::positive("ttl_ms", t)?;
        }
        param::positive("request_timeout_ms", self.request_timeout_ms)?;
        param::range("retry_delay_ms", &self.retry_delay_ms)?;
        param::fraction("drift_factor", self.drift_factor)?;
        self.validate_standby() // failover (issue 41)
    }
}

/// The keys, for `locksim list`.
pub(crate) const DOCS: &[ParamDoc] = &[
    ParamDoc::new("scheme", "\"unique-row\"", "unique-row (INSERT to lock, DELETE to unlock) | for-update (SELECT ... FOR UPDATE in an open transaction, COMMIT to unlock) | optimistic (compare-and-set on a version column) | named-lock (SELECT GET_LOCK(name, wait), RELEASE_LOCK on the same connection; the server releases it when the session ends)"),
    ParamDoc::new("cleaner_timeout_ms", "", "unique-row: a cleaner node deletes rows with updated_at older than this by the database's NOW() (absent: no cleaner)"),
    ParamDoc::new("cleaner_interval_ms", "100", "how often the cleaner runs, its local ms"),
    ParamDoc::new("release", "\"by-owner\"", "by-owner (DELETE/UPDATE ... AND owner = me) | by-name (whoever's row it is now); unique-row and optimistic"),
    ParamDoc::new("lock_wait_timeout_ms", "500", "innodb_lock_wait_timeout: a statement waiting this long for a row lock fails with 1205"),
    ParamDoc::new("wait_timeout_ms", "2000", "wait_timeout: the server ends a session idle this long and rolls its transaction back"),
    ParamDoc::new("fsync", "\"always\"", "always (flush the redo log at commit) | none (flush once a second: a crash loses up to a second of commits)"),
    ParamDoc::new("token", "", "none | id (unique-row, the default) | sequence (for-update and named-lock, the default; named-lock: SELECT NEXTVAL(lock_seq) on the holding session after the grant) | version (optimistic, the default; for-update: bumped inside the transaction, unsound)"),
    ParamDoc::new("ttl_ms", "", "the lease the client believes it holds (default: cleaner_timeout_ms, wait_timeout_ms for for-update and named-lock, or 1000 for optimistic, which is also its takeover age)"),
    ParamDoc::new("request_timeout_ms", "200", "per-statement deadline, client local ms (FOR UPDATE: plus lock_wait_timeout_ms)"),
    ParamDoc::new("retry_delay_ms", "[20, 60]", "delay between acquire attempts, client local ms"),
    ParamDoc::new("drift_factor", "0.01", "lease margin: validity = ttl - elapsed - (ttl * factor + 2 ms)"),
    // failover (issue 41): the standby's keys (standby.rs, standby_params.rs)
    ParamDoc::new("standby", "false", "run db-1, an asynchronous standby of db-0, and db-manager, which promotes it when db-0 has been unreachable for down_after_ms (MHA/orchestrator); clients know both hosts and move on at a failed connect or error 1290 (read-only)"),
    ParamDoc::new("replication", "\"async\"", "standby: async (a commit is answered before the standby has it: a failover can lose it) | semi-sync (answered once the standby acknowledged it, AFTER_SYNC)"),
    ParamDoc::new("replication_lag_ms", "[0, 50]", "standby: how long a commit's redo waits before the primary ships it, beyond the network"),
    ParamDoc::new("down_after_ms", "1000", "standby: the manager promotes the standby once the primary has been unreachable this long"),
    ParamDoc::new("semi_sync_timeout_ms", "10000", "semi-sync: rpl_semi_sync_master_timeout, how long a commit waits for the standby before the primary falls back to async (set it longer than the run to keep the guarantee)"),
];
