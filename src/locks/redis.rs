//! Redis: the RESP codec, the server model, its network edge and the lock client.
//!
//! The server model ([`server::RedisServer`]) is a pure state machine over the server's
//! wall clock; [`serve_node`] is the I/O edge that feeds it commands from the network,
//! drives active expiry and persistence, and records expirations in the history.

pub mod conn;
mod lock;
pub mod resp;
mod serve;
pub mod server;

pub(crate) use lock::eval;
pub use lock::RedisLock;
pub use serve::{serve_node, REDIS_PORT};

/// A node of a `redis-replicated` deployment (replication and sentinels: in progress;
/// for now every Redis node serves standalone and sentinels idle).
pub async fn replicated_main(
    ctx: crate::sim::NodeCtx,
    params: crate::scenario::RedisParams,
    _servers: Vec<String>,
) {
    if ctx.name().starts_with("sentinel-") {
        std::future::pending::<()>().await;
    }
    serve_node(ctx, params.persistence).await
}
