//! The Wing–Gong–Lowe search with memoisation, just-in-time linearization, and
//! reductions that keep many concurrent operations cheap.

use super::explain::Explanation;
use super::memo::{splitmix, zob, Cache, FxHasher, IdHasher, Memo, NIL};
use super::model::{Effect, Model};
use super::ops::Operation;
use super::unobserved::unobserved;
use serde::Serialize;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::{Duration, Instant};

mod setup;
use setup::{
    determinate_order, equality_classes, guards, indeterminate_classes, Effects, TimeList,
};

/// The time budget `locksim check` uses when `--timeout` is not given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest `--timeout` accepted (one week): longer budgets are certainly typos, and
/// every budget must fit `Instant` arithmetic.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// The default cap on the size of the search's memo, in bytes (1 GiB). When the memo
/// would grow past its cap the verdict is [`LinVerdict::Unknown`](super::LinVerdict::Unknown).
pub const DEFAULT_MEMO_LIMIT: usize = 1 << 30;

/// How to run a check.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// Give up with [`LinVerdict::Unknown`](super::LinVerdict::Unknown) after this long (None: no limit).
    pub timeout: Option<Duration>,
    /// Give up with [`LinVerdict::Unknown`](super::LinVerdict::Unknown) rather than let the search of one part hold
    /// more than this many bytes (None: no limit): its memo, which can grow much faster
    /// than the history, and its stack (half the cap at most).
    pub memo_limit: Option<usize>,
    /// Use the model's fast path ([`Model::fast_check`]) when it has one.
    pub fast_path: bool,
    /// Run the pre-pass of necessary conditions (see `refute.rs`) before the search: it
    /// refutes most broken histories without searching, and narrows the intervals the
    /// search works on. Off only to measure the search alone.
    pub prepass: bool,
    /// When a budget is set: search first on an eighth of it, and when that runs out
    /// look for the violation in windows of the history around where it got stuck
    /// (see `window.rs`), before searching on the rest. Off only to measure without.
    pub windows: bool,
}

impl Default for CheckOptions {
    /// No time limit, a memo cap of [`DEFAULT_MEMO_LIMIT`], the fast path, the pre-pass
    /// and the windows on.
    fn default() -> Self {
        CheckOptions {
            timeout: None,
            memo_limit: Some(DEFAULT_MEMO_LIMIT),
            fast_path: true,
            prepass: true,
            windows: true,
        }
    }
}

/// Which budget ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stop {
    /// The time budget ([`CheckOptions::timeout`]).
    Time,
    /// The memo cap ([`CheckOptions::memo_limit`]).
    Memory,
}

/// What a check cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SearchStats {
    /// Configurations (linearized set, model state) the search expanded, over all parts.
    pub configurations: u64,
    /// The most memory the search of any part held (memo and search stack), in bytes.
    pub memo_bytes: usize,
    /// The budget that ran out, when one did (the verdict is then unknown, unless a part
    /// was found not linearizable).
    pub stopped: Option<Stop>,
}

/// Budgets and counters shared by the parts of one check.
pub(crate) struct Limits {
    pub(super) deadline: Option<Instant>,
    pub(super) memo_limit: Option<usize>,
    pub(super) stats: SearchStats,
    /// When a search ran out of budget: the operation its deepest dead end could not
    /// place (an index into the operations it searched), where a violation most likely
    /// is.
    pub(super) stuck_at: Option<usize>,
}

impl Limits {
    fn out_of_time(&mut self) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stats.stopped = Some(Stop::Time);
            return true;
        }
        false
    }
}

/// Reductions that compare candidates pairwise (3, and 2 for indeterminate classes) are
/// skipped in configurations with more candidates than this: they are optional, and
/// their cost would grow with the square of the concurrency.
const PAIRWISE: usize = 64;
const HEAD: u32 = 0;

/// One configuration on the search stack: how it was reached (to undo it) and which of
/// its candidate moves are left.
struct Level<S> {
    /// `lin.len()` before the move that reached this configuration.
    lin_start: u32,
    /// The indeterminate class whose next member that move linearized, and whether it
    /// was counted in the memo's class counts.
    info: Option<(u32, bool)>,
    /// The state before that move.
    prev_state: S,
    /// This configuration's callable determinate operations: `cands[cand_start..cand_end]`,
    /// each `id << 1 | tried` (tried: a candidate move; else only absorbable).
    cand_start: u32,
    cand_end: u32,
    /// The next entry of `cands` to try.
    next: u32,
    /// The next indeterminate class candidate (see [`Search::next_class`]).
    class_idx: u32,
    /// The first pending return: the determinate op that must be linearized next at the
    /// latest.
    ret_id: u32,
}

/// Search one part. `Ok(true)`: linearizable; `Ok(false)`: a budget ran out; `Err`: not
/// linearizable, with the deepest dead end (indices into `ops`).
///
/// Determinate operations live in Lowe's doubly-linked list of call/return entries; the
/// *candidates* of a configuration are the pending operations invoked before the first
/// pending return (just-in-time linearization), and the search expands configurations
/// depth first, never twice (the memo).
///
/// Indeterminate operations (return at +∞) are grouped into classes of equal `op`;
/// within a class they are interchangeable once invoked, so the search only ever
/// linearizes a class's members in call order (if some linearization uses a later member
/// while an earlier one is unused, swapping them gives another). A class is then fully
/// described by how many of its members are linearized, which keeps memo keys small and
/// removes the symmetric blow-up of many pending `info` operations. Indeterminate
/// operations are tried after the determinate candidates, if they were invoked before
/// the first pending return.
///
/// Reductions: each skips moves only when another move that is tried can do at least as
/// well — if a linearization starts with the skipped move, one of the same length or
/// shorter starts with the tried one — so, with the memo's argument (see [`Cache`]), the
/// search stays complete. `s` is the configuration's state, `x`, `y` candidates.
///
/// 1. *Forced moves.* If a determinate `x` that never changes the state
///    ([`Effect::Identity`], [`Effect::ReadOnly`]: a read, a rejected fenced write) is
///    legal in `s`, it is the only move worth trying: in any linearization from here,
///    moving `x` to the front changes no state (neither where it was nor where it goes),
///    and real time allows it (every pending operation returns after the first pending
///    return, which is after `x`'s call). So every move is followed at once by all the
///    forced moves it enables ([`Search::saturate`]), and only the configuration after
///    them is recorded and expanded.
/// 2. *Equal operations.* Of determinate candidates with equal `op`, only the one that
///    returns first is tried (swap it with the one a linearization uses first: the later
///    position is still before the earlier return). An indeterminate class equal to a
///    determinate candidate is not tried either (the determinate one must be used anyway).
/// 3. *Overwrites reaching the same state.* A candidate `y` that overwrites the state
///    ([`Effect::Overwrite`]) with `c` is not tried when another candidate `x` that
///    returns first, is legal in `s` and leads to `c` wherever it is legal
///    ([`Effect::Overwrite`] or [`Effect::Sets`] with `c`) is tried: a linearization
///    starting with `y` uses `x` later, where `x` also leads to `c`, so `y` (legal
///    everywhere) can take `x`'s place and `x` `y`'s.
/// 4. *Absorbed overwrites.* An overwrite `w` is *unobserved* when no operation that may
///    be linearized after it, before an overwrite that must follow it, is legal in the
///    state `w` leaves, except operations legal in every state (overwrites and
///    [`Effect::Identity`]): whatever `w` wrote, nothing can see it. When the search
///    linearizes an overwrite `b`, it linearizes every unobserved candidate just before
///    `b`, where `b` hides it. In any linearization from there the unobserved ones can be
///    deleted: until the next overwrite, only operations legal in every state follow them.
pub(crate) fn search<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    part: &[usize],
    lim: &mut Limits,
) -> Result<bool, Explanation> {
    Paused::new(model, ops, part).run(lim)
}

/// A [`search`] that a budget can stop and a later call resume, keeping everything it
/// explored (see `stages.rs`).
pub(super) struct Paused<'a, M: Model>(Search<'a, M>);

impl<'a, M: Model> Paused<'a, M> {
    /// A search of `part` (indices into `ops`), not started.
    pub(super) fn new(model: &'a M, ops: &'a [Operation<M::Op>], part: &[usize]) -> Self {
        Paused(Search::new(model, ops, part))
    }

    /// Search (on) within `lim`, as [`search`]; after `Ok(false)`, `lim.stuck_at` is set
    /// and the search may be run again with a larger budget.
    pub(super) fn run(&mut self, lim: &mut Limits) -> Result<bool, Explanation> {
        let s = &mut self.0;
        let r = s.run(lim);
        lim.stats.memo_bytes = lim.stats.memo_bytes.max(s.bytes());
        if r == Ok(false) {
            lim.stuck_at = s.best.as_ref().map(|b| s.order[b.1 as usize]);
        }
        r
    }
}

/// The search's state for one part; see [`search`].
struct Search<'a, M: Model> {
    model: &'a M,
    ops: &'a [Operation<M::Op>],
    /// Determinate operations (indices into `ops`) by local id, in call order.
    order: Vec<usize>,
    /// Equality class of each determinate op's `op` (shared numbering with `info_eq`).
    eq_of: Vec<u32>,
    /// Whether each determinate op is an [`Effect::Overwrite`], legal in every state.
    overwrite: Vec<bool>,
    /// The state each determinate op leads to wherever it is legal, when that is one
    /// state ([`Effect::Overwrite`] and [`Effect::Sets`]).
    target: Vec<Option<M::State>>,
    /// [`Effect::Identity`] or [`Effect::ReadOnly`]: never changes the state.
    read_only: Vec<bool>,
    unobserved: Vec<bool>,
    /// Indeterminate classes: members (indices into `ops`) in call order.
    classes: Vec<Vec<usize>>,
    info_eq: Vec<u32>,
    unguarded: Vec<u32>,
    guarded: HashMap<u64, Vec<u32>, BuildHasherDefault<IdHasher>>,
    linearized_in_class: Vec<u32>,
    /// `(class, count)` for classes with count > 0, sorted by class, flattened.
    counts: Vec<u32>,
    // Lowe's list: node 0 is the head; nodes 1..=2n in time order.
    next: Vec<u32>,
    prev: Vec<u32>,
    node_op: Vec<u32>,
    call_node: Vec<u32>,
    ret_node: Vec<u32>,
    // The configuration.
    state: M::State,
    u: Vec<u32>,
    top: u32,
    zh: u64,
    det_left: usize,
    /// Linearized determinate ids, with the `top` before each.
    lin_ids: Vec<(u32, u32)>,
    /// Linearized operations (indices into `ops`), in order.
    lin: Vec<usize>,
    levels: Vec<Level<M::State>>,
    cands: Vec<u32>,
    cache: Cache<M::State>,
    // Scratch for the equal-op reduction.
    eq_stamp: Vec<u32>,
    eq_best: Vec<u32>,
    stamp: u32,
    // Deepest dead end, for the explanation.
    best_prefix: Vec<usize>,
    best: Option<(usize, u32, M::State)>,
    low: usize,
}

/// What trying a move did.
enum Tried {
    /// A new configuration (the move is applied).
    New,
    /// Illegal, or a configuration already covered (nothing changed).
    No,
    /// The memo is full (nothing changed).
    Full,
}

impl<'a, M: Model> Search<'a, M> {
    fn new(model: &'a M, ops: &'a [Operation<M::Op>], part: &[usize]) -> Self {
        let order = determinate_order(ops, part);
        let n = order.len();
        let classes = indeterminate_classes(ops, part);
        let (eq_of, info_eq, n_eq) = equality_classes(ops, &order, &classes);
        let (unguarded, guarded) = guards(model, ops, &classes);
        let fx = Effects::of(model, ops, &order);
        let unobserved = unobserved(
            model,
            ops,
            &order,
            &fx.overwrite,
            &fx.target,
            &fx.identity,
            &classes,
        );
        let list = TimeList::new(ops, &order);
        let n_classes = classes.len();
        Search {
            model,
            ops,
            order,
            eq_of,
            overwrite: fx.overwrite,
            target: fx.target,
            read_only: fx.read_only,
            unobserved,
            classes,
            info_eq,
            unguarded,
            guarded,
            linearized_in_class: vec![0; n_classes],
            counts: Vec::new(),
            next: list.next,
            prev: list.prev,
            node_op: list.node_op,
            call_node: list.call_node,
            ret_node: list.ret_node,
            state: model.init(),
            u: Vec::new(),
            top: 0,
            zh: 0,
            det_left: n,
            lin_ids: Vec::new(),
            lin: Vec::new(),
            levels: Vec::new(),
            cands: Vec::new(),
            cache: Cache::new(),
            eq_stamp: vec![0; n_eq],
            eq_best: vec![0; n_eq],
            stamp: 0,
            best_prefix: Vec::new(),
            best: None,
            low: 0,
        }
    }

    /// Search until decided or out of budget; a later call goes on where this one
    /// stopped.
    fn run(&mut self, lim: &mut Limits) -> Result<bool, Explanation> {
        if self.levels.is_empty() {
            self.saturate();
            if self.det_left == 0 {
                return Ok(true);
            }
            let init = self.state.clone();
            self.open_level(0, None, init);
            lim.stats.configurations += 1;
        }
        let mut iter: u32 = 0;
        loop {
            iter = iter.wrapping_add(1);
            if iter & 0xff == 0 && lim.out_of_time() {
                return Ok(false);
            }
            let depth = self.levels.len() - 1;
            let lvl = &self.levels[depth];
            let (k, end) = (lvl.next, lvl.cand_end);
            let tried = if k < end {
                self.levels[depth].next += 1;
                let c = self.cands[k as usize];
                if c & 1 == 0 {
                    continue;
                }
                self.try_det(c >> 1, depth, lim.memo_limit)
            } else {
                match self.next_class(depth) {
                    Some((class, member)) => self.try_class(class, member, lim.memo_limit),
                    None => {
                        self.dead_end(depth);
                        if !self.pop() {
                            return Err(self.explanation());
                        }
                        continue;
                    }
                }
            };
            match tried {
                Tried::No => {}
                Tried::Full => {
                    lim.stats.stopped = Some(Stop::Memory);
                    return Ok(false);
                }
                Tried::New => {
                    lim.stats.configurations += 1;
                    if self.det_left == 0 {
                        return Ok(true);
                    }
                    // The stack grows with the candidates of each configuration.
                    if lim.memo_limit.is_some_and(|l| self.stack_bytes() > l / 2) {
                        lim.stats.stopped = Some(Stop::Memory);
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// Linearize determinate op `id` (set, hash and list bookkeeping).
    fn lin_det(&mut self, id: u32) {
        let prev_top = self.top;
        if id >= self.top {
            self.u.extend(self.top..id);
            self.top = id + 1;
        } else if let Ok(p) = self.u.binary_search(&id) {
            self.u.remove(p);
        }
        self.zh ^= zob(id);
        self.lin_ids.push((id, prev_top));
        self.lin.push(self.order[id as usize]);
        self.det_left -= 1;
        for nd in [self.call_node[id as usize], self.ret_node[id as usize]] {
            let (p, q) = (self.prev[nd as usize], self.next[nd as usize]);
            self.next[p as usize] = q;
            if q != NIL {
                self.prev[q as usize] = p;
            }
        }
    }

    /// Undo the last [`Self::lin_det`].
    fn unlin_det(&mut self) {
        let (id, prev_top) = self.lin_ids.pop().expect("something to undo");
        self.lin.pop();
        self.det_left += 1;
        self.zh ^= zob(id);
        if id >= prev_top {
            let added = (id - prev_top) as usize;
            self.u.truncate(self.u.len() - added);
            self.top = prev_top;
        } else {
            let p = self.u.binary_search(&id).unwrap_or_else(|p| p);
            self.u.insert(p, id);
        }
        for nd in [self.ret_node[id as usize], self.call_node[id as usize]] {
            let (p, q) = (self.prev[nd as usize], self.next[nd as usize]);
            self.next[p as usize] = nd;
            if q != NIL {
                self.prev[q as usize] = nd;
            }
        }
    }

    /// Record the current configuration in the memo, within what `limit` leaves
    /// beside the search stack.
    fn memo(&mut self, limit: Option<usize>) -> Memo {
        let h = self.zh ^ splitmix(self.model.subsumption_hash(&self.state));
        let model = self.model;
        let limit = limit.map(|l| l.saturating_sub(self.stack_bytes()));
        self.cache.insert(
            h,
            self.top,
            &self.u,
            &self.counts,
            &self.state,
            |a, b| model.subsumes(a, b),
            limit,
        )
    }

    /// The memory of the search stack (levels, candidates, linearized ops), in bytes.
    fn stack_bytes(&self) -> usize {
        self.levels.capacity() * std::mem::size_of::<Level<M::State>>()
            + self.cands.capacity() * 4
            + self.lin.capacity() * std::mem::size_of::<usize>()
            + self.lin_ids.capacity() * 8
            + self.best_prefix.capacity() * std::mem::size_of::<usize>()
    }

    /// The memory the search holds (memo and stack), in bytes.
    fn bytes(&self) -> usize {
        self.cache.bytes() + self.stack_bytes()
    }

    /// Try determinate candidate `id` of the configuration at `depth`.
    fn try_det(&mut self, id: u32, depth: usize, limit: Option<usize>) -> Tried {
        let Some(ns) = self
            .model
            .step(&self.state, &self.ops[self.order[id as usize]].op)
        else {
            return Tried::No;
        };
        let lin_start = self.lin.len() as u32;
        let lvl = &self.levels[depth];
        let (start, end) = (lvl.cand_start, lvl.cand_end);
        if self.overwrite[id as usize] {
            // Reduction 4: absorb the unobserved candidates.
            for k in start..end {
                let a = self.cands[k as usize] >> 1;
                if a != id && self.unobserved[a as usize] {
                    self.lin_det(a);
                }
            }
        }
        self.lin_det(id);
        let prev_state = std::mem::replace(&mut self.state, ns);
        self.saturate();
        match self.memo(limit) {
            Memo::New => {
                self.open_level(lin_start, None, prev_state);
                Tried::New
            }
            m => {
                while self.lin.len() > lin_start as usize {
                    self.unlin_det();
                }
                self.state = prev_state;
                if m == Memo::Full {
                    Tried::Full
                } else {
                    Tried::No
                }
            }
        }
    }

    /// Reduction 1: linearize every callable determinate op that never changes the
    /// state and is legal in it, until none is left (the state stays the same).
    fn saturate(&mut self) {
        let mut node = self.next[HEAD as usize];
        while node != NIL {
            let code = self.node_op[node as usize];
            if code & 1 == 1 {
                return;
            }
            let id = code >> 1;
            // Checking that the step changes nothing keeps a wrong hint from corrupting
            // the state (it can still lose linearizations; see `Model::effect`).
            let forced = self.read_only[id as usize]
                && self
                    .model
                    .step(&self.state, &self.ops[self.order[id as usize]].op)
                    .is_some_and(|ns| ns == self.state);
            if forced {
                // Earlier candidates stay illegal (the state is unchanged); go on from
                // here, where the linearized op's entries were.
                let p = self.prev[node as usize];
                self.lin_det(id);
                node = self.next[p as usize];
            } else {
                node = self.next[node as usize];
            }
        }
    }

    /// The next indeterminate class to try at `depth`, and its next member: the
    /// unguarded classes, then those whose guard is the state's (see
    /// [`Model::op_guard`]). Both lists are in order of first call, so past the first
    /// pending return's time no later class has an invoked member.
    fn next_class(&mut self, depth: usize) -> Option<(u32, usize)> {
        let lvl = &self.levels[depth];
        let t = self.ops[self.order[lvl.ret_id as usize]].ret;
        let ul = self.unguarded.len() as u32;
        let mut pos = lvl.class_idx;
        let guard = self.model.state_guard(&self.state);
        loop {
            let class = if pos < ul {
                let c = self.unguarded[pos as usize];
                if self.ops[self.classes[c as usize][0]].call <= t {
                    c
                } else {
                    pos = ul;
                    continue;
                }
            } else {
                let c = guard
                    .and_then(|g| self.guarded.get(&g))
                    .and_then(|b| b.get((pos - ul) as usize))
                    .copied();
                match c {
                    Some(c) if self.ops[self.classes[c as usize][0]].call <= t => c,
                    _ => {
                        self.levels[depth].class_idx = pos;
                        return None;
                    }
                }
            };
            pos += 1;
            let c = class as usize;
            let member = self.classes[c]
                .get(self.linearized_in_class[c] as usize)
                .copied()
                .filter(|&i| self.ops[i].call <= t);
            let Some(member) = member else { continue };
            // Reduction 2: a determinate candidate equal to the class is tried instead.
            let eq = self.info_eq[c];
            let lvl = &self.levels[depth];
            let cands = &self.cands[lvl.cand_start as usize..lvl.cand_end as usize];
            if cands.len() <= PAIRWISE && cands.iter().any(|&k| self.eq_of[(k >> 1) as usize] == eq)
            {
                continue;
            }
            self.levels[depth].class_idx = pos;
            return Some((class, member));
        }
    }

    /// Try the next member `i` of indeterminate class `class`.
    fn try_class(&mut self, class: u32, i: usize, limit: Option<usize>) -> Tried {
        let Some(ns) = self.model.step(&self.state, &self.ops[i].op) else {
            return Tried::No;
        };
        let counted = !self.model.op_dead(&ns, &self.ops[i].op);
        if counted {
            bump(&mut self.counts, class, 1);
        }
        self.linearized_in_class[class as usize] += 1;
        let lin_start = self.lin.len() as u32;
        self.lin.push(i);
        let prev_state = std::mem::replace(&mut self.state, ns);
        self.saturate();
        match self.memo(limit) {
            Memo::New => {
                self.open_level(lin_start, Some((class, counted)), prev_state);
                Tried::New
            }
            m => {
                while self.lin.len() > lin_start as usize + 1 {
                    self.unlin_det();
                }
                self.lin.pop();
                self.linearized_in_class[class as usize] -= 1;
                if counted {
                    bump(&mut self.counts, class, -1);
                }
                self.state = prev_state;
                if m == Memo::Full {
                    Tried::Full
                } else {
                    Tried::No
                }
            }
        }
    }

    /// Push the configuration just reached: collect its candidates and apply the
    /// reductions that choose which to try.
    fn open_level(&mut self, lin_start: u32, info: Option<(u32, bool)>, prev_state: M::State) {
        let cand_start = self.cands.len() as u32;
        let mut node = self.next[HEAD as usize];
        let mut ret_id = NIL;
        while node != NIL {
            let code = self.node_op[node as usize];
            if code & 1 == 1 {
                ret_id = code >> 1;
                break;
            }
            self.cands.push(code & !1);
            node = self.next[node as usize];
        }
        let cand_end = self.cands.len() as u32;
        if ret_id != NIL {
            self.mark_tried(cand_start as usize..cand_end as usize);
        }
        self.levels.push(Level {
            lin_start,
            info,
            prev_state,
            cand_start,
            cand_end,
            next: cand_start,
            class_idx: 0,
            ret_id,
        });
    }

    /// Reductions 2 and 3: set the tried bit of the candidates worth trying.
    fn mark_tried(&mut self, range: std::ops::Range<usize>) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.eq_stamp.iter_mut().for_each(|s| *s = 0);
            self.stamp = 1;
        }
        let key = |s: &Self, id: u32| (s.ops[s.order[id as usize]].ret, id);
        for k in range.clone() {
            let id = self.cands[k] >> 1;
            let eq = self.eq_of[id as usize] as usize;
            if self.eq_stamp[eq] != self.stamp || key(self, id) < key(self, self.eq_best[eq]) {
                self.eq_stamp[eq] = self.stamp;
                self.eq_best[eq] = id;
            }
        }
        for k in range.clone() {
            let id = self.cands[k] >> 1;
            let eq = self.eq_of[id as usize] as usize;
            let mut tried = self.eq_best[eq] == id;
            if tried && self.overwrite[id as usize] && range.len() <= PAIRWISE {
                if let Some(c) = &self.target[id as usize] {
                    let mine = key(self, id);
                    tried = !self.cands[range.clone()].iter().any(|&x| {
                        let x = x >> 1;
                        x != id
                            && key(self, x) < mine
                            && self.target[x as usize].as_ref() == Some(c)
                            && self
                                .model
                                .step(&self.state, &self.ops[self.order[x as usize]].op)
                                .is_some()
                    });
                }
            }
            self.cands[k] = id << 1 | tried as u32;
        }
    }

    /// Undo the move that reached the top configuration; false when it was the root.
    fn pop(&mut self) -> bool {
        let lvl = self.levels.pop().expect("a level to pop");
        self.cands.truncate(lvl.cand_start as usize);
        if self.levels.is_empty() {
            return false;
        }
        // The move: an indeterminate op then forced ones, or determinate ops.
        let base = lvl.lin_start as usize + usize::from(lvl.info.is_some());
        while self.lin.len() > base {
            self.unlin_det();
        }
        if let Some((class, counted)) = lvl.info {
            self.lin.pop();
            self.linearized_in_class[class as usize] -= 1;
            if counted {
                bump(&mut self.counts, class, -1);
            }
        }
        self.state = lvl.prev_state;
        self.low = self.low.min(self.lin.len());
        true
    }

    /// The configuration at `depth` has no move left: record it if it is the deepest.
    fn dead_end(&mut self, depth: usize) {
        let len = self.lin.len();
        if self.best.as_ref().is_none_or(|b| len > b.0) {
            self.best_prefix.truncate(self.low);
            self.best_prefix.extend_from_slice(&self.lin[self.low..]);
            self.low = len;
            self.best = Some((len, self.levels[depth].ret_id, self.state.clone()));
        }
    }

    fn explanation(&mut self) -> Explanation {
        let (_, failing, st) = self
            .best
            .take()
            .expect("a dead end was recorded before the stack emptied");
        Explanation {
            partition: Box::default(),
            prefix: std::mem::take(&mut self.best_prefix),
            failing: self.order[failing as usize],
            concurrent: Vec::new(),
            state: self.model.describe_state(&st),
            refutation: None,
            window: None,
            narrowed: 0,
        }
    }
}

/// Add `delta` to the count of `class` in the flattened sorted `(class, count)` list.
fn bump(counts: &mut Vec<u32>, class: u32, delta: i32) {
    let pairs = counts.len() / 2;
    let (mut lo, mut hi) = (0, pairs);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if counts[2 * mid] < class {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo < pairs && counts[2 * lo] == class {
        let c = counts[2 * lo + 1] as i64 + delta as i64;
        if c == 0 {
            counts.drain(2 * lo..2 * lo + 2);
        } else {
            counts[2 * lo + 1] = c as u32;
        }
    } else {
        debug_assert!(delta > 0);
        counts.splice(2 * lo..2 * lo, [class, delta as u32]);
    }
}
