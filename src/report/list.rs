//! `locksim list`.

use crate::scenario::{Algorithm, Scenario};

/// Print algorithms, parameters, fault kinds, checks and the scenarios in `sims/`.
pub fn list_command() -> u8 {
    println!("algorithms:");
    for (name, done) in Algorithm::ALL {
        println!(
            "  {name:<17} {}",
            if *done {
                "implemented"
            } else {
                "not yet implemented"
            }
        );
    }
    println!("\n[lock] parameters:");
    for (alg, key, default, meaning) in crate::locks::PARAMETERS {
        println!("  {alg:<8} {key:<19} [{default}] {meaning}");
    }
    println!("\nfault kinds ([faults] random specs and [[faults.at]] kinds):");
    for (kind, meaning) in [
        (
            "pause",
            "stop-the-world freeze of a node (at = anywhere | after-acquire | before-write | mid-acquire)",
        ),
        (
            "partition",
            "cut nodes off from the rest (oneway = true: outbound only); heal repairs",
        ),
        ("clock-jump", "step a node's wall clock (delta_ms)"),
        (
            "skew",
            "set a node's wall clock offset from true time (skew_ms)",
        ),
        ("drift", "set a node's clock rate error (drift_ppm)"),
        (
            "crash",
            "kill a node; unsynced disk data is lost; restart after down_ms",
        ),
        ("restart", "restart a crashed node"),
    ] {
        println!("  {kind:<11} {meaning}");
    }
    println!("\nchecks:");
    for name in crate::check::CHECK_NAMES {
        println!("  {name}");
    }
    println!("\nscenarios in sims/:");
    let mut files: Vec<_> = std::fs::read_dir("sims")
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    if files.is_empty() {
        println!("  (none found in ./sims)");
    }
    for f in files {
        match Scenario::load(&f) {
            Ok(s) => println!("  {:<40} {}", f.display(), s.description),
            Err(e) => println!("  {:<40} INVALID: {}", f.display(), e.message),
        }
    }
    0
}
