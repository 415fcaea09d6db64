//! `locksim run`: a seed sweep, streamed. Each seed's JSON line is written (and flushed)
//! as soon as it and every earlier seed are done; Ctrl-C or SIGTERM stops the sweep and
//! prints the summary of the seeds that finished (exit 130 / 143).

use super::EXIT_BAD_INPUT;
use crate::check::Verdict;
use crate::plural::plural;
use crate::scenario::{Expect, Scenario};
use crate::sweep::{self, Live, SeedOutcome, SeedSet, Summary, Tally};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Exit code after SIGINT (128 + 2), as shells report it.
pub const EXIT_SIGINT: u8 = 130;
/// Exit code after SIGTERM (128 + 15).
pub const EXIT_SIGTERM: u8 = 143;

/// Without a terminal, a progress line this often (wall time), unless `--quiet`.
const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// Run a scenario over `seeds` on `jobs` threads; print a table (and JSON lines); return
/// the exit code. `bar`: draw a progress bar (stderr is a terminal); otherwise, unless
/// `quiet`, a progress line every ten seconds.
pub fn run_command(
    path: &Path,
    seeds: SeedSet,
    jobs: usize,
    json: Option<&str>,
    quiet: bool,
    bar: bool,
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

    let (sigint, sigterm) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    for (signal, flag) in [
        (signal_hook::consts::SIGINT, &sigint),
        (signal_hook::consts::SIGTERM, &sigterm),
    ] {
        // The first signal asks for a partial summary; a second one (the flag is already
        // set) ends the process at once, e.g. when a stalled stdout blocks the summary.
        // Without the handlers the default action (terminate) applies.
        let _ =
            signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, flag.clone());
        let _ = signal_hook::flag::register(signal, flag.clone());
    }
    let stop = AtomicBool::new(false);

    let total = seeds.count();
    let bar = bar.then(|| {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos}/{len} seeds [{bar:30}] {rate} eta {eta} {msg}",
            )
            .expect("valid template")
            // indicatif's {per_sec} prints four decimals; a rate this coarse needs one.
            .with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.1} seeds/s", state.per_sec());
                },
            )
            .progress_chars("=> "),
        );
        bar
    });
    let mut tally = Tally::new(&scenario);
    let mut json_error = None;
    let start = Instant::now();
    let mut last_line = Instant::now();
    let duration_ms = scenario.duration_ms.max(1);
    // Seeds that violated some check so far; the sink counts, the progress line shows.
    let violating = std::cell::Cell::new(0u64);
    let mut on_tick = |live: &Live| {
        if sigint.load(Ordering::Relaxed) || sigterm.load(Ordering::Relaxed) {
            stop.store(true, Ordering::Relaxed);
        }
        let status = progress_status(live, violating.get(), duration_ms);
        if let Some(bar) = &bar {
            bar.set_position(live.done);
            bar.set_message(status);
        } else if !quiet && last_line.elapsed() >= PLAIN_PROGRESS_EVERY {
            last_line = Instant::now();
            eprintln!(
                "locksim: {}/{} seeds done after {:.0} s; {status}",
                live.done,
                live.total,
                start.elapsed().as_secs_f64(),
            );
        }
    };
    let mut sink = |o: SeedOutcome| {
        if o.any_violation() {
            violating.set(violating.get() + 1);
        }
        tally.add(&o);
        if let (Some(out), None) = (json_out.as_mut(), &json_error) {
            let line = serde_json::to_writer(&mut *out, &o)
                .map_err(std::io::Error::from)
                .and_then(|_| writeln!(out))
                .and_then(|_| out.flush());
            if let Err(e) = line {
                json_error = Some(e);
            }
        }
    };
    let complete = sweep::run_seeds(&scenario, seeds, jobs, &stop, &mut on_tick, &mut sink);
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let summary = tally.summary(wall_s, !complete);
    if let Some(out) = json_out.as_mut() {
        let last = serde_json::to_writer(&mut *out, &serde_json::json!({ "summary": summary }))
            .map_err(std::io::Error::from)
            .and_then(|_| writeln!(out))
            .and_then(|_| out.flush());
        if let Some(e) = json_error.or(last.err()) {
            eprintln!("locksim: writing JSON: {e}");
            return EXIT_BAD_INPUT;
        }
    }
    let text = report(&scenario, &tally, &summary, jobs, total, quiet);
    if human_to_stdout {
        print!("{text}");
    } else {
        eprint!("{text}");
    }
    if sigterm.load(Ordering::Relaxed) {
        EXIT_SIGTERM
    } else if sigint.load(Ordering::Relaxed) {
        EXIT_SIGINT
    } else if summary.expect_met {
        0
    } else {
        1
    }
}

/// The progress line's words: how many finished seeds violated a check, and how far
/// (in simulated time) each running seed has got.
fn progress_status(live: &Live, violating: u64, duration_ms: u64) -> String {
    let running: Vec<String> = live
        .running
        .iter()
        .map(|(seed, ms)| format!("seed {seed} ({}% simulated)", ms * 100 / duration_ms))
        .collect();
    format!(
        "{} violating; running: {}",
        plural(violating, "seed"),
        if running.is_empty() {
            "-".to_string()
        } else {
            running.join(", ")
        }
    )
}

/// The human summary: one line per check, harness errors, the first violation and how to
/// replay it, and the speed.
fn report(
    scenario: &Scenario,
    tally: &Tally,
    summary: &Summary,
    jobs: usize,
    total: u64,
    quiet: bool,
) -> String {
    let mut text = String::new();
    let n = summary.seeds;
    if !quiet {
        text.push_str(&format!(
            "scenario {} ({}): {} on {}\n",
            scenario.name,
            scenario.algorithm(),
            plural(n, "seed"),
            plural(jobs.min(total.max(1) as usize) as u64, "thread")
        ));
        for name in scenario.checks().iter().map(|c| c.name) {
            let Some(t) = summary.checks.get(name) else {
                continue;
            };
            let verdict = if t.unknown > 0 && t.violations == 0 {
                format!("unknown in {}/{n} seeds (budget)", t.unknown)
            } else if t.violations == 0 {
                "holds".to_string()
            } else {
                format!(
                    "violated in {}/{n} seeds (first: seed {})",
                    t.violations,
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
    for (seed, error) in tally.errors() {
        text.push_str(&format!("harness error on seed {seed}: {error}\n"));
    }
    if let Some(o) = tally.first_violation() {
        let names: Vec<&str> = o
            .checks
            .iter()
            .filter(|c| c.verdict == Verdict::Violated)
            .map(|c| c.name)
            .collect();
        text.push_str(&format!(
            "first violating seed: {} ({})\n  replay: locksim replay {} --seed {}\n",
            o.seed,
            names.join(", "),
            scenario.file.display(),
            o.seed
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
        text.push_str(&format!("no violation in {}\n", plural(n, "seed")));
    }
    if summary.interrupted {
        text.push_str(&format!(
            "INTERRUPTED after {n} of {}: the totals above cover those seeds only\n",
            plural(total, "seed")
        ));
    }
    let wall_s = summary.wall_s;
    text.push_str(&format!(
        "{}: {:.2} s wall, {:.1} seeds/s, {:.0} simulated s per wall s\n",
        if summary.expect_met {
            "expectations met"
        } else {
            "EXPECTATIONS NOT MET"
        },
        wall_s,
        n as f64 / wall_s.max(1e-9),
        summary.sim_s / wall_s.max(1e-9)
    ));
    text
}
