//! Counterexamples as text: each violation with the events involved and the faults
//! around them, one row per event with true time beside the recording node's monotonic
//! and wall clocks.

use crate::check::{CheckReport, Verdict};
use crate::history::{Event, History};
use crate::sim::EPOCH_NS;
use std::fmt::Write as _;

/// Violations printed per check (the rest are counted).
const SHOWN: usize = 3;

/// Format true or local nanoseconds as milliseconds with three decimals.
pub fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// The human explanation of every violation in `reports`, with the events involved and
/// the faults around them. Columns: true time | node, its monotonic and wall clock | event.
pub fn explain(history: &History, reports: &[CheckReport]) -> String {
    let mut out = String::new();
    for r in reports {
        if r.verdict == Verdict::Holds {
            let _ = writeln!(out, "{:<13} holds", r.name);
            continue;
        }
        let _ = writeln!(
            out,
            "{:<13} VIOLATED ({} counterexample{})",
            r.name,
            r.violations.len(),
            if r.violations.len() == 1 { "" } else { "s" }
        );
        for v in r.violations.iter().take(SHOWN) {
            let _ = writeln!(out, "  - {}", v.message);
            let involved: Vec<&Event> = v
                .events
                .iter()
                .filter_map(|&i| history.get(i as usize))
                .collect();
            let (Some(lo), Some(hi)) = (
                involved.iter().map(|e| e.time_ns).min(),
                involved.iter().map(|e| e.time_ns).max(),
            ) else {
                continue;
            };
            // Faults and server expirations that shaped the story, from a little before the
            // first involved event.
            let from = lo.saturating_sub(2_000_000_000);
            let holders: Vec<&str> = involved.iter().map(|e| e.process.as_str()).collect();
            let mut lines: Vec<&Event> = history
                .iter()
                .filter(|e| {
                    // What the holders themselves observed: which nodes granted a
                    // Redlock client its majority, a Curator client's connection states.
                    let own = e.kind == crate::history::EventType::Event
                        && holders.contains(&e.process.as_str());
                    let context = e.process == "nemesis" || e.f == "expire" || own;
                    v.events.contains(&e.index) || (context && e.time_ns >= from && e.time_ns <= hi)
                })
                .collect();
            lines.sort_by_key(|e| e.index);
            let _ = writeln!(
                out,
                "      {:>14} | {:<10} {:>14} {:>13} | event",
                "true time", "node", "local mono", "local wall"
            );
            for e in lines {
                let _ = writeln!(out, "      {}", event_line(e));
            }
        }
        if r.violations.len() > SHOWN {
            let _ = writeln!(out, "  ... and {} more", r.violations.len() - SHOWN);
        }
    }
    out
}

/// One event as a table row.
pub fn event_line(e: &Event) -> String {
    let mark = if e.process == "nemesis" { "!" } else { " " };
    let node = if e.process == "nemesis" {
        e.nodes.as_ref().map(|n| n.join(",")).unwrap_or_default()
    } else {
        e.process.clone()
    };
    let mono = e.local_ns.map(ms).unwrap_or_default();
    let wall = e.wall_ms.map(wall_clock).unwrap_or_default();
    format!(
        "{:>14} | {:<10} {:>14} {:>13} |{mark}{}",
        ms(e.time_ns as i64),
        node,
        mono,
        wall,
        describe(e)
    )
}

/// The wall clock as time of day since the simulation epoch (midnight), e.g. 00:00:01.503.
pub fn wall_clock(wall_ms: i64) -> String {
    let rel = wall_ms - EPOCH_NS / 1_000_000;
    let sign = if rel < 0 { "-" } else { "" };
    let a = rel.unsigned_abs();
    format!(
        "{sign}{:02}:{:02}:{:02}.{:03}",
        a / 3_600_000,
        a / 60_000 % 60,
        a / 1000 % 60,
        a % 1000
    )
}

/// `type f target key=value...`, the fields that are present.
pub fn describe(e: &Event) -> String {
    let mut s = format!("{} {}", e.kind.as_str(), e.f);
    if e.process == "nemesis" {
        s = e.f.clone();
    }
    if let Some(l) = &e.lock {
        let _ = write!(s, " {l}");
    }
    if let Some(k) = &e.key {
        let _ = write!(s, " {k}");
    }
    if let Some(t) = e.token {
        let _ = write!(s, " token={t}");
    }
    if let Some(v) = &e.value {
        if !v.is_null() {
            let _ = write!(s, " value={v}");
        }
    }
    if let Some(a) = e.accepted {
        let _ = write!(s, " {}", if a { "accepted" } else { "REJECTED" });
    }
    if let Some(c) = &e.client {
        let _ = write!(s, " from {c}");
    }
    if let Some(v) = e.valid_ms {
        let _ = write!(s, " valid for {v} ms");
    }
    if let Some(r) = &e.reason {
        let _ = write!(s, " ({r})");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::EventType;

    #[test]
    fn wall_clock_format() {
        assert_eq!(wall_clock(EPOCH_NS / 1_000_000 + 3_723_004), "01:02:03.004");
        assert_eq!(wall_clock(EPOCH_NS / 1_000_000 - 500), "-00:00:00.500");
    }

    #[test]
    fn event_lines_show_true_and_local_time() {
        let mut e = Event::new("client-1", EventType::Ok, "acquire")
            .at(1_503_000_000)
            .lock("L")
            .token(Some(34));
        e.local_ns = Some(1_512_000_000);
        e.wall_ms = Some(EPOCH_NS / 1_000_000 + 4_000);
        let line = event_line(&e);
        assert!(line.contains("1503.000 ms"), "{line}");
        assert!(line.contains("1512.000 ms"), "{line}");
        assert!(line.contains("00:00:04.000"), "{line}");
        assert!(line.contains("ok acquire L token=34"), "{line}");
    }
}
