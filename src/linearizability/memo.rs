//! Lowe's memo for the search: the configurations seen so far, keyed by fixed hashes
//! (never seeded randomly, so every check is repeatable), with a byte count for the
//! memory cap.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A fixed, fast, non-cryptographic hasher (FxHash's multiply-rotate); never seeded
/// randomly, so the search is repeatable.
#[derive(Default, Clone, Copy)]
pub(super) struct FxHasher(u64);

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
pub(super) struct IdHasher(u64);

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
pub(super) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(super) fn zob(id: u32) -> u64 {
    splitmix(id as u64 ^ 0x6c6f_636b_7369_6d00)
}

pub(super) const NIL: u32 = u32::MAX;

struct CacheEntry<S> {
    next: u32,
    top: u32,
    key_start: u32,
    u_len: u32,
    c_len: u32,
    state: S,
}

/// What [`Cache::insert`] found.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Memo {
    /// A new configuration, now recorded.
    New,
    /// The configuration, or one that subsumes it, was seen.
    Seen,
    /// Recording it would take the memo past its cap.
    Full,
}

/// Lowe's memo: every configuration (linearized set, state) explored so far. The set of
/// determinate operations is `{0..top} \ U` with `U` sorted; indeterminate operations
/// are counted per class (see [`super::search::search`]). Entries with equal hashes are chained.
///
/// A configuration is skipped when a seen one has the same determinate set, a state that
/// subsumes its state ([`super::model::Model::subsumes`]), and has used no more of any indeterminate
/// class: that one can do everything this one can
/// (its unused class members were invoked no later), so if a linearization exists from
/// here, one at least as short exists from there. Among the configurations seen that can
/// complete, one with the fewest steps left is never skipped nor left unexpanded, so the
/// search stays complete (the usual memo is the case of equal counts).
pub(super) struct Cache<S> {
    heads: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
    entries: Vec<CacheEntry<S>>,
    pool: Vec<u32>,
}

/// Bytes per slot of the chain-head table (key, value, control byte, load factor 7/8).
const HEAD_SLOT_BYTES: usize = (std::mem::size_of::<(u64, u32)>() + 1) * 8 / 7;

impl<S: Clone> Cache<S> {
    pub(super) fn new() -> Self {
        Cache {
            heads: HashMap::default(),
            entries: Vec::new(),
            pool: Vec::new(),
        }
    }

    /// The memory the memo holds, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<CacheEntry<S>>()
            + self.pool.capacity() * 4
            + self.heads.capacity() * HEAD_SLOT_BYTES
    }

    /// The memory the memo would hold after recording a key of `words` more words
    /// (containers grow by doubling).
    fn bytes_after(&self, words: usize) -> usize {
        let mut b = self.bytes();
        if self.entries.len() == self.entries.capacity() {
            b += self.entries.capacity().max(4) * std::mem::size_of::<CacheEntry<S>>();
        }
        if self.pool.len() + words > self.pool.capacity() {
            b += self.pool.capacity().max(words).max(8) * 4;
        }
        if self.heads.len() == self.heads.capacity() {
            b += self.heads.capacity().max(4) * HEAD_SLOT_BYTES;
        }
        b
    }

    /// Record the configuration unless it or one that subsumes it was seen, or it does
    /// not fit under `limit`. `h` must hash the determinate set and the state only.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert(
        &mut self,
        h: u64,
        top: u32,
        u: &[u32],
        counts: &[u32],
        state: &S,
        subsumes: impl Fn(&S, &S) -> bool,
        limit: Option<usize>,
    ) -> Memo {
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
                    return Memo::Seen;
                }
            }
            e = en.next;
        }
        if limit.is_some_and(|l| self.bytes_after(u.len() + counts.len()) > l) {
            return Memo::Full;
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
        Memo::New
    }
}

/// Whether the sparse `(class, count)` list `a` is componentwise ≤ `b`.
pub(super) fn dominated(a: &[u32], b: &[u32]) -> bool {
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
