//! How a Redis client reaches "the" server: a fixed node, or the primary the sentinels
//! name. Requests go over the shared transport ([`crate::net::Remote`]) with RESP as
//! its decoder; [`Call`] lets the lock scripts' `EVALSHA`/`EVAL` dance be written once
//! for both.

use super::resp::{encode_command, Replies, Value};
use crate::net::{CallError, Remote, Tcp};
use crate::sim::{LocalBoxFuture, NodeCtx};
use std::time::Duration;

/// A connection to one Redis (or Sentinel) node.
pub(crate) type RedisRemote = Remote<Replies, Tcp>;

/// A reconnecting connection to `host:port` speaking RESP.
pub(crate) fn redis_remote(host: &str, port: u16, timeout: Duration) -> RedisRemote {
    Remote::with_connector(host, port, timeout, Replies, Tcp)
}

/// Something that sends a command and returns its reply: a [`RedisRemote`] or an
/// [`Endpoint`]. Lets the lock scripts' `EVALSHA`/`EVAL` dance be written once.
pub(crate) trait Call {
    /// Send `args`, await the reply within the deadline.
    fn call<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        args: &'a [&'a [u8]],
    ) -> LocalBoxFuture<'a, Result<Value, CallError>>;
}

impl Call for RedisRemote {
    fn call<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        args: &'a [&'a [u8]],
    ) -> LocalBoxFuture<'a, Result<Value, CallError>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(64);
            encode_command(args, &mut out);
            self.request(ctx, &out).await
        })
    }
}

/// How a client finds the server to talk to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Discovery {
    /// Always this host.
    Fixed(String, u16),
    /// The primary the sentinels name (`SENTINEL get-master-addr-by-name`), asked in
    /// turn; rediscovered after any error or a `READONLY` reply (the node was demoted).
    Sentinels(Vec<String>),
}

/// A client's connection to "the" Redis server, however it is found.
pub(crate) struct Endpoint {
    discovery: Discovery,
    timeout: Duration,
    remote: Option<RedisRemote>,
    next_sentinel: usize,
}

impl Endpoint {
    /// An endpoint with this discovery and per-request deadline.
    pub(crate) fn new(discovery: Discovery, timeout: Duration) -> Endpoint {
        Endpoint {
            discovery,
            timeout,
            remote: None,
            next_sentinel: 0,
        }
    }

    /// A new, unconnected endpoint with the same discovery (e.g. for a renewal task).
    pub(crate) fn fresh(&self) -> Endpoint {
        Endpoint::new(self.discovery.clone(), self.timeout)
    }

    async fn discover(&mut self, ctx: &NodeCtx) -> Result<RedisRemote, CallError> {
        let sentinels = match &self.discovery {
            Discovery::Fixed(host, port) => return Ok(redis_remote(host, *port, self.timeout)),
            Discovery::Sentinels(s) => s.clone(),
        };
        for i in 0..sentinels.len() {
            let s = &sentinels[(self.next_sentinel + i) % sentinels.len()];
            let mut link = redis_remote(s, super::SENTINEL_PORT, self.timeout);
            let args: [&[u8]; 3] = [
                b"SENTINEL",
                b"get-master-addr-by-name",
                super::MASTER_NAME.as_bytes(),
            ];
            if let Ok(Value::Array(Some(v))) = Call::call(&mut link, ctx, &args).await {
                if let Some(host) = v.first().and_then(Value::as_bulk) {
                    self.next_sentinel = (self.next_sentinel + i) % sentinels.len();
                    let mut host = String::from_utf8_lossy(host).into_owned();
                    // Live mode: a real Sentinel answers 127.0.0.1 and the primary's
                    // port, which names the node.
                    let port = v.get(1).and_then(Value::as_bulk);
                    let port = port.and_then(|p| std::str::from_utf8(p).ok()?.parse().ok());
                    if let Some(net) = ctx.live() {
                        if let Some(node) = port.and_then(|p| net.host_of_port(p)) {
                            host = node.to_string();
                        }
                    }
                    return Ok(redis_remote(&host, super::REDIS_PORT, self.timeout));
                }
            }
        }
        self.next_sentinel += 1;
        Err(CallError::Connect("no sentinel answered".into()))
    }

    /// The server the last request went to, until a failure makes the client look again.
    pub(crate) fn server(&self) -> Option<&str> {
        self.remote.as_ref().map(RedisRemote::host)
    }

    /// Send `args` to the current server, discovering it first if needed.
    pub(crate) async fn call(&mut self, ctx: &NodeCtx, args: &[&[u8]]) -> Result<Value, CallError> {
        if self.remote.is_none() {
            self.remote = Some(self.discover(ctx).await?);
        }
        let remote = self.remote.as_mut().expect("discovered above");
        let result = Call::call(remote, ctx, args).await;
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
    ) -> LocalBoxFuture<'a, Result<Value, CallError>> {
        Box::pin(Endpoint::call(self, ctx, args))
    }
}
