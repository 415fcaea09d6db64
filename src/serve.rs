//! `locksim serve`: a family's model server on 127.0.0.1 in real time, until stopped, so
//! that any real client can reach it (`zkCli.sh`, kazoo, Curator for `zk`). The same
//! server code as in simulation runs on a live [`NodeCtx`]: real loopback TCP, the
//! machine's monotonic clock, no faults.

use crate::history::Recorder;
use crate::locks::zk::ZkParams;
use crate::net::LiveNet;
use crate::sim::{NodeCtx, NodeState};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The families `serve` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeFamily {
    /// The ZooKeeper model (`algorithm = "zk"`), standalone.
    Zk,
}

impl ServeFamily {
    /// The family named `name`, or an error listing those `serve` runs.
    pub fn parse(name: &str) -> Result<ServeFamily, String> {
        match name {
            "zk" => Ok(ServeFamily::Zk),
            other => Err(format!(
                "serve: `{other}` cannot be served yet; families: zk \
                 (redis, raft and the others follow: see the README)"
            )),
        }
    }
}

/// What to serve, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    /// The family.
    pub family: ServeFamily,
    /// The loopback port of its (first) server.
    pub port: u16,
    /// How many servers (only 1 today: ensembles need live peer links).
    pub nodes: u32,
    /// The server's tick, ms (ZooKeeper's `tickTime`; sessions negotiate to 2 to 20
    /// ticks).
    pub tick_ms: u64,
}

/// Serve until `stop` is set. `on_ready` is called once the server listens, with the
/// ports. Every event the server records (a session expiry that deleted a lock's
/// owner, say) goes to `on_event` as a JSON line. Errors are for exit code 2.
pub fn serve(
    config: &ServeConfig,
    stop: Arc<AtomicBool>,
    on_ready: impl FnOnce(&[u16]),
    on_event: impl Fn(&str) + 'static,
) -> Result<(), String> {
    if config.nodes != 1 {
        return Err(format!(
            "serve: --nodes {}: only a standalone server (--nodes 1) can be served today; \
             an ensemble's peer links do not run on loopback yet",
            config.nodes
        ));
    }
    if !(1..=60_000).contains(&config.tick_ms) {
        return Err(format!(
            "serve: --tick-ms {}: expected 1 to 60000",
            config.tick_ms
        ));
    }
    // The listener must be free before anything starts: say so plainly if it is not.
    std::net::TcpListener::bind(("127.0.0.1", config.port))
        .map_err(|e| format!("serve: 127.0.0.1:{} is not free: {e}", config.port))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("serve: cannot start the runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    let name = "zk-0";
    let net = Rc::new(LiveNet::new(BTreeMap::from([(
        name.to_string(),
        config.port,
    )])));
    let recorder = Recorder::forwarding(move |e| {
        on_event(&serde_json::to_string(e).expect("events serialise"));
    });
    // The seed draws session ids and nothing a client could depend on.
    let state = Rc::new(NodeState::new(name, 0));
    // Served for real clients, the wall clock (ctime, mtime) is the machine's, not the
    // simulations' fixed epoch.
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    state
        .clock
        .borrow_mut()
        .jump(now_ns - crate::sim::EPOCH_NS - net.elapsed_ns() as i64);
    let ctx = NodeCtx::new(state, recorder).with_live(net.clone());
    let params = ZkParams {
        tick_ms: config.tick_ms,
        // ZooKeeper's znode.container.checkIntervalMs (the simulations scale it down).
        container_check_ms: 60_000,
        ..ZkParams::default()
    };
    local.block_on(&rt, async move {
        let server = ctx.spawn(crate::locks::zk::server::server_main(ctx.clone(), params));
        // Wait for the port to be bound (the listener is the server's first task).
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", config.port))
                .await
                .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        on_ready(&[config.port]);
        while !stop.load(Ordering::Relaxed) && !server.is_finished() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        server.abort();
    });
    Ok(())
}
