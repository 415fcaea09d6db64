//! Every scenario in `sims/` meets its `[expect]` within a bounded seed budget: 100 seeds
//! for the explicit-schedule reproductions (their timeline is fixed; seeds vary latencies
//! and workload timing), 200 for the random-nemesis versions (which must *find* the
//! failure), 500 for the safe baselines (which must *hold*, so they get the largest
//! budget). Prints seeds-to-first-violation per scenario.
//!
//! Those are the full budgets (`LOCKSIM_CATALOGUE=full`), which the numbers in
//! `docs/catalogue.md` and the family pages (`docs/families/`) come from. By default (CI)
//! a random scenario runs 48 seeds, an explicit one 20 (the golden seeds) and a baseline
//! 60, to keep the catalogue near five minutes on two cores: the latest first violation
//! an expectation needs is seed 31 for a random scenario (redis-03-setnx-then-expire-random's
//! liveness) and seed 4 for an explicit one.
//!
//! The same sweep checks the golden histories: the FNV-1a hash of the JSONL history of
//! seeds 0..20 of every scenario must equal `tests/golden/history_hashes.txt`, so a
//! refactoring that changes any run's behaviour is caught. A deliberate change
//! regenerates the file with `LOCKSIM_BLESS=1 cargo test --profile fast-build --test catalogue`
//! and explains each changed hash.
//!
//! One test per scenario file, named after it (`cargo test --profile fast-build --test catalogue
//! redlock-07` runs one), found in `sims/` at run time, so a new file is tested without
//! editing this one. The most expensive run first, so parallel runners finish together.

use libtest_mimic::{Arguments, Failed, Trial};
use locksim::sweep::{summarize, sweep, SeedSet};
use locksim::Scenario;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const GOLDEN: &str = "tests/golden/history_hashes.txt";
const GOLDEN_SEEDS: u64 = 20;

/// (file name, seed) -> history hash.
type Hashes = BTreeMap<(String, u64), String>;

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
/// Fewer unless `LOCKSIM_CATALOGUE=full` (see the module docs).
fn budget(s: &Scenario) -> u64 {
    let full = if s.name.contains("baseline") {
        500
    } else if s.name.contains("random") {
        200
    } else {
        100
    };
    if std::env::var("LOCKSIM_CATALOGUE").is_ok_and(|v| v == "full") {
        full
    } else if s.name.contains("baseline") {
        // The baselines cost most (redis-replicated-baseline 53 s for 100 seeds).
        full * 3 / 25
    } else if s.name.contains("random") {
        // About 1.5 times the latest first violation an expectation needs (seed 31).
        full * 6 / 25
    } else {
        // An explicit schedule violates by seed 4; every golden seed still runs.
        GOLDEN_SEEDS
    }
}

/// A rough cost, for ordering: seeds × simulated time × hosts.
fn cost(s: &Scenario) -> u64 {
    budget(s) * s.duration_ms * s.nodes().len() as u64
}

fn read_golden() -> Hashes {
    let text = std::fs::read_to_string(GOLDEN).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (f, s, h) = (w.next()?, w.next()?, w.next()?);
            Some(((f.to_string(), s.parse().ok()?), h.to_string()))
        })
        .collect()
}

fn check(path: &Path, golden: &Hashes, blessed: Option<&Mutex<Hashes>>) -> Result<(), Failed> {
    let s = Scenario::load(path).map_err(|e| e.to_string())?;
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let budget = budget(&s);
    let seeds: Vec<u64> = (0..budget).collect();
    let started = std::time::Instant::now();
    let outcomes = sweep(&s, &seeds, 1, &|_| {});
    let wall = started.elapsed().as_secs_f64();
    let summary = summarize(&s, SeedSet::range(0, budget), &outcomes, 0.0);
    let firsts: Vec<String> = summary
        .checks
        .iter()
        .filter_map(|(n, c)| c.first_seed.map(|seed| format!("{n}@{seed}")))
        .collect();
    println!(
        "{:<45} {budget} seeds in {wall:.1} s, {} violating; first violation per check: {}",
        s.name,
        summary.violating_seeds,
        firsts.join(" ")
    );
    let mut problems = Vec::new();
    for o in outcomes.iter().filter(|o| o.seed < GOLDEN_SEEDS) {
        let key = (file.clone(), o.seed);
        if let Some(b) = blessed {
            b.lock().unwrap().insert(key, o.history_hash.clone());
            continue;
        }
        match golden.get(&key) {
            Some(g) if *g == o.history_hash => {}
            Some(g) => problems.push(format!(
                "seed {}: history hash {} differs from the golden {g}",
                o.seed, o.history_hash
            )),
            None => problems.push(format!(
                "seed {}: no golden history hash (bless new scenarios: LOCKSIM_BLESS=1)",
                o.seed
            )),
        }
    }
    if !summary.expect_met {
        problems.push(format!("expectations not met: {:#?}", summary.checks));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n").into())
    }
}

fn main() {
    let args = Arguments::from_args();
    let files = scenarios();
    assert!(files.len() >= 11, "catalogue scenarios missing: {files:?}");
    let golden = Arc::new(read_golden());
    let bless = std::env::var_os("LOCKSIM_BLESS").is_some();
    let blessed: Arc<Mutex<Hashes>> = Arc::new(Mutex::new(Hashes::new()));
    let mut trials: Vec<(u64, Trial)> = files
        .into_iter()
        .map(|f| {
            let name = f.file_stem().unwrap().to_string_lossy().into_owned();
            let cost = Scenario::load(&f).map_or(u64::MAX, |s| cost(&s));
            let (golden, blessed) = (golden.clone(), blessed.clone());
            let trial = Trial::test(name, move || check(&f, &golden, bless.then_some(&*blessed)));
            (cost, trial)
        })
        .collect();
    trials.sort_by_key(|(cost, _)| std::cmp::Reverse(*cost));
    let conclusion = libtest_mimic::run(&args, trials.into_iter().map(|(_, t)| t).collect());
    if bless {
        // Keep the hashes of scenarios this run filtered out; replace the ones it ran.
        let mut all = (*golden).clone();
        all.extend(blessed.lock().unwrap().clone());
        let existing: Vec<String> = scenarios()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        all.retain(|(f, _), _| existing.contains(f));
        let mut text =
            String::from("# scenario seed fnv1a(history JSONL); see tests/catalogue.rs\n");
        for ((f, s), h) in &all {
            text.push_str(&format!("{f} {s} {h}\n"));
        }
        std::fs::write(GOLDEN, text).expect("golden file written");
    }
    conclusion.exit();
}
