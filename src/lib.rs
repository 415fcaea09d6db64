//! # locksim
//!
//! Deterministic simulation and verification of distributed locks: real implementations
//! of lock algorithms run over a simulated network ([turmoil]), a nemesis injects
//! partitions, clock faults, process pauses and crashes, and checkers prove or refute
//! mutual exclusion, fencing-token order and the absence of lost updates.
//!
//! A run is a pure function of `(scenario, seed)`: the same history bytes on every run
//! and every machine.
//!
//! ```no_run
//! let scenario = locksim::Scenario::load("sims/redis-gc-pause.toml".as_ref()).unwrap();
//! let result = locksim::run(&scenario, 7);
//! let reports = locksim::check_run(&scenario, &result);
//! for r in &reports {
//!     println!("{}: {:?}", r.name, r.verdict);
//! }
//! ```
//!
//! [turmoil]: https://docs.rs/turmoil
#![warn(missing_docs)]

pub mod check;
pub mod edn;
pub mod history;
pub mod linearizability;
pub mod locks;
pub mod report;
pub mod resource;
pub mod scenario;
pub mod sim;
pub mod sweep;
pub mod workload;

pub use check::{check_all, CheckParams, CheckReport, Verdict, Violation, CHECK_NAMES};
pub use history::{Event, EventType, History, Recorder};
pub use scenario::{Expect, Scenario, ScenarioError};
pub use sim::{run, RunResult};

/// Run every check on one seed's result with the scenario's parameters.
pub fn check_run(scenario: &Scenario, result: &RunResult) -> Vec<CheckReport> {
    check_all(
        &result.history,
        CheckParams {
            end_ns: result.end_ns,
            liveness_ns: scenario.liveness_ms * 1_000_000,
            lock_linearizable: scenario.algorithm != scenario::Algorithm::Redlock,
        },
    )
}
