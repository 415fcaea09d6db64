//! `locksim list`: the scenarios in a folder (`./sims` by default: the catalogue), grouped
//! by algorithm and ordered by catalogue row; then the algorithms, fault kinds, checks and
//! cost metrics; `list --params ALGORITHM` prints one algorithm's `[lock]` keys. All from
//! the lists the code runs on, so the listing cannot drift from what exists. Lines fit
//! 100 columns (longer descriptions end in `…`).

use crate::check::{QUALITY, STANDARD};
use crate::locks::Family;
use crate::scenario::Scenario;
use crate::sim::Fault;
use std::path::{Path, PathBuf};

/// The widest line `list` prints.
const WIDTH: usize = 100;

/// Print the scenarios in `sims` (the catalogue's folder, `./sims` when run in a
/// checkout), then the algorithms of `families`, fault kinds, checks and metrics.
pub fn list_command(sims: &Path, families: &[Family]) -> u8 {
    list_scenarios(sims, families);
    println!("\nalgorithms (their [lock] keys: locksim list --params ALGORITHM):");
    for family in families {
        let live = configured(family)
            .and_then(|lock| lock.real().map(|r| r.system()))
            .map_or(String::new(), |s| format!(" (live: {s})"));
        println!(
            "{}",
            fit(&format!("  {:<17} {}{live}", family.name, family.about))
        );
    }
    println!("\nfault kinds ([faults] random specs and [[faults.at]] kinds):");
    for (kind, meaning) in Fault::KINDS {
        println!("{}", fit(&format!("  {kind:<11} {meaning}")));
    }
    println!("\nchecks:");
    for c in STANDARD.iter().chain(QUALITY) {
        println!("{}", fit(&format!("  {:<21} {}", c.name, c.about)));
    }
    let r = &crate::check::REENTRANT;
    println!(
        "{}",
        fit(&format!(
            "  {:<21} {} (with [workload] reentrant = true)",
            r.name, r.about
        ))
    );
    println!("\ncost metrics (per run, simulated time; `run --json` \"metrics\" and the report):");
    for (name, meaning) in crate::metrics::METRICS {
        println!("{}", fit(&format!("  {name:<21} {meaning}")));
    }
    0
}

/// `list --params ALGORITHM`: its `[lock]` keys with their defaults, its checks, and its
/// real counterpart; exit 2 (with the choices, and the nearest name) for an unknown one.
pub fn list_params_command(name: &str, families: &[Family]) -> u8 {
    let Some(family) = families.iter().find(|f| f.name == name) else {
        let names: Vec<&str> = families.iter().map(|f| f.name).collect();
        let hint = crate::did_you_mean::closest(name, names.iter().copied())
            .map_or(String::new(), |n| format!(" (did you mean `{n}`?)"));
        eprintln!(
            "error: unknown algorithm `{name}`{hint}; the algorithms are {}",
            names.join(", ")
        );
        return 2;
    };
    println!("{}: {}", family.name, family.about);
    println!("\n[lock] keys ([default] meaning):");
    for p in (family.params)() {
        let default = if p.default.is_empty() {
            String::new()
        } else {
            format!("[{}] ", p.default)
        };
        println!("  {}", p.key);
        for line in wrap(&format!("{default}{}", p.meaning), WIDTH - 6) {
            println!("      {line}");
        }
    }
    if let Some(lock) = configured(family) {
        let names: Vec<&str> = lock.checks().iter().map(|c| c.name).collect();
        println!("\nchecks: {}", names.join(", "));
        let live = lock
            .real()
            .map_or("none (no real counterpart)", |r| r.system());
        println!("live: {live}");
    }
    0
}

/// The family with its defaults (its checks and live counterpart come from an instance).
fn configured(family: &Family) -> Option<std::sync::Arc<dyn crate::locks::AlgorithmConfig>> {
    (family.configure)(&format!("algorithm = \"{}\"", family.name), Path::new("")).ok()
}

/// One scenario file as listed: its algorithm, catalogue row and one-line description.
struct Listed {
    algorithm: String,
    row: Option<u32>,
    /// The file's name, e.g. `redis-01-pause-past-lease.toml`.
    file: String,
    description: String,
}

/// The catalogue row a file name carries: its first all-digit part (`redis-01-…` is row 1).
fn row_of(stem: &str) -> Option<u32> {
    stem.split('-')
        .find(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_digit()))
        .and_then(|part| part.parse().ok())
}

/// The scenarios in `sims`, grouped by algorithm (in `families`' order) and ordered by
/// catalogue row, or where they were looked for and how to look elsewhere.
fn list_scenarios(sims: &Path, families: &[Family]) {
    let shown = std::path::absolute(sims).unwrap_or_else(|_| sims.to_path_buf());
    println!(
        "scenarios in {} (list another folder with --sims DIR):",
        shown.display()
    );
    let files = match scenario_files(sims) {
        Ok(files) => files,
        Err(e) => {
            println!(
                "  (cannot read {}: {e}; the catalogue's scenarios are in the sims/ folder of a \
                 locksim checkout: run `locksim list` there, or `locksim list --sims PATH/sims`)",
                shown.display()
            );
            return;
        }
    };
    if files.is_empty() {
        println!("  (no .toml scenario files there)");
        return;
    }
    println!("  row N: the catalogue's Nth documented lock failure (the number in the file name);");
    println!("  files without one are baselines and variants. Run one: locksim run FILE --seed 0");
    let (listed, invalid) = load_all(&files, families);
    let order = |a: &str| {
        families
            .iter()
            .position(|f| f.name == a)
            .unwrap_or(usize::MAX)
    };
    let mut algorithms: Vec<&str> = listed.iter().map(|l| l.algorithm.as_str()).collect();
    algorithms.sort_by_key(|a| (order(a), *a));
    algorithms.dedup();
    for algorithm in algorithms {
        println!("\n  {algorithm}");
        let mut group: Vec<&Listed> = listed.iter().filter(|l| l.algorithm == algorithm).collect();
        group.sort_by_key(|l| {
            (
                l.row.unwrap_or(u32::MAX),
                l.file.trim_end_matches(".toml").to_string(),
            )
        });
        for l in group {
            let row = l
                .row
                .map_or("      ".to_string(), |r| format!("row {r:<2}"));
            println!(
                "{}",
                fit(&format!("    {row} {:<46} {}", l.file, l.description))
            );
        }
    }
    if !invalid.is_empty() {
        println!("\n  invalid files (`locksim run FILE` says why in full)");
        for (file, error) in invalid {
            println!(
                "{}",
                fit(&format!("    {} INVALID: {error}", file.display()))
            );
        }
    }
}

/// The `.toml` files of `dir`, sorted.
fn scenario_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    Ok(files)
}

/// Every file loaded: the scenarios, and the files that are not valid with their error.
fn load_all(files: &[PathBuf], families: &[Family]) -> (Vec<Listed>, Vec<(PathBuf, String)>) {
    let mut listed = Vec::new();
    let mut invalid = Vec::new();
    for f in files {
        let file = f
            .file_name()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        match Scenario::load_with(f, families) {
            Ok(s) => listed.push(Listed {
                algorithm: s.lock.name().to_string(),
                row: row_of(&file),
                file,
                description: s.description,
            }),
            Err(e) => invalid.push((f.clone(), e.error.to_string())),
        }
    }
    (listed, invalid)
}

/// `line` cut to [`WIDTH`] characters, ending in `…` when cut.
fn fit(line: &str) -> String {
    if line.chars().count() <= WIDTH {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(WIDTH - 1).collect();
    cut.push('…');
    cut
}

/// `text` in lines of at most `width` characters, broken at spaces (a longer word stands
/// alone on its line).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_from_the_first_number_in_the_name() {
        assert_eq!(row_of("redis-01-pause-past-lease"), Some(1));
        assert_eq!(row_of("db-20-expiring-row-fenced"), Some(20));
        assert_eq!(row_of("raft-baseline"), None);
    }

    #[test]
    fn long_lines_are_cut_and_text_wraps_at_spaces() {
        let long = "x".repeat(150);
        assert_eq!(fit(&long).chars().count(), WIDTH);
        assert!(fit(&long).ends_with('…'));
        assert_eq!(fit("short"), "short");
        assert_eq!(wrap("aa bb cc dd", 5), vec!["aa bb", "cc dd"]);
        assert_eq!(wrap("abcdefgh ij", 5), vec!["abcdefgh", "ij"]);
    }
}
