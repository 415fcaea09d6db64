//! `locksim list`: every algorithm with its `[lock]` keys and checks, the fault kinds, the
//! checks, and the scenarios in `sims/` — all from the lists the code runs on, so the
//! listing cannot drift from what exists.

use crate::check::STANDARD;
use crate::locks::ALGORITHMS;
use crate::scenario::Scenario;
use crate::sim::Fault;

/// Print algorithms, parameters, fault kinds, checks and the scenarios in `sims/`.
pub fn list_command() -> u8 {
    println!("algorithms ([lock] keys with defaults; checks defined):");
    for family in ALGORITHMS {
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
        }
    }
    println!("\nfault kinds ([faults] random specs and [[faults.at]] kinds):");
    for (kind, meaning) in Fault::KINDS {
        println!("  {kind:<11} {meaning}");
    }
    println!("\nchecks:");
    for c in STANDARD {
        println!("  {:<21} {}", c.name, c.about);
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
