//! The database node `db-0`: the network edge around the pure [`Db`] model.
//!
//! - One task per connection reads framed JSON [`Statement`]s and answers each with a
//!   JSON [`Reply`] (one statement at a time per connection, as MySQL's protocol has it).
//!   A statement that waits for a row lock gets its reply later, from whichever task
//!   released the lock or from the housekeeping task, through the connection's outbox.
//! - A housekeeping task ticks the model every [`TICK_MS`] of the server's monotonic
//!   clock: lock wait timeouts (1205) and `wait_timeout` (idle sessions are ended and
//!   their connections closed). turmoil's TCP sends no FIN across a partition, so a
//!   partitioned client's session ends only this way — as a real server's does.
//! - The redo log lives on the node's [`Disk`](crate::sim::Disk): `fsync = always`
//!   flushes it before a commit's reply; `none` flushes once a second, so a crash loses
//!   up to a second of commits. A restart replays it.
//! - Lock holds the server ends (cleaner deletes, takeovers, rollbacks of ended sessions)
//!   are recorded as `expire` events with the lock name as `key`.
//! - A crash records none: the row locks of open transactions die with the process, and
//!   the restarted server cannot name them. InnoDB's recovery rolls back the
//!   transactions it finds in its logs, i.e. those that changed rows; a transaction that
//!   only took row locks (`SELECT … FOR UPDATE`) wrote no undo or redo, and lock tables
//!   are never logged. Nor can a restart expire every lock blindly: an `expire` of a lock
//!   nobody held is itself illegal in the fenced-lock spec. So a for-update hold a crash
//!   ends is a release the lock service never announced, and `lock-linearizable` reports
//!   it, as it does for the Redis node that restarts without persistence.

use super::model::{Config, ConnId, Db, Now, Reply, Statement, ER_PARSE_ERROR};
use super::params::{DbParams, Fsync};
use super::replication::Link; // failover (issue 41)
use crate::history::{names, EventType};
use crate::net::{encode_frame, Decoder, Frames};
use crate::sim::NodeCtx;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

/// MySQL's TCP port.
pub(crate) const DB_PORT: u16 = 3306;

/// The redo log file on the node's disk.
pub(crate) const REDO_LOG: &str = "ib_redo";

/// Housekeeping period, server local ms: the resolution of both timeouts.
pub(crate) const TICK_MS: u64 = 10;

/// What a connection task is told by the rest of the node.
enum Out {
    /// The reply to its waiting statement.
    Reply(Reply),
    /// The server ended the session: close the connection.
    Close,
}

struct State {
    db: Db,
    outboxes: BTreeMap<ConnId, mpsc::UnboundedSender<Out>>,
    fsync: Fsync,
    /// failover (issue 41): replication to or from the standby (replication.rs).
    link: Link,
}

type Node = Rc<RefCell<State>>;

fn now(ctx: &NodeCtx) -> Now {
    Now {
        mono_ns: ctx.mono_ns(),
        wall_ms: ctx.wall_ms(),
    }
}

/// The model's settings from the `[lock]` table.
pub(crate) fn config(p: &DbParams) -> Config {
    Config {
        lock_wait_timeout_ns: p.lock_wait_timeout_ms as i64 * 1_000_000,
        wait_timeout_ns: p.wait_timeout_ms as i64 * 1_000_000,
    }
}

/// Run the database node (at each start and restart: recovery replays the redo log).
pub(crate) async fn db_main(ctx: NodeCtx, params: DbParams) {
    let db = Db::recover(config(&params), ctx.disk().read(REDO_LOG));
    tracing::debug!(rows = db.rows().len(), "recovered");
    let redo = ctx.disk().read(REDO_LOG).to_vec(); // failover (issue 41): positions
    let link = Link::boot(&ctx, params.standby(), &redo); // failover (issue 41)
    let node: Node = Rc::new(RefCell::new(State {
        db,
        outboxes: BTreeMap::new(),
        fsync: params.fsync,
        link: link.clone(),
    }));
    // failover (issue 41): ship to the standby, or apply what the primary ships.
    link.start(&ctx, {
        let (ctx, node) = (ctx.clone(), node.clone());
        move |records| {
            node.borrow_mut().db.apply_replicated(records);
            apply(&ctx, &node);
        }
    });
    {
        let (ctx2, node) = (ctx.clone(), node.clone());
        ctx.spawn(async move {
            loop {
                ctx2.sleep(Duration::from_millis(TICK_MS)).await;
                node.borrow_mut().db.tick(now(&ctx2));
                apply(&ctx2, &node);
            }
        });
    }
    if params.fsync == Fsync::None {
        let ctx2 = ctx.clone();
        ctx.spawn(async move {
            loop {
                ctx2.sleep(Duration::from_secs(1)).await;
                ctx2.fsync_in_background(REDO_LOG).await;
            }
        });
    }
    let listener = crate::net::tcp::listen(&ctx, DB_PORT)
        .await
        .expect("bind on a fresh simulated host cannot fail");
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            continue;
        };
        ctx.spawn(connection(ctx.clone(), node.clone(), stream));
    }
}

/// Carry out the model's effects: redo to disk (flushed per policy) before any reply
/// leaves, `expire` events, replies to waiting sessions, ended sessions closed.
fn apply(ctx: &NodeCtx, node: &Node) {
    let (fx, fsync) = {
        let mut n = node.borrow_mut();
        (n.db.take_effects(), n.fsync)
    };
    if !fx.redo.is_empty() {
        let mut disk = ctx.disk();
        disk.append(REDO_LOG, &Db::encode_redo(&fx.redo));
        if fsync == Fsync::Always {
            disk.fsync(REDO_LOG);
        }
        drop(disk);
        node.borrow().link.log(ctx, &fx.redo); // failover (issue 41): the binlog
    }
    for name in &fx.expired {
        tracing::debug!(lock = %name, "hold ended by the server");
        ctx.record(
            ctx.event(EventType::Event, names::EXPIRE)
                .key(name.as_str()),
        );
    }
    let n = node.borrow();
    for (conn, reply) in fx.replies {
        tracing::debug!(conn, "-> {reply:?} (after waiting)");
        if let Some(tx) = n.outboxes.get(&conn) {
            let _ = tx.send(Out::Reply(reply));
        }
    }
    for conn in fx.killed {
        tracing::debug!(conn, "session idle past wait_timeout: ended");
        if let Some(tx) = n.outboxes.get(&conn) {
            let _ = tx.send(Out::Close);
        }
    }
}

fn encode(reply: &Reply, out: &mut Vec<u8>) {
    let bytes = serde_json::to_vec(reply).expect("replies serialise");
    encode_frame(&bytes, out);
}

/// Decode the buffered requests and run them; replies go to `out`. Stops after a
/// statement that waits (its reply comes through the outbox).
fn serve_buffered(
    ctx: &NodeCtx,
    node: &Node,
    conn: ConnId,
    buf: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<(), ()> {
    loop {
        let frame = match Frames.decode(buf) {
            Ok(Some((frame, used))) => {
                buf.drain(..used);
                frame
            }
            Ok(None) => return Ok(()),
            Err(_) => return Err(()),
        };
        let reply = match serde_json::from_slice::<Statement>(&frame) {
            // failover (issue 41): a read-only server refuses writes with 1290.
            Ok(stmt) if node.borrow().link.refuse(&stmt).is_some() => {
                node.borrow().link.refuse(&stmt)
            }
            Ok(stmt) => {
                tracing::debug!(conn, wall_ms = ctx.wall_ms(), "{}", stmt.sql());
                let r = node.borrow_mut().db.execute(conn, stmt, now(ctx));
                apply(ctx, node);
                r
            }
            Err(e) => Some(Reply::error(
                ER_PARSE_ERROR,
                "ER_PARSE_ERROR",
                format!("cannot read the statement: {e}"),
            )),
        };
        match reply {
            Some(r) => {
                tracing::debug!(conn, "-> {r:?}");
                encode(&r, out);
            }
            None => {
                tracing::debug!(conn, "waits for a row lock");
                return Ok(());
            }
        }
    }
}

async fn connection(ctx: NodeCtx, node: Node, mut stream: crate::net::SimStream) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let conn = {
        let mut n = node.borrow_mut();
        let c = n.db.connect(now(&ctx));
        n.outboxes.insert(c, tx);
        c
    };
    let Ok(ka) = crate::net::tcp::Keepalive::of(&stream) else {
        return;
    };
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 4096];
    let closed_by_server = loop {
        let mut out = Vec::new();
        tokio::select! {
            // Biased: deterministic, and a waiting statement's reply goes out before
            // anything else is read.
            biased;
            msg = rx.recv() => match msg {
                Some(Out::Reply(r)) => encode(&r, &mut out),
                Some(Out::Close) | None => break true,
            },
            read = crate::net::tcp::read_alive(&ctx, &ka, &mut stream, &mut chunk) => match read {
                Ok(0) | Err(_) => break false,
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    let fsyncs = ctx.disk().fsyncs();
                    let logged = node.borrow().link.position(); // failover (issue 41)
                    if serve_buffered(&ctx, &node, conn, &mut buf, &mut out).is_err() {
                        break false;
                    }
                    // A commit is answered once its redo is on disk; the rest of the
                    // server goes on meanwhile (InnoDB releases the row locks first).
                    if ctx.disk().fsyncs() > fsyncs {
                        ctx.wait_disk().await;
                    }
                    // failover (issue 41): semi-sync answers once the standby has it.
                    let link = node.borrow().link.clone();
                    link.wait_for_standby(&ctx, logged).await;
                }
            },
        }
        if !out.is_empty() && stream.write_all(&out).await.is_err() {
            break false;
        }
    };
    let mut n = node.borrow_mut();
    n.outboxes.remove(&conn);
    if !closed_by_server {
        tracing::debug!(conn, "connection closed by the client");
        n.db.disconnect(conn, now(&ctx));
        drop(n);
        apply(&ctx, &node);
    }
}
