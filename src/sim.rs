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
mod escaped_tasks;
mod fault;
mod fresh_thread;
mod join;
mod kernel;
mod live_net;
mod node;
mod panics;
mod pause;
pub(crate) mod random_faults;
mod tokio_seed;
mod world;

pub use clock::EPOCH_NS;
pub(crate) use clock::{Clock, ClockChange};
pub use disk::Disk;
pub(crate) use fault::{actions, Action, MAX_FAULT_MS};
pub use fault::{Fault, FaultPoint, Schedule, TimedFault, WAITING_STRIKES_AFTER};
pub(crate) use fresh_thread::on_fresh_thread;
pub use join::join_all;
pub use kernel::{Kernel, Traffic};
pub(crate) use kernel::{Listening, Open};
pub(crate) use live_net::monotonic_ns;
pub use live_net::LiveNet;
pub(crate) use node::{ArmedFault, NodeRequest};
pub use node::{Elapsed, NodeCtx, NodeState};
pub(crate) use random_faults::RandomFaults;
pub(crate) use tokio_seed::warn_once_if_unseeded;
pub use tokio_seed::{check_tokio_seeded, UnseededTokio, TOKIO_UNSTABLE_CONFIG};
pub use world::RunResult;
pub(crate) use world::{run, FaultPlan, Host, HostMain, Network, Progress, World, TICK};
// The fault applier live runs share with simulated ones.
pub(crate) use applier::{close_crashed_op, FaultTarget, Nemesis, Resumed, Via};

use std::future::Future;
use std::pin::Pin;

/// A boxed, non-`Send` future (node code runs on one thread).
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;
