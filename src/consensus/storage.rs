//! The Raft write-ahead log on a node's [`Disk`]: hard state and log entries as
//! length-prefixed, checksummed protobuf records in one append-only file, and the recovery
//! that rebuilds raft-rs's [`MemStorage`] from whatever bytes survived a crash.
//!
//! # Record format
//!
//! ```text
//! record  = len:u32le  kind:u8  payload:[u8; len - 1]  check:u32le
//! kind    = 1 (Entry, eraftpb protobuf) | 2 (HardState, eraftpb protobuf)
//! check   = FNV-1a 32 of kind ‖ payload
//! ```
//!
//! Like etcd's WAL, an entry record at index `i` supersedes every entry at `i` or later
//! written before it (a follower's log was truncated by a new leader): recovery replays the
//! records in order, truncating as it goes, so no in-place rewrite is ever needed. The
//! last hard-state record wins.
//!
//! Within one Raft `Ready` the hard state is written before the entries, so any entry of
//! term T that survives a crash is preceded by a hard state of term ≥ T (the disk keeps a
//! prefix of what was appended). The commit index of that hard state can point past the
//! surviving entries; recovery lowers it to the last entry (forgetting a commit index is
//! always safe: it is learned again from the leader).
//!
//! Recovery stops at the first record that is torn (shorter than its length), fails its
//! checksum, does not parse, or leaves a gap in the indices: that record and everything
//! after it are dropped, and the file is rewritten to the valid prefix so later appends do
//! not land behind garbage.
//!
//! # Memory
//!
//! There is no snapshot and no log compaction: the log (in [`MemStorage`] and in the file)
//! grows with every entry. A lock workload proposes a few entries per acquire, so a 10 s
//! simulation holds thousands of entries at most (kilobytes). Heartbeats write nothing.

use super::config::Fsync;
use crate::sim::Disk;
use protobuf::Message as _;
use raft::prelude::{ConfState, Entry, HardState};
use raft::storage::MemStorage;

/// The WAL's file name on the node's disk.
pub(crate) const WAL_FILE: &str = "raft.wal";

const KIND_ENTRY: u8 = 1;
const KIND_HARD_STATE: u8 = 2;

fn fnv1a(parts: &[&[u8]]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for part in parts {
        for &b in *part {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
    }
    h
}

/// Encode one record.
fn encode_record(kind: u8, payload: &[u8], out: &mut Vec<u8>) {
    let len = u32::try_from(payload.len() + 1).expect("record under 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.push(kind);
    out.extend_from_slice(payload);
    out.extend_from_slice(&fnv1a(&[&[kind], payload]).to_le_bytes());
}

/// The writing side of the WAL: appends records and fsyncs per the [`Fsync`] policy.
#[derive(Debug, Clone)]
pub(crate) struct Wal {
    fsync: Fsync,
    buf: Vec<u8>,
    dirty: bool,
    /// Bytes appended since creation.
    pub bytes_written: u64,
    /// fsync calls made.
    pub syncs: u64,
}

impl Wal {
    /// A writer with `fsync` policy.
    pub(crate) fn new(fsync: Fsync) -> Wal {
        Wal {
            fsync,
            buf: Vec::new(),
            dirty: false,
            bytes_written: 0,
            syncs: 0,
        }
    }

    fn flush(&mut self, disk: &mut Disk) {
        disk.append(WAL_FILE, &self.buf);
        self.bytes_written += self.buf.len() as u64;
        self.dirty |= !self.buf.is_empty();
        self.buf.clear();
    }

    /// Append a hard-state record (page cache only until [`Wal::sync`]).
    pub(crate) fn save_hard_state(&mut self, disk: &mut Disk, hs: &HardState) {
        let payload = hs.write_to_bytes().expect("encode HardState");
        encode_record(KIND_HARD_STATE, &payload, &mut self.buf);
        self.flush(disk);
    }

    /// Append one record per entry (page cache only until [`Wal::sync`]).
    pub(crate) fn append_entries(&mut self, disk: &mut Disk, entries: &[Entry]) {
        for e in entries {
            let payload = e.write_to_bytes().expect("encode Entry");
            encode_record(KIND_ENTRY, &payload, &mut self.buf);
        }
        self.flush(disk);
    }

    /// Make the appended records durable if the policy says so and anything is unsynced.
    /// Returns whether an fsync happened.
    pub(crate) fn sync(&mut self, disk: &mut Disk) -> bool {
        if self.fsync == Fsync::Always && self.dirty {
            disk.fsync(WAL_FILE);
            self.dirty = false;
            self.syncs += 1;
            true
        } else {
            false
        }
    }
}

/// What recovery found in the WAL.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Recovered {
    /// The last hard state (default if none survived), commit lowered to the last entry.
    pub hard_state: HardState,
    /// The log, indices 1..=n, contiguous.
    pub entries: Vec<Entry>,
    /// Valid records read.
    pub records: usize,
    /// Length of the valid prefix of the file.
    pub valid_len: usize,
    /// Bytes after the valid prefix (a torn or corrupt tail), dropped.
    pub dropped_bytes: usize,
    /// The surviving hard state's commit index pointed past the surviving entries.
    pub commit_lowered: bool,
}

/// Replay WAL bytes: see the module docs for the rules.
pub(crate) fn recover_bytes(bytes: &[u8]) -> Recovered {
    let mut r = Recovered::default();
    let mut pos = 0usize;
    while let Some(rest) = bytes.get(pos..) {
        if rest.len() < 4 {
            break;
        }
        let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
        if len == 0 || rest.len() < 4 + len + 4 {
            break;
        }
        let kind = rest[4];
        let payload = &rest[5..4 + len];
        let check = u32::from_le_bytes(rest[4 + len..8 + len].try_into().unwrap());
        if check != fnv1a(&[&[kind], payload]) {
            break;
        }
        let ok = match kind {
            KIND_HARD_STATE => match HardState::parse_from_bytes(payload) {
                Ok(hs) => {
                    r.hard_state = hs;
                    true
                }
                Err(_) => false,
            },
            KIND_ENTRY => match Entry::parse_from_bytes(payload) {
                Ok(e) => {
                    let next = r.entries.len() as u64 + 1;
                    if e.index == 0 || e.index > next {
                        false
                    } else {
                        r.entries.truncate(e.index as usize - 1);
                        r.entries.push(e);
                        true
                    }
                }
                Err(_) => false,
            },
            _ => false,
        };
        if !ok {
            break;
        }
        pos += 8 + len;
        r.records += 1;
    }
    r.valid_len = pos;
    r.dropped_bytes = bytes.len() - pos;
    let last = r.entries.len() as u64;
    if r.hard_state.commit > last {
        r.hard_state.commit = last;
        r.commit_lowered = true;
    }
    r
}

/// Recover the WAL on `disk`; if a tail was dropped, rewrite the file to the valid prefix
/// (durably, as a repair tool would) so new records follow valid ones.
pub(crate) fn recover(disk: &mut Disk) -> Recovered {
    let r = recover_bytes(disk.read(WAL_FILE));
    if r.dropped_bytes > 0 {
        let valid = disk.read(WAL_FILE)[..r.valid_len].to_vec();
        disk.truncate(WAL_FILE);
        disk.append(WAL_FILE, &valid);
        disk.fsync(WAL_FILE);
    }
    r
}

/// raft-rs storage holding the recovered log and hard state, with voters `1..=nodes`.
pub(crate) fn mem_storage(recovered: &Recovered, nodes: u64) -> MemStorage {
    let store =
        MemStorage::new_with_conf_state(ConfState::from(((1..=nodes).collect::<Vec<_>>(), vec![])));
    {
        let mut core = store.wl();
        if !recovered.entries.is_empty() {
            core.append(&recovered.entries)
                .expect("contiguous recovered log");
        }
        core.set_hardstate(recovered.hard_state.clone());
    }
    store
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index: u64, term: u64, data: &[u8]) -> Entry {
        Entry {
            index,
            term,
            data: data.to_vec().into(),
            ..Default::default()
        }
    }

    fn hs(term: u64, vote: u64, commit: u64) -> HardState {
        HardState {
            term,
            vote,
            commit,
            ..Default::default()
        }
    }

    fn summary(r: &Recovered) -> Vec<(u64, u64, Vec<u8>)> {
        r.entries
            .iter()
            .map(|e| (e.index, e.term, e.data.to_vec()))
            .collect()
    }

    #[test]
    fn round_trip_with_overwrite() {
        let mut disk = Disk::new();
        let mut wal = Wal::new(Fsync::Always);
        wal.save_hard_state(&mut disk, &hs(1, 1, 0));
        wal.append_entries(
            &mut disk,
            &[entry(1, 1, b""), entry(2, 1, b"a"), entry(3, 1, b"b")],
        );
        wal.save_hard_state(&mut disk, &hs(2, 3, 1));
        // A new leader of term 2 overwrites index 2 onwards.
        wal.append_entries(&mut disk, &[entry(2, 2, b"c")]);
        assert!(wal.sync(&mut disk));
        assert!(!wal.sync(&mut disk), "nothing left to sync");
        let r = recover(&mut disk);
        assert_eq!(summary(&r), vec![(1, 1, vec![]), (2, 2, b"c".to_vec())]);
        assert_eq!(
            (r.hard_state.term, r.hard_state.vote, r.hard_state.commit),
            (2, 3, 1)
        );
        assert_eq!(
            (r.records, r.dropped_bytes, r.commit_lowered),
            (6, 0, false)
        );
        let store = mem_storage(&r, 3);
        use raft::Storage;
        assert_eq!(store.last_index().unwrap(), 2);
        assert_eq!(store.initial_state().unwrap().hard_state.term, 2);
    }

    #[test]
    fn crash_keeps_the_synced_prefix_only() {
        let mut disk = Disk::new();
        let mut wal = Wal::new(Fsync::Always);
        wal.append_entries(&mut disk, &[entry(1, 1, b"x")]);
        wal.sync(&mut disk);
        wal.append_entries(&mut disk, &[entry(2, 1, b"y")]);
        disk.crash();
        assert_eq!(summary(&recover(&mut disk)), vec![(1, 1, b"x".to_vec())]);

        let mut disk = Disk::new();
        let mut wal = Wal::new(Fsync::None);
        wal.save_hard_state(&mut disk, &hs(1, 1, 1));
        wal.append_entries(&mut disk, &[entry(1, 1, b"x")]);
        assert!(!wal.sync(&mut disk), "fsync = none never syncs");
        disk.crash();
        assert_eq!(recover(&mut disk), Recovered::default());
    }

    #[test]
    fn torn_or_corrupt_tail_is_dropped_and_the_file_repaired() {
        let mut disk = Disk::new();
        let mut wal = Wal::new(Fsync::Always);
        wal.save_hard_state(&mut disk, &hs(1, 1, 2));
        wal.append_entries(&mut disk, &[entry(1, 1, b"x"), entry(2, 1, b"y")]);
        let full = disk.read(WAL_FILE).to_vec();
        // Every truncation point: recovery never panics and keeps a prefix of the log.
        for cut in 0..full.len() {
            let r = recover_bytes(&full[..cut]);
            assert!(r.entries.len() <= 2);
            assert_eq!(r.valid_len + r.dropped_bytes, cut);
            assert!(r.hard_state.commit <= r.entries.len() as u64);
        }
        // Tear the last record: the hard state's commit (2) is lowered to the survivor.
        let mut torn = Disk::new();
        torn.append(WAL_FILE, &full[..full.len() - 3]);
        let r = recover(&mut torn);
        assert_eq!(summary(&r), vec![(1, 1, b"x".to_vec())]);
        assert!(r.commit_lowered);
        assert_eq!(r.hard_state.commit, 1);
        assert_eq!(torn.read(WAL_FILE).len(), r.valid_len);
        // A flipped bit fails the checksum.
        let mut bad = full.clone();
        let n = bad.len();
        bad[n - 6] ^= 1;
        assert_eq!(recover_bytes(&bad).entries.len(), 1);
        // A gap in the indices ends the valid prefix.
        let mut gap = Vec::new();
        encode_record(
            KIND_ENTRY,
            &entry(1, 1, b"").write_to_bytes().unwrap(),
            &mut gap,
        );
        encode_record(
            KIND_ENTRY,
            &entry(3, 1, b"").write_to_bytes().unwrap(),
            &mut gap,
        );
        assert_eq!(recover_bytes(&gap).entries.len(), 1);
    }
}
