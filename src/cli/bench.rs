//! `locksim bench`: harness speed against turmoil's raw floor, the guarantees report's
//! cost row by row, and checker throughput.
//!
//! The floor is an empty turmoil simulation with the same hosts, tick and duration: the
//! cost turmoil itself charges per host per tick. The harness overhead is the ratio. The
//! machine's own speed changes between days (the floor itself has varied 2.4-fold), so
//! every figure is printed beside this machine's floor. `--markdown` prints the tables
//! the book's speed page holds (`scripts/speed-table` puts them there).

mod checker;
mod families;
mod floor;
mod markdown;
mod matrix;
mod scripts;

pub(crate) use floor::host_ticks_per_s;

use super::EXIT_BAD_INPUT;
use crate::locks::Family;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// The matrix `bench` measures when none is named (run from a locksim checkout).
const DEFAULT_MATRIX: &str = "reports/matrix.toml";
/// Threads the report estimate assumes: the two cores locksim is measured on.
const REPORT_JOBS: usize = 2;

/// What `locksim bench` measures.
pub struct BenchOptions<'a> {
    /// Seeds per family line.
    pub seeds: u64,
    /// The guarantees matrix to estimate (`None`: `reports/matrix.toml` if present).
    pub matrix: Option<&'a Path>,
    /// Print the speed page's Markdown tables (families and report) and nothing else
    /// on stdout.
    pub markdown: bool,
    /// The algorithms the matrix's rows may name.
    pub families: &'a [Family],
}

/// Run the benchmark; print the numbers. Exit 0, or 2 when a named matrix cannot be read.
pub fn bench_command(opts: BenchOptions<'_>) -> u8 {
    // A matrix named wrong is refused before minutes of measuring.
    if let Some(Err(e)) = opts.matrix.map(crate::report::Matrix::load) {
        eprintln!("locksim: bench: {e}");
        return EXIT_BAD_INPUT;
    }
    let floor = host_ticks_per_s();
    let say = |line: String| {
        if opts.markdown {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    say(format!(
        "machine: the raw turmoil floor runs {:.0} k host-ticks/s (7 idle hosts, one thread)",
        floor / 1e3
    ));
    say(format!(
        "harness, per family ({} seeds each, 1 thread, tick 1 ms, harness and floor alternating per seed):",
        opts.seeds
    ));
    let fams = families::bench_families(opts.seeds, &mut |r| say(family_line(r)));
    let report = match bench_report(&opts, &say) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("locksim: bench: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if opts.markdown {
        let fams: Vec<_> = fams.iter().map(|(_, f)| f).collect();
        print!("{}", markdown::tables(&fams, report.as_ref(), floor));
        return 0;
    }
    scripts::bench_scripts(20_000);
    bench_checks(&fams[0]);
    checker::bench_checker(&crate::linearizability::CheckOptions {
        timeout: Some(crate::linearizability::DEFAULT_TIMEOUT),
        ..crate::linearizability::CheckOptions::default()
    });
    0
}

/// A family's line.
fn family_line(r: &families::FamilyBench) -> String {
    format!(
        "  {:<22} {:>2} hosts  {:7.2} seeds/s  {:7.1} sim s/wall s  raw floor {:7.2} seeds/s  overhead {:.2}x",
        r.label,
        r.hosts,
        r.seeds_per_s(),
        r.sim_per_wall(),
        r.floor_seeds_per_s(),
        r.overhead()
    )
}

/// The report lines: the named matrix, or the default one when this is a checkout.
fn bench_report(
    opts: &BenchOptions<'_>,
    say: &dyn Fn(String),
) -> Result<Option<matrix::MatrixBench>, crate::report::ReportError> {
    let path = match opts.matrix {
        Some(p) => p,
        None if Path::new(DEFAULT_MATRIX).is_file() => Path::new(DEFAULT_MATRIX),
        None => {
            say(format!(
                "report: no {DEFAULT_MATRIX} here (run from a locksim checkout, or --matrix FILE)"
            ));
            return Ok(None);
        }
    };
    say(format!(
        "report ({}: seed 0 of every cell, 1 thread; minutes for the file's seeds per cell on {REPORT_JOBS} threads, and at the raw floor):",
        path.display()
    ));
    let mut seeds = 0;
    let m = matrix::bench_matrix(path, opts.families, &mut |row, file_seeds| {
        seeds = file_seeds;
        say(format!(
            "  {:<22} {:>3} cells  {:6.3} s/seed  {:6.1} min  (floor {:6.3} s/seed, {:5.1} min)",
            row.name,
            row.cells,
            row.seconds_per_seed,
            row.minutes(file_seeds, REPORT_JOBS),
            row.floor_seconds_per_seed,
            row.floor_minutes(file_seeds, REPORT_JOBS)
        ));
        let _ = std::io::stdout().flush();
    })?;
    say(format!(
        "  the whole report: {} cells x {seeds} seeds, about {:.0} min on {REPORT_JOBS} threads \
         ({:.0} min at the raw floor: turmoil's own cost of those hosts and ticks)",
        m.cells(),
        m.minutes(REPORT_JOBS),
        m.floor_minutes(REPORT_JOBS)
    ));
    Ok(Some(m))
}

/// The checks' throughput over the first family's runs.
fn bench_checks((scenario, bench): &(crate::Scenario, families::FamilyBench)) {
    let events: usize = bench.histories.iter().map(|r| r.history.len()).sum();
    let start = Instant::now();
    let reps = 20;
    for _ in 0..reps {
        for r in &bench.histories {
            std::hint::black_box(crate::check_run(scenario, r));
        }
    }
    let check = start.elapsed().as_secs_f64();
    println!(
        "checks: {:.0} history events/s over the first family's runs ({} events per pass, {reps} passes, all checks)",
        (events * reps) as f64 / check,
        events
    );
}
