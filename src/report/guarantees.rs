//! The guarantees matrix's results, as the report files state them: per cell and check
//! how many of N seeds violated it (and the first that did, with its replay command and
//! timeline), or, when none did, the 95% upper bound on the violation rate; checks that
//! cannot apply to a cell are set apart with the reason. Built from the counts of a
//! complete [`Partial`] (one machine's, or shards merged): the same counts give the same
//! files byte for byte.

use super::error::ReportError;
use super::evidence::upper_bound_95;
use super::matrix::Matrix;
use super::partial::{CellCounts, Counts, Partial};
use super::timeline::{draw as draw_timeline, Drawing};
use crate::check::CheckKind;
use crate::locks::Family;
use crate::metrics::{Latencies, MetricsTotals, TrafficCost};
use crate::scenario::Scenario;
use crate::sweep::run_seed;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// One check's result in one cell.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CheckCell {
    /// Seeds that violated it.
    pub violations: u64,
    /// Seeds on which the checker gave up (time budget).
    pub unknown: u64,
    /// The first violating seed.
    pub first_seed: Option<u64>,
    /// When no seed violated it or left it undecided: the one-sided 95% upper bound on
    /// the per-seed violation rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upper_bound_95: Option<f64>,
    /// The command that replays the first violation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// Where the first violation's timeline is, relative to the output folder:
    /// `timelines/<cell>.html#<cell>--<check>` (`index.html#<cell>--<check>` lists it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<String>,
}

/// One cell's results.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CellResult {
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
    /// Results per applicable check.
    pub checks: BTreeMap<String, CheckCell>,
    /// Checks that cannot say anything about this cell, with the reason.
    pub not_applicable: BTreeMap<String, String>,
    /// Results per quality check (`fair`, `reentrant`): how the lock queues and re-enters,
    /// not what it promises.
    pub quality: BTreeMap<String, CheckCell>,
    /// What the lock cost, over all seeds, in simulated time.
    pub cost: Cost,
    /// Seeds whose run failed inside the harness.
    pub harness_errors: u64,
    /// The first such seed's error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
    /// The locksim build that computed these counts (see [`super::source_stamp`]).
    pub counted_by: String,
}

/// What a cell's lock cost over all its seeds, in simulated time (see [`crate::metrics`]):
/// functions of the links the matrix describes, not of the machine that ran it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Cost {
    /// Granted acquires.
    pub grants: u64,
    /// Grants per simulated second.
    pub grants_per_s: f64,
    /// Fraction of the time with a client waiting for the lock and nobody holding it.
    pub unavailable: f64,
    /// Acquire latency (invoke to grant) percentiles, ms: all, uncontended, contended.
    pub latency_ms: Latencies,
    /// FIFO inversions (a grant overtaking a waiter that asked earlier), all seeds.
    pub fifo_inversions: u64,
    /// The most waiters one grant overtook, on any seed.
    pub max_bypass: u64,
    /// TCP data the hosts sent each other, in all and per grant.
    pub traffic: TrafficCost,
}

impl Cost {
    fn of(m: &MetricsTotals) -> Cost {
        Cost {
            grants: m.grants,
            grants_per_s: m.grants_per_s,
            unavailable: m.unavailable,
            latency_ms: m.latency_ms.clone(),
            fifo_inversions: m.fifo_inversions,
            max_bypass: m.max_bypass,
            traffic: m.traffic.clone(),
        }
    }
}

/// What a cell's results are made from: counts computed now ([`CellCounts`]), or taken
/// from an earlier report ([`super::reuse`]).
#[derive(Debug, Clone)]
pub(crate) struct Tallies {
    /// `<row>--<column>--<fenced|unfenced>` in the matrix reported.
    pub cell: String,
    /// Seeds run.
    pub seeds: u64,
    /// Per safety and liveness check.
    pub checks: BTreeMap<String, Counts>,
    /// Per quality check.
    pub quality: BTreeMap<String, Counts>,
    /// What the lock cost.
    pub cost: Cost,
    /// Seeds whose run failed inside the harness.
    pub harness_errors: u64,
    /// The first such seed's error, `seed N: message`.
    pub first_error: Option<String>,
    /// The build that counted them.
    pub counted_by: String,
}

impl Tallies {
    /// Counts a build (`stamp`) computed.
    fn of(c: &CellCounts, stamp: &str) -> Tallies {
        Tallies {
            cell: c.cell.clone(),
            seeds: c.seeds,
            checks: c.checks.clone(),
            quality: c.quality.clone(),
            cost: Cost::of(&c.metrics),
            harness_errors: c.harness_errors,
            first_error: c
                .first_error
                .as_ref()
                .map(|(seed, e)| format!("seed {seed}: {e}")),
            counted_by: stamp.to_string(),
        }
    }
}

/// One counterexample picture: a run (a cell's seed) that is the first to violate one
/// or more of the cell's checks, every violated check marked.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Timeline {
    /// Its anchor on its page: `<cell>--seed-<seed>`.
    pub id: String,
    /// The cell.
    pub cell: String,
    /// The checks whose first violation in the cell is at this seed, in report order;
    /// each is also anchored on the page as `<cell>--<check>`.
    pub checks: Vec<String>,
    /// The seed.
    pub seed: u64,
    /// The command that replays it.
    pub replay: String,
    /// Its page, relative to the output folder: `timelines/<cell>.html`.
    pub page: String,
    /// The picture and its words; `None` when the seed failed inside the harness.
    #[serde(skip)]
    pub drawing: Option<Drawing>,
}

/// A check as the report defines it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CheckInfo {
    /// Its name.
    pub name: String,
    /// What it checks.
    pub about: String,
}

/// The whole matrix's results.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Guarantees {
    /// The locksim build(s) that computed the counts (commit and its date), each with
    /// the rows it counted: one build when the whole matrix ran at once; more when
    /// cells were taken from earlier reports (`--reuse`).
    pub counted_by: Vec<CountedBy>,
    /// The build that wrote these files and re-ran the first seeds for the timelines.
    pub rendered_by: String,
    /// The command that regenerates these files.
    pub command: String,
    /// Seeds per cell.
    pub seeds: u64,
    /// Simulated duration per seed, ms.
    pub duration_ms: u64,
    /// The first part of each seed in which faults strike, ms (the rest is the
    /// liveness window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault_window_ms: Option<u64>,
    /// The checks, in report order.
    pub checks: Vec<CheckInfo>,
    /// The quality checks (`fair`, `reentrant`), in report order.
    pub quality_checks: Vec<CheckInfo>,
    /// Rows: (name, algorithm, why).
    pub rows: Vec<RowInfo>,
    /// Columns: (name, what they inject).
    pub columns: Vec<ColumnInfo>,
    /// Every cell, row by row.
    pub cells: Vec<CellResult>,
    /// Every counterexample picture, cell by cell.
    pub timelines: Vec<Timeline>,
}

/// One build that computed counts, and the rows whose cells it computed.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CountedBy {
    /// The build (see [`super::source_stamp`]).
    pub locksim: String,
    /// Rows with at least one cell it computed, in the matrix's order.
    pub rows: Vec<String>,
    /// How many cells it computed.
    pub cells: usize,
}

/// A row as reported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RowInfo {
    /// Label.
    pub name: String,
    /// Algorithm.
    pub algorithm: String,
    /// Its `[lock]` parameters.
    pub lock: toml::Table,
    /// Why it holds or breaks (the matrix file's words).
    pub why: String,
    /// Names it had before, whose anchors still lead to it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub formerly: Vec<String>,
    /// How its algorithm's model is checked against the real server, if the matrix says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fidelity: Option<String>,
}

/// A column as reported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ColumnInfo {
    /// Label.
    pub name: String,
    /// What it injects.
    pub about: String,
    /// Whether its clients re-acquire the lock they hold (`workload.reentrant`): the
    /// column where the `reentrant` check is exercised.
    pub reentrant: bool,
}

/// Cells taken from earlier reports, and the files they came from (for the command).
#[derive(Debug, Clone, Default)]
pub(crate) struct Reused {
    /// The stored report files given to `--reuse`.
    pub files: Vec<std::path::PathBuf>,
    /// Their cells, by stem.
    pub cells: BTreeMap<String, Tallies>,
}

/// Build the results of a complete partial (shard 1 of 1) and the `reused` cells it
/// lacks, writing the cells' scenario files under `out/cells/` and re-running each
/// violated check's first seed for its timeline. The rows' algorithms are among
/// `families`; `program` is the binary the commands shown name (`locksim`, or a user's
/// binary that knows their families). `on_timeline(done, total)` reports.
pub(crate) fn build(
    p: &Partial,
    reused: &Reused,
    out: &Path,
    families: &[Family],
    program: &str,
    on_timeline: &(dyn Fn(usize, usize) + Sync),
) -> Result<Guarantees, ReportError> {
    let m = p.matrix()?;
    let tallies = all_tallies(&m, p, reused)?;
    let scenarios = m.write_cells(out, families)?;
    let out_text = out.display().to_string();
    let out_text = out_text.trim_end_matches('/');
    let replay = |stem: &str, seed: u64| {
        format!("{program} replay {out_text}/cells/{stem}.toml --seed {seed}")
    };
    let mut cells = Vec::new();
    let mut wanted = Vec::new();
    for ((stem, scenario), counts) in scenarios.iter().zip(&tallies) {
        let cell = cell_result(&m, scenario, counts, &replay)?;
        wanted.extend(timeline_groups(&cell).into_iter().map(|g| (scenario, g)));
        cells.push((stem, cell));
    }
    let timelines = draw(&wanted, &replay, on_timeline);
    let cells: Vec<CellResult> = cells.into_iter().map(|(_, c)| c).collect();
    let reuse: String = reused
        .files
        .iter()
        .map(|f| format!(" --reuse {}", f.display()))
        .collect();
    Ok(Guarantees {
        counted_by: counted_by(&cells),
        rendered_by: super::source_stamp(),
        command: format!(
            "{program} report --matrix {} --seeds {}{reuse}",
            p.matrix_file, p.seeds
        ),
        seeds: p.seeds,
        duration_ms: m.duration_ms,
        fault_window_ms: m.liveness_ms.map(|l| m.duration_ms.saturating_sub(l)),
        checks: check_infos(&scenarios, CheckKind::counts_as_violation),
        quality_checks: check_infos(&scenarios, |k| !k.counts_as_violation()),
        rows: m.rows.iter().map(|r| RowInfo::of(r, &m)).collect(),
        columns: m
            .columns
            .iter()
            .map(|c| ColumnInfo {
                name: c.name.clone(),
                about: c.about.clone(),
                reentrant: c.workload.get("reentrant") == Some(&toml::Value::Boolean(true)),
            })
            .collect(),
        cells,
        timelines,
    })
}

/// Every cell's tallies in the matrix's order: computed (the partial's, in order) or
/// reused. A cell in neither, or a partial naming other cells, is an error.
fn all_tallies(m: &Matrix, p: &Partial, reused: &Reused) -> Result<Vec<Tallies>, ReportError> {
    let stems: Vec<String> = m.cells().iter().map(|c| c.stem(m)).collect();
    let mut computed = p.cells.iter();
    let mut v = Vec::new();
    for stem in &stems {
        if let Some(t) = reused.cells.get(stem) {
            v.push(t.clone());
            continue;
        }
        match computed.next() {
            Some(c) if c.cell == *stem => v.push(Tallies::of(c, &p.locksim)),
            _ => {
                return Err(ReportError::CellCount {
                    counts: p.cells.len() + reused.cells.len(),
                    matrix: stems.len(),
                })
            }
        }
    }
    if computed.next().is_some() {
        return Err(ReportError::CellCount {
            counts: p.cells.len() + reused.cells.len(),
            matrix: stems.len(),
        });
    }
    Ok(v)
}

/// The builds that counted `cells`, each with its rows: the build that counted most
/// cells first.
fn counted_by(cells: &[CellResult]) -> Vec<CountedBy> {
    let mut v: Vec<CountedBy> = Vec::new();
    for c in cells {
        let i = match v.iter().position(|b| b.locksim == c.counted_by) {
            Some(i) => i,
            None => {
                v.push(CountedBy {
                    locksim: c.counted_by.clone(),
                    rows: Vec::new(),
                    cells: 0,
                });
                v.len() - 1
            }
        };
        v[i].cells += 1;
        if !v[i].rows.contains(&c.row) {
            v[i].rows.push(c.row.clone());
        }
    }
    v.sort_by_key(|b| std::cmp::Reverse(b.cells));
    v
}

/// Every check of the kinds `wanted` some cell runs: the standard ones in report order,
/// then the families' own in order of appearance.
fn check_infos(scenarios: &[(String, Scenario)], wanted: fn(CheckKind) -> bool) -> Vec<CheckInfo> {
    let mut v: Vec<CheckInfo> = Vec::new();
    let all = crate::check::STANDARD
        .iter()
        .copied()
        .chain(scenarios.iter().flat_map(|(_, s)| s.checks()));
    for c in all.filter(|c| wanted(c.kind)) {
        if !v.iter().any(|i| i.name == c.name) {
            v.push(CheckInfo {
                name: c.name.to_string(),
                about: c.about.to_string(),
            });
        }
    }
    v
}

impl RowInfo {
    fn of(r: &super::matrix::Row, m: &Matrix) -> RowInfo {
        RowInfo {
            name: r.name.clone(),
            algorithm: r.algorithm.clone(),
            lock: r.lock.clone(),
            why: r.why.trim().to_string(),
            formerly: r.formerly.clone(),
            fidelity: m.fidelity.get(&r.algorithm).cloned(),
        }
    }
}

/// One cell's results from its counts: applicable checks with their evidence, the
/// others with the reason. A check said not to apply that was violated anyway stays
/// (something is wrong, and the report must show it, not hide it).
fn cell_result(
    m: &Matrix,
    scenario: &Scenario,
    counts: &Tallies,
    replay: &dyn Fn(&str, u64) -> String,
) -> Result<CellResult, ReportError> {
    let cell = m
        .cells()
        .into_iter()
        .find(|c| c.stem(m) == counts.cell)
        .ok_or_else(|| ReportError::UnknownCell(counts.cell.clone()))?;
    let na = scenario.not_applicable();
    let mut checks = BTreeMap::new();
    let mut not_applicable = BTreeMap::new();
    for (name, c) in &counts.checks {
        if let Some(why) =
            Scenario::shown_not_applicable(na.get(name.as_str()), c.violations, c.unknown)
        {
            not_applicable.insert(name.clone(), why.clone());
            continue;
        }
        let clean = c.violations == 0 && c.unknown == 0;
        let stem = &counts.cell;
        checks.insert(
            name.clone(),
            CheckCell {
                violations: c.violations,
                unknown: c.unknown,
                first_seed: c.first_seed,
                upper_bound_95: clean.then(|| upper_bound_95(counts.seeds)),
                replay: c.first_seed.map(|s| replay(stem, s)),
                timeline: c
                    .first_seed
                    .map(|_| format!("{}#{}", timeline_page(stem), anchor(stem, name))),
            },
        );
    }
    for (name, why) in na {
        if !counts.checks.contains_key(name) && !counts.quality.contains_key(name) {
            not_applicable.insert(name.to_string(), why);
        }
    }
    let quality = counts
        .quality
        .iter()
        .map(|(name, c)| {
            let clean = c.violations == 0 && c.unknown == 0;
            let cell = CheckCell {
                violations: c.violations,
                unknown: c.unknown,
                first_seed: c.first_seed,
                upper_bound_95: clean.then(|| upper_bound_95(counts.seeds)),
                replay: c.first_seed.map(|s| replay(&counts.cell, s)),
                // Quality breaks are not drawn: a racing lock breaks `fair` on most seeds.
                timeline: None,
            };
            (name.clone(), cell)
        })
        .collect();
    Ok(CellResult {
        name: counts.cell.clone(),
        row: m.rows[cell.row].name.clone(),
        column: m.columns[cell.column].name.clone(),
        fencing: cell.fencing,
        scenario: format!("cells/{}.toml", counts.cell),
        seeds: counts.seeds,
        checks,
        not_applicable,
        quality,
        cost: counts.cost.clone(),
        harness_errors: counts.harness_errors,
        first_error: counts.first_error.clone(),
        counted_by: counts.counted_by.clone(),
    })
}

/// The anchor of a check's first violation in a cell (on the cell's timeline page, and
/// in `index.html`'s list of counterexamples).
pub(crate) fn anchor(cell: &str, check: &str) -> String {
    format!("{cell}--{check}")
}

/// The page of a cell's timelines, relative to the output folder.
pub(crate) fn timeline_page(cell: &str) -> String {
    format!("timelines/{cell}.html")
}

/// A picture to draw: a seed of a cell, first to violate `checks`.
struct Wanted {
    cell: String,
    seed: u64,
    checks: Vec<String>,
}

/// A cell's violated checks, in report order, grouped by their first violating seed
/// (groups in the order of their first check): one picture per run.
fn timeline_groups(cell: &CellResult) -> Vec<Wanted> {
    let standard = crate::check::STANDARD.iter().map(|c| c.name.to_string());
    let own = cell
        .checks
        .keys()
        .filter(|k| crate::check::STANDARD.iter().all(|c| c.name != k.as_str()))
        .cloned();
    let mut groups: Vec<Wanted> = Vec::new();
    for check in standard.chain(own) {
        let Some(seed) = cell.checks.get(&check).and_then(|c| c.first_seed) else {
            continue;
        };
        match groups.iter_mut().find(|g| g.seed == seed) {
            Some(g) => g.checks.push(check),
            None => groups.push(Wanted {
                cell: cell.name.clone(),
                seed,
                checks: vec![check],
            }),
        }
    }
    groups
}

/// Re-run each picture's seed once and draw it, zoomed on its checks' first violations.
fn draw(
    wanted: &[(&Scenario, Wanted)],
    replay: &dyn Fn(&str, u64) -> String,
    on_timeline: &(dyn Fn(usize, usize) + Sync),
) -> Vec<Timeline> {
    let mut out = Vec::new();
    for (i, (scenario, Wanted { cell, seed, checks })) in wanted.iter().enumerate() {
        on_timeline(i, wanted.len());
        let (result, outcome) = run_seed(scenario, *seed);
        let focus: Vec<&str> = checks.iter().map(String::as_str).collect();
        let drawing = result.map(|r| draw_timeline(&r.history, &outcome.checks, &focus, r.end_ns));
        out.push(Timeline {
            id: format!("{cell}--seed-{seed}"),
            cell: cell.clone(),
            checks: checks.clone(),
            seed: *seed,
            replay: replay(cell, *seed),
            page: timeline_page(cell),
            drawing,
        });
    }
    on_timeline(wanted.len(), wanted.len());
    out
}

impl Guarantees {
    /// The cell of (row, column, fencing).
    pub(crate) fn cell(&self, row: &str, column: &str, fencing: bool) -> Option<&CellResult> {
        self.cells
            .iter()
            .find(|c| c.row == row && c.column == column && c.fencing == fencing)
    }

    /// Every check some cell runs, in report order (one table each).
    pub(crate) fn check_names(&self) -> Vec<String> {
        self.checks.iter().map(|c| c.name.clone()).collect()
    }

    /// The fencing settings the matrix ran, in order.
    pub(crate) fn fencing_settings(&self) -> Vec<bool> {
        let mut v: Vec<bool> = Vec::new();
        for c in &self.cells {
            if !v.contains(&c.fencing) {
                v.push(c.fencing);
            }
        }
        v
    }
}
