//! Asynchronous primary → replica replication, as Redis does it:
//!
//! * The primary appends the *effects* of every write (what it also writes to the AOF) to
//!   a replication stream whose byte position is the replication offset.
//! * A replica connects, sends `PSYNC`, receives `+FULLRESYNC <replid> <offset>` and a
//!   snapshot of the dataset, then applies the stream in order — each command after a lag
//!   drawn from `replication_lag_ms` — and acknowledges its applied offset with
//!   `REPLCONF ACK <offset>`. The primary never waits for replicas: a write is
//!   acknowledged to the client before any replica has it.
//! * `WAIT numreplicas timeout` blocks the calling client until that many replicas have
//!   acknowledged the offset of its last write, or the timeout passes, and returns how
//!   many did. It does not make the write durable against failover: the replica that
//!   gets promoted may still be one that did not acknowledge (Redis docs, "WAIT").
//! * `REPLICAOF NO ONE` promotes a replica (it keeps its data and offset); `REPLICAOF host
//!   port` demotes a primary, whose dataset is then replaced by a full resync from the
//!   new primary — the writes it accepted while partitioned are dropped.
//!
//! Partial resynchronisation (the backlog) is not modelled: every (re)connection is a
//! full resync, which is semantically what a replica sees after a long partition.

use super::aof::{persist, read_aof, rewrite_aof, wait_for_aof};
use super::resp::{decode, decode_command, encode_command, encode_commands, Value};
use super::state::{Node, RedisNodeState, Role};
use super::REDIS_PORT;
use crate::history::names;
use crate::history::EventType;
use crate::net::tcp::{connect, read_alive, Keepalive};
use crate::sim::NodeCtx;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A replica that has not sent a byte for this long (local time) drops its link and
/// reconnects (Redis's `repl-timeout`, scaled down like the TTLs).
const REPL_TIMEOUT: Duration = Duration::from_millis(1000);
/// The primary pings its replicas through the stream this often while idle.
const PING_PERIOD: Duration = Duration::from_millis(300);

/// `ROLE`.
pub(crate) fn role_reply(n: &RedisNodeState) -> Value {
    match &n.role {
        Role::Primary => Value::array(vec![
            Value::bulk(b"master"),
            Value::int(n.stream.offset() as i64),
            Value::array(
                n.stream
                    .acks
                    .iter()
                    .map(|(name, (_, off))| {
                        let off = off.unwrap_or(0);
                        Value::array(vec![
                            Value::bulk(name.as_bytes()),
                            Value::bulk(REDIS_PORT.to_string().as_bytes()),
                            Value::bulk(off.to_string().as_bytes()),
                        ])
                    })
                    .collect(),
            ),
        ]),
        Role::Replica { primary } => Value::array(vec![
            Value::bulk(b"slave"),
            Value::bulk(primary.as_bytes()),
            Value::int(REDIS_PORT as i64),
            Value::bulk(b"connected"),
            Value::int(n.applied as i64),
        ]),
    }
}

/// `REPLICAOF NO ONE` / `REPLICAOF host port`.
pub(crate) fn replicaof(ctx: &NodeCtx, node: &Node, args: &[Vec<u8>], lag: [u64; 2]) -> Value {
    if args.len() != 3 {
        return Value::err("ERR wrong number of arguments for 'replicaof' command");
    }
    let host = String::from_utf8_lossy(&args[1]).into_owned();
    let port = String::from_utf8_lossy(&args[2]).to_ascii_lowercase();
    if host.eq_ignore_ascii_case("no") && port == "one" {
        let mut n = node.borrow_mut();
        if let Role::Replica { .. } = n.role {
            n.role = Role::Primary;
            n.generation += 1;
            let applied = n.applied;
            n.stream.restart_at(applied);
            drop(n);
            tracing::info!("promoted to primary at offset {applied}");
            ctx.record(ctx.event(EventType::Event, names::PROMOTE).value(applied));
        }
        return Value::ok();
    }
    if port.parse::<u16>().is_err() {
        return Value::err("ERR Invalid master port");
    }
    {
        let mut n = node.borrow_mut();
        if n.role
            == (Role::Replica {
                primary: host.clone(),
            })
        {
            return Value::simple("OK Already connected to specified master");
        }
        let was_primary = n.role == Role::Primary;
        n.role = Role::Replica {
            primary: host.clone(),
        };
        n.generation += 1;
        n.stream.acks.clear();
        n.stream.changed.notify_waiters();
        drop(n);
        tracing::info!("now a replica of {host}");
        let f = if was_primary {
            names::DEMOTE
        } else {
            names::REPLICAOF
        };
        ctx.record(ctx.event(EventType::Event, f).value(host));
    }
    start_replica(ctx, node, lag);
    Value::ok()
}

/// `WAIT`: block until `n` replicas acknowledged `target`, or `timeout_ms` (0: forever).
pub(crate) async fn wait(
    ctx: &NodeCtx,
    node: &Node,
    target: u64,
    n: i64,
    timeout_ms: u64,
) -> usize {
    if node.borrow().role != Role::Primary {
        return 0;
    }
    let start = ctx.mono_ns();
    loop {
        let (count, changed) = {
            let s = &node.borrow().stream;
            (s.acked(target), s.changed.clone())
        };
        let elapsed_ms = ((ctx.mono_ns() - start) / 1_000_000) as u64;
        if count as i64 >= n || (timeout_ms > 0 && elapsed_ms >= timeout_ms) {
            return count;
        }
        let remaining = if timeout_ms == 0 {
            u64::MAX / 4
        } else {
            timeout_ms - elapsed_ms
        };
        tokio::select! {
            biased;
            _ = changed.notified() => {}
            _ = ctx.sleep(Duration::from_millis(remaining.max(1))) => {}
        }
    }
}

/// Primary side of a `PSYNC`: send a snapshot, then stream writes until the link breaks
/// or this node stops being primary.
pub(crate) async fn feed_replica(
    ctx: &NodeCtx,
    node: &Node,
    stream: crate::net::SimStream,
    peer: String,
) {
    let (mut rd, mut wr, _) = stream.into_split();
    if node.borrow().role != Role::Primary {
        let mut out = Vec::new();
        Value::err("NOMASTERLINK Can't SYNC while not connected with my master").encode(&mut out);
        let _ = wr.write_all(&out).await;
        return;
    }
    let (gen, link, mut pos, hello) = {
        let mut n = node.borrow_mut();
        let offset = n.stream.offset();
        let link = n.stream.next_link;
        n.stream.next_link += 1;
        n.stream.acks.insert(peer.clone(), (link, None));
        n.stream.backlog = true;
        let mut hello = format!("+FULLRESYNC {} {}\r\n", n.stream.replid, offset).into_bytes();
        Value::bulk(&encode_commands(&n.server.snapshot())).encode(&mut hello);
        (n.generation, link, offset, hello)
    };
    if wr.write_all(&hello).await.is_err() {
        return;
    }
    // Acknowledgements come back on the same connection. The reader outlives this
    // feeder (which stops on a role change), so it keeps the connection alive-checked.
    let (Ok(local), Ok(remote)) = (rd.local_addr(), rd.peer_addr()) else {
        return;
    };
    let ka = Keepalive::new(local, remote);
    {
        let (ctx2, node, peer) = (ctx.clone(), node.clone(), peer.clone());
        ctx.spawn(async move {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1024];
            while let Ok(n) = read_alive(&ctx2, &ka, &mut rd, &mut chunk).await {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                while let Ok(Some((cmd, used))) = decode_command(&buf) {
                    buf.drain(..used);
                    let ack = match &cmd[..] {
                        [c, sub, off]
                            if c.eq_ignore_ascii_case(b"replconf")
                                && sub.eq_ignore_ascii_case(b"ack") =>
                        {
                            std::str::from_utf8(off).ok().and_then(|s| s.parse().ok())
                        }
                        _ => None,
                    };
                    if let Some(off) = ack {
                        let mut n = node.borrow_mut();
                        if let Some(entry) = n.stream.acks.get_mut(&peer) {
                            if entry.0 == link {
                                entry.1 = Some(off);
                            }
                        }
                        n.stream.changed.notify_waiters();
                    }
                }
            }
            let mut n = node.borrow_mut();
            if n.stream.acks.get(&peer).is_some_and(|e| e.0 == link) {
                n.stream.acks.remove(&peer);
            }
        });
    }
    loop {
        let (data, changed) = {
            let n = node.borrow();
            if n.generation != gen {
                return;
            }
            let s = &n.stream;
            let data = (s.offset() > pos).then(|| s.bytes[(pos - s.base) as usize..].to_vec());
            (data, s.changed.clone())
        };
        match data {
            Some(d) => {
                if wr.write_all(&d).await.is_err() {
                    return;
                }
                pos += d.len() as u64;
            }
            None => {
                tokio::select! {
                    biased;
                    _ = changed.notified() => {}
                    _ = ctx.sleep(PING_PERIOD) => {
                        // Idle: a PING through the stream keeps the replica's timeout at
                        // bay and, as in Redis, advances the offset.
                        let mut n = node.borrow_mut();
                        if n.generation == gen && n.stream.offset() == pos {
                            let mut ping = Vec::new();
                            encode_command(&[b"PING"], &mut ping);
                            n.stream.append(&ping);
                        }
                    }
                }
            }
        }
    }
}

/// Spawn the replica side: connect to the primary, full resync, apply the stream.
pub(crate) fn start_replica(ctx: &NodeCtx, node: &Node, lag: [u64; 2]) {
    let (ctx2, node) = (ctx.clone(), node.clone());
    ctx.spawn(async move { replica_link(ctx2, node, lag).await });
}

async fn replica_link(ctx: NodeCtx, node: Node, lag: [u64; 2]) {
    let (gen, primary) = {
        let n = node.borrow();
        match &n.role {
            Role::Replica { primary } => (n.generation, primary.clone()),
            Role::Primary => return,
        }
    };
    let current = |node: &Node| node.borrow().generation == gen;
    while current(&node) {
        // `_open` lives as long as both halves of the stream: this iteration.
        let attempt = connect(&ctx, &primary, REDIS_PORT, Duration::from_millis(200));
        let (mut rd, mut wr, _open) = match attempt.await {
            Ok(Ok(s)) => s.into_split(),
            _ => {
                ctx.sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let mut psync = Vec::new();
        encode_command(&[b"PSYNC", b"?", b"-1"], &mut psync);
        if wr.write_all(&psync).await.is_err() {
            continue;
        }
        let mut buf = Vec::new();
        // +FULLRESYNC <replid> <offset>, then the snapshot as a bulk string.
        let Some(Value::Simple(line)) = read_value(&ctx, &mut rd, &mut buf).await else {
            ctx.sleep(Duration::from_millis(100)).await;
            continue;
        };
        let offset: Option<u64> = line
            .strip_prefix("FULLRESYNC ")
            .and_then(|rest| rest.split(' ').nth(1))
            .and_then(|o| o.parse().ok());
        let (Some(offset), Some(Value::Bulk(Some(snap)))) =
            (offset, read_value(&ctx, &mut rd, &mut buf).await)
        else {
            ctx.sleep(Duration::from_millis(100)).await;
            continue;
        };
        let cmds = read_aof(&snap);
        let persistence = {
            let mut n = node.borrow_mut();
            if n.generation != gen {
                return;
            }
            // A full resync replaces the dataset; connections and subscriptions stay.
            n.server.load(ctx.wall_ms(), &cmds);
            n.applied = offset;
            n.persistence_policy()
        };
        rewrite_aof(&ctx, persistence, &cmds);
        tracing::debug!("full resync from {primary} at offset {offset}");
        if send_ack(&mut wr, offset).await.is_err() {
            continue;
        }
        // Apply the stream until the link breaks or goes silent.
        let mut chunk = [0u8; 4096];
        loop {
            while let Ok(Some((cmd, used))) = decode_command(&buf) {
                let bytes = buf.drain(..used).collect::<Vec<u8>>();
                if lag[1] > 0 {
                    ctx.sleep_ms_in(lag).await;
                }
                let Some((applied, persistence)) = apply(&ctx, &node, gen, &cmd, used) else {
                    return;
                };
                let fsyncs = ctx.disk().fsyncs();
                persist(&ctx, persistence, &bytes);
                wait_for_aof(&ctx, persistence, fsyncs).await;
                if send_ack(&mut wr, applied).await.is_err() {
                    break;
                }
            }
            match ctx.timeout(REPL_TIMEOUT, rd.read(&mut chunk)).await {
                Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => break,
            }
            if !current(&node) {
                return;
            }
        }
        tracing::debug!("lost the link to {primary}; reconnecting");
    }
}

/// Apply one replicated command; None if this link's generation is over.
fn apply(
    ctx: &NodeCtx,
    node: &Node,
    gen: u64,
    cmd: &[Vec<u8>],
    used: usize,
) -> Option<(u64, super::params::Persistence)> {
    let mut n = node.borrow_mut();
    if n.generation != gen {
        return None;
    }
    // Replicas apply the primary's DELs; their own lazy expiry is not an event.
    n.server.execute(ctx.wall_ms(), cmd);
    n.applied += used as u64;
    Some((n.applied, n.persistence_policy()))
}

async fn send_ack(wr: &mut crate::net::tcp::WriteHalf, offset: u64) -> std::io::Result<()> {
    let mut out = Vec::new();
    let off = offset.to_string();
    encode_command(&[b"REPLCONF", b"ACK", off.as_bytes()], &mut out);
    wr.write_all(&out).await
}

/// Read one RESP value within the replication timeout.
async fn read_value(
    ctx: &NodeCtx,
    rd: &mut crate::net::tcp::ReadHalf,
    buf: &mut Vec<u8>,
) -> Option<Value> {
    let mut chunk = [0u8; 4096];
    loop {
        match decode(buf) {
            Ok(Some((v, used))) => {
                buf.drain(..used);
                return Some(v);
            }
            Ok(None) => {}
            Err(_) => return None,
        }
        match ctx.timeout(REPL_TIMEOUT, rd.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    }
}
