//! `locksim serve redis`: the Redis model on loopback answers a real socket as the
//! simulations' clients are answered (the replies themselves are compared with a real
//! redis-server by `tests/redis_fidelity.rs`; the zk model's serving is tested by
//! `tests/zk_fidelity.rs`).

use locksim::locks::redis::resp::{decode, encode_command, Value};
use locksim::serve::{ServeConfig, ServeFamily};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let s = stop.clone();
    let thread = std::thread::spawn(move || {
        let config = ServeConfig {
            family: ServeFamily::Redis,
            port,
            nodes: 1,
            tick_ms: 100,
        };
        let ready = move |_: &[u16]| {
            let _ = tx.send(());
        };
        locksim::serve::serve(&config, s, ready, |_| {}).expect("the model serves");
    });
    rx.recv_timeout(Duration::from_secs(10)).expect("listening");
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
    stop.store(true, Ordering::Relaxed);
    thread.join().unwrap();
}
