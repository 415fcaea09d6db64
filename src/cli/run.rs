//! `locksim run`.

use super::EXIT_BAD_INPUT;
use crate::check::Verdict;
use crate::scenario::{Expect, Scenario};
use crate::sweep::{self, SeedOutcome};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// Run a scenario over `seeds`; print a table (and JSON lines); return the exit code.
pub fn run_command(
    path: &Path,
    seeds: &super::Seeds,
    jobs: usize,
    json: Option<&str>,
    quiet: bool,
    progress: bool,
) -> u8 {
    let scenario = match Scenario::load(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut json_out: Option<Box<dyn Write>> = match json {
        None => None,
        Some("-") => Some(Box::new(std::io::stdout())),
        Some(file) => match std::fs::File::create(file) {
            Ok(f) => Some(Box::new(std::io::BufWriter::new(f))),
            Err(e) => {
                eprintln!("locksim: --json {file}: cannot create: {e}");
                return EXIT_BAD_INPUT;
            }
        },
    };
    // Human text goes to stderr when JSON goes to stdout, so stdout stays machine-readable.
    let human_to_stdout = json != Some("-");
    let bar = progress.then(|| {
        let bar = indicatif::ProgressBar::new(seeds.0.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos}/{len} seeds [{bar:30}] {per_sec} eta {eta} {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar
    });
    let violating = Mutex::new(0usize);
    let on_done = |o: &SeedOutcome| {
        if let Some(bar) = &bar {
            if o.any_violation() {
                let mut v = violating.lock().expect("not poisoned");
                *v += 1;
                bar.set_message(format!("{} violating", *v));
            }
            bar.inc(1);
        }
    };
    let start = std::time::Instant::now();
    let outcomes = sweep::sweep(&scenario, &seeds.0, jobs, &on_done);
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let summary = sweep::summarize(&scenario, &outcomes, wall_s);
    if let Some(out) = json_out.as_mut() {
        let mut write = || -> std::io::Result<()> {
            for o in &outcomes {
                serde_json::to_writer(&mut *out, o)?;
                writeln!(out)?;
            }
            serde_json::to_writer(&mut *out, &serde_json::json!({ "summary": summary }))?;
            writeln!(out)?;
            out.flush()
        };
        if let Err(e) = write() {
            eprintln!("locksim: writing JSON: {e}");
            return EXIT_BAD_INPUT;
        }
    }
    let mut text = String::new();
    if !quiet {
        text.push_str(&format!(
            "scenario {} ({}): {} seeds on {} threads\n",
            scenario.name,
            scenario.algorithm(),
            outcomes.len(),
            jobs
        ));
        for name in scenario.checks().iter().map(|c| c.name) {
            let Some(t) = summary.checks.get(name) else {
                continue;
            };
            let verdict = if t.unknown > 0 && t.violations == 0 {
                format!("unknown in {}/{} seeds (budget)", t.unknown, outcomes.len())
            } else if t.violations == 0 {
                "holds".to_string()
            } else {
                format!(
                    "violated in {}/{} seeds (first: seed {})",
                    t.violations,
                    outcomes.len(),
                    t.first_seed.expect("some seed violated")
                )
            };
            let expect = match t.expect {
                None => String::new(),
                Some(e) => format!(
                    "expect {:<8} {}",
                    match e {
                        Expect::Holds => "holds",
                        Expect::Violated => "violated",
                        Expect::Any => "any",
                    },
                    if t.met { "met" } else { "NOT MET" }
                ),
            };
            text.push_str(&format!("  {name:<20} {verdict:<45} {expect}\n"));
        }
    }
    for seed in &summary.harness_errors {
        let o = outcomes.iter().find(|o| o.seed == *seed).expect("listed");
        text.push_str(&format!(
            "harness error on seed {seed}: {}\n",
            o.error.as_deref().unwrap_or("")
        ));
    }
    if let Some(first) = summary.first_violation_seed {
        let o = outcomes.iter().find(|o| o.seed == first).expect("listed");
        let names: Vec<&str> = o
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Violated)
            .map(|c| c.name)
            .collect();
        text.push_str(&format!(
            "first violating seed: {first} ({})\n  replay: locksim replay {} --seed {first}\n",
            names.join(", "),
            scenario.file.display()
        ));
        if let Some(v) = o
            .checks
            .iter()
            .find(|c| c.verdict == Verdict::Violated)
            .and_then(|c| c.violations.first())
        {
            text.push_str(&format!("  e.g. {}\n", v.message));
        }
    } else {
        text.push_str(&format!("no violation in {} seeds\n", outcomes.len()));
    }
    let sim_per_wall = if wall_s > 0.0 {
        summary.sim_s / wall_s
    } else {
        0.0
    };
    text.push_str(&format!(
        "{}: {:.2} s wall, {:.1} seeds/s, {:.0} simulated s per wall s\n",
        if summary.expect_met {
            "expectations met"
        } else {
            "EXPECTATIONS NOT MET"
        },
        wall_s,
        outcomes.len() as f64 / wall_s.max(1e-9),
        sim_per_wall
    ));
    if human_to_stdout {
        print!("{text}");
    } else {
        eprint!("{text}");
    }
    if summary.expect_met {
        0
    } else {
        1
    }
}
