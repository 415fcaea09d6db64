//! The counts behind the guarantees matrix, computed on one machine or many. A
//! [`Partial`] is shard `k` of `n` of every cell's seeds (every `n`-th seed, starting at
//! `k - 1`); [`merge`] adds the shards of one matrix back up. A single-machine run is
//! shard 1 of 1, so it and a merge of any sharding produce the same counts, and hence
//! the same report files byte for byte.

use super::error::{Difference, ReportError};
use super::matrix::Matrix;
use crate::check::Verdict;
use crate::locks::Family;
use crate::metrics::MetricsTotals;
use crate::scenario::Scenario;
use crate::sweep::{sweep, SeedOutcome, SeedSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The `format` a partial file carries; merge refuses any other.
pub(crate) const PARTIAL_FORMAT: &str = "locksim-report-partial/3";

/// One check's verdicts over some seeds of one cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Counts {
    /// Seeds that violated it.
    pub violations: u64,
    /// Seeds on which the checker gave up (time budget): neither verdict.
    pub unknown: u64,
    /// The lowest violating seed.
    pub first_seed: Option<u64>,
}

impl Counts {
    /// Count one seed's verdict.
    fn add(&mut self, seed: u64, verdict: Verdict) {
        match verdict {
            Verdict::Violated => {
                self.violations += 1;
                self.first_seed = Some(self.first_seed.map_or(seed, |s| s.min(seed)));
            }
            Verdict::Unknown => self.unknown += 1,
            Verdict::Holds => {}
        }
    }

    /// Add another shard's counts of the same check.
    fn merge(&mut self, other: &Counts) {
        self.violations += other.violations;
        self.unknown += other.unknown;
        self.first_seed = match (self.first_seed, other.first_seed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
}

/// One cell's counts over the seeds a shard ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CellCounts {
    /// The cell's name, `<row>--<column>--<fenced|unfenced>`.
    pub cell: String,
    /// Seeds run.
    pub seeds: u64,
    /// Per safety and liveness check defined for the algorithm.
    pub checks: BTreeMap<String, Counts>,
    /// Per quality check (`fair`, `reentrant`): what people compare locks by, reported
    /// apart from what the lock promises.
    pub quality: BTreeMap<String, Counts>,
    /// What the lock cost over these seeds (sums and histograms: shards add up exactly).
    pub metrics: MetricsTotals,
    /// Seeds whose run failed inside the harness.
    pub harness_errors: u64,
    /// The lowest such seed and its error.
    pub first_error: Option<(u64, String)>,
}

impl CellCounts {
    /// Count a sweep's outcomes.
    fn from_outcomes(cell: String, scenario: &Scenario, outcomes: &[SeedOutcome]) -> CellCounts {
        // What locks promise (safety, liveness) and what people compare them by
        // (quality) are counted apart: the report tables them apart.
        let (mut checks, mut quality) = (BTreeMap::new(), BTreeMap::new());
        for c in scenario.checks() {
            let counts = if c.kind.counts_as_violation() {
                &mut checks
            } else {
                &mut quality
            };
            counts.insert(c.name.to_string(), Counts::default());
        }
        let mut metrics = MetricsTotals::default();
        let mut errors = outcomes.iter().filter(|o| o.error.is_some());
        let first_error = errors.clone().min_by_key(|o| o.seed);
        for o in outcomes {
            for c in &o.checks {
                let counts = if c.kind.counts_as_violation() {
                    &mut checks
                } else {
                    &mut quality
                };
                counts
                    .entry(c.name.to_string())
                    .or_default()
                    .add(o.seed, c.verdict);
            }
            if let Some(m) = &o.metrics {
                metrics.add(m);
            }
        }
        CellCounts {
            cell,
            seeds: outcomes.len() as u64,
            checks,
            quality,
            metrics,
            first_error: first_error.map(|o| (o.seed, o.error.clone().unwrap_or_default())),
            harness_errors: errors.by_ref().count() as u64,
        }
    }
}

/// What one machine computed: its shard of every cell's seeds, with everything a merge
/// needs to check that the shards belong together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Partial {
    /// [`PARTIAL_FORMAT`].
    pub format: String,
    /// The locksim build (see [`super::source_stamp`]): shards of different builds may
    /// simulate differently, so they do not merge.
    pub locksim: String,
    /// The matrix file as given on the command line.
    pub matrix_file: String,
    /// The matrix file's text.
    pub matrix: String,
    /// Seeds per cell over all shards (seeds `0..seeds`).
    pub seeds: u64,
    /// `[k, n]`: this is shard k of n.
    pub shard: [u64; 2],
    /// Every cell, in the matrix's order.
    pub cells: Vec<CellCounts>,
}

impl Partial {
    /// The matrix this partial was computed from.
    pub(crate) fn matrix(&self) -> Result<Matrix, ReportError> {
        Matrix::parse(&self.matrix, Path::new(&self.matrix_file))
    }

    /// The file name a shard writes: `partial-K-of-N.json`.
    pub(crate) fn file_name(&self) -> String {
        format!("partial-{}-of-{}.json", self.shard[0], self.shard[1])
    }
}

/// What [`compute`] needs besides the matrix.
pub(crate) struct ComputeSpec<'a> {
    /// The matrix file as given (recorded, and read by the merge).
    pub matrix_file: &'a Path,
    /// Seeds per cell over all shards.
    pub seeds: u64,
    /// `(k, n)`: compute shard k of n.
    pub shard: (u64, u64),
    /// Worker threads.
    pub jobs: usize,
    /// Where the cells' scenario files go (`<out>/cells/`).
    pub out: &'a Path,
    /// The algorithms the rows may name.
    pub families: &'a [Family],
    /// Cells not to run (taken from an earlier report instead), by stem.
    pub skip: &'a std::collections::BTreeSet<String>,
}

/// Run shard `spec.shard` of every cell of the matrix in `spec.matrix_file`.
/// `on_progress(seeds done, seeds total, cell)` reports.
pub(crate) fn compute(
    spec: &ComputeSpec,
    on_progress: &(dyn Fn(u64, u64, &str) + Sync),
) -> Result<Partial, ReportError> {
    let text = std::fs::read_to_string(spec.matrix_file)
        .map_err(|e| ReportError::ReadFile(spec.matrix_file.to_path_buf(), e))?;
    let m = Matrix::parse(&text, spec.matrix_file)?;
    let (k, n) = spec.shard;
    let seeds: Vec<u64> = SeedSet::range(0, spec.seeds).shard(k, n).iter().collect();
    let mut scenarios = m.write_cells(spec.out, spec.families)?;
    scenarios.retain(|(stem, _)| !spec.skip.contains(stem));
    let total = scenarios.len() as u64 * seeds.len() as u64;
    let mut cells = Vec::new();
    for (i, (stem, scenario)) in scenarios.iter().enumerate() {
        let done = std::sync::atomic::AtomicU64::new(i as u64 * seeds.len() as u64);
        let outcomes = sweep(scenario, &seeds, spec.jobs, &|_| {
            let d = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            on_progress(d, total, stem);
        });
        cells.push(CellCounts::from_outcomes(stem.clone(), scenario, &outcomes));
    }
    Ok(Partial {
        format: PARTIAL_FORMAT.to_string(),
        locksim: super::source_stamp(),
        matrix_file: spec.matrix_file.display().to_string(),
        matrix: text,
        seeds: spec.seeds,
        shard: [k, n],
        cells,
    })
}

/// Read a partial file, or every `partial-*.json` in a folder (sorted by name).
pub(crate) fn read_partials(path: &Path) -> Result<Vec<(PathBuf, Partial)>, ReportError> {
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| ReportError::ReadFolder(path.to_path_buf(), e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("partial-") && n.ends_with(".json"))
            })
            .collect();
        v.sort();
        if v.is_empty() {
            return Err(ReportError::NoPartials(path.to_path_buf()));
        }
        v
    } else {
        vec![path.to_path_buf()]
    };
    files
        .into_iter()
        .map(|f| {
            let text =
                std::fs::read_to_string(&f).map_err(|e| ReportError::ReadFile(f.clone(), e))?;
            let p: Partial =
                serde_json::from_str(&text).map_err(|e| ReportError::NotAPartial(f.clone(), e))?;
            if p.format != PARTIAL_FORMAT {
                return Err(ReportError::Format {
                    path: f,
                    found: p.format,
                    expected: PARTIAL_FORMAT,
                });
            }
            Ok((f, p))
        })
        .collect()
}

/// Add up the shards of one matrix into the counts of shard 1 of 1. Every shard of
/// the same sharding must be present exactly once, from the same build, matrix and seed
/// count; otherwise the error names the file and what differs.
pub(crate) fn merge(parts: &[(PathBuf, Partial)]) -> Result<Partial, ReportError> {
    let (first_file, first) = parts.first().ok_or(ReportError::NothingToMerge)?;
    let n = first.shard[1];
    let mut seen: BTreeMap<u64, &Path> = BTreeMap::new();
    for (file, p) in parts {
        let differs = |what: Difference| ReportError::Differ {
            first: first_file.clone(),
            other: file.clone(),
            what,
        };
        if p.locksim != first.locksim {
            return Err(differs(Difference::Builds(
                first.locksim.clone(),
                p.locksim.clone(),
            )));
        }
        if p.matrix != first.matrix {
            return Err(differs(Difference::Matrix));
        }
        if p.seeds != first.seeds {
            return Err(differs(Difference::Seeds(first.seeds, p.seeds)));
        }
        let [k, pn] = p.shard;
        if pn != n || k == 0 || k > n {
            return Err(differs(Difference::Sharding { k, of: pn, n }));
        }
        if let Some(other) = seen.insert(k, file) {
            return Err(ReportError::SameShard {
                first: other.to_path_buf(),
                other: file.clone(),
                shard: (k, n),
            });
        }
        check_cells(file, p, first)?;
    }
    if let Some(missing) = (1..=n).find(|k| !seen.contains_key(k)) {
        return Err(ReportError::MissingShard {
            shard: (missing, n),
            have: seen.len(),
        });
    }
    let mut total = first.clone();
    total.shard = [1, 1];
    total.cells = first
        .cells
        .iter()
        .enumerate()
        .map(|(i, c)| merge_cell(c, parts.iter().skip(1).map(|(_, p)| &p.cells[i])))
        .collect();
    Ok(total)
}

/// The shard has the same cells, in the same order, with the checks of the first.
fn check_cells(file: &Path, p: &Partial, first: &Partial) -> Result<(), ReportError> {
    let same = p.cells.len() == first.cells.len()
        && p.cells.iter().zip(&first.cells).all(|(a, b)| {
            a.cell == b.cell
                && a.checks.keys().eq(b.checks.keys())
                && a.quality.keys().eq(b.quality.keys())
        });
    if same {
        Ok(())
    } else {
        Err(ReportError::CellsDiffer(file.to_path_buf()))
    }
}

/// One cell's counts over all shards.
fn merge_cell<'a>(first: &CellCounts, rest: impl Iterator<Item = &'a CellCounts>) -> CellCounts {
    let mut total = first.clone();
    for c in rest {
        total.seeds += c.seeds;
        total.harness_errors += c.harness_errors;
        for (name, counts) in &c.checks {
            total.checks.entry(name.clone()).or_default().merge(counts);
        }
        for (name, counts) in &c.quality {
            total.quality.entry(name.clone()).or_default().merge(counts);
        }
        total.metrics.merge(&c.metrics);
        total.first_error = match (total.first_error.take(), c.first_error.clone()) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(k: u64, n: u64, violations: u64, first: Option<u64>) -> (PathBuf, Partial) {
        let counts = Counts {
            violations,
            unknown: 0,
            first_seed: first,
        };
        let cell = CellCounts {
            cell: "a--b--fenced".into(),
            seeds: 10,
            checks: [("mutex".to_string(), counts)].into_iter().collect(),
            quality: [("fair".to_string(), counts)].into_iter().collect(),
            metrics: MetricsTotals::default(),
            harness_errors: 0,
            first_error: None,
        };
        let p = Partial {
            format: PARTIAL_FORMAT.into(),
            locksim: "test".into(),
            matrix_file: "m.toml".into(),
            matrix: "x".into(),
            seeds: 30,
            shard: [k, n],
            cells: vec![cell],
        };
        (PathBuf::from(format!("p{k}.json")), p)
    }

    #[test]
    fn shards_add_up_and_keep_the_lowest_seed() {
        let m = merge(&[
            part(2, 3, 2, Some(7)),
            part(1, 3, 0, None),
            part(3, 3, 1, Some(2)),
        ])
        .unwrap();
        assert_eq!(m.shard, [1, 1]);
        let c = &m.cells[0];
        assert_eq!(c.seeds, 30);
        assert_eq!(c.checks["mutex"].violations, 3);
        assert_eq!(c.checks["mutex"].first_seed, Some(2));
        assert_eq!(c.quality["fair"].violations, 3);
    }

    #[test]
    fn incomplete_or_mixed_shardings_are_refused() {
        let e = merge(&[part(1, 3, 0, None), part(3, 3, 0, None)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("shard 2/3 is missing"), "{e}");
        let e = merge(&[part(1, 2, 0, None), part(1, 2, 0, None)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("both shard 1/2"), "{e}");
        let e = merge(&[part(1, 2, 0, None), part(2, 3, 0, None)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("shardings"), "{e}");
        let (f, mut other) = part(2, 2, 0, None);
        other.locksim = "another build".into();
        let e = merge(&[part(1, 2, 0, None), (f, other)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("locksim builds"), "{e}");
    }
}
