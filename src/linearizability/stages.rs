//! The stages of checking one part when the fast path has nothing to say: the pre-pass
//! (`refute.rs`), a first search on an eighth of the budget, windows around the point
//! where that search got stuck (`window.rs`), and the search on the whole budget.
//!
//! A linearizable history is usually decided by the first search: it needs one order
//! and finds it quickly. A broken one the pre-pass cannot refute makes every search of
//! the whole history try every interleaving of the operations before the violation; a
//! window holds only the operations around it, so the same exhaustion is cheap there.
//! Only when neither decides does the last stage spend the rest of the budget.

use super::explain::Explanation;
use super::model::{Model, Operation};
use super::refute::{prepass, Prepass};
use super::search::{search, CheckOptions, Limits};
use super::window::{reachable_states, refute_around};
use std::time::Instant;

/// The first search and each window get this fraction of the budget (time and memo).
const FIRST_SHARE: u32 = 8;

/// Check one part (indices into `ops`); see the module docs. `Ok(false)`: out of budget.
pub(super) fn check_part<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    part: &[usize],
    opts: &CheckOptions,
    lim: &mut Limits,
) -> Result<bool, Explanation> {
    if !opts.prepass && !opts.windows {
        return search(model, ops, part, lim);
    }
    let bounds = if opts.prepass {
        match prepass(model, ops, part) {
            Prepass::Refuted(e) => return Err(e),
            Prepass::Bounds(b) => Some(b),
            Prepass::Skip => None,
        }
    } else {
        None
    };
    // The part's operations, with the pre-pass's narrower intervals when it has them.
    let local: Vec<Operation<M::Op>> = part
        .iter()
        .enumerate()
        .map(|(k, &i)| match &bounds {
            Some(b) => Operation {
                call: b[k].0,
                ret: b[k].1,
                ..ops[i].clone()
            },
            None => ops[i].clone(),
        })
        .collect();
    staged(model, &local, opts, lim).map_err(|e| e.map_indices(|k| part[k]))
}

/// The searches of [`check_part`] over `ops` (one whole part).
fn staged<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    opts: &CheckOptions,
    lim: &mut Limits,
) -> Result<bool, Explanation> {
    let all: Vec<usize> = (0..ops.len()).collect();
    let budget = lim.deadline.is_some() || lim.memo_limit.is_some();
    // Without known effects no window can be built: the whole budget goes to one search.
    if opts.windows && budget && reachable_states(model, ops).is_some() {
        let mut first = share(lim);
        let r = search(model, ops, &all, &mut first);
        absorb(lim, &first);
        if r != Ok(false) {
            return r;
        }
        if let Some(stuck) = first.stuck_at {
            let mut windows = share(lim);
            let found = refute_around(model, ops, stuck, &mut windows);
            absorb(lim, &windows);
            if let Some(e) = found {
                return Err(e);
            }
        }
    }
    search(model, ops, &all, lim)
}

/// A budget of [`FIRST_SHARE`]-th of what `lim` has left.
fn share(lim: &Limits) -> Limits {
    let now = Instant::now();
    Limits {
        deadline: lim
            .deadline
            .map(|d| now + d.saturating_duration_since(now) / FIRST_SHARE),
        memo_limit: lim.memo_limit.map(|m| m / FIRST_SHARE as usize),
        stats: Default::default(),
        stuck_at: None,
    }
}

/// Count what a stage's searches cost in `lim`.
fn absorb(lim: &mut Limits, stage: &Limits) {
    lim.stats.configurations += stage.stats.configurations;
    lim.stats.memo_bytes = lim.stats.memo_bytes.max(stage.stats.memo_bytes);
}
