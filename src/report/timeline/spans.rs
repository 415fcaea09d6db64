//! What the history says lasted a while: fault spans, partitions, leaders, Curator
//! connection states, and grants from a stale view.

use super::*;
use crate::history::values::Leader;
use crate::history::{names, EventValue};

/// A span of a fault on one node.
pub(super) struct Span<'a> {
    pub(super) node: String,
    pub(super) mark: Mark,
    pub(super) t0: u64,
    pub(super) t1: u64,
    pub(super) event: &'a Event,
}

/// A partition from its event to its heal.
pub(super) struct Cut<'a> {
    pub(super) t0: u64,
    pub(super) t1: u64,
    pub(super) event: &'a Event,
}

/// Fault spans (pause, crash, disk stall) per node, and partitions, from the nemesis
/// events; what is still open at the end lasts until `end`.
pub(super) fn fault_spans(history: &[Event], end: u64) -> (Vec<Span<'_>>, Vec<Cut<'_>>) {
    let mut open: BTreeMap<(String, Mark), &Event> = BTreeMap::new();
    let mut parts: BTreeMap<String, &Event> = BTreeMap::new();
    let (mut spans, mut cuts) = (Vec::new(), Vec::new());
    let id = |e: &Event| e.value.as_ref().map(|v| v["id"].to_string());
    for e in history.iter().filter(|e| e.process == "nemesis") {
        let nodes = e.nodes.clone().unwrap_or_default();
        let (start, stop) = match e.f.as_str() {
            names::PAUSE => (Some(Mark::Pause), None),
            names::CRASH => (Some(Mark::Crash), None),
            names::DISK_STALL => (Some(Mark::DiskStall), None),
            names::RESUME => (None, Some(Mark::Pause)),
            names::RESTART => (None, Some(Mark::Crash)),
            names::DISK_READY => (None, Some(Mark::DiskStall)),
            _ => (None, None),
        };
        for n in nodes {
            if let Some(m) = start {
                open.entry((n.clone(), m)).or_insert(e);
            }
            if let Some(m) = stop {
                if let Some(s) = open.remove(&(n.clone(), m)) {
                    spans.push(Span {
                        node: n,
                        mark: m,
                        t0: s.time_ns,
                        t1: e.time_ns,
                        event: s,
                    });
                }
            }
        }
        if e.f == names::PARTITION {
            parts.insert(id(e).unwrap_or_default(), e);
        } else if e.f == names::HEAL {
            let healed: Vec<String> = match id(e) {
                Some(i) if i == "\"all\"" => parts.keys().cloned().collect(),
                Some(i) => vec![i],
                None => vec![],
            };
            for i in healed {
                if let Some(s) = parts.remove(&i) {
                    cuts.push(Cut {
                        t0: s.time_ns,
                        t1: e.time_ns,
                        event: s,
                    });
                }
            }
        }
    }
    for ((node, mark), s) in open {
        spans.push(Span {
            node,
            mark,
            t0: s.time_ns,
            t1: end.max(s.time_ns),
            event: s,
        });
    }
    for s in parts.into_values() {
        cuts.push(Cut {
            t0: s.time_ns,
            t1: end.max(s.time_ns),
            event: s,
        });
    }
    cuts.sort_by_key(|c| (c.t0, c.event.index));
    (spans, cuts)
}

/// Leader bars: (node, term, from, to, event). A leader's bar ends when a leader of a
/// higher term appears, when its node crashes, or at `end`.
pub(super) fn leader_bars(history: &[Event], end: u64) -> Vec<(String, u64, u64, u64, &Event)> {
    let leaders: Vec<(&Event, u64)> = history
        .iter()
        .filter(|e| e.kind == EventType::Event && e.f == names::LEADER && e.process != "nemesis")
        .map(|e| (e, Leader::of(e).map_or(0, |l| l.term)))
        .collect();
    leaders
        .iter()
        .map(|&(e, term)| {
            let next = leaders
                .iter()
                .filter(|(o, t)| *t > term && o.index > e.index)
                .map(|(o, _)| o.time_ns)
                .min();
            let crash = history
                .iter()
                .filter(|c| c.index > e.index && c.process == "nemesis" && c.f == names::CRASH)
                .find(|c| c.nodes.iter().flatten().any(|n| *n == e.process))
                .map(|c| c.time_ns);
            let t1 = [next, crash].into_iter().flatten().min().unwrap_or(end);
            (e.process.clone(), term, e.time_ns, t1.max(e.time_ns), e)
        })
        .collect()
}

/// Connection bands of Curator clients: (client, mark, from, to, event) while SUSPENDED
/// or LOST, until the client's next connection event or `end`.
pub(super) fn connection_bands(
    history: &[Event],
    end: u64,
) -> Vec<(String, Mark, u64, u64, &Event)> {
    let mut last: BTreeMap<&str, &Event> = BTreeMap::new();
    let mut out = Vec::new();
    let state = |e: &Event| match e.value.as_ref().and_then(Value::as_str) {
        Some("SUSPENDED") => Some(Mark::Suspended),
        Some("LOST") => Some(Mark::Lost),
        _ => None,
    };
    let conn = |e: &&Event| e.kind == EventType::Event && e.f == names::CONNECTION;
    for e in history.iter().filter(conn) {
        if let Some(prev) = last.insert(e.process.as_str(), e) {
            if let Some(m) = state(prev) {
                out.push((prev.process.clone(), m, prev.time_ns, e.time_ns, prev));
            }
        }
    }
    for prev in last.into_values() {
        if let Some(m) = state(prev) {
            out.push((
                prev.process.clone(),
                m,
                prev.time_ns,
                end.max(prev.time_ns),
                prev,
            ));
        }
    }
    out
}

/// Stale grants: acquire `ok`s whose token is lower than one granted earlier on the same
/// lock, with that earlier grant.
pub(super) fn stale_grants(history: &[Event]) -> Vec<(&Event, &Event)> {
    let mut best: BTreeMap<&str, &Event> = BTreeMap::new();
    let mut out = Vec::new();
    for e in history
        .iter()
        .filter(|e| e.kind == EventType::Ok && e.f == names::ACQUIRE)
    {
        let (Some(lock), Some(tok)) = (e.lock.as_deref(), e.token) else {
            continue;
        };
        match best.get(lock) {
            Some(b) if b.token.is_some_and(|t| t > tok) => out.push((e, *b)),
            _ => {
                best.insert(lock, e);
            }
        }
    }
    out
}
