//! Unit tests of scripts' cost and limits: the instruction count and its simulated
//! time, the budget (`busy-reply-threshold`), `BUSY`, `SCRIPT KILL`, `UNKILLABLE`,
//! `SHUTDOWN`, and the interpreter's memory cap.

use super::busy::ERR_BUSY;
use super::lua::INSTRUCTIONS_PER_MS;
use super::*;

const T0: i64 = 1_700_000_000_000;

fn args(a: &[&str]) -> Vec<Vec<u8>> {
    a.iter().map(|x| x.as_bytes().to_vec()).collect()
}

/// A server whose scripts may run `ms` simulated ms, and two connections.
fn server(ms: u64) -> (RedisServer, Client, Client) {
    let mut s = RedisServer::with_config(ServerConfig {
        busy_reply_threshold_ms: ms,
        ..ServerConfig::default()
    });
    let (a, b) = (s.connect(), s.connect());
    (s, a, b)
}

fn on(s: &mut RedisServer, c: &mut Client, a: &[&str]) -> Outcome {
    s.execute_as(c, T0, &args(a))
}

fn err(msg: &str) -> Value {
    Value::Error(msg.to_string())
}

const ENDLESS: &str = "while true do end";
const WRITES_THEN_ENDLESS: &str = "redis.call('set', 'x', '1') while true do end";

#[test]
fn lock_scripts_cost_no_simulated_time() {
    let (mut s, mut a, _) = server(5000);
    let out = on(&mut s, &mut a, &["EVAL", UNLOCK_SCRIPT, "1", "k", "v"]);
    let run = out.script.expect("EVAL reports its run");
    assert_eq!(run.duration_ms(), 0);
    assert!(!run.endless);
    assert_eq!(run.first_write_at, None, "GET only");
    assert_eq!(on(&mut s, &mut a, &["PING"]).script, None);
}

#[test]
fn a_long_script_costs_its_instructions() {
    let (mut s, mut a, _) = server(5000);
    // About two instructions per iteration (FORLOOP, and the body's ADD).
    let body = "local x = 0 for i = 1, 10000000 do x = x + 1 end return x";
    let out = on(&mut s, &mut a, &["EVAL", body, "0"]);
    assert_eq!(out.reply, Value::int(10_000_000));
    let run = out.script.unwrap();
    assert!(!run.endless);
    let ms = run.duration_ms();
    assert!((150..=250).contains(&ms), "{run:?}");
    assert_eq!(ms, run.instructions / INSTRUCTIONS_PER_MS);
    assert!(!s.busy());
}

#[test]
fn an_endless_script_stops_at_its_budget_and_holds_the_server() {
    let (mut s, mut a, mut b) = server(100);
    let out = on(&mut s, &mut a, &["EVAL", ENDLESS, "0"]);
    let run = out.script.unwrap();
    assert!(run.endless && run.killable());
    assert!(run.instructions > 100 * INSTRUCTIONS_PER_MS);
    let sha = script_sha(ENDLESS);
    // The reply a killed script gets, where it was.
    assert_eq!(
        out.reply,
        err(&format!(
            "ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1."
        ))
    );
    assert!(s.busy());
    assert_eq!(on(&mut s, &mut b, &["GET", "x"]).reply, err(ERR_BUSY));
    assert_eq!(on(&mut s, &mut b, &["PING"]).reply, err(ERR_BUSY));
    assert_eq!(s.busy_reply(), Some(err(ERR_BUSY)));
    // SCRIPT KILL: OK, and the script's connection gets its reply.
    let kill = on(&mut s, &mut b, &["SCRIPT", "KILL"]);
    assert_eq!(kill.reply, Value::ok());
    assert_eq!(kill.killed, Some((a.id, out.reply)));
    assert!(!s.busy());
    assert_eq!(
        on(&mut s, &mut b, &["SCRIPT", "KILL"]).reply,
        err("NOTBUSY No scripts in execution right now.")
    );
    assert_eq!(on(&mut s, &mut b, &["PING"]).reply, Value::simple("PONG"));
}

#[test]
fn a_script_that_wrote_is_unkillable() {
    let (mut s, mut a, mut b) = server(100);
    let run = on(&mut s, &mut a, &["EVAL", WRITES_THEN_ENDLESS, "0"])
        .script
        .unwrap();
    assert!(run.endless && !run.killable());
    assert_eq!(run.first_write_at, Some(0));
    let kill = on(&mut s, &mut b, &["SCRIPT", "KILL"]);
    assert!(matches!(&kill.reply, Value::Error(e) if e.starts_with("UNKILLABLE Sorry")));
    assert!(kill.killed.is_none() && s.busy());
    assert_eq!(on(&mut s, &mut b, &["SHUTDOWN"]).reply, err(ERR_BUSY));
    assert!(!on(&mut s, &mut b, &["SHUTDOWN"]).shutdown);
    assert!(on(&mut s, &mut b, &["SHUTDOWN", "NOSAVE"]).shutdown);
}

#[test]
fn what_redis_allows_while_busy() {
    let (mut s, mut a, mut b) = server(50);
    on(&mut s, &mut a, &["EVAL", ENDLESS, "0"]);
    for allowed in [&["WATCH", "k"][..], &["UNWATCH"], &["HELLO"]] {
        let r = on(&mut s, &mut b, allowed).reply;
        assert!(
            !matches!(&r, Value::Error(e) if e.starts_with("BUSY")),
            "{allowed:?}"
        );
    }
    assert_eq!(on(&mut s, &mut b, &["MULTI"]).reply, Value::ok());
    // A refused command flags the transaction; EXEC is refused too, and discards it.
    assert_eq!(on(&mut s, &mut b, &["SET", "k", "v"]).reply, err(ERR_BUSY));
    assert_eq!(
        on(&mut s, &mut b, &["EXEC"]).reply,
        err(&format!(
            "EXECABORT Transaction discarded because of: {ERR_BUSY}"
        ))
    );
    assert!(!b.in_multi());
    // Unknown commands and wrong arity are checked first.
    assert!(matches!(
        on(&mut s, &mut b, &["NOPE"]).reply,
        Value::Error(e) if e.starts_with("ERR unknown command")
    ));
    // The expire cycle does not run inside a script.
    assert!(s.active_expire_outcome(T0 + 10_000).propagate.is_empty());
}

#[test]
fn scripts_cannot_catch_their_way_past_the_budget() {
    let (mut s, mut a, _) = server(20);
    for body in [
        "while true do pcall(function() while true do end end) end",
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        "local n = 0 while true do local ok = pcall(error, 'x') n = n + 1 end",
        // Lua runs this handler with hooks off: it must not run for a stopped script.
        "return xpcall(function() while true do end end, function(e) while true do end end)",
        "while true do string.rep('', 2147483647) end",
    ] {
        let out = on(&mut s, &mut a, &["EVAL", body, "0"]);
        assert!(out.script.unwrap().endless, "{body}");
        assert!(
            matches!(&out.reply, Value::Error(e) if e.contains("Script killed by user")),
            "{body}: {:?}",
            out.reply
        );
        on(&mut s, &mut a, &["SCRIPT", "KILL"]);
    }
}

#[test]
fn scripts_get_an_error_at_the_memory_cap_and_the_next_runs() {
    let (mut s, mut a, _) = server(5000);
    for body in [
        "local s = 'x' while true do s = s .. s end",
        "local t = {} local i = 0 while true do i = i + 1 t[i] = i end",
        "return string.rep('x', 1e9)",
    ] {
        let out = on(&mut s, &mut a, &["EVAL", body, "0"]);
        let sha = script_sha(body);
        assert_eq!(
            out.reply,
            err(&format!(
                "ERR Error running script {sha}, not enough memory"
            )),
            "{body}"
        );
        assert!(!out.script.unwrap().endless);
    }
    // pcall catches it, as in Lua.
    let caught =
        "local ok, e = pcall(function() local s = 'x' while true do s = s .. s end end) return e";
    assert_eq!(
        on(&mut s, &mut a, &["EVAL", caught, "0"]).reply,
        Value::bulk(b"not enough memory")
    );
    assert_eq!(
        on(
            &mut s,
            &mut a,
            &["EVAL", "return #string.rep('x', 500000)", "0"]
        )
        .reply,
        Value::int(500_000)
    );
}

#[test]
fn shutdown_arguments() {
    let (mut s, mut a, _) = server(5000);
    let syntax = err("ERR syntax error");
    assert_eq!(on(&mut s, &mut a, &["SHUTDOWN", "later"]).reply, syntax);
    assert_eq!(
        on(&mut s, &mut a, &["SHUTDOWN", "save", "nosave"]).reply,
        syntax
    );
    assert_eq!(
        on(&mut s, &mut a, &["SHUTDOWN", "abort", "now"]).reply,
        syntax
    );
    assert_eq!(
        on(&mut s, &mut a, &["SHUTDOWN", "ABORT"]).reply,
        err("ERR No shutdown in progress.")
    );
    assert!(on(&mut s, &mut a, &["SHUTDOWN"]).shutdown);
}

#[test]
fn a_restart_forgets_the_busy_script() {
    let (mut s, mut a, mut b) = server(10);
    on(&mut s, &mut a, &["EVAL", WRITES_THEN_ENDLESS, "0"]);
    assert!(s.busy());
    s.load(T0, &[]);
    assert!(!s.busy());
    assert_eq!(on(&mut s, &mut b, &["PING"]).reply, Value::simple("PONG"));
}

#[test]
fn what_runs_with_hooks_off_is_gone() {
    // Redis 7.0 has no newproxy (whose __gc would run with hooks off), getfenv, setfenv.
    let (mut s, mut a, _) = server(5000);
    for name in [
        "newproxy", "getfenv", "setfenv", "dofile", "loadfile", "print",
    ] {
        let body = format!("return {name}");
        let r = on(&mut s, &mut a, &["EVAL", &body, "0"]).reply;
        assert!(
            matches!(&r, Value::Error(e) if e.contains("nonexistent global variable")),
            "{name}: {r:?}"
        );
    }
    assert_eq!(
        on(&mut s, &mut a, &["EVAL", "return string.rep('ab', 3)", "0"]).reply,
        Value::bulk(b"ababab")
    );
}

#[test]
fn garbage_a_script_caught_is_collected_for_the_next() {
    let (mut s, mut a, _) = server(5000);
    // Fills the cap inside a pcall. Where the memory error strikes is Lua's affair (it may
    // also strike outside the pcall, in the wrapper's own allocations), so either reply
    // is right; what matters is that the next scripts run.
    let hoard = "local t = {} local ok = pcall(function() while true do t[#t + 1] = string.rep('x', 65536) .. #t end end) return 1";
    let r = on(&mut s, &mut a, &["EVAL", hoard, "0"]).reply;
    assert!(
        r == Value::int(1) || matches!(&r, Value::Error(e) if e.ends_with("not enough memory")),
        "{r:?}"
    );
    for _ in 0..3 {
        assert_eq!(
            on(&mut s, &mut a, &["EVAL", "return 'alive'", "0"]).reply,
            Value::bulk(b"alive")
        );
    }
}
