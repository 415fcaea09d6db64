//! Redis: the RESP codec, the server model, its network edge and the lock client.
//!
//! The server model ([`server::RedisServer`]) is a pure state machine over the server's
//! wall clock; [`serve_node`] is the I/O edge that feeds it commands from the network,
//! drives active expiry and persistence, and records expirations in the history.

pub mod conn;
mod lock;
mod replication;
pub mod resp;
mod sentinel;
mod serve;
pub mod server;

pub(crate) use lock::eval;
pub use lock::RedisLock;
pub use sentinel::SENTINEL_PORT;
pub use serve::{run_node, serve_node, Role, REDIS_PORT};

/// A node of a `redis-replicated` deployment: `redis-0` starts as the primary, the other
/// `redis-N` as its replicas, and `sentinel-N` monitor them and fail over.
pub async fn replicated_main(
    ctx: crate::sim::NodeCtx,
    params: crate::scenario::RedisParams,
    servers: Vec<String>,
) {
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
    run_node(ctx, params.persistence, role, r.lag_ms).await
}
