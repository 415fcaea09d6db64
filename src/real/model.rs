//! locksim's own model servers as the servers of a live run (`locksim live --servers
//! model`): every server node runs the family's model server (the simulation's server
//! code, as `locksim serve` runs it) in a process of its own, `locksim serve-node`, so
//! that a pause is a SIGSTOP and a crash a SIGKILL of that process, and every link,
//! between servers too, crosses the run's proxies as with the real servers.
//!
//! A model server records its own events (a session's expiry, an election, a log
//! append) as in simulation: each process appends them to a file in its folder, and the
//! run merges them into the history, so the checks that read them run live.
//!
//! A model server keeps its disk in its process's memory, as the simulation keeps a
//! node's: a SIGKILL loses it all. A crash is therefore applied only to servers whose
//! disk holds nothing a restart reads ([`ServedModel::disk_nodes`] lists the others).

use super::{Addresses, RealCluster, RealPort};
use crate::history::Event;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The locksim executable locksim's own processes run (client processes, model
/// servers): `$LOCKSIM_BIN`, else this executable.
pub(crate) fn locksim_binary() -> io::Result<PathBuf> {
    match std::env::var_os("LOCKSIM_BIN") {
        Some(p) => Ok(PathBuf::from(p)),
        None => std::env::current_exe(),
    }
}

/// What a family's model looks like served, one server node a process: returned by
/// [`crate::locks::Algorithm::served_model`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedModel {
    /// The model, for messages (`locksim's ZooKeeper model`).
    pub system: &'static str,
    /// Every server node with its ports, in start order; a node's first port is the
    /// one clients dial (a peer port is dialed by the other servers only).
    pub ports: Vec<(String, Vec<RealPort>)>,
    /// The servers whose model keeps state on its disk that a restart reads (a log, an
    /// AOF): their crashes are not applied, as that disk dies with the process.
    pub disk_nodes: Vec<String>,
    /// Settings of the scenario the served model does not take, with why.
    pub not_applied: Vec<String>,
}

/// A replicated model (a ZooKeeper ensemble, a Raft cluster) served: every one of
/// `servers` on a client port and a peer port (a one-server cluster listens on its peer
/// port too), with its log on its disk.
pub(crate) fn served_cluster(
    system: &'static str,
    servers: Vec<String>,
    client_port: u16,
    peer_port: u16,
) -> ServedModel {
    let ports = [("client", client_port), ("peer", peer_port)].map(|(label, port)| RealPort {
        label,
        sim_port: Some(port),
    });
    ServedModel {
        system,
        ports: servers
            .iter()
            .map(|n| (n.clone(), ports.to_vec()))
            .collect(),
        disk_nodes: servers,
        not_applied: Vec::new(),
    }
}

/// What one `locksim serve-node` process runs: the JSON its command line carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ServeNodeSpec {
    /// The scenario file: its `[lock]` table is the model's parameters.
    pub scenario: PathBuf,
    /// The server node it runs (`zk-0`).
    pub node: String,
    /// Its incarnation: 0, then one more at every restart.
    pub incarnation: u32,
    /// The seed of its session and lease ids (locksim's pid: ids differ across runs, as
    /// a real server's do; a live run is not reproducible anyway).
    pub seed: u64,
    /// The address book: its own ports as it listens on them, every other server's
    /// public (proxy) ports.
    pub ports: BTreeMap<String, u16>,
    /// Where it appends its events (JSON lines).
    pub events: PathBuf,
}

/// The file a model server appends its events to, in its folder.
const EVENTS_FILE: &str = "events.jsonl";

/// locksim's model servers as a live run's [`RealCluster`], one `locksim serve-node`
/// process a server.
#[derive(Debug)]
pub(crate) struct ModelCluster {
    model: ServedModel,
    /// The scenario file every server reads its parameters from.
    scenario: PathBuf,
    /// The locksim binary that runs `serve-node`.
    exe: PathBuf,
    /// Each server's folder and how many times it was started, once its command is
    /// asked for.
    started: RefCell<BTreeMap<String, (PathBuf, u32)>>,
}

impl ModelCluster {
    /// The servers of `model`, parameters from `scenario`, run by `exe`.
    pub(crate) fn new(model: ServedModel, scenario: &Path, exe: &Path) -> ModelCluster {
        ModelCluster {
            model,
            scenario: scenario.to_path_buf(),
            exe: exe.to_path_buf(),
            started: RefCell::default(),
        }
    }

    /// Server `node`'s address book: its own ports as it listens on them, everyone
    /// else's public ones, named as the model dials them (`zk-1` for the first port,
    /// `zk-1:2888` for each simulated port).
    fn book(&self, node: &str, addrs: &Addresses) -> BTreeMap<String, u16> {
        let mut book = BTreeMap::new();
        for (n, label, listen, public) in addrs.all() {
            let port = if n == node { listen } else { public };
            let ports = self.ports(n);
            if ports.first().is_some_and(|p| p.label == label) {
                book.insert(n.to_string(), port);
            }
            if let Some(sim) = ports
                .iter()
                .find(|p| p.label == label)
                .and_then(|p| p.sim_port)
            {
                book.insert(format!("{n}:{sim}"), port);
            }
        }
        book
    }
}

impl RealCluster for ModelCluster {
    fn system(&self) -> &'static str {
        self.model.system
    }

    fn ports(&self, node: &str) -> Vec<RealPort> {
        self.model
            .ports
            .iter()
            .find(|(n, _)| n == node)
            .map(|(_, p)| p.clone())
            .unwrap_or_default()
    }

    fn command(&self, node: &str, dir: &Path, addrs: &Addresses) -> io::Result<Command> {
        let incarnation = {
            let mut started = self.started.borrow_mut();
            let entry = started
                .entry(node.to_string())
                .or_insert_with(|| (dir.to_path_buf(), 0));
            entry.1 += 1;
            entry.1 - 1
        };
        let spec = ServeNodeSpec {
            scenario: self.scenario.clone(),
            node: node.to_string(),
            incarnation,
            seed: u64::from(std::process::id()),
            ports: self.book(node, addrs),
            events: dir.join(EVENTS_FILE),
        };
        let mut cmd = Command::new(&self.exe);
        cmd.arg("serve-node")
            .arg(serde_json::to_string(&spec).map_err(io::Error::other)?);
        Ok(cmd)
    }

    fn not_applied(&self) -> Vec<String> {
        self.model.not_applied.clone()
    }

    fn crashes_apply(&self, node: &str) -> bool {
        !self.model.disk_nodes.iter().any(|n| n == node)
    }

    /// Every server's events, read from its file, on the run's clock (events from
    /// before the run's start, an election while the servers came up, at its start).
    fn recorded_events(&self, epoch_ns: u64) -> Vec<Event> {
        let mut events = Vec::new();
        for (dir, _) in self.started.borrow().values() {
            let text = std::fs::read_to_string(dir.join(EVENTS_FILE)).unwrap_or_default();
            // A line cut short by a SIGKILL is the only one that may not parse.
            for line in text.lines() {
                if let Ok(mut e) = serde_json::from_str::<Event>(line) {
                    e.time_ns = e.time_ns.saturating_sub(epoch_ns);
                    events.push(e);
                }
            }
        }
        events
    }
}
