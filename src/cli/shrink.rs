//! `locksim shrink`: cut a violating seed's fault schedule down to the faults that matter
//! and write it as a scenario that reproduces the violation.

use super::Binary;
use super::EXIT_BAD_INPUT;
use crate::plural::plural;
use crate::scenario::Scenario;
use crate::shrink::{fault_time_ms, scenario_text, shrink, ShrinkOptions};
use std::path::{Path, PathBuf};

/// Shrink `seed` of the scenario at `path` (its algorithm one of the binary's); write the
/// result to `out` (default: next to the scenario, `<stem>-shrunk-seed-N.toml`). Exit 0
/// when written, 1 when the seed violates nothing (or not the named check), 2 on bad
/// input.
pub fn shrink_command(
    path: &Path,
    binary: Binary<'_>,
    seed: u64,
    opts: &ShrinkOptions,
    out: Option<&Path>,
    bar: bool,
) -> u8 {
    // One capped read, as `run` reads a scenario: the text is also the shrunk scenario's
    // starting point.
    let loaded = Scenario::read_text(path).and_then(|text| {
        Scenario::parse_with(path, &text, binary.families).map(|scenario| (text, scenario))
    });
    let (text, scenario) = match loaded {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(c) = &opts.check {
        if !scenario.checks().iter().any(|k| k.name == c) {
            let names: Vec<&str> = scenario.checks().iter().map(|k| k.name).collect();
            eprintln!(
                "locksim: --check: `{c}` is not a check of this scenario; expected one of {}",
                names.join(", ")
            );
            return EXIT_BAD_INPUT;
        }
    }
    let progress = bar.then(|| {
        let p = indicatif::ProgressBar::new(opts.budget as u64);
        p.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos}/{len} candidate runs (budget) [{bar:30}] {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        p
    });
    let mut on_candidate = |runs: usize, faults: usize| {
        if let Some(p) = &progress {
            p.set_position(runs as u64);
            p.set_message(format!("trying {}", plural(faults as u64, "fault")));
        }
    };
    let result = shrink(&scenario, seed, opts, &mut on_candidate);
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    let shrunk = match result {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim: {e}");
            return 1;
        }
    };
    let mut escaped = super::escaped_tasks::EscapedTasks::default();
    escaped.add_run(seed, &shrunk.escaped_tasks);
    escaped.warn();
    // By default into the current folder, never into the catalogue's `sims/`.
    let out: PathBuf = out.map(Path::to_path_buf).unwrap_or_else(|| {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        PathBuf::from(format!("{stem}-shrunk-seed-{seed}.toml"))
    });
    let out_dir = out.parent().unwrap_or(Path::new(""));
    let toml = match scenario_text(&text, &scenario, &shrunk, out_dir) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("locksim: cannot write the shrunk scenario: {e}");
            return 1;
        }
    };
    if let Err(e) = std::fs::write(&out, toml) {
        eprintln!("locksim: {}: cannot write: {e}", out.display());
        return EXIT_BAD_INPUT;
    }
    println!("{} seed {seed}: `{}` violated", scenario.name, shrunk.check);
    println!(
        "  before: {}, {} node-ms of fault time (each fault's length times its nodes)",
        plural(shrunk.original.len() as u64, "fault"),
        fault_time_ms(&shrunk.original)
    );
    println!(
        "  after:  {}, {} node-ms of fault time ({}{})",
        plural(shrunk.schedule.len() as u64, "fault"),
        fault_time_ms(&shrunk.schedule),
        plural(shrunk.candidates as u64, "candidate run"),
        if shrunk.budget_spent {
            "; budget spent, a smaller schedule may exist"
        } else {
            ""
        }
    );
    for f in &shrunk.schedule {
        let line = toml::to_string(f).unwrap_or_default().replace('\n', " ");
        println!("    {line}");
    }
    println!(
        "  wrote {}; reproduce with: {} run {} --seed {seed}",
        out.display(),
        binary.hint,
        out.display()
    );
    0
}
