//! Why a live run could not run or went wrong: each message says what failed and names
//! the server, node or folder involved (the CLI prints it and exits 2).

use super::adapter_protocol::AdapterFailure;
use crate::real::{NotListening, WaitError};
use std::fmt;
use std::io;
use std::path::PathBuf;

/// A live run's failure.
#[derive(Debug)]
pub(crate) enum LiveError {
    /// The scenario's algorithm has no real counterpart.
    NoRealCounterpart {
        /// The algorithm asked for.
        algorithm: String,
        /// Those live mode runs.
        families: Vec<&'static str>,
    },
    /// The real servers cannot run the scenario's configuration (see
    /// `RealCluster::refusal`).
    Refused {
        /// The real system.
        system: &'static str,
        /// Why, naming the setting.
        why: String,
    },
    /// The async runtime could not start.
    Runtime(io::Error),
    /// The kernel gave no loopback port.
    NoFreePort(io::Error),
    /// The proxies could not listen.
    Proxies(io::Error),
    /// The run's data folder could not be made.
    Folder {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// Server `node`'s process could not start.
    ServerStart {
        /// The server.
        node: String,
        /// Why.
        source: io::Error,
    },
    /// A server did not come to accept connections.
    NotListening(NotListening),
    /// The servers were not ready (or the run was interrupted meanwhile): the end of each
    /// started server's log follows.
    NotReady {
        /// What was waited for.
        error: WaitError,
        /// Each started server's name and the end of its log.
        logs: Vec<(String, String)>,
    },
    /// locksim's own executable (which client processes run) was not found.
    Executable(io::Error),
    /// Client `node`'s process could not start.
    ClientStart {
        /// The client.
        node: String,
        /// Why.
        source: io::Error,
    },
    /// A fault could not be applied to `node`'s process (a signal, a restart).
    Fault {
        /// The node.
        node: String,
        /// Why.
        source: io::Error,
    },
    /// Client `node`'s external client failed: a line the protocol does not allow, an
    /// exit, a hang, or it could not start.
    ExternalClient {
        /// The client node.
        node: String,
        /// The adapter's command.
        command: String,
        /// What went wrong, naming the line.
        failure: Box<AdapterFailure>,
    },
    /// Client `node`'s process ended by itself (it printed why).
    Died {
        /// The client.
        node: String,
        /// When, ms of the run.
        at_ms: u64,
    },
    /// `--servers model` for an algorithm whose model is not served so.
    NoServedModel {
        /// The algorithm asked for.
        algorithm: String,
        /// Those whose models `--servers model` runs.
        families: Vec<&'static str>,
    },
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LiveError::NoRealCounterpart {
                algorithm,
                families,
            } => {
                let quoted: Vec<String> = families.iter().map(|f| format!("\"{f}\"")).collect();
                write!(
                    f,
                    "live mode runs algorithm = {}, not \"{algorithm}\" (it has no real \
                     counterpart)",
                    quoted.join(", ")
                )
            }
            LiveError::Refused { system, why } => {
                write!(f, "live mode cannot run this against real {system}: {why}")
            }
            LiveError::Runtime(e) => write!(f, "cannot start the runtime: {e}"),
            LiveError::NoFreePort(e) => write!(f, "no free loopback port: {e}"),
            LiveError::Proxies(e) => write!(f, "cannot start the proxies: {e}"),
            LiveError::Folder { path, source } => write!(f, "{}: {source}", path.display()),
            LiveError::ServerStart { node, source } | LiveError::Fault { node, source } => {
                write!(f, "{node}: {source}")
            }
            LiveError::NotListening(e) => write!(f, "{e}"),
            LiveError::NotReady { error, logs } => {
                let logs: Vec<String> = logs
                    .iter()
                    .map(|(name, tail)| format!("--- {name}'s log ends:\n{tail}"))
                    .collect();
                write!(f, "{error}\n{}", logs.join("\n"))
            }
            LiveError::Executable(e) => write!(f, "cannot find locksim's executable: {e}"),
            LiveError::ClientStart { node, source } => {
                write!(f, "{node}: cannot start its process: {source}")
            }
            LiveError::ExternalClient {
                node,
                command,
                failure,
            } => write!(f, "{node}'s external client `{command}`: {failure}"),
            LiveError::Died { node, at_ms } => write!(
                f,
                "{node}'s process ended by itself at {at_ms} ms (see its error above)"
            ),
            LiveError::NoServedModel {
                algorithm,
                families,
            } => {
                let quoted: Vec<String> = families.iter().map(|f| format!("\"{f}\"")).collect();
                write!(
                    f,
                    "--servers model runs the models of algorithm = {}, not \"{algorithm}\" \
                     (its model is not served as a process a server)",
                    quoted.join(", ")
                )
            }
        }
    }
}

// Each message includes its cause's: `source` stays `None`, so that a reporter walking
// the chain does not print a cause twice.
impl std::error::Error for LiveError {}
