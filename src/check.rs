//! Checkers over a recorded [`History`](crate::history::History).
//!
//! Every check reasons only in *true* time (the simulator's global clock), never in a
//! node's local time: local clocks are exactly what the faults corrupt.
//!
//! | name | what it checks |
//! |---|---|
//! | `mutex` | no two processes' hold intervals `[acquire ok, release invoke]` overlap |
//! | `token-order` | tokens of successful acquires are unique and follow real-time order |
//! | `fencing` | no accepted write carries a token lower than an earlier accepted write; every accepted token was granted to the client that used it |
//! | `counter` | final counter equals the number of acknowledged increments (no lost update) |
//! | `liveness` | once the last fault has healed, some client acquires within `liveness_ms` |
//!
//! The mutex and fencing arguments are M. Kleppmann's ("How to do distributed locking",
//! 2016); the Jepsen-style history conventions (`info` = indeterminate) are from
//! Kingsbury's Knossos. Each check lives in its own file and is re-exported here.

mod counter;
mod fencing;
mod liveness;
mod mutex;
mod token_order;

pub use counter::check_counter;
pub use fencing::check_fencing;
pub use liveness::check_liveness;
pub use mutex::{check_mutex, hold_intervals, Hold};
pub use token_order::check_token_order;

use crate::history::Event;
use serde::Serialize;

/// One counterexample: a human message and the indices of the events involved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// What went wrong, in one or two sentences naming processes, tokens and true times.
    pub message: String,
    /// `Event::index` of every event the message refers to, ascending.
    pub events: Vec<u64>,
}

impl Violation {
    /// A violation with `message` about the events with these indices.
    pub fn new(message: impl Into<String>, mut events: Vec<u64>) -> Violation {
        events.sort_unstable();
        events.dedup();
        Violation {
            message: message.into(),
            events,
        }
    }
}

/// The verdict of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// No violation found.
    Holds,
    /// At least one violation found.
    Violated,
}

/// The result of one named check on one history.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// The check's name (see the table in the module docs).
    pub name: &'static str,
    /// Holds or violated.
    pub verdict: Verdict,
    /// Counterexamples (empty when the check holds).
    pub violations: Vec<Violation>,
}

/// Names of the checks `run` performs, in report order.
pub const CHECK_NAMES: &[&str] = &["mutex", "token-order", "fencing", "counter", "liveness"];

/// What the checks need besides the events.
#[derive(Clone, Copy, Debug)]
pub struct CheckParams {
    /// True time at which the run ended, ns.
    pub end_ns: u64,
    /// The liveness window after the last fault heals, ns.
    pub liveness_ns: u64,
}

/// Run every check in [`CHECK_NAMES`] on `history`.
pub fn check_all(history: &[Event], params: CheckParams) -> Vec<CheckReport> {
    CHECK_NAMES
        .iter()
        .map(|&name| {
            let violations = match name {
                "mutex" => check_mutex(history, params.end_ns),
                "token-order" => check_token_order(history),
                "fencing" => check_fencing(history),
                "counter" => check_counter(history),
                "liveness" => check_liveness(history, params.end_ns, params.liveness_ns),
                _ => unreachable!("CHECK_NAMES and this match agree"),
            };
            let verdict = if violations.is_empty() {
                Verdict::Holds
            } else {
                Verdict::Violated
            };
            CheckReport {
                name,
                verdict,
                violations,
            }
        })
        .collect()
}
