//! Raft's own invariants as checks over the events the nodes record (see
//! [`super::node`]): so a lock violation is never a Raft bug in disguise.
//!
//! | name | what it checks |
//! |---|---|
//! | `raft-election-safety` | at most one node becomes leader in each term (`leader` events) |
//! | `raft-log` | a committed entry is never changed or lost: every apply of index *i*, by any node and in any incarnation, carries the same term and hash |
//! | `raft-apply` | each node applies indices 1, 2, 3, … without gaps or repeats, from 1 again after each restart; with `raft-log`, every node's applied sequence is a prefix of the others' |
//!
//! They hold whenever Raft's assumptions do (a node's disk keeps what it fsynced, and it
//! fsyncs before it acknowledges: `fsync = "always"`). With `fsync = "none"` a crash makes
//! a node forget votes and entries it acknowledged, and `raft-log` (and possibly
//! `raft-election-safety`) fail: `sims/raft-fsync-none.toml`.
//!
//! The family's `lock-linearizable` is the standard check on the history with duplicate
//! `expire` events removed: a node records `expire` when, as the server-level leader, it
//! applies a revoke that removes a lock's owner; a later leader that had not applied that
//! entry yet applies it again as leader (after a crash of the first, or after its own
//! restart). The first record of each log index stands: it is the earliest apply
//! anywhere, after the commit and before any node could answer a read showing it.

use crate::check::{Check, CheckParams, CheckReport, Violation, MAX_REPORTED, STANDARD};
use crate::history::{Event, EventType};
use std::collections::{BTreeMap, BTreeSet};

fn is_raft(e: &Event) -> bool {
    e.process.starts_with("raft-") && e.kind == EventType::Event
}

fn field(e: &Event, name: &str) -> Option<u64> {
    e.value.as_ref()?.get(name)?.as_u64()
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// Collect at most [`MAX_REPORTED`] violations, the last one stating the total.
fn capped(mut all: Vec<Violation>) -> Vec<Violation> {
    let total = all.len();
    if total > MAX_REPORTED {
        all.truncate(MAX_REPORTED);
        if let Some(last) = all.last_mut() {
            last.message.push_str(&format!(
                " [only the first {MAX_REPORTED} of {total} violations are listed]"
            ));
        }
    }
    all
}

/// `raft-election-safety` (see the module docs).
pub fn check_election_safety(history: &[Event]) -> Vec<Violation> {
    let mut leaders: BTreeMap<u64, &Event> = BTreeMap::new();
    let mut out = Vec::new();
    for e in history.iter().filter(|e| is_raft(e) && e.f == "leader") {
        let Some(term) = field(e, "term") else {
            continue;
        };
        match leaders.get(&term) {
            Some(first) if first.process != e.process => out.push(Violation::new(
                format!(
                    "two leaders in term {term}: {} at {} and {} at {}",
                    first.process,
                    ms(first.time_ns),
                    e.process,
                    ms(e.time_ns)
                ),
                vec![first.index, e.index],
            )),
            Some(_) => {}
            None => {
                leaders.insert(term, e);
            }
        }
    }
    capped(out)
}

/// `raft-log` (see the module docs).
pub fn check_log(history: &[Event]) -> Vec<Violation> {
    let mut first: BTreeMap<u64, (&Event, u64, &str)> = BTreeMap::new();
    let mut out = Vec::new();
    let mut reported: BTreeSet<(u64, &str)> = BTreeSet::new();
    for e in history.iter().filter(|e| is_raft(e) && e.f == "apply") {
        let hash = e.value.as_ref().and_then(|v| v.get("hash")?.as_str());
        let (Some(index), Some(term), Some(hash)) = (field(e, "index"), field(e, "term"), hash)
        else {
            continue;
        };
        match first.get(&index) {
            None => {
                first.insert(index, (e, term, hash));
            }
            Some(&(f, t, h)) if (t, h) != (term, hash) => {
                // One report per index and node is enough to tell the story.
                if reported.insert((index, e.process.as_str())) {
                    out.push(Violation::new(
                        format!(
                            "index {index} was applied as two different entries: {} applied \
                             term {t} #{h} at {}, {} applied term {term} #{hash} at {} \
                             (a committed entry was changed or lost)",
                            f.process,
                            ms(f.time_ns),
                            e.process,
                            ms(e.time_ns)
                        ),
                        vec![f.index, e.index],
                    ));
                }
            }
            Some(_) => {}
        }
    }
    capped(out)
}

/// `raft-apply` (see the module docs).
pub fn check_apply(history: &[Event]) -> Vec<Violation> {
    // Per node: the next index it must apply and its last apply event.
    let mut next: BTreeMap<&str, (u64, Option<&Event>)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in history {
        if e.process == "nemesis" && matches!(e.f.as_str(), "crash" | "restart") {
            for n in e.nodes.iter().flatten() {
                next.insert(n.as_str(), (1, None));
            }
            continue;
        }
        if !(is_raft(e) && e.f == "apply") {
            continue;
        }
        let Some(index) = field(e, "index") else {
            continue;
        };
        let (want, last) = next.entry(e.process.as_str()).or_insert((1, None));
        if index != *want {
            let mut events = vec![e.index];
            events.extend(last.map(|l| l.index));
            out.push(Violation::new(
                format!(
                    "{} applied index {index} at {} where index {} was next",
                    e.process,
                    ms(e.time_ns),
                    *want
                ),
                events,
            ));
        }
        *want = index + 1;
        *last = Some(e);
    }
    capped(out)
}

/// The history with every `expire` of a log index after its first record removed.
pub fn dedup_expires(history: &[Event]) -> Vec<Event> {
    let mut seen = BTreeSet::new();
    history
        .iter()
        .filter(|e| {
            if !(is_raft(e) && e.f == "expire") {
                return true;
            }
            match field(e, "index") {
                None => true,
                Some(i) => seen.insert(i),
            }
        })
        .cloned()
        .collect()
}

/// `raft-election-safety`.
pub const ELECTION_SAFETY: Check = Check {
    name: "raft-election-safety",
    about: "at most one Raft node becomes leader in each term",
    run: |h, _| CheckReport::from_violations("raft-election-safety", check_election_safety(h)),
};

/// `raft-log`.
pub const LOG: Check = Check {
    name: "raft-log",
    about: "a committed Raft entry is never changed or lost: every apply of an index carries the same entry",
    run: |h, _| CheckReport::from_violations("raft-log", check_log(h)),
};

/// `raft-apply`.
pub const APPLY: Check = Check {
    name: "raft-apply",
    about: "each Raft node applies indices 1, 2, 3, ... in order (again from 1 after a restart)",
    run: |h, _| CheckReport::from_violations("raft-apply", check_apply(h)),
};

/// `lock-linearizable` for Raft: the standard check without duplicate `expire` records.
pub const LOCK_LINEARIZABLE: Check = Check {
    name: "lock-linearizable",
    about: "the lock service's acquire/release/expire history is linearizable against the fenced-lock spec",
    run: lock_linearizable,
};

fn lock_linearizable(history: &[Event], params: &CheckParams) -> CheckReport {
    let standard = STANDARD
        .iter()
        .find(|c| c.name == "lock-linearizable")
        .expect("lock-linearizable is a standard check");
    (standard.run)(&dedup_expires(history), params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MS: u64 = 1_000_000;

    fn ev(p: &str, f: &str, t: u64, v: serde_json::Value) -> Event {
        Event::new(p, EventType::Event, f).at(t * MS).value(v)
    }

    fn indexed(mut v: Vec<Event>) -> Vec<Event> {
        for (i, e) in v.iter_mut().enumerate() {
            e.index = i as u64;
        }
        v
    }

    fn apply(p: &str, t: u64, index: u64, term: u64, hash: u64) -> Event {
        ev(
            p,
            "apply",
            t,
            json!({"index": index, "term": term, "hash": format!("{hash:016x}")}),
        )
    }

    #[test]
    fn one_leader_per_term() {
        let h = indexed(vec![
            ev("raft-0", "leader", 1, json!({"term": 1})),
            ev("raft-0", "leader", 2, json!({"term": 1})),
            ev("raft-1", "leader", 3, json!({"term": 2})),
        ]);
        assert!(check_election_safety(&h).is_empty());
        let mut bad = h.clone();
        bad.push(ev("raft-2", "leader", 4, json!({"term": 2})));
        let v = check_election_safety(&indexed(bad));
        assert_eq!(v.len(), 1);
        assert!(v[0].message.contains("two leaders in term 2"), "{v:?}");
        assert_eq!(v[0].events, vec![2, 3]);
    }

    #[test]
    fn every_apply_of_an_index_is_the_same_entry() {
        let h = indexed(vec![
            apply("raft-0", 1, 1, 1, 7),
            apply("raft-1", 2, 1, 1, 7),
            apply("raft-0", 3, 2, 1, 8),
        ]);
        assert!(check_log(&h).is_empty());
        let mut bad = h.clone();
        bad.push(apply("raft-2", 9, 2, 2, 9));
        bad.push(apply("raft-2", 9, 2, 2, 9));
        let v = check_log(&indexed(bad));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].message.contains("index 2"), "{v:?}");
        assert!(v[0].message.contains("changed or lost"), "{v:?}");
    }

    #[test]
    fn applies_are_contiguous_and_restart_from_one() {
        let restart = Event::new("nemesis", EventType::Event, "restart")
            .at(5 * MS)
            .nodes(vec!["raft-0".into()]);
        let h = indexed(vec![
            apply("raft-0", 1, 1, 1, 7),
            apply("raft-1", 1, 1, 1, 7),
            apply("raft-0", 2, 2, 1, 8),
            restart.clone(),
            apply("raft-0", 6, 1, 1, 7),
            apply("raft-0", 6, 2, 1, 8),
        ]);
        assert!(check_apply(&h).is_empty(), "{:?}", check_apply(&h));
        let bad = indexed(vec![
            apply("raft-0", 1, 1, 1, 7),
            apply("raft-0", 2, 3, 1, 8),
            apply("raft-0", 3, 3, 1, 8),
        ]);
        let v = check_apply(&bad);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].message.contains("index 3") && v[0].message.contains("index 2 was next"));
    }

    #[test]
    fn duplicate_expires_of_one_index_are_dropped() {
        let expire = |p: &str, t: u64, i: u64| ev(p, "expire", t, json!({"index": i})).key("L");
        let h = indexed(vec![
            expire("raft-0", 1, 5),
            expire("raft-1", 2, 5),
            expire("raft-1", 3, 6),
        ]);
        let d = dedup_expires(&h);
        assert_eq!(d.iter().map(|e| e.index).collect::<Vec<_>>(), vec![0, 2]);
    }
}
