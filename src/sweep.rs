//! Seed sweeps: run many seeds (in parallel across threads — each run itself stays on
//! one thread), check each, and summarise against the scenario's expectations.
//!
//! Seeds are streamed, never collected: a [`SeedSet`] names them by arithmetic, workers
//! take the next index, outcomes come back to the calling thread *in seed order* (a small
//! reorder window bounds memory) and are folded into a [`Tally`] as they arrive. So
//! `--seeds 0..18446744073709551615` starts at once, uses constant memory, and can be
//! interrupted with a partial summary.

use crate::check::{CheckKind, CheckReport, Verdict};
use crate::history::{self, AcquireErrors};
use crate::metrics::{run_metrics, MetricsTotals, RunMetrics};
use crate::scenario::{Expect, Scenario};
use crate::sim::RunResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Which seeds a sweep covers: `start..end`, or shard `k` of `n` of it (every `n`-th seed
/// from the `k`-th, 1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedSet {
    start: u64,
    len: u64,
    shard: (u64, u64),
}

impl SeedSet {
    /// Seeds `start..end` (empty when `end <= start`).
    pub fn range(start: u64, end: u64) -> SeedSet {
        SeedSet {
            start,
            len: end.saturating_sub(start),
            shard: (1, 1),
        }
    }

    /// One seed.
    pub fn one(seed: u64) -> SeedSet {
        SeedSet {
            start: seed,
            len: 1,
            shard: (1, 1),
        }
    }

    /// Shard `k` of `n` (1 <= k <= n) of these seeds.
    pub fn shard(self, k: u64, n: u64) -> SeedSet {
        assert!(n >= 1 && (1..=n).contains(&k), "shard {k}/{n}");
        SeedSet {
            shard: (k, n),
            ..self
        }
    }

    /// How many seeds.
    pub fn count(&self) -> u64 {
        let (k, n) = self.shard;
        if self.len < k {
            0
        } else {
            (self.len - k) / n + 1
        }
    }

    /// The `i`-th seed, if there is one.
    pub fn nth(&self, i: u64) -> Option<u64> {
        (i < self.count()).then(|| self.start + (self.shard.0 - 1) + i * self.shard.1)
    }

    /// Every seed, in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.count()).map(|i| self.nth(i).expect("below count"))
    }

    /// The whole range, before sharding: `(start, end)`, end exclusive. The end is a
    /// `u128` because `--seed 18446744073709551615` ends one past the last `u64`.
    pub fn bounds(&self) -> (u64, u128) {
        (self.start, u128::from(self.start) + u128::from(self.len))
    }

    /// Which shard this is: `(k, n)`, 1-based; `(1, 1)` when unsharded.
    pub fn shard_index(&self) -> (u64, u64) {
        self.shard
    }

    /// The set with these [`bounds`](SeedSet::bounds) and [`shard_index`](SeedSet::shard_index),
    /// if they make sense (`start <= end`, `1 <= k <= n`): the inverse of those two, for
    /// sets read back from a [`Summary`].
    pub fn from_parts(bounds: (u64, u128), shard: (u64, u64)) -> Option<SeedSet> {
        let (start, end) = bounds;
        let len = u64::try_from(end.checked_sub(u128::from(start))?).ok()?;
        let (k, n) = shard;
        (n >= 1 && (1..=n).contains(&k)).then_some(SeedSet {
            start,
            len,
            shard: (k, n),
        })
    }
}

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
    /// No acquire succeeded and acquires got error replies: how they ended (see
    /// [`history::acquire_errors()`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acquire_errors: Option<AcquireErrors>,
    /// What the lock cost on this seed (latency, throughput, traffic per grant); none when the run
    /// failed or was stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<RunMetrics>,
    /// Nodes that started tasks outside their node context, and the most alive at once
    /// ([`RunResult::escaped_tasks`]); omitted when none did.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub escaped_tasks: BTreeMap<String, usize>,
}

impl SeedOutcome {
    /// Whether check `name` was violated on this seed.
    pub fn violated(&self, name: &str) -> bool {
        self.checks
            .iter()
            .any(|c| c.name == name && c.verdict == Verdict::Violated)
    }

    /// Whether any safety or liveness check was violated: what makes a seed violating.
    /// A broken quality check (`fair`) does not: see [`CheckKind`].
    pub fn any_violation(&self) -> bool {
        self.checks.iter().any(CheckReport::is_violation)
    }
}

/// Run and check one seed, turning a panic inside the simulation into an error outcome.
pub fn run_seed(scenario: &Scenario, seed: u64) -> (Option<RunResult>, SeedOutcome) {
    run_seed_with(scenario, seed, None)
}

/// [`run_seed`] with a progress watcher (the harness's progress ticks). A run the
/// watcher stopped is not checked: its history is partial, so nobody wants its verdicts,
/// and checking it would hold up the exit after Ctrl-C for as long as the run had gone.
pub fn run_seed_with(
    scenario: &Scenario,
    seed: u64,
    progress: Option<crate::sim::Progress>,
) -> (Option<RunResult>, SeedOutcome) {
    let stopped = Arc::new(AtomicBool::new(false));
    let progress = progress.map(|go_on| noting_stop(go_on, stopped.clone()));
    let run = || {
        crate::sim::on_fresh_thread(|| {
            let mut world = crate::deploy::world(scenario, scenario.fault_plan());
            world.progress = progress;
            crate::sim::run(world, seed)
        })
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(result) => {
            let (checks, metrics) = if stopped.load(Ordering::Relaxed) {
                (Vec::new(), None)
            } else {
                let metrics = run_metrics(
                    &result.history,
                    result.end_ns,
                    result.traffic.unwrap_or_default(),
                );
                (
                    crate::check_run(scenario, &result).into_vec(),
                    Some(metrics),
                )
            };
            let outcome = SeedOutcome {
                seed,
                history_hash: format!("{:016x}", history::hash(&result.history)),
                events: result.history.len(),
                sim_s: result.end_ns as f64 / 1e9,
                checks,
                error: result.error.clone(),
                acquire_errors: history::acquire_errors(&result.history),
                metrics,
                escaped_tasks: result.escaped_tasks.clone(),
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
                acquire_errors: None,
                metrics: None,
                escaped_tasks: BTreeMap::new(),
            };
            (None, outcome)
        }
    }
}

/// `go_on`, also setting `stopped` when it says stop.
fn noting_stop(go_on: crate::sim::Progress, stopped: Arc<AtomicBool>) -> crate::sim::Progress {
    Box::new(move |ms| {
        let go = go_on(ms);
        if !go {
            stopped.store(true, Ordering::Relaxed);
        }
        go
    })
}

/// A sweep in progress, as the calling thread sees it between outcomes.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// Seeds finished (and handed to the sink).
    pub done: u64,
    /// Seeds in the sweep.
    pub total: u64,
    /// Seeds running now, with the simulated ms each has reached.
    pub running: Vec<(u64, u64)>,
}

/// How many outcomes may wait for an earlier seed, per worker: bounds memory when one
/// seed is much slower than the others.
const WINDOW_PER_JOB: u64 = 16;

/// Run `seeds` on `jobs` threads. Outcomes reach `sink` on the calling thread in seed
/// order; `on_tick` is called there about five times a second with the live state.
/// When `stop` is set, no new seed starts and running ones stop at their next progress
/// report (their outcomes are dropped). Returns whether every seed ran.
pub fn run_seeds(
    scenario: &Scenario,
    seeds: SeedSet,
    jobs: usize,
    stop: &AtomicBool,
    on_tick: &mut dyn FnMut(&Live),
    sink: &mut dyn FnMut(SeedOutcome),
) -> bool {
    let seed_at = |i: u64| seeds.nth(i).expect("index below count");
    drive(scenario, seeds.count(), &seed_at, jobs, stop, on_tick, sink)
}

/// Run `seeds` on `jobs` threads and return every outcome, in the order of `seeds`
/// (a convenience for tests and small sweeps; `on_done` is called after each seed).
pub fn sweep(
    scenario: &Scenario,
    seeds: &[u64],
    jobs: usize,
    on_done: &(dyn Fn(&SeedOutcome) + Sync),
) -> Vec<SeedOutcome> {
    let mut out = Vec::with_capacity(seeds.len());
    let seed_at = |i: u64| seeds[i as usize];
    let mut sink = |o: SeedOutcome| {
        on_done(&o);
        out.push(o);
    };
    let never = AtomicBool::new(false);
    drive(
        scenario,
        seeds.len() as u64,
        &seed_at,
        jobs,
        &never,
        &mut |_| {},
        &mut sink,
    );
    out
}

/// The sweep engine: `count` seeds, the `i`-th being `seed_at(i)`.
fn drive(
    scenario: &Scenario,
    count: u64,
    seed_at: &(dyn Fn(u64) -> u64 + Sync),
    jobs: usize,
    stop: &AtomicBool,
    on_tick: &mut dyn FnMut(&Live),
    sink: &mut dyn FnMut(SeedOutcome),
) -> bool {
    let jobs = (jobs.max(1) as u64).min(count.max(1));
    let window = jobs * WINDOW_PER_JOB;
    let next = AtomicU64::new(0);
    let emitted = AtomicU64::new(0);
    // Per worker: (seed + 1, simulated ms reached); 0 = idle.
    let slots: Vec<Arc<(AtomicU64, AtomicU64)>> = (0..jobs)
        .map(|_| Arc::new((AtomicU64::new(0), AtomicU64::new(0))))
        .collect();
    let stopped = AtomicBool::new(false);
    // The runs' progress watchers outlive this call's borrows; they see `stop` through
    // this copy, refreshed on every tick of the calling thread.
    let halt = Arc::new(AtomicBool::new(stop.load(Ordering::Relaxed)));
    let (tx, rx) = mpsc::channel::<(u64, SeedOutcome)>();
    let mut complete = true;
    std::thread::scope(|scope| {
        for slot in &slots {
            let (tx, slot, halt) = (tx.clone(), slot.clone(), halt.clone());
            let (next, emitted, stopped) = (&next, &emitted, &stopped);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return;
                }
                // Stay within the reorder window of the oldest unfinished seed.
                while i >= emitted.load(Ordering::Acquire) + window && !stop.load(Ordering::Relaxed)
                {
                    std::thread::sleep(Duration::from_millis(2));
                }
                if stop.load(Ordering::Relaxed) {
                    stopped.store(true, Ordering::Relaxed);
                    return;
                }
                let seed = seed_at(i);
                slot.0.store(seed.wrapping_add(1), Ordering::Relaxed);
                slot.1.store(0, Ordering::Relaxed);
                let (watch, halt) = (slot.clone(), halt.clone());
                let progress: crate::sim::Progress = Box::new(move |ms| {
                    watch.1.store(ms, Ordering::Relaxed);
                    !halt.load(Ordering::Relaxed)
                });
                let (_, outcome) = run_seed_with(scenario, seed, Some(progress));
                slot.0.store(0, Ordering::Relaxed);
                if stop.load(Ordering::Relaxed) {
                    // The run may have been cut short: its verdicts mean nothing.
                    stopped.store(true, Ordering::Relaxed);
                    return;
                }
                if tx.send((i, outcome)).is_err() {
                    return;
                }
            });
        }
        drop(tx);
        let mut pending: BTreeMap<u64, SeedOutcome> = BTreeMap::new();
        let mut done = 0u64;
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok((i, outcome)) => {
                    pending.insert(i, outcome);
                    while let Some(o) = pending.remove(&done) {
                        sink(o);
                        done += 1;
                        emitted.store(done, Ordering::Release);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            halt.store(stop.load(Ordering::Relaxed), Ordering::Relaxed);
            let running = slots
                .iter()
                .filter_map(|s| {
                    let seed = s.0.load(Ordering::Relaxed);
                    (seed > 0).then(|| (seed - 1, s.1.load(Ordering::Relaxed)))
                })
                .collect();
            on_tick(&Live {
                done,
                total: count,
                running,
            });
        }
        complete = done == count && !stopped.load(Ordering::Relaxed);
    });
    complete
}

/// Per-check totals over a sweep.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckTotals {
    /// Number of seeds that violated the check.
    pub violations: u64,
    /// Number of seeds on which the checker gave up (time budget): neither verdict.
    pub unknown: u64,
    /// The first (lowest-index) seed that did.
    pub first_seed: Option<u64>,
    /// The check's kind; written only for quality checks, whose violations do not make
    /// a seed violating (read back as safety when absent: both count).
    #[serde(default, skip_serializing_if = "CheckKind::is_not_quality")]
    pub kind: CheckKind,
    /// The scenario's expectation, if it states one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expect>,
    /// Whether the expectation is met (true when none is stated).
    pub met: bool,
    /// Why the check cannot say anything about this scenario, when it cannot and no
    /// seed violated it or left it undecided: the report's `–`, the CLI's `n/a` (the
    /// same rule: [`Scenario::shown_not_applicable`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
}

impl CheckTotals {
    /// Whether these totals meet `expect` (always, when none is stated). What
    /// [`met`](CheckTotals::met) records.
    pub fn meets_expectation(&self) -> bool {
        match self.expect {
            // Holding needs proof on every seed: an unknown verdict is not one. A check
            // that cannot apply holds vacuously: met, and the line says n/a and why.
            Some(Expect::Holds) => self.violations == 0 && self.unknown == 0,
            Some(Expect::Violated) => self.violations > 0,
            Some(Expect::Any) | None => true,
        }
    }
}

/// Whether a sweep met its expectations: it ran some seed (a sweep over none proves
/// nothing), was not interrupted, had no harness error, and every check met its own.
fn sweep_met(
    seeds: u64,
    interrupted: bool,
    harness_errors: bool,
    checks: &BTreeMap<String, CheckTotals>,
) -> bool {
    seeds > 0 && !interrupted && !harness_errors && checks.values().all(|c| c.met)
}

/// The summary line of `locksim run --json` (and of `locksim merge --json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// The scenario's algorithm (`[lock] algorithm`).
    pub algorithm: String,
    /// The scenario file's path as given on the command line (for the replay command).
    pub scenario_file: String,
    /// The sweep's whole seed range `[start, end]`, end exclusive, before sharding
    /// (`--seeds 0..12`: `[0, 12]`; `--seed 7`: `[7, 8]`). See [`SeedSet::bounds`].
    pub seed_range: (u64, u128),
    /// Which shard of the range this run covered, `[k, n]`: every `n`-th seed from the
    /// `k`-th; `[1, 1]` for the whole range. See [`SeedSet::shard_index`].
    pub shard: (u64, u64),
    /// Seeds run.
    pub seeds: u64,
    /// Seeds with at least one violated safety or liveness check (quality checks such as
    /// `fair` are counted in `checks` only).
    pub violating_seeds: u64,
    /// First seed with such a violation.
    pub first_violation_seed: Option<u64>,
    /// Totals per check.
    pub checks: BTreeMap<String, CheckTotals>,
    /// Seeds whose run failed inside the harness (the first [`MAX_ERRORS_LISTED`]).
    pub harness_errors: Vec<u64>,
    /// Every expectation met and no harness error.
    pub expect_met: bool,
    /// Wall-clock seconds of the sweep.
    pub wall_s: f64,
    /// Simulated seconds, summed over seeds.
    pub sim_s: f64,
    /// The sweep was interrupted before every seed ran: the totals cover `seeds` only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Seeds on which no acquire succeeded and acquires got error replies, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquire_errors: Option<SeedsAcquireErrors>,
    /// What the lock cost, over the seeds (latency, throughput, traffic per grant).
    #[serde(default)]
    pub metrics: MetricsTotals,
}

/// The seeds of a sweep on which no acquire succeeded and the acquires got error replies
/// (a lock script that always fails): how many, and the first one's diagnosis.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SeedsAcquireErrors {
    /// How many seeds.
    pub seeds: u64,
    /// The first (lowest) of them.
    pub seed: u64,
    /// How its acquires ended.
    #[serde(flatten)]
    pub errors: AcquireErrors,
    /// That in words ([`AcquireErrors::describe`]).
    pub message: String,
}

impl SeedsAcquireErrors {
    /// One seed's diagnosis.
    pub fn of(seed: u64, errors: &AcquireErrors) -> SeedsAcquireErrors {
        SeedsAcquireErrors {
            seeds: 1,
            seed,
            errors: errors.clone(),
            message: errors.describe(),
        }
    }

    /// These and `other` (of other seeds) together: the counts add up, the lower seed's
    /// diagnosis stays.
    pub fn and(self, other: &SeedsAcquireErrors) -> SeedsAcquireErrors {
        let seeds = self.seeds.saturating_add(other.seeds);
        let first = if other.seed < self.seed {
            other.clone()
        } else {
            self
        };
        SeedsAcquireErrors { seeds, ..first }
    }
}

impl Summary {
    /// The seeds this summary covers (its range and shard), if they make sense.
    pub fn seed_set(&self) -> Option<SeedSet> {
        SeedSet::from_parts(self.seed_range, self.shard)
    }

    /// The summary of a whole sweep from the summaries of its shards, as `locksim merge`
    /// makes it (which first checks that `shards` are every shard of one sweep, once
    /// each, none interrupted). Equal to what one run over the whole range gives except:
    /// `shard` is `[1, 1]`; `wall_s` is the longest shard's (the sweep's wall time when
    /// the shards ran in parallel); and `sim_s`, a sum of floats, may differ in its last
    /// bits when seeds' simulated times are not whole numbers of seconds. The scenario
    /// and its file come from the first shard. `None` when `shards` is empty.
    pub fn combine(shards: &[Summary]) -> Option<Summary> {
        let first = shards.first()?;
        let mut checks: BTreeMap<String, CheckTotals> = BTreeMap::new();
        for (name, t) in shards.iter().flat_map(|s| &s.checks) {
            let sum = checks.entry(name.clone()).or_insert(CheckTotals {
                violations: 0,
                unknown: 0,
                first_seed: None,
                kind: t.kind,
                expect: t.expect,
                met: true,
                not_applicable: t.not_applicable.clone(),
            });
            sum.violations = sum.violations.saturating_add(t.violations);
            sum.unknown = sum.unknown.saturating_add(t.unknown);
            sum.first_seed = sum.first_seed.into_iter().chain(t.first_seed).min();
        }
        for t in checks.values_mut() {
            t.met = t.meets_expectation();
            t.not_applicable =
                Scenario::shown_not_applicable(t.not_applicable.as_ref(), t.violations, t.unknown)
                    .cloned();
        }
        // Each shard lists its first errors; the first of the whole sweep are among them.
        let mut harness_errors: Vec<u64> = shards
            .iter()
            .flat_map(|s| s.harness_errors.iter().copied())
            .collect();
        harness_errors.sort_unstable();
        harness_errors.truncate(MAX_ERRORS_LISTED);
        let sum = |f: fn(&Summary) -> u64| shards.iter().fold(0u64, |a, s| a.saturating_add(f(s)));
        let seeds = sum(|s| s.seeds);
        let interrupted = shards.iter().any(|s| s.interrupted);
        let acquire_errors = shards
            .iter()
            .filter_map(|s| s.acquire_errors.clone())
            .reduce(|all, s| all.and(&s));
        let mut metrics = MetricsTotals::default();
        for s in shards {
            metrics.merge(&s.metrics);
        }
        Some(Summary {
            scenario: first.scenario.clone(),
            algorithm: first.algorithm.clone(),
            scenario_file: first.scenario_file.clone(),
            seed_range: first.seed_range,
            shard: (1, 1),
            seeds,
            violating_seeds: sum(|s| s.violating_seeds),
            first_violation_seed: shards.iter().filter_map(|s| s.first_violation_seed).min(),
            expect_met: sweep_met(seeds, interrupted, !harness_errors.is_empty(), &checks),
            checks,
            harness_errors,
            wall_s: shards.iter().map(|s| s.wall_s).fold(0.0, f64::max),
            sim_s: shards.iter().map(|s| s.sim_s).sum(),
            interrupted,
            acquire_errors,
            metrics,
        })
    }
}

/// How many harness-error seeds a summary lists (all are counted).
pub const MAX_ERRORS_LISTED: usize = 100;

/// Running totals of a sweep, fed one outcome at a time: constant memory whatever the
/// number of seeds.
#[derive(Debug, Clone)]
pub struct Tally {
    scenario: String,
    algorithm: String,
    scenario_file: String,
    set: SeedSet,
    checks: Vec<(&'static str, CheckTotals)>,
    seeds: u64,
    violating: u64,
    first_violation: Option<SeedOutcome>,
    errors: Vec<(u64, String)>,
    error_count: u64,
    sim_s: f64,
    acquire_errors: Option<SeedsAcquireErrors>,
    metrics: MetricsTotals,
}

impl Tally {
    /// Empty totals for `scenario`'s checks over `seeds` (which the summary names; the
    /// outcomes counted are whatever [`add`](Tally::add) is given).
    pub fn new(scenario: &Scenario, seeds: SeedSet) -> Tally {
        let na = scenario.not_applicable();
        Tally {
            scenario: scenario.name.clone(),
            algorithm: scenario.algorithm().to_string(),
            scenario_file: scenario.file.display().to_string(),
            set: seeds,
            checks: scenario
                .checks()
                .iter()
                .map(|c| {
                    let totals = CheckTotals {
                        violations: 0,
                        unknown: 0,
                        first_seed: None,
                        kind: c.kind,
                        expect: scenario.expect.get(c.name).copied(),
                        met: true,
                        not_applicable: na.get(c.name).cloned(),
                    };
                    (c.name, totals)
                })
                .collect(),
            seeds: 0,
            violating: 0,
            first_violation: None,
            errors: Vec::new(),
            error_count: 0,
            sim_s: 0.0,
            acquire_errors: None,
            metrics: MetricsTotals::default(),
        }
    }

    /// Count one seed's outcome.
    pub fn add(&mut self, o: &SeedOutcome) {
        self.seeds += 1;
        self.sim_s += o.sim_s;
        if let Some(m) = &o.metrics {
            self.metrics.add(m);
        }
        for (name, t) in &mut self.checks {
            for c in o.checks.iter().filter(|c| c.name == *name) {
                match c.verdict {
                    Verdict::Violated => {
                        t.violations += 1;
                        t.first_seed.get_or_insert(o.seed);
                    }
                    Verdict::Unknown => t.unknown += 1,
                    Verdict::Holds => {}
                }
            }
        }
        if o.any_violation() {
            self.violating += 1;
            if self.first_violation.is_none() {
                self.first_violation = Some(o.clone());
            }
        }
        if let Some(d) = &o.acquire_errors {
            let seed = SeedsAcquireErrors::of(o.seed, d);
            self.acquire_errors = Some(match self.acquire_errors.take() {
                Some(all) => all.and(&seed),
                None => seed,
            });
        }
        if let Some(e) = &o.error {
            self.error_count += 1;
            if self.errors.len() < MAX_ERRORS_LISTED {
                self.errors.push((o.seed, e.clone()));
            }
        }
    }

    /// Seeds counted so far.
    pub fn seeds(&self) -> u64 {
        self.seeds
    }

    /// The first violating seed's outcome, for an example.
    pub fn first_violation(&self) -> Option<&SeedOutcome> {
        self.first_violation.as_ref()
    }

    /// The listed harness errors: (seed, message).
    pub fn errors(&self) -> &[(u64, String)] {
        &self.errors
    }

    /// The summary so far. A sweep that ran no seed meets no expectation.
    pub fn summary(&self, wall_s: f64, interrupted: bool) -> Summary {
        let mut checks = BTreeMap::new();
        for (name, t) in &self.checks {
            let met = t.meets_expectation();
            let not_applicable =
                Scenario::shown_not_applicable(t.not_applicable.as_ref(), t.violations, t.unknown)
                    .cloned();
            checks.insert(
                name.to_string(),
                CheckTotals {
                    met,
                    not_applicable,
                    ..t.clone()
                },
            );
        }
        Summary {
            scenario: self.scenario.clone(),
            algorithm: self.algorithm.clone(),
            scenario_file: self.scenario_file.clone(),
            seed_range: self.set.bounds(),
            shard: self.set.shard_index(),
            seeds: self.seeds,
            violating_seeds: self.violating,
            first_violation_seed: self.first_violation.as_ref().map(|o| o.seed),
            expect_met: sweep_met(self.seeds, interrupted, self.error_count > 0, &checks),
            checks,
            harness_errors: self.errors.iter().map(|(s, _)| *s).collect(),
            wall_s,
            sim_s: self.sim_s,
            interrupted,
            acquire_errors: self.acquire_errors.clone(),
            metrics: self.metrics.clone(),
        }
    }
}

/// Summarise `outcomes` (of the seeds in `seeds`) against `scenario.expect`.
pub fn summarize(
    scenario: &Scenario,
    seeds: SeedSet,
    outcomes: &[SeedOutcome],
    wall_s: f64,
) -> Summary {
    let mut t = Tally::new(scenario, seeds);
    for o in outcomes {
        t.add(o);
    }
    t.summary(wall_s, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_sets_are_arithmetic() {
        let s = SeedSet::range(0, 10).shard(2, 3);
        assert_eq!(s.iter().collect::<Vec<_>>(), [1, 4, 7]);
        assert_eq!(SeedSet::range(5, 8).iter().collect::<Vec<_>>(), [5, 6, 7]);
        assert_eq!(SeedSet::one(7).shard(2, 2).count(), 0);
        let huge = SeedSet::range(0, u64::MAX);
        assert_eq!(huge.count(), u64::MAX);
        assert_eq!(huge.nth(u64::MAX - 1), Some(u64::MAX - 1));
        assert_eq!(
            SeedSet::one(u64::MAX).iter().collect::<Vec<_>>(),
            [u64::MAX]
        );
        let last = SeedSet::range(0, u64::MAX).shard(3, 7);
        assert!(last.nth(last.count() - 1).unwrap() < u64::MAX);
    }

    #[test]
    fn acquire_errors_of_seeds_add_up_keeping_the_first_seed() {
        let of = |seed, error: &str| {
            let errors = AcquireErrors {
                acquires: 3,
                count: 3,
                error: error.to_string(),
                distinct: 1,
            };
            SeedsAcquireErrors::of(seed, &errors)
        };
        let (a, b, c) = (of(4, "ERR a"), of(2, "ERR b"), of(9, "ERR c"));
        // In any order (shards merge in shard order, not seed order): seed 2's stays.
        let ab_c = a.clone().and(&b).and(&c);
        let c_ba = c.and(&b).and(&a);
        assert_eq!(ab_c, c_ba);
        assert_eq!((ab_c.seeds, ab_c.seed), (3, 2));
        assert_eq!(
            ab_c.message,
            "every acquire (3) failed on the same error reply to the acquire script: ERR b"
        );
    }

    /// A broken quality check is counted in its totals but makes no seed violating.
    #[test]
    fn quality_checks_do_not_make_a_seed_violating() {
        use crate::check::{CheckReport, Violation, FAIR, MUTEX};
        let broken = |c: &crate::check::Check| {
            CheckReport::from_violations(c.name, vec![Violation::new("x", vec![1])]).of_kind(c.kind)
        };
        let scenario =
            Scenario::load(std::path::Path::new("sims/redis-baseline-fenced.toml")).unwrap();
        let mut o = SeedOutcome {
            seed: 4,
            history_hash: String::new(),
            events: 0,
            sim_s: 1.0,
            checks: vec![broken(&FAIR)],
            error: None,
            acquire_errors: None,
            metrics: None,
            escaped_tasks: BTreeMap::new(),
        };
        assert!(!o.any_violation() && o.violated("fair"));
        let mut t = Tally::new(&scenario, SeedSet::range(0, 10));
        t.add(&o);
        o.checks.push(broken(&MUTEX));
        assert!(o.any_violation());
        let s = t.summary(0.0, false);
        assert_eq!((s.violating_seeds, s.first_violation_seed), (0, None));
        assert_eq!(s.checks["fair"].violations, 1);
        assert_eq!(s.checks["fair"].kind, CheckKind::Quality);
    }

    #[test]
    fn seed_sets_come_back_from_their_parts() {
        for set in [
            SeedSet::range(0, 12).shard(2, 3),
            SeedSet::one(u64::MAX),
            SeedSet::range(5, 5),
        ] {
            assert_eq!(
                SeedSet::from_parts(set.bounds(), set.shard_index()),
                Some(set)
            );
        }
        assert_eq!(SeedSet::one(u64::MAX).bounds(), (u64::MAX, 1 << 64));
        assert_eq!(SeedSet::from_parts((3, 2), (1, 1)), None);
        assert_eq!(SeedSet::from_parts((0, 1 << 65), (1, 1)), None);
        assert_eq!(SeedSet::from_parts((0, 9), (4, 3)), None);
        assert_eq!(SeedSet::from_parts((0, 9), (0, 0)), None);
    }

    #[test]
    fn a_run_stopped_by_its_watcher_is_not_checked() {
        let path = std::path::Path::new("sims/redis-01-pause-past-lease.toml");
        let scenario = Scenario::load(path).unwrap();
        let stop_at_once: crate::sim::Progress = Box::new(|_| false);
        let (_, o) = run_seed_with(&scenario, 0, Some(stop_at_once));
        assert!(o.checks.is_empty(), "{:?}", o.checks);
        assert!(o.error.unwrap().starts_with("interrupted"));
        let (_, o) = run_seed_with(&scenario, 0, Some(Box::new(|_| true)));
        assert!(!o.checks.is_empty());
    }
}
