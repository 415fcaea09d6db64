//! The Redis node: network edge, active expiry, AOF persistence and replication roles
//! around the pure [`RedisServer`] model.
//!
//! One node type serves both deployments: a standalone primary (`algorithm = "redis"`,
//! `"redlock"`) and a member of a replicated group (`"redis-replicated"`), whose role a
//! sentinel changes with `REPLICAOF`. Replication itself lives in `replication.rs`.

use super::aof::{persist, read_aof, wait_for_aof, AOF};
use super::model::{Block, Client, ClientId, RedisServer, RoleInfo, ServerConfig};
use super::params::Persistence;
use super::replication;
use super::resp::{decode_command, encode_commands, parse_i64, Value};
use super::state::{Node, RedisNodeState, Role, Stream};
use super::REDIS_PORT;
use crate::history::names;
use crate::history::EventType;
use crate::sim::NodeCtx;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Run a standalone Redis node (always primary) with the given persistence.
pub(crate) async fn serve_node(ctx: NodeCtx, persistence: Persistence) {
    run_node(ctx, persistence, Role::Primary, [0, 0]).await
}

/// [`serve_node`] with a server configuration (e.g. `requirepass`).
pub(crate) async fn serve_node_with(ctx: NodeCtx, persistence: Persistence, config: ServerConfig) {
    run_node_with(ctx, persistence, Role::Primary, [0, 0], config).await
}

/// Run a Redis node that starts in `role`; replicas apply each replicated command after a
/// delay drawn from `lag_ms`.
///
/// * Keys expire by the node's *wall* clock, lazily on access and, on the primary, in an
///   active cycle ten times a second (Redis's default `hz 10`); both are recorded as
///   `expire` events. Replicas never expire keys actively: they wait for the primary's
///   `DEL`, as real replicas do.
/// * `always` appends and fsyncs the AOF before replying; `everysec` appends and fsyncs
///   once a second (a crash loses the rest); `none` keeps nothing across a restart.
pub(crate) async fn run_node(ctx: NodeCtx, persistence: Persistence, role: Role, lag_ms: [u64; 2]) {
    run_node_with(ctx, persistence, role, lag_ms, ServerConfig::default()).await
}

/// [`run_node`] with a server configuration.
pub(crate) async fn run_node_with(
    ctx: NodeCtx,
    persistence: Persistence,
    role: Role,
    lag_ms: [u64; 2],
    config: ServerConfig,
) {
    let mut server = RedisServer::with_config(config);
    let mut deletions = Vec::new();
    if persistence != Persistence::None {
        let log = read_aof(ctx.disk().read(AOF));
        let dropped = server.load(ctx.wall_ms(), &log);
        record_expired(&ctx, &dropped.expired);
        // Only a primary expires keys and logs the DEL; a replica waits for its primary's.
        if role == Role::Primary {
            deletions = dropped.propagate;
        }
    }
    let node: Node = Rc::new(RefCell::new(RedisNodeState {
        server,
        role: role.clone(),
        generation: 0,
        stream: Stream::default(),
        applied: 0,
        persistence,
        mailboxes: BTreeMap::new(),
        held_effects: Vec::new(),
        killed_reply: None,
    }));
    let fsyncs = ctx.disk().fsyncs();
    propagate(&ctx, &node, &deletions);
    wait_for_aof(&ctx, persistence, fsyncs).await;
    {
        let (ctx2, node) = (ctx.clone(), node.clone());
        ctx.spawn(async move {
            loop {
                ctx2.sleep(Duration::from_millis(100)).await;
                if node.borrow().role != Role::Primary {
                    continue;
                }
                let fsyncs = ctx2.disk().fsyncs();
                let out = node
                    .borrow_mut()
                    .server
                    .active_expire_outcome(ctx2.wall_ms());
                record_expired(&ctx2, &out.expired);
                propagate(&ctx2, &node, &out.propagate);
                let persistence = node.borrow().persistence;
                wait_for_aof(&ctx2, persistence, fsyncs).await;
            }
        });
    }
    if persistence == Persistence::Everysec {
        let ctx2 = ctx.clone();
        ctx.spawn(async move {
            loop {
                ctx2.sleep(Duration::from_secs(1)).await;
                // Redis's background fsync thread: a stalled disk delays durability, not
                // the replies.
                ctx2.fsync_in_background(AOF).await;
            }
        });
    }
    if let Role::Replica { .. } = role {
        replication::start_replica(&ctx, &node, lag_ms);
    }
    if ctx.live().is_some() {
        return serve_live(&ctx, &node, lag_ms).await;
    }
    let listener = crate::net::tcp::listen(&ctx, REDIS_PORT)
        .await
        .expect("bind on a fresh simulated host cannot fail");
    loop {
        let Ok((stream, peer)) = listener.accept().await else {
            continue;
        };
        let peer = turmoil::reverse_lookup(peer.ip()).unwrap_or_default();
        ctx.spawn(connection(ctx.clone(), node.clone(), stream, peer, lag_ms));
    }
}

/// The node on real loopback (`locksim serve redis`): clients only, no replication (a
/// `PSYNC` closes the connection) and no keepalive probes (the kernel's TCP has its own).
async fn serve_live(ctx: &NodeCtx, node: &Node, lag: [u64; 2]) {
    let listener = match crate::net::listen(ctx, REDIS_PORT).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("{}: cannot listen: {e}", ctx.name());
            return;
        }
    };
    loop {
        let Ok(mut stream) = listener.accept().await else {
            continue;
        };
        let (ctx, node) = (ctx.clone(), node.clone());
        ctx.clone().spawn(async move {
            let (mut client, mut inbox) = open_client(&node);
            let io = ClientIo {
                stream: &mut stream,
                keepalive: None,
            };
            serve_client(&ctx, &node, io, &mut client, &mut inbox, lag).await;
            close_client(&node, &mut client);
        });
    }
}

/// A new client of the node, and the inbox of the pub/sub messages addressed to it.
fn open_client(node: &Node) -> (Client, tokio::sync::mpsc::UnboundedReceiver<Value>) {
    let (tx, inbox) = tokio::sync::mpsc::unbounded_channel();
    let mut n = node.borrow_mut();
    let client = n.server.connect();
    n.mailboxes.insert(client.id, tx);
    (client, inbox)
}

/// The client's connection is gone.
fn close_client(node: &Node, client: &mut Client) {
    let mut n = node.borrow_mut();
    n.mailboxes.remove(&client.id);
    n.server.disconnect(client);
}

/// A client connection's stream, and the keepalive that probes it in a simulation.
struct ClientIo<'a, S> {
    stream: &'a mut S,
    keepalive: Option<&'a crate::net::tcp::Keepalive>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> ClientIo<'_, S> {
    async fn read(&mut self, ctx: &NodeCtx, chunk: &mut [u8]) -> std::io::Result<usize> {
        match self.keepalive {
            Some(ka) => crate::net::tcp::read_alive(ctx, ka, self.stream, chunk).await,
            None => self.stream.read(chunk).await,
        }
    }

    async fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await
    }
}

/// Commands that change the dataset: refused on a replica (`READONLY`). Scripts count
/// as writes (a replica refuses EVAL as a whole rather than the writes inside it).
fn is_write(name: &[u8]) -> bool {
    super::model::is_write(name)
        || name.eq_ignore_ascii_case(b"eval")
        || name.eq_ignore_ascii_case(b"evalsha")
}

/// What a command asks of the connection loop.
enum Step {
    /// Replies (usually one) for this connection.
    Replies(Vec<Value>),
    /// The replies, then close the connection (`QUIT`).
    Close(Vec<Value>),
    /// `WAIT numreplicas timeout`: block until acknowledged or timed out.
    Wait(i64, u64),
    /// `PSYNC`: this connection now feeds a replica.
    Sync,
    /// A script held the server this long: the node freezes, then the replies go.
    Script(Duration, Vec<Value>),
    /// A script that does not end: the node freezes for `busy-reply-threshold`, then
    /// serves others (`BUSY`) while this connection waits for the reply `SCRIPT KILL`
    /// sends.
    Endless(Duration, tokio::sync::oneshot::Receiver<Value>),
    /// `SHUTDOWN`: the process exits.
    Shutdown,
    /// `BLPOP`/`BRPOP` on empty lists: the connection waits until a push serves it or
    /// its timeout passes, reading (but not running) what the client sends meanwhile.
    Blocked(Block),
}

/// The node's role as the model reports it (`INFO replication`, `HELLO`).
fn role_info(n: &RedisNodeState) -> RoleInfo {
    match &n.role {
        Role::Primary => RoleInfo {
            primary: None,
            replicas: n.stream.replicas() as u64,
            offset: n.stream.offset(),
        },
        Role::Replica { primary } => RoleInfo {
            primary: Some(primary.clone()),
            replicas: 0,
            offset: n.applied,
        },
    }
}

/// `WAIT numreplicas timeout`'s arguments, checked as Redis 7.0's `waitCommand` does.
fn parse_wait(args: &[Vec<u8>], replica: bool) -> Result<(i64, u64), Value> {
    if replica {
        return Err(Value::err("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated."));
    }
    let n = parse_i64(&args[1])
        .ok_or_else(|| Value::err("ERR value is not an integer or out of range"))?;
    let timeout = parse_i64(&args[2])
        .ok_or_else(|| Value::err("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(Value::err("ERR timeout is negative"));
    }
    Ok((n, timeout as u64))
}

/// The commands the node answers itself, with Redis's arity; `None` for the model's.
fn node_command_arity(name: &[u8]) -> Option<usize> {
    match name {
        b"wait" => Some(3),
        b"role" => Some(1),
        b"replicaof" | b"slaveof" => Some(3),
        _ => None,
    }
}

/// A command the node answers itself (replication and roles), or `None` for the model.
fn node_command(
    ctx: &NodeCtx,
    node: &Node,
    name: &[u8],
    args: &[Vec<u8>],
    lag: [u64; 2],
) -> Option<Step> {
    let one = |v: Value| Some(Step::Replies(vec![v]));
    match name {
        b"psync" | b"sync" => {
            return match node.borrow().server.busy_reply() {
                Some(busy) => one(busy),
                None => Some(Step::Sync),
            }
        }
        b"replconf" => return one(Value::ok()),
        _ => {}
    }
    let arity = node_command_arity(name)?;
    if args.len() != arity {
        let name = String::from_utf8_lossy(name);
        return one(Value::err(format!(
            "ERR wrong number of arguments for '{name}' command"
        )));
    }
    if let Some(busy) = node.borrow().server.busy_reply() {
        return one(busy);
    }
    match name {
        b"wait" => {
            let replica = matches!(node.borrow().role, Role::Replica { .. });
            match parse_wait(args, replica) {
                Ok((n, timeout)) => Some(Step::Wait(n, timeout)),
                Err(e) => one(e),
            }
        }
        b"role" => one(replication::role_reply(&node.borrow())),
        _ => one(replication::replicaof(ctx, node, args, lag)),
    }
}

/// Execute one client command against the node (synchronously: commands are atomic).
fn execute(
    ctx: &NodeCtx,
    node: &Node,
    client: &mut Client,
    args: Vec<Vec<u8>>,
    last_write: &mut u64,
    lag: [u64; 2],
) -> Step {
    let name = args[0].to_ascii_lowercase();
    if let Some(step) = node_command(ctx, node, &name, &args, lag) {
        return step;
    }
    if matches!(name.as_slice(), b"info" | b"hello") {
        let mut n = node.borrow_mut();
        let info = role_info(&n);
        n.server.role = info;
    }
    let replica = matches!(node.borrow().role, Role::Replica { .. });
    if replica && is_write(&name) {
        // Refused while queueing, it aborts the transaction, as in Redis.
        client.flag_multi_error();
        return Step::Replies(vec![Value::err(
            "READONLY You can't write against a read only replica.",
        )]);
    }
    let started = ctx.mono_ns();
    let out = node
        .borrow_mut()
        .server
        .execute_as(client, ctx.wall_ms(), &args);
    // Live, running the script took real time already (in a simulation none passes).
    let spent = Duration::from_nanos((ctx.mono_ns() - started).max(0) as u64);
    tracing::debug!(
        wall_ms = ctx.wall_ms(),
        "{} -> {:?}",
        show(&args),
        out.reply
    );
    if out.shutdown {
        return Step::Shutdown;
    }
    let endless = out.script.is_some_and(|s| s.endless);
    if !replica && endless {
        // Nothing leaves until the script ends (an unkillable one never does).
        node.borrow_mut().held_effects = out.propagate.clone();
    } else if !replica {
        record_expired(ctx, &out.expired);
        propagate(ctx, node, &out.propagate);
        if !out.propagate.is_empty() {
            // What this client's WAIT waits for (Redis's `c->woff`).
            *last_write = node.borrow().stream.offset();
        }
        release_held_effects(ctx, node);
    }
    deliver(node, out.deliveries);
    deliver(node, out.unblocked);
    if let Some((_, reply)) = out.killed {
        if let Some(tx) = node.borrow_mut().killed_reply.take() {
            let _ = tx.send(reply);
        }
    }
    if let Some(until) = out.blocked {
        return Step::Blocked(until);
    }
    if endless {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let threshold = {
            let mut n = node.borrow_mut();
            n.killed_reply = Some(tx);
            n.server.config().busy_reply_threshold_ms
        };
        let freeze = Duration::from_millis(threshold).saturating_sub(spent);
        return Step::Endless(freeze, rx);
    }
    let mut replies = Vec::with_capacity(1 + out.more.len());
    replies.push(out.reply);
    replies.extend(out.more);
    match out.script {
        Some(run) if run.duration_ms() > 0 => {
            let busy = Duration::from_millis(run.duration_ms()).saturating_sub(spent);
            Step::Script(busy, replies)
        }
        _ if out.close => Step::Close(replies),
        _ => Step::Replies(replies),
    }
}

/// Once the busy script was killed, what it (or its `EXEC`) wrote goes out.
fn release_held_effects(ctx: &NodeCtx, node: &Node) {
    let held = {
        let mut n = node.borrow_mut();
        if n.held_effects.is_empty() || n.server.busy() {
            return;
        }
        std::mem::take(&mut n.held_effects)
    };
    propagate(ctx, node, &held);
}

/// Hand pub/sub messages, and the replies of blocking pops a push or a timeout ended, to
/// their connections.
fn deliver(node: &Node, deliveries: Vec<(ClientId, Value)>) {
    if deliveries.is_empty() {
        return;
    }
    let n = node.borrow();
    for (id, msg) in deliveries {
        if let Some(tx) = n.mailboxes.get(&id) {
            let _ = tx.send(msg);
        }
    }
}

async fn connection(
    ctx: NodeCtx,
    node: Node,
    mut stream: crate::net::SimStream,
    peer: String,
    lag: [u64; 2],
) {
    let Ok(ka) = crate::net::tcp::Keepalive::of(&stream) else {
        return;
    };
    let (mut client, mut inbox) = open_client(&node);
    let io = ClientIo {
        stream: &mut stream,
        keepalive: Some(&ka),
    };
    let sync = serve_client(&ctx, &node, io, &mut client, &mut inbox, lag).await;
    close_client(&node, &mut client);
    if sync {
        // Anything the replica sent after PSYNC (its first ACK) is superseded by later ACKs.
        replication::feed_replica(&ctx, &node, stream, peer).await;
    }
}

/// One connection's loop: decode commands, execute them, write replies and any pub/sub
/// messages addressed to this connection. True when the connection became a replica's
/// (`PSYNC`): the caller then feeds it the replication stream.
async fn serve_client<S: AsyncRead + AsyncWrite + Unpin>(
    ctx: &NodeCtx,
    node: &Node,
    mut stream: ClientIo<'_, S>,
    client: &mut Client,
    inbox: &mut tokio::sync::mpsc::UnboundedReceiver<Value>,
    lag: [u64; 2],
) -> bool {
    let mut buf = Vec::with_capacity(256);
    let mut chunk = [0u8; 4096];
    // Offset after this client's last command: what its WAIT waits for.
    let mut last_write = 0u64;
    loop {
        let mut out = Vec::new();
        let mut close = false;
        let fsyncs = ctx.disk().fsyncs();
        while !close {
            match decode_command(&buf) {
                Ok(Some((args, used))) => {
                    buf.drain(..used);
                    match execute(ctx, node, client, args, &mut last_write, lag) {
                        Step::Replies(vs) => {
                            for v in vs {
                                v.encode_resp(client.resp, &mut out);
                            }
                        }
                        Step::Close(vs) => {
                            for v in vs {
                                v.encode_resp(client.resp, &mut out);
                            }
                            close = true;
                        }
                        Step::Wait(n, timeout_ms) => {
                            let acked =
                                replication::wait(ctx, node, last_write, n, timeout_ms).await;
                            Value::Integer(acked as i64).encode(&mut out);
                        }
                        Step::Script(busy, vs) => {
                            ctx.busy_for(busy, "script").await;
                            for v in vs {
                                v.encode_resp(client.resp, &mut out);
                            }
                        }
                        Step::Endless(threshold, killed) => {
                            let io = (&mut stream, &mut out);
                            let wait = (&mut *inbox, killed);
                            if !endless_script(ctx, io, client.resp, wait, threshold).await {
                                return false;
                            }
                        }
                        Step::Shutdown => ctx.exit().await,
                        Step::Blocked(until) => {
                            let io = (&mut stream, &mut out, &mut buf);
                            let wait = (&mut *inbox, until, fsyncs);
                            if !blocked(ctx, node, io, client, wait).await {
                                return false;
                            }
                        }
                        Step::Sync => {
                            return out.is_empty() || stream.write_all(&out).await.is_ok();
                        }
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // Redis replies with the protocol error and closes the connection.
                    e.to_reply().encode(&mut out);
                    let _ = stream.write_all(&out).await;
                    return false;
                }
            }
        }
        let persistence = node.borrow().persistence;
        wait_for_aof(ctx, persistence, fsyncs).await;
        if !out.is_empty() && stream.write_all(&out).await.is_err() {
            return false;
        }
        if close {
            return false;
        }
        if !client.subscribed() && inbox.is_empty() {
            // The common case: no pub/sub, a plain read (nothing else is polled, so the
            // task's wake-ups are exactly those of the read).
            let n = match stream.read(ctx, &mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => n,
            };
            buf.extend_from_slice(&chunk[..n]);
            continue;
        }
        // A subscriber: messages published to it are written while it waits to read.
        tokio::select! {
            biased;
            msg = inbox.recv() => {
                let mut out = Vec::new();
                if let Some(m) = msg {
                    m.encode_resp(client.resp, &mut out);
                }
                while let Ok(m) = inbox.try_recv() {
                    m.encode_resp(client.resp, &mut out);
                }
                if stream.write_all(&out).await.is_err() {
                    return false;
                }
            }
            read = stream.read(ctx, &mut chunk) => {
                let n = match read {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// A script that does not end, on its connection: the replies before it go out, the node
/// freezes for `busy-reply-threshold`, then the connection waits for the script's reply,
/// which `SCRIPT KILL` sends on `killed`; pub/sub messages queued before it go out first.
/// False when the connection is gone (or the script never ends).
async fn endless_script<S: AsyncRead + AsyncWrite + Unpin>(
    ctx: &NodeCtx,
    (stream, out): (&mut ClientIo<'_, S>, &mut Vec<u8>),
    resp: u8,
    (inbox, mut killed): (
        &mut tokio::sync::mpsc::UnboundedReceiver<Value>,
        tokio::sync::oneshot::Receiver<Value>,
    ),
    threshold: Duration,
) -> bool {
    if !out.is_empty() && stream.write_all(out).await.is_err() {
        return false;
    }
    out.clear();
    ctx.busy_for(threshold, "script").await;
    loop {
        tokio::select! {
            biased;
            msg = inbox.recv() => match msg {
                Some(m) => m.encode_resp(resp, out),
                None => return false,
            },
            reply = &mut killed => match reply {
                Ok(r) => {
                    r.encode_resp(resp, out);
                    return true;
                }
                Err(_) => return false,
            },
        }
    }
}

/// How often a blocked connection looks at the wall clock: a clock that jumps forward
/// ends its timeout within this (as Redis's 100 ms server cron would).
const BLOCKED_CHECK: Duration = Duration::from_millis(100);

/// A connection blocked in `BLPOP`/`BRPOP` until `until`: the replies before it go out,
/// then it waits for its reply (a push serves it: the reply arrives in its inbox), for its
/// timeout on the node's wall clock (then every blocking pop that is due ends, its own
/// among them), or for the client to close; what the client sends meanwhile is kept in
/// `buf` for after. Pub/sub messages (a RESP3 subscriber may block) go out as they come.
/// The reply is left in `out`; false when the connection is gone. `fsyncs_before`: the
/// AOF's fsyncs when the replies in `out` began.
async fn blocked<S: AsyncRead + AsyncWrite + Unpin>(
    ctx: &NodeCtx,
    node: &Node,
    (stream, out, buf): (&mut ClientIo<'_, S>, &mut Vec<u8>, &mut Vec<u8>),
    client: &Client,
    (inbox, until, fsyncs_before): (&mut tokio::sync::mpsc::UnboundedReceiver<Value>, Block, u64),
) -> bool {
    // The replies before it wait for the AOF as every reply does.
    let persistence = node.borrow().persistence;
    wait_for_aof(ctx, persistence, fsyncs_before).await;
    if !out.is_empty() && stream.write_all(out).await.is_err() {
        return false;
    }
    out.clear();
    let fsyncs = ctx.disk().fsyncs();
    let mut chunk = [0u8; 4096];
    loop {
        // Redis ends a timeout once its wall clock is past the deadline.
        let nap = match until {
            Block::Forever => None,
            Block::Until(at) => {
                // At least 1 ms: past the deadline while a script holds the server, the
                // timeout waits for it, and a nap of 0 would spin.
                let left = at.saturating_add(1).saturating_sub(ctx.wall_ms()).max(1);
                Some(Duration::from_millis(left as u64).min(BLOCKED_CHECK))
            }
        };
        let timer = async {
            match nap {
                Some(d) => ctx.sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            msg = inbox.recv() => {
                let Some(m) = msg else { return false };
                m.encode_resp(client.resp, out);
                while let Ok(m) = inbox.try_recv() {
                    m.encode_resp(client.resp, out);
                }
                if !node.borrow().server.is_blocked(client.id) {
                    // The pop it got is in the AOF before the client hears of it.
                    wait_for_aof(ctx, persistence, fsyncs).await;
                    return true;
                }
                if stream.write_all(out).await.is_err() {
                    return false;
                }
                out.clear();
            }
            _ = timer => {
                let ended = node.borrow_mut().server.time_out_blocked(ctx.wall_ms());
                deliver(node, ended);
            }
            read = stream.read(ctx, &mut chunk) => match read {
                Ok(0) | Err(_) => return false,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            },
        }
    }
}

/// A command as a short printable line for traces.
pub(crate) fn show(args: &[Vec<u8>]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| {
            let w = String::from_utf8_lossy(a);
            // Scripts are long: their first line says which one it is.
            w.lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(48)
                .collect()
        })
        .collect();
    words.join(" ")
}

pub(crate) fn record_expired(ctx: &NodeCtx, keys: &[Vec<u8>]) {
    for k in keys {
        tracing::debug!(key = %String::from_utf8_lossy(k), "expired");
        ctx.record(
            ctx.event(EventType::Event, names::EXPIRE)
                .key(String::from_utf8_lossy(k)),
        );
    }
}

/// Write a primary's effects to its AOF and its replication stream.
pub(crate) fn propagate(ctx: &NodeCtx, node: &Node, cmds: &[Vec<Vec<u8>>]) {
    if cmds.is_empty() {
        return;
    }
    let bytes = encode_commands(cmds);
    let persistence = {
        let mut n = node.borrow_mut();
        n.stream.append(&bytes);
        n.persistence
    };
    persist(ctx, persistence, &bytes);
}
