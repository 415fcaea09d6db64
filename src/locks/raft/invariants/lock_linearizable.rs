//! `lock-linearizable` for Raft: the standard check on the history without duplicate
//! `expire` records (see [`super`]).

use super::is_raft;
use crate::check::{
    Check, CheckParams, CheckReport, LOCK_LINEARIZABLE as STANDARD_LOCK_LINEARIZABLE,
};
use crate::history::values::RaftExpire;
use crate::history::{names, Event, EventValue};
use std::collections::BTreeSet;

/// The history with every `expire` of a log index after its first record removed.
pub(crate) fn dedup_expires(history: &[Event]) -> Vec<Event> {
    let mut seen = BTreeSet::new();
    history
        .iter()
        .filter(|e| {
            if !(is_raft(e) && e.f == names::EXPIRE) {
                return true;
            }
            match RaftExpire::of(e) {
                None => true,
                Some(x) => seen.insert(x.index),
            }
        })
        .cloned()
        .collect()
}

/// `lock-linearizable` for Raft: the standard check without duplicate `expire` records.
pub(crate) static LOCK_LINEARIZABLE: Check = Check {
    name: crate::check::LOCK_LINEARIZABLE.name,
    about: "the lock service's acquire/release/expire history is linearizable against the fenced-lock spec",
    kind: crate::check::CheckKind::Safety,
    run: lock_linearizable,
};

fn lock_linearizable(history: &[Event], params: &CheckParams) -> CheckReport {
    (STANDARD_LOCK_LINEARIZABLE.run)(&dedup_expires(history), params)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ev, indexed};
    use super::*;
    use serde_json::json;

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
