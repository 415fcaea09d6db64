//! A server's client port: the handshake (new session, or a reconnect that moves a
//! session here), then each connection's requests in order with watch notifications
//! interleaved. What a request does is [`Node`]'s business; this file is the wire.

use super::core::ConnId;
use super::db::Op;
use super::node::Node;
use super::params::negotiate;
use super::proto::{
    decode_request, encode_reply, session_passwd, ClientFrame, OpCode, Request, Response,
    ServerFrame, CLIENT_PORT, PING_XID,
};
use super::tree::{SessionId, WatchedEvent, ZkError};
use crate::net::{Conn, Frames, NetStream};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::mpsc;

pub(super) async fn client_listener(node: Node) {
    // Dead connections end with their session (its expiry closes the watch channel).
    let listener = match crate::net::listen(&node.ctx, CLIENT_PORT).await {
        Ok(l) => l,
        Err(e) => {
            // Only a live server can fail to bind (its port taken).
            tracing::error!("{}: cannot listen: {e}", node.ctx.name());
            return;
        }
    };
    loop {
        let Ok(stream) = listener.accept().await else {
            continue;
        };
        node.ctx.spawn(client_connection(node.clone(), stream));
    }
}

/// A client connection as the server holds it.
type ClientConn = Conn<NetStream, Frames>;

/// Send `f`, the reply to an operation `op` (a reply's record depends on it).
async fn send(conn: &mut ClientConn, f: &ServerFrame, op: Option<OpCode>) -> std::io::Result<()> {
    let mut out = Vec::new();
    encode_reply(f, op, &mut out);
    conn.send(&out).await
}

/// One client connection: the handshake, then requests in order and watch
/// notifications (see the module docs).
async fn client_connection(node: Node, stream: NetStream) {
    let ctx = node.ctx.clone();
    let mut conn = Conn::new(stream, Frames);
    let timeout = Duration::from_millis(node.params.negotiated_timeout_ms());
    let Ok(Ok(first)) = ctx.timeout(timeout, conn.recv()).await else {
        return;
    };
    let Ok(ClientFrame {
        xid,
        req:
            Request::Connect {
                session,
                timeout_ms,
                last_zxid,
                passwd,
            },
    }) = decode_request(&first, true)
    else {
        return;
    };
    if !node.serving() || last_zxid > node.last_zxid() {
        tracing::debug!(last_zxid, ours = node.last_zxid(), "refusing a client");
        return;
    }
    let session = if session == 0 {
        let id = ((node.me as u64 + 1) << 56) | (ctx.rand_u64() >> 8);
        let asked = negotiate(timeout_ms, node.params.tick_ms);
        match node
            .write(Op::CreateSession { timeout_ms: asked }, id)
            .await
        {
            Some((_, Ok(_))) => id,
            _ => return,
        }
    } else if passwd == session_passwd(session) && node.touch(session) {
        // ZooKeeper's revalidation: a follower asks the leader, which touches the
        // session and makes this server its owner. Modelled as a SetOwner through the
        // log (the leader touches it when it applies it), answered once applied, so
        // requests still in flight through an old server are ordered before it or fail
        // with SessionMoved. Only the leader itself, owning the session already, has
        // nobody to ask.
        let owner = node.owner(session);
        if owner != Some(node.me as u64 + 1) || node.is_follower() {
            match node.write(Op::SetOwner, session).await {
                Some((_, Ok(_))) => {}
                Some((_, Err(ZkError::SessionExpired))) => {
                    let f = ServerFrame::Reply {
                        xid,
                        zxid: node.last_zxid(),
                        resp: Response::Expired,
                    };
                    let _ = send(&mut conn, &f, None).await;
                    return;
                }
                _ => return,
            }
        }
        session
    } else {
        let f = ServerFrame::Reply {
            xid,
            zxid: node.last_zxid(),
            resp: Response::Expired,
        };
        let _ = send(&mut conn, &f, None).await;
        return;
    };
    let Some(timeout_ms) = node.session_timeout(session) else {
        return;
    };
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cid = node.open_conn(session, tx);
    let hello = ServerFrame::Reply {
        xid,
        zxid: node.last_zxid(),
        resp: Response::Connected {
            session,
            timeout_ms,
            passwd: session_passwd(session),
        },
    };
    if send(&mut conn, &hello, None).await.is_ok() {
        serve_connection(&node, &mut conn, cid, session, &mut rx).await;
    }
    node.close_conn(cid);
}

/// ZooKeeper's `globalOutstandingLimit` (1000 by default): with this many requests of a
/// connection read and not yet answered, the server stops reading from it.
const OUTSTANDING_LIMIT: usize = 1000;

/// A request of this connection being served.
type Serving = Pin<Box<dyn Future<Output = (Reply, Option<Response>)>>>;

/// What a reply needs besides its body: the request's xid and operation, and whether it
/// closed the session.
#[derive(Debug, Clone, Copy)]
struct Reply {
    xid: i32,
    op: Option<OpCode>,
    close: bool,
}

/// Requests are read, and touch their session, as they arrive (ZooKeeper's
/// `submitRequest`), and are served one at a time in arrival order, each reply after the
/// watches fired before it. A ping queued behind a slow write therefore keeps its session
/// alive, as in ZooKeeper, although its reply waits for the write's.
async fn serve_connection(
    node: &Node,
    conn: &mut ClientConn,
    cid: ConnId,
    session: SessionId,
    rx: &mut mpsc::UnboundedReceiver<WatchedEvent>,
) {
    let mut queued: VecDeque<(i32, Request)> = VecDeque::new();
    let mut serving: Option<Serving> = None;
    let mut closing = false;
    let mut watches_open = true;
    loop {
        if serving.is_none() {
            if let Some((xid, req)) = queued.pop_front() {
                closing = matches!(req, Request::CloseSession);
                let reply = Reply {
                    xid,
                    op: req.op(),
                    close: closing,
                };
                let node = node.clone();
                serving = Some(Box::pin(async move {
                    (reply, node.serve(cid, session, req).await)
                }));
            }
        }
        tokio::select! {
            biased;
            ev = rx.recv(), if watches_open => match ev {
                Some(ev) => {
                    if send(conn, &ServerFrame::Watch(ev), None).await.is_err() {
                        return;
                    }
                }
                // The session was closed: by this connection's own close, whose reply is
                // still to go out, or by its expiry.
                None if closing => watches_open = false,
                None => return,
            },
            (reply, resp) = async { serving.as_mut().expect("guarded").await },
                if serving.is_some() =>
            {
                serving = None;
                let Some(resp) = resp else { return };
                if !answer(node, conn, rx, session, reply, resp).await || reply.close {
                    return;
                }
            }
            // Conn::recv is cancel-safe: a read (turmoil or tokio) consumes only what it
            // returns.
            r = conn.recv(), if queued.len() < OUTSTANDING_LIMIT => {
                let Ok(bytes) = r else { return };
                let Ok(ClientFrame { xid, req }) = decode_request(&bytes, false) else {
                    return;
                };
                node.touch(session);
                queued.push_back((xid, req));
            }
        }
    }
}

/// Send a request's reply, after the watches fired by everything applied so far. False
/// when the connection is to be closed.
async fn answer(
    node: &Node,
    conn: &mut ClientConn,
    rx: &mut mpsc::UnboundedReceiver<WatchedEvent>,
    session: SessionId,
    reply: Reply,
    resp: Response,
) -> bool {
    if resp == Response::Err(ZkError::SessionMoved) {
        // ZooKeeper's FinalRequestProcessor treats SessionMoved as an error of the
        // connection and closes it instead of answering (ZOOKEEPER-710). A revalidation
        // through a server the client gave up on can be ordered after the one through
        // the server it is on now (a SetOwner proposed before a leader change and
        // committed by the next leader), and then every write on this connection fails
        // SessionMoved while pings keep the session alive: the client's lock node would
        // stay first in line for ever. Closed, the client reconnects, and its
        // revalidation moves the session back.
        tracing::debug!(
            session = format!("0x{session:x}"),
            "session moved: closing the connection"
        );
        return false;
    }
    loop {
        match rx.try_recv() {
            Ok(ev) => {
                if send(conn, &ServerFrame::Watch(ev), None).await.is_err() {
                    return false;
                }
            }
            Err(mpsc::error::TryRecvError::Empty) => break,
            // The session was closed meanwhile.
            Err(mpsc::error::TryRecvError::Disconnected) if !reply.close => return false,
            Err(mpsc::error::TryRecvError::Disconnected) => break,
        }
    }
    if resp == Response::Err(ZkError::Unimplemented) {
        // UnimplementedRequestProcessor: zxid 0, then the connection is closed.
        let f = ServerFrame::Reply {
            xid: reply.xid,
            zxid: 0,
            resp,
        };
        let _ = send(conn, &f, reply.op).await;
        return false;
    }
    let f = ServerFrame::Reply {
        // FinalRequestProcessor answers a ping with xid -2, whatever xid it came with.
        xid: match reply.op {
            Some(OpCode::Ping) => PING_XID,
            _ => reply.xid,
        },
        zxid: node.last_zxid(),
        resp,
    };
    send(conn, &f, reply.op).await.is_ok()
}
