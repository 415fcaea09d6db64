//! `fenced-lock`: the lock service's specification, which `lock-linearizable` checks
//! (`docs/checks.md`).
//!
//! State `(owner, last token)`. `acquire(p) → ok(t)` needs owner = none and t > last
//! (any t before the first grant), then owner = p, last = t. `release(p) → ok` needs
//! owner = p, then owner = none. `expire` (a server's point event) needs an owner, then
//! owner = none.
//!
//! Refinement: a release that names the token of the hold it releases (locksim records
//! it) also needs last = that token — it can only end that hold, as a compare-and-delete
//! unlock does. Without this, a release whose response was lost could end any later hold
//! of the same process, which no real fenced lock allows, and which makes a history
//! with many lost releases very expensive to check.
//!
//! An acquire whose token is unknown (indeterminate, or recorded without one) takes the
//! most permissive token, last + 1 (0 before any grant). When no successful acquire in
//! the history carries a token (locks without fencing), tokens are not checked at all.
//!
//! Operations: `acquire`, `release` (by clients, paired invoke/completion), `expire`
//! (point events); the `lock` field (for expiries, `key`) names the lock, and each lock
//! is checked on its own. Expiries of keys that no acquire or release names are ignored,
//! and so are the storage's `read`s and `write`s and point events of other names (the
//! nemesis's); any other operation name is an error, not a silent skip.
//!
//! # Fast path
//!
//! When every successful acquire of a lock carries a token, its linearization is forced:
//!
//! 1. grants appear in token order (each needs t > last);
//! 2. a process's operations are sequential, so a determinate release by p can only end
//!    the hold of p's preceding grant (in p's own order); a second release, or one with
//!    no grant before it, cannot be placed;
//! 3. a hold without a release must be ended by an expiry (or be the last hold), and
//!    expiries — points in time — end those holds in order.
//!
//! The forced sequence `grant, end, grant, end, ...` is then checked against real time in
//! one greedy pass (each operation's linearization point is the later of its call and
//! the previous point, and must not pass its return). Sorting dominates: O(n log n).
//! Indeterminate operations may be left out of a linearization, so when the forced order
//! of the determinate operations alone is legal the lock is linearizable; when it is not
//! and indeterminate operations exist, the general search decides.

use super::explain::Explanation;
use super::model::Model;
use super::ops::{skip_or_reject, InputError, Operation, RawOp};
use super::register::{describe_key, partition_by_key};
use crate::history::names;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// No owner.
const NONE: u32 = u32::MAX;

/// The guard of a hold: its owner and token.
fn guard_key(p: u32, token: Option<u64>) -> u64 {
    let t = token.map_or(u64::MAX, |t| t);
    t.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ p as u64
}

/// A fenced-lock operation. Processes are indices into the model's process table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LockOp {
    /// A grant to process `p` with fencing token `token` (None: unknown).
    Acquire {
        /// The acquiring process.
        p: u32,
        /// The token granted, when known.
        token: Option<u64>,
    },
    /// A release by process `p` of its hold with fencing token `token` (None: of
    /// whatever it holds).
    Release {
        /// The releasing process.
        p: u32,
        /// The token of the hold being released, when recorded.
        token: Option<u64>,
    },
    /// The server expired the lock.
    Expire,
}

/// The state of a fenced lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LockState {
    /// The holder, or `u32::MAX` when free.
    pub owner: u32,
    /// The last token granted (None before any).
    pub last: Option<u64>,
}

/// The `fenced-lock` model.
#[derive(Clone, Debug, Default)]
pub struct FencedLock {
    tokens: bool,
    keys: Vec<Option<Arc<str>>>,
    procs: Vec<String>,
}

impl FencedLock {
    /// A model that checks tokens iff `tokens`.
    pub fn new(tokens: bool) -> FencedLock {
        FencedLock {
            tokens,
            ..FencedLock::default()
        }
    }

    /// The process table (names by index).
    pub fn processes(&self) -> &[String] {
        &self.procs
    }

    /// Interpret raw operations; decides whether tokens are checked.
    pub fn ops_from_raw(&mut self, raw: &[RawOp]) -> Result<Vec<Operation<LockOp>>, InputError> {
        let lock_keys: HashSet<&Option<Arc<str>>> = raw
            .iter()
            .filter(|r| matches!(&*r.f, names::ACQUIRE | names::RELEASE))
            .map(|r| &r.key)
            .collect();
        let token_of = |r: &RawOp| {
            r.token
                .or_else(|| r.value.as_int().and_then(|t| u64::try_from(t).ok()))
        };
        self.tokens = raw
            .iter()
            .any(|r| &*r.f == names::ACQUIRE && !r.is_indeterminate() && token_of(r).is_some());
        let mut procs: HashMap<String, u32> = HashMap::new();
        self.procs.clear();
        self.keys.clear();
        let mut out = Vec::with_capacity(raw.len());
        for r in raw {
            let mut pid = |name: &str| -> u32 {
                if let Some(&p) = procs.get(name) {
                    return p;
                }
                let p = self.procs.len() as u32;
                self.procs.push(name.to_string());
                procs.insert(name.to_string(), p);
                p
            };
            let op = match &*r.f {
                names::ACQUIRE => LockOp::Acquire {
                    p: pid(&r.process),
                    token: token_of(r),
                },
                names::RELEASE => LockOp::Release {
                    p: pid(&r.process),
                    token: token_of(r),
                },
                names::EXPIRE if lock_keys.contains(&r.key) => LockOp::Expire,
                names::EXPIRE => continue,
                _ => {
                    skip_or_reject(
                        r,
                        "fenced-lock",
                        &[names::ACQUIRE, names::RELEASE, names::EXPIRE],
                        &[names::READ, names::WRITE],
                    )?;
                    continue;
                }
            };
            out.push(Operation::from_raw(op, pid(&r.process), r));
            self.keys.push(r.key.clone());
        }
        Ok(out)
    }

    fn name(&self, p: u32) -> String {
        self.procs
            .get(p as usize)
            .cloned()
            .unwrap_or_else(|| format!("process {p}"))
    }

    /// Violations among determinate operations that no indeterminate operation can
    /// explain, as (prefix, failing op): two grants with one token; a grant whose token
    /// is below that of a grant that completed before it was invoked; two consecutive
    /// grants (in token order) such that nothing can end the first hold in between — no
    /// expiry, and no release by its holder, whose interval meets the window from the
    /// first grant's call to the second's return. `grants` are determinate grants,
    /// `holds` their positions in token order, `expires` determinate expiries by time.
    fn unexplainable(
        &self,
        ops: &[Operation<LockOp>],
        part: &[usize],
        grants: &[usize],
        holds: &[usize],
        expires: &[usize],
    ) -> Option<(Vec<usize>, usize)> {
        let token = |i: usize| match ops[i].op {
            LockOp::Acquire { token: Some(t), .. } => t,
            _ => 0,
        };
        let owner = |i: usize| match ops[i].op {
            LockOp::Acquire { p, .. } => p,
            _ => NONE,
        };
        // Determinate releases by process, sorted by call (a process's determinate
        // operations do not overlap, so their returns are sorted too); the earliest
        // call of an indeterminate release by (process, token named).
        let mut releases: HashMap<u32, Vec<(u64, u64, Option<u64>)>> = HashMap::new();
        let mut pending: HashMap<(u32, Option<u64>), u64> = HashMap::new();
        for &i in part {
            if let LockOp::Release { p, token } = ops[i].op {
                if ops[i].is_indeterminate() {
                    let e = pending.entry((p, token)).or_insert(u64::MAX);
                    *e = (*e).min(ops[i].call);
                } else {
                    releases
                        .entry(p)
                        .or_default()
                        .push((ops[i].call, ops[i].ret, token));
                }
            }
        }
        for v in releases.values_mut() {
            v.sort_unstable();
        }
        let expire_times: Vec<u64> = expires.iter().map(|&i| ops[i].call).collect();
        // The grant with the latest call so far, in token order.
        let mut latest_call: Option<usize> = None;
        for (k, &h) in holds.iter().enumerate() {
            let g = grants[h];
            if k > 0 {
                let prev = grants[holds[k - 1]];
                if token(prev) == token(g) {
                    let (a, b) = if ops[prev].call <= ops[g].call {
                        (prev, g)
                    } else {
                        (g, prev)
                    };
                    return Some((vec![a], b));
                }
            }
            if let Some(l) = latest_call {
                if ops[g].ret < ops[l].call {
                    // `g` completed before `l` was invoked, yet has the larger token.
                    return Some((vec![g], l));
                }
            }
            if latest_call.is_none_or(|l| ops[g].call > ops[l].call) {
                latest_call = Some(g);
            }
        }
        for w in holds.windows(2) {
            let (g1, g2) = (grants[w[0]], grants[w[1]]);
            let (lo, hi) = (ops[g1].call, ops[g2].ret);
            let first = expire_times.partition_point(|&t| t < lo);
            if expire_times.get(first).is_some_and(|&t| t <= hi) {
                continue;
            }
            let p1 = owner(g1);
            let fits = |t: Option<u64>| t.is_none_or(|t| t == token(g1));
            let released = releases.get(&p1).is_some_and(|v| {
                let end = v.partition_point(|&(call, _, _)| call <= hi);
                v[..end]
                    .iter()
                    .rev()
                    .take_while(|&&(_, ret, _)| ret >= lo)
                    .any(|&(_, _, t)| fits(t))
            }) || [None, Some(token(g1))]
                .iter()
                .any(|&t| pending.get(&(p1, t)).is_some_and(|&c| c <= hi));
            if !released {
                return Some((vec![g1], g2));
            }
        }
        None
    }

    /// The explanation of a violation found by the fast path: `failing` cannot follow
    /// `prefix`.
    fn violation(
        &self,
        ops: &[Operation<LockOp>],
        prefix: Vec<usize>,
        failing: usize,
    ) -> Explanation {
        let state = self.describe_state(&self.state_after(ops, &prefix));
        Explanation {
            partition: Box::default(),
            prefix,
            failing,
            concurrent: Vec::new(),
            state,
            refutation: None,
            window: None,
            narrowed: 0,
        }
    }

    fn state_after(&self, ops: &[Operation<LockOp>], seq: &[usize]) -> LockState {
        let mut s = self.init();
        for &i in seq {
            match self.step(&s, &ops[i].op) {
                Some(n) => s = n,
                None => break,
            }
        }
        s
    }
}

impl Model for FencedLock {
    type State = LockState;
    type Op = LockOp;

    fn init(&self) -> LockState {
        LockState {
            owner: NONE,
            last: None,
        }
    }

    fn step(&self, s: &LockState, op: &LockOp) -> Option<LockState> {
        match *op {
            LockOp::Acquire { p, token } => {
                if s.owner != NONE {
                    return None;
                }
                let last = match (self.tokens, token, s.last) {
                    (false, _, _) => s.last,
                    (true, Some(t), Some(l)) if t <= l => return None,
                    (true, Some(t), _) => Some(t),
                    (true, None, None) => Some(0),
                    (true, None, Some(l)) => Some(l.checked_add(1)?),
                };
                Some(LockState { owner: p, last })
            }
            LockOp::Release { p, token } => {
                let right_hold = !self.tokens || token.is_none() || token == s.last;
                (s.owner == p && right_hold).then_some(LockState {
                    owner: NONE,
                    last: s.last,
                })
            }
            LockOp::Expire => (s.owner != NONE).then_some(LockState {
                owner: NONE,
                last: s.last,
            }),
        }
    }

    /// Both free, `a` with an earlier (or no) last token: a smaller `last` admits every
    /// token a larger one does, and leads to the same state after a known token. (A held
    /// lock's token decides which release may end it, so held states must be equal.)
    fn subsumes(&self, a: &LockState, b: &LockState) -> bool {
        if a.owner != b.owner {
            return false;
        }
        if a.owner != NONE {
            return a.last == b.last;
        }
        match (a.last, b.last) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(x), Some(y)) => x <= y,
        }
    }

    fn subsumption_hash(&self, s: &LockState) -> u64 {
        s.owner as u64
    }

    /// A release naming token t by p is only legal while p holds the hold with token t.
    fn op_guard(&self, op: &LockOp) -> Option<u64> {
        match *op {
            LockOp::Release { p, token: Some(t) } if self.tokens => Some(guard_key(p, Some(t))),
            _ => None,
        }
    }

    fn state_guard(&self, s: &LockState) -> Option<u64> {
        (s.owner != NONE).then(|| guard_key(s.owner, s.last))
    }

    /// Tokens only grow: an acquire with token t is dead once last ≥ t; a release
    /// naming t once last > t, or last = t held by someone else or by no one.
    fn op_dead(&self, s: &LockState, op: &LockOp) -> bool {
        if !self.tokens {
            return false;
        }
        match (*op, s.last) {
            (LockOp::Acquire { token: Some(t), .. }, Some(l)) => l >= t,
            (LockOp::Release { p, token: Some(t) }, Some(l)) => l > t || (l == t && s.owner != p),
            _ => false,
        }
    }

    fn partition(&self, ops: &[Operation<LockOp>]) -> Vec<Vec<usize>> {
        partition_by_key(&self.keys, ops.len())
    }

    fn describe_partition(&self, _ops: &[Operation<LockOp>], part: &[usize]) -> String {
        describe_key(&self.keys, part).replacen("key", "lock", 1)
    }

    fn describe_op(&self, op: &LockOp) -> String {
        match *op {
            LockOp::Acquire { token: Some(t), .. } => format!("acquire → token {t}"),
            LockOp::Acquire { token: None, .. } => names::ACQUIRE.into(),
            LockOp::Release { token: Some(t), .. } => format!("release token {t}"),
            LockOp::Release { token: None, .. } => names::RELEASE.into(),
            LockOp::Expire => names::EXPIRE.into(),
        }
    }

    fn describe_state(&self, s: &LockState) -> String {
        let last = match (self.tokens, s.last) {
            (true, Some(l)) => format!(", last token {l}"),
            (true, None) => ", no token granted yet".to_string(),
            (false, _) => String::new(),
        };
        if s.owner == NONE {
            format!("free{last}")
        } else {
            format!("held by {}{last}", self.name(s.owner))
        }
    }

    fn fast_check(
        &self,
        ops: &[Operation<LockOp>],
        part: &[usize],
    ) -> Option<Result<(), Explanation>> {
        if !self.tokens {
            return None;
        }
        let mut det: Vec<usize> = part
            .iter()
            .copied()
            .filter(|&i| !ops[i].is_indeterminate())
            .collect();
        let has_indeterminate = det.len() != part.len();
        det.sort_unstable_by_key(|&i| (ops[i].call, i));
        let paired = pair_by_process(ops, &det)?;
        let forced = forced_sequence(ops, &paired, det.len());
        let (prefix_len, failing) = match (first_too_late(ops, &forced.seq), forced.stuck) {
            (Some(f), _) => f,
            (None, Some(s)) => (prefix_before(ops, &forced.seq, s), s),
            (None, None) => return Some(Ok(())),
        };
        if has_indeterminate {
            // Indeterminate operations might explain the failure; decide here only the
            // violations none of them can explain, and leave the rest to the search.
            return self
                .unexplainable(ops, part, &paired.grants, &forced.holds, &paired.expires)
                .map(|(prefix, failing)| Err(self.violation(ops, prefix, failing)));
        }
        let prefix = forced.seq[..prefix_len].to_vec();
        Some(Err(self.violation(ops, prefix, failing)))
    }
}

/// The determinate operations of a part, paired in process order (step 2 of the fast
/// path).
struct Paired {
    /// Grants, in call order.
    grants: Vec<usize>,
    /// Per grant, the release that ends its hold (`usize::MAX`: none).
    release_of: Vec<usize>,
    /// Expiries, in call order.
    expires: Vec<usize>,
    /// The first release that cannot be placed: no grant before it, or it names another
    /// token than its grant's.
    bad_release: Option<usize>,
}

/// Pair each release in `det` (determinate operations in call order) with its process's
/// open grant. None when the fast path does not apply: a grant without a token, or two
/// overlapping operations of one process.
fn pair_by_process(ops: &[Operation<LockOp>], det: &[usize]) -> Option<Paired> {
    let mut paired = Paired {
        grants: Vec::new(),
        release_of: Vec::new(),
        expires: Vec::new(),
        bad_release: None,
    };
    let mut open: HashMap<u32, usize> = HashMap::new();
    let mut last_ret: HashMap<u32, u64> = HashMap::new();
    for &i in det {
        let o = &ops[i];
        match o.op {
            LockOp::Acquire { p, token } => {
                token?;
                if last_ret.insert(p, o.ret).is_some_and(|r| r >= o.call) {
                    return None; // overlapping operations of one process
                }
                open.insert(p, paired.grants.len());
                paired.grants.push(i);
                paired.release_of.push(usize::MAX);
            }
            LockOp::Release { p, token: rt } => {
                if last_ret.insert(p, o.ret).is_some_and(|r| r >= o.call) {
                    return None;
                }
                match open.remove(&p) {
                    Some(g) => {
                        let gt = match ops[paired.grants[g]].op {
                            LockOp::Acquire { token, .. } => token,
                            _ => None,
                        };
                        if rt.is_some() && rt != gt {
                            // It can only end that hold, and names another token.
                            paired.bad_release.get_or_insert(i);
                        }
                        paired.release_of[g] = i;
                    }
                    None => {
                        paired.bad_release.get_or_insert(i);
                    }
                }
            }
            LockOp::Expire => paired.expires.push(i),
        }
    }
    Some(paired)
}

/// The forced linearization of the determinate operations (steps 1 and 3 of the fast
/// path).
struct Forced {
    /// Positions in `grants` in token order.
    holds: Vec<usize>,
    /// Grants and the ends of their holds: `grant, end, grant, end, ...`.
    seq: Vec<usize>,
    /// The operation the sequence cannot place, if any.
    stuck: Option<usize>,
}

/// Holds in token order, each followed by its end: its release, else the next expiry.
/// `len` is the capacity the sequence needs at most.
fn forced_sequence(ops: &[Operation<LockOp>], paired: &Paired, len: usize) -> Forced {
    let Paired {
        grants,
        release_of,
        expires,
        bad_release,
    } = paired;
    let token = |g: usize| match ops[grants[g]].op {
        LockOp::Acquire { token: Some(t), .. } => t,
        _ => 0,
    };
    let mut holds: Vec<usize> = (0..grants.len()).collect();
    holds.sort_unstable_by_key(|&g| token(g));
    let mut seq: Vec<usize> = Vec::with_capacity(len);
    let mut stuck: Option<usize> = None;
    let mut next_expire = 0;
    for (k, &g) in holds.iter().enumerate() {
        if k > 0 && token(g) == token(holds[k - 1]) {
            stuck = Some(grants[g]);
            break;
        }
        seq.push(grants[g]);
        if release_of[g] != usize::MAX {
            seq.push(release_of[g]);
        } else if next_expire < expires.len() {
            seq.push(expires[next_expire]);
            next_expire += 1;
        } else if k + 1 < holds.len() {
            stuck = Some(grants[holds[k + 1]]);
            break;
        }
    }
    if stuck.is_none() && next_expire < expires.len() {
        stuck = Some(expires[next_expire]);
    }
    if stuck.is_none() {
        stuck = *bad_release;
    }
    Forced { holds, seq, stuck }
}

/// Real time: greedy linearization points along `seq` (each the later of its call and
/// the previous point). The first operation whose point would pass its return, as
/// (prefix length, failing op).
fn first_too_late(ops: &[Operation<LockOp>], seq: &[usize]) -> Option<(usize, usize)> {
    let mut cur = 0u64;
    for (k, &i) in seq.iter().enumerate() {
        let lp = cur.max(ops[i].call);
        if lp > ops[i].ret {
            return Some((k, i));
        }
        cur = lp;
    }
    None
}

/// How much of `seq` can precede operation `s`.
fn prefix_before(ops: &[Operation<LockOp>], seq: &[usize], s: usize) -> usize {
    let mut cur = 0u64;
    seq.iter()
        .take_while(|&&i| {
            cur = cur.max(ops[i].call);
            cur <= ops[s].ret
        })
        .count()
}
