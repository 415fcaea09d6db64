//! Everything needed to plug a lock family or a lock client of your own into locksim,
//! in one place. A family is a parameters type (the `[lock]` table) implementing
//! [`Algorithm`]: which server nodes exist and what each runs, and the [`LockClient`]
//! every client node uses. It then runs through the same scenarios, workload,
//! nemesis and checks as locksim's own families.
//!
//! - **The node.** Server and client code gets a [`NodeCtx`]: the node's name, its local
//!   clocks ([`NodeCtx::mono_ns`], [`NodeCtx::wall_ms`]) and sleeps, its seeded
//!   randomness, task spawning, its [`Disk`], and the history it records to. It is the
//!   only source of time and randomness: code that uses it is deterministic per seed.
//! - **The wire.** [`serve`] runs a server's accept loop with a synchronous handler;
//!   [`Remote`] is a client's reconnecting connection with per-request deadlines, whose
//!   [`CallError::maybe_applied`] tells a failed request from an indeterminate one. A
//!   protocol plugs in as a [`Decoder`]; [`Frames`] and [`encode_frame`] are a
//!   length-prefixed framing for protocols with none. Clients are generic over a
//!   [`Connector`] ([`SimTcp`] in a simulation, [`Tcp`] against real servers).
//! - **Client crates.** A crate that requires `Send` (redis-rs, tonic's clients,
//!   etcd-client) runs on a node through [`SendTcp`] (a connector with `Send` streams),
//!   [`SendExecutor`] (hyper's and tonic's executor: its tasks pause with the node) and
//!   [`SendGrpcChannel`] (a custom channel): [`ThreadPinned`] wrappers, since a simulation
//!   runs on one thread. `examples/redis_rs_lock.rs` and `examples/etcd_client_lock.rs`
//!   are locks written on redis-rs and etcd-client, run under the catalogue's faults.
//! - **The lock.** [`LockClient::acquire`] waits as [`Wait`] says and returns a
//!   [`Grant`] (its fencing token, its lease end); a [`LockError`] says whether a failed
//!   call may have taken effect (`Indeterminate`) or surely did not (`Failed`).
//! - **Parameters.** [`ParamDoc`] rows document `[lock]` keys for `locksim list`;
//!   [`param`] has the checks of times and ranges every family uses, returning a
//!   [`ParamError`] that names the key.
//! - **The list.** A [`Family`] is one entry of a list of algorithms: pass your own
//!   list to [`Scenario::parse_with`] or [`ScenarioBuilder::families`].
//!   ([`ALGORITHMS`] is locksim's own; adding a family to locksim is a folder of
//!   `src/locks/` and one line there.)
//! - **Running it.** Build a [`Scenario`] with [`Scenario::builder`], [`run`] a seed,
//!   and read [`check_run`]'s reports by check: `.verdict(&MUTEX)`.
//!
//! # Example
//!
//! A family whose one server grants a lock to whoever asks while it is free, and its
//! client (`examples/toy_family.rs` is a complete one, with leases, fencing tokens and a
//! fault that breaks them):
//!
//! ```
//! use locksim::plugin::*;
//! use std::time::Duration;
//!
//! /// `algorithm = "free"`: one server `free-0`; no keys of its own.
//! #[derive(Debug, Clone, serde::Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct Free {}
//!
//! impl Algorithm for Free {
//!     const NAME: &'static str = "free";
//!     const ABOUT: &'static str = "one server; a lock is granted while it is free";
//!     fn params() -> Vec<ParamDoc> {
//!         Vec::new()
//!     }
//!     fn servers(&self) -> Vec<String> {
//!         vec!["free-0".into()]
//!     }
//!     fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
//!         let holder = std::rc::Rc::new(std::cell::RefCell::new(None::<Vec<u8>>));
//!         Box::pin(serve(ctx, 9000, Frames, move |_ctx, request, out| {
//!             let mut holder = holder.borrow_mut();
//!             let reply: &[u8] = match request {
//!                 Ok(r) if r.starts_with(b"LOCK ") && holder.is_none() => {
//!                     *holder = Some(r[5..].to_vec());
//!                     b"OK"
//!                 }
//!                 Ok(r) if r.starts_with(b"UNLOCK ") && holder.as_deref() == Some(&r[7..]) => {
//!                     *holder = None;
//!                     b"OK"
//!                 }
//!                 _ => b"NO",
//!             };
//!             encode_frame(reply, out);
//!         }))
//!     }
//!     fn client(&self) -> Box<dyn LockClient> {
//!         let remote = Remote::new("free-0", 9000, Duration::from_millis(100), Frames);
//!         Box::new(FreeClient { remote })
//!     }
//!     fn lease_ms(&self) -> Option<u64> {
//!         None
//!     }
//!     fn fencing_token(&self) -> Option<&'static str> {
//!         None
//!     }
//! }
//!
//! struct FreeClient {
//!     remote: Remote<Frames>,
//! }
//!
//! impl FreeClient {
//!     /// One request; whether its answer was `OK`.
//!     async fn ask(&mut self, ctx: &NodeCtx, verb: &str, who: &str) -> Result<bool, LockError> {
//!         let mut out = Vec::new();
//!         encode_frame(format!("{verb} {who}").as_bytes(), &mut out);
//!         match self.remote.request(ctx, &out).await {
//!             Ok(reply) => Ok(reply == b"OK"),
//!             Err(e) if e.maybe_applied() => Err(LockError::Indeterminate(e.to_string())),
//!             Err(e) => Err(LockError::Failed(e.to_string())),
//!         }
//!     }
//! }
//!
//! impl LockClient for FreeClient {
//!     fn acquire<'a>(
//!         &'a mut self,
//!         ctx: &'a NodeCtx,
//!         lock: &'a str,
//!         wait: Wait,
//!     ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
//!         Box::pin(async move {
//!             let deadline = wait.deadline_ns(ctx);
//!             while !self.ask(ctx, "LOCK", ctx.name()).await? {
//!                 if wait.once() || ctx.mono_ns() >= deadline {
//!                     return Err(LockError::Failed(wait.gave_up("held")));
//!                 }
//!                 ctx.sleep(Duration::from_millis(20)).await;
//!             }
//!             let owner_value = ctx.name().to_string();
//!             Ok(Grant { lock: lock.to_string(), token: None, owner_value, valid_until: None })
//!         })
//!     }
//!     fn release<'a>(
//!         &'a mut self,
//!         ctx: &'a NodeCtx,
//!         grant: &'a Grant,
//!     ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
//!         Box::pin(self.ask(ctx, "UNLOCK", &grant.owner_value))
//!     }
//!     fn abandon<'a>(
//!         &'a mut self,
//!         ctx: &'a NodeCtx,
//!         _lock: &'a str,
//!     ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
//!         Box::pin(self.ask(ctx, "UNLOCK", ctx.name()))
//!     }
//! }
//!
//! let scenario = Scenario::builder("free", "free")
//!     .families(&[Family::of::<Free>()])
//!     .duration_ms(3000)
//!     .build()
//!     .unwrap();
//! let result = run(&scenario, 1);
//! assert_eq!(check_run(&scenario, &result).verdict(&MUTEX), Verdict::Holds);
//! ```

// The family's side: its parameters, its servers, its list entry.
pub use crate::locks::param::{self, ParamDoc, ParamError, Range};
pub use crate::locks::{Algorithm, Family, ALGORITHMS};

// The client's side: the trait, what it returns, how long it may wait.
pub use crate::locks::{Grant, LocalBoxFuture, LockClient, LockError, Wait};

// The node: time, randomness, tasks, disk, history.
pub use crate::history::{Event, EventType};
pub use crate::sim::{join_all, Disk, Elapsed, FaultPoint, NodeCtx};

// The wire: connections, framing, requests with deadlines, a server's accept loop.
pub use crate::net::{
    encode_frame, serve, CallError, Conn, Connector, Decoder, Frames, Remote, SimTcp, Tcp,
    MAX_FRAME,
};

/// locksim's own server models, for a family that runs its own client against them:
/// delegate [`Algorithm::servers`], [`Algorithm::server_main`] and the rest to the model's
/// `[lock]` table and return your client from [`Algorithm::client`]
/// (`examples/redis_rs_lock.rs`).
pub mod models {
    /// `algorithm = "raft"`'s `[lock]` table: `raft-0..` serving etcd's v3 gRPC API
    /// (KV, Watch, Lease, Lock) on port 2379, and the keys of locksim's etcd client.
    pub use crate::locks::raft::RaftParams as Raft;
    /// `algorithm = "redis"`'s `[lock]` table: one Redis server, `redis-0` on port 6379,
    /// and the keys of locksim's Redis lock client (`ttl_ms`, `token`, …).
    pub use crate::locks::redis::Single as Redis;
}

// Client crates that require `Send` (redis-rs, tonic clients, etcd-client).
pub use crate::net::{
    ChannelError, Deadlines, GrpcChannel, NetStream, SendCall, SendExecutor, SendGrpcChannel,
    SendStream, SendTcp, ThreadPinned,
};

// Checks of its own (`Algorithm::checks`) and the standard ones by value.
pub use crate::check::{
    Check, CheckKind, CheckParams, CheckReport, CheckReports, Verdict, Violation, COUNTER, FENCING,
    LIVENESS, LOCK_LINEARIZABLE, MUTEX, STANDARD, STORAGE_LINEARIZABLE, TOKEN_ORDER,
};

// Running it: a scenario built in Rust, a seed, its checks.
pub use crate::scenario::{Expect, Network, Scenario, ScenarioBuilder, ScenarioError, Workload};
pub use crate::sim::{Fault, RunResult};
pub use crate::{check_run, run, run_with_schedule};

// The determinism guards: a seed run twice, and whether this build seeds tokio.
pub use crate::deploy::{
    assert_deterministic, check_determinism, DiffEvent, HistoryDiff, Nondeterminism,
};
pub use crate::sim::{check_tokio_seeded, UnseededTokio, TOKIO_UNSTABLE_CONFIG};
