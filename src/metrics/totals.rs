//! A sweep's costs: the runs' metrics added up so that the sum does not depend on how the
//! seeds were split (integer sums and [`Histogram`]s), and the figures derived from them.
//!
//! The derived figures are written for people and recomputed from the sums on every
//! change, never added up themselves: `locksim merge` of shards then writes the same bytes
//! as one run over the whole range.

use super::bytes;
use super::{
    fraction, per_second, Histogram, Latencies, RunMetrics, TrafficCost, CONTENDED, UNCONTENDED,
};
use crate::sim::Traffic;
use serde::{Deserialize, Serialize};

/// p50, p99 and max of some acquire latencies, ms (`null` when there were none).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// How many.
    pub count: u64,
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

/// ns as ms.
fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl LatencySummary {
    /// Exact nearest-rank percentiles of one run's latencies, ns (sorts them).
    pub fn exact(ns: &mut [u64]) -> LatencySummary {
        ns.sort_unstable();
        let at = |q: f64| {
            let rank = ((q * ns.len() as f64).ceil() as usize).clamp(1, ns.len());
            ms(ns[rank - 1])
        };
        LatencySummary {
            count: ns.len() as u64,
            p50: (!ns.is_empty()).then(|| at(0.5)),
            p99: (!ns.is_empty()).then(|| at(0.99)),
            max: ns.last().map(|&v| ms(v)),
        }
    }

    /// Percentiles of a histogram (each a bucket's top, see [`Histogram::quantile`]).
    pub fn of(h: &Histogram) -> LatencySummary {
        LatencySummary {
            count: h.count,
            p50: h.quantile(0.5).map(ms),
            p99: h.quantile(0.99).map(ms),
            max: (h.count > 0).then(|| ms(h.max_ns)),
        }
    }
}

/// The summary's `"metrics"`: sums over the sweep's seeds and what follows from them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsTotals {
    /// Granted acquires, all seeds.
    pub grants: u64,
    /// Grants per simulated second, over all seeds' simulated time.
    pub grants_per_s: f64,
    /// Fraction of all seeds' simulated time with a client waiting and no holder.
    pub unavailable: f64,
    /// FIFO inversions, all seeds.
    pub fifo_inversions: u64,
    /// The largest max bypass of any seed.
    pub max_bypass: u64,
    /// Latency percentiles (bucket tops, ms).
    pub latency_ms: Latencies,
    /// What the hosts sent each other over all seeds, and per grant.
    pub traffic: TrafficCost,
    /// Simulated time of all seeds, ns.
    pub run_ns: u64,
    /// Of which with a client waiting and no holder, ns.
    pub unavailable_ns: u64,
    /// Uncontended acquire latencies.
    pub uncontended: Histogram,
    /// Contended acquire latencies.
    pub contended: Histogram,
}

impl MetricsTotals {
    /// Count one run.
    pub fn add(&mut self, m: &RunMetrics) {
        self.grants = self.grants.saturating_add(m.grants);
        self.fifo_inversions = self.fifo_inversions.saturating_add(m.fifo_inversions);
        self.max_bypass = self.max_bypass.max(m.max_bypass);
        self.run_ns = self.run_ns.saturating_add(m.run_ns);
        self.unavailable_ns = self.unavailable_ns.saturating_add(m.unavailable_ns);
        self.add_traffic(&m.traffic);
        self.uncontended.merge(&m.histograms[UNCONTENDED]);
        self.contended.merge(&m.histograms[CONTENDED]);
        self.derive();
    }

    /// Add another part of the sweep (another shard's totals).
    pub fn merge(&mut self, other: &MetricsTotals) {
        self.grants = self.grants.saturating_add(other.grants);
        self.fifo_inversions = self.fifo_inversions.saturating_add(other.fifo_inversions);
        self.max_bypass = self.max_bypass.max(other.max_bypass);
        self.run_ns = self.run_ns.saturating_add(other.run_ns);
        self.unavailable_ns = self.unavailable_ns.saturating_add(other.unavailable_ns);
        self.add_traffic(&other.traffic);
        self.uncontended.merge(&other.uncontended);
        self.contended.merge(&other.contended);
        self.derive();
    }

    fn add_traffic(&mut self, t: &TrafficCost) {
        self.traffic.bytes = self.traffic.bytes.saturating_add(t.bytes);
        self.traffic.segments = self.traffic.segments.saturating_add(t.segments);
    }

    /// Recompute the derived figures from the sums.
    fn derive(&mut self) {
        let sent = Traffic {
            bytes: self.traffic.bytes,
            segments: self.traffic.segments,
        };
        self.traffic = TrafficCost::of(sent, self.grants);
        let mut all = self.uncontended.clone();
        all.merge(&self.contended);
        self.grants_per_s = per_second(self.grants, self.run_ns);
        self.unavailable = fraction(self.unavailable_ns, self.run_ns);
        self.latency_ms = Latencies {
            all: LatencySummary::of(&all),
            uncontended: LatencySummary::of(&self.uncontended),
            contended: LatencySummary::of(&self.contended),
        };
    }

    /// One line for people: "cost: 812 grants (40.6/s simulated); acquire p50 1.2 ms,
    /// p99 35.1 ms, max 80.0 ms (uncontended p50 ..., contended p50 ...); unavailable
    /// 3.2 % of the time; 97 FIFO inversions, max bypass 14; 2.1 KiB in 18.0 segments
    /// per grant".
    pub fn line(&self) -> String {
        let Latencies {
            all,
            uncontended: free,
            contended: busy,
        } = &self.latency_ms;
        let v = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.1} ms"));
        let sent = match (
            self.traffic.bytes_per_grant,
            self.traffic.segments_per_grant,
        ) {
            (Some(b), Some(s)) => format!("; {} in {s:.1} segments per grant", bytes(b)),
            _ => String::new(),
        };
        format!(
            "cost: {} grants ({:.1}/s simulated); acquire p50 {}, p99 {}, max {} (uncontended p50 {}, contended p50 {}, p99 {}); unavailable {:.1} % of the time; {} FIFO inversions, max bypass {}{sent}",
            self.grants,
            self.grants_per_s,
            v(all.p50),
            v(all.p99),
            v(all.max),
            v(free.p50),
            v(busy.p50),
            v(busy.p99),
            self.unavailable * 100.0,
            self.fifo_inversions,
            self.max_bypass
        )
    }
}
