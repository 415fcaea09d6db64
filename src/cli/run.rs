//! `locksim run`: a seed sweep, streamed. Each seed's JSON line is written (and flushed)
//! as soon as it and every earlier seed are done; Ctrl-C or SIGTERM stops the sweep and
//! prints the summary of the seeds that finished (exit 130 / 143).

use super::escaped_tasks::EscapedTasks;
use super::Binary;
use super::EXIT_BAD_INPUT;
use crate::check::{standard_first, Verdict};
use crate::plural::plural;
use crate::scenario::{Expect, Scenario};
use crate::sweep::{
    self, CheckTotals, Live, SeedOutcome, SeedSet, SeedsAcquireErrors, Summary, Tally,
};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Exit code after SIGINT (128 + 2), as shells report it.
pub(crate) const EXIT_SIGINT: u8 = 130;
/// Exit code after SIGTERM (128 + 15).
pub(crate) const EXIT_SIGTERM: u8 = 143;

/// Without a terminal, a progress line this often (wall time), unless `--quiet`.
const PLAIN_PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// Run a scenario (its algorithm one of the binary's families) over `seeds` on `jobs`
/// threads; print a table (and JSON lines); return the exit code. `bar`: draw a progress
/// bar (stderr is a terminal); otherwise, unless `quiet`, a progress line every ten
/// seconds.
pub fn run_command(
    path: &Path,
    binary: Binary<'_>,
    seeds: SeedSet,
    jobs: usize,
    json: Option<&str>,
    quiet: bool,
    bar: bool,
) -> u8 {
    let scenario = match Scenario::load_with(path, binary.families) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut json_out = match open_json(json) {
        Ok(out) => out,
        Err(code) => return code,
    };
    // Human text goes to stderr when JSON goes to stdout, so stdout stays machine-readable.
    let human_to_stdout = json != Some("-");

    let (sigint, sigterm) = catch_signals();
    let stop = AtomicBool::new(false);

    let total = seeds.count();
    let bar = bar.then(|| progress_bar(total));
    let mut tally = Tally::new(&scenario, seeds);
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
    let mut escaped = EscapedTasks::default();
    let mut sink = |o: SeedOutcome| {
        escaped.add(&o);
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
        let last = write_summary_line(out, &summary);
        if let Some(e) = json_error.or(last.err()) {
            eprintln!("locksim: writing JSON: {e}");
            return EXIT_BAD_INPUT;
        }
    }
    let examples = Examples {
        first_violation: tally.first_violation().map(FirstViolation::of),
        errors: tally.errors().to_vec(),
    };
    let threads = plural(jobs.min(total.max(1) as usize) as u64, "thread");
    let ran_on = format!("on {threads}");
    let text = report(&summary, &examples, &ran_on, quiet, binary.hint);
    if human_to_stdout {
        print!("{text}");
    } else {
        eprint!("{text}");
    }
    // A warning, not a verdict: the histories and checks stand as they are.
    escaped.warn();
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

/// The progress bar of a run of `total` seeds.
fn progress_bar(total: u64) -> indicatif::ProgressBar {
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
}

/// Catch SIGINT and SIGTERM: the first sets its flag (`run` then stops and prints the
/// partial summary); a second, with the flag already set, ends the process at once, e.g.
/// when a stalled stdout blocks the summary. Without the handlers the default action
/// (terminate) applies. Returns the (SIGINT, SIGTERM) flags.
fn catch_signals() -> (Arc<AtomicBool>, Arc<AtomicBool>) {
    let (sigint, sigterm) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    for (signal, flag) in [
        (signal_hook::consts::SIGINT, &sigint),
        (signal_hook::consts::SIGTERM, &sigterm),
    ] {
        let _ =
            signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, flag.clone());
        let _ = signal_hook::flag::register(signal, flag.clone());
    }
    exit_if_stuck(sigint.clone(), sigterm.clone());
    (sigint, sigterm)
}

/// How long a run may take to stop after the first signal before the process exits
/// without its summary.
const STUCK_AFTER_SIGNAL: Duration = Duration::from_secs(5);

/// The backstop of the first signal: a seed stops at its next simulation step, but one
/// stuck inside a single step (a user's Lua script in a C function no hook interrupts,
/// such as a pathological `string.find` pattern) never reaches it. Then the process exits
/// anyway, with the signal's code. A thread of the CLI, outside every simulation.
fn exit_if_stuck(sigint: Arc<AtomicBool>, sigterm: Arc<AtomicBool>) {
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(100));
        let code = if sigterm.load(Ordering::Relaxed) {
            EXIT_SIGTERM
        } else if sigint.load(Ordering::Relaxed) {
            130
        } else {
            continue;
        };
        std::thread::sleep(STUCK_AFTER_SIGNAL);
        eprintln!(
            "locksim: a seed did not stop within {} s of the signal (stuck in one step, e.g. a Lua script); exiting without the summary",
            STUCK_AFTER_SIGNAL.as_secs()
        );
        std::process::exit(i32::from(code));
    });
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

/// Open `--json`'s destination: none, stdout (`-`) or a new file. Err: the exit code,
/// after saying why.
pub(super) fn open_json(json: Option<&str>) -> Result<Option<Box<dyn Write>>, u8> {
    match json {
        None => Ok(None),
        Some("-") => Ok(Some(Box::new(std::io::stdout()))),
        Some(file) => match std::fs::File::create(file) {
            Ok(f) => Ok(Some(Box::new(std::io::BufWriter::new(f)))),
            Err(e) => {
                eprintln!("locksim: --json {file}: cannot create: {e}");
                Err(EXIT_BAD_INPUT)
            }
        },
    }
}

/// Write `{"summary": ...}` as one line, and flush.
pub(super) fn write_summary_line(out: &mut dyn Write, summary: &Summary) -> std::io::Result<()> {
    /// The line's shape. (Not `json!`: a `seed_range` may end at 2^64, past what a
    /// `serde_json::Value` holds.)
    #[derive(serde::Serialize)]
    struct Line<'a> {
        summary: &'a Summary,
    }
    serde_json::to_writer(&mut *out, &Line { summary })?;
    writeln!(out)?;
    out.flush()
}

/// The first violating seed, as the human report shows it.
#[derive(Debug, Clone)]
pub(super) struct FirstViolation {
    /// The seed.
    pub seed: u64,
    /// The checks it violated, in the order of its verdicts.
    pub checks: Vec<String>,
    /// The first violated check's first counterexample message.
    pub example: Option<String>,
}

impl FirstViolation {
    /// From one seed's verdicts, in order: (check name, verdict, that check's first
    /// counterexample message). Pass only the checks whose violations count (not the
    /// quality ones).
    pub(super) fn new<'a>(
        seed: u64,
        verdicts: impl IntoIterator<Item = (&'a str, Verdict, Option<&'a str>)>,
    ) -> FirstViolation {
        let mut first = FirstViolation {
            seed,
            checks: Vec::new(),
            example: None,
        };
        for (name, _, message) in verdicts.into_iter().filter(|v| v.1 == Verdict::Violated) {
            if first.checks.is_empty() {
                first.example = message.map(str::to_string);
            }
            first.checks.push(name.to_string());
        }
        first
    }

    /// From a seed's outcome.
    fn of(o: &SeedOutcome) -> FirstViolation {
        let counted = o.checks.iter().filter(|c| c.kind.counts_as_violation());
        let verdicts = counted.map(|c| {
            let message = c.violations.first().map(|v| v.message.as_str());
            (c.name, c.verdict, message)
        });
        FirstViolation::new(o.seed, verdicts)
    }
}

/// What the human report shows beyond a summary's totals.
#[derive(Debug, Clone, Default)]
pub(super) struct Examples {
    /// The first violating seed (that of `first_violation_seed`).
    pub first_violation: Option<FirstViolation>,
    /// The listed harness errors (those of `harness_errors`): (seed, message).
    pub errors: Vec<(u64, String)>,
}

/// The human summary: one line per check, harness errors, the first violation and how to
/// replay it (with the binary called `program`), the cost line (see [`crate::metrics`]),
/// and the speed. `ran_on` ends the first line (`on 2 threads`).
pub(super) fn report(
    summary: &Summary,
    examples: &Examples,
    ran_on: &str,
    quiet: bool,
    program: &str,
) -> String {
    let mut text = String::new();
    let n = summary.seeds;
    if !quiet {
        text.push_str(&format!(
            "scenario {} ({}): {} {ran_on}\n",
            summary.scenario,
            summary.algorithm,
            plural(n, "seed"),
        ));
        text.push_str(&check_table(summary));
    }
    for (seed, error) in &examples.errors {
        text.push_str(&format!("harness error on seed {seed}: {error}\n"));
    }
    let first = examples.first_violation.as_ref();
    text.push_str(&first_violation(summary, first, program));
    if let Some(d) = &summary.acquire_errors {
        // Beside the violation it explains (a liveness failure, typically) when it is
        // that seed's; on its own line otherwise.
        let beside = examples
            .first_violation
            .as_ref()
            .is_some_and(|o| o.seed == d.seed);
        let indent = if beside { "  " } else { "" };
        text.push_str(&format!("{indent}{}\n", acquire_errors_line(d)));
    }
    // What the lock cost, after what went wrong (which stays beside its explanation).
    if !quiet && summary.metrics.run_ns > 0 {
        text.push_str(&summary.metrics.line());
        text.push('\n');
    }
    if summary.interrupted {
        let total = summary.seed_set().map_or(n, |s| s.count());
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

/// The first violating seed, how to replay it (with the binary called `program`) and its
/// first counterexample; or that no seed violated anything.
fn first_violation(summary: &Summary, first: Option<&FirstViolation>, program: &str) -> String {
    let Some(o) = first else {
        return format!("no violation in {}\n", plural(summary.seeds, "seed"));
    };
    let mut text = format!(
        "first violating seed: {} ({})\n  replay: {program} replay {} --seed {}\n",
        o.seed,
        o.checks.join(", "),
        summary.scenario_file,
        o.seed
    );
    if let Some(message) = &o.example {
        text.push_str(&format!("  e.g. {message}\n"));
    }
    text
}

/// Why nothing was acquired, when the acquires got error replies: "no acquire succeeded
/// on seed 0: every acquire (462) failed on the same error reply to the acquire script:
/// ERR ...".
fn acquire_errors_line(d: &SeedsAcquireErrors) -> String {
    let others = match d.seeds {
        1 => String::new(),
        n => format!(
            " (nor on {} with error replies)",
            plural(n - 1, "other seed")
        ),
    };
    format!(
        "no acquire succeeded on seed {}{others}: {}",
        d.seed, d.message
    )
}

/// One line per check, standard checks first: its verdict over the seeds and whether
/// it met the scenario's expectation.
fn check_table(summary: &Summary) -> String {
    let n = summary.seeds;
    let mut text = String::new();
    for name in standard_first(summary.checks.keys().map(String::as_str)) {
        let t = &summary.checks[name];
        let verdict = if let Some(why) = &t.not_applicable {
            // The report's `–`: the check cannot say anything here.
            format!("n/a: {why}")
        } else if !t.kind.counts_as_violation() {
            quality_verdict(t, n)
        } else if t.unknown > 0 && t.violations == 0 {
            format!("unknown in {}/{n} seeds (budget)", t.unknown)
        } else if t.violations == 0 {
            "holds".to_string()
        } else {
            let first = t.first_seed.map_or("?".to_string(), |s| s.to_string());
            format!(
                "violated in {}/{n} seeds (first: seed {first})",
                t.violations
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
                match (t.met, &t.not_applicable) {
                    (true, Some(_)) => "met (vacuously: n/a)",
                    (true, None) => "met",
                    (false, _) => "NOT MET",
                }
            ),
        };
        if t.not_applicable.is_some() {
            // The reason is long: the expectation goes on the line under it.
            text.push_str(&format!("  {name:<20} {verdict}\n"));
            if !expect.is_empty() {
                text.push_str(&format!("  {:<20} {:<45} {expect}\n", "", ""));
            }
            continue;
        }
        text.push_str(&format!("  {name:<20} {verdict:<45} {expect}\n"));
    }
    text
}

/// A quality check's line: "quality: broken in 9/10 seeds (first: seed 0)", never the
/// word "violated", which is kept for what the lock promises.
fn quality_verdict(t: &CheckTotals, n: u64) -> String {
    if t.violations == 0 {
        return "quality: holds".to_string();
    }
    let first = t.first_seed.map_or("?".to_string(), |s| s.to_string());
    format!(
        "quality: broken in {}/{n} seeds (first: seed {first})",
        t.violations
    )
}
