//! `INSERT`, `UPDATE` and `DELETE` on `method_lock`, as the seeds write them.

use super::{errors, expr, table};
use crate::locks::db::model::{Field, Set, Statement};
use crate::net::mysql::ServerError;
use sqlparser::ast::{
    AssignmentTarget, BinaryOperator, Delete, Expr, FromTable, Insert, ObjectName, SetExpr,
    TableObject, Update, Value,
};

/// The column an `INSERT` or `SET` names (1054 in the field list otherwise).
fn field(n: &ObjectName, clause: &str) -> Result<Field, ServerError> {
    let last =
        n.0.last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.clone());
    let last = last.unwrap_or_else(|| n.to_string());
    Field::named(&last).ok_or_else(|| errors::unknown_column(&last, clause))
}

/// `INSERT INTO method_lock [(cols)] VALUES (…)`: one row; `version` 0 and
/// `updated_at` `NOW(3)` (the model's insert), `id` from `AUTO_INCREMENT`.
pub(crate) fn insert(ins: &Insert) -> Result<Statement, ServerError> {
    let TableObject::TableName(name) = &ins.table else {
        return Err(errors::unsupported("INSERT INTO TABLE FUNCTION"));
    };
    table::check_name(name)?;
    if ins.ignore || ins.on.is_some() || ins.replace_into || !ins.assignments.is_empty() {
        return Err(errors::unsupported(
            "INSERT IGNORE, REPLACE, SET or ON DUPLICATE KEY",
        ));
    }
    let fields: Vec<Field> = if ins.columns.is_empty() {
        Field::ALL.to_vec()
    } else {
        ins.columns
            .iter()
            .map(|c| field(c, "INSERT INTO"))
            .collect::<Result<_, _>>()?
    };
    let Some(SetExpr::Values(values)) = ins.source.as_ref().map(|q| q.body.as_ref()) else {
        return Err(errors::unsupported("INSERT … SELECT"));
    };
    let [row] = values.rows.as_slice() else {
        return Err(errors::unsupported("INSERT of several rows"));
    };
    if row.len() != fields.len() {
        return Err(errors::value_count());
    }
    let (mut name, mut owner) = (None, String::new());
    for (f, e) in fields.iter().zip(row.iter()) {
        let default = expr::is_null(e)
            || matches!(e, Expr::Identifier(i) if i.value.eq_ignore_ascii_case("DEFAULT"));
        let bad = || errors::unsupported(&format!("INSERT of {} = {e}", f.name()));
        match f {
            Field::Name => name = Some(expr::string(e).ok_or_else(bad)?),
            Field::Owner => owner = expr::string(e).ok_or_else(bad)?,
            Field::Id if default => {}
            Field::Version if default || expr::integer(e) == Some(0) => {}
            Field::UpdatedAt if default || expr::is_now(e) => {}
            _ => return Err(bad()),
        }
    }
    let name = name.ok_or_else(|| errors::no_default("name"))?;
    Ok(Statement::Insert { name, owner })
}

/// `UPDATE method_lock SET owner = ?, version = version + 1, updated_at = NOW(3)
/// [WHERE …]`.
pub(crate) fn update(up: &Update) -> Result<Statement, ServerError> {
    if !up.table.joins.is_empty()
        || up.from.is_some()
        || up.limit.is_some()
        || !up.order_by.is_empty()
    {
        return Err(errors::unsupported("multi-table UPDATE, ORDER BY or LIMIT"));
    }
    table::check(&up.table.relation)?;
    let mut set = Set::default();
    for a in &up.assignments {
        let AssignmentTarget::ColumnName(col) = &a.target else {
            return Err(errors::unsupported("UPDATE of a tuple"));
        };
        let f = field(col, "SET")?;
        let v = &a.value;
        let bad = || errors::unsupported(&format!("SET {} = {v}", f.name()));
        match f {
            Field::Owner => set.owner = Some(expr::string(v).ok_or_else(bad)?),
            Field::Version if is_increment(v)? => set.bump_version = true,
            Field::UpdatedAt if expr::is_now(v) => set.touch = true,
            _ => return Err(bad()),
        }
    }
    let filter = expr::filter(up.selection.as_ref())?;
    Ok(Statement::UpdateWhere { filter, set })
}

/// `version + 1` (or `1 + version`).
fn is_increment(e: &Expr) -> Result<bool, ServerError> {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Plus,
        right,
    } = e
    else {
        return Ok(false);
    };
    let one = |e: &Expr| matches!(e, Expr::Value(v) if matches!(&v.value, Value::Number(n, _) if n == "1"));
    let version = |e: &Expr| -> Result<bool, ServerError> {
        Ok(expr::column(e, "SET")? == Some(Field::Version))
    };
    Ok((version(left)? && one(right)) || (one(left) && version(right)?))
}

/// `DELETE FROM method_lock [WHERE …]`.
pub(crate) fn delete(del: &Delete) -> Result<Statement, ServerError> {
    let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) = &del.from;
    let [from] = from.as_slice() else {
        return Err(errors::unsupported("DELETE from several tables"));
    };
    if !del.tables.is_empty()
        || del.using.is_some()
        || !from.joins.is_empty()
        || del.limit.is_some()
        || !del.order_by.is_empty()
        || del.returning.is_some()
    {
        return Err(errors::unsupported(
            "multi-table DELETE, ORDER BY, LIMIT or RETURNING",
        ));
    }
    table::check(&from.relation)?;
    let filter = expr::filter(del.selection.as_ref())?;
    Ok(Statement::DeleteWhere { filter })
}
