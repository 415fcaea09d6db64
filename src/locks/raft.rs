//! `algorithm = "raft"`: a lock service replicated with Raft, etcd-style, and etcd's lock
//! recipe as the client.
//!
//! * Servers `raft-0 .. raft-{nodes-1}` ([`node`]): the Raft core both replicated
//!   families share ([`crate::consensus`]: raft-rs ticked on each node's local clock, its
//!   log on the node's disk), an etcd-like service applied from the log ([`kv`]: revisioned keys, transactions,
//!   leases; [`service`]), the leader-local lessor that decides lease expiry ([`lease`]),
//!   the wire formats ([`wire`]).
//! * Clients ([`client`], [`mutex`]): etcd's `concurrency` package — a session (a lease
//!   kept alive by etcd's client loops) and `Mutex.Lock`/`Unlock`; the fencing token is
//!   the create revision of the holder's key.
//! * Checks: the standard ones (with `lock-linearizable` reading each revoke's `expire`
//!   once) plus Raft's own invariants ([`invariants`]), so that a lock violation is never
//!   a Raft bug in disguise.
//!
//! Every published weakness is a parameter ([`params`]): `post_wait_check` (etcd #11456),
//! `lessor_check` (#15247), `read` (stale reads), `check_quorum`, `fsync`. Catalogue rows
//! 16–19 are `sims/raft-*.toml`.

pub(crate) mod client;
pub(crate) mod etcd_api;
pub(crate) mod etcd_client_api;
pub(crate) mod etcd_grpc;
pub(crate) mod etcdpb;
pub(crate) mod invariants;
pub(crate) mod kv;
pub(crate) mod lease;
mod lock_service;
pub(crate) mod mutex;
pub(crate) mod node;
pub(crate) mod params;
mod real;
pub(crate) mod service;
pub(crate) mod wire;

#[cfg(test)]
mod run_tests;

pub(crate) use mutex::EtcdMutex;
pub use params::RaftParams;

use crate::check::{Check, STANDARD};
use crate::locks::{Algorithm, LocalBoxFuture, LockClient, ParamDoc, ParamError};
use crate::real::{served_cluster, RealCluster, ServedModel};
use crate::sim::{FaultPoint, NodeCtx};
use std::rc::Rc;

impl Algorithm for RaftParams {
    const NAME: &'static str = "raft";
    const ABOUT: &'static str =
        "an etcd-like lock service on a Raft cluster (raft-rs) and etcd's Mutex recipe";

    fn params() -> Vec<ParamDoc> {
        params::DOCS.to_vec()
    }

    fn validate(&self) -> Result<(), ParamError> {
        RaftParams::validate(self)
    }

    fn servers(&self) -> Vec<String> {
        (0..self.nodes).map(|i| format!("raft-{i}")).collect()
    }

    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        Box::pin(node::server_main(ctx, self.clone()))
    }

    fn client(&self) -> Box<dyn LockClient> {
        Box::new(EtcdMutex::new(self.clone()))
    }

    fn lease_ms(&self) -> Option<u64> {
        Some(self.ttl_ms)
    }

    fn real(&self) -> Option<Rc<dyn RealCluster>> {
        Some(Rc::new(real::RealEtcd {
            params: self.clone(),
        }))
    }

    /// The model's members, each on its client and peer ports; their Raft logs are on
    /// their disks. They run with the parameters the clients take against etcd
    /// (`RaftParams::for_real`): lease TTLs in whole real seconds.
    fn served_model(&self) -> Option<ServedModel> {
        let mut model = served_cluster(
            "locksim's etcd model",
            Algorithm::servers(self),
            wire::CLIENT_PORT,
            wire::PEER_PORT,
        );
        let ttl_ms = RaftParams::for_real(self).ttl_ms;
        if ttl_ms != self.ttl_ms {
            model.not_applied.push(format!(
                "ttl_ms: {ttl_ms} ms, not {} (lease TTLs are whole real seconds, at least \
                 etcd's minimum, as against etcd)",
                self.ttl_ms
            ));
        }
        Some(model)
    }

    fn fencing_token(&self) -> Option<&'static str> {
        Some("the lock key's create revision, assigned by the Raft log")
    }

    fn for_real(&self) -> Self {
        RaftParams::for_real(self)
    }

    /// The keys, the derived times (request timeout, the client's and lessor's periods)
    /// with their values.
    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut table = crate::locks::table_of(self);
        let derived = [
            ("request_timeout_ms", self.request_timeout_ms()),
            ("keepalive_retry_ms", self.keepalive_retry_ms()),
            ("deadline_check_ms", self.deadline_check_ms()),
            ("lessor_check_ms", self.lessor_check_ms()),
            ("revoke_retry_ms", self.revoke_retry_ms()),
        ];
        for (key, ms) in derived {
            table.insert(key.to_string(), ms.into());
        }
        table
    }

    /// The standard checks, `lock-linearizable` reading each revoke's `expire` once (see
    /// `invariants`), then `raft-election-safety`, `raft-log` and `raft-apply`.
    fn checks(&self) -> Vec<&'static Check> {
        let mut v: Vec<&'static Check> = STANDARD
            .iter()
            .map(|&c| {
                if *c == crate::check::LOCK_LINEARIZABLE {
                    &invariants::LOCK_LINEARIZABLE
                } else {
                    c
                }
            })
            .collect();
        v.extend([
            &invariants::ELECTION_SAFETY,
            &invariants::LOG,
            &invariants::APPLY,
        ]);
        v
    }

    /// While a waiter's key is queued behind others (catalogue row 16).
    fn client_fault_points(&self) -> &'static [FaultPoint] {
        &[FaultPoint::MidAcquire]
    }
}
