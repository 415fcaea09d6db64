//! `fencing`: the storage never accepts a stale token.
//!
//! # Semantics
//!
//! Only the storage's own record counts (process `storage`, `type = ok`), because the
//! storage is what the tokens protect. A storage op is **accepted** when `accepted` is
//! `Some(true)`; rejected (`Some(false)`) and unknown (`None`) ops are ignored — with
//! fencing on, a stale client's write is *rejected*, and that is the check holding.
//!
//! Walking the storage's accepted ops in recording order, with `hi` = the highest token
//! among earlier accepted ops that carry one (writes, and reads that carry a token: the
//! storage may fence reads too), across all keys (tokens belong to the one lock the
//! workload uses):
//!
//! 1. **Monotonic**: an accepted `write` with token `t < hi` is a violation naming the
//!    write and the op that set `hi`. Equal tokens are fine (the fenced-register spec
//!    accepts `t >= hi`). Accepted reads with a lower token are not violations (a read
//!    changes nothing) and do not lower `hi`.
//! 2. **Granted to its user**: for an accepted `write` with token `t` from `client` `c`
//!    (the storage event's `client` field), some acquire `ok` (`f = "acquire"`, any lock,
//!    anywhere in the history) must have granted `t` to process `c`, and no acquire `ok`
//!    may have granted `t` to another process. Violations: `t` was never granted; `t` was
//!    granted only to others; `t` was granted to `c` and also to another process.
//!
//! An accepted write **without a token** is unconstrained (fencing is off for it) and does
//! not change `hi`; an accepted write with a token but no `client` is checked by rule 1
//! only. Each offending write counts as one violation per rule it breaks. At most
//! [`MAX_REPORTED`](super::report::MAX_REPORTED) violations are listed; the last one then
//! states the total.
use super::report::{ms, Reporter};
use super::Violation;
use crate::history::{names, Event, EventType};
use std::collections::BTreeMap;

/// "client-0's write" / "a write" for messages.
fn whose(e: &Event) -> String {
    match e.client.as_deref() {
        Some(c) => format!("{c}'s {}", e.f),
        None => format!("a {} (client unknown)", e.f),
    }
}

/// "client-1 at 12.0 ms, client-2 at 30.0 ms"
fn list(grants: &[&Event]) -> String {
    grants
        .iter()
        .map(|g| format!("{} at {}", g.process, ms(g.time_ns)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Check `fencing` (see the module docs).
pub fn check_fencing(history: &[Event]) -> Vec<Violation> {
    // token -> every acquire ok that granted it
    let mut grants: BTreeMap<u64, Vec<&Event>> = BTreeMap::new();
    for e in history {
        if e.kind == EventType::Ok && e.f == names::ACQUIRE {
            if let Some(t) = e.token {
                grants.entry(t).or_default().push(e);
            }
        }
    }

    let mut rep = Reporter::new();
    let mut hi: Option<&Event> = None; // the accepted op that carries the highest token
    for e in history {
        if e.process != "storage" || e.kind != EventType::Ok || e.accepted != Some(true) {
            continue;
        }
        let is_write = e.f == names::WRITE;
        if !is_write && e.f != names::READ {
            continue;
        }
        let Some(t) = e.token else { continue };

        if is_write {
            // Rule 1.
            if let Some(h) = hi {
                let ht = h.token.unwrap_or(0);
                if t < ht {
                    rep.report(|| {
                        let msg = format!(
                            "storage accepted {} with stale token {t} at {} after it had already \
                             accepted token {ht} ({} at {})",
                            whose(e),
                            ms(e.time_ns),
                            whose(h),
                            ms(h.time_ns)
                        );
                        Violation::new(msg, vec![h.index, e.index])
                    });
                }
            }
            // Rule 2.
            if let Some(c) = e.client.as_deref() {
                let empty = Vec::new();
                let gs = grants.get(&t).unwrap_or(&empty);
                let mine = gs.iter().any(|g| g.process == c);
                let others: Vec<&Event> = gs.iter().copied().filter(|g| g.process != c).collect();
                let problem = if gs.is_empty() {
                    Some("which no acquire ever granted".to_string())
                } else if !mine {
                    Some(format!(
                        "which was granted to {}, not to {c}",
                        list(&others)
                    ))
                } else if !others.is_empty() {
                    Some(format!(
                        "which was granted to {c} but also to {}",
                        list(&others)
                    ))
                } else {
                    None
                };
                if let Some(problem) = problem {
                    rep.report(|| {
                        let msg = format!(
                            "storage accepted {} at {} with token {t}, {problem}",
                            whose(e),
                            ms(e.time_ns)
                        );
                        let mut events: Vec<u64> = gs.iter().map(|g| g.index).collect();
                        events.push(e.index);
                        Violation::new(msg, events)
                    });
                }
            }
        }

        if hi.is_none_or(|h| t > h.token.unwrap_or(0)) {
            hi = Some(e);
        }
    }
    rep.finish()
}

/// The `fencing` check.
pub static CHECK: super::Check = super::Check {
    name: "fencing",
    about: "the storage never accepts a write with a token lower than one it accepted; every accepted token was granted to its user",
    kind: crate::check::CheckKind::Safety,
    run: |h, _| super::CheckReport::from_violations(CHECK.name, check_fencing(h)),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::tests::indexed;
    use crate::history::EventType::{Invoke, Ok};

    const MS: u64 = 1_000_000;

    fn grant(p: &str, t: u64, token: u64) -> Event {
        Event::new(p, Ok, "acquire")
            .at(t * MS)
            .lock("L")
            .token(Some(token))
    }
    fn sw(client: &str, t: u64, token: Option<u64>, value: i64, accepted: bool) -> Event {
        Event::new("storage", Ok, "write")
            .at(t * MS)
            .key("counter")
            .client(client)
            .token(token)
            .value(value)
            .accepted(accepted)
    }
    fn sr(client: &str, t: u64, token: Option<u64>, value: i64) -> Event {
        Event::new("storage", Ok, "read")
            .at(t * MS)
            .key("counter")
            .client(client)
            .token(token)
            .value(value)
            .accepted(true)
    }

    #[test]
    fn fenced_history_holds() {
        let h = indexed(vec![
            grant("client-0", 1, 1),
            sr("client-0", 2, Some(1), 0),
            sw("client-0", 3, Some(1), 1, true),
            sw("client-0", 4, Some(1), 1, true), // equal token is fine
            grant("client-1", 5, 2),
            sw("client-1", 6, Some(2), 2, true),
        ]);
        assert!(check_fencing(&h).is_empty());
        assert!(check_fencing(&[]).is_empty());
    }

    #[test]
    fn rejected_stale_write_is_fine() {
        // Row 1 with fencing: client-0 pauses past its lease, client-1 gets token 2 and
        // writes; client-0 wakes and writes with token 1; the storage rejects it.
        let h = indexed(vec![
            grant("client-0", 1, 1),
            grant("client-1", 1500, 2),
            sw("client-1", 1510, Some(2), 1, true),
            sw("client-0", 2600, Some(1), 1, false),
        ]);
        assert!(check_fencing(&h).is_empty());
    }

    #[test]
    fn stale_accepted_write_is_violation() {
        let h = indexed(vec![
            grant("client-0", 1, 1),
            grant("client-1", 1500, 2),
            sw("client-1", 1510, Some(2), 1, true),
            sw("client-0", 2600, Some(1), 1, true),
        ]);
        let v = check_fencing(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(
            v[0].message,
            "storage accepted client-0's write with stale token 1 at 2600.0 ms after it had \
             already accepted token 2 (client-1's write at 1510.0 ms)"
        );
        assert_eq!(v[0].events, vec![2, 3]);
    }

    #[test]
    fn fenced_read_raises_the_bar() {
        let h = indexed(vec![
            grant("client-0", 1, 1),
            grant("client-1", 2, 2),
            sr("client-1", 3, Some(2), 0),
            sr("client-0", 3, Some(1), 0), // a lower-token read: not a violation
            sw("client-0", 4, Some(1), 1, true),
        ]);
        let v = check_fencing(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].message.contains("client-1's read at 3.0 ms"));
    }

    #[test]
    fn token_used_by_client_it_was_not_granted_to() {
        let h = indexed(vec![
            grant("client-0", 1, 1),
            sw("client-1", 3, Some(1), 1, true),
        ]);
        let v = check_fencing(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(
            v[0].message,
            "storage accepted client-1's write at 3.0 ms with token 1, which was granted to \
             client-0 at 1.0 ms, not to client-1"
        );
        assert_eq!(v[0].events, vec![0, 1]);
    }

    #[test]
    fn token_never_granted_or_granted_twice() {
        let h = indexed(vec![sw("client-1", 3, Some(7), 1, true)]);
        let v = check_fencing(&h);
        assert_eq!(v.len(), 1);
        assert!(v[0].message.ends_with("which no acquire ever granted"));

        let h = indexed(vec![
            grant("client-0", 1, 1),
            grant("client-1", 2, 1),
            sw("client-1", 3, Some(1), 1, true),
        ]);
        let v = check_fencing(&h);
        assert_eq!(v.len(), 1);
        assert!(v[0]
            .message
            .ends_with("which was granted to client-1 but also to client-0 at 1.0 ms"));
        assert_eq!(v[0].events, vec![0, 1, 2]);
    }

    #[test]
    fn writes_without_token_are_unconstrained() {
        let h = indexed(vec![
            grant("client-0", 1, 5),
            sw("client-0", 2, Some(5), 1, true),
            sw("client-1", 3, None, 2, true),
            sw("client-2", 4, None, 1, true),
            // irrelevant: client-side events, unknown acceptance
            Event::new("client-0", Invoke, "write").at(5).token(Some(1)),
            Event::new("storage", Ok, "write").at(6).token(Some(1)),
        ]);
        assert!(check_fencing(&h).is_empty());
    }

    #[test]
    fn write_without_client_is_only_order_checked() {
        let mut w = sw("x", 3, Some(1), 1, true);
        w.client = None;
        let h = indexed(vec![
            grant("client-0", 1, 2),
            sw("client-0", 2, Some(2), 1, true),
            w,
        ]);
        let v = check_fencing(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0]
            .message
            .contains("a write (client unknown) with stale token 1"));
    }
}
