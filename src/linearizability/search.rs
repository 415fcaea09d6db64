//! The Wing–Gong–Lowe search with memoisation and just-in-time linearization.

use super::explain::{Explanation, LinVerdict};
use super::model::{Model, Operation};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
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

fn state_hash<S: Hash>(s: &S) -> u64 {
    let mut h = FxHasher::default();
    s.hash(&mut h);
    // Final avalanche so that small states spread over the table.
    splitmix(h.finish())
}

const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;

struct CacheEntry<S> {
    next: u32,
    top: u32,
    u_start: u32,
    u_len: u32,
    state: S,
}

/// Lowe's memo: every configuration (linearized set, state) explored so far. The set is
/// `{0..top} \ U` with `U` sorted; entries with equal hashes are chained.
struct Cache<S> {
    heads: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
    entries: Vec<CacheEntry<S>>,
    pool: Vec<u32>,
}

impl<S: Eq + Clone> Cache<S> {
    fn new() -> Self {
        Cache {
            heads: HashMap::default(),
            entries: Vec::new(),
            pool: Vec::new(),
        }
    }

    /// Insert the configuration unless present; true when it was new.
    fn insert(&mut self, h: u64, top: u32, u: &[u32], state: &S) -> bool {
        let head = self.heads.get(&h).copied().unwrap_or(NIL);
        let mut e = head;
        while e != NIL {
            let en = &self.entries[e as usize];
            if en.top == top
                && en.u_len as usize == u.len()
                && &en.state == state
                && &self.pool[en.u_start as usize..(en.u_start + en.u_len) as usize] == u
            {
                return false;
            }
            e = en.next;
        }
        let u_start = self.pool.len() as u32;
        self.pool.extend_from_slice(u);
        self.entries.push(CacheEntry {
            next: head,
            top,
            u_start,
            u_len: u.len() as u32,
            state: state.clone(),
        });
        self.heads.insert(h, (self.entries.len() - 1) as u32);
        true
    }
}

struct Frame<S> {
    op: u32,
    prev_state: S,
    prev_top: u32,
}

/// Search one part. `Ok(true)`: linearizable; `Ok(false)`: out of time; `Err`: not
/// linearizable, with the deepest dead end (indices into `ops`).
pub(crate) fn search<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    part: &[usize],
    deadline: Option<Instant>,
) -> Result<bool, Explanation> {
    // Local ids in call order.
    let mut order: Vec<usize> = part.to_vec();
    order.sort_by_key(|&i| (ops[i].call, ops[i].ret, i));
    let n = order.len();
    let lops: Vec<&Operation<M::Op>> = order.iter().map(|&i| &ops[i]).collect();

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
    let zob: Vec<u64> = (0..n as u64)
        .map(|i| splitmix(i ^ 0x6c6f_636b_7369_6d00))
        .collect();

    let mut cache: Cache<M::State> = Cache::new();
    let mut stack: Vec<Frame<M::State>> = Vec::new();
    let mut state = model.init();
    let mut u: Vec<u32> = Vec::new();
    let mut top: u32 = 0;
    let mut zh: u64 = 0;

    // Deepest dead end, for the explanation.
    let mut best_prefix: Vec<u32> = Vec::new();
    let mut best: Option<(usize, u32, M::State)> = None;
    let mut low: usize = 0;

    let mut node = next[HEAD as usize];
    let mut iter: u64 = 0;
    loop {
        if node == NIL {
            return Ok(true);
        }
        iter += 1;
        if iter & 0x3fff == 0 {
            if let Some(d) = deadline {
                if Instant::now() >= d {
                    return Ok(false);
                }
            }
        }
        let code = node_op[node as usize];
        let id = code >> 1;
        if code & 1 == 0 {
            // A call entry: try to linearize `id` now.
            if let Some(ns) = model.step(&state, &lops[id as usize].op) {
                // Linearize into the set representation.
                let prev_top = top;
                if id >= top {
                    u.extend(top..id);
                    top = id + 1;
                } else if let Ok(p) = u.binary_search(&id) {
                    u.remove(p);
                }
                zh ^= zob[id as usize];
                let h = zh ^ state_hash(&ns);
                if cache.insert(h, top, &u, &ns) {
                    let prev_state = std::mem::replace(&mut state, ns);
                    stack.push(Frame {
                        op: id,
                        prev_state,
                        prev_top,
                    });
                    // Lift the call and return entries.
                    for nd in [call_node[id as usize], ret_node[id as usize]] {
                        let (p, q) = (prev[nd as usize], next[nd as usize]);
                        next[p as usize] = q;
                        if q != NIL {
                            prev[q as usize] = p;
                        }
                    }
                    node = next[HEAD as usize];
                    continue;
                }
                // Seen before: undo.
                zh ^= zob[id as usize];
                undo_set(&mut u, &mut top, id, prev_top);
            }
            node = next[node as usize];
        } else {
            // A return entry: `id` had to be linearized by now.
            if lops[id as usize].is_indeterminate() {
                // Every determinate operation is linearized.
                return Ok(true);
            }
            let depth = stack.len();
            if best.as_ref().is_none_or(|b| depth > b.0) {
                best_prefix.truncate(low);
                best_prefix.extend(stack[low..].iter().map(|f| f.op));
                low = depth;
                best = Some((depth, id, state.clone()));
            }
            let frame = match stack.pop() {
                Some(f) => f,
                None => break,
            };
            low = low.min(stack.len());
            state = frame.prev_state;
            zh ^= zob[frame.op as usize];
            undo_set(&mut u, &mut top, frame.op, frame.prev_top);
            for nd in [ret_node[frame.op as usize], call_node[frame.op as usize]] {
                let (p, q) = (prev[nd as usize], next[nd as usize]);
                next[p as usize] = nd;
                if q != NIL {
                    prev[q as usize] = nd;
                }
            }
            node = next[call_node[frame.op as usize] as usize];
        }
    }
    let (_, failing, st) = best.expect("a dead end was recorded before the stack emptied");
    Err(Explanation {
        partition: String::new(),
        prefix: best_prefix.iter().map(|&l| order[l as usize]).collect(),
        failing: order[failing as usize],
        concurrent: Vec::new(),
        state: model.describe_state(&st),
    })
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
