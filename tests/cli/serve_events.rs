//! `locksim serve --events` and `--seed`: what the served models report, and ids that
//! differ from one start of `serve` to the next unless a seed is given. Each test takes a
//! few seconds: short session timeouts and lease TTLs (a small `--tick-ms`).

use super::serve::{etcdctl, etcdctl_status};
use crate::support::served;

use locksim::testing::zk::{
    decode_reply, encode_request, ClientFrame, CreateMode, OpCode, Request, Response, ServerFrame,
};
use locksim::testing::ServeFamily;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// One ZooKeeper frame's payload from `stream`.
fn read_frame(stream: &mut TcpStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).expect("a frame length");
    let mut payload = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut payload).expect("a frame");
    payload
}

/// A ZooKeeper session on `port` asking for `timeout_ms`: the connection and the
/// session id the server handed out.
fn zk_session(port: u16, timeout_ms: u64) -> (TcpStream, u64) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let hello = ClientFrame {
        xid: 0,
        req: Request::Connect {
            session: 0,
            timeout_ms,
            last_zxid: 0,
            passwd: vec![0; 16],
        },
    };
    let mut out = Vec::new();
    encode_request(&hello, &mut out);
    stream.write_all(&out).unwrap();
    match decode_reply(&read_frame(&mut stream), true, |_| None) {
        Ok(ServerFrame::Reply {
            resp: Response::Connected { session, .. },
            ..
        }) => (stream, session),
        other => panic!("unexpected handshake reply {other:?}"),
    }
}

/// Creates `path` as an ephemeral node of the session on `stream`.
fn create_ephemeral(stream: &mut TcpStream, path: &str) {
    let create = ClientFrame {
        xid: 1,
        req: Request::Create {
            path: path.into(),
            data: Vec::new(),
            mode: CreateMode::Ephemeral,
            with_stat: false,
        },
    };
    let mut out = Vec::new();
    encode_request(&create, &mut out);
    stream.write_all(&out).unwrap();
    let reply = decode_reply(&read_frame(stream), false, |x| {
        (x == 1).then_some(OpCode::Create)
    });
    assert!(
        matches!(
            reply,
            Ok(ServerFrame::Reply {
                resp: Response::Created { .. },
                ..
            })
        ),
        "{reply:?}"
    );
}

/// Every event line received until one satisfies `wanted` or `wait` passes; panics with
/// the lines seen if none did.
fn events_until(
    rx: &Receiver<String>,
    wait: Duration,
    wanted: impl Fn(&serde_json::Value) -> bool,
) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + wait;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(line) = rx.recv_timeout(left) else {
            break;
        };
        let event: serde_json::Value = serde_json::from_str(&line).expect("a JSON line");
        let done = wanted(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
    panic!("no such event within {wait:?}; saw {seen:#?}");
}

/// A session's expiry deletes an ephemeral node outside `/locks/` (no lock recipe's
/// layout assumed): `--events` names the node and its session.
#[test]
fn an_expired_ephemeral_node_outside_locks_is_reported() {
    let (model, rx) = served::serve_events(ServeFamily::Zk, 1, 100, 7, false);
    let (mut stream, session) = zk_session(model.port(), 200);
    create_ephemeral(&mut stream, "/service-leader");
    // Gone without a closeSession: the session expires after its 200 ms timeout.
    drop(stream);
    let seen = events_until(&rx, Duration::from_secs(5), |e| e["f"] == "expire");
    let expire = seen.last().unwrap();
    assert_eq!(expire["value"]["node"], "/service-leader", "{expire}");
    assert_eq!(
        expire["value"]["session"],
        format!("0x{session:x}"),
        "{expire}"
    );
    assert!(expire.get("key").is_none(), "no lock named: {expire}");
}

/// A client's own `closeSession` is a `revoke`, not an `expire`.
#[test]
fn a_closed_session_is_a_revoke() {
    let (model, rx) = served::serve_events(ServeFamily::Zk, 1, 100, 8, false);
    let (mut stream, session) = zk_session(model.port(), 2000);
    create_ephemeral(&mut stream, "/worker");
    let close = ClientFrame {
        xid: 2,
        req: Request::CloseSession,
    };
    let mut out = Vec::new();
    encode_request(&close, &mut out);
    stream.write_all(&out).unwrap();
    let seen = events_until(&rx, Duration::from_secs(5), |e| {
        e["f"] == "revoke" || e["f"] == "expire"
    });
    let revoke = seen.last().unwrap();
    assert_eq!(revoke["f"], "revoke", "{revoke}");
    assert_eq!(revoke["value"]["node"], "/worker", "{revoke}");
    assert_eq!(revoke["value"]["session"], format!("0x{session:x}"));
}

/// The same seed hands out the same session ids; another seed others.
#[test]
fn the_seed_decides_the_session_ids() {
    let ids: Vec<u64> = [1, 2, 1]
        .into_iter()
        .map(|seed| {
            let (model, _rx) = served::serve_events(ServeFamily::Zk, 1, 100, seed, false);
            zk_session(model.port(), 2000).1
        })
        .collect();
    assert_eq!(ids[0], ids[2], "same seed, same id");
    assert_ne!(ids[0], ids[1], "another seed, another id");
}

/// Waits for a one-member raft model on `port` to elect itself.
fn raft_endpoint(port: u16) -> String {
    let ep = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while etcdctl_status(&ep).is_none() {
        assert!(Instant::now() < deadline, "no leader in 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    ep
}

/// A lease granted with the shortest TTL, and a key `key` put with it: the lease's id.
fn leased_key(ep: &str, key: &str) -> String {
    let grant = etcdctl(ep, &["lease", "grant", "2"], None);
    let lease = grant.split_whitespace().nth(1).expect("lease <id> granted");
    let lease_flag = format!("--lease={lease}");
    assert_eq!(etcdctl(ep, &["put", key, "v", &lease_flag], None), "OK\n");
    lease.to_string()
}

/// A client's own `LeaseRevoke` is a `revoke`; a lease whose TTL ran out an `expire`;
/// both name the lease and its keys, none of which is under a lock prefix. No `apply`
/// lines unless asked for.
#[test]
fn raft_tells_a_revoke_from_an_expiry_and_names_the_keys() {
    // A 50 ms tick: the model's TTL second is one election timeout (500 ms), so the
    // shortest lease (2 of them) expires within about a second.
    let (model, rx) = served::serve_events(ServeFamily::Raft, 1, 50, 3, false);
    let ep = raft_endpoint(model.port());

    let revoked = leased_key(&ep, "config");
    etcdctl(&ep, &["lease", "revoke", &revoked], None);
    let seen = events_until(&rx, Duration::from_secs(5), |e| e["f"] == "revoke");
    let revoke = seen.last().unwrap();
    assert_eq!(revoke["value"]["lease"], revoked.as_str(), "{revoke}");
    assert_eq!(revoke["value"]["keys"], serde_json::json!(["config"]));

    let expired = leased_key(&ep, "worker");
    let seen = events_until(&rx, Duration::from_secs(5), |e| e["f"] == "expire");
    let expire = seen.last().unwrap();
    assert_eq!(expire["value"]["lease"], expired.as_str(), "{expire}");
    assert_eq!(expire["value"]["keys"], serde_json::json!(["worker"]));
    assert!(
        !seen.iter().any(|e| e["f"] == "apply" || e["f"] == "revoke"),
        "{seen:#?}"
    );
}

/// `apply` lines come only when asked for (`--events apply`).
#[test]
fn raft_apply_lines_come_on_request() {
    let (model, rx) = served::serve_events(ServeFamily::Raft, 1, 50, 4, true);
    let ep = raft_endpoint(model.port());
    assert_eq!(etcdctl(&ep, &["put", "k", "v"], None), "OK\n");
    events_until(&rx, Duration::from_secs(5), |e| e["f"] == "apply");
}

/// A `locksim serve` process, killed when dropped.
struct ServeProcess(Child);

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `locksim serve zk` with `args` on a free port; returns it, its port, and its
/// stdout's lines.
fn serve_zk_process(
    args: &[&str],
) -> (
    ServeProcess,
    u16,
    std::io::Lines<BufReader<std::process::ChildStdout>>,
) {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args([
            "serve",
            "zk",
            "--port",
            &port.to_string(),
            "--tick-ms",
            "100",
        ])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("locksim runs");
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (ServeProcess(child), port, lines)
}

/// The seed a `serve` banner prints, read from its first lines.
fn printed_seed(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> u64 {
    for line in lines.take(3) {
        let line = line.expect("a banner line");
        if let Some(rest) = line.trim().strip_prefix("ids from seed ") {
            let seed = rest.split_whitespace().next().unwrap_or_default();
            return seed.parse().expect("a seed");
        }
    }
    panic!("no seed printed");
}

/// Two starts of `locksim serve` hand out different session ids, each printing its
/// fresh seed; `--seed` with a printed seed hands out that start's ids again.
#[test]
fn each_serve_hands_out_other_ids_and_seed_repeats_them() {
    let mut starts = Vec::new();
    for args in [&[][..], &[][..]] {
        let (process, port, mut lines) = serve_zk_process(args);
        let seed = printed_seed(&mut lines);
        let session = zk_session(port, 2000).1;
        starts.push((seed, session));
        drop(process);
    }
    assert_ne!(starts[0].0, starts[1].0, "fresh seeds");
    assert_ne!(starts[0].1, starts[1].1, "fresh session ids");
    let seed = starts[0].0.to_string();
    let (_process, port, mut lines) = serve_zk_process(&["--seed", &seed]);
    assert_eq!(printed_seed(&mut lines), starts[0].0);
    assert_eq!(zk_session(port, 2000).1, starts[0].1, "the same ids again");
}
