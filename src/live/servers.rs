//! Which servers a live run targets (`locksim live --servers real|model`): the family's
//! real servers, or locksim's own model servers run as real processes on loopback.

use std::fmt;

/// The servers of a live run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum LiveServers {
    /// The family's real servers (`redis-server`, etcd, ZooKeeper): the default.
    #[default]
    Real,
    /// locksim's model servers, each server node in a process of its own (`locksim
    /// serve-node`), behind the same proxies.
    Model,
}

impl LiveServers {
    /// `real` or `model`, else an error naming both.
    pub(crate) fn parse(text: &str) -> Result<LiveServers, BadServers> {
        match text {
            "real" => Ok(LiveServers::Real),
            "model" => Ok(LiveServers::Model),
            other => Err(BadServers(other.to_string())),
        }
    }

    /// `real` or `model`, as the flag takes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LiveServers::Real => "real",
            LiveServers::Model => "model",
        }
    }
}

/// A `--servers` value that is neither `real` nor `model`: the text given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadServers(pub String);

impl fmt::Display for BadServers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad --servers `{}`: expected `real` (the family's real servers) or `model` \
             (locksim's model servers, one process each)",
            self.0
        )
    }
}

impl std::error::Error for BadServers {}
