//! Counting what a host writes to another, for the run's [`Traffic`](crate::sim::Traffic).
//!
//! Every simulated stream is a [`Metered`] one: [`super::tcp::connect`] and
//! [`super::tcp::SimListener::accept`] are the only ways to get one, so no protocol can
//! send around the count (a test compares the count with turmoil's own log of the
//! segments it carries).

use crate::sim::{Kernel, NodeCtx};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A stream (or a stream's write half) whose writes the run's kernel counts.
pub struct Metered<S> {
    inner: S,
    /// `None` outside a simulation and between a host and itself.
    kernel: Option<Rc<Kernel>>,
}

impl<S> Metered<S> {
    /// `inner`, counted in `ctx`'s run if it joins two different hosts.
    pub fn new(ctx: &NodeCtx, inner: S, local: SocketAddr, peer: SocketAddr) -> Metered<S> {
        let kernel = ctx.kernel().filter(|_| local.ip() != peer.ip()).cloned();
        Metered { inner, kernel }
    }

    /// The stream itself.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl Metered<turmoil::net::TcpStream> {
    /// The read half, and the write half still counted.
    pub fn into_split(
        self,
    ) -> (
        turmoil::net::tcp::OwnedReadHalf,
        Metered<turmoil::net::tcp::OwnedWriteHalf>,
    ) {
        let (rd, wr) = self.inner.into_split();
        let wr = Metered {
            inner: wr,
            kernel: self.kernel,
        };
        (rd, wr)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Metered<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Metered<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let out = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let (Poll::Ready(Ok(n)), Some(k)) = (&out, &self.kernel) {
            // turmoil sends nothing for an empty write.
            if *n > 0 {
                k.sent(*n);
            }
        }
        out
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
