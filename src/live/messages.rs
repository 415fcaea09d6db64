//! What locksim and a live client process tell each other, one JSON object per line:
//! locksim starts the process with a [`NodeSpec`] and writes [`ToNode`] lines to its
//! stdin; the process writes [`FromNode`] lines to its stdout.

use super::adapter_protocol::AdapterFailure;
use crate::history::Event;
use crate::scenario::ClientProgram;
use crate::sim::{ArmedFault, Clock, ClockChange, FaultPoint};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Everything a client process needs to run its node: the scenario (loaded again from
/// its file, with the live duration), which node and incarnation it is, and the run's
/// clock and address book.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct NodeSpec {
    /// The scenario file.
    pub scenario: PathBuf,
    /// The live duration, ms (replaces the file's `duration_ms`, as for locksim itself).
    pub duration_ms: u64,
    /// The run's seed.
    pub seed: u64,
    /// The node this process runs (`client-0`).
    pub node: String,
    /// How many times the node was restarted before this process.
    pub incarnation: u32,
    /// The run's time zero on the machine's monotonic clock, ns.
    pub epoch_ns: u64,
    /// Node name (or `node:simulated port`) to the 127.0.0.1 port of its proxy.
    pub ports: BTreeMap<String, u16>,
    /// The node's clock, with the clock faults so far (a clock outlives a crash).
    pub clock: Clock,
    /// The external client to run in place of the family's own (the scenario's
    /// `[workload.client]` or `--client`, its program path resolved), if any.
    #[serde(default)]
    pub client: Option<ClientProgram>,
}

/// From locksim to a client process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ToNode {
    /// Arm `fault` for when the node next reaches `point`.
    Arm {
        /// Where.
        point: FaultPoint,
        /// What.
        fault: ArmedFault,
    },
    /// Change the node's clock as of true time `at_ns`.
    Clock {
        /// When (true ns).
        at_ns: u64,
        /// What.
        change: ClockChange,
    },
}

/// From a client process to locksim.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum FromNode {
    /// An event of the history, stamped on the run's clock.
    Event(Box<Event>),
    /// The node reached an armed pause: it stops itself (SIGSTOP) right after this line;
    /// send SIGCONT after `ns`.
    Stopping {
        /// Pause length, ns.
        ns: u64,
    },
    /// The node reached an armed crash point: kill it now (restart after `down_ns`).
    Crash {
        /// Down time, ns, if it restarts.
        down_ns: Option<u64>,
    },
    /// The node's external client failed: the node stops (and exits) after this line,
    /// and the run must end.
    ClientFailed {
        /// The adapter's command, as one line.
        command: String,
        /// What went wrong.
        failure: AdapterFailure,
    },
}
