//! Reduction 4 of the search (absorbed overwrites): which overwrites nothing can
//! observe, decided once per part before the search starts.

use super::model::{Effect, Model};
use super::ops::Operation;

/// Operations examined per overwrite when deciding whether it is unobserved; past this
/// it counts as observed (always safe).
const OBSERVER_SCAN: usize = 4096;

/// Operations examined in all, per operation of the part, before every remaining
/// overwrite counts as observed: keeps the analysis linear in the history's size.
const OBSERVER_SCAN_PER_OP: usize = 64;

/// Which determinate overwrites are unobserved (reduction 4 of [`super::search::search`]): no operation
/// `o` that may be linearized after `w` (`o.ret ≥ w.call`) and before the overwrite that
/// returns first among those invoked after `w` returned (`o.call ≤` its return) is legal
/// in the state `w` leaves, unless `o` is legal in every state.
pub(super) fn unobserved<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    order: &[usize],
    overwrite: &[bool],
    target: &[Option<M::State>],
    identity: &[bool],
    classes: &[Vec<usize>],
) -> Vec<bool> {
    let n = order.len();
    let mut out = vec![false; n];
    let writes: Vec<usize> = (0..n).filter(|&id| overwrite[id]).collect();
    if writes.is_empty() {
        return out;
    }
    let call = |id: usize| ops[order[id]].call;
    let ret = |id: usize| ops[order[id]].ret;
    // suffix_min[k]: the earliest return among writes[k..] (in call order).
    let mut suffix_min = vec![u64::MAX; writes.len() + 1];
    for k in (0..writes.len()).rev() {
        suffix_min[k] = suffix_min[k + 1].min(ret(writes[k]));
    }
    let universal = |id: usize| overwrite[id] || identity[id];
    // Indeterminate classes that may observe: (first call, op).
    let info: Vec<(u64, &M::Op)> = classes
        .iter()
        .map(|m| &ops[m[0]])
        .filter(|o| !matches!(model.effect(&o.op), Effect::Overwrite(_) | Effect::Identity))
        .map(|o| (o.call, &o.op))
        .collect();
    let mut total = OBSERVER_SCAN_PER_OP * (n + info.len()) + OBSERVER_SCAN;
    // Determinate ops invoked before `w` (lower ids) that return at or after its call.
    let mut active: std::collections::BTreeSet<(u64, usize)> = std::collections::BTreeSet::new();
    let mut added = 0;
    for &w in &writes {
        let Some(c) = &target[w] else { continue };
        let k = writes.partition_point(|&x| call(x) <= ret(w));
        let (lo, hi) = (call(w), suffix_min[k]);
        while added < w {
            active.insert((ret(added), added));
            added += 1;
        }
        while active.first().is_some_and(|&(r, _)| r < lo) {
            active.pop_first();
        }
        let observes =
            |id: usize| id != w && !universal(id) && model.step(c, &ops[order[id]].op).is_some();
        let mut budget = OBSERVER_SCAN.min(total);
        let mut observed = false;
        let mut look = |o: bool| {
            budget = budget.saturating_sub(1);
            budget == 0 || o
        };
        // Later calls, up to the bound; earlier calls still pending at w's call;
        // indeterminate operations invoked by the bound (one per class).
        for id in w + 1..n {
            if call(id) > hi {
                break;
            }
            if look(ret(id) >= lo && observes(id)) {
                observed = true;
                break;
            }
        }
        if !observed {
            observed = active.iter().any(|&(_, id)| look(observes(id)));
        }
        if !observed {
            observed = info
                .iter()
                .filter(|&&(first, _)| first <= hi)
                .any(|&(_, op)| look(model.step(c, op).is_some()));
        }
        let used = OBSERVER_SCAN.min(total) - budget;
        total = total.saturating_sub(used.max(1));
        out[w] = !observed;
        if total == 0 {
            break;
        }
    }
    out
}
