//! The transport every algorithm shares: connections with a decoder for what arrives,
//! a reconnecting [`Remote`] with per-request deadlines on the node's local clock, a
//! server accept loop, and length-prefixed [`Frames`] for protocols that have no framing
//! of their own.
//!
//! Clients are generic over a [`Connector`], so the same client code runs over turmoil's
//! simulated TCP ([`SimTcp`]) and, with [`Tcp`], over real loopback sockets in live mode
//! ([`crate::live`]). Protocols
//! plug in as a [`Decoder`] (Redis's RESP lives with Redis, in `locks::redis::resp`).
//!
//! turmoil's TCP has no retransmission and a partition drops in-flight segments, leaving
//! a connection open but wedged: every request has a deadline, and a connection that
//! missed one is dropped (its late reply would otherwise be read as the next answer).
//!
//! etcd's v3 gRPC API runs over HTTP/2 on the same streams, on each node's own executor
//! ([`grpc`]).
//!
//! Crates that require `Send` (redis-rs, tonic, etcd-client) run on a node through
//! [`SendTcp`], [`SendExecutor`] and [`SendGrpcChannel`]: [`ThreadPinned`] wrappers.
//!
//! Replicated families talk server to server through a [`Mesh`] of per-peer outboxes
//! with batched, acknowledged sends ([`peer`]).

mod conn;
mod connector;
mod frame;
pub(crate) mod grpc;
mod live;
mod meter;
pub(crate) mod mysql;
pub(crate) mod peer;
mod remote;
mod send;
mod server;
pub(crate) mod tcp;
mod thread_pinned;

pub use conn::{Conn, Decoder};
pub use connector::{Connector, SimTcp};
pub(crate) use frame::FrameTooLarge;
pub use frame::{encode_frame, Frames, MAX_FRAME};
pub(crate) use grpc::{serve_grpc_connection, GrpcRouter};
pub use grpc::{ChannelError, Deadlines, GrpcChannel};
pub(crate) use live::listen;
pub use live::NetStream;
pub use live::Tcp;
// The address book lives with the node context; callers of live mode find it here too.
pub(crate) use crate::sim::{monotonic_ns, LiveNet};
pub(crate) use peer::{serve_peers, Mesh};
pub use remote::{CallError, Remote};
pub use send::{SendCall, SendExecutor, SendGrpcChannel, SendStream, SendTcp};
pub use server::serve;
pub(crate) use tcp::SimStream;
pub use thread_pinned::ThreadPinned;
