//! Differential fidelity for the ZooKeeper model: the same request sequences go, through
//! the same client code (locksim's own jute codec, `locks::zk::proto`, over a plain TCP
//! socket), to a real ZooKeeper 3.8 server (Debian's `zookeeper`, standalone on a free
//! loopback port, `tickTime` 100 ms: see `support/real_zk.rs`) and to the model served on
//! loopback by `locksim::serve` with the same tick. Every reply and every watch
//! notification is compared field by field.
//!
//! Normalised, because they must differ: session ids (each side's are numbered in the
//! order they appear, in replies and in `ephemeralOwner`), passwords (not compared),
//! `ctime`/`mtime` (wall clocks) and the order of `getChildren` names (ZooKeeper returns
//! a hash set's order; the model and Curator sort). Zxids, versions, `cversion`,
//! `pzxid`, `dataLength`, `numChildren`, error codes and paths are compared as they are.
//!
//! Steps tagged [`DELIBERATE`] are the model's deliberate differences, each with its
//! reason (also in `docs/families/zk.md`); their mismatches are reported, not failed. Without the
//! ZooKeeper jar the test fails and says how to install it: it never skips silently.
//!
//! Each section (CRUD, sequential nodes, Curator's lock paths, watches, sessions,
//! setWatches, checkWatches and removeWatches, an unknown operation, and Apache Curator
//! itself: `zk/curator.rs`) is a test of its own:
//! `the_model_answers_as_zookeeper_does::crud`, ... They share one ZooKeeper server and
//! one model, and run once each, in this order, on both (each section starts from the
//! zxids, nodes and session numbering the earlier ones left, as one transcript did).

mod curator;

use crate::support::in_order::{panic_message, InOrder};
use crate::support::kept::keep_until_exit;
use crate::support::{real_zk, served};

use locksim::testing::zk::{
    decode_reply, encode_request, ClientFrame, OpCode, Request, Response, ServerFrame, PASSWD_LEN,
    PING_XID,
};
use locksim::testing::zk::{CreateMode, SessionId, Stat, WatchKind, WatchedEvent};
use locksim::testing::ServeFamily;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One connection, speaking ZooKeeper's protocol through locksim's codec.
struct Wire {
    stream: TcpStream,
    next_xid: i32,
    pending: BTreeMap<i32, OpCode>,
    /// Notifications read and not yet taken.
    notes: Vec<WatchedEvent>,
    session: SessionId,
    passwd: Vec<u8>,
}

fn read_frame(stream: &mut TcpStream, deadline: Instant) -> Option<Vec<u8>> {
    let mut want = 4usize;
    let mut buf = Vec::new();
    let mut have_len = false;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .ok()?;
        let mut chunk = vec![0u8; want - buf.len()];
        match stream.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => return None,
            Err(_) => return None,
        }
        if buf.len() == want {
            if have_len {
                return Some(buf);
            }
            want = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
            buf.clear();
            have_len = true;
            if want == 0 {
                return Some(buf);
            }
        }
    }
}

/// What a handshake got: the response, or nothing (the server closed the connection).
#[derive(Debug, Clone, PartialEq)]
enum Hello {
    Connected { session: SessionId, timeout_ms: u64 },
    Expired,
    Closed,
}

impl Wire {
    fn connect(
        port: u16,
        session: SessionId,
        passwd: &[u8],
        timeout_ms: u64,
    ) -> (Hello, Option<Wire>) {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_nodelay(true).unwrap();
        let hello = ClientFrame {
            xid: 0,
            req: Request::Connect {
                session,
                timeout_ms,
                last_zxid: 0,
                passwd: passwd.to_vec(),
            },
        };
        let mut out = Vec::new();
        encode_request(&hello, &mut out);
        stream.write_all(&out).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let Some(bytes) = read_frame(&mut stream, deadline) else {
            return (Hello::Closed, None);
        };
        match decode_reply(&bytes, true, |_| None).expect("a ConnectResponse") {
            ServerFrame::Reply {
                resp:
                    Response::Connected {
                        session,
                        timeout_ms,
                        passwd,
                    },
                ..
            } => {
                assert_eq!(passwd.len(), PASSWD_LEN);
                let wire = Wire {
                    stream,
                    next_xid: 1,
                    pending: BTreeMap::new(),
                    notes: Vec::new(),
                    session,
                    passwd,
                };
                (
                    Hello::Connected {
                        session,
                        timeout_ms,
                    },
                    Some(wire),
                )
            }
            ServerFrame::Reply {
                resp: Response::Expired,
                ..
            } => (Hello::Expired, None),
            other => panic!("unexpected handshake reply {other:?}"),
        }
    }

    fn send(&mut self, xid: i32, req: Request) {
        let op = match &req {
            Request::Rejected { .. } => OpCode::Ping, // any: the reply is an error
            r => r.op().expect("not a handshake"),
        };
        self.pending.insert(xid, op);
        let mut out = Vec::new();
        encode_request(&ClientFrame { xid, req }, &mut out);
        self.stream.write_all(&out).unwrap();
    }

    /// Read frames until the reply to `xid` (notifications are kept); `None` when the
    /// server closed the connection first.
    fn reply(&mut self, xid: i32) -> Option<(u64, Response)> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let bytes = read_frame(&mut self.stream, deadline)?;
            let pending = &self.pending;
            let f = decode_reply(&bytes, false, |x| pending.get(&x).copied()).expect("decodes");
            match f {
                ServerFrame::Watch(ev) => self.notes.push(ev),
                ServerFrame::Reply { xid: x, zxid, resp } if x == xid => {
                    self.pending.remove(&x);
                    return Some((zxid, resp));
                }
                ServerFrame::Reply { xid: x, .. } => panic!("reply to {x} while waiting for {xid}"),
            }
        }
    }

    fn call(&mut self, req: Request) -> Option<(u64, Response)> {
        let xid = self.next_xid;
        self.next_xid += 1;
        // ZooKeeper answers every ping with xid -2, whatever xid it came with.
        let answer = if req == Request::Ping { PING_XID } else { xid };
        self.send(xid, req);
        self.pending.insert(answer, self.pending[&xid]);
        self.reply(answer)
    }

    /// Send operation `op` with a record written by hand (what locksim's codec cannot
    /// express, such as an invalid argument), and read its reply.
    fn call_raw(&mut self, op: OpCode, code: i32, record: &[u8]) -> Option<(u64, Response)> {
        let xid = self.next_xid;
        self.next_xid += 1;
        self.pending.insert(xid, op);
        let mut body = Vec::new();
        body.extend_from_slice(&xid.to_be_bytes());
        body.extend_from_slice(&code.to_be_bytes());
        body.extend_from_slice(record);
        let mut out = (body.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&body);
        self.stream.write_all(&out).unwrap();
        self.reply(xid)
    }

    fn ping(&mut self) -> Option<(u64, Response)> {
        self.send(PING_XID, Request::Ping);
        self.reply(PING_XID)
    }

    /// Wait up to `wait` for notifications; take all read so far.
    fn notes(&mut self, wait: Duration) -> Vec<WatchedEvent> {
        let deadline = Instant::now() + wait;
        while let Some(bytes) = read_frame(&mut self.stream, deadline) {
            let pending = &self.pending;
            match decode_reply(&bytes, false, |x| pending.get(&x).copied()).expect("decodes") {
                ServerFrame::Watch(ev) => self.notes.push(ev),
                other => panic!("unexpected frame {other:?}"),
            }
        }
        std::mem::take(&mut self.notes)
    }
}

/// A step's label and what it observed, normalised.
type Transcript = Vec<(String, String)>;

/// One side's run: its port, its transcript and its session numbering.
struct Side {
    port: u16,
    out: Transcript,
    sessions: BTreeMap<SessionId, usize>,
}

impl Side {
    fn session_name(&mut self, id: SessionId) -> String {
        if id == 0 {
            return "none".into();
        }
        let n = self.sessions.len() + 1;
        format!("s{}", self.sessions.entry(id).or_insert(n))
    }

    fn stat(&mut self, s: &Stat) -> String {
        format!(
            "czxid={} mzxid={} pzxid={} version={} cversion={} owner={} dataLength={} numChildren={}",
            s.czxid,
            s.mzxid,
            s.pzxid,
            s.version,
            s.cversion,
            self.session_name(s.ephemeral_owner),
            s.data_length,
            s.num_children
        )
    }

    fn response(&mut self, r: &Response) -> String {
        match r {
            Response::Created { path, stat } => format!("Created {path} {}", self.stat(stat)),
            Response::Exists { stat: Some(s) } => format!("Exists {}", self.stat(s)),
            Response::Exists { stat: None } => "Exists none".into(),
            Response::Data { data, stat } => {
                format!(
                    "Data {:?} {}",
                    String::from_utf8_lossy(data),
                    self.stat(stat)
                )
            }
            Response::Children { children, stat } => {
                let mut c = children.clone();
                c.sort();
                format!("Children {c:?} {}", self.stat(stat))
            }
            Response::Set { stat } => format!("Set {}", self.stat(stat)),
            other => format!("{other:?}"),
        }
    }

    fn record(&mut self, label: &str, what: String) {
        self.out.push((label.to_string(), what));
    }

    /// Run `req` on `w` and record the reply (zxid and body), or that the connection
    /// closed.
    fn call(&mut self, w: &mut Wire, label: &str, req: Request) -> Option<Response> {
        let r = w.call(req);
        let what = match &r {
            Some((zxid, resp)) => format!("zxid={zxid} {}", self.response(resp)),
            None => "connection closed".into(),
        };
        self.record(label, what);
        r.map(|(_, resp)| resp)
    }

    fn hello(&mut self, label: &str, h: &Hello) {
        let what = match h {
            Hello::Connected {
                session,
                timeout_ms,
            } => format!(
                "Connected {} timeout={timeout_ms}",
                self.session_name(*session)
            ),
            other => format!("{other:?}"),
        };
        self.record(label, what);
    }

    fn connect(&mut self, label: &str, timeout_ms: u64) -> Wire {
        let (h, w) = Wire::connect(self.port, 0, &[0; PASSWD_LEN], timeout_ms);
        self.hello(label, &h);
        w.unwrap_or_else(|| panic!("{label}: no session: {h:?}"))
    }

    fn notes(&mut self, w: &mut Wire, label: &str, wait: Duration) {
        let mut notes: Vec<String> = w
            .notes(wait)
            .iter()
            .map(|n| format!("{:?} {}", n.kind, n.path))
            .collect();
        notes.sort();
        self.record(label, format!("notes {notes:?}"));
    }
}

/// Steps whose mismatch is a deliberate difference of the model, with the reason.
const DELIBERATE: &[(&str, &str)] = &[];

fn create(path: &str, data: &str, mode: CreateMode, with_stat: bool) -> Request {
    Request::Create {
        path: path.into(),
        data: data.as_bytes().to_vec(),
        mode,
        with_stat,
    }
}

fn exists(path: &str, watch: bool) -> Request {
    Request::Exists {
        path: path.into(),
        watch,
    }
}

fn get_data(path: &str, watch: bool) -> Request {
    Request::GetData {
        path: path.into(),
        watch,
    }
}

fn children(path: &str, watch: bool, with_stat: bool) -> Request {
    Request::GetChildren {
        path: path.into(),
        watch,
        with_stat,
    }
}

fn delete(path: &str, version: i32) -> Request {
    Request::Delete {
        path: path.into(),
        version,
    }
}

fn set_data(path: &str, data: &str, version: i32) -> Request {
    Request::SetData {
        path: path.into(),
        data: data.as_bytes().to_vec(),
        version,
    }
}

use CreateMode::{Ephemeral, EphemeralSequential, Persistent, PersistentSequential};

/// Creates, reads, updates, deletes and their errors.
fn crud(side: &mut Side) {
    let mut w = side.connect("crud: connect", 1000);
    side.call(&mut w, "ping", Request::Ping);
    let r = w.ping();
    side.record("ping xid -2", format!("{:?}", r.map(|(_, r)| r)));
    side.call(
        &mut w,
        "create /a (create)",
        create("/a", "x", Persistent, false),
    );
    side.call(&mut w, "create2 /b", create("/b", "yy", Persistent, true));
    side.call(
        &mut w,
        "create /a again",
        create("/a", "", Persistent, true),
    );
    side.call(
        &mut w,
        "create under a missing parent",
        create("/nope/x", "", Persistent, true),
    );
    for bad in [
        "a",
        "/a/",
        "//a",
        "/a/./b",
        "/a/.",
        "/a/..",
        "/a/\u{1}",
        "",
        "/zookeeper/x",
    ] {
        side.call(
            &mut w,
            &format!("create bad path {bad:?}"),
            create(bad, "", Persistent, true),
        );
    }
    side.call(&mut w, "create /", create("/", "", Persistent, true));
    side.call(&mut w, "exists /a", exists("/a", false));
    side.call(&mut w, "exists /missing", exists("/missing", false));
    side.call(&mut w, "getData /a", get_data("/a", false));
    side.call(&mut w, "getData /missing", get_data("/missing", false));
    side.call(&mut w, "setData /a v0", set_data("/a", "new", 0));
    side.call(&mut w, "setData /a v0 again", set_data("/a", "newer", 0));
    side.call(&mut w, "setData /a any", set_data("/a", "", -1));
    side.call(&mut w, "setData /missing", set_data("/missing", "", -1));
    side.call(&mut w, "getData /a after", get_data("/a", false));
    side.call(
        &mut w,
        "create ephemeral /e",
        create("/e", "e", Ephemeral, true),
    );
    side.call(
        &mut w,
        "child of an ephemeral",
        create("/e/c", "", Persistent, true),
    );
    side.call(
        &mut w,
        "create /a/c1",
        create("/a/c1", "1", Persistent, true),
    );
    side.call(
        &mut w,
        "create /a/c2 (create)",
        create("/a/c2", "2", Persistent, false),
    );
    side.call(&mut w, "delete non-empty /a", delete("/a", -1));
    side.call(&mut w, "delete /a/c1 bad version", delete("/a/c1", 5));
    side.call(&mut w, "delete /a/c1 v0", delete("/a/c1", 0));
    side.call(&mut w, "delete /a/c1 again", delete("/a/c1", -1));
    side.call(&mut w, "getChildren /a", children("/a", false, false));
    side.call(&mut w, "getChildren2 /a", children("/a", false, true));
    side.call(
        &mut w,
        "getChildren2 /missing",
        children("/missing", false, true),
    );
    side.call(&mut w, "delete /a/c2", delete("/a/c2", -1));
    side.call(&mut w, "getChildren2 /a empty", children("/a", false, true));
    side.call(&mut w, "delete /a", delete("/a", -1));
    side.call(&mut w, "delete /", delete("/", -1));
    side.call(&mut w, "delete bad path", delete("a", -1));
    side.call(&mut w, "getChildren2 /", children("/", false, true));
    side.call(
        &mut w,
        "getChildren2 /zookeeper",
        children("/zookeeper", false, true),
    );
    side.call(&mut w, "exists /zookeeper", exists("/zookeeper", false));
    side.call(&mut w, "sync /", Request::Sync { path: "/".into() });
    side.call(&mut w, "sync /b", Request::Sync { path: "/b".into() });
    let big = "z".repeat(1000);
    side.call(
        &mut w,
        "create 1000 bytes",
        create("/big", &big, Persistent, true),
    );
    side.call(&mut w, "getData 1000 bytes", get_data("/big", false));
    side.call(&mut w, "setData empty", set_data("/big", "", -1));
    side.call(&mut w, "delete /b", delete("/b", -1));
    side.call(&mut w, "delete /big", delete("/big", -1));
    side.call(&mut w, "closeSession", Request::CloseSession);
    let (h, _) = Wire::connect(side.port, w.session, &w.passwd, 1000);
    side.hello("reconnect a closed session", &h);
}

/// Sequential nodes: suffixes from the parent's cversion, across deletes.
fn sequential(side: &mut Side) {
    let mut w = side.connect("seq: connect", 1000);
    side.call(&mut w, "create /seq", create("/seq", "", Persistent, true));
    for i in 0..10 {
        side.call(
            &mut w,
            &format!("seq create {i}"),
            create("/seq/n-", "", PersistentSequential, true),
        );
    }
    for i in [0, 3, 7] {
        let path = format!("/seq/n-{i:010}");
        side.call(&mut w, &format!("seq delete {i}"), delete(&path, -1));
    }
    for i in 10..15 {
        side.call(
            &mut w,
            &format!("seq create {i}"),
            create("/seq/n-", "", PersistentSequential, true),
        );
    }
    side.call(
        &mut w,
        "seq ephemeral",
        create("/seq/e-", "", EphemeralSequential, true),
    );
    side.call(
        &mut w,
        "seq plain create",
        create("/seq/p-", "", PersistentSequential, false),
    );
    side.call(&mut w, "seq children", children("/seq", false, true));
    side.call(
        &mut w,
        "seq at the root",
        create("/r-", "", PersistentSequential, true),
    );
    side.call(&mut w, "root children", children("/", false, true));
    side.call(&mut w, "closeSession", Request::CloseSession);
    let mut w = side.connect("seq: connect again", 1000);
    side.call(
        &mut w,
        "seq children after close",
        children("/seq", false, true),
    );
    side.call(&mut w, "closeSession", Request::CloseSession);
}

/// Curator's InterProcessMutex paths, round after round: containers, protected
/// ephemeral-sequential nodes, the children listing, a watch on the predecessor, the
/// release that fires it.
fn locks(side: &mut Side, rounds: usize) {
    let mut ws: Vec<Wire> = (0..3)
        .map(|i| side.connect(&format!("locks: connect {i}"), 2000))
        .collect();
    for (i, w) in ws.iter_mut().enumerate() {
        for parent in ["/locks", "/locks/L"] {
            let req = create(parent, "", CreateMode::Container, true);
            side.call(w, &format!("container {parent} by {i}"), req);
        }
    }
    for round in 0..rounds {
        let mut nodes = Vec::new();
        for (i, w) in ws.iter_mut().enumerate() {
            let path = format!("/locks/L/_c_{round:08}-{i:04}-aaaa-bbbb-cccccccccccc-lock-");
            let r = side.call(
                w,
                &format!("round {round}: lock node {i}"),
                create(&path, "client", EphemeralSequential, true),
            );
            match r {
                Some(Response::Created { path, .. }) => nodes.push(path),
                other => panic!("round {round}: {other:?}"),
            }
        }
        for (i, w) in ws.iter_mut().enumerate() {
            side.call(
                w,
                &format!("round {round}: children {i}"),
                children("/locks/L", false, false),
            );
        }
        // Waiters watch their predecessor (Curator: getData with a watcher).
        for i in 1..3 {
            let req = get_data(&nodes[i - 1], true);
            side.call(
                &mut ws[i],
                &format!("round {round}: watch predecessor {i}"),
                req,
            );
        }
        for i in 0..3 {
            side.call(
                &mut ws[i],
                &format!("round {round}: release {i}"),
                delete(&nodes[i], -1),
            );
            if i + 1 < 3 {
                side.notes(
                    &mut ws[i + 1],
                    &format!("round {round}: notified {}", i + 1),
                    Duration::from_millis(100),
                );
            }
        }
        for (i, w) in ws.iter_mut().enumerate() {
            side.call(w, &format!("round {round}: ping {i}"), Request::Ping);
        }
    }
    side.call(&mut ws[0], "locks: parent stat", exists("/locks/L", false));
    for (i, w) in ws.iter_mut().enumerate() {
        side.call(w, &format!("locks: close {i}"), Request::CloseSession);
    }
}

/// Every kind of watch, fired once.
fn watches(side: &mut Side) {
    let mut a = side.connect("watches: connect a", 2000);
    let mut b = side.connect("watches: connect b", 2000);
    side.call(&mut a, "create /w", create("/w", "0", Persistent, true));
    side.call(&mut b, "b: data watch", get_data("/w", true));
    side.call(&mut b, "b: child watch", children("/w", true, false));
    side.call(&mut b, "b: exist watch on missing", exists("/w2", true));
    side.call(&mut b, "b: exists watch on /w", exists("/w", true));
    side.call(&mut a, "a: setData /w", set_data("/w", "1", -1));
    side.notes(&mut b, "b: after setData", Duration::from_millis(100));
    side.call(&mut a, "a: setData /w again", set_data("/w", "2", -1));
    side.notes(&mut b, "b: fired once", Duration::from_millis(100));
    side.call(
        &mut a,
        "a: create /w/c",
        create("/w/c", "", Persistent, true),
    );
    side.notes(&mut b, "b: after a child", Duration::from_millis(100));
    side.call(&mut a, "a: create /w2", create("/w2", "", Persistent, true));
    side.notes(&mut b, "b: after /w2", Duration::from_millis(100));
    side.call(&mut b, "b: watch /w/c and /w2", get_data("/w/c", true));
    side.call(&mut b, "b: exists /w2 watch", exists("/w2", true));
    side.call(&mut a, "a: delete /w/c", delete("/w/c", -1));
    side.call(&mut a, "a: delete /w2", delete("/w2", -1));
    side.notes(&mut b, "b: after deletes", Duration::from_millis(100));
    side.call(&mut b, "b: child watch again", children("/w", true, true));
    side.call(&mut a, "a: delete /w", delete("/w", -1));
    side.notes(&mut b, "b: parent deleted", Duration::from_millis(100));
    side.call(&mut a, "close a", Request::CloseSession);
    side.call(&mut b, "close b", Request::CloseSession);
}

/// Session timeout negotiation, expiry (the ephemeral goes, its watcher hears it),
/// reconnection to an expired session, a wrong password.
fn sessions(side: &mut Side) {
    for t in [1, 150, 200, 999, 1000, 5000] {
        let mut w = side.connect(&format!("negotiate {t}"), t);
        side.call(&mut w, &format!("close {t}"), Request::CloseSession);
    }
    let mut short = side.connect("expiry: short session", 200);
    let mut watcher = side.connect("expiry: watcher", 2000);
    side.call(
        &mut short,
        "short: ephemeral",
        create("/x", "", Ephemeral, true),
    );
    side.call(&mut watcher, "watcher: watch it", exists("/x", true));
    // The short session stops pinging; the watcher pings every 300 ms.
    for i in 0..4 {
        std::thread::sleep(Duration::from_millis(300));
        side.call(&mut watcher, &format!("watcher: ping {i}"), Request::Ping);
    }
    side.notes(
        &mut watcher,
        "watcher: after expiry",
        Duration::from_millis(100),
    );
    side.call(&mut watcher, "watcher: exists /x", exists("/x", false));
    let (h, _) = Wire::connect(side.port, short.session, &short.passwd, 200);
    side.hello("reconnect an expired session", &h);
    let mut wrong = watcher.passwd.clone();
    wrong[0] ^= 1;
    let (h, _) = Wire::connect(side.port, watcher.session, &wrong, 2000);
    side.hello("reconnect with a wrong password", &h);
    let (h, w) = Wire::connect(side.port, watcher.session, &watcher.passwd, 2000);
    side.hello("reconnect a live session", &h);
    let mut moved = w.expect("reconnected");
    side.call(&mut moved, "on the new connection", exists("/", false));
    side.call(&mut moved, "close it", Request::CloseSession);
}

/// Watches survive a reconnection through setWatches, and fire at once for what
/// changed meanwhile.
fn set_watches(side: &mut Side) {
    let mut a = side.connect("setWatches: connect a", 2000);
    let mut b = side.connect("setWatches: connect b", 2000);
    side.call(&mut a, "create /sw", create("/sw", "0", Persistent, true));
    let seen = match side.call(&mut b, "b: watch /sw", get_data("/sw", true)) {
        Some(Response::Data { stat, .. }) => stat.mzxid,
        other => panic!("{other:?}"),
    };
    let (session, passwd) = (b.session, b.passwd.clone());
    drop(b);
    side.call(
        &mut a,
        "a: setData while b is away",
        set_data("/sw", "1", -1),
    );
    side.call(
        &mut a,
        "a: create /sw/c",
        create("/sw/c", "", Persistent, true),
    );
    let (h, b) = Wire::connect(side.port, session, &passwd, 2000);
    side.hello("b: reconnect", &h);
    let mut b = b.expect("b back");
    let req = Request::SetWatches {
        relative_zxid: seen,
        data: vec!["/sw".into()],
        exist: vec!["/sw-missing".into()],
        child: vec!["/sw".into()],
    };
    b.send(-8, req);
    let r = b.reply(-8);
    side.record("b: setWatches", format!("{:?}", r.map(|(_, r)| r)));
    side.notes(
        &mut b,
        "b: what changed meanwhile",
        Duration::from_millis(100),
    );
    side.call(
        &mut a,
        "a: create /sw-missing",
        create("/sw-missing", "", Persistent, true),
    );
    side.notes(&mut b, "b: exist watch kept", Duration::from_millis(100));
    for p in ["/sw/c", "/sw", "/sw-missing"] {
        side.call(&mut a, &format!("a: delete {p}"), delete(p, -1));
    }
    side.call(&mut a, "close a", Request::CloseSession);
    side.call(&mut b, "close b", Request::CloseSession);
}

fn check_watches(path: &str, kind: WatchKind) -> Request {
    Request::CheckWatches {
        path: path.into(),
        kind,
    }
}

fn remove_watches(path: &str, kind: WatchKind) -> Request {
    Request::RemoveWatches {
        path: path.into(),
        kind,
    }
}

/// A `CheckWatchesRequest`/`RemoveWatchesRequest` record with any type number.
fn watches_record(path: &str, kind: i32) -> Vec<u8> {
    let mut out = (path.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out
}

/// `checkWatches` and `removeWatches`, which the Java client sends when a watcher is
/// removed (Curator: on `close()`, and on every contended `InterProcessSemaphoreMutex`
/// acquire): for each watch type, on a watch that is there, one of another type, one
/// of another connection (ZooKeeper 3.8.0's `checkWatches` finds it: it asks only
/// whether the path has watchers; `removeWatches` does not remove it), a missing or
/// malformed path, after the watch fired, an invalid type.
fn check_and_remove_watches(side: &mut Side) {
    use WatchKind::{Any, Children, Data};
    let mut a = side.connect("cw: connect a", 2000);
    let mut b = side.connect("cw: connect b", 2000);
    side.call(&mut a, "create /cw", create("/cw", "0", Persistent, true));
    side.call(&mut b, "b: data watch /cw", get_data("/cw", true));
    side.call(&mut b, "b: exist watch /cw-x", exists("/cw-x", true));
    side.call(&mut a, "create /cw2", create("/cw2", "", Persistent, true));
    side.call(&mut b, "b: child watch /cw2", children("/cw2", true, false));
    for kind in [Data, Children, Any] {
        for path in ["/cw", "/cw-x", "/cw2", "/nowhere", "/", "", "bad", "a/b"] {
            let req = check_watches(path, kind);
            side.call(&mut b, &format!("b: check {path} {kind:?}"), req);
        }
        let req = check_watches("/cw", kind);
        side.call(&mut a, &format!("a: check b's /cw {kind:?}"), req);
        let req = remove_watches("/cw", kind);
        side.call(&mut a, &format!("a: remove b's /cw {kind:?}"), req);
        for path in ["/nowhere", "", "bad"] {
            let req = remove_watches(path, kind);
            side.call(&mut b, &format!("b: remove {path} {kind:?}"), req);
        }
    }
    for (op, code) in [(OpCode::CheckWatches, 17), (OpCode::RemoveWatches, 18)] {
        for kind in [0, 4, -1] {
            let r = b.call_raw(op, code, &watches_record("/cw", kind));
            let what = match &r {
                Some((zxid, resp)) => format!("zxid={zxid} {}", side.response(resp)),
                None => "connection closed".into(),
            };
            side.record(&format!("b: {op:?} type {kind}"), what);
        }
    }
    side.call(&mut b, "b: still there", check_watches("/cw", Data));
    // The wrong type removes nothing; the right one removes the watch, which then
    // never fires.
    side.call(
        &mut b,
        "b: remove /cw Children",
        remove_watches("/cw", Children),
    );
    side.call(&mut b, "b: remove /cw Data", remove_watches("/cw", Data));
    side.call(
        &mut b,
        "b: remove /cw Data again",
        remove_watches("/cw", Data),
    );
    side.call(&mut b, "b: check /cw Any after", check_watches("/cw", Any));
    side.call(&mut a, "a: setData /cw", set_data("/cw", "1", -1));
    side.notes(&mut b, "b: removed data watch", Duration::from_millis(100));
    side.call(&mut b, "b: remove /cw-x Any", remove_watches("/cw-x", Any));
    side.call(
        &mut a,
        "a: create /cw-x",
        create("/cw-x", "", Persistent, true),
    );
    side.notes(&mut b, "b: removed exist watch", Duration::from_millis(100));
    // Any removes data and child watches together.
    side.call(&mut b, "b: data watch /cw2", get_data("/cw2", true));
    side.call(&mut b, "b: remove /cw2 Any", remove_watches("/cw2", Any));
    side.call(&mut b, "b: check /cw2 Data", check_watches("/cw2", Data));
    side.call(
        &mut b,
        "b: check /cw2 Children",
        check_watches("/cw2", Children),
    );
    side.call(
        &mut a,
        "a: create /cw2/c",
        create("/cw2/c", "", Persistent, true),
    );
    side.call(&mut a, "a: setData /cw2", set_data("/cw2", "1", -1));
    side.notes(&mut b, "b: removed both", Duration::from_millis(100));
    // A checked watch stays and fires; after it fired it is gone.
    side.call(&mut b, "b: child watch /cw2", children("/cw2", true, true));
    side.call(&mut b, "b: check /cw2 Any", check_watches("/cw2", Any));
    side.call(&mut a, "a: delete /cw2/c", delete("/cw2/c", -1));
    side.notes(&mut b, "b: checked watch fired", Duration::from_millis(100));
    side.call(
        &mut b,
        "b: check after firing",
        check_watches("/cw2", Children),
    );
    side.call(
        &mut b,
        "b: remove after firing",
        remove_watches("/cw2", Any),
    );
    side.call(&mut b, "b: ping after", Request::Ping);
    for p in ["/cw", "/cw-x", "/cw2"] {
        side.call(&mut a, &format!("a: delete {p}"), delete(p, -1));
    }
    side.call(&mut a, "close a", Request::CloseSession);
    side.call(&mut b, "close b", Request::CloseSession);
}

/// An operation ZooKeeper does not know.
fn unknown(side: &mut Side) {
    let mut w = side.connect("unknown: connect", 1000);
    let req = Request::Rejected {
        op: 9999,
        err: locksim::testing::zk::ZkError::Unimplemented,
    };
    side.call(&mut w, "unknown operation", req);
    side.call(&mut w, "after an unknown operation", Request::Ping);
}

/// A section: the steps it runs on one side.
type Section = fn(&mut Side);

/// The sections, in the order they run on both servers.
const SECTIONS: &[(&str, Section)] = &[
    ("crud", crud),
    ("sequential", sequential),
    ("locks", |side| locks(side, 12)),
    ("watches", watches),
    ("sessions", sessions),
    ("set_watches", set_watches),
    ("check_and_remove_watches", check_and_remove_watches),
    ("unknown", unknown),
    // Last: Curator's sessions and nodes must not shift the others' numbering.
    ("curator", curator::curator),
];

/// Both sides of the comparison, kept from one section to the next: ZooKeeper's and the
/// model's clients (their session numbering goes on), and the model's server.
struct Runner {
    zookeeper: Side,
    model: Side,
    _model_server: served::Served,
}

/// One section's transcripts, ZooKeeper's and the model's, or the panic that stopped it.
type Outcome = (Result<Transcript, String>, Result<Transcript, String>);

/// The sections run so far.
static SECTIONS_RUN: Mutex<InOrder<Runner, Outcome>> = Mutex::new(InOrder::new());

/// Starts ZooKeeper (stopped when the process exits) and the model with the same tick.
fn start() -> Runner {
    let real = real_zk::start_real_zk();
    let model = served::serve(ServeFamily::Zk, 1, u64::from(real_zk::TICK_MS));
    let side = |port| Side {
        port,
        out: Vec::new(),
        sessions: BTreeMap::new(),
    };
    let runner = Runner {
        zookeeper: side(real.port),
        model: side(model.port()),
        _model_server: model,
    };
    keep_until_exit(real);
    runner
}

/// Section `index` on one side: its transcript, or the panic that stopped it.
fn run_on(side: &mut Side, index: usize) -> Result<Transcript, String> {
    let section = SECTIONS[index].1;
    let ran = std::panic::catch_unwind(AssertUnwindSafe(|| section(side)));
    let out = std::mem::take(&mut side.out);
    ran.map(|()| out).map_err(|panic| panic_message(&*panic))
}

/// Section `index`'s outcome, on ZooKeeper then on the model.
fn outcome(index: usize) -> Outcome {
    InOrder::outcome(&SECTIONS_RUN, index, start, |r, i| {
        (run_on(&mut r.zookeeper, i), run_on(&mut r.model, i))
    })
}

/// Compares section `name` of both transcripts, step by step.
fn check(name: &str) {
    let index = SECTIONS.iter().position(|(n, _)| *n == name);
    let (theirs, ours) = outcome(index.expect("a section"));
    let theirs = theirs.unwrap_or_else(|e| panic!("{name} stopped on ZooKeeper: {e}"));
    let ours = ours.unwrap_or_else(|e| panic!("{name} stopped on the model: {e}"));
    assert_eq!(theirs.len(), ours.len(), "the transcripts differ in length");
    let mut mismatches = Vec::new();
    let mut deliberate = Vec::new();
    for ((label, want), (_, got)) in theirs.iter().zip(&ours) {
        if want == got {
            continue;
        }
        let line = format!("{label}:\n    zookeeper: {want}\n    model:     {got}");
        match DELIBERATE.iter().find(|(l, _)| l == label) {
            Some((_, why)) => deliberate.push(format!("{line}\n    why: {why}")),
            None => mismatches.push(line),
        }
    }
    println!(
        "{name}: compared {} replies and notifications with ZooKeeper 3.8; {} deliberate differences:",
        theirs.len(),
        deliberate.len()
    );
    for d in &deliberate {
        println!("{d}");
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} replies differ from ZooKeeper's:\n{}",
        mismatches.len(),
        theirs.len(),
        mismatches.join("\n")
    );
}

/// One test per section of the comparison, and one that they compare enough.
mod the_model_answers_as_zookeeper_does {
    use super::*;

    #[test]
    fn crud() {
        check("crud");
    }

    #[test]
    fn sequential_nodes() {
        check("sequential");
    }

    #[test]
    fn curator_lock_paths() {
        check("locks");
    }

    #[test]
    fn watches() {
        check("watches");
    }

    #[test]
    fn sessions() {
        check("sessions");
    }

    #[test]
    fn set_watches() {
        check("set_watches");
    }

    #[test]
    fn check_and_remove_watches() {
        check("check_and_remove_watches");
    }

    #[test]
    fn unknown_operation() {
        check("unknown");
    }

    #[test]
    fn curator_close_and_semaphore_mutex() {
        check("curator");
    }

    /// The sections together compare at least 300 replies and notifications.
    #[test]
    fn in_all_at_least_300_steps() {
        let compared: usize = (0..SECTIONS.len())
            .map(|i| outcome(i).0.map_or(0, |t| t.len()))
            .sum();
        assert!(compared >= 300, "only {compared} compared");
    }
}

/// `locksim serve zk --nodes 3`: an ensemble on loopback, its Raft links on loopback too. A
/// write through one server is seen through another after `sync`, and the session and
/// its ephemeral node are the same everywhere.
#[test]
fn the_model_serves_an_ensemble_on_loopback() {
    let model = served::serve(ServeFamily::Zk, 3, 100);
    let ports = &model.ports;
    // Until a leader is elected, servers refuse clients (they close the connection).
    let deadline = Instant::now() + Duration::from_secs(20);
    let (mut a, mut b) = loop {
        let a = Wire::connect(ports[0], 0, &[0; PASSWD_LEN], 2000);
        let b = Wire::connect(ports[2], 0, &[0; PASSWD_LEN], 2000);
        if let ((_, Some(a)), (_, Some(b))) = (a, b) {
            break (a, b);
        }
        assert!(Instant::now() < deadline, "no leader within 20 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    let created = a.call(create("/e", "x", Ephemeral, true));
    let Some((_, Response::Created { stat, .. })) = created else {
        panic!("{created:?}");
    };
    assert_eq!(stat.ephemeral_owner, a.session);
    assert!(matches!(
        b.call(Request::Sync { path: "/e".into() }),
        Some((_, Response::Synced { .. }))
    ));
    match b.call(exists("/e", true)) {
        Some((_, Response::Exists { stat: Some(seen) })) => assert_eq!(seen, stat),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        a.call(Request::CloseSession),
        Some((_, Response::Closed))
    ));
    let notes = b.notes(Duration::from_secs(2));
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].path, "/e");
}
