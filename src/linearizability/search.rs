//! The Wing–Gong–Lowe search with memoisation and just-in-time linearization.

use super::explain::{Explanation, LinVerdict};
use super::model::{Model, Operation};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

/// How to run a check.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// Give up with [`LinVerdict::Unknown`] after this long (None: no limit).
    pub timeout: Option<Duration>,
    /// Use the model's fast path ([`Model::fast_check`]) when it has one.
    pub fast_path: bool,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            timeout: None,
            fast_path: true,
        }
    }
}

/// Check `ops` against `model`: partition, then the fast path or the search per part.
///
/// Parts are checked in the order [`Model::partition`] returns them; the first part that
/// is not linearizable decides the verdict. A part that runs out of time makes the
/// verdict [`LinVerdict::Unknown`] unless a later part is found not linearizable.
pub fn check<M: Model>(model: &M, ops: &[Operation<M::Op>], opts: CheckOptions) -> LinVerdict {
    let deadline = opts.timeout.map(|t| Instant::now() + t);
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
            None => search(model, ops, &part, deadline),
        };
        match result {
            Ok(true) => {}
            Ok(false) => unknown = true,
            Err(mut e) => {
                e.partition = model.describe_partition(ops, &part);
                return LinVerdict::NotLinearizable(e.with_concurrent(ops, &part));
            }
        }
    }
    if unknown {
        LinVerdict::Unknown
    } else {
        LinVerdict::Linearizable
    }
}

/// A fixed, fast, non-cryptographic hasher (FxHash's multiply-rotate); never seeded
/// randomly, so the search is repeatable.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

const FX_K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(w));
        }
        for &b in chunks.remainder() {
            self.write_u64(b as u64);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64)
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(FX_K);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Hasher for keys that are already hashes.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// SplitMix64: per-operation Zobrist keys from a fixed seed.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;

struct CacheEntry<S> {
    next: u32,
    top: u32,
    key_start: u32,
    u_len: u32,
    c_len: u32,
    state: S,
}

/// Lowe's memo: every configuration (linearized set, state) explored so far. The set of
/// determinate operations is `{0..top} \ U` with `U` sorted; indeterminate operations
/// are counted per class (see [`search`]). Entries with equal hashes are chained.
///
/// A configuration is skipped when a seen one has the same determinate set, a state that
/// subsumes its state ([`Model::subsumes`]), and has used no more of any indeterminate
/// class: that one can do everything this one can
/// (its unused class members were invoked no later), so if a linearization exists from
/// here, one at least as short exists from there. Among the configurations seen that can
/// complete, one with the fewest steps left is never skipped nor left unexpanded, so the
/// search stays complete (the usual memo is the case of equal counts).
struct Cache<S> {
    heads: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
    entries: Vec<CacheEntry<S>>,
    pool: Vec<u32>,
}

impl<S: Clone> Cache<S> {
    fn new() -> Self {
        Cache {
            heads: HashMap::default(),
            entries: Vec::new(),
            pool: Vec::new(),
        }
    }

    /// Insert the configuration unless it or one that subsumes it was seen; true when
    /// it was new. `h` must hash the determinate set and the state only.
    fn insert(
        &mut self,
        h: u64,
        top: u32,
        u: &[u32],
        counts: &[u32],
        state: &S,
        subsumes: impl Fn(&S, &S) -> bool,
    ) -> bool {
        let head = self.heads.get(&h).copied().unwrap_or(NIL);
        let mut e = head;
        while e != NIL {
            let en = &self.entries[e as usize];
            if en.top == top
                && en.u_len as usize == u.len()
                && en.c_len as usize <= counts.len()
                && subsumes(&en.state, state)
            {
                let k = en.key_start as usize;
                let mid = k + u.len();
                if &self.pool[k..mid] == u
                    && dominated(&self.pool[mid..mid + en.c_len as usize], counts)
                {
                    return false;
                }
            }
            e = en.next;
        }
        let key_start = self.pool.len() as u32;
        self.pool.extend_from_slice(u);
        self.pool.extend_from_slice(counts);
        self.entries.push(CacheEntry {
            next: head,
            top,
            key_start,
            u_len: u.len() as u32,
            c_len: counts.len() as u32,
            state: state.clone(),
        });
        self.heads.insert(h, (self.entries.len() - 1) as u32);
        true
    }
}

/// What a stack frame linearized.
#[derive(Clone, Copy)]
enum Lin {
    /// A determinate operation (local id).
    Det { id: u32, prev_top: u32 },
    /// The next member of indeterminate class `class`, candidate `idx` while stopped at
    /// return entry `ret_id` (a determinate local id); `counted` when it was recorded in
    /// the memo's class counts (operations dead after they apply are not).
    Info {
        class: u32,
        idx: u32,
        ret_id: u32,
        counted: bool,
    },
}

struct Frame<S> {
    lin: Lin,
    prev_state: S,
}

/// Where the search is: at a node of the call/return list, or, stopped at the return
/// entry of determinate op `ret_id`, trying the `idx`-th candidate indeterminate class
/// (the unguarded classes, then those whose guard is the state's; see [`Model::op_guard`]).
#[derive(Clone, Copy)]
enum Cursor {
    Node(u32),
    Class {
        idx: u32,
        ret_id: u32,
    },
    /// No candidate is left: `ret_id` cannot be linearized here.
    DeadEnd {
        ret_id: u32,
    },
}

/// Search one part. `Ok(true)`: linearizable; `Ok(false)`: out of time; `Err`: not
/// linearizable, with the deepest dead end (indices into `ops`).
///
/// Determinate operations live in Lowe's doubly-linked list of call/return entries.
/// Indeterminate operations (return at +∞) are grouped into classes of equal `op`;
/// within a class they are interchangeable once invoked, so the search only ever
/// linearizes a class's members in call order (if some linearization uses a later member
/// while an earlier one is unused, swapping them gives another). A class is then fully
/// described by how many of its members are linearized, which keeps memo keys small and
/// removes the symmetric blow-up of many pending `info` operations. Indeterminate
/// operations are tried when the walk stops at the first pending return entry (the
/// just-in-time point), if they were invoked before it.
pub(crate) fn search<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    part: &[usize],
    deadline: Option<Instant>,
) -> Result<bool, Explanation> {
    // Determinate operations: local ids in call order.
    let mut order: Vec<usize> = part
        .iter()
        .copied()
        .filter(|&i| !ops[i].is_indeterminate())
        .collect();
    order.sort_by_key(|&i| (ops[i].call, ops[i].ret, i));
    let n = order.len();
    let lops: Vec<&Operation<M::Op>> = order.iter().map(|&i| &ops[i]).collect();

    // Indeterminate classes, each in call order; classes in order of first call.
    let mut info: Vec<usize> = part
        .iter()
        .copied()
        .filter(|&i| ops[i].is_indeterminate())
        .collect();
    info.sort_by_key(|&i| (ops[i].call, i));
    let mut class_index: HashMap<&M::Op, u32, BuildHasherDefault<FxHasher>> = HashMap::default();
    let mut classes: Vec<Vec<usize>> = Vec::new();
    for &i in &info {
        let next = classes.len() as u32;
        let c = *class_index.entry(&ops[i].op).or_insert(next);
        if c == next {
            classes.push(Vec::new());
        }
        classes[c as usize].push(i);
    }
    // Unguarded classes, and guarded ones by guard; each in order of first call.
    let mut unguarded: Vec<u32> = Vec::new();
    let mut guarded: HashMap<u64, Vec<u32>, BuildHasherDefault<IdHasher>> = HashMap::default();
    for (c, members) in classes.iter().enumerate() {
        match model.op_guard(&ops[members[0]].op) {
            None => unguarded.push(c as u32),
            Some(g) => guarded.entry(g).or_default().push(c as u32),
        }
    }
    let no_classes: Vec<u32> = Vec::new();
    let mut linearized_in_class = vec![0u32; classes.len()];
    // (class, count) for classes with count > 0, sorted by class, flattened.
    let mut counts: Vec<u32> = Vec::new();

    // Entries: node 0 is the head; node ids 1..=2n in time order.
    let mut ev: Vec<(u64, u8, u32)> = Vec::with_capacity(2 * n);
    for (id, o) in lops.iter().enumerate() {
        ev.push((o.call, 0, id as u32));
        ev.push((o.ret, 1, id as u32));
    }
    ev.sort_unstable();
    let nodes = 2 * n + 1;
    let mut next = vec![NIL; nodes];
    let mut prev = vec![NIL; nodes];
    let mut node_op = vec![0u32; nodes]; // op << 1 | is_ret
    let mut call_node = vec![0u32; n];
    let mut ret_node = vec![0u32; n];
    for (k, &(_, kind, id)) in ev.iter().enumerate() {
        let node = (k + 1) as u32;
        node_op[node as usize] = (id << 1) | kind as u32;
        if kind == 0 {
            call_node[id as usize] = node;
        } else {
            ret_node[id as usize] = node;
        }
    }
    for k in 0..nodes {
        next[k] = if k + 1 < nodes { (k + 1) as u32 } else { NIL };
        prev[k] = if k > 0 { (k - 1) as u32 } else { NIL };
    }
    drop(ev);
    let zob = |x: u64| splitmix(x ^ 0x6c6f_636b_7369_6d00);

    let mut cache: Cache<M::State> = Cache::new();
    let mut stack: Vec<Frame<M::State>> = Vec::new();
    let mut state = model.init();
    let mut u: Vec<u32> = Vec::new();
    let mut top: u32 = 0;
    let mut zh: u64 = 0;

    // Deepest dead end, for the explanation (prefix as indices into `ops`).
    let mut best_prefix: Vec<usize> = Vec::new();
    let mut best: Option<(usize, u32, M::State)> = None;
    let mut low: usize = 0;
    let frame_op = |f: &Frame<M::State>, in_class: &[u32]| -> usize {
        match f.lin {
            Lin::Det { id, .. } => order[id as usize],
            Lin::Info { class, .. } => {
                classes[class as usize][in_class[class as usize] as usize - 1]
            }
        }
    };

    let mut cur = Cursor::Node(next[HEAD as usize]);
    let mut iter: u64 = 0;
    loop {
        iter += 1;
        if iter & 0x3fff == 0 {
            if let Some(d) = deadline {
                if Instant::now() >= d {
                    return Ok(false);
                }
            }
        }
        match cur {
            Cursor::Node(NIL) => {
                return Ok(true);
            }
            Cursor::Node(node) => {
                let code = node_op[node as usize];
                let id = code >> 1;
                if code & 1 == 1 {
                    cur = Cursor::Class { idx: 0, ret_id: id };
                    continue;
                }
                // A call entry: try to linearize `id` now.
                if let Some(ns) = model.step(&state, &lops[id as usize].op) {
                    let prev_top = top;
                    if id >= top {
                        u.extend(top..id);
                        top = id + 1;
                    } else if let Ok(p) = u.binary_search(&id) {
                        u.remove(p);
                    }
                    zh ^= zob(id as u64);
                    let h = zh ^ splitmix(model.subsumption_hash(&ns));
                    if cache.insert(h, top, &u, &counts, &ns, |a, b| model.subsumes(a, b)) {
                        let prev_state = std::mem::replace(&mut state, ns);
                        stack.push(Frame {
                            lin: Lin::Det { id, prev_top },
                            prev_state,
                        });
                        for nd in [call_node[id as usize], ret_node[id as usize]] {
                            let (p, q) = (prev[nd as usize], next[nd as usize]);
                            next[p as usize] = q;
                            if q != NIL {
                                prev[q as usize] = p;
                            }
                        }
                        cur = Cursor::Node(next[HEAD as usize]);
                        continue;
                    }
                    zh ^= zob(id as u64);
                    undo_set(&mut u, &mut top, id, prev_top);
                }
                cur = Cursor::Node(next[node as usize]);
            }
            Cursor::Class { idx, ret_id } => {
                // The idx-th candidate class: unguarded ones, then the state's guard's.
                // Both lists are in order of first call, so past the return entry's time
                // no later class has an invoked member.
                let t = lops[ret_id as usize].ret;
                let ul = unguarded.len() as u32;
                let mut pos = idx;
                let mut cand = None;
                if pos < ul {
                    let c = unguarded[pos as usize];
                    if ops[classes[c as usize][0]].call <= t {
                        cand = Some(c);
                    } else {
                        pos = ul;
                    }
                }
                if cand.is_none() {
                    let bucket = model
                        .state_guard(&state)
                        .and_then(|g| guarded.get(&g))
                        .unwrap_or(&no_classes);
                    cand = bucket
                        .get((pos - ul) as usize)
                        .copied()
                        .filter(|&c| ops[classes[c as usize][0]].call <= t);
                }
                let Some(class) = cand else {
                    cur = Cursor::DeadEnd { ret_id };
                    continue;
                };
                let c = class as usize;
                let k = linearized_in_class[c];
                let member = classes[c].get(k as usize).copied();
                if let Some(i) = member.filter(|&i| ops[i].call <= t) {
                    if let Some(ns) = model.step(&state, &ops[i].op) {
                        let counted = !model.op_dead(&ns, &ops[i].op);
                        if counted {
                            bump(&mut counts, class, 1);
                        }
                        let h = zh ^ splitmix(model.subsumption_hash(&ns));
                        if cache.insert(h, top, &u, &counts, &ns, |a, b| model.subsumes(a, b)) {
                            linearized_in_class[c] += 1;
                            let prev_state = std::mem::replace(&mut state, ns);
                            stack.push(Frame {
                                lin: Lin::Info {
                                    class,
                                    idx: pos,
                                    ret_id,
                                    counted,
                                },
                                prev_state,
                            });
                            cur = Cursor::Node(next[HEAD as usize]);
                            continue;
                        }
                        if counted {
                            bump(&mut counts, class, -1);
                        }
                    }
                }
                cur = Cursor::Class {
                    idx: pos + 1,
                    ret_id,
                };
            }
            Cursor::DeadEnd { ret_id } => {
                // `ret_id` had to be linearized by now and cannot be.
                let depth = stack.len();
                if best.as_ref().is_none_or(|b| depth > b.0) {
                    best_prefix.truncate(low);
                    // Replay the class counters for the frames being copied.
                    let mut in_class = linearized_in_class.clone();
                    let mut tail: Vec<usize> = Vec::with_capacity(depth - low);
                    for f in stack[low..].iter().rev() {
                        tail.push(frame_op(f, &in_class));
                        if let Lin::Info { class, .. } = f.lin {
                            in_class[class as usize] -= 1;
                        }
                    }
                    best_prefix.extend(tail.into_iter().rev());
                    low = depth;
                    best = Some((depth, ret_id, state.clone()));
                }
                let frame = match stack.pop() {
                    Some(f) => f,
                    None => break,
                };
                low = low.min(stack.len());
                state = frame.prev_state;
                match frame.lin {
                    Lin::Det { id, prev_top } => {
                        zh ^= zob(id as u64);
                        undo_set(&mut u, &mut top, id, prev_top);
                        for nd in [ret_node[id as usize], call_node[id as usize]] {
                            let (p, q) = (prev[nd as usize], next[nd as usize]);
                            next[p as usize] = nd;
                            if q != NIL {
                                prev[q as usize] = nd;
                            }
                        }
                        cur = Cursor::Node(next[call_node[id as usize] as usize]);
                    }
                    Lin::Info {
                        class,
                        idx,
                        ret_id,
                        counted,
                    } => {
                        linearized_in_class[class as usize] -= 1;
                        if counted {
                            bump(&mut counts, class, -1);
                        }
                        cur = Cursor::Class {
                            idx: idx + 1,
                            ret_id,
                        };
                    }
                }
            }
        }
    }
    let (_, failing, st) = best.expect("a dead end was recorded before the stack emptied");
    Err(Explanation {
        partition: String::new(),
        prefix: best_prefix,
        failing: order[failing as usize],
        concurrent: Vec::new(),
        state: model.describe_state(&st),
    })
}

/// Whether the sparse `(class, count)` list `a` is componentwise ≤ `b`.
fn dominated(a: &[u32], b: &[u32]) -> bool {
    let mut j = 0;
    for pair in a.chunks_exact(2) {
        while j < b.len() && b[j] < pair[0] {
            j += 2;
        }
        if j >= b.len() || b[j] != pair[0] || b[j + 1] < pair[1] {
            return false;
        }
    }
    true
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

/// Undo the set change made by linearizing `id` when the top was `prev_top`.
fn undo_set(u: &mut Vec<u32>, top: &mut u32, id: u32, prev_top: u32) {
    if id >= prev_top {
        let added = (id - prev_top) as usize;
        u.truncate(u.len() - added);
        *top = prev_top;
    } else {
        let p = u.binary_search(&id).unwrap_or_else(|p| p);
        u.insert(p, id);
    }
}
