//! `raft-apply`: each node applies indices 1, 2, 3, … without gaps or repeats, again from
//! 1 after each crash or restart (a restarted node re-applies its log). With `raft-log`,
//! every node's applied sequence is a prefix of the others'.

use super::{capped, is_raft, ms};
use crate::check::{Check, CheckReport, Violation};
use crate::history::values::AppliedIndex;
use crate::history::{names, Event, EventValue};
use std::collections::BTreeMap;

/// `raft-apply` (see the module docs).
pub(crate) fn check_apply(history: &[Event]) -> Vec<Violation> {
    // Per node: the next index it must apply and its last apply event.
    let mut next: BTreeMap<&str, (u64, Option<&Event>)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in history {
        if e.process == "nemesis" && matches!(e.f.as_str(), names::CRASH | names::RESTART) {
            for n in e.nodes.iter().flatten() {
                next.insert(n.as_str(), (1, None));
            }
            continue;
        }
        if !(is_raft(e) && e.f == names::APPLY) {
            continue;
        }
        let Some(AppliedIndex { index }) = AppliedIndex::of(e) else {
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

/// `raft-apply`.
pub(crate) static APPLY: Check = Check {
    name: "raft-apply",
    about: "each Raft node applies indices 1, 2, 3, ... in order (again from 1 after a restart)",
    kind: crate::check::CheckKind::Safety,
    run: |h, _| CheckReport::from_violations(APPLY.name, check_apply(h)),
};

#[cfg(test)]
mod tests {
    use super::super::tests::MS;
    use super::super::tests::{apply, indexed};
    use super::*;
    use crate::history::EventType;

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
    fn an_apply_with_only_an_index_is_checked() {
        let only_index = |t: u64, index: u64| {
            Event::new("raft-0", EventType::Event, names::APPLY)
                .at(t * MS)
                .value(serde_json::json!({ "index": index }))
        };
        let v = check_apply(&indexed(vec![only_index(1, 1), only_index(2, 3)]));
        assert_eq!(v.len(), 1, "{v:?}");
    }
}
