//! Counterexamples as text: each violation with the events involved and the faults
//! around them, one row per event with true time beside the recording node's monotonic
//! and wall clocks.

use crate::check::{CheckReport, Verdict};
use crate::history::{acquire_errors, names, ErrorReply, Event, History};
use crate::sim::EPOCH_NS;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Violations printed per check (the rest are counted).
const SHOWN: usize = 3;

/// Format true or local nanoseconds as milliseconds with three decimals.
pub(crate) fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// The human explanation of every violation in `reports`, with the events involved and
/// the faults around them. Columns: true time | node, its monotonic and wall clock | event.
/// A check that held but cannot apply (`not_applicable`, the scenario's reasons) says
/// `n/a` and why, as the report's `–` does.
pub(crate) fn explain(
    history: &History,
    reports: &[CheckReport],
    not_applicable: &std::collections::BTreeMap<&'static str, String>,
) -> String {
    let mut out = String::new();
    for r in reports {
        if r.verdict == Verdict::Holds {
            match not_applicable.get(r.name) {
                Some(why) => {
                    let _ = writeln!(out, "{:<13} n/a: {why}", r.name);
                }
                None => {
                    let _ = writeln!(out, "{:<13} holds", r.name);
                }
            }
            continue;
        }
        // A quality check (`fair`) is not something the lock promised: not "violated".
        let word = if r.kind.counts_as_violation() {
            "VIOLATED"
        } else {
            "BROKEN, a quality not a safety check"
        };
        let _ = writeln!(
            out,
            "{:<13} {word} ({} counterexample{})",
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
                    let context = e.process == "nemesis" || e.f == names::EXPIRE || own;
                    v.events.contains(&e.index) || (context && e.time_ns >= from && e.time_ns <= hi)
                })
                .collect();
            lines.sort_by_key(|e| e.index);
            out.push_str(&table_header());
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

/// The heading of an event table.
fn table_header() -> String {
    format!(
        "      {:>14} | {:<10} {:>14} {:>13} | event\n",
        "true time", "node", "local mono", "local wall"
    )
}

/// Error replies to lock script calls (`error-reply` events), if the history has any:
/// the first of each different reply as a table row, how many more and when the last
/// came, then why no acquire succeeded when that is what they explain. Empty otherwise.
pub(crate) fn error_replies(history: &[Event]) -> String {
    // (script, text) -> every event of that reply, in order; groups in order of first.
    let mut groups: BTreeMap<(&str, &str), Vec<&Event>> = BTreeMap::new();
    for e in history {
        if let Some(r) = ErrorReply::of(e) {
            groups.entry((r.script, r.text)).or_default().push(e);
        }
    }
    if groups.is_empty() {
        return String::new();
    }
    let mut groups: Vec<Vec<&Event>> = groups.into_values().collect();
    groups.sort_by_key(|g| g[0].index);
    let total: usize = groups.iter().map(Vec::len).sum();
    let kinds = match groups.len() {
        1 if total > 1 => ", all the same".to_string(),
        1 => String::new(),
        n => format!(", {n} different"),
    };
    let mut out = format!(
        "error replies to lock scripts: {total}{kinds}\n{}",
        table_header()
    );
    for g in groups.iter().take(SHOWN) {
        let _ = writeln!(out, "      {}", event_line(g[0]));
        if let [_, .., last] = g.as_slice() {
            let mut clients: Vec<&str> = g.iter().map(|e| e.process.as_str()).collect();
            clients.sort_unstable();
            clients.dedup();
            let _ = writeln!(
                out,
                "        ... and {} more like it (to {}), the last at {}",
                g.len() - 1,
                clients.join(", "),
                ms(last.time_ns as i64)
            );
        }
    }
    if groups.len() > SHOWN {
        let _ = writeln!(out, "  ... and {} other replies", groups.len() - SHOWN);
    }
    if let Some(d) = acquire_errors(history) {
        let _ = writeln!(out, "no acquire succeeded: {}", d.describe());
    }
    out
}

/// One event as a table row.
pub(crate) fn event_line(e: &Event) -> String {
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
pub(crate) fn wall_clock(wall_ms: i64) -> String {
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

/// `type f target key=value...`, the fields that are present; an error reply to a lock
/// script call in words.
pub(crate) fn describe(e: &Event) -> String {
    if let Some(r) = ErrorReply::of(e) {
        let from = r.server.map_or(String::new(), |s| format!(" from {s}"));
        let lock = e
            .lock
            .as_deref()
            .map_or(String::new(), |l| format!(" of {l}"));
        return format!(
            "error reply{from} to the {} script{lock}: {}",
            r.script, r.text
        );
    }
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
    fn error_replies_are_grouped_and_explain_the_missing_grants() {
        let boom = "ERR user_script:1: boom script: 1b9d, on @user_script:1.";
        let reply = |i: u64, p: &str, script: &str, text: &str| {
            let server = Some("redis-0");
            let mut e = ErrorReply {
                script,
                server,
                text,
            }
            .event(p, "L");
            e.index = i;
            e.time_ns = i * 1_000_000;
            e
        };
        let acquire = |i: u64, p: &str, kind: EventType| {
            let mut e = Event::new(p, kind, "acquire").at(i * 1_000_000).lock("L");
            e.index = i;
            e
        };
        let h = vec![
            acquire(0, "client-0", EventType::Invoke),
            reply(1, "client-0", "acquire", boom),
            acquire(2, "client-0", EventType::Info),
            acquire(3, "client-1", EventType::Invoke),
            reply(4, "client-1", "acquire", boom),
            acquire(5, "client-1", EventType::Info),
            reply(
                6,
                "client-1",
                "release",
                "WRONGTYPE Operation against a key",
            ),
        ];
        let text = error_replies(&h);
        let want = [
            "error replies to lock scripts: 3, 2 different",
            &format!("| error reply from redis-0 to the acquire script of L: {boom}"),
            "... and 1 more like it (to client-0, client-1), the last at 4.000 ms",
            "| error reply from redis-0 to the release script of L: WRONGTYPE",
            &format!(
                "no acquire succeeded: every acquire (2) failed on the same error reply to the \
                 acquire script: {boom}"
            ),
        ];
        for line in want {
            assert!(text.contains(line), "{line:?} not in\n{text}");
        }
        assert_eq!(error_replies(&h[..1]), "");
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
