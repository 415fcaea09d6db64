//! The append-only file: what a node appends per its `appendfsync` policy, the snapshot
//! a replica writes after a full resync, and the log a restarted node loads.

use super::params::Persistence;
use super::resp::{decode_command, encode_commands};
use crate::sim::NodeCtx;

/// The AOF's file name on the node's disk.
pub(super) const AOF: &str = "appendonly.aof";

/// With `appendfsync always` Redis fsyncs the AOF in its only thread before it replies
/// (`beforeSleep`): when that fsync meets a stalled disk, the whole server waits with it,
/// every client, the expire cycle and replication alike.
pub(crate) async fn wait_for_aof(ctx: &NodeCtx, persistence: Persistence, fsyncs_before: u64) {
    // `everysec` fsyncs in a background thread (which can also count here).
    if persistence == Persistence::Always && ctx.disk().fsyncs() > fsyncs_before {
        ctx.freeze_until_disk_ready().await;
    }
}

/// Append already-encoded commands to the AOF per the persistence policy.
pub(crate) fn persist(ctx: &NodeCtx, persistence: Persistence, bytes: &[u8]) {
    if persistence == Persistence::None || bytes.is_empty() {
        return;
    }
    let mut disk = ctx.disk();
    disk.append(AOF, bytes);
    if persistence == Persistence::Always {
        disk.fsync(AOF);
    }
}

/// Replace the AOF with a snapshot (a replica after a full resync, as `BGREWRITEAOF`).
pub(crate) fn rewrite_aof(ctx: &NodeCtx, persistence: Persistence, cmds: &[Vec<Vec<u8>>]) {
    if persistence == Persistence::None {
        return;
    }
    let bytes = encode_commands(cmds);
    let mut disk = ctx.disk();
    disk.truncate(AOF);
    disk.append(AOF, &bytes);
    disk.fsync(AOF);
}

/// Decode an AOF; a torn tail (a crash mid-append) is dropped, as `aof-load-truncated yes`.
pub(crate) fn read_aof(mut bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let mut log = Vec::new();
    while let Ok(Some((cmd, n))) = decode_command(bytes) {
        log.push(cmd);
        bytes = &bytes[n..];
    }
    log
}
