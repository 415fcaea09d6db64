//! `mutex`: no two processes hold the lock at once (true time).
//!
//! # Hold intervals
//!
//! [`hold_intervals`] walks the history in recording order. Only these events matter:
//!
//! - an acquire `ok` (`f = "acquire"`, `type = ok`, `lock` set) by any process (in a run:
//!   `client-N`) **starts** a hold of that process on that lock, carrying the event's token;
//! - the same process's next `release` **invoke** on that lock (`f = "release"`,
//!   `type = invoke`, same `lock`) **ends** it, whatever the release's reason and outcome
//!   (from the moment a client starts releasing, it no longer relies on the lock);
//! - a nemesis `crash` event (`process = "nemesis"`, `type = event`, `f = "crash"`) whose
//!   `nodes` contain the process ends **every** hold of that process: a crashed process
//!   holds nothing, its state is gone;
//! - a second acquire `ok` by a process that already holds the same lock (should not
//!   happen) ends the previous hold at that instant and starts a new one;
//! - a hold still open at the end of the history ends at `end_ns` (or at its start, if it
//!   started after `end_ns`).
//!
//! Events without the fields these rules need (an acquire `ok` or release without `lock`,
//! a crash without `nodes`) are ignored; everything else (fail/info acquires, reads,
//! writes, server events, other nemesis events) is irrelevant here. A hold is the
//! half-open interval `[start_ns, end_ns)` of true time.
//!
//! # The check
//!
//! [`check_mutex`] reports every pair of holds on the same lock by **different**
//! processes whose intervals overlap strictly: `a.start < b.end && b.start < a.end`.
//! Touching holds (`a.end == b.start`) do not overlap. Each overlapping pair is one
//! violation, reported once, in order of the later hold's start; when three or more
//! holds are active at the later hold's start, the message says how many ("3 holders at
//! once") and names them. The sweep sorts holds by start and keeps the active set, so it
//! costs O(n log n + number of overlapping pairs).
//!
//! At most [`MAX_REPORTED`] violations are listed per check; the last listed one then
//! states how many there were in total.
use super::report::{ms, token_note, Reporter};
use super::Violation;
use crate::history::{names, Event, EventType};
use std::collections::BTreeMap;

/// A hold interval of one process on one lock, in true time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    /// The holding process.
    pub process: String,
    /// Lock name.
    pub lock: String,
    /// Fencing token of the grant, if any.
    pub token: Option<u64>,
    /// True time of the acquire `ok`.
    pub start_ns: u64,
    /// True time the hold ended (release invoke, crash of the holder, or end of run).
    pub end_ns: u64,
    /// Index of the acquire `ok` event.
    pub start_event: u64,
    /// Index of the event that ended the hold, if any.
    pub end_event: Option<u64>,
}

/// Why a hold ended (for messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Release,
    Crash,
    Reacquire,
    Unreleased,
}

/// An open hold while walking the history.
struct Open {
    token: Option<u64>,
    start_ns: u64,
    start_event: u64,
}

/// Every hold with the reason it ended, ordered by (start, start event).
fn holds_with_end(history: &[Event], end_ns: u64) -> Vec<(Hold, End)> {
    // process -> lock -> open hold
    let mut open: BTreeMap<&str, BTreeMap<&str, Open>> = BTreeMap::new();
    let mut out: Vec<(Hold, End)> = Vec::new();
    let close =
        |out: &mut Vec<(Hold, End)>, process: &str, lock: &str, o: Open, at: &Event, why| {
            out.push((
                Hold {
                    process: process.to_string(),
                    lock: lock.to_string(),
                    token: o.token,
                    start_ns: o.start_ns,
                    end_ns: at.time_ns.max(o.start_ns),
                    start_event: o.start_event,
                    end_event: Some(at.index),
                },
                why,
            ));
        };
    for e in history {
        match (e.kind, e.f.as_str()) {
            (EventType::Ok, names::ACQUIRE) => {
                let Some(lock) = e.lock.as_deref() else {
                    continue;
                };
                let locks = open.entry(e.process.as_str()).or_default();
                let new = Open {
                    token: e.token,
                    start_ns: e.time_ns,
                    start_event: e.index,
                };
                if let Some(prev) = locks.insert(lock, new) {
                    close(&mut out, &e.process, lock, prev, e, End::Reacquire);
                }
            }
            (EventType::Invoke, names::RELEASE) => {
                let Some(lock) = e.lock.as_deref() else {
                    continue;
                };
                if let Some(locks) = open.get_mut(e.process.as_str()) {
                    if let Some(prev) = locks.remove(lock) {
                        close(&mut out, &e.process, lock, prev, e, End::Release);
                    }
                }
            }
            (EventType::Event, names::CRASH) if e.process == "nemesis" => {
                let Some(nodes) = e.nodes.as_ref() else {
                    continue;
                };
                for node in nodes {
                    if let Some(locks) = open.remove(node.as_str()) {
                        for (lock, prev) in locks {
                            close(&mut out, node, lock, prev, e, End::Crash);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for (process, locks) in open {
        for (lock, o) in locks {
            out.push((
                Hold {
                    process: process.to_string(),
                    lock: lock.to_string(),
                    token: o.token,
                    start_ns: o.start_ns,
                    end_ns: end_ns.max(o.start_ns),
                    start_event: o.start_event,
                    end_event: None,
                },
                End::Unreleased,
            ));
        }
    }
    out.sort_by(|a, b| {
        (a.0.start_ns, a.0.start_event, a.0.end_ns).cmp(&(
            b.0.start_ns,
            b.0.start_event,
            b.0.end_ns,
        ))
    });
    out
}

/// Every hold interval in `history` (see the module docs for the exact rules), ordered by
/// start time. Holds still open at the end of the history end at `end_ns`.
pub fn hold_intervals(history: &[Event], end_ns: u64) -> Vec<Hold> {
    holds_with_end(history, end_ns)
        .into_iter()
        .map(|(h, _)| h)
        .collect()
}

/// "client-0 held L from 1503.0 ms to 3012.4 ms (token 3)", with how the hold ended.
fn describe(h: &Hold, why: End, first: bool) -> String {
    let what = if first {
        format!("held {}", h.lock)
    } else {
        "held it".to_string()
    };
    let until = match why {
        End::Release => format!("to {}", ms(h.end_ns)),
        End::Crash => format!("until it crashed at {}", ms(h.end_ns)),
        End::Reacquire => format!("to {} (when it acquired again)", ms(h.end_ns)),
        End::Unreleased => format!("to the end of the run at {} (never released)", ms(h.end_ns)),
    };
    format!(
        "{} {what} from {} {until}{}",
        h.process,
        ms(h.start_ns),
        token_note(h.token)
    )
}

/// Check `mutex`: no two holds on the same lock by different processes overlap in true
/// time (see the module docs). One violation per overlapping pair.
pub fn check_mutex(history: &[Event], end_ns: u64) -> Vec<Violation> {
    let holds = holds_with_end(history, end_ns);
    // Group by lock, keeping start order inside each group.
    let mut by_lock: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (h, _)) in holds.iter().enumerate() {
        by_lock.entry(h.lock.as_str()).or_default().push(i);
    }
    let mut rep = Reporter::new();
    for idxs in by_lock.values() {
        let mut active: Vec<usize> = Vec::new();
        for &bi in idxs {
            let (b, b_end) = &holds[bi];
            // Holds that ended at or before b's start cannot overlap b or anything later.
            active.retain(|&ai| holds[ai].0.end_ns > b.start_ns);
            let overlapping: Vec<usize> = active
                .iter()
                .copied()
                .filter(|&ai| {
                    let a = &holds[ai].0;
                    a.process != b.process && a.start_ns < b.end_ns && b.start_ns < a.end_ns
                })
                .collect();
            if !overlapping.is_empty() {
                // Holders active at b's start (b's own process counted once).
                let mut holders: Vec<&str> = active
                    .iter()
                    .map(|&ai| holds[ai].0.process.as_str())
                    .filter(|p| *p != b.process)
                    .collect();
                holders.push(b.process.as_str());
                holders.sort_unstable();
                holders.dedup();
                for &ai in &overlapping {
                    let (a, a_end) = &holds[ai];
                    rep.report(|| {
                        let mut msg = format!(
                            "{} while {}",
                            describe(a, *a_end, true),
                            describe(b, *b_end, false)
                        );
                        if holders.len() >= 3 {
                            msg.push_str(&format!(
                                "; {} holders at once at {}: {}",
                                holders.len(),
                                ms(b.start_ns),
                                holders.join(", ")
                            ));
                        }
                        let mut events = vec![a.start_event, b.start_event];
                        events.extend(a.end_event);
                        events.extend(b.end_event);
                        Violation::new(msg, events)
                    });
                }
            }
            active.push(bi);
        }
    }
    rep.finish()
}

/// The `mutex` check.
pub static CHECK: super::Check = super::Check {
    name: "mutex",
    about: "no two processes' hold intervals [acquire ok, release invoke] overlap in true time",
    kind: crate::check::CheckKind::Safety,
    run: |h, p| super::CheckReport::from_violations(CHECK.name, check_mutex(h, p.end_ns)),
};

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::history::EventType::{Event as Ev, Invoke, Ok};
    use proptest::prelude::*;

    use crate::check::tests::indexed;
    use crate::check::MAX_REPORTED;

    const MS: u64 = 1_000_000;

    fn acq(p: &str, t_ms: u64, token: Option<u64>) -> Vec<Event> {
        vec![
            Event::new(p, Invoke, "acquire").at(t_ms * MS).lock("L"),
            Event::new(p, Ok, "acquire")
                .at(t_ms * MS)
                .lock("L")
                .token(token),
        ]
    }

    fn rel(p: &str, t_ms: u64) -> Vec<Event> {
        vec![
            Event::new(p, Invoke, "release").at(t_ms * MS).lock("L"),
            Event::new(p, Ok, "release").at(t_ms * MS).lock("L"),
        ]
    }

    fn crash(p: &str, t_ms: u64) -> Event {
        Event::new("nemesis", Ev, "crash")
            .at(t_ms * MS)
            .nodes(vec![p.to_string()])
    }

    fn sorted(mut events: Vec<Event>) -> Vec<Event> {
        events.sort_by_key(|e| e.time_ns); // stable: ties keep construction order
        indexed(events)
    }

    #[test]
    fn ms_formats() {
        assert_eq!(ms(1_503_000_000), "1503.0 ms");
        assert_eq!(ms(3_012_400_000), "3012.4 ms");
        assert_eq!(ms(1_000_001), "1.000001 ms");
        assert_eq!(ms(1_250_000), "1.25 ms");
        assert_eq!(ms(0), "0.0 ms");
    }

    #[test]
    fn empty_and_irrelevant_histories_hold() {
        assert!(check_mutex(&[], 0).is_empty());
        let h = indexed(vec![
            Event::new("storage", Ok, "write").at(5).value(1),
            Event::new("client-0", Ok, "acquire").at(6), // no lock: unusable
            Event::new("client-0", Invoke, "release").at(7), // no lock
            Event::new("nemesis", Ev, "crash").at(8),    // no nodes
        ]);
        assert!(check_mutex(&h, 100).is_empty());
        assert!(hold_intervals(&h, 100).is_empty());
    }

    #[test]
    fn sequential_holds_pass_and_touching_do_not_overlap() {
        let h = sorted(
            [
                acq("client-0", 10, Some(1)),
                rel("client-0", 20),
                acq("client-1", 20, Some(2)), // touches: starts when client-0 released
                rel("client-1", 30),
                acq("client-0", 40, Some(3)),
            ]
            .concat(),
        );
        let holds = hold_intervals(&h, 50 * MS);
        assert_eq!(holds.len(), 3);
        assert_eq!(
            (holds[0].start_ns, holds[0].end_ns, holds[0].token),
            (10 * MS, 20 * MS, Some(1))
        );
        assert_eq!(holds[0].start_event, 1);
        assert_eq!(holds[0].end_event, Some(2));
        assert_eq!(holds[2].end_ns, 50 * MS);
        assert_eq!(holds[2].end_event, None);
        assert!(check_mutex(&h, 50 * MS).is_empty());
    }

    #[test]
    fn overlap_is_violation_naming_both() {
        let h = sorted(
            [
                acq("client-0", 1503, Some(3)),
                acq("client-2", 2510, Some(4)),
                rel("client-2", 2600),
                rel("client-0", 3012),
            ]
            .concat(),
        );
        let v = check_mutex(&h, 5000 * MS);
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].message,
            "client-0 held L from 1503.0 ms to 3012.0 ms (token 3) while client-2 held it \
             from 2510.0 ms to 2600.0 ms (token 4)"
        );
        // both acquire oks and both release invokes
        assert_eq!(v[0].events, vec![1, 3, 4, 6]);
    }

    #[test]
    fn different_locks_do_not_conflict() {
        let mut h = [acq("client-0", 10, None), acq("client-1", 11, None)].concat();
        for e in &mut h[2..] {
            e.lock = Some("M".into());
        }
        assert!(check_mutex(&indexed(h), 100 * MS).is_empty());
    }

    #[test]
    fn crash_ends_a_hold() {
        let h = sorted(
            [
                acq("client-0", 10, Some(1)),
                vec![crash("client-0", 15)],
                acq("client-1", 20, Some(2)),
                rel("client-1", 30),
                // a stray release after restart must not matter
                rel("client-0", 40),
            ]
            .concat(),
        );
        let holds = hold_intervals(&h, 100 * MS);
        assert_eq!(holds[0].end_ns, 15 * MS);
        assert_eq!(holds[0].end_event, Some(2));
        assert!(check_mutex(&h, 100 * MS).is_empty());

        // Crash of another node does not end it.
        let h = sorted(
            [
                acq("client-0", 10, Some(1)),
                vec![crash("redis-0", 15)],
                acq("client-1", 20, Some(2)),
            ]
            .concat(),
        );
        let v = check_mutex(&h, 100 * MS);
        assert_eq!(v.len(), 1);
        assert!(v[0].message.contains("never released"), "{}", v[0].message);
    }

    #[test]
    fn crash_message_and_overlap_before_crash() {
        let h = sorted(
            [
                acq("client-0", 10, None),
                acq("client-1", 12, None),
                vec![crash("client-0", 15)],
                rel("client-1", 30),
            ]
            .concat(),
        );
        let v = check_mutex(&h, 100 * MS);
        assert_eq!(v.len(), 1);
        assert!(
            v[0].message
                .starts_with("client-0 held L from 10.0 ms until it crashed at 15.0 ms while"),
            "{}",
            v[0].message
        );
    }

    #[test]
    fn same_process_reacquire_ends_previous_hold_and_is_not_a_conflict() {
        let h = sorted(
            [
                acq("client-0", 10, Some(1)),
                acq("client-0", 20, Some(2)),
                rel("client-0", 30),
            ]
            .concat(),
        );
        let holds = hold_intervals(&h, 100 * MS);
        assert_eq!(holds.len(), 2);
        assert_eq!((holds[0].start_ns, holds[0].end_ns), (10 * MS, 20 * MS));
        assert_eq!((holds[1].start_ns, holds[1].end_ns), (20 * MS, 30 * MS));
        assert!(check_mutex(&h, 100 * MS).is_empty());
    }

    #[test]
    fn three_holders_at_once() {
        // Row 2: client-0 pauses past its lease, client-1 acquires, client-0 DELs the
        // key, client-2 acquires while client-1 still holds (and client-0 never stopped).
        let h = sorted(
            [
                acq("client-0", 100, None),
                acq("client-1", 1200, None),
                acq("client-2", 1300, None),
                rel("client-2", 1400),
                rel("client-1", 1500),
                rel("client-0", 1600),
            ]
            .concat(),
        );
        let v = check_mutex(&h, 5000 * MS);
        assert_eq!(v.len(), 3, "{v:#?}");
        assert!(!v[0].message.contains("holders at once"));
        for x in &v[1..] {
            assert!(
                x.message
                    .contains("3 holders at once at 1300.0 ms: client-0, client-1, client-2"),
                "{}",
                x.message
            );
        }
    }

    #[test]
    fn cap_keeps_count() {
        // client-0 never releases; 30 other holds each overlap it.
        let mut ev = acq("client-0", 1, None);
        for i in 0..30u64 {
            ev.extend(acq(&format!("client-{}", i + 1), 10 + 2 * i, None));
            ev.extend(rel(&format!("client-{}", i + 1), 11 + 2 * i));
        }
        let v = check_mutex(&sorted(ev), 1000 * MS);
        assert_eq!(v.len(), MAX_REPORTED);
        assert!(
            v.last()
                .unwrap()
                .message
                .contains("only the first 20 of 30 violations are listed; 10 more not shown"),
            "{}",
            v.last().unwrap().message
        );
    }

    #[test]
    fn zero_length_hold_inside_another_overlaps_but_at_its_start_does_not() {
        let h = sorted(
            [
                acq("client-0", 10, None),
                acq("client-1", 15, None),
                rel("client-1", 15),
                rel("client-0", 20),
            ]
            .concat(),
        );
        assert_eq!(check_mutex(&h, 100 * MS).len(), 1);
        let h = sorted(
            [
                acq("client-1", 10, None),
                rel("client-1", 10),
                acq("client-0", 10, None),
                rel("client-0", 20),
            ]
            .concat(),
        );
        assert!(check_mutex(&h, 100 * MS).is_empty());
    }

    /// (start_ms, end_ms, process number)
    fn schedule() -> impl Strategy<Value = Vec<(u64, u64, u8)>> {
        prop::collection::vec((0u64..20, 2u64..50, 0u8..4), 2..40).prop_map(|steps| {
            let mut t = 0;
            steps
                .into_iter()
                .map(|(gap, dur, p)| {
                    let s = t + gap;
                    t = s + dur;
                    (s, t, p)
                })
                .collect()
        })
    }

    fn history_of(holds: &[(u64, u64, u8)]) -> Vec<Event> {
        let mut ev = Vec::new();
        for &(s, e, p) in holds {
            let name = format!("client-{p}");
            ev.extend(acq(&name, s, None));
            ev.extend(rel(&name, e));
        }
        sorted(ev)
    }

    /// An arbitrary (often nonsensical) event: checks must never panic on it.
    fn any_event() -> impl Strategy<Value = Event> {
        let kinds = prop::sample::select(vec![
            EventType::Invoke,
            EventType::Ok,
            EventType::Fail,
            EventType::Info,
            EventType::Event,
        ]);
        let procs = prop::sample::select(vec!["client-0", "client-1", "storage", "nemesis"]);
        let fs = prop::sample::select(vec![
            "acquire", "release", "read", "write", "crash", "heal", "expire",
        ]);
        (
            (procs, kinds, fs, any::<u64>(), 0u64..3),
            (
                prop::option::of(prop::sample::select(vec!["L", "M"])),
                prop::option::of(prop::sample::select(vec![0u64, 1, 2, u64::MAX])),
                prop::option::of(prop::sample::select(vec![
                    0i64,
                    1,
                    2,
                    -1,
                    i64::MAX,
                    i64::MIN,
                ])),
                prop::option::of(any::<bool>()),
                prop::option::of(prop::sample::select(vec!["client-0", "client-1"])),
                prop::option::of(prop::sample::select(vec!["counter", "x"])),
            ),
        )
            .prop_map(
                |((p, k, f, big, small), (lock, token, value, accepted, client, key))| {
                    let mut e = Event::new(p, k, f).at(if small == 0 { big } else { small });
                    e.lock = lock.map(String::from);
                    e.token = token;
                    e.value = value.map(serde_json::Value::from);
                    e.accepted = accepted;
                    e.client = client.map(String::from);
                    e.key = key.map(String::from);
                    if p == "nemesis" {
                        e.nodes = Some(vec!["client-0".into()]);
                    }
                    e
                },
            )
    }

    #[test]
    fn large_histories_are_checked_whole() {
        // 100k events: 25k sequential holds, then one client never releases and every
        // later hold overlaps it (counted, only 20 listed). Its speed is measured by
        // `locksim bench` (checks: events/s), not timed here.
        let mut ev = Vec::new();
        for i in 0..25_000u64 {
            let p = format!("client-{}", i % 5);
            ev.extend(acq(&p, 2 * i, Some(i + 1)));
            ev.extend(rel(&p, 2 * i + 1));
        }
        let h = indexed(ev.clone());
        let params = crate::check::CheckParams {
            end_ns: 60_000 * MS,
            liveness_ns: 5000 * MS,
        };
        let reports = crate::check::check_all(&h, params, crate::check::STANDARD);
        assert!(
            reports.iter().all(|r| r.violations.is_empty()),
            "{reports:#?}"
        );
        let mut ev2 = acq("client-9", 0, None);
        ev2.extend(ev);
        let v = check_mutex(&indexed(ev2), 60_000 * MS);
        assert_eq!(v.len(), MAX_REPORTED);
        assert!(
            v[19].message.contains("of 25000 violations"),
            "{}",
            v[19].message
        );
    }

    proptest! {
        #[test]
        fn non_overlapping_never_violates_and_one_shift_always_does(
            holds in schedule(),
            pick in any::<prop::sample::Index>(),
            pick2 in any::<prop::sample::Index>(),
            shift in any::<prop::sample::Index>(),
            len in 1u64..100,
        ) {
            let h = history_of(&holds);
            let end = holds.last().unwrap().1 * MS + MS;
            prop_assert!(check_mutex(&h, end).is_empty());
            prop_assert_eq!(hold_intervals(&h, end).len(), holds.len());

            // Move hold j (of another process) to start strictly inside hold i.
            let i = pick.index(holds.len());
            let others: Vec<usize> =
                (0..holds.len()).filter(|&j| holds[j].2 != holds[i].2).collect();
            prop_assume!(!others.is_empty());
            let j = others[pick2.index(others.len())];
            let (s, e, _) = holds[i];
            let start = s + 1 + shift.index((e - s - 1) as usize) as u64;
            let mut moved = holds.clone();
            moved[j] = (start, start + len, holds[j].2);
            let h2 = history_of(&moved);
            let end2 = end.max((start + len) * MS + MS);
            let v = check_mutex(&h2, end2);
            prop_assert!(!v.is_empty());
            let pi = format!("client-{}", holds[i].2);
            let pj = format!("client-{}", holds[j].2);
            prop_assert!(v.iter().any(|x| x.message.contains(&pi) && x.message.contains(&pj)));
        }

        #[test]
        fn checks_never_panic(
            events in prop::collection::vec(any_event(), 0..60),
            end in any::<u64>(),
            live in any::<u64>(),
        ) {
            let h = indexed(events);
            for (end_ns, liveness_ns) in [(end, live), (u64::MAX, 1), (10, 5), (0, 0)] {
                let reports = crate::check::check_all(&h, crate::check::CheckParams { end_ns, liveness_ns }, crate::check::STANDARD);
                for r in reports {
                    prop_assert!(r.violations.len() <= MAX_REPORTED);
                }
            }
        }
    }
}
