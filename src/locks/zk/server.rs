//! A ZooKeeper server node (`zk-N`): client connections, sessions and their expiry,
//! watches, and the write path — a transaction log on the node's disk when standalone,
//! the Raft core when in an ensemble.
//!
//! # Standalone (`servers = 1`)
//!
//! A write gets the next zxid, is appended to the transaction log on the node's disk and
//! fsynced (ZooKeeper's `forceSync = yes`), then applied and answered; while an fsync
//! waits for a stalled disk, every later request waits behind it (`LogGate`). A
//! restart replays the log and, like ZooKeeper loading its database, starts every live
//! session over with a full timeout, so clients that reconnect in time keep their
//! sessions and their ephemeral nodes.
//!
//! # Ensemble (`servers = 3 | 5`)
//!
//! The Raft family's core stands in for ZAB: every write (and every session open and
//! close) is proposed as a Raft entry; its zxid is the entry's log index; every
//! server applies the committed entries in order and the server the client is connected
//! to answers once *it* has applied the write. Reads are served from the local applied
//! state (ZooKeeper's sequential consistency: a client's requests are answered in order,
//! so it sees its own writes; `sync` is a ReadIndex round after which the server has
//! applied everything committed before it). As a ZooKeeper follower that loses its
//! leader stops serving, a server that knows no Raft leader closes its client
//! connections and refuses new ones. A server's log persists asynchronously: only its
//! acknowledgements and votes wait for the fsync, as in Zab, so a slow disk costs a
//! server its share of the quorum, not its heartbeats, forwarding or applies.
//!
//! Session expiry is the leader's (`LeaderSessionTracker`): a new leader starts every
//! session over with a full timeout; followers report the sessions their clients touched
//! every half tick (ZooKeeper's learner ping); the leader proposes `closeSession` for
//! each expired bucket, and again if it was not applied within two ticks. The tracker
//! belongs to one Raft term (ZooKeeper's epoch), and a server proposes the transactions
//! it decides on its own only as the leader of that term (`propose_own`), never through
//! a follower's forwarding ([`super::ensemble`]). Raft ticks every `tick_ms / 5` of the
//! node's local clock (election timeout 10 to 20 Raft ticks, heartbeats every 2), so a
//! leader fails over within about half a session timeout.
//!
//! # Connections
//!
//! One task per connection reads its requests as they arrive, each touching its session
//! (ZooKeeper's `submitRequest`), and answers them strictly in order (a write is answered
//! once applied, and a later read waits for it, as ZooKeeper's per-session ordering), and
//! sends watch notifications as the transactions that fire them are applied — always
//! before any reply that reflects a later state. A connection closes when its session is
//! closed, so a client learns of an expiry only when it reconnects and is told `Expired`.
//! A client whose last seen zxid is ahead of the server is refused (it must try another
//! server), as in `ZooKeeperServer.processConnectRequest`.
//!
//! # Shape
//!
//! The state and its rules are a pure core ([`super::core`]: an input in, effects out);
//! [`super::node`] performs the effects and is the only place that awaits; this file
//! starts a server and runs its loops (the expirer, the container manager, a follower's
//! touch reports, the Raft driver); [`super::connection`] is the client port.
//!
//! # History
//!
//! A server records `leader` ({term}) when it becomes the leader of an ensemble, and
//! `expire` (key = the lock) when a session close deletes the node that owns a lock (the
//! recipe's layout, [`super::mutex::layout`]), with `{zxid, node, session}`. Every
//! server of an ensemble records it when it applies the entry (and again after a restart, which
//! re-applies its log): the family's `lock-linearizable` keeps the first record of each
//! zxid. Served (`locksim serve`), a close also records an `expire` without a key for
//! each other ephemeral node it deletes, with the same value: a real client's recipe may
//! hold its locks with any ephemeral node (see [`super::mutex::layout::other_ephemerals`]).

use super::connection::client_listener;
use super::core::ZkCore;
use super::db::{Op, Txn};
use super::ensemble::{drive, raft_params, Ensemble, RaftHost};
use super::node::{Node, Replication, WritePath};
use super::params::ZkParams;
use super::proto::PEER_PORT;
use super::txn_log::read_log;
use crate::net::serve_peers;
use crate::sim::NodeCtx;
use std::rc::Rc;
use std::time::Duration;

/// The index of server `zk-N`.
pub(crate) fn server_index(name: &str) -> usize {
    name.strip_prefix("zk-")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{name} is not a ZooKeeper server"))
}

/// What server `zk-N` runs, from start to crash.
pub(crate) async fn server_main(ctx: NodeCtx, params: ZkParams) {
    let me = server_index(ctx.name());
    let now = ctx.mono_ns();
    let (core, path, replayed) = if params.servers > 1 {
        let seed = ctx.rand_u64();
        let raft = Ensemble::new(me, &params, &mut ctx.disk(), seed);
        let core = ZkCore::ensemble(me, params.tick_ms, raft);
        let path = WritePath::Ensemble(Replication::new(params.servers as usize));
        (core, path, Vec::new())
    } else {
        let txns = read_log(&mut ctx.disk());
        let (core, replayed) = ZkCore::standalone(me, params.tick_ms, &txns, now);
        (core, WritePath::Standalone(Rc::default()), replayed)
    };
    let node = Node::new(ctx.clone(), params, me, core, path);
    node.perform(replayed);
    ctx.spawn(client_listener(node.clone()));
    ctx.spawn(expirer(node.clone()));
    ctx.spawn(container_manager(node.clone()));
    let WritePath::Ensemble(r) = &*node.path else {
        return std::future::pending::<()>().await;
    };
    let hosts: Vec<String> = (0..node.params.servers)
        .map(|i| format!("zk-{i}"))
        .collect();
    // A batch not acknowledged within a tick is dropped with its connection (Raft
    // retransmits). A tick is half the Raft election timeout (`raft_params`).
    let timeout = Duration::from_millis(node.params.tick_ms);
    r.mesh.spawn_senders(&ctx, me, &hosts, PEER_PORT, timeout);
    let receiver = node.clone();
    ctx.spawn(serve_peers(ctx.clone(), PEER_PORT, move |_ctx, msg| {
        receiver.on_peer(msg)
    }));
    ctx.spawn(touch_reporter(node.clone()));
    raft_loop(node.clone()).await
}

impl RaftHost for Node {
    async fn handle_ready(&self) {
        self.handle_readies();
    }

    fn tick(&self, _now: i64) {
        Node::tick(self);
    }
}

/// The Raft loop: the shared Raft driver, ticking on the local clock.
async fn raft_loop(node: Node) {
    let tick_ns = raft_params(&node.params).tick_ms as i64 * 1_000_000;
    let ctx = node.ctx.clone();
    let WritePath::Ensemble(r) = &*node.path else {
        return;
    };
    drive(&ctx, &r.wake, tick_ns, &node).await
}

/// The session expirer: at every tick boundary of the local clock, close the sessions
/// whose bucket is due (and, in an ensemble, propose again closes that were lost).
async fn expirer(node: Node) {
    let ctx = node.ctx.clone();
    let tick = node.tick_ns();
    loop {
        let now = ctx.mono_ns();
        let next = (now.div_euclid(tick) + 1) * tick;
        ctx.sleep(Duration::from_nanos((next - now).max(1) as u64))
            .await;
        let now = ctx.mono_ns();
        for id in node.expire_due(now) {
            tracing::debug!(session = format!("0x{id:x}"), "session expired");
            node.run_own_txn(Txn {
                session: id,
                owner: 0,
                time_ms: ctx.wall_ms(),
                op: Op::CloseSession,
            })
            .await;
        }
    }
}

/// ZooKeeper's `ContainerManager`: every `container_check_ms`, delete the empty
/// containers that once had children (standalone, or the leader of an ensemble).
async fn container_manager(node: Node) {
    let ctx = node.ctx.clone();
    let every = Duration::from_millis(node.params.container_check_ms);
    loop {
        ctx.sleep(every).await;
        if !node.is_leader() {
            continue;
        }
        for path in node.container_candidates() {
            tracing::debug!(path, "deleting an empty container");
            node.run_own_txn(Txn {
                session: 0,
                owner: 0,
                time_ms: ctx.wall_ms(),
                op: Op::DeleteContainer { path },
            })
            .await;
        }
    }
}

/// A follower reports the sessions its clients touched to the leader every half tick.
async fn touch_reporter(node: Node) {
    let ctx = node.ctx.clone();
    let every = Duration::from_nanos((node.tick_ns() / 2).max(1) as u64);
    loop {
        ctx.sleep(every).await;
        node.report_touches();
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
