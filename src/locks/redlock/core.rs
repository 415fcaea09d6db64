//! The pure core of Redlock: time arithmetic, reply classification, counting and the
//! decision. No I/O: [`super::client`] feeds it.

use super::params::ClockKind;
use crate::locks::redis::resp::Value;
use crate::net::CallError;
use crate::sim::NodeCtx;

const MS: i64 = 1_000_000;

/// The clock-drift allowance, ns: `ttl × drift_factor + 2 ms` (the spec's "plus 2
/// milliseconds for Redis expires precision").
pub(crate) fn drift_ns(ttl_ms: u64, drift_factor: f64) -> i64 {
    (ttl_ms as f64 * 1e6 * drift_factor) as i64 + 2 * MS
}

/// The remaining validity of a lock whose acquisition took `elapsed_ns`, ns:
/// `ttl − elapsed − drift`. Zero or negative means the lock may already have expired on
/// the nodes.
pub(crate) fn validity_ns(ttl_ms: u64, elapsed_ns: i64, drift_factor: f64) -> i64 {
    ttl_ms as i64 * MS - elapsed_ns - drift_ns(ttl_ms, drift_factor)
}

/// A reading of the client's clocks: monotonic ns and wall ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Monotonic clock, ns.
    pub mono_ns: i64,
    /// Wall clock, ms since the Unix epoch.
    pub wall_ms: i64,
}

impl Stamp {
    /// Read `ctx`'s clocks now.
    pub(crate) fn now(ctx: &NodeCtx) -> Stamp {
        Stamp {
            mono_ns: ctx.mono_ns(),
            wall_ms: ctx.wall_ms(),
        }
    }
}

/// Time elapsed from `from` to `to` as measured by `clock`, ns. By the wall clock it can
/// be negative (the clock stepped back) or far too large (it stepped forward).
pub(crate) fn elapsed_ns(clock: ClockKind, from: Stamp, to: Stamp) -> i64 {
    match clock {
        ClockKind::Monotonic => to.mono_ns - from.mono_ns,
        ClockKind::Wall => (to.wall_ms - from.wall_ms) * MS,
    }
}

/// How many nodes make a majority of `nodes`: `N/2 + 1`.
pub(crate) fn quorum(nodes: usize) -> usize {
    nodes / 2 + 1
}

/// One node's answer to a lock request (`SET NX PX`, or a script).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NodeReply {
    /// The node did it (`OK`, or the script returned 1).
    Yes,
    /// The node answered no (the key is someone else's, or absent).
    No,
    /// Could not connect: the request definitely did not run.
    Unreachable,
    /// No reply in time, or the connection broke: the request may have run.
    TimedOut,
}

impl NodeReply {
    /// Classify the result of a `SET lock value NX PX ttl`.
    pub(crate) fn from_set(r: &Result<Value, CallError>) -> NodeReply {
        match r {
            Ok(Value::Simple(s)) if s == "OK" => NodeReply::Yes,
            Ok(_) => NodeReply::No,
            Err(e) => NodeReply::from_error(e),
        }
    }

    /// Classify the result of a script that returns 1 on success (unlock, extend).
    pub(crate) fn from_script(r: &Result<Value, CallError>) -> NodeReply {
        match r {
            Ok(Value::Integer(1)) => NodeReply::Yes,
            Ok(_) => NodeReply::No,
            Err(e) => NodeReply::from_error(e),
        }
    }

    fn from_error(e: &CallError) -> NodeReply {
        if e.maybe_applied() {
            NodeReply::TimedOut
        } else {
            NodeReply::Unreachable
        }
    }
}

/// The replies of one round, counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Tally {
    /// Nodes that said yes.
    pub yes: usize,
    /// Nodes that said no.
    pub no: usize,
    /// Nodes that could not be reached.
    pub unreachable: usize,
    /// Nodes whose reply never came (the request may have run: counted as no).
    pub timed_out: usize,
}

/// Count a round's replies. Only an explicit yes counts toward the majority: a node that
/// timed out counts as no, even if it may have set the key.
pub(crate) fn tally(replies: &[NodeReply]) -> Tally {
    let mut t = Tally::default();
    for r in replies {
        match r {
            NodeReply::Yes => t.yes += 1,
            NodeReply::No => t.no += 1,
            NodeReply::Unreachable => t.unreachable += 1,
            NodeReply::TimedOut => t.timed_out += 1,
        }
    }
    t
}

/// The verdict on one acquisition attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// A majority granted and (if checked) validity is left: the lock is held.
    Held,
    /// Fewer than `N/2 + 1` nodes granted.
    NoMajority,
    /// A majority granted, but the acquisition took so long that no validity is left.
    Expired,
}

/// Decide an attempt: held iff `yes ≥ N/2 + 1` and (`validity > 0` or the client does not
/// re-check validity, `reject_expired = false`).
pub(crate) fn decide(nodes: usize, yes: usize, validity_ns: i64, reject_expired: bool) -> Decision {
    if yes < quorum(nodes) {
        Decision::NoMajority
    } else if validity_ns <= 0 && reject_expired {
        Decision::Expired
    } else {
        Decision::Held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_arithmetic() {
        // drift = 1000 × 0.01 + 2 = 12 ms.
        assert_eq!(drift_ns(1000, 0.01), 12 * MS);
        assert_eq!(drift_ns(1000, 0.0), 2 * MS);
        assert_eq!(validity_ns(1000, 0, 0.01), 988 * MS);
        assert_eq!(validity_ns(1000, 30 * MS, 0.01), 958 * MS);
        // Exactly used up, and past it.
        assert_eq!(validity_ns(1000, 988 * MS, 0.01), 0);
        assert_eq!(validity_ns(1000, 1500 * MS, 0.01), -512 * MS);
        // A wall clock stepped back makes elapsed negative: validity exceeds the TTL.
        assert_eq!(validity_ns(1000, -2000 * MS, 0.01), 2988 * MS);
        // The spec's example: TTL 10 s.
        assert_eq!(validity_ns(10_000, 5 * MS, 0.01), (10_000 - 5 - 102) * MS);
    }

    #[test]
    fn elapsed_by_clock() {
        let a = Stamp {
            mono_ns: 100 * MS,
            wall_ms: 10_000,
        };
        // 1.5 s of real time; the wall clock stepped back 2 s meanwhile.
        let b = Stamp {
            mono_ns: 1600 * MS,
            wall_ms: 9_500,
        };
        assert_eq!(elapsed_ns(ClockKind::Monotonic, a, b), 1500 * MS);
        assert_eq!(elapsed_ns(ClockKind::Wall, a, b), -500 * MS);
        let v_mono = validity_ns(1000, elapsed_ns(ClockKind::Monotonic, a, b), 0.01);
        let v_wall = validity_ns(1000, elapsed_ns(ClockKind::Wall, a, b), 0.01);
        assert_eq!(decide(5, 5, v_mono, true), Decision::Expired);
        assert_eq!(decide(5, 5, v_wall, true), Decision::Held);
    }

    #[test]
    fn majority_sizes() {
        assert_eq!(quorum(1), 1);
        assert_eq!(quorum(2), 2);
        assert_eq!(quorum(3), 2);
        assert_eq!(quorum(4), 3);
        assert_eq!(quorum(5), 3);
    }

    #[test]
    fn majority_counting_with_timeouts() {
        use NodeReply::*;
        // Three yes of five: a majority.
        let t = tally(&[Yes, Yes, Yes, Unreachable, TimedOut]);
        assert_eq!(
            t,
            Tally {
                yes: 3,
                no: 0,
                unreachable: 1,
                timed_out: 1
            }
        );
        assert_eq!(decide(5, t.yes, 500 * MS, true), Decision::Held);
        // Two yes and two timeouts: the timeouts may have set the key, but count as no.
        let t = tally(&[Yes, Yes, TimedOut, TimedOut, No]);
        assert_eq!(t.yes, 2);
        assert_eq!(t.timed_out, 2);
        assert_eq!(decide(5, t.yes, 500 * MS, true), Decision::NoMajority);
        // No majority is no majority, whether or not validity is checked.
        assert_eq!(decide(5, 2, 500 * MS, false), Decision::NoMajority);
    }

    #[test]
    fn replies_are_classified() {
        let ok = Ok(Value::Simple("OK".into()));
        assert_eq!(NodeReply::from_set(&ok), NodeReply::Yes);
        assert_eq!(NodeReply::from_set(&Ok(Value::nil())), NodeReply::No);
        assert_eq!(
            NodeReply::from_set(&Err(CallError::Timeout)),
            NodeReply::TimedOut
        );
        assert_eq!(
            NodeReply::from_set(&Err(CallError::Io("reset".into()))),
            NodeReply::TimedOut
        );
        assert_eq!(
            NodeReply::from_set(&Err(CallError::Connect("refused".into()))),
            NodeReply::Unreachable
        );
        assert_eq!(
            NodeReply::from_script(&Ok(Value::Integer(1))),
            NodeReply::Yes
        );
        assert_eq!(
            NodeReply::from_script(&Ok(Value::Integer(0))),
            NodeReply::No
        );
    }

    #[test]
    fn the_decision() {
        // Majority and validity: held.
        assert_eq!(decide(5, 3, MS, true), Decision::Held);
        // Majority, validity used up: a correct client refuses...
        assert_eq!(decide(5, 5, 0, true), Decision::Expired);
        assert_eq!(decide(5, 5, -MS, true), Decision::Expired);
        // ...a client that does not re-check holds an expired lock.
        assert_eq!(decide(5, 5, -MS, false), Decision::Held);
    }
}
