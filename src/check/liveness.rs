//! `liveness`: the lock is acquired again soon after the last fault heals.
//!
//! # Semantics
//!
//! - `heal` = true time of the **last nemesis event** (`process = "nemesis"`,
//!   `type = event`, any `f`: faults are recorded as start and end events — pause/resume,
//!   partition/heal, crash/restart, clock changes), or 0 when there is none. A fault that
//!   starts and never ends therefore opens the window at its start.
//! - The **window** is `(heal, heal + liveness_ns]`.
//! - **Vacuous**: the check holds when `liveness_ns == 0`, or when the window does not fit
//!   in the run (`heal + liveness_ns > end_ns`).
//! - **Nobody tried**: the check holds when no acquire attempt was in progress during the
//!   window. An attempt is an acquire `invoke` by any process up to its completion (the
//!   process's next acquire `ok`/`fail`/`info`, or forever if none); it is in progress
//!   during the window when it was invoked at or before the window's end and did not
//!   complete at or before `heal`.
//! - Otherwise the check is **violated** when no acquire `ok` (any process, any lock) has a
//!   time in the window: one violation naming the last nemesis event, the last acquire
//!   `ok` before the window (if any) and the first attempt in progress, e.g. "no client
//!   acquired L within 5000.0 ms after the last fault healed at 300.0 ms (restart); last
//!   grant at 2.0 ms (client-0, token 2); client-1 was trying since 310.0 ms". This
//!   catches deadlocks such as a lock key that never expires.
use super::report::ms;
use super::Violation;
use crate::history::{names, Event, EventType};

/// Check `liveness` (see the module docs).
pub fn check_liveness(history: &[Event], end_ns: u64, liveness_ns: u64) -> Vec<Violation> {
    if liveness_ns == 0 {
        return Vec::new();
    }
    let last_fault = history
        .iter()
        .rev()
        .find(|e| e.process == "nemesis" && e.kind == EventType::Event);
    let heal = last_fault.map_or(0, |e| e.time_ns);
    let Some(window_end) = heal.checked_add(liveness_ns) else {
        return Vec::new();
    };
    if window_end > end_ns {
        return Vec::new();
    }

    let mut pending: std::collections::BTreeMap<&str, &Event> = Default::default();
    let mut trying: Option<&Event> = None; // first attempt in progress during the window
    let mut last_grant: Option<&Event> = None; // last acquire ok up to the window's end
    let mut locks: Vec<&str> = Vec::new();
    for e in history {
        if e.f != names::ACQUIRE || e.time_ns > window_end {
            continue;
        }
        match e.kind {
            EventType::Invoke => {
                if let Some(l) = e.lock.as_deref() {
                    if !locks.contains(&l) {
                        locks.push(l);
                    }
                }
                if let Some(prev) = pending.insert(e.process.as_str(), e) {
                    // A new invoke implies the previous attempt ended; it was in progress
                    // during the window if it was still pending after heal.
                    if e.time_ns > heal && trying.is_none() {
                        trying = Some(prev);
                    }
                }
            }
            EventType::Ok | EventType::Fail | EventType::Info => {
                if e.kind == EventType::Ok {
                    if e.time_ns > heal {
                        return Vec::new(); // someone acquired in the window
                    }
                    last_grant = Some(e);
                }
                if let Some(inv) = pending.remove(e.process.as_str()) {
                    if e.time_ns > heal && trying.is_none() {
                        trying = Some(inv);
                    }
                }
            }
            EventType::Event => {}
        }
    }
    // Attempts never completed by the window's end were in progress during it.
    if trying.is_none() {
        trying = pending
            .values()
            .copied()
            .min_by_key(|e| (e.time_ns, e.index));
    }
    let Some(attempt) = trying else {
        return Vec::new(); // nobody tried
    };

    let lock = match locks.as_slice() {
        [one] => (*one).to_string(),
        _ => "the lock".to_string(),
    };
    let healed = match last_fault {
        Some(f) => format!("the last fault healed at {} ({})", ms(heal), f.f),
        None => "the start of the run at 0.0 ms (no faults)".to_string(),
    };
    let last = match last_grant {
        Some(g) => format!(
            "last grant at {} ({}{})",
            ms(g.time_ns),
            g.process,
            g.token.map_or(String::new(), |t| format!(", token {t}"))
        ),
        None => "no grant before".to_string(),
    };
    let msg = format!(
        "no client acquired {lock} within {} after {healed}; {last}; {} was trying since {}",
        ms(liveness_ns),
        attempt.process,
        ms(attempt.time_ns)
    );
    let mut events = vec![attempt.index];
    events.extend(last_fault.map(|f| f.index));
    events.extend(last_grant.map(|g| g.index));
    vec![Violation::new(msg, events)]
}

/// The `liveness` check.
pub static CHECK: super::Check = super::Check {
    name: "liveness",
    about: "once the last fault heals, some client acquires within liveness_ms",
    kind: super::CheckKind::Liveness,
    run: |h, p| {
        super::CheckReport::from_violations(CHECK.name, check_liveness(h, p.end_ns, p.liveness_ns))
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::tests::indexed;
    use crate::history::EventType::{Event as Ev, Fail, Invoke, Ok};

    const MS: u64 = 1_000_000;

    fn inv(p: &str, t: u64) -> Event {
        Event::new(p, Invoke, "acquire").at(t * MS).lock("L")
    }
    fn ok(p: &str, t: u64) -> Event {
        Event::new(p, Ok, "acquire")
            .at(t * MS)
            .lock("L")
            .token(Some(t))
    }
    fn fail(p: &str, t: u64) -> Event {
        Event::new(p, Fail, "acquire").at(t * MS).lock("L")
    }
    fn fault(f: &str, t: u64) -> Event {
        Event::new("nemesis", Ev, f)
            .at(t * MS)
            .nodes(vec!["redis-0".into()])
    }

    #[test]
    fn grant_after_heal_holds() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2),
            fault("partition", 100),
            inv("client-1", 150),
            fault("heal", 300),
            ok("client-1", 400),
        ]);
        assert!(check_liveness(&h, 10_000 * MS, 1000 * MS).is_empty());
        assert!(check_liveness(&[], 10_000 * MS, 1000 * MS).is_empty());
    }

    #[test]
    fn deadlock_is_violation() {
        // Row 3: client-0 crashes between SETNX and EXPIRE; the key never expires; the
        // others retry forever.
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2),
            fault("crash", 100),
            fault("restart", 300),
            inv("client-1", 310),
            fail("client-1", 2310),
            inv("client-1", 2400),
            fail("client-1", 4400),
        ]);
        let v = check_liveness(&h, 10_000 * MS, 5000 * MS);
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].message,
            "no client acquired L within 5000.0 ms after the last fault healed at 300.0 ms \
             (restart); last grant at 2.0 ms (client-0, token 2); client-1 was trying since \
             310.0 ms"
        );
        assert_eq!(v[0].events, vec![1, 3, 4]);
    }

    #[test]
    fn pending_attempt_from_before_heal_counts_as_trying() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2),
            inv("client-1", 50),
            fault("heal", 100),
        ]);
        let v = check_liveness(&h, 10_000 * MS, 1000 * MS);
        assert_eq!(v.len(), 1);
        assert!(v[0].message.contains("client-1 was trying since 50.0 ms"));
        // Completed before heal: nobody was trying in the window.
        let h = indexed(vec![
            inv("client-1", 50),
            fail("client-1", 60),
            fault("heal", 100),
        ]);
        assert!(check_liveness(&h, 10_000 * MS, 1000 * MS).is_empty());
    }

    #[test]
    fn window_too_short_holds_vacuously() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2),
            fault("crash", 100),
            fault("restart", 300),
            inv("client-1", 310),
        ]);
        // 300 + 5000 > 4000: the window does not fit.
        assert!(check_liveness(&h, 4000 * MS, 5000 * MS).is_empty());
        // exactly fits: violated
        assert_eq!(check_liveness(&h, 5300 * MS, 5000 * MS).len(), 1);
        // disabled
        assert!(check_liveness(&h, 10_000 * MS, 0).is_empty());
    }

    #[test]
    fn nobody_tried_holds() {
        let h = indexed(vec![
            inv("client-0", 1),
            ok("client-0", 2),
            fault("heal", 100),
        ]);
        assert!(check_liveness(&h, 10_000 * MS, 1000 * MS).is_empty());
    }

    #[test]
    fn window_bounds() {
        // A grant exactly at heal is outside the window; exactly at its end is inside.
        let base = vec![inv("client-1", 50), fault("heal", 100)];
        let mut h = base.clone();
        h.push(ok("client-1", 100));
        h.push(inv("client-1", 200));
        let v = check_liveness(&indexed(h), 10_000 * MS, 1000 * MS);
        assert_eq!(v.len(), 1);
        assert!(v[0]
            .message
            .contains("last grant at 100.0 ms (client-1, token 100)"));
        let mut h = base.clone();
        h.push(ok("client-1", 1100));
        assert!(check_liveness(&indexed(h), 10_000 * MS, 1000 * MS).is_empty());
        let mut h = base;
        h.push(ok("client-1", 1101));
        assert_eq!(check_liveness(&indexed(h), 10_000 * MS, 1000 * MS).len(), 1);
    }

    #[test]
    fn no_faults_window_from_start() {
        let h = indexed(vec![inv("client-0", 1), fail("client-0", 900)]);
        let v = check_liveness(&h, 10_000 * MS, 500 * MS);
        assert_eq!(v.len(), 1);
        assert!(v[0]
            .message
            .contains("after the start of the run at 0.0 ms (no faults); no grant before;"));
    }
}
