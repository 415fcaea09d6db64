use super::*;
use crate::check::tests::{acq, indexed, rel, MS};
use crate::history::names;
use crate::history::EventType::{self, Event as Ev, Fail, Info, Invoke, Ok};
use proptest::prelude::*;

/// Three clients queue at 1, 2, 3 ms and are served in that order.
#[test]
fn a_fifo_history_holds() {
    let h = indexed(vec![
        acq("client-0", Invoke, 1),
        acq("client-1", Invoke, 2),
        acq("client-2", Invoke, 3),
        acq("client-0", Ok, 4),
        rel("client-0", 5),
        acq("client-1", Ok, 6),
        rel("client-1", 7),
        acq("client-0", Invoke, 8), // asks again: behind client-2
        acq("client-2", Ok, 9),
        rel("client-2", 10),
        acq("client-0", Ok, 11),
    ]);
    assert_eq!(check_fair(&h), []);
}

/// client-2 asks last but is served first, overtaking client-0 and client-1; then
/// client-1 overtakes client-0: three inversions, client-0 overtaken twice.
#[test]
fn a_bypass_is_counted_and_named() {
    let h = indexed(vec![
        acq("client-0", Invoke, 1),
        acq("client-1", Invoke, 2),
        acq("client-2", Invoke, 3),
        acq("client-2", Ok, 4),
        rel("client-2", 5),
        acq("client-1", Ok, 6),
        rel("client-1", 7),
        acq("client-0", Ok, 8),
    ]);
    let v = check_fair(&h);
    assert_eq!(v.len(), 3, "{v:#?}");
    assert!(
        v[0].message.starts_with(
            "3 FIFO inversions: 2 grants overtook a client that asked earlier and was still waiting; max bypass 2: client-0's acquire of L invoked at 1.0 ms was overtaken by 2 grants before its own at 8.0 ms"
        ),
        "{}",
        v[0].message
    );
    assert_eq!(v[0].events, [0, 7]);
    assert_eq!(
        v[1].message,
        "client-2 was granted L at 4.0 ms (invoked 3.0 ms) while 2 clients that asked earlier still waited and got it later: client-0 (invoked 1.0 ms, granted 8.0 ms), client-1 (invoked 2.0 ms, granted 6.0 ms)"
    );
    assert_eq!(v[1].events, [0, 1, 2, 3, 5, 7]);
    assert!(v[2].message.starts_with("client-1 was granted L at 6.0 ms"));
}

/// A waiter that gave up, is indeterminate, crashed or asked again is not overtaken;
/// neither is one that asked at the same instant.
#[test]
fn waiters_that_never_got_the_lock_are_not_bypassed() {
    let h = indexed(vec![
        acq("client-0", Invoke, 1),
        acq("client-1", Invoke, 1),
        acq("client-2", Invoke, 1),
        acq("client-3", Invoke, 1),
        acq("client-5", Invoke, 2),
        acq("client-4", Invoke, 2), // concurrent with client-5
        acq("client-4", Ok, 3),
        acq("client-0", Fail, 4),
        acq("client-1", Info, 5),
        Event::new("nemesis", Ev, names::CRASH)
            .at(6 * MS)
            .nodes(vec!["client-2".into()]),
        acq("client-3", Invoke, 7),
        rel("client-4", 8),
        acq("client-5", Ok, 9),
        acq("client-3", Ok, 10),
    ]);
    assert_eq!(check_fair(&h), []);
}

/// A different lock is a different queue.
#[test]
fn locks_queue_apart() {
    let h = indexed(vec![
        acq("client-0", Invoke, 1),
        Event::new("client-1", Invoke, names::ACQUIRE)
            .at(2 * MS)
            .lock("M"),
        Event::new("client-1", Ok, names::ACQUIRE)
            .at(3 * MS)
            .lock("M"),
        acq("client-0", Ok, 4),
    ]);
    assert_eq!(check_fair(&h), []);
}

/// One random step of a small history.
#[derive(Clone, Debug)]
enum Step {
    Invoke(usize, bool),
    Complete(usize, EventType),
    Crash(usize),
}

fn step() -> impl Strategy<Value = (u64, Step)> {
    let kind = prop_oneof![Just(Ok), Just(Ok), Just(Fail), Just(Info)];
    let step = prop_oneof![
        3 => (0..4usize, any::<bool>()).prop_map(|(p, m)| Step::Invoke(p, m)),
        3 => (0..4usize, kind).prop_map(|(p, k)| Step::Complete(p, k)),
        1 => (0..4usize).prop_map(Step::Crash),
    ];
    (0..3u64, step)
}

fn history_of(steps: &[(u64, Step)]) -> Vec<Event> {
    let mut t = 0;
    let mut out = Vec::new();
    for (dt, s) in steps {
        t += dt;
        out.push(match s {
            Step::Invoke(p, other_lock) => {
                Event::new(format!("client-{p}"), Invoke, names::ACQUIRE)
                    .at(t)
                    .lock(if *other_lock { "M" } else { "L" })
            }
            Step::Complete(p, k) => Event::new(format!("client-{p}"), *k, names::ACQUIRE).at(t),
            Step::Crash(p) => Event::new("nemesis", Ev, names::CRASH)
                .at(t)
                .nodes(vec![format!("client-{p}")]),
        });
    }
    indexed(out)
}

/// The invoke an acquire `ok` at `i` completes: the process's last acquire invoke before
/// it, unless a completion or a crash of the process came in between.
fn invoke_of(h: &[Event], i: usize) -> Option<&Event> {
    let p = &h[i].process;
    for e in h[..i].iter().rev() {
        let crash = e.f == names::CRASH && e.nodes.as_ref().is_some_and(|n| n.contains(p));
        if crash || (e.process == *p && e.f == names::ACQUIRE && e.kind != Invoke) {
            return None;
        }
        if e.process == *p && e.f == names::ACQUIRE {
            return Some(e);
        }
    }
    None
}

/// The direct definition, O(n²): pairs of grants (g, w) on one lock by different
/// processes, w invoked strictly before g and granted strictly after it.
fn oracle(h: &[Event]) -> (usize, usize) {
    let grants: Vec<(usize, &Event)> = (0..h.len())
        .filter(|&i| h[i].kind == Ok)
        .filter_map(|i| Some((i, invoke_of(h, i)?)))
        .collect();
    let mut per_waiter = vec![0usize; h.len()];
    let mut total = 0;
    for &(g, gi) in &grants {
        for &(w, wi) in &grants {
            let overtaken = h[w].process != h[g].process
                && wi.lock == gi.lock
                && wi.time_ns < gi.time_ns
                && h[w].time_ns > h[g].time_ns;
            if overtaken {
                total += 1;
                per_waiter[w] += 1;
            }
        }
    }
    (total, per_waiter.into_iter().max().unwrap_or(0))
}

proptest! {
    #[test]
    fn inversions_match_the_direct_definition(steps in prop::collection::vec(step(), 0..40)) {
        let h = history_of(&steps);
        let attempts = acquire_attempts(&h);
        let inversions = fifo_inversions(&attempts);
        let (total, max) = oracle(&h);
        prop_assert_eq!(inversions.len(), total);
        prop_assert_eq!(max_bypass(&inversions).map_or(0, |(n, _)| n), max);
        let v = check_fair(&h);
        prop_assert_eq!(v.is_empty(), total == 0);
        if total > 0 {
            let head = format!("max bypass {max}:");
            prop_assert!(v[0].message.contains(&head), "{}", v[0].message);
        }
    }
}

/// 4 clients wait from the start while client-0 acquires 20,000 times, then they are
/// served: 80,000 inversions, max bypass 20,000; the check and the metrics stay fast.
#[test]
fn a_long_unfair_history_is_checked_quickly() {
    let mut ev = Vec::new();
    for p in 1..5 {
        ev.push(acq(&format!("client-{p}"), Invoke, 0));
    }
    for i in 0..20_000u64 {
        ev.push(acq("client-0", Invoke, 3 * i + 1));
        ev.push(acq("client-0", Ok, 3 * i + 2));
        ev.push(rel("client-0", 3 * i + 3));
    }
    for p in 1..5 {
        ev.push(acq(&format!("client-{p}"), Ok, 60_000 + 2 * p));
        ev.push(rel(&format!("client-{p}"), 60_001 + 2 * p));
    }
    let h = indexed(ev);
    let v = check_fair(&h);
    let m = crate::metrics::run_metrics(&h, 60_010 * MS, Default::default());
    assert_eq!(v.len(), crate::check::MAX_REPORTED);
    assert!(
        v[0].message
            .starts_with("80000 FIFO inversions: 20000 grants overtook")
            && v[0].message.contains("max bypass 20000: client-1's"),
        "{}",
        v[0].message
    );
    assert_eq!(m.grants, 20_004);
    assert_eq!((m.fifo_inversions, m.max_bypass), (80_000, 20_000));
    assert_eq!(m.latency_ms.contended.count, 20_004);
}
