//! A counterexample as a picture: one lane per node (servers, storage, clients) on a true
//! time axis, zoomed to the window of the first violation.
//!
//! - hold intervals `[acquire ok, release invoke]` as bars on client lanes, labelled with
//!   their token; the holds a violation names are red;
//! - faults as shaded spans on the nodes they hit: pauses (grey), crashes (black, until
//!   the restart), partitions (orange, until the heal); clock jumps, skews and drifts as
//!   purple marks;
//! - server expirations as crosses, storage writes as ticks (a rejected write hollow, an
//!   accepted one a violation names red);
//! - every mark's tooltip (`<title>`) gives the event, true time, and the node's own
//!   monotonic and wall clock at that moment.
//!
//! Self-contained SVG: no scripts, no external references, so it can be inlined in HTML.

use super::story::{describe, ms, wall_clock};
use crate::check::{hold_intervals, CheckReport, Verdict};
use crate::history::{Event, EventType};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

const LANE: f64 = 26.0;
const LEFT: f64 = 110.0;
const WIDTH: f64 = 960.0;
const TOP: f64 = 46.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The true-time window to draw (around the events of the first violation of the first
/// violated check, or the whole run) and the events to highlight (those of the first
/// violation of every violated check).
fn window(history: &[Event], reports: &[CheckReport], end_ns: u64) -> (u64, u64, BTreeSet<u64>) {
    let firsts = || {
        reports
            .iter()
            .filter(|r| r.verdict == Verdict::Violated)
            .flat_map(|r| r.violations.first())
    };
    let involved: BTreeSet<u64> = firsts().flat_map(|v| v.events.iter().copied()).collect();
    let focus: BTreeSet<u64> = firsts()
        .take(1)
        .flat_map(|v| v.events.iter().copied())
        .collect();
    let times: Vec<u64> = focus
        .iter()
        .filter_map(|&i| history.get(i as usize))
        .map(|e| e.time_ns)
        .collect();
    match (times.iter().min(), times.iter().max()) {
        (Some(&lo), Some(&hi)) => {
            let pad = ((hi - lo) / 4).max(400_000_000);
            (
                lo.saturating_sub(pad),
                (hi + pad).min(end_ns.max(hi)),
                involved,
            )
        }
        _ => (0, end_ns.max(1), involved),
    }
}

/// The lane order: servers, then the storage, then clients (each by name).
fn lanes(history: &[Event]) -> Vec<String> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for e in history {
        if e.process == "nemesis" {
            names.extend(e.nodes.iter().flatten().cloned());
        } else {
            names.insert(e.process.clone());
        }
    }
    let rank = |n: &str| {
        if n.starts_with("client-") {
            2
        } else if n == "storage" {
            1
        } else {
            0
        }
    };
    let mut v: Vec<String> = names.into_iter().collect();
    v.sort_by(|a, b| (rank(a), a).cmp(&(rank(b), b)));
    v
}

/// Tooltip text for an event: what, true time, local clocks.
fn title(e: &Event) -> String {
    let mut t = format!("{} at {} (true)", describe(e), ms(e.time_ns as i64));
    if let Some(m) = e.local_ns {
        let _ = write!(t, "; local mono {}", ms(m));
    }
    if let Some(w) = e.wall_ms {
        let _ = write!(t, "; local wall {}", wall_clock(w));
    }
    esc(&t)
}

/// Draw `history` (a run that ended at `end_ns`) with the violations in `reports`.
pub fn timeline_svg(
    history: &[Event],
    reports: &[CheckReport],
    focus: &str,
    end_ns: u64,
    heading: &str,
) -> String {
    let _ = focus;
    let (lo, hi, involved) = window(history, reports, end_ns);
    let span = (hi - lo).max(1) as f64;
    let x = |t: u64| LEFT + (t.clamp(lo, hi) - lo) as f64 / span * (WIDTH - LEFT - 20.0);
    let lanes = lanes(history);
    let row: BTreeMap<&str, f64> = lanes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), TOP + i as f64 * LANE))
        .collect();
    let height = TOP + lanes.len() as f64 * LANE + 56.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(
        s,
        r##"<rect width="100%" height="100%" fill="#fff"/><text x="8" y="16" font-size="13" font-weight="bold">{}</text><text x="8" y="32" fill="#555">true time {} to {}; hover a mark for each node's own clocks</text>"##,
        esc(heading),
        ms(lo as i64),
        ms(hi as i64)
    );
    // Lanes.
    for (name, &y) in &row {
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="8" y="{}">{}</text>"##,
            WIDTH - 20.0,
            y + 4.0,
            esc(name)
        );
    }
    // Time axis: about eight ticks on round values.
    let step = [1u64, 2, 5]
        .iter()
        .flat_map(|m| (0..12).map(move |p| m * 10u64.pow(p) * 1_000_000))
        .find(|st| (hi - lo) / st <= 8)
        .unwrap_or(1_000_000_000_000);
    let axis_y = TOP + lanes.len() as f64 * LANE + 6.0;
    let mut t = lo.div_ceil(step) * step;
    while t <= hi {
        let _ = write!(
            s,
            r##"<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#eee"/><text x="{0}" y="{3}" text-anchor="middle" fill="#555">{4} ms</text>"##,
            x(t),
            TOP - 10.0,
            axis_y,
            axis_y + 14.0,
            t / 1_000_000
        );
        t += step;
    }
    faults(&mut s, history, &row, &x, hi);
    // Holds.
    let holds = hold_intervals(history, end_ns);
    for h in holds.iter().filter(|h| h.end_ns >= lo && h.start_ns <= hi) {
        let Some(&y) = row.get(h.process.as_str()) else {
            continue;
        };
        let bad =
            involved.contains(&h.start_event) || h.end_event.is_some_and(|e| involved.contains(&e));
        let (x0, x1) = (x(h.start_ns), x(h.end_ns).max(x(h.start_ns) + 2.0));
        let token = h.token.map(|t| format!(" token {t}")).unwrap_or_default();
        let _ = write!(
            s,
            r##"<rect x="{x0}" y="{}" width="{}" height="12" rx="2" fill="{}" opacity="0.85"><title>{} held {}{token} from {} to {}</title></rect>"##,
            y - 6.0,
            x1 - x0,
            if bad { "#d33" } else { "#4a8" },
            esc(&h.process),
            esc(&h.lock),
            ms(h.start_ns as i64),
            ms(h.end_ns as i64)
        );
        if !token.is_empty() && x1 - x0 > 30.0 {
            let _ = write!(
                s,
                r##"<text x="{}" y="{}" fill="#fff" font-size="9">{}</text>"##,
                x0 + 3.0,
                y + 3.0,
                token.trim()
            );
        }
    }
    // Point events: expirations, storage writes, and anything a violation names.
    for e in history
        .iter()
        .filter(|e| e.time_ns >= lo && e.time_ns <= hi)
    {
        let Some(&y) = row.get(e.process.as_str()) else {
            continue;
        };
        let px = x(e.time_ns);
        let named = involved.contains(&e.index);
        if e.kind == EventType::Event && e.f == "expire" {
            let _ = write!(
                s,
                r##"<path d="M{0} {1} l6 6 m0 -6 l-6 6" stroke="{2}" stroke-width="2" transform="translate(-3 -3)"><title>{3}</title></path>"##,
                px,
                y,
                if named { "#d33" } else { "#333" },
                title(e)
            );
        } else if e.process == "storage" && e.f == "write" {
            let fill = match (e.accepted, named) {
                (Some(false), _) => "none",
                (_, true) => "#d33",
                _ => "#36c",
            };
            let _ = write!(
                s,
                r##"<rect x="{}" y="{}" width="4" height="14" fill="{fill}" stroke="#36c"><title>{}</title></rect>"##,
                px - 2.0,
                y - 7.0,
                title(e)
            );
        } else if named {
            let _ = write!(
                s,
                r##"<circle cx="{px}" cy="{y}" r="4" fill="none" stroke="#d33" stroke-width="2"><title>{}</title></circle>"##,
                title(e)
            );
        }
    }
    let _ = write!(
        s,
        r##"<text x="8" y="{}" fill="#555">green: hold; red: what the violation names; grey: pause; black: crash; orange: partition; brown: disk stall; purple: clock fault; x: expiry; blue tick: storage write (hollow: rejected)</text>"##,
        height - 8.0
    );
    s.push_str("</svg>");
    s
}

/// Fault spans and marks from the nemesis events.
fn faults(
    s: &mut String,
    history: &[Event],
    row: &BTreeMap<&str, f64>,
    x: &dyn Fn(u64) -> f64,
    hi: u64,
) {
    // Open spans: (node, kind) -> (start time, the event).
    let mut open: BTreeMap<(String, &str), (u64, &Event)> = BTreeMap::new();
    let mut partitions: BTreeMap<String, (u64, &Event)> = BTreeMap::new();
    let mut spans: Vec<(String, &str, u64, u64, &Event)> = Vec::new();
    for e in history.iter().filter(|e| e.process == "nemesis") {
        let nodes = e.nodes.clone().unwrap_or_default();
        match e.f.as_str() {
            "pause" | "crash" | "disk-stall" => {
                for n in nodes {
                    open.insert((n, e.f.as_str()), (e.time_ns, e));
                }
            }
            "resume" | "restart" | "disk-ready" => {
                let kind = match e.f.as_str() {
                    "resume" => "pause",
                    "restart" => "crash",
                    _ => "disk-stall",
                };
                for n in nodes {
                    if let Some((t0, start)) = open.remove(&(n.clone(), kind)) {
                        spans.push((n, kind, t0, e.time_ns, start));
                    }
                }
            }
            "partition" => {
                let id = e
                    .value
                    .as_ref()
                    .map(|v| v["id"].to_string())
                    .unwrap_or_default();
                partitions.insert(id, (e.time_ns, e));
            }
            "heal" => {
                let id = e
                    .value
                    .as_ref()
                    .map(|v| v["id"].to_string())
                    .unwrap_or_default();
                let healed: Vec<String> = if id == "\"all\"" {
                    partitions.keys().cloned().collect()
                } else {
                    vec![id]
                };
                for id in healed {
                    if let Some((t0, start)) = partitions.remove(&id) {
                        for n in start.nodes.iter().flatten() {
                            spans.push((n.clone(), "partition", t0, e.time_ns, start));
                        }
                    }
                }
            }
            _ => {
                // Clock faults: a mark on each node.
                for n in nodes {
                    if let Some(&y) = row.get(n.as_str()) {
                        let _ = write!(
                            s,
                            r##"<path d="M{} {} l5 -9 l5 9 z" fill="#93c"><title>{}</title></path>"##,
                            x(e.time_ns) - 5.0,
                            y + 10.0,
                            title(e)
                        );
                    }
                }
            }
        }
    }
    // Whatever is still open lasts to the end of the picture.
    for ((n, kind), (t0, e)) in open {
        spans.push((n, kind, t0, hi, e));
    }
    for (_, (t0, e)) in partitions {
        for n in e.nodes.iter().flatten() {
            spans.push((n.clone(), "partition", t0, hi, e));
        }
    }
    for (n, kind, t0, t1, e) in spans {
        let Some(&y) = row.get(n.as_str()) else {
            continue;
        };
        let (fill, dy, h) = match kind {
            "pause" => ("#999", -11.0, 22.0),
            "crash" => ("#222", -11.0, 22.0),
            "disk-stall" => ("#c60", 8.0, 4.0),
            _ => ("#f93", -12.0, 4.0),
        };
        let (x0, x1) = (x(t0), x(t1));
        if x1 <= x0 {
            continue;
        }
        let _ = write!(
            s,
            r##"<rect x="{x0}" y="{}" width="{}" height="{h}" fill="{fill}" opacity="0.3"><title>{kind} from {} to {}: {}</title></rect>"##,
            y + dy,
            x1 - x0,
            ms(t0 as i64),
            ms(t1 as i64),
            title(e)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Violation;

    fn ev(i: u64, p: &str, kind: EventType, f: &str, t_ms: u64) -> Event {
        let mut e = Event::new(p, kind, f).at(t_ms * 1_000_000).lock("L");
        e.index = i;
        e
    }

    #[test]
    fn draws_lanes_holds_faults_and_the_violation() {
        let mut pause = ev(2, "nemesis", EventType::Event, "pause", 150);
        pause.nodes = Some(vec!["client-0".into()]);
        let mut resume = ev(5, "nemesis", EventType::Event, "resume", 1650);
        resume.nodes = Some(vec!["client-0".into()]);
        let h = vec![
            ev(0, "client-0", EventType::Invoke, "acquire", 90),
            ev(1, "client-0", EventType::Ok, "acquire", 100),
            pause,
            ev(3, "redis-0", EventType::Event, "expire", 1100),
            ev(4, "client-1", EventType::Ok, "acquire", 1200),
            resume,
            ev(6, "client-0", EventType::Invoke, "release", 1700),
        ];
        let reports = vec![CheckReport {
            name: "mutex",
            verdict: Verdict::Violated,
            violations: vec![Violation::new("overlap", vec![1, 4, 6])],
        }];
        let svg = timeline_svg(&h, &reports, "mutex", 3_000_000_000, "row 1 <seed 0>");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        for lane in ["redis-0", "client-0", "client-1"] {
            assert!(svg.contains(&format!(">{lane}</text>")), "{lane}");
        }
        assert!(svg.contains("#d33"), "the violating holds are red");
        assert!(svg.contains("pause from 150.000 ms to 1650.000 ms"));
        assert!(svg.contains("row 1 &lt;seed 0&gt;"), "text is escaped");
        assert!(!svg.contains("<script") && !svg.contains("href"));
    }
}
