//! `SELECT`: over `method_lock` (columns, `*`, `NEXTVAL`, `FOR UPDATE`), or of
//! expressions alone (`SELECT 1`, `@@variables`, `CONNECTION_ID()`, the named-lock
//! functions), each output column named as MariaDB names it.

use super::{errors, expr, names, table, variables, Plan};
use crate::locks::db::model::{
    timestamp_text, ConnId, Db, Field, Filter, Now, Out, OutColumn, Projection, Statement,
};
use crate::net::mysql::{ColumnType, QueryResult, ServerError};
use sqlparser::ast::{
    Expr, LimitClause, LockType, Query, Select, SelectItem, SelectItemQualifiedWildcardKind,
    SetExpr, Value,
};

/// Plan a query.
pub(crate) fn plan(
    db: &Db,
    conn: ConnId,
    q: &Query,
    sql: &str,
    now: Now,
) -> Result<Plan, ServerError> {
    let SetExpr::Select(sel) = q.body.as_ref() else {
        return Err(errors::unsupported(
            "this kind of query (UNION, VALUES, subqueries)",
        ));
    };
    if q.with.is_some() || q.order_by.is_some() || q.fetch.is_some() {
        return Err(errors::unsupported("WITH, ORDER BY or FETCH"));
    }
    let limit = limit(q)?;
    let for_update = match q.locks.as_slice() {
        [] => false,
        [l] if l.lock_type == LockType::Update && l.of.is_none() && l.nonblock.is_none() => true,
        _ => {
            return Err(errors::unsupported(
                "FOR SHARE, NOWAIT, SKIP LOCKED or FOR UPDATE OF",
            ))
        }
    };
    simple_select(sel)?;
    let texts = names::select_item_texts(sql);
    match sel.from.as_slice() {
        [] => {
            if for_update {
                return Err(errors::unsupported("FOR UPDATE without a table"));
            }
            let mut columns = Vec::new();
            let mut model: Option<Statement> = None;
            for (i, item) in sel.projection.iter().enumerate() {
                let (e, name) = item_expr(item, texts.get(i))?;
                let (out, stmt) = constant(db, conn, e, now)?;
                if let Some(stmt) = stmt {
                    if model.replace(stmt).is_some() {
                        return Err(errors::unsupported("two lock functions in one SELECT"));
                    }
                }
                columns.push(OutColumn { name, out });
            }
            if sel.selection.is_some() {
                return Err(errors::unsupported("WHERE without a table"));
            }
            match model {
                Some(stmt) if limit != Some(0) => Ok(Plan::Run(stmt, Projection::Columns(columns))),
                _ => Ok(Plan::Result(constant_rows(columns, limit))),
            }
        }
        [from] => {
            if !from.joins.is_empty() {
                return Err(errors::unsupported("JOIN"));
            }
            table::check(&from.relation)?;
            if limit.is_some() {
                return Err(errors::unsupported("LIMIT on method_lock"));
            }
            let mut columns = Vec::new();
            let mut nextval = None;
            for (i, item) in sel.projection.iter().enumerate() {
                table_item(item, texts.get(i), &mut columns, &mut nextval)?;
            }
            let filter: Filter = expr::filter(sel.selection.as_ref())?;
            let stmt = Statement::Query {
                filter,
                for_update,
                nextval,
            };
            Ok(Plan::Run(stmt, Projection::Columns(columns)))
        }
        _ => Err(errors::unsupported("several tables")),
    }
}

/// `LIMIT n` (no offset).
fn limit(q: &Query) -> Result<Option<u64>, ServerError> {
    match &q.limit_clause {
        None => Ok(None),
        Some(LimitClause::LimitOffset {
            limit: Some(n),
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => match expr::integer(n) {
            Some(n) if n >= 0 => Ok(Some(n as u64)),
            _ => Err(errors::unsupported(&format!("LIMIT {n}"))),
        },
        Some(other) => Err(errors::unsupported(&other.to_string())),
    }
}

/// Refuse what a single-table select list with a `WHERE` cannot express here.
fn simple_select(sel: &Select) -> Result<(), ServerError> {
    let grouped = match &sel.group_by {
        sqlparser::ast::GroupByExpr::Expressions(e, m) => !e.is_empty() || !m.is_empty(),
        sqlparser::ast::GroupByExpr::All(_) => true,
    };
    if sel.distinct.is_some()
        || grouped
        || sel.having.is_some()
        || sel.into.is_some()
        || !sel.lateral_views.is_empty()
        || !sel.named_window.is_empty()
        || sel.qualify.is_some()
    {
        return Err(errors::unsupported(
            "DISTINCT, GROUP BY, HAVING, INTO or WINDOW",
        ));
    }
    Ok(())
}

/// An item's expression and the name of its column.
fn item_expr<'a>(
    item: &'a SelectItem,
    text: Option<&String>,
) -> Result<(&'a Expr, String), ServerError> {
    match item {
        SelectItem::UnnamedExpr(e) => {
            // A string literal's column is named by the string.
            let name = expr::string(e)
                .or_else(|| text.filter(|t| !t.is_empty()).cloned())
                .unwrap_or_else(|| e.to_string());
            Ok((e, name))
        }
        SelectItem::ExprWithAlias { expr, alias } => Ok((expr, alias.value.clone())),
        _ => Err(errors::unsupported("* without a table")),
    }
}

/// One item of a select over `method_lock`.
fn table_item(
    item: &SelectItem,
    text: Option<&String>,
    columns: &mut Vec<OutColumn>,
    nextval: &mut Option<String>,
) -> Result<(), ServerError> {
    let all = |columns: &mut Vec<OutColumn>| {
        columns.extend(Field::ALL.iter().map(|f| OutColumn {
            name: f.name().to_string(),
            out: Out::Field(*f),
        }))
    };
    match item {
        SelectItem::Wildcard(opts) if opts.opt_exclude.is_none() && opts.opt_except.is_none() => {
            all(columns);
            Ok(())
        }
        SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(n), _)
            if table::is_ours(n) =>
        {
            all(columns);
            Ok(())
        }
        SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. } => {
            let (e, name) = item_expr(item, text)?;
            let out = if let Some(f) = expr::column(e, "SELECT")? {
                Out::Field(f)
            } else if let Some(seq) = sequence(e) {
                if nextval.replace(seq.clone()).is_some_and(|s| s != seq) {
                    return Err(errors::unsupported("two sequences in one SELECT"));
                }
                Out::NextVal
            } else if let Some((v, t)) = literal(e) {
                Out::Const(v, t)
            } else {
                return Err(errors::unsupported(&format!("{e} in a select list")));
            };
            columns.push(OutColumn { name, out });
            Ok(())
        }
        _ => Err(errors::unsupported(&item.to_string())),
    }
}

/// `NEXTVAL(seq)`'s sequence.
fn sequence(e: &Expr) -> Option<String> {
    let (name, args) = expr::call(e)?;
    match (name.as_str(), args.as_slice()) {
        ("NEXTVAL", [Expr::Identifier(i)]) => Some(i.value.clone()),
        _ => None,
    }
}

/// A literal's text and type.
fn literal(e: &Expr) -> Option<(Option<String>, ColumnType)> {
    if let Some(s) = expr::string(e) {
        return Some((Some(s), ColumnType::VarString));
    }
    if let Some(n) = expr::integer(e) {
        // MariaDB types a literal that fits 32 bits as LONG, a longer one as LONGLONG.
        let t = if i32::try_from(n).is_ok() {
            ColumnType::Long
        } else {
            ColumnType::LongLong
        };
        return Some((Some(n.to_string()), t));
    }
    match e {
        Expr::Value(v) if matches!(v.value, Value::Null) => Some((None, ColumnType::Null)),
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => Some((Some(u8::from(*b).to_string()), ColumnType::Long)),
            _ => None,
        },
        _ => None,
    }
}

/// An expression without a table: its value now, or the model statement that gives it.
fn constant(
    db: &Db,
    conn: ConnId,
    e: &Expr,
    now: Now,
) -> Result<(Out, Option<Statement>), ServerError> {
    if let Some(name) = variables::system_variable(e) {
        let (v, t) = variables::read(db, conn, &name)?;
        return Ok((Out::Const(v, t), None));
    }
    if let Some((v, t)) = literal(e) {
        return Ok((Out::Const(v, t), None));
    }
    if let Some(seq) = sequence(e) {
        return Ok((Out::NextVal, Some(Statement::NextVal { seq })));
    }
    if expr::is_now(e) {
        return Ok((
            Out::Const(Some(timestamp_text(now.wall_ms)), ColumnType::DateTime),
            None,
        ));
    }
    let Some((name, args)) = expr::call(e) else {
        expr::column(e, "SELECT")?;
        return Err(errors::unsupported(&e.to_string()));
    };
    let vars = db
        .vars(conn)
        .ok_or_else(|| errors::unsupported("a closed session"))?;
    let int = |v: u64| Ok((Out::Const(Some(v.to_string()), ColumnType::LongLong), None));
    let text = |v: &str| Ok((Out::Const(Some(v.to_string()), ColumnType::VarString), None));
    let lock_name = || {
        args.first()
            .and_then(|a| expr::string(a))
            .ok_or_else(|| errors::unsupported(&format!("{e} without a string name")))
    };
    let lock = |stmt: Statement| Ok((Out::Scalar, Some(stmt)));
    match (name.as_str(), args.len()) {
        ("CONNECTION_ID", 0) => int(conn),
        ("LAST_INSERT_ID", 0) => int(vars.last_insert_id),
        ("DATABASE" | "SCHEMA", 0) => text(table::DATABASE),
        ("VERSION", 0) => text(variables::SERVER_VERSION),
        ("GET_LOCK", 2) => {
            let secs = expr::number(args[1])
                .filter(|s| s.is_finite())
                .ok_or_else(|| errors::unsupported(&format!("{e} without a numeric timeout")))?;
            let timeout_ns = if secs < 0.0 {
                -1
            } else {
                (secs * 1e9).min(i64::MAX as f64) as i64
            };
            lock(Statement::GetLock {
                name: lock_name()?,
                timeout_ns,
            })
        }
        ("RELEASE_LOCK", 1) => lock(Statement::ReleaseLock { name: lock_name()? }),
        ("IS_FREE_LOCK", 1) => lock(Statement::IsFreeLock { name: lock_name()? }),
        ("IS_USED_LOCK", 1) => lock(Statement::IsUsedLock { name: lock_name()? }),
        ("RELEASE_ALL_LOCKS", 0) => lock(Statement::ReleaseAllLocks),
        _ => Err(errors::unsupported(&e.to_string())),
    }
}

/// The one row of a select of constants.
fn constant_rows(columns: Vec<OutColumn>, limit: Option<u64>) -> QueryResult {
    let row: Vec<Option<String>> = columns
        .iter()
        .map(|c| match &c.out {
            Out::Const(v, _) => v.clone(),
            _ => None,
        })
        .collect();
    let rows = if limit == Some(0) {
        Vec::new()
    } else {
        vec![row]
    };
    Projection::Columns(columns).with_rows(rows)
}
