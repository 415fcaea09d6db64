//! TCP over turmoil, without its two socket leaks; state in the run's
//! [`Kernel`](crate::sim::Kernel).
//!
//! Two turmoil 0.7.2 gaps would leak sockets over a long run (a one-hour soak panics):
//! * `TcpStream::connect` inserts its socket into the host's table before the SYN goes
//!   out and removes it on no failure path: a SYN dropped by a partition or by a host
//!   with no listener (`ConnectionRefused`) or a connect cancelled by a deadline leaks
//!   its ephemeral port for good, and after 16,384 of them the host panics with `ports
//!   exhausted`. [`connect`] fails a connect that turmoil would refuse (over a cut
//!   link, or to a host:port with no listener) itself, before turmoil allocates
//!   anything, and finishes a connect past its deadline in the background instead of
//!   cancelling it.
//! * A dropped stream frees its own socket at once, but its FIN is lost when the link
//!   is cut (or sits forever behind a segment a partition dropped). The server's
//!   per-connection task then waits in `read` forever, keeping its socket; once the
//!   client's port counter wraps around to the same port, the server's `accept` panics
//!   with `already connected`. Real servers are saved by TCP keepalive (Redis turns it
//!   on, `tcp-keepalive 300`); [`read_alive`] is that keepalive for server-side reads.

pub(crate) use super::meter::Metered;
use crate::sim::{Elapsed, Listening, NodeCtx, Open};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// Keepalive on accepted connections: after this long (local time) without a byte from
/// the peer, probe it. Redis's `tcp-keepalive` is 300 s, scaled down like its other
/// timeouts; it must stay longer than any catalogue scenario (12 s), whose histories it
/// would otherwise change, and short against the time a client takes to wrap its 16,384
/// ephemeral ports.
pub(crate) const KEEPALIVE_IDLE: Duration = Duration::from_secs(60);
/// Between unanswered probes (Redis: a third of the idle time).
pub(crate) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(20);
/// Unanswered probes before the connection is dropped (Redis: 3).
pub(crate) const KEEPALIVE_PROBES: u32 = 3;

/// A simulated connection, its writes counted ([`Metered`]); on the connecting side
/// with its [`Open`] mark, which tells the peer's keepalive probes the connection is open
/// here (both go together).
pub struct SimStream {
    stream: Metered<turmoil::net::TcpStream>,
    _open: Option<Open>,
}

impl SimStream {
    fn new(
        ctx: &NodeCtx,
        stream: turmoil::net::TcpStream,
        open: Option<Open>,
    ) -> io::Result<SimStream> {
        let (local, peer) = (stream.local_addr()?, stream.peer_addr()?);
        Ok(SimStream {
            stream: Metered::new(ctx, stream, local, peer),
            _open: open,
        })
    }

    /// This end's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.stream.get_ref().local_addr()
    }

    /// The other end's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.stream.get_ref().peer_addr()
    }

    /// The two halves, the writer still counted, and the mark (keep it as long as both
    /// halves).
    pub fn into_split(self) -> (ReadHalf, WriteHalf, Option<Open>) {
        let (rd, wr) = self.stream.into_split();
        (rd, wr, self._open)
    }
}

/// The read half of a split [`SimStream`].
pub(crate) type ReadHalf = turmoil::net::tcp::OwnedReadHalf;
/// The write half of a split [`SimStream`], still counted.
pub(crate) type WriteHalf = Metered<turmoil::net::tcp::OwnedWriteHalf>;

impl AsyncRead for SimStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for SimStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// Open a TCP connection from this node to `host:port` within `deadline` (local time).
///
/// * A connect to a host:port with no listener (a host that is down, restarting, or has
///   not bound yet) fails here too, without a SYN: refused at once, or, if the host is
///   down, refused when it restarts or timed out at the deadline (turmoil holds the SYN
///   until then).
/// * A connect over a link the nemesis has cut is refused here, as turmoil would refuse
///   it (its SYN dropped at once, the same error), without the socket turmoil would leak.
///   With `network.loss` = 0 and a latency of at least a tick, turmoil's drop has no
///   other effect, so runs are unchanged; with loss, turmoil would have drawn from its
///   RNG for the dropped SYN, so such runs differ (still deterministic).
/// * A connect still pending at the deadline is not dropped (turmoil would leak its
///   socket) but finished in the background and closed: the caller sees `Elapsed` at
///   the deadline.
pub(crate) async fn connect(
    ctx: &NodeCtx,
    host: &str,
    port: u16,
    deadline: Duration,
) -> Result<io::Result<SimStream>, Elapsed> {
    if let Some(k) = ctx.kernel() {
        if !k.is_cut(ctx.name(), host) && !k.is_listening(host, port) {
            // No listener (down, restarting, not bound yet): turmoil would refuse the SYN
            // on arrival, or hold it until a down host restarts and refuse it then, and
            // leak the socket either way. Fail the same way without the SYN.
            let restarted = async {
                while k.is_down(host) {
                    ctx.sleep(Duration::from_millis(1)).await;
                }
            };
            let out = ctx.timeout(deadline, restarted).await;
            return out.map(|()| Err(refused(host, port)));
        }
    }
    let mut attempt = Box::pin(connect_now(ctx.clone(), host.to_string(), port));
    let out = ctx.timeout(deadline, &mut attempt).await;
    if out.is_err() {
        ctx.spawn(async move {
            let _ = attempt.await;
        });
    }
    out
}

async fn connect_now(ctx: NodeCtx, host: String, port: u16) -> io::Result<SimStream> {
    if let Some(k) = ctx.kernel() {
        if k.is_cut(ctx.name(), &host) {
            return Err(refused(&host, port));
        }
    }
    let stream = turmoil::net::TcpStream::connect((host.as_str(), port)).await?;
    let open = match ctx.kernel() {
        Some(k) => Some(k.open(stream.local_addr()?, stream.peer_addr()?)),
        None => None,
    };
    SimStream::new(&ctx, stream, open)
}

/// turmoil's error for a refused connect: its message is the resolved peer address.
fn refused(host: &str, port: u16) -> io::Error {
    let addr = SocketAddr::new(turmoil::lookup(host), port);
    io::Error::new(io::ErrorKind::ConnectionRefused, addr.to_string())
}

/// A listener bound on a port of a node, marked in the run's kernel view as bound for as
/// long as it lives (a crash drops it).
pub(crate) struct SimListener {
    listener: turmoil::net::TcpListener,
    _mark: Option<Listening>,
    ctx: NodeCtx,
}

impl SimListener {
    /// The next connection, and the peer's address.
    pub(crate) async fn accept(&self) -> io::Result<(SimStream, SocketAddr)> {
        let (stream, peer) = self.listener.accept().await?;
        Ok((SimStream::new(&self.ctx, stream, None)?, peer))
    }
}

/// Bind a listener on `port` of this node.
pub(crate) async fn listen(ctx: &NodeCtx, port: u16) -> io::Result<SimListener> {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port)).await?;
    Ok(SimListener {
        listener,
        _mark: ctx.kernel().map(|k| k.listen(ctx.name(), port)),
        ctx: ctx.clone(),
    })
}

/// The keepalive state of one accepted connection.
pub(crate) struct Keepalive {
    /// Peer host name.
    peer: String,
    /// The connection as the peer (its connecting end) sees it: (peer, us).
    key: (SocketAddr, SocketAddr),
}

impl Keepalive {
    /// Keepalive for an accepted connection with these addresses.
    pub(crate) fn new(local: SocketAddr, peer: SocketAddr) -> Keepalive {
        Keepalive {
            peer: turmoil::reverse_lookup(peer.ip()).unwrap_or_default(),
            key: (peer, local),
        }
    }

    /// Keepalive for an accepted stream.
    pub(crate) fn of(stream: &SimStream) -> io::Result<Keepalive> {
        Ok(Keepalive::new(stream.local_addr()?, stream.peer_addr()?))
    }

    /// One probe, answered as the peer's kernel would: `None` if it is lost (a link is
    /// cut either way), else whether the peer still has its socket (ACK) or not (RST).
    fn probe(&self, ctx: &NodeCtx) -> Option<bool> {
        let Some(k) = ctx.kernel() else {
            return Some(true);
        };
        if k.is_cut(ctx.name(), &self.peer) || k.is_cut(&self.peer, ctx.name()) {
            return None;
        }
        Some(k.is_open(self.key.0, self.key.1))
    }
}

/// Read from an accepted connection, with keepalive as Linux does it: after
/// [`KEEPALIVE_IDLE`] without data, probe the peer every [`KEEPALIVE_INTERVAL`]. An
/// answered probe restarts the idle wait; a reset (the peer's socket is gone) fails the
/// read with `ConnectionReset`; [`KEEPALIVE_PROBES`] unanswered probes fail it with
/// `TimedOut` an interval after the last. The caller then drops the connection, as on
/// any read error.
pub(crate) async fn read_alive<R: AsyncRead + Unpin>(
    ctx: &NodeCtx,
    ka: &Keepalive,
    rd: &mut R,
    buf: &mut [u8],
) -> io::Result<usize> {
    let mut wait = KEEPALIVE_IDLE;
    let mut missed = 0;
    loop {
        if let Ok(r) = ctx.timeout(wait, rd.read(buf)).await {
            return r;
        }
        if missed == KEEPALIVE_PROBES {
            return Err(io::ErrorKind::TimedOut.into());
        }
        match ka.probe(ctx) {
            Some(true) => {
                wait = KEEPALIVE_IDLE;
                missed = 0;
            }
            Some(false) => return Err(io::ErrorKind::ConnectionReset.into()),
            None => {
                missed += 1;
                wait = KEEPALIVE_INTERVAL;
            }
        }
    }
}
