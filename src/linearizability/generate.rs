//! Deterministic generated histories for benchmarks and tests: a compare-and-set register
//! shared by `processes` processes, each running one operation at a time, with random
//! overlap.
//!
//! [`cas_history`] simulates an atomic register: every operation is invoked, takes effect
//! at one random moment while it is pending (that is where it linearizes), and completes
//! later; the moments are drawn from a ChaCha8 generator seeded with `seed`, so the same
//! arguments always give the same history. Values are 0–4; a third of the operations are
//! reads, a third writes, a third compare-and-sets (a CAS whose expected value is not the
//! register's completes `:fail`). Such a history is linearizable by construction. With
//! `linearizable = false` one late read is made to return a value that no linearization
//! can explain: a value whose every possible writer must come before a write of another
//! value that must come before the read.
//!
//! [`time_cas_check`] checks a generated history and reports the time and the memo's
//! size, for `locksim bench` and the ignored benchmark tests.

use super::cli::check_raw_opts;
use super::ops::{raw_ops_from_events, RawOp};
use super::search::CheckOptions;
use crate::history::{names, Event, EventType};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// Number of distinct register values (0 to `VALUES - 1`).
const VALUES: i64 = 5;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Read,
    Write(i64),
    Cas(i64, i64),
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Idle,
    Invoked(Kind),
    /// Took effect: the read's value, or whether the CAS succeeded.
    Applied(Kind, i64, bool),
}

/// One generated operation, for the corruption step: event positions and outcome.
struct GenOp {
    kind: Kind,
    call: usize,
    ret: usize,
    /// Whether it completed `ok` (a CAS that did not apply completes `fail`).
    ok: bool,
}

/// A linearizable (or, with `linearizable = false`, a not linearizable) cas-register
/// history of `ops` operations by `processes` processes (at least 1), as locksim events:
/// processes are named `"0"`, `"1"`, ...; `time_ns` is 1000 × the position; the initial
/// value is 0, as `locksim check --model cas-register` assumes. Check it with the
/// `cas-register` model.
///
/// When no read can be corrupted as described in the module docs (tiny histories), the
/// last read is made to return 5, a value nothing writes; when there is no read at all,
/// process `"0"` reads 5 at the end (one more operation).
pub fn cas_history(seed: u64, ops: usize, processes: usize, linearizable: bool) -> Vec<Event> {
    let processes = processes.max(1);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6361_732d_7265_6769);
    let mut phase = vec![Phase::Idle; processes];
    let mut open: Vec<Option<usize>> = vec![None; processes];
    let mut events: Vec<Event> = Vec::with_capacity(2 * ops);
    let mut gen: Vec<GenOp> = Vec::with_capacity(ops);
    let mut register: i64 = 0;
    let mut invoked = 0usize;
    let mut busy = 0usize;
    while invoked < ops || busy > 0 {
        let p = rng.gen_range(0..processes);
        let name = p.to_string();
        let t = events.len() as u64 * 1000;
        match phase[p] {
            Phase::Idle => {
                if invoked == ops {
                    continue;
                }
                let kind = match rng.gen_range(0..3) {
                    0 => Kind::Read,
                    1 => Kind::Write(rng.gen_range(0..VALUES)),
                    _ => Kind::Cas(rng.gen_range(0..VALUES), rng.gen_range(0..VALUES)),
                };
                let (f, value) = match kind {
                    Kind::Read => (names::READ, serde_json::Value::Null),
                    Kind::Write(v) => (names::WRITE, v.into()),
                    Kind::Cas(a, b) => (names::CAS, serde_json::json!([a, b])),
                };
                open[p] = Some(gen.len());
                gen.push(GenOp {
                    kind,
                    call: events.len(),
                    ret: usize::MAX,
                    ok: true,
                });
                events.push(Event::new(name, EventType::Invoke, f).at(t).value(value));
                phase[p] = Phase::Invoked(kind);
                invoked += 1;
                busy += 1;
            }
            Phase::Invoked(kind) => {
                phase[p] = match kind {
                    Kind::Read => Phase::Applied(kind, register, true),
                    Kind::Write(v) => {
                        register = v;
                        Phase::Applied(kind, v, true)
                    }
                    Kind::Cas(a, b) => {
                        let ok = register == a;
                        if ok {
                            register = b;
                        }
                        Phase::Applied(kind, b, ok)
                    }
                };
            }
            Phase::Applied(kind, value, ok) => {
                let g = open[p].take().expect("an applied op is open");
                gen[g].ret = events.len();
                gen[g].ok = ok;
                let (f, v) = match kind {
                    Kind::Read => (names::READ, value.into()),
                    Kind::Write(v) => (names::WRITE, v.into()),
                    Kind::Cas(a, b) => (names::CAS, serde_json::json!([a, b])),
                };
                let ty = if ok { EventType::Ok } else { EventType::Fail };
                events.push(Event::new(name, ty, f).at(t).value(v));
                phase[p] = Phase::Idle;
                busy -= 1;
            }
        }
    }
    if !linearizable {
        corrupt_late_read(&mut events, &gen);
    }
    for (i, e) in events.iter_mut().enumerate() {
        e.index = i as u64;
    }
    events
}

/// Make one late read return a value no linearization can explain (see the module docs).
fn corrupt_late_read(events: &mut Vec<Event>, gen: &[GenOp]) {
    // Writes that completed, by return position, for finding the latest one before a read.
    let mut writes: Vec<&GenOp> = gen
        .iter()
        .filter(|g| matches!(g.kind, Kind::Write(_)) && g.ok)
        .collect();
    writes.sort_by_key(|g| g.ret);
    let produces = |g: &GenOp, v: i64| {
        g.ok && match g.kind {
            Kind::Write(x) => x == v,
            Kind::Cas(_, b) => b == v,
            Kind::Read => false,
        }
    };
    let reads = gen
        .iter()
        .rev()
        .filter(|g| g.kind == Kind::Read && g.ok && g.ret != usize::MAX);
    for r in reads {
        let actual = events[r.ret].value_i64().unwrap_or(-1);
        // The write that returned last before the read was invoked; among ties the one
        // invoked last (it narrows the window the most).
        let before = writes.partition_point(|w| w.ret < r.call);
        let Some(w) = writes[..before]
            .iter()
            .rev()
            .take(64)
            .max_by_key(|w| w.call)
        else {
            continue;
        };
        let Kind::Write(u) = w.kind else { continue };
        for v in (0..VALUES).filter(|&v| v != actual && v != u) {
            // A producer of v that could come after w and before r.
            let explained = gen
                .iter()
                .any(|g| g.call < r.ret && g.ret >= w.call && produces(g, v));
            if !explained {
                events[r.ret].value = Some(v.into());
                return;
            }
        }
    }
    if let Some(r) = gen.iter().rev().find(|g| g.kind == Kind::Read && g.ok) {
        events[r.ret].value = Some(VALUES.into());
        return;
    }
    // No read at all: add one, after everything, of a value nothing writes.
    let t = events.len() as u64 * 1000;
    events.push(Event::new("0", EventType::Invoke, names::READ).at(t));
    events.push(
        Event::new("0", EventType::Ok, names::READ)
            .at(t + 1000)
            .value(VALUES),
    );
}

/// The time and memory a check of a generated history took.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// Operations in the history.
    pub ops: usize,
    /// Processes in the history.
    pub processes: usize,
    /// `linearizable`, `not-linearizable` or `unknown`.
    pub verdict: &'static str,
    /// Wall-clock seconds of the check (pairing and model interpretation included,
    /// generation not).
    pub seconds: f64,
    /// Peak size of the search's memo, in bytes.
    pub memo_bytes: usize,
    /// Configurations the search explored.
    pub configurations: u64,
}

impl Measurement {
    /// `checker: 10k ops / 20 procs, not linearizable: 0.41 s, 35 MB memo`.
    pub fn line(&self) -> String {
        let ops = if self.ops.is_multiple_of(1000) {
            format!("{}k", self.ops / 1000)
        } else {
            self.ops.to_string()
        };
        format!(
            "checker: {ops} ops / {} procs, {}: {:.2} s, {:.0} MB memo ({} configurations)",
            self.processes,
            self.verdict,
            self.seconds,
            self.memo_bytes as f64 / 1e6,
            self.configurations
        )
    }
}

/// Generate [`cas_history`]`(seed, ops, processes, linearizable)` and check it against
/// the `cas-register` model with options `opts` (budgets).
pub fn time_cas_check(
    seed: u64,
    ops: usize,
    processes: usize,
    linearizable: bool,
    opts: &CheckOptions,
) -> Measurement {
    let events = cas_history(seed, ops, processes, linearizable);
    let start = Instant::now();
    let raw = raw_ops_from_events(&events).expect("generated histories are well formed");
    time_raw_check(&raw, ops, processes, start, opts)
}

/// The linearizable [`cas_history`]`(seed, ops, processes, true)` as raw operations, with
/// the read that is operation `nth` (in invocation order) made to return `value`: a
/// violation or not, depending on what overlaps it. Panics when operation `nth` is not
/// a completed read.
pub fn changed_read(seed: u64, ops: usize, processes: usize, nth: usize, value: i64) -> Vec<RawOp> {
    let events = cas_history(seed, ops, processes, true);
    let mut raw = raw_ops_from_events(&events).expect("generated histories are well formed");
    let read = &mut raw[nth];
    assert!(
        &*read.f == names::READ && !read.is_indeterminate(),
        "{read:?}"
    );
    read.value = crate::history::edn::Value::Int(value);
    raw
}

/// Check [`changed_read`]`(seed, ops, processes, nth, value)` against the `cas-register`
/// model with options `opts`.
pub fn time_changed_read_check(
    seed: u64,
    ops: usize,
    processes: usize,
    (nth, value): (usize, i64),
    opts: &CheckOptions,
) -> Measurement {
    let raw = changed_read(seed, ops, processes, nth, value);
    time_raw_check(&raw, ops, processes, Instant::now(), opts)
}

/// Check the raw operations of a generated history of `ops` operations, started at
/// `start`, and measure it.
fn time_raw_check(
    raw: &[RawOp],
    ops: usize,
    processes: usize,
    start: Instant,
    opts: &CheckOptions,
) -> Measurement {
    let out = check_raw_opts(raw, "cas-register", None, opts)
        .expect("generated histories are well formed");
    Measurement {
        ops,
        processes,
        verdict: out.verdict.name(),
        seconds: start.elapsed().as_secs_f64(),
        memo_bytes: out.stats.memo_bytes,
        configurations: out.stats.configurations,
    }
}
