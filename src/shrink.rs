//! Minimal fault schedules: take the schedule a violating run applied and cut it down —
//! drop faults (delta debugging), drop nodes from multi-node faults, shorten durations,
//! shrink clock steps, round times — re-running each candidate with the same seed, until
//! no smaller schedule still violates the check. The result is a scenario with an
//! explicit `[[faults.at]]` schedule and no random faults that reproduces the violation.
//!
//! Why not proptest's shrinking: proptest shrinks values it generated itself, through
//! the `ValueTree` of the strategy that drew them. A locksim counterexample is a
//! (scenario, seed) pair whose faults come from locksim's own nemesis and explicit
//! entries; re-expressing the nemesis as a proptest strategy would change every draw
//! (and so every history and every published seed). What fits is the classic algorithm
//! proptest's collection shrinking is a variant of: Zeller and Hildebrandt's ddmin
//! ("Simplifying and Isolating Failure-Inducing Input", TSE 2002) over the applied
//! schedule, followed by per-fault simplification. A run is deterministic given its
//! schedule ([`crate::run_with_schedule`]), so every step is exact, and the whole shrink
//! is deterministic.

use crate::check::{check_all, CheckParams, Verdict};
use crate::scenario::Scenario;
use crate::sim::{Fault, Schedule, TimedFault};
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a seed's schedule cannot be shrunk, or its scenario not written.
#[derive(Debug)]
pub enum ShrinkError {
    /// The run failed in the harness (no verdict to keep).
    Harness {
        /// The seed.
        seed: u64,
        /// The harness's error.
        error: String,
    },
    /// The seed does not violate the check asked for.
    NotViolated {
        /// The seed.
        seed: u64,
        /// The check asked for.
        check: String,
        /// The checks it violates.
        violated: Vec<String>,
    },
    /// The seed violates no check.
    NoViolation(u64),
    /// A violated check the scenario does not define.
    UnknownCheck(String),
    /// The original scenario's text is not TOML.
    Read(toml::de::Error),
    /// The shrunk scenario cannot be written as TOML.
    Write(toml::ser::Error),
}

impl fmt::Display for ShrinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShrinkError::Harness { seed, error } => {
                write!(f, "seed {seed}: the run failed in the harness: {error}")
            }
            ShrinkError::NotViolated {
                seed,
                check,
                violated,
            } => {
                write!(f, "seed {seed} does not violate `{check}`; it violates: ")?;
                if violated.is_empty() {
                    write!(f, "nothing")
                } else {
                    write!(f, "{}", violated.join(", "))
                }
            }
            ShrinkError::NoViolation(seed) => {
                write!(f, "seed {seed} violates no check: nothing to shrink")
            }
            ShrinkError::UnknownCheck(name) => write!(f, "unknown check `{name}`"),
            ShrinkError::Read(e) => write!(f, "{e}"),
            ShrinkError::Write(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ShrinkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ShrinkError::Read(e) => Some(e),
            ShrinkError::Write(e) => Some(e),
            _ => None,
        }
    }
}

/// What to shrink and how hard.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    /// The check that must stay violated (default: the first violated safety or liveness
    /// check; a quality check only by name).
    pub check: Option<String>,
    /// At most this many candidate runs.
    pub budget: usize,
}

impl Default for ShrinkOptions {
    fn default() -> Self {
        ShrinkOptions {
            check: None,
            budget: 400,
        }
    }
}

/// The outcome of a shrink.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The check kept violated.
    pub check: &'static str,
    /// The seed.
    pub seed: u64,
    /// The schedule the original run applied.
    pub original: Schedule,
    /// The smallest schedule found that still violates the check.
    pub schedule: Schedule,
    /// Candidate runs made.
    pub candidates: usize,
    /// Whether the budget ran out before no smaller candidate was left.
    pub budget_spent: bool,
    /// The original run's [`RunResult::escaped_tasks`](crate::RunResult::escaped_tasks):
    /// nodes whose tasks a pause did not freeze, which can make a shrunk schedule
    /// misleading.
    pub escaped_tasks: std::collections::BTreeMap<String, usize>,
}

/// Total time faults last, node-ms: each fault's length (pauses, partitions, crashes with
/// a restart; a clock jump has none) times the nodes it strikes.
pub fn fault_time_ms(s: &[TimedFault]) -> u64 {
    s.iter()
        .map(|f| f.fault.duration_ms().unwrap_or(0) * f.fault.nodes().len().max(1) as u64)
        .sum()
}

struct Search<'a> {
    scenario: &'a Scenario,
    seed: u64,
    check: &'static crate::check::Check,
    budget: usize,
    runs: usize,
    on_candidate: &'a mut dyn FnMut(usize, usize),
}

impl Search<'_> {
    /// Whether `schedule` still violates the check (false once the budget is spent).
    fn fails(&mut self, schedule: &[TimedFault]) -> bool {
        if self.runs >= self.budget {
            return false;
        }
        self.runs += 1;
        (self.on_candidate)(self.runs, schedule.len());
        let r = crate::run_with_schedule(self.scenario, self.seed, schedule.to_vec());
        if r.error.is_some() {
            return false;
        }
        let params = CheckParams {
            end_ns: r.end_ns,
            liveness_ns: self.scenario.liveness_ms * 1_000_000,
        };
        check_all(&r.history, params, &[self.check])[0].verdict == Verdict::Violated
    }

    /// ddmin: remove chunks of faults while the check stays violated.
    fn ddmin(&mut self, mut s: Schedule) -> Schedule {
        let mut n = 2usize;
        while s.len() >= 2 {
            let chunk = s.len().div_ceil(n);
            let mut reduced = false;
            for start in (0..s.len()).step_by(chunk) {
                let complement: Schedule = s[..start]
                    .iter()
                    .chain(s[(start + chunk).min(s.len())..].iter())
                    .cloned()
                    .collect();
                if self.fails(&complement) {
                    s = complement;
                    n = (n - 1).max(2);
                    reduced = true;
                    break;
                }
            }
            if !reduced {
                if n >= s.len() {
                    break;
                }
                n = (2 * n).min(s.len());
            }
        }
        if s.len() == 1 && self.fails(&[]) {
            return Vec::new();
        }
        s
    }

    /// Try `candidate` for fault `i`; keep it if the check stays violated.
    fn try_replace(&mut self, s: &mut Schedule, i: usize, candidate: TimedFault) -> bool {
        if s[i] == candidate {
            return false;
        }
        let mut next = s.clone();
        next[i] = candidate;
        if self.fails(&next) {
            *s = next;
            true
        } else {
            false
        }
    }

    /// Simplify each remaining fault: fewer nodes, shorter, smaller steps, rounder times.
    fn simplify(&mut self, mut s: Schedule) -> Schedule {
        for i in 0..s.len() {
            // Fewer nodes.
            while s[i].fault.nodes().len() > 1 {
                let k = s[i].fault.nodes().len();
                let shrunk = (0..k).find_map(|drop| {
                    let c = without_node(&s[i], drop);
                    let mut next = s.clone();
                    next[i] = c.clone();
                    self.fails(&next).then_some(c)
                });
                match shrunk {
                    Some(c) => s[i] = c,
                    None => break,
                }
            }
            // Shorter: halve the duration while the violation stays.
            while let Some(d) = s[i].fault.duration_ms().filter(|&d| d > 1) {
                let c = with_duration(&s[i], d / 2);
                if !self.try_replace(&mut s, i, c) {
                    break;
                }
            }
            // Smaller clock steps.
            while let Some(c) = halved_clock(&s[i]) {
                if !self.try_replace(&mut s, i, c) {
                    break;
                }
            }
            // Rounder times, for a readable schedule.
            for unit in [1000, 100, 10] {
                let t = s[i].at_ms / unit * unit;
                let c = TimedFault {
                    at_ms: t,
                    fault: s[i].fault.clone(),
                };
                if self.try_replace(&mut s, i, c) {
                    break;
                }
            }
        }
        s
    }
}

fn without_node(f: &TimedFault, drop: usize) -> TimedFault {
    let mut g = f.clone();
    let nodes = match &mut g.fault {
        Fault::Pause { nodes, .. }
        | Fault::Partition { nodes, .. }
        | Fault::ClockJump { nodes, .. }
        | Fault::Skew { nodes, .. }
        | Fault::Drift { nodes, .. }
        | Fault::Crash { nodes, .. }
        | Fault::DiskStall { nodes, .. }
        | Fault::Restart { nodes } => nodes,
        Fault::Heal {} => return g,
    };
    nodes.remove(drop);
    g
}

fn with_duration(f: &TimedFault, d: u64) -> TimedFault {
    let mut g = f.clone();
    match &mut g.fault {
        Fault::Pause { duration_ms, .. } | Fault::DiskStall { duration_ms, .. } => *duration_ms = d,
        Fault::Partition { duration_ms, .. } => *duration_ms = Some(d),
        Fault::Crash { down_ms, .. } => *down_ms = Some(d),
        _ => {}
    }
    g
}

fn halved_clock(f: &TimedFault) -> Option<TimedFault> {
    let mut g = f.clone();
    let v = match &mut g.fault {
        Fault::ClockJump { delta_ms: v, .. } | Fault::Skew { skew_ms: v, .. } => v,
        Fault::Drift { drift_ppm: v, .. } => v,
        _ => return None,
    };
    if v.abs() <= 1 {
        return None;
    }
    *v /= 2;
    Some(g)
}

/// Shrink the schedule of `seed`'s run of `scenario`. `on_candidate(runs, faults)` is
/// called before each candidate run (for progress). Errors: the seed violates nothing,
/// or not the named check.
pub fn shrink(
    scenario: &Scenario,
    seed: u64,
    opts: &ShrinkOptions,
    on_candidate: &mut dyn FnMut(usize, usize),
) -> Result<Shrunk, ShrinkError> {
    let run = crate::run(scenario, seed);
    if let Some(e) = &run.error {
        return Err(ShrinkError::Harness {
            seed,
            error: e.clone(),
        });
    }
    let reports = crate::check_run(scenario, &run);
    let violated: Vec<&str> = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Violated)
        .map(|r| r.name)
        .collect();
    let name = match &opts.check {
        Some(c) if violated.contains(&c.as_str()) => c.clone(),
        Some(c) => {
            return Err(ShrinkError::NotViolated {
                seed,
                check: c.clone(),
                violated: violated.iter().map(|v| v.to_string()).collect(),
            })
        }
        // By default a violation of what the lock promises; a quality check (`fair`)
        // only when asked for by name.
        None => match reports.iter().find(|r| r.is_violation()) {
            Some(c) => c.name.to_string(),
            None => return Err(ShrinkError::NoViolation(seed)),
        },
    };
    let check = scenario
        .checks()
        .into_iter()
        .find(|c| c.name == name)
        .ok_or(ShrinkError::UnknownCheck(name))?;
    let mut search = Search {
        scenario,
        seed,
        check,
        budget: opts.budget,
        runs: 0,
        on_candidate,
    };
    let original = run.schedule.clone();
    // Simplifying one fault changes the run's timing, which can make another fault
    // unnecessary: alternate until neither step changes anything (or the budget ends).
    let mut schedule = original.clone();
    loop {
        let before = schedule.clone();
        schedule = search.ddmin(schedule);
        schedule = search.simplify(schedule);
        if schedule == before || search.runs >= search.budget {
            break;
        }
    }
    Ok(Shrunk {
        check: check.name,
        seed,
        original,
        schedule,
        candidates: search.runs,
        budget_spent: search.runs >= search.budget,
        escaped_tasks: run.escaped_tasks,
    })
}

/// A scenario file (TOML) for `shrunk`, to be written into `out_dir`: the original
/// scenario's text with its random faults removed, the shrunk schedule as
/// `[[faults.at]]`, `[expect]` naming the check as violated, and relative file paths
/// rewritten to name the same files from `out_dir`.
pub fn scenario_text(
    original: &str,
    scenario: &Scenario,
    shrunk: &Shrunk,
    out_dir: &Path,
) -> Result<String, ShrinkError> {
    let mut table: toml::Table = toml::from_str(original).map_err(ShrinkError::Read)?;
    let from_dir = scenario.file.parent().unwrap_or(Path::new(""));
    rebase_script_paths(&mut table, from_dir, out_dir);
    table.insert(
        "name".into(),
        format!("{}-shrunk-seed-{}", scenario.name, shrunk.seed).into(),
    );
    table.insert(
        "description".into(),
        format!(
            "Shrunk from {} seed {}: `{}` is violated with {} fault(s) (the run applied {}). Run it with --seed {}.",
            scenario.file.display(),
            shrunk.seed,
            shrunk.check,
            shrunk.schedule.len(),
            shrunk.original.len(),
            shrunk.seed
        )
        .into(),
    );
    let mut faults = toml::Table::new();
    let entries: Vec<toml::Value> = shrunk
        .schedule
        .iter()
        .map(toml::Value::try_from)
        .collect::<Result<_, _>>()
        .map_err(ShrinkError::Write)?;
    if !entries.is_empty() {
        faults.insert("at".into(), toml::Value::Array(entries));
    }
    table.insert("faults".into(), toml::Value::Table(faults));
    let mut expect = toml::Table::new();
    expect.insert(shrunk.check.into(), "violated".into());
    table.insert("expect".into(), toml::Value::Table(expect));
    toml::to_string(&table).map_err(ShrinkError::Write)
}

/// Rewrite the relative paths under `[lock.scripts]` (the only keys that name files,
/// relative to the scenario's folder) so that, read from `to_dir`, they name the files
/// they named from `from_dir`.
fn rebase_script_paths(table: &mut toml::Table, from_dir: &Path, to_dir: &Path) {
    let Some(toml::Value::Table(scripts)) = table
        .get_mut("lock")
        .and_then(|l| l.as_table_mut())
        .and_then(|l| l.get_mut("scripts"))
    else {
        return;
    };
    for (_, value) in scripts.iter_mut() {
        if let toml::Value::String(rel) = value {
            if Path::new(rel.as_str()).is_relative() {
                let rebased = relative_path(&from_dir.join(rel.as_str()), to_dir);
                *rel = rebased.display().to_string();
            }
        }
    }
}

/// `file` as seen from `dir`: relative when both folders resolve, absolute otherwise.
fn relative_path(file: &Path, dir: &Path) -> PathBuf {
    let resolve = |p: &Path| {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        p.canonicalize()
    };
    let (Some(name), Ok(file_dir), Ok(dir)) = (
        file.file_name(),
        resolve(file.parent().unwrap_or(Path::new(""))),
        resolve(dir),
    ) else {
        return std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    };
    let common = file_dir
        .components()
        .zip(dir.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = PathBuf::new();
    for _ in dir.components().skip(common) {
        out.push("..");
    }
    out.extend(file_dir.components().skip(common));
    out.push(name);
    out
}
