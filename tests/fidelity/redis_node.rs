//! Differential fidelity through the node: the commands the Redis *node* answers around
//! the model (WAIT, ROLE, REPLICAOF's arity), and a script that does not end (BUSY for
//! other clients, what Redis still serves then, SCRIPT KILL, in a transaction too,
//! UNKILLABLE, SHUTDOWN NOSAVE), and blocking pops waiting in real time (BLPOP's
//! timeout, a push waking the blocked in order, a blocked connection closing).
//! The same requests go over TCP, through the same client code, to a real `redis-server`
//! and to the model served by `locksim serve redis` (in this process), and every reply
//! is compared. `redis.rs` drives the model itself; these answers come
//! from the node or need time to pass (the 5 s `busy-reply-threshold`, both servers'
//! default), so they need a server.

use crate::support::{real_redis, served};

use locksim::testing::redis::{decode, encode_command, Value};
use locksim::testing::ServeFamily;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// What a connection got.
#[derive(Debug, PartialEq)]
enum Got {
    Reply(Value),
    /// The server closed the connection.
    Closed,
}

/// A connection to one server.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn open(port: u16) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("a read timeout");
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    fn send(&mut self, args: &[&str]) {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let mut out = Vec::new();
        encode_command(&args, &mut out);
        self.stream.write_all(&out).expect("send");
    }

    /// The next reply; waits up to 30 s (a busy script holds the first for 5 s, longer
    /// on a loaded machine).
    fn recv(&mut self) -> Got {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some((v, used))) = decode(&self.buf) {
                self.buf.drain(..used);
                return Got::Reply(v);
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Got::Closed,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    assert!(Instant::now() < deadline, "no reply within 30 s");
                }
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Got::Closed,
                Err(e) => panic!("read: {e}"),
            }
        }
    }
}

impl Conn {
    /// Nothing arrives for `ms`: `None`, or what did arrive.
    fn quiet_for(&mut self, ms: u64) -> Option<Got> {
        let deadline = Instant::now() + Duration::from_millis(ms);
        loop {
            if let Ok(Some((v, used))) = decode(&self.buf) {
                self.buf.drain(..used);
                return Some(Got::Reply(v));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            self.stream
                .set_read_timeout(Some(left))
                .expect("a read timeout");
            let mut chunk = [0u8; 4096];
            let read = self.stream.read(&mut chunk);
            let normal = Some(Duration::from_millis(200));
            self.stream
                .set_read_timeout(normal)
                .expect("a read timeout");
            match read {
                Ok(0) => return Some(Got::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Some(Got::Closed),
                Err(e) => panic!("read: {e}"),
            }
        }
    }
}

/// The same connection to both servers.
struct Pair {
    real: Conn,
    model: Conn,
}

/// Both servers and the connections to them; counts the replies compared.
struct Harness {
    real_port: u16,
    model_port: u16,
    pairs: Vec<Pair>,
    compared: usize,
}

impl Harness {
    fn open(&mut self) -> usize {
        self.pairs.push(Pair {
            real: Conn::open(self.real_port),
            model: Conn::open(self.model_port),
        });
        self.pairs.len() - 1
    }

    fn send(&mut self, conn: usize, args: &[&str]) {
        self.pairs[conn].real.send(args);
        self.pairs[conn].model.send(args);
    }

    /// Receives the next reply of both on `conn` and asserts they are the same.
    fn expect_same(&mut self, conn: usize, what: &str) -> Got {
        let real = self.pairs[conn].real.recv();
        let model = self.pairs[conn].model.recv();
        assert_eq!(
            model, real,
            "{what}: the model (left) differs from redis-server"
        );
        self.compared += 1;
        real
    }

    /// Sends `args` on `conn` to both and compares the replies.
    fn same(&mut self, conn: usize, args: &[&str]) -> Got {
        self.send(conn, args);
        self.expect_same(conn, &args.join(" "))
    }
}

impl Harness {
    /// Neither server sends `conn` anything for `ms` (it is blocked).
    fn quiet(&mut self, conn: usize, ms: u64, what: &str) {
        std::thread::sleep(Duration::from_millis(ms));
        let real = self.pairs[conn].real.quiet_for(5);
        let model = self.pairs[conn].model.quiet_for(5);
        assert_eq!(
            (model, real),
            (None, None),
            "{what}: expected no reply yet (model, real)"
        );
        self.compared += 1;
    }
}

fn err_starting(got: &Got, prefix: &str) -> bool {
    matches!(got, Got::Reply(Value::Error(e)) if e.starts_with(prefix))
}

/// The commands the node answers: WAIT's argument errors, ROLE and INFO's offsets on a
/// primary no replica ever joined, arity errors.
fn node_commands(h: &mut Harness) {
    let c = h.open();
    for args in [
        &["WAIT", "-1", "0"][..],
        &["WAIT", "0", "abc"],
        &["WAIT", "0", "-1"],
        &["WAIT", "abc", "0"],
        &["WAIT", "99999999999999999999", "0"],
        &["WAIT", "1"],
        &["WAIT", "1", "2", "3"],
        &["WAIT", "0", "0"],
        &["WAIT", "0", "9223372036854775807"],
        &["WAIT", "1", "50"],
        &["ROLE"],
        &["ROLE", "x"],
        &["REPLICAOF", "a"],
        &["SET", "k", "v"],
        &["WAIT", "0", "0"],
        &["WAIT", "1", "20"],
        &["ROLE"],
        &["SCRIPT", "KILL"],
        &["SCRIPT", "KILL", "x"],
        &["SHUTDOWN", "ABORT"],
        &["SHUTDOWN", "later"],
        &["SHUTDOWN", "SAVE", "NOSAVE"],
    ] {
        h.same(c, args);
    }
    // INFO replication: the fields the model reports.
    h.send(c, &["INFO", "replication"]);
    let fields = |conn: &mut Conn| match conn.recv() {
        Got::Reply(Value::Bulk(Some(b))) => String::from_utf8_lossy(&b)
            .lines()
            .filter(|l| {
                ["role:", "connected_slaves:", "master_repl_offset:"]
                    .iter()
                    .any(|f| l.starts_with(f))
            })
            .map(str::to_string)
            .collect::<Vec<_>>(),
        other => panic!("INFO: {other:?}"),
    };
    let (real, model) = (fields(&mut h.pairs[c].real), fields(&mut h.pairs[c].model));
    assert_eq!(model, real, "INFO replication");
    assert_eq!(real.len(), 3, "{real:?}");
    h.compared += 1;
}

/// A script that never ends and has not written: others get BUSY, except for what Redis
/// serves then; SCRIPT KILL ends it and its client gets the killed script's error.
fn killable_script(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.send(a, &["EVAL", "while true do end", "0"]);
    // The script must be running on both before b asks: the two connections reach the
    // served model through separate bridge tasks, so on a loaded machine b's PING could
    // otherwise overtake a's EVAL (CI once saw PONG from the model).
    h.quiet(a, 300, "a script that never ends");
    // Waits for the threshold, then BUSY.
    assert!(err_starting(&h.same(b, &["PING"]), "BUSY"));
    for args in [
        &["GET", "k"][..],
        &["WAIT", "0", "0"],
        &["ROLE"],
        &["EVAL", "return 1", "0"],
        &["SCRIPT", "LOAD", "return 1"],
        &["MULTI"],
        &["SET", "k", "w"],
        &["EXEC"],
        &["WATCH", "k"],
        &["UNWATCH"],
        &["DISCARD"],
        &["SHUTDOWN"],
        &["NOSUCHCOMMAND"],
        &["GET"],
    ] {
        h.same(b, args);
    }
    assert_eq!(h.same(b, &["SCRIPT", "KILL"]), Got::Reply(Value::ok()));
    let killed = h.expect_same(a, "the killed script's reply");
    assert!(err_starting(
        &killed,
        "ERR Script killed by user with SCRIPT KILL"
    ));
    assert_eq!(h.same(b, &["GET", "k"]), Got::Reply(Value::bulk(b"v")));
    h.same(b, &["SCRIPT", "KILL"]);
}

/// A script that never ends inside a transaction: EXEC's whole array waits for the kill,
/// with the killed script's error in it, and the commands after it run then.
fn script_in_a_transaction(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    for args in [&["MULTI"][..], &["SET", "t1", "x"]] {
        h.same(a, args);
    }
    for args in [&["EVAL", "while true do end", "0"][..], &["SET", "t2", "y"]] {
        h.same(a, args);
    }
    h.send(a, &["EXEC"]);
    h.quiet(a, 300, "EXEC around a script that never ends");
    assert!(err_starting(&h.same(b, &["GET", "t1"]), "BUSY"));
    assert_eq!(h.same(b, &["SCRIPT", "KILL"]), Got::Reply(Value::ok()));
    let exec = h.expect_same(a, "EXEC around a killed script");
    assert!(matches!(exec, Got::Reply(Value::Array(Some(ref v))) if v.len() == 3));
    for args in [&["GET", "t1"][..], &["GET", "t2"]] {
        h.same(b, args);
    }
}

/// A script that wrote and never ends: SCRIPT KILL is refused; SHUTDOWN NOSAVE ends the
/// server, closing every connection.
fn unkillable_script(h: &mut Harness) {
    let (a, b) = (h.open(), h.open());
    h.send(
        a,
        &["EVAL", "redis.call('set', 'k', 'x') while true do end", "0"],
    );
    h.quiet(a, 300, "a script that wrote and never ends");
    assert!(err_starting(&h.same(b, &["SCRIPT", "KILL"]), "UNKILLABLE"));
    for args in [&["GET", "k"][..], &["SHUTDOWN"], &["SHUTDOWN", "SAVE"]] {
        h.same(b, args);
    }
    assert_eq!(h.same(b, &["SHUTDOWN", "NOSAVE"]), Got::Closed);
    assert_eq!(h.expect_same(a, "the script's connection"), Got::Closed);
}

/// BLPOP/BRPOP through the node, in real time: a timeout ends the wait, a push from
/// another connection wakes the blocked in the order they blocked, what a blocked client
/// sent meanwhile runs after its reply, and a blocked connection that closes is not
/// served.
fn blocking_pops(h: &mut Harness) {
    let (a, b, c) = (h.open(), h.open(), h.open());
    h.send(a, &["BLPOP", "q", "0.5"]);
    h.quiet(a, 250, "BLPOP q 0.5 before its timeout");
    let timed_out = h.expect_same(a, "BLPOP q 0.5 after its timeout");
    assert_eq!(timed_out, Got::Reply(Value::Array(None)));
    h.send(a, &["BLPOP", "q", "0"]);
    h.quiet(a, 100, "BLPOP q 0");
    h.send(b, &["BRPOP", "other", "q", "10"]);
    h.quiet(b, 100, "BRPOP other q 10");
    assert_eq!(
        h.same(c, &["RPUSH", "q", "1", "2", "3"]),
        Got::Reply(Value::int(3))
    );
    h.expect_same(a, "the first blocked, woken by RPUSH");
    h.expect_same(b, "the second blocked, woken by RPUSH");
    h.same(c, &["LRANGE", "q", "0", "-1"]);
    // Pipelined behind a blocked pop: runs once the pop is served.
    h.send(a, &["BLPOP", "w", "0"]);
    h.send(a, &["PING"]);
    h.quiet(a, 100, "BLPOP w 0 with PING behind it");
    h.same(c, &["LPUSH", "w", "x"]);
    h.expect_same(a, "BLPOP w served");
    h.expect_same(a, "the PING after it");
    // A blocked connection that closes is not served.
    h.send(b, &["BLPOP", "z", "0"]);
    h.quiet(b, 100, "BLPOP z 0");
    drop(h.pairs.remove(b));
    std::thread::sleep(Duration::from_millis(100));
    let c = c - 1;
    h.same(c, &["RPUSH", "z", "v"]);
    assert_eq!(h.same(c, &["LLEN", "z"]), Got::Reply(Value::int(1)));
}

/// Run `cases` against a fresh redis-server and a served model side by side; the
/// number of replies compared (every one equal, or `cases` panicked).
fn against_redis_server(cases: impl FnOnce(&mut Harness)) -> usize {
    let real = real_redis::start_server(&[]);
    let model = served::serve(ServeFamily::Redis, 1, 100);
    let mut h = Harness {
        real_port: real.port,
        model_port: model.port(),
        pairs: Vec::new(),
        compared: 0,
    };
    cases(&mut h);
    eprintln!("{} replies compared, all equal", h.compared);
    h.compared
}

#[test]
fn blocking_pops_wait_like_redis_server() {
    against_redis_server(blocking_pops);
}

#[test]
fn the_node_answers_like_redis_server() {
    let compared = against_redis_server(|h| {
        node_commands(h);
        killable_script(h);
        script_in_a_transaction(h);
        unkillable_script(h);
    });
    assert!(compared >= 45, "steps went missing");
}
