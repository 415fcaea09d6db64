//! Real servers for live mode: the plug-in a family implements to say how its real
//! counterpart runs ([`RealCluster`]), the processes locksim starts from it
//! ([`ServerProcess`], every one listed in a [`Supervisor`]), and the TCP proxies every
//! link of a live run goes through ([`Proxies`]), so that a scenario's partitions,
//! latency and loss apply to real servers' own links (replication, Sentinel, Raft,
//! ZooKeeper's quorum) as they do to the clients'.
//!
//! Every server port has two numbers: the port the process listens on, known only to
//! locksim and the process, and a *public* port, a proxy's, which every other process is
//! told (peers in their configuration, clients in their address book). A proxy learns
//! which process opened each connection from the kernel ([`owner`]), so one public port
//! serves every directed link into its server.

mod model;
mod owner;
mod proxy;
mod server;
mod supervisor;

pub(crate) use model::ServedModel;
pub(crate) use model::{locksim_binary, served_cluster, ModelCluster, ServeNodeSpec};
pub(crate) use proxy::{LinkShape, Opening, OpeningRewrite, Proxies, Route};
pub(crate) use server::{NotListening, ServerProcess};
pub(crate) use supervisor::{die_with_locksim, signal_group, Supervisor};

use crate::sim::{LocalBoxFuture, NodeCtx};
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One port a real server listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RealPort {
    /// What it is for, unique per server (`client`, `peer`, `election`).
    pub label: &'static str,
    /// The simulated port clients dial for it, if clients dial it (a peer port: `None`).
    pub sim_port: Option<u16>,
}

/// The two loopback ports of every server port of a run: where the process listens and
/// where its proxy does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Addresses {
    ports: BTreeMap<(String, &'static str), (u16, u16)>,
}

impl Addresses {
    /// Record `node`'s port `label`: the process listens on `listen`, its proxy on
    /// `public`.
    pub fn insert(&mut self, node: &str, label: &'static str, listen: u16, public: u16) {
        self.ports
            .insert((node.to_string(), label), (listen, public));
    }

    /// Where `node` itself listens for `label` (only it and locksim use this port).
    ///
    /// # Panics
    /// If the family did not declare that port for that node: a bug of the family.
    pub fn listen(&self, node: &str, label: &str) -> u16 {
        self.get(node, label).0
    }

    /// Where everyone else reaches `node`'s `label`: its proxy.
    ///
    /// # Panics
    /// As [`Self::listen`].
    pub fn public(&self, node: &str, label: &str) -> u16 {
        self.get(node, label).1
    }

    fn get(&self, node: &str, label: &str) -> (u16, u16) {
        self.ports
            .iter()
            .find(|((n, l), _)| n == node && *l == label)
            .map(|(_, p)| *p)
            .unwrap_or_else(|| panic!("no port `{label}` declared for {node}"))
    }

    /// Every port: (node, label) → (listen, public).
    pub fn all(&self) -> impl Iterator<Item = (&str, &'static str, u16, u16)> {
        self.ports
            .iter()
            .map(|((n, l), (a, b))| (n.as_str(), *l, *a, *b))
    }
}

/// How a family's real counterpart runs: its servers' ports and command lines, when the
/// whole set is ready, and what of the scenario it cannot do. Returned by
/// [`crate::locks::Algorithm::real`]; live mode (`crate::live`) names no family.
pub trait RealCluster {
    /// The real system, for messages (`redis-server`, `etcd`, `ZooKeeper`).
    fn system(&self) -> &'static str;

    /// The ports server `node` listens on; the first one is where it is reachable once
    /// its process is up. None: a server node that only dials the others (a scheduled
    /// job), up once started.
    fn ports(&self, node: &str) -> Vec<RealPort>;

    /// The command that runs server `node` with its data in `dir`, empty at the first
    /// start and kept across a crash and restart (so the command must resume from it).
    /// It may write configuration files there. Everything a peer or client is told must
    /// be a public port of `addrs`; the process listens on its own listen ports.
    fn command(&self, node: &str, dir: &Path, addrs: &Addresses) -> io::Result<Command>;

    /// Block, at the run's start, until server `node` may be started, with the servers
    /// before it in [`crate::locks::Algorithm::servers`]' order already running (Redis:
    /// a Sentinel waits for the replicas to be linked to the primary, or its first look
    /// misses them and it looks again only 10 s later). By default servers start at once:
    /// a cluster's members serve only once a quorum of them runs.
    fn wait_before_start(
        &self,
        node: &str,
        addrs: &Addresses,
        patience: &Patience,
    ) -> Result<(), WaitError> {
        let _ = (node, addrs, patience);
        Ok(())
    }

    /// Block until the whole set serves (a Raft leader, replicas in sync, ...), polling
    /// with `patience`. Each process already accepts connections on its first port.
    /// The proxies are running, so the servers can reach each other.
    fn wait_ready(&self, addrs: &Addresses, patience: &Patience) -> Result<(), WaitError> {
        let _ = (addrs, patience);
        Ok(())
    }

    /// Why the real servers cannot run this configuration at all (a feature of the model
    /// whose real counterpart is not built), for an error before the run starts; `None`
    /// (the default) when they can.
    fn refusal(&self) -> Option<String> {
        None
    }

    /// What of the scenario the real servers do not do (a model-only key, a rounded
    /// value), listed by the run as not applied.
    fn not_applied(&self) -> Vec<String> {
        Vec::new()
    }

    /// Checks of the family that read the model servers' own events (Raft's log and
    /// applies, a revoke's record of the holder it removed), which a real server does
    /// not expose: each with why, reported as not checked live instead of holding
    /// vacuously.
    fn unchecked(&self) -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }

    /// Whether a crash of server `node` is applied: a SIGKILL, then a restart on the
    /// same data folder, that resumes from what it had synced there. `false` (locksim's
    /// model servers whose disk lives in their process): its crashes are listed as not
    /// applied. By default, every crash is applied.
    fn crashes_apply(&self, node: &str) -> bool {
        let _ = node;
        true
    }

    /// The events the servers recorded themselves (locksim's model servers do, as in
    /// simulation), with times on the run's clock, whose zero is `epoch_ns` on the
    /// machine's monotonic clock; read once the run is over. None by default: a real
    /// server's events come from an [`Self::observer`].
    fn recorded_events(&self, epoch_ns: u64) -> Vec<crate::history::Event> {
        let _ = epoch_ns;
        Vec::new()
    }

    /// A rewrite of the opening message of every connection to `node`'s port `label`,
    /// for a protocol whose handshake names the sender's own listen port for the
    /// receiver to dial back (ZooKeeper's leader election): the proxy puts the sender's
    /// public port in its place, so the dial-back crosses a proxy too. `None` (the
    /// default): bytes pass as they are.
    fn opening(&self, node: &str, label: &str, addrs: &Addresses) -> Option<OpeningRewrite> {
        let _ = (node, label, addrs);
        None
    }

    /// A task of locksim's that watches server `node` and records what the history needs
    /// from it (Redis's expirations); it reaches the server at its listen port, beside
    /// the proxies.
    fn observer(&self, node: &str, ctx: NodeCtx) -> Option<LocalBoxFuture<'static, ()>> {
        let _ = (node, ctx);
        None
    }
}

/// How long a live run waits for its servers to come up, and whether it was
/// interrupted meanwhile (Ctrl-C during a JVM's start must not wait it out).
#[derive(Debug, Clone)]
pub struct Patience {
    /// When waiting ends.
    pub until: Instant,
    /// The whole limit, s, for messages.
    pub limit_s: u64,
    /// Set by a signal handler: stop waiting.
    pub stop: Arc<AtomicBool>,
}

impl Patience {
    /// Poll `ready` every 20 ms until it is true; an error naming `what` when the time
    /// is up or the run is interrupted.
    pub fn wait(&self, what: &str, mut ready: impl FnMut() -> bool) -> Result<(), WaitError> {
        while !ready() {
            if self.stop.load(Ordering::Relaxed) {
                return Err(WaitError::Interrupted {
                    what: what.to_string(),
                });
            }
            if Instant::now() >= self.until {
                return Err(WaitError::TimedOut {
                    what: what.to_string(),
                    limit_s: self.limit_s,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

/// Why waiting for a real server ended before it was ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitError {
    /// A signal ended the run while it waited for `what`.
    Interrupted {
        /// What it waited for.
        what: String,
    },
    /// `what` was not ready within the start-up limit.
    TimedOut {
        /// What it waited for.
        what: String,
        /// The limit, s.
        limit_s: u64,
    },
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitError::Interrupted { what } => write!(f, "interrupted while waiting for {what}"),
            WaitError::TimedOut { what, limit_s } => {
                write!(f, "{what}: not within the start-up limit ({limit_s} s)")
            }
        }
    }
}

impl std::error::Error for WaitError {}

/// The first executable called `name` on `PATH`, in `/usr/bin` or in `/usr/local/bin`;
/// the error says which Debian package has it.
pub fn find_binary(name: &str, package: &str) -> io::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{name} not found: install it (e.g. `apt-get install -y {package}`)"),
            )
        })
}

/// A free loopback port (the kernel's pick; free when asked, as good as it gets without
/// holding it).
pub(crate) fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}
