//! A real etcd server for integration tests: Debian's `etcd-server` package (3.4), run as
//! a one-member cluster on two free loopback ports (client and peer) with a fresh data
//! directory, and killed when the [`RealEtcd`] is dropped.
//!
//! A test reaches it as `crate::support::real_etcd` (see `mod.rs`).
//! Without the `etcd` binary the start panics and says how to install it: a test that
//! compares with the real server never skips silently. [`RealEtcd::etcdctl`] needs the
//! `etcd-client` package as well, and panics the same way without it.
//!
//! Everything the server writes (WAL, snapshots, bbolt database, its log) stays in the
//! temporary directory: nothing under `/var/lib/etcd` is needed or touched, and the
//! package's systemd unit plays no part.
//!
//! The timing flags are etcd's defaults (heartbeat 100 ms, election timeout 1000 ms), as
//! the smallest lease TTL the server grants derives from them (see [`MIN_LEASE_TTL_SECS`]);
//! a single member elects itself after about 0.8 s, which is most of the start-up time.

use super::watchdog::{tail, Watchdog};

use std::fs::{self, File};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The Raft heartbeat interval in milliseconds (etcd's default).
pub const HEARTBEAT_MS: u32 = 100;

/// The Raft election timeout in milliseconds (etcd's default).
pub const ELECTION_TIMEOUT_MS: u32 = 1000;

/// The smallest lease TTL (s) the server grants: `ceil(1.5 × election timeout)`, here
/// ceil(1.5 s). A LeaseGrant asking for less is granted this TTL instead (measured).
pub const MIN_LEASE_TTL_SECS: i64 = 2;

/// The fixed `--initial-cluster-token`; with the peer URL it determines the member and
/// cluster IDs, so those change with the peer port from one start to the next.
pub const CLUSTER_TOKEN: &str = "locksim-etcd";

/// How long [`start_real_etcd`] waits for the server to be ready before it gives up.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Where Debian's `etcd-server` and `etcd-client` put the binaries.
const ETCD_BINARY: &str = "/usr/bin/etcd";
const ETCDCTL_BINARY: &str = "/usr/bin/etcdctl";

/// A running etcd member; dropping it kills the server and removes its directory.
pub struct RealEtcd {
    /// The loopback port clients (gRPC and the HTTP/JSON gateway) connect to.
    pub client_port: u16,
    /// The loopback port of the Raft peer listener (unused by a one-member cluster, but
    /// etcd always listens on it).
    pub peer_port: u16,
    /// The member's `--name`, unique to this process and port.
    pub name: String,
    /// The temporary directory holding the data directory and the log.
    pub dir: PathBuf,
    /// The server's log (its stdout and stderr, zap JSON lines), useful in assertion messages.
    pub log: PathBuf,
    /// How long the server took from spawn to answering `/health` with `{"health":"true"}`
    /// and listing itself as the member.
    pub startup: Duration,
    child: Child,
    watchdog: Option<Watchdog>,
}

impl RealEtcd {
    /// The client address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    /// The `host:port` of the client listener, as gRPC clients take it.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// The client URL, `http://127.0.0.1:port`, as `etcdctl --endpoints` takes it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// The peer URL, `http://127.0.0.1:port`.
    pub fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// Runs `etcdctl --endpoints=<url> args...` with `ETCDCTL_API=3` and waits for it.
    /// Add `-w json` to `args` for the protobuf responses with their headers. Panics
    /// with install instructions if `etcdctl` is missing.
    pub fn etcdctl(&self, args: &[&str]) -> Output {
        etcdctl_command(&self.url())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {ETCDCTL_BINARY}: {e}"))
    }

    /// An `etcdctl --endpoints=<url>` command with `ETCDCTL_API=3`, for callers that need
    /// to spawn it themselves (`lock`, `elect`, `watch` run until killed).
    pub fn etcdctl_command(&self) -> Command {
        etcdctl_command(&self.url())
    }

    /// An HTTP/1.1 `GET path` on the client port; the body of a 200 answer.
    pub fn http_get(&self, path: &str) -> std::io::Result<String> {
        http_request(self.client_port, "GET", path, None)
    }

    /// An HTTP/1.1 `POST path` of a JSON body to the gRPC gateway (`/v3/kv/range`, ...);
    /// the body of a 200 answer.
    pub fn http_post(&self, path: &str, json: &str) -> std::io::Result<String> {
        http_request(self.client_port, "POST", path, Some(json))
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }
}

impl Drop for RealEtcd {
    fn drop(&mut self) {
        // The watchdog goes first, so that it can never signal a reused pid.
        if let Some(w) = self.watchdog.take() {
            w.disarm();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Starts a one-member etcd cluster on free loopback ports and returns once it serves
/// requests. Panics, with the tail of the server's log, if it does not within
/// [`START_TIMEOUT`]; panics with install instructions if etcd is missing.
pub fn start_real_etcd() -> RealEtcd {
    let etcd = etcd_binary();
    // Picking ports by binding :0 and releasing them leaves a short race with other
    // processes; a server that loses one exits at once and is started again elsewhere.
    let mut attempt = 1;
    loop {
        match try_start(&etcd) {
            Ok(server) => return server,
            Err(EarlyExit { port_taken, .. }) if port_taken && attempt < 3 => attempt += 1,
            Err(EarlyExit { message, .. }) => panic!("{message}"),
        }
    }
}

/// A server that exited before it was ready.
struct EarlyExit {
    /// What to report, with the tail of the log.
    message: String,
    /// Whether it exited because another process had taken a port.
    port_taken: bool,
}

/// One start on fresh ports; `Err` if the server exits before it is ready.
fn try_start(etcd: &Path) -> Result<RealEtcd, EarlyExit> {
    // Both listeners are held until both ports are known, so the two differ.
    let (client_port, peer_port) = {
        let a = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        let b = TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
        (
            a.local_addr().expect("its address").port(),
            b.local_addr().expect("its address").port(),
        )
    };
    let name = format!("locksim-etcd-{}-{client_port}", std::process::id());
    let dir = std::env::temp_dir().join(&name);
    let _ = fs::remove_dir_all(&dir); // A leftover of an earlier process with our pid.
    fs::create_dir_all(&dir).expect("a temporary directory for etcd");
    let data = dir.join("data");
    let log = dir.join("etcd.log");
    let out = File::create(&log).expect("create the etcd log file");
    let err = out.try_clone().expect("clone the log file handle");
    let client_url = format!("http://127.0.0.1:{client_port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");

    let started = Instant::now();
    let mut command = Command::new(etcd);
    command
        .arg(format!("--name={name}"))
        .arg(format!("--data-dir={}", data.display()))
        .arg(format!("--listen-client-urls={client_url}"))
        .arg(format!("--advertise-client-urls={client_url}"))
        .arg(format!("--listen-peer-urls={peer_url}"))
        .arg(format!("--initial-advertise-peer-urls={peer_url}"))
        .arg(format!("--initial-cluster={name}={peer_url}"))
        .arg("--initial-cluster-state=new")
        .arg(format!("--initial-cluster-token={CLUSTER_TOKEN}"))
        .arg(format!("--heartbeat-interval={HEARTBEAT_MS}"))
        .arg(format!("--election-timeout={ELECTION_TIMEOUT_MS}"))
        // Structured JSON lines to stderr (the log file), never to journald.
        .arg("--logger=zap")
        .arg("--log-outputs=stderr")
        .arg("--log-level=info")
        // Neither the metrics nor the v2 API are wanted; no automatic compaction.
        .arg("--enable-v2=false")
        .arg("--auto-compaction-retention=0")
        // The package's defaults file and any ETCD_* of the caller must not leak in:
        // etcd 3.4 reads every flag from an ETCD_<FLAG> variable as well.
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("HOME", &dir)
        .env("TMPDIR", &dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    // Upstream etcd 3.4 refuses to start on architectures other than amd64 and ppc64le
    // (arm64 among them) unless ETCD_UNSUPPORTED_ARCH names the one it runs on. Debian's
    // build only warns there (changelog: "Not exit immediately on unsupported arch",
    // #952536) and is not checked at all on amd64; set anyway, for other builds.
    if let Some(arch) = unsupported_go_arch() {
        command.env("ETCD_UNSUPPORTED_ARCH", arch);
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", etcd.display()));
    let watchdog = Watchdog::start(child.id(), &dir, "locksim-etcd-watchdog");
    let mut server = RealEtcd {
        client_port,
        peer_port,
        name,
        dir,
        log,
        startup: Duration::ZERO,
        child,
        watchdog,
    };

    // `/health` says `true` once the member has a leader (itself) and serves requests;
    // its own name in the member list proves the answer comes from this server, not from
    // another one that took the port.
    let marker = format!("\"name\":\"{}\"", server.name);
    let deadline = started + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            let log = fs::read_to_string(&server.log).unwrap_or_default();
            return Err(EarlyExit {
                message: format!(
                    "etcd exited ({status}) before it was ready on {}; the end of {}:\n{}",
                    server.url(),
                    server.log.display(),
                    server.log_tail(40)
                ),
                port_taken: log.contains("address already in use"),
            });
        }
        let ready = server
            .http_get("/health")
            .is_ok_and(|b| b.contains("\"health\":\"true\""))
            && server
                .http_post("/v3/cluster/member/list", "{}")
                .is_ok_and(|b| b.contains(&marker));
        if ready {
            server.startup = started.elapsed();
            return Ok(server);
        }
        if Instant::now() >= deadline {
            panic!(
                "etcd did not answer /health with {{\"health\":\"true\"}} on {} within \
                 {START_TIMEOUT:?}; the end of {}:\n{}",
                server.url(),
                server.log.display(),
                server.log_tail(40)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Go's name for this architecture when etcd 3.4 does not support it without
/// `ETCD_UNSUPPORTED_ARCH`; `None` on amd64 and ppc64le.
fn unsupported_go_arch() -> Option<&'static str> {
    match std::env::consts::ARCH {
        "x86_64" | "powerpc64" => None,
        "aarch64" => Some("arm64"),
        "x86" => Some("386"),
        "arm" => Some("arm"),
        "s390x" => Some("s390x"),
        "riscv64" => Some("riscv64"),
        "mips64" => Some("mips64le"),
        "loongarch64" => Some("loong64"),
        other => Some(other),
    }
}

/// An HTTP/1.1 request to `127.0.0.1:port`; the body when the status is 200.
fn http_request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> std::io::Result<String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    if head.starts_with("HTTP/1.1 200") {
        Ok(body.to_string())
    } else {
        Err(std::io::Error::other(format!(
            "{method} {path}: {}",
            head.lines().next().unwrap_or("no answer")
        )))
    }
}

/// `etcdctl --endpoints=url` with `ETCDCTL_API=3`; panics with install instructions if
/// the binary is missing.
fn etcdctl_command(url: &str) -> Command {
    if !Path::new(ETCDCTL_BINARY).is_file() {
        panic!(
            "{ETCDCTL_BINARY} not found: this test drives a real etcd server with etcdctl \
             and does not skip. Run the tests with scripts/test, which installs it, or \
             install it with `apt-get install -y etcd-client`."
        );
    }
    let mut command = Command::new(ETCDCTL_BINARY);
    command
        .env("ETCDCTL_API", "3")
        .arg(format!("--endpoints={url}"));
    command
}

/// `/usr/bin/etcd`; panics with install instructions if it is missing.
fn etcd_binary() -> PathBuf {
    let etcd = PathBuf::from(ETCD_BINARY);
    if !etcd.is_file() {
        panic!(
            "{ETCD_BINARY} not found: this test runs a real etcd server and does not skip. \
             Run the tests with scripts/test, which installs it, or install it with \
             `apt-get install -y etcd-server etcd-client`."
        );
    }
    etcd
}
