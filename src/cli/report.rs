//! `locksim report`: run the guarantees matrix and write `guarantees.md`,
//! `guarantees.json`, `index.html` and the cells' scenarios into the output folder.

use super::EXIT_BAD_INPUT;
use crate::report::{run_matrix, write_reports, Matrix};
use std::path::Path;

/// Run the matrix defined in `matrix` with `seeds` seeds per cell (default: the file's)
/// on `jobs` threads; write the reports into `out`. Exit 0 when written, 2 on bad input.
pub fn report_command(matrix: &Path, seeds: Option<u64>, out: &Path, jobs: usize, bar: bool) -> u8 {
    let m = match Matrix::load(matrix) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Err(e) = std::fs::create_dir_all(out) {
        eprintln!("locksim: {}: cannot create: {e}", out.display());
        return EXIT_BAD_INPUT;
    }
    let seeds = seeds.unwrap_or(m.seeds);
    let cells = m.cells().len() as u64;
    let progress = bar.then(|| {
        let p = indicatif::ProgressBar::new(cells * seeds);
        p.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos}/{len} seeds [{bar:30}] eta {eta} {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        p
    });
    let quiet_every = std::sync::Mutex::new(std::time::Instant::now());
    let on_progress = |done: u64, total: u64, cell: &str| {
        if let Some(p) = &progress {
            p.set_position(done);
            p.set_message(cell.to_string());
        } else if let Ok(mut last) = quiet_every.lock() {
            if last.elapsed().as_secs() >= 10 {
                *last = std::time::Instant::now();
                eprintln!("locksim: {done}/{total} seeds; cell {cell}");
            }
        }
    };
    eprintln!(
        "locksim: {} cells ({} rows x {} columns x {} fencing settings), {seeds} seeds each",
        cells,
        m.rows.len(),
        m.columns.len(),
        m.fencing.len()
    );
    let g = match run_matrix(&m, seeds, out, jobs, &on_progress) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    let command = format!(
        "locksim report --matrix {} --seeds {seeds} --out {}",
        matrix.display(),
        out.display()
    );
    if let Err(e) = write_reports(&g, out, &command) {
        eprintln!("locksim: {e}");
        return EXIT_BAD_INPUT;
    }
    println!(
        "wrote {0}/guarantees.md, {0}/guarantees.json, {0}/index.html and {1} cell scenarios in {2:.0} s",
        out.display().to_string().trim_end_matches('/'),
        g.cells.len(),
        g.wall_s
    );
    0
}
