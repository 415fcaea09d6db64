//! Live mode's transport: real TCP on 127.0.0.1. [`LiveNet`] maps node names to loopback
//! ports; [`Tcp`] connects through turmoil in a simulation and over real loopback TCP in
//! a live run, so the same client code runs in both. Partitions are not applied here:
//! every live connection crosses one of locksim's proxies ([`crate::real::Proxies`]).

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
/// the run began (its true time zero) on the machine's monotonic clock, which every
/// process of the run (locksim and its client processes) shares.
#[derive(Debug)]
pub struct LiveNet {
    ports: BTreeMap<String, u16>,
    epoch_ns: u64,
}

impl LiveNet {
    /// An address book starting the run's clock now.
    pub fn new(ports: BTreeMap<String, u16>) -> LiveNet {
        LiveNet::with_epoch(ports, monotonic_ns())
    }

    /// An address book whose time zero is `epoch_ns` on the machine's monotonic clock
    /// (the [`Self::epoch_ns`] of the run a client process belongs to).
    pub fn with_epoch(ports: BTreeMap<String, u16>, epoch_ns: u64) -> LiveNet {
        LiveNet { ports, epoch_ns }
    }

    /// The run's time zero on the machine's monotonic clock, ns.
    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }

    /// The node listening on loopback port `port` (a real Sentinel names the primary by
    /// address: `127.0.0.1` and its port).
    pub fn host_of_port(&self, port: u16) -> Option<&str> {
        self.ports
            .iter()
            .find(|(_, p)| **p == port)
            .map(|(n, _)| n.as_str())
    }

    /// The whole address book.
    pub fn ports(&self) -> &BTreeMap<String, u16> {
        &self.ports
    }

    /// The loopback port of `host`.
    pub fn port(&self, host: &str) -> Option<u16> {
        self.ports.get(host).copied()
    }

    /// The loopback port standing for `host`'s simulated port `sim_port`: the entry
    /// `host:sim_port` for a node that listens on several ports (a ZooKeeper server's
    /// client and peer ports), else `host`'s own.
    pub fn port_of(&self, host: &str, sim_port: u16) -> Option<u16> {
        self.ports
            .get(&format!("{host}:{sim_port}"))
            .or_else(|| self.ports.get(host))
            .copied()
    }

    /// Real time since the run began, ns.
    pub fn elapsed_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.epoch_ns)
    }
}

/// The machine's monotonic clock (`CLOCK_MONOTONIC`, as `std::time::Instant` reads it),
/// ns: the same in every process, so client processes stamp events on locksim's scale.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A connected stream: simulated or real.
pub enum NetStream {
    /// turmoil's TCP.
    Sim(SimStream),
    /// Real loopback TCP.
    Live(LiveStream),
}

/// A loopback connection of a live run.
pub struct LiveStream {
    stream: tokio::net::TcpStream,
}

impl AsyncRead for LiveStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for LiveStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
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
            let Some(real) = net.port_of(host, port) else {
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
            Ok(s.and_then(|stream| {
                stream.set_nodelay(true)?;
                Ok(NetStream::Live(LiveStream { stream }))
            }))
        })
    }
}

/// A listening socket: turmoil's in a simulation, real loopback in a live run.
pub enum Listener {
    /// turmoil's.
    Sim(tcp::SimListener),
    /// 127.0.0.1 at the node's port in the live run's address book.
    Live(tokio::net::TcpListener),
}

impl Listener {
    /// The next connection.
    pub async fn accept(&self) -> io::Result<NetStream> {
        match self {
            Listener::Sim(l) => Ok(NetStream::Sim(l.accept().await?.0)),
            Listener::Live(l) => {
                let (stream, _) = l.accept().await?;
                stream.set_nodelay(true)?;
                Ok(NetStream::Live(LiveStream { stream }))
            }
        }
    }
}

/// Listen on `port` of this node: turmoil's port in a simulation; in a live run, the
/// node's own loopback port from the address book (`port` is the simulated one).
pub async fn listen(ctx: &NodeCtx, port: u16) -> io::Result<Listener> {
    let Some(net) = ctx.live() else {
        return Ok(Listener::Sim(tcp::listen(ctx, port).await?));
    };
    let Some(real) = net.port_of(ctx.name(), port) else {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("live mode has no port for {}", ctx.name()),
        ));
    };
    let l = tokio::net::TcpListener::bind(("127.0.0.1", real)).await?;
    Ok(Listener::Live(l))
}
