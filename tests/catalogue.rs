//! Every scenario in `sims/` meets its `[expect]` within a bounded seed budget: 100 seeds
//! for the explicit-schedule reproductions (their timeline is fixed; seeds vary latencies
//! and workload timing), 200 for the random-nemesis versions (which must *find* the
//! failure), 500 for the safe baselines (which must *hold*, so they get the largest
//! budget). Prints seeds-to-first-violation per scenario.
//!
//! One test per scenario file, named after it (`cargo test --release --test catalogue
//! redlock-07` runs one), found in `sims/` at run time, so a new file is tested without
//! editing this one. The most expensive run first, so parallel runners finish together.

use libtest_mimic::{Arguments, Failed, Trial};
use locksim::sweep::{summarize, sweep};
use locksim::Scenario;
use std::path::{Path, PathBuf};

fn scenarios() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("sims")
        .expect("sims/ exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

/// Seeds a scenario gets: baselines must hold, random versions must find the failure.
fn budget(s: &Scenario) -> u64 {
    if s.name.contains("baseline") {
        500
    } else if s.name.contains("random") {
        200
    } else {
        100
    }
}

/// A rough cost, for ordering: seeds × simulated time × hosts.
fn cost(s: &Scenario) -> u64 {
    budget(s) * s.duration_ms * s.nodes().len() as u64
}

fn check(path: &Path) -> Result<(), Failed> {
    let s = Scenario::load(path).map_err(|e| e.to_string())?;
    let budget = budget(&s);
    let seeds: Vec<u64> = (0..budget).collect();
    let outcomes = sweep(&s, &seeds, 1, &|_| {});
    let summary = summarize(&s, &outcomes, 0.0);
    let firsts: Vec<String> = summary
        .checks
        .iter()
        .filter_map(|(n, c)| c.first_seed.map(|seed| format!("{n}@{seed}")))
        .collect();
    println!(
        "{:<45} {budget} seeds, {} violating; first violation per check: {}",
        s.name,
        summary.violating_seeds,
        firsts.join(" ")
    );
    if summary.expect_met {
        Ok(())
    } else {
        Err(format!("expectations not met: {:#?}", summary.checks).into())
    }
}

fn main() {
    let args = Arguments::from_args();
    let files = scenarios();
    assert!(files.len() >= 11, "catalogue scenarios missing: {files:?}");
    let mut trials: Vec<(u64, Trial)> = files
        .into_iter()
        .map(|f| {
            let name = f.file_stem().unwrap().to_string_lossy().into_owned();
            let cost = Scenario::load(&f).map_or(u64::MAX, |s| cost(&s));
            (cost, Trial::test(name, move || check(&f)))
        })
        .collect();
    trials.sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
    libtest_mimic::run(&args, trials.into_iter().map(|(_, t)| t).collect()).exit();
}
