//! `reentrant`: a holder that acquires the lock it holds again gets it at once, and the
//! lock stays its own until its last release. Reads only the history.
//!
//! # What the history holds
//!
//! With `workload.reentrant = true` a holder records, between its (outer) acquire `ok`
//! and its (outer) release `invoke`, an inner acquire (invoke, then ok/fail/info) and,
//! if that succeeded, an inner release; these events carry `"reentrant": true`
//! ([`Event::is_reentrant`]). No other event does.
//!
//! # The check
//!
//! It holds when both hold, for every re-entrant acquire in the history:
//!
//! 1. **At once**: it completes `ok`, within [`AT_ONCE_NS`] of true time of its invoke.
//!    A counted re-entry costs no request (Curator) or one round trip (Redisson's
//!    script); a client that is not re-entrant instead fails (`busy`), or waits for its
//!    own lease to run out or for the lock to pass to another client, which takes at
//!    least a lease or a waiter's turn. A re-entrant acquire still open at the end of
//!    the history, invoked more than [`AT_ONCE_NS`] before it, has waited too.
//! 2. **Held to the last release**: no other process's acquire `ok` on the same lock
//!    falls, in true time, in `[inner release invoke, outer release invoke)`: after the
//!    inner release the outer holder still relies on the lock, so a grant to another
//!    client then means the inner release gave the lock away (etcd's `Unlock`). The
//!    outer release is the holder's next release invoke that is not re-entrant; a crash
//!    of the holder ends the window (a crashed process holds nothing).
//!
//! A history without any re-entrant acquire holds vacuously: re-entry was not
//! exercised (scenarios run this check only when their workload re-enters).
//!
//! Every other check sees the history without the re-entrant events
//! ([`outer_only`]): the outer acquire and release are the program's view of its hold.
use super::report::{ms, Reporter};
use super::{CheckParams, CheckReport, Violation};
use crate::history::{names, Event, EventType};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// The check.
pub static CHECK: super::Check = super::Check {
    name: "reentrant",
    about: "a holder's second acquire of the lock it holds succeeds at once, and no one else is granted before its last release",
    kind: super::CheckKind::Quality,
    run: check_reentrant,
};

/// The longest a re-entrant acquire may take and still count as "at once", ns: 50 ms of
/// true time, above a round trip on the networks of the sims (`latency_ms` up to
/// `[1, 10]`: at most 20 ms) and far below a lease or a waiter's turn.
pub const AT_ONCE_NS: u64 = 50_000_000;

/// The history without re-entrant events (borrowed as is when it has none): what every
/// check but this one reads.
pub fn outer_only(history: &[Event]) -> Cow<'_, [Event]> {
    if history.iter().any(Event::is_reentrant) {
        Cow::Owned(
            history
                .iter()
                .filter(|e| !e.is_reentrant())
                .cloned()
                .collect(),
        )
    } else {
        Cow::Borrowed(history)
    }
}

/// Run the check (see the module docs).
pub fn check_reentrant(history: &[Event], params: &CheckParams) -> CheckReport {
    let mut out = Reporter::new();
    for v in at_once(history, params.end_ns)
        .into_iter()
        .chain(held_to_last(history))
    {
        out.report(|| v);
    }
    CheckReport::from_violations(CHECK.name, out.finish())
}

/// Rule 1: every re-entrant acquire completes `ok` within [`AT_ONCE_NS`].
fn at_once(history: &[Event], end_ns: u64) -> Vec<Violation> {
    let mut pending: BTreeMap<&str, &Event> = BTreeMap::new();
    let mut out = Vec::new();
    for e in history
        .iter()
        .filter(|e| e.is_reentrant() && e.f == names::ACQUIRE)
    {
        if e.kind == EventType::Invoke {
            pending.insert(&e.process, e);
            continue;
        }
        let Some(inv) = pending.remove(e.process.as_str()) else {
            continue;
        };
        let took = e.time_ns.saturating_sub(inv.time_ns);
        let message = match e.kind {
            EventType::Ok if took <= AT_ONCE_NS => continue,
            EventType::Ok => format!(
                "{} re-acquired the lock it held only after waiting {} (at {}; at once is within {})",
                e.process,
                ms(took),
                ms(e.time_ns),
                ms(AT_ONCE_NS)
            ),
            _ => format!(
                "{} could not re-acquire the lock it held: {} at {} after {} ({})",
                e.process,
                e.kind.as_str(),
                ms(e.time_ns),
                ms(took),
                e.reason.as_deref().unwrap_or("no reason given")
            ),
        };
        out.push(Violation::new(message, vec![inv.index, e.index]));
    }
    for inv in pending.into_values() {
        if end_ns.saturating_sub(inv.time_ns) > AT_ONCE_NS {
            out.push(Violation::new(
                format!(
                    "{} was still waiting to re-acquire the lock it held at the end, {} after asking at {}",
                    inv.process,
                    ms(end_ns.saturating_sub(inv.time_ns)),
                    ms(inv.time_ns)
                ),
                vec![inv.index],
            ));
        }
    }
    out
}

/// Rule 2: no other process is granted between a holder's inner and outer release.
fn held_to_last(history: &[Event]) -> Vec<Violation> {
    let grants: Vec<&Event> = history
        .iter()
        .filter(|e| e.kind == EventType::Ok && e.f == names::ACQUIRE && !e.is_reentrant())
        .collect();
    // process -> its inner release invoke, while the window is open
    let mut open: BTreeMap<&str, &Event> = BTreeMap::new();
    let mut out = Vec::new();
    for e in history {
        match (e.kind, e.f.as_str()) {
            (EventType::Invoke, names::RELEASE) if e.is_reentrant() => {
                open.insert(&e.process, e);
            }
            (EventType::Invoke, names::RELEASE) => {
                if let Some(inner) = open.remove(e.process.as_str()) {
                    out.extend(granted_between(&grants, inner, e));
                }
            }
            (EventType::Event, names::CRASH) if e.process == "nemesis" => {
                for node in e.nodes.iter().flatten() {
                    open.remove(node.as_str());
                }
            }
            _ => {}
        }
    }
    out
}

/// A violation for each other process's grant on the same lock in `[inner, outer)`.
fn granted_between(grants: &[&Event], inner: &Event, outer: &Event) -> Vec<Violation> {
    let from = grants.partition_point(|g| g.time_ns < inner.time_ns);
    grants[from..]
        .iter()
        .take_while(|g| g.time_ns < outer.time_ns)
        .filter(|g| g.process != inner.process && g.lock == inner.lock)
        .map(|g| {
            Violation::new(
                format!(
                    "{} was granted the lock at {} while {} still held it: {}'s inner release at {} gave it away before its outer release at {}",
                    g.process,
                    ms(g.time_ns),
                    inner.process,
                    inner.process,
                    ms(inner.time_ns),
                    ms(outer.time_ns)
                ),
                vec![inner.index, g.index, outer.index],
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::tests::indexed;

    fn ev(t_ms: u64, p: &str, kind: EventType, f: &str, inner: bool) -> Event {
        Event::new(p, kind, f)
            .at(t_ms * 1_000_000)
            .lock("L")
            .reentrant(inner)
    }

    fn run(h: Vec<Event>) -> CheckReport {
        let params = CheckParams {
            end_ns: 10_000_000_000,
            liveness_ns: 1,
        };
        check_reentrant(&indexed(h), &params)
    }

    /// acquire, re-acquire (ok after `took` ms), inner release at 100, outer at 200;
    /// client-1 granted at `other` ms.
    fn nested(took: u64, other: u64) -> Vec<Event> {
        use EventType::*;
        let mut h = vec![
            ev(0, "client-0", Invoke, names::ACQUIRE, false),
            ev(1, "client-0", Ok, names::ACQUIRE, false),
            ev(2, "client-0", Invoke, names::ACQUIRE, true),
            ev(2 + took, "client-0", Ok, names::ACQUIRE, true),
            ev(100, "client-0", Invoke, names::RELEASE, true),
            ev(101, "client-0", Ok, names::RELEASE, true),
            ev(200, "client-0", Invoke, names::RELEASE, false),
            ev(201, "client-0", Ok, names::RELEASE, false),
            ev(other, "client-1", Ok, names::ACQUIRE, false),
        ];
        h.sort_by_key(|e| e.time_ns);
        h
    }

    #[test]
    fn a_counted_reentry_holds() {
        assert!(run(nested(0, 300)).violations.is_empty());
        assert!(run(nested(20, 200)).violations.is_empty());
    }

    #[test]
    fn no_reentry_is_vacuous() {
        let h: Vec<Event> = nested(0, 300)
            .into_iter()
            .filter(|e| !e.is_reentrant())
            .collect();
        assert!(run(h).violations.is_empty());
    }

    #[test]
    fn a_slow_or_failed_reentry_is_violated() {
        let r = run(nested(60, 300));
        assert_eq!(r.violations.len(), 1, "{r:?}");
        assert!(r.violations[0].message.contains("waiting"), "{r:?}");
        let mut h = nested(0, 300);
        h[3].kind = EventType::Fail;
        h[3].reason = Some("busy".into());
        h.retain(|e| !(e.is_reentrant() && e.f == names::RELEASE));
        let r = run(h);
        assert!(r.violations[0].message.contains("busy"), "{r:?}");
    }

    #[test]
    fn a_grant_between_the_inner_and_outer_release_is_violated() {
        let r = run(nested(0, 150));
        assert_eq!(r.violations.len(), 1, "{r:?}");
        assert!(r.violations[0].message.contains("gave it away"), "{r:?}");
    }

    #[test]
    fn other_checks_see_only_the_outer_operations() {
        let h = nested(0, 300);
        assert_eq!(outer_only(&h).len(), 5);
        let plain: Vec<Event> = h.iter().filter(|e| !e.is_reentrant()).cloned().collect();
        assert!(matches!(outer_only(&plain), Cow::Borrowed(_)));
    }
}
