//! `bench`'s Lua lines: what the Redis model's embedded Lua 5.1 costs per lock script,
//! against plain commands, and what a script that never ends, or allocates without
//! bound, costs in real time.

use std::time::Instant;

/// Redisson's `RLock` scripts, as `sims/scripts/` has them: the cost of a user script.
const REDISSON_LOCK: &str = include_str!("../../../sims/scripts/redisson-lock.lua");
const REDISSON_UNLOCK: &str = include_str!("../../../sims/scripts/redisson-unlock.lua");

/// One acquire + release pair on the Redis model alone, three ways: plain commands
/// (`SET NX PX`, `DEL`), the project's scripts (token acquire, compare-and-delete) and
/// Redisson's, both by `EVALSHA` in the embedded Lua 5.1. Also a fresh interpreter, which
/// every server (every seed, every restart) builds at its first script.
pub(super) fn bench_scripts(pairs: u32) {
    use crate::locks::redis::model::{
        script_sha, RedisServer, TOKEN_ACQUIRE_SCRIPT, UNLOCK_SCRIPT,
    };
    let words =
        |ws: &[&str]| -> Vec<Vec<u8>> { ws.iter().map(|w| w.as_bytes().to_vec()).collect() };
    let evalsha = |script: &str, keys: &[&str], args: &[&str]| {
        let (sha, n) = (script_sha(script), keys.len().to_string());
        let mut v = vec!["EVALSHA", sha.as_str(), n.as_str()];
        v.extend_from_slice(keys);
        v.extend_from_slice(args);
        words(&v)
    };
    let pair_us = |scripts: &[&str], acquire: Vec<Vec<u8>>, release: Vec<Vec<u8>>| {
        let mut server = RedisServer::new();
        let mut client = server.connect();
        for s in scripts {
            server.execute_as(&mut client, 0, &words(&["SCRIPT", "LOAD", s]));
        }
        let start = Instant::now();
        for i in 0..pairs {
            let now = i64::from(i);
            std::hint::black_box(server.execute_as(&mut client, now, &acquire));
            std::hint::black_box(server.execute_as(&mut client, now, &release));
        }
        start.elapsed().as_secs_f64() * 1e6 / f64::from(pairs)
    };
    let (lock, owner) = ("L", "client-0:00000000deadbeef");
    let plain = pair_us(
        &[],
        words(&["SET", lock, owner, "NX", "PX", "1000"]),
        words(&["DEL", lock]),
    );
    let ours = pair_us(
        &[TOKEN_ACQUIRE_SCRIPT, UNLOCK_SCRIPT],
        evalsha(TOKEN_ACQUIRE_SCRIPT, &[lock, "L:token"], &[owner, "1000"]),
        evalsha(UNLOCK_SCRIPT, &[lock], &[owner]),
    );
    let (channel, latch) = ("redisson_lock__channel:{L}", "redisson_unlock_latch:{L}:x");
    let redisson = pair_us(
        &[REDISSON_LOCK, REDISSON_UNLOCK],
        evalsha(REDISSON_LOCK, &[lock], &["1000", owner]),
        evalsha(
            REDISSON_UNLOCK,
            &[lock, channel, latch],
            &["0", "1000", owner, "publish", "1"],
        ),
    );
    let fresh = 200;
    let start = Instant::now();
    for _ in 0..fresh {
        let mut server = RedisServer::new();
        let mut client = server.connect();
        std::hint::black_box(server.execute_as(
            &mut client,
            0,
            &words(&["SCRIPT", "LOAD", UNLOCK_SCRIPT]),
        ));
    }
    let fresh_us = start.elapsed().as_secs_f64() * 1e6 / f64::from(fresh);
    println!(
        "lua scripts (Redis model alone, acquire + release, {pairs} pairs): SET NX PX + DEL {plain:.1} us; \
         token acquire + compare-and-delete scripts {ours:.1} us ({:.1}x); Redisson's lock + unlock {redisson:.1} us ({:.1}x); \
         a server's first script (new Lua 5.1 interpreter) {fresh_us:.0} us",
        ours / plain,
        redisson / plain
    );
    bench_endless_script();
    bench_unbounded_script(20);
}

/// What a script that allocates without bound costs in real time: each run grows a
/// string to the interpreter's memory cap and gets Lua's memory error, as every retry
/// of a client whose acquire script does this would.
fn bench_unbounded_script(runs: u32) {
    use crate::locks::redis::model::RedisServer;
    use crate::locks::redis::resp::Value;
    let mut server = RedisServer::new();
    let mut client = server.connect();
    let eval = eval_no_keys("local s = 'x' while true do s = s .. s end");
    let mut capped = 0;
    let start = Instant::now();
    for _ in 0..runs {
        let out = server.execute_as(&mut client, 0, &eval);
        capped +=
            u32::from(matches!(&out.reply, Value::Error(e) if e.ends_with("not enough memory")));
    }
    let ms = start.elapsed().as_secs_f64() * 1e3 / f64::from(runs);
    println!(
        "lua: a script that allocates without bound (s = s .. s): {ms:.1} ms a run \
         ({capped} of {runs} runs ended on the memory cap)"
    );
}

/// What a script that never ends costs in real time: the model runs it to its budget
/// (Redis's default 5 s `busy-reply-threshold` of simulated Lua) once per busy period.
fn bench_endless_script() {
    use crate::locks::redis::model::RedisServer;
    let mut server = RedisServer::new();
    let mut client = server.connect();
    let eval = eval_no_keys("while true do end");
    let start = Instant::now();
    let out = std::hint::black_box(server.execute_as(&mut client, 0, &eval));
    let wall = start.elapsed().as_secs_f64();
    let instructions = out.script.map_or(0, |r| r.instructions);
    println!(
        "lua: a script that never ends, run to the default budget ({:.0} M instructions, 5 s of simulated Lua): {wall:.2} s, {:.0} M instructions/s",
        instructions as f64 / 1e6,
        instructions as f64 / 1e6 / wall
    );
}

/// `EVAL script 0` as a command's words.
fn eval_no_keys(script: &str) -> Vec<Vec<u8>> {
    ["EVAL", script, "0"]
        .iter()
        .map(|w| w.as_bytes().to_vec())
        .collect()
}
