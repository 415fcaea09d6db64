//! RESP over byte streams: a client connection generic over `AsyncRead + AsyncWrite`
//! (so the same client can talk to a real `redis-server`), a reconnecting [`Remote`]
//! with per-request deadlines, and a server loop that runs a synchronous command handler.
//!
//! turmoil's TCP has no retransmission and a partition drops in-flight segments, leaving
//! a connection open but wedged: every request has a deadline, and a connection that
//! missed one is dropped (its late reply would otherwise be read as the next answer).

use super::resp::{decode, decode_command, encode_command, Value};
use crate::sim::NodeCtx;
use std::io;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// One RESP connection.
pub struct RespConn<S> {
    stream: S,
    buf: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> RespConn<S> {
    /// Wrap a connected stream.
    pub fn new(stream: S) -> RespConn<S> {
        RespConn {
            stream,
            buf: Vec::with_capacity(256),
        }
    }

    /// Send one command and read its reply.
    pub async fn call(&mut self, args: &[&[u8]]) -> io::Result<Value> {
        let mut out = Vec::with_capacity(64);
        encode_command(args, &mut out);
        self.stream.write_all(&out).await?;
        loop {
            match decode(&self.buf) {
                Ok(Some((v, n))) => {
                    self.buf.drain(..n);
                    return Ok(v);
                }
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())),
            }
            let mut chunk = [0u8; 4096];
            let n = self.stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Why a request to a [`Remote`] did not get a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No reply before the deadline: the command may or may not have run.
    Timeout,
    /// Could not connect, or the server refused the command (e.g. `READONLY`): the
    /// command did not run.
    Connect(String),
    /// The connection broke after sending: the command may or may not have run.
    Io(String),
}

impl CallError {
    /// Whether the command may have taken effect (so the outcome is indeterminate).
    pub fn maybe_applied(&self) -> bool {
        !matches!(self, CallError::Connect(_))
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Timeout => write!(f, "timeout"),
            CallError::Connect(e) => write!(f, "connect: {e}"),
            CallError::Io(e) => write!(f, "io: {e}"),
        }
    }
}

/// A server address with a lazily (re)established connection and a request deadline.
pub struct Remote {
    host: String,
    port: u16,
    timeout: Duration,
    conn: Option<RespConn<turmoil::net::TcpStream>>,
}

impl Remote {
    /// A remote at `host:port` whose requests time out after `timeout` of local time.
    pub fn new(host: &str, port: u16, timeout: Duration) -> Remote {
        Remote {
            host: host.to_string(),
            port,
            timeout,
            conn: None,
        }
    }

    /// The host name.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Send `args` and await the reply within the deadline (connecting first if needed).
    pub async fn call(&mut self, ctx: &NodeCtx, args: &[&[u8]]) -> Result<Value, CallError> {
        if self.conn.is_none() {
            let addr = (self.host.as_str(), self.port);
            match ctx
                .timeout(self.timeout, turmoil::net::TcpStream::connect(addr))
                .await
            {
                Ok(Ok(s)) => self.conn = Some(RespConn::new(s)),
                Ok(Err(e)) => return Err(CallError::Connect(e.to_string())),
                Err(_) => return Err(CallError::Connect("timeout".into())),
            }
        }
        let conn = self.conn.as_mut().expect("connected above");
        let result = ctx.timeout(self.timeout, conn.call(args)).await;
        match result {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                self.conn = None;
                Err(CallError::Io(e.to_string()))
            }
            Err(_) => {
                self.conn = None;
                Err(CallError::Timeout)
            }
        }
    }

    /// Drop the connection (the next call reconnects).
    pub fn disconnect(&mut self) {
        self.conn = None;
    }
}

/// Something that sends a command and returns its reply: a [`Remote`] or an
/// [`Endpoint`]. Lets the lock scripts' `EVALSHA`/`EVAL` dance be written once.
pub trait Call {
    /// Send `args`, await the reply within the deadline.
    fn call<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        args: &'a [&'a [u8]],
    ) -> crate::locks::LocalBoxFuture<'a, Result<Value, CallError>>;
}

impl Call for Remote {
    fn call<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        args: &'a [&'a [u8]],
    ) -> crate::locks::LocalBoxFuture<'a, Result<Value, CallError>> {
        Box::pin(Remote::call(self, ctx, args))
    }
}

/// How a client finds the server to talk to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Discovery {
    /// Always this host.
    Fixed(String, u16),
    /// The primary the sentinels name (`SENTINEL get-master-addr-by-name`), asked in
    /// turn; rediscovered after any error or a `READONLY` reply (the node was demoted).
    Sentinels(Vec<String>),
}

/// A client's connection to "the" Redis server, however it is found.
pub struct Endpoint {
    discovery: Discovery,
    timeout: Duration,
    remote: Option<Remote>,
    next_sentinel: usize,
}

impl Endpoint {
    /// An endpoint with this discovery and per-request deadline.
    pub fn new(discovery: Discovery, timeout: Duration) -> Endpoint {
        Endpoint {
            discovery,
            timeout,
            remote: None,
            next_sentinel: 0,
        }
    }

    /// A new, unconnected endpoint with the same discovery (e.g. for a renewal task).
    pub fn fresh(&self) -> Endpoint {
        Endpoint::new(self.discovery.clone(), self.timeout)
    }

    async fn discover(&mut self, ctx: &NodeCtx) -> Result<Remote, CallError> {
        let sentinels = match &self.discovery {
            Discovery::Fixed(host, port) => return Ok(Remote::new(host, *port, self.timeout)),
            Discovery::Sentinels(s) => s.clone(),
        };
        for i in 0..sentinels.len() {
            let s = &sentinels[(self.next_sentinel + i) % sentinels.len()];
            let mut link = Remote::new(s, super::SENTINEL_PORT, self.timeout);
            let args: [&[u8]; 3] = [
                b"SENTINEL",
                b"get-master-addr-by-name",
                super::sentinel::MASTER_NAME.as_bytes(),
            ];
            if let Ok(Value::Array(Some(v))) = link.call(ctx, &args).await {
                if let Some(host) = v.first().and_then(Value::as_bulk) {
                    self.next_sentinel = (self.next_sentinel + i) % sentinels.len();
                    let host = String::from_utf8_lossy(host).into_owned();
                    return Ok(Remote::new(&host, super::REDIS_PORT, self.timeout));
                }
            }
        }
        self.next_sentinel += 1;
        Err(CallError::Connect("no sentinel answered".into()))
    }

    /// Send `args` to the current server, discovering it first if needed.
    pub async fn call(&mut self, ctx: &NodeCtx, args: &[&[u8]]) -> Result<Value, CallError> {
        if self.remote.is_none() {
            self.remote = Some(self.discover(ctx).await?);
        }
        let remote = self.remote.as_mut().expect("discovered above");
        let result = remote.call(ctx, args).await;
        let rediscover = matches!(self.discovery, Discovery::Sentinels(_));
        match result {
            Ok(Value::Error(e)) if e.starts_with("READONLY") => {
                // Talking to a demoted primary: ask the sentinels again.
                self.remote = None;
                Err(CallError::Connect(e))
            }
            Err(e) => {
                if rediscover {
                    self.remote = None;
                }
                Err(e)
            }
            ok => ok,
        }
    }
}

impl Call for Endpoint {
    fn call<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        args: &'a [&'a [u8]],
    ) -> crate::locks::LocalBoxFuture<'a, Result<Value, CallError>> {
        Box::pin(Endpoint::call(self, ctx, args))
    }
}

/// Accept connections on `port` forever; on each, decode commands and answer each with
/// `handler` (synchronous, so commands run one at a time and atomically, as in Redis).
pub async fn serve<H>(ctx: NodeCtx, port: u16, handler: H)
where
    H: Fn(&NodeCtx, Vec<Vec<u8>>) -> Value + Clone + 'static,
{
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", port))
        .await
        .expect("bind on a fresh simulated host cannot fail");
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            continue;
        };
        let (c, h) = (ctx.clone(), handler.clone());
        ctx.spawn(connection(c, stream, h));
    }
}

async fn connection<H>(ctx: NodeCtx, mut stream: turmoil::net::TcpStream, handler: H)
where
    H: Fn(&NodeCtx, Vec<Vec<u8>>) -> Value,
{
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 4096];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut out = Vec::new();
        loop {
            match decode_command(&buf) {
                Ok(Some((args, used))) => {
                    buf.drain(..used);
                    handler(&ctx, args).encode(&mut out);
                }
                Ok(None) => break,
                Err(e) => {
                    // Redis replies with the protocol error and closes the connection.
                    Value::Error(format!("ERR {e}")).encode(&mut out);
                    let _ = stream.write_all(&out).await;
                    return;
                }
            }
        }
        if !out.is_empty() && stream.write_all(&out).await.is_err() {
            return;
        }
    }
}
