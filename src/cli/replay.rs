//! `locksim replay`: re-run one seed and explain each violation with the events involved,
//! in true time beside the recording node's monotonic and wall clocks.

use super::{ms, EXIT_BAD_INPUT, EXIT_HARNESS_ERROR};
use crate::locks::Family;
use crate::report::{error_replies, explain};
use crate::scenario::Scenario;
use std::path::Path;

/// Re-run `seed` of the scenario at `path` (its algorithm one of `families`) and print
/// its story; exit 1 if any check is violated, 0 if none, 2 on bad input, 4 when the seed
/// could not run to its end (a harness error: its checks would judge a partial history).
pub fn replay_command(
    path: &Path,
    families: &[Family],
    seed: u64,
    history_out: Option<&Path>,
    edn_out: Option<&Path>,
    svg_out: Option<&Path>,
    trace: bool,
) -> u8 {
    let scenario = match Scenario::load_with(path, families) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if trace {
        tracing_subscriber::fmt()
            .with_timer(SimTime)
            .with_max_level(tracing::Level::DEBUG)
            .with_target(false)
            .with_writer(std::io::stderr)
            .init();
    }
    let (result, outcome) = crate::sweep::run_seed(&scenario, seed);
    let mut escaped = super::escaped_tasks::EscapedTasks::default();
    escaped.add(&outcome);
    escaped.warn();
    let Some(result) = result else {
        eprintln!(
            "locksim: seed {seed}: {}",
            outcome.error.unwrap_or_default()
        );
        return EXIT_HARNESS_ERROR;
    };
    if let Some(p) = history_out {
        if let Err(e) = std::fs::write(p, crate::history::to_jsonl(&result.history)) {
            eprintln!("locksim: --history {}: cannot write: {e}", p.display());
            return EXIT_BAD_INPUT;
        }
        eprintln!("locksim: history written to {}", p.display());
    }
    if let Some(p) = edn_out {
        let edn = crate::linearizability::events_to_edn(&result.history);
        if let Err(e) = std::fs::write(p, edn) {
            eprintln!("locksim: --edn {}: cannot write: {e}", p.display());
            return EXIT_BAD_INPUT;
        }
        eprintln!("locksim: EDN history written to {}", p.display());
    }
    if let Some(p) = svg_out {
        let heading = format!("{} seed {seed}", scenario.name);
        let focus = crate::report::first_violated(&outcome.checks);
        let svg = crate::report::timeline_svg(
            &result.history,
            &outcome.checks,
            focus,
            result.end_ns,
            &heading,
        );
        if let Err(e) = std::fs::write(p, svg) {
            eprintln!("locksim: --svg {}: cannot write: {e}", p.display());
            return EXIT_BAD_INPUT;
        }
        eprintln!("locksim: timeline written to {}", p.display());
    }
    println!(
        "scenario {} seed {seed}: {} events over {} (history hash {})",
        scenario.name,
        result.history.len(),
        ms(result.end_ns as i64),
        outcome.history_hash
    );
    if let Some(e) = &result.error {
        println!("harness error: {e}");
    }
    print!("{}", node_panics(&result.history));
    print!(
        "{}",
        explain(&result.history, &outcome.checks, &scenario.not_applicable())
    );
    // What the servers answered the lock scripts, when they answered errors: the cause
    // a liveness failure alone does not name.
    print!("{}", error_replies(&result.history));
    for c in outcome
        .checks
        .iter()
        .filter(|c| c.verdict == crate::Verdict::Violated)
    {
        if let Some(text) = crate::check::linearizability_explanation(&result.history, c.name) {
            println!("\n{} in full:\n{text}", c.name);
        }
    }
    if result.error.is_some() {
        EXIT_HARNESS_ERROR
    } else if outcome.any_violation() {
        1
    } else {
        0
    }
}

/// The nodes whose own code panicked, each panic being that node's crash: how often, and
/// the first time and message. Empty when none did.
fn node_panics(history: &[crate::history::Event]) -> String {
    let mut per_node: std::collections::BTreeMap<&str, (usize, &crate::history::Event)> =
        std::collections::BTreeMap::new();
    for e in history
        .iter()
        .filter(|e| e.f == crate::history::names::PANIC)
    {
        per_node.entry(e.process.as_str()).or_insert((0, e)).0 += 1;
    }
    if per_node.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "node panics (each one that node's crash; a supervisor restarts it 100 ms later):\n",
    );
    for (node, (n, first)) in per_node {
        let message = first
            .value
            .as_ref()
            .and_then(|v| v.get("message"))
            .and_then(|m| m.as_str())
            .unwrap_or("");
        out += &format!(
            "  {node}: {}, first at {}: {message}\n",
            crate::plural::plural(n as u64, "time"),
            ms(first.time_ns as i64)
        );
    }
    out
}

/// tracing timer that prints simulated time (or `driver` outside any host).
struct SimTime;

impl tracing_subscriber::fmt::time::FormatTime for SimTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        match turmoil::sim_elapsed() {
            Some(d) => write!(w, "{:>12.3}ms", d.as_secs_f64() * 1e3),
            None => write!(w, "{:>14}", "driver"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::*;

    /// `algorithm = "broken"`: a family whose server and client cannot be built (a bug
    /// in the harness's reach, not a lock's behaviour: a panic while *running* node code
    /// would be that node's crash instead).
    #[derive(Debug, Clone, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Broken {}

    impl Algorithm for Broken {
        const NAME: &'static str = "broken";
        const ABOUT: &'static str = "a family whose client cannot be built";
        fn params() -> Vec<ParamDoc> {
            Vec::new()
        }
        fn servers(&self) -> Vec<String> {
            vec!["broken-0".into()]
        }
        fn server_main(&self, _ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
            panic!("no server for this family")
        }
        fn client(&self) -> Box<dyn LockClient> {
            panic!("no client for this family")
        }
        fn lease_ms(&self) -> Option<u64> {
            None
        }
        fn fencing_token(&self) -> Option<&'static str> {
            None
        }
    }

    #[test]
    fn a_seed_that_cannot_run_exits_4_not_1() {
        let dir = std::env::temp_dir().join(format!("locksim-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("broken.toml");
        let text = "name = \"broken\"\nalgorithm = \"broken\"\nduration_ms = 500\n";
        std::fs::write(&file, text).unwrap();
        let families = [Family::of::<Broken>()];
        let code = replay_command(&file, &families, 0, None, None, None, false);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(code, EXIT_HARNESS_ERROR);
    }
}
