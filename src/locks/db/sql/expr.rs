//! Expressions: `WHERE` clauses to the model's [`Filter`], and the literal values,
//! `NOW(3) - INTERVAL …` and integer arithmetic the seeds' statements use.

use super::errors;
use crate::locks::db::model::{CmpOp, Field, Filter, Operand};
use crate::net::mysql::ServerError;
use sqlparser::ast::{
    BinaryOperator, DateTimeField, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    UnaryOperator, Value,
};

/// A column reference (`name`, `method_lock.name`), or None when `e` is not one.
/// `Err`: a column `method_lock` does not have (1054 in `clause`).
pub(crate) fn column(e: &Expr, clause: &str) -> Result<Option<Field>, ServerError> {
    let ident = match e {
        Expr::Identifier(i) => i,
        Expr::CompoundIdentifier(parts) if parts.len() <= 3 => {
            if parts[0].value.starts_with("@@") {
                return Ok(None);
            }
            parts.last().expect("non-empty")
        }
        _ => return Ok(None),
    };
    if ident.value.starts_with('@') {
        return Ok(None);
    }
    if ident.quote_style == Some('"') || ident.quote_style == Some('\'') {
        return Ok(None);
    }
    match Field::named(&ident.value) {
        Some(f) => Ok(Some(f)),
        None => Err(errors::unknown_column(&ident.value, clause)),
    }
}

/// A function call's upper-case name and its plain arguments, or None when `e` is not
/// a call.
pub(crate) fn call(e: &Expr) -> Option<(String, Vec<&Expr>)> {
    let Expr::Function(f) = e else {
        return None;
    };
    let name = f.name.to_string().to_ascii_uppercase();
    let args = match &f.args {
        FunctionArguments::None => Vec::new(),
        FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect(),
        FunctionArguments::Subquery(_) => return Some((name, Vec::new())),
    };
    Some((name, args))
}

/// Whether `e` is `NOW()`, `NOW(3)`, `CURRENT_TIMESTAMP[(3)]` or `SYSDATE(3)`: the
/// server's wall clock.
pub(crate) fn is_now(e: &Expr) -> bool {
    match call(e) {
        Some((name, _)) => matches!(
            name.as_str(),
            "NOW" | "CURRENT_TIMESTAMP" | "SYSDATE" | "LOCALTIMESTAMP"
        ),
        None => matches!(e, Expr::Identifier(Ident { value, .. })
            if value.eq_ignore_ascii_case("CURRENT_TIMESTAMP")),
    }
}

/// A string literal's text.
pub(crate) fn string(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        Expr::Nested(e) => string(e),
        _ => None,
    }
}

/// An integer constant (literals, `+ - *`, parentheses).
pub(crate) fn integer(e: &Expr) -> Option<i64> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        Expr::Nested(e) => integer(e),
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => integer(expr)?.checked_neg(),
        Expr::UnaryOp {
            op: UnaryOperator::Plus,
            expr,
        } => integer(expr),
        Expr::BinaryOp { left, op, right } => {
            let (a, b) = (integer(left)?, integer(right)?);
            match op {
                BinaryOperator::Plus => a.checked_add(b),
                BinaryOperator::Minus => a.checked_sub(b),
                BinaryOperator::Multiply => a.checked_mul(b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A numeric constant, possibly fractional (`GET_LOCK`'s timeout).
pub(crate) fn number(e: &Expr) -> Option<f64> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        Expr::Nested(e) => number(e),
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => Some(-number(expr)?),
        _ => integer(e).map(|n| n as f64),
    }
}

/// Whether `e` is `NULL`.
pub(crate) fn is_null(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(v.value, Value::Null))
}

/// `NOW(3) [- INTERVAL n unit]` as microseconds before the server's now.
fn now_minus_us(e: &Expr) -> Option<i64> {
    if is_now(e) {
        return Some(0);
    }
    let Expr::BinaryOp { left, op, right } = e else {
        return None;
    };
    if !is_now(left) {
        return None;
    }
    let Expr::Interval(iv) = right.as_ref() else {
        return None;
    };
    let n = integer(&iv.value)?;
    let unit: i64 = match iv.leading_field.as_ref()? {
        DateTimeField::Microsecond | DateTimeField::Microseconds => 1,
        DateTimeField::Millisecond | DateTimeField::Milliseconds => 1_000,
        DateTimeField::Second | DateTimeField::Seconds => 1_000_000,
        DateTimeField::Minute | DateTimeField::Minutes => 60_000_000,
        DateTimeField::Hour | DateTimeField::Hours => 3_600_000_000,
        DateTimeField::Day | DateTimeField::Days => 86_400_000_000,
        _ => return None,
    };
    let us = n.checked_mul(unit)?;
    match op {
        BinaryOperator::Minus => Some(us),
        BinaryOperator::Plus => us.checked_neg(),
        _ => None,
    }
}

/// The value a column is compared with, of that column's type.
fn operand(field: Field, e: &Expr) -> Result<Operand, ServerError> {
    let unsupported = || errors::unsupported(&format!("comparing {} with {e}", field.name()));
    if is_null(e) {
        return Ok(Operand::Null);
    }
    match field {
        Field::Name | Field::Owner => string(e).map(Operand::Str).ok_or_else(unsupported),
        // A quoted number compares as the number, as MySQL converts it.
        Field::Id | Field::Version => integer(e)
            .or_else(|| string(e).and_then(|s| s.trim().parse().ok()))
            .map(Operand::Int)
            .ok_or_else(unsupported),
        Field::UpdatedAt => now_minus_us(e)
            .map(Operand::NowMinusUs)
            .ok_or_else(unsupported),
    }
}

fn cmp_op(op: &BinaryOperator) -> Option<CmpOp> {
    Some(match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::Ne,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::Le,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::Ge,
        _ => return None,
    })
}

fn flipped(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        same => same,
    }
}

/// A `WHERE` clause as the model's filter (None: every row).
pub(crate) fn filter(e: Option<&Expr>) -> Result<Filter, ServerError> {
    let Some(e) = e else {
        return Ok(Filter::All);
    };
    match e {
        Expr::Nested(inner) => filter(Some(inner)),
        Expr::BinaryOp {
            left,
            op: op @ (BinaryOperator::And | BinaryOperator::Or),
            right,
        } => {
            let (a, b) = (filter(Some(left))?, filter(Some(right))?);
            let and = matches!(op, BinaryOperator::And);
            let mut parts = Vec::new();
            for f in [a, b] {
                match f {
                    Filter::And(p) if and => parts.extend(p),
                    Filter::Or(p) if !and => parts.extend(p),
                    f => parts.push(f),
                }
            }
            Ok(if and {
                Filter::And(parts)
            } else {
                Filter::Or(parts)
            })
        }
        Expr::BinaryOp { left, op, right } => {
            let Some(op) = cmp_op(op) else {
                return Err(errors::unsupported(&format!("WHERE {e}")));
            };
            if let Some(f) = column(left, "WHERE")? {
                return Ok(Filter::Cmp(f, op, operand(f, right)?));
            }
            if let Some(f) = column(right, "WHERE")? {
                return Ok(Filter::Cmp(f, flipped(op), operand(f, left)?));
            }
            Err(errors::unsupported(&format!("WHERE {e}")))
        }
        _ => {
            column(e, "WHERE")?;
            Err(errors::unsupported(&format!("WHERE {e}")))
        }
    }
}
