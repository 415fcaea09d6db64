//! `COMMAND` and its subcommands: what the model tells a client about its own command
//! table (client libraries ask at connect time).

use super::commands::{Spec, COMMANDS, NOQUEUE, NOSCRIPT, WRITE};
use super::{Client, Ctx, RedisServer};
use crate::locks::redis::resp::Value;

impl RedisServer {
    /// `COMMAND`: a minimal description of every command the model implements.
    pub(crate) fn cmd_command(&mut self, _: &mut Client, _: &mut Ctx, _: &[Vec<u8>]) -> Value {
        Value::array(COMMANDS.iter().map(command_info).collect())
    }

    pub(crate) fn cmd_command_count(
        &mut self,
        _: &mut Client,
        _: &mut Ctx,
        _: &[Vec<u8>],
    ) -> Value {
        Value::int(COMMANDS.len() as i64)
    }

    pub(crate) fn cmd_command_info(
        &mut self,
        _: &mut Client,
        _: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        let names = &args[2..];
        let found = |n: &Vec<u8>| {
            let n = n.to_ascii_lowercase();
            COMMANDS.iter().find(|c| c.name.as_bytes() == n.as_slice())
        };
        if names.is_empty() {
            return Value::array(COMMANDS.iter().map(command_info).collect());
        }
        Value::array(
            names
                .iter()
                .map(|n| found(n).map_or(Value::Array(None), command_info))
                .collect(),
        )
    }

    /// `COMMAND DOCS`: an empty map (clients use it for help texts only).
    pub(crate) fn cmd_command_docs(&mut self, _: &mut Client, _: &mut Ctx, _: &[Vec<u8>]) -> Value {
        Value::Map(Vec::new())
    }
}

/// `[name, arity, flags, first key, last key, step, acl categories, tips, key specs,
/// subcommands]`, as `COMMAND INFO` answers (categories, tips and key specs empty).
fn command_info(spec: &Spec) -> Value {
    let mut flags = Vec::new();
    flags.push(if spec.has(WRITE) { "write" } else { "readonly" });
    if spec.has(NOSCRIPT) {
        flags.push("noscript");
    }
    if spec.has(NOQUEUE) {
        flags.push("allow_busy");
    }
    let keyed = spec.has(WRITE) || matches!(spec.name, "get" | "exists" | "ttl" | "pttl");
    let (first, last) = match spec.name {
        "del" | "unlink" | "exists" => (1, -1),
        _ if keyed => (1, 1),
        _ => (0, 0),
    };
    Value::array(vec![
        Value::bulk(spec.name.as_bytes()),
        Value::int(spec.arity),
        Value::array(flags.iter().map(|f| Value::simple(*f)).collect()),
        Value::int(first),
        Value::int(last),
        Value::int(i64::from(first != 0)),
        Value::array(vec![]),
        Value::array(vec![]),
        Value::array(vec![]),
        Value::array(spec.subs.iter().map(command_info).collect()),
    ])
}
