//! The `[lock]` keys of a replicated standby (`standby = true`), named after
//! `redis-replicated`'s keys for the same things, with their defaults and checks.
//!
//! | key | default | meaning |
//! |---|---|---|
//! | `standby` | false | run `db-1`, a standby replicating `db-0`, and `db-manager`, which fails over |
//! | `replication` | `"async"` | `async`, or `semi-sync` (`rpl_semi_sync_master_wait_point = AFTER_SYNC`) |
//! | `replication_lag_ms` | [0, 50] | how long a commit's redo waits before the primary ships it, beyond the network |
//! | `down_after_ms` | 1000 | the manager promotes the standby after seeing the primary down this long |
//! | `semi_sync_timeout_ms` | 10000 | `rpl_semi_sync_master_timeout`: a commit waits this long for the standby, then the primary falls back to async |

use serde::{Deserialize, Serialize};

/// The first primary.
pub(crate) const PRIMARY: &str = "db-0";
/// The standby.
pub(crate) const STANDBY: &str = "db-1";
/// The failover manager.
pub(crate) const MANAGER: &str = "db-manager";

/// When the primary answers a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Replication {
    /// At once: the standby gets the commit later (MariaDB's default).
    Async,
    /// Once the standby has acknowledged receiving the commit's redo (semi-synchronous
    /// replication, `AFTER_SYNC`), or after `semi_sync_timeout_ms`, when the primary
    /// falls back to async until the standby has caught up.
    SemiSync,
}

/// The standby's settings, with defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Standby {
    /// When a commit is answered.
    pub replication: Replication,
    /// Delay before the primary ships a commit's redo, its local ms.
    pub lag_ms: [u64; 2],
    /// The manager fails over after the primary has been unreachable this long, ms.
    pub down_after_ms: u64,
    /// `rpl_semi_sync_master_timeout`, ms.
    pub semi_sync_timeout_ms: u64,
}

/// `replication_lag_ms`'s default.
pub(crate) const DEFAULT_LAG_MS: [u64; 2] = [0, 50];
/// `down_after_ms`'s default (as `redis-replicated`'s).
pub(crate) const DEFAULT_DOWN_AFTER_MS: u64 = 1000;
/// `semi_sync_timeout_ms`'s default: MariaDB's `rpl_semi_sync_master_timeout`, 10 s.
pub(crate) const DEFAULT_SEMI_SYNC_TIMEOUT_MS: u64 = 10_000;
