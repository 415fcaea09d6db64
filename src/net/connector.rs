//! How a client opens a byte stream to `host:port`: turmoil's simulated TCP now; real
//! TCP on loopback for a live mode (same client code, another connector).

use super::tcp::{self, SimStream};
use crate::sim::{Elapsed, LocalBoxFuture, NodeCtx};
use std::io;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// Opens connections.
pub trait Connector {
    /// The connected stream.
    type Stream: AsyncRead + AsyncWrite + Unpin + 'static;
    /// Connect from the node of `ctx` to `host:port` within `deadline` of its local time.
    fn connect<'a>(
        &'a self,
        ctx: &'a NodeCtx,
        host: &'a str,
        port: u16,
        deadline: Duration,
    ) -> LocalBoxFuture<'a, Result<io::Result<Self::Stream>, Elapsed>>;
}

/// turmoil's simulated TCP (without its socket leaks: see `net/tcp.rs`); `host` is a
/// simulated host's name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimTcp;

impl Connector for SimTcp {
    type Stream = SimStream;

    fn connect<'a>(
        &'a self,
        ctx: &'a NodeCtx,
        host: &'a str,
        port: u16,
        deadline: Duration,
    ) -> LocalBoxFuture<'a, Result<io::Result<SimStream>, Elapsed>> {
        Box::pin(tcp::connect(ctx, host, port, deadline))
    }
}
