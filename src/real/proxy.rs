//! The TCP proxies of a live run: one per server port, on its public port, forwarding
//! to the port the server listens on. Each accepted connection is attributed to the
//! process that opened it ([`super::owner`]), so its two directions are the directed
//! links `source → server` and `server → source` of the scenario, and every network
//! fault applies to them:
//!
//! - **A cut link holds its bytes.** The proxy stops reading the sending side (the
//!   kernel's buffers fill and the sender's writes block, as they do behind a real
//!   partition while TCP retransmits) and delivers what it holds once the link heals.
//!   A connection opened across a cut is accepted by the proxy's kernel but carries
//!   nothing, and is not forwarded to the server, until the link heals (a SYN a real
//!   partition drops is retransmitted). A close is held the same way, and so is a
//!   receiver found gone (a reset) on its way back to the sender; a reset reaches the
//!   other side as a close. Which
//!   side gives up first is the applications' business, as on a real network: their
//!   own timeouts close the connection. (In simulation, turmoil drops the segments of a
//!   cut link and its TCP never retransmits, so a connection that lost a segment carries
//!   nothing more even after the heal; clients there replace it on their deadline, as
//!   they do here.)
//! - **Latency**: each chunk read is written after a delay drawn from the scenario's
//!   `latency_ms` range, in order (a chunk never overtakes the one before it); the
//!   proxy reads on while earlier chunks wait, so delays overlap as on a wire.
//! - **Loss**: a chunk is lost with the scenario's `loss` probability, and TCP resends
//!   it: it is delayed by a further [`RETRANSMIT`] (Linux's minimum retransmission
//!   timeout), as a lost segment is.

use super::owner::owner_name;
use super::supervisor::Supervisor;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

/// How long a lost chunk waits to be resent: Linux's minimum retransmission timeout.
pub(crate) const RETRANSMIT: Duration = Duration::from_millis(200);

/// The name of a connection's source when the kernel no longer showed who opened it: its
/// links are never cut (the run says how many there were).
const UNKNOWN: &str = "?";

/// One proxy: connections to `public` go to server `node`, listening on `listen`.
#[derive(Clone)]
pub(crate) struct Route {
    /// The server node.
    pub node: String,
    /// The port everyone dials.
    pub public: u16,
    /// The port the server listens on.
    pub listen: u16,
    /// The family's rewrite of each connection's opening message, if any.
    pub opening: Option<OpeningRewrite>,
}

/// What a family's rewrite made of the bytes a connection opened with so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opening {
    /// Not a whole opening message yet: read more.
    More,
    /// Forward `bytes` in place of the first `used` bytes read; `source` is the node the
    /// message names as its sender, if it does (the kernel may no longer show the
    /// process of a connection its sender closed at once).
    Forward {
        /// The rewritten message.
        bytes: Vec<u8>,
        /// How many of the bytes read it replaces.
        used: usize,
        /// The sender it names.
        source: Option<String>,
    },
}

/// A family's rewrite of opening messages (see [`Opening`]); it runs on the proxies'
/// thread.
pub(crate) type OpeningRewrite = Arc<dyn Fn(&[u8]) -> Opening + Send + Sync>;

/// The longest opening message read before the bytes are passed on as they are.
const OPENING_LIMIT: usize = 4096;

/// The network every proxied link has: the scenario's `[network]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LinkShape {
    /// One-way latency range, ms.
    pub latency_ms: [u64; 2],
    /// Probability that a chunk is lost (and resent after [`RETRANSMIT`]).
    pub loss: f64,
    /// Seed of the draws.
    pub seed: u64,
}

/// What the proxies' thread and locksim's driver share.
struct Shared {
    /// Directed links cut (the run's fault applier counts the partitions cutting each).
    cuts: Mutex<BTreeSet<(String, String)>>,
    /// Bumped at every change of `cuts`: held links wait on it.
    changed: watch::Sender<u64>,
    /// Connections forwarded so far, by directed link (source → server).
    connections: Mutex<BTreeMap<(String, String), u64>>,
    supervisor: Supervisor,
    shape: LinkShape,
    rng: Mutex<rand::rngs::StdRng>,
}

impl Shared {
    fn is_cut(&self, from: &str, to: &str) -> bool {
        let cuts = self.cuts.lock().unwrap_or_else(|e| e.into_inner());
        cuts.contains(&(from.to_string(), to.to_string()))
    }

    /// Wait until the link `from → to` is not cut.
    async fn open(&self, from: &str, to: &str) {
        let mut rx = self.changed.subscribe();
        while self.is_cut(from, to) {
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// The delay of the next chunk: latency, plus a resend if it is lost.
    fn delay(&self) -> Duration {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        let [lo, hi] = self.shape.latency_ms;
        let mut d = Duration::from_millis(rng.gen_range(lo..=hi.max(lo)));
        if self.shape.loss > 0.0 && rng.gen_bool(self.shape.loss.min(1.0)) {
            d += RETRANSMIT;
        }
        d
    }
}

/// The proxies of a run, on their own thread (a server's readiness check and the
/// driver's waits block; the proxies must keep forwarding meanwhile). Dropping it stops
/// them and closes every proxied connection.
pub(crate) struct Proxies {
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proxies {
    /// Listen on every route's public port (now, so that the ports are held) and start
    /// forwarding. `supervisor` names the processes that open connections.
    pub(crate) fn start(
        routes: &[Route],
        shape: LinkShape,
        supervisor: Supervisor,
    ) -> io::Result<Self> {
        let mut listeners = Vec::new();
        for r in routes {
            let l = std::net::TcpListener::bind(("127.0.0.1", r.public))?;
            l.set_nonblocking(true)?;
            listeners.push((l, r.clone()));
        }
        let shared = Arc::new(Shared {
            cuts: Mutex::default(),
            changed: watch::channel(0).0,
            connections: Mutex::default(),
            supervisor,
            shape,
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(shape.seed)),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("locksim-proxies".into())
            .spawn(move || {
                runtime.block_on(async move {
                    for (l, route) in listeners {
                        match tokio::net::TcpListener::from_std(l) {
                            Ok(l) => drop(tokio::spawn(serve(l, route, s.clone()))),
                            Err(e) => tracing::error!("proxy for {}: {e}", route.node),
                        }
                    }
                    let _ = stopped.await;
                });
            })?;
        Ok(Proxies {
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Cut (`true`) or restore the directed link `from → to`. Overlapping partitions are
    /// the caller's to count (a run's fault applier restores a link once no partition
    /// cuts it).
    pub(crate) fn set_cut(&self, from: &str, to: &str, cut: bool) {
        {
            let mut cuts = self.shared.cuts.lock().unwrap_or_else(|e| e.into_inner());
            let key = (from.to_string(), to.to_string());
            if cut {
                cuts.insert(key);
            } else {
                cuts.remove(&key);
            }
        }
        self.shared.changed.send_modify(|v| *v += 1);
    }

    /// Connections forwarded so far, by directed link (source → server); a source the
    /// kernel no longer showed is `?`.
    pub(crate) fn connections(&self) -> BTreeMap<(String, String), u64> {
        let c = self.shared.connections.lock();
        c.unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Proxies {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Accept connections for `route` until the runtime stops.
async fn serve(listener: tokio::net::TcpListener, route: Route, shared: Arc<Shared>) {
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                tokio::spawn(forward(stream, peer.port(), route.clone(), shared.clone()));
            }
            Err(e) => {
                tracing::warn!("proxy for {}: accept: {e}", route.node);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Who opened the connection from `peer_port`: asked of the kernel a few times (the
/// socket may not be listed yet), else [`UNKNOWN`].
async fn source_of(peer_port: u16, public: u16, shared: &Shared) -> String {
    for _ in 0..3 {
        let processes = shared.supervisor.processes();
        let found = tokio::task::spawn_blocking(move || owner_name(peer_port, public, &processes))
            .await
            .ok()
            .flatten();
        if let Some(name) = found {
            return name;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    tracing::warn!("proxy :{public}: no process owns the connection from :{peer_port}");
    UNKNOWN.to_string()
}

/// Read `inbound`'s opening message and rewrite it: the bytes to send first, and the
/// sender it names. A message longer than [`OPENING_LIMIT`], or cut short, passes as
/// read.
async fn read_opening(
    inbound: &mut TcpStream,
    rewrite: &OpeningRewrite,
) -> (Vec<u8>, Option<String>) {
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match rewrite(&head) {
            Opening::More if head.len() < OPENING_LIMIT => {}
            Opening::More => return (head, None),
            Opening::Forward {
                mut bytes,
                used,
                source,
            } => {
                bytes.extend_from_slice(&head[used.min(head.len())..]);
                return (bytes, source);
            }
        }
        match inbound.read(&mut chunk).await {
            Ok(0) | Err(_) => return (head, None),
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Forward one accepted connection to its server, both directions under their links.
async fn forward(mut inbound: TcpStream, peer_port: u16, route: Route, shared: Arc<Shared>) {
    let (head, named) = match &route.opening {
        Some(rewrite) => read_opening(&mut inbound, rewrite).await,
        None => (Vec::new(), None),
    };
    let mut source = source_of(peer_port, route.public, &shared).await;
    if let (UNKNOWN, Some(named)) = (source.as_str(), named) {
        source = named;
    }
    let to = route.node.clone();
    if source != UNKNOWN {
        // A connection opened across a cut waits, as a dropped SYN is resent.
        shared.open(&source, &to).await;
    }
    let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", route.listen)).await else {
        // The server is down: the source sees its connection reset, as a refused
        // connect would.
        #[allow(deprecated)] // A reset on drop is the point; the socket is nonblocking.
        let _ = inbound.set_linger(Some(Duration::ZERO));
        return;
    };
    if !head.is_empty() && outbound.write_all(&head).await.is_err() {
        return;
    }
    let _ = (inbound.set_nodelay(true), outbound.set_nodelay(true));
    *shared
        .connections
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry((source.clone(), to.clone()))
        .or_insert(0) += 1;
    let (in_read, in_write) = inbound.into_split();
    let (out_read, out_write) = outbound.into_split();
    let there = pump(in_read, out_write, &source, &to, &shared);
    let back = pump(out_read, in_write, &to, &source, &shared);
    tokio::pin!(there, back);
    let (first, there_first) = tokio::select! {
        e = &mut there => (e, true),
        e = &mut back => (e, false),
    };
    if first == Ended::Clean {
        // A half-close: the other direction goes on until it ends too.
        let rest = if there_first { back.await } else { there.await };
        settle(rest, !there_first, &source, &to, &shared).await;
    } else {
        settle(first, there_first, &source, &to, &shared).await;
    }
}

/// How one direction of a proxied connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// The sender closed; the close was passed on (after its delay, over an open link).
    Clean,
    /// Reading the sender failed (a reset): passed on, as a close, when it was due.
    ReadFailed,
    /// Writing to the receiver failed: the receiver is gone.
    WriteFailed,
}

/// Before both sockets are dropped (closing both ends): a receiver found gone
/// (`WriteFailed`) is news for the sender, which travels back over the reverse link; so
/// it waits for that link to be open, as a reset behind a one-way cut would.
async fn settle(end: Ended, there: bool, source: &str, to: &str, shared: &Shared) {
    if end != Ended::WriteFailed || source == UNKNOWN {
        return;
    }
    if there {
        shared.open(to, source).await;
    } else {
        shared.open(source, to).await;
    }
}

/// What a direction's reader hands its writer.
enum Chunk {
    Bytes(Vec<u8>),
    End(Ended),
}

/// How many chunks a direction holds in flight (read, not yet written): with 64 KiB
/// reads, at most 1 MiB per direction.
const IN_FLIGHT: usize = 16;

/// Copy `from`'s bytes to `to` in order, each chunk written at its due time (read time +
/// its delay, never before the one ahead of it) and only while the link `src → dst` is
/// not cut. The reader runs ahead of the writer, so delays overlap as on a wire instead
/// of adding up; while the link is cut, the reader stops.
async fn pump(
    from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    src: &str,
    dst: &str,
    shared: &Shared,
) -> Ended {
    let cuttable = src != UNKNOWN && dst != UNKNOWN;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(Instant, Chunk)>(IN_FLIGHT);
    let reader = read_chunks(from, src, dst, cuttable, shared, tx);
    let writer = async {
        while let Some((due, chunk)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if cuttable {
                // Cut while in flight: held until the heal.
                shared.open(src, dst).await;
            }
            match chunk {
                Chunk::Bytes(b) => {
                    if to.write_all(&b).await.is_err() {
                        return Ended::WriteFailed;
                    }
                }
                Chunk::End(Ended::Clean) => {
                    let _ = to.shutdown().await;
                    return Ended::Clean;
                }
                Chunk::End(end) => return end,
            }
        }
        Ended::ReadFailed
    };
    // The writer ends the direction; the reader never does by itself.
    tokio::select! {
        end = writer => end,
        never = reader => match never {},
    }
}

/// Read `from` into stamped chunks for the writer until EOF or an error, not reading
/// while `src → dst` is cut.
async fn read_chunks(
    mut from: tokio::net::tcp::OwnedReadHalf,
    src: &str,
    dst: &str,
    cuttable: bool,
    shared: &Shared,
    tx: tokio::sync::mpsc::Sender<(Instant, Chunk)>,
) -> std::convert::Infallible {
    let mut buf = vec![0u8; 64 * 1024];
    let mut last_due = Instant::now();
    loop {
        if cuttable {
            shared.open(src, dst).await;
        }
        let read = from.read(&mut buf).await;
        let due = (Instant::now() + shared.delay()).max(last_due);
        last_due = due;
        let chunk = match read {
            Ok(0) => Chunk::End(Ended::Clean),
            Ok(n) => Chunk::Bytes(buf[..n].to_vec()),
            Err(_) => Chunk::End(Ended::ReadFailed),
        };
        let last = matches!(chunk, Chunk::End(_));
        if tx.send((due, chunk)).await.is_err() || last {
            // The writer has ended, or nothing follows the end: wait to be dropped.
            return std::future::pending::<std::convert::Infallible>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn echo_server() -> (u16, std::thread::JoinHandle<()>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 64];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 || s.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        });
        (port, t)
    }

    /// Proxies with one route, to an echo server, and a connection through it (read
    /// timeout 300 ms).
    fn through_proxy(latency_ms: [u64; 2]) -> (Proxies, std::net::TcpStream) {
        let (listen, _echo) = echo_server();
        proxy_to(listen, latency_ms)
    }

    /// Proxies with one route to the server on `listen`, and a connection through it.
    fn proxy_to(listen: u16, latency_ms: [u64; 2]) -> (Proxies, std::net::TcpStream) {
        let public = crate::real::free_port().unwrap();
        let route = Route {
            node: "server".into(),
            public,
            listen,
            opening: None,
        };
        let shape = LinkShape {
            latency_ms,
            loss: 0.0,
            seed: 0,
        };
        let proxies = Proxies::start(&[route], shape, Supervisor::default()).unwrap();
        let s = std::net::TcpStream::connect(("127.0.0.1", public)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        (proxies, s)
    }

    #[test]
    fn forwards_holds_while_cut_and_delivers_after_the_heal() {
        let (proxies, mut s) = through_proxy([0, 0]);
        s.write_all(b"one").unwrap();
        let mut buf = [0u8; 3];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"one");
        // This test's own connections are locksim's.
        proxies.set_cut("locksim", "server", true);
        s.write_all(b"two").unwrap();
        assert!(
            s.read_exact(&mut buf).is_err(),
            "nothing crosses a cut link"
        );
        proxies.set_cut("locksim", "server", false);
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"two", "held bytes arrive after the heal");
        let seen = proxies.connections();
        assert_eq!(seen.get(&("locksim".into(), "server".into())), Some(&1));
    }

    #[test]
    fn latency_delays_every_chunk_each_way() {
        let (_proxies, mut s) = through_proxy([40, 40]);
        let started = std::time::Instant::now();
        s.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        // 40 ms there and 40 ms back.
        assert!(
            started.elapsed() >= Duration::from_millis(80),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn delays_overlap_as_on_a_wire_instead_of_adding_up() {
        let (_proxies, mut s) = through_proxy([40, 40]);
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let started = std::time::Instant::now();
        s.write_all(b"a").unwrap();
        std::thread::sleep(Duration::from_millis(5));
        s.write_all(b"b").unwrap();
        let mut buf = [0u8; 2];
        s.read_exact(&mut buf).unwrap();
        // b's 80 ms round trip began 5 ms after a's: about 85 ms, not 40 ms after a's.
        let took = started.elapsed();
        assert!(took < Duration::from_millis(120), "{took:?}");
    }

    #[test]
    fn a_close_does_not_cross_a_one_way_cut() {
        // A server that reads one chunk and closes.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let listen = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 8];
            let _ = c.read(&mut buf);
        });
        let (proxies, mut s) = proxy_to(listen, [0, 0]);
        proxies.set_cut("server", "locksim", true);
        s.write_all(b"x").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        // The server has closed; writing on finds it gone (a reset, then a failed
        // write in the proxy), but the news is held.
        for b in [b"y", b"z", b"w"] {
            let _ = s.write_all(b);
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut buf = [0u8; 1];
        let read = s.read(&mut buf);
        assert!(read.is_err(), "the close crossed the cut: {read:?}");
        proxies.set_cut("server", "locksim", false);
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(
            matches!(s.read(&mut buf), Ok(0) | Err(_)),
            "closed after the heal"
        );
    }

    #[test]
    fn a_one_way_cut_holds_only_its_direction() {
        let (proxies, mut s) = through_proxy([1, 3]);
        proxies.set_cut("server", "locksim", true);
        s.write_all(b"abc").unwrap();
        let mut buf = [0u8; 3];
        // The request reaches the server (it echoes), the reply is held.
        assert!(s.read_exact(&mut buf).is_err());
        proxies.set_cut("server", "locksim", false);
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.read_exact(&mut buf).unwrap();
        assert_eq!(&buf, b"abc");
    }
}
