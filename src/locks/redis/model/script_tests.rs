//! EVAL, EVALSHA and SCRIPT: the lock scripts' Lua as Redis runs it.

use super::*;

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
    assert_eq!(o, bulk(&script_sha("return 1")));
    assert_eq!(
        reply(&mut s, T0, &["SCRIPT", "LOAD", "return 1 +"]),
        err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'")
    );
}

#[test]
fn any_script_runs_and_evalsha_finds_it_after_eval() {
    let mut s = RedisServer::new();
    let script = "local v = redis.call('get', KEYS[1]) return {v, #ARGV}";
    reply(&mut s, T0, &["SET", "k", "x"]);
    let o = eval(&mut s, T0, script, &["k"], &["a", "b"]);
    assert_eq!(o.reply, Value::array(vec![bulk("x"), Value::int(2)]));
    let o = run(&mut s, T0, &["EVALSHA", &script_sha(script), "1", "nope"]);
    // A missing key is false (a nil bulk in the reply); only nil ends an array.
    assert_eq!(o.reply, Value::array(vec![Value::nil(), Value::int(0)]));
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

#[test]
fn collectgarbage_keeps_collections_whole() {
    // The step multiplier reads back as Lua's (200 at start, then what was set), but the
    // collector keeps running whole cycles (lua.rs: where the memory cap strikes must not
    // follow addresses).
    let mut s = RedisServer::new();
    let set = "local a = collectgarbage('setstepmul', 50) local b = collectgarbage('setstepmul', 7.9) return {a, b}";
    assert_eq!(
        eval(&mut s, T0, set, &[], &[]).reply,
        Value::array(vec![Value::int(200), Value::int(50)])
    );
    assert_eq!(
        eval(&mut s, T0, "return collectgarbage('setstepmul')", &[], &[]).reply,
        Value::int(7)
    );
    let bad = eval(
        &mut s,
        T0,
        "return collectgarbage('setstepmul', {})",
        &[],
        &[],
    )
    .reply;
    assert!(
        matches!(&bad, Value::Error(e) if e.contains("bad argument #2 to 'collectgarbage' (number expected, got table)")),
        "{bad:?}"
    );
    // The other options are Lua's own.
    assert_eq!(
        eval(&mut s, T0, "return type(collectgarbage('count'))", &[], &[]).reply,
        Value::bulk(b"number")
    );
    assert_eq!(
        eval(&mut s, T0, "return collectgarbage()", &[], &[]).reply,
        Value::int(0)
    );
}
