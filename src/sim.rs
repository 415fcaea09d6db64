//! The simulation harness over turmoil: node clocks, stop-the-world pauses, durable
//! disks, the nemesis and the world that runs one seed.
//!
//! Time is the core of every lock argument, so it is modelled explicitly. *True time* is
//! turmoil's global simulated clock; histories are stamped with it and checks reason only
//! in it. Each node has its own [`Clock`] (offset, drift, wall jumps) that its code reads
//! and sleeps on, exactly as real code reads `CLOCK_MONOTONIC` and `CLOCK_REALTIME`.

mod clock;
mod disk;
pub mod nemesis;
mod node;
mod pause;
mod world;

pub use clock::{Clock, EPOCH_NS};
pub use disk::Disk;
pub use node::{node_rng, ArmedFault, Elapsed, NodeCtx, NodeRequest, NodeState};
pub use pause::{Pausable, PauseSwitch};
pub use world::{run, RunResult, TICK};
