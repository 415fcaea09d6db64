//! Every scenario in `sims/` meets its `[expect]` within a bounded seed budget: 100 seeds
//! for the explicit-schedule reproductions (their timeline is fixed; seeds vary latencies
//! and workload timing), 200 for the random-nemesis versions (which must *find* the
//! failure), 500 for the safe baselines (which must *hold*, so they get the largest
//! budget). Prints seeds-to-first-violation per scenario.

use locksim::sweep::{summarize, sweep};
use locksim::Scenario;
use std::path::PathBuf;

fn scenarios() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("sims")
        .expect("sims/ exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_scenario_meets_its_expectations() {
    let files = scenarios();
    assert!(files.len() >= 11, "catalogue scenarios missing: {files:?}");
    let mut failures = Vec::new();
    for f in files {
        let s = Scenario::load(&f).unwrap_or_else(|e| panic!("{e}"));
        let budget = if s.name.contains("baseline") {
            500
        } else if s.name.contains("random") {
            200
        } else {
            100
        };
        let seeds: Vec<u64> = (0..budget).collect();
        let outcomes = sweep(&s, &seeds, 2, &|_| {});
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
        if !summary.expect_met {
            failures.push(format!("{}: {:?}", s.name, summary.checks));
        }
    }
    assert!(
        failures.is_empty(),
        "expectations not met:\n{}",
        failures.join("\n")
    );
}
