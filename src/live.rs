//! Live mode: a scenario's lock clients, workload, storage and checks against the real
//! servers of its family (`redis-server`, an etcd cluster, a ZooKeeper ensemble,
//! MariaDB: the family's [`RealCluster`]) on 127.0.0.1, which locksim starts and stops
//! itself, for a bounded real duration; or against locksim's own model servers run the
//! same way, one `locksim serve-node` process a server ([`LiveServers::Model`], see
//! `crate::real::ModelCluster`). This module names no family.
//!
//! Each client runs the simulation's code in its own process (`locksim live-node`, see
//! [`live_node_main`]): its [`NodeCtx`] takes true time from the machine's monotonic clock,
//! which every process shares, and connects over loopback TCP ([`crate::net::Tcp`]); it
//! streams its events to locksim, which merges them into one history by time. The
//! storage runs in locksim's process. Every link crosses one of locksim's proxies
//! ([`Proxies`]): clients reach servers and the storage, and servers reach each other,
//! only through them, so the scenario's partitions (two-way and one-way), latency and
//! loss apply to every link, between servers too. Faults are applied by the same
//! applier as in simulation (`sim/applier.rs`); what each does to a real process is
//! `live/nodes.rs`' (a pause is SIGSTOP then SIGCONT, a crash SIGKILL; a client reaching
//! an armed pause point stops itself), and the faults it cannot apply (a server's clock,
//! a disk stall) are listed as not applied. A client node may run an external client, a
//! program wrapping a real lock library, in its process group
//! (`live/external_client.rs`, `docs/external-clients.md`). Every process started is killed on the way
//! out, including after SIGINT/SIGTERM, and by the kernel if locksim itself is killed.

mod adapter_protocol;
mod error;
mod external_client;
mod messages;
mod node_main;
mod node_process;
mod nodes;
mod serve_node;
mod servers;

pub(crate) use error::LiveError;
pub(crate) use messages::NodeSpec;
pub use node_main::live_node_main;
pub use serve_node::serve_node_main;
pub(crate) use servers::LiveServers;

use crate::history::names;
use node_process::Note;
use nodes::LiveNodes;

use crate::history::{Event, EventType, Recorder};
use crate::locks::ALGORITHMS;
use crate::net::LiveNet;
use crate::real::{
    free_port, locksim_binary, Addresses, LinkShape, ModelCluster, Patience, Proxies, RealCluster,
    Route, ServerProcess, Supervisor,
};
use crate::scenario::Scenario;
use crate::sim::{Action, Nemesis, RunResult};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often the driver applies due faults and serves node requests.
const DRIVER_TICK: Duration = Duration::from_millis(1);

/// How long the servers may take to start and form their cluster (a JVM, an election).
const START_LIMIT: Duration = Duration::from_secs(60);

/// What a live run did: the run (history, schedule) and the faults it could not apply.
#[derive(Debug)]
pub(crate) struct LiveRun {
    /// The history and the fault schedule, as a simulated run returns them.
    pub result: RunResult,
    /// Faults of the schedule, and settings of the scenario, that live mode does not
    /// apply (servers' clock faults, model-only keys, ...).
    pub skipped: Vec<String>,
    /// Connections the proxies forwarded, by directed link (source → server).
    pub connections: BTreeMap<(String, String), u64>,
    /// Checks that need the model servers' own events, with why: not checked live.
    pub unchecked: Vec<(&'static str, &'static str)>,
    /// How long the servers took to start and become ready, ms (before the run's clock).
    pub ready_ms: u64,
}

/// The algorithms live mode runs: those with a real counterpart.
pub(crate) fn live_families() -> Vec<&'static str> {
    ALGORITHMS
        .iter()
        .filter(|f| {
            (f.configure)("", std::path::Path::new("."))
                .ok()
                .and_then(|a| a.real())
                .is_some()
        })
        .map(|f| f.name)
        .collect()
}

/// The algorithms whose model servers `--servers model` runs.
pub(crate) fn served_families() -> Vec<&'static str> {
    ALGORITHMS
        .iter()
        .filter(|f| {
            (f.configure)("", std::path::Path::new("."))
                .ok()
                .and_then(|a| a.served_model())
                .is_some()
        })
        .map(|f| f.name)
        .collect()
}

/// The servers `servers` names for `scenario`: its family's real ones, or its model's
/// in processes of their own.
pub(crate) fn cluster_of(
    scenario: &Scenario,
    servers: LiveServers,
) -> Result<Rc<dyn RealCluster>, LiveError> {
    match servers {
        LiveServers::Real => {
            let cluster = scenario
                .lock
                .real()
                .ok_or_else(|| LiveError::NoRealCounterpart {
                    algorithm: scenario.lock.name().to_string(),
                    families: live_families(),
                })?;
            match cluster.refusal() {
                Some(why) => Err(LiveError::Refused {
                    system: cluster.system(),
                    why,
                }),
                None => Ok(cluster),
            }
        }
        LiveServers::Model => {
            let model = scenario
                .lock
                .served_model()
                .ok_or_else(|| LiveError::NoServedModel {
                    algorithm: scenario.lock.name().to_string(),
                    families: served_families(),
                })?;
            let exe = locksim_binary().map_err(LiveError::Executable)?;
            Ok(Rc::new(ModelCluster::new(model, &scenario.file, &exe)))
        }
    }
}

/// Run `scenario` live for its `duration_ms` with the faults of `seed` (explicit ones and
/// random draws), against `servers`. `stop` ends the run early (a signal handler sets
/// it). Errors are for exit code 2 (a family without a real counterpart or a served
/// model, a server missing or failing).
pub(crate) fn run_live(
    scenario: &Scenario,
    seed: u64,
    servers: LiveServers,
    stop: Arc<AtomicBool>,
) -> Result<LiveRun, LiveError> {
    let mut scenario = scenario.clone();
    let cluster = cluster_of(&scenario, servers)?;
    // The clients' parameters against the real servers; the processes do the same (model
    // servers too: they stand in for the real ones).
    scenario.lock = scenario.lock.for_real();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LiveError::Runtime)?;
    let local = tokio::task::LocalSet::new();
    let supervisor = Supervisor::default();
    let root = std::env::temp_dir().join(format!("locksim-live-{}", std::process::id()));
    let out = local.block_on(
        &rt,
        drive(&scenario, seed, cluster, &root, &supervisor, stop),
    );
    supervisor.kill_all();
    let _ = std::fs::remove_dir_all(&root);
    out
}

/// Remove the data folders (`locksim-live-<pid>` under `tmp`) of live runs whose locksim
/// is gone: a SIGKILLed locksim cannot remove its own (the kernel kills its servers, not
/// their files), so the next `locksim live` does, first thing (even one that then refuses
/// its scenario).
pub(crate) fn remove_orphaned_folders(tmp: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix("locksim-live-"))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// The ports of a run: every server port's listen and public (proxy) port, and the
/// storage's, with the address books of locksim (listen ports: its observers and its
/// storage) and of the client processes (public ports: every connection is proxied).
struct Plan {
    addrs: Addresses,
    routes: Vec<Route>,
    locksim_book: BTreeMap<String, u16>,
    client_book: BTreeMap<String, u16>,
}

fn plan_ports(scenario: &Scenario, cluster: &dyn RealCluster) -> Result<Plan, LiveError> {
    // The kernel may hand out a port it just handed out (none is held until the
    // servers start): each is taken once.
    let taken = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let port = || loop {
        let p = free_port().map_err(LiveError::NoFreePort)?;
        if taken.borrow_mut().insert(p) {
            return Ok::<u16, LiveError>(p);
        }
    };
    let mut plan = Plan {
        addrs: Addresses::default(),
        routes: Vec::new(),
        locksim_book: BTreeMap::new(),
        client_book: BTreeMap::new(),
    };
    let mut labels = Vec::new();
    for node in scenario.servers() {
        for (i, p) in cluster.ports(&node).into_iter().enumerate() {
            let (listen, public) = (port()?, port()?);
            plan.addrs.insert(&node, p.label, listen, public);
            plan.routes.push(Route {
                node: node.clone(),
                public,
                listen,
                opening: None,
            });
            labels.push((node.clone(), p.label));
            let mut names = Vec::new();
            if i == 0 {
                names.push(node.clone());
            }
            if let Some(sim) = p.sim_port {
                names.push(format!("{node}:{sim}"));
            }
            for name in names {
                plan.locksim_book.insert(name.clone(), listen);
                plan.client_book.insert(name, public);
            }
        }
    }
    // Rewrites may need every address: asked once all are chosen.
    for (route, (node, label)) in plan.routes.iter_mut().zip(labels) {
        route.opening = cluster.opening(&node, label, &plan.addrs);
    }
    let (listen, public) = (port()?, port()?);
    plan.routes.push(Route {
        node: "storage".into(),
        public,
        listen,
        opening: None,
    });
    plan.locksim_book.insert("storage".into(), listen);
    plan.client_book.insert("storage".into(), public);
    Ok(plan)
}

/// Start every server (each as soon as its family lets it), wait until each listens and
/// the whole set is ready.
fn start_servers(
    scenario: &Scenario,
    cluster: &Rc<dyn RealCluster>,
    addrs: &Rc<Addresses>,
    root: &std::path::Path,
    supervisor: &Supervisor,
    stop: &Arc<AtomicBool>,
) -> Result<BTreeMap<String, ServerProcess>, LiveError> {
    let patience = Patience {
        until: std::time::Instant::now() + START_LIMIT,
        limit_s: START_LIMIT.as_secs(),
        stop: stop.clone(),
    };
    let mut servers = BTreeMap::new();
    // The servers' folders (their logs with them) go when this returns: a failure
    // carries the end of every log.
    let with_logs = |error, servers: &BTreeMap<String, ServerProcess>| LiveError::NotReady {
        error,
        logs: servers
            .values()
            .map(|p| (p.name.clone(), p.log_tail(8)))
            .collect(),
    };
    for name in scenario.servers() {
        if let Err(e) = cluster.wait_before_start(&name, addrs, &patience) {
            return Err(with_logs(e, &servers));
        }
        let p = ServerProcess::start(&name, root, cluster.clone(), addrs.clone(), supervisor)
            .map_err(|source| LiveError::ServerStart {
                node: name.clone(),
                source,
            })?;
        servers.insert(name, p);
    }
    for p in servers.values_mut() {
        p.wait_listening(&patience)
            .map_err(LiveError::NotListening)?;
    }
    if let Err(e) = cluster.wait_ready(addrs, &patience) {
        return Err(with_logs(e, &servers));
    }
    Ok(servers)
}

/// The live run: ports, proxies and servers, then the nodes, then the fault schedule
/// applied tick by tick for the scenario's duration.
async fn drive(
    scenario: &Scenario,
    seed: u64,
    cluster: Rc<dyn RealCluster>,
    root: &std::path::Path,
    supervisor: &Supervisor,
    stop: Arc<AtomicBool>,
) -> Result<LiveRun, LiveError> {
    let world = crate::deploy::world(scenario, scenario.fault_plan());
    let all: Vec<String> = world.hosts.iter().map(|h| h.name.clone()).collect();
    let plan = plan_ports(scenario, cluster.as_ref())?;
    let shape = LinkShape {
        latency_ms: *scenario.network.latency_ms,
        loss: scenario.network.loss,
        seed,
    };
    let proxies =
        Proxies::start(&plan.routes, shape, supervisor.clone()).map_err(LiveError::Proxies)?;
    let addrs = Rc::new(plan.addrs);
    std::fs::create_dir_all(root).map_err(|source| LiveError::Folder {
        path: root.to_path_buf(),
        source,
    })?;
    let started = std::time::Instant::now();
    let servers = start_servers(scenario, &cluster, &addrs, root, supervisor, &stop)?;
    let ready_ms = started.elapsed().as_millis() as u64;
    // The run's clock starts once the servers are ready.
    let net = Rc::new(LiveNet::new(plan.locksim_book));
    let epoch_ns = net.epoch_ns();
    let recorder = Recorder::new();
    let exe = locksim_binary().map_err(LiveError::Executable)?;
    let spec = client_spec(scenario, seed, &net, plan.client_book);
    let nodes = LiveNodes::new(
        recorder.clone(),
        net,
        servers,
        proxies,
        spec,
        exe,
        supervisor.clone(),
    );
    let mut nemesis = Nemesis::new(nodes, recorder.clone(), all.clone());
    let watchers = nemesis.target().start_observers(cluster.as_ref(), seed);
    nemesis
        .target_mut()
        .start_nodes(&scenario.clients(), world.hosts, seed)
        .await?;
    let schedule = world.faults.schedule(&all, seed);
    for (t, a) in crate::sim::actions(&schedule) {
        nemesis.schedule(t, a);
    }
    let error = run_until(&mut nemesis, scenario.duration_ms * 1_000_000, &stop).await?;
    for w in watchers {
        w.abort();
    }
    let end_ns = nemesis.target_mut().finish();
    let mut history = recorder.take();
    // Model servers record their own events, as in simulation.
    history.extend(cluster.recorded_events(epoch_ns));
    // Client processes' events arrive a little after they happened, through pipes:
    // the run's shared clock orders them.
    history.sort_by_key(|e| e.time_ns);
    order_expirations(&mut history, EXPIRY_REORDER_NS);
    let mut skipped = cluster.not_applied();
    skipped.extend(nemesis.not_applied().iter().map(|n| match &n.action {
        Action::Crash { node, .. } | Action::Restart { node } if !cluster.crashes_apply(node) => {
            format!(
                "{n} (a restart of {node} could not resume from its disk: a model server's \
                 disk lives in its process)"
            )
        }
        _ => n.to_string(),
    }));
    Ok(LiveRun {
        result: RunResult {
            seed,
            history,
            end_ns,
            error,
            schedule,
            traffic: None,
            escaped_tasks: Default::default(),
        },
        skipped,
        unchecked: cluster.unchecked(),
        ready_ms,
        connections: nemesis.target().proxies.connections(),
    })
}

/// The spec every client process starts from (node and incarnation vary): the
/// scenario's file, the run's clock and the public (proxied) ports.
fn client_spec(
    scenario: &Scenario,
    seed: u64,
    net: &LiveNet,
    ports: BTreeMap<String, u16>,
) -> NodeSpec {
    NodeSpec {
        scenario: scenario.file.clone(),
        duration_ms: scenario.duration_ms,
        seed,
        node: String::new(),
        incarnation: 0,
        epoch_ns: net.epoch_ns(),
        ports,
        clock: crate::sim::Clock::default(),
        client: scenario.workload.client.clone(),
    }
}

/// How far back a grant read just before an expiry notification is taken to follow it.
const EXPIRY_REORDER_NS: u64 = 5_000_000;

/// Put each expiry notification before the grants of its lock that were read at most
/// `window_ns` before it: an observer reads a real server's expiry a little after the
/// server acted on it, and a grant it enabled can be recorded first. Redis sends the
/// notification before it runs the command that found the key expired (and before any
/// command after an active expiry), so a grant read first only won the race between two
/// sockets: its `SET` came after the expiry; ZooKeeper's session close is committed
/// before the next waiter can see its node gone. Indices are renumbered; times stay in
/// order (the expiry takes the grant's time).
pub(crate) fn order_expirations(history: &mut [Event], window_ns: u64) {
    for i in 0..history.len() {
        if history[i].f != names::EXPIRE || history[i].kind != EventType::Event {
            continue;
        }
        let (key, t) = (history[i].key.clone(), history[i].time_ns);
        // The earliest grant of this lock in the window, with no release of it after.
        let mut to = i;
        for j in (0..i).rev() {
            let e = &history[j];
            if t - e.time_ns > window_ns || (e.lock == key && e.f == names::RELEASE) {
                break;
            }
            if e.lock == key && e.f == names::ACQUIRE && e.kind == EventType::Ok {
                to = j;
            }
        }
        if to < i {
            let time = history[to].time_ns;
            history[to..=i].rotate_right(1);
            history[to].time_ns = time;
        }
    }
    for (n, e) in history.iter_mut().enumerate() {
        e.index = n as u64;
    }
}

/// Every tick until `end_ns` on the run's clock: apply the due faults, then serve what
/// the nodes ask for. Returns the interruption, if `stop` was set.
async fn run_until(
    nemesis: &mut Nemesis<LiveNodes>,
    end_ns: u64,
    stop: &AtomicBool,
) -> Result<Option<String>, LiveError> {
    loop {
        let now = nemesis.target().net.elapsed_ns();
        if now >= end_ns {
            return Ok(None);
        }
        if stop.load(Ordering::Relaxed) {
            return Ok(Some(format!("interrupted at {} ms", now / 1_000_000)));
        }
        nemesis.apply_due(now)?;
        // What the in-process nodes' code asked for (a pause point's resume, a crash
        // point's crash).
        for (node, request) in nemesis.target().take_requests() {
            nemesis.serve(now, node, request)?;
        }
        serve_notes(nemesis, now, stop)?;
        tokio::time::sleep(DRIVER_TICK).await;
    }
}

/// What the client processes reported: a pause point's self-stop, a crash point, a
/// process that ended by itself (an error, unless the run was interrupted).
fn serve_notes(
    nemesis: &mut Nemesis<LiveNodes>,
    now: u64,
    stop: &AtomicBool,
) -> Result<(), LiveError> {
    let notes = std::mem::take(&mut *nemesis.target().inbox.borrow_mut());
    for (node, note) in notes {
        match note {
            Note::Stopping(ns) => {
                nemesis.target_mut().stopped_itself(&node);
                nemesis.schedule(now + ns, Action::Resume { node });
            }
            Note::Crash(down_ns) => nemesis.apply(now, Action::Crash { node, down_ns })?,
            Note::ClientFailed { command, failure } => {
                return Err(LiveError::ExternalClient {
                    node,
                    command,
                    failure: Box::new(failure),
                })
            }
            Note::Died if !stop.load(Ordering::Relaxed) => {
                return Err(LiveError::Died {
                    node,
                    at_ms: now / 1_000_000,
                })
            }
            // Interrupted: the loop ends at its next turn.
            Note::Died => {}
        }
    }
    Ok(())
}
