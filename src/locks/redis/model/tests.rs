//! Unit tests of the server model: replies, effects, expiry, scripts, persistence.

use super::lua::script_sha;
use super::scripting::ERR_NOSCRIPT;
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
    assert!(r.load(T0 + 200, &log).expired.is_empty());
    assert_eq!(r.dbs, s.dbs);
    assert_eq!(r.get_expire_at(b"lock"), Some(T0 + 520));
    assert_eq!(r.peek(b"fence"), Some(&b"2"[..]));

    // Restarting later: keys whose deadline passed meanwhile are dropped.
    let mut late = RedisServer::new();
    let dropped = late.load(T0 + 5_000, &log);
    assert_eq!(dropped.expired, vec![b"fence".to_vec(), b"lock".to_vec()]);
    // Their deletions go to the AOF, so that a second crash cannot bring them back.
    assert_eq!(
        dropped.propagate,
        vec![c(&["DEL", "fence"]), c(&["DEL", "lock"])]
    );
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
    assert!(s.load(T0, &log).expired.is_empty());
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

#[path = "script_tests.rs"]
mod scripts;
