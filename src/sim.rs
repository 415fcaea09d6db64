//! The simulation harness over turmoil: node clocks, stop-the-world pauses, durable
//! disks, faults (random draws of them, and the applier that simulated and live runs
//! share) and the world that runs one seed.
//!
//! The harness knows nothing of locks, workloads or storage: it runs a list of
//! [`Host`]s (a name and a function of a [`NodeCtx`]) that a layer above builds.
//!
//! Time is the core of every lock argument, so it is modelled explicitly. *True time* is
//! turmoil's global simulated clock; histories are stamped with it and checks reason only
//! in it. Each node has its own [`Clock`] (offset, drift, wall jumps) that its code reads
//! and sleeps on, exactly as real code reads `CLOCK_MONOTONIC` and `CLOCK_REALTIME`.

mod applier;
mod clock;
mod disk;
mod fault;
mod join;
mod kernel;
mod live_net;
mod node;
mod pause;
pub mod random_faults;
mod world;

pub use clock::{Clock, ClockChange, EPOCH_NS};
pub use disk::Disk;
pub use fault::{actions, Action, Fault, FaultPoint, Schedule, TimedFault, MAX_FAULT_MS};
pub use join::join_all;
pub use kernel::{Kernel, Listening, Open, Traffic};
pub use live_net::{monotonic_ns, LiveNet};
pub use node::{node_rng, ArmedFault, Elapsed, NodeCtx, NodeEnv, NodeRequest, NodeState};
pub use pause::{Pausable, PauseSwitch};
pub use random_faults::RandomFaults;
pub use world::{
    run, FaultPlan, Host, HostMain, Network, Progress, RunResult, World, PROGRESS_EVERY_MS, TICK,
};
// The fault applier live runs share with simulated ones.
pub(crate) use applier::{close_crashed_op, FaultTarget, Nemesis, Resumed, Via};

use std::future::Future;
use std::pin::Pin;

/// A boxed, non-`Send` future (node code runs on one thread).
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;
