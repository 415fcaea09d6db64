//! A standalone server's transaction log: its record format on the node's disk, and the
//! gate every request queues at behind a write being logged.

use super::db::Txn;
use std::rc::Rc;
use tokio::sync::Notify;

/// The standalone transaction log's file name.
pub(super) const TXN_LOG: &str = "zk.txnlog";

/// A standalone server's request processing behind its transaction log (ZooKeeper's
/// single `SyncRequestProcessor` thread): a write holds it from its append until it is
/// fsynced and applied, and every later request, read or write, waits for it. Only a
/// stalled disk makes anyone wait; requests still arrive and touch their sessions
/// meanwhile.
#[derive(Default)]
pub(super) struct LogGate {
    busy: std::cell::Cell<bool>,
    freed: Notify,
}

/// Holding the [`LogGate`]; dropping it lets the next request through.
pub(super) struct LogTurn(Rc<LogGate>);

impl LogGate {
    /// Wait for the pipeline, at once when nothing is being logged.
    pub(super) async fn turn(self: &Rc<Self>) -> LogTurn {
        loop {
            // Created before the check, so a release between the two still wakes it.
            let freed = self.freed.notified();
            if !self.busy.replace(true) {
                return LogTurn(self.clone());
            }
            freed.await;
        }
    }
}

impl Drop for LogTurn {
    fn drop(&mut self) {
        self.0.busy.set(false);
        self.0.freed.notify_waiters();
    }
}

fn fnv32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Append a transaction to the standalone log and fsync it: `len:u32le`, the JSON
/// transaction, `fnv32:u32le`.
pub(super) fn append_log(disk: &mut crate::sim::Disk, txn: &Txn) {
    let payload = txn.encode();
    let mut rec = Vec::with_capacity(payload.len() + 8);
    rec.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    rec.extend_from_slice(&payload);
    rec.extend_from_slice(&fnv32(&payload).to_le_bytes());
    disk.append(TXN_LOG, &rec);
    disk.fsync(TXN_LOG);
}

/// The transactions of the standalone log, in zxid order (zxid = position + 1). A torn
/// or corrupt tail is dropped and the file rewritten to the valid prefix.
pub(super) fn read_log(disk: &mut crate::sim::Disk) -> Vec<Txn> {
    let bytes = disk.read(TXN_LOG).to_vec();
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(head) = bytes.get(pos..pos + 4) {
        let len = u32::from_le_bytes(head.try_into().expect("4 bytes")) as usize;
        let Some(payload) = bytes.get(pos + 4..pos + 4 + len) else {
            break;
        };
        let Some(check) = bytes.get(pos + 4 + len..pos + 8 + len) else {
            break;
        };
        if u32::from_le_bytes(check.try_into().expect("4 bytes")) != fnv32(payload) {
            break;
        }
        let Ok(txn) = Txn::decode(payload) else {
            break;
        };
        out.push(txn);
        pos += 8 + len;
    }
    if pos < bytes.len() {
        disk.truncate(TXN_LOG);
        disk.append(TXN_LOG, &bytes[..pos]);
        disk.fsync(TXN_LOG);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::zk::db::Op;
    use crate::locks::zk::tree::CreateMode;

    #[test]
    fn the_log_survives_a_crash_and_drops_a_torn_tail() {
        let mut disk = crate::sim::Disk::new();
        let t = |p: &str| Txn {
            session: 1,
            owner: 1,
            time_ms: 0,
            op: Op::Create {
                path: p.into(),
                data: vec![],
                mode: CreateMode::Persistent,
            },
        };
        append_log(&mut disk, &t("/a"));
        append_log(&mut disk, &t("/b"));
        disk.crash();
        assert_eq!(read_log(&mut disk), vec![t("/a"), t("/b")]);
        disk.append(TXN_LOG, &[9, 0, 0, 0, 1]);
        assert_eq!(read_log(&mut disk).len(), 2);
        let len = disk.read(TXN_LOG).len();
        append_log(&mut disk, &t("/c"));
        assert!(disk.read(TXN_LOG).len() > len);
        assert_eq!(read_log(&mut disk).len(), 3);
    }
}
