//! # locksim
//!
//! Deterministic simulation and verification of distributed locks: real implementations
//! of lock algorithms run over a simulated network ([turmoil]), a nemesis injects
//! partitions, clock faults, process pauses and crashes, and checkers prove or refute
//! mutual exclusion, fencing-token order, linearizability and the absence of lost updates.
//!
//! A run is a pure function of `(scenario, seed)`: the same history bytes on every run
//! and every machine.
//!
//! ```no_run
//! let scenario = locksim::Scenario::load("sims/redis-01-pause-past-lease.toml".as_ref()).unwrap();
//! let result = locksim::run(&scenario, 7);
//! for r in locksim::check_run(&scenario, &result) {
//!     println!("{}: {:?}", r.name, r.verdict);
//! }
//! // The faults the run applied, as explicit entries: run them again, exactly.
//! let again = locksim::run_with_schedule(&scenario, 7, result.schedule.clone());
//! assert_eq!(again.history, result.history);
//! ```
//!
//! # Layers
//!
//! Dependencies point down this list only:
//!
//! - [`cli`]: the `locksim` subcommands;
//! - [`report`], [`shrink`]: the guarantees matrix, counterexample pictures, minimal
//!   fault schedules;
//! - [`sweep`]: many seeds, summarised against a scenario's expectations;
//! - [`deploy`]: which hosts a scenario has and what each runs;
//! - [`workload`]: what clients do (acquire, read, work, write, release);
//! - [`resource`]: the protected (fenced or unfenced) storage;
//! - [`scenario`]: the TOML envelope; `[lock]` is handed to the algorithm;
//! - [`locks`]: the algorithms, one folder each, behind [`locks::Algorithm`];
//! - [`net`]: the transport all algorithms share;
//! - [`sim`]: the harness (clocks, pauses, disks, faults, the world);
//! - [`check`], [`linearizability`], [`history`] (with its Jepsen EDN reader): histories
//!   and the checks over them.
//!
//! [turmoil]: https://docs.rs/turmoil
#![warn(missing_docs)]

pub mod check;
// The `locksim` binary's; not part of the library's interface.
#[doc(hidden)]
pub mod cli;
pub mod deploy;
pub mod did_you_mean;
pub mod history;
pub mod key_error;
pub mod linearizability;
pub mod live;
pub mod locks;
pub mod metrics;
pub mod net;
pub mod plugin;
pub mod plural;
pub mod real;
pub mod report;
pub mod resource;
pub mod scenario;
pub mod serve;
pub mod shrink;
pub mod sim;
pub mod sweep;
pub mod user_file;
pub mod workload;

pub use check::{check_all, Check, CheckParams, CheckReport, CheckReports, Verdict, Violation};
pub use history::{Event, EventType, History, Recorder};
pub use scenario::{Expect, Scenario, ScenarioError};
pub use sim::{Fault, FaultPoint, RunResult, Schedule, TimedFault};

/// Run `scenario` with `seed`: its explicit faults plus random ones drawn from the seed.
pub fn run(scenario: &Scenario, seed: u64) -> RunResult {
    sim::run(deploy::world(scenario, scenario.fault_plan()), seed)
}

/// Run `scenario` with `seed` but exactly the faults in `schedule` (none drawn): a run's
/// [`RunResult::schedule`] replays it; a shrinker runs cut-down schedules.
pub fn run_with_schedule(scenario: &Scenario, seed: u64, schedule: Schedule) -> RunResult {
    sim::run(
        deploy::world(scenario, sim::FaultPlan::Fixed(schedule)),
        seed,
    )
}

/// Run the scenario's checks (its algorithm's) on one seed's result.
pub fn check_run(scenario: &Scenario, result: &RunResult) -> CheckReports {
    check_all(
        &result.history,
        CheckParams {
            end_ns: result.end_ns,
            liveness_ns: scenario.liveness_ms * 1_000_000,
        },
        &scenario.checks(),
    )
}
