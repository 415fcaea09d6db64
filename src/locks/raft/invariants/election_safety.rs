//! `raft-election-safety`: at most one node becomes leader in each term (Raft's Election
//! Safety), over the `leader` {term} events.

use super::{capped, is_raft, ms};
use crate::check::{Check, CheckReport, Violation};
use crate::history::values::Leader;
use crate::history::{names, Event, EventValue};
use std::collections::BTreeMap;

/// `raft-election-safety` (see the module docs).
pub(crate) fn check_election_safety(history: &[Event]) -> Vec<Violation> {
    let mut leaders: BTreeMap<u64, &Event> = BTreeMap::new();
    let mut out = Vec::new();
    for e in history
        .iter()
        .filter(|e| is_raft(e) && e.f == names::LEADER)
    {
        let Some(Leader { term }) = Leader::of(e) else {
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

/// `raft-election-safety`.
pub(crate) static ELECTION_SAFETY: Check = Check {
    name: "raft-election-safety",
    about: "at most one Raft node becomes leader in each term",
    kind: crate::check::CheckKind::Safety,
    run: |h, _| CheckReport::from_violations(ELECTION_SAFETY.name, check_election_safety(h)),
};

#[cfg(test)]
mod tests {
    use super::super::tests::{ev, indexed};
    use super::*;
    use serde_json::json;

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
}
