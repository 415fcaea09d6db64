//! gRPC (HTTP/2) on a node's deterministic executor, for tonic's generated clients and
//! servers (etcd's v3 API in [`crate::locks::raft::etcdpb`]).
//!
//! tonic's own `transport` is not used: its server and channel spawn with `tokio::spawn`
//! and balance with randomness. Here hyper's HTTP/2 runs over our streams ([`Tcp`]:
//! turmoil's TCP in a simulation, loopback in a live run) and every task hyper and h2
//! start goes through [`NodeCtx::spawn`] ([`NodeExecutor`]): tasks run on the node's
//! `LocalSet`, freeze when the node is paused and die with it.
//!
//! * Server: [`serve_grpc`] (accept loop) / [`serve_grpc_connection`] (one connection)
//!   with a [`GrpcRouter`] of generated servers (`KvServer`, `WatchServer`, …).
//! * Client: [`GrpcChannel`], the `GrpcService` generated clients run over
//!   (`KvClient::new(channel)`), connecting lazily and again after a failure.
//!
//! tonic's server traits want `Send + Sync` impls and `Send` futures, while node state is
//! `Rc`-based: an impl holds a `Send` handle (an mpsc sender of calls with oneshot reply
//! senders) and a task the node spawns answers the calls (see this module's tests).

use super::connector::Connector;
#[cfg(test)]
use super::live::listen;
use super::live::Tcp;
use crate::sim::{LocalBoxFuture, NodeCtx};
use http::uri::{Authority, Scheme, Uri};
use hyper::body::Incoming;
use std::cell::RefCell;
use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::server::NamedService;
use tower_service::Service;

/// The error type tonic's client side expects from a channel.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// hyper's executor for a node: every task hyper and h2 start (connection drivers,
/// streams, request-body pipes) is spawned with [`NodeCtx::spawn`], never `tokio::spawn`.
#[derive(Clone)]
pub(crate) struct NodeExecutor(pub NodeCtx);

impl<F> hyper::rt::Executor<F> for NodeExecutor
where
    F: Future + 'static,
    F::Output: 'static,
{
    fn execute(&self, fut: F) {
        // Detached, as hyper expects; the task still pauses and dies with the node.
        drop(self.0.spawn(fut));
    }
}

/// A tokio stream as hyper's IO ([`hyper::rt::Read`] / [`hyper::rt::Write`]).
pub(crate) struct HyperIo<T>(pub T);

impl<T: AsyncRead + Unpin> hyper::rt::Read for HyperIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // Through a stack buffer, so no unsafe is needed for hyper's uninitialised one.
        let mut chunk = [0u8; 8192];
        let want = buf.remaining().min(chunk.len());
        let mut tbuf = tokio::io::ReadBuf::new(&mut chunk[..want]);
        match Pin::new(&mut self.0).poll_read(cx, &mut tbuf) {
            Poll::Ready(Ok(())) => {
                buf.put_slice(tbuf.filled());
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl<T: AsyncWrite + Unpin> hyper::rt::Write for HyperIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// The response every routed gRPC service gives.
pub(crate) type GrpcResponse = http::Response<tonic::body::Body>;

type Route = Rc<dyn Fn(http::Request<Incoming>) -> LocalBoxFuture<'static, GrpcResponse>>;

/// Dispatches requests by path (`/etcdserverpb.KV/Range` → the `etcdserverpb.KV`
/// service) to tonic's generated servers; any other path gets what grpc-go answers
/// (HTTP 200 with a `grpc-status`): `Unimplemented` "unknown service S" or "unknown
/// method M for service S", and `ResourceExhausted` "malformed method name" for a path
/// that is not `/service/method`.
#[derive(Clone, Default)]
pub(crate) struct GrpcRouter {
    routes: Vec<(String, Route)>,
}

impl GrpcRouter {
    /// A router with no services.
    pub(crate) fn new() -> GrpcRouter {
        GrpcRouter::default()
    }

    /// This router also serving `service` (a generated server such as
    /// `KvServer::new(impl)`) under `/<its full name>/`.
    pub(crate) fn serving<S>(mut self, service: S) -> GrpcRouter
    where
        S: Service<http::Request<Incoming>, Response = GrpcResponse, Error = Infallible>
            + NamedService
            + Clone
            + 'static,
        S::Future: 'static,
    {
        let prefix = format!("/{}/", S::NAME);
        let route: Route = Rc::new(move |req| {
            let mut svc = service.clone();
            let path = req.uri().path().to_string();
            Box::pin(async move {
                let Ok(()) = poll_fn(|cx| svc.poll_ready(cx)).await;
                let Ok(resp) = svc.call(req).await;
                unknown_method(resp, &path)
            })
        });
        self.routes.push((prefix, route));
        self
    }

    /// The names of the services routed, e.g. `etcdserverpb.KV`.
    #[cfg(test)]
    pub(crate) fn services(&self) -> Vec<&str> {
        let names = self.routes.iter().map(|(p, _)| p.trim_matches('/'));
        names.collect()
    }

    fn route(&self, path: &str) -> Option<&Route> {
        let mut hits = self
            .routes
            .iter()
            .filter(|(p, _)| path.starts_with(p.as_str()));
        hits.next().map(|(_, r)| r)
    }
}

impl Service<http::Request<Incoming>> for GrpcRouter {
    type Response = GrpcResponse;
    type Error = Infallible;
    type Future = LocalBoxFuture<'static, Result<GrpcResponse, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Incoming>) -> Self::Future {
        match self.route(req.uri().path()) {
            Some(route) => {
                let fut = route(req);
                Box::pin(async move { Ok(fut.await) })
            }
            None => {
                let resp = match method_of(req.uri().path()) {
                    Some((service, _)) => {
                        tonic::Status::unimplemented(format!("unknown service {service}"))
                    }
                    None => tonic::Status::resource_exhausted(format!(
                        "malformed method name: {:?}",
                        req.uri().path()
                    )),
                };
                Box::pin(std::future::ready(Ok(resp.into_http())))
            }
        }
    }
}

/// The service and method of a gRPC path `/service/method` (grpc-go's split: at the
/// last `/`), or `None` for a malformed one.
fn method_of(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    rest.rsplit_once('/')
}

/// tonic's generated servers answer a method they lack with a bare `Unimplemented`;
/// grpc-go says which: "unknown method M for service S".
fn unknown_method(mut resp: GrpcResponse, path: &str) -> GrpcResponse {
    let unimplemented = resp
        .headers()
        .get("grpc-status")
        .is_some_and(|v| v.as_bytes() == b"12");
    if unimplemented && !resp.headers().contains_key("grpc-message") {
        if let Some((service, method)) = method_of(path) {
            let msg = format!("unknown method {method} for service {service}");
            if let Ok(v) = http::HeaderValue::from_str(&msg) {
                resp.headers_mut().insert("grpc-message", v);
            }
        }
    }
    resp
}

/// A tower service as hyper's (which calls through `&self`): each request is served by
/// a clone, once it is ready.
#[derive(Clone)]
struct TowerToHyper<S>(S);

impl<S, B> hyper::service::Service<http::Request<Incoming>> for TowerToHyper<S>
where
    S: Service<http::Request<Incoming>, Response = http::Response<B>> + Clone + 'static,
    S::Future: 'static,
{
    type Response = http::Response<B>;
    type Error = S::Error;
    type Future = LocalBoxFuture<'static, Result<http::Response<B>, S::Error>>;

    fn call(&self, req: http::Request<Incoming>) -> Self::Future {
        let mut svc = self.0.clone();
        Box::pin(async move {
            poll_fn(|cx| svc.poll_ready(cx)).await?;
            svc.call(req).await
        })
    }
}

/// Serve gRPC on one accepted connection until it closes: HTTP/2 by hyper on the node's
/// executor, no `date` header (it would read the system clock).
pub(crate) async fn serve_grpc_connection<T, S, B>(
    ctx: NodeCtx,
    stream: T,
    service: S,
) -> hyper::Result<()>
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
    S: Service<http::Request<Incoming>, Response = http::Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + 'static,
    B::Error: Into<BoxError>,
{
    let mut builder = hyper::server::conn::http2::Builder::new(NodeExecutor(ctx));
    builder.auto_date_header(false);
    builder
        .serve_connection(HyperIo(stream), TowerToHyper(service))
        .await
}

/// Accept gRPC connections on `port` of this node (simulated, or loopback in a live run)
/// forever, each served by a task of its own.
#[cfg(test)]
pub(crate) async fn serve_grpc<S, B>(ctx: NodeCtx, port: u16, service: S) -> io::Result<()>
where
    S: Service<http::Request<Incoming>, Response = http::Response<B>> + Clone + 'static,
    S::Future: 'static,
    S::Error: Into<BoxError>,
    B: http_body::Body + 'static,
    B::Error: Into<BoxError>,
{
    let listener = listen(&ctx, port).await?;
    loop {
        let Ok(stream) = listener.accept().await else {
            continue;
        };
        let conn = serve_grpc_connection(ctx.clone(), stream, service.clone());
        drop(ctx.spawn(conn));
    }
}

/// How long a [`GrpcChannel`] waits, on the node's local clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadlines {
    /// To open a connection (TCP and the HTTP/2 handshake).
    pub connect: Duration,
    /// From sending a request to the response's headers (a unary reply comes with them).
    pub call: Duration,
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines {
            connect: Duration::from_secs(1),
            call: Duration::from_secs(1),
        }
    }
}

/// An open HTTP/2 connection: its request sender and the task driving it.
struct Open {
    sender: hyper::client::conn::http2::SendRequest<tonic::body::Body>,
    driver: tokio::task::JoinHandle<()>,
}

struct ChannelState {
    ctx: NodeCtx,
    host: String,
    port: u16,
    deadlines: Deadlines,
    /// Held across a connect, so concurrent calls share one connection.
    conn: tokio::sync::Mutex<Option<Open>>,
    connects: RefCell<u64>,
}

/// A gRPC channel to `host:port` for tonic's generated clients
/// (`KvClient::new(channel)`): one HTTP/2 connection, opened on first use and again after
/// it fails or a call misses its deadline (turmoil's TCP does not retransmit, so a
/// connection that lost a segment stays wedged). Cheap to clone; clones share the
/// connection.
#[derive(Clone)]
pub struct GrpcChannel {
    state: Rc<ChannelState>,
}

impl GrpcChannel {
    /// A channel from the node of `ctx` to `host:port`, with default [`Deadlines`].
    pub fn new(ctx: NodeCtx, host: &str, port: u16) -> GrpcChannel {
        GrpcChannel::with_deadlines(ctx, host, port, Deadlines::default())
    }

    /// A channel with explicit deadlines.
    pub fn with_deadlines(
        ctx: NodeCtx,
        host: &str,
        port: u16,
        deadlines: Deadlines,
    ) -> GrpcChannel {
        let state = ChannelState {
            ctx,
            host: host.to_string(),
            port,
            deadlines,
            conn: tokio::sync::Mutex::new(None),
            connects: RefCell::new(0),
        };
        GrpcChannel {
            state: Rc::new(state),
        }
    }

    /// Connections opened so far (reconnects included).
    pub fn connects(&self) -> u64 {
        *self.state.connects.borrow()
    }

    /// Drop the connection (a caller's own deadline passed): the next call reconnects.
    pub async fn reset(&self) {
        if let Some(open) = self.state.conn.lock().await.take() {
            open.driver.abort();
        }
    }

    /// A ready sender on the current connection, connecting first if there is none or it
    /// has failed.
    async fn sender(
        &self,
    ) -> Result<hyper::client::conn::http2::SendRequest<tonic::body::Body>, BoxError> {
        let mut conn = self.state.conn.lock().await;
        if let Some(open) = conn.as_mut() {
            if open.sender.ready().await.is_ok() {
                return Ok(open.sender.clone());
            }
            open.driver.abort();
            *conn = None;
        }
        let mut open = self.connect().await?;
        open.sender.ready().await?;
        let sender = open.sender.clone();
        *conn = Some(open);
        Ok(sender)
    }

    async fn connect(&self) -> Result<Open, BoxError> {
        let s = &self.state;
        *s.connects.borrow_mut() += 1;
        let deadline = s.deadlines.connect;
        let stream = Tcp
            .connect(&s.ctx, &s.host, s.port, deadline)
            .await
            .map_err(|_| timed_out("connect"))??;
        let exec = NodeExecutor(s.ctx.clone());
        // h2 remembers a stream it reset for `reset_stream_duration` of *real* time (std
        // `Instant`), ignoring that stream's late frames meanwhile and answering them
        // after it: a frame more or less would then depend on how fast the machine runs.
        // An hour outlives any run, so only the count limit (10) decides, as it does
        // whenever a run is fast.
        let handshake = hyper::client::conn::http2::Builder::new(exec)
            .reset_stream_duration(Duration::from_secs(3600))
            .handshake(HyperIo(stream));
        let (sender, conn) = s
            .ctx
            .timeout(deadline, handshake)
            .await
            .map_err(|_| timed_out("HTTP/2 handshake"))??;
        let driver = s.ctx.spawn(async move {
            let _ = conn.await;
        });
        Ok(Open { sender, driver })
    }

    /// `req` with an absolute URI (`http://host:port/path`), as HTTP/2 needs.
    fn absolute(
        &self,
        mut req: http::Request<tonic::body::Body>,
    ) -> Result<http::Request<tonic::body::Body>, BoxError> {
        let authority: Authority = format!("{}:{}", self.state.host, self.state.port).parse()?;
        let mut parts = req.uri().clone().into_parts();
        parts.scheme = Some(Scheme::HTTP);
        parts.authority = Some(authority);
        *req.uri_mut() = Uri::from_parts(parts)?;
        Ok(req)
    }

    async fn send(
        &self,
        req: http::Request<tonic::body::Body>,
    ) -> Result<http::Response<Incoming>, BoxError> {
        let req = self.absolute(req)?;
        let mut sender = self
            .sender()
            .await
            .map_err(|e| ChannelError::unsent(format!("connect: {e}")))?;
        let call = self.state.deadlines.call;
        match self.state.ctx.timeout(call, sender.send_request(req)).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => {
                self.reset().await;
                Err(Box::new(ChannelError::lost(e)))
            }
            Err(_) => {
                self.reset().await;
                Err(Box::new(ChannelError::lost("call: deadline passed")))
            }
        }
    }
}

/// Why a [`GrpcChannel`] call got no response, and whether its request may have reached
/// the server (a caller must not assume a write that may have arrived did not happen).
/// tonic hands it on as the source of the call's `Status`:
/// `status.source().and_then(|e| e.downcast_ref::<ChannelError>())`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelError {
    sent: bool,
    what: String,
}

impl ChannelError {
    /// Nothing was sent: the connection could not be opened.
    pub(crate) fn unsent(what: impl std::fmt::Display) -> ChannelError {
        ChannelError {
            sent: false,
            what: what.to_string(),
        }
    }

    /// The request may have reached the server: the connection failed or the deadline
    /// passed after it was sent.
    pub(crate) fn lost(what: impl std::fmt::Display) -> ChannelError {
        ChannelError {
            sent: true,
            what: what.to_string(),
        }
    }

    /// Whether the request may have reached the server (`false`: the connection could
    /// not be opened, so nothing was sent).
    pub fn sent(&self) -> bool {
        self.sent
    }
}

impl std::fmt::Display for ChannelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

impl std::error::Error for ChannelError {}

fn timed_out(what: &str) -> BoxError {
    Box::new(io::Error::new(
        io::ErrorKind::TimedOut,
        format!("{what}: deadline passed"),
    ))
}

impl Service<http::Request<tonic::body::Body>> for GrpcChannel {
    type Response = http::Response<Incoming>;
    type Error = BoxError;
    type Future = LocalBoxFuture<'static, Result<http::Response<Incoming>, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Connecting is part of the call, under its deadline.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { this.send(req).await })
    }
}

#[cfg(test)]
#[path = "grpc_tests.rs"]
mod tests;
