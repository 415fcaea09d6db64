//! Live mode's transport: real TCP on 127.0.0.1. The run's address book
//! ([`crate::sim::LiveNet`], in the node's context) maps node names to loopback ports;
//! [`Tcp`] connects through turmoil in a simulation and over real loopback TCP in
//! a live run, so the same client code runs in both. Partitions are not applied here:
//! every live connection crosses one of locksim's proxies ([`crate::real::Proxies`]).

use super::connector::Connector;
use super::tcp::{self, SimStream};
use crate::sim::{Elapsed, LocalBoxFuture, NodeCtx};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

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
pub(crate) enum Listener {
    /// turmoil's.
    Sim(tcp::SimListener),
    /// 127.0.0.1 at the node's port in the live run's address book.
    Live(tokio::net::TcpListener),
}

impl Listener {
    /// The next connection.
    pub(crate) async fn accept(&self) -> io::Result<NetStream> {
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
pub(crate) async fn listen(ctx: &NodeCtx, port: u16) -> io::Result<Listener> {
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
