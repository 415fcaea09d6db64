//! `lock-linearizable` and `storage-linearizable`: the lock service's and the storage's
//! histories against the fenced-lock and fenced-register specs, with the engine in
//! [`crate::linearizability`].
//!
//! `lock-linearizable` needs one authoritative lock service whose expirations are the
//! lock's (a single Redis, a replicated service); algorithms without one (Redlock) leave
//! it out of their checks.

use super::{Check, CheckReport, Verdict, Violation};
use crate::history::Event;

/// Wall-clock budget of each linearizability check in a run: generous, because an
/// `unknown` verdict depends on the machine's speed (histories of a seed check in
/// milliseconds; the budget only guards against a pathological search).
pub const LIN_BUDGET: std::time::Duration = std::time::Duration::from_secs(30);

/// The `lock-linearizable` check.
pub static LOCK: Check = Check {
    name: "lock-linearizable",
    about: "the lock service's acquire/release/expire history is linearizable against the fenced-lock spec",
    kind: crate::check::CheckKind::Safety,
    run: |h, _| linearizable(LOCK.name, h, "fenced-lock"),
};

/// The `storage-linearizable` check.
pub static STORAGE: Check = Check {
    name: "storage-linearizable",
    about: "the storage's log is linearizable against the fenced-register spec",
    kind: crate::check::CheckKind::Safety,
    run: |h, _| {
        // The storage's own log of what it served is the object's history.
        let storage: Vec<Event> = h
            .iter()
            .filter(|e| e.process == "storage")
            .cloned()
            .collect();
        linearizable(STORAGE.name, &storage, "fenced-register")
    },
};

/// The full explanation of a violated `lock-linearizable` or `storage-linearizable`
/// check on `history` (the per-seed report carries one line; a replay asks for this).
pub fn explanation(history: &[Event], check: &str) -> Option<String> {
    use crate::linearizability::check_events;
    let (events, model): (Vec<Event>, &str) = match check {
        c if c == LOCK.name => (history.to_vec(), "fenced-lock"),
        c if c == STORAGE.name => (
            history
                .iter()
                .filter(|e| e.process == "storage")
                .cloned()
                .collect(),
            "fenced-register",
        ),
        _ => return None,
    };
    let out = check_events(&events, model, None, Some(LIN_BUDGET)).ok()?;
    Some(out.text())
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
        kind: super::CheckKind::Safety,
        verdict,
        violations,
    }
}
