//! Builds a turmoil `Sim` from a [`World`] (hosts, network, fault plan), runs one seed
//! and returns its history.
//!
//! The harness does not know what it runs: a host is a name and a function from its
//! [`NodeCtx`] to a future. The deploy layer above decides which hosts exist.
//!
//! The driver loop owns the `Sim`: before every tick it applies the fault actions that
//! are due (partitions through turmoil, pauses through each node's [`PauseSwitch`](super::pause::PauseSwitch),
//! clock faults on each node's [`Clock`](super::clock::Clock), crashes through turmoil's
//! `crash`/`bounce`), and after every tick it serves what node code asked for (a pause
//! that struck at a fault point needs a resume; a crash point needs a crash).
//!
//! Everything is single-threaded and ordered: hosts in registration order, actions in
//! schedule order, maps are `BTreeMap`s. A run is a pure function of (world, seed).

use super::fault::{self, Action, Schedule};
use super::kernel::{Kernel, Traffic};
use super::nemesis::{self, RandomFaults};
use super::node::{ArmedFault, NodeCtx, NodeRequest, NodeState};
use super::LocalBoxFuture;
use crate::history::names;
use crate::history::{Event, EventType, History, Recorder};
use serde_json::json;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

/// turmoil's tick: messages move and hosts run in steps of this much true time.
pub const TICK: Duration = Duration::from_millis(1);

/// What a host runs: called at the first start and at every restart, with a fresh context.
pub type HostMain = Rc<dyn Fn(NodeCtx) -> LocalBoxFuture<'static, ()>>;

/// One simulated machine.
pub struct Host {
    /// Its name (also its network address).
    pub name: String,
    /// Its code.
    pub main: HostMain,
}

impl Host {
    /// A host called `name` running `main`.
    pub fn new(
        name: impl Into<String>,
        main: impl Fn(NodeCtx) -> LocalBoxFuture<'static, ()> + 'static,
    ) -> Host {
        Host {
            name: name.into(),
            main: Rc::new(main),
        }
    }
}

/// The network between hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct Network {
    /// One-way message latency range, ms.
    pub latency_ms: [u64; 2],
    /// Probability per tick that a link fails (links repair with probability 0.5).
    pub loss: f64,
}

/// Which faults a run applies.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultPlan {
    /// Explicit entries plus random faults drawn from the seed.
    Drawn {
        /// Exact entries (applied before random ones at equal times).
        explicit: Schedule,
        /// The random nemesis.
        random: Box<RandomFaults>,
    },
    /// Exactly this schedule, nothing drawn (a replay of an applied schedule, a shrink).
    Fixed(Schedule),
}

impl FaultPlan {
    /// The schedule for `seed` over hosts `all`.
    pub fn schedule(&self, all: &[String], seed: u64) -> Schedule {
        match self {
            FaultPlan::Fixed(s) => s.clone(),
            FaultPlan::Drawn { explicit, random } => {
                let mut s = explicit.clone();
                s.extend(nemesis::draw_schedule(random, all, seed));
                s
            }
        }
    }
}

/// Told the simulated milliseconds done, every [`PROGRESS_EVERY_MS`] of simulated time;
/// returns whether to go on (false: stop the run, e.g. on Ctrl-C). It observes only:
/// nothing it does reaches the simulation.
pub type Progress = Box<dyn Fn(u64) -> bool>;

/// How often (simulated ms) a run reports its progress.
pub const PROGRESS_EVERY_MS: u64 = 100;

/// Everything one run needs.
pub struct World {
    /// Simulated duration, ms.
    pub duration_ms: u64,
    /// The network.
    pub network: Network,
    /// The hosts, in registration order.
    pub hosts: Vec<Host>,
    /// The faults.
    pub faults: FaultPlan,
    /// Who watches the run's progress, if anyone.
    pub progress: Option<Progress>,
}

/// The outcome of one seed.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The seed.
    pub seed: u64,
    /// Everything recorded, in true-time order.
    pub history: History,
    /// True time at which the run stopped, ns.
    pub end_ns: u64,
    /// A harness failure (a host returned an error): the history is incomplete.
    pub error: Option<String>,
    /// The fault schedule the run applied (explicit entries, then random draws): run it
    /// as a [`FaultPlan::Fixed`] plan and the history is the same.
    pub schedule: Schedule,
    /// What the hosts sent each other (a simulated run only: a live run's bytes cross
    /// real sockets, uncounted).
    pub traffic: Option<Traffic>,
}

/// Run `world` with `seed`.
pub fn run(world: World, seed: u64) -> RunResult {
    let recorder = Recorder::new();
    let net = &world.network;
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_millis(world.duration_ms + 1000))
        .tick_duration(TICK)
        .epoch(UNIX_EPOCH + Duration::from_nanos(super::clock::EPOCH_NS as u64))
        .rng_seed(seed)
        // The default (64) panics under bursts or long pauses; real kernels buffer MBs.
        .tcp_capacity(65536)
        .min_message_latency(Duration::from_millis(net.latency_ms[0]))
        .max_message_latency(Duration::from_millis(net.latency_ms[1]))
        .fail_rate(net.loss)
        .repair_rate(if net.loss > 0.0 { 0.5 } else { 0.0 })
        .build();

    let all: Vec<String> = world.hosts.iter().map(|h| h.name.clone()).collect();
    let kernel = Kernel::new();
    let mut nodes: BTreeMap<String, Rc<NodeState>> = BTreeMap::new();
    for host in world.hosts {
        let state = Rc::new(NodeState::new(&host.name, seed));
        nodes.insert(host.name.clone(), state.clone());
        let (rec, main, kernel) = (recorder.clone(), host.main, kernel.clone());
        sim.host(host.name.as_str(), move || {
            let ctx = NodeCtx::new(state.clone(), rec.clone()).with_kernel(kernel.clone());
            let run = main(ctx);
            state.pause.wrap(async move {
                run.await;
                Ok(())
            })
        });
    }

    let schedule = world.faults.schedule(&all, seed);
    let mut driver = Driver {
        kernel,
        nodes,
        recorder: recorder.clone(),
        cuts: BTreeMap::new(),
        partitions: BTreeMap::new(),
        pending: BTreeMap::new(),
        seq: 0,
        all,
    };
    for (t, a) in fault::actions(&schedule) {
        driver.push(t, a);
    }

    let end = Duration::from_millis(world.duration_ms);
    let mut error = None;
    let mut next_report = PROGRESS_EVERY_MS;
    while sim.elapsed() < end {
        let now = sim.elapsed().as_nanos() as u64;
        if let Some(progress) = &world.progress {
            let ms = now / 1_000_000;
            if ms >= next_report {
                next_report = ms + PROGRESS_EVERY_MS;
                if !progress(ms) {
                    error = Some(format!("interrupted at {ms} simulated ms"));
                    break;
                }
            }
        }
        while let Some(entry) = driver.pending.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let action = entry.remove();
            driver.apply(&mut sim, now, action);
        }
        if let Err(e) = sim.step() {
            error = Some(e.to_string());
            break;
        }
        let now = sim.elapsed().as_nanos() as u64;
        let requests: Vec<(String, NodeRequest)> = driver
            .nodes
            .iter()
            .flat_map(|(n, s)| s.take_requests().into_iter().map(|r| (n.clone(), r)))
            .collect();
        for (node, req) in requests {
            match req {
                NodeRequest::ResumeAfter(d) => driver.push(now + d, Action::Resume { node }),
                NodeRequest::Crash(down_ns) => {
                    driver.apply(&mut sim, now, Action::Crash { node, down_ns })
                }
            }
        }
    }
    RunResult {
        seed,
        history: recorder.take(),
        end_ns: sim.elapsed().as_nanos() as u64,
        error,
        schedule,
        traffic: Some(driver.kernel.traffic()),
    }
}

struct Driver {
    /// Mirrors every cut, repair, crash and restart, for the transport layer.
    kernel: Rc<Kernel>,
    nodes: BTreeMap<String, Rc<NodeState>>,
    recorder: Recorder,
    /// Directed links currently cut, with how many partitions cut them: overlapping
    /// partitions heal independently.
    cuts: BTreeMap<(String, String), u32>,
    /// Live partitions by id: the directed links each one cut.
    partitions: BTreeMap<u64, Vec<(String, String)>>,
    /// Future actions by (time, insertion sequence).
    pending: BTreeMap<(u64, u64), Action>,
    seq: u64,
    all: Vec<String>,
}

impl Driver {
    fn push(&mut self, t: u64, a: Action) {
        self.pending.insert((t, self.seq), a);
        self.seq += 1;
    }

    fn record(&self, now: u64, f: &str, nodes: Vec<String>, value: serde_json::Value) {
        let mut e = Event::new("nemesis", EventType::Event, f)
            .at(now)
            .nodes(nodes.clone())
            .value(value);
        // A single affected node's clocks, for replays that show local time.
        if let [one] = &nodes[..] {
            if let Some(s) = self.nodes.get(one) {
                let c = s.clock.borrow();
                e.local_ns = Some(c.mono_ns(now));
                e.wall_ms = Some(c.wall_ms(now));
            }
        }
        self.recorder.push(e);
    }

    /// Apply one fault action, due now: each kind is one step below.
    fn apply(&mut self, sim: &mut turmoil::Sim<'_>, now: u64, action: Action) {
        tracing::info!("nemesis at {:.3} ms: {action:?}", now as f64 / 1e6);
        match action {
            Action::Pause { node, duration_ns } => self.pause(now, node, duration_ns),
            Action::ArmPause {
                node,
                duration_ns,
                point,
            } => {
                self.nodes[&node].arm(point, ArmedFault::Pause { duration_ns });
            }
            Action::Resume { node } => self.resume(now, node),
            Action::Partition {
                id,
                side,
                peers,
                oneway,
            } => self.partition(sim, now, id, side, peers, oneway),
            Action::Heal { id } => {
                if let Some(links) = self.partitions.remove(&id) {
                    self.uncut(sim, links);
                    self.record(now, names::HEAL, vec![], json!({"id": id}));
                }
            }
            Action::HealAll => {
                let links: Vec<_> = std::mem::take(&mut self.partitions)
                    .into_values()
                    .flatten()
                    .collect();
                self.uncut(sim, links);
                self.record(now, names::HEAL, vec![], json!({"id": "all"}));
            }
            Action::ClockJump { .. } | Action::Skew { .. } | Action::Drift { .. } => {
                let (node, change) = action.clock_change().expect("a clock action");
                let clock = &self.nodes[node].clock;
                let (f, value) = change.apply(&mut clock.borrow_mut(), now);
                self.record(now, f, vec![node.to_string()], value);
            }
            Action::Crash { node, down_ns } => self.crash(sim, now, node, down_ns),
            Action::ArmCrash {
                node,
                down_ns,
                point,
            } => {
                self.nodes[&node].arm(point, ArmedFault::Crash { down_ns });
            }
            Action::DiskStall { node, duration_ns } => self.stall_disk(now, node, duration_ns),
            Action::DiskReady { node } => {
                // Overlapping stalls: only the last one's end is the disk's recovery.
                if self.nodes[&node].disk_stalled_until() <= now {
                    self.record(now, names::DISK_READY, vec![node], json!(null));
                }
            }
            Action::Restart { node } => self.restart(sim, now, node),
        }
    }

    /// Freeze `node` for `duration_ns` (unless it is down or already frozen).
    fn pause(&mut self, now: u64, node: String, duration_ns: u64) {
        let s = &self.nodes[&node];
        if s.is_crashed() || s.pause.is_paused() {
            return;
        }
        s.pause.pause();
        self.record(
            now,
            names::PAUSE,
            vec![node.clone()],
            json!({"duration_ms": duration_ns as f64 / 1e6, "at": "anywhere"}),
        );
        self.push(now + duration_ns, Action::Resume { node });
    }

    /// Unfreeze `node`, if frozen; a busy freeze's end is not an event.
    fn resume(&mut self, now: u64, node: String) {
        let s = &self.nodes[&node];
        if s.pause.is_paused() {
            s.pause.resume();
            if !s.take_quiet_resume() {
                self.record(now, names::RESUME, vec![node], json!(null));
            }
        }
    }

    /// Cut the links of partition `id`, counting each cut so that overlapping partitions
    /// heal independently.
    fn partition(
        &mut self,
        sim: &mut turmoil::Sim<'_>,
        now: u64,
        id: u64,
        side: Vec<String>,
        peers: Vec<String>,
        oneway: bool,
    ) {
        let (others, links) = partition_links(&self.all, &side, peers, oneway);
        for (a, b) in &links {
            let n = self.cuts.entry((a.clone(), b.clone())).or_insert(0);
            if *n == 0 {
                sim.partition_oneway(a.as_str(), b.as_str());
                self.kernel.set_cut(a, b, true);
            }
            *n += 1;
        }
        self.partitions.insert(id, links);
        self.record(
            now,
            names::PARTITION,
            side,
            json!({"id": id, "oneway": oneway, "from": others}),
        );
    }

    /// Crash `node` (unless down): its restart, if any, is due after `down_ns`.
    fn crash(&mut self, sim: &mut turmoil::Sim<'_>, now: u64, node: String, down_ns: Option<u64>) {
        let s = self.nodes[&node].clone();
        if s.is_crashed() {
            return;
        }
        sim.crash(node.as_str());
        self.kernel.set_down(&node, true);
        s.set_crashed(true);
        // A busy freeze ends with the process.
        s.take_quiet_resume();
        // The restarted process then invokes afresh.
        close_crashed_op(&self.recorder, &node, now);
        self.record(
            now,
            names::CRASH,
            vec![node.clone()],
            json!({"down_ms": down_ns.map(|d| d as f64 / 1e6)}),
        );
        if let Some(d) = down_ns {
            self.push(now + d, Action::Restart { node });
        }
    }

    /// Stall `node`'s disk for `duration_ns`.
    fn stall_disk(&mut self, now: u64, node: String, duration_ns: u64) {
        self.nodes[&node].stall_disk(now + duration_ns);
        self.record(
            now,
            names::DISK_STALL,
            vec![node.clone()],
            json!({"duration_ms": duration_ns as f64 / 1e6}),
        );
        self.push(now + duration_ns, Action::DiskReady { node });
    }

    /// Start `node` again, if it is down.
    fn restart(&mut self, sim: &mut turmoil::Sim<'_>, now: u64, node: String) {
        let s = self.nodes[&node].clone();
        if !s.is_crashed() {
            return;
        }
        s.set_crashed(false);
        sim.bounce(node.as_str());
        self.kernel.set_down(&node, false);
        self.record(now, names::RESTART, vec![node], json!(null));
    }

    fn uncut(&mut self, sim: &mut turmoil::Sim<'_>, links: Vec<(String, String)>) {
        for (a, b) in links {
            let key = (a, b);
            if let Some(n) = self.cuts.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.cuts.remove(&key);
                    sim.repair_oneway(key.0.as_str(), key.1.as_str());
                    self.kernel.set_cut(&key.0, &key.1, false);
                }
            }
        }
    }
}

/// The hosts a partition of `side` cuts it from (`peers`, or every other host of `all`),
/// and the directed links it cuts: side → others, and back unless `oneway`. Simulated
/// and live runs cut the same links.
pub(crate) fn partition_links(
    all: &[String],
    side: &[String],
    peers: Vec<String>,
    oneway: bool,
) -> (Vec<String>, Vec<(String, String)>) {
    let others: Vec<String> = if peers.is_empty() {
        all.iter().filter(|b| !side.contains(b)).cloned().collect()
    } else {
        peers
    };
    let mut links = Vec::new();
    for a in side {
        for b in &others {
            links.push((a.clone(), b.clone()));
            if !oneway {
                links.push((b.clone(), a.clone()));
            }
        }
    }
    (others, links)
}

/// Jepsen's convention, in simulated and live runs alike: the outstanding operation of a
/// crashed process (its last, if an invoke) is indeterminate, closed as `info` at `now`.
pub(crate) fn close_crashed_op(recorder: &Recorder, node: &str, now: u64) {
    if let Some(last) = recorder.last_op_of(node) {
        if last.kind == EventType::Invoke {
            let mut info = last.clone();
            info.kind = EventType::Info;
            info.time_ns = now;
            info.reason = Some("crashed".into());
            recorder.push(info);
        }
    }
}
