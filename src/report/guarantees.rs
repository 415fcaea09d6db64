//! Running the guarantees matrix: every cell is a scenario swept over the same seeds; the
//! result per cell and check is how many seeds violated it and the first that did (with
//! its replay command and a timeline picture).

use super::matrix::Matrix;
use super::timeline::timeline_svg;
use crate::check::Verdict;
use crate::scenario::Scenario;
use crate::sweep::{run_seed, sweep, Tally};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One check's result in one cell.
#[derive(Debug, Clone, Serialize)]
pub struct CheckCell {
    /// Seeds that violated it.
    pub violations: u64,
    /// Seeds on which the checker gave up (time budget).
    pub unknown: u64,
    /// The first violating seed.
    pub first_seed: Option<u64>,
    /// The command that replays the first violation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}

/// One cell's results.
#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    /// `<row>--<column>--<fenced|unfenced>`.
    pub name: String,
    /// Row label.
    pub row: String,
    /// Column label.
    pub column: String,
    /// Whether clients send fencing tokens.
    pub fencing: bool,
    /// The cell's scenario file, relative to the output folder.
    pub scenario: String,
    /// Seeds run.
    pub seeds: u64,
    /// Results per check (only the checks defined for the algorithm).
    pub checks: BTreeMap<String, CheckCell>,
    /// Seeds whose run failed inside the harness.
    pub harness_errors: u64,
    /// The first violating seed's timeline (SVG), for the HTML page.
    #[serde(skip)]
    pub timeline: Option<String>,
}

impl CellResult {
    /// Whether `check` held on every seed (None: not defined for this algorithm).
    pub fn holds(&self, check: &str) -> Option<bool> {
        self.checks
            .get(check)
            .map(|c| c.violations == 0 && c.unknown == 0)
    }
}

/// The whole matrix's results.
#[derive(Debug, Clone, Serialize)]
pub struct Guarantees {
    /// Seeds per cell.
    pub seeds: u64,
    /// Simulated duration per seed, ms.
    pub duration_ms: u64,
    /// Rows: (name, algorithm, why).
    pub rows: Vec<RowInfo>,
    /// Columns: (name, what they inject).
    pub columns: Vec<ColumnInfo>,
    /// Every cell, row by row.
    pub cells: Vec<CellResult>,
    /// Wall-clock seconds it took.
    pub wall_s: f64,
}

/// A row as reported.
#[derive(Debug, Clone, Serialize)]
pub struct RowInfo {
    /// Label.
    pub name: String,
    /// Algorithm.
    pub algorithm: String,
    /// Its `[lock]` parameters.
    pub lock: toml::Table,
    /// Why it holds or breaks.
    pub why: String,
}

/// A column as reported.
#[derive(Debug, Clone, Serialize)]
pub struct ColumnInfo {
    /// Label.
    pub name: String,
    /// What it injects.
    pub about: String,
}

/// Run every cell of `m` with `seeds` seeds on `jobs` threads, writing each cell's
/// scenario under `out/cells/`. `on_progress(seeds done, seeds total, cell)` reports.
pub fn run_matrix(
    m: &Matrix,
    seeds: u64,
    out: &Path,
    jobs: usize,
    on_progress: &(dyn Fn(u64, u64, &str) + Sync),
) -> Result<Guarantees, String> {
    let start = std::time::Instant::now();
    let cells_dir = out.join("cells");
    std::fs::create_dir_all(&cells_dir)
        .map_err(|e| format!("{}: cannot create: {e}", cells_dir.display()))?;
    let cells = m.cells();
    let total = cells.len() as u64 * seeds;
    let seed_list: Vec<u64> = (0..seeds).collect();
    let mut results = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        let stem = cell.stem(m);
        let file = cells_dir.join(format!("{stem}.toml"));
        std::fs::write(&file, m.scenario_text(cell))
            .map_err(|e| format!("{}: cannot write: {e}", file.display()))?;
        let scenario = Scenario::load(&file).map_err(|e| e.to_string())?;
        let done = std::sync::atomic::AtomicU64::new(i as u64 * seeds);
        let outcomes = sweep(&scenario, &seed_list, jobs, &|_| {
            let d = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            on_progress(d, total, &stem);
        });
        let mut tally = Tally::new(&scenario);
        for o in &outcomes {
            tally.add(o);
        }
        let summary = tally.summary(0.0, false);
        let rel = format!("cells/{stem}.toml");
        let checks = summary
            .checks
            .iter()
            .map(|(name, t)| {
                let replay = t.first_seed.map(|s| {
                    format!(
                        "locksim replay {}/{rel} --seed {s}",
                        out.display().to_string().trim_end_matches('/')
                    )
                });
                let c = CheckCell {
                    violations: t.violations,
                    unknown: t.unknown,
                    first_seed: t.first_seed,
                    replay,
                };
                (name.clone(), c)
            })
            .collect();
        let timeline = summary.first_violation_seed.and_then(|seed| {
            let (result, outcome) = run_seed(&scenario, seed);
            result.map(|r| {
                let heading = format!("{stem}, seed {seed}");
                let focus = super::timeline::first_violated(&outcome.checks);
                timeline_svg(&r.history, &outcome.checks, focus, r.end_ns, &heading)
            })
        });
        results.push(CellResult {
            name: stem,
            row: m.rows[cell.row].name.clone(),
            column: m.columns[cell.column].name.clone(),
            fencing: cell.fencing,
            scenario: rel,
            seeds,
            checks,
            harness_errors: outcomes.iter().filter(|o| o.error.is_some()).count() as u64,
            timeline,
        });
    }
    Ok(Guarantees {
        seeds,
        duration_ms: m.duration_ms,
        rows: m
            .rows
            .iter()
            .map(|r| RowInfo {
                name: r.name.clone(),
                algorithm: r.algorithm.clone(),
                lock: r.lock.clone(),
                why: r.why.trim().to_string(),
            })
            .collect(),
        columns: m
            .columns
            .iter()
            .map(|c| ColumnInfo {
                name: c.name.clone(),
                about: c.about.clone(),
            })
            .collect(),
        cells: results,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

impl Guarantees {
    /// The cell of (row, column, fencing).
    pub fn cell(&self, row: &str, column: &str, fencing: bool) -> Option<&CellResult> {
        self.cells
            .iter()
            .find(|c| c.row == row && c.column == column && c.fencing == fencing)
    }

    /// Every check name that appears in some cell, in the standard order first.
    pub fn check_names(&self) -> Vec<String> {
        let mut names: Vec<String> = crate::check::STANDARD
            .iter()
            .map(|c| c.name.to_string())
            .filter(|n| self.cells.iter().any(|c| c.checks.contains_key(n)))
            .collect();
        for c in &self.cells {
            for n in c.checks.keys() {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        names
    }

    /// Whether `verdict` is what a cell's `check` says (helper for tests and writers).
    pub fn verdict(&self, row: &str, column: &str, fencing: bool, check: &str) -> Option<Verdict> {
        let c = self.cell(row, column, fencing)?.checks.get(check)?;
        Some(if c.violations > 0 {
            Verdict::Violated
        } else if c.unknown > 0 {
            Verdict::Unknown
        } else {
            Verdict::Holds
        })
    }
}
