//! The db model's SQL front-end: statement text in, MySQL's reply out. Each statement
//! is parsed with `sqlparser` (MySQL dialect) and translated into the model's
//! [`Statement`]s, or answered here when it only concerns the session (`SET`,
//! `SELECT @@…`, `USE`); the model's reply is projected into a [`QueryResult`] whose
//! columns are named as MariaDB names them (`*` is `id, name, owner, version,
//! updated_at`; an expression is named by its text as written; `AS` renames).
//! Anything else gets MySQL's error, never a silent success: 1064 for what does not
//! parse, 1146 for other tables, 1054 for unknown columns, 1235 (`ER_NOT_SUPPORTED_YET`)
//! for valid SQL the model does not run.
//!
//! Deliberate differences from MariaDB 10.11, and why:
//!
//! - One database, `locksim`, selected from the start (no `No database selected`): the
//!   model has one table, and a client that names no database should still reach it.
//! - `CREATE TABLE method_lock` answers as for an existing table (1050, or OK with one
//!   warning for `IF NOT EXISTS`) whatever columns it lists: the model's table is fixed.
//!   Other tables, and every other DDL, are 1235.
//! - `INSERT` sets `version` 0 and `updated_at` `NOW(3)`; other values for them, several
//!   rows, `INSERT … SELECT`, `IGNORE`, `ON DUPLICATE KEY` are 1235 (no seed writes them).
//! - `UPDATE … SET` takes `owner = '…'`, `version = version + 1`, `updated_at = NOW(3)`
//!   only; `WHERE` takes `AND`/`OR` of comparisons of a column with a literal of its
//!   type (a quoted number for an integer column), `NOW(3) [- INTERVAL n unit]` for
//!   `updated_at`. MySQL's implicit string/number conversions (`owner = 0`) are 1235:
//!   they match rows nobody meant to match.
//! - `LIMIT`, `ORDER BY`, `GROUP BY`, joins, subqueries on the table are 1235.
//! - `SET` of an out-of-range `innodb_lock_wait_timeout`/`wait_timeout` is 1231 where
//!   MariaDB clamps it with a warning; `SET GLOBAL` is 1235 (one model, many sessions).
//! - Isolation levels other than REPEATABLE READ are 1235: the model has one.
//! - `GET_LOCK`'s column is `MYSQL_TYPE_LONG` as MariaDB's; a `GET_LOCK` that would close
//!   a cycle of waits fails with 1213 without rolling back the transaction (named locks
//!   are not transactional).
//! - `@@version` is `10.11.19-MariaDB-locksim`, `@@version_comment` `locksim`.
//! - One statement per query (no `CLIENT_MULTI_STATEMENTS`): a second one is 1064.

use crate::locks::db::model::{ConnId, Db, Now, Projection, Reply, Statement};
use crate::net::mysql::{QueryResult, ServerError};
use sqlparser::ast::Statement as Ast;
use sqlparser::dialect::MySqlDialect;
use sqlparser::parser::{Parser, ParserError};

mod dml;
mod errors;
mod expr;
mod names;
mod select;
mod table;
mod variables;

pub(crate) use variables::SERVER_VERSION;

/// What a statement comes to.
pub(crate) enum Plan {
    /// Answered without the model's lock table.
    Result(QueryResult),
    /// A model statement, and how its reply is shown.
    Run(Statement, Projection),
}

/// Run one SQL statement of session `conn`. `None`: it waits for a lock; its result
/// comes later in [`Effects::results`](crate::locks::db::model::Effects::results).
#[cfg(test)]
pub(crate) fn execute_sql(db: &mut Db, conn: ConnId, sql: &str, now: Now) -> Option<QueryResult> {
    execute_sql_guarded(db, conn, sql, now, |_| None)
}

/// [`execute_sql`], with each model statement first shown to `refuse`: a reply from it
/// (an error: a read-only server's 1290 to a write) answers instead, and nothing runs.
pub(crate) fn execute_sql_guarded(
    db: &mut Db,
    conn: ConnId,
    sql: &str,
    now: Now,
    refuse: impl Fn(&Statement) -> Option<Reply>,
) -> Option<QueryResult> {
    let plan = match parse(sql) {
        Ok(stmt) => plan(db, conn, &stmt, sql, now),
        Err(e) => Err(e),
    };
    match plan {
        Ok(Plan::Run(stmt, projection)) => match refuse(&stmt) {
            Some(Reply::Error(e)) => {
                db.touch(conn, now);
                Some(QueryResult::Err(ServerError {
                    code: e.code,
                    sqlstate: "HY000".into(),
                    message: e.message,
                }))
            }
            _ => db.execute_projected(conn, stmt, projection, now),
        },
        Ok(Plan::Result(r)) => {
            db.touch(conn, now);
            Some(r)
        }
        Err(e) => {
            db.touch(conn, now);
            Some(QueryResult::Err(e))
        }
    }
}

/// Parse exactly one statement.
fn parse(sql: &str) -> Result<Ast, ServerError> {
    if sql.trim().trim_end_matches(';').trim().is_empty() {
        return Err(errors::empty());
    }
    let mut stmts = Parser::parse_sql(&MySqlDialect {}, sql).map_err(|e| syntax_error(sql, &e))?;
    if stmts.len() != 1 {
        // Where the second statement starts is not kept: MariaDB quotes from there.
        let second = sql.find(';').map_or("", |i| &sql[i + 1..]).trim_start();
        return Err(errors::syntax(second, 1));
    }
    Ok(stmts.remove(0))
}

/// 1064, quoting the statement from where the parser stopped.
fn syntax_error(sql: &str, e: &ParserError) -> ServerError {
    let msg = e.to_string();
    let at = msg.rsplit_once(" at Line: ").and_then(|(_, pos)| {
        let (line, col) = pos.split_once(", Column: ")?;
        Some((
            line.trim().parse::<usize>().ok()?,
            col.trim().parse::<usize>().ok()?,
        ))
    });
    let Some((line, col)) = at else {
        return errors::syntax("", 1);
    };
    let rest: String = sql
        .lines()
        .skip(line.saturating_sub(1))
        .collect::<Vec<_>>()
        .join("\n")
        .chars()
        .skip(col.saturating_sub(1))
        .collect();
    errors::syntax(&rest, line as u64)
}

fn ok(db: &Db, conn: ConnId, warnings: u16) -> Plan {
    Plan::Result(QueryResult::Ok {
        affected_rows: 0,
        last_insert_id: 0,
        warnings,
        status: db.status(conn),
    })
}

/// Translate a parsed statement.
fn plan(db: &mut Db, conn: ConnId, stmt: &Ast, sql: &str, now: Now) -> Result<Plan, ServerError> {
    let run = |s: Statement| Ok(Plan::Run(s, Projection::Ok));
    match stmt {
        Ast::Query(q) => select::plan(db, conn, q, sql, now),
        Ast::Insert(ins) => run(dml::insert(ins)?),
        Ast::Update(up) => run(dml::update(up)?),
        Ast::Delete(del) => run(dml::delete(del)?),
        Ast::StartTransaction {
            modes,
            modifier: None,
            ..
        } if modes.is_empty() => run(Statement::Begin),
        Ast::Commit {
            chain: false,
            modifier: None,
            ..
        } => run(Statement::Commit),
        Ast::Rollback {
            chain: false,
            savepoint: None,
        } => run(Statement::Rollback),
        Ast::Set(set) => {
            variables::set(db, conn, set, now)?;
            Ok(ok(db, conn, 0))
        }
        Ast::Use(sqlparser::ast::Use::Object(n) | sqlparser::ast::Use::Database(n)) => {
            table::use_database(n)?;
            Ok(ok(db, conn, 0))
        }
        Ast::CreateTable(ct) => {
            if !table::is_ours(&ct.name) {
                return Err(errors::unsupported(&format!("CREATE TABLE {}", ct.name)));
            }
            if ct.if_not_exists {
                // MariaDB's Note 1050: the table is there, nothing is done.
                return Ok(ok(db, conn, 1));
            }
            Err(errors::table_exists(table::TABLE))
        }
        other => {
            let text = other.to_string();
            let head: String = text
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ");
            Err(errors::unsupported(&head))
        }
    }
}

#[cfg(test)]
#[path = "sql_tests.rs"]
mod tests;
