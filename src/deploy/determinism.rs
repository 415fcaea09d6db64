//! The run-twice check a user puts in their tests: a seed run twice must give the same
//! history bytes (the JSONL form), and no node may have started tasks outside its node
//! context. On a difference it names the first differing event and the node (process)
//! that recorded it in each run.

use crate::history::{to_jsonl, Event};
use crate::scenario::Scenario;
use crate::sim::{check_tokio_seeded, UnseededTokio};
use std::collections::BTreeMap;
use std::fmt;

/// Why [`check_determinism`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nondeterminism {
    /// The build cannot seed tokio's RNG: nothing was run.
    Unseeded(UnseededTokio),
    /// The two runs' histories differ.
    Differs(HistoryDiff),
    /// Nodes whose code started tasks with `tokio::spawn` (a pause does not freeze
    /// them), with the most seen alive at once: the histories may agree, but a pause
    /// fault does not do what it says on those nodes.
    EscapedTasks(BTreeMap<String, usize>),
}

/// Where two runs of one seed first part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryDiff {
    /// The seed.
    pub seed: u64,
    /// The index (0-based line of the JSONL) of the first event that differs.
    pub index: usize,
    /// That event in the first run (`None`: the first run's history ended before it).
    pub first: Option<DiffEvent>,
    /// That event in the second run.
    pub second: Option<DiffEvent>,
}

/// One side of a [`HistoryDiff`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffEvent {
    /// The node (process) that recorded it.
    pub process: String,
    /// Its JSONL line.
    pub line: String,
}

impl fmt::Display for Nondeterminism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Nondeterminism::Unseeded(e) => e.fmt(f),
            Nondeterminism::Differs(d) => {
                let node = |e: &Option<DiffEvent>| {
                    e.as_ref()
                        .map_or("(history ended)".to_string(), |e| e.process.clone())
                };
                let line = |e: &Option<DiffEvent>| {
                    e.as_ref().map_or("(none)".to_string(), |e| e.line.clone())
                };
                write!(
                    f,
                    "seed {} is not deterministic: the histories of two runs first differ at \
                     event {} (node {} in the first run, node {} in the second)\n  first:  {}\n  \
                     second: {}",
                    d.seed,
                    d.index,
                    node(&d.first),
                    node(&d.second),
                    line(&d.first),
                    line(&d.second)
                )
            }
            Nondeterminism::EscapedTasks(nodes) => {
                let list: Vec<String> = nodes
                    .iter()
                    .map(|(n, k)| format!("{n} ({k} at once)"))
                    .collect();
                write!(
                    f,
                    "tasks escaped the node context on {}: they were started with \
                     `tokio::spawn`, so a pause does not freeze them; spawn through \
                     NodeCtx::spawn",
                    list.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for Nondeterminism {}

/// Run `scenario` with `seed` twice and compare: the build must seed tokio, the two
/// histories must be byte-identical in their JSONL form, and no node may have started
/// tasks outside its node context. The error names the first differing event and its
/// node in each run.
pub fn check_determinism(scenario: &Scenario, seed: u64) -> Result<(), Nondeterminism> {
    check_tokio_seeded().map_err(Nondeterminism::Unseeded)?;
    let a = crate::run(scenario, seed);
    let b = crate::run(scenario, seed);
    if let Some(diff) = first_difference(seed, &a.history, &b.history) {
        return Err(Nondeterminism::Differs(diff));
    }
    if !a.escaped_tasks.is_empty() {
        return Err(Nondeterminism::EscapedTasks(a.escaped_tasks));
    }
    Ok(())
}

/// [`check_determinism`], panicking with its message: for a `#[test]`.
#[track_caller]
pub fn assert_deterministic(scenario: &Scenario, seed: u64) {
    if let Err(e) = check_determinism(scenario, seed) {
        panic!("{e}");
    }
}

/// The first event whose JSONL line differs between two histories, if any.
pub(crate) fn first_difference(seed: u64, a: &[Event], b: &[Event]) -> Option<HistoryDiff> {
    let (text_a, text_b) = (to_jsonl(a), to_jsonl(b));
    if text_a == text_b {
        return None;
    }
    let (lines_a, lines_b): (Vec<&str>, Vec<&str>) =
        (text_a.lines().collect(), text_b.lines().collect());
    let index =
        (0..lines_a.len().max(lines_b.len())).find(|&i| lines_a.get(i) != lines_b.get(i))?;
    let side = |h: &[Event], lines: &[&str]| {
        Some(DiffEvent {
            process: h.get(index)?.process.clone(),
            line: lines.get(index)?.to_string(),
        })
    };
    Some(HistoryDiff {
        seed,
        index,
        first: side(a, &lines_a),
        second: side(b, &lines_b),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::EventType;

    fn event(index: u64, process: &str, f: &str) -> Event {
        Event {
            index,
            time_ns: index * 1000,
            process: process.into(),
            kind: EventType::Invoke,
            f: f.into(),
            ..Event::default()
        }
    }

    #[test]
    fn equal_histories_have_no_difference() {
        let h = vec![event(0, "client-0", "acquire")];
        assert_eq!(first_difference(1, &h, &h.clone()), None);
    }

    #[test]
    fn the_first_differing_event_and_both_nodes_are_named() {
        let a = vec![
            event(0, "nemesis", "pause"),
            event(1, "client-0", "acquire"),
        ];
        let b = vec![
            event(0, "nemesis", "pause"),
            event(1, "client-1", "acquire"),
        ];
        let d = first_difference(4, &a, &b).unwrap();
        assert_eq!((d.seed, d.index), (4, 1));
        assert_eq!(d.first.as_ref().unwrap().process, "client-0");
        assert_eq!(d.second.as_ref().unwrap().process, "client-1");
        let msg = Nondeterminism::Differs(d).to_string();
        assert!(
            msg.contains("event 1 (node client-0 in the first run, node client-1 in the second)"),
            "{msg}"
        );
    }

    #[test]
    fn a_shorter_history_differs_where_it_ends() {
        let a = vec![event(0, "client-0", "acquire")];
        let d = first_difference(0, &a, &[]).unwrap();
        assert_eq!(d.index, 0);
        assert_eq!(d.second, None);
        assert!(Nondeterminism::Differs(d)
            .to_string()
            .contains("(history ended)"));
    }
}
