//! The ZooKeeper handle (apache/zookeeper `ClientCnxn`, read at 53a78e36f): one session's
//! connection to the ensemble, its outstanding requests and its watches. What a
//! framework above it hears of its connection comes through [`HandleEvents`]
//! ([`super::curator`]).
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
//!   ZOOKEEPER-4508, is left out: Curator's LOST timer does that job).

use super::params::ZkParams;
use super::proto::{
    decode_reply, encode_request, ClientFrame, OpCode, Request, Response, ServerFrame, CLIENT_PORT,
    PASSWD_LEN, PING_XID, SET_WATCHES_XID,
};
use super::states::{Disconnect, StateReason};
use super::tree::{CreateMode, SessionId, ZkError, Zxid};
use super::watches::{add, Watcher, Watches};
use crate::net::{Conn, Connector, Frames, NetStream, Tcp};
use crate::sim::{FaultPoint, NodeCtx};
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::{oneshot, Notify};

/// What the framework above a handle hears from it, in the order it happens (Curator's
/// `ConnectionStateManager` listening to the handle's events). The handle has woken its
/// watchers and failed its outstanding requests before each call.
pub(crate) trait HandleEvents {
    /// A connection is up (`why`: the server and the session).
    fn connected(&self, ctx: &NodeCtx, why: StateReason);
    /// The connection was lost.
    fn disconnected(&self, ctx: &NodeCtx, why: Disconnect);
    /// A server answered the handshake: the session expired. The handle is of no more
    /// use until [`ZkHandle::reset`].
    fn expired(&self, ctx: &NodeCtx, why: StateReason);
    /// A frame arrived: the connection holds until local time `until` at least.
    fn heard(&self, until: i64);
}

type Done = oneshot::Sender<Result<Response, ZkError>>;

struct Outgoing {
    xid: i32,
    req: Request,
    watcher: Option<Watcher>,
    done: Done,
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
}

impl State {
    fn read_timeout_ns(&self) -> i64 {
        self.timeout_ms as i64 * 2 / 3 * 1_000_000
    }

    /// Fail every outstanding request; the watchers to tell (a lost connection, or an
    /// expired session).
    fn fail_outstanding(&mut self, err: ZkError) -> Vec<Watcher> {
        for o in self.outgoing.drain(..) {
            let _ = o.done.send(Err(err));
        }
        for (_, (_, _, done)) in std::mem::take(&mut self.sent) {
            let _ = done.send(Err(err));
        }
        self.watches.all()
    }
}

struct Inner {
    params: ZkParams,
    servers: Vec<String>,
    state: RefCell<State>,
    /// Wakes the send thread (requests queued).
    kick: Notify,
}

/// A ZooKeeper handle to the servers `zk-0 .. zk-{servers-1}`. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ZkHandle(Rc<Inner>);

impl ZkHandle {
    /// A handle, not connected until [`send_thread`] runs.
    pub(crate) fn new(params: ZkParams) -> ZkHandle {
        let servers = (0..params.servers).map(|i| format!("zk-{i}")).collect();
        let timeout_ms = params.session_timeout_ms;
        ZkHandle(Rc::new(Inner {
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
            }),
            kick: Notify::new(),
        }))
    }

    /// The parameters.
    pub(crate) fn params(&self) -> &ZkParams {
        &self.0.params
    }

    /// The current session (0 before the first connection).
    pub(crate) fn session(&self) -> SessionId {
        self.0.state.borrow().session
    }

    /// The current handle (bumped each time it is [reset](ZkHandle::reset)).
    pub(crate) fn instance(&self) -> u64 {
        self.0.state.borrow().instance
    }

    /// Whether connected now.
    pub(crate) fn is_connected(&self) -> bool {
        self.0.state.borrow().connected
    }

    /// The session's (negotiated) timeout, ms.
    pub(crate) fn timeout_ms(&self) -> u64 {
        self.0.state.borrow().timeout_ms
    }

    /// While connected, the local time the connection would be declared lost at if
    /// nothing more came (the read timeout after the last frame).
    pub(crate) fn connected_until(&self) -> Option<i64> {
        let s = self.0.state.borrow();
        s.connected.then(|| s.last_recv_ns + s.read_timeout_ns())
    }

    /// One ZooKeeper call on the current connection (no retry): `ConnectionLoss` when not
    /// connected or when the connection is lost before the reply. A `watcher` is
    /// registered when the reply says so (data watch on success; an `exists` of a
    /// missing node sets an exist watch).
    pub(crate) async fn call(
        &self,
        req: Request,
        watcher: Option<Watcher>,
    ) -> Result<Response, ZkError> {
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

    /// The session is gone: fail every outstanding request, drop the watches and start
    /// over as a new handle (a new session at the next connection). Returns the
    /// watchers to tell.
    pub(crate) fn reset(&self) -> Vec<Watcher> {
        let mut s = self.0.state.borrow_mut();
        s.connected = false;
        let w = s.fail_outstanding(ZkError::SessionExpired);
        s.watches = Watches::default();
        s.instance += 1;
        s.session = 0;
        s.passwd = vec![0; PASSWD_LEN];
        s.timeout_ms = self.0.params.session_timeout_ms;
        w
    }

    /// The connection is lost (`ClientCnxn.cleanup` + Disconnected).
    fn disconnected(&self, ctx: &NodeCtx, events: &impl HandleEvents, why: Disconnect) {
        let watchers = {
            let mut s = self.0.state.borrow_mut();
            s.connected = false;
            s.fail_outstanding(ZkError::ConnectionLoss)
        };
        for w in watchers {
            w.notify_one();
        }
        events.disconnected(ctx, why);
    }

    /// A connection to `host` is up with session `id`.
    fn connected(
        &self,
        ctx: &NodeCtx,
        events: &impl HandleEvents,
        host: &str,
        (id, passwd): (SessionId, Vec<u8>),
        timeout_ms: u64,
    ) {
        let (watchers, new) = {
            let mut s = self.0.state.borrow_mut();
            let new = s.session != id;
            s.session = id;
            s.passwd = passwd;
            s.timeout_ms = timeout_ms;
            s.connected = true;
            s.last_recv_ns = ctx.mono_ns();
            (s.watches.all(), new)
        };
        for w in watchers {
            w.notify_one();
        }
        let why = StateReason::Connected {
            host: host.to_string(),
            session: id,
            new_timeout_ms: new.then_some(timeout_ms),
        };
        events.connected(ctx, why);
    }
}

/// The send thread: connect, handshake, then one connection at a time until it is lost.
pub(crate) async fn send_thread(handle: ZkHandle, events: impl HandleEvents, ctx: NodeCtx) {
    let mut hosts = handle.0.servers.clone();
    // StaticHostProvider shuffles the list once.
    for i in (1..hosts.len()).rev() {
        let j = ctx.rand_range(0, i as u64) as usize;
        hosts.swap(i, j);
    }
    let mut next = 0usize;
    let mut first = true;
    loop {
        if !first {
            let max = handle.0.params.session_timeout_ms / 20;
            ctx.sleep(Duration::from_millis(ctx.rand_range(0, max.max(1))))
                .await;
        }
        first = false;
        let host = hosts[next % hosts.len()].clone();
        next += 1;
        let (instance, session) = (handle.instance(), handle.session());
        let Some((conn, resp)) = handshake(&handle, &ctx, &host).await else {
            tracing::trace!(host, "connect failed");
            continue;
        };
        if handle.instance() != instance {
            // The handle was replaced meanwhile: this answer is for the old one.
            continue;
        }
        match resp {
            Response::Connected {
                session: id,
                timeout_ms,
                passwd,
            } => {
                handle.connected(&ctx, &events, &host, (id, passwd), timeout_ms);
                let why = run_connection(&handle, &events, &ctx, conn, instance).await;
                if handle.instance() == instance {
                    handle.disconnected(&ctx, &events, why);
                }
            }
            Response::Expired => {
                events.expired(&ctx, StateReason::Expired { host, session });
            }
            _ => {}
        }
    }
}

/// Connect to `host` and shake hands, within the connect timeout: the connection and
/// the server's answer.
async fn handshake(handle: &ZkHandle, ctx: &NodeCtx, host: &str) -> Option<(ServerConn, Response)> {
    let (session, timeout_ms, last_zxid, passwd) = {
        let s = handle.0.state.borrow();
        (s.session, s.timeout_ms, s.last_zxid, s.passwd.clone())
    };
    let servers = handle.0.servers.len() as u64;
    let connect_timeout = Duration::from_millis((timeout_ms / servers).max(1));
    let hello = ClientFrame {
        xid: 0,
        req: Request::Connect {
            session,
            timeout_ms: handle.0.params.session_timeout_ms,
            last_zxid,
            passwd,
        },
    };
    let start = ctx.mono_ns();
    let Ok(Ok(stream)) = Tcp.connect(ctx, host, CLIENT_PORT, connect_timeout).await else {
        return None;
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
        return None;
    };
    match reply {
        ServerFrame::Reply { resp, .. } => Some((conn, resp)),
        ServerFrame::Watch(_) => None,
    }
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
    handle: &ZkHandle,
    events: &impl HandleEvents,
    ctx: &NodeCtx,
    mut conn: ServerConn,
    instance: u64,
) -> Disconnect {
    let mut last_send = ctx.mono_ns();
    // Re-register the watches the handle still has.
    let set = {
        let s = handle.0.state.borrow();
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
        if handle.instance() != instance {
            return Disconnect::HandleReplaced;
        }
        if let Err(why) = send_queued(handle, ctx, &mut conn, &mut last_send).await {
            return why;
        }
        let (read_timeout, last_recv) = {
            let s = handle.0.state.borrow();
            (s.read_timeout_ns(), s.last_recv_ns)
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
            _ = handle.0.kick.notified() => continue,
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
            _ => handle.0.state.borrow().sent.get(&xid)?.0.op(),
        };
        let f = match decode_reply(&bytes, false, op_of) {
            Ok(f) => f,
            Err(e) => return Disconnect::Protocol(e.to_string()),
        };
        if handle.instance() != instance {
            return Disconnect::HandleReplaced;
        }
        on_frame(handle, events, ctx, f);
    }
}

/// Send what is queued, each request then waiting for its reply.
async fn send_queued(
    handle: &ZkHandle,
    ctx: &NodeCtx,
    conn: &mut ServerConn,
    last_send: &mut i64,
) -> Result<(), Disconnect> {
    loop {
        let next = handle.0.state.borrow_mut().outgoing.pop_front();
        let Some(o) = next else { return Ok(()) };
        let f = ClientFrame {
            xid: o.xid,
            req: o.req.clone(),
        };
        if write_frame(conn, &f).await.is_err() {
            let _ = o.done.send(Err(ZkError::ConnectionLoss));
            return Err(Disconnect::WriteFailed);
        }
        *last_send = ctx.mono_ns();
        let lock_create = matches!(
            o.req,
            Request::Create {
                mode: CreateMode::EphemeralSequential,
                ..
            }
        );
        handle
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
}

/// A frame from the server: a reply (register its watch, answer its caller) or a watch
/// notification (wake its watchers).
fn on_frame(handle: &ZkHandle, events: &impl HandleEvents, ctx: &NodeCtx, f: ServerFrame) {
    let now = ctx.mono_ns();
    let read_timeout = {
        let mut s = handle.0.state.borrow_mut();
        s.last_recv_ns = now;
        s.read_timeout_ns()
    };
    events.heard(now + read_timeout);
    let mut s = handle.0.state.borrow_mut();
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
