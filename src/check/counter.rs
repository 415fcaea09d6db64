//! `counter`: no lost updates.
//!
//! # Semantics
//!
//! The storage holds one counter (key `"counter"`), initially 0; each client reads it and
//! writes the value read plus one. The check uses the storage's own record as the truth:
//!
//! - an **applied write** is a storage event (`process = "storage"`, `type = ok`,
//!   `f = "write"`) with `accepted = Some(true)`, an integer `value`, and `key` either
//!   `"counter"` or absent. Rejected writes, writes of unknown outcome, writes of other
//!   keys and writes without an integer value are ignored.
//! - Let `w1 .. wn` be the applied writes in recording order and `v0 = 0`. Every applied
//!   write must be an **increment**: `value(wi) = value(w(i-1)) + 1`. Then the final
//!   counter, `value(wn)` (0 if `n = 0`), equals the number of applied increments `n`.
//!   Each applied write that is not an increment is one violation: a **lost update** when
//!   it writes a value that was already written (two clients read the same value and
//!   both wrote value + 1, or a stale client wrote back an old value), naming the earlier
//!   applied write of the same value; otherwise a **jump**, naming the previous applied
//!   write. The first such violation also states the final counter and `n`.
//! - **Client acknowledgements**: a client `write` `ok` with `accepted = Some(true)` is an
//!   acknowledged increment and must correspond to an applied write: one from that client
//!   (the storage event's `client`) with the same value (the `ok`'s `value`, else that of
//!   the client's preceding write invoke), recorded before the `ok` and not already
//!   matched to another acknowledgement. An acknowledgement without one is a violation
//!   (the client was told its increment landed, but it never did). Acknowledgements with
//!   no known value are ignored. Applied writes whose acknowledgement was lost (client
//!   `info`) still count: they did change the counter.
//!
//! At most [`MAX_REPORTED`](super::report::MAX_REPORTED) violations are listed; the last
//! one then states the total.
use super::report::{ms, token_note, Reporter};
use super::Violation;
use crate::history::{names, Event, EventType};
use std::collections::{BTreeMap, VecDeque};

fn is_counter_key(e: &Event) -> bool {
    e.key.as_deref().is_none_or(|k| k == "counter")
}

/// "client-0 wrote 5 at 1500.0 ms (token 3)"
fn wrote(e: &Event, v: i64) -> String {
    format!(
        "{} wrote {v} at {}{}",
        e.client.as_deref().unwrap_or("an unknown client"),
        ms(e.time_ns),
        token_note(e.token)
    )
}

/// Check `counter` (see the module docs).
pub fn check_counter(history: &[Event]) -> Vec<Violation> {
    // Applied writes: (position, event, value).
    let applied: Vec<(usize, &Event, i64)> = history
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.process == "storage"
                && e.kind == EventType::Ok
                && e.f == names::WRITE
                && e.accepted == Some(true)
                && is_counter_key(e)
        })
        .filter_map(|(p, e)| e.value_i64().map(|v| (p, e, v)))
        .collect();
    let n = applied.len();
    let final_value = applied.last().map_or(0, |a| a.2);
    let summary = format!("final counter {final_value} after {n} applied writes");

    let mut rep = Reporter::new();
    let mut first = true;
    let mut prev: Option<(&Event, i64)> = None;
    let mut last_of_value: BTreeMap<i64, &Event> = BTreeMap::new();
    for &(_, e, v) in &applied {
        let pv = prev.map_or(0, |p| p.1);
        if v != pv.wrapping_add(1) {
            let note = if first {
                format!(" ({summary})")
            } else {
                String::new()
            };
            first = false;
            if let Some(&earlier) = last_of_value.get(&v) {
                rep.report(|| {
                    Violation::new(
                        format!(
                            "lost update: {}, but {} earlier; one of the two increments \
                             was lost{note}",
                            wrote(e, v),
                            wrote(earlier, v).replacen(" wrote ", " had already written ", 1)
                        ),
                        vec![earlier.index, e.index],
                    )
                });
            } else {
                rep.report(|| {
                    let (before, events) = match prev {
                        Some((p, _)) => (format!("after {}", wrote(p, pv)), vec![p.index, e.index]),
                        None => (
                            "as the first write (counter starts at 0)".to_string(),
                            vec![e.index],
                        ),
                    };
                    Violation::new(
                        format!(
                            "counter jumped: {} {before}; expected {}{note}",
                            wrote(e, v),
                            pv.wrapping_add(1)
                        ),
                        events,
                    )
                });
            }
        }
        last_of_value.insert(v, e);
        prev = Some((e, v));
    }

    // Client acknowledgements. Unmatched applied writes per (client, value), in order.
    let mut unmatched: BTreeMap<(&str, i64), VecDeque<usize>> = BTreeMap::new();
    for &(p, e, v) in &applied {
        if let Some(c) = e.client.as_deref() {
            unmatched.entry((c, v)).or_default().push_back(p);
        }
    }
    let mut last_invoke: BTreeMap<&str, &Event> = BTreeMap::new();
    for (pos, e) in history.iter().enumerate() {
        if e.process == "storage" || e.f != names::WRITE || !is_counter_key(e) {
            continue;
        }
        match e.kind {
            EventType::Invoke => {
                last_invoke.insert(e.process.as_str(), e);
            }
            EventType::Ok if e.accepted == Some(true) => {
                let inv = last_invoke.remove(e.process.as_str());
                let Some(v) = e.value_i64().or_else(|| inv.and_then(|i| i.value_i64())) else {
                    continue;
                };
                let q = unmatched.get_mut(&(e.process.as_str(), v));
                let matched = match q {
                    Some(q) if q.front().is_some_and(|&p| p < pos) => q.pop_front().is_some(),
                    _ => false,
                };
                if !matched {
                    rep.report(|| {
                        let mut events = vec![e.index];
                        events.extend(inv.map(|i| i.index));
                        Violation::new(
                            format!(
                                "{}'s write of {v}{} was acknowledged as accepted at {}, but \
                                 the storage never applied it",
                                e.process,
                                token_note(e.token.or(inv.and_then(|i| i.token))),
                                ms(e.time_ns)
                            ),
                            events,
                        )
                    });
                }
            }
            EventType::Ok | EventType::Fail | EventType::Info => {
                last_invoke.remove(e.process.as_str());
            }
            EventType::Event => {}
        }
    }
    rep.finish()
}

/// The `counter` check.
pub static CHECK: super::Check = super::Check {
    name: "counter",
    about: "every write the storage accepted is the previous value + 1: no lost update",
    kind: crate::check::CheckKind::Safety,
    run: |h, _| super::CheckReport::from_violations(CHECK.name, check_counter(h)),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::tests::indexed;
    use crate::history::EventType::{Info, Invoke, Ok};

    const MS: u64 = 1_000_000;

    fn sw(client: &str, t: u64, value: i64, accepted: bool) -> Event {
        Event::new("storage", Ok, "write")
            .at(t * MS)
            .key("counter")
            .client(client)
            .value(value)
            .accepted(accepted)
    }
    fn cw(client: &str, t: u64, value: i64) -> Vec<Event> {
        vec![
            Event::new(client, Invoke, "write")
                .at(t * MS)
                .key("counter")
                .value(value),
            sw(client, t, value, true),
            Event::new(client, Ok, "write")
                .at(t * MS)
                .key("counter")
                .accepted(true),
        ]
    }

    #[test]
    fn increments_hold() {
        assert!(check_counter(&[]).is_empty());
        let h = indexed(
            [
                cw("client-0", 1, 1),
                cw("client-1", 2, 2),
                vec![sw("client-2", 3, 2, false)], // rejected: ignored
                cw("client-0", 4, 3),
                // applied, but the ack was lost: still counts
                vec![
                    sw("client-2", 5, 4, true),
                    Event::new("client-2", Info, "write")
                        .at(6 * MS)
                        .key("counter"),
                ],
                vec![Event::new("storage", Ok, "write")
                    .at(7 * MS)
                    .key("other")
                    .value(99)
                    .accepted(true)],
            ]
            .concat(),
        );
        assert!(check_counter(&h).is_empty(), "{:#?}", check_counter(&h));
    }

    #[test]
    fn lost_update_names_both_writes() {
        // client-0 and client-1 both read 1 and write 2.
        let h = indexed(
            [
                cw("client-0", 1, 1),
                cw("client-0", 10, 2),
                cw("client-1", 20, 2),
                cw("client-2", 30, 3),
            ]
            .concat(),
        );
        let v = check_counter(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(
            v[0].message,
            "lost update: client-1 wrote 2 at 20.0 ms, but client-0 had already written 2 at \
             10.0 ms earlier; one of the two increments was lost (final counter 3 after 4 \
             applied writes)"
        );
        assert_eq!(v[0].events, vec![4, 7]);
    }

    #[test]
    fn stale_write_back_is_lost_update() {
        // Row 1 without fencing: client-0 read 0 before its pause, others moved on.
        let mut s = sw("client-0", 30, 1, true);
        s.token = Some(1);
        let h = indexed(vec![
            sw("client-1", 10, 1, true),
            sw("client-2", 20, 2, true),
            s,
        ]);
        let v = check_counter(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].message.starts_with(
            "lost update: client-0 wrote 1 at 30.0 ms (token 1), but client-1 had already written 1"
        ));
    }

    #[test]
    fn jump_is_reported() {
        let h = indexed(vec![sw("client-0", 1, 1, true), sw("client-1", 2, 5, true)]);
        let v = check_counter(&h);
        assert_eq!(v.len(), 1);
        assert!(v[0]
            .message
            .starts_with("counter jumped: client-1 wrote 5 at 2.0 ms after client-0 wrote 1"));
        let h = indexed(vec![sw("client-0", 1, 3, true)]);
        assert!(check_counter(&h)[0].message.contains("as the first write"));
    }

    #[test]
    fn acknowledged_but_not_applied() {
        let h = indexed(vec![
            Event::new("client-0", Invoke, "write")
                .at(MS)
                .key("counter")
                .value(1)
                .token(Some(4)),
            sw("client-0", 1, 1, false),
            Event::new("client-0", Ok, "write")
                .at(2 * MS)
                .key("counter")
                .accepted(true),
        ]);
        let v = check_counter(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(
            v[0].message,
            "client-0's write of 1 (token 4) was acknowledged as accepted at 2.0 ms, but the \
             storage never applied it"
        );
        assert_eq!(v[0].events, vec![0, 2]);
    }

    #[test]
    fn one_applied_write_matches_one_ack() {
        let h = indexed(
            [
                cw("client-0", 1, 1),
                vec![Event::new("client-0", Ok, "write")
                    .at(2 * MS)
                    .key("counter")
                    .value(1)
                    .accepted(true)],
            ]
            .concat(),
        );
        assert_eq!(check_counter(&h).len(), 1);
    }
}
