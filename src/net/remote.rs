//! A server address with a lazily (re)established connection and a per-request deadline
//! measured on the calling node's local monotonic clock.

use super::conn::{Conn, Decoder};
use super::connector::{Connector, SimTcp};
use crate::sim::NodeCtx;
use std::time::Duration;

/// Why a request to a [`Remote`] did not get a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No reply before the deadline: the request may or may not have been served.
    Timeout,
    /// Could not connect, or the server refused the request before running it: it did
    /// not run.
    Connect(String),
    /// The connection broke after sending: the request may or may not have been served.
    Io(String),
}

impl CallError {
    /// Whether the request may have taken effect (so the outcome is indeterminate).
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

/// A server at `host:port`: connects on first use, reconnects after a failure.
pub struct Remote<D: Decoder, C: Connector = SimTcp> {
    host: String,
    port: u16,
    timeout: Duration,
    decoder: D,
    connector: C,
    conn: Option<Conn<C::Stream, D>>,
}

impl<D: Decoder + Clone> Remote<D, SimTcp> {
    /// A remote over simulated TCP whose requests time out after `timeout` of local time.
    pub fn new(host: &str, port: u16, timeout: Duration, decoder: D) -> Remote<D, SimTcp> {
        Remote::with_connector(host, port, timeout, decoder, SimTcp)
    }
}

impl<D: Decoder + Clone, C: Connector> Remote<D, C> {
    /// A remote reached through `connector`.
    pub fn with_connector(
        host: &str,
        port: u16,
        timeout: Duration,
        decoder: D,
        connector: C,
    ) -> Remote<D, C> {
        Remote {
            host: host.to_string(),
            port,
            timeout,
            decoder,
            connector,
            conn: None,
        }
    }

    /// The host name.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The per-request deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Send an encoded request and await the reply within the deadline (connecting
    /// first if needed). After a timeout or a broken connection the connection is
    /// dropped, so a late reply is never read as the answer to the next request.
    pub async fn request(&mut self, ctx: &NodeCtx, request: &[u8]) -> Result<D::Item, CallError> {
        if self.conn.is_none() {
            let connect = self
                .connector
                .connect(ctx, &self.host, self.port, self.timeout);
            match connect.await {
                Ok(Ok(s)) => self.conn = Some(Conn::new(s, self.decoder.clone())),
                Ok(Err(e)) => return Err(CallError::Connect(e.to_string())),
                Err(_) => return Err(CallError::Connect("timeout".into())),
            }
        }
        let conn = self.conn.as_mut().expect("connected above");
        let result = ctx.timeout(self.timeout, conn.call(request)).await;
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
