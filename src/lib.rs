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
//! # The public surface
//!
//! - [`plugin`]: everything a family or a client of your own needs, in one place (the
//!   traits, the node context, the transport, the checks, [`Scenario::builder`]);
//! - [`scenario`], [`sweep`], [`shrink`]: scenarios, many seeds against their
//!   expectations, minimal failing fault schedules;
//! - [`check`], [`linearizability`], [`history`]: the checks, the linearizability checker
//!   and its models, events and their JSONL and Jepsen EDN forms;
//! - [`cli`]: the `locksim` command line for your own families too
//!   ([`cli::main_with`]: a binary of your own with `run`, `replay`, `shrink`, ...);
//! - the crate root: [`run`], [`run_with_schedule`], [`check_run`] and the types they take
//!   and return.
//!
//! Everything else is `pub(crate)`: the families' servers and clients, the harness, the
//! transport, live mode and the report are reached through the list above, so they can
//! change without breaking a user's code. (`testing` is what locksim's own integration
//! tests reach; it is hidden.)
//!
//! # Layers
//!
//! Dependencies point down this list only (`scripts/layers` checks it; test code may
//! reach any layer):
//!
//! - [`plugin`], `testing`: what a user's own family or client needs, and what
//!   locksim's own integration tests reach, re-exported in one place;
//! - `cli`: the `locksim` subcommands;
//! - `live`: a scenario against real processes, faults applied to them;
//! - `serve`: one simulated node as a real process on loopback TCP;
//! - `report`: the guarantees matrix and counterexample pictures;
//! - [`shrink`]: minimal fault schedules;
//! - [`sweep`]: many seeds, summarised against a scenario's expectations;
//! - `metrics`: what a run cost and how fair it was (latencies, traffic, waits);
//! - `deploy`: which hosts a scenario has and what each runs; one run and its checks;
//! - `workload`: what clients do (acquire, read, work, write, release);
//! - `resource`: the protected (fenced or unfenced) storage;
//! - [`scenario`]: the TOML envelope; `[lock]` is handed to the algorithm;
//! - `locks`: the algorithms, one folder each, behind [`plugin::Algorithm`];
//! - `real`: real servers a family can run against (processes, proxies, ports);
//! - `consensus`: Raft (raft-rs) as the replicated families share it;
//! - `net`: the transport all algorithms share;
//! - `sim`: the harness (clocks, pauses, disks, faults, the world, the node context);
//! - [`check`]: the checks over a history;
//! - [`linearizability`]: the linearizability checker and its models;
//! - [`history`]: events, the recorder, the Jepsen EDN reader;
//! - `key_error`, `user_file`, `did_you_mean`, `plural`: error paths in TOML keys,
//!   reading user files, suggestions, plural words.
//!
//! [turmoil]: https://docs.rs/turmoil
#![warn(missing_docs)]
#![warn(unreachable_pub)]

pub mod check;
pub mod cli;
pub(crate) mod consensus;
pub(crate) mod deploy;
pub(crate) mod did_you_mean;
pub mod history;
pub(crate) mod key_error;
pub mod linearizability;
pub(crate) mod live;
pub(crate) mod locks;
pub(crate) mod metrics;
pub(crate) mod net;
pub mod plugin;
pub(crate) mod plural;
pub(crate) mod real;
pub(crate) mod report;
pub(crate) mod resource;
pub mod scenario;
pub(crate) mod serve;
pub mod shrink;
pub(crate) mod sim;
pub mod sweep;
// What locksim's own integration tests reach; not part of the library's interface.
#[doc(hidden)]
pub mod testing;
pub(crate) mod user_file;
pub(crate) mod workload;

pub use check::{check_all, Check, CheckParams, CheckReport, CheckReports, Verdict, Violation};
pub use deploy::{check_run, run, run_with_schedule};
pub use history::{Event, EventType, History, Recorder};
pub use scenario::{Expect, Scenario, ScenarioError};
pub use sim::{Fault, FaultPoint, RunResult, Schedule, TimedFault, WAITING_STRIKES_AFTER};
