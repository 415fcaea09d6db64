//! The Redis server model: the keyspace and command engine as a pure state machine.
//!
//! [`RedisServer::execute`] runs one command at a given wall-clock time and returns an
//! [`Outcome`]: the reply, the commands to propagate to the append-only file and to
//! replicas, and the keys it found expired. No I/O, no clock, no randomness: the host
//! around it owns the socket, the node clock and the disk.
//!
//! Semantics follow Redis 7 (`t_string.c`, `expire.c`, `db.c`, `eval.c`), including its
//! error replies. Every value is a string. The differences, all deliberate:
//!
//! - There is no Lua. `EVAL`/`EVALSHA`/`SCRIPT LOAD` recognise the two lock scripts
//!   ([`UNLOCK_SCRIPT`], [`EXTEND_SCRIPT`]) by their text and run them atomically in Rust;
//!   any other script is an error reply.
//! - Propagation is effects-only (as Redis 7 always does for scripts) and not wrapped in
//!   `MULTI`/`EXEC`: the commands of one [`Outcome`] are one atomic unit for the consumer.
//! - Active expiry ([`RedisServer::active_expire`]) removes every expired key at once
//!   instead of sampling.
//!
//! Time: `now_ms` is the server's *wall* clock (ms since the Unix epoch). Keys store an
//! absolute expire-at time and are compared with `now_ms`, so a wall-clock jump forward
//! expires keys early, exactly as in Redis. A key is expired once `now_ms > expire_at`
//! (Redis's `keyIsExpired`: at `now_ms == expire_at` the key still exists with PTTL 0),
//! while `EXPIRE`-family commands delete immediately when the new deadline is
//! `<= now_ms` (Redis's `checkAlreadyExpired`).

use super::resp::{parse_i64, Value};
use std::collections::BTreeMap;

/// The compare-and-delete unlock script from the redis.io distributed-locks page:
/// delete `KEYS[1]` only if its value is `ARGV[1]`. Returns 1 if deleted, else 0.
pub const UNLOCK_SCRIPT: &str = "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend";

/// The compare-and-pexpire extend script (Redlock extend, Redisson-style renewal): set
/// `KEYS[1]`'s TTL to `ARGV[2]` ms only if its value is `ARGV[1]`. Returns 1 or 0.
pub const EXTEND_SCRIPT: &str = "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"pexpire\",KEYS[1],ARGV[2])\nelse\n    return 0\nend";

/// Acquire with a fencing token in one atomic step: `SET KEYS[1] ARGV[1] NX PX ARGV[2]`
/// and, only if that set the key, `INCR KEYS[2]`. Returns the token, or nil if the lock
/// was held. Atomicity matters: with SET and INCR as two round trips, a holder that
/// pauses between them gets a token *newer* than its successor's.
pub const TOKEN_ACQUIRE_SCRIPT: &str = "if redis.call(\"set\",KEYS[1],ARGV[1],\"NX\",\"PX\",ARGV[2]) then\n    return redis.call(\"incr\",KEYS[2])\nelse\n    return false\nend";

/// The SHA1 of a script as Redis names it (`EVALSHA`, `SCRIPT LOAD`): 40 lowercase hex
/// digits.
pub fn script_sha(script: &str) -> String {
    sha1_hex(script.as_bytes())
}

fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

const ERR_SYNTAX: &str = "ERR syntax error";
const ERR_NOT_INT: &str = "ERR value is not an integer or out of range";
const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";
const ERR_NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";
const ERR_LUA_ARGS: &str = "ERR Lua redis lib command arguments must be strings or integers";

/// Commands the model knows, with Redis's arity (negative: at least that many).
const COMMANDS: &[(&str, i64)] = &[
    ("ping", -1),
    ("echo", 2),
    ("set", -3),
    ("setnx", 3),
    ("get", 2),
    ("del", -2),
    ("unlink", -2),
    ("exists", -2),
    ("expire", -3),
    ("pexpire", -3),
    ("expireat", -3),
    ("pexpireat", -3),
    ("ttl", 2),
    ("pttl", 2),
    ("persist", 2),
    ("incr", 2),
    ("decr", 2),
    ("incrby", 3),
    ("decrby", 3),
    ("dbsize", 1),
    ("eval", -3),
    ("evalsha", -3),
    ("script", -2),
];

fn arity_ok(arity: i64, argc: usize) -> bool {
    let argc = argc as i64;
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

/// `ERR wrong number of arguments for 'get' command`.
fn wrong_args(name: &str) -> Value {
    Value::err(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR invalid expire time in 'set' command`.
fn invalid_expire(name: &str) -> Value {
    Value::err(format!("ERR invalid expire time in '{name}' command"))
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Redis 7's reply to an unknown command: the name (at most 128 bytes) and the
/// arguments, each quoted and followed by a space, until 128 bytes of them are shown.
fn unknown_command(name: &[u8], rest: &[Vec<u8>]) -> Value {
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

/// How Redis 7 reports an error raised by `redis.call` inside a script.
fn script_error(msg: &str, sha: &str, line: u32) -> Value {
    Value::err(format!("{msg} script: {sha}, on @user_script:{line}."))
}

/// The scripts the model can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Script {
    Unlock,
    Extend,
    AcquireToken,
}

impl Script {
    /// Recognises a script by its text (surrounding whitespace ignored).
    fn from_text(text: &[u8]) -> Option<Script> {
        let text = text.trim_ascii();
        if text == UNLOCK_SCRIPT.as_bytes() {
            Some(Script::Unlock)
        } else if text == EXTEND_SCRIPT.as_bytes() {
            Some(Script::Extend)
        } else if text == TOKEN_ACQUIRE_SCRIPT.as_bytes() {
            Some(Script::AcquireToken)
        } else {
            None
        }
    }
}

fn unknown_script(text: &[u8]) -> Value {
    let head: String = lossy(text).chars().take(40).collect();
    Value::err(format!(
        "ERR locksim cannot run arbitrary Lua: only the compare-and-delete and \
         compare-and-pexpire lock scripts are supported, got a script beginning '{head}'"
    ))
}

/// One key's value and absolute expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    value: Vec<u8>,
    /// Absolute wall-clock deadline in ms since the Unix epoch; `None`: no TTL.
    expire_at_ms: Option<i64>,
}

/// Redis's `keyIsExpired`: strictly after the deadline.
fn is_expired(expire_at_ms: Option<i64>, now_ms: i64) -> bool {
    matches!(expire_at_ms, Some(at) if now_ms > at)
}

/// What one command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The reply to send to the client.
    pub reply: Value,
    /// Commands to append to the AOF and send to replicas, in order, as one atomic unit:
    /// writes only, as their effects (relative TTLs made absolute, scripts replaced by
    /// what they did, lazily expired keys as `DEL key`). Empty for reads and for writes
    /// that changed nothing.
    pub propagate: Vec<Vec<Vec<u8>>>,
    /// Keys this command found expired and deleted (lazy expiry), in the order found.
    pub expired: Vec<Vec<u8>>,
}

/// Side effects collected while a command runs.
#[derive(Default)]
struct Effects {
    propagate: Vec<Vec<Vec<u8>>>,
    expired: Vec<Vec<u8>>,
}

impl Effects {
    fn propagate(&mut self, args: Vec<Vec<u8>>) {
        self.propagate.push(args);
    }
}

fn cmd(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// The command as given, with its name in upper case (what Redis propagates for writes
/// it does not rewrite).
fn as_given(args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = args.to_vec();
    out[0].make_ascii_uppercase();
    out
}

/// Which expiry option a `SET` carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SetExpire {
    Ex,
    Px,
    ExAt,
    PxAt,
}

/// The Redis keyspace (database 0) and script cache.
#[derive(Clone, Debug, Default)]
pub struct RedisServer {
    keys: BTreeMap<Vec<u8>, Entry>,
    /// Scripts loaded by `EVAL` or `SCRIPT LOAD`, by lowercase SHA1. Not persisted: a
    /// restarted server answers `EVALSHA` with `NOSCRIPT`, as Redis does.
    scripts: BTreeMap<String, Script>,
    /// Replaying the AOF: no expiry, as in Redis while `server.loading`.
    loading: bool,
}

impl RedisServer {
    /// An empty server.
    pub fn new() -> Self {
        RedisServer::default()
    }

    /// Runs one command (`args[0]` is the name, case-insensitive) at wall-clock time
    /// `now_ms` (ms since the Unix epoch).
    pub fn execute(&mut self, now_ms: i64, args: &[Vec<u8>]) -> Outcome {
        let mut fx = Effects::default();
        let reply = self.dispatch(now_ms, args, &mut fx);
        Outcome {
            reply,
            propagate: fx.propagate,
            expired: fx.expired,
        }
    }

    /// Redis's active expiry cycle, exhaustive: removes every key whose deadline has
    /// passed (`now_ms > expire_at`) and returns them, sorted. The caller should
    /// propagate `DEL key` for each, as Redis does, so that the AOF and replicas agree.
    pub fn active_expire(&mut self, now_ms: i64) -> Vec<Vec<u8>> {
        let gone: Vec<Vec<u8>> = self
            .keys
            .iter()
            .filter(|(_, e)| is_expired(e.expire_at_ms, now_ms))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.keys.remove(k);
        }
        gone
    }

    /// Restart from an append-only log of propagated commands: forgets all state
    /// (keys and script cache), replays `log` with expiry suspended (as Redis does while
    /// loading), then drops the keys whose absolute deadline has passed at `now_ms` and
    /// returns them, sorted (the harness may record them as expiries). Error replies
    /// during replay are ignored.
    pub fn load(&mut self, now_ms: i64, log: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
        self.keys.clear();
        self.scripts.clear();
        self.loading = true;
        for args in log {
            let mut fx = Effects::default();
            self.dispatch(now_ms, args, &mut fx);
        }
        self.loading = false;
        self.active_expire(now_ms)
    }

    /// A key's absolute expiry in ms since the Unix epoch, if it exists and has one.
    /// Inspection only: does not expire anything.
    pub fn get_expire_at(&self, key: &[u8]) -> Option<i64> {
        self.keys.get(key).and_then(|e| e.expire_at_ms)
    }

    /// A key's value, even if logically expired. Inspection only.
    pub fn peek(&self, key: &[u8]) -> Option<&[u8]> {
        self.keys.get(key).map(|e| e.value.as_slice())
    }

    /// The dataset as commands that rebuild it (`SET k v [PXAT t]`), in key order: what a
    /// primary sends a replica on a full resynchronisation (Redis sends an RDB file).
    pub fn snapshot(&self) -> Vec<Vec<Vec<u8>>> {
        self.keys
            .iter()
            .map(|(k, e)| match e.expire_at_ms {
                Some(at) => cmd(&[b"SET", k, &e.value, b"PXAT", at.to_string().as_bytes()]),
                None => cmd(&[b"SET", k, &e.value]),
            })
            .collect()
    }

    /// The number of keys stored, including expired ones not yet removed (like DBSIZE).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when no keys are stored.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn dispatch(&mut self, now: i64, args: &[Vec<u8>], fx: &mut Effects) -> Value {
        let Some(name) = args.first() else {
            return unknown_command(b"", &[]);
        };
        let lname = lossy(name).to_ascii_lowercase();
        let Some(&(cname, arity)) = COMMANDS.iter().find(|(n, _)| *n == lname) else {
            return unknown_command(name, &args[1..]);
        };
        if !arity_ok(arity, args.len()) {
            return wrong_args(cname);
        }
        match cname {
            "ping" => match args.len() {
                1 => Value::simple("PONG"),
                2 => Value::bulk(&args[1]),
                _ => wrong_args("ping"),
            },
            "echo" => Value::bulk(&args[1]),
            "set" => self.set(now, args, fx),
            "setnx" => self.setnx(now, args, fx),
            "get" => match self.lookup(now, &args[1], fx) {
                Some(e) => Value::bulk(&e.value),
                None => Value::nil(),
            },
            "del" | "unlink" => self.del(now, args, fx),
            "exists" => {
                let n = args[1..]
                    .iter()
                    .filter(|k| self.lookup(now, k, fx).is_some())
                    .count();
                Value::int(n as i64)
            }
            "expire" => self.expire(now, args, now, true, fx),
            "pexpire" => self.expire(now, args, now, false, fx),
            "expireat" => self.expire(now, args, 0, true, fx),
            "pexpireat" => self.expire(now, args, 0, false, fx),
            "ttl" => self.ttl(now, &args[1], false, fx),
            "pttl" => self.ttl(now, &args[1], true, fx),
            "persist" => self.persist(now, args, fx),
            "incr" => self.incr_by(now, args, 1, fx),
            "decr" => self.incr_by(now, args, -1, fx),
            "incrby" | "decrby" => match parse_i64(&args[2]) {
                None => Value::err(ERR_NOT_INT),
                Some(i64::MIN) if cname == "decrby" => Value::err("ERR decrement would overflow"),
                Some(n) if cname == "decrby" => self.incr_by(now, args, -n, fx),
                Some(n) => self.incr_by(now, args, n, fx),
            },
            "dbsize" => Value::int(self.keys.len() as i64),
            "eval" => self.eval(now, args, false, fx),
            "evalsha" => self.eval(now, args, true, fx),
            "script" => self.script(args),
            _ => unknown_command(name, &args[1..]),
        }
    }

    /// Lazy expiry (Redis's `expireIfNeeded`): deletes the key if its deadline has
    /// passed, records it and propagates `DEL key`. True if it deleted.
    fn expire_if_needed(&mut self, now: i64, key: &[u8], fx: &mut Effects) -> bool {
        if self.loading {
            return false;
        }
        match self.keys.get(key) {
            Some(e) if is_expired(e.expire_at_ms, now) => {
                self.keys.remove(key);
                fx.expired.push(key.to_vec());
                fx.propagate(cmd(&[b"DEL", key]));
                true
            }
            _ => false,
        }
    }

    /// Looks a key up, expiring it lazily first.
    fn lookup(&mut self, now: i64, key: &[u8], fx: &mut Effects) -> Option<&Entry> {
        self.expire_if_needed(now, key, fx);
        self.keys.get(key)
    }

    /// Redis's `checkAlreadyExpired`: a new deadline at or before now deletes the key,
    /// except while loading.
    fn already_expired(&self, when: i64, now: i64) -> bool {
        !self.loading && when <= now
    }

    /// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`.
    fn set(&mut self, now: i64, args: &[Vec<u8>], fx: &mut Effects) -> Value {
        let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
        let mut expire: Option<(SetExpire, &[u8])> = None;
        let mut j = 3;
        // Option parsing as in Redis's parseExtendedStringArgumentsOrReply: repeating an
        // option is allowed, combining conflicting ones is a syntax error.
        while j < args.len() {
            let opt = args[j].to_ascii_lowercase();
            let next = args.get(j + 1);
            let kind = match opt.as_slice() {
                b"ex" => Some(SetExpire::Ex),
                b"px" => Some(SetExpire::Px),
                b"exat" => Some(SetExpire::ExAt),
                b"pxat" => Some(SetExpire::PxAt),
                _ => None,
            };
            match (opt.as_slice(), kind) {
                (b"nx", _) if !xx => nx = true,
                (b"xx", _) if !nx => xx = true,
                (b"get", _) => get = true,
                (b"keepttl", _) if expire.is_none() => keepttl = true,
                (_, Some(kind))
                    if !keepttl && next.is_some() && expire.is_none_or(|(k, _)| k == kind) =>
                {
                    expire = next.map(|n| (kind, n.as_slice()));
                    j += 1;
                }
                _ => return Value::err(ERR_SYNTAX),
            }
            j += 1;
        }

        let mut deadline = None;
        if let Some((kind, raw)) = expire {
            let Some(mut ms) = parse_i64(raw) else {
                return Value::err(ERR_NOT_INT);
            };
            let seconds = matches!(kind, SetExpire::Ex | SetExpire::ExAt);
            if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
                return invalid_expire("set");
            }
            if seconds {
                ms *= 1000;
            }
            if matches!(kind, SetExpire::Ex | SetExpire::Px) {
                match ms.checked_add(now) {
                    Some(abs) if abs > 0 => ms = abs,
                    _ => return invalid_expire("set"),
                }
            }
            deadline = Some(ms);
        }

        let old = if get {
            Some(self.lookup(now, &args[1], fx).map(|e| e.value.clone()))
        } else {
            None
        };
        let found = self.lookup(now, &args[1], fx).is_some();
        if (nx && found) || (xx && !found) {
            return match old {
                Some(old) => Value::Bulk(old),
                None => Value::nil(),
            };
        }

        let key = args[1].clone();
        let value = args[2].clone();
        let kept = if keepttl {
            self.keys.get(&key).and_then(|e| e.expire_at_ms)
        } else {
            None
        };
        self.keys.insert(
            key.clone(),
            Entry {
                value: value.clone(),
                expire_at_ms: deadline.or(kept),
            },
        );
        // Propagated as the effect: the NX/XX condition held, relative TTLs are absolute.
        let mut effect = vec![b"SET".to_vec(), key, value];
        if let Some(at) = deadline {
            effect.push(b"PXAT".to_vec());
            effect.push(at.to_string().into_bytes());
        } else if keepttl {
            effect.push(b"KEEPTTL".to_vec());
        }
        fx.propagate(effect);
        match old {
            Some(old) => Value::Bulk(old),
            None => Value::ok(),
        }
    }

    /// `SETNX key value`: 1 if set, 0 if the key exists.
    fn setnx(&mut self, now: i64, args: &[Vec<u8>], fx: &mut Effects) -> Value {
        if self.lookup(now, &args[1], fx).is_some() {
            return Value::int(0);
        }
        self.keys.insert(
            args[1].clone(),
            Entry {
                value: args[2].clone(),
                expire_at_ms: None,
            },
        );
        fx.propagate(cmd(&[b"SET", &args[1], &args[2]]));
        Value::int(1)
    }

    /// `DEL`/`UNLINK key...`: the number of keys removed.
    fn del(&mut self, now: i64, args: &[Vec<u8>], fx: &mut Effects) -> Value {
        let mut removed = 0;
        for key in &args[1..] {
            // A key that had expired is gone already (and propagated as its own DEL).
            if self.expire_if_needed(now, key, fx) {
                continue;
            }
            if self.keys.remove(key.as_slice()).is_some() {
                removed += 1;
            }
        }
        if removed > 0 {
            fx.propagate(as_given(args));
        }
        Value::int(removed)
    }

    /// `EXPIRE`/`PEXPIRE`/`EXPIREAT`/`PEXPIREAT key time [NX|XX|GT|LT]`.
    /// `base` is added to the time (now for the relative forms, 0 for the absolute).
    fn expire(
        &mut self,
        now: i64,
        args: &[Vec<u8>],
        base: i64,
        seconds: bool,
        fx: &mut Effects,
    ) -> Value {
        let name = lossy(&args[0]).to_ascii_lowercase();
        let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
        for opt in &args[3..] {
            match opt.to_ascii_lowercase().as_slice() {
                b"nx" => nx = true,
                b"xx" => xx = true,
                b"gt" => gt = true,
                b"lt" => lt = true,
                _ => return Value::err(format!("ERR Unsupported option {}", lossy(opt))),
            }
        }
        if nx && (xx || gt || lt) {
            return Value::err(
                "ERR NX and XX, GT or LT options at the same time are not compatible",
            );
        }
        if gt && lt {
            return Value::err("ERR GT and LT options at the same time are not compatible");
        }
        let Some(mut when) = parse_i64(&args[2]) else {
            return Value::err(ERR_NOT_INT);
        };
        if seconds {
            match when.checked_mul(1000) {
                Some(ms) => when = ms,
                None => return invalid_expire(&name),
            }
        }
        let Some(when) = when.checked_add(base) else {
            return invalid_expire(&name);
        };
        let key = &args[1];
        let Some(entry) = self.lookup(now, key, fx) else {
            return Value::int(0);
        };
        let current = entry.expire_at_ms;
        // No TTL counts as an infinite one for GT and LT.
        let refused = (nx && current.is_some())
            || (xx && current.is_none())
            || (gt && current.is_none_or(|c| when <= c))
            || (lt && current.is_some_and(|c| when >= c));
        if refused {
            return Value::int(0);
        }
        self.set_deadline(now, key, when, &args[3..], fx);
        Value::int(1)
    }

    /// Gives an existing key the absolute deadline `when`, or deletes it if `when` has
    /// already passed; propagates `PEXPIREAT key when [flags]` or `DEL key`.
    fn set_deadline(
        &mut self,
        now: i64,
        key: &[u8],
        when: i64,
        flags: &[Vec<u8>],
        fx: &mut Effects,
    ) {
        if self.already_expired(when, now) {
            self.keys.remove(key);
            fx.propagate(cmd(&[b"DEL", key]));
        } else if let Some(e) = self.keys.get_mut(key) {
            e.expire_at_ms = Some(when);
            let mut effect = cmd(&[b"PEXPIREAT", key, when.to_string().as_bytes()]);
            effect.extend(flags.iter().cloned());
            fx.propagate(effect);
        }
    }

    /// `TTL`/`PTTL key`: -2 if missing, -1 without TTL, else the time left (seconds
    /// rounded to nearest, as Redis does).
    fn ttl(&mut self, now: i64, key: &[u8], ms: bool, fx: &mut Effects) -> Value {
        let Some(e) = self.lookup(now, key, fx) else {
            return Value::int(-2);
        };
        match e.expire_at_ms {
            None => Value::int(-1),
            Some(at) => {
                let left = at.saturating_sub(now).max(0);
                Value::int(if ms { left } else { (left + 500) / 1000 })
            }
        }
    }

    /// `PERSIST key`: 1 if a TTL was removed.
    fn persist(&mut self, now: i64, args: &[Vec<u8>], fx: &mut Effects) -> Value {
        self.expire_if_needed(now, &args[1], fx);
        match self.keys.get_mut(args[1].as_slice()) {
            Some(e) if e.expire_at_ms.is_some() => {
                e.expire_at_ms = None;
                fx.propagate(as_given(args));
                Value::int(1)
            }
            _ => Value::int(0),
        }
    }

    /// `INCR`/`DECR`/`INCRBY`/`DECRBY`: keeps the key's TTL; a missing key counts as 0.
    fn incr_by(&mut self, now: i64, args: &[Vec<u8>], delta: i64, fx: &mut Effects) -> Value {
        let key = &args[1];
        let (current, ttl) = match self.lookup(now, key, fx) {
            None => (0, None),
            Some(e) => match parse_i64(&e.value) {
                Some(n) => (n, e.expire_at_ms),
                None => return Value::err(ERR_NOT_INT),
            },
        };
        let Some(new) = current.checked_add(delta) else {
            return Value::err(ERR_OVERFLOW);
        };
        self.keys.insert(
            key.clone(),
            Entry {
                value: new.to_string().into_bytes(),
                expire_at_ms: ttl,
            },
        );
        fx.propagate(as_given(args));
        Value::int(new)
    }

    /// `EVAL script numkeys key... arg...` / `EVALSHA sha1 numkeys key... arg...`.
    fn eval(&mut self, now: i64, args: &[Vec<u8>], by_sha: bool, fx: &mut Effects) -> Value {
        // Redis rejects a SHA of the wrong length before looking at anything else.
        if by_sha && args[1].len() != 40 {
            return Value::err(ERR_NOSCRIPT);
        }
        let Some(numkeys) = parse_i64(&args[2]) else {
            return Value::err(ERR_NOT_INT);
        };
        if numkeys > args.len() as i64 - 3 {
            return Value::err("ERR Number of keys can't be greater than number of args");
        }
        if numkeys < 0 {
            return Value::err("ERR Number of keys can't be negative");
        }
        let (sha, script) = if by_sha {
            let sha = lossy(&args[1]).to_ascii_lowercase();
            match self.scripts.get(&sha) {
                Some(&s) => (sha, s),
                None => return Value::err(ERR_NOSCRIPT),
            }
        } else {
            let sha = sha1_hex(&args[1]);
            match self
                .scripts
                .get(&sha)
                .copied()
                .or_else(|| Script::from_text(&args[1]))
            {
                Some(s) => {
                    // EVAL caches the script, so a later EVALSHA finds it.
                    self.scripts.insert(sha.clone(), s);
                    (sha, s)
                }
                None => return unknown_script(&args[1]),
            }
        };
        let split = 3 + numkeys as usize;
        self.run_script(now, script, &sha, &args[3..split], &args[split..], fx)
    }

    /// Runs a lock script atomically, with the semantics of its Lua text.
    fn run_script(
        &mut self,
        now: i64,
        script: Script,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        fx: &mut Effects,
    ) -> Value {
        if script == Script::AcquireToken {
            return self.acquire_token(now, sha, keys, argv, fx);
        }
        // `redis.call("get", nil)` raises in Lua.
        let Some(key) = keys.first() else {
            return script_error(ERR_LUA_ARGS, sha, 1);
        };
        // A missing key is `false` in Lua and a missing ARGV[1] is `nil`: neither equals.
        let owned = match (self.lookup(now, key, fx), argv.first()) {
            (Some(e), Some(token)) => e.value == *token,
            _ => false,
        };
        if !owned {
            return Value::int(0);
        }
        match script {
            Script::Unlock => {
                self.keys.remove(key.as_slice());
                fx.propagate(cmd(&[b"DEL", key]));
                Value::int(1)
            }
            Script::Extend => {
                let Some(raw) = argv.get(1) else {
                    return script_error(ERR_LUA_ARGS, sha, 2);
                };
                let Some(ms) = parse_i64(raw) else {
                    return script_error(ERR_NOT_INT, sha, 2);
                };
                let Some(when) = ms.checked_add(now) else {
                    return script_error("ERR invalid expire time in 'pexpire' command", sha, 2);
                };
                self.set_deadline(now, key, when, &[], fx);
                Value::int(1)
            }
            Script::AcquireToken => unreachable!("handled above"),
        }
    }

    /// [`TOKEN_ACQUIRE_SCRIPT`], by running the two commands it calls.
    fn acquire_token(
        &mut self,
        now: i64,
        sha: &str,
        keys: &[Vec<u8>],
        argv: &[Vec<u8>],
        fx: &mut Effects,
    ) -> Value {
        let (Some(lock), Some(counter), Some(value), Some(ttl)) =
            (keys.first(), keys.get(1), argv.first(), argv.get(1))
        else {
            return script_error(ERR_LUA_ARGS, sha, 1);
        };
        let set = vec![
            b"SET".to_vec(),
            lock.clone(),
            value.clone(),
            b"NX".to_vec(),
            b"PX".to_vec(),
            ttl.clone(),
        ];
        match self.set(now, &set, fx) {
            Value::Error(e) => script_error(&e, sha, 1),
            v if v.is_nil() => Value::nil(),
            _ => match self.incr_by(now, &[b"INCR".to_vec(), counter.clone()], 1, fx) {
                Value::Error(e) => script_error(&e, sha, 2),
                token => token,
            },
        }
    }

    /// `SCRIPT LOAD|EXISTS|FLUSH`. Not propagated (Redis 7 replicates script effects).
    fn script(&mut self, args: &[Vec<u8>]) -> Value {
        let sub = args[1].to_ascii_lowercase();
        match sub.as_slice() {
            b"load" => {
                if args.len() != 3 {
                    return wrong_args("script|load");
                }
                match Script::from_text(&args[2]) {
                    Some(s) => {
                        let sha = sha1_hex(&args[2]);
                        self.scripts.insert(sha.clone(), s);
                        Value::bulk(sha.as_bytes())
                    }
                    None => unknown_script(&args[2]),
                }
            }
            b"exists" => {
                if args.len() < 3 {
                    return wrong_args("script|exists");
                }
                Value::array(
                    args[2..]
                        .iter()
                        .map(|sha| {
                            let known = self.scripts.contains_key(&lossy(sha).to_ascii_lowercase());
                            Value::int(i64::from(known))
                        })
                        .collect(),
                )
            }
            b"flush" => {
                let mode_ok = match args.get(2) {
                    None => true,
                    Some(m) => {
                        args.len() == 3
                            && matches!(m.to_ascii_lowercase().as_slice(), b"sync" | b"async")
                    }
                };
                if !mode_ok {
                    return Value::err("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
                }
                self.scripts.clear();
                Value::ok()
            }
            _ => Value::err(format!(
                "ERR unknown subcommand '{}'. Try SCRIPT HELP.",
                lossy(&args[1][..args[1].len().min(128)])
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_000_000;

    fn run(s: &mut RedisServer, now: i64, args: &[&str]) -> Outcome {
        let args: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        s.execute(now, &args)
    }

    fn reply(s: &mut RedisServer, now: i64, args: &[&str]) -> Value {
        run(s, now, args).reply
    }

    fn err(msg: &str) -> Value {
        Value::Error(msg.to_string())
    }

    fn c(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    fn bulk(s: &str) -> Value {
        Value::bulk(s.as_bytes())
    }

    // --- generic ---

    #[test]
    fn ping_and_echo() {
        let mut s = RedisServer::new();
        assert_eq!(reply(&mut s, T0, &["PING"]), Value::simple("PONG"));
        assert_eq!(reply(&mut s, T0, &["ping", "hi"]), bulk("hi"));
        assert_eq!(
            reply(&mut s, T0, &["PING", "a", "b"]),
            err("ERR wrong number of arguments for 'ping' command")
        );
        assert_eq!(reply(&mut s, T0, &["ECHO", "x"]), bulk("x"));
        assert!(run(&mut s, T0, &["PING"]).propagate.is_empty());
    }

    #[test]
    fn unknown_command_format() {
        let mut s = RedisServer::new();
        assert_eq!(
            reply(&mut s, T0, &["foo", "a", "b"]),
            err("ERR unknown command 'foo', with args beginning with: 'a' 'b' ")
        );
        assert_eq!(
            reply(&mut s, T0, &["FOO"]),
            err("ERR unknown command 'FOO', with args beginning with: ")
        );
        let long = "x".repeat(300);
        let Value::Error(msg) = reply(&mut s, T0, &["foo", &long, "y"]) else {
            panic!()
        };
        assert!(msg.ends_with(&format!("'{}' ", "x".repeat(128))), "{msg}");
        assert_eq!(
            s.execute(T0, &[]).reply,
            err("ERR unknown command '', with args beginning with: ")
        );
    }

    #[test]
    fn wrong_arity_names_the_command_in_lower_case() {
        let mut s = RedisServer::new();
        for (args, name) in [
            (&["GET"][..], "get"),
            (&["get", "a", "b"], "get"),
            (&["SET", "k"], "set"),
            (&["SetNx", "k"], "setnx"),
            (&["DEL"], "del"),
            (&["PEXPIRE", "k"], "pexpire"),
            (&["PTTL"], "pttl"),
            (&["INCR"], "incr"),
            (&["INCRBY", "k"], "incrby"),
            (&["EVAL", "s"], "eval"),
            (&["SCRIPT"], "script"),
            (&["SCRIPT", "LOAD"], "script|load"),
            (&["SCRIPT", "EXISTS"], "script|exists"),
        ] {
            assert_eq!(
                reply(&mut s, T0, args),
                err(&format!(
                    "ERR wrong number of arguments for '{name}' command"
                )),
                "{args:?}"
            );
        }
    }

    // --- SET ---

    #[test]
    fn set_and_get() {
        let mut s = RedisServer::new();
        let o = run(&mut s, T0, &["SET", "k", "v"]);
        assert_eq!(o.reply, Value::ok());
        assert_eq!(o.propagate, vec![c(&["SET", "k", "v"])]);
        assert_eq!(reply(&mut s, T0, &["GET", "k"]), bulk("v"));
        assert_eq!(reply(&mut s, T0, &["get", "missing"]), Value::nil());
        assert!(run(&mut s, T0, &["GET", "k"]).propagate.is_empty());
    }

    #[test]
    fn set_nx_on_existing_key_is_nil_and_not_propagated() {
        let mut s = RedisServer::new();
        assert_eq!(
            reply(&mut s, T0, &["SET", "k", "a", "NX", "PX", "100"]),
            Value::ok()
        );
        let o = run(&mut s, T0, &["SET", "k", "b", "NX", "PX", "100"]);
        assert_eq!(o.reply, Value::nil());
        assert!(o.propagate.is_empty());
        assert_eq!(reply(&mut s, T0, &["GET", "k"]), bulk("a"));
    }

    #[test]
    fn set_xx_needs_an_existing_key() {
        let mut s = RedisServer::new();
        assert_eq!(reply(&mut s, T0, &["SET", "k", "a", "XX"]), Value::nil());
        assert_eq!(s.len(), 0);
        reply(&mut s, T0, &["SET", "k", "a"]);
        assert_eq!(reply(&mut s, T0, &["set", "k", "b", "xx"]), Value::ok());
        assert_eq!(reply(&mut s, T0, &["GET", "k"]), bulk("b"));
    }

    #[test]
    fn set_px_propagates_absolute_pxat() {
        let mut s = RedisServer::new();
        let o = run(&mut s, T0, &["SET", "k", "v", "NX", "PX", "1000"]);
        assert_eq!(
            o.propagate,
            vec![c(&["SET", "k", "v", "PXAT", &(T0 + 1000).to_string()])]
        );
        assert_eq!(s.get_expire_at(b"k"), Some(T0 + 1000));
        let o = run(&mut s, T0, &["SET", "j", "v", "EX", "2"]);
        assert_eq!(
            o.propagate,
            vec![c(&["SET", "j", "v", "PXAT", &(T0 + 2000).to_string()])]
        );
        run(&mut s, T0, &["SET", "e", "v", "EXAT", "1800000000"]);
        assert_eq!(s.get_expire_at(b"e"), Some(1_800_000_000_000));
        let o = run(&mut s, T0, &["SET", "p", "v", "pxat", "1800000000123"]);
        assert_eq!(s.get_expire_at(b"p"), Some(1_800_000_000_123));
        assert_eq!(
            o.propagate,
            vec![c(&["SET", "p", "v", "PXAT", "1800000000123"])]
        );
    }

    #[test]
    fn set_syntax_errors() {
        let mut s = RedisServer::new();
        for args in [
            &["SET", "k", "v", "NX", "XX"][..],
            &["SET", "k", "v", "XX", "NX"],
            &["SET", "k", "v", "PX"],
            &["SET", "k", "v", "EX", "1", "PX", "1"],
            &["SET", "k", "v", "PX", "1", "KEEPTTL"],
            &["SET", "k", "v", "KEEPTTL", "EX", "1"],
            &["SET", "k", "v", "BOGUS"],
        ] {
            assert_eq!(reply(&mut s, T0, args), err(ERR_SYNTAX), "{args:?}");
        }
        assert_eq!(s.len(), 0);
        // Repeating the same option is accepted, as in Redis; the last value wins.
        assert_eq!(
            reply(&mut s, T0, &["SET", "k", "v", "PX", "5", "PX", "7"]),
            Value::ok()
        );
        assert_eq!(s.get_expire_at(b"k"), Some(T0 + 7));
    }

    #[test]
    fn set_invalid_expire_times() {
        let mut s = RedisServer::new();
        let invalid = err("ERR invalid expire time in 'set' command");
        assert_eq!(reply(&mut s, T0, &["SET", "k", "v", "PX", "0"]), invalid);
        assert_eq!(reply(&mut s, T0, &["SET", "k", "v", "EX", "-5"]), invalid);
        assert_eq!(
            reply(&mut s, T0, &["SET", "k", "v", "EX", "9223372036854775"]),
            invalid
        );
        assert_eq!(
            reply(&mut s, T0, &["SET", "k", "v", "PX", "9223372036854775807"]),
            invalid
        );
        assert_eq!(
            reply(&mut s, T0, &["SET", "k", "v", "PX", "1.5"]),
            err(ERR_NOT_INT)
        );
        assert_eq!(
            reply(&mut s, T0, &["SET", "k", "v", "EX", "ten"]),
            err(ERR_NOT_INT)
        );
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn set_clears_ttl_unless_keepttl() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "k", "a", "PX", "1000"]);
        let o = run(&mut s, T0, &["SET", "k", "b", "KEEPTTL"]);
        assert_eq!(o.propagate, vec![c(&["SET", "k", "b", "KEEPTTL"])]);
        assert_eq!(s.get_expire_at(b"k"), Some(T0 + 1000));
        reply(&mut s, T0, &["SET", "k", "c"]);
        assert_eq!(s.get_expire_at(b"k"), None);
        assert_eq!(reply(&mut s, T0, &["PTTL", "k"]), Value::int(-1));
    }

    #[test]
    fn set_get_returns_the_old_value() {
        let mut s = RedisServer::new();
        assert_eq!(reply(&mut s, T0, &["SET", "k", "a", "GET"]), Value::nil());
        assert_eq!(reply(&mut s, T0, &["SET", "k", "b", "GET"]), bulk("a"));
        // NX fails, GET still answers with the current value.
        assert_eq!(
            reply(&mut s, T0, &["SET", "k", "c", "NX", "GET"]),
            bulk("b")
        );
        assert_eq!(reply(&mut s, T0, &["GET", "k"]), bulk("b"));
    }

    #[test]
    fn setnx() {
        let mut s = RedisServer::new();
        let o = run(&mut s, T0, &["SETNX", "k", "a"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(o.propagate, vec![c(&["SET", "k", "a"])]);
        let o = run(&mut s, T0, &["SETNX", "k", "b"]);
        assert_eq!(o.reply, Value::int(0));
        assert!(o.propagate.is_empty());
        assert_eq!(s.get_expire_at(b"k"), None);
        assert_eq!(reply(&mut s, T0, &["GET", "k"]), bulk("a"));
    }

    // --- expiry ---

    #[test]
    fn key_expires_lazily_after_its_deadline() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "k", "v", "PX", "100"]);
        // Redis's keyIsExpired is strict: at the deadline the key is still there.
        let o = run(&mut s, T0 + 100, &["GET", "k"]);
        assert_eq!(o.reply, bulk("v"));
        assert!(o.expired.is_empty());
        assert_eq!(reply(&mut s, T0 + 100, &["PTTL", "k"]), Value::int(0));
        let o = run(&mut s, T0 + 101, &["GET", "k"]);
        assert_eq!(o.reply, Value::nil());
        assert_eq!(o.expired, vec![b"k".to_vec()]);
        assert_eq!(o.propagate, vec![c(&["DEL", "k"])]);
        assert_eq!(s.len(), 0);
        let o = run(&mut s, T0 + 102, &["GET", "k"]);
        assert!(o.expired.is_empty() && o.propagate.is_empty());
    }

    #[test]
    fn wall_clock_jump_expires_early() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "k", "v", "PX", "10000"]);
        // Only 5 ms of real time pass, but the wall clock jumps a minute forward.
        let o = run(&mut s, T0 + 60_000, &["SET", "k", "w", "NX", "PX", "10000"]);
        assert_eq!(o.reply, Value::ok());
        assert_eq!(o.expired, vec![b"k".to_vec()]);
        assert_eq!(
            o.propagate,
            vec![
                c(&["DEL", "k"]),
                c(&["SET", "k", "w", "PXAT", &(T0 + 70_000).to_string()])
            ]
        );
        // A jump backwards makes the key live longer.
        assert_eq!(reply(&mut s, T0, &["PTTL", "k"]), Value::int(70_000));
    }

    #[test]
    fn every_access_expires_lazily() {
        for args in [
            &["EXISTS", "k"][..],
            &["DEL", "k"],
            &["PTTL", "k"],
            &["TTL", "k"],
            &["SET", "k", "x"],
            &["SETNX", "k", "x"],
            &["INCR", "k"],
            &["PEXPIRE", "k", "10"],
            &["PERSIST", "k"],
        ] {
            let mut s = RedisServer::new();
            reply(&mut s, T0, &["SET", "k", "1", "PX", "10"]);
            let o = run(&mut s, T0 + 11, args);
            assert_eq!(o.expired, vec![b"k".to_vec()], "{args:?}");
            assert_eq!(o.propagate[0], c(&["DEL", "k"]), "{args:?}");
        }
    }

    #[test]
    fn del_of_an_expired_key_counts_zero() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "a", "1", "PX", "10"]);
        reply(&mut s, T0, &["SET", "b", "1"]);
        let o = run(&mut s, T0 + 50, &["DEL", "a", "b", "c"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(o.expired, vec![b"a".to_vec()]);
        assert_eq!(
            o.propagate,
            vec![c(&["DEL", "a"]), c(&["DEL", "a", "b", "c"])]
        );
        let o = run(&mut s, T0 + 50, &["del", "b"]);
        assert_eq!(o.reply, Value::int(0));
        assert!(o.propagate.is_empty());
    }

    #[test]
    fn exists_counts_repeats() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "a", "1"]);
        assert_eq!(reply(&mut s, T0, &["EXISTS", "a", "a", "b"]), Value::int(2));
    }

    #[test]
    fn pexpire_and_expire() {
        let mut s = RedisServer::new();
        assert_eq!(reply(&mut s, T0, &["PEXPIRE", "k", "100"]), Value::int(0));
        reply(&mut s, T0, &["SET", "k", "v"]);
        let o = run(&mut s, T0, &["PEXPIRE", "k", "100"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(
            o.propagate,
            vec![c(&["PEXPIREAT", "k", &(T0 + 100).to_string()])]
        );
        let o = run(&mut s, T0, &["EXPIRE", "k", "3"]);
        assert_eq!(
            o.propagate,
            vec![c(&["PEXPIREAT", "k", &(T0 + 3000).to_string()])]
        );
        assert_eq!(reply(&mut s, T0 + 1, &["PTTL", "k"]), Value::int(2999));
        let o = run(&mut s, T0, &["PEXPIREAT", "k", &(T0 + 500).to_string()]);
        assert_eq!(
            o.propagate,
            vec![c(&["PEXPIREAT", "k", &(T0 + 500).to_string()])]
        );
        run(&mut s, T0, &["EXPIREAT", "k", "1800000000"]);
        assert_eq!(s.get_expire_at(b"k"), Some(1_800_000_000_000));
    }

    #[test]
    fn non_positive_timeout_deletes_the_key() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "k", "v"]);
        let o = run(&mut s, T0, &["PEXPIRE", "k", "0"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(o.propagate, vec![c(&["DEL", "k"])]);
        assert!(o.expired.is_empty(), "an explicit deletion, not an expiry");
        assert_eq!(s.len(), 0);
        reply(&mut s, T0, &["SET", "k", "v"]);
        assert_eq!(reply(&mut s, T0, &["EXPIRE", "k", "-1"]), Value::int(1));
        reply(&mut s, T0, &["SET", "k", "v"]);
        assert_eq!(
            reply(&mut s, T0, &["PEXPIREAT", "k", &T0.to_string()]),
            Value::int(1)
        );
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn expire_errors() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "k", "v"]);
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "abc"]),
            err(ERR_NOT_INT)
        );
        assert_eq!(
            reply(&mut s, T0, &["EXPIRE", "k", "9223372036854775807"]),
            err("ERR invalid expire time in 'expire' command")
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "9223372036854775807"]),
            err("ERR invalid expire time in 'pexpire' command")
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "10", "FOO"]),
            err("ERR Unsupported option FOO")
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "10", "NX", "XX"]),
            err("ERR NX and XX, GT or LT options at the same time are not compatible")
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "10", "GT", "LT"]),
            err("ERR GT and LT options at the same time are not compatible")
        );
        assert_eq!(s.get_expire_at(b"k"), None);
    }

    #[test]
    fn expire_options() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "k", "v"]);
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "100", "XX"]),
            Value::int(0)
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "100", "GT"]),
            Value::int(0)
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "100", "NX"]),
            Value::int(1)
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "200", "NX"]),
            Value::int(0)
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "50", "GT"]),
            Value::int(0)
        );
        let o = run(&mut s, T0, &["PEXPIRE", "k", "200", "gt"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(
            o.propagate,
            vec![c(&["PEXPIREAT", "k", &(T0 + 200).to_string(), "gt"])]
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "300", "LT"]),
            Value::int(0)
        );
        assert_eq!(
            reply(&mut s, T0, &["PEXPIRE", "k", "150", "LT"]),
            Value::int(1)
        );
        assert_eq!(s.get_expire_at(b"k"), Some(T0 + 150));
    }

    #[test]
    fn pttl_and_ttl() {
        let mut s = RedisServer::new();
        assert_eq!(reply(&mut s, T0, &["PTTL", "k"]), Value::int(-2));
        assert_eq!(reply(&mut s, T0, &["TTL", "k"]), Value::int(-2));
        reply(&mut s, T0, &["SET", "k", "v"]);
        assert_eq!(reply(&mut s, T0, &["PTTL", "k"]), Value::int(-1));
        assert_eq!(reply(&mut s, T0, &["TTL", "k"]), Value::int(-1));
        reply(&mut s, T0, &["SET", "k", "v", "PX", "2000"]);
        assert_eq!(reply(&mut s, T0 + 1, &["PTTL", "k"]), Value::int(1999));
        assert_eq!(reply(&mut s, T0 + 1, &["TTL", "k"]), Value::int(2));
        assert_eq!(reply(&mut s, T0 + 1501, &["TTL", "k"]), Value::int(0));
        assert_eq!(reply(&mut s, T0 + 1499, &["TTL", "k"]), Value::int(1));
        assert!(run(&mut s, T0, &["PTTL", "k"]).propagate.is_empty());
    }

    #[test]
    fn persist() {
        let mut s = RedisServer::new();
        assert_eq!(reply(&mut s, T0, &["PERSIST", "k"]), Value::int(0));
        reply(&mut s, T0, &["SET", "k", "v"]);
        assert_eq!(reply(&mut s, T0, &["PERSIST", "k"]), Value::int(0));
        reply(&mut s, T0, &["PEXPIRE", "k", "10"]);
        let o = run(&mut s, T0, &["persist", "k"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(o.propagate, vec![c(&["PERSIST", "k"])]);
        assert_eq!(s.get_expire_at(b"k"), None);
    }

    #[test]
    fn active_expire_removes_only_past_keys() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "b", "v", "PX", "10"]);
        reply(&mut s, T0, &["SET", "a", "v", "PX", "10"]);
        reply(&mut s, T0, &["SET", "c", "v", "PX", "50"]);
        reply(&mut s, T0, &["SET", "d", "v"]);
        assert!(s.active_expire(T0 + 10).is_empty());
        assert_eq!(s.active_expire(T0 + 11), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(s.len(), 2);
        assert!(s.active_expire(T0 + 11).is_empty());
        assert_eq!(s.active_expire(T0 + 1_000_000), vec![b"c".to_vec()]);
        assert_eq!(s.len(), 1);
    }

    // --- INCR ---

    #[test]
    fn incr_family() {
        let mut s = RedisServer::new();
        let o = run(&mut s, T0, &["INCR", "n"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(o.propagate, vec![c(&["INCR", "n"])]);
        assert_eq!(reply(&mut s, T0, &["incrby", "n", "41"]), Value::int(42));
        assert_eq!(reply(&mut s, T0, &["DECR", "n"]), Value::int(41));
        assert_eq!(reply(&mut s, T0, &["DECRBY", "n", "50"]), Value::int(-9));
        assert_eq!(reply(&mut s, T0, &["GET", "n"]), bulk("-9"));
    }

    #[test]
    fn incr_errors() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "s", "abc"]);
        let o = run(&mut s, T0, &["INCR", "s"]);
        assert_eq!(o.reply, err(ERR_NOT_INT));
        assert!(o.propagate.is_empty());
        reply(&mut s, T0, &["SET", "s", " 1"]);
        assert_eq!(reply(&mut s, T0, &["INCR", "s"]), err(ERR_NOT_INT));
        assert_eq!(reply(&mut s, T0, &["INCRBY", "n", "x"]), err(ERR_NOT_INT));
        reply(&mut s, T0, &["SET", "m", "9223372036854775807"]);
        assert_eq!(reply(&mut s, T0, &["INCR", "m"]), err(ERR_OVERFLOW));
        assert_eq!(reply(&mut s, T0, &["DECRBY", "m", "-1"]), err(ERR_OVERFLOW));
        assert_eq!(
            reply(&mut s, T0, &["DECRBY", "m", "-9223372036854775808"]),
            err("ERR decrement would overflow")
        );
        assert_eq!(
            reply(&mut s, T0, &["GET", "m"]),
            bulk("9223372036854775807")
        );
    }

    #[test]
    fn incr_keeps_the_ttl() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "n", "5", "PX", "1000"]);
        assert_eq!(reply(&mut s, T0 + 10, &["INCR", "n"]), Value::int(6));
        assert_eq!(s.get_expire_at(b"n"), Some(T0 + 1000));
        // After expiry the counter restarts from 0, as in Redis.
        let o = run(&mut s, T0 + 1001, &["INCR", "n"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(o.propagate, vec![c(&["DEL", "n"]), c(&["INCR", "n"])]);
        assert_eq!(s.get_expire_at(b"n"), None);
    }

    #[test]
    fn dbsize_counts_unexpired_garbage() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "a", "1", "PX", "1"]);
        reply(&mut s, T0, &["SET", "b", "1"]);
        assert_eq!(reply(&mut s, T0 + 100, &["DBSIZE"]), Value::int(2));
        assert!(!s.is_empty());
        assert_eq!(s.peek(b"a"), Some(&b"1"[..]));
    }

    // --- scripts ---

    fn eval(s: &mut RedisServer, now: i64, script: &str, keys: &[&str], argv: &[&str]) -> Outcome {
        let mut args = vec!["EVAL", script];
        let n = keys.len().to_string();
        args.push(&n);
        args.extend(keys);
        args.extend(argv);
        run(s, now, &args)
    }

    #[test]
    fn script_shas() {
        assert_eq!(script_sha(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(script_sha(UNLOCK_SCRIPT).len(), 40);
        assert_ne!(script_sha(UNLOCK_SCRIPT), script_sha(EXTEND_SCRIPT));
        assert_eq!(
            script_sha(UNLOCK_SCRIPT),
            script_sha(UNLOCK_SCRIPT).to_lowercase()
        );
    }

    #[test]
    fn compare_and_delete_deletes_only_with_the_right_value() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "L", "tok-a", "PX", "1000"]);
        let o = eval(&mut s, T0, UNLOCK_SCRIPT, &["L"], &["tok-b"]);
        assert_eq!(o.reply, Value::int(0));
        assert!(o.propagate.is_empty());
        assert_eq!(reply(&mut s, T0, &["GET", "L"]), bulk("tok-a"));
        let o = eval(&mut s, T0, UNLOCK_SCRIPT, &["L"], &["tok-a"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(o.propagate, vec![c(&["DEL", "L"])]);
        assert_eq!(s.len(), 0);
        assert_eq!(
            eval(&mut s, T0, UNLOCK_SCRIPT, &["L"], &["tok-a"]).reply,
            Value::int(0)
        );
        // No token: `"v" == nil` is false in Lua.
        reply(&mut s, T0, &["SET", "L", "x"]);
        assert_eq!(
            eval(&mut s, T0, UNLOCK_SCRIPT, &["L"], &[]).reply,
            Value::int(0)
        );
    }

    #[test]
    fn compare_and_delete_on_an_expired_key() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "L", "tok", "PX", "10"]);
        let o = eval(&mut s, T0 + 11, UNLOCK_SCRIPT, &["L"], &["tok"]);
        assert_eq!(o.reply, Value::int(0));
        assert_eq!(o.expired, vec![b"L".to_vec()]);
        assert_eq!(o.propagate, vec![c(&["DEL", "L"])]);
    }

    #[test]
    fn compare_and_pexpire() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "L", "tok", "PX", "100"]);
        let o = eval(&mut s, T0 + 50, EXTEND_SCRIPT, &["L"], &["other", "1000"]);
        assert_eq!(o.reply, Value::int(0));
        assert_eq!(s.get_expire_at(b"L"), Some(T0 + 100));
        let o = eval(&mut s, T0 + 50, EXTEND_SCRIPT, &["L"], &["tok", "1000"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(
            o.propagate,
            vec![c(&["PEXPIREAT", "L", &(T0 + 1050).to_string()])]
        );
        assert_eq!(s.get_expire_at(b"L"), Some(T0 + 1050));
        // Too late: the key expired and the extension fails.
        let o = eval(&mut s, T0 + 2000, EXTEND_SCRIPT, &["L"], &["tok", "1000"]);
        assert_eq!(o.reply, Value::int(0));
        assert_eq!(o.expired, vec![b"L".to_vec()]);
    }

    #[test]
    fn compare_and_pexpire_errors() {
        let mut s = RedisServer::new();
        reply(&mut s, T0, &["SET", "L", "tok"]);
        let sha = script_sha(EXTEND_SCRIPT);
        let o = eval(&mut s, T0, EXTEND_SCRIPT, &["L"], &["tok", "soon"]);
        assert_eq!(
            o.reply,
            err(&format!("{ERR_NOT_INT} script: {sha}, on @user_script:2."))
        );
        assert!(o.propagate.is_empty());
        let o = eval(&mut s, T0, EXTEND_SCRIPT, &["L"], &["tok"]);
        assert!(o
            .reply
            .as_error()
            .unwrap()
            .starts_with("ERR Lua redis lib command arguments"));
        let o = eval(&mut s, T0, UNLOCK_SCRIPT, &[], &["tok"]);
        assert!(o
            .reply
            .as_error()
            .unwrap()
            .starts_with("ERR Lua redis lib command arguments"));
        // A non-positive extension deletes the key, as PEXPIRE does.
        let o = eval(&mut s, T0, EXTEND_SCRIPT, &["L"], &["tok", "0"]);
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(o.propagate, vec![c(&["DEL", "L"])]);
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn snapshot_rebuilds_the_dataset() {
        let mut s = RedisServer::new();
        run(&mut s, 1000, &["SET", "a", "1", "PX", "500"]);
        run(&mut s, 1000, &["SET", "b", "2"]);
        let mut copy = RedisServer::new();
        copy.load(1000, &s.snapshot());
        assert_eq!(copy.snapshot(), s.snapshot());
        assert_eq!(copy.get_expire_at(b"a"), Some(1500));
        assert_eq!(copy.peek(b"b"), Some(&b"2"[..]));
    }

    #[test]
    fn token_acquire_script_is_atomic_set_nx_px_plus_incr() {
        let mut s = RedisServer::new();
        let o = eval(
            &mut s,
            1000,
            TOKEN_ACQUIRE_SCRIPT,
            &["L", "L:token"],
            &["a", "100"],
        );
        assert_eq!(o.reply, Value::int(1));
        assert_eq!(s.get_expire_at(b"L"), Some(1100));
        // Held: nil, and the counter does not move.
        let o = eval(
            &mut s,
            1050,
            TOKEN_ACQUIRE_SCRIPT,
            &["L", "L:token"],
            &["b", "100"],
        );
        assert!(o.reply.is_nil());
        assert!(o.propagate.is_empty());
        // After expiry the next holder gets the next token.
        let o = eval(
            &mut s,
            1101,
            TOKEN_ACQUIRE_SCRIPT,
            &["L", "L:token"],
            &["b", "100"],
        );
        assert_eq!(o.reply, Value::int(2));
        assert_eq!(s.peek(b"L"), Some(&b"b"[..]));
    }

    #[test]
    fn evalsha_before_and_after_eval() {
        let mut s = RedisServer::new();
        let sha = script_sha(UNLOCK_SCRIPT);
        reply(&mut s, T0, &["SET", "L", "tok"]);
        let noscript = err("NOSCRIPT No matching script. Please use EVAL.");
        assert_eq!(
            reply(&mut s, T0, &["EVALSHA", &sha, "1", "L", "tok"]),
            noscript
        );
        assert_eq!(
            reply(&mut s, T0, &["SCRIPT", "EXISTS", &sha]),
            Value::array(vec![Value::int(0)])
        );
        assert_eq!(
            eval(&mut s, T0, UNLOCK_SCRIPT, &["L"], &["nope"]).reply,
            Value::int(0)
        );
        assert_eq!(
            reply(&mut s, T0, &["EVALSHA", &sha, "1", "L", "tok"]),
            Value::int(1)
        );
        // SHAs are case-insensitive.
        reply(&mut s, T0, &["SET", "L", "tok"]);
        assert_eq!(
            reply(
                &mut s,
                T0,
                &["evalsha", &sha.to_uppercase(), "1", "L", "tok"]
            ),
            Value::int(1)
        );
        assert_eq!(
            reply(&mut s, T0, &["EVALSHA", "abc", "1", "L", "tok"]),
            noscript
        );
    }

    #[test]
    fn script_load_exists_flush() {
        let mut s = RedisServer::new();
        let sha = script_sha(EXTEND_SCRIPT);
        let o = run(&mut s, T0, &["SCRIPT", "LOAD", EXTEND_SCRIPT]);
        assert_eq!(o.reply, bulk(&sha));
        assert!(o.propagate.is_empty());
        assert_eq!(
            reply(
                &mut s,
                T0,
                &["script", "exists", &sha, &script_sha(UNLOCK_SCRIPT)]
            ),
            Value::array(vec![Value::int(1), Value::int(0)])
        );
        reply(&mut s, T0, &["SET", "L", "tok"]);
        assert_eq!(
            reply(&mut s, T0, &["EVALSHA", &sha, "1", "L", "tok", "100"]),
            Value::int(1)
        );
        assert_eq!(
            reply(&mut s, T0, &["SCRIPT", "FLUSH", "LAZY"]),
            err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
        );
        assert_eq!(
            reply(&mut s, T0, &["SCRIPT", "FLUSH", "ASYNC"]),
            Value::ok()
        );
        assert_eq!(
            reply(&mut s, T0, &["EVALSHA", &sha, "1", "L", "tok", "100"]),
            err(ERR_NOSCRIPT)
        );
        assert_eq!(
            reply(&mut s, T0, &["SCRIPT", "KILL2"]),
            err("ERR unknown subcommand 'KILL2'. Try SCRIPT HELP.")
        );
        let o = reply(&mut s, T0, &["SCRIPT", "LOAD", "return 1"]);
        assert!(o
            .as_error()
            .unwrap()
            .starts_with("ERR locksim cannot run arbitrary Lua"));
    }

    #[test]
    fn eval_of_unknown_script_names_it() {
        let mut s = RedisServer::new();
        let script = "local v = redis.call('get', KEYS[1]) -- something else entirely";
        let o = eval(&mut s, T0, script, &["k"], &[]);
        let msg = o.reply.as_error().unwrap().to_string();
        assert!(
            msg.starts_with("ERR locksim cannot run arbitrary Lua"),
            "{msg}"
        );
        assert!(
            msg.contains(&script[..40]) && !msg.contains(&script[..41]),
            "{msg}"
        );
        let o = run(&mut s, T0, &["EVALSHA", &script_sha(script), "1", "k"]);
        assert_eq!(o.reply, err(ERR_NOSCRIPT));
    }

    #[test]
    fn eval_numkeys_errors() {
        let mut s = RedisServer::new();
        for (n, msg) in [
            ("x", ERR_NOT_INT),
            (
                "2",
                "ERR Number of keys can't be greater than number of args",
            ),
            ("-1", "ERR Number of keys can't be negative"),
        ] {
            assert_eq!(
                reply(&mut s, T0, &["EVAL", UNLOCK_SCRIPT, n, "k"]),
                err(msg)
            );
            let sha = script_sha(UNLOCK_SCRIPT);
            assert_eq!(reply(&mut s, T0, &["EVALSHA", &sha, n, "k"]), err(msg));
        }
    }

    // --- persistence ---

    /// Runs commands and collects what a primary would append to its AOF.
    fn aof(s: &mut RedisServer, cmds: &[(i64, &[&str])]) -> Vec<Vec<Vec<u8>>> {
        let mut log = Vec::new();
        for (now, args) in cmds {
            log.extend(run(s, *now, args).propagate);
        }
        log
    }

    #[test]
    fn load_reproduces_state_and_drops_expired_keys() {
        let mut s = RedisServer::new();
        let mut log = aof(
            &mut s,
            &[
                (T0, &["SET", "lock", "a", "NX", "PX", "100"]),
                (T0, &["SET", "forever", "x"]),
                (T0, &["INCR", "fence"]),
                (T0, &["INCR", "fence"]),
                (T0, &["SET", "long", "y", "EX", "100"]),
                (T0, &["SET", "gone", "z"]),
                (T0, &["DEL", "gone"]),
                (T0 + 10, &["PEXPIRE", "fence", "1000"]),
                (T0 + 20, &["EVAL", EXTEND_SCRIPT, "1", "lock", "a", "500"]),
                (T0 + 30, &["SET", "other", "o", "PX", "50"]),
                (T0 + 200, &["GET", "other"]),
            ],
        );
        for k in s.active_expire(T0 + 200) {
            log.push(vec![b"DEL".to_vec(), k]);
        }
        let mut r = RedisServer::new();
        reply(&mut r, T0, &["SET", "stale", "state"]);
        assert!(r.load(T0 + 200, &log).is_empty());
        assert_eq!(r.keys, s.keys);
        assert_eq!(r.get_expire_at(b"lock"), Some(T0 + 520));
        assert_eq!(r.peek(b"fence"), Some(&b"2"[..]));

        // Restarting later: keys whose deadline passed meanwhile are dropped.
        let mut late = RedisServer::new();
        let dropped = late.load(T0 + 5_000, &log);
        assert_eq!(dropped, vec![b"fence".to_vec(), b"lock".to_vec()]);
        assert_eq!(late.len(), 2);
        assert_eq!(reply(&mut late, T0 + 5_000, &["GET", "long"]), bulk("y"));
        assert_eq!(reply(&mut late, T0 + 5_000, &["GET", "forever"]), bulk("x"));
    }

    #[test]
    fn load_replays_past_deadlines_without_expiring_midway() {
        // The log says the key got a deadline, was then re-set without TTL: replaying
        // must not delete it at the PEXPIREAT even though that time is long past.
        let log = vec![
            c(&["SET", "k", "1"]),
            c(&["PEXPIREAT", "k", &(T0 - 5).to_string()]),
            c(&["SET", "k", "2"]),
            c(&["INCR", "k"]),
        ];
        let mut s = RedisServer::new();
        assert!(s.load(T0, &log).is_empty());
        assert_eq!(s.peek(b"k"), Some(&b"3"[..]));
        assert_eq!(s.get_expire_at(b"k"), None);
    }

    #[test]
    fn load_forgets_the_script_cache() {
        let mut s = RedisServer::new();
        let sha = script_sha(UNLOCK_SCRIPT);
        reply(&mut s, T0, &["SCRIPT", "LOAD", UNLOCK_SCRIPT]);
        s.load(T0, &[]);
        assert_eq!(
            reply(&mut s, T0, &["EVALSHA", &sha, "1", "L", "t"]),
            err(ERR_NOSCRIPT)
        );
    }

    #[test]
    fn replies_survive_the_codec() {
        // Every reply the server produces encodes and decodes back unchanged.
        let mut s = RedisServer::new();
        for args in [
            &["SET", "k", "v"][..],
            &["GET", "k"],
            &["GET", "nope"],
            &["SCRIPT", "EXISTS", "a", "b"],
            &["foo\r\nbar"],
            &["INCR", "k"],
        ] {
            let r = reply(&mut s, T0, args);
            let bytes = r.to_bytes();
            assert_eq!(
                super::super::resp::decode(&bytes).unwrap(),
                Some((r, bytes.len()))
            );
        }
    }
}
