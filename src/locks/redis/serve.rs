//! The Redis node: network edge, active expiry and AOF persistence around the pure
//! [`RedisServer`] model.

use super::conn::serve;
use super::resp::{decode_command, encode_command};
use super::server::RedisServer;
use crate::history::EventType;
use crate::scenario::Persistence;
use crate::sim::NodeCtx;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

/// Redis's TCP port.
pub const REDIS_PORT: u16 = 6379;

const AOF: &str = "appendonly.aof";

/// Run a Redis node on `ctx` with the given persistence, until it crashes.
///
/// * Keys expire by the node's *wall* clock, lazily on access and in an active cycle ten
///   times a second (Redis's default `hz 10`); both are recorded as `expire` events.
/// * `always` appends and fsyncs the AOF before replying; `everysec` appends and fsyncs
///   once a second (a crash loses the rest); `none` keeps nothing across a restart.
pub async fn serve_node(ctx: NodeCtx, persistence: Persistence) {
    let server = Rc::new(RefCell::new(RedisServer::new()));
    if persistence != Persistence::None {
        let log = read_aof(ctx.disk().read(AOF));
        server.borrow_mut().load(ctx.wall_ms(), &log);
    }
    {
        let (ctx2, server) = (ctx.clone(), server.clone());
        ctx.spawn(async move {
            loop {
                ctx2.sleep(Duration::from_millis(100)).await;
                let keys = server.borrow_mut().active_expire(ctx2.wall_ms());
                let dels: Vec<Vec<Vec<u8>>> = keys
                    .iter()
                    .map(|k| vec![b"DEL".to_vec(), k.clone()])
                    .collect();
                record_expired(&ctx2, &keys);
                persist(&ctx2, persistence, &dels);
            }
        });
    }
    if persistence == Persistence::Everysec {
        let ctx2 = ctx.clone();
        ctx.spawn(async move {
            loop {
                ctx2.sleep(Duration::from_secs(1)).await;
                ctx2.disk().fsync(AOF);
            }
        });
    }
    serve(ctx, REDIS_PORT, move |ctx, args| {
        let out = server.borrow_mut().execute(ctx.wall_ms(), &args);
        tracing::debug!(
            wall_ms = ctx.wall_ms(),
            "{} -> {:?}",
            show(&args),
            out.reply
        );
        record_expired(ctx, &out.expired);
        persist(ctx, persistence, &out.propagate);
        out.reply
    })
    .await
}

/// A command as a short printable line for traces.
fn show(args: &[Vec<u8>]) -> String {
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

fn record_expired(ctx: &NodeCtx, keys: &[Vec<u8>]) {
    for k in keys {
        tracing::debug!(key = %String::from_utf8_lossy(k), "expired");
        ctx.record(
            ctx.event(EventType::Event, "expire")
                .key(String::from_utf8_lossy(k)),
        );
    }
}

fn persist(ctx: &NodeCtx, persistence: Persistence, cmds: &[Vec<Vec<u8>>]) {
    if persistence == Persistence::None || cmds.is_empty() {
        return;
    }
    let mut bytes = Vec::new();
    for c in cmds {
        let args: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
        encode_command(&args, &mut bytes);
    }
    let mut disk = ctx.disk();
    disk.append(AOF, &bytes);
    if persistence == Persistence::Always {
        disk.fsync(AOF);
    }
}

/// Decode an AOF; a torn tail (a crash mid-append) is dropped, as `aof-load-truncated yes`.
fn read_aof(mut bytes: &[u8]) -> Vec<Vec<Vec<u8>>> {
    let mut log = Vec::new();
    while let Ok(Some((cmd, n))) = decode_command(bytes) {
        log.push(cmd);
        bytes = &bytes[n..];
    }
    log
}
