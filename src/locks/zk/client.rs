//! The client: a ZooKeeper handle (`ClientCnxn`'s send thread) under Curator's framework
//! (its connection-state manager, retry loop and background operations).
//!
//! # The ZooKeeper handle (apache/zookeeper `ClientCnxn`, read at 53a78e36f)
//!
//! * The server list is shuffled once (`StaticHostProvider`) and tried in turn; every
//!   reconnect but the first waits a random delay first (`startConnect` sleeps up to
//!   1000 ms; here up to a twentieth of the session timeout, the same proportion for
//!   the scaled-down timeouts).
//! * A connection attempt has `connectTimeout = sessionTimeout / servers`. The handshake
//!   carries the session id (0 for a new one) and the last zxid the client has seen.
//! * Once connected, `readTimeout = 2/3 × negotiated timeout`: with no byte received
//!   for that long the connection is declared lost ("Client session timed out, have not
//!   heard from server"); this is checked *before* reading what arrived, so after a
//!   process pause longer than that a reply sitting in the socket is dropped with the
//!   connection. A ping goes out when nothing was sent for `readTimeout / 2` (a third of
//!   the timeout). (ZooKeeper subtracts another second when idle for more than one; not
//!   at these scales.)
//! * A lost connection fails every outstanding request with `ConnectionLoss` and tells
//!   every watcher `Disconnected`; watches survive and are re-registered on the next
//!   connection with `SetWatches`. The client learns that its session expired only when
//!   a server says so at the next handshake (ZooKeeper 3.9's client-side expiry,
//!   ZOOKEEPER-4508, is left out: Curator's LOST timer below does that job).
//!
//! # Curator (apache/curator, read at 88dee99a)
//!
//! * Connection states (`ConnectionStateManager`): CONNECTED at the first connection,
//!   SUSPENDED when the connection is lost, RECONNECTED when a connection (same session,
//!   or a new one after LOST) is back, LOST when the server reports the session expired
//!   *or* when a whole session timeout has passed since SUSPENDED (Curator ≥ 3,
//!   `sessionExpirationPercent = 100`: `checkSessionExpiration` then injects an
//!   expiration). Curator measures that with `System.currentTimeMillis()`, so this does
//!   too: the client's *wall* clock.
//! * After LOST the handle is replaced by a new one with a new session (`ConnectionState
//!   .reset()`); an operation that started on the old one may carry on on the new one.
//! * `RetryLoop.callWithRetry` with `ExponentialBackoffRetry`: an operation first waits
//!   up to `connectionTimeoutMs` for a connection, and is retried after
//!   `ConnectionLoss`, `SessionExpired`, `SessionMoved` (and `OperationTimeout`, which
//!   this model never produces) while retries remain, sleeping
//!   `base × max(1, random(0 .. 2^(n+1)))` before retry n.
//! * Background operations (`FailedDeleteManager`, `FindAndDeleteProtectedNodeInBackground`)
//!   run until they succeed.
//!
//! # History
//!
//! The client records its Curator state changes as point events `connection` with the
//! state as value (CONNECTED, SUSPENDED, RECONNECTED, LOST) and why, so a replay shows
//! what the holder knew.

use super::params::ZkParams;
use super::proto::{
    decode_reply, encode_request, ClientFrame, OpCode, Request, Response, ServerFrame, CLIENT_PORT,
    PASSWD_LEN, PING_XID, SET_WATCHES_XID,
};
use super::tree::{CreateMode, SessionId, ZkError, Zxid};
use super::watches::{add, Watches};
use crate::history::{names, EventType};
use crate::net::{Conn, Connector, Frames, NetStream, Tcp};
use crate::sim::{FaultPoint, NodeCtx};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::{oneshot, Notify};

mod states;
pub use states::{CuratorState, Disconnect, StateReason};

/// A watcher: woken by its watches and by connection-state changes.
pub type Watcher = Rc<Notify>;

type Done = oneshot::Sender<Result<Response, ZkError>>;

struct Outgoing {
    xid: i32,
    req: Request,
    watcher: Option<Watcher>,
    done: Done,
}

/// A Curator background operation, retried until it succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Background {
    /// A guaranteed delete (`FailedDeleteManager`).
    Delete(String),
    /// Delete whatever child of `parent` starts with `prefix` (a protected create's
    /// node whose outcome is unknown).
    FindAndDelete { parent: String, prefix: String },
}

/// The holder's belief in its grant (for `on_suspended = "stop"`).
struct Belief {
    until: Rc<Cell<i64>>,
    lost: bool,
}

struct State {
    /// Which ZooKeeper handle (Curator replaces it after LOST).
    instance: u64,
    session: SessionId,
    /// The session's password (zeros before the first session).
    passwd: Vec<u8>,
    timeout_ms: u64,
    last_zxid: Zxid,
    connected: bool,
    next_xid: i32,
    outgoing: VecDeque<Outgoing>,
    sent: BTreeMap<i32, (Request, Option<Watcher>, Done)>,
    watches: Watches,
    last_recv_ns: i64,
    curator: CuratorState,
    suspended_at_wall_ms: i64,
    belief: Option<Belief>,
    background: Vec<Background>,
}

struct Inner {
    params: ZkParams,
    servers: Vec<String>,
    state: RefCell<State>,
    /// Wakes the send thread (requests queued).
    kick: Notify,
    /// Any change of connection or belief: waiters re-check.
    changed: Notify,
    started: Cell<bool>,
}

/// A Curator framework over one ZooKeeper handle at a time. Cheap to clone.
#[derive(Clone)]
pub struct ZkClient(Rc<Inner>);

impl ZkClient {
    /// A client for the servers `zk-0 .. zk-{servers-1}` (not connected until
    /// [`ZkClient::start`]).
    pub fn new(params: ZkParams) -> ZkClient {
        let servers = (0..params.servers).map(|i| format!("zk-{i}")).collect();
        let timeout_ms = params.session_timeout_ms;
        ZkClient(Rc::new(Inner {
            params,
            servers,
            state: RefCell::new(State {
                instance: 0,
                session: 0,
                passwd: vec![0; PASSWD_LEN],
                timeout_ms,
                last_zxid: 0,
                connected: false,
                next_xid: 1,
                outgoing: VecDeque::new(),
                sent: BTreeMap::new(),
                watches: Watches::default(),
                last_recv_ns: 0,
                curator: CuratorState::Latent,
                suspended_at_wall_ms: 0,
                belief: None,
                background: Vec::new(),
            }),
            kick: Notify::new(),
            changed: Notify::new(),
            started: Cell::new(false),
        }))
    }

    /// Start the send thread, Curator's LOST timer and the background operations (once).
    pub fn start(&self, ctx: &NodeCtx) {
        if self.0.started.replace(true) {
            return;
        }
        ctx.spawn(send_thread(self.clone(), ctx.clone()));
        ctx.spawn(lost_timer(self.clone(), ctx.clone()));
        ctx.spawn(background(self.clone(), ctx.clone()));
    }

    /// The parameters.
    pub fn params(&self) -> &ZkParams {
        &self.0.params
    }

    /// The current session (0 before the first connection).
    pub fn session(&self) -> SessionId {
        self.0.state.borrow().session
    }

    /// The current handle (bumped each time Curator replaces it).
    pub fn instance(&self) -> u64 {
        self.0.state.borrow().instance
    }

    /// Whether connected now.
    pub fn is_connected(&self) -> bool {
        self.0.state.borrow().connected
    }

    /// Curator's current connection state.
    pub fn curator_state(&self) -> CuratorState {
        self.0.state.borrow().curator
    }

    fn read_timeout_ns(s: &State) -> i64 {
        s.timeout_ms as i64 * 2 / 3 * 1_000_000
    }

    /// Wait until `ready` holds or `timeout` of local time passes; returns whether it holds.
    async fn wait_for(
        &self,
        ctx: &NodeCtx,
        timeout: Duration,
        ready: impl Fn(&State) -> bool,
    ) -> bool {
        let deadline = ctx.mono_ns() + timeout.as_nanos() as i64;
        loop {
            let changed = self.0.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if ready(&self.0.state.borrow()) {
                return true;
            }
            let left = deadline - ctx.mono_ns();
            if left <= 0 {
                return false;
            }
            tokio::select! {
                biased;
                _ = changed => {}
                _ = ctx.sleep(Duration::from_nanos(left as u64)) => {}
            }
        }
    }

    /// Curator's `blockUntilConnectedOrTimedOut`.
    pub async fn wait_connected(&self, ctx: &NodeCtx, timeout: Duration) -> bool {
        self.wait_for(ctx, timeout, |s| s.connected).await
    }

    /// One ZooKeeper call on the current connection (no retry): `ConnectionLoss` when not
    /// connected or when the connection is lost before the reply. A `watcher` is
    /// registered when the reply says so (data watch on success; an `exists` of a
    /// missing node sets an exist watch).
    pub async fn call(&self, req: Request, watcher: Option<Watcher>) -> Result<Response, ZkError> {
        let rx = {
            let mut s = self.0.state.borrow_mut();
            if !s.connected {
                return Err(ZkError::ConnectionLoss);
            }
            let xid = s.next_xid;
            // Positive, as ZooKeeper's xids (negative ones are reserved).
            s.next_xid = s.next_xid.checked_add(1).unwrap_or(1);
            let (done, rx) = oneshot::channel();
            s.outgoing.push_back(Outgoing {
                xid,
                req,
                watcher,
                done,
            });
            rx
        };
        self.0.kick.notify_one();
        match rx.await {
            Ok(Ok(Response::Err(e))) => Err(e),
            Ok(r) => r,
            Err(_) => Err(ZkError::ConnectionLoss),
        }
    }

    /// Curator's `RetryLoop.callWithRetry` around `op` (see the module docs).
    pub async fn retry<T, F, Fut>(&self, ctx: &NodeCtx, mut op: F) -> Result<T, ZkError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ZkError>>,
    {
        let p = &self.0.params;
        let mut n = 0u32;
        loop {
            let connected = self
                .wait_connected(ctx, Duration::from_millis(p.connection_timeout_ms))
                .await;
            let r = if connected {
                op().await
            } else {
                Err(ZkError::ConnectionLoss)
            };
            match r {
                Err(ZkError::ConnectionLoss | ZkError::SessionExpired | ZkError::SessionMoved)
                    if n < p.retries =>
                {
                    let bound = 1u64 << (n + 1);
                    let k = ctx.rand_range(0, bound - 1).max(1);
                    ctx.sleep(Duration::from_millis(p.retry_base_ms * k)).await;
                    n += 1;
                }
                other => return other,
            }
        }
    }

    /// `call` under the retry loop.
    pub async fn retry_call(
        &self,
        ctx: &NodeCtx,
        req: Request,
        watcher: Option<Watcher>,
    ) -> Result<Response, ZkError> {
        self.retry(ctx, || self.call(req.clone(), watcher.clone()))
            .await
    }

    /// Queue a background operation (run until it succeeds).
    fn background(&self, op: Background) {
        let mut s = self.0.state.borrow_mut();
        if !s.background.contains(&op) {
            s.background.push(op);
        }
        drop(s);
        self.0.changed.notify_waiters();
    }

    /// A guaranteed delete that failed in the foreground goes on in the background.
    pub fn delete_in_background(&self, path: &str) {
        self.background(Background::Delete(path.to_string()));
    }

    /// `FindAndDeleteProtectedNodeInBackground`: delete the child of `parent` named with
    /// `prefix`, whenever it can be found.
    pub fn find_and_delete_in_background(&self, parent: &str, prefix: &str) {
        self.background(Background::FindAndDelete {
            parent: parent.to_string(),
            prefix: prefix.to_string(),
        });
    }

    /// Believe in a grant from now on: valid while connected (until 2/3 of the session
    /// timeout after the last reply, when the connection would be declared lost), lost
    /// for good at SUSPENDED or LOST. Returns the belief's local deadline.
    pub fn hold(&self, ctx: &NodeCtx) -> Rc<Cell<i64>> {
        let mut s = self.0.state.borrow_mut();
        let now = ctx.mono_ns();
        let (until, lost) = if s.connected {
            (s.last_recv_ns + Self::read_timeout_ns(&s), false)
        } else {
            (now, true)
        };
        let cell = Rc::new(Cell::new(until));
        s.belief = Some(Belief {
            until: cell.clone(),
            lost,
        });
        cell
    }

    /// Stop believing (the grant was released).
    pub fn unhold(&self) {
        self.0.state.borrow_mut().belief = None;
    }

    /// Completes when the held grant's belief is lost (SUSPENDED, LOST, or its deadline
    /// passed on the local clock).
    pub async fn belief_lost(&self, ctx: &NodeCtx) {
        loop {
            let changed = self.0.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let until = {
                let s = self.0.state.borrow();
                match &s.belief {
                    None => return,
                    Some(b) if b.lost => return,
                    Some(b) => b.until.get(),
                }
            };
            let left = until - ctx.mono_ns();
            if left <= 0 {
                return;
            }
            tokio::select! {
                biased;
                _ = changed => {}
                _ = ctx.sleep(Duration::from_nanos(left as u64)) => {}
            }
        }
    }

    fn set_curator(&self, ctx: &NodeCtx, s: &mut State, to: CuratorState, why: StateReason) {
        if s.curator == to {
            return;
        }
        tracing::debug!(
            from = s.curator.name(),
            to = to.name(),
            %why,
            "connection state"
        );
        s.curator = to;
        if to == CuratorState::Suspended {
            s.suspended_at_wall_ms = ctx.wall_ms();
        }
        if matches!(to, CuratorState::Suspended | CuratorState::Lost) {
            if let Some(b) = s.belief.as_mut() {
                if !b.lost {
                    b.lost = true;
                    b.until.set(b.until.get().min(ctx.mono_ns()));
                }
            }
        }
        ctx.record(
            ctx.event(EventType::Event, names::CONNECTION)
                .value(to.name())
                .reason(why.to_string()),
        );
    }

    /// Fail every outstanding request and tell every watcher (a lost connection, or an
    /// expired session).
    fn fail_outstanding(s: &mut State, err: ZkError) -> Vec<Watcher> {
        for o in s.outgoing.drain(..) {
            let _ = o.done.send(Err(err));
        }
        for (_, (_, _, done)) in std::mem::take(&mut s.sent) {
            let _ = done.send(Err(err));
        }
        s.watches.all()
    }

    /// The connection is lost (`ClientCnxn.cleanup` + Disconnected + SUSPENDED).
    fn disconnected(&self, ctx: &NodeCtx, why: Disconnect) {
        let watchers = {
            let mut s = self.0.state.borrow_mut();
            s.connected = false;
            let w = Self::fail_outstanding(&mut s, ZkError::ConnectionLoss);
            if matches!(
                s.curator,
                CuratorState::Connected | CuratorState::Reconnected
            ) {
                self.set_curator(ctx, &mut s, CuratorState::Suspended, StateReason::Lost(why));
            }
            w
        };
        for w in watchers {
            w.notify_one();
        }
        self.0.changed.notify_waiters();
    }

    /// The session is gone: LOST, and Curator replaces the handle (a new session at the
    /// next connection; watches are dropped with the old handle).
    fn expired(&self, ctx: &NodeCtx, why: StateReason) {
        let watchers = {
            let mut s = self.0.state.borrow_mut();
            s.connected = false;
            let w = Self::fail_outstanding(&mut s, ZkError::SessionExpired);
            s.watches = Watches::default();
            s.instance += 1;
            s.session = 0;
            s.passwd = vec![0; PASSWD_LEN];
            s.timeout_ms = self.0.params.session_timeout_ms;
            self.set_curator(ctx, &mut s, CuratorState::Lost, why);
            w
        };
        for w in watchers {
            w.notify_one();
        }
        self.0.changed.notify_waiters();
    }
}

/// The send thread: connect, handshake, then one connection at a time until it is lost.
async fn send_thread(client: ZkClient, ctx: NodeCtx) {
    let mut hosts = client.0.servers.clone();
    // StaticHostProvider shuffles the list once.
    for i in (1..hosts.len()).rev() {
        let j = ctx.rand_range(0, i as u64) as usize;
        hosts.swap(i, j);
    }
    let mut next = 0usize;
    let mut first = true;
    loop {
        if !first {
            let max = client.0.params.session_timeout_ms / 20;
            ctx.sleep(Duration::from_millis(ctx.rand_range(0, max.max(1))))
                .await;
        }
        first = false;
        let host = hosts[next % hosts.len()].clone();
        next += 1;
        let (instance, session, timeout_ms, last_zxid, passwd) = {
            let s = client.0.state.borrow();
            let passwd = s.passwd.clone();
            (s.instance, s.session, s.timeout_ms, s.last_zxid, passwd)
        };
        let connect_timeout = Duration::from_millis((timeout_ms / hosts.len() as u64).max(1));
        let hello = ClientFrame {
            xid: 0,
            req: Request::Connect {
                session,
                timeout_ms: client.0.params.session_timeout_ms,
                last_zxid,
                passwd,
            },
        };
        let start = ctx.mono_ns();
        let Ok(Ok(stream)) = Tcp.connect(&ctx, &host, CLIENT_PORT, connect_timeout).await else {
            tracing::trace!(host, "connect failed");
            continue;
        };
        let spent = Duration::from_nanos((ctx.mono_ns() - start).max(0) as u64);
        let attempt = ctx
            .timeout(connect_timeout.saturating_sub(spent), async {
                let mut conn = Conn::new(stream, Frames);
                let mut out = Vec::new();
                encode_request(&hello, &mut out);
                conn.send(&out).await.ok()?;
                let reply = conn.recv().await.ok()?;
                Some((conn, decode_reply(&reply, true, |_| None).ok()?))
            })
            .await;
        let Ok(Some((conn, reply))) = attempt else {
            tracing::trace!(host, "connect failed");
            continue;
        };
        if client.instance() != instance {
            // Curator replaced the handle meanwhile: this answer is for the old one.
            continue;
        }
        let ServerFrame::Reply { resp, .. } = reply else {
            continue;
        };
        match resp {
            Response::Connected {
                session: id,
                timeout_ms,
                passwd,
            } => {
                connected(&client, &ctx, &host, (id, passwd), timeout_ms);
                let why = run_connection(&client, &ctx, conn, instance).await;
                if client.instance() == instance {
                    client.disconnected(&ctx, why);
                }
            }
            Response::Expired => {
                client.expired(&ctx, StateReason::Expired { host, session });
            }
            _ => {}
        }
    }
}

fn connected(
    client: &ZkClient,
    ctx: &NodeCtx,
    host: &str,
    (id, passwd): (SessionId, Vec<u8>),
    timeout_ms: u64,
) {
    let watchers = {
        let mut s = client.0.state.borrow_mut();
        let new = s.session != id;
        s.session = id;
        s.passwd = passwd;
        s.timeout_ms = timeout_ms;
        s.connected = true;
        s.last_recv_ns = ctx.mono_ns();
        let to = match s.curator {
            CuratorState::Latent => CuratorState::Connected,
            CuratorState::Suspended | CuratorState::Lost => CuratorState::Reconnected,
            other => other,
        };
        let why = StateReason::Connected {
            host: host.to_string(),
            session: id,
            new_timeout_ms: new.then_some(timeout_ms),
        };
        client.set_curator(ctx, &mut s, to, why);
        s.watches.all()
    };
    for w in watchers {
        w.notify_one();
    }
    client.0.changed.notify_waiters();
}

/// The client's end of a connection.
type ServerConn = Conn<NetStream, Frames>;

async fn write_frame(conn: &mut ServerConn, f: &ClientFrame) -> std::io::Result<()> {
    let mut out = Vec::new();
    encode_request(f, &mut out);
    conn.send(&out).await
}

/// Serve one established connection until it is lost; returns why.
async fn run_connection(
    client: &ZkClient,
    ctx: &NodeCtx,
    mut conn: ServerConn,
    instance: u64,
) -> Disconnect {
    let mut last_send = ctx.mono_ns();
    // Re-register the watches the handle still has.
    let set = {
        let s = client.0.state.borrow();
        (!s.watches.is_empty()).then(|| ClientFrame {
            xid: SET_WATCHES_XID,
            req: Request::SetWatches {
                relative_zxid: s.last_zxid,
                data: s.watches.data.keys().cloned().collect(),
                exist: s.watches.exist.keys().cloned().collect(),
                child: s.watches.child.keys().cloned().collect(),
            },
        })
    };
    if let Some(f) = set {
        if write_frame(&mut conn, &f).await.is_err() {
            return Disconnect::WriteFailed;
        }
    }
    loop {
        if client.instance() != instance {
            return Disconnect::HandleReplaced;
        }
        // Send what is queued.
        loop {
            let next = client.0.state.borrow_mut().outgoing.pop_front();
            let Some(o) = next else { break };
            let f = ClientFrame {
                xid: o.xid,
                req: o.req.clone(),
            };
            if write_frame(&mut conn, &f).await.is_err() {
                let _ = o.done.send(Err(ZkError::ConnectionLoss));
                return Disconnect::WriteFailed;
            }
            last_send = ctx.mono_ns();
            let lock_create = matches!(
                o.req,
                Request::Create {
                    mode: CreateMode::EphemeralSequential,
                    ..
                }
            );
            client
                .0
                .state
                .borrow_mut()
                .sent
                .insert(o.xid, (o.req, o.watcher, o.done));
            if lock_create {
                // The lock node's create is on the wire and its reply not yet read: a
                // pause here longer than the read timeout loses the reply (row 15).
                ctx.fault_point(FaultPoint::MidAcquire).await;
            }
        }
        let (read_timeout, last_recv) = {
            let s = client.0.state.borrow();
            (ZkClient::read_timeout_ns(&s), s.last_recv_ns)
        };
        let now = ctx.mono_ns();
        if now - last_recv >= read_timeout {
            let ms = (now - last_recv) / 1_000_000;
            return Disconnect::NoReply { ms };
        }
        if now - last_send >= read_timeout / 2 {
            let ping = ClientFrame {
                xid: PING_XID,
                req: Request::Ping,
            };
            if write_frame(&mut conn, &ping).await.is_err() {
                return Disconnect::WriteFailed;
            }
            last_send = now;
            continue;
        }
        let wake = (last_recv + read_timeout).min(last_send + read_timeout / 2);
        let bytes = tokio::select! {
            biased;
            _ = ctx.sleep(Duration::from_nanos((wake - now).max(1) as u64)) => continue,
            _ = client.0.kick.notified() => continue,
            // Conn::recv is cancel-safe: turmoil's read only consumes what it returns.
            r = conn.recv() => match r {
                Ok(b) => b,
                Err(e) => return Disconnect::Closed(e.to_string()),
            },
        };
        // ClientCnxn checks the read timeout before it reads what arrived.
        let now = ctx.mono_ns();
        if now - last_recv >= read_timeout {
            let ms = (now - last_recv) / 1_000_000;
            return Disconnect::NoReply { ms };
        }
        let op_of = |xid: i32| match xid {
            SET_WATCHES_XID => Some(OpCode::SetWatches),
            _ => client.0.state.borrow().sent.get(&xid)?.0.op(),
        };
        let f = match decode_reply(&bytes, false, op_of) {
            Ok(f) => f,
            Err(e) => return Disconnect::Protocol(e.to_string()),
        };
        if client.instance() != instance {
            return Disconnect::HandleReplaced;
        }
        on_frame(client, ctx, f);
    }
}

/// A frame from the server: a reply (register its watch, answer its caller) or a watch
/// notification (wake its watchers).
fn on_frame(client: &ZkClient, ctx: &NodeCtx, f: ServerFrame) {
    let now = ctx.mono_ns();
    let mut s = client.0.state.borrow_mut();
    s.last_recv_ns = now;
    let read_timeout = ZkClient::read_timeout_ns(&s);
    if let Some(b) = s.belief.as_mut() {
        if !b.lost {
            b.until.set(now + read_timeout);
        }
    }
    match f {
        ServerFrame::Reply { xid, zxid, resp } => {
            // As ClientCnxn: a ping's reply does not move the last zxid seen.
            if xid != PING_XID {
                s.last_zxid = s.last_zxid.max(zxid);
            }
            let Some((req, watcher, done)) = s.sent.remove(&xid) else {
                return;
            };
            if let Some(w) = watcher {
                match (&req, &resp) {
                    (Request::GetData { path, .. }, Response::Data { .. })
                    | (Request::Exists { path, .. }, Response::Exists { stat: Some(_) }) => {
                        add(&mut s.watches.data, path, w)
                    }
                    (Request::Exists { path, .. }, Response::Exists { stat: None }) => {
                        add(&mut s.watches.exist, path, w)
                    }
                    (Request::GetChildren { path, .. }, Response::Children { .. }) => {
                        add(&mut s.watches.child, path, w)
                    }
                    _ => {}
                }
            }
            drop(s);
            let _ = done.send(Ok(resp));
        }
        ServerFrame::Watch(ev) => {
            // A notification carries no zxid.
            let watchers = s.watches.materialize(&ev);
            drop(s);
            tracing::trace!(?ev, "watch fired");
            for w in watchers {
                w.notify_one();
            }
        }
    }
}

/// Curator's LOST timer: a session timeout (on the wall clock) after SUSPENDED with no
/// reconnection, inject an expiration.
async fn lost_timer(client: ZkClient, ctx: NodeCtx) {
    loop {
        let changed = client.0.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let (suspended, since, timeout_ms) = {
            let s = client.0.state.borrow();
            (
                s.curator == CuratorState::Suspended,
                s.suspended_at_wall_ms,
                s.timeout_ms as i64,
            )
        };
        if !suspended {
            changed.await;
            continue;
        }
        let elapsed = ctx.wall_ms() - since;
        if elapsed >= timeout_ms {
            client.expired(
                &ctx,
                StateReason::TimedOut {
                    elapsed_ms: elapsed,
                },
            );
            continue;
        }
        tokio::select! {
            biased;
            _ = changed => {}
            _ = ctx.sleep(Duration::from_millis((timeout_ms - elapsed) as u64)) => {}
        }
    }
}

/// Run background operations whenever connected, until each succeeds.
async fn background(client: ZkClient, ctx: NodeCtx) {
    loop {
        let ready = client
            .wait_for(&ctx, Duration::from_secs(3600), |s| {
                s.connected && !s.background.is_empty()
            })
            .await;
        if !ready {
            continue;
        }
        let ops = std::mem::take(&mut client.0.state.borrow_mut().background);
        let mut failed = Vec::new();
        for op in ops {
            let done = match &op {
                Background::Delete(path) => matches!(
                    client
                        .call(
                            Request::Delete {
                                path: path.clone(),
                                version: -1
                            },
                            None
                        )
                        .await,
                    Ok(_) | Err(ZkError::NoNode)
                ),
                Background::FindAndDelete { parent, prefix } => {
                    match client
                        .call(
                            Request::GetChildren {
                                path: parent.clone(),
                                watch: false,
                                with_stat: false,
                            },
                            None,
                        )
                        .await
                    {
                        Ok(Response::Children { children, .. }) => {
                            let mut ok = true;
                            for c in children.iter().filter(|c| c.starts_with(prefix.as_str())) {
                                let path = format!("{parent}/{c}");
                                let r = client
                                    .call(Request::Delete { path, version: -1 }, None)
                                    .await;
                                ok &= matches!(r, Ok(_) | Err(ZkError::NoNode));
                            }
                            ok
                        }
                        Err(ZkError::NoNode) => true,
                        _ => false,
                    }
                }
            };
            if done {
                tracing::debug!(?op, "background operation done");
            } else {
                failed.push(op);
            }
        }
        if !failed.is_empty() {
            client.0.state.borrow_mut().background.extend(failed);
            ctx.sleep(Duration::from_millis(client.0.params.retry_base_ms))
                .await;
        }
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
