//! Deployment: turns a [`Scenario`] into the hosts of a simulated [`World`] — which nodes
//! exist and what each runs. The algorithm's servers first (in the order it declares),
//! then the storage, then the clients; the harness below knows none of them. And one
//! run of a scenario with its checks ([`run`], [`run_with_schedule`], [`check_run`]).

use crate::check::{check_all, CheckParams, CheckReports};
use crate::resource::{self, StorageState};
use crate::scenario::Scenario;
use crate::sim::{self, FaultPlan, Host, Network, RunResult, Schedule, World};
use crate::workload;
use std::rc::Rc;

mod determinism;
pub use determinism::{
    assert_deterministic, check_determinism, DiffEvent, HistoryDiff, Nondeterminism,
};

/// The world of one run of `scenario` with `faults`.
pub(crate) fn world(scenario: &Scenario, faults: FaultPlan) -> World {
    let mut hosts = Vec::new();
    for name in scenario.servers() {
        let lock = scenario.lock.clone();
        hosts.push(Host::new(name, move |ctx| lock.server_main(ctx)));
    }
    // The storage's data lives outside its host, so it survives crashes: it is the
    // durable system of record.
    let storage = StorageState::new();
    let fence_reads = scenario.workload.fence_reads;
    hosts.push(Host::new("storage", move |ctx| {
        Box::pin(resource::storage_main(ctx, storage.clone(), fence_reads))
    }));
    let workload = Rc::new(scenario.workload.clone());
    for name in scenario.clients() {
        let (lock, workload) = (scenario.lock.clone(), workload.clone());
        hosts.push(Host::new(name, move |ctx| {
            let (lock, workload) = (lock.clone(), workload.clone());
            Box::pin(async move { workload::client_main(ctx, &workload, lock.client()).await })
        }));
    }
    World {
        duration_ms: scenario.duration_ms,
        network: Network {
            latency_ms: *scenario.network.latency_ms,
            loss: scenario.network.loss,
        },
        hosts,
        faults,
        progress: None,
    }
}

/// Run `scenario` with `seed`: its explicit faults plus random ones drawn from the seed.
pub fn run(scenario: &Scenario, seed: u64) -> RunResult {
    sim::on_fresh_thread(|| sim::run(world(scenario, scenario.fault_plan()), seed))
}

/// Run `scenario` with `seed` but exactly the faults in `schedule` (none drawn): a run's
/// [`RunResult::schedule`] replays it; a shrinker runs cut-down schedules.
pub fn run_with_schedule(scenario: &Scenario, seed: u64, schedule: Schedule) -> RunResult {
    sim::on_fresh_thread(|| sim::run(world(scenario, FaultPlan::Fixed(schedule)), seed))
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
