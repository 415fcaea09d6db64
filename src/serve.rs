//! `locksim serve`: a family's model server on 127.0.0.1 in real time, until stopped, so
//! that any real client can reach it (`zkCli.sh`, kazoo, Curator for `zk`; `etcdctl` and
//! etcd's clients for `raft`; `redis-cli`, redis-py for `redis`; `mariadb`, PyMySQL for
//! `db`). The same
//! server code as in simulation runs on a live [`NodeCtx`]: real loopback TCP, the
//! machine's monotonic clock, no faults.

use crate::history::{names, Recorder};
use crate::locks::raft::RaftParams;
use crate::locks::zk::ZkParams;
use crate::net::LiveNet;
use crate::sim::{LocalBoxFuture, NodeCtx, NodeState};
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The families `serve` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeFamily {
    /// The ZooKeeper model (`algorithm = "zk"`).
    Zk,
    /// The etcd-like Raft service (`algorithm = "raft"`): etcd's v3 gRPC API.
    Raft,
    /// The Redis model (`algorithm = "redis"`): one primary, no persistence.
    Redis,
    /// The database model (`algorithm = "db"`): MySQL's protocol, one server.
    Db,
}

impl ServeFamily {
    /// The family named `name`, or an error listing those `serve` runs.
    pub fn parse(name: &str) -> Result<ServeFamily, ServeError> {
        match name {
            "zk" => Ok(ServeFamily::Zk),
            "raft" => Ok(ServeFamily::Raft),
            "redis" => Ok(ServeFamily::Redis),
            "db" => Ok(ServeFamily::Db),
            other => Err(ServeError::UnknownFamily(other.to_string())),
        }
    }

    /// The client port of the first server when none is given: the real system's.
    pub fn default_port(self) -> u16 {
        match self {
            ServeFamily::Zk => 2181,
            ServeFamily::Raft => 2379,
            ServeFamily::Redis => 6379,
            ServeFamily::Db => 3306,
        }
    }

    /// The tick when none is given: ZooKeeper's `tickTime` (2000 ms), etcd's
    /// `--heartbeat-interval` (100 ms); the Redis model has none.
    pub fn default_tick_ms(self) -> u64 {
        match self {
            ServeFamily::Zk => 2000,
            ServeFamily::Raft | ServeFamily::Redis | ServeFamily::Db => 100,
        }
    }

    /// A server's peer port in simulation, for families whose servers talk to each other.
    fn peer_port(self) -> Option<u16> {
        match self {
            ServeFamily::Zk => Some(crate::locks::zk::proto::PEER_PORT),
            ServeFamily::Raft => Some(crate::locks::raft::wire::PEER_PORT),
            ServeFamily::Redis | ServeFamily::Db => None,
        }
    }
}

/// Why `serve` cannot serve: a bad option or a loopback port it cannot have. Each
/// message names the option or port.
#[derive(Debug)]
pub enum ServeError {
    /// No family of that name is served.
    UnknownFamily(String),
    /// A zk or raft cluster of this many servers (1, 3 or 5 are).
    ClusterSize(u32),
    /// The Redis model with this many servers (it is served as one).
    RedisSize(u32),
    /// The database model with this many servers (it is served as one).
    DbSize(u32),
    /// A tick outside 1 to 60000 ms.
    Tick(u64),
    /// The async runtime could not start.
    Runtime(io::Error),
    /// Consecutive client ports from `port` run past 65535.
    NoRoom {
        /// The first client port.
        port: u16,
        /// How many servers.
        nodes: u32,
    },
    /// A client port is in use.
    PortTaken {
        /// The port.
        port: u16,
        /// Why it could not be bound.
        source: io::Error,
    },
    /// The kernel gave no loopback port for a peer port.
    NoFreePort(io::Error),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::UnknownFamily(name) => write!(
                f,
                "serve: `{name}` cannot be served; families: zk, raft, redis, db"
            ),
            ServeError::ClusterSize(n) => write!(
                f,
                "serve: --nodes {n}: expected 1 (one server), 3 or 5 (a cluster)"
            ),
            ServeError::RedisSize(n) => write!(
                f,
                "serve: --nodes {n}: the Redis model is served as one primary (--nodes 1)"
            ),
            ServeError::DbSize(n) => write!(
                f,
                "serve: --nodes {n}: the database model is served as one server (--nodes 1)"
            ),
            ServeError::Tick(ms) => write!(f, "serve: --tick-ms {ms}: expected 1 to 60000"),
            ServeError::Runtime(e) => write!(f, "serve: cannot start the runtime: {e}"),
            ServeError::NoRoom { port, nodes } => {
                write!(f, "serve: --port {port}: no room for {nodes} servers")
            }
            ServeError::PortTaken { port, source } => {
                write!(f, "serve: 127.0.0.1:{port} is not free: {source}")
            }
            ServeError::NoFreePort(e) => write!(f, "serve: no free loopback port: {e}"),
        }
    }
}

// Each message includes its cause's: `source` stays `None`.
impl std::error::Error for ServeError {}

/// What to serve, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfig {
    /// The family.
    pub family: ServeFamily,
    /// The loopback port of its (first) server.
    pub port: u16,
    /// How many servers: 1, or 3 or 5 (a zk ensemble or raft cluster, on consecutive
    /// ports).
    pub nodes: u32,
    /// The server's tick, ms: ZooKeeper's `tickTime` (sessions negotiate to 2 to 20
    /// ticks), or etcd's heartbeat interval (an election timeout is 10 ticks, and the
    /// shortest lease TTL 15 ticks rounded up to whole seconds).
    pub tick_ms: u64,
    /// Seeds the servers' random draws: zk session ids, raft lease ids, election
    /// timeouts. The same seed hands out the same ids in the same order; the CLI draws a
    /// fresh one unless given `--seed`, so that a client that cached a session or lease id
    /// across a restart of `serve` is not fooled into reusing it.
    pub seed: u64,
    /// Whether `apply` events (a raft member applied one log entry: one per write and
    /// heartbeat-driven revoke, hundreds a second under load) reach `on_event`. The other
    /// events always do.
    pub apply_events: bool,
}

/// Serve until `stop` is set. `on_ready` is called once every server listens, with their
/// client ports. Every event the servers record (an ephemeral node or a leased key deleted
/// by an expiry, a session or lease its client ended, a new leader; `apply` only with
/// [`ServeConfig::apply_events`]) goes to `on_event` as a JSON line. Errors are for exit
/// code 2.
pub fn serve(
    config: &ServeConfig,
    stop: Arc<AtomicBool>,
    on_ready: impl FnOnce(&[u16]),
    on_event: impl Fn(&str) + 'static,
) -> Result<(), ServeError> {
    match config.family {
        ServeFamily::Zk | ServeFamily::Raft if ![1, 3, 5].contains(&config.nodes) => {
            return Err(ServeError::ClusterSize(config.nodes))
        }
        ServeFamily::Redis if config.nodes != 1 => return Err(ServeError::RedisSize(config.nodes)),
        ServeFamily::Db if config.nodes != 1 => return Err(ServeError::DbSize(config.nodes)),
        _ => {}
    }
    if !(1..=60_000).contains(&config.tick_ms) {
        return Err(ServeError::Tick(config.tick_ms));
    }
    let ports = address_book(config)?;
    let client_ports: Vec<u16> = (0..config.nodes)
        .map(|i| ports[&node_name(config.family, i)])
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServeError::Runtime)?;
    let local = tokio::task::LocalSet::new();
    let net = Rc::new(LiveNet::new(ports));
    let on_event = Rc::new(on_event);
    let params = ZkParams {
        servers: config.nodes,
        tick_ms: config.tick_ms,
        // ZooKeeper's znode.container.checkIntervalMs (the simulations scale it down).
        container_check_ms: 60_000,
        ..ZkParams::default()
    };
    // etcd's defaults: a heartbeat every tick, an election timeout of 10 ticks (1 s at the
    // default 100 ms), so lease TTLs count real seconds.
    let raft = RaftParams {
        nodes: config.nodes,
        tick_ms: config.tick_ms,
        heartbeat_tick: 1,
        election_tick: 10,
        // Real clients do not follow locksim's leader hints: forward, as etcd does.
        forward_lease_calls: true,
        ..RaftParams::default()
    };
    local.block_on(&rt, async move {
        let mut servers = Vec::new();
        for i in 0..config.nodes {
            let name = node_name(config.family, i);
            let (params, raft) = (params.clone(), raft.clone());
            servers.push(start_node(
                &name,
                Incarnation {
                    seed: config.seed,
                    number: 0,
                    apply_events: config.apply_events,
                },
                &net,
                on_event.clone(),
                |ctx| match config.family {
                    ServeFamily::Zk => Box::pin(crate::locks::zk::server::server_main(ctx, params)),
                    ServeFamily::Raft => Box::pin(crate::locks::raft::node::server_main(ctx, raft)),
                    ServeFamily::Redis => Box::pin(crate::locks::redis::node::serve_node(
                        ctx,
                        crate::locks::redis::Persistence::None,
                    )),
                    ServeFamily::Db => Box::pin(crate::locks::db::node::db_main(
                        ctx,
                        crate::locks::db::DbParams::mariadb_defaults(),
                    )),
                },
            ));
        }
        wait_listening(&client_ports).await;
        on_ready(&client_ports);
        run_until_stopped(servers, &stop).await;
    });
    Ok(())
}

/// A model server running in this process: its context and its task.
pub(crate) struct ServedNode {
    ctx: NodeCtx,
    task: tokio::task::JoinHandle<()>,
}

/// Start model server `name` (its `incarnation`) on `net` in real time: `main` run on a live context (see [`live_ctx`]), its
/// events to `on_event`. `serve` starts each server of its cluster so; `locksim live
/// --servers model` starts one per process (`locksim serve-node`).
pub(crate) fn start_node(
    name: &str,
    incarnation: Incarnation,
    net: &Rc<LiveNet>,
    on_event: Rc<dyn Fn(&str)>,
    main: impl FnOnce(NodeCtx) -> LocalBoxFuture<'static, ()>,
) -> ServedNode {
    let ctx = live_ctx(name, incarnation, net, on_event);
    let task = ctx.spawn(main(ctx.clone()));
    ServedNode { ctx, task }
}

/// Wait (up to 2 s each) until every loopback port of `ports` accepts connections: each
/// listener is a server's first task.
pub(crate) async fn wait_listening(ports: &[u16]) {
    for &port in ports {
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Serve until `stop` is set or a server ends, or exits on its own (Redis's
/// `SHUTDOWN`); then end them all.
pub(crate) async fn run_until_stopped(servers: Vec<ServedNode>, stop: &AtomicBool) {
    let ended = |servers: &[ServedNode]| {
        servers
            .iter()
            .any(|s| s.task.is_finished() || s.ctx.has_exited())
    };
    while !stop.load(Ordering::Relaxed) && !ended(&servers) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for s in servers {
        s.task.abort();
    }
}

/// Server `i`'s name, as in simulation.
fn node_name(family: ServeFamily, i: u32) -> String {
    match family {
        ServeFamily::Zk => format!("zk-{i}"),
        ServeFamily::Raft => format!("raft-{i}"),
        ServeFamily::Redis => format!("redis-{i}"),
        ServeFamily::Db => format!("db-{i}"),
    }
}

/// Server `i` takes client port `port + i`; a cluster's peer ports (`zk-i:2888`,
/// `raft-i:2380`) are any free ones. Every client port must be free.
fn address_book(config: &ServeConfig) -> Result<BTreeMap<String, u16>, ServeError> {
    let mut ports = BTreeMap::new();
    for i in 0..config.nodes {
        let port = u16::try_from(u32::from(config.port) + i).map_err(|_| ServeError::NoRoom {
            port: config.port,
            nodes: config.nodes,
        })?;
        std::net::TcpListener::bind(("127.0.0.1", port))
            .map_err(|source| ServeError::PortTaken { port, source })?;
        ports.insert(node_name(config.family, i), port);
        // A one-server Raft cluster still listens on its peer port.
        if let Some(peer_port) = config.family.peer_port() {
            let peer = std::net::TcpListener::bind(("127.0.0.1", 0))
                .and_then(|l| l.local_addr())
                .map_err(ServeError::NoFreePort)?
                .port();
            let name = node_name(config.family, i);
            ports.insert(format!("{name}:{peer_port}"), peer);
        }
    }
    Ok(ports)
}

/// Which run of a served node this is: the seed its randomness comes from (session and
/// lease ids, election timeouts), how many times it restarted before, and whether its
/// `apply` events are wanted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Incarnation {
    /// The seed (each server mixes in its name, as in simulation).
    pub seed: u64,
    /// 0 unless the node restarts after a crash.
    pub number: u32,
    /// Whether `apply` events go to `on_event` (one a Raft entry: many a second).
    pub apply_events: bool,
}

/// A live context for `incarnation` of server `name`: real loopback TCP, the machine's
/// clocks (its wall clock too: ctime and mtime are real), events to `on_event`.
fn live_ctx(
    name: &str,
    incarnation: Incarnation,
    net: &Rc<LiveNet>,
    on_event: Rc<dyn Fn(&str)>,
) -> NodeCtx {
    let apply_events = incarnation.apply_events;
    let recorder = Recorder::forwarding(move |e| {
        if e.f == names::APPLY && !apply_events {
            return;
        }
        on_event(&serde_json::to_string(e).expect("events serialise"));
    });
    // Each server draws from its own stream of the seed (the node name is mixed in), as
    // in simulation; a restarted one from another.
    let state = Rc::new(NodeState::restarted(
        name,
        incarnation.seed,
        incarnation.number,
    ));
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    state
        .clock
        .borrow_mut()
        .jump(now_ns - crate::sim::EPOCH_NS - net.elapsed_ns() as i64);
    NodeCtx::new(state, recorder).with_live(net.clone())
}
