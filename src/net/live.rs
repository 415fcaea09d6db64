//! Live mode's transport: real TCP on 127.0.0.1. [`LiveNet`] maps node names to loopback
//! ports; [`Tcp`] connects through turmoil in a simulation and over real loopback TCP in
//! a live run, so the same client code runs in both. Partitions between in-process
//! nodes (clients, storage) and the servers are applied here: a cut link refuses
//! connects and drops what is written over it and what arrives on it.

use super::connector::Connector;
use super::tcp::{self, SimStream};
use crate::sim::{Elapsed, LocalBoxFuture, NodeCtx};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
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
    /// Directed links cut, with how many partitions cut each.
    cuts: RefCell<BTreeMap<(String, String), u32>>,
}

impl LiveNet {
    /// An address book starting the run's clock now.
    pub fn new(ports: BTreeMap<String, u16>) -> LiveNet {
        LiveNet::with_epoch(ports, monotonic_ns())
    }

    /// An address book whose time zero is `epoch_ns` on the machine's monotonic clock
    /// (the [`Self::epoch_ns`] of the run a client process belongs to).
    pub fn with_epoch(ports: BTreeMap<String, u16>, epoch_ns: u64) -> LiveNet {
        LiveNet {
            ports,
            epoch_ns,
            cuts: RefCell::new(BTreeMap::new()),
        }
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

    /// Every directed link cut now.
    pub fn cut_links(&self) -> Vec<(String, String)> {
        let cuts = self.cuts.borrow();
        cuts.iter()
            .flat_map(|(link, n)| std::iter::repeat_n(link.clone(), *n as usize))
            .collect()
    }

    /// Cut (`true`) or restore one directed link; overlapping partitions count.
    pub fn set_cut(&self, from: &str, to: &str, cut: bool) {
        let mut cuts = self.cuts.borrow_mut();
        let key = (from.to_string(), to.to_string());
        let n = cuts.entry(key.clone()).or_insert(0);
        if cut {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
            if *n == 0 {
                cuts.remove(&key);
            }
        }
    }

    /// Whether the link `from` → `to` is cut.
    pub fn is_cut(&self, from: &str, to: &str) -> bool {
        self.cuts
            .borrow()
            .contains_key(&(from.to_string(), to.to_string()))
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

/// A loopback connection from node `from` to node `to`, subject to the run's cuts.
pub struct LiveStream {
    stream: tokio::net::TcpStream,
    net: Rc<LiveNet>,
    from: String,
    to: String,
}

impl AsyncRead for LiveStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let out = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(out, Poll::Ready(Ok(()))) && this.net.is_cut(&this.to, &this.from) {
            // Lost on the cut link. Nothing wakes this read again: the caller's request
            // deadline does, as when a partition swallows a reply in simulation.
            buf.set_filled(before);
            return Poll::Pending;
        }
        out
    }
}

impl AsyncWrite for LiveStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.net.is_cut(&this.from, &this.to) {
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut this.stream).poll_write(cx, buf)
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
            if net.is_cut(ctx.name(), host) {
                // As in simulation: the SYN is dropped on the cut link, refused at once.
                return Ok(Err(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    format!("{host}: link cut"),
                )));
            }
            let s = ctx
                .timeout(
                    deadline,
                    tokio::net::TcpStream::connect(("127.0.0.1", real)),
                )
                .await?;
            Ok(s.and_then(|stream| {
                stream.set_nodelay(true)?;
                Ok(NetStream::Live(LiveStream {
                    stream,
                    net: net.clone(),
                    from: ctx.name().to_string(),
                    to: host.to_string(),
                }))
            }))
        })
    }
}

/// A listening socket: turmoil's in a simulation, real loopback in a live run.
pub enum Listener {
    /// turmoil's, with the kernel's mark that the port is bound.
    Sim(turmoil::net::TcpListener, Option<crate::sim::Listening>),
    /// 127.0.0.1 at the node's port in the live run's address book.
    Live(tokio::net::TcpListener, Rc<LiveNet>, String),
}

impl Listener {
    /// The next connection.
    pub async fn accept(&self) -> io::Result<NetStream> {
        match self {
            Listener::Sim(l, _) => {
                let (stream, _) = l.accept().await?;
                Ok(NetStream::Sim(SimStream::accepted(stream)))
            }
            Listener::Live(l, net, me) => {
                let (stream, peer) = l.accept().await?;
                stream.set_nodelay(true)?;
                Ok(NetStream::Live(LiveStream {
                    stream,
                    net: net.clone(),
                    from: me.clone(),
                    to: format!("127.0.0.1:{}", peer.port()),
                }))
            }
        }
    }
}

/// Listen on `port` of this node: turmoil's port in a simulation; in a live run, the
/// node's own loopback port from the address book (`port` is the simulated one).
pub async fn listen(ctx: &NodeCtx, port: u16) -> io::Result<Listener> {
    let Some(net) = ctx.live() else {
        let (l, mark) = tcp::listen(ctx, port).await?;
        return Ok(Listener::Sim(l, mark));
    };
    let Some(real) = net.port_of(ctx.name(), port) else {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("live mode has no port for {}", ctx.name()),
        ));
    };
    let l = tokio::net::TcpListener::bind(("127.0.0.1", real)).await?;
    Ok(Listener::Live(l, net.clone(), ctx.name().to_string()))
}
