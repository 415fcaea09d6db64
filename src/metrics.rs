//! What a lock costs, per run, in simulated (true) time: what people choosing a lock
//! compare besides its safety. Everything but the traffic is read from the history.
//!
//! - **acquire latency**: invoke → `ok` of every granted attempt (see
//!   [`crate::history::attempts`]), split into *uncontended* (at the invoke, no other
//!   process held the lock or was waiting for it) and *contended*; p50, p99 and max.
//! - **grants per simulated second**: acquire `ok`s matched to an invoke, over the run's
//!   true duration.
//! - **fairness**: the number of FIFO inversions and the max bypass, as the `fair` check
//!   defines them ([`crate::check::fifo_inversions`]), so that a sweep can say how unfair
//!   a lock is, not only on how many seeds.
//! - **unavailability**: the fraction of the run during which some lock had a client
//!   waiting for it and nobody holding it (holds as `mutex` defines them:
//!   [`hold_intervals`]). It includes the round trip of an uncontended acquire, the time
//!   a lease takes to expire after its holder died, and elections.
//!
//! - **traffic per grant**: bytes and TCP data segments the hosts sent each other
//!   (clients to servers and back, and server to server: replication, Raft, Sentinel),
//!   over the grants. It is counted at the transport ([`crate::sim::Traffic`]), not read
//!   from the history, and includes what flows with nobody acquiring (heartbeats, lease
//!   renewals): the network's whole bill for the lock, divided by what it delivered.
//!
//! A sweep adds runs' metrics up exactly ([`MetricsTotals`]): integer sums and fixed-bucket
//! histograms, so one run over a range and the merge of its shards agree to the byte.

mod histogram;
mod occupancy;
mod totals;

pub(crate) use histogram::Histogram;
pub(crate) use totals::{LatencySummary, MetricsTotals};

use crate::check::{fifo_inversions, hold_intervals, max_bypass};
use crate::history::{acquire_attempts, Event};
use crate::sim::Traffic;
use serde::Serialize;

/// Every figure a run reports, with what it means (for `locksim list`).
pub(crate) const METRICS: &[(&str, &str)] = &[
    ("latency_ms", "acquire invoke to grant, p50, p99 and max: all grants, uncontended (the lock free and nobody waiting at the invoke) and contended"),
    ("grants_per_s", "granted acquires per simulated second"),
    ("unavailable", "fraction of the run with a client waiting for the lock and nobody holding it"),
    ("fifo_inversions", "pairs of a grant and a waiter it overtook: one that asked earlier, still waited, and was granted later (as `fair` counts them)"),
    ("max_bypass", "the most grants that overtook one waiting acquire"),
    ("bytes_per_grant", "TCP data bytes the hosts sent each other (client to server, server to server) over granted acquires"),
    ("segments_per_grant", "TCP data segments (one per write) the hosts sent each other over granted acquires"),
];

/// One run's costs, for its line of `run --json` (`"metrics"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunMetrics {
    /// Granted acquires.
    pub grants: u64,
    /// Grants per simulated second.
    pub grants_per_s: f64,
    /// Fraction of the run with a client waiting and no holder (0 to 1).
    pub unavailable: f64,
    /// FIFO inversions (see the `fair` check).
    pub fifo_inversions: u64,
    /// Most grants that overtook one attempt.
    pub max_bypass: u64,
    /// Acquire latencies, ms: every grant, then split by contention at the invoke.
    pub latency_ms: Latencies,
    /// What the hosts sent each other, and per grant.
    pub traffic: TrafficCost,
    /// The same latencies as histograms, for a sweep's totals (not written per seed).
    #[serde(skip)]
    pub histograms: [Histogram; 2],
    /// True time with a client waiting and no holder, ns.
    #[serde(skip)]
    pub unavailable_ns: u64,
    /// The run's true duration, ns.
    #[serde(skip)]
    pub run_ns: u64,
}

/// Latency percentiles of all grants, the uncontended and the contended ones.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Latencies {
    /// Every grant.
    pub all: LatencySummary,
    /// Grants whose invoke found the lock free and nobody else waiting.
    pub uncontended: LatencySummary,
    /// The others.
    pub contended: LatencySummary,
}

/// Traffic between hosts, in all and per grant (`null` with no grant).
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct TrafficCost {
    /// Bytes of TCP data.
    pub bytes: u64,
    /// TCP data segments.
    pub segments: u64,
    /// Bytes per granted acquire.
    pub bytes_per_grant: Option<f64>,
    /// Segments per granted acquire.
    pub segments_per_grant: Option<f64>,
}

impl TrafficCost {
    /// `traffic` over `grants` grants.
    pub fn of(traffic: Traffic, grants: u64) -> TrafficCost {
        let per_grant = |n: u64| (grants > 0).then(|| n as f64 / grants as f64);
        TrafficCost {
            bytes: traffic.bytes,
            segments: traffic.segments,
            bytes_per_grant: per_grant(traffic.bytes),
            segments_per_grant: per_grant(traffic.segments),
        }
    }
}

/// Index of the uncontended histogram in [`RunMetrics::histograms`].
pub(crate) const UNCONTENDED: usize = 0;
/// Index of the contended histogram in [`RunMetrics::histograms`].
pub(crate) const CONTENDED: usize = 1;

/// The costs of the run that recorded `history`, ended at `end_ns` and sent `traffic`.
pub(crate) fn run_metrics(history: &[Event], end_ns: u64, traffic: Traffic) -> RunMetrics {
    let attempts = acquire_attempts(history);
    let inversions = fifo_inversions(&attempts);
    let holds = hold_intervals(history, end_ns);
    let occ = occupancy::occupancy(&attempts, &holds, end_ns);
    let mut latencies: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
    let mut histograms = [Histogram::default(), Histogram::default()];
    for (a, contended) in attempts.iter().zip(&occ.contended) {
        let Some(end) = a.end.filter(|_| a.granted()) else {
            continue;
        };
        let which = if *contended { CONTENDED } else { UNCONTENDED };
        let ns = end.ns.saturating_sub(a.invoke_ns);
        latencies[which].push(ns);
        histograms[which].add(ns);
    }
    let mut all: Vec<u64> = latencies.concat();
    let grants = all.len() as u64;
    RunMetrics {
        grants,
        grants_per_s: per_second(grants, end_ns),
        unavailable: fraction(occ.unavailable_ns, end_ns),
        fifo_inversions: inversions.len() as u64,
        max_bypass: max_bypass(&inversions).map_or(0, |(n, _)| n as u64),
        latency_ms: Latencies {
            all: LatencySummary::exact(&mut all),
            uncontended: LatencySummary::exact(&mut latencies[UNCONTENDED]),
            contended: LatencySummary::exact(&mut latencies[CONTENDED]),
        },
        traffic: TrafficCost::of(traffic, grants),
        histograms,
        unavailable_ns: occ.unavailable_ns,
        run_ns: end_ns,
    }
}

/// `n` per second of `ns` (0 for an empty run).
pub(crate) fn per_second(n: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        n as f64 * 1e9 / ns as f64
    }
}

/// `part / whole` (0 for an empty whole).
pub(crate) fn fraction(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A byte count for people: `812 B`, `2.1 KiB`, `3.4 MiB`.
pub(crate) fn bytes(n: f64) -> String {
    if n < 1024.0 {
        format!("{n:.0} B")
    } else if n < 1024.0 * 1024.0 {
        format!("{:.1} KiB", n / 1024.0)
    } else {
        format!("{:.1} MiB", n / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests;
