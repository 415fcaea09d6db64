//! Unit tests of the blocking pops (BLPOP, BRPOP) and KEYS.

use super::*;

const T0: i64 = 1_700_000_000_000;

fn args(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.as_bytes().to_vec()).collect()
}

fn on(s: &mut RedisServer, cl: &mut Client, now: i64, words: &[&str]) -> Outcome {
    s.execute_as(cl, now, &args(words))
}

fn pair(key: &str, value: &str) -> Value {
    Value::array(vec![
        Value::bulk(key.as_bytes()),
        Value::bulk(value.as_bytes()),
    ])
}

#[test]
fn a_list_there_pops_at_once_from_the_first_in_argument_order() {
    let mut s = RedisServer::new();
    let mut a = s.connect();
    on(&mut s, &mut a, T0, &["RPUSH", "l2", "x", "y"]);
    on(&mut s, &mut a, T0, &["RPUSH", "l3", "z"]);
    let o = on(&mut s, &mut a, T0, &["BLPOP", "none", "l2", "l3", "0"]);
    assert_eq!(o.reply, pair("l2", "x"));
    assert_eq!(o.blocked, None);
    assert_eq!(o.propagate, vec![args(&["LPOP", "l2"])]);
    let o = on(&mut s, &mut a, T0, &["BRPOP", "l2", "0"]);
    assert_eq!(o.reply, pair("l2", "y"));
    assert_eq!(o.propagate, vec![args(&["RPOP", "l2"])]);
    assert_eq!(
        on(&mut s, &mut a, T0, &["EXISTS", "l2"]).reply,
        Value::int(0)
    );
}

#[test]
fn wrong_type_and_bad_timeouts_answer_errors() {
    let mut s = RedisServer::new();
    let mut a = s.connect();
    on(&mut s, &mut a, T0, &["SET", "s", "v"]);
    on(&mut s, &mut a, T0, &["RPUSH", "l", "x"]);
    let o = on(&mut s, &mut a, T0, &["BLPOP", "none", "s", "l", "0"]);
    assert_eq!(o.reply, Value::err(super::ERR_WRONGTYPE));
    // The list comes first: no error.
    assert_eq!(
        on(&mut s, &mut a, T0, &["BLPOP", "l", "s", "0"]).reply,
        pair("l", "x")
    );
    let o = on(&mut s, &mut a, T0, &["BLPOP", "l", "-1"]);
    assert_eq!(o.reply, Value::err("ERR timeout is negative"));
    let o = on(&mut s, &mut a, T0, &["BRPOP", "l", "soon"]);
    assert_eq!(
        o.reply,
        Value::err("ERR timeout is not a float or out of range")
    );
    let o = on(&mut s, &mut a, T0, &["BLPOP", "l"]);
    assert_eq!(
        o.reply,
        Value::err("ERR wrong number of arguments for 'blpop' command")
    );
    assert!(!s.is_blocked(a.id));
}

#[test]
fn a_push_serves_the_blocked_in_the_order_they_blocked() {
    let mut s = RedisServer::new();
    let (mut a, mut b, mut p) = (s.connect(), s.connect(), s.connect());
    let o = on(&mut s, &mut a, T0, &["BLPOP", "q", "0"]);
    assert_eq!(o.blocked, Some(Block::Forever));
    let o = on(&mut s, &mut b, T0, &["BRPOP", "other", "q", "1.5"]);
    assert_eq!(o.blocked, Some(Block::Until(T0 + 1500)));
    assert!(s.is_blocked(a.id) && s.is_blocked(b.id));
    let o = on(&mut s, &mut p, T0 + 1, &["RPUSH", "q", "1", "2", "3"]);
    // The pusher sees the length it made; the waiters pop after the command.
    assert_eq!(o.reply, Value::int(3));
    assert_eq!(
        o.unblocked,
        vec![(a.id, pair("q", "1")), (b.id, pair("q", "3"))]
    );
    assert_eq!(
        o.propagate,
        vec![
            args(&["RPUSH", "q", "1", "2", "3"]),
            args(&["LPOP", "q"]),
            args(&["RPOP", "q"])
        ]
    );
    assert!(!s.is_blocked(a.id) && !s.is_blocked(b.id));
    assert_eq!(
        on(&mut s, &mut p, T0, &["LRANGE", "q", "0", "-1"]).reply,
        Value::array(vec![Value::bulk(b"2")])
    );
}

#[test]
fn a_push_of_one_wakes_one_and_the_list_goes() {
    let mut s = RedisServer::new();
    let (mut a, mut b, mut p) = (s.connect(), s.connect(), s.connect());
    on(&mut s, &mut a, T0, &["BLPOP", "q", "0"]);
    on(&mut s, &mut b, T0, &["BLPOP", "q", "0"]);
    let o = on(&mut s, &mut p, T0, &["LPUSH", "q", "only"]);
    assert_eq!(o.unblocked, vec![(a.id, pair("q", "only"))]);
    assert_eq!(
        on(&mut s, &mut p, T0, &["EXISTS", "q"]).reply,
        Value::int(0)
    );
    assert!(s.is_blocked(b.id));
    // The one still blocked leaves the queue when its connection closes.
    s.disconnect(&mut b);
    let o = on(&mut s, &mut p, T0, &["LPUSH", "q", "again"]);
    assert!(o.unblocked.is_empty());
}

#[test]
fn timeouts_pass_on_the_servers_clock() {
    let mut s = RedisServer::new();
    let (mut a, mut b) = (s.connect(), s.connect());
    on(&mut s, &mut a, T0, &["BLPOP", "q", "0.1"]);
    on(&mut s, &mut b, T0, &["BLPOP", "q", "0"]);
    assert!(s.time_out_blocked(T0 + 100).is_empty());
    assert_eq!(
        s.time_out_blocked(T0 + 101),
        vec![(a.id, Value::Array(None))]
    );
    assert!(!s.is_blocked(a.id));
    assert!(s.time_out_blocked(T0 + 1_000_000).is_empty());
    assert!(s.is_blocked(b.id));
}

#[test]
fn a_transaction_never_blocks_and_serves_after_exec() {
    let mut s = RedisServer::new();
    let (mut a, mut b) = (s.connect(), s.connect());
    for w in [&["MULTI"][..], &["BLPOP", "q", "0"], &["RPUSH", "q", "x"]] {
        on(&mut s, &mut a, T0, w);
    }
    let o = on(&mut s, &mut a, T0, &["EXEC"]);
    assert_eq!(
        o.reply,
        Value::array(vec![Value::Array(None), Value::int(1)])
    );
    assert_eq!(o.blocked, None);
    // A push and a pop in one transaction: the waiter finds nothing after it.
    on(&mut s, &mut b, T0, &["BLPOP", "t", "0"]);
    for w in [&["MULTI"][..], &["RPUSH", "t", "y"], &["LPOP", "t"]] {
        on(&mut s, &mut a, T0, w);
    }
    let o = on(&mut s, &mut a, T0, &["EXEC"]);
    assert!(o.unblocked.is_empty());
    assert!(s.is_blocked(b.id));
}

#[test]
fn scripts_may_not_block_but_their_pushes_serve() {
    let mut s = RedisServer::new();
    let (mut a, mut b) = (s.connect(), s.connect());
    let o = on(
        &mut s,
        &mut a,
        T0,
        &["EVAL", "return redis.call('blpop', 'q', 0)", "0"],
    );
    assert!(o
        .reply
        .as_error()
        .is_some_and(|e| e.starts_with("ERR This Redis command is not allowed from script")));
    on(&mut s, &mut b, T0, &["BLPOP", "sig", "0"]);
    let script = "redis.call('lpush', KEYS[1], 1) redis.call('pexpire', KEYS[1], 1000) return 0";
    let o = on(&mut s, &mut a, T0, &["EVAL", script, "1", "sig"]);
    assert_eq!(o.unblocked, vec![(b.id, pair("sig", "1"))]);
}

#[test]
fn a_key_of_another_type_wakes_no_one() {
    let mut s = RedisServer::new();
    let (mut a, mut p) = (s.connect(), s.connect());
    on(&mut s, &mut a, T0, &["BLPOP", "q", "0"]);
    let o = on(&mut s, &mut p, T0, &["SET", "q", "str"]);
    assert!(o.unblocked.is_empty());
    on(&mut s, &mut p, T0, &["DEL", "q"]);
    let o = on(&mut s, &mut p, T0, &["RPUSH", "q", "v"]);
    assert_eq!(o.unblocked, vec![(a.id, pair("q", "v"))]);
}

#[test]
fn keys_matches_globs_and_leaves_out_expired_keys() {
    let mut s = RedisServer::new();
    let mut a = s.connect();
    for k in ["lock:a", "lock:b", "lock-signal:a", "other"] {
        on(&mut s, &mut a, T0, &["SET", k, "1"]);
    }
    on(&mut s, &mut a, T0, &["SET", "lock:gone", "1", "PX", "10"]);
    let names = |v: Value| -> Vec<String> {
        v.as_array()
            .unwrap_or_default()
            .iter()
            .map(|x| String::from_utf8_lossy(x.as_bulk().unwrap_or_default()).into_owned())
            .collect()
    };
    let o = on(&mut s, &mut a, T0 + 11, &["KEYS", "lock:*"]);
    assert_eq!(names(o.reply), ["lock:a", "lock:b"]);
    // Listing deletes nothing.
    assert!(o.propagate.is_empty() && o.expired.is_empty());
    let o = on(&mut s, &mut a, T0 + 11, &["KEYS", "lock[-:]?"]);
    assert_eq!(names(o.reply), ["lock:a", "lock:b"]);
    let o = on(&mut s, &mut a, T0 + 11, &["KEYS", "*"]);
    assert_eq!(names(o.reply).len(), 4);
    let o = on(
        &mut s,
        &mut a,
        T0 + 11,
        &["EVAL", "return #redis.call('keys', 'lock:*')", "0"],
    );
    assert_eq!(o.reply, Value::int(2));
}
