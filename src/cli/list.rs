//! `locksim list`: every algorithm with its `[lock]` keys and checks, the fault kinds, the
//! checks, and the scenarios in a folder (`./sims` by default) — all from the lists the code runs on, so the
//! listing cannot drift from what exists.

use crate::check::{QUALITY, STANDARD};
use crate::locks::Family;
use crate::scenario::Scenario;
use crate::sim::Fault;
use std::path::Path;

/// Print the algorithms of `families`, their parameters, fault kinds, checks and the
/// scenarios in `sims` (the catalogue's folder, `./sims` when run in a checkout).
pub fn list_command(sims: &Path, families: &[Family]) -> u8 {
    println!("algorithms ([lock] keys with defaults; checks defined):");
    for family in families {
        println!("\n  {:<17} {}", family.name, family.about);
        for p in (family.params)() {
            let default = if p.default.is_empty() {
                String::new()
            } else {
                format!("[{}] ", p.default)
            };
            println!("    {:<20} {default}{}", p.key, p.meaning);
        }
        // The checks come from a configured instance: the defaults.
        if let Ok(lock) = (family.configure)(
            &format!("algorithm = \"{}\"", family.name),
            std::path::Path::new(""),
        ) {
            let names: Vec<&str> = lock.checks().iter().map(|c| c.name).collect();
            println!("    checks: {}", names.join(", "));
            let live = lock
                .real()
                .map(|r| r.system())
                .unwrap_or("none (no real counterpart)");
            println!("    live: {live}");
        }
    }
    println!("\nfault kinds ([faults] random specs and [[faults.at]] kinds):");
    for (kind, meaning) in Fault::KINDS {
        println!("  {kind:<11} {meaning}");
    }
    println!("\nchecks:");
    for c in STANDARD.iter().chain(QUALITY) {
        println!("  {:<21} {}", c.name, c.about);
    }
    let r = &crate::check::REENTRANT;
    println!(
        "  {:<21} {} (with [workload] reentrant = true)",
        r.name, r.about
    );
    println!("\ncost metrics (per run, in simulated time; `run --json` \"metrics\", the summary and the report):");
    for (name, meaning) in crate::metrics::METRICS {
        println!("  {name:<21} {meaning}");
    }
    list_scenarios(sims, families);
    0
}

/// The scenarios in `sims`, each with its description, or where they were looked for and
/// how to look elsewhere.
fn list_scenarios(sims: &Path, families: &[Family]) {
    let shown = std::path::absolute(sims).unwrap_or_else(|_| sims.to_path_buf());
    println!(
        "\nscenarios in {} (list another folder with --sims DIR):",
        shown.display()
    );
    let entries = match std::fs::read_dir(sims) {
        Ok(d) => d,
        Err(e) => {
            println!(
                "  (cannot read {}: {e}; the catalogue's scenarios are in the sims/ folder of a \
                 locksim checkout: run `locksim list` there, or `locksim list --sims PATH/sims`)",
                shown.display()
            );
            return;
        }
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        println!("  (no .toml scenario files there)");
    }
    for f in files {
        match Scenario::load_with(&f, families) {
            Ok(s) => println!("  {:<40} {}", f.display(), s.description),
            Err(e) => println!("  {:<40} INVALID: {}", f.display(), e.error),
        }
    }
}
