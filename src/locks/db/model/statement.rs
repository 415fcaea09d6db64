//! The statements the server runs, one per wire request, and the SQL each stands for.

use super::*;

/// A statement: the wire protocol's request, one JSON object per frame. Each variant is
/// one SQL statement against `method_lock` ([`Statement::sql`] prints it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub(crate) enum Statement {
    /// `SELECT 1`: a connection pool's liveness test.
    Ping,
    /// `BEGIN`.
    Begin,
    /// `COMMIT` (outside a transaction: nothing to do, OK).
    Commit,
    /// `ROLLBACK`.
    Rollback,
    /// `INSERT INTO method_lock (name, owner, version, updated_at) VALUES (?, ?, 0, NOW(3))`
    Insert {
        /// Lock name.
        name: String,
        /// Owner value.
        owner: String,
    },
    /// `SELECT *[, NEXTVAL(seq)] FROM method_lock WHERE name = ? [FOR UPDATE]`. The
    /// select list is evaluated for the row found, after its lock is granted: one
    /// `NEXTVAL` per row returned, atomically with the grant.
    Select {
        /// Lock name.
        name: String,
        /// A locking read.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_update: bool,
        /// `NEXTVAL(seq)` in the select list.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nextval: Option<String>,
    },
    /// `UPDATE method_lock SET … WHERE name = ? [AND …]`
    Update {
        /// Lock name.
        name: String,
        /// Further conditions.
        #[serde(default)]
        cond: Cond,
        /// What to set.
        set: Set,
    },
    /// `DELETE FROM method_lock WHERE name = ? [AND owner = ?]`
    Delete {
        /// Lock name.
        name: String,
        /// `AND owner = ?`
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
    },
    /// `DELETE FROM method_lock WHERE updated_at < NOW(3) - INTERVAL ? * 1000
    /// MICROSECOND`: the cleaner. `NOW()` is the *server's* wall clock.
    DeleteOlder {
        /// Age, ms.
        ms: u64,
    },
    /// `SELECT NEXTVAL(seq)`: a sequence (MariaDB), not transactional.
    NextVal {
        /// Sequence name.
        seq: String,
    },
}

impl Statement {
    /// The statement as SQL, for traces and messages.
    pub(crate) fn sql(&self) -> String {
        let q = |s: &str| format!("'{}'", s.replace('\'', "''"));
        match self {
            Statement::Ping => "SELECT 1".into(),
            Statement::Begin => "BEGIN".into(),
            Statement::Commit => "COMMIT".into(),
            Statement::Rollback => "ROLLBACK".into(),
            Statement::Insert { name, owner } => format!(
                "INSERT INTO method_lock (name, owner, version, updated_at) VALUES ({}, {}, 0, NOW(3))",
                q(name),
                q(owner)
            ),
            Statement::Select {
                name,
                for_update,
                nextval,
            } => format!(
                "SELECT *{} FROM method_lock WHERE name = {}{}",
                nextval
                    .as_ref()
                    .map_or(String::new(), |s| format!(", NEXTVAL({s})")),
                q(name),
                if *for_update { " FOR UPDATE" } else { "" }
            ),
            Statement::Update { name, cond, set } => {
                let mut sets = Vec::new();
                if let Some(o) = &set.owner {
                    sets.push(format!("owner = {}", q(o)));
                }
                if set.bump_version {
                    sets.push("version = version + 1".into());
                }
                if set.touch {
                    sets.push("updated_at = NOW(3)".into());
                }
                let mut w = format!("name = {}", q(name));
                if let Some(o) = &cond.owner {
                    w.push_str(&format!(" AND owner = {}", q(o)));
                }
                if let Some(v) = cond.version {
                    w.push_str(&format!(" AND version = {v}"));
                }
                if let Some(ms) = cond.free_or_older_than_ms {
                    w.push_str(&format!(
                        " AND (owner = '' OR updated_at < NOW(3) - INTERVAL {ms} * 1000 MICROSECOND)"
                    ));
                }
                format!("UPDATE method_lock SET {} WHERE {w}", sets.join(", "))
            }
            Statement::Delete { name, owner } => match owner {
                None => format!("DELETE FROM method_lock WHERE name = {}", q(name)),
                Some(o) => format!(
                    "DELETE FROM method_lock WHERE name = {} AND owner = {}",
                    q(name),
                    q(o)
                ),
            },
            Statement::DeleteOlder { ms } => format!(
                "DELETE FROM method_lock WHERE updated_at < NOW(3) - INTERVAL {ms} * 1000 MICROSECOND"
            ),
            Statement::NextVal { seq } => format!("SELECT NEXTVAL({seq})"),
        }
    }
}
