//! `locksim check HISTORY --model NAME`: the linearizability checker on its own, for
//! histories recorded by locksim (JSONL) or by Jepsen (EDN).

use super::EXIT_BAD_INPUT;
use crate::linearizability::check_file;
use std::path::Path;
use std::time::Duration;

/// Check one history file; print the verdict (text or JSON) and optionally write the SVG.
/// Exit code: 0 linearizable, 1 not, 3 unknown (time budget), 2 bad input.
pub fn check_command(
    path: &Path,
    model: &str,
    init: Option<&str>,
    timeout_s: Option<f64>,
    json: bool,
    svg: Option<&Path>,
) -> u8 {
    let timeout = match timeout_s {
        Some(t) if !(t > 0.0 && t.is_finite()) => {
            eprintln!("locksim: --timeout: expected a positive number of seconds, got {t}");
            return EXIT_BAD_INPUT;
        }
        Some(t) => Some(Duration::from_secs_f64(t)),
        None => None,
    };
    let outcome = match check_file(path, model, init, timeout) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(svg_path) = svg {
        if let Err(e) = std::fs::write(svg_path, &outcome.svg) {
            eprintln!("locksim: --svg {}: cannot write: {e}", svg_path.display());
            return EXIT_BAD_INPUT;
        }
    }
    if json {
        println!("{}", outcome.to_json());
    } else {
        print!("{}", outcome.text);
        if !outcome.text.ends_with('\n') {
            println!();
        }
        match svg {
            Some(p) => println!("picture: {}", p.display()),
            None if outcome.exit_code() == 1 => {
                println!("(add --svg FILE for a picture: one lane per process, the failure in red)")
            }
            None => {}
        }
    }
    outcome.exit_code() as u8
}
