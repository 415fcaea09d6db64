//! The database node `db-0`: the network edge around the pure [`Db`] model.
//!
//! - One task per connection speaks MySQL's protocol ([`ServerConn`]): the handshake
//!   (any user and password), then `COM_QUERY` statements run by the SQL front-end
//!   ([`execute_sql`]), `COM_PING`, `COM_INIT_DB` and `COM_QUIT`, one command at a time
//!   per connection, as the protocol has it.
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

use super::model::{Config, ConnId, Db, Now};
use super::params::{DbParams, Fsync};
use super::replication::Link; // failover (issue 41)
use super::sql::{execute_sql_guarded, SERVER_VERSION};
use crate::history::{names, EventType};
use crate::net::mysql::{QueryResult, ServerConn, ServerError, ServerEvent, ServerHello};
use crate::net::NetStream;
use crate::sim::NodeCtx;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// MySQL's TCP port.
pub(crate) const DB_PORT: u16 = 3306;

/// The redo log file on the node's disk.
pub(crate) const REDO_LOG: &str = "ib_redo";

/// `ER_BAD_DB_ERROR`: a database other than `locksim`.
const ER_BAD_DB_ERROR: u16 = 1049;

/// Housekeeping period, server local ms: the resolution of both timeouts.
pub(crate) const TICK_MS: u64 = 10;

/// What a connection task is told by the rest of the node.
enum Out {
    /// The reply to its waiting statement.
    Reply(QueryResult),
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
    // turmoil's TCP in a simulation; real loopback under `locksim serve db`.
    let listener = match crate::net::listen(&ctx, DB_PORT).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("{}: cannot listen: {e}", ctx.name());
            return;
        }
    };
    loop {
        let Ok(stream) = listener.accept().await else {
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
    // Every statement comes as SQL text, so waiting ones end in `results`.
    debug_assert!(fx.replies.is_empty());
    for (conn, reply) in fx.results {
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

/// The one database the server has.
pub(crate) const DATABASE: &str = "locksim";

/// A handshake scramble from the node's seeded RNG: printable, as MySQL's are, so a
/// run replays byte for byte.
fn scramble(ctx: &NodeCtx) -> [u8; 20] {
    let mut s = [0u8; 20];
    for b in &mut s {
        *b = ctx.rand_range(33, 126) as u8;
    }
    s
}

/// The reply to a login or `COM_INIT_DB` naming `database`: only `locksim` exists.
fn use_database(database: Option<&str>, status: u16) -> QueryResult {
    match database {
        None => ok(status),
        Some(d) if d.eq_ignore_ascii_case(DATABASE) => ok(status),
        Some(d) => QueryResult::Err(ServerError {
            code: ER_BAD_DB_ERROR,
            sqlstate: "42000".into(),
            message: format!("Unknown database '{d}'"),
        }),
    }
}

fn ok(status: u16) -> QueryResult {
    QueryResult::Ok {
        affected_rows: 0,
        last_insert_id: 0,
        warnings: 0,
        status,
    }
}

/// Answer the events the bytes received so far complete, until one waits for a lock
/// (its reply comes through the outbox) or none is left.
fn serve_events(ctx: &NodeCtx, node: &Node, conn: ConnId, wire: &mut ServerConn) {
    loop {
        let status = node.borrow().db.status(conn);
        wire.set_status(status);
        let event = match wire.next_event() {
            Ok(Some(event)) => event,
            // A protocol error has queued its ERR and closed the connection.
            Ok(None) | Err(_) => return,
        };
        let reply = match event {
            ServerEvent::Login { database, .. } => use_database(database.as_deref(), status),
            ServerEvent::InitDb(d) => use_database(Some(&d), status),
            ServerEvent::Ping => ok(status),
            ServerEvent::Quit => return,
            ServerEvent::Query(sql) => {
                tracing::debug!(conn, wall_ms = ctx.wall_ms(), "{sql}");
                let r = {
                    let mut n = node.borrow_mut();
                    let State { db, link, .. } = &mut *n;
                    // failover (issue 41): a read-only server refuses writes with 1290.
                    execute_sql_guarded(db, conn, &sql, now(ctx), |stmt| link.refuse(stmt))
                };
                apply(ctx, node);
                match r {
                    Some(r) => r,
                    None => {
                        tracing::debug!(conn, "waits for a lock");
                        return;
                    }
                }
            }
        };
        tracing::debug!(conn, "-> {reply:?}");
        if wire.reply(&reply).is_err() {
            return;
        }
    }
}

async fn connection(ctx: NodeCtx, node: Node, mut stream: NetStream) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let conn = {
        let mut n = node.borrow_mut();
        let c = n.db.connect(now(&ctx));
        n.outboxes.insert(c, tx);
        c
    };
    let mut wire = ServerConn::new(&ServerHello {
        server_version: SERVER_VERSION.to_string(),
        connection_id: conn as u32,
        scramble: scramble(&ctx),
        status: node.borrow().db.status(conn),
    });
    // Keepalive probes in a simulation (turmoil's TCP has none); the kernel's on loopback.
    let keepalive = match &stream {
        NetStream::Sim(s) => match crate::net::tcp::Keepalive::of(s) {
            Ok(ka) => Some(ka),
            Err(_) => return,
        },
        NetStream::Live(_) => None,
    };
    let closed_by_server = serve_connection(
        &ctx,
        &node,
        conn,
        &mut wire,
        &mut stream,
        &mut rx,
        keepalive.as_ref(),
    )
    .await;
    let mut n = node.borrow_mut();
    n.outboxes.remove(&conn);
    if !closed_by_server {
        tracing::debug!(conn, "connection closed by the client");
        n.db.disconnect(conn, now(&ctx));
        drop(n);
        apply(&ctx, &node);
    }
}

/// The connection's loop: the greeting, then commands and late replies, until either side
/// ends it. `true` when the server ended the session (its rollback is done).
async fn serve_connection(
    ctx: &NodeCtx,
    node: &Node,
    conn: ConnId,
    wire: &mut ServerConn,
    stream: &mut NetStream,
    rx: &mut mpsc::UnboundedReceiver<Out>,
    keepalive: Option<&crate::net::tcp::Keepalive>,
) -> bool {
    let mut chunk = [0u8; 4096];
    loop {
        let out = wire.take_output();
        if !out.is_empty() && stream.write_all(&out).await.is_err() {
            return false;
        }
        if wire.is_closed() {
            return false;
        }
        tokio::select! {
            // Biased: deterministic, and a waiting statement's reply goes out before
            // anything else is read.
            biased;
            msg = rx.recv() => match msg {
                Some(Out::Reply(r)) => {
                    wire.set_status(node.borrow().db.status(conn));
                    if wire.reply(&r).is_err() {
                        return false;
                    }
                    serve_events(ctx, node, conn, wire);
                }
                Some(Out::Close) | None => return true,
            },
            read = read(ctx, keepalive, stream, &mut chunk) => match read {
                Ok(0) | Err(_) => return false,
                Ok(n) => {
                    wire.receive(&chunk[..n]);
                    let fsyncs = ctx.disk().fsyncs();
                    let logged = node.borrow().link.position(); // failover (issue 41)
                    serve_events(ctx, node, conn, wire);
                    // A commit is answered once its redo is on disk; the rest of the
                    // server goes on meanwhile (InnoDB releases the row locks first).
                    if ctx.disk().fsyncs() > fsyncs {
                        ctx.wait_disk().await;
                    }
                    // failover (issue 41): semi-sync answers once the standby has it.
                    let link = node.borrow().link.clone();
                    link.wait_for_standby(ctx, logged).await;
                }
            },
        }
    }
}

/// Read what the client sent: with keepalive probes in a simulation.
async fn read(
    ctx: &NodeCtx,
    keepalive: Option<&crate::net::tcp::Keepalive>,
    stream: &mut NetStream,
    chunk: &mut [u8],
) -> std::io::Result<usize> {
    match (keepalive, stream) {
        (Some(ka), NetStream::Sim(s)) => crate::net::tcp::read_alive(ctx, ka, s, chunk).await,
        (_, s) => s.read(chunk).await,
    }
}
