//! The shrinker: a random catalogue scenario's first violating seed shrinks to at most
//! three faults, and the written scenario reproduces the violation when run. The full
//! sweep over every `-random` scenario is `#[ignore]`d (run it with `--ignored`).

use locksim::shrink::{fault_time_ms, scenario_text, shrink, ShrinkOptions};
use locksim::sweep::run_seed;
use locksim::{check_run, run, Scenario, Verdict};
use std::path::{Path, PathBuf};

fn random_scenarios() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("sims")
        .expect("sims/ exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.ends_with("-random.toml")
        })
        .collect();
    v.sort();
    v
}

/// Shrink the first violating seed of `file` (among seeds 0..200) for the first check the
/// scenario expects violated; returns (faults before, after, fault ms before, after).
fn shrink_first(file: &Path) -> Option<(usize, usize, u64, u64)> {
    let s = Scenario::load(file).unwrap();
    let check = s
        .expect
        .iter()
        .find(|(_, e)| **e == locksim::Expect::Violated)
        .map(|(c, _)| c.clone())?;
    let seed = (0..200).find(|&seed| run_seed(&s, seed).1.violated(&check))?;
    let opts = ShrinkOptions {
        check: Some(check.clone()),
        budget: 400,
    };
    let shrunk = shrink(&s, seed, &opts, &mut |_, _| {}).unwrap();
    // The written scenario reproduces the violation on its own.
    let text = scenario_text(
        &std::fs::read_to_string(file).unwrap(),
        &s,
        &shrunk,
        Path::new(""),
    )
    .unwrap();
    let again =
        Scenario::parse(Path::new("shrunk.toml"), &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(!again.faults.any_random());
    let r = run(&again, seed);
    let verdict = check_run(&again, &r)
        .into_iter()
        .find(|c| c.name == check)
        .unwrap()
        .verdict;
    assert_eq!(
        verdict,
        Verdict::Violated,
        "{}: the shrunk scenario does not reproduce:\n{text}",
        file.display()
    );
    println!(
        "{:<45} seed {seed:>3} {check:<18} {} -> {} faults, {} -> {} ms of faults, {} runs",
        s.name,
        shrunk.original.len(),
        shrunk.schedule.len(),
        fault_time_ms(&shrunk.original),
        fault_time_ms(&shrunk.schedule),
        shrunk.candidates
    );
    Some((
        shrunk.original.len(),
        shrunk.schedule.len(),
        fault_time_ms(&shrunk.original),
        fault_time_ms(&shrunk.schedule),
    ))
}

#[test]
fn a_random_violation_shrinks_to_a_few_faults_that_reproduce_it() {
    for name in [
        "redis-01-pause-past-lease-random",
        "redis-04-server-clock-jump-random",
    ] {
        let (_, after, _, _) = shrink_first(Path::new(&format!("sims/{name}.toml"))).unwrap();
        assert!(after <= 3, "{name}: {after} faults left");
    }
}

/// Three faults, except where a violation needs a precise interleaving that the
/// nemesis's first violating seed reaches with more: row 19's stale read (seed 8) needs
/// the waiter's pause, raft-0 cut off, then raft-1 cut off, and a 12 ms storage
/// partition that shifts the waiter's timing; the shrunk schedule is 1-minimal (removing
/// any one fault loses the violation), and the explicit `raft-19-stale-read` shows the
/// same failure with two faults.
fn allowed_faults(file: &Path) -> usize {
    if file.ends_with("raft-19-stale-read-random.toml") {
        4
    } else {
        3
    }
}

#[test]
#[ignore = "shrinks every random scenario: minutes"]
fn every_random_scenario_shrinks_to_at_most_three_faults_but_row_19() {
    let mut worst = Vec::new();
    for f in random_scenarios() {
        if let Some((_, after, _, _)) = shrink_first(&f) {
            if after > allowed_faults(&f) {
                worst.push(format!("{}: {after}", f.display()));
            }
        }
    }
    assert!(worst.is_empty(), "more than three faults left: {worst:?}");
}
