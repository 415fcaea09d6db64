//! A latency histogram with fixed log buckets, so that histograms of different seeds
//! (and of shards run on different machines) add up exactly: a sweep's percentiles are
//! the same whether it ran in one piece or was merged from shards.
//!
//! Bucket boundaries: values below 8 ns have a bucket each; above, every power of two
//! is split into 8 equal buckets (each at most 12.5 % wide). A bucket is named by its
//! lowest value, in ns; a percentile is reported as its bucket's highest value (never
//! above the exact maximum, which is kept too).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Counts per bucket (keyed by the bucket's lowest value, ns), plus the exact maximum.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Histogram {
    /// Values counted.
    pub count: u64,
    /// The largest value, ns (0 when empty).
    pub max_ns: u64,
    /// Bucket lowest value (ns) -> how many values fell in it.
    pub buckets: BTreeMap<u64, u64>,
}

/// The lowest value and the width of the bucket holding `v`.
fn bucket(v: u64) -> (u64, u64) {
    if v < 8 {
        return (v, 1);
    }
    let shift = 63 - v.leading_zeros() - 3;
    ((v >> shift) << shift, 1 << shift)
}

impl Histogram {
    /// Count one value, ns.
    pub fn add(&mut self, v: u64) {
        self.count += 1;
        self.max_ns = self.max_ns.max(v);
        *self.buckets.entry(bucket(v).0).or_default() += 1;
    }

    /// Add every count of `other` (exact: the result does not depend on the order).
    pub fn merge(&mut self, other: &Histogram) {
        self.count = self.count.saturating_add(other.count);
        self.max_ns = self.max_ns.max(other.max_ns);
        for (&b, &n) in &other.buckets {
            let c = self.buckets.entry(b).or_default();
            *c = c.saturating_add(n);
        }
    }

    /// The `q`-quantile (nearest rank, `0 < q <= 1`) as its bucket's highest value capped
    /// at the maximum, ns; `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (&low, &n) in &self.buckets {
            seen += n;
            if seen >= rank {
                let (_, width) = bucket(low);
                return Some((low + width - 1).min(self.max_ns));
            }
        }
        Some(self.max_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_at_most_an_eighth_wide_and_contain_their_values() {
        for v in [
            0u64,
            1,
            3,
            4,
            5,
            7,
            8,
            1000,
            1_000_000,
            123_456_789,
            u64::MAX,
        ] {
            let (low, width) = bucket(v);
            assert!(low <= v && v - low < width, "{v}: {low} {width}");
            assert!(v < 8 || width <= low / 8, "{v}: {low} {width}");
            assert_eq!(bucket(low), (low, width));
        }
    }

    #[test]
    fn merging_is_exact_and_quantiles_are_bucket_tops() {
        let (mut a, mut b, mut all) = (
            Histogram::default(),
            Histogram::default(),
            Histogram::default(),
        );
        for v in 1..=100u64 {
            let ns = v * 1_000_000;
            all.add(ns);
            if v % 3 == 0 {
                a.add(ns)
            } else {
                b.add(ns)
            }
        }
        let mut ab = b.clone();
        ab.merge(&a);
        a.merge(&b);
        assert_eq!(a, all);
        assert_eq!(ab, all);
        assert_eq!(all.quantile(1.0), Some(100_000_000));
        let p50 = all.quantile(0.5).unwrap();
        assert!((50_000_000..=50_000_000 * 9 / 8).contains(&p50), "{p50}");
        assert_eq!(Histogram::default().quantile(0.5), None);
    }
}
