//! `locksim report`: run the guarantees matrix and write `guarantees.md`,
//! `guarantees.json`, `index.html` and the cells' scenarios into the output folder; or
//! run one shard of it (`--shard K/N`, writing `partial-K-of-N.json`); or merge shards
//! (`--merge`) into exactly the files one machine would have written.

use super::Binary;
use super::EXIT_BAD_INPUT;
use crate::report::{
    build, compute, merge, read_partials, reused_cells, write_reports, ComputeSpec, Partial,
    ReportError, Reused,
};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What `locksim report` was asked to do.
pub enum ReportJob {
    /// Run seeds of the matrix in `matrix`: all of them, or shard `(k, n)`.
    Run {
        /// The matrix file.
        matrix: PathBuf,
        /// Seeds per cell (default: the file's).
        seeds: Option<u64>,
        /// Shard k of n, or the whole.
        shard: Option<(u64, u64)>,
        /// Worker threads.
        jobs: usize,
        /// Earlier reports' `guarantees.json` whose cells are taken instead of run again
        /// (when the same experiment: see `report::reuse`).
        reuse: Vec<PathBuf>,
    },
    /// Merge these partial files (or folders of them).
    Merge(Vec<PathBuf>),
}

/// Do `job`, writing into `out`, the rows' algorithms among the binary's families (the
/// commands shown name the binary); `bar`: draw progress bars. Exit 0 when written, 2 on
/// bad input.
pub fn report_command(job: ReportJob, out: &Path, binary: Binary<'_>, bar: bool) -> u8 {
    match report(job, out, binary, bar) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("locksim: {e}");
            EXIT_BAD_INPUT
        }
    }
}

/// Runs per thread and second the guarantees matrix averages (its 38,400 runs took about
/// 44 minutes on two threads, 2026-11): for the estimate printed before a long report.
const RUNS_PER_THREAD_S: f64 = 7.0;

/// Say how much work a report is and roughly how long it takes, before it starts.
fn announce(cells: u64, seeds: u64, shard: Option<(u64, u64)>, jobs: usize) {
    let n = shard.map_or(1, |(_, n)| n);
    let runs = cells * seeds / n.max(1);
    let minutes = runs as f64 / (RUNS_PER_THREAD_S * jobs.max(1) as f64) / 60.0;
    eprintln!(
        "locksim: report: {cells} cells x {seeds} seeds{} = {runs} runs on {jobs} thread(s): \
         roughly {minutes:.0} min",
        if n > 1 {
            format!(" / {n} shards")
        } else {
            String::new()
        }
    );
}

fn report(job: ReportJob, out: &Path, binary: Binary<'_>, bar: bool) -> Result<(), ReportError> {
    std::fs::create_dir_all(out).map_err(|e| ReportError::Create(out.to_path_buf(), e))?;
    let start = Instant::now();
    let (partial, reused) = match job {
        ReportJob::Merge(paths) => {
            let mut parts = Vec::new();
            for p in &paths {
                parts.extend(read_partials(p)?);
            }
            eprintln!("locksim: merging {} shard(s)", parts.len());
            (merge(&parts)?, Reused::default())
        }
        ReportJob::Run {
            matrix,
            seeds,
            shard,
            jobs,
            reuse,
        } => {
            let m = crate::report::Matrix::load(&matrix)?;
            let seeds = seeds.unwrap_or(m.seeds);
            // Read before the cell files are written: a stored report in `out` keeps
            // its cells' scenarios there.
            let reused = Reused {
                cells: reused_cells(&reuse, &m, seeds)?,
                files: reuse,
            };
            if !reused.files.is_empty() {
                eprintln!(
                    "locksim: {} of {} cells taken from {}",
                    reused.cells.len(),
                    m.cells().len(),
                    plural_files(&reused.files)
                );
            }
            announce(
                (m.cells().len() - reused.cells.len()) as u64,
                seeds,
                shard,
                jobs,
            );
            let skip = reused.cells.keys().cloned().collect();
            let spec = ComputeSpec {
                matrix_file: &matrix,
                seeds,
                shard: shard.unwrap_or((1, 1)),
                jobs,
                out,
                families: binary.families,
                skip: &skip,
            };
            let p = run_shard(&spec, bar)?;
            if shard.is_some() {
                return write_partial(&p, out, start);
            }
            (p, reused)
        }
    };
    let progress = Progress::new(bar, "timelines");
    let g = build(
        &partial,
        &reused,
        out,
        binary.families,
        binary.name,
        &|done, total| progress.show(done as u64, total as u64, ""),
    )?;
    progress.finish();
    write_reports(&g, out)?;
    println!(
        "wrote {0}/guarantees.md, {0}/guarantees.json, {0}/index.html, {1} cell scenarios and {2} timelines in {3:.0} s",
        out.display().to_string().trim_end_matches('/'),
        g.cells.len(),
        g.timelines.len(),
        start.elapsed().as_secs_f64()
    );
    print_floor();
    Ok(())
}

/// The machine's speed beside a report's time: machines (and one machine on different
/// days) differ, and the floor lets two reports' times be compared.
fn print_floor() {
    println!(
        "machine: the raw turmoil floor runs {:.0} k host-ticks/s here (`locksim bench` measures the same)",
        super::bench::host_ticks_per_s() / 1e3
    );
}

/// The files' names, comma-separated.
fn plural_files(files: &[PathBuf]) -> String {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    names.join(", ")
}

/// Compute one shard with a progress bar (or a line every ten seconds).
fn run_shard(spec: &ComputeSpec, bar: bool) -> Result<Partial, ReportError> {
    let m = crate::report::Matrix::load(spec.matrix_file)?;
    let (k, n) = spec.shard;
    let per_cell = crate::sweep::SeedSet::range(0, spec.seeds)
        .shard(k, n)
        .count();
    eprintln!(
        "locksim: {} cells to run of {} ({} rows x {} columns, fencing on and off where a row has a token), {} seeds each{}",
        m.cells().len() - spec.skip.len(),
        m.cells().len(),
        m.rows.len(),
        m.columns.len(),
        per_cell,
        if n > 1 {
            format!(" (shard {k}/{n} of 0..{})", spec.seeds)
        } else {
            String::new()
        }
    );
    let progress = Progress::new(bar, "seeds");
    let p = compute(spec, &|done, total, cell| progress.show(done, total, cell))?;
    progress.finish();
    Ok(p)
}

/// Write a shard's counts and say how to merge them.
fn write_partial(p: &Partial, out: &Path, start: Instant) -> Result<(), ReportError> {
    let file = out.join(p.file_name());
    let json = serde_json::to_string_pretty(p).map_err(ReportError::Encode)? + "\n";
    std::fs::write(&file, json).map_err(|e| ReportError::Write(file.clone(), e))?;
    println!(
        "wrote {} (shard {}/{}) in {:.0} s; when every shard is done: locksim report --merge <their files or folders> --out <folder>",
        file.display(),
        p.shard[0],
        p.shard[1],
        start.elapsed().as_secs_f64()
    );
    print_floor();
    Ok(())
}

/// A progress bar on a terminal, else a line every ten seconds.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    what: &'static str,
    last: std::sync::Mutex<Instant>,
}

impl Progress {
    fn new(bar: bool, what: &'static str) -> Progress {
        let bar = bar.then(|| {
            let p = indicatif::ProgressBar::new(0);
            let template =
                format!("{{spinner}} {{pos}}/{{len}} {what} [{{bar:30}}] eta {{eta}} {{msg}}");
            p.set_style(
                indicatif::ProgressStyle::with_template(&template)
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            p
        });
        Progress {
            bar,
            what,
            last: std::sync::Mutex::new(Instant::now()),
        }
    }

    fn show(&self, done: u64, total: u64, cell: &str) {
        if let Some(p) = &self.bar {
            p.set_length(total);
            p.set_position(done);
            p.set_message(cell.to_string());
        } else if let Ok(mut last) = self.last.lock() {
            if last.elapsed().as_secs() >= 10 {
                *last = Instant::now();
                eprintln!("locksim: {done}/{total} {}; {cell}", self.what);
            }
        }
    }

    fn finish(&self) {
        if let Some(p) = &self.bar {
            p.finish_and_clear();
        }
    }
}
