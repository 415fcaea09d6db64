//! Live mode's transport: real TCP on 127.0.0.1. [`LiveNet`] maps node names to loopback
//! ports; [`Tcp`] connects through turmoil in a simulation and over real loopback TCP in
//! a live run, so the same client code runs in both.

use super::connector::Connector;
use super::tcp::{self, SimStream};
use crate::sim::{Elapsed, LocalBoxFuture, NodeCtx};
use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A live run's address book and clock: node name to 127.0.0.1 port, and the instant
/// the run began (its true time zero).
#[derive(Debug)]
pub struct LiveNet {
    ports: BTreeMap<String, u16>,
    start: tokio::time::Instant,
}

impl LiveNet {
    /// An address book starting the run's clock now.
    pub fn new(ports: BTreeMap<String, u16>) -> LiveNet {
        LiveNet {
            ports,
            start: tokio::time::Instant::now(),
        }
    }

    /// The loopback port of `host`.
    pub fn port(&self, host: &str) -> Option<u16> {
        self.ports.get(host).copied()
    }

    /// Real time since the run began, ns.
    pub fn elapsed_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
}

/// A connected stream: simulated or real.
pub enum NetStream {
    /// turmoil's TCP.
    Sim(SimStream),
    /// Real loopback TCP.
    Live(tokio::net::TcpStream),
}

macro_rules! delegate {
    ($self:ident, $s:ident => $e:expr) => {
        match $self.get_mut() {
            NetStream::Sim($s) => {
                let $s = Pin::new($s);
                $e
            }
            NetStream::Live($s) => {
                let $s = Pin::new($s);
                $e
            }
        }
    };
}

impl AsyncRead for NetStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        delegate!(self, s => s.poll_read(cx, buf))
    }
}

impl AsyncWrite for NetStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, s => s.poll_write(cx, buf))
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => s.poll_flush(cx))
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => s.poll_shutdown(cx))
    }
}

/// Simulated TCP in a simulation (exactly [`super::SimTcp`]), real loopback TCP in a
/// live run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tcp;

impl Connector for Tcp {
    type Stream = NetStream;

    fn connect<'a>(
        &'a self,
        ctx: &'a NodeCtx,
        host: &'a str,
        port: u16,
        deadline: Duration,
    ) -> LocalBoxFuture<'a, Result<io::Result<NetStream>, Elapsed>> {
        Box::pin(async move {
            let Some(net) = ctx.live() else {
                let s = tcp::connect(ctx, host, port, deadline).await?;
                return Ok(s.map(NetStream::Sim));
            };
            let Some(real) = net.port(host) else {
                return Ok(Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("live mode has no process for {host}"),
                )));
            };
            let s = ctx
                .timeout(
                    deadline,
                    tokio::net::TcpStream::connect(("127.0.0.1", real)),
                )
                .await?;
            Ok(s.and_then(|s| {
                s.set_nodelay(true)?;
                Ok(NetStream::Live(s))
            }))
        })
    }
}
