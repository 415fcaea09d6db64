//! `locksim serve FAMILY`: a model server on loopback for real clients (see
//! [`crate::serve`]).

use super::EXIT_BAD_INPUT;
use crate::serve::{ServeConfig, ServeFamily};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Which of the servers' events `serve` prints (`--events`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedEvents {
    /// None (no `--events`).
    None,
    /// Every event but raft's `apply`, one per log entry (`--events`).
    AllButApply,
    /// Every event (`--events apply`).
    All,
}

/// Serve `family` until SIGINT or SIGTERM, its ids drawn from `seed` (a fresh seed if
/// `None`; printed either way). Exit 0 when stopped so, 2 on bad input (an unknown
/// family, a port in use).
pub fn serve_command(
    family: &str,
    port: Option<u16>,
    nodes: u32,
    tick_ms: Option<u64>,
    events: ServedEvents,
    seed: Option<u64>,
) -> u8 {
    let family = match ServeFamily::parse(family) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A first signal stops the server; a second one exits at once.
        let _ = signal_hook::flag::register_conditional_shutdown(signal, 130, stop.clone());
        let _ = signal_hook::flag::register(signal, stop.clone());
    }
    let port = port.unwrap_or(family.default_port());
    let tick_ms = tick_ms.unwrap_or(family.default_tick_ms());
    // Only `serve` draws from the OS: the ids a real client sees differ from one start to
    // the next, as a real server's do. Simulations never come here.
    let seed = seed.unwrap_or_else(rand::random);
    let config = ServeConfig {
        family,
        port,
        nodes,
        tick_ms,
        seed,
        apply_events: events == ServedEvents::All,
    };
    let ready = |ports: &[u16]| {
        let list: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        match family {
            ServeFamily::Zk => {
                let shape = match nodes {
                    1 => "standalone".to_string(),
                    n => format!("an ensemble of {n}"),
                };
                println!(
                    "serving the zk model ({shape}, tickTime {tick_ms} ms: sessions of {} to \
                     {} ms) on {}; Ctrl-C stops it",
                    2 * tick_ms,
                    20 * tick_ms,
                    list.join(",")
                );
                println!(
                    "  try: zkCli.sh -server {}   or, with kazoo: KazooClient(hosts=\"{}\")",
                    list.join(","),
                    list.join(",")
                );
            }
            ServeFamily::Raft => {
                println!(
                    "serving the raft model (etcd's v3 API on {nodes} member(s), heartbeat \
                     {tick_ms} ms, election timeout {} ms) on {}; Ctrl-C stops it",
                    10 * tick_ms,
                    list.join(",")
                );
                println!(
                    "  try: ETCDCTL_API=3 etcdctl --endpoints={} lock mylock",
                    list.join(",")
                );
            }
            ServeFamily::Redis => {
                println!(
                    "serving the redis model (one primary, no persistence) on {}; Ctrl-C \
                     stops it",
                    list[0]
                );
                println!("  try: redis-cli -p {} SET lock me NX PX 30000", ports[0]);
            }
            ServeFamily::Db => {
                println!(
                    "serving the database model (MySQL's protocol, database `locksim` with \
                     table `method_lock`, innodb_lock_wait_timeout 50 s, wait_timeout 8 h, any \
                     user and password) on {}; Ctrl-C stops it",
                    list[0]
                );
                println!(
                    "  try: mariadb -h 127.0.0.1 -P {} -u me locksim -e \"SELECT GET_LOCK('L', 10)\"",
                    ports[0]
                );
            }
        }
        println!("  ids from seed {seed} (--seed {seed} hands out the same ones)");
    };
    let on_event = move |line: &str| {
        if events != ServedEvents::None {
            println!("{line}");
        }
    };
    match crate::serve::serve(&config, stop, ready, on_event) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("locksim: {e}");
            EXIT_BAD_INPUT
        }
    }
}
