//! `token-order`: fencing tokens are unique and increase with real-time order of grants.
//!
//! # Semantics
//!
//! A **grant** is an acquire `ok` (`f = "acquire"`, `type = ok`) with both `lock` and
//! `token` set. Acquires that failed, are indeterminate (`info`) or carry no token are not
//! grants and are ignored, as is every other event.
//!
//! A grant's **invoke** is the acquire `invoke` of the same process immediately preceding
//! its `ok` (the process's outstanding acquire; an acquire `ok`/`fail`/`info` consumes
//! it). If there is none, the grant's invoke is unknown and it is treated as invoked at the
//! start of the history, so it is never required to follow anything.
//!
//! Grant A **precedes** grant B when A's `ok` was recorded before B's invoke: in true time
//! `A.ok < B.invoke`, or at the same instant with A's `ok` recorded first (recording order
//! is the simulator's execution order, so B's request was sent after A was granted).
//!
//! Per lock, two rules:
//!
//! 1. **Unique**: no two grants carry the same token. Each later grant with a token seen
//!    before is one violation naming it and the first grant with that token.
//! 2. **Real-time order**: if A precedes B then `token(A) < token(B)`. Grant B violates it
//!    when some grant preceding it has a strictly greater token; that is one violation per
//!    such B, naming B and the preceding grant with the greatest token. (An equal token is
//!    reported by rule 1 only.) Concurrent grants — neither precedes the other — may carry
//!    tokens in any order.
//!
//! Cost O(n log n): grants are visited in order of invoke while a second cursor, over
//! grants in order of `ok`, folds in the maximum token among the grants that precede the
//! current invoke. At most [`MAX_REPORTED`](super::report::MAX_REPORTED) violations are
//! listed; the last one then states the total.
use super::report::{ms, Reporter};
use super::Violation;
use crate::history::{names, Event, EventType};
use std::collections::BTreeMap;

/// One successful acquire with a token.
struct Grant<'a> {
    process: &'a str,
    token: u64,
    /// Recording position of the invoke (0 when unknown) and its true time.
    invoke_pos: usize,
    invoke_ns: u64,
    invoke_event: Option<u64>,
    ok_pos: usize,
    ok_ns: u64,
    ok_event: u64,
}

impl Grant<'_> {
    fn events(&self) -> Vec<u64> {
        let mut v = vec![self.ok_event];
        v.extend(self.invoke_event);
        v
    }
}

/// Check `token-order` (see the module docs).
pub fn check_token_order(history: &[Event]) -> Vec<Violation> {
    // Collect grants per lock, in ok order.
    let mut pending: BTreeMap<&str, (usize, &Event)> = BTreeMap::new();
    let mut by_lock: BTreeMap<&str, Vec<Grant>> = BTreeMap::new();
    for (pos, e) in history.iter().enumerate() {
        if e.f != names::ACQUIRE {
            continue;
        }
        match e.kind {
            EventType::Invoke => {
                pending.insert(e.process.as_str(), (pos, e));
            }
            EventType::Ok => {
                let inv = pending.remove(e.process.as_str());
                let (Some(lock), Some(token)) = (e.lock.as_deref(), e.token) else {
                    continue;
                };
                let (invoke_pos, invoke_ns, invoke_event) = match inv {
                    Some((p, ie)) => (p, ie.time_ns, Some(ie.index)),
                    None => (0, 0, None),
                };
                by_lock.entry(lock).or_default().push(Grant {
                    process: e.process.as_str(),
                    token,
                    invoke_pos,
                    invoke_ns,
                    invoke_event,
                    ok_pos: pos,
                    ok_ns: e.time_ns,
                    ok_event: e.index,
                });
            }
            EventType::Fail | EventType::Info => {
                pending.remove(e.process.as_str());
            }
            EventType::Event => {}
        }
    }

    let mut rep = Reporter::new();
    for (lock, grants) in &by_lock {
        // Rule 1: uniqueness.
        let mut first: BTreeMap<u64, usize> = BTreeMap::new();
        for (i, g) in grants.iter().enumerate() {
            match first.get(&g.token) {
                None => {
                    first.insert(g.token, i);
                }
                Some(&fi) => {
                    let f = &grants[fi];
                    rep.report(|| {
                        let msg = format!(
                            "duplicate token {} on {lock}: granted to {} at {} and again to {} at {}",
                            g.token,
                            f.process,
                            ms(f.ok_ns),
                            g.process,
                            ms(g.ok_ns)
                        );
                        Violation::new(msg, vec![f.ok_event, g.ok_event])
                    });
                }
            }
        }

        // Rule 2: real-time order. Grants are already in ok (recording) order.
        let mut by_invoke: Vec<usize> = (0..grants.len()).collect();
        by_invoke.sort_by_key(|&i| (grants[i].invoke_pos, grants[i].ok_pos));
        let mut next_ok = 0; // grants[..next_ok] precede the current invoke
        let mut max: Option<usize> = None; // the preceding grant with the greatest token
        for &bi in &by_invoke {
            let b = &grants[bi];
            while next_ok < grants.len() && grants[next_ok].ok_pos < b.invoke_pos {
                let cand = &grants[next_ok];
                if max.is_none_or(|m| cand.token > grants[m].token) {
                    max = Some(next_ok);
                }
                next_ok += 1;
            }
            // A grant without a known invoke (invoke_pos 0) is preceded by nothing.
            if b.invoke_event.is_none() {
                continue;
            }
            let Some(ai) = max else { continue };
            let a = &grants[ai];
            if a.token > b.token {
                rep.report(|| {
                    let msg = format!(
                        "token order on {lock}: {} was granted token {} at {}, before {} invoked \
                         its acquire at {}, yet {} was then granted the lower token {} at {}",
                        a.process,
                        a.token,
                        ms(a.ok_ns),
                        b.process,
                        ms(b.invoke_ns),
                        b.process,
                        b.token,
                        ms(b.ok_ns)
                    );
                    let mut events = a.events();
                    events.extend(b.events());
                    Violation::new(msg, events)
                });
            }
        }
    }
    rep.finish()
}

/// The `token-order` check.
pub static CHECK: super::Check = super::Check {
    name: "token-order",
    about: "tokens of successful acquires are unique and follow real-time order",
    kind: crate::check::CheckKind::Safety,
    run: |h, _| super::CheckReport::from_violations(CHECK.name, check_token_order(h)),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::tests::indexed;
    use crate::history::EventType::{Fail, Info, Invoke, Ok};

    const MS: u64 = 1_000_000;

    fn inv(p: &str, t: u64) -> Event {
        Event::new(p, Invoke, "acquire").at(t * MS).lock("L")
    }
    fn ok(p: &str, t: u64, token: u64) -> Event {
        Event::new(p, Ok, "acquire")
            .at(t * MS)
            .lock("L")
            .token(Some(token))
    }

    #[test]
    fn increasing_tokens_hold() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2, 1),
            inv("client-1", 3),
            ok("client-1", 4, 2),
            inv("client-0", 5),
            ok("client-0", 6, 7),
        ]);
        assert!(check_token_order(&h).is_empty());
        assert!(check_token_order(&[]).is_empty());
    }

    #[test]
    fn duplicate_token_names_both() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2, 5),
            inv("client-1", 3),
            ok("client-1", 4, 5),
        ]);
        let v = check_token_order(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(
            v[0].message,
            "duplicate token 5 on L: granted to client-0 at 2.0 ms and again to client-1 at 4.0 ms"
        );
        assert_eq!(v[0].events, vec![1, 3]);
    }

    #[test]
    fn token_inversion_is_violation() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2, 9),
            inv("client-1", 3),
            ok("client-1", 4, 4),
        ]);
        let v = check_token_order(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(
            v[0].message
                .contains("client-0 was granted token 9 at 2.0 ms")
                && v[0]
                    .message
                    .contains("client-1 invoked its acquire at 3.0 ms")
                && v[0].message.contains("lower token 4 at 4.0 ms"),
            "{}",
            v[0].message
        );
        assert_eq!(v[0].events, vec![0, 1, 2, 3]);
    }

    #[test]
    fn concurrent_acquires_may_have_any_order() {
        // client-1 invoked before client-0's ok: concurrent.
        let h = indexed(vec![
            inv("client-0", 1),
            inv("client-1", 2),
            ok("client-0", 3, 9),
            ok("client-1", 4, 4),
        ]);
        assert!(check_token_order(&h).is_empty());
    }

    #[test]
    fn same_instant_uses_recording_order() {
        // ok recorded before the other's invoke in the same ms: precedes.
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2, 9),
            inv("client-1", 2),
            ok("client-1", 4, 4),
        ]);
        assert_eq!(check_token_order(&h).len(), 1);
        // invoke recorded first in the same ms: concurrent.
        let h = indexed(vec![
            inv("client-0", 1),
            inv("client-1", 2),
            ok("client-0", 2, 9),
            ok("client-1", 4, 4),
        ]);
        assert!(check_token_order(&h).is_empty());
    }

    #[test]
    fn failed_and_info_acquires_are_not_grants_and_consume_the_invoke() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2, 9),
            inv("client-1", 3),
            Event::new("client-1", Fail, "acquire").at(4 * MS).lock("L"),
            inv("client-2", 5),
            Event::new("client-2", Info, "acquire")
                .at(6 * MS)
                .lock("L")
                .token(Some(1)),
            // ok without a preceding invoke: invoke unknown, never required to follow.
            ok("client-1", 7, 3),
            Event::new("client-3", Ok, "acquire").at(8 * MS).lock("L"), // no token
        ]);
        assert!(check_token_order(&h).is_empty());
    }

    #[test]
    fn locks_are_independent() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2, 9),
            Event::new("client-1", Invoke, "acquire")
                .at(3 * MS)
                .lock("M"),
            Event::new("client-1", Ok, "acquire")
                .at(4 * MS)
                .lock("M")
                .token(Some(9)),
        ]);
        assert!(check_token_order(&h).is_empty());
    }

    #[test]
    fn reports_against_the_greatest_preceding_token() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2, 5),
            inv("client-1", 3),
            ok("client-1", 4, 8),
            inv("client-2", 5),
            ok("client-2", 6, 6),
        ]);
        let v = check_token_order(&h);
        assert_eq!(v.len(), 1);
        assert!(v[0].message.contains("client-1 was granted token 8"));
        assert_eq!(v[0].events, vec![2, 3, 4, 5]);
    }
}
