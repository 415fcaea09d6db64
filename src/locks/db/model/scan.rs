//! `WHERE` clauses over `method_lock` and the statements that use them: which rows
//! match, which index (if any) narrows the search, and so which locks a locking
//! statement takes — one row through `name` (UNIQUE) or `id` (PRIMARY KEY), the whole
//! table otherwise.

use super::*;

/// A column of `method_lock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Field {
    /// `id` (PRIMARY KEY).
    Id,
    /// `name` (UNIQUE KEY).
    Name,
    /// `owner` (no index).
    Owner,
    /// `version` (no index).
    Version,
    /// `updated_at` (no index).
    UpdatedAt,
}

impl Field {
    /// Every column, in the table's order (`SELECT *`).
    pub(crate) const ALL: [Field; 5] = [
        Field::Id,
        Field::Name,
        Field::Owner,
        Field::Version,
        Field::UpdatedAt,
    ];

    /// The column's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Field::Id => "id",
            Field::Name => "name",
            Field::Owner => "owner",
            Field::Version => "version",
            Field::UpdatedAt => "updated_at",
        }
    }

    /// The column named `s` (case-insensitive, as MySQL's column names are).
    pub(crate) fn named(s: &str) -> Option<Field> {
        Field::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum CmpOp {
    /// `=`
    Eq,
    /// `<>`, `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// The right-hand side of a comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Operand {
    /// A string literal.
    Str(String),
    /// An integer literal.
    Int(i64),
    /// `NULL`: no comparison with it is true.
    Null,
    /// `NOW(3) - INTERVAL n MICROSECOND` (n = 0: `NOW(3)`), the server's wall clock at
    /// the statement.
    NowMinusUs(i64),
}

/// A `WHERE` clause.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Filter {
    /// No `WHERE`: every row.
    All,
    /// `field op operand`.
    Cmp(Field, CmpOp, Operand),
    /// Every part holds.
    And(Vec<Filter>),
    /// Some part holds.
    Or(Vec<Filter>),
}

/// How a statement reaches its rows.
enum Access {
    /// Through the unique index on `name`: at most this row.
    Name(String),
    /// Through the primary key: at most the row with this id.
    Id(i64),
    /// A full scan.
    Scan,
}

impl Filter {
    /// Whether `row` matches, at the server's wall clock `wall_ms`.
    pub(crate) fn matches(&self, row: &Row, wall_ms: i64) -> bool {
        match self {
            Filter::All => true,
            Filter::And(parts) => parts.iter().all(|p| p.matches(row, wall_ms)),
            Filter::Or(parts) => parts.iter().any(|p| p.matches(row, wall_ms)),
            Filter::Cmp(field, op, value) => {
                use std::cmp::Ordering;
                let ord: Option<Ordering> = match (field, value) {
                    (_, Operand::Null) => None,
                    (Field::Name, Operand::Str(s)) => Some(row.name.as_str().cmp(s)),
                    (Field::Owner, Operand::Str(s)) => Some(row.owner.as_str().cmp(s)),
                    (Field::Id, Operand::Int(n)) => Some((row.id as i128).cmp(&(*n as i128))),
                    (Field::Version, Operand::Int(n)) => {
                        Some((row.version as i128).cmp(&(*n as i128)))
                    }
                    (Field::UpdatedAt, Operand::NowMinusUs(us)) => {
                        let t = wall_ms as i128 * 1000 - *us as i128;
                        Some((row.updated_at_ms as i128 * 1000).cmp(&t))
                    }
                    // The SQL front-end only builds comparisons of matching types.
                    _ => None,
                };
                ord.is_some_and(|o| match op {
                    CmpOp::Eq => o == Ordering::Equal,
                    CmpOp::Ne => o != Ordering::Equal,
                    CmpOp::Lt => o == Ordering::Less,
                    CmpOp::Le => o != Ordering::Greater,
                    CmpOp::Gt => o == Ordering::Greater,
                    CmpOp::Ge => o != Ordering::Less,
                })
            }
        }
    }

    /// The index an equality at the top level of the clause lets the server use.
    fn access(&self) -> Access {
        let parts: &[Filter] = match self {
            Filter::And(parts) => parts,
            one => std::slice::from_ref(one),
        };
        let mut id = None;
        for p in parts {
            match p {
                Filter::Cmp(Field::Name, CmpOp::Eq, Operand::Str(s)) => {
                    return Access::Name(s.clone())
                }
                Filter::Cmp(Field::Id, CmpOp::Eq, Operand::Int(n)) => id = Some(*n),
                _ => {}
            }
        }
        id.map_or(Access::Scan, Access::Id)
    }

    /// Whether the clause picks rows by age (`updated_at < NOW(3) - INTERVAL …`): a
    /// statement that then deletes or takes over a held row ends its holder's hold.
    pub(crate) fn picks_stale(&self) -> bool {
        match self {
            Filter::Cmp(Field::UpdatedAt, CmpOp::Lt | CmpOp::Le, Operand::NowMinusUs(_)) => true,
            Filter::And(parts) | Filter::Or(parts) => parts.iter().any(Filter::picks_stale),
            _ => false,
        }
    }
}

impl Db {
    /// Lock what a locking statement with `filter` needs: the row an index finds, or
    /// the table and every row. `Err`: the lock to wait for first. `Ok`: the names of
    /// the candidate rows, now locked.
    fn lock_for(&mut self, conn: ConnId, filter: &Filter) -> Result<Vec<String>, LockKey> {
        let name = match filter.access() {
            Access::Name(n) => Some(n),
            Access::Id(id) => Some(
                self.rows
                    .values()
                    .find(|r| r.id as i128 == id as i128)
                    .map_or_else(String::new, |r| r.name.clone()),
            ),
            Access::Scan => None,
        };
        match name {
            Some(n) => {
                if let Some(k) = self.row_blocker(conn, &n) {
                    return Err(k);
                }
                if !self.rows.contains_key(&n) {
                    return Ok(Vec::new());
                }
                self.take_lock(conn, LockKey::Row(n.clone()));
                Ok(vec![n])
            }
            None => {
                if let Some(k) = self.table_blocker(conn) {
                    return Err(k);
                }
                self.take_lock(conn, LockKey::Table);
                let names: Vec<String> = self.rows.keys().cloned().collect();
                for n in &names {
                    self.take_lock(conn, LockKey::Row(n.clone()));
                }
                Ok(names)
            }
        }
    }

    /// Rows matching `filter` among `names`, in primary-key order.
    fn matching(&self, names: &[String], filter: &Filter, now: Now) -> Vec<Row> {
        let mut rows: Vec<Row> = names
            .iter()
            .filter_map(|n| self.rows.get(n))
            .filter(|r| filter.matches(r, now.wall_ms))
            .cloned()
            .collect();
        rows.sort_by_key(|r| r.id);
        rows
    }

    /// `SELECT … WHERE filter [FOR UPDATE]`.
    pub(super) fn query(
        &mut self,
        conn: ConnId,
        filter: &Filter,
        for_update: bool,
        nextval: Option<&str>,
        now: Now,
    ) -> Step {
        let rows = if for_update {
            match self.lock_for(conn, filter) {
                Err(k) => return Step::Wait(k),
                Ok(names) => self.matching(&names, filter, now),
            }
        } else {
            // A consistent read: the committed rows, including those another open
            // transaction deleted and excluding those it inserted.
            let mut names: BTreeSet<String> = self.rows.keys().cloned().collect();
            for s in self.sessions.values() {
                names.extend(s.undo.iter().map(|(n, _)| n.clone()));
            }
            let mut rows: Vec<Row> = names
                .iter()
                .filter_map(|n| self.committed_view(conn, n))
                .filter(|r| filter.matches(r, now.wall_ms))
                .collect();
            rows.sort_by_key(|r| r.id);
            rows
        };
        let nextvals = match nextval {
            Some(seq) => rows.iter().map(|_| self.next_value(seq)).collect(),
            None => Vec::new(),
        };
        Step::Done(Reply::Rows { rows, nextvals })
    }

    /// `UPDATE … SET set WHERE filter`: rows changed. Taking over a held row picked by
    /// age ends its holder's hold.
    pub(super) fn update_where(
        &mut self,
        conn: ConnId,
        filter: &Filter,
        set: &Set,
        now: Now,
    ) -> Step {
        let names = match self.lock_for(conn, filter) {
            Err(k) => return Step::Wait(k),
            Ok(names) => names,
        };
        let mut changed = 0;
        for old in self.matching(&names, filter, now) {
            let new = set.applied_to(&old, now.wall_ms);
            // MySQL counts changed rows: setting what is there affects none.
            if new == old {
                continue;
            }
            if filter.picks_stale() && !old.owner.is_empty() {
                let s = self.sessions.get_mut(&conn).expect("live session");
                s.expired.push(old.name.clone());
            }
            self.write(conn, &old.name, Some(new));
            changed += 1;
        }
        Step::Done(Reply::ok(changed))
    }

    /// `DELETE … WHERE filter`: rows deleted. Rows picked by age are holds the server
    /// ends (the cleaner).
    pub(super) fn delete_where(&mut self, conn: ConnId, filter: &Filter, now: Now) -> Step {
        let names = match self.lock_for(conn, filter) {
            Err(k) => return Step::Wait(k),
            Ok(names) => names,
        };
        let gone = self.matching(&names, filter, now);
        for r in &gone {
            self.write(conn, &r.name, None);
            if filter.picks_stale() {
                let s = self.sessions.get_mut(&conn).expect("live session");
                s.expired.push(r.name.clone());
            }
        }
        Step::Done(Reply::ok(gone.len() as u64))
    }
}
