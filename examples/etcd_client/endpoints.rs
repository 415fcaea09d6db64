//! The cluster as etcd-client sees it: one `etcd_client::Client` per server, each built
//! on a [`SendGrpcChannel`] with `Client::from_channel` (etcd-client's `raw-channel`
//! feature), and which one to talk to.
//!
//! etcd-client over one custom channel talks to one endpoint, so failover is ours: a
//! call goes to the preferred server; any failure moves the preference to the next one.
//! [`Endpoints::call`] retries on the next server only what cannot have taken effect (a
//! refusal before the leader took the request, a request never sent) or has no effect
//! at all (a read): a write whose answer was lost is reported, never retried, so the
//! history never hides an effect.
//!
//! Every call runs under a deadline on the node's clock ([`NodeCtx::timeout`]); one that
//! passes drops the connection (it may be wedged: a simulated link that lost a segment
//! never retransmits), and the next call opens a new one.

use locksim::plugin::*;
use std::error::Error as _;
use std::future::Future;
use std::time::Duration;

/// etcd's gRPC port, which the model's servers serve.
pub const ETCD_PORT: u16 = 2379;

/// The channels' own deadline for a call: none to speak of. Each call has its own
/// deadline instead (a `lock()` waits as long as the acquire may), enforced by
/// [`Endpoints::call`] with [`NodeCtx::timeout`].
const NO_CALL_DEADLINE: Duration = Duration::from_secs(3600);

/// Why a call got no useful answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Surely no effect: refused before the leader took it (`not leader`, `no leader`),
    /// or never sent (the connection could not be opened). Safe to send elsewhere.
    NotApplied(String),
    /// May have taken effect: sent, and no answer came (lost, deadline passed, the
    /// server's own request timeout).
    MaybeApplied(String),
    /// The server answered with an error: no effect (e.g. `requested lease not found`).
    Refused(String),
}

impl Failure {
    /// What went wrong, in words.
    pub fn reason(&self) -> &str {
        match self {
            Failure::NotApplied(r) | Failure::MaybeApplied(r) | Failure::Refused(r) => r,
        }
    }

    /// What an etcd-client error says about its request.
    ///
    /// A transport failure reaches etcd-client as a gRPC status whose source is the
    /// channel's [`ChannelError`], which knows whether the request was sent. A server's
    /// refusal is one of etcd's messages (the Lock service sends them all as `Unknown`,
    /// as etcd's lock server does, so the message decides, not the code).
    pub fn of(e: &etcd_client::Error) -> Failure {
        let etcd_client::Error::GRpcStatus(status) = e else {
            // etcd-client's own errors (a closed keepalive sender, bad arguments):
            // nothing reached the server through them.
            return Failure::NotApplied(e.to_string());
        };
        let what = format!("{}: {}", status.code(), status.message());
        let channel = status
            .source()
            .and_then(|s| s.downcast_ref::<ChannelError>());
        if let Some(c) = channel {
            return if c.sent() {
                Failure::MaybeApplied(what)
            } else {
                Failure::NotApplied(what)
            };
        }
        match status.message() {
            "etcdserver: not leader" | "etcdserver: no leader" => Failure::NotApplied(what),
            "etcdserver: request timed out" => Failure::MaybeApplied(what),
            m if m.starts_with("etcdserver:") || m.starts_with("etcdserver ") => {
                Failure::Refused(what)
            }
            // Anything else came from the connection (a reset stream, a broken body).
            _ => Failure::MaybeApplied(what),
        }
    }
}

/// What a call may be retried on: whether a failure of it is worth sending again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// A read or a renew: it changes nothing, so any failure is retried.
    Read,
    /// A write: retried only when it surely was not applied.
    Write,
}

/// One client per server, and the one to use.
pub struct Endpoints {
    clients: Vec<(etcd_client::Client, SendGrpcChannel)>,
    preferred: usize,
    request_timeout: Duration,
}

impl Endpoints {
    /// Clients of `nodes` (port 2379) from the node of `ctx`, starting with node
    /// `first` (mod their number). Connections open on first use.
    pub async fn new(
        ctx: &NodeCtx,
        nodes: &[String],
        first: usize,
        request_timeout: Duration,
    ) -> Endpoints {
        let deadlines = Deadlines {
            connect: request_timeout,
            call: NO_CALL_DEADLINE,
        };
        let mut clients = Vec::new();
        for node in nodes {
            let channel = SendGrpcChannel::new(ctx, node, ETCD_PORT, deadlines);
            let custom = tower::util::BoxCloneSyncService::new(channel.clone());
            // No authentication configured: from_channel sends nothing.
            let client =
                etcd_client::Client::from_channel(etcd_client::Channel::Custom(custom), None)
                    .await
                    .expect("etcd-client without credentials connects lazily");
            clients.push((client, channel));
        }
        Endpoints {
            preferred: first % clients.len().max(1),
            clients,
            request_timeout,
        }
    }

    /// The per-request deadline.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// The preferred server's client (a clone: etcd-client's clients are cheap handles).
    pub fn client(&self) -> etcd_client::Client {
        self.clients[self.preferred].0.clone()
    }

    /// Move on to the next server.
    pub fn next(&mut self) {
        self.preferred = (self.preferred + 1) % self.clients.len();
    }

    /// Drop the preferred server's connection (a caller's deadline passed on it).
    pub async fn reset(&self) {
        self.clients[self.preferred].1.channel().reset().await;
    }

    /// One attempt at the preferred server within `limit`; a failure moves on to the
    /// next server.
    pub async fn once<T, F, Fut>(
        &mut self,
        ctx: &NodeCtx,
        limit: Duration,
        f: F,
    ) -> Result<T, Failure>
    where
        F: FnOnce(etcd_client::Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let failure = match ctx.timeout(limit, f(self.client())).await {
            Ok(Ok(answer)) => return Ok(answer),
            Ok(Err(e)) => Failure::of(&e),
            Err(Elapsed) => {
                self.reset().await;
                Failure::MaybeApplied(format!("no answer within {limit:?}"))
            }
        };
        self.next();
        Err(failure)
    }

    /// `f` at the preferred server, then the next ones, each attempt within the
    /// request timeout, while `retry` allows it and the local clock is before
    /// `deadline_ns`. A short pause between attempts lets an election finish.
    pub async fn call<T, F, Fut>(
        &mut self,
        ctx: &NodeCtx,
        retry: Retry,
        deadline_ns: i64,
        mut f: F,
    ) -> Result<T, Failure>
    where
        F: FnMut(etcd_client::Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        loop {
            let failure = match self.once(ctx, self.request_timeout, &mut f).await {
                Ok(answer) => return Ok(answer),
                Err(failure) => failure,
            };
            let again = match &failure {
                Failure::NotApplied(_) => true,
                Failure::MaybeApplied(_) => retry == Retry::Read,
                Failure::Refused(_) => false,
            };
            if !again || ctx.mono_ns() >= deadline_ns {
                return Err(failure);
            }
            ctx.sleep(self.request_timeout / 20).await;
        }
    }
}
