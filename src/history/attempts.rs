//! Acquire attempts: each client's acquire from its invoke to how it ended, in true time.
//!
//! The fairness check and the cost metrics both reason about who was waiting for a lock
//! when; this is their one reading of the history, so they cannot disagree.
//!
//! # Rules
//!
//! Walking the history in recording (true-time) order:
//!
//! - an acquire `invoke` by a process **starts** an attempt on the invoke's `lock`; if the
//!   process still had one open, that one ends [`Outcome::Abandoned`] at this invoke (a
//!   client issues one acquire at a time: a new invoke means it stopped waiting);
//! - the process's next acquire `ok` / `fail` / `info` **ends** it
//!   [`Outcome::Granted`] / [`Outcome::Failed`] / [`Outcome::Indeterminate`] (a
//!   completion with no open attempt is ignored);
//! - a nemesis `crash` whose `nodes` name the process ends its open attempt
//!   [`Outcome::Crashed`]: a crashed client waits for nothing;
//! - an attempt still open at the end of the history has no end (it was still waiting).

use super::{names, Event, EventType};
use std::collections::BTreeMap;

/// How an acquire attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `ok`: the lock was granted.
    Granted,
    /// `fail`: definitely not granted (refused, timed out).
    Failed,
    /// `info`: may or may not have been granted.
    Indeterminate,
    /// The client crashed while waiting.
    Crashed,
    /// The client invoked another acquire without this one completing.
    Abandoned,
}

/// The end of an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct End {
    /// True time, ns.
    pub ns: u64,
    /// Index of the event that ended it.
    pub event: u64,
    /// How.
    pub outcome: Outcome,
}

/// One acquire attempt of one client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt<'a> {
    /// The client.
    pub process: &'a str,
    /// The lock it asked for (the invoke's `lock`).
    pub lock: Option<&'a str>,
    /// True time of the invoke, ns.
    pub invoke_ns: u64,
    /// Index of the invoke event.
    pub invoke_event: u64,
    /// How and when it ended; `None` when it was still waiting at the end of the history.
    pub end: Option<End>,
}

impl Attempt<'_> {
    /// Whether the lock was granted (`ok`).
    pub fn granted(&self) -> bool {
        self.end.is_some_and(|e| e.outcome == Outcome::Granted)
    }

    /// Whether the client was still waiting at true time `ns` (invoked at or before it,
    /// not ended at or before it).
    pub fn waiting_at(&self, ns: u64) -> bool {
        self.invoke_ns <= ns && self.end.is_none_or(|e| e.ns > ns)
    }
}

/// Every acquire attempt in `history`, in invoke order (see the module docs).
pub fn acquire_attempts(history: &[Event]) -> Vec<Attempt<'_>> {
    let mut out: Vec<Attempt<'_>> = Vec::new();
    let mut open: BTreeMap<&str, usize> = BTreeMap::new();
    let close = |out: &mut Vec<Attempt<'_>>, i: usize, e: &Event, outcome| {
        out[i].end = Some(End {
            ns: e.time_ns,
            event: e.index,
            outcome,
        });
    };
    for e in history {
        let outcome = match (e.kind, e.f.as_str()) {
            (EventType::Invoke, names::ACQUIRE) => {
                if let Some(i) = open.insert(e.process.as_str(), out.len()) {
                    close(&mut out, i, e, Outcome::Abandoned);
                }
                out.push(Attempt {
                    process: e.process.as_str(),
                    lock: e.lock.as_deref(),
                    invoke_ns: e.time_ns,
                    invoke_event: e.index,
                    end: None,
                });
                continue;
            }
            (EventType::Ok, names::ACQUIRE) => Outcome::Granted,
            (EventType::Fail, names::ACQUIRE) => Outcome::Failed,
            (EventType::Info, names::ACQUIRE) => Outcome::Indeterminate,
            (EventType::Event, names::CRASH) if e.process == "nemesis" => {
                for node in e.nodes.iter().flatten() {
                    if let Some(i) = open.remove(node.as_str()) {
                        close(&mut out, i, e, Outcome::Crashed);
                    }
                }
                continue;
            }
            _ => continue,
        };
        if let Some(i) = open.remove(e.process.as_str()) {
            close(&mut out, i, e, outcome);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::tests::indexed;
    use crate::history::EventType::{Event as Ev, Fail, Info, Invoke, Ok};

    fn acq(p: &str, kind: EventType, t: u64) -> Event {
        Event::new(p, kind, names::ACQUIRE).at(t).lock("L")
    }

    #[test]
    fn attempts_end_by_completion_reinvoke_and_crash() {
        let h = indexed(vec![
            acq("client-0", Invoke, 1),
            acq("client-1", Invoke, 2),
            acq("client-2", Invoke, 3),
            acq("client-3", Invoke, 4),
            acq("client-0", Ok, 5),
            acq("client-1", Fail, 6),
            acq("client-2", Invoke, 7),
            Event::new("nemesis", Ev, names::CRASH)
                .at(8)
                .nodes(vec!["client-3".into()]),
            acq("client-3", Info, 9), // after the crash: no open attempt, ignored
            acq("client-4", Ok, 10),  // no invoke: ignored
        ]);
        let a = acquire_attempts(&h);
        let how: Vec<_> = a.iter().map(|a| a.end.map(|e| (e.ns, e.outcome))).collect();
        assert_eq!(
            how,
            [
                Some((5, Outcome::Granted)),
                Some((6, Outcome::Failed)),
                Some((7, Outcome::Abandoned)),
                Some((8, Outcome::Crashed)),
                None,
            ]
        );
        assert!(a[0].granted() && !a[1].granted());
        assert!(a[4].waiting_at(100) && !a[0].waiting_at(5) && a[0].waiting_at(4));
    }
}
