//! Per-node durable storage with fsync semantics.
//!
//! Bytes appended to a file live in the page cache until `fsync`; a crash loses every
//! unsynced byte (the file is truncated back to its last synced length). This is what
//! makes Redis's `appendfsync everysec` lose up to a second of writes, and `no`
//! persistence lose everything — the root of catalogue row 8 (Redlock with a fast restart).
//!
//! A `Disk` lives outside the node's turmoil runtime, so it survives crash and restart.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
struct File {
    data: Vec<u8>,
    synced: usize,
}

/// One node's disk: named append-only files.
#[derive(Clone, Debug, Default)]
pub struct Disk {
    files: BTreeMap<String, File>,
    /// fsync calls so far, so that code can tell whether a step synced anything.
    fsyncs: u64,
}

impl Disk {
    /// An empty disk.
    pub fn new() -> Disk {
        Disk::default()
    }

    /// Append bytes to `name` (in the page cache: lost on crash until [`Disk::fsync`]).
    pub fn append(&mut self, name: &str, bytes: &[u8]) {
        self.files
            .entry(name.to_string())
            .or_default()
            .data
            .extend_from_slice(bytes);
    }

    /// Make everything appended to `name` so far durable.
    pub fn fsync(&mut self, name: &str) {
        let len = self.len(name);
        self.fsync_prefix(name, len);
    }

    /// Make the first `len` bytes of `name` durable: what an fsync started when the file
    /// had that length covers, when it completes later (a stalled disk).
    pub fn fsync_prefix(&mut self, name: &str, len: usize) {
        self.fsyncs += 1;
        if let Some(f) = self.files.get_mut(name) {
            f.synced = f.synced.max(len.min(f.data.len()));
        }
    }

    /// The length of `name` (including unsynced bytes), 0 if absent.
    pub fn len(&self, name: &str) -> usize {
        self.files.get(name).map_or(0, |f| f.data.len())
    }

    /// fsync calls made so far (on any file).
    pub fn fsyncs(&self) -> u64 {
        self.fsyncs
    }

    /// Empty `name` (durably: a rewrite that replaced the file).
    pub fn truncate(&mut self, name: &str) {
        if let Some(f) = self.files.get_mut(name) {
            f.data.clear();
            f.synced = 0;
        }
    }

    /// The current contents of `name` (including unsynced bytes), empty if absent.
    pub fn read(&self, name: &str) -> &[u8] {
        self.files.get(name).map(|f| &f.data[..]).unwrap_or(&[])
    }

    /// Bytes of `name` not yet synced.
    pub fn unsynced(&self, name: &str) -> usize {
        self.files.get(name).map_or(0, |f| f.data.len() - f.synced)
    }

    /// The machine lost power: drop every unsynced byte.
    pub fn crash(&mut self) {
        for f in self.files.values_mut() {
            f.data.truncate(f.synced);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_keeps_only_synced_bytes() {
        let mut d = Disk::new();
        d.append("aof", b"SET a 1\n");
        d.fsync("aof");
        d.append("aof", b"SET b 2\n");
        assert_eq!(d.unsynced("aof"), 8);
        assert_eq!(d.read("aof"), b"SET a 1\nSET b 2\n");
        d.crash();
        assert_eq!(d.read("aof"), b"SET a 1\n");
        assert_eq!(d.read("missing"), b"");
    }
}
