//! Mutated scenarios: every file in `sims/`, truncated, with a key deleted, a value's
//! type changed or a number made extreme, is either rejected with a message or runs —
//! never a panic, in the parser or in the simulation.

use locksim::sweep::run_seed_with;
use locksim::Scenario;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

fn scenarios() -> Vec<(PathBuf, String)> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("sims")
        .expect("sims/ exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v.into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap();
            (p, t)
        })
        .collect()
}

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "18446744073709551615",
    "-9223372036854775808",
    "3600000",
    "3600001",
    "1e308",
    "nan",
    "\"text\"",
    "[]",
    "[1, 2, 3]",
    "{}",
    "true",
];

/// One mutation of `text`, chosen by `kind` at position `at` (a fraction of the lines).
fn mutate(text: &str, kind: u8, at: f64, pick: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let i = ((lines.len() as f64 * at) as usize).min(lines.len().saturating_sub(1));
    let mut out: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    match kind % 4 {
        // Truncate at a byte.
        0 => {
            let cut = ((text.len() as f64 * at) as usize).min(text.len());
            let cut = (0..=cut)
                .rev()
                .find(|&c| text.is_char_boundary(c))
                .unwrap_or(0);
            return text[..cut].to_string();
        }
        // Delete a line (a key, or a table header).
        1 => {
            out.remove(i);
        }
        // Give a key's value another type, or an extreme number.
        _ => {
            if let Some((k, _)) = out[i].split_once('=') {
                out[i] = format!("{k}= {}", EXTREMES[pick % EXTREMES.len()]);
            }
        }
    }
    out.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_mutated_scenario_is_rejected_or_runs(
        file in 0usize..1000, kind in 0u8..4, at in 0.0f64..1.0, pick in 0usize..100, seed in 0u64..4,
    ) {
        let all = scenarios();
        let (path, text) = &all[file % all.len()];
        let text = mutate(text, kind, at, pick);
        let parsed = std::panic::catch_unwind(|| Scenario::parse(Path::new("mutated.toml"), &text));
        let Ok(parsed) = parsed else {
            panic!("the parser panicked on a mutation of {}:\n{text}", path.display());
        };
        match parsed {
            Err(e) => {
                prop_assert!(e.to_string().starts_with("mutated.toml: "), "{e}");
                prop_assert!(e.message().len() > 10, "an empty reason: {e}");
            }
            Ok(s) => {
                // Run the first simulated second: enough to start every host and fault.
                let stop = Box::new(|ms: u64| ms < 1000);
                let (_, outcome) = run_seed_with(&s, seed, Some(stop));
                let error = outcome.error.unwrap_or_default();
                prop_assert!(
                    !error.contains("panic"),
                    "{} mutated ({error}):\n{text}", path.display()
                );
            }
        }
    }
}
