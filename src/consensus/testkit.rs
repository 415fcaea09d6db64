//! An in-memory, deterministic cluster of [`RaftCore`]s for tests: a 1 ms step loop, a
//! message queue with seeded latency, directed link cuts, crashes (the disk loses unsynced
//! bytes) and restarts, and per-node tick periods (a slow clock ticks less often).

use super::config::RaftConfig;
use super::core::{Committed, Output, RaftCore, ReadState, Role};
use crate::sim::Disk;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};

/// splitmix64: the per-node seed of node `id`'s `start`-th incarnation.
pub(crate) fn node_seed(seed: u64, id: u64, start: u64) -> u64 {
    let mut z =
        seed ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ start.wrapping_mul(0xd1b5_4a32_d192_ed03);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(crate) struct Cluster {
    pub params: RaftConfig,
    pub seed: u64,
    pub nodes: Vec<Option<RaftCore>>,
    pub disks: Vec<Disk>,
    pub starts: Vec<u64>,
    pub now_ms: u64,
    seq: u64,
    queue: BTreeMap<(u64, u64), (u64, u64, Vec<u8>)>,
    net: ChaCha8Rng,
    /// Directed links (from, to) that drop everything.
    pub cut: BTreeSet<(u64, u64)>,
    /// Per node: tick every this many ms (default `tick_ms`).
    pub tick_every: Vec<u64>,
    /// Per node: ms of the last tick.
    last_tick: Vec<u64>,
    /// Everything that happened, one line each (when `tracing`).
    pub trace: Vec<String>,
    /// Record `trace` (on by default; benches turn it off).
    pub tracing: bool,
    /// Per node: entries applied since its last start.
    pub applied: Vec<Vec<Committed>>,
    /// Per node: read states received since its last start.
    pub reads: Vec<Vec<ReadState>>,
    /// Messages delivered (stepped).
    pub steps: u64,
    /// Ticks made.
    pub ticks: u64,
    /// Nodes that panicked, and the ms a supervisor restarts each.
    restart_at: Vec<(u64, u64)>,
}

impl Cluster {
    pub(crate) fn new(params: RaftConfig, seed: u64) -> Cluster {
        let n = params.nodes as usize;
        let mut c = Cluster {
            tick_every: vec![params.tick_ms; n],
            params,
            seed,
            nodes: (0..n).map(|_| None).collect(),
            disks: vec![Disk::new(); n],
            starts: vec![0; n],
            now_ms: 0,
            seq: 0,
            queue: BTreeMap::new(),
            net: ChaCha8Rng::seed_from_u64(seed ^ 0x006e_6574_776f_726b),
            cut: BTreeSet::new(),
            last_tick: vec![0; n],
            trace: Vec::new(),
            tracing: true,
            applied: vec![Vec::new(); n],
            reads: vec![Vec::new(); n],
            steps: 0,
            ticks: 0,
            restart_at: Vec::new(),
        };
        for id in 1..=n as u64 {
            c.start(id);
        }
        c
    }

    pub(crate) fn ids(&self) -> std::ops::RangeInclusive<u64> {
        1..=self.params.nodes as u64
    }

    fn start(&mut self, id: u64) {
        let i = (id - 1) as usize;
        let seed = node_seed(self.seed, id, self.starts[i]);
        self.starts[i] += 1;
        let core = RaftCore::new(id, &self.params, &mut self.disks[i], seed).expect("start");
        self.trace.push(format!(
            "{} n{id} start timeout={} recovered={}",
            self.now_ms,
            core.election_timeout_ticks(),
            core.stats().recovered_entries
        ));
        self.nodes[i] = Some(core);
        self.applied[i].clear();
        self.reads[i].clear();
        self.last_tick[i] = self.now_ms;
        self.process(id);
    }

    pub(crate) fn node(&self, id: u64) -> &RaftCore {
        self.nodes[(id - 1) as usize].as_ref().expect("node is up")
    }

    pub(crate) fn node_mut(&mut self, id: u64) -> &mut RaftCore {
        self.nodes[(id - 1) as usize].as_mut().expect("node is up")
    }

    pub(crate) fn is_up(&self, id: u64) -> bool {
        self.nodes[(id - 1) as usize].is_some()
    }

    /// Process node `id`'s ready: record, apply, enqueue messages.
    pub(crate) fn process(&mut self, id: u64) {
        let i = (id - 1) as usize;
        let Some(core) = self.nodes[i].as_mut() else {
            return;
        };
        let out = core.process_ready(&mut self.disks[i]);
        let now = self.now_ms;
        if self.tracing {
            self.trace_output(id, &out);
        }
        self.applied[i].extend(out.committed);
        self.reads[i].extend(out.read_states);
        for m in out.messages {
            if self.cut.contains(&(id, m.to)) {
                continue;
            }
            let bytes = m.encode();
            let latency = self.net.gen_range(1..=3);
            self.seq += 1;
            self.queue
                .insert((now + latency, self.seq), (id, m.to, bytes));
        }
    }

    fn trace_output(&mut self, id: u64, out: &Output) {
        let now = self.now_ms;
        let term = self.node(id).term();
        if let Some(ss) = out.soft_state {
            self.trace.push(format!(
                "{now} n{id} soft role={:?} leader={} term={term}",
                ss.role, ss.leader_id
            ));
        }
        for c in &out.committed {
            self.trace.push(format!(
                "{now} n{id} apply i{} t{} {:?}",
                c.index,
                c.term,
                String::from_utf8_lossy(&c.data)
            ));
        }
        for r in &out.read_states {
            self.trace.push(format!(
                "{now} n{id} read i{} {:?}",
                r.index,
                String::from_utf8_lossy(&r.ctx)
            ));
        }
        for m in &out.messages {
            let line = format!(
                "{now} n{id}->n{} {:?} t{} i{} lt{} c{} e{} r{} #{:016x}",
                m.to,
                m.msg_type(),
                m.msg.term,
                m.msg.index,
                m.msg.log_term,
                m.msg.commit,
                m.msg.entries.len(),
                m.msg.reject,
                fnv64(&m.encode())
            );
            self.trace.push(line);
        }
    }

    /// Advance one ms: deliver due messages, then tick nodes whose period has elapsed.
    pub(crate) fn step(&mut self) {
        self.now_ms += 1;
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > self.now_ms {
                break;
            }
            let (from, to, bytes) = entry.remove();
            if self.cut.contains(&(from, to)) || !self.is_up(to) {
                continue;
            }
            self.steps += 1;
            // raft-rs panics on a heartbeat past a log this node lost (`fsync = none`):
            // the process dies, and a supervisor restarts it 100 ms later, as in a run.
            let node = self.node_mut(to);
            let stepped =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| node.step_bytes(&bytes)));
            if stepped.is_err() {
                self.crash(to);
                self.restart_at.push((self.now_ms + 100, to));
                continue;
            }
            self.process(to);
        }
        let due: Vec<u64> = self
            .restart_at
            .iter()
            .filter(|(at, _)| *at <= self.now_ms)
            .map(|&(_, id)| id)
            .collect();
        self.restart_at.retain(|(at, _)| *at > self.now_ms);
        for id in due {
            if !self.is_up(id) {
                self.restart(id);
            }
        }
        for id in self.ids() {
            let i = (id - 1) as usize;
            if self.is_up(id) && self.now_ms - self.last_tick[i] >= self.tick_every[i] {
                self.last_tick[i] = self.now_ms;
                self.ticks += 1;
                self.node_mut(id).tick();
                self.process(id);
            }
        }
    }

    pub(crate) fn run_ms(&mut self, ms: u64) {
        for _ in 0..ms {
            self.step();
        }
    }

    /// Step until `pred` holds (checked every ms) or `max_ms` pass; returns whether it held.
    pub(crate) fn run_until(&mut self, max_ms: u64, pred: impl Fn(&Cluster) -> bool) -> bool {
        for _ in 0..max_ms {
            if pred(self) {
                return true;
            }
            self.step();
        }
        pred(self)
    }

    /// The live leader of the highest term, if any.
    pub(crate) fn leader(&self) -> Option<u64> {
        self.ids()
            .filter(|&id| self.is_up(id) && self.node(id).role() == Role::Leader)
            .max_by_key(|&id| self.node(id).term())
    }

    pub(crate) fn wait_leader(&mut self, max_ms: u64) -> u64 {
        assert!(
            self.run_until(max_ms, |c| c.leader().is_some()),
            "no leader within {max_ms} ms"
        );
        self.leader().unwrap()
    }

    /// Nodes that have applied an entry with `data` since their last start.
    pub(crate) fn applied_by(&self, data: &[u8]) -> Vec<u64> {
        self.ids()
            .filter(|&id| {
                self.applied[(id - 1) as usize]
                    .iter()
                    .any(|c| c.data == data)
            })
            .collect()
    }

    /// Propose `data` to the current leader until a majority has applied it. Returns
    /// whether it committed within `max_ms`.
    pub(crate) fn commit(&mut self, data: &[u8], max_ms: u64) -> bool {
        let majority = self.params.nodes as usize / 2 + 1;
        let deadline = self.now_ms + max_ms;
        while self.now_ms < deadline {
            if let Some(l) = self.leader() {
                if self.node_mut(l).propose(data.to_vec()).is_ok() {
                    self.process(l);
                }
            }
            let until = (self.now_ms + 100).min(deadline);
            while self.now_ms < until {
                if self.applied_by(data).len() >= majority {
                    return true;
                }
                self.step();
            }
        }
        self.applied_by(data).len() >= majority
    }

    pub(crate) fn crash(&mut self, id: u64) {
        let i = (id - 1) as usize;
        self.nodes[i] = None;
        self.disks[i].crash();
        self.trace.push(format!("{} n{id} crash", self.now_ms));
    }

    pub(crate) fn restart(&mut self, id: u64) {
        self.start(id);
    }

    /// Cut every link to and from `id`.
    pub(crate) fn isolate(&mut self, id: u64) {
        for other in self.ids() {
            if other != id {
                self.cut.insert((id, other));
                self.cut.insert((other, id));
            }
        }
    }

    pub(crate) fn heal(&mut self) {
        self.cut.clear();
    }

    /// Data of the persisted log of node `id`.
    pub(crate) fn log_data(&self, id: u64) -> Vec<Vec<u8>> {
        self.node(id)
            .log()
            .iter()
            .map(|e| e.data.to_vec())
            .collect()
    }
}

pub(crate) fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
