//! A family's model served on loopback by `locksim::serve`, in a thread of its own, for
//! tests that talk to it over real sockets; stopped when dropped.
//!
//! A test reaches it as `crate::support::served` (see `mod.rs`).

use locksim::testing::{ServeConfig, ServeFamily};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The model's servers, listening; stopped (and their thread joined) on drop.
pub struct Served {
    /// Each server's client port (consecutive).
    pub ports: Vec<u16>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    /// The first server's client port.
    pub fn port(&self) -> u16 {
        self.ports[0]
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves `nodes` servers of `family` with tick `tick_ms` on free consecutive loopback
/// ports, and returns once they listen.
pub fn serve(family: ServeFamily, nodes: u32, tick_ms: u64) -> Served {
    serve_with(family, nodes, tick_ms, 0, false, |_| {})
}

/// As [`serve`], with the servers' ids drawn from `seed`, and their events (`apply` only
/// if `apply_events`) sent to the returned channel as JSON lines.
pub fn serve_events(
    family: ServeFamily,
    nodes: u32,
    tick_ms: u64,
    seed: u64,
    apply_events: bool,
) -> (Served, std::sync::mpsc::Receiver<String>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let on_event = move |line: &str| {
        let _ = tx.send(line.to_string());
    };
    let served = serve_with(family, nodes, tick_ms, seed, apply_events, on_event);
    (served, rx)
}

fn serve_with(
    family: ServeFamily,
    nodes: u32,
    tick_ms: u64,
    seed: u64,
    apply_events: bool,
    on_event: impl Fn(&str) + Send + 'static,
) -> Served {
    let port = free_ports(nodes);
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let s = stop.clone();
    let thread = std::thread::spawn(move || {
        let config = ServeConfig {
            family,
            port,
            nodes,
            tick_ms,
            seed,
            apply_events,
        };
        let ready = move |ports: &[u16]| {
            let _ = tx.send(ports.to_vec());
        };
        locksim::testing::serve(&config, s, ready, on_event).expect("the model serves");
    });
    let ports = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the model listens within 10 s");
    Served {
        ports,
        stop,
        thread: Some(thread),
    }
}

/// The first of `n` free consecutive loopback ports.
fn free_ports(n: u32) -> u16 {
    (0..50)
        .map(|_| {
            TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port")
                .port()
        })
        .find(|p| {
            (1..n as u16).all(|i| {
                p.checked_add(i)
                    .is_some_and(|q| TcpListener::bind(("127.0.0.1", q)).is_ok())
            })
        })
        .expect("free consecutive loopback ports")
}
