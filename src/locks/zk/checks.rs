//! The family's `lock-linearizable`: the standard check on the history with duplicate
//! `expire` records removed.
//!
//! A server records `expire` when it applies a session close that deletes a lock's
//! owner node; every server of an ensemble applies it, and a restarted server applies
//! its whole log again. Each record carries the transaction's zxid: the first record of
//! each (lock, zxid) stands — the earliest apply anywhere, which follows the commit and
//! precedes any server answering a read that shows the deletion.

use crate::check::{
    Check, CheckParams, CheckReport, LOCK_LINEARIZABLE as STANDARD_LOCK_LINEARIZABLE,
};
use crate::history::values::ZkExpire;
use crate::history::{names, Event, EventType, EventValue};
use std::collections::BTreeSet;

/// `lock-linearizable` for `algorithm = "zk"`.
pub(crate) static LOCK_LINEARIZABLE: Check = Check {
    name: crate::check::LOCK_LINEARIZABLE.name,
    about: "the lock service's acquire/release/expire history is linearizable against the fenced-lock spec (one expire per zxid)",
    kind: crate::check::CheckKind::Safety,
    run: check,
};

/// The history with only the first `expire` of each (lock, zxid).
pub(crate) fn dedupe_expires(history: &[Event]) -> Vec<Event> {
    let mut seen: BTreeSet<(String, u64)> = BTreeSet::new();
    history
        .iter()
        .filter(|e| {
            if e.kind != EventType::Event || e.f != names::EXPIRE || !e.process.starts_with("zk-") {
                return true;
            }
            let zxid = ZkExpire::of(e).map(|x| x.zxid);
            match (e.key.clone(), zxid) {
                (Some(k), Some(z)) => seen.insert((k, z)),
                _ => true,
            }
        })
        .cloned()
        .collect()
}

fn check(history: &[Event], params: &CheckParams) -> CheckReport {
    (STANDARD_LOCK_LINEARIZABLE.run)(&dedupe_expires(history), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_record_of_each_zxid_stands() {
        let ex = |p: &str, zxid: u64| {
            let value = ZkExpire {
                node: "/locks/L/n".into(),
                session: "0x1".into(),
                zxid,
            };
            Event::new(p, EventType::Event, names::EXPIRE)
                .key("L")
                .value(value.to_json())
        };
        let h = vec![ex("zk-0", 7), ex("zk-1", 7), ex("zk-1", 9), ex("zk-0", 7)];
        let d = dedupe_expires(&h);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].process, "zk-0");
        assert_eq!(ZkExpire::of(&d[1]).map(|x| x.zxid), Some(9));
    }
}
