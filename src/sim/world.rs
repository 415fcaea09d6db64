//! Builds a turmoil `Sim` from a [`World`] (hosts, network, fault plan), runs one seed
//! and returns its history.
//!
//! The harness does not know what it runs: a host is a name and a function from its
//! [`NodeCtx`] to a future. The deploy layer above decides which hosts exist.
//!
//! The run loop hands the `Sim` to the fault applier ([`super::applier`]) as its
//! target: before every tick the applier applies the fault actions that are due
//! (partitions through turmoil, pauses through each node's
//! [`PauseSwitch`](super::pause::PauseSwitch), clock faults on each node's
//! [`Clock`](super::clock::Clock), crashes through turmoil's `crash`/`bounce`), and after
//! every tick it serves what node code asked for (a pause that struck at a fault point
//! needs a resume; a crash point needs a crash).
//!
//! Everything is single-threaded and ordered: hosts in registration order, actions in
//! schedule order, maps are `BTreeMap`s. A run is a pure function of (world, seed).

use super::applier::{close_crashed_op, FaultTarget, Nemesis, Resumed, Via};
use super::clock::ClockChange;
use super::fault::{self, Action, FaultPoint, Schedule};
use super::kernel::{Kernel, Traffic};
use super::node::{ArmedFault, NodeCtx, NodeRequest, NodeState};
use super::random_faults::{self, RandomFaults};
use super::LocalBoxFuture;
use crate::history::{History, Recorder};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

/// turmoil's tick: messages move and hosts run in steps of this much true time.
pub(crate) const TICK: Duration = Duration::from_millis(1);

/// What a host runs: called at the first start and at every restart, with a fresh context.
pub(crate) type HostMain = Rc<dyn Fn(NodeCtx) -> LocalBoxFuture<'static, ()>>;

/// One simulated machine.
pub(crate) struct Host {
    /// Its name (also its network address).
    pub name: String,
    /// Its code.
    pub main: HostMain,
}

impl Host {
    /// A host called `name` running `main`.
    pub(crate) fn new(
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
pub(crate) struct Network {
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
        /// The random faults drawn from the seed.
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
                s.extend(random_faults::draw_schedule(random, all, seed));
                s
            }
        }
    }
}

/// Told the simulated milliseconds done, every [`PROGRESS_EVERY_MS`] of simulated time;
/// returns whether to go on (false: stop the run, e.g. on Ctrl-C). It observes only:
/// nothing it does reaches the simulation.
pub(crate) type Progress = Box<dyn Fn(u64) -> bool + Send>;

/// How often (simulated ms) a run reports its progress.
pub(crate) const PROGRESS_EVERY_MS: u64 = 100;

/// Everything one run needs.
pub(crate) struct World {
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
    /// as a `FaultPlan::Fixed` plan and the history is the same.
    pub schedule: Schedule,
    /// What the hosts sent each other (a simulated run only: a live run's bytes cross
    /// real sockets, uncounted).
    pub traffic: Option<Traffic>,
    /// Nodes whose code (a library's, typically) started tasks with `tokio::spawn`,
    /// outside the node context, and the most seen alive at once. A pause does not
    /// freeze such a task; spawn through [`NodeCtx::spawn`] (or an executor that does).
    /// Empty when none escaped, and in a live run.
    pub escaped_tasks: BTreeMap<String, usize>,
}

/// Run `world` with `seed`.
pub(crate) fn run(world: World, seed: u64) -> RunResult {
    super::panics::quiet_hook_for_node_panics();
    super::warn_once_if_unseeded();
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
            let run = state.escaped.watch(ctx.crash_on_panic(main(ctx.clone())));
            state.pause.wrap(async move {
                run.await;
                Ok(())
            })
        });
    }

    let schedule = world.faults.schedule(&all, seed);
    let target = SimNodes {
        sim,
        kernel,
        nodes,
        recorder: recorder.clone(),
    };
    let mut nemesis = Nemesis::new(target, recorder.clone(), all);
    for (t, a) in fault::actions(&schedule) {
        nemesis.schedule(t, a);
    }

    let end = Duration::from_millis(world.duration_ms);
    let mut error = None;
    let mut next_report = PROGRESS_EVERY_MS;
    while nemesis.target().sim.elapsed() < end {
        let now = nemesis.target().sim.elapsed().as_nanos() as u64;
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
        let Ok(()) = nemesis.apply_due(now);
        if let Err(e) = nemesis.target_mut().sim.step() {
            error = Some(e.to_string());
            break;
        }
        let now = nemesis.target().sim.elapsed().as_nanos() as u64;
        let requests: Vec<(String, NodeRequest)> = nemesis
            .target()
            .nodes
            .iter()
            .flat_map(|(n, s)| s.take_requests().into_iter().map(|r| (n.clone(), r)))
            .collect();
        for (node, req) in requests {
            let Ok(()) = nemesis.serve(now, node, req);
        }
    }
    let target = nemesis.target();
    let escaped_tasks = target
        .nodes
        .iter()
        .filter(|(_, s)| s.escaped.most() > 0)
        .map(|(n, s)| (n.clone(), s.escaped.most()))
        .collect();
    RunResult {
        seed,
        history: recorder.take(),
        end_ns: target.sim.elapsed().as_nanos() as u64,
        error,
        schedule,
        traffic: Some(target.kernel.traffic()),
        escaped_tasks,
    }
}

/// What a fault does in a simulated run: turmoil cuts links and crashes hosts (the
/// [`Kernel`] mirrors both for the transport layer), each node's [`NodeState`] holds its
/// pause switch, clock, disk and armed fault points.
struct SimNodes<'a> {
    sim: turmoil::Sim<'a>,
    /// Mirrors every cut, repair, crash and restart, for the transport layer.
    kernel: Rc<Kernel>,
    nodes: BTreeMap<String, Rc<NodeState>>,
    recorder: Recorder,
}

impl FaultTarget for SimNodes<'_> {
    type Error = std::convert::Infallible;

    /// A simulation applies every fault.
    fn supports(&self, action: &Action) -> bool {
        match action {
            Action::Pause { .. }
            | Action::ArmPause { .. }
            | Action::Resume { .. }
            | Action::Partition { .. }
            | Action::Heal { .. }
            | Action::HealAll
            | Action::ClockJump { .. }
            | Action::Skew { .. }
            | Action::Drift { .. }
            | Action::Crash { .. }
            | Action::ArmCrash { .. }
            | Action::Restart { .. }
            | Action::DiskStall { .. }
            | Action::DiskReady { .. } => true,
        }
    }

    fn stop(&mut self, node: &str) -> Result<Option<Via>, Self::Error> {
        let s = &self.nodes[node];
        if s.is_crashed() || s.pause.is_paused() {
            return Ok(None);
        }
        s.pause.pause();
        Ok(Some(Via::Switch))
    }

    /// A busy freeze's end is not an event.
    fn resume(&mut self, node: &str) -> Result<Resumed, Self::Error> {
        let s = &self.nodes[node];
        if !s.pause.is_paused() {
            return Ok(Resumed::Nothing);
        }
        s.pause.resume();
        Ok(if s.take_quiet_resume() {
            Resumed::Nothing
        } else {
            Resumed::By(Via::Switch)
        })
    }

    fn kill(&mut self, now: u64, node: &str) -> Result<bool, Self::Error> {
        let s = &self.nodes[node];
        if s.is_crashed() {
            return Ok(false);
        }
        self.sim.crash(node);
        self.kernel.set_down(node, true);
        s.set_crashed(true);
        // A busy freeze ends with the process.
        s.take_quiet_resume();
        // The restarted process then invokes afresh.
        close_crashed_op(&self.recorder, node, now);
        Ok(true)
    }

    fn start(&mut self, node: &str) -> Result<bool, Self::Error> {
        let s = &self.nodes[node];
        if !s.is_crashed() {
            return Ok(false);
        }
        s.set_crashed(false);
        self.sim.bounce(node);
        self.kernel.set_down(node, false);
        Ok(true)
    }

    fn cut(&mut self, from: &str, to: &str) {
        self.sim.partition_oneway(from, to);
        self.kernel.set_cut(from, to, true);
    }

    fn repair(&mut self, from: &str, to: &str) {
        self.sim.repair_oneway(from, to);
        self.kernel.set_cut(from, to, false);
    }

    fn change_clock(
        &mut self,
        now: u64,
        node: &str,
        change: ClockChange,
    ) -> (&'static str, serde_json::Value) {
        change.apply(&mut self.nodes[node].clock.borrow_mut(), now)
    }

    fn stall_disk(&mut self, node: &str, until_ns: u64) {
        self.nodes[node].stall_disk(until_ns);
    }

    fn disk_stalled_until(&self, node: &str) -> u64 {
        self.nodes[node].disk_stalled_until()
    }

    fn arm(&mut self, node: &str, point: FaultPoint, fault: ArmedFault) {
        self.nodes[node].arm(point, fault);
    }

    /// For replays that show local time.
    fn local_time(&self, node: &str, now: u64) -> Option<(i64, i64)> {
        let c = self.nodes.get(node)?.clock.borrow();
        Some((c.mono_ns(now), c.wall_ms(now)))
    }
}

#[cfg(test)]
#[path = "world_tests.rs"]
mod tests;
