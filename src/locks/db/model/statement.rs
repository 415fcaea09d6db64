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
    /// `SELECT … FROM method_lock [WHERE …] [FOR UPDATE]`: every matching row.
    Query {
        /// The `WHERE` clause.
        filter: Filter,
        /// A locking read.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        for_update: bool,
        /// `NEXTVAL(seq)` in the select list: one value per row returned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nextval: Option<String>,
    },
    /// `UPDATE method_lock SET … [WHERE …]`
    UpdateWhere {
        /// The `WHERE` clause.
        filter: Filter,
        /// What to set.
        set: Set,
    },
    /// `DELETE FROM method_lock [WHERE …]`
    DeleteWhere {
        /// The `WHERE` clause.
        filter: Filter,
    },
    /// `SELECT GET_LOCK(name, timeout)`.
    GetLock {
        /// Lock name.
        name: String,
        /// How long to wait, ns; negative: for ever.
        timeout_ns: i64,
    },
    /// `SELECT RELEASE_LOCK(name)`.
    ReleaseLock {
        /// Lock name.
        name: String,
    },
    /// `SELECT IS_FREE_LOCK(name)`.
    IsFreeLock {
        /// Lock name.
        name: String,
    },
    /// `SELECT IS_USED_LOCK(name)`.
    IsUsedLock {
        /// Lock name.
        name: String,
    },
    /// `SELECT RELEASE_ALL_LOCKS()`.
    ReleaseAllLocks,
}

impl Statement {
    /// Whether the statement reads or writes `method_lock` (with autocommit off, such a
    /// statement opens a transaction).
    pub(crate) fn touches_table(&self) -> bool {
        matches!(
            self,
            Statement::Insert { .. }
                | Statement::Select { .. }
                | Statement::Update { .. }
                | Statement::Delete { .. }
                | Statement::DeleteOlder { .. }
                | Statement::Query { .. }
                | Statement::UpdateWhere { .. }
                | Statement::DeleteWhere { .. }
        )
    }

    /// When a wait that starts at `now_ns` ends: `GET_LOCK`'s own timeout, else the
    /// session's lock wait timeout.
    pub(crate) fn wait_deadline(&self, now_ns: i64, lock_wait_ns: i64) -> i64 {
        match self {
            Statement::GetLock { timeout_ns, .. } if *timeout_ns < 0 => i64::MAX,
            Statement::GetLock { timeout_ns, .. } => now_ns.saturating_add(*timeout_ns),
            _ => now_ns.saturating_add(lock_wait_ns),
        }
    }

    /// The reply when the wait ended by its deadline: `GET_LOCK` returns 0, anything
    /// else fails with 1205.
    pub(crate) fn timed_out(&self) -> Reply {
        match self {
            Statement::GetLock { .. } => Reply::Scalar(Some(0)),
            _ => Reply::error(
                ER_LOCK_WAIT_TIMEOUT,
                "ER_LOCK_WAIT_TIMEOUT",
                "Lock wait timeout exceeded; try restarting transaction",
            ),
        }
    }

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
                format!("UPDATE method_lock SET {} WHERE {w}", set.sql())
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
            Statement::Query {
                filter,
                for_update,
                nextval,
            } => format!(
                "SELECT *{} FROM method_lock{}{}",
                nextval
                    .as_ref()
                    .map_or(String::new(), |s| format!(", NEXTVAL({s})")),
                where_sql(filter),
                if *for_update { " FOR UPDATE" } else { "" }
            ),
            Statement::UpdateWhere { filter, set } => {
                format!("UPDATE method_lock SET {}{}", set.sql(), where_sql(filter))
            }
            Statement::DeleteWhere { filter } => {
                format!("DELETE FROM method_lock{}", where_sql(filter))
            }
            Statement::GetLock { name, timeout_ns } => {
                format!("SELECT GET_LOCK({}, {})", q(name), *timeout_ns as f64 / 1e9)
            }
            Statement::ReleaseLock { name } => format!("SELECT RELEASE_LOCK({})", q(name)),
            Statement::IsFreeLock { name } => format!("SELECT IS_FREE_LOCK({})", q(name)),
            Statement::IsUsedLock { name } => format!("SELECT IS_USED_LOCK({})", q(name)),
            Statement::ReleaseAllLocks => "SELECT RELEASE_ALL_LOCKS()".into(),
        }
    }
}

/// ` WHERE …` for a filter (empty for every row).
fn where_sql(f: &Filter) -> String {
    fn expr(f: &Filter) -> String {
        match f {
            Filter::All => "TRUE".into(),
            Filter::And(parts) => parts.iter().map(expr).collect::<Vec<_>>().join(" AND "),
            Filter::Or(parts) => format!(
                "({})",
                parts.iter().map(expr).collect::<Vec<_>>().join(" OR ")
            ),
            Filter::Cmp(field, op, value) => {
                let op = match op {
                    CmpOp::Eq => "=",
                    CmpOp::Ne => "<>",
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                };
                let value = match value {
                    Operand::Str(s) => format!("'{}'", s.replace('\'', "''")),
                    Operand::Int(n) => n.to_string(),
                    Operand::Null => "NULL".into(),
                    Operand::NowMinusUs(us) => format!("NOW(3) - INTERVAL {us} MICROSECOND"),
                };
                format!("{} {op} {value}", field.name())
            }
        }
    }
    match f {
        Filter::All => String::new(),
        f => format!(" WHERE {}", expr(f)),
    }
}

impl Set {
    /// The `SET` clause's assignments as SQL.
    fn sql(&self) -> String {
        let mut sets = Vec::new();
        if let Some(o) = &self.owner {
            sets.push(format!("owner = '{}'", o.replace('\'', "''")));
        }
        if self.bump_version {
            sets.push("version = version + 1".to_string());
        }
        if self.touch {
            sets.push("updated_at = NOW(3)".to_string());
        }
        sets.join(", ")
    }
}
