//! Raft's own invariants as checks, one file each, over the events the nodes record (see
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
//! The family's `lock-linearizable` is the standard check on the history with repeated
//! `expire` records of one log index removed. A node records `expire` when it applies a
//! revoke that removes a lock's owner key and it committed that entry as leader; a later
//! leader that had not applied the entry before taking over (the first crashed, or it
//! restarted itself) records it again. The first record stands: it is the earliest apply
//! anywhere, after the commit and before any node could answer a read showing it.

mod apply;
mod election_safety;
mod lock_linearizable;
mod log;

pub(crate) use apply::APPLY;
pub(crate) use election_safety::ELECTION_SAFETY;
pub(crate) use lock_linearizable::LOCK_LINEARIZABLE;
pub(crate) use log::LOG;

use crate::check::{Violation, MAX_REPORTED};
use crate::history::{Event, EventType};

/// An event a Raft node recorded.
fn is_raft(e: &Event) -> bool {
    e.process.starts_with("raft-") && e.kind == EventType::Event
}

fn ms(ns: u64) -> String {
    format!("{:.1} ms", ns as f64 / 1e6)
}

/// At most [`MAX_REPORTED`] violations, the last one stating the total.
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

#[cfg(test)]
mod tests {
    use crate::history::values::Apply;
    use crate::history::{names, Event, EventType, EventValue};

    pub(super) const MS: u64 = 1_000_000;

    pub(super) fn ev(p: &str, f: &str, t: u64, v: serde_json::Value) -> Event {
        Event::new(p, EventType::Event, f).at(t * MS).value(v)
    }

    pub(super) fn apply(p: &str, t: u64, index: u64, term: u64, hash: u64) -> Event {
        let v = Apply {
            hash: format!("{hash:016x}"),
            index,
            term,
        };
        ev(p, names::APPLY, t, v.to_json())
    }

    pub(super) fn indexed(mut v: Vec<Event>) -> Vec<Event> {
        for (i, e) in v.iter_mut().enumerate() {
            e.index = i as u64;
        }
        v
    }
}
