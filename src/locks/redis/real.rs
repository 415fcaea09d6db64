//! The Redis families' real counterpart for live mode: Debian's `redis-server` (one for
//! `redis`, N independent ones for `redlock`; for `redis-replicated` a primary, its
//! replicas and real Sentinels), with the scenario's persistence and failure detection.
//!
//! Every address a server tells another is a proxy's: replicas follow the primary's
//! public port and announce their own (`replica-announce-port`), Sentinels monitor the
//! primary's public port and announce theirs (`sentinel announce-port`), so replication,
//! Sentinel-to-server and Sentinel-to-Sentinel traffic all cross the run's proxies.

use super::resp::{decode, encode_command, Value};
use super::{Persistence, REDIS_PORT, SENTINEL_PORT};
use crate::real::{find_binary, Addresses, Patience, RealCluster, RealPort, WaitError};
use crate::sim::{LocalBoxFuture, NodeCtx};
use std::io;
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The name Sentinels monitor the primary as (the model's too).
const MASTER: &str = super::MASTER_NAME;

/// Real Redis servers for a live run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RealRedis {
    /// The scenario's server nodes: `redis-*`, then `sentinel-*` when replicated.
    pub servers: Vec<String>,
    /// `appendonly`/`appendfsync`.
    pub persistence: Persistence,
    /// Sentinel's `down-after-milliseconds` when replicated (`None`: independent
    /// primaries).
    pub down_after_ms: Option<u64>,
    /// Keys of the model the real servers do not have, with why, for the run's list.
    pub model_only: Vec<String>,
}

impl RealRedis {
    fn replicated(&self) -> bool {
        self.down_after_ms.is_some()
    }

    fn redis_nodes(&self) -> impl Iterator<Item = &String> {
        self.servers.iter().filter(|n| n.starts_with("redis-"))
    }

    fn sentinels(&self) -> impl Iterator<Item = &String> {
        self.servers.iter().filter(|n| n.starts_with("sentinel-"))
    }
}

impl RealCluster for RealRedis {
    fn system(&self) -> &'static str {
        "redis-server"
    }

    fn ports(&self, node: &str) -> Vec<RealPort> {
        let sim_port = if node.starts_with("sentinel-") {
            SENTINEL_PORT
        } else {
            REDIS_PORT
        };
        vec![RealPort {
            label: "redis",
            sim_port: Some(sim_port),
        }]
    }

    fn command(&self, node: &str, dir: &Path, addrs: &Addresses) -> io::Result<Command> {
        let mut cmd = Command::new(find_binary("redis-server", "redis-server")?);
        let port = addrs.listen(node, "redis").to_string();
        let primary = addrs.public("redis-0", "redis").to_string();
        if let Some(down_after_ms) = self.down_after_ms.filter(|_| node.starts_with("sentinel-")) {
            // Sentinel rewrites its file as it learns (epochs, peers, the primary):
            // written once, so a restarted sentinel resumes from what it knew.
            let conf = dir.join("sentinel.conf");
            if !conf.exists() {
                let quorum = self.sentinels().count() / 2 + 1;
                let text = format!(
                    "port {port}\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n\
                     dir {dir}\n\
                     sentinel announce-ip 127.0.0.1\n\
                     sentinel announce-port {public}\n\
                     sentinel monitor {MASTER} 127.0.0.1 {primary} {quorum}\n\
                     sentinel down-after-milliseconds {MASTER} {down_after_ms}\n\
                     sentinel failover-timeout {MASTER} {timeout}\n\
                     sentinel parallel-syncs {MASTER} 1\n",
                    dir = dir.display(),
                    public = addrs.public(node, "redis"),
                    timeout = 2 * down_after_ms,
                );
                std::fs::write(&conf, text)?;
            }
            cmd.arg(&conf).arg("--sentinel");
            return Ok(cmd);
        }
        let (aof, fsync) = match self.persistence {
            Persistence::None => ("no", "everysec"),
            Persistence::Everysec => ("yes", "everysec"),
            Persistence::Always => ("yes", "always"),
        };
        let public = addrs.public(node, "redis").to_string();
        cmd.args(["--port", &port, "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", aof, "--appendfsync", fsync])
            .args(["--daemonize", "no", "--protected-mode", "yes"])
            // A replica's first sync starts at once, not after Redis's 5 s wait.
            .args(["--repl-diskless-sync-delay", "0"])
            // Expirations as pub/sub events: live mode records them as the model does.
            .args(["--notify-keyspace-events", "Ex"])
            // What the primary lists in INFO, and Sentinels dial: the proxy.
            .args(["--replica-announce-ip", "127.0.0.1"])
            .args(["--replica-announce-port", &public])
            .arg("--dir")
            .arg(dir);
        // A crashed primary restarts as a primary, and the Sentinels demote it, as they
        // would a real one.
        if self.replicated() && node != "redis-0" {
            cmd.args(["--replicaof", "127.0.0.1", &primary]);
        }
        Ok(cmd)
    }

    /// A Sentinel starts once every replica is linked to the primary: its first `INFO`
    /// of the primary finds them all (the next comes 10 s later).
    fn wait_before_start(
        &self,
        node: &str,
        addrs: &Addresses,
        patience: &Patience,
    ) -> Result<(), WaitError> {
        if !node.starts_with("sentinel-") {
            return Ok(());
        }
        let primary = addrs.listen("redis-0", "redis");
        let replicas = self.redis_nodes().count() - 1;
        let what = format!("redis-0 to list its {replicas} replicas");
        patience.wait(&what, || {
            let info = ask(primary, &[b"INFO", b"replication"]);
            matches!(info, Ok(Value::Bulk(Some(t)))
                if String::from_utf8_lossy(&t).contains(&format!("connected_slaves:{replicas}")))
        })
    }

    /// For a replicated set: every replica's link to the primary is up and every
    /// Sentinel knows every replica and every other Sentinel (Sentinel finds both
    /// through the primary, every 2 s or so).
    fn wait_ready(&self, addrs: &Addresses, patience: &Patience) -> Result<(), WaitError> {
        if !self.replicated() {
            return Ok(());
        }
        let replicas = self.redis_nodes().count() - 1;
        let peers = self.sentinels().count() - 1;
        for name in self.servers.iter().filter(|n| *n != "redis-0") {
            let port = addrs.listen(name, "redis");
            let what = format!(
                "{name} (replicas in sync, sentinels knowing {replicas} replicas and {peers} \
                 other sentinels)"
            );
            patience.wait(&what, || in_sync(name, port, replicas, peers))?;
        }
        Ok(())
    }

    fn not_applied(&self) -> Vec<String> {
        self.model_only.clone()
    }

    fn observer(&self, node: &str, ctx: NodeCtx) -> Option<LocalBoxFuture<'static, ()>> {
        // Sentinels keep no keys.
        node.starts_with("redis-")
            .then(|| Box::pin(watch_expirations(ctx)) as LocalBoxFuture<'static, ()>)
    }
}

/// Whether replica or Sentinel `name` on `port` is in sync (see
/// [`RealRedis::wait_ready`]).
fn in_sync(name: &str, port: u16, replicas: usize, peers: usize) -> bool {
    if name.starts_with("redis-") {
        let info = ask(port, &[b"INFO", b"replication"]);
        return matches!(info, Ok(Value::Bulk(Some(t)))
            if String::from_utf8_lossy(&t).contains("master_link_status:up"));
    }
    let Ok(Value::Array(Some(fields))) = ask(port, &[b"SENTINEL", b"master", MASTER.as_bytes()])
    else {
        return false;
    };
    let field = |key: &str| -> Option<usize> {
        let i = fields
            .iter()
            .position(|f| f.as_bulk() == Some(key.as_bytes()))?;
        std::str::from_utf8(fields.get(i + 1)?.as_bulk()?)
            .ok()?
            .parse()
            .ok()
    };
    field("num-slaves") == Some(replicas) && field("num-other-sentinels") == Some(peers)
}

/// Send one command to the server on `port` and read its reply (blocking, 1 s deadline).
pub(crate) fn ask(port: u16, args: &[&[u8]]) -> io::Result<Value> {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut out = Vec::new();
    encode_command(args, &mut out);
    s.write_all(&out)?;
    let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::other("connection closed before a reply"));
        }
        buf.extend_from_slice(&chunk[..n]);
        match decode(&buf) {
            Ok(Some((v, _))) => return Ok(v),
            Ok(None) => {}
            Err(e) => return Err(io::Error::other(format!("bad reply: {e:?}"))),
        }
    }
}

/// Record the server's key expirations as `expire` events of its node, as the model's
/// server does, from Redis's keyspace notifications (`__keyevent@0__:expired`); the
/// `lock-linearizable` check needs them. Reconnects after a crash. A notification is
/// read when it arrives, so it may be stamped a little after the expiry itself.
async fn watch_expirations(ctx: NodeCtx) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let port = ctx
        .live()
        .and_then(|n| n.port(ctx.name()))
        .expect("a server port");
    loop {
        if let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
            let mut out = Vec::new();
            encode_command(&[b"SUBSCRIBE", b"__keyevent@0__:expired"], &mut out);
            if s.write_all(&out).await.is_ok() {
                let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
                while let Ok(n) = s.read(&mut chunk).await {
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Ok(Some((v, used))) = decode(&buf) {
                        buf.drain(..used);
                        if let Some(key) = expired_key(&v) {
                            super::record_expired(&ctx, std::slice::from_ref(key));
                        }
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The key of an `expired` keyspace notification.
fn expired_key(v: &Value) -> Option<&Vec<u8>> {
    let (Value::Array(Some(items)) | Value::Push(items)) = v else {
        return None;
    };
    match &items[..] {
        [Value::Bulk(Some(kind)), _, Value::Bulk(Some(key))] if kind == b"message" => Some(key),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real::{ServerProcess, Supervisor};
    use std::io::{Read, Write};
    use std::rc::Rc;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn send(port: u16, cmd: &[u8]) -> io::Result<String> {
        let mut s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_millis(300)))?;
        s.write_all(cmd)?;
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";
    const GET: &[u8] = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";

    #[test]
    fn pause_resume_crash_restart_and_kill_on_drop() {
        let root = std::env::temp_dir().join(format!("locksim-real-test-{}", std::process::id()));
        let sup = Supervisor::default();
        let cluster: Rc<dyn RealCluster> = Rc::new(RealRedis {
            servers: vec!["redis-0".into()],
            persistence: Persistence::Always,
            down_after_ms: None,
            model_only: Vec::new(),
        });
        let mut addrs = Addresses::default();
        let port = crate::real::free_port().unwrap();
        addrs.insert("redis-0", "redis", port, crate::real::free_port().unwrap());
        let mut p = ServerProcess::start("redis-0", &root, cluster, Rc::new(addrs), &sup)
            .expect("redis-server starts (scripts/test installs it)");
        let patience = Patience {
            until: std::time::Instant::now() + Duration::from_secs(10),
            limit_s: 10,
            stop: Arc::new(AtomicBool::new(false)),
        };
        p.wait_listening(&patience).unwrap();
        assert_eq!(send(port, PING).unwrap(), "+PONG\r\n");
        p.pause().unwrap();
        assert!(
            send(port, PING).is_err(),
            "a stopped server answers nothing"
        );
        p.resume().unwrap();
        assert_eq!(send(port, PING).unwrap(), "+PONG\r\n");
        let set = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
        assert_eq!(send(port, set).unwrap(), "+OK\r\n");
        // appendfsync always: the write survives SIGKILL and a restart.
        p.crash().unwrap();
        assert!(send(port, PING).is_err());
        p.restart().unwrap();
        p.wait_listening(&patience).unwrap();
        // A restarted server answers LOADING until it has read its AOF.
        let mut got = send(port, GET).unwrap_or_default();
        for _ in 0..500 {
            if got == "$1\r\nv\r\n" {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            got = send(port, GET).unwrap_or_default();
        }
        assert_eq!(got, "$1\r\nv\r\n");
        assert_eq!(sup.processes().len(), 1);
        p.pause().unwrap();
        drop(p); // killed although stopped, its folder removed
        assert!(send(port, PING).is_err());
        assert!(sup.processes().is_empty());
        assert!(!root.join("redis-0").exists());
        let _ = std::fs::remove_dir_all(&root);
    }
}
