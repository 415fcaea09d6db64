//! The command table (name, arity, flags, implementation) and the rules Redis applies
//! before running a command (`processCommand` in `server.c`): lookup, arity,
//! authentication, the pub/sub context, `MULTI` queueing.

use super::{lossy, wrong_args, Client, Ctx, RedisServer};
use crate::locks::redis::resp::Value;

/// A command's implementation.
pub(crate) type Handler = fn(&mut RedisServer, &mut Client, &mut Ctx, &[Vec<u8>]) -> Value;

/// Changes the dataset: refused on a replica (`READONLY`).
pub(crate) const WRITE: u8 = 1;
/// Not allowed from a script (`ERR This Redis command is not allowed from script`).
pub(crate) const NOSCRIPT: u8 = 2;
/// Allowed before `AUTH` when a password is required.
pub(crate) const NOAUTH: u8 = 4;
/// Allowed on a RESP2 connection in subscribed mode.
pub(crate) const PUBSUB: u8 = 8;
/// Runs at once inside `MULTI` instead of being queued.
pub(crate) const NOQUEUE: u8 = 16;
/// Served while a script runs past `busy-reply-threshold` (others get `BUSY`).
pub(crate) const ALLOW_BUSY: u8 = 32;

/// One command (or subcommand) of the table.
pub(crate) struct Spec {
    /// Lower-case name; a subcommand's full name is `container|sub`.
    pub(crate) name: &'static str,
    /// Redis's arity: exact when positive, a minimum when negative (name included).
    pub(crate) arity: i64,
    pub(crate) flags: u8,
    pub(crate) run: Handler,
    /// A container's subcommands (`SCRIPT LOAD`, `CLIENT SETNAME`, ...).
    pub(crate) subs: &'static [Spec],
}

impl Spec {
    const fn new(name: &'static str, arity: i64, flags: u8, run: Handler) -> Spec {
        Spec {
            name,
            arity,
            flags,
            run,
            subs: &[],
        }
    }

    const fn container(name: &'static str, subs: &'static [Spec]) -> Spec {
        Spec {
            name,
            arity: -2,
            flags: 0,
            run: RedisServer::cmd_container,
            subs,
        }
    }

    pub(crate) fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// The name in error messages: `script|load` for a subcommand.
    pub(crate) fn full_name(&self) -> &'static str {
        self.name
    }
}

use RedisServer as S;

const SCRIPT_SUBS: &[Spec] = &[
    Spec::new("script|load", 3, NOSCRIPT, S::cmd_script_load),
    Spec::new("script|exists", -3, NOSCRIPT, S::cmd_script_exists),
    Spec::new("script|flush", -2, NOSCRIPT, S::cmd_script_flush),
    Spec::new("script|help", 2, NOSCRIPT, S::cmd_script_help),
    Spec::new("script|kill", 2, NOSCRIPT | ALLOW_BUSY, S::cmd_script_kill),
];

const CLIENT_SUBS: &[Spec] = &[
    Spec::new("client|id", 2, NOSCRIPT, S::cmd_client_id),
    Spec::new("client|setname", 3, NOSCRIPT, S::cmd_client_setname),
    Spec::new("client|getname", 2, NOSCRIPT, S::cmd_client_getname),
    Spec::new("client|help", 2, NOSCRIPT, S::cmd_client_help),
];

const COMMAND_SUBS: &[Spec] = &[
    Spec::new("command|count", 2, 0, S::cmd_command_count),
    Spec::new("command|info", -2, 0, S::cmd_command_info),
    Spec::new("command|docs", -2, 0, S::cmd_command_docs),
];

/// Every command the model implements.
pub(crate) const COMMANDS: &[Spec] = &[
    // connection
    Spec::new("ping", -1, PUBSUB, S::cmd_ping),
    Spec::new("echo", 2, 0, S::cmd_echo),
    Spec::new("hello", -1, NOSCRIPT | NOAUTH | ALLOW_BUSY, S::cmd_hello),
    Spec::new("auth", -2, NOSCRIPT | NOAUTH | ALLOW_BUSY, S::cmd_auth),
    Spec::new("select", 2, 0, S::cmd_select),
    Spec::new(
        "quit",
        -1,
        NOSCRIPT | NOAUTH | PUBSUB | NOQUEUE | ALLOW_BUSY,
        S::cmd_quit,
    ),
    Spec::new(
        "reset",
        1,
        NOSCRIPT | NOAUTH | PUBSUB | NOQUEUE | ALLOW_BUSY,
        S::cmd_reset,
    ),
    Spec::new("info", -1, 0, S::cmd_info),
    Spec::container("client", CLIENT_SUBS),
    Spec {
        name: "command",
        arity: -1,
        flags: 0,
        run: S::cmd_command,
        subs: COMMAND_SUBS,
    },
    // strings
    Spec::new("set", -3, WRITE, S::cmd_set),
    Spec::new("setnx", 3, WRITE, S::cmd_setnx),
    Spec::new("setex", 4, WRITE, S::cmd_setex),
    Spec::new("psetex", 4, WRITE, S::cmd_psetex),
    Spec::new("get", 2, 0, S::cmd_get),
    Spec::new("getdel", 2, WRITE, S::cmd_getdel),
    Spec::new("getex", -2, WRITE, S::cmd_getex),
    Spec::new("incr", 2, WRITE, S::cmd_incr),
    Spec::new("decr", 2, WRITE, S::cmd_decr),
    Spec::new("incrby", 3, WRITE, S::cmd_incrby),
    Spec::new("decrby", 3, WRITE, S::cmd_decrby),
    // keys
    Spec::new("del", -2, WRITE, S::cmd_del),
    Spec::new("unlink", -2, WRITE, S::cmd_del),
    Spec::new("exists", -2, 0, S::cmd_exists),
    Spec::new("type", 2, 0, S::cmd_type),
    Spec::new("expire", -3, WRITE, S::cmd_expire),
    Spec::new("pexpire", -3, WRITE, S::cmd_pexpire),
    Spec::new("expireat", -3, WRITE, S::cmd_expireat),
    Spec::new("pexpireat", -3, WRITE, S::cmd_pexpireat),
    Spec::new("ttl", 2, 0, S::cmd_ttl),
    Spec::new("pttl", 2, 0, S::cmd_pttl),
    Spec::new("expiretime", 2, 0, S::cmd_expiretime),
    Spec::new("pexpiretime", 2, 0, S::cmd_pexpiretime),
    Spec::new("persist", 2, WRITE, S::cmd_persist),
    Spec::new("keys", 2, 0, S::cmd_keys),
    Spec::new("dbsize", 1, 0, S::cmd_dbsize),
    Spec::new("flushdb", -1, WRITE, S::cmd_flushdb),
    Spec::new("flushall", -1, WRITE, S::cmd_flushall),
    // hashes
    Spec::new("hset", -4, WRITE, S::cmd_hset),
    Spec::new("hmset", -4, WRITE, S::cmd_hset),
    Spec::new("hsetnx", 4, WRITE, S::cmd_hsetnx),
    Spec::new("hget", 3, 0, S::cmd_hget),
    Spec::new("hincrby", 4, WRITE, S::cmd_hincrby),
    Spec::new("hexists", 3, 0, S::cmd_hexists),
    Spec::new("hdel", -3, WRITE, S::cmd_hdel),
    Spec::new("hlen", 2, 0, S::cmd_hlen),
    Spec::new("hgetall", 2, 0, S::cmd_hgetall),
    // lists
    Spec::new("lpush", -3, WRITE, S::cmd_lpush),
    Spec::new("rpush", -3, WRITE, S::cmd_rpush),
    Spec::new("lpop", -2, WRITE, S::cmd_lpop),
    Spec::new("rpop", -2, WRITE, S::cmd_rpop),
    Spec::new("blpop", -3, WRITE | NOSCRIPT, S::cmd_blpop),
    Spec::new("brpop", -3, WRITE | NOSCRIPT, S::cmd_brpop),
    Spec::new("lrange", 4, 0, S::cmd_lrange),
    Spec::new("llen", 2, 0, S::cmd_llen),
    // transactions
    Spec::new("multi", 1, NOSCRIPT | NOQUEUE | ALLOW_BUSY, S::cmd_multi),
    Spec::new("exec", 1, NOSCRIPT | NOQUEUE, S::cmd_exec),
    Spec::new(
        "discard",
        1,
        NOSCRIPT | NOQUEUE | ALLOW_BUSY,
        S::cmd_discard,
    ),
    Spec::new("watch", -2, NOSCRIPT | NOQUEUE | ALLOW_BUSY, S::cmd_watch),
    Spec::new("unwatch", 1, NOSCRIPT | ALLOW_BUSY, S::cmd_unwatch),
    // pub/sub
    Spec::new("subscribe", -2, NOSCRIPT | PUBSUB, S::cmd_subscribe),
    Spec::new("unsubscribe", -1, NOSCRIPT | PUBSUB, S::cmd_unsubscribe),
    Spec::new("psubscribe", -2, NOSCRIPT | PUBSUB, S::cmd_psubscribe),
    Spec::new("punsubscribe", -1, NOSCRIPT | PUBSUB, S::cmd_punsubscribe),
    Spec::new("publish", 3, 0, S::cmd_publish),
    // scripting
    Spec::new("shutdown", -1, NOSCRIPT | ALLOW_BUSY, S::cmd_shutdown),
    Spec::new("eval", -3, NOSCRIPT, S::cmd_eval),
    Spec::new("evalsha", -3, NOSCRIPT, S::cmd_evalsha),
    Spec::container("script", SCRIPT_SUBS),
];

/// Whether the model knows `name` as a command that writes (replicas refuse it).
pub(crate) fn is_write(name: &[u8]) -> bool {
    let name = name.to_ascii_lowercase();
    COMMANDS
        .iter()
        .any(|c| c.name.as_bytes() == name.as_slice() && c.has(WRITE))
}

fn arity_ok(arity: i64, argc: usize) -> bool {
    let argc = argc as i64;
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

/// Redis 7's reply to an unknown command: the name (at most 128 bytes) and the
/// arguments, each quoted and followed by a space, until 128 bytes of them are shown.
pub(crate) fn unknown_command(name: &[u8], rest: &[Vec<u8>]) -> Value {
    let mut shown = String::new();
    for arg in rest {
        if shown.len() >= 128 {
            break;
        }
        let room = 128 - shown.len();
        shown.push('\'');
        shown.push_str(&lossy(&arg[..arg.len().min(room)]));
        shown.push_str("' ");
    }
    Value::err(format!(
        "ERR unknown command '{}', with args beginning with: {}",
        lossy(&name[..name.len().min(128)]),
        shown
    ))
}

/// Why a command could not be looked up.
pub(crate) enum LookupError {
    Unknown,
    UnknownSub,
    Arity(&'static str),
}

/// Finds the command (or subcommand) `args` names and checks its arity.
pub(crate) fn lookup(args: &[Vec<u8>]) -> Result<&'static Spec, LookupError> {
    let name = args[0].to_ascii_lowercase();
    let Some(spec) = COMMANDS
        .iter()
        .find(|c| c.name.as_bytes() == name.as_slice())
    else {
        return Err(LookupError::Unknown);
    };
    let spec = match (spec.subs.is_empty(), args.get(1)) {
        (false, Some(sub)) => {
            let full = format!("{}|{}", spec.name, lossy(sub).to_ascii_lowercase());
            match spec.subs.iter().find(|s| s.name == full) {
                Some(s) => s,
                None => return Err(LookupError::UnknownSub),
            }
        }
        _ => spec,
    };
    if !arity_ok(spec.arity, args.len()) {
        return Err(LookupError::Arity(spec.full_name()));
    }
    Ok(spec)
}

/// `ERR unknown subcommand 'x'. Try SCRIPT HELP.`
pub(crate) fn unknown_subcommand(container: &[u8], sub: &[u8]) -> Value {
    Value::err(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        lossy(&sub[..sub.len().min(128)]),
        lossy(container).to_ascii_uppercase()
    ))
}

impl RedisServer {
    /// `processCommand`: everything before and around running one command.
    pub(crate) fn process(&mut self, client: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let Some(name) = args.first() else {
            return unknown_command(b"", &[]);
        };
        let spec = match lookup(args) {
            Ok(spec) => spec,
            Err(e) => {
                let reply = match e {
                    LookupError::Unknown => unknown_command(name, &args[1..]),
                    LookupError::UnknownSub => unknown_subcommand(name, &args[1]),
                    LookupError::Arity(n) => wrong_args(n),
                };
                // An error while queueing aborts the transaction at EXEC.
                client.flag_multi_error();
                return reply;
            }
        };
        if !client.authenticated && !spec.has(NOAUTH) {
            client.flag_multi_error();
            return Value::err("NOAUTH Authentication required.");
        }
        if client.subscribed() && client.resp == 2 && !spec.has(PUBSUB) {
            return Value::err(format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                spec.full_name()
            ));
        }
        if let Some(refused) = self.refuse_when_busy(spec, client) {
            return refused;
        }
        if client.in_multi() && !spec.has(NOQUEUE) {
            client.queue(args.to_vec());
            return Value::simple("QUEUED");
        }
        self.call(spec, client, c, args)
    }

    /// Runs a looked-up command.
    pub(crate) fn call(
        &mut self,
        spec: &Spec,
        client: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        c.db = client.db;
        (spec.run)(self, client, c, args)
    }

    /// A container named without a known subcommand (never reached: lookup answers).
    pub(crate) fn cmd_container(&mut self, _: &mut Client, _: &mut Ctx, args: &[Vec<u8>]) -> Value {
        unknown_subcommand(&args[0], args.get(1).map_or(&[][..], |s| s))
    }
}
