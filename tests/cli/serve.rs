//! `locksim serve`: the Redis model on loopback answers a real socket as the
//! simulations' clients are answered, and Debian's `etcdctl` works against the Raft
//! model (the replies themselves are compared with the real servers by the `fidelity`
//! tests: `tests/fidelity/{redis,etcd,zk}.rs`).

use crate::support::served;

use locksim::testing::redis::{decode, encode_command, Value};
use locksim::testing::ServeFamily;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn call(stream: &mut TcpStream, args: &[&[u8]]) -> Value {
    let mut out = Vec::new();
    encode_command(args, &mut out);
    stream.write_all(&out).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some((v, _)) = decode(&buf).expect("a RESP reply") {
            return v;
        }
        let n = stream.read(&mut chunk).expect("a reply");
        assert!(n > 0, "the server closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[test]
fn the_redis_model_serves_a_lock_on_loopback() {
    let model = served::serve(ServeFamily::Redis, 1, 100);
    let port = model.port();
    let mut a = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut b = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let lock: &[&[u8]] = &[b"SET", b"lock", b"a", b"NX", b"PX", b"200"];
    assert_eq!(call(&mut a, lock), Value::ok());
    let other: &[&[u8]] = &[b"SET", b"lock", b"b", b"NX", b"PX", b"200"];
    assert_eq!(call(&mut b, other), Value::Bulk(None));
    // The lease runs on the machine's clock: after it, the other client gets the lock.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(call(&mut b, other), Value::ok());
    let release = b"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    let stale: &[&[u8]] = &[b"EVAL", release, b"1", b"lock", b"a"];
    assert_eq!(call(&mut a, stale), Value::Integer(0));
    let own: &[&[u8]] = &[b"EVAL", release, b"1", b"lock", b"b"];
    assert_eq!(call(&mut b, own), Value::Integer(1));
}

/// Runs Debian's `etcdctl` (3.4) against `endpoint`; its stdout, or a panic with its
/// stderr. Without `etcdctl` it panics and says how to install it. `timeout` kills it
/// after 30 s: `lock` and `lease keep-alive` take no `--command-timeout`, and a model
/// that never answered would otherwise hang the test.
pub(crate) fn etcdctl(endpoint: &str, args: &[&str], stdin: Option<&str>) -> String {
    use std::process::{Command, Stdio};
    let mut child = Command::new("timeout")
        .args(["-s", "KILL", "30", "etcdctl"])
        .env("ETCDCTL_API", "3")
        .arg(format!("--endpoints={endpoint}"))
        .arg("--command-timeout=5s")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("etcdctl runs (Debian: apt-get install etcd-client; scripts/test does)");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "etcdctl {args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// `locksim serve raft`: Debian's etcdctl, a real etcd client, puts, reads, runs a txn,
/// keeps a lease alive and takes a lock on the etcd model (one member, etcd's timing).
#[test]
fn etcdctl_works_against_the_raft_model() {
    let model = served::serve(ServeFamily::Raft, 1, 100);
    let port = model.port();
    let ep = format!("127.0.0.1:{port}");
    let ep = ep.as_str();
    // A one-member cluster elects itself within an election timeout or two.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while etcdctl_status(ep).is_none() {
        assert!(std::time::Instant::now() < deadline, "no leader in 10 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(etcdctl(ep, &["put", "foo", "bar"], None), "OK\n");
    assert_eq!(etcdctl(ep, &["get", "foo"], None), "foo\nbar\n");
    let txn = "create(\"foo\") > \"0\"\n\nput foo baz\n\nput foo nope\n\n";
    assert_eq!(etcdctl(ep, &["txn"], Some(txn)), "SUCCESS\n\nOK\n");
    assert_eq!(
        etcdctl(ep, &["get", "foo", "--print-value-only"], None),
        "baz\n"
    );

    let grant = etcdctl(ep, &["lease", "grant", "5"], None);
    let lease = grant.split_whitespace().nth(1).expect("lease <id> granted");
    assert_eq!(grant, format!("lease {lease} granted with TTL(5s)\n"));
    assert_eq!(
        etcdctl(ep, &["put", "k", "v", &format!("--lease={lease}")], None),
        "OK\n"
    );
    assert_eq!(
        etcdctl(ep, &["lease", "keep-alive", "--once", lease], None),
        format!("lease {lease} keepalived with TTL(5)\n")
    );
    let ttl = etcdctl(ep, &["lease", "timetolive", lease, "--keys"], None);
    assert!(ttl.ends_with("attached keys([k])\n"), "{ttl}");
    etcdctl(ep, &["lease", "revoke", lease], None);
    assert_eq!(
        etcdctl(ep, &["get", "k"], None),
        "",
        "revoked with its lease"
    );

    // etcdctl's lock is etcd's concurrency.Mutex: it holds the lock while the command runs.
    let held = etcdctl(ep, &["lock", "mylock", "echo", "held"], None);
    assert_eq!(held, "held\n");
    assert_eq!(
        etcdctl(ep, &["get", "mylock", "--prefix"], None),
        "",
        "unlocked"
    );
}

/// `etcdctl endpoint status` once the member has a leader, else `None`.
pub(crate) fn etcdctl_status(endpoint: &str) -> Option<String> {
    let out = std::process::Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([&format!("--endpoints={endpoint}"), "endpoint", "status"])
        .output()
        .expect("etcdctl runs (Debian: apt-get install etcd-client; scripts/test does)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success() && text.contains("true")).then_some(text)
}

/// `locksim serve raft --nodes 3`: etcdctl through a follower. Its proposals go through
/// Raft, and its lessor calls (keep-alive, time-to-live, lease list) are forwarded to the
/// leader, as etcd's followers do: a real client need not find the leader.
#[test]
fn etcdctl_works_through_a_follower_of_a_raft_cluster() {
    let model = served::serve(ServeFamily::Raft, 3, 100);
    let all: Vec<String> = model
        .ports
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let follower = loop {
        let leader = all.iter().position(|ep| etcdctl_status(ep).is_some());
        if let Some(leader) = leader {
            break all[(leader + 1) % all.len()].clone();
        }
        assert!(std::time::Instant::now() < deadline, "no leader in 15 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    let ep = follower.as_str();
    assert_eq!(etcdctl(ep, &["put", "k", "v"], None), "OK\n");
    let grant = etcdctl(ep, &["lease", "grant", "5"], None);
    let lease = grant.split_whitespace().nth(1).expect("lease <id> granted");
    assert_eq!(
        etcdctl(ep, &["lease", "keep-alive", "--once", lease], None),
        format!("lease {lease} keepalived with TTL(5)\n")
    );
    let ttl = etcdctl(ep, &["lease", "timetolive", lease], None);
    assert!(ttl.contains("granted with TTL(5s)"), "{ttl}");
    let list = etcdctl(ep, &["lease", "list"], None);
    assert!(list.contains(lease), "{list}");
    let held = etcdctl(ep, &["lock", "mylock", "echo", "held"], None);
    assert_eq!(held, "held\n");
}
