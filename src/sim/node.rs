//! [`NodeCtx`]: everything node code may use — its name, its clock, local-time sleeps,
//! pausable task spawning, its seeded RNG, its disk and the history recorder.
//!
//! Node code never touches `std::time`, OS randomness or `tokio::spawn` directly: every
//! source of time, randomness and concurrency goes through the context, which is what
//! makes a run a pure function of (scenario, seed) and lets the nemesis pause a node.

use super::clock::Clock;
use super::disk::Disk;
use super::escaped_tasks::EscapedTasks;
use super::fault::{FaultPoint, WAITING_STRIKES_AFTER};
use super::kernel::Kernel;
use super::live_net::LiveNet;
use super::panics::{CrashOnPanic, SUPERVISOR_RESTART_NS};
use super::pause::{PauseSwitch, YieldNow};
use crate::history::{names, Event, EventType, Recorder};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

/// A fault waiting for the node to reach a [`FaultPoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ArmedFault {
    /// Pause the node for this many true ns.
    Pause {
        /// Pause length.
        duration_ns: u64,
    },
    /// Crash the node, restarting after this many ns (or never).
    Crash {
        /// Down time.
        down_ns: Option<u64>,
    },
}

/// What node code asks of the driver (which owns turmoil's `Sim`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRequest {
    /// The node paused itself at a fault point; resume it after this many ns.
    ResumeAfter(u64),
    /// The node reached an armed crash point; crash it now.
    Crash(Option<u64>),
}

/// Per-node state that outlives crashes and restarts (owned by the world).
pub struct NodeState {
    name: String,
    /// The node's clock.
    pub clock: RefCell<Clock>,
    /// The node's pause switch.
    pub pause: PauseSwitch,
    /// The node's durable storage.
    pub disk: RefCell<Disk>,
    rng: RefCell<ChaCha8Rng>,
    armed: RefCell<Vec<(FaultPoint, ArmedFault)>>,
    /// Wakes a waiting acquire when a fault is armed at [`FaultPoint::Waiting`].
    waiting_armed: tokio::sync::Notify,
    requests: RefCell<Vec<NodeRequest>>,
    crashed: Cell<bool>,
    starts: Cell<u32>,
    /// True time (ns) until which the disk is stalled: an fsync started before then
    /// completes then. A property of the device, so a crash does not clear it.
    disk_stalled_until: Cell<u64>,
    /// The current freeze is the node's own work ([`NodeCtx::busy_for`]): its resume is
    /// not a fault healing, so it is not recorded.
    quiet_resume: Cell<bool>,
    /// The most tasks seen alive at once outside the node context (`tokio::spawn`).
    pub(crate) escaped: EscapedTasks,
}

impl NodeState {
    /// Fresh state for node `name` in a run with `seed`.
    pub fn new(name: &str, seed: u64) -> NodeState {
        NodeState {
            name: name.to_string(),
            clock: RefCell::new(Clock::default()),
            pause: PauseSwitch::new(),
            disk: RefCell::new(Disk::new()),
            rng: RefCell::new(node_rng(seed, name)),
            armed: RefCell::new(Vec::new()),
            waiting_armed: tokio::sync::Notify::new(),
            requests: RefCell::new(Vec::new()),
            crashed: Cell::new(false),
            starts: Cell::new(0),
            disk_stalled_until: Cell::new(0),
            quiet_resume: Cell::new(false),
            escaped: EscapedTasks::default(),
        }
    }

    /// Whether the resume due now ends the node's own busy freeze (and clears it).
    pub fn take_quiet_resume(&self) -> bool {
        self.quiet_resume.replace(false)
    }

    /// State for incarnation `incarnation` of node `name` started in a fresh process (live
    /// mode restarts a crashed client as a new process): its next context is that
    /// incarnation, and its RNG is drawn for it, so a restarted client does not repeat
    /// the owner values of the one before.
    pub fn restarted(name: &str, seed: u64, incarnation: u32) -> NodeState {
        let state = NodeState::new(name, seed);
        if incarnation > 0 {
            let salt = u64::from(incarnation).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            *state.rng.borrow_mut() = node_rng(seed ^ salt, name);
        }
        state.starts.set(incarnation);
        state
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Arm `fault` to strike when the node next reaches `point`.
    pub fn arm(&self, point: FaultPoint, fault: ArmedFault) {
        self.armed.borrow_mut().push((point, fault));
        // Only this point is waited on; other arms wake nothing, so runs without it
        // poll exactly as before.
        if point == FaultPoint::Waiting {
            self.waiting_armed.notify_waiters();
        }
    }

    /// Whether a fault is armed at `point`.
    fn is_armed(&self, point: FaultPoint) -> bool {
        self.armed.borrow().iter().any(|(p, _)| *p == point)
    }

    /// Take the requests node code made since the last call.
    pub fn take_requests(&self) -> Vec<NodeRequest> {
        std::mem::take(&mut *self.requests.borrow_mut())
    }

    /// Mark crashed or restarted. A crash drops unsynced disk data and pending faults.
    pub fn set_crashed(&self, crashed: bool) {
        self.crashed.set(crashed);
        if crashed {
            self.disk.borrow_mut().crash();
            self.pause.reset();
            self.requests.borrow_mut().clear();
        }
    }

    /// Whether the node is down.
    pub fn is_crashed(&self) -> bool {
        self.crashed.get()
    }

    /// The true time (ns) until which the disk is stalled (0: never stalled).
    pub fn disk_stalled_until(&self) -> u64 {
        self.disk_stalled_until.get()
    }

    /// Stall the disk until true time `until_ns` (overlapping stalls last until the later
    /// end).
    pub fn stall_disk(&self, until_ns: u64) {
        self.disk_stalled_until
            .set(self.disk_stalled_until.get().max(until_ns));
    }
}

/// A ChaCha RNG derived from the run seed and the node name (FNV-1a of the name), so a
/// node's random choices do not shift when another node is added.
pub(crate) fn node_rng(seed: u64, name: &str) -> ChaCha8Rng {
    let h = crate::history::fnv1a(name.as_bytes());
    ChaCha8Rng::seed_from_u64(seed ^ h.rotate_left(17))
}

/// Where a node's code runs: what its context takes true time from and what the
/// transport connects through.
#[derive(Clone, Default)]
pub enum NodeEnv {
    /// A turmoil simulation without the world's kernel (a test driving a client or a
    /// server directly): connects are not refused locally, idle connections never close.
    #[default]
    Bare,
    /// A simulated world: turmoil's time, and the run's shared [`Kernel`] (refused
    /// connects, idle closes, traffic counts).
    Simulated(Rc<Kernel>),
    /// A live run: real time since the run began and loopback ports from its address
    /// book.
    Live(Rc<LiveNet>),
}

/// The handle node code gets. Cheap to clone.
#[derive(Clone)]
pub struct NodeCtx {
    state: Rc<NodeState>,
    recorder: Recorder,
    incarnation: u32,
    env: NodeEnv,
}

/// A deadline passed before the operation completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

impl NodeCtx {
    /// A context for a (re)start of the node with `state`, recording into `recorder`.
    /// Each call is a new incarnation: 0 for the first start, 1 after the first restart…
    pub fn new(state: Rc<NodeState>, recorder: Recorder) -> NodeCtx {
        let incarnation = state.starts.get();
        state.starts.set(incarnation + 1);
        NodeCtx {
            state,
            recorder,
            incarnation,
            env: NodeEnv::Bare,
        }
    }

    /// This context in live mode: real time since the live run began, and connections
    /// over real loopback TCP to the ports `net` lists.
    pub fn with_live(mut self, net: Rc<LiveNet>) -> NodeCtx {
        self.env = NodeEnv::Live(net);
        self
    }

    /// The live run's address book, in live mode.
    pub fn live(&self) -> Option<&Rc<LiveNet>> {
        match &self.env {
            NodeEnv::Live(net) => Some(net),
            NodeEnv::Bare | NodeEnv::Simulated(_) => None,
        }
    }

    /// This context with the run's shared [`Kernel`] (the world sets it; without one, the
    /// transport neither refuses connects locally nor closes idle connections).
    pub fn with_kernel(mut self, kernel: Rc<Kernel>) -> NodeCtx {
        self.env = NodeEnv::Simulated(kernel);
        self
    }

    /// The run's view of the network, if any.
    pub fn kernel(&self) -> Option<&Rc<Kernel>> {
        match &self.env {
            NodeEnv::Simulated(kernel) => Some(kernel),
            NodeEnv::Bare | NodeEnv::Live(_) => None,
        }
    }

    /// Where this node runs.
    pub fn env(&self) -> &NodeEnv {
        &self.env
    }

    /// How many times this node has been restarted before this run of its code.
    pub fn incarnation(&self) -> u32 {
        self.incarnation
    }

    /// The node's name, e.g. `client-0`.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// True simulated time since the start of the run, ns. For recording only: node logic
    /// must use [`NodeCtx::mono_ns`] / [`NodeCtx::wall_ms`], as real code would.
    pub fn true_ns(&self) -> u64 {
        match turmoil::sim_elapsed() {
            Some(t) => t.as_nanos() as u64,
            // Live mode: real time is the run's true time.
            None => self
                .live()
                .expect("NodeCtx used outside a simulation or a live run")
                .elapsed_ns(),
        }
    }

    /// The node's monotonic clock, ns.
    pub fn mono_ns(&self) -> i64 {
        self.state.clock.borrow().mono_ns(self.true_ns())
    }

    /// The node's wall clock, ms since the Unix epoch.
    pub fn wall_ms(&self) -> i64 {
        self.state.clock.borrow().wall_ms(self.true_ns())
    }

    /// Sleep `d` of this node's *monotonic* time. Re-checks after waking, so a drift
    /// change mid-sleep is honoured.
    pub async fn sleep(&self, d: Duration) {
        let target = self.mono_ns() + d.as_nanos() as i64;
        loop {
            let now = self.mono_ns();
            if now >= target {
                return;
            }
            let local = (target - now) as u64;
            let true_ns = self.state.clock.borrow().true_duration_ns(local);
            tokio::time::sleep(Duration::from_nanos(true_ns.max(1))).await;
        }
    }

    /// Run `fut` with a deadline of `d` local monotonic time.
    pub async fn timeout<F: Future>(&self, d: Duration, fut: F) -> Result<F::Output, Elapsed> {
        tokio::select! {
            // Biased: when both are ready in one poll, the operation wins, deterministically.
            biased;
            out = fut => Ok(out),
            _ = self.sleep(d) => Err(Elapsed),
        }
    }

    /// Spawn a task on this node. It is paused with the node and dies with it on a crash.
    pub fn spawn<F>(&self, fut: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        let fut = self.crash_on_panic(fut);
        tokio::task::spawn_local(self.state.escaped.watch(self.state.pause.wrap(fut)))
    }

    /// `fut`, whose panic becomes this node's crash ([`super::panics`]).
    pub(crate) fn crash_on_panic<F: Future>(&self, fut: F) -> CrashOnPanic<F, impl FnOnce(String)> {
        let ctx = self.clone();
        CrashOnPanic::new(fut, move |message| ctx.panicked(message))
    }

    /// Node code panicked: record it, and crash as the process would, to be restarted by
    /// a supervisor. Live, the process itself panics on (as it did before), so whoever
    /// runs it sees it die.
    fn panicked(&self, message: String) {
        self.record(
            self.event(EventType::Event, names::PANIC)
                .value(serde_json::json!({ "message": message })),
        );
        if self.live().is_some() {
            panic!("{message}");
        }
        self.state
            .requests
            .borrow_mut()
            .push(NodeRequest::Crash(Some(SUPERVISOR_RESTART_NS)));
    }

    /// A uniform draw from `[lo, hi]` with the node's seeded RNG.
    pub fn rand_range(&self, lo: u64, hi: u64) -> u64 {
        self.state.rng.borrow_mut().gen_range(lo..=hi)
    }

    /// A random u64 from the node's seeded RNG.
    pub fn rand_u64(&self) -> u64 {
        self.state.rng.borrow_mut().gen()
    }

    /// Sleep a uniform draw from `[lo, hi]` ms of local time.
    pub async fn sleep_ms_in(&self, range: [u64; 2]) {
        let ms = self.rand_range(range[0], range[1]);
        self.sleep(Duration::from_millis(ms)).await;
    }

    /// The node's disk (survives crashes; only fsynced data survives them).
    pub fn disk(&self) -> std::cell::RefMut<'_, Disk> {
        self.state.disk.borrow_mut()
    }

    /// The true ns an fsync started now still waits for, or 0 when the disk is not
    /// stalled (`disk-stall` faults).
    pub fn disk_stall_left_ns(&self) -> u64 {
        self.state
            .disk_stalled_until
            .get()
            .saturating_sub(self.true_ns())
    }

    /// Wait until an fsync started now has completed: at once, unless the disk is stalled,
    /// then until the stall ends. Node code calls this after [`Disk::fsync`] and before
    /// whatever the fsync must precede (an acknowledgement, a reply); the rest of the
    /// process keeps running meanwhile.
    pub async fn wait_disk(&self) {
        loop {
            let left = self.disk_stall_left_ns();
            if left == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_nanos(left)).await;
        }
    }

    /// An fsync of `name` as a background flusher does it (Redis's `everysec`, a database
    /// that flushes its log once a second): it covers what the file held when it started
    /// and completes when the disk lets it, while the process goes on appending.
    pub async fn fsync_in_background(&self, name: &str) {
        let started_at = self.disk().len(name);
        self.wait_disk().await;
        self.disk().fsync_prefix(name, started_at);
    }

    /// Like [`NodeCtx::wait_disk`] for a process whose only thread blocks in fsync (Redis
    /// with `appendfsync always`): the whole node freezes, every task, until the stall
    /// ends, as under a pause. Recorded as a pause `at = "fsync"`.
    pub async fn freeze_until_disk_ready(&self) {
        let left = self.disk_stall_left_ns();
        if left == 0 || self.live().is_some() {
            return;
        }
        self.pause_self(left, "fsync").await;
    }

    /// The node's one thread is busy for `d` (a long script in Redis): every task freezes
    /// until then, as under a pause. Recorded as the node's own `busy` event (`at` says
    /// why), not a fault: no `pause`/`resume` for the nemesis. Live, the thread blocks.
    pub async fn busy_for(&self, d: Duration, at: &str) {
        if d.is_zero() {
            return;
        }
        if self.live().is_some() {
            // A live node runs alone on its thread: blocking it is what Redis does.
            std::thread::sleep(d);
            return;
        }
        let duration_ns = d.as_nanos() as u64;
        self.record(
            self.event(EventType::Event, names::BUSY)
                .value(serde_json::json!({
                    "duration_ms": duration_ns as f64 / 1e6,
                    "at": at,
                })),
        );
        self.state.quiet_resume.set(true);
        self.freeze(duration_ns).await;
    }

    /// The process exits on its own (Redis's `SHUTDOWN`): in a simulation a crash with no
    /// restart; live, the node is marked down and whoever runs it stops it
    /// (`locksim serve` ends).
    pub async fn exit(&self) {
        if self.live().is_some() {
            self.state.set_crashed(true);
        } else {
            self.state
                .requests
                .borrow_mut()
                .push(NodeRequest::Crash(None));
        }
        std::future::pending::<()>().await;
    }

    /// Whether the node exited on its own ([`NodeCtx::exit`]) or crashed.
    pub fn has_exited(&self) -> bool {
        self.state.is_crashed()
    }

    /// Freeze the whole node now for `duration_ns`, recorded as a pause striking `at`: the
    /// driver resumes it.
    async fn pause_self(&self, duration_ns: u64, at: &str) {
        self.record(
            Event::new("nemesis", EventType::Event, names::PAUSE)
                .nodes(vec![self.name().to_string()])
                .value(serde_json::json!({
                    "duration_ms": duration_ns as f64 / 1e6,
                    "at": at,
                })),
        );
        self.freeze(duration_ns).await;
    }

    /// Freeze the whole node now for `duration_ns`: the driver resumes it.
    async fn freeze(&self, duration_ns: u64) {
        self.state.pause.pause();
        self.state
            .requests
            .borrow_mut()
            .push(NodeRequest::ResumeAfter(duration_ns));
        // Return Pending once: the Pausable wrapper then sees the switch and parks.
        YieldNow::new().await;
    }

    /// Record an event from this node: stamps true time, the node's clocks and its name.
    pub fn record(&self, mut event: Event) {
        let t = self.true_ns();
        let clock = self.state.clock.borrow();
        event.time_ns = t;
        event.local_ns = Some(clock.mono_ns(t));
        event.wall_ms = Some(clock.wall_ms(t));
        if event.process.is_empty() {
            event.process = self.state.name.clone();
        }
        drop(clock);
        self.recorder.push(event);
    }

    /// Shorthand: record an event of this process with type `kind` and op `f`.
    pub fn event(&self, kind: EventType, f: &str) -> Event {
        Event::new(self.state.name.clone(), kind, f)
    }

    /// Run `acquire`, an acquire the workload waits on: a fault armed at
    /// [`FaultPoint::Waiting`] strikes once it has been outstanding for
    /// [`WAITING_STRIKES_AFTER`], freezing it with the rest of the node.
    pub async fn waiting<F: Future>(&self, acquire: F) -> F::Output {
        let started = self.mono_ns();
        tokio::pin!(acquire);
        loop {
            tokio::select! {
                // Biased: the acquire is polled first, as when it ran alone.
                biased;
                out = &mut acquire => return out,
                () = self.strike_when_waiting(started) => {}
            }
        }
    }

    /// Strike the fault armed at [`FaultPoint::Waiting`] once the acquire that began at
    /// `started` (local ns) has waited long enough; pending while none is armed.
    async fn strike_when_waiting(&self, started: i64) {
        while !self.state.is_armed(FaultPoint::Waiting) {
            self.state.waiting_armed.notified().await;
        }
        let waited = Duration::from_nanos((self.mono_ns() - started).max(0) as u64);
        self.sleep(WAITING_STRIKES_AFTER.saturating_sub(waited))
            .await;
        self.fault_point(FaultPoint::Waiting).await;
    }

    /// A fault point: if a fault is armed for `point`, it strikes here. A pause freezes
    /// the whole node (this task and every other) until the driver resumes it; a crash
    /// never returns (the driver kills the node right after this tick).
    pub async fn fault_point(&self, point: FaultPoint) {
        let fault = {
            let mut armed = self.state.armed.borrow_mut();
            let pos = armed.iter().position(|(p, _)| *p == point);
            pos.map(|i| armed.remove(i).1)
        };
        match fault {
            None => {}
            Some(ArmedFault::Pause { duration_ns }) => {
                self.pause_self(duration_ns, point.name()).await
            }
            Some(ArmedFault::Crash { down_ns }) => {
                self.state
                    .requests
                    .borrow_mut()
                    .push(NodeRequest::Crash(down_ns));
                std::future::pending::<()>().await;
            }
        }
    }
}
