//! A live run's address book and clock, which a node's context holds in live mode
//! ([`super::NodeEnv::Live`]): the transport looks ports up in it, and the context reads
//! the run's true time from it.

use std::collections::BTreeMap;

/// A live run's address book and clock: node name to 127.0.0.1 port, and the instant
/// the run began (its true time zero) on the machine's monotonic clock, which every
/// process of the run (locksim and its client processes) shares.
#[derive(Debug)]
pub struct LiveNet {
    ports: BTreeMap<String, u16>,
    epoch_ns: u64,
}

impl LiveNet {
    /// An address book starting the run's clock now.
    pub fn new(ports: BTreeMap<String, u16>) -> LiveNet {
        LiveNet::with_epoch(ports, monotonic_ns())
    }

    /// An address book whose time zero is `epoch_ns` on the machine's monotonic clock
    /// (the [`Self::epoch_ns`] of the run a client process belongs to).
    pub fn with_epoch(ports: BTreeMap<String, u16>, epoch_ns: u64) -> LiveNet {
        LiveNet { ports, epoch_ns }
    }

    /// The run's time zero on the machine's monotonic clock, ns.
    pub fn epoch_ns(&self) -> u64 {
        self.epoch_ns
    }

    /// The node listening on loopback port `port` (a real Sentinel names the primary by
    /// address: `127.0.0.1` and its port).
    pub fn host_of_port(&self, port: u16) -> Option<&str> {
        self.ports
            .iter()
            .find(|(_, p)| **p == port)
            .map(|(n, _)| n.as_str())
    }

    /// The whole address book.
    pub fn ports(&self) -> &BTreeMap<String, u16> {
        &self.ports
    }

    /// The loopback port of `host`.
    pub fn port(&self, host: &str) -> Option<u16> {
        self.ports.get(host).copied()
    }

    /// The loopback port standing for `host`'s simulated port `sim_port`: the entry
    /// `host:sim_port` for a node that listens on several ports (a ZooKeeper server's
    /// client and peer ports), else `host`'s own.
    pub fn port_of(&self, host: &str, sim_port: u16) -> Option<u16> {
        self.ports
            .get(&format!("{host}:{sim_port}"))
            .or_else(|| self.ports.get(host))
            .copied()
    }

    /// Real time since the run began, ns.
    pub fn elapsed_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.epoch_ns)
    }
}

/// The machine's monotonic clock (`CLOCK_MONOTONIC`, as `std::time::Instant` reads it),
/// ns: the same in every process, so client processes stamp events on locksim's scale.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
