//! Checkers over a recorded [`History`](crate::history::History): one value per check
//! (name, what it checks, the function), one file each.
//!
//! Every check reasons only in *true* time (the simulator's global clock), never in a
//! node's local time: local clocks are exactly what the faults corrupt.
//!
//! | name | what it checks |
//! |---|---|
//! | `mutex` | no two processes' hold intervals `[acquire ok, release invoke]` overlap |
//! | `token-order` | tokens of successful acquires are unique and follow real-time order |
//! | `fencing` | no accepted write carries a token lower than an earlier accepted write; every accepted token was granted to the client that used it |
//! | `counter` | final counter equals the number of acknowledged increments (no lost update) |
//! | `liveness` | once the last fault has healed, some client acquires within `liveness_ms` |
//! | `lock-linearizable` | the lock service's acquire/release/expire history is linearizable against the fenced-lock spec |
//! | `storage-linearizable` | the storage's history is linearizable against the fenced-register spec |
//! | `fair` | no acquire is granted while a client that asked earlier is still waiting and is granted later (a [`CheckKind::Quality`] check) |
//! | `reentrant` | a holder's second acquire succeeds at once and the lock stays held until its last release (a quality check, run only when the workload re-enters) |
//!
//! These are the [`STANDARD`] checks, then the [`QUALITY`] ones.
//!
//! # Kinds
//!
//! A check is of one [`CheckKind`]. Safety and liveness checks are what a lock promises:
//! a seed that breaks one is a *violating seed*. A quality check measures a property
//! people compare locks by but no racing lock (Redis `SET NX`, a database `INSERT`)
//! promises, such as FIFO fairness: its verdict is counted and can be expected in
//! `[expect]`, but it never makes a seed "violating", or every Redis run would be one.
//!
//! Which ones apply to a run is the algorithm's decision ([`Algorithm::checks`](crate::locks::Algorithm::checks)): Redlock drops
//! `lock-linearizable`, and a family may add checks of its own.
//!
//! The last two use the linearizability engine in [`crate::linearizability`] (Wing & Gong
//! with Lowe's memoisation). The mutex and fencing arguments are M. Kleppmann's ("How to
//! do distributed locking", 2016); the Jepsen-style history conventions (`info` =
//! indeterminate) are from Kingsbury's Knossos.
//!
//! Adding a check = one file defining a [`Check`] value (with its [`CheckKind`]) + one
//! line in [`STANDARD`], [`QUALITY`] or the algorithm's own list.

mod counter;
mod fair;
mod fencing;
mod linearizable;
mod liveness;
mod mutex;
mod reentrant;
mod report;
mod token_order;

pub use counter::check_counter;
pub use counter::CHECK as COUNTER;
pub use fair::CHECK as FAIR;
pub use fair::{check_fair, fifo_inversions, max_bypass, Inversion};
pub use fencing::check_fencing;
pub use fencing::CHECK as FENCING;
pub use linearizable::{explanation as linearizability_explanation, LIN_BUDGET};
pub use linearizable::{LOCK as LOCK_LINEARIZABLE, STORAGE as STORAGE_LINEARIZABLE};
pub use liveness::check_liveness;
pub use liveness::CHECK as LIVENESS;
pub use mutex::CHECK as MUTEX;
pub use mutex::{check_mutex, hold_intervals, Hold};
pub use reentrant::CHECK as REENTRANT;
pub use reentrant::{check_reentrant, outer_only, AT_ONCE_NS};
pub use report::MAX_REPORTED;
pub use token_order::check_token_order;
pub use token_order::CHECK as TOKEN_ORDER;

use crate::history::Event;
use serde::Serialize;

/// One counterexample: a human message and the indices of the events involved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// What went wrong, in one or two sentences naming processes, tokens and true times.
    pub message: String,
    /// `Event::index` of every event the message refers to, ascending.
    pub events: Vec<u64>,
}

impl Violation {
    /// A violation with `message` about the events with these indices.
    pub fn new(message: impl Into<String>, mut events: Vec<u64>) -> Violation {
        events.sort_unstable();
        events.dedup();
        Violation {
            message: message.into(),
            events,
        }
    }
}

/// The verdict of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// No violation found.
    Holds,
    /// At least one violation found.
    Violated,
    /// The checker ran out of its time budget: neither proven nor refuted.
    Unknown,
}

/// What kind of property a check is about: whether breaking it makes a seed violating.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum CheckKind {
    /// Nothing bad happens (`mutex`, `fencing`, ...): a break is a violation.
    #[default]
    Safety,
    /// Something good eventually happens (`liveness`): a break is a violation.
    Liveness,
    /// A quality people compare locks by (`fair`): measured and reported, but a break is
    /// not a violation of what the lock promises.
    Quality,
}

impl CheckKind {
    /// Whether a break of a check of this kind makes its seed a violating seed.
    pub fn counts_as_violation(self) -> bool {
        self != CheckKind::Quality
    }

    /// Whether this is [`CheckKind::Quality`] (serde's `skip_serializing_if`: only quality
    /// checks say their kind, so the output for the others is what it always was).
    pub fn is_not_quality(&self) -> bool {
        self.counts_as_violation()
    }
}

/// The result of one named check on one history.
#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    /// The check's name (see the table in the module docs).
    pub name: &'static str,
    /// The check's kind; written only for quality checks.
    #[serde(skip_serializing_if = "CheckKind::is_not_quality")]
    pub kind: CheckKind,
    /// Holds or violated.
    pub verdict: Verdict,
    /// Counterexamples (empty when the check holds).
    pub violations: Vec<Violation>,
}

impl CheckReport {
    /// A report whose verdict follows from its violations (none: holds).
    pub fn from_violations(name: &'static str, violations: Vec<Violation>) -> CheckReport {
        let verdict = if violations.is_empty() {
            Verdict::Holds
        } else {
            Verdict::Violated
        };
        CheckReport {
            name,
            kind: CheckKind::Safety,
            verdict,
            violations,
        }
    }

    /// Builder: set the kind (a check's `run` sets its own).
    pub fn of_kind(mut self, kind: CheckKind) -> CheckReport {
        self.kind = kind;
        self
    }

    /// Whether this verdict makes its seed violating: violated, and not a quality check.
    pub fn is_violation(&self) -> bool {
        self.verdict == Verdict::Violated && self.kind.counts_as_violation()
    }
}

/// The reports of one run's checks, in report order: a list, and a lookup by check.
///
/// ```no_run
/// use locksim::check::MUTEX;
/// let scenario = locksim::Scenario::load("sims/redis-01-pause-past-lease.toml".as_ref()).unwrap();
/// let reports = locksim::check_run(&scenario, &locksim::run(&scenario, 7));
/// assert_eq!(reports.verdict(&MUTEX), locksim::Verdict::Violated);
/// ```
#[derive(Clone, Debug, Default, Serialize)]
#[serde(transparent)]
pub struct CheckReports(Vec<CheckReport>);

impl CheckReports {
    /// The report of `check`, if it ran. Reports carry names, and one run never has two
    /// checks of one name, so a family's own variant of a standard check (zk's
    /// `lock-linearizable`) answers for the standard one.
    pub fn report(&self, check: &Check) -> Option<&CheckReport> {
        self.0.iter().find(|r| r.name == check.name)
    }

    /// The verdict of `check`.
    ///
    /// # Panics
    ///
    /// If `check` did not run (the algorithm does not define it, or the workload gives
    /// it nothing to judge): asking for it is a mistake in the caller, as an index out
    /// of bounds is. Use [`CheckReports::report`] to ask whether it ran.
    pub fn verdict(&self, check: &Check) -> Verdict {
        match self.report(check) {
            Some(r) => r.verdict,
            None => panic!(
                "no check `{}` ran; the checks of this run: {}",
                check.name,
                self.0.iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    /// The reports, as a vector.
    pub fn into_vec(self) -> Vec<CheckReport> {
        self.0
    }
}

impl std::ops::Deref for CheckReports {
    type Target = [CheckReport];
    fn deref(&self) -> &[CheckReport] {
        &self.0
    }
}

impl From<CheckReports> for Vec<CheckReport> {
    fn from(reports: CheckReports) -> Vec<CheckReport> {
        reports.0
    }
}

impl FromIterator<CheckReport> for CheckReports {
    fn from_iter<I: IntoIterator<Item = CheckReport>>(iter: I) -> CheckReports {
        CheckReports(iter.into_iter().collect())
    }
}

impl IntoIterator for CheckReports {
    type Item = CheckReport;
    type IntoIter = std::vec::IntoIter<CheckReport>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a CheckReports {
    type Item = &'a CheckReport;
    type IntoIter = std::slice::Iter<'a, CheckReport>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// What the checks need besides the events.
#[derive(Clone, Copy, Debug)]
pub struct CheckParams {
    /// True time at which the run ended, ns.
    pub end_ns: u64,
    /// The liveness window after the last fault heals, ns.
    pub liveness_ns: u64,
}

/// A check: its name (part of the interface: scenarios' `[expect]` and reports use it),
/// what it checks, and the function that checks a history.
///
/// Every check is a `static`, and code names a check by that value (`&MUTEX`), never by
/// its name: two checks are equal when they are the same static, so a family's own
/// variant of a standard check (same name, another `run`) is a different check.
pub struct Check {
    /// The name, e.g. `mutex`.
    pub name: &'static str,
    /// One line on what it checks, for `locksim list`.
    pub about: &'static str,
    /// Safety, liveness or quality: whether a break makes a seed violating.
    pub kind: CheckKind,
    /// Check a history.
    pub run: fn(&[Event], &CheckParams) -> CheckReport,
}

impl PartialEq for Check {
    fn eq(&self, other: &Check) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Check {}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The checks every algorithm gets unless it says otherwise, in report order.
pub static STANDARD: &[&Check] = &[
    &MUTEX,
    &TOKEN_ORDER,
    &FENCING,
    &COUNTER,
    &LIVENESS,
    &LOCK_LINEARIZABLE,
    &STORAGE_LINEARIZABLE,
];

/// The quality checks every algorithm gets after its own (see [`CheckKind::Quality`]).
pub static QUALITY: &[&Check] = &[&FAIR];

/// Check names in display order: the [`STANDARD`] checks first, in their order, then
/// the others in the order given; each name once.
pub fn standard_first<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut others: Vec<&'a str> = Vec::new();
    let mut standard: Vec<Option<&'a str>> = vec![None; STANDARD.len()];
    for name in names {
        match STANDARD.iter().position(|c| c.name == name) {
            Some(i) => standard[i] = Some(name),
            None if !others.contains(&name) => others.push(name),
            None => {}
        }
    }
    standard.into_iter().flatten().chain(others).collect()
}

/// Run `checks` on `history`, in order; each report carries its check's kind.
/// Re-entrant acquires and releases are [`REENTRANT`]'s alone: every other check reads
/// the outer operations only ([`outer_only`]), the holds the program relies on.
pub fn check_all(history: &[Event], params: CheckParams, checks: &[&Check]) -> CheckReports {
    let outer = outer_only(history);
    checks
        .iter()
        .map(|c| {
            let events = if *c == &REENTRANT { history } else { &outer };
            (c.run)(events, &params).of_kind(c.kind)
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::history::Event;

    /// Assign indices 0.. in order.
    pub(crate) fn indexed(mut events: Vec<Event>) -> Vec<Event> {
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
        }
        events
    }

    /// A millisecond in ns.
    pub(crate) const MS: u64 = 1_000_000;

    /// `p`'s acquire event of kind `kind` on lock `L` at `t_ms`.
    pub(crate) fn acq(p: &str, kind: crate::history::EventType, t_ms: u64) -> Event {
        Event::new(p, kind, crate::history::names::ACQUIRE)
            .at(t_ms * MS)
            .lock("L")
    }

    /// `p`'s release invoke on lock `L` at `t_ms`.
    pub(crate) fn rel(p: &str, t_ms: u64) -> Event {
        Event::new(
            p,
            crate::history::EventType::Invoke,
            crate::history::names::RELEASE,
        )
        .at(t_ms * MS)
        .lock("L")
    }

    #[test]
    fn standard_checks_first_then_the_others_once() {
        let names = [
            "raft-log",
            "mutex",
            "liveness",
            "raft-apply",
            "raft-log",
            "mutex",
        ];
        assert_eq!(
            super::standard_first(names),
            ["mutex", "liveness", "raft-log", "raft-apply"]
        );
    }

    /// A check equals only itself: a family's variant with the standard name is another
    /// check, which is how families swap it in.
    #[test]
    fn checks_are_equal_by_identity() {
        use super::{LOCK_LINEARIZABLE, STANDARD};
        assert!(STANDARD.contains(&&LOCK_LINEARIZABLE));
        for variant in [
            &crate::locks::zk::checks::LOCK_LINEARIZABLE,
            &crate::locks::raft::invariants::LOCK_LINEARIZABLE,
        ] {
            assert_eq!(variant.name, LOCK_LINEARIZABLE.name);
            assert_ne!(variant, &LOCK_LINEARIZABLE);
            assert!(!STANDARD.contains(&variant));
        }
    }
}
