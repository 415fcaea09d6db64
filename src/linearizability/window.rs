//! Refuting in a window around the point where a search got stuck.
//!
//! Linearizability is closed under taking windows, in this sense. For times `t1 ≤ t2`,
//! the window `W` of a history `H` holds
//!
//! - a point operation *start* just before `t1` that sets the state to some `σ`;
//! - the operations invoked at or after `t1` that completed by `t2`, as they are;
//! - the operations that *straddle* `t1` (invoked before it, completing at or after it),
//!   each made legal in every state: a setter sets the state it would leave, anything
//!   else changes nothing;
//! - those of both kinds completing after `t2` as *indeterminate* (they may take effect
//!   or not);
//! - nothing else (completed before `t1`, or invoked after `t2`).
//!
//! If `H` is linearizable, `W` is linearizable for some reachable `σ`. Proof: take a
//! linearization `L` of `H`; let `k` be its last operation that completed before `t1`
//! (every operation invoked at or after `t1` comes after it) and `σ` the state there; cut
//! `L` after the last operation that completed by `t2` (every operation invoked after
//! `t2` comes after that one). Then "the straddling operations `L` puts before `k`, start,
//! what lies between `k` and the cut" is a linearization of `W`: nothing in `W` must
//! precede a straddling operation (all of `W` completes at or after `t1`), start hides
//! what those did, and from `σ` every operation after it does what it did in `L` (a
//! straddling setter leaves the same state; the others change nothing either way).
//!
//! So when `W` is linearizable from *no* reachable state, neither is `H`. The states are
//! the initial one and every state a setter leaves (known when every operation's
//! [`Effect`] is); those no operation of the window needs are all alike to it, so one of
//! them stands for the rest. Windows grow around the stuck point until one refutes, one
//! is linearizable from some state at its largest, or the budget runs out.

use super::explain::{Explanation, Window};
use super::memo::FxHasher;
use super::model::{Effect, Model};
use super::ops::{Operation, INDETERMINATE};
use super::search::{search, Limits};
use std::collections::HashSet;
use std::hash::BuildHasherDefault;

/// Operations invoked before the stuck point that successive windows take in.
pub(super) const SPANS: [usize; 5] = [32, 128, 512, 2048, 8192];

/// Windows needing more starting states than this are not tried.
const MAX_STATES: usize = 16;

/// An operation of a window (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum WindowOp<O> {
    /// The point just before `t1`: sets the state to the window's `σ`.
    Start,
    /// An operation invoked before `t1`: legal everywhere, setting what it would set.
    Straddling(O),
    /// An operation invoked at or after `t1`, as in the history.
    Inside(O),
}

/// The model of a window: `M`, with [`WindowOp::Start`] setting `init` (`σ`).
pub(super) struct InWindow<'a, M: Model> {
    pub(super) model: &'a M,
    pub(super) init: M::State,
}

impl<M: Model> InWindow<'_, M> {
    /// What a straddling operation does: set the state it would leave, or nothing.
    fn straddling(&self, o: &M::Op) -> Option<M::State> {
        match self.model.effect(o) {
            Effect::Overwrite(s) | Effect::Sets(s) => Some(s),
            Effect::Identity | Effect::ReadOnly | Effect::Other => None,
        }
    }
}

impl<M: Model> Model for InWindow<'_, M> {
    type State = M::State;
    type Op = WindowOp<M::Op>;

    fn init(&self) -> M::State {
        self.init.clone()
    }
    fn step(&self, s: &M::State, op: &Self::Op) -> Option<M::State> {
        match op {
            WindowOp::Start => Some(self.init.clone()),
            WindowOp::Straddling(o) => Some(self.straddling(o).unwrap_or_else(|| s.clone())),
            WindowOp::Inside(o) => self.model.step(s, o),
        }
    }
    fn subsumes(&self, a: &M::State, b: &M::State) -> bool {
        self.model.subsumes(a, b)
    }
    fn subsumption_hash(&self, s: &M::State) -> u64 {
        self.model.subsumption_hash(s)
    }
    fn op_guard(&self, op: &Self::Op) -> Option<u64> {
        match op {
            WindowOp::Inside(o) => self.model.op_guard(o),
            _ => None,
        }
    }
    fn state_guard(&self, s: &M::State) -> Option<u64> {
        self.model.state_guard(s)
    }
    // No `op_dead`: the model's may rely on which states follow which, and straddling
    // operations here reach states in any order.
    fn effect(&self, op: &Self::Op) -> Effect<M::State> {
        match op {
            WindowOp::Start => Effect::Overwrite(self.init.clone()),
            WindowOp::Straddling(o) => self
                .straddling(o)
                .map_or(Effect::Identity, Effect::Overwrite),
            WindowOp::Inside(o) => self.model.effect(o),
        }
    }
    fn requires(&self, op: &Self::Op) -> Option<M::State> {
        match op {
            WindowOp::Inside(o) => self.model.requires(o),
            _ => None,
        }
    }
    fn describe_op(&self, op: &Self::Op) -> String {
        match op {
            WindowOp::Start => "(start of the window)".into(),
            WindowOp::Straddling(o) | WindowOp::Inside(o) => self.model.describe_op(o),
        }
    }
    fn describe_state(&self, s: &M::State) -> String {
        self.model.describe_state(s)
    }
}

/// Try windows ending at `stuck`'s return and reaching `spans` invocations further back
/// each time ([`SPANS`] outside tests); an explanation (indices into `ops`) when one is
/// linearizable from no state of `reachable` ([`reachable_states`] of `ops`).
pub(super) fn refute_around<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    stuck: usize,
    reachable: &[M::State],
    spans: &[usize],
    lim: &mut Limits,
) -> Option<Explanation> {
    let t2 = ops[stuck].ret;
    let mut calls: Vec<u64> = ops
        .iter()
        .map(|o| o.call)
        .filter(|&c| c <= ops[stuck].call)
        .collect();
    calls.sort_unstable();
    for &span in spans {
        let t1 = calls[calls.len().saturating_sub(span)];
        let whole = calls.len() <= span;
        let (w, map) = window(ops, t1, t2);
        // From the very beginning the window starts where the history does.
        let starts = if whole {
            vec![model.init()]
        } else {
            starting_states(model, &w, reachable)?
        };
        match refute_from_all(model, &w, &starts, lim)? {
            Some(mut e) => {
                // What the prefix put before the start, the start hides: only the rest
                // is the prefix from the starting state.
                if let Some(at) = e.prefix.iter().position(|&k| map[k].is_none()) {
                    e.prefix.drain(..=at);
                }
                let mut e = e.map_indices(|k| map[k].unwrap_or(stuck));
                let first = map.iter().flatten().min_by_key(|&&i| (ops[i].call, i));
                e.window = Some(Box::new(Window {
                    from: t1,
                    to: t2,
                    first: first.copied().unwrap_or(stuck),
                    operations: w.len() - 1,
                    states: starts.iter().map(|s| model.describe_state(s)).collect(),
                }));
                return Some(e);
            }
            None if whole => return None,
            None => {}
        }
    }
    None
}

/// Search `w` from each of `starts`: `Some(Some(e))` when none is linearizable (`e` the
/// deepest dead end among them), `Some(None)` when one is, None when out of budget.
fn refute_from_all<M: Model>(
    model: &M,
    w: &[Operation<WindowOp<M::Op>>],
    starts: &[M::State],
    lim: &mut Limits,
) -> Option<Option<Explanation>> {
    let all: Vec<usize> = (0..w.len()).collect();
    let mut deepest: Option<Explanation> = None;
    for s in starts {
        let from = InWindow {
            model,
            init: s.clone(),
        };
        match search(&from, w, &all, lim) {
            Ok(true) => return Some(None),
            Ok(false) => return None,
            Err(e) => {
                if deepest
                    .as_ref()
                    .is_none_or(|d| e.prefix.len() > d.prefix.len())
                {
                    deepest = Some(e);
                }
            }
        }
    }
    Some(deepest)
}

/// The window `[t1, t2]` of `ops` (see the module docs), with positions doubled to make
/// room for the start, and each operation's index in `ops` (None: the start).
pub(super) fn window<O: Clone>(
    ops: &[Operation<O>],
    t1: u64,
    t2: u64,
) -> (Vec<Operation<WindowOp<O>>>, Vec<Option<usize>>) {
    let at = |t: u64| if t == INDETERMINATE { t } else { 2 * t + 1 };
    let mut w = vec![Operation::new(WindowOp::Start, 2 * t1, 2 * t1)];
    let mut map = vec![None];
    for (i, o) in ops.iter().enumerate() {
        if o.ret < t1 || o.call > t2 {
            continue;
        }
        let ret = if o.ret > t2 { INDETERMINATE } else { o.ret };
        let op = if o.call < t1 {
            WindowOp::Straddling(o.op.clone())
        } else {
            WindowOp::Inside(o.op.clone())
        };
        w.push(Operation {
            op,
            process: o.process,
            call: at(o.call),
            ret: at(ret),
            line: o.line,
            call_ns: o.call_ns,
            ret_ns: o.ret_ns,
        });
        map.push(Some(i));
    }
    (w, map)
}

/// Every state a linearization of `ops` can reach: the initial one and each state a
/// setter leaves. None when some operation's effect is unknown.
pub(super) fn reachable_states<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
) -> Option<Vec<M::State>> {
    let mut seen: HashSet<M::State, BuildHasherDefault<FxHasher>> = HashSet::default();
    let mut out = Vec::new();
    let init = std::iter::once(Effect::Sets(model.init()));
    for e in init.chain(ops.iter().map(|o| model.effect(&o.op))) {
        match e {
            Effect::Other => return None,
            Effect::Overwrite(s) | Effect::Sets(s) if seen.insert(s.clone()) => out.push(s),
            _ => {}
        }
    }
    Some(out)
}

/// The states a window must be tried from: each reachable state some operation of it
/// needs, and one reachable state none needs (they are all alike to the window). None
/// when an operation may be legal in several states without saying which (then every
/// state is different to it), or when there are too many.
pub(super) fn starting_states<M: Model>(
    model: &M,
    w: &[Operation<WindowOp<M::Op>>],
    reachable: &[M::State],
) -> Option<Vec<M::State>> {
    let mut needed: Vec<M::State> = Vec::new();
    for o in w {
        let WindowOp::Inside(op) = &o.op else {
            continue;
        };
        match (model.effect(op), model.requires(op)) {
            (Effect::Identity | Effect::Overwrite(_), _) => {}
            (_, Some(s)) => {
                if !needed.contains(&s) {
                    needed.push(s);
                }
            }
            (_, None) => return None,
        }
    }
    if needed.len() > MAX_STATES {
        return None;
    }
    let mut starts: Vec<M::State> = reachable
        .iter()
        .filter(|s| needed.contains(s))
        .cloned()
        .collect();
    starts.extend(reachable.iter().find(|s| !needed.contains(s)).cloned());
    (starts.len() <= MAX_STATES).then_some(starts)
}
