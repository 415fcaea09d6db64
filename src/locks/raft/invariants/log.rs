//! `raft-log`: a committed entry is never changed or lost (Raft's Log Matching and State
//! Machine Safety, as observed): every `apply` of index *i*, by any node and in any
//! incarnation, carries the same term and hash.

use super::{capped, is_raft, ms};
use crate::check::{Check, CheckReport, Violation};
use crate::history::values::Apply;
use crate::history::{names, Event, EventValue};
use std::collections::{BTreeMap, BTreeSet};

/// `raft-log` (see the module docs).
pub(crate) fn check_log(history: &[Event]) -> Vec<Violation> {
    let mut first: BTreeMap<u64, (&Event, u64, String)> = BTreeMap::new();
    let mut out = Vec::new();
    let mut reported: BTreeSet<(u64, &str)> = BTreeSet::new();
    for e in history.iter().filter(|e| is_raft(e) && e.f == names::APPLY) {
        let Some(Apply { hash, index, term }) = Apply::of(e) else {
            continue;
        };
        match first.get(&index) {
            None => {
                first.insert(index, (e, term, hash));
            }
            Some(&(f, t, ref h)) if (t, h) != (term, &hash) => {
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

/// `raft-log`.
pub(crate) static LOG: Check = Check {
    name: "raft-log",
    about: "a committed Raft entry is never changed or lost: every apply of an index carries the same entry",
    kind: crate::check::CheckKind::Safety,
    run: |h, _| CheckReport::from_violations(LOG.name, check_log(h)),
};

#[cfg(test)]
mod tests {
    use super::super::tests::{apply, indexed};
    use super::*;

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
}
