//! The ZooKeeper family's real counterpart for live mode: Debian's Apache ZooKeeper
//! (`QuorumPeerMain` from `/usr/share/java/zookeeper.jar`), standalone for one server,
//! else an ensemble of `zk-0 .. zk-N-1` with ids `1 .. N`.
//!
//! Every address a server is told is a proxy's: each `zoo.cfg` names its own quorum and
//! election ports as it listens on them and every other server's public ones, so the
//! followers' links to the leader and the election's connections cross the run's
//! proxies. The election handshake names the sender's own election address for the
//! receiver to dial back; the proxy puts the sender's public port in its place
//! ([`election_rewrite`]).
//!
//! The history's `expire` events (a session close deleting a lock's owner node) come
//! from the servers' transaction logs ([`log_tail`]).

mod log_tail;

use super::params::ZkParams;
use super::proto::CLIENT_PORT;
use crate::history::values::ZkExpire;
use crate::history::{names, EventType, EventValue};
use crate::real::{
    find_binary, Addresses, Opening, OpeningRewrite, Patience, RealCluster, RealPort, WaitError,
};
use crate::sim::{LocalBoxFuture, NodeCtx};
use log_tail::LockState;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// Debian's `libzookeeper-java` server jar (its manifest's `Class-Path` names the rest).
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

/// An SLF4J binding and log4j 1.2, so the server logs to its `server.log`.
pub const LOG4J_JARS: [&str; 2] = [
    "/usr/share/java/slf4j-log4j12.jar",
    "/usr/share/java/log4j-1.2.jar",
];

/// Logs at INFO to stdout, which the run sends to `server.log`.
pub const LOG4J_CONFIG: &str = "\
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] %m%n
";

/// The JVM's flags for a ZooKeeper server: a small heap, one GC thread and C1 only
/// (quicker to start, light on 2 cores), no `/tmp/hsperfdata_<user>` file, no admin
/// server, no JMX log4j bean.
pub const JVM_FLAGS: [&str; 7] = [
    "-Xmx128m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-XX:-UsePerfData",
    "-Dzookeeper.admin.enableServer=false",
    "-Dzookeeper.jmx.log4j.disable=true",
];

/// `QuorumCnxManager`'s protocol versions: the first long of an election connection.
const PROTOCOL_V1: i64 = -65536;
/// The version sent when `multiAddress.enabled` is on (addresses joined by `|`).
const PROTOCOL_V2: i64 = -65535;

/// The longest address text an election handshake carries (`InitialMessage`'s limit).
const MAX_ADDRESS: i32 = 2048;

/// How long one `srvr` probe waits for its reply.
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// Real ZooKeeper servers for a live run.
#[derive(Debug, Default)]
pub(crate) struct RealZooKeeper {
    /// The `[lock]` table (servers, tick, container check interval).
    pub params: ZkParams,
    /// Each server's folder, once its command is asked for.
    dirs: RefCell<BTreeMap<String, PathBuf>>,
    /// The lock recipe's state, from every server's log.
    locks: Rc<RefCell<LockState>>,
}

impl RealZooKeeper {
    /// The servers of `params`.
    pub(crate) fn new(params: ZkParams) -> RealZooKeeper {
        let locks = LockState::new(params.servers as usize);
        RealZooKeeper {
            params,
            dirs: RefCell::default(),
            locks: Rc::new(RefCell::new(locks)),
        }
    }

    fn standalone(&self) -> bool {
        self.params.servers == 1
    }

    fn nodes(&self) -> impl Iterator<Item = (u32, String)> {
        (0..self.params.servers).map(|i| (i + 1, format!("zk-{i}")))
    }

    /// Server `node`'s `zoo.cfg`, with its data in `data`.
    fn config(&self, node: &str, data: &Path, addrs: &Addresses) -> String {
        let tick = self.params.tick_ms;
        let mut text = format!(
            "tickTime={tick}\n\
             initLimit=10\n\
             syncLimit=5\n\
             dataDir={data}\n\
             clientPort={client}\n\
             clientPortAddress=127.0.0.1\n\
             admin.enableServer=false\n\
             4lw.commands.whitelist=*\n\
             maxClientCnxns=0\n\
             minSessionTimeout={min}\n\
             maxSessionTimeout={max}\n\
             reconfigEnabled=false\n",
            data = data.display(),
            client = addrs.listen(node, "client"),
            min = 2 * tick,
            max = 20 * tick,
        );
        if !self.standalone() {
            for (id, name) in self.nodes() {
                // Its own ports as it listens on them; the others' proxies.
                let port = |label| {
                    if name == node {
                        addrs.listen(&name, label)
                    } else {
                        addrs.public(&name, label)
                    }
                };
                text += &format!(
                    "server.{id}=127.0.0.1:{}:{}\n",
                    port("quorum"),
                    port("election")
                );
            }
        }
        text
    }
}

/// ZooKeeper id of `zk-i`: `i + 1`.
fn server_id(node: &str) -> io::Result<u32> {
    node.strip_prefix("zk-")
        .and_then(|i| i.parse::<u32>().ok())
        .map(|i| i + 1)
        .ok_or_else(|| io::Error::other(format!("{node} is not a ZooKeeper server")))
}

impl RealCluster for RealZooKeeper {
    fn system(&self) -> &'static str {
        "ZooKeeper"
    }

    fn ports(&self, _node: &str) -> Vec<RealPort> {
        let mut ports = vec![RealPort {
            label: "client",
            sim_port: Some(CLIENT_PORT),
        }];
        if !self.standalone() {
            ports.extend(["quorum", "election"].map(|label| RealPort {
                label,
                sim_port: None,
            }));
        }
        ports
    }

    fn command(&self, node: &str, dir: &Path, addrs: &Addresses) -> io::Result<Command> {
        let java = find_binary("java", "default-jre-headless")?;
        if let Some(missing) = [ZOOKEEPER_JAR]
            .iter()
            .chain(&LOG4J_JARS)
            .find(|j| !Path::new(j).is_file())
        {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{missing} not found: install ZooKeeper (`apt-get install -y zookeeper`)"),
            ));
        }
        self.dirs
            .borrow_mut()
            .insert(node.to_string(), dir.to_path_buf());
        let data = dir.join("data");
        let cfg = dir.join("zoo.cfg");
        let log4j = dir.join("log4j.properties");
        // Written at the first start only: a restart resumes from the same files.
        if !cfg.exists() {
            std::fs::create_dir_all(&data)?;
            std::fs::write(data.join("myid"), format!("{}\n", server_id(node)?))?;
            std::fs::write(&log4j, LOG4J_CONFIG)?;
            std::fs::write(&cfg, self.config(node, &data, addrs))?;
        }
        let mut cmd = Command::new(java);
        cmd.args(JVM_FLAGS)
            // ZooKeeper's ContainerManager, standalone and on the leader.
            .arg(format!(
                "-Dznode.container.checkIntervalMs={}",
                self.params.container_check_ms
            ))
            .arg(format!("-Djava.io.tmpdir={}", dir.display()))
            .arg(format!("-Dlog4j.configuration=file:{}", log4j.display()))
            .arg("-cp")
            .arg([ZOOKEEPER_JAR, LOG4J_JARS[0], LOG4J_JARS[1]].join(":"))
            // Without server lines it runs ZooKeeperServerMain (standalone) itself.
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(&cfg);
        Ok(cmd)
    }

    /// Every server answers `srvr` with its mode (`leader`, `follower`, `standalone`):
    /// an ensemble has elected a leader and every follower has synced with it.
    fn wait_ready(&self, addrs: &Addresses, patience: &Patience) -> Result<(), WaitError> {
        for (_, node) in self.nodes() {
            let port = addrs.listen(&node, "client");
            let what = format!("{node}: ZooKeeper serving (`srvr` on 127.0.0.1:{port})");
            patience.wait(&what, || {
                let reply = four_letter_word(port, "srvr").unwrap_or_default();
                ["leader", "follower", "standalone"]
                    .iter()
                    .any(|m| reply.contains(&format!("Mode: {m}")))
            })?;
        }
        Ok(())
    }

    /// Every key of `[lock]` is applied (the client's are the client's own; `tick_ms`,
    /// its session bounds and `container_check_ms` configure the servers), but the
    /// model's ensemble replicates with Raft where the real one runs ZAB.
    fn not_applied(&self) -> Vec<String> {
        if self.standalone() {
            return Vec::new();
        }
        vec![format!(
            "tick_ms = {} as the ensemble's Raft timing (the model elects in 2 to 4 ticks; \
             real ZooKeeper runs ZAB: FastLeaderElection, initLimit = 10 and syncLimit = 5 \
             ticks)",
            self.params.tick_ms
        )]
    }

    /// Record the lock owners session closes delete, as the model's servers do, from
    /// `node`'s transaction log.
    fn observer(&self, node: &str, ctx: NodeCtx) -> Option<LocalBoxFuture<'static, ()>> {
        let dir = self.dirs.borrow().get(node)?.join("data").join("version-2");
        let server = self.nodes().position(|(_, n)| n == node)?;
        Some(Box::pin(tail_log(ctx, server, dir, self.locks.clone())))
    }

    fn opening(&self, _node: &str, label: &str, addrs: &Addresses) -> Option<OpeningRewrite> {
        if label != "election" {
            return None;
        }
        let public: BTreeMap<i64, u16> = self
            .nodes()
            .map(|(id, name)| (i64::from(id), addrs.public(&name, "election")))
            .collect();
        Some(Arc::new(move |head: &[u8]| election_rewrite(head, &public)))
    }
}

/// The rewrite of an election connection's opening message (`QuorumCnxManager`'s
/// initial message: i64 protocol version, i64 sid, i32 length, that many bytes of
/// `host:port`, big-endian): the port becomes the sender's public election port in
/// `public` (by sid), so the receiver's dial-back crosses a proxy, and the sender is
/// named `zk-{sid - 1}`. Anything else passes as it is.
pub(crate) fn election_rewrite(head: &[u8], public: &BTreeMap<i64, u16>) -> Opening {
    let unchanged = || Opening::Forward {
        bytes: head.to_vec(),
        used: head.len(),
        source: None,
    };
    if head.len() < 8 {
        return Opening::More;
    }
    let version = i64::from_be_bytes(head[..8].try_into().expect("8 bytes"));
    if version != PROTOCOL_V1 && version != PROTOCOL_V2 {
        return unchanged();
    }
    if head.len() < 20 {
        return Opening::More;
    }
    let sid = i64::from_be_bytes(head[8..16].try_into().expect("8 bytes"));
    let len = i32::from_be_bytes(head[16..20].try_into().expect("4 bytes"));
    if len <= 0 || len > MAX_ADDRESS {
        return unchanged();
    }
    let end = 20 + len as usize;
    if head.len() < end {
        return Opening::More;
    }
    let Some(&port) = public.get(&sid) else {
        return unchanged();
    };
    let Ok(text) = std::str::from_utf8(&head[20..end]) else {
        return unchanged();
    };
    // One address, or several joined by `|` (version 2): each gets the public port.
    let mut addresses = Vec::new();
    for a in text.split('|') {
        let Some((host, p)) = a.rsplit_once(':') else {
            return unchanged();
        };
        if p.parse::<u16>().is_err() {
            return unchanged();
        }
        addresses.push(format!("{host}:{port}"));
    }
    let text = addresses.join("|");
    let mut bytes = head[..16].to_vec();
    bytes.extend_from_slice(&(text.len() as i32).to_be_bytes());
    bytes.extend_from_slice(text.as_bytes());
    Opening::Forward {
        bytes,
        used: end,
        source: Some(format!("zk-{}", sid - 1)),
    }
}

/// How often a server's transaction log is read.
const LOG_POLL: Duration = Duration::from_millis(5);

/// How much of a log is read at once, at first: ZooKeeper preallocates its logs with
/// zeros, so most reads at the tail find nothing. An entry longer than this doubles it.
const LOG_CHUNK: usize = 4 * 1024;

/// The longest entry followed (ZooKeeper's `jute.maxbuffer` is 1 MiB by default).
const LOG_CHUNK_MAX: usize = 4 * 1024 * 1024;

/// Follow server `server`'s transaction logs in `dir` (`log.<first zxid>`; a restart
/// starts a new one) and record an `expire` for every lock owner a committed session
/// close deletes, first seen here.
async fn tail_log(ctx: NodeCtx, server: usize, dir: PathBuf, locks: Rc<RefCell<LockState>>) {
    use std::os::unix::fs::FileExt;
    let mut files: BTreeMap<u64, (std::fs::File, u64)> = BTreeMap::new();
    let mut buf = vec![0u8; LOG_CHUNK];
    loop {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let first = name
                .to_str()
                .and_then(|n| n.strip_prefix("log."))
                .and_then(|z| u64::from_str_radix(z, 16).ok());
            if let Some(first) = first.filter(|z| !files.contains_key(z)) {
                if let Ok(f) = std::fs::File::open(entry.path()) {
                    files.insert(first, (f, 0));
                }
            }
        }
        for (file, offset) in files.values_mut() {
            while let Ok(n) = file.read_at(&mut buf, *offset) {
                let (at, lost) = locks.borrow_mut().feed(server, &buf[..n], *offset);
                for o in lost {
                    record_lost(&ctx, o);
                }
                if at == *offset {
                    if n == buf.len() && entry_len(&buf, *offset) > n && n < LOG_CHUNK_MAX {
                        buf.resize(2 * n, 0);
                        continue;
                    }
                    break;
                }
                *offset = at;
            }
        }
        tokio::time::sleep(LOG_POLL).await;
    }
}

/// The whole length of the entry that `buf`, read from a log at `offset`, starts with
/// (after the file header at offset 0): checksum, length, transaction, end byte.
fn entry_len(buf: &[u8], offset: u64) -> usize {
    let start = if offset == 0 { 16 } else { 0 };
    buf.get(start + 8..start + 12)
        .map(|b| i32::from_be_bytes(b.try_into().expect("4 bytes")))
        .map_or(0, |len| start + 13 + len.max(0) as usize)
}

/// Record an owner a session close deleted as an `expire` of its lock.
fn record_lost(ctx: &NodeCtx, o: log_tail::LostOwner) {
    tracing::debug!(
        lock = o.lock,
        node = o.path,
        "a session close deleted the lock's owner"
    );
    let value = ZkExpire {
        node: o.path,
        session: format!("0x{:x}", o.session),
        zxid: o.zxid,
    }
    .to_json();
    ctx.record(
        ctx.event(EventType::Event, names::EXPIRE)
            .key(o.lock)
            .value(value),
    );
}

/// Send a four-letter word to the server on `port` and read its reply (it closes the
/// connection after it).
fn four_letter_word(port: u16, word: &str) -> io::Result<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut s = TcpStream::connect_timeout(&addr, PROBE_TIMEOUT)?;
    s.set_read_timeout(Some(PROBE_TIMEOUT))?;
    s.set_write_timeout(Some(PROBE_TIMEOUT))?;
    s.write_all(word.as_bytes())?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(version: i64, sid: i64, addr: &str) -> Vec<u8> {
        let mut m = version.to_be_bytes().to_vec();
        m.extend_from_slice(&sid.to_be_bytes());
        m.extend_from_slice(&(addr.len() as i32).to_be_bytes());
        m.extend_from_slice(addr.as_bytes());
        m
    }

    fn public() -> BTreeMap<i64, u16> {
        [(1, 40001), (2, 40002), (3, 40003)].into_iter().collect()
    }

    #[test]
    fn rewrites_the_senders_election_port_to_its_public_one() {
        let mut head = message(PROTOCOL_V1, 2, "127.0.0.1:5555");
        // A notification that followed in the same read stays after the message.
        let used = head.len();
        head.extend_from_slice(b"rest");
        assert_eq!(
            election_rewrite(&head, &public()),
            Opening::Forward {
                bytes: message(PROTOCOL_V1, 2, "127.0.0.1:40002"),
                used,
                source: Some("zk-1".into()),
            }
        );
        let v2 = message(PROTOCOL_V2, 3, "127.0.0.1:5|localhost:6");
        let Opening::Forward { bytes, .. } = election_rewrite(&v2, &public()) else {
            panic!("a whole message");
        };
        assert_eq!(
            bytes,
            message(PROTOCOL_V2, 3, "127.0.0.1:40003|localhost:40003")
        );
    }

    #[test]
    fn a_message_in_pieces_asks_for_more() {
        let m = message(PROTOCOL_V1, 1, "127.0.0.1:12345");
        for cut in [0, 3, 8, 15, 19, 20, m.len() - 1] {
            assert_eq!(
                election_rewrite(&m[..cut], &public()),
                Opening::More,
                "{cut}"
            );
        }
        let Opening::Forward {
            bytes,
            used,
            source,
        } = election_rewrite(&m, &public())
        else {
            panic!("a whole message");
        };
        assert_eq!(bytes, message(PROTOCOL_V1, 1, "127.0.0.1:40001"));
        assert_eq!((used, source.as_deref()), (m.len(), Some("zk-0")));
    }

    #[test]
    fn other_bytes_pass_unchanged() {
        let unchanged = |head: &[u8]| Opening::Forward {
            bytes: head.to_vec(),
            used: head.len(),
            source: None,
        };
        let cases = [
            // Not this protocol's version (a pre-3.4 sender sends its sid first).
            message(3, 1, "127.0.0.1:1"),
            b"srvr\0\0\0\0\0".to_vec(),
            // No address, or an unreasonable length.
            message(PROTOCOL_V1, 1, ""),
            {
                let mut m = message(PROTOCOL_V1, 1, "x");
                m[16..20].copy_from_slice(&4096i32.to_be_bytes());
                m
            },
            // A sid not in the ensemble, an address without a port.
            message(PROTOCOL_V1, 9, "127.0.0.1:1"),
            message(PROTOCOL_V1, 1, "127.0.0.1"),
        ];
        for m in cases {
            assert_eq!(election_rewrite(&m, &public()), unchanged(&m), "{m:?}");
        }
    }

    #[test]
    fn config_names_own_listen_ports_and_the_others_public_ones() {
        let params: ZkParams = toml::from_str("servers = 3\ntick_ms = 50").unwrap();
        let zk = RealZooKeeper::new(params);
        let mut addrs = Addresses::default();
        for i in 0..3u16 {
            let node = format!("zk-{i}");
            for (j, label) in ["client", "quorum", "election"].into_iter().enumerate() {
                let base = 10_000 + 100 * i + 10 * j as u16;
                addrs.insert(&node, label, base, base + 1);
            }
        }
        let cfg = zk.config("zk-1", Path::new("/d/data"), &addrs);
        for line in [
            "tickTime=50\n",
            "clientPort=10100\n",
            "minSessionTimeout=100\n",
            "maxSessionTimeout=1000\n",
            "server.1=127.0.0.1:10011:10021\n",
            "server.2=127.0.0.1:10110:10120\n",
            "server.3=127.0.0.1:10211:10221\n",
        ] {
            assert!(cfg.contains(line), "{line} in\n{cfg}");
        }
        let one = RealZooKeeper::new(ZkParams::default());
        assert_eq!(one.ports("zk-0").len(), 1);
        assert!(!one
            .config("zk-0", Path::new("/d"), &addrs)
            .contains("server."));
    }
}
