//! `fair`: nobody who asked earlier is overtaken (FIFO fairness, true time). A
//! [`Quality`](super::CheckKind::Quality) check: people choosing a lock compare it, but a
//! racing lock (Redis `SET NX`, a database `INSERT`) never promised it, so breaking it
//! does not make a seed violating.
//!
//! # Definition
//!
//! Over the [acquire attempts](crate::history::attempts) of the history, a **FIFO
//! inversion** is a pair (grant `g`, waiter `w`) of granted attempts on the same lock by
//! different processes where
//!
//! - `w` was invoked strictly before `g` (`w.invoke < g.invoke`),
//! - `w` was still waiting when `g` was granted (`w`'s grant is strictly after `g`'s), and
//! - `w` was granted later: `g` overtook a client that did get the lock, after.
//!
//! So a waiter that gave up (`fail`), whose outcome is unknown (`info`), that crashed,
//! that invoked again, or that was still waiting at the end of the run is never counted:
//! only an attempt that ends in a grant shows that the lock served it after someone who
//! asked later. Invokes at the same instant are concurrent: neither overtakes the other.
//!
//! The **bypass** of a waiter's attempt is how many grants overtook it; `max bypass` is
//! the largest over the run (a k-bounded-waiting lock keeps it at most k). Invoke order is
//! the clients' (true time), not the server's arrival order: network delay alone can
//! invert two invokes close in time, even on a queue lock.
//!
//! # Report
//!
//! `fair` holds when there is no inversion. Otherwise the first violation states the
//! totals (inversions, grants overtaking someone, max bypass and whose attempt), then one
//! violation per overtaking grant, naming the grantee and every waiter it overtook with
//! their true times; events: the invokes and grants involved.
//!
//! # Cost
//!
//! One pass in event order keeps, per lock, the granted attempts invoked but not yet
//! granted, ordered by invoke; a grant reads those invoked before its own: O(n log n +
//! number of inversions).

use super::report::{ms, Reporter};
use super::Violation;
use crate::history::attempts::{acquire_attempts, Attempt};
use crate::history::Event;
use crate::plural::plural;
use std::collections::BTreeMap;

/// One FIFO inversion: attempt `grant` was granted while the earlier attempt `waiter`
/// waited (indices into the attempts list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Inversion {
    /// The overtaking attempt.
    pub grant: usize,
    /// The overtaken one.
    pub waiter: usize,
}

/// Grant time and event of a granted attempt.
fn grant_of(a: &Attempt<'_>) -> (u64, u64) {
    let end = a.end.expect("granted attempts have an end");
    (end.ns, end.event)
}

/// Every FIFO inversion among `attempts` (see the module docs), in grant order, then by
/// the waiter's invoke.
pub fn fifo_inversions(attempts: &[Attempt<'_>]) -> Vec<Inversion> {
    // Steps in event order: (event index, is grant, attempt).
    let mut steps: Vec<(u64, bool, usize)> = Vec::new();
    for (i, a) in attempts.iter().enumerate().filter(|(_, a)| a.granted()) {
        steps.push((a.invoke_event, false, i));
        steps.push((grant_of(a).1, true, i));
    }
    steps.sort_unstable();
    // lock -> (invoke ns, invoke event) -> attempt: granted attempts still waiting.
    let mut waiting: BTreeMap<Option<&str>, BTreeMap<(u64, u64), usize>> = BTreeMap::new();
    let mut out = Vec::new();
    for (_, is_grant, i) in steps {
        let a = &attempts[i];
        let queue = waiting.entry(a.lock).or_default();
        let key = (a.invoke_ns, a.invoke_event);
        if !is_grant {
            queue.insert(key, i);
            continue;
        }
        queue.remove(&key);
        let granted_ns = grant_of(a).0;
        for &w in queue.range(..(a.invoke_ns, 0)).map(|(_, w)| w) {
            let waiter = &attempts[w];
            if waiter.process != a.process && grant_of(waiter).0 > granted_ns {
                out.push(Inversion {
                    grant: i,
                    waiter: w,
                });
            }
        }
    }
    out
}

/// The largest bypass (grants overtaking one attempt) and that attempt (its index in the
/// attempts), if any.
pub fn max_bypass(inversions: &[Inversion]) -> Option<(usize, usize)> {
    let mut per_waiter: BTreeMap<usize, usize> = BTreeMap::new();
    for inv in inversions {
        *per_waiter.entry(inv.waiter).or_default() += 1;
    }
    // The earliest-invoked attempt among those with the most.
    per_waiter
        .into_iter()
        .map(|(w, n)| (n, std::cmp::Reverse(w)))
        .max()
        .map(|(n, std::cmp::Reverse(w))| (n, w))
}

/// "client-0 (invoked 10.0 ms, granted 300.0 ms)".
fn waiter_words(a: &Attempt<'_>) -> String {
    format!(
        "{} (invoked {}, granted {})",
        a.process,
        ms(a.invoke_ns),
        ms(grant_of(a).0)
    )
}

/// The first violation: totals and the most-overtaken attempt.
fn totals(attempts: &[Attempt<'_>], inversions: &[Inversion], grants: usize) -> Violation {
    let (bypass, w) = max_bypass(inversions).expect("some inversion");
    let waiter = &attempts[w];
    let lock = waiter.lock.unwrap_or("the lock");
    let message = format!(
        "{}: {} overtook a client that asked earlier and was still waiting; max bypass {bypass}: {}'s acquire of {lock} invoked at {} was overtaken by {} before its own at {}",
        plural(inversions.len() as u64, "FIFO inversion"),
        plural(grants as u64, "grant"),
        waiter.process,
        ms(waiter.invoke_ns),
        plural(bypass as u64, "grant"),
        ms(grant_of(waiter).0)
    );
    Violation::new(message, vec![waiter.invoke_event, grant_of(waiter).1])
}

/// One overtaking grant and the waiters it overtook.
fn overtaking(attempts: &[Attempt<'_>], grant: usize, waiters: &[usize]) -> Violation {
    let g = &attempts[grant];
    let names: Vec<String> = waiters
        .iter()
        .map(|&w| waiter_words(&attempts[w]))
        .collect();
    let message = format!(
        "{} was granted {} at {} (invoked {}) while {} that asked earlier still waited and got it later: {}",
        g.process,
        g.lock.unwrap_or("the lock"),
        ms(grant_of(g).0),
        ms(g.invoke_ns),
        plural(waiters.len() as u64, "client"),
        names.join(", ")
    );
    let mut events = vec![g.invoke_event, grant_of(g).1];
    for &w in waiters {
        events.extend([attempts[w].invoke_event, grant_of(&attempts[w]).1]);
    }
    Violation::new(message, events)
}

/// Check `fair` (see the module docs): the totals, then one violation per overtaking
/// grant (at most [`MAX_REPORTED`](super::MAX_REPORTED) listed).
pub fn check_fair(history: &[Event]) -> Vec<Violation> {
    let attempts = acquire_attempts(history);
    let inversions = fifo_inversions(&attempts);
    if inversions.is_empty() {
        return Vec::new();
    }
    let mut by_grant: Vec<(usize, Vec<usize>)> = Vec::new();
    for inv in &inversions {
        match by_grant.last_mut() {
            Some((g, ws)) if *g == inv.grant => ws.push(inv.waiter),
            _ => by_grant.push((inv.grant, vec![inv.waiter])),
        }
    }
    let mut rep = Reporter::new();
    rep.report(|| totals(&attempts, &inversions, by_grant.len()));
    for (g, ws) in &by_grant {
        rep.report(|| overtaking(&attempts, *g, ws));
    }
    rep.finish()
}

/// The `fair` check.
pub static CHECK: super::Check = super::Check {
    name: "fair",
    about: "FIFO: no acquire is granted while a client that asked earlier still waits and is granted later (quality, not safety)",
    kind: super::CheckKind::Quality,
    run: |h, _| super::CheckReport::from_violations(CHECK.name, check_fair(h)),
};

#[cfg(test)]
#[path = "fair_tests.rs"]
mod tests;
