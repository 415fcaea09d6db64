//! The pre-pass: necessary conditions checked in near-linear time before the search.
//!
//! The search proves a linearizable history fast (it needs one order) but refutes a
//! broken one slowly: before it can say no order exists it must try every interleaving
//! of the concurrent operations that come before the violation, and with 40 concurrent
//! processes those are too many. Most violations have a local reason that needs no
//! search at all, and this pass looks for it.
//!
//! It applies to models whose operations all have a known [`Effect`] (so only the
//! *setters*, [`Effect::Overwrite`] and [`Effect::Sets`], change the state) and say, via
//! [`Model::requires`], which operations are legal in one state only (a read of `v`, a
//! compare-and-set from `v`). For such an operation `x` needing state `a`, the state just
//! before `x` is the one left by the *last setter before `x`*, so some setter `p` leaving
//! `a` (or the initial state, when it is `a`) must
//!
//! - be able to precede `x` (`x` did not complete before `p` was invoked), and
//! - have no setter forced between them (none invoked after `p` completed and completing
//!   before `x` was invoked): that one would be the last setter instead.
//!
//! Indeterminate setters may take effect anywhere after their call, so each one invoked
//! before `x` completed qualifies. When no source qualifies, the history is not
//! linearizable, and [`Refutation`] says why in terms a reader can check against the
//! history. When exactly one determinate `p` qualifies, every linearization puts `p`
//! last among the setters before `x`, which orders more operations than real time does:
//! `p` before `x`; every setter forced before `x` before `p`; every setter forced after
//! `p` after `x`. An order `a` before `b` is kept by tightening the intervals: `a`'s
//! return to at most `b`'s, `b`'s call to at least `a`'s (every operation after `b` is
//! then after `a`, and every one before `a` before `b`). Tighter intervals can leave
//! other operations with fewer sources, so the pass repeats while a round still derives
//! enough ([`ROUND_WORTH`], at most [`MAX_ROUNDS`]), each round a sort and a binary
//! search per operation. Stopping early loses no verdict: the search decides the rest.
//!
//! Every derived order holds in every linearization, so the tightened history has exactly
//! the linearizations of the original: the search runs on it, with fewer operations
//! concurrent, and its verdicts stand for the original history.

use super::explain::{Derivation, Explanation, Refutation};
use super::memo::FxHasher;
use super::model::{Effect, Model};
use super::ops::Operation;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::Instant;

/// Rounds of tightening at most: each is near-linear, and the rounds after the first few
/// rarely change anything.
const MAX_ROUNDS: usize = 16;

/// Another round is run only when the last one derived at least one order per this many
/// operations of the part (and at least one): on a 730,000-operation register history
/// the first rounds derive 90,580, 11,267 and 538 orders, then 24, 1 and 0, at 0.1 s each.
const ROUND_WORTH: usize = 1024;

/// Steps of deriving orders per operation of the part, at most, in all rounds together:
/// keeps the pass near-linear when one source has many readers and many setters around.
const WORK_PER_OP: usize = 16;

/// What the pre-pass concluded for one part.
pub(super) enum Prepass {
    /// Not linearizable (indices of the explanation point into the checked operations).
    Refuted(Explanation),
    /// Not refuted; every linearization respects these intervals, `(call, ret)` per
    /// member of the part, in the part's order (some tighter than the history's).
    Bounds(Vec<(u64, u64)>),
    /// The model does not give what the pass needs (an operation with an unknown effect).
    Skip,
}

/// One order the pass derived: `before` takes effect before `after`, because `source` is
/// the only operation that can leave `reader` the state it needs (local indices).
/// `blocker` is the setter forced before `reader` with the latest call, which shut the
/// other sources out (NONE: none).
#[derive(Clone, Copy)]
struct Derived {
    before: u32,
    after: u32,
    reader: u32,
    source: u32,
    blocker: u32,
}

/// The sources of one operation's needed state, as far as the pass could tell.
enum Sources {
    /// None qualifies.
    None,
    /// Exactly this determinate setter.
    Only(u32),
    /// Several, or an indeterminate one, or the initial state.
    Several,
}

/// The pass over one part, in local indices (0..n, the part's order).
struct Pass<'a, M: Model> {
    model: &'a M,
    ops: &'a [Operation<M::Op>],
    part: &'a [usize],
    /// Tightened call and return of each operation.
    lo: Vec<u64>,
    hi: Vec<u64>,
    /// The state each determinate operation needs (interned), else None.
    need: Vec<Option<u32>>,
    /// Determinate setters leaving each state.
    producers: Vec<Vec<u32>>,
    /// The earliest call of an indeterminate setter leaving each state (`u64::MAX`: none).
    first_indeterminate: Vec<u64>,
    /// Interned states, and the initial state's id.
    states: Vec<M::State>,
    init: u32,
    /// Determinate setters.
    setters: Vec<u32>,
    derived: Vec<Derived>,
    /// The derivations that tightened each operation's interval, in order.
    tightened_by: Vec<Vec<u32>>,
    /// Steps spent deriving (intervals walked, orders tried), against a budget.
    work: usize,
}

/// No derivation.
const NONE: u32 = u32::MAX;

/// `before` takes effect before `after`, because of reader `x`'s only source `p`.
fn derived(before: u32, after: u32, (x, p, blocker): (u32, u32, u32)) -> Derived {
    Derived {
        before,
        after,
        reader: x,
        source: p,
        blocker,
    }
}

/// Run the pre-pass on `part` (indices into `ops`); past `deadline` no round starts.
pub(super) fn prepass<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    part: &[usize],
    deadline: Option<Instant>,
) -> Prepass {
    let Some(mut pass) = Pass::new(model, ops, part) else {
        return Prepass::Skip;
    };
    let budget = WORK_PER_OP * part.len();
    // Rounds go on while they still derive a fair number of orders: each costs a pass
    // over the whole part, and late rounds derive a handful.
    let worth = (part.len() / ROUND_WORTH).max(1);
    for _ in 0..MAX_ROUNDS {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let before = pass.derived.len();
        match pass.round(budget) {
            Err(x) => return Prepass::Refuted(pass.refutation(x)),
            Ok(_) if pass.derived.len() - before < worth => break,
            Ok(_) => {}
        }
    }
    Prepass::Bounds(
        pass.lo
            .iter()
            .copied()
            .zip(pass.hi.iter().copied())
            .collect(),
    )
}

impl<'a, M: Model> Pass<'a, M> {
    fn new(model: &'a M, ops: &'a [Operation<M::Op>], part: &'a [usize]) -> Option<Self> {
        let n = part.len();
        let mut ids: HashMap<M::State, u32, BuildHasherDefault<FxHasher>> = HashMap::default();
        let mut states: Vec<M::State> = Vec::new();
        let mut intern = |s: M::State| {
            let next = states.len() as u32;
            *ids.entry(s.clone()).or_insert_with(|| {
                states.push(s);
                next
            })
        };
        let init = intern(model.init());
        let mut target = vec![None; n];
        let mut need = vec![None; n];
        let mut indeterminate_target: Vec<(u32, u64)> = Vec::new();
        for (k, &i) in part.iter().enumerate() {
            let o = &ops[i];
            let t = match model.effect(&o.op) {
                Effect::Other => return None,
                Effect::Identity | Effect::ReadOnly => None,
                Effect::Overwrite(s) | Effect::Sets(s) => Some(intern(s)),
            };
            if o.is_indeterminate() {
                // It may never happen: a source, never a requirement.
                if let Some(t) = t {
                    indeterminate_target.push((t, o.call));
                }
                continue;
            }
            target[k] = t;
            need[k] = model.requires(&o.op).map(&mut intern);
        }
        let mut producers = vec![Vec::new(); states.len()];
        let mut first_indeterminate = vec![u64::MAX; states.len()];
        for (t, call) in indeterminate_target {
            let f = &mut first_indeterminate[t as usize];
            *f = (*f).min(call);
        }
        let mut setters = Vec::new();
        for (k, t) in target.iter().enumerate() {
            if let Some(t) = *t {
                producers[t as usize].push(k as u32);
                setters.push(k as u32);
            }
        }
        Some(Pass {
            model,
            ops,
            part,
            lo: part.iter().map(|&i| ops[i].call).collect(),
            hi: part.iter().map(|&i| ops[i].ret).collect(),
            need,
            producers,
            first_indeterminate,
            states,
            init,
            setters,
            derived: Vec::new(),
            tightened_by: vec![Vec::new(); n],
            work: 0,
        })
    }

    /// One round: find each needing operation's sources under the current intervals;
    /// `Err(x)` when `x` has none, else whether an interval was tightened.
    fn round(&mut self, budget: usize) -> Result<bool, u32> {
        let forced = ForcedBefore::new(&self.setters, &self.lo, &self.hi);
        let sources = SourceIndex::new(&self.producers, &self.lo, &self.hi);
        let mut only: Vec<(u32, u32, u32)> = Vec::new();
        let mut refuted: Option<u32> = None;
        for x in 0..self.lo.len() as u32 {
            let Some(a) = self.need[x as usize] else {
                continue;
            };
            match self.sources_of(x, a, &forced, &sources) {
                Sources::None => {
                    let key = |k: u32| (self.ops[self.part[k as usize]].ret, k);
                    if refuted.is_none_or(|r| key(x) < key(r)) {
                        refuted = Some(x);
                    }
                }
                Sources::Only(p) => {
                    let blocker = forced
                        .latest_call(self.lo[x as usize])
                        .map_or(NONE, |b| b.1);
                    only.push((x, p, blocker));
                }
                Sources::Several => {}
            }
        }
        if let Some(x) = refuted {
            return Err(x);
        }
        // Apply the orders against this round's intervals (the new ones are written to
        // copies), so each derivation's premises are the ones checked above.
        let (mut lo, mut hi) = (self.lo.clone(), self.hi.clone());
        let before = self.derived.len();
        // By source: the orders before the source are the same for all its readers, so
        // only the widest reader's are walked.
        only.sort_unstable_by_key(|&(x, p, _)| (p, x));
        for group in only.chunk_by(|a, b| a.1 == b.1) {
            if self.work >= budget {
                break;
            }
            let widest = group
                .iter()
                .max_by_key(|&&(x, _, _)| (self.lo[x as usize], std::cmp::Reverse(x)))
                .copied()
                .expect("groups are not empty");
            self.derive_before_source(widest, &forced, &mut lo, &mut hi);
            for &reader in group {
                if self.work >= budget {
                    break;
                }
                self.derive_around_reader(reader, &forced, &mut lo, &mut hi);
            }
        }
        self.lo = lo;
        self.hi = hi;
        Ok(self.derived.len() > before)
    }

    /// Which sources `x` (needing state `a`) has under the current intervals.
    fn sources_of(&self, x: u32, a: u32, forced: &ForcedBefore, idx: &SourceIndex) -> Sources {
        let xi = x as usize;
        // The latest call of a setter forced before x: a source must not complete
        // before it.
        let last = forced.latest_call(self.lo[xi]);
        let mut count = 0;
        if self.first_indeterminate[a as usize] <= self.hi[xi] {
            count += 2;
        }
        if a == self.init && last.is_none() {
            count += 2;
        }
        let mut only = None;
        for p in idx.latest_returns(a, self.hi[xi]) {
            if p != x && last.is_none_or(|(c, _)| self.hi[p as usize] >= c) {
                count += 1;
                only = Some(p);
            }
        }
        match (count, only) {
            (0, _) => Sources::None,
            (1, Some(p)) => Sources::Only(p),
            _ => Sources::Several,
        }
    }

    /// `p` is `x`'s only source (`blocker`: the setter forced before `x` with the
    /// latest call): every setter forced before `x` goes before `p`.
    fn derive_before_source(
        &mut self,
        (x, p, blocker): (u32, u32, u32),
        forced: &ForcedBefore,
        lo: &mut [u64],
        hi: &mut [u64],
    ) {
        let (xi, pi) = (x as usize, p as usize);
        // Setters completing before x's call but not already before p's.
        for q in forced.completing_in(self.lo[pi], self.lo[xi]) {
            self.work += 1;
            if q != p {
                self.order(derived(q, p, (x, p, blocker)), lo, hi);
            }
        }
    }

    /// `p` is `x`'s only source: `p` goes before `x`, and every setter forced after `p`
    /// after `x`.
    fn derive_around_reader(
        &mut self,
        (x, p, blocker): (u32, u32, u32),
        forced: &ForcedBefore,
        lo: &mut [u64],
        hi: &mut [u64],
    ) {
        self.work += 1;
        self.order(derived(p, x, (x, p, blocker)), lo, hi);
        let (xi, pi) = (x as usize, p as usize);
        // Setters invoked after p completed but not already after x completed.
        for q in forced.invoked_in(self.hi[pi], self.hi[xi]) {
            self.work += 1;
            if q != x {
                self.order(derived(x, q, (x, p, blocker)), lo, hi);
            }
        }
    }

    /// Tighten the new intervals so that `d.before` precedes `d.after`; record `d` when
    /// that changed something.
    fn order(&mut self, d: Derived, lo: &mut [u64], hi: &mut [u64]) {
        let (b, a) = (d.before as usize, d.after as usize);
        let id = self.derived.len() as u32;
        let mut changed = false;
        if self.hi[a] < hi[b] {
            hi[b] = self.hi[a];
            self.tightened_by[b].push(id);
            changed = true;
        }
        if self.lo[b] > lo[a] {
            lo[a] = self.lo[b];
            self.tightened_by[a].push(id);
            changed = true;
        }
        if changed {
            self.derived.push(d);
        }
    }

    /// Why `x` has no source, with the derived orders the reasons rely on.
    fn refutation(&self, x: u32) -> Explanation {
        let xi = x as usize;
        let a = self.need[xi].expect("only needing operations are refuted");
        let forced = ForcedBefore::new(&self.setters, &self.lo, &self.hi);
        let blocker = forced.latest_call(self.lo[xi]).map(|(_, q)| q);
        let can_precede = |p: &&u32| **p != x && self.lo[**p as usize] <= self.hi[xi];
        let prods = &self.producers[a as usize];
        let last_source = prods
            .iter()
            .filter(can_precede)
            .max_by_key(|&&p| (self.hi[p as usize], p))
            .copied();
        let next_source = prods
            .iter()
            .filter(|p| **p != x && !can_precede(p))
            .min_by_key(|&&p| (self.lo[p as usize], p))
            .copied();
        let cited: Vec<u32> = [Some(x), blocker, last_source, next_source]
            .into_iter()
            .flatten()
            .collect();
        let global = |k: u32| self.part[k as usize];
        let derived = self
            .derivations_behind(&cited)
            .into_iter()
            .map(|d| Derivation {
                before: global(d.before),
                after: global(d.after),
                reader: global(d.reader),
                source: global(d.source),
            })
            .collect();
        Explanation {
            partition: Box::default(),
            prefix: Vec::new(),
            failing: global(x),
            concurrent: Vec::new(),
            state: self.model.describe_state(&self.states[a as usize]),
            refutation: Some(Box::new(Refutation {
                blocker: blocker.map(global),
                last_source: last_source.map(global),
                next_source: next_source.map(global),
                initial: a == self.init,
                later_indeterminate: self.first_indeterminate[a as usize] != u64::MAX,
                derived,
            })),
            window: None,
            narrowed: 0,
        }
    }

    /// The derivations the reasons about `cited` rely on, in the order derived: every
    /// one that tightened the interval of an operation they name, and recursively of
    /// the operations those name (the blocker behind each, and the other setters of the
    /// state each reader needs that were tightened: their intervals are why they were
    /// not sources). Replayed in order from the history's intervals, each one's premise
    /// holds again (see the tests).
    fn derivations_behind(&self, cited: &[u32]) -> Vec<Derived> {
        let mut used = vec![false; self.derived.len()];
        let mut seen_op = vec![false; self.lo.len()];
        let mut seen_state = vec![false; self.states.len()];
        let mut todo: Vec<u32> = cited.to_vec();
        if let Some(a) = cited.first().and_then(|&x| self.need[x as usize]) {
            self.tightened_producers(a, &mut seen_state, &mut todo);
        }
        while let Some(k) = todo.pop() {
            if std::mem::replace(&mut seen_op[k as usize], true) {
                continue;
            }
            for &d in &self.tightened_by[k as usize] {
                if std::mem::replace(&mut used[d as usize], true) {
                    continue;
                }
                let dd = self.derived[d as usize];
                todo.extend([dd.before, dd.after, dd.reader, dd.source]);
                if dd.blocker != NONE {
                    todo.push(dd.blocker);
                }
                if let Some(a) = self.need[dd.reader as usize] {
                    self.tightened_producers(a, &mut seen_state, &mut todo);
                }
            }
        }
        (0..self.derived.len())
            .filter(|&d| used[d])
            .map(|d| self.derived[d])
            .collect()
    }

    /// Queue the setters of state `a` whose intervals were tightened (once per state).
    fn tightened_producers(&self, a: u32, seen: &mut [bool], todo: &mut Vec<u32>) {
        if !std::mem::replace(&mut seen[a as usize], true) {
            todo.extend(
                self.producers[a as usize]
                    .iter()
                    .filter(|&&p| !self.tightened_by[p as usize].is_empty()),
            );
        }
    }
}

/// Determinate setters by return, to find the latest call among those forced before a
/// point, and by call.
struct ForcedBefore {
    /// `(ret, k)` sorted.
    by_ret: Vec<(u64, u32)>,
    /// Prefix maxima over `by_ret` of `(call, k)`.
    latest: Vec<(u64, u32)>,
    /// `(call, k)` sorted.
    by_call: Vec<(u64, u32)>,
}

impl ForcedBefore {
    fn new(setters: &[u32], lo: &[u64], hi: &[u64]) -> Self {
        let mut by_ret: Vec<(u64, u32)> = setters.iter().map(|&k| (hi[k as usize], k)).collect();
        by_ret.sort_unstable();
        let mut latest = Vec::with_capacity(by_ret.len());
        let mut best = (0u64, NONE);
        for &(_, k) in &by_ret {
            let c = (lo[k as usize], k);
            if best.1 == NONE || c > best {
                best = c;
            }
            latest.push(best);
        }
        let mut by_call: Vec<(u64, u32)> = setters.iter().map(|&k| (lo[k as usize], k)).collect();
        by_call.sort_unstable();
        ForcedBefore {
            by_ret,
            latest,
            by_call,
        }
    }

    /// The latest call among setters that complete before `t`, and that setter.
    fn latest_call(&self, t: u64) -> Option<(u64, u32)> {
        let n = self.by_ret.partition_point(|&(r, _)| r < t);
        n.checked_sub(1).map(|i| self.latest[i])
    }

    /// Setters completing in `[from, to)`.
    fn completing_in(&self, from: u64, to: u64) -> impl Iterator<Item = u32> + '_ {
        let s = self.by_ret.partition_point(|&(r, _)| r < from);
        let e = self.by_ret.partition_point(|&(r, _)| r < to);
        self.by_ret[s..e.max(s)].iter().map(|&(_, k)| k)
    }

    /// Setters invoked in `(from, to]`.
    fn invoked_in(&self, from: u64, to: u64) -> impl Iterator<Item = u32> + '_ {
        let s = self.by_call.partition_point(|&(c, _)| c <= from);
        let e = self.by_call.partition_point(|&(c, _)| c <= to);
        self.by_call[s..e.max(s)].iter().map(|&(_, k)| k)
    }
}

/// Determinate setters of each state by call, with the three latest returns among each
/// prefix: enough to tell none, one or several sources apart for any operation, itself
/// excluded.
struct SourceIndex {
    by_state: Vec<StateSources>,
}

/// The setters of one state: `(call, k)` sorted, and the top three `(ret, k)` of each
/// prefix of that order.
struct StateSources {
    by_call: Vec<(u64, u32)>,
    tops: Vec<[(u64, u32); 3]>,
}

impl SourceIndex {
    fn new(producers: &[Vec<u32>], lo: &[u64], hi: &[u64]) -> Self {
        let by_state = producers
            .iter()
            .map(|ps| {
                let mut by_call: Vec<(u64, u32)> =
                    ps.iter().map(|&k| (lo[k as usize], k)).collect();
                by_call.sort_unstable();
                let mut top = [(0u64, NONE); 3];
                let tops = by_call
                    .iter()
                    .map(|&(_, k)| {
                        let c = (hi[k as usize], k);
                        if let Some(pos) = top.iter().position(|t| t.1 == NONE || c > *t) {
                            top[pos..].rotate_right(1);
                            top[pos] = c;
                        }
                        top
                    })
                    .collect();
                StateSources { by_call, tops }
            })
            .collect();
        SourceIndex { by_state }
    }

    /// The (up to) three setters of `state` invoked by `t` that return latest.
    fn latest_returns(&self, state: u32, t: u64) -> impl Iterator<Item = u32> + '_ {
        let StateSources { by_call, tops } = &self.by_state[state as usize];
        let n = by_call.partition_point(|&(c, _)| c <= t);
        n.checked_sub(1)
            .map(|i| tops[i])
            .into_iter()
            .flatten()
            .filter(|t| t.1 != NONE)
            .map(|t| t.1)
    }
}
