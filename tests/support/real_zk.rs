//! A real Apache ZooKeeper server for integration tests: Debian's `zookeeper` package
//! (3.8), run standalone by `ZooKeeperServerMain` on a free loopback port with a fresh
//! data directory and a 100 ms tick, and killed when the [`RealZk`] is dropped.
//!
//! A test reaches it as `crate::support::real_zk` (see `mod.rs`).
//! Without Java or the ZooKeeper jars the start panics and says how to install them:
//! a test that compares with the real server never skips silently.
//!
//! Everything the server writes (snapshot, transaction log, its log) stays in the temporary
//! directory: nothing under `/var/log` or `/var/lib/zookeeper` is needed or touched.

use super::watchdog::{tail, Watchdog};

use std::fs::{self, File};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The server's tick in milliseconds: the granularity of session expiry (a session
/// expires between its timeout and its timeout plus one tick after its last request).
pub const TICK_MS: u32 = 100;

/// The smallest session timeout the server grants (ms); smaller requests are raised to it.
pub const MIN_SESSION_TIMEOUT_MS: u32 = 2 * TICK_MS;

/// The largest session timeout the server grants (ms); larger requests are lowered to it.
/// ZooKeeper's defaults (2 and 20 ticks), which the model's negotiation follows.
pub const MAX_SESSION_TIMEOUT_MS: u32 = 20 * TICK_MS;

/// How long [`start_real_zk`] waits for the server to answer before it gives up.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

// The jars and logging live mode's ZooKeeper uses too.
use locksim::testing::zk::{LOG4J_CONFIG, LOG4J_JARS, ZOOKEEPER_JAR};

/// A running ZooKeeper server; dropping it kills the JVM and removes its directory.
pub struct RealZk {
    /// The loopback port clients connect to (`127.0.0.1:port`).
    pub port: u16,
    /// The temporary directory holding the configuration, the data and the log.
    pub dir: PathBuf,
    /// The server's log (its stdout and stderr), useful in assertion messages.
    pub log: PathBuf,
    /// How long the server took from spawn to answering `ruok` and `conf`.
    pub startup: Duration,
    child: Child,
    watchdog: Option<Watchdog>,
}

impl RealZk {
    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The `host:port` connect string for ZooKeeper clients and `zkCli.sh -server`.
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Sends a four-letter word (`ruok`, `srvr`, `cons`, `dump`, `conf`, ...) and
    /// returns the reply; all of them are enabled.
    pub fn four_letter(&self, word: &str) -> std::io::Result<String> {
        four_letter_word(self.port, word)
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }
}

impl Drop for RealZk {
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

/// Starts a standalone ZooKeeper server on a free loopback port and returns once it
/// serves requests. Panics, with the tail of the server's log, if it does not within
/// [`START_TIMEOUT`]; panics with install instructions if Java or ZooKeeper is missing.
pub fn start_real_zk() -> RealZk {
    let java = java_binary();
    let class_path = class_path();
    // Picking a port by binding :0 and releasing it leaves a short race with other
    // processes; a server that loses it exits at once and is started again elsewhere.
    let mut attempt = 1;
    loop {
        match try_start(&java, &class_path) {
            Ok(zk) => return zk,
            Err(EarlyExit { port_taken, .. }) if port_taken && attempt < 3 => attempt += 1,
            Err(EarlyExit { message, .. }) => panic!("{message}"),
        }
    }
}

/// Sends a four-letter word to the server on `127.0.0.1:port` and returns its reply.
pub fn four_letter_word(port: u16, word: &str) -> std::io::Result<String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    stream.set_write_timeout(Some(Duration::from_secs(2)))?;
    stream.write_all(word.as_bytes())?;
    // The server answers the four bytes and closes the connection.
    let mut reply = String::new();
    stream.read_to_string(&mut reply)?;
    Ok(reply)
}

/// A server that exited before it answered.
struct EarlyExit {
    /// What to report, with the tail of the log.
    message: String,
    /// Whether it exited because another process had taken the port.
    port_taken: bool,
}

/// One start on a fresh port; `Err` if the JVM exits before it answers.
fn try_start(java: &Path, class_path: &str) -> Result<RealZk, EarlyExit> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port();
    let dir = std::env::temp_dir().join(format!("locksim-zk-{}-{port}", std::process::id()));
    let _ = fs::remove_dir_all(&dir); // A leftover of an earlier process with our pid.
    let data = dir.join("data");
    fs::create_dir_all(&data).expect("a temporary directory for ZooKeeper");
    let config = dir.join("zoo.cfg");
    fs::write(&config, server_config(port, &data)).expect("write zoo.cfg");
    let log4j = dir.join("log4j.properties");
    fs::write(&log4j, LOG4J_CONFIG).expect("write log4j.properties");
    let log = dir.join("zookeeper.log");
    let out = File::create(&log).expect("create the ZooKeeper log file");
    let err = out.try_clone().expect("clone the log file handle");

    let started = Instant::now();
    let child = Command::new(java)
        // Live mode's flags: quick to start, writing nowhere but `dir`.
        .args(locksim::testing::zk::JVM_FLAGS)
        .arg(format!("-Djava.io.tmpdir={}", dir.display()))
        .arg(format!("-Dlog4j.configuration=file:{}", log4j.display()))
        .arg("-cp")
        .arg(class_path)
        .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", java.display()));
    let watchdog = Watchdog::start(child.id(), &dir, "locksim-zk-watchdog");
    let mut zk = RealZk {
        port,
        dir,
        log,
        startup: Duration::ZERO,
        child,
        watchdog,
    };

    // Its own directory in `conf` proves the answer comes from this server, not from
    // another one that took the port; `conf` also waits until it serves requests
    // (`ruok` answers `imok` while the database is still loading).
    let marker = format!("locksim-zk-{}-{port}", std::process::id());
    let deadline = started + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = zk.child.try_wait() {
            let log = fs::read_to_string(&zk.log).unwrap_or_default();
            return Err(EarlyExit {
                message: format!(
                    "ZooKeeper exited ({status}) before it answered on 127.0.0.1:{port}; \
                     the end of {}:\n{}",
                    zk.log.display(),
                    zk.log_tail(40)
                ),
                port_taken: log.contains("java.net.BindException"),
            });
        }
        let ready = four_letter_word(port, "ruok").is_ok_and(|r| r == "imok")
            && four_letter_word(port, "conf").is_ok_and(|r| r.contains(&marker));
        if ready {
            zk.startup = started.elapsed();
            return Ok(zk);
        }
        if Instant::now() >= deadline {
            panic!(
                "ZooKeeper did not answer `ruok` with `imok` on 127.0.0.1:{port} within \
                 {START_TIMEOUT:?}; the end of {}:\n{}",
                zk.log.display(),
                zk.log_tail(40)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The standalone server's configuration: client port only (no admin server, no quorum
/// ports), session timeouts from [`MIN_SESSION_TIMEOUT_MS`] to [`MAX_SESSION_TIMEOUT_MS`].
fn server_config(port: u16, data: &Path) -> String {
    format!(
        "tickTime={TICK_MS}\n\
         minSessionTimeout={MIN_SESSION_TIMEOUT_MS}\n\
         maxSessionTimeout={MAX_SESSION_TIMEOUT_MS}\n\
         dataDir={}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=*\n\
         # Unlimited connections from 127.0.0.1 (the default is 60 per address).\n\
         maxClientCnxns=0\n\
         # A throw-away server: no fsync per transaction, so a busy disk cannot stall it.\n\
         forceSync=no\n",
        data.display()
    )
}

/// `java` from PATH, `/usr/bin` or `/usr/local/bin`; panics with install instructions if none.
fn java_binary() -> PathBuf {
    locksim::testing::find_binary("java", "zookeeper").unwrap_or_else(|e| {
        panic!(
            "{e}: this test runs a real ZooKeeper server and does not skip. Run the tests \
             with scripts/test, which installs it (the package pulls in Java)."
        )
    })
}

/// The server's class path: the ZooKeeper jar, plus log4j when it is installed.
fn class_path() -> String {
    if !Path::new(ZOOKEEPER_JAR).is_file() {
        panic!(
            "{ZOOKEEPER_JAR} not found: this test runs a real ZooKeeper server and does not \
             skip. Run the tests with scripts/test, which installs it, or install it with \
             `apt-get install -y zookeeper`."
        );
    }
    let mut jars = vec![ZOOKEEPER_JAR];
    if LOG4J_JARS.iter().all(|j| Path::new(j).is_file()) {
        jars.extend(LOG4J_JARS);
    }
    jars.join(":")
}
