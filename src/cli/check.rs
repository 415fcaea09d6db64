//! `locksim check HISTORY --model NAME`: the linearizability checker on its own, for
//! histories recorded by locksim (JSONL) or by Jepsen (EDN).

use super::EXIT_BAD_INPUT;
use crate::linearizability::{
    check_file_opts, memo_limit_from_mib, timeout_from_secs, CheckOptions, DEFAULT_TIMEOUT,
};
use std::io::Write;
use std::path::Path;

/// Check one history file; print the verdict (text or JSON) and optionally write the SVG.
/// Budgets: `timeout_s` seconds (default [`DEFAULT_TIMEOUT`]) and a memo of
/// `memo_limit_mib` MiB (default [`crate::linearizability::DEFAULT_MEMO_LIMIT`]).
/// Exit code: 0 linearizable, 1 not, 3 unknown (a budget ran out), 2 bad input.
pub fn check_command(
    path: &Path,
    model: &str,
    init: Option<&str>,
    timeout_s: Option<f64>,
    memo_limit_mib: Option<u64>,
    json: bool,
    svg: Option<&Path>,
) -> u8 {
    let mut opts = CheckOptions {
        timeout: Some(DEFAULT_TIMEOUT),
        ..CheckOptions::default()
    };
    if let Some(t) = timeout_s {
        match timeout_from_secs(t) {
            Ok(d) => opts.timeout = Some(d),
            Err(e) => {
                eprintln!("locksim: --timeout: {e}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    if let Some(m) = memo_limit_mib {
        match memo_limit_from_mib(m) {
            Ok(b) => opts.memo_limit = Some(b),
            Err(e) => {
                eprintln!("locksim: --memo-limit: {e}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    let outcome = match check_file_opts(path, model, init, &opts) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(svg_path) = svg {
        if let Err(e) = std::fs::write(svg_path, outcome.svg()) {
            eprintln!("locksim: --svg {}: cannot write: {e}", svg_path.display());
            return EXIT_BAD_INPUT;
        }
    }
    // Written without print!, which panics when stdout is a closed pipe (`| head`).
    let report = if json {
        format!("{}\n", outcome.to_json())
    } else {
        let mut text = outcome.text();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        match svg {
            Some(p) => text.push_str(&format!("picture: {}\n", p.display())),
            None if outcome.exit_code() == 1 => text.push_str(
                "(add --svg FILE for a picture: one lane per process, the failure in red)\n",
            ),
            None => {}
        }
        text
    };
    let _ = std::io::stdout().lock().write_all(report.as_bytes());
    outcome.exit_code() as u8
}
