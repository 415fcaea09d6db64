//! Conversions between Redis replies and Lua values, as Redis 7.0's scripting does them
//! (`script_lua.c`): `redis.call`'s arguments, a reply as a Lua value, a script's
//! result (or error) as a reply.

use super::{c_cast_i64, fmt_g17, fmt_lua_number, root_message};
use crate::locks::redis::resp::Value;
use mlua::{Lua, MultiValue, Table};

/// `redis.call`'s arguments as a command, or Redis's complaint.
pub(super) fn command_args(args: &MultiValue) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.is_empty() {
        return Err("Please specify at least one argument for this redis lib call");
    }
    args.iter()
        .map(|v| match v {
            mlua::Value::String(s) => Ok(s.as_bytes().to_vec()),
            mlua::Value::Integer(i) => Ok(fmt_g17(*i as f64).into_bytes()),
            mlua::Value::Number(n) => Ok(fmt_g17(*n).into_bytes()),
            _ => Err("Lua redis lib command arguments must be strings or integers"),
        })
        .collect()
}

/// An error reply's text as a script sees it (Redis's `luaPushErrorBuff`): `CODE msg`,
/// with `ERR` as the code when the reply has no space.
pub(super) fn error_text(reply: &str) -> String {
    let (code, msg) = match reply.split_once(' ') {
        Some((code, msg)) => (code, msg),
        None => ("ERR", reply),
    };
    format!("{code} {}", msg.trim_matches(['\r', '\n']))
}

/// `{err = "CODE msg"}` for an error reply.
pub(super) fn error_table(lua: &Lua, reply: &str) -> mlua::Result<mlua::Value> {
    let t = lua.create_table()?;
    t.raw_set("err", error_text(reply))?;
    t.raw_set("ignore_error_stats_update", true)?;
    Ok(mlua::Value::Table(t))
}

/// A command's reply as the script sees it.
pub(super) fn reply_to_lua(lua: &Lua, v: &Value) -> mlua::Result<mlua::Value> {
    Ok(match v {
        Value::Integer(n) => mlua::Value::Number(*n as f64),
        Value::Bulk(Some(b)) => mlua::Value::String(lua.create_string(b)?),
        Value::Bulk(None) | Value::Array(None) => mlua::Value::Boolean(false),
        Value::Null => mlua::Value::Nil,
        Value::Boolean(b) => mlua::Value::Boolean(*b),
        Value::Simple(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", s.as_str())?;
            mlua::Value::Table(t)
        }
        Value::Error(e) => error_table(lua, e)?,
        Value::Double(d) => {
            let t = lua.create_table()?;
            t.raw_set("double", d.parse::<f64>().unwrap_or(0.0))?;
            mlua::Value::Table(t)
        }
        Value::Array(Some(items)) | Value::Set(items) | Value::Push(items) => {
            let t = lua.create_table()?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item)?)?;
            }
            mlua::Value::Table(t)
        }
        // The script client speaks RESP2: a map arrives flat.
        Value::Map(pairs) => {
            let t = lua.create_table()?;
            for (i, (k, v)) in pairs.iter().enumerate() {
                t.raw_set(2 * i + 1, reply_to_lua(lua, k)?)?;
                t.raw_set(2 * i + 2, reply_to_lua(lua, v)?)?;
            }
            mlua::Value::Table(t)
        }
    })
}

/// The deepest table nesting converted into a reply.
pub(super) const MAX_REPLY_DEPTH: usize = 64;

/// A script's result as the reply to the client (RESP2 shapes).
pub(super) fn lua_to_reply(v: &mlua::Value, depth: usize) -> Value {
    match v {
        mlua::Value::String(s) => Value::bulk(&s.as_bytes()),
        mlua::Value::Boolean(true) => Value::int(1),
        mlua::Value::Boolean(false) => Value::nil(),
        mlua::Value::Integer(i) => Value::int(c_cast_i64(*i as f64)),
        mlua::Value::Number(n) => Value::int(c_cast_i64(*n)),
        mlua::Value::Table(t) if depth < MAX_REPLY_DEPTH => table_to_reply(t, depth),
        mlua::Value::Table(_) => Value::err("ERR reached lua stack limit"),
        _ => Value::nil(),
    }
}

pub(super) fn table_to_reply(t: &Table, depth: usize) -> Value {
    if let Ok(mlua::Value::String(e)) = t.get::<mlua::Value>("err") {
        return Value::err(String::from_utf8_lossy(&e.as_bytes()).into_owned());
    }
    if let Ok(mlua::Value::String(s)) = t.get::<mlua::Value>("ok") {
        return Value::simple(String::from_utf8_lossy(&s.as_bytes()).into_owned());
    }
    if let Ok(n @ (mlua::Value::Number(_) | mlua::Value::Integer(_))) =
        t.get::<mlua::Value>("double")
    {
        let x = match n {
            mlua::Value::Number(x) => x,
            mlua::Value::Integer(i) => i as f64,
            _ => 0.0,
        };
        return Value::bulk(fmt_g17(x).as_bytes());
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.get::<mlua::Value>(i) {
            Ok(mlua::Value::Nil) | Err(_) => break,
            Ok(v) => items.push(lua_to_reply(&v, depth + 1)),
        }
    }
    Value::array(items)
}

/// A failed script's reply: the error table's message, and where the script was.
pub(super) fn script_error(sha: &str, err: &mlua::Value) -> Value {
    let mlua::Value::Table(t) = err else {
        return Value::err(format!(
            "ERR Error running script {sha}, {}",
            lua_error_text(err)
        ));
    };
    let msg = match t.get::<mlua::Value>("err") {
        Ok(mlua::Value::String(s)) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        Ok(mlua::Value::Number(n)) => fmt_lua_number(n),
        Ok(mlua::Value::Integer(i)) => i.to_string(),
        _ => "(null)".to_string(),
    };
    let source = t.get::<Option<String>>("source").ok().flatten();
    let line = t.get::<Option<i64>>("line").ok().flatten();
    match (source, line) {
        (Some(src), Some(line)) => Value::err(format!("{msg} script: {sha}, on {src}:{line}.")),
        _ => Value::err(msg),
    }
}

/// `tostring` of a Lua error value that is not a table.
pub(super) fn lua_error_text(v: &mlua::Value) -> String {
    match v {
        mlua::Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        mlua::Value::Number(n) => fmt_lua_number(*n),
        mlua::Value::Integer(i) => i.to_string(),
        mlua::Value::Nil => "nil".to_string(),
        mlua::Value::Boolean(b) => b.to_string(),
        mlua::Value::Error(e) => root_message(e),
        other => format!("{}: {:p}", other.type_name(), other.to_pointer()),
    }
}
