//! [`check`]: the history split into parts, each checked by its model's fast path or,
//! when that has nothing to say, in stages: the pre-pass (`refute.rs`), a first search
//! on an eighth of the budget, windows around the point where that search got stuck
//! (`window.rs`), and the same search resumed on the whole budget.
//!
//! A linearizable history is usually decided by the first search: it needs one order
//! and finds it quickly. A broken one the pre-pass cannot refute makes every search of
//! the whole history try every interleaving of the operations before the violation; a
//! window holds only the operations around it, so the same exhaustion is cheap there.
//! Only when neither decides does the search go on, keeping what it explored. The
//! windows' time (at most an eighth of what is left) is the only budget a history that
//! needed nearly all of it can lose to them.

use super::explain::{Explanation, LinVerdict};
use super::model::Model;
use super::ops::Operation;
use super::refute::{prepass, Prepass};
use super::search::{search, CheckOptions, Limits, Paused, SearchStats};
use super::window::{reachable_states, refute_around, SPANS};
use std::time::{Duration, Instant};

/// The first search gets this fraction of the budget (time and memo), the windows at
/// most this fraction of the time left and each window search this fraction of the memo.
const FIRST_SHARE: u32 = 8;

/// The windows' time when the first search was quicker than this.
const MIN_WINDOW_TIME: Duration = Duration::from_millis(100);

/// Check `ops` against `model`: partition, then the fast path or the search per part.
///
/// Parts are checked in the order [`Model::partition`] returns them; the first part that
/// is not linearizable decides the verdict. A part that runs out of budget makes the
/// verdict [`LinVerdict::Unknown`] unless a later part is found not linearizable.
pub fn check<M: Model>(model: &M, ops: &[Operation<M::Op>], opts: CheckOptions) -> LinVerdict {
    check_with_stats(model, ops, opts).0
}

/// [`check`], also returning what the search cost.
pub fn check_with_stats<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    opts: CheckOptions,
) -> (LinVerdict, SearchStats) {
    // A budget too large for `Instant` is no budget.
    let deadline = opts.timeout.and_then(|t| Instant::now().checked_add(t));
    let mut lim = Limits {
        deadline,
        memo_limit: opts.memo_limit,
        stats: SearchStats::default(),
        stuck_at: None,
    };
    let mut unknown = false;
    for part in model.partition(ops) {
        if part.is_empty() {
            continue;
        }
        let fast = if opts.fast_path {
            model.fast_check(ops, &part)
        } else {
            None
        };
        let result = match fast {
            Some(Ok(())) => Ok(true),
            Some(Err(e)) => Err(e),
            None => check_part(model, ops, &part, &opts, &mut lim),
        };
        match result {
            Ok(true) => {}
            Ok(false) => unknown = true,
            Err(mut e) => {
                e.partition = model.describe_partition(ops, &part).into();
                let v = LinVerdict::NotLinearizable(e.with_concurrent(ops, &part));
                return (v, lim.stats);
            }
        }
    }
    let v = if unknown {
        LinVerdict::Unknown
    } else {
        lim.stats.stopped = None;
        LinVerdict::Linearizable
    };
    (v, lim.stats)
}

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
        match prepass(model, ops, part, lim.deadline) {
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
    let narrowed = bounds.as_ref().map_or(0, |b| {
        let moved =
            |(k, &(c, r)): (usize, &(u64, u64))| (c, r) != (ops[part[k]].call, ops[part[k]].ret);
        b.iter().enumerate().filter(|&x| moved(x)).count()
    });
    staged(model, &local, opts, lim).map_err(|e| {
        let mut e = e.map_indices(|k| part[k]);
        e.narrowed = narrowed;
        e
    })
}

/// The searches of [`check_part`] over `ops` (one whole part).
fn staged<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    opts: &CheckOptions,
    lim: &mut Limits,
) -> Result<bool, Explanation> {
    let all: Vec<usize> = (0..ops.len()).collect();
    let mut whole = Paused::new(model, ops, &all);
    let budget = lim.deadline.is_some() || lim.memo_limit.is_some();
    // Without known effects no window can be built: the whole budget goes to one search.
    let reachable = if opts.windows && budget {
        reachable_states(model, ops)
    } else {
        None
    };
    if let Some(reachable) = reachable {
        let started = Instant::now();
        let mut first = first_share(lim);
        let r = whole.run(&mut first);
        absorb(lim, &first);
        if r != Ok(false) {
            return r;
        }
        if let Some(stuck) = first.stuck_at {
            let mut windows = window_share(lim, started.elapsed());
            let found = refute_around(model, ops, stuck, &reachable, &SPANS, &mut windows);
            absorb(lim, &windows);
            if let Some(e) = found {
                return Err(e);
            }
        }
    }
    // The search goes on where the first one stopped, on the whole budget.
    whole.run(lim)
}

/// The first search's budget: an eighth of the time left and of the memo cap.
fn first_share(lim: &Limits) -> Limits {
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

/// The windows' budget: as long as the first search took (at least [`MIN_WINDOW_TIME`]),
/// and no more than an eighth of the time left; an eighth of the memo cap per window.
fn window_share(lim: &Limits, first_took: Duration) -> Limits {
    let now = Instant::now();
    let mut time = first_took.max(MIN_WINDOW_TIME);
    if let Some(d) = lim.deadline {
        time = time.min(d.saturating_duration_since(now) / FIRST_SHARE);
    }
    Limits {
        deadline: Some(now + time),
        ..first_share(lim)
    }
}

/// Count what a stage's searches cost in `lim`.
fn absorb(lim: &mut Limits, stage: &Limits) {
    lim.stats.configurations += stage.stats.configurations;
    lim.stats.memo_bytes = lim.stats.memo_bytes.max(stage.stats.memo_bytes);
}
