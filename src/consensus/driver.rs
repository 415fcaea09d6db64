//! The one Raft driver both replicated families run: the raft family's etcd-like nodes
//! and the zk family's ensemble.
//!
//! raft-rs leaves time and I/O to its host: something must tick the [`RaftCore`] every
//! `tick_ms` of the node's *local monotonic* clock (so drift, jumps and pauses reach
//! Raft) and handle each `Ready` it produces. This loop does the first, the same way for
//! both families; how a `Ready` is handled is the family's ([`RaftHost`]), on top of the
//! core's two persistence modes: [`RaftCore::process_ready`] (etcd: the whole loop waits
//! for the fsync) and [`RaftCore::process_ready_async`] (Zab: only the server's own
//! acknowledgements and votes wait for it).
//!
//! Each wake-up (work to handle, or the tick timer): (1) at a tick, the host's
//! [`RaftHost::before_tick`] (etcd's lessor check: it runs before the Ready loop has
//! caught up, which is etcd #15247's interleaving); (2) handle the Ready; (3) at a tick,
//! [`RaftHost::tick`] and handle that Ready. Like a `time.Ticker`, ticks missed during a
//! stall or a pause are not made up.
//!
//! [`RaftCore`]: super::core::RaftCore
//! [`RaftCore::process_ready`]: super::core::RaftCore::process_ready
//! [`RaftCore::process_ready_async`]: super::core::RaftCore::process_ready_async

use crate::sim::NodeCtx;
use std::future::Future;
use std::time::Duration;
use tokio::sync::Notify;

/// What a family does with its Raft core when the driver asks.
pub(crate) trait RaftHost {
    /// Handle whatever Ready the core has: persist, apply, answer, send.
    fn handle_ready(&self) -> impl Future<Output = ()>;
    /// Tick the core once; `now` is the local monotonic time, ns.
    fn tick(&self, now: i64);
    /// Work due at a tick before the pending Ready is handled (nothing by default).
    fn before_tick(&self, _now: i64) {}
}

/// Drive `host` forever: tick every `tick_ns` of `ctx`'s local monotonic clock and handle
/// Readies when `wake` is notified. A restarted node handles its recovered log at once.
pub(crate) async fn drive(ctx: &NodeCtx, wake: &Notify, tick_ns: i64, host: &impl RaftHost) {
    host.handle_ready().await;
    let mut next_tick = ctx.mono_ns() + tick_ns;
    loop {
        let wait = (next_tick - ctx.mono_ns()).max(0) as u64;
        tokio::select! {
            biased;
            _ = wake.notified() => {}
            _ = ctx.sleep(Duration::from_nanos(wait)) => {}
        }
        let now = ctx.mono_ns();
        let due = now >= next_tick;
        if due {
            host.before_tick(now);
        }
        host.handle_ready().await;
        if due {
            host.tick(now);
            host.handle_ready().await;
            next_tick = now + tick_ns;
        }
    }
}
