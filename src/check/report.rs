//! How checks report: a capped list of counterexamples that still states the total, and
//! true times and tokens formatted alike in every message.

use super::Violation;

/// How many violations a check lists at most; the last listed one states the total.
pub const MAX_REPORTED: usize = 20;

/// Collects violations up to [`MAX_REPORTED`] while counting all of them.
pub(crate) struct Reporter {
    shown: Vec<Violation>,
    total: usize,
}

impl Reporter {
    /// An empty reporter.
    pub(crate) fn new() -> Reporter {
        Reporter {
            shown: Vec::new(),
            total: 0,
        }
    }

    /// Count one violation; build it (lazily) only if it will be listed.
    pub(crate) fn report(&mut self, make: impl FnOnce() -> Violation) {
        self.total += 1;
        if self.shown.len() < MAX_REPORTED {
            self.shown.push(make());
        }
    }

    /// The listed violations; if some were left out, the last message says so.
    pub(crate) fn finish(mut self) -> Vec<Violation> {
        let shown = self.shown.len();
        if self.total > shown {
            if let Some(last) = self.shown.last_mut() {
                last.message.push_str(&format!(
                    " [only the first {shown} of {} violations are listed; {} more not shown]",
                    self.total,
                    self.total - shown
                ));
            }
        }
        self.shown
    }
}

/// True time `ns` as milliseconds for messages: one decimal ("1503.0 ms") unless that
/// would hide a difference (then up to six decimals).
pub(crate) fn ms(ns: u64) -> String {
    let whole = ns / 1_000_000;
    let frac = ns % 1_000_000;
    if frac.is_multiple_of(100_000) {
        format!("{whole}.{} ms", frac / 100_000)
    } else {
        let digits = format!("{frac:06}");
        format!("{whole}.{} ms", digits.trim_end_matches('0'))
    }
}

/// " (token 3)" or "" when there is no token.
pub(crate) fn token_note(token: Option<u64>) -> String {
    match token {
        Some(t) => format!(" (token {t})"),
        None => String::new(),
    }
}
