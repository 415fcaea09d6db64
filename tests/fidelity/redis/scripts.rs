//! EVAL, EVALSHA and SCRIPT, and the lock scripts of redis-py, node-redlock and Redisson,
//! as sequences for the differential harness.

use super::*;

pub(super) fn scripting(h: &mut Harness) {
    h.section("scripting", 1);
    let cases: &[&[&str]] = &[
        &["EVAL", "return 1", "0"],
        &["EVAL", "return {1, 2, nil, 3}", "0"],
        &["EVAL", "return 3.99", "0"],
        &["EVAL", "return -3.99", "0"],
        &["EVAL", "return 1e20", "0"],
        &["EVAL", "return true", "0"],
        &["EVAL", "return false", "0"],
        &["EVAL", "return nil", "0"],
        &["EVAL", "return 'str'", "0"],
        &[
            "EVAL",
            "return {1.5, 'a', true, false, {ok='x'}, {err='E y'}}",
            "0",
        ],
        &["EVAL", "return {ok='fine'}", "0"],
        &["EVAL", "return {err='MY boom'}", "0"],
        &["EVAL", "return redis.error_reply('bad')", "0"],
        &["EVAL", "return redis.error_reply('-CODE bad')", "0"],
        &["EVAL", "return redis.error_reply()", "0"],
        &["EVAL", "return redis.status_reply('yo')", "0"],
        &["EVAL", "return redis.status_reply(1)", "0"],
        &["EVAL", "return {double=3.5}", "0"],
        &["EVAL", "return KEYS[1] .. ARGV[1]", "1", "a", "b"],
        &["EVAL", "return #ARGV", "0"],
        &["EVAL", "return table.concat(ARGV, ',')", "0", "a", "b", "c"],
        &["EVAL", "return redis.call('ping')", "0"],
        &[
            "EVAL",
            "local x = redis.call('ping'); return type(x) .. tostring(x.ok)",
            "0",
        ],
        &["EVAL", "return redis.call('get', 'nokey')", "0"],
        &["EVAL", "return type(redis.call('get', 'nokey'))", "0"],
        &["EVAL", "return redis.call('set', KEYS[1], 1.5)", "1", "f"],
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "f"],
        &["EVAL", "return redis.call('set', KEYS[1], 0.1)", "1", "f"],
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "f"],
        &[
            "EVAL",
            "return redis.call('incrby', KEYS[1], 2^53)",
            "1",
            "n",
        ],
        &["EVAL", "return redis.call('nosuch')", "0"],
        &["EVAL", "return redis.call()", "0"],
        &["EVAL", "return redis.call('get')", "0"],
        &["EVAL", "return redis.call('get', {})", "0"],
        &["EVAL", "return redis.call('multi')", "0"],
        &["EVAL", "return redis.call('eval', 'return 1', '0')", "0"],
        &["EVAL", "return redis.call('subscribe', 'x')", "0"],
        &["EVAL", "return redis.call('client', 'foo')", "0"],
        &["EVAL", "return redis.sha1hex('')", "0"],
        &["EVAL", "return redis.sha1hex('abc')", "0"],
        &["EVAL", "return redis.REDIS_VERSION", "0"],
        &[
            "EVAL",
            "redis.log(redis.LOG_WARNING, 'hello'); return 1",
            "0",
        ],
        &["EVAL", "redis.log(redis.LOG_WARNING); return 1", "0"],
        &["EVAL", "return math.random(100)", "0"],
        &["EVAL", "return {math.random(100), math.random(1, 6)}", "0"],
        &["EVAL", "return tostring(math.random())", "0"],
        &["EVAL", "math.randomseed(5); return math.random(100)", "0"],
        &["EVAL", "return math.random(0)", "0"],
        &["EVAL", "return foo()", "0"],
        &["EVAL", "return x", "0"],
        &["EVAL", "x = 1", "0"],
        &["EVAL", "return 1 +", "0"],
        &["EVAL", "error('boom')", "0"],
        &["EVAL", "error({err='MY boom'})", "0"],
        &["EVAL", "local t = nil\nreturn t.x", "0"],
        &["EVAL", "return os.time()", "0"],
        &["EVAL", "return loadfile", "0"],
        &["EVAL", "return print", "0"],
        &["EVAL", "return dofile('x')", "0"],
        &["EVAL", "return type(loadstring)", "0"],
        &["EVAL", "return string.format('%d-%s', 3, 'x')", "0"],
        &["EVAL", "return {pcall(error, 'e')}", "0"],
        &["EVAL", "return redis.pcall('incr', KEYS[1])", "1", "s"],
        &["EVAL", "return 1", "x"],
        &["EVAL", "return 1", "2", "a"],
        &["EVAL", "return 1", "-1"],
        &["EVAL", "return 1"],
        &["EVALSHA", "abc", "0"],
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        &["SCRIPT", "LOAD", "return 1 +"],
        &["SCRIPT", "LOAD"],
        &["SCRIPT", "FLUSH", "LAZY"],
        &["SCRIPT", "KILL2"],
        &["SCRIPT"],
    ];
    h.ex(0, "SET s notanumber");
    for args in cases {
        h.exa(0, args);
    }
    // Where a string key sits in a Lua table follows the string's hash: the order
    // `pairs` visits keys of 32 bytes or more in is Redis's only if every byte is
    // hashed, as Redis's Lua does (stock Lua 5.1 reads one byte in len/32 + 1).
    for len in [31, 32, 33, 40, 64, 100] {
        let pairs_order = format!(
            "local t = {{}} for i = 10, 29 do t[string.rep('k', {}) .. i] = i end \
             local o = {{}} for _, v in pairs(t) do o[#o + 1] = v end return o",
            len - 2
        );
        h.exa(0, &["EVAL", &pairs_order, "0"]);
    }
    // A script keeps the writes it made before failing (no rollback).
    h.exa(
        0,
        &[
            "EVAL",
            "redis.call('set', KEYS[1], 'before')\nredis.call('incr', KEYS[2])\nredis.call('set', KEYS[1], 'after')",
            "2",
            "partial",
            "s",
        ],
    );
    h.ex(0, "GET partial");
    // pcall catches redis.call's error and gets its text.
    h.exa(
        0,
        &[
            "EVAL",
            "local ok, e = pcall(redis.call, 'incr', KEYS[1])\nreturn {tostring(ok), e}",
            "1",
            "s",
        ],
    );
    h.exa(
        0,
        &[
            "EVAL",
            "local t = redis.pcall('incr', KEYS[1])\nreturn t['err']",
            "1",
            "s",
        ],
    );
    // SELECT inside a script stays inside it.
    h.exa(
        0,
        &[
            "EVAL",
            "redis.call('select', 3)\nredis.call('set', 'in3', 'x')\nreturn redis.call('dbsize')",
            "0",
        ],
    );
    h.ex(0, "EXISTS in3");
    let sha = h.exa(0, &["SCRIPT", "LOAD", "return ARGV[1]"]);
    let sha = String::from_utf8_lossy(sha.as_bulk().unwrap_or_default()).into_owned();
    h.exa(0, &["EVALSHA", &sha, "0", "via-sha"]);
    h.exa(0, &["EVALSHA", &sha.to_uppercase(), "0", "upper"]);
    h.exa(
        0,
        &[
            "SCRIPT",
            "EXISTS",
            &sha,
            "0000000000000000000000000000000000000000",
        ],
    );
    h.ex(0, "SCRIPT FLUSH ASYNC");
    h.exa(0, &["EVALSHA", &sha, "0", "gone"]);
    h.exa(0, &["SCRIPT", "EXISTS", &sha]);
    h.exa(0, &["EVAL", "return redis.call('type', KEYS[1])", "1", "s"]);
}

/// redis-py's `Lock`.
pub(super) fn redis_py_lock(h: &mut Harness) {
    h.section("redis-py Lock", 1);
    let (release, extend, reacquire) = (
        script("redis-py-release"),
        script("redis-py-extend"),
        script("redis-py-reacquire"),
    );
    h.ex(0, "SET lk tok NX PX 10000");
    h.ex(0, "SET lk other NX PX 10000");
    h.exa(0, &["EVAL", &release, "1", "lk", "other"]);
    h.exa(0, &["EVAL", &extend, "1", "lk", "tok", "5000", "0"]);
    h.near(0, "PTTL lk", 50);
    h.exa(0, &["EVAL", &extend, "1", "lk", "tok", "20000", "1"]);
    h.near(0, "PTTL lk", 50);
    h.exa(0, &["EVAL", &extend, "1", "lk", "other", "1000", "1"]);
    h.exa(0, &["EVAL", &reacquire, "1", "lk", "tok", "3000"]);
    h.near(0, "PTTL lk", 50);
    h.exa(0, &["EVAL", &reacquire, "1", "lk", "other", "3000"]);
    h.exa(0, &["EVAL", &release, "1", "lk", "tok"]);
    h.exa(0, &["EVAL", &release, "1", "lk", "tok"]);
    h.exa(0, &["EVAL", &extend, "1", "lk", "tok", "1000", "0"]);
    h.ex(0, "SET nottl tok");
    h.exa(0, &["EVAL", &extend, "1", "nottl", "tok", "1000", "0"]);
    h.ex(0, "HSET hl f v");
    h.exa(0, &["EVAL", &release, "1", "hl", "tok"]);
}

/// node-redlock's scripts (v5, and v4's unlock).
pub(super) fn node_redlock(h: &mut Harness) {
    h.section("node-redlock", 1);
    let (acquire, extend, release, v4) = (
        script("node-redlock-acquire"),
        script("node-redlock-extend"),
        script("node-redlock-release"),
        script("node-redlock-v4-unlock"),
    );
    h.exa(0, &["EVAL", &acquire, "2", "r1", "r2", "val", "10000"]);
    h.exa(0, &["EVAL", &acquire, "2", "r1", "r2", "other", "10000"]);
    h.exa(0, &["EVAL", &acquire, "1", "r3", "other", "10000"]);
    h.exa(0, &["EVAL", &extend, "2", "r1", "r2", "val", "20000"]);
    h.near(0, "PTTL r2", 50);
    h.exa(0, &["EVAL", &extend, "2", "r1", "r3", "val", "20000"]);
    h.exa(0, &["EVAL", &release, "3", "r1", "r2", "r3", "val"]);
    h.ex(0, "EXISTS r1 r2 r3");
    h.ex(0, "SET r4 val PX 10000");
    h.exa(0, &["EVAL", &v4, "1", "r4", "nope"]);
    h.exa(0, &["EVAL", &v4, "1", "r4", "val"]);
    h.exa(0, &["EVAL", &v4, "1", "r4", "val"]);
    h.ex(0, "HSET r5 f v");
    h.exa(0, &["EVAL", &release, "1", "r5", "val"]);
}

/// Redisson's `RLock`, with its unlock's pub/sub message.
pub(super) fn redisson_rlock(h: &mut Harness) {
    h.section("Redisson RLock", 2);
    let (lock, unlock, renew) = (
        script("redisson-lock"),
        script("redisson-unlock"),
        script("redisson-renew"),
    );
    let chan = "redisson_lock__channel:{L}";
    h.exa(1, &["SUBSCRIBE", chan]);
    h.exa(0, &["EVAL", &lock, "1", "L", "30000", "uuid:1"]);
    h.exa(0, &["EVAL", &lock, "1", "L", "30000", "uuid:1"]);
    h.exa(0, &["HGET", "L", "uuid:1"]);
    let busy = ["EVAL", &lock, "1", "L", "30000", "uuid:2"];
    h.run(
        0,
        busy.iter().map(|a| a.as_bytes().to_vec()).collect(),
        Cmp::Near(50),
    );
    h.exa(0, &["EVAL", &renew, "1", "L", "60000", "uuid:1"]);
    h.near(0, "PTTL L", 50);
    h.exa(0, &["EVAL", &renew, "1", "L", "60000", "uuid:2"]);
    let unlock_as = |owner: &str, latch: &str| -> Vec<Vec<u8>> {
        [
            "EVAL", &unlock, "3", "L", chan, latch, "0", "30000", owner, "publish", "13000",
        ]
        .iter()
        .map(|a| a.as_bytes().to_vec())
        .collect()
    };
    h.run(0, unlock_as("uuid:2", "latch:a"), Cmp::Exact);
    h.run(0, unlock_as("uuid:1", "latch:b"), Cmp::Exact);
    // The same unlock again answers from its latch: idempotent.
    h.run(0, unlock_as("uuid:1", "latch:b"), Cmp::Exact);
    h.run(0, unlock_as("uuid:1", "latch:c"), Cmp::Exact);
    h.recv(1);
    h.ex(0, "EXISTS L");
    h.exa(0, &["EVAL", &renew, "1", "L", "60000", "uuid:1"]);
    h.ex(0, "SET L str");
    h.exa(0, &["EVAL", &lock, "1", "L", "30000", "uuid:1"]);
}
