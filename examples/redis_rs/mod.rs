//! The `redis-rs` family: locksim's Redis model as the server, a lock written on the
//! `redis` crate as the client. The family is a thin wrapper around the model's own
//! `[lock]` table ([`models::Redis`], what `algorithm = "redis"` reads): it delegates
//! the servers, the lease and the fencing token to the model and returns its own client.
//!
//! - [`settings`]: which `[lock]` keys the redis-rs client honours, and the refusal of
//!   the ones it does not;
//! - [`connection`]: one node's redis-rs connection over locksim's simulated TCP;
//! - [`client`]: the lock itself (`SET NX PX`, the fenced acquire script, the
//!   compare-and-delete release script).

mod client;
mod connection;
mod settings;

use client::RedisRsClient;
use locksim::plugin::*;
use serde::Deserialize;
use settings::ClientSettings;

/// `algorithm = "redis-rs"`: the `[lock]` table of `algorithm = "redis"` (same keys, same
/// defaults), the same Redis model on `redis-0`, and a client written on redis-rs.
///
/// `#[serde(transparent)]`: the table deserialises straight into the model's type, so an
/// unknown key or a bad value is refused with the model's own message.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct RedisRsLock(models::Redis);

impl Algorithm for RedisRsLock {
    const NAME: &'static str = "redis-rs";
    const ABOUT: &'static str =
        "a lock written on redis-rs (SET NX PX, compare-and-delete) against locksim's Redis model";

    /// The model's keys, with the ones this client supports only at their default said so.
    fn params() -> Vec<ParamDoc> {
        settings::documented(<models::Redis as Algorithm>::params())
    }

    /// The refusal of every key the redis-rs client would otherwise ignore
    /// ([`ClientSettings::of`]), then the model's own checks (ranges, relations).
    fn validate(&self) -> Result<(), ParamError> {
        ClientSettings::of(&self.0)?;
        self.0.validate()
    }

    fn load_files(&mut self, dir: &std::path::Path) -> Result<(), ParamError> {
        // `scripts` is refused by `validate`, which runs first: nothing is read here.
        self.0.load_files(dir)
    }

    /// `redis-0`, the model's one server.
    fn servers(&self) -> Vec<String> {
        self.0.servers()
    }

    /// The Redis model on port 6379 (persistence as `[lock] persistence` says).
    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        self.0.server_main(ctx)
    }

    fn client(&self) -> Box<dyn LockClient> {
        // `validate` ran when the scenario was read: the table has the client's keys.
        let settings = ClientSettings::of(&self.0)
            .unwrap_or_else(|e| unreachable!("a validated [lock] table: {e}"));
        Box::new(RedisRsClient::new(settings))
    }

    /// `ttl_ms`: a scenario's default `liveness_ms` is five leases.
    fn lease_ms(&self) -> Option<u64> {
        self.0.lease_ms()
    }

    /// With `token = "incr"`, the `INCR` the acquire script runs with the `SET`.
    fn fencing_token(&self) -> Option<&'static str> {
        self.0.fencing_token()
    }

    fn client_fault_points(&self) -> &'static [FaultPoint] {
        // `acquire = "set-nx-px"` is the only acquire accepted: one step, no point inside.
        &[]
    }

    /// The model's effective table: what the run's summary and `locksim list` show.
    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        self.0.effective_table()
    }
}
