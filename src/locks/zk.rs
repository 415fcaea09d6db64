//! ZooKeeper and Apache Curator's `InterProcessMutex`: `algorithm = "zk"`.
//!
//! * [`tree`]: the znode tree and its watches, a pure `DataTree`;
//! * [`db`]: the replicated state machine (tree + sessions) and its transactions;
//! * [`session`]: the server's session tracker (expiry buckets on its local clock);
//! * [`proto`]: the client and peer wire formats;
//! * `core`: a server's state and rules, pure (an input in, effects out), its write
//!   path standalone (`txn_log`, a transaction log on its disk) or a member of an
//!   ensemble (`ensemble`: the Raft family's core, which stands in for ZAB);
//! * `node`: a server's I/O around its core (the only place that awaits);
//! * `connection`: a server's client port (handshake, requests in order, watches);
//! * [`server`]: starting a server and its loops (expiry, containers, Raft);
//! * [`handle`]: the ZooKeeper handle (pings, read timeout, reconnects), with `watches`
//!   (its watch registry);
//! * [`curator`]: Curator's framework over it: connection states (SUSPENDED /
//!   RECONNECTED / LOST, [`states`]), retry loop, background operations;
//! * [`mutex`]: Curator's `InterProcessMutex` (protected mode, predecessor watch), the
//!   [`LockClient`]; [`mutex::layout`]: where the recipe keeps its locks;
//! * [`params`]: the `[lock]` keys;
//! * [`checks`]: the family's `lock-linearizable` (one `expire` per zxid);
//! * `real`: the real ZooKeeper of live mode (`locksim live`).
//!
//! What it shows (catalogue rows 13–15): a session is a lease the *server* ends, by its
//! own clock, on its own terms. A holder that pauses (row 13) or is cut off (row 14)
//! past the session timeout keeps believing it holds the lock while the server has
//! deleted its node and granted the next waiter; the `czxid` of the lock node is a
//! fencing token that saves the resource. A holder can learn of the danger only through
//! Curator's SUSPENDED, and only if it listens (`on_suspended = "stop"`). A create whose
//! reply is lost leaves, without Curator's protected mode, a node nobody knows about that
//! the client's own live session keeps forever: a deadlock (row 15).

pub(crate) mod checks;
mod connection;
mod core;
pub(crate) mod curator;
pub(crate) mod db;
mod ensemble;
pub(crate) mod handle;
pub(crate) mod jute;
pub(crate) mod mutex;
mod node;
pub(crate) mod params;
pub(crate) mod proto;
mod real;
pub(crate) mod server;
pub(crate) mod session;
pub(crate) mod states;
pub(crate) mod tree;
mod txn_log;
mod watches;

#[cfg(test)]
mod run_tests;

pub(crate) use mutex::CuratorMutex;
pub(crate) use params::ZkParams;
pub use real::{JVM_FLAGS, LOG4J_CONFIG, LOG4J_JARS, ZOOKEEPER_JAR};

use crate::check::{Check, STANDARD};
use crate::locks::{Algorithm, LocalBoxFuture, LockClient, ParamDoc, ParamError};
use crate::real::RealCluster;
use crate::sim::{FaultPoint, NodeCtx};
use std::rc::Rc;

impl Algorithm for ZkParams {
    const NAME: &'static str = "zk";
    const ABOUT: &'static str =
        "ZooKeeper (standalone or a Raft-replicated ensemble) and Curator's InterProcessMutex";

    fn params() -> Vec<ParamDoc> {
        params::DOCS.to_vec()
    }

    fn validate(&self) -> Result<(), ParamError> {
        ZkParams::validate(self)
    }

    fn servers(&self) -> Vec<String> {
        (0..self.servers).map(|i| format!("zk-{i}")).collect()
    }

    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        Box::pin(server::server_main(ctx, self.clone()))
    }

    fn client(&self) -> Box<dyn LockClient> {
        Box::new(CuratorMutex::new(self.clone()))
    }

    /// The negotiated session timeout: the lease a session gives its ephemeral nodes.
    fn lease_ms(&self) -> Option<u64> {
        Some(self.negotiated_timeout_ms())
    }

    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        crate::locks::table_of(self)
    }

    fn fencing_token(&self) -> Option<&'static str> {
        Some("the lock node's czxid, assigned by the replicated log")
    }

    /// The standard checks, with the family's `lock-linearizable` (see [`checks`]).
    fn checks(&self) -> Vec<&'static Check> {
        STANDARD
            .iter()
            .map(|&c| {
                if *c == crate::check::LOCK_LINEARIZABLE {
                    &checks::LOCK_LINEARIZABLE
                } else {
                    c
                }
            })
            .collect()
    }

    /// Right after the lock node's create is on the wire, before its reply is read.
    fn client_fault_points(&self) -> &'static [FaultPoint] {
        &[FaultPoint::MidAcquire]
    }

    /// Apache ZooKeeper (`QuorumPeerMain`), standalone or an ensemble, with the
    /// scenario's tick and container check interval; `expire` events from its
    /// transaction logs.
    fn real(&self) -> Option<Rc<dyn RealCluster>> {
        Some(Rc::new(real::RealZooKeeper::new(self.clone())))
    }
}
