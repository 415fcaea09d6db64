//! The standby's `[lock]` keys on [`DbParams`]: defaults applied, checks, the host list
//! (the keys and their meaning: [`standby`](super::standby)).

use super::params::DbParams;
use super::standby::{
    Replication, Standby, DEFAULT_DOWN_AFTER_MS, DEFAULT_LAG_MS, DEFAULT_SEMI_SYNC_TIMEOUT_MS,
    PRIMARY, STANDBY,
};
use crate::locks::param::{self, KeyError};

/// The `[lock]` keys that need `standby = true`.
const STANDBY_KEYS: [&str; 4] = [
    "replication",
    "replication_lag_ms",
    "down_after_ms",
    "semi_sync_timeout_ms",
];

impl DbParams {
    /// The standby's settings, if there is one.
    pub(crate) fn standby(&self) -> Option<Standby> {
        self.standby.then(|| Standby {
            replication: self.replication.unwrap_or(Replication::Async),
            lag_ms: self.replication_lag_ms.map_or(DEFAULT_LAG_MS, |r| r.0),
            down_after_ms: self.down_after_ms.unwrap_or(DEFAULT_DOWN_AFTER_MS),
            semi_sync_timeout_ms: self
                .semi_sync_timeout_ms
                .unwrap_or(DEFAULT_SEMI_SYNC_TIMEOUT_MS),
        })
    }

    /// The database servers a client knows, in the order it tries them (a JDBC URL's
    /// host list with sequential failover).
    pub(crate) fn db_hosts(&self) -> Vec<String> {
        let mut v = vec![PRIMARY.to_string()];
        if self.standby {
            v.push(STANDBY.to_string());
        }
        v
    }

    /// Check the standby's keys: given only with `standby = true`, values in range.
    pub(crate) fn validate_standby(&self) -> Result<(), KeyError> {
        let set = [
            self.replication.is_some(),
            self.replication_lag_ms.is_some(),
            self.down_after_ms.is_some(),
            self.semi_sync_timeout_ms.is_some(),
        ];
        if !self.standby {
            if let Some((k, _)) = STANDBY_KEYS.iter().zip(set).find(|(_, s)| *s) {
                return Err(KeyError::new(k, "only valid with standby = true"));
            }
            return Ok(());
        }
        if let Some(r) = &self.replication_lag_ms {
            param::range("replication_lag_ms", r)?;
        }
        if let Some(ms) = self.down_after_ms {
            param::positive("down_after_ms", ms)?;
            param::at_most_an_hour("down_after_ms", ms)?;
        }
        if let Some(ms) = self.semi_sync_timeout_ms {
            param::positive("semi_sync_timeout_ms", ms)?;
            param::at_most_an_hour("semi_sync_timeout_ms", ms)?;
        }
        Ok(())
    }

    /// The standby's keys with their defaults, for the effective `[lock]` table.
    pub(crate) fn standby_table(&self, table: &mut serde_json::Map<String, serde_json::Value>) {
        use serde_json::json;
        table.insert("standby".into(), json!(self.standby));
        // Without a standby its keys mean nothing: absent, as in the scenario.
        let Some(s) = self.standby() else {
            return;
        };
        table.insert("replication".into(), json!(s.replication));
        table.insert("replication_lag_ms".into(), json!(s.lag_ms));
        table.insert("down_after_ms".into(), json!(s.down_after_ms));
        table.insert("semi_sync_timeout_ms".into(), json!(s.semi_sync_timeout_ms));
    }
}
