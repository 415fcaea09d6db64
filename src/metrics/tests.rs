use super::*;
use crate::check::tests::{acq, indexed, rel, MS};
use crate::history::EventType::{Invoke, Ok};

/// client-0 acquires a free lock in 2 ms; client-1 asks while it holds, waits 8 ms;
/// client-2 asks while client-1 waits. The lock is wanted but free from 0 to 2 ms, from
/// 10 (release) to 12 ms (grant), and from 20 to 23 ms.
#[test]
fn latency_split_grants_and_unavailability() {
    let h = indexed(vec![
        acq("client-0", Invoke, 0),
        acq("client-0", Ok, 2),
        acq("client-1", Invoke, 4),
        acq("client-2", Invoke, 5),
        rel("client-0", 10),
        acq("client-1", Ok, 12),
        rel("client-1", 20),
        acq("client-2", Ok, 23),
        rel("client-2", 30),
    ]);
    let sent = Traffic {
        bytes: 900,
        segments: 12,
    };
    let m = run_metrics(&h, 100 * MS, sent);
    assert_eq!(m.grants, 3);
    assert_eq!(m.traffic.bytes_per_grant, Some(300.0));
    assert_eq!(m.traffic.segments_per_grant, Some(4.0));
    assert_eq!((m.fifo_inversions, m.max_bypass), (0, 0));
    assert!((m.grants_per_s - 30.0).abs() < 1e-9);
    assert_eq!(m.unavailable_ns, 7 * MS);
    assert!((m.unavailable - 0.07).abs() < 1e-12);
    assert_eq!(m.latency_ms.uncontended.count, 1);
    assert_eq!(m.latency_ms.uncontended.max, Some(2.0));
    assert_eq!(m.latency_ms.contended.count, 2);
    assert_eq!(m.latency_ms.contended.p50, Some(8.0));
    assert_eq!(m.latency_ms.contended.max, Some(18.0));
    assert_eq!(m.latency_ms.all.p99, Some(18.0));
    let mut t = MetricsTotals::default();
    t.add(&m);
    assert_eq!(t.latency_ms.all.count, 3);
    assert!(
        t.line()
            .starts_with("cost: 3 grants (30.0/s simulated); acquire p50 "),
        "{}",
        t.line()
    );
    assert!(
        t.line().ends_with("; 300 B in 4.0 segments per grant"),
        "{}",
        t.line()
    );
    let idle = run_metrics(&[], 100 * MS, sent);
    assert_eq!(
        (idle.traffic.bytes, idle.traffic.bytes_per_grant),
        (900, None)
    );
}

/// Totals added seed by seed equal totals merged from two halves, in any order.
#[test]
fn totals_merge_exactly() {
    let runs: Vec<RunMetrics> = (0..6u64)
        .map(|k| {
            let h = indexed(vec![
                acq("client-0", Invoke, 0),
                acq("client-1", Invoke, k),
                acq("client-0", Ok, 1 + k),
                rel("client-0", 3 + 2 * k),
                acq("client-1", Ok, 4 + 3 * k),
            ]);
            let sent = Traffic {
                bytes: 1000 + 37 * k,
                segments: 10 + k,
            };
            run_metrics(&h, (50 + k) * MS, sent)
        })
        .collect();
    let mut whole = MetricsTotals::default();
    runs.iter().for_each(|m| whole.add(m));
    let (mut a, mut b) = (MetricsTotals::default(), MetricsTotals::default());
    runs.iter().step_by(2).for_each(|m| a.add(m));
    runs.iter().skip(1).step_by(2).for_each(|m| b.add(m));
    let mut ba = MetricsTotals::default();
    ba.merge(&b);
    ba.merge(&a);
    assert_eq!(ba, whole);
    assert_eq!(whole.traffic.bytes, 6000 + 37 * 15);
    assert_eq!(whole.traffic.segments_per_grant, Some(75.0 / 12.0));
    let text = serde_json::to_string(&whole).unwrap();
    let back: MetricsTotals = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), text);
}
