//! `bench`'s report lines: what each row of the guarantees matrix costs per seed, and
//! so roughly how long `locksim report` takes on this machine, row by row.

use super::floor::raw_floor;
use crate::locks::Family;
use crate::report::{Matrix, ReportError};
use std::path::Path;
use std::time::Instant;

/// One row of the matrix, measured.
pub(super) struct RowCost {
    /// The row's name.
    pub(super) name: String,
    /// Its cells (columns × fencing settings).
    pub(super) cells: usize,
    /// Mean wall seconds of one seed (run and checks) over its cells, one thread.
    pub(super) seconds_per_seed: f64,
    /// What an empty turmoil simulation of the same hosts and duration takes, seconds:
    /// the least a seed can cost at turmoil's 1 ms tick.
    pub(super) floor_seconds_per_seed: f64,
}

/// The matrix, measured: one seed (seed 0) of every cell.
pub(super) struct MatrixBench {
    /// Seeds per cell the matrix file asks for.
    pub(super) seeds: u64,
    /// Its rows, in the file's order.
    pub(super) rows: Vec<RowCost>,
}

impl RowCost {
    /// Minutes this row takes in a report of `seeds` seeds per cell on `jobs` threads.
    pub(super) fn minutes(&self, seeds: u64, jobs: usize) -> f64 {
        self.cells as f64 * self.seconds_per_seed * seeds as f64 / jobs as f64 / 60.0
    }
    /// Minutes the raw floor alone would take for this row.
    pub(super) fn floor_minutes(&self, seeds: u64, jobs: usize) -> f64 {
        self.cells as f64 * self.floor_seconds_per_seed * seeds as f64 / jobs as f64 / 60.0
    }
}

impl MatrixBench {
    /// Minutes the whole report takes on `jobs` threads.
    pub(super) fn minutes(&self, jobs: usize) -> f64 {
        self.rows.iter().map(|r| r.minutes(self.seeds, jobs)).sum()
    }
    /// Minutes the raw floor alone would take for the whole report.
    pub(super) fn floor_minutes(&self, jobs: usize) -> f64 {
        self.rows
            .iter()
            .map(|r| r.floor_minutes(self.seeds, jobs))
            .sum()
    }
    /// Cells in the matrix.
    pub(super) fn cells(&self) -> usize {
        self.rows.iter().map(|r| r.cells).sum()
    }
}

/// Run seed 0 of every cell of the matrix in `path` (rows' algorithms among `families`),
/// each beside the raw floor of its hosts, calling `on_row` with each row and the file's
/// seeds per cell.
pub(super) fn bench_matrix(
    path: &Path,
    families: &[Family],
    on_row: &mut dyn FnMut(&RowCost, u64),
) -> Result<MatrixBench, ReportError> {
    let m = Matrix::load(path)?;
    let cells = m.cells();
    let mut rows = Vec::new();
    for (i, row) in m.rows.iter().enumerate() {
        let mine: Vec<_> = cells.iter().filter(|c| c.row == i).collect();
        let (mut wall, mut floor) = (0.0, 0.0);
        for cell in &mine {
            let scenario = m.cell_scenario(cell, families)?;
            let start = Instant::now();
            std::hint::black_box(crate::sweep::run_seed(&scenario, 0));
            wall += start.elapsed().as_secs_f64();
            // The floor of this cell's hosts and duration, run beside it.
            let start = Instant::now();
            raw_floor(&scenario.nodes(), scenario.duration_ms, 0);
            floor += start.elapsed().as_secs_f64();
        }
        let n = mine.len().max(1) as f64;
        let cost = RowCost {
            name: row.name.clone(),
            cells: mine.len(),
            seconds_per_seed: wall / n,
            floor_seconds_per_seed: floor / n,
        };
        on_row(&cost, m.seeds);
        rows.push(cost);
    }
    Ok(MatrixBench {
        seeds: m.seeds,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_estimate_adds_its_rows() {
        let row = |cells, s| RowCost {
            name: "r".into(),
            cells,
            seconds_per_seed: s,
            floor_seconds_per_seed: s / 2.0,
        };
        let m = MatrixBench {
            seeds: 200,
            rows: vec![row(16, 0.15), row(8, 0.3)],
        };
        // 16 × 0.15 × 200 = 480 s and 8 × 0.3 × 200 = 480 s: 16 min on one thread.
        assert!((m.minutes(1) - 16.0).abs() < 1e-9);
        assert!((m.minutes(2) - 8.0).abs() < 1e-9);
        assert_eq!(m.cells(), 24);
        assert!((m.floor_minutes(2) - 4.0).abs() < 1e-9);
    }
}
