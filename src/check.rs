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
//! | `lock-linearizable` | the lock service's acquire/release/expire history is linearizable against the fenced-lock spec |
//! | `storage-linearizable` | the storage's history is linearizable against the fenced-register spec |
//!
//! The last two use the linearizability engine in [`crate::linearizability`] (Wing & Gong
//! with Lowe's memoisation). `lock-linearizable` needs one authoritative lock server whose
//! expirations are the lock's: it is not defined for Redlock, where each of N nodes expires
//! its own copy of the key and the lock's lifetime is a client-side majority computation.
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
    /// The checker ran out of its time budget: neither proven nor refuted.
    Unknown,
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
pub const CHECK_NAMES: &[&str] = &[
    "mutex",
    "token-order",
    "fencing",
    "counter",
    "liveness",
    "lock-linearizable",
    "storage-linearizable",
];

/// Wall-clock budget of each linearizability check in a run: generous, because an
/// `unknown` verdict depends on the machine's speed (histories of a seed check in
/// milliseconds; the budget only guards against a pathological search).
pub const LIN_BUDGET: std::time::Duration = std::time::Duration::from_secs(30);

/// What the checks need besides the events.
#[derive(Clone, Copy, Debug)]
pub struct CheckParams {
    /// True time at which the run ended, ns.
    pub end_ns: u64,
    /// The liveness window after the last fault heals, ns.
    pub liveness_ns: u64,
    /// Whether `lock-linearizable` applies (one authoritative lock server).
    pub lock_linearizable: bool,
}

/// Run every applicable check in [`CHECK_NAMES`] on `history`.
pub fn check_all(history: &[Event], params: CheckParams) -> Vec<CheckReport> {
    CHECK_NAMES
        .iter()
        .filter(|&&name| name != "lock-linearizable" || params.lock_linearizable)
        .map(|&name| {
            let violations = match name {
                "mutex" => check_mutex(history, params.end_ns),
                "token-order" => check_token_order(history),
                "fencing" => check_fencing(history),
                "counter" => check_counter(history),
                "liveness" => check_liveness(history, params.end_ns, params.liveness_ns),
                "lock-linearizable" => return linearizable(name, history, "fenced-lock"),
                "storage-linearizable" => {
                    // The storage's own log of what it served is the object's history.
                    let storage: Vec<Event> = history
                        .iter()
                        .filter(|e| e.process == "storage")
                        .cloned()
                        .collect();
                    return linearizable(name, &storage, "fenced-register");
                }
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

/// A linearizability check of `events` against `model`, as a report.
fn linearizable(name: &'static str, events: &[Event], model: &str) -> CheckReport {
    use crate::linearizability::{check_events, LinVerdict};
    let (verdict, violations) = match check_events(events, model, None, Some(LIN_BUDGET)) {
        Err(e) => (
            Verdict::Violated,
            vec![Violation::new(
                format!("the history is malformed for the {model} model: {e}"),
                vec![],
            )],
        ),
        Ok(out) => match &out.verdict {
            LinVerdict::Linearizable => (Verdict::Holds, vec![]),
            LinVerdict::Unknown => (Verdict::Unknown, vec![]),
            LinVerdict::NotLinearizable(x) => {
                // Name the events: the failing op and those concurrent with it.
                let mut idx: Vec<u64> = Vec::new();
                for &i in std::iter::once(&x.failing).chain(x.concurrent.iter()) {
                    if let Some(op) = out.op_info(i) {
                        // `line` is the 1-based position of the invocation in `events`.
                        if op.line > 0 {
                            idx.push(op.line as u64 - 1);
                        }
                    }
                }
                let idx = idx
                    .into_iter()
                    .filter_map(|i| events.get(i as usize).map(|e| e.index))
                    .collect();
                (Verdict::Violated, vec![Violation::new(out.summary(), idx)])
            }
        },
    };
    CheckReport {
        name,
        verdict,
        violations,
    }
}
