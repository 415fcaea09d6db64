//! Seed sweeps: run many seeds (in parallel across threads — each run itself stays on
//! one thread), check each, and summarise against the scenario's expectations.

use crate::check::{CheckReport, Verdict};
use crate::history;
use crate::scenario::{Expect, Scenario};
use crate::sim::RunResult;
use serde::Serialize;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What one seed produced, ready to print.
#[derive(Debug, Clone, Serialize)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// FNV-1a hash of the history's JSONL bytes (equal across runs and machines).
    pub history_hash: String,
    /// Number of events recorded.
    pub events: usize,
    /// Simulated seconds.
    pub sim_s: f64,
    /// Check verdicts.
    pub checks: Vec<CheckReport>,
    /// A harness failure (host error or panic); the seed's checks are then not trusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SeedOutcome {
    /// Whether check `name` was violated on this seed.
    pub fn violated(&self, name: &str) -> bool {
        self.checks
            .iter()
            .any(|c| c.name == name && c.verdict == Verdict::Violated)
    }

    /// Whether any check was violated.
    pub fn any_violation(&self) -> bool {
        self.checks.iter().any(|c| c.verdict == Verdict::Violated)
    }
}

/// Run and check one seed, turning a panic inside the simulation into an error outcome.
pub fn run_seed(scenario: &Scenario, seed: u64) -> (Option<RunResult>, SeedOutcome) {
    match catch_unwind(AssertUnwindSafe(|| crate::run(scenario, seed))) {
        Ok(result) => {
            let checks = crate::check_run(scenario, &result);
            let outcome = SeedOutcome {
                seed,
                history_hash: format!("{:016x}", history::hash(&result.history)),
                events: result.history.len(),
                sim_s: result.end_ns as f64 / 1e9,
                checks,
                error: result.error.clone(),
            };
            (Some(result), outcome)
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            let outcome = SeedOutcome {
                seed,
                history_hash: String::new(),
                events: 0,
                sim_s: 0.0,
                checks: Vec::new(),
                error: Some(format!("harness panic: {msg}")),
            };
            (None, outcome)
        }
    }
}

/// Run `seeds` on `jobs` threads; `on_done` is called after each seed (for progress).
/// Outcomes come back in the order of `seeds`, whatever the thread count.
pub fn sweep(
    scenario: &Scenario,
    seeds: &[u64],
    jobs: usize,
    on_done: &(dyn Fn(&SeedOutcome) + Sync),
) -> Vec<SeedOutcome> {
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<SeedOutcome>>> = Mutex::new(vec![None; seeds.len()]);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(seeds.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= seeds.len() {
                    return;
                }
                let (_, outcome) = run_seed(scenario, seeds[i]);
                on_done(&outcome);
                slots.lock().expect("no panics while held")[i] = Some(outcome);
            });
        }
    });
    slots
        .into_inner()
        .expect("threads joined")
        .into_iter()
        .map(|o| o.expect("every seed ran"))
        .collect()
}

/// Per-check totals over a sweep.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CheckTotals {
    /// Number of seeds that violated the check.
    pub violations: usize,
    /// Number of seeds on which the checker gave up (time budget): neither verdict.
    pub unknown: usize,
    /// The first (lowest-index) seed that did.
    pub first_seed: Option<u64>,
    /// The scenario's expectation, if it states one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// Whether the expectation is met (true when none is stated).
    pub met: bool,
}

/// The summary line of `locksim run --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Seeds run.
    pub seeds: usize,
    /// Seeds with at least one violated check.
    pub violating_seeds: usize,
    /// First seed with a violation.
    pub first_violation_seed: Option<u64>,
    /// Totals per check.
    pub checks: BTreeMap<String, CheckTotals>,
    /// Seeds whose run failed inside the harness.
    pub harness_errors: Vec<u64>,
    /// Every expectation met and no harness error.
    pub expect_met: bool,
    /// Wall-clock seconds of the sweep.
    pub wall_s: f64,
    /// Simulated seconds, summed over seeds.
    pub sim_s: f64,
}

/// Summarise `outcomes` against `scenario.expect`.
pub fn summarize(scenario: &Scenario, outcomes: &[SeedOutcome], wall_s: f64) -> Summary {
    let mut checks = BTreeMap::new();
    for name in scenario.checks().iter().map(|c| c.name) {
        // Checks that do not apply to the algorithm appear in no outcome.
        if !outcomes
            .iter()
            .any(|o| o.checks.iter().any(|c| c.name == name))
        {
            continue;
        }
        let unknown = outcomes
            .iter()
            .filter(|o| {
                o.checks
                    .iter()
                    .any(|c| c.name == name && c.verdict == Verdict::Unknown)
            })
            .count();
        let violating: Vec<u64> = outcomes
            .iter()
            .filter(|o| o.violated(name))
            .map(|o| o.seed)
            .collect();
        let expect = scenario.expect.get(name).copied();
        let met = match expect {
            // Holding needs proof on every seed: an unknown verdict is not one.
            Some(Expect::Holds) => violating.is_empty() && unknown == 0,
            Some(Expect::Violated) => !violating.is_empty(),
            Some(Expect::Any) | None => true,
        };
        checks.insert(
            name.to_string(),
            CheckTotals {
                violations: violating.len(),
                unknown,
                first_seed: violating.first().copied(),
                expect,
                met,
            },
        );
    }
    let violating: Vec<u64> = outcomes
        .iter()
        .filter(|o| o.any_violation())
        .map(|o| o.seed)
        .collect();
    let harness_errors: Vec<u64> = outcomes
        .iter()
        .filter(|o| o.error.is_some())
        .map(|o| o.seed)
        .collect();
    Summary {
        scenario: scenario.name.clone(),
        seeds: outcomes.len(),
        violating_seeds: violating.len(),
        first_violation_seed: violating.first().copied(),
        expect_met: harness_errors.is_empty() && checks.values().all(|c| c.met),
        checks,
        harness_errors,
        wall_s,
        sim_s: outcomes.iter().map(|o| o.sim_s).sum(),
    }
}
