//! Live mode: a scenario's lock clients, workload, storage and checks against the real
//! servers of its family (`redis-server`, an etcd cluster, a ZooKeeper ensemble: the
//! family's [`RealCluster`]) on 127.0.0.1, which locksim starts and stops itself, for a
//! bounded real duration. This module names no family.
//!
//! Each client runs the simulation's code in its own process (`locksim live-node`, see
//! [`live_node_main`]): its [`NodeCtx`] takes true time from the machine's monotonic clock,
//! which every process shares, and connects over loopback TCP ([`crate::net::Tcp`]); it
//! streams its events to locksim, which merges them into one history by time. The
//! storage runs in locksim's process. Every link crosses one of locksim's proxies
//! ([`Proxies`]): clients reach servers and the storage, and servers reach each other,
//! only through them, so the scenario's partitions (two-way and one-way), latency and
//! loss apply to every link, between servers too. A pause of a server or a client is
//! SIGSTOP then SIGCONT of its process (a client reaching an armed pause point stops
//! itself), a crash is SIGKILL and a restart (a server on the same ports and data
//! folder; a client as a new process, its next incarnation). Clock faults of clients and
//! the storage change their `Clock` as in simulation; those of the servers are not
//! applied (they are listed as skipped). Every process started is killed on the way out,
//! including after SIGINT/SIGTERM, and by the kernel if locksim itself is killed.

mod messages;
mod node_main;
mod node_process;

pub use messages::{FromNode, NodeSpec, ToNode};
pub use node_main::live_node_main;
pub use node_process::locksim_binary;

use crate::history::names;
use node_process::{Inbox, NodeProcess, Note};

use crate::history::{Event, EventType, Recorder};
use crate::locks::ALGORITHMS;
use crate::net::LiveNet;
use crate::real::{
    free_port, Addresses, LinkShape, Patience, Proxies, RealCluster, Route, ServerProcess,
    Supervisor,
};
use crate::scenario::Scenario;
use crate::sim::{
    close_crashed_op, partition_links, Action, ArmedFault, FaultPoint, NodeCtx, NodeRequest,
    NodeState, RunResult,
};
use serde_json::json;
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
pub struct LiveRun {
    /// The history and the fault schedule, as a simulated run returns them.
    pub result: RunResult,
    /// Faults of the schedule, and settings of the scenario, that live mode does not
    /// apply (servers' clock faults, model-only keys, ...).
    pub skipped: Vec<String>,
    /// The real system the run used (`redis-server`, `etcd`, `ZooKeeper`).
    pub system: &'static str,
    /// Connections the proxies forwarded, by directed link (source → server).
    pub connections: BTreeMap<(String, String), u64>,
    /// Checks that need the model servers' own events, with why: not checked live.
    pub unchecked: Vec<(&'static str, &'static str)>,
    /// How long the servers took to start and become ready, ms (before the run's clock).
    pub ready_ms: u64,
}

/// The algorithms live mode runs: those with a real counterpart.
pub fn live_families() -> Vec<&'static str> {
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

/// Run `scenario` live for its `duration_ms` with the faults of `seed` (explicit ones and
/// random draws). `stop` ends the run early (a signal handler sets it). Errors are
/// messages for exit code 2 (a family without a real counterpart, a server missing or
/// failing).
pub fn run_live(scenario: &Scenario, seed: u64, stop: Arc<AtomicBool>) -> Result<LiveRun, String> {
    remove_orphaned_folders(&std::env::temp_dir());
    let mut scenario = scenario.clone();
    let cluster = scenario.lock.real();
    // The clients' parameters against the real servers; the processes do the same.
    scenario.lock = scenario.lock.for_real();
    let Some(cluster) = cluster else {
        return Err(format!(
            "live mode runs algorithm = {}, not \"{}\" (it has no real counterpart)",
            live_families()
                .iter()
                .map(|f| format!("\"{f}\""))
                .collect::<Vec<_>>()
                .join(", "),
            scenario.lock.name()
        ));
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
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
/// their files), so the next run does.
fn remove_orphaned_folders(tmp: &std::path::Path) {
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

/// One in-process node (storage or client): its state and running task.
struct Local {
    state: Rc<NodeState>,
    main: crate::sim::HostMain,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// A client node: its running process, if up, its incarnation, and its clock (kept
/// here too: a new process starts from it, and the history records its readings).
struct Client {
    process: Option<NodeProcess>,
    incarnation: u32,
    clock: crate::sim::Clock,
}

struct Driver {
    recorder: Recorder,
    net: Rc<LiveNet>,
    servers: BTreeMap<String, ServerProcess>,
    proxies: Proxies,
    locals: BTreeMap<String, Local>,
    clients: BTreeMap<String, Client>,
    /// What client processes report.
    inbox: Inbox,
    /// The spec every client process starts from (node and incarnation vary).
    spec: NodeSpec,
    exe: std::path::PathBuf,
    supervisor: Supervisor,
    pending: BTreeMap<(u64, u64), Action>,
    seq: u64,
    skipped: Vec<String>,
    all: Vec<String>,
    /// Live partitions by id: the directed links each cut.
    partitions: BTreeMap<u64, Vec<(String, String)>>,
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

fn plan_ports(scenario: &Scenario, cluster: &dyn RealCluster) -> Result<Plan, String> {
    // The kernel may hand out a port it just handed out (none is held until the
    // servers start): each is taken once.
    let taken = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let port = || loop {
        let p = free_port().map_err(|e| format!("no free loopback port: {e}"))?;
        if taken.borrow_mut().insert(p) {
            return Ok::<u16, String>(p);
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
) -> Result<BTreeMap<String, ServerProcess>, String> {
    let patience = Patience {
        until: std::time::Instant::now() + START_LIMIT,
        limit_s: START_LIMIT.as_secs(),
        stop: stop.clone(),
    };
    let mut servers = BTreeMap::new();
    // The servers' folders (their logs with them) go when this returns: a failure
    // carries the end of every log.
    let with_logs = |e: String, servers: &BTreeMap<String, ServerProcess>| {
        let logs: Vec<String> = servers
            .values()
            .map(|p| format!("--- {}'s log ends:\n{}", p.name, p.log_tail(8)))
            .collect();
        format!("{e}\n{}", logs.join("\n"))
    };
    for name in scenario.servers() {
        if let Err(e) = cluster.wait_before_start(&name, addrs, &patience) {
            return Err(with_logs(e, &servers));
        }
        let p = ServerProcess::start(&name, root, cluster.clone(), addrs.clone(), supervisor)
            .map_err(|e| format!("{name}: {e}"))?;
        servers.insert(name, p);
    }
    for p in servers.values_mut() {
        p.wait_listening(&patience)?;
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
) -> Result<LiveRun, String> {
    let world = crate::deploy::world(scenario, scenario.fault_plan());
    let all: Vec<String> = world.hosts.iter().map(|h| h.name.clone()).collect();
    let plan = plan_ports(scenario, cluster.as_ref())?;
    let shape = LinkShape {
        latency_ms: *scenario.network.latency_ms,
        loss: scenario.network.loss,
        seed,
    };
    let proxies = Proxies::start(&plan.routes, shape, supervisor.clone())
        .map_err(|e| format!("cannot start the proxies: {e}"))?;
    let addrs = Rc::new(plan.addrs);
    std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let started = std::time::Instant::now();
    let servers = start_servers(scenario, &cluster, &addrs, root, supervisor, &stop)?;
    let ready_ms = started.elapsed().as_millis() as u64;
    // The run's clock starts once the servers are ready.
    let net = Rc::new(LiveNet::new(plan.locksim_book));
    let recorder = Recorder::new();
    let exe = locksim_binary().map_err(|e| format!("cannot find locksim's executable: {e}"))?;
    let spec = client_spec(scenario, seed, &net, plan.client_book);
    let mut d = Driver {
        recorder: recorder.clone(),
        net: net.clone(),
        servers,
        proxies,
        locals: BTreeMap::new(),
        clients: BTreeMap::new(),
        inbox: Inbox::default(),
        spec,
        exe,
        supervisor: supervisor.clone(),
        pending: BTreeMap::new(),
        seq: 0,
        skipped: cluster.not_applied(),
        all: all.clone(),
        partitions: BTreeMap::new(),
    };
    let watchers = d.start_observers(cluster.as_ref(), seed);
    d.start_nodes(&scenario.clients(), world.hosts, seed)
        .await?;
    let schedule = world.faults.schedule(&all, seed);
    for (t, a) in crate::sim::actions(&schedule) {
        d.push(t, a);
    }
    let error = d.run_until(scenario.duration_ms * 1_000_000, &stop).await?;
    for w in watchers {
        w.abort();
    }
    let (history, end_ns) = d.finish();
    Ok(LiveRun {
        result: RunResult {
            seed,
            history,
            end_ns,
            error,
            schedule,
            traffic: None,
        },
        skipped: d.skipped,
        system: cluster.system(),
        unchecked: cluster.unchecked(),
        ready_ms,
        connections: d.proxies.connections(),
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
pub fn order_expirations(history: &mut [Event], window_ns: u64) {
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

impl Driver {
    /// Start the family's observers of the servers (each reads one server's events, in
    /// this process).
    fn start_observers(
        &self,
        cluster: &dyn RealCluster,
        seed: u64,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let mut watchers = Vec::new();
        for name in self.servers.keys() {
            let state = Rc::new(NodeState::new(name, seed));
            let ctx = NodeCtx::new(state, self.recorder.clone()).with_live(self.net.clone());
            if let Some(task) = cluster.observer(name, ctx) {
                watchers.push(tokio::task::spawn_local(task));
            }
        }
        watchers
    }

    /// Start the hosts that are not servers, in the world's order: each of `clients` in
    /// its own process (`locksim live-node`), the others (the storage) in this one.
    async fn start_nodes(
        &mut self,
        clients: &[String],
        hosts: Vec<crate::sim::Host>,
        seed: u64,
    ) -> Result<(), String> {
        // Storage first (clients connect to it), as the world starts hosts in order.
        for host in hosts {
            if self.servers.contains_key(&host.name) {
                continue;
            }
            if clients.contains(&host.name) {
                let process = self.spawn_client(&host.name, 0)?;
                let client = Client {
                    process: Some(process),
                    incarnation: 0,
                    clock: crate::sim::Clock::default(),
                };
                self.clients.insert(host.name, client);
                continue;
            }
            let state = Rc::new(NodeState::new(&host.name, seed));
            let mut local = Local {
                state,
                main: host.main,
                task: None,
            };
            local.task = Some(self.start(&local));
            self.locals.insert(host.name, local);
            tokio::task::yield_now().await;
        }
        Ok(())
    }

    /// Every tick until `end_ns` on the run's clock: apply the due faults, then serve
    /// what the nodes ask for. Returns the interruption, if `stop` was set.
    async fn run_until(
        &mut self,
        end_ns: u64,
        stop: &AtomicBool,
    ) -> Result<Option<String>, String> {
        loop {
            let now = self.net.elapsed_ns();
            if now >= end_ns {
                return Ok(None);
            }
            if stop.load(Ordering::Relaxed) {
                return Ok(Some(format!("interrupted at {} ms", now / 1_000_000)));
            }
            while let Some(entry) = self.pending.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let action = entry.remove();
                self.apply(now, action)?;
            }
            self.serve_requests(now)?;
            self.serve_notes(now, stop)?;
            tokio::time::sleep(DRIVER_TICK).await;
        }
    }

    /// What the in-process nodes' code asked for (a pause point's resume, a crash
    /// point's crash).
    fn serve_requests(&mut self, now: u64) -> Result<(), String> {
        let requests: Vec<(String, NodeRequest)> = self
            .locals
            .iter()
            .flat_map(|(n, l)| l.state.take_requests().into_iter().map(|r| (n.clone(), r)))
            .collect();
        for (node, req) in requests {
            match req {
                NodeRequest::ResumeAfter(ns) => self.push(now + ns, Action::Resume { node }),
                NodeRequest::Crash(down_ns) => self.apply(now, Action::Crash { node, down_ns })?,
            }
        }
        Ok(())
    }

    /// What the client processes reported: a pause point's self-stop, a crash point, a
    /// process that ended by itself (an error, unless the run was interrupted).
    fn serve_notes(&mut self, now: u64, stop: &AtomicBool) -> Result<(), String> {
        let notes = std::mem::take(&mut *self.inbox.borrow_mut());
        for (node, note) in notes {
            match note {
                Note::Stopping(ns) => {
                    if let Some(p) = self.process_mut(&node) {
                        p.stopped_itself();
                    }
                    self.push(now + ns, Action::Resume { node });
                }
                Note::Crash(down_ns) => self.apply(now, Action::Crash { node, down_ns })?,
                Note::Died if !stop.load(Ordering::Relaxed) => {
                    return Err(format!(
                        "{node}'s process ended by itself at {} ms (see its error above)",
                        now / 1_000_000
                    ))
                }
                // Interrupted: the loop ends at its next turn.
                Note::Died => {}
            }
        }
        Ok(())
    }

    /// End every node (tasks aborted, client processes killed) and return the history,
    /// in time order, and the end time.
    fn finish(&mut self) -> (crate::history::History, u64) {
        for l in self.locals.values_mut() {
            if let Some(t) = l.task.take() {
                t.abort();
            }
        }
        let end_ns = self.net.elapsed_ns();
        for c in self.clients.values_mut() {
            if let Some(mut p) = c.process.take() {
                p.kill(end_ns);
            }
        }
        let mut history = self.recorder.take();
        // Client processes' events arrive a little after they happened, through pipes:
        // the run's shared clock orders them.
        history.sort_by_key(|e| e.time_ns);
        order_expirations(&mut history, EXPIRY_REORDER_NS);
        (history, end_ns)
    }

    /// Start incarnation `incarnation` of client `node` in its own process, with the
    /// links cut now.
    fn spawn_client(&self, node: &str, incarnation: u32) -> Result<NodeProcess, String> {
        let spec = NodeSpec {
            node: node.to_string(),
            incarnation,
            clock: self
                .clients
                .get(node)
                .map(|c| c.clock.clone())
                .unwrap_or_default(),
            ..self.spec.clone()
        };
        NodeProcess::spawn(
            &self.exe,
            spec,
            self.recorder.clone(),
            self.inbox.clone(),
            &self.supervisor,
        )
        .map_err(|e| format!("{node}: cannot start its process: {e}"))
    }

    /// The running process of client `node`, if it is a client and up.
    fn process_mut(&mut self, node: &str) -> Option<&mut NodeProcess> {
        self.clients.get_mut(node).and_then(|c| c.process.as_mut())
    }

    /// Cut or restore a link: in the proxies, which every link crosses.
    fn set_cut(&self, from: &str, to: &str, cut: bool) {
        self.proxies.set_cut(from, to, cut);
    }

    fn push(&mut self, t: u64, a: Action) {
        self.pending.insert((t, self.seq), a);
        self.seq += 1;
    }

    /// Start (or restart) an in-process node: a fresh context, its code under its pause
    /// switch.
    fn start(&self, local: &Local) -> tokio::task::JoinHandle<()> {
        let ctx =
            NodeCtx::new(local.state.clone(), self.recorder.clone()).with_live(self.net.clone());
        let run = (local.main)(ctx);
        tokio::task::spawn_local(local.state.pause.wrap(run))
    }

    fn record(&self, now: u64, f: &str, node: &str, value: serde_json::Value) {
        let e = Event::new("nemesis", EventType::Event, f)
            .at(now)
            .nodes(vec![node.to_string()])
            .value(value);
        self.recorder.push(e);
    }

    /// Apply one fault action, due now: each kind is one step below.
    fn apply(&mut self, now: u64, action: Action) -> Result<(), String> {
        tracing::info!("live nemesis at {:.3} ms: {action:?}", now as f64 / 1e6);
        match action {
            Action::Pause { node, duration_ns } => self.pause(now, node, duration_ns)?,
            Action::ArmPause {
                node,
                duration_ns,
                point,
            } => self.arm(&node, point, ArmedFault::Pause { duration_ns }),
            Action::ArmCrash {
                node,
                down_ns,
                point,
            } => self.arm(&node, point, ArmedFault::Crash { down_ns }),
            Action::Resume { node } => self.resume(now, node)?,
            Action::Crash { node, down_ns } => self.crash(now, node, down_ns)?,
            Action::Restart { node } => {
                if self.start_again(&node)? {
                    self.record(now, names::RESTART, &node, json!(null));
                }
            }
            Action::Partition {
                id,
                side,
                peers,
                oneway,
            } => self.partition(now, id, side, peers, oneway),
            Action::Heal { id } => {
                if let Some(links) = self.partitions.remove(&id) {
                    for (a, b) in &links {
                        self.set_cut(a, b, false);
                    }
                    let e = Event::new("nemesis", EventType::Event, names::HEAL).at(now);
                    self.recorder.push(e.nodes(vec![]).value(json!({"id": id})));
                }
            }
            Action::HealAll => {
                for (a, b) in std::mem::take(&mut self.partitions).into_values().flatten() {
                    self.set_cut(&a, &b, false);
                }
                let e = Event::new("nemesis", EventType::Event, names::HEAL).at(now);
                self.recorder
                    .push(e.nodes(vec![]).value(json!({"id": "all"})));
            }
            a @ (Action::ClockJump { .. } | Action::Skew { .. } | Action::Drift { .. })
                if !self
                    .servers
                    .contains_key(a.clock_change().expect("a clock action").0) =>
            {
                self.change_clock(now, &a)
            }
            other => self
                .skipped
                .push(format!("{:.0} ms: {other:?}", now as f64 / 1e6)),
        }
        Ok(())
    }

    /// Pause `node` for `duration_ns`, unless it is down or paused already.
    fn pause(&mut self, now: u64, node: String, duration_ns: u64) -> Result<(), String> {
        if !self.stop_node(&node)? {
            return Ok(());
        }
        let ms = duration_ns as f64 / 1e6;
        // Servers and client processes are stopped with a signal; the storage (in this
        // process) is frozen as in simulation.
        let mut value = json!({"duration_ms": ms, "at": "anywhere"});
        if !self.locals.contains_key(&node) {
            value["signal"] = json!("SIGSTOP");
        }
        self.record(now, names::PAUSE, &node, value);
        self.push(now + duration_ns, Action::Resume { node });
        Ok(())
    }

    /// Stop `node` now: SIGSTOP for a process, the pause switch in this one. False if it
    /// is down or stopped already.
    fn stop_node(&mut self, node: &str) -> Result<bool, String> {
        if let Some(p) = self.servers.get_mut(node) {
            if !p.is_running() {
                return Ok(false);
            }
            p.pause().map_err(|e| io_error(node, e))?;
        } else if let Some(c) = self.clients.get_mut(node) {
            match c.process.as_mut() {
                Some(p) if !p.is_stopped() => p.stop().map_err(|e| io_error(node, e))?,
                _ => return Ok(false),
            }
        } else {
            let s = &self.locals[node].state;
            if s.is_crashed() || s.pause.is_paused() {
                return Ok(false);
            }
            s.pause.pause();
        }
        Ok(true)
    }

    /// Arm `fault` at `point` of `node`: in this process, or ordered to its own.
    fn arm(&mut self, node: &str, point: FaultPoint, fault: ArmedFault) {
        if let Some(l) = self.locals.get(node) {
            l.state.arm(point, fault);
        } else if let Some(p) = self.process_mut(node) {
            p.order(ToNode::Arm { point, fault });
        }
    }

    /// Let a paused `node` go on (SIGCONT for a process).
    fn resume(&mut self, now: u64, node: String) -> Result<(), String> {
        if let Some(p) = self.servers.get_mut(&node) {
            if p.is_running() {
                p.resume().map_err(|e| io_error(&node, e))?;
                self.record(now, names::RESUME, &node, json!({"signal": "SIGCONT"}));
            }
        } else if let Some(c) = self.clients.get_mut(&node) {
            let Some(p) = c.process.as_mut().filter(|p| p.is_stopped()) else {
                return Ok(());
            };
            if p.resume().map_err(|e| io_error(&node, e))? {
                // The kernel showed the process stopped before this SIGCONT.
                self.record(now, names::RESUME, &node, json!({"signal": "SIGCONT"}));
            } else {
                // It has not reached its own SIGSTOP yet: try again shortly.
                self.push(now + 1_000_000, Action::Resume { node });
            }
        } else if self.locals[&node].state.pause.is_paused() {
            self.locals[&node].state.pause.resume();
            self.record(now, names::RESUME, &node, json!(null));
        }
        Ok(())
    }

    /// Crash `node`, unless it is down: its restart, if any, is due after `down_ns`.
    fn crash(&mut self, now: u64, node: String, down_ns: Option<u64>) -> Result<(), String> {
        if !self.kill_node(now, &node)? {
            return Ok(());
        }
        let down = down_ns.map(|d| d as f64 / 1e6);
        self.record(now, names::CRASH, &node, json!({ "down_ms": down }));
        if let Some(d) = down_ns {
            self.push(now + d, Action::Restart { node });
        }
        Ok(())
    }

    /// Kill `node` now: SIGKILL for a process, its task aborted in this one. False if
    /// it is down already.
    fn kill_node(&mut self, now: u64, node: &str) -> Result<bool, String> {
        if let Some(p) = self.servers.get_mut(node) {
            if !p.is_running() {
                return Ok(false);
            }
            p.crash().map_err(|e| io_error(node, e))?;
        } else if let Some(c) = self.clients.get_mut(node) {
            // Its reader closes its outstanding operation once the pipe ends.
            let Some(mut p) = c.process.take() else {
                return Ok(false);
            };
            p.kill(now);
        } else {
            let l = self.locals.get_mut(node).expect("a known node");
            if l.state.is_crashed() {
                return Ok(false);
            }
            if let Some(t) = l.task.take() {
                t.abort();
            }
            l.state.set_crashed(true);
            close_crashed_op(&self.recorder, node, now);
        }
        Ok(true)
    }

    /// Start `node` again (a server on its ports and data, a client as its next
    /// incarnation). False if it is up.
    fn start_again(&mut self, node: &str) -> Result<bool, String> {
        if let Some(p) = self.servers.get_mut(node) {
            if p.is_running() {
                return Ok(false);
            }
            p.restart().map_err(|e| io_error(node, e))?;
        } else if let Some(c) = self.clients.get(node) {
            if c.process.is_some() {
                return Ok(false);
            }
            let incarnation = c.incarnation + 1;
            let p = self.spawn_client(node, incarnation)?;
            let c = self.clients.get_mut(node).expect("known");
            (c.process, c.incarnation) = (Some(p), incarnation);
        } else {
            let l = &self.locals[node];
            if !l.state.is_crashed() {
                return Ok(false);
            }
            l.state.set_crashed(false);
            let task = self.start(l);
            self.locals.get_mut(node).expect("known").task = Some(task);
        }
        Ok(true)
    }

    /// Cut the links of partition `id` in the proxies.
    fn partition(
        &mut self,
        now: u64,
        id: u64,
        side: Vec<String>,
        peers: Vec<String>,
        oneway: bool,
    ) {
        let (others, links) = partition_links(&self.all, &side, peers, oneway);
        for (a, b) in &links {
            self.set_cut(a, b, true);
        }
        self.partitions.insert(id, links);
        let e = Event::new("nemesis", EventType::Event, names::PARTITION)
            .at(now)
            .nodes(side)
            .value(json!({"id": id, "oneway": oneway, "from": others}));
        self.recorder.push(e);
    }

    /// A clock fault of a client or the storage (not a server's: see `apply`).
    fn change_clock(&mut self, now: u64, action: &Action) {
        // The clients' and the storage's clocks are the simulation's (node code reads
        // them); the servers' are the machine's, which stays true.
        let (node, change) = action.clock_change().expect("a clock action");
        let (f, value) = if let Some(c) = self.clients.get_mut(node) {
            if let Some(p) = &c.process {
                p.order(ToNode::Clock { at_ns: now, change });
            }
            change.apply(&mut c.clock, now)
        } else {
            change.apply(&mut self.locals[node].state.clock.borrow_mut(), now)
        };
        self.record(now, f, node, value);
    }
}

/// An I/O error signalling `node`'s process, as a message.
fn io_error(node: &str, e: std::io::Error) -> String {
    format!("{node}: {e}")
}
