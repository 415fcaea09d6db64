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
    /// Could not connect: the command did not run.
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
