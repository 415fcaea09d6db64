//! Who held and who waited for each lock over time: one sweep over the change points of
//! the hold intervals and the acquire attempts, giving whether each attempt met
//! contention at its invoke and how long some lock was wanted but free.
//!
//! At an instant `t`, a hold `[start, end)` holds and an attempt waits from its invoke up
//! to (not including) its end, as [`Attempt::waiting_at`] says: every change at `t` is
//! applied before the state at `t` is read.

use crate::check::Hold;
use crate::history::Attempt;
use std::collections::BTreeMap;

/// The sweep's result.
pub(super) struct Occupancy {
    /// Per attempt (same order): whether at its invoke another process held its lock or
    /// another attempt waited for it.
    pub contended: Vec<bool>,
    /// True time during which some lock had a waiter and no holder, ns.
    pub unavailable_ns: u64,
}

/// Holders and waiters of one lock.
#[derive(Default, Clone)]
struct State<'a> {
    /// Holds open per holding process.
    holders: BTreeMap<&'a str, i64>,
    waiting: i64,
}

impl State<'_> {
    fn held(&self) -> bool {
        self.holders.values().any(|&n| n > 0)
    }
}

/// One change at an instant: a process's holds of a lock, or its waiters.
enum Change<'a> {
    Held(&'a str, i64),
    Waiting(i64),
}

/// Where an attempt stops waiting for the sweep: its end, or the end of the run.
fn wait_end(a: &Attempt<'_>, end_ns: u64) -> u64 {
    a.end.map_or(end_ns, |e| e.ns).min(end_ns)
}

/// Sweep `attempts` and `holds` up to `end_ns` (see the module docs).
pub(super) fn occupancy(attempts: &[Attempt<'_>], holds: &[Hold], end_ns: u64) -> Occupancy {
    // (time, lock, change); the invokes to read at, by time.
    let mut changes: Vec<(u64, &str, Change)> = Vec::new();
    let mut invokes: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (i, a) in attempts.iter().enumerate() {
        let lock = a.lock.unwrap_or("");
        let end = wait_end(a, end_ns);
        if a.invoke_ns < end {
            changes.push((a.invoke_ns, lock, Change::Waiting(1)));
            changes.push((end, lock, Change::Waiting(-1)));
        }
        invokes.entry(a.invoke_ns).or_default().push(i);
    }
    for h in holds.iter().filter(|h| h.start_ns < h.end_ns.min(end_ns)) {
        let (lock, process) = (h.lock.as_str(), h.process.as_str());
        changes.push((h.start_ns, lock, Change::Held(process, 1)));
        changes.push((h.end_ns.min(end_ns), lock, Change::Held(process, -1)));
    }
    changes.sort_by_key(|c| c.0);
    let mut state: BTreeMap<&str, State> = BTreeMap::new();
    let mut contended = vec![false; attempts.len()];
    let mut unavailable_ns = 0u64;
    let mut stuck_since: Option<u64> = None;
    let mut next = 0;
    // Every instant where something changes or someone invokes, in order.
    let mut instants: Vec<u64> = changes.iter().map(|c| c.0).collect();
    instants.extend(invokes.keys());
    instants.sort_unstable();
    instants.dedup();
    for t in instants {
        while let Some((_, lock, change)) = changes.get(next).filter(|c| c.0 == t) {
            let s = state.entry(lock).or_default();
            match change {
                Change::Held(p, d) => *s.holders.entry(p).or_default() += d,
                Change::Waiting(d) => s.waiting += *d,
            }
            next += 1;
        }
        for &i in invokes.get(&t).into_iter().flatten() {
            contended[i] = is_contended(&attempts[i], &state, end_ns);
        }
        let stuck = state.values().any(|s| s.waiting > 0 && !s.held());
        match (stuck, stuck_since) {
            (true, None) => stuck_since = Some(t),
            (false, Some(since)) => {
                unavailable_ns += t - since;
                stuck_since = None;
            }
            _ => {}
        }
    }
    if let Some(since) = stuck_since {
        unavailable_ns += end_ns.saturating_sub(since);
    }
    Occupancy {
        contended,
        unavailable_ns,
    }
}

/// Whether, at its invoke, another attempt waited for `a`'s lock or another process held
/// it. `state` counts `a` itself among the waiters (when it waits at all); a hold by `a`'s
/// own process (a client acquiring a lock it holds) is not contention.
fn is_contended(a: &Attempt<'_>, state: &BTreeMap<&str, State<'_>>, end_ns: u64) -> bool {
    let Some(s) = state.get(a.lock.unwrap_or("")) else {
        return false;
    };
    let own_wait = i64::from(a.invoke_ns < wait_end(a, end_ns));
    s.waiting - own_wait > 0 || s.holders.iter().any(|(p, &n)| *p != a.process && n > 0)
}
