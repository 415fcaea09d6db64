//! Lock owners lost to session closes, read from real ZooKeeper's transaction logs
//! (`dataDir/version-2/log.<zxid>`), so that a live history has the `expire` events the
//! model's servers record (see [`super::super::db`]): the family's `lock-linearizable`
//! needs them.
//!
//! A log is a header (`ZKLG`, version 2, dbid) and entries: an Adler-32 checksum (i64),
//! the transaction's length (i32), the transaction (a `TxnHeader`, its record, then a
//! digest this reader ignores) and an end byte `B`; the preallocated rest is zeros.
//! A server logs a proposal before it is committed, so an entry counts once a majority
//! of the servers' logs show it (a leader cut off from the rest may log a session close
//! it never commits). Followers log a proposal before they acknowledge it, so an entry a
//! majority logged is committed; a client may learn of its effect a little earlier (the
//! leader applies it once a majority acknowledged), by at most the reading delay. The
//! lock recipe's state (the children of each `/locks/L` and the session that owns each
//! ephemeral child) is kept from the creates, deletes and session closes, once per
//! zxid.

use super::super::mutex::layout::{sort_lock_children, LOCK_ROOT};
use std::collections::BTreeMap;

/// The log file header's magic (`ZKLG`), version and dbid: 16 bytes.
const HEADER: usize = 16;
const MAGIC: &[u8; 4] = b"ZKLG";

/// `ZooDefs.OpCode`s of the transactions the reader follows.
const CREATE: i32 = 1;
const DELETE: i32 = 2;
const MULTI: i32 = 14;
const CREATE2: i32 = 15;
const CREATE_CONTAINER: i32 = 19;
const DELETE_CONTAINER: i32 = 20;
const CREATE_TTL: i32 = 21;
const CLOSE_SESSION: i32 = -11;

/// A lock whose owner node a session close deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LostOwner {
    /// The lock (`L` of `/locks/L`).
    pub lock: String,
    /// The owner node's path.
    pub path: String,
    /// The closed session.
    pub session: i64,
    /// The session close's zxid.
    pub zxid: u64,
}

/// The lock recipe's state, from every log read so far.
#[derive(Debug)]
pub(crate) struct LockState {
    /// Children of each lock: node name → the session owning it if ephemeral, else 0.
    locks: BTreeMap<String, BTreeMap<String, i64>>,
    /// The last zxid applied (each committed transaction is applied once).
    last_zxid: u64,
    /// How many servers' logs must show an entry before it counts: a majority.
    quorum: usize,
    /// Entries seen in fewer logs than that: zxid → the servers that logged it and the
    /// transaction. Every server's log is in zxid order and holds every committed entry
    /// before a later one, so an entry below one that reached a majority without
    /// reaching it itself was never committed, and is dropped.
    pending: BTreeMap<u64, (std::collections::BTreeSet<usize>, Vec<u8>)>,
}

impl Default for LockState {
    /// One server: every entry counts at once.
    fn default() -> LockState {
        LockState::new(1)
    }
}

impl LockState {
    /// The state of an ensemble of `servers` (an entry counts once a majority logged it).
    pub(crate) fn new(servers: usize) -> LockState {
        LockState {
            locks: BTreeMap::new(),
            last_zxid: 0,
            quorum: servers / 2 + 1,
            pending: BTreeMap::new(),
        }
    }

    /// Read the complete entries of `bytes`, server `server`'s log from byte `offset`
    /// on (0: its header): apply those now logged by a majority, and return how far it
    /// read and the owners lost.
    pub(crate) fn feed(
        &mut self,
        server: usize,
        bytes: &[u8],
        offset: u64,
    ) -> (u64, Vec<LostOwner>) {
        let mut at = 0usize;
        if offset == 0 {
            if bytes.len() < HEADER || &bytes[..4] != MAGIC {
                return (0, Vec::new());
            }
            at = HEADER;
        }
        let mut lost = Vec::new();
        while let Some(txn) = entry(&bytes[at..]) {
            at += 12 + txn.len() + 1;
            self.log_entry(server, txn, &mut lost);
        }
        (offset + at as u64, lost)
    }

    /// Count `txn` as logged by `server`; apply it once a majority has.
    fn log_entry(&mut self, server: usize, txn: &[u8], lost: &mut Vec<LostOwner>) {
        let Some(zxid) = Reader(txn.get(12..20).unwrap_or_default()).i64() else {
            return;
        };
        let zxid = zxid as u64;
        if zxid <= self.last_zxid {
            return;
        }
        let (servers, _) = self
            .pending
            .entry(zxid)
            .or_insert_with(|| (Default::default(), txn.to_vec()));
        servers.insert(server);
        if servers.len() >= self.quorum {
            let (_, txn) = self.pending.remove(&zxid).expect("just counted");
            self.pending.retain(|z, _| *z > zxid);
            self.apply_entry(&txn, lost);
        }
    }

    fn apply_entry(&mut self, txn: &[u8], lost: &mut Vec<LostOwner>) {
        let mut r = Reader(txn);
        let (Some(session), Some(_cxid), Some(zxid), Some(_time), Some(kind)) =
            (r.i64(), r.i32(), r.i64(), r.i64(), r.i32())
        else {
            return;
        };
        let zxid = zxid as u64;
        if zxid <= self.last_zxid {
            return;
        }
        self.last_zxid = zxid;
        self.apply(session, zxid, kind, r.0, lost);
    }

    fn apply(
        &mut self,
        session: i64,
        zxid: u64,
        kind: i32,
        record: &[u8],
        lost: &mut Vec<LostOwner>,
    ) {
        let mut r = Reader(record);
        match kind {
            CREATE | CREATE2 | CREATE_CONTAINER | CREATE_TTL => {
                let Some(path) = r.string() else { return };
                // CreateTxn: path, data, acl, ephemeral, parentCVersion; the others have
                // no ephemeral flag.
                let ephemeral = (kind == CREATE || kind == CREATE2)
                    && r.buffer().is_some()
                    && r.acl().is_some()
                    && r.byte() == Some(1);
                if let Some((lock, name)) = lock_child(&path) {
                    let owner = if ephemeral { session } else { 0 };
                    self.locks
                        .entry(lock.to_string())
                        .or_default()
                        .insert(name.to_string(), owner);
                }
            }
            DELETE | DELETE_CONTAINER => {
                let Some(path) = r.string() else { return };
                if let Some((lock, name)) = lock_child(&path) {
                    if let Some(children) = self.locks.get_mut(lock) {
                        children.remove(name);
                    }
                } else if let Some(lock) = lock_of(&path) {
                    self.locks.remove(lock);
                }
            }
            CLOSE_SESSION => {
                for (lock, children) in &mut self.locks {
                    let mut names: Vec<String> = children.keys().cloned().collect();
                    sort_lock_children(&mut names);
                    if let Some(first) = names.first().filter(|n| children[*n] == session) {
                        lost.push(LostOwner {
                            lock: lock.clone(),
                            path: format!("{LOCK_ROOT}/{lock}/{first}"),
                            session,
                            zxid,
                        });
                    }
                    children.retain(|_, s| *s != session);
                }
            }
            MULTI => {
                let Some(n) = r.i32() else { return };
                for _ in 0..n {
                    let (Some(kind), Some(data)) = (r.i32(), r.buffer()) else {
                        return;
                    };
                    self.apply(session, zxid, kind, data, lost);
                }
            }
            _ => {}
        }
    }
}

/// The transaction of the complete entry `bytes` starts with, if it does.
fn entry(bytes: &[u8]) -> Option<&[u8]> {
    let mut r = Reader(bytes);
    let (crc, len) = (r.i64()?, r.i32()?);
    if len <= 0 {
        return None;
    }
    let txn = r.take(len as usize)?;
    (r.byte()? == b'B' && adler32(txn) == crc as u64).then_some(txn)
}

/// `/locks/L/name` → (`L`, `name`).
fn lock_child(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix(LOCK_ROOT)?.strip_prefix('/')?;
    rest.split_once('/').filter(|(_, n)| !n.contains('/'))
}

/// `/locks/L` → `L`.
fn lock_of(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(LOCK_ROOT)?.strip_prefix('/')?;
    (!rest.contains('/')).then_some(rest)
}

/// Java's `java.util.zip.Adler32`.
fn adler32(bytes: &[u8]) -> u64 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in bytes {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    u64::from((b << 16) | a)
}

/// Jute's big-endian reads.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A buffer: its length (-1: null) and bytes.
    fn buffer(&mut self) -> Option<&'a [u8]> {
        match self.i32()? {
            n if n < 0 => Some(&[]),
            n => self.take(n as usize),
        }
    }
    fn string(&mut self) -> Option<String> {
        Some(String::from_utf8_lossy(self.buffer()?).into_owned())
    }
    /// A vector of ACLs (perms, scheme, id).
    fn acl(&mut self) -> Option<()> {
        let n = self.i32()?;
        for _ in 0..n.max(0) {
            self.i32()?;
            self.buffer()?;
            self.buffer()?;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes log entries as ZooKeeper does.
    #[derive(Default)]
    struct Log(Vec<u8>);

    fn s(out: &mut Vec<u8>, text: &str) {
        out.extend_from_slice(&(text.len() as i32).to_be_bytes());
        out.extend_from_slice(text.as_bytes());
    }

    fn create(path: &str, ephemeral: bool) -> Vec<u8> {
        let mut r = Vec::new();
        s(&mut r, path);
        s(&mut r, "client-0");
        r.extend_from_slice(&1i32.to_be_bytes());
        r.extend_from_slice(&31i32.to_be_bytes());
        s(&mut r, "world");
        s(&mut r, "anyone");
        r.push(u8::from(ephemeral));
        r.extend_from_slice(&1i32.to_be_bytes());
        r
    }

    impl Log {
        fn new() -> Log {
            let mut l = Log(MAGIC.to_vec());
            l.0.extend_from_slice(&2i32.to_be_bytes());
            l.0.extend_from_slice(&0i64.to_be_bytes());
            l
        }
        fn txn(&mut self, session: i64, zxid: i64, kind: i32, record: &[u8]) -> &mut Log {
            let mut t = Vec::new();
            t.extend_from_slice(&session.to_be_bytes());
            t.extend_from_slice(&0i32.to_be_bytes());
            t.extend_from_slice(&zxid.to_be_bytes());
            t.extend_from_slice(&0i64.to_be_bytes());
            t.extend_from_slice(&kind.to_be_bytes());
            t.extend_from_slice(record);
            // The digest ZooKeeper 3.6+ appends.
            t.extend_from_slice(&[0, 0, 0, 2, 0, 0, 0, 0, 1, 2, 3, 4]);
            self.0
                .extend_from_slice(&(adler32(&t) as i64).to_be_bytes());
            self.0.extend_from_slice(&(t.len() as i32).to_be_bytes());
            self.0.extend_from_slice(&t);
            self.0.push(b'B');
            self
        }
    }

    const A: &str = "/locks/L/_c_x-lock-0000000000";
    const B: &str = "/locks/L/_c_y-lock-0000000001";

    fn log() -> Log {
        let mut l = Log::new();
        l.txn(7, 1, CREATE_CONTAINER, &create("/locks/L", false))
            .txn(7, 2, CREATE2, &create(A, true))
            .txn(8, 3, CREATE2, &create(B, true))
            .txn(8, 4, CLOSE_SESSION, &0i32.to_be_bytes())
            .txn(7, 5, CLOSE_SESSION, &0i32.to_be_bytes());
        l
    }

    #[test]
    fn a_closed_session_that_owned_a_lock_is_reported_once() {
        let mut state = LockState::default();
        let mut bytes = log().0;
        bytes.extend_from_slice(&[0; 64]); // Preallocated.
        let (at, lost) = state.feed(0, &bytes, 0);
        assert_eq!(at as usize, bytes.len() - 64);
        // Session 8 waited (no owner lost); session 7 owned A.
        assert_eq!(
            lost,
            vec![LostOwner {
                lock: "L".into(),
                path: A.into(),
                session: 7,
                zxid: 5
            }]
        );
        // Another server's log of the same transactions adds nothing.
        assert_eq!(LockState::feed(&mut state, 1, &log().0, 0).1, vec![]);
    }

    #[test]
    fn a_partly_written_entry_waits() {
        let bytes = log().0;
        let mut state = LockState::default();
        let mut lost = Vec::new();
        let mut offset = 0u64;
        // As if read after each of a few flushes.
        for end in [10, 40, 100, 150, 300, bytes.len() - 1, bytes.len()] {
            let (at, l) = state.feed(0, &bytes[offset as usize..end], offset);
            offset = at;
            lost.extend(l);
        }
        assert_eq!(offset as usize, bytes.len());
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0].zxid, 5);
    }

    #[test]
    fn a_released_lock_is_not_lost_and_a_waiter_becomes_owner() {
        let mut l = Log::new();
        l.txn(7, 1, CREATE2, &create(A, true))
            .txn(8, 2, CREATE2, &create(B, true));
        let mut del = Vec::new();
        s(&mut del, A);
        del.extend_from_slice(&0i32.to_be_bytes());
        l.txn(7, 3, DELETE, &del)
            .txn(7, 4, CLOSE_SESSION, &[])
            .txn(8, 5, CLOSE_SESSION, &[]);
        let (_, lost) = LockState::default().feed(0, &l.0, 0);
        assert_eq!(lost.len(), 1);
        assert_eq!((lost[0].path.as_str(), lost[0].zxid), (B, 5));
    }

    #[test]
    fn an_entry_counts_once_a_majority_logged_it_and_an_uncommitted_one_never() {
        // Three servers: the old leader (0) logged a close of session 7 at zxid 5 that
        // was never committed; the others' logs go on with session 8's close at 6.
        let mut stale = Log::new();
        stale
            .txn(7, 1, CREATE2, &create(A, true))
            .txn(8, 2, CREATE2, &create(B, true))
            .txn(7, 5, CLOSE_SESSION, &[]);
        let mut committed = Log::new();
        committed
            .txn(7, 1, CREATE2, &create(A, true))
            .txn(8, 2, CREATE2, &create(B, true))
            .txn(8, 6, CLOSE_SESSION, &[]);
        let mut state = LockState::new(3);
        assert_eq!(
            state.feed(0, &stale.0, 0).1,
            vec![],
            "one log is no majority"
        );
        assert_eq!(
            state.feed(1, &committed.0, 0).1,
            vec![],
            "zxid 6 on one log"
        );
        // The second log of zxid 6: committed; session 8 owned no lock (7 did).
        assert_eq!(state.feed(2, &committed.0, 0).1, vec![]);
        assert!(
            state.pending.is_empty(),
            "the uncommitted zxid 5 is dropped"
        );
        assert_eq!(
            state.locks["L"].len(),
            1,
            "A stays: its session never closed"
        );
    }

    #[test]
    fn adler32_is_javas() {
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
    }
}
