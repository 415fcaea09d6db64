//! Redis: the RESP codec, the server model, its network edge, replication with Sentinel
//! failover, and the lock client — two deployments of one client.
//!
//! - [`model::RedisServer`] is a pure state machine over the server's wall clock;
//! - [`node`] is the I/O edge that feeds it commands from the network, drives active
//!   expiry and persistence, and records expirations in the history;
//! - [`replication`] and [`sentinel`] make `redis-replicated`;
//! - [`RedisLock`] is the client, every published variant a parameter ([`params`]).

mod aof;
mod endpoint;
mod lock;
pub(crate) mod model;
pub(crate) mod node;
pub(crate) mod params;
mod real;
mod replication;
pub(crate) mod resp;
mod sentinel;
mod state;

pub(crate) use endpoint::{redis_remote, Call, Discovery, Endpoint, RedisRemote};
pub(crate) use lock::{eval, RedisLock};
pub(crate) use node::record_expired;
pub(crate) use node::serve_node;
pub(crate) use params::{Acquire, Persistence, RedisParams, TokenSource};
pub(crate) use real::RealRedis;
pub(crate) use state::Role;

use crate::locks::{Algorithm, LocalBoxFuture, LockClient, ParamDoc, ParamError};
use crate::real::{RealCluster, RealPort, ServedModel};
use crate::sim::{FaultPoint, NodeCtx};
use serde::Deserialize;
use std::rc::Rc;
use std::time::Duration;

/// Redis's TCP port.
pub(crate) const REDIS_PORT: u16 = 6379;

/// Sentinel's TCP port.
pub(crate) const SENTINEL_PORT: u16 = 26379;

/// The monitored group's name, as in `sentinel monitor mymaster ...`.
pub(crate) const MASTER_NAME: &str = "mymaster";

/// `algorithm = "redis"`: one Redis node, `redis-0`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct Single(pub(crate) RedisParams);

/// `algorithm = "redis-replicated"`: `redis-0` starts as the primary, `redis-1..` as its
/// asynchronous replicas, and `sentinel-N` monitor them and fail over. The same client
/// finds the primary through the sentinels.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub(crate) struct Replicated(pub RedisParams);

/// Points inside a two-step acquire (`setnx-then-expire`).
const MID_ACQUIRE: &[FaultPoint] = &[FaultPoint::MidAcquire];

/// The INCR counter, when the lock takes one.
fn redis_token(p: &RedisParams) -> Option<&'static str> {
    match p.token {
        TokenSource::Incr => Some("INCR of a counter key, atomically with the acquire"),
        TokenSource::None => None,
    }
}

fn client_fault_points(p: &RedisParams) -> &'static [FaultPoint] {
    match p.acquire {
        Acquire::SetnxThenExpire => MID_ACQUIRE,
        Acquire::SetNxPx => &[],
    }
}

impl Algorithm for Single {
    const NAME: &'static str = "redis";
    const ABOUT: &'static str = "a single Redis node and the SET NX PX lock with its variants";

    fn fencing_token(&self) -> Option<&'static str> {
        redis_token(&self.0)
    }

    fn params() -> Vec<ParamDoc> {
        params::SHARED_DOCS.to_vec()
    }

    fn validate(&self) -> Result<(), ParamError> {
        if let Some(k) = self.0.replication_keys_set().first() {
            return Err(ParamError::new(
                k,
                "only valid with algorithm = \"redis-replicated\"",
            ));
        }
        self.0.validate()
    }

    fn load_files(&mut self, dir: &std::path::Path) -> Result<(), ParamError> {
        self.0.load_files(dir)
    }

    fn servers(&self) -> Vec<String> {
        vec!["redis-0".to_string()]
    }

    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        Box::pin(node::serve_node_with(
            ctx,
            self.0.persistence,
            self.0.server_config(),
        ))
    }

    fn client(&self) -> Box<dyn LockClient> {
        let timeout = Duration::from_millis(self.0.request_timeout_ms);
        let endpoint = Endpoint::new(Discovery::Fixed("redis-0".into(), REDIS_PORT), timeout);
        Box::new(RedisLock::new(self.0.clone(), endpoint, None))
    }

    fn lease_ms(&self) -> Option<u64> {
        Some(self.0.ttl_ms)
    }

    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        self.0.effective_table(false)
    }

    fn client_fault_points(&self) -> &'static [FaultPoint] {
        client_fault_points(&self.0)
    }

    fn real(&self) -> Option<Rc<dyn RealCluster>> {
        Some(Rc::new(RealRedis {
            servers: self.servers(),
            persistence: self.0.persistence,
            down_after_ms: None,
            model_only: Vec::new(),
        }))
    }

    /// One model Redis node; its AOF, if any, is on its disk.
    fn served_model(&self) -> Option<ServedModel> {
        Some(served_redis(&Algorithm::servers(self), self.0.persistence))
    }
}

/// Independent model Redis nodes (`redis` or `redlock`), each on its one port: with an
/// AOF on its disk unless `persistence` is none.
pub(crate) fn served_redis(servers: &[String], persistence: Persistence) -> ServedModel {
    let port = RealPort {
        label: "redis",
        sim_port: Some(REDIS_PORT),
    };
    ServedModel {
        system: "locksim's Redis model",
        ports: servers.iter().map(|n| (n.clone(), vec![port])).collect(),
        disk_nodes: match persistence {
            Persistence::None => Vec::new(),
            Persistence::Everysec | Persistence::Always => servers.to_vec(),
        },
        not_applied: Vec::new(),
    }
}

impl Algorithm for Replicated {
    const NAME: &'static str = "redis-replicated";
    const ABOUT: &'static str =
        "a Redis primary with asynchronous replicas and Sentinel failover; the same lock client";

    fn fencing_token(&self) -> Option<&'static str> {
        redis_token(&self.0)
    }

    fn params() -> Vec<ParamDoc> {
        [params::SHARED_DOCS, params::REPLICATION_DOCS].concat()
    }

    fn validate(&self) -> Result<(), ParamError> {
        self.0.validate()
    }

    fn load_files(&mut self, dir: &std::path::Path) -> Result<(), ParamError> {
        self.0.load_files(dir)
    }

    fn servers(&self) -> Vec<String> {
        let r = self.0.replication();
        let mut v: Vec<String> = (0..=r.replicas).map(|i| format!("redis-{i}")).collect();
        v.extend((0..r.sentinels).map(|i| format!("sentinel-{i}")));
        v
    }

    /// The Redis nodes; Sentinels keep only their configuration file.
    fn disk_nodes(&self) -> Vec<String> {
        let r = self.0.replication();
        (0..=r.replicas).map(|i| format!("redis-{i}")).collect()
    }

    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        let (params, servers) = (self.0.clone(), self.servers());
        Box::pin(replicated_main(ctx, params, servers))
    }

    fn client(&self) -> Box<dyn LockClient> {
        let r = self.0.replication();
        let timeout = Duration::from_millis(self.0.request_timeout_ms);
        let sentinels = (0..r.sentinels).map(|i| format!("sentinel-{i}")).collect();
        let wait = (r.wait_replicas > 0).then_some((r.wait_replicas, r.wait_timeout_ms));
        let endpoint = Endpoint::new(Discovery::Sentinels(sentinels), timeout);
        Box::new(RedisLock::new(self.0.clone(), endpoint, wait))
    }

    fn lease_ms(&self) -> Option<u64> {
        Some(self.0.ttl_ms)
    }

    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        self.0.effective_table(true)
    }

    fn client_fault_points(&self) -> &'static [FaultPoint] {
        client_fault_points(&self.0)
    }

    /// The model's primary, replicas and Sentinels (each Redis node with an AOF on its
    /// disk unless persistence is none; a Sentinel keeps nothing on its disk).
    fn served_model(&self) -> Option<ServedModel> {
        let servers = Algorithm::servers(self);
        let redis: Vec<String> = servers
            .iter()
            .filter(|n| n.starts_with("redis-"))
            .cloned()
            .collect();
        let mut model = served_redis(&redis, self.0.persistence);
        model.ports = servers
            .iter()
            .map(|n| {
                let sim_port = if n.starts_with("sentinel-") {
                    SENTINEL_PORT
                } else {
                    REDIS_PORT
                };
                let port = RealPort {
                    label: "redis",
                    sim_port: Some(sim_port),
                };
                (n.clone(), vec![port])
            })
            .collect();
        Some(model)
    }

    fn real(&self) -> Option<Rc<dyn RealCluster>> {
        let r = self.0.replication();
        let model_only = self
            .0
            .replication_lag_ms
            .is_some()
            .then(|| "replication_lag_ms (real replication on loopback is not delayed)".into());
        Some(Rc::new(RealRedis {
            servers: self.servers(),
            persistence: self.0.persistence,
            down_after_ms: Some(r.down_after_ms),
            model_only: model_only.into_iter().collect(),
        }))
    }
}

/// A node of a `redis-replicated` deployment: a Redis node in its configured role, or a
/// sentinel.
async fn replicated_main(ctx: NodeCtx, params: RedisParams, servers: Vec<String>) {
    let r = params.replication();
    if ctx.name().starts_with("sentinel-") {
        return sentinel::sentinel_main(ctx, r, servers).await;
    }
    // Roles come from each node's config file: redis-0 is configured as the primary, the
    // others as its replicas. A restarted node comes back in its configured role (with
    // whatever its AOF kept) until a sentinel re-points it — so a restarted old primary is
    // briefly a second primary, and one restarted before any failover is *the* primary,
    // replicas resynchronising from its possibly empty dataset (the documented hazard of
    // running without persistence under auto-restart).
    let role = if ctx.name() == "redis-0" {
        Role::Primary
    } else {
        Role::Replica {
            primary: "redis-0".to_string(),
        }
    };
    let config = params.server_config();
    node::run_node_with(ctx, params.persistence, role, *r.lag_ms, config).await
}
