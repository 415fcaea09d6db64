//! A counterexample as a picture: one check's first violation on a true-time axis, one
//! lane per node, zoomed to the events that violation names.
//!
//! Lanes, top to bottom: **network** (only when a partition overlaps the window), **leader**
//! (only when a server recorded a `leader` event), then the nodes: servers, the storage,
//! clients (each by name). Every mark stays inside its own lane. Marks:
//!
//! - **hold**: a bar `[acquire ok, release invoke)` on a client lane (see
//!   [`hold_intervals`]), green; red when the focused check's violation names it, light red
//!   when another violated check's first violation names it. Labelled with its token inside
//!   the bar when the text fits, else to its right when that does not run into the next
//!   hold, else only in the tooltip. A very short hold is a thin tick.
//! - **stale grant**: an amber diamond on an acquire `ok` whose token is lower than a token
//!   already granted on the same lock: the grant came from a stale view of the lock (a
//!   node's stale local state, a reply that arrived after the lease was gone). The history
//!   does not record which server answered, so this is inferred from the tokens alone.
//! - **leader**: on the leader lane, a bar per `leader` event, "raft-1 · term 3", until a
//!   leader of a higher term appears, that node crashes, or the window ends.
//! - **partition**: on the network lane one orange bar per partition until its heal,
//!   labelled with the side cut off and the rest; a thin orange band along the top of
//!   each cut-off node's lane.
//! - **pause**: light grey band over the node's lane, until the resume.
//! - **crash**: dark band over the node's lane, "crashed", until the restart.
//! - **disk stall**: thin brown band along the bottom of the node's lane.
//! - **connection** (Curator clients): a thin band along the bottom of the client's lane
//!   while it is SUSPENDED (amber) or LOST (dark red); CONNECTED and RECONNECTED draw
//!   nothing (the tooltip of the band says how it ended).
//! - **clock fault** (jump, skew, drift): a purple triangle at the bottom of the node's lane.
//! - **expiry**: a cross on the server lane (red when the violation names it).
//! - **storage write**: a blue tick on the storage lane, hollow when fencing rejected it,
//!   red when the violation names it.
//! - any other event the focused violation names: a hollow red circle; one that only
//!   another violated check's first violation names: a hollow light-red circle.
//!
//! The legend shows a sample of each kind of mark present in the picture. Every mark's
//! tooltip (`<title>`) is a sentence with the true time and the recording node's own
//! monotonic and wall clock when it has them. Self-contained SVG: no scripts, no external
//! references, no ids, so several can be inlined in one HTML page.

use super::story::{describe, wall_clock};
use crate::check::{hold_intervals, CheckReport, Hold, Verdict};
use crate::history::{Event, EventType};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The picture's width in px; the page shows it at natural size.
const WIDTH: f64 = 960.0;
/// Left edge of the plot (lane names are left of it).
const LEFT: f64 = 120.0;
/// Right edge of the plot.
const RIGHT: f64 = WIDTH - 20.0;
/// Height of a node lane.
const LANE: f64 = 38.0;
/// Height of one row of partition bars on the network lane.
const NET_ROW: f64 = 18.0;
/// Height of the leader lane.
const LEADER_LANE: f64 = 26.0;
/// Font sizes: text, small labels.
const FONT: f64 = 12.0;
const SMALL: f64 = 11.0;

const GREEN: &str = "#4a8";
const RED: &str = "#d33";
const LIGHT_RED: &str = "#f0a0a0";
const AMBER: &str = "#e8a000";
const ORANGE: &str = "#f93";
const PAUSE: &str = "#d4d4d4";
const CRASH: &str = "#333";
const BROWN: &str = "#a0522d";
const PURPLE: &str = "#93c";
const BLUE: &str = "#36c";
const LOST: &str = "#a00";
const LEADERS: [&str; 5] = ["#5b7fc7", "#8c6bb1", "#3a9a9a", "#b7803a", "#6f8f2f"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A duration or instant for people: "2.445 s", "850 ms", "12.5 ms", "40 µs", "-80 ms".
pub fn human_time(ns: i64) -> String {
    if ns == 0 {
        return "0 s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    let (v, unit) = if a >= 1_000_000_000 {
        (a as f64 / 1e9, "s")
    } else if a >= 1_000_000 {
        (a as f64 / 1e6, "ms")
    } else if a >= 1_000 {
        (a as f64 / 1e3, "µs")
    } else {
        (a as f64, "ns")
    };
    let n = format!("{v:.3}");
    let n = n.trim_end_matches('0').trim_end_matches('.');
    format!("{sign}{n} {unit}")
}

/// `human_time` with an explicit sign: "+1.2 s", "-80 ms".
fn signed_time(ns: i64) -> String {
    if ns >= 0 {
        format!("+{}", human_time(ns))
    } else {
        human_time(ns)
    }
}

/// Estimated width in px of `s` at font size `size` (sans-serif, ~0.6 em per char).
fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * 0.6 * size
}

/// Where a label for the bar `[x0, x1]` goes: inside when it fits, else right of the bar
/// when it ends before `limit`, else nowhere. Returns (x, inside).
fn place_label(x0: f64, x1: f64, text: &str, size: f64, limit: f64) -> Option<(f64, bool)> {
    let w = text_width(text, size);
    if x1 - x0 >= w + 6.0 {
        Some((x0 + 3.0, true))
    } else if x1 + 4.0 + w <= limit.min(RIGHT) {
        Some((x1 + 4.0, false))
    } else {
        None
    }
}

/// Split `text` into lines of at most `max` px at font size `size`, at spaces.
fn wrap(text: &str, size: f64, max: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if text_width(&candidate, size) > max && !line.is_empty() {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = candidate;
        }
    }
    lines.push(line);
    lines
}

fn set(nodes: &[String]) -> String {
    format!("{{{}}}", nodes.join(", "))
}

/// A JSON number of milliseconds as nanoseconds.
fn json_ms(v: &Value, key: &str) -> Option<i64> {
    v.get(key)?.as_f64().map(|ms| (ms * 1e6).round() as i64)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().map_or_else(|| s.to_string(), str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A partition event as a sentence: who is cut off from whom, in which direction.
fn partition_sentence(side: &[String], v: &Value) -> String {
    let from = strings(&v["from"]);
    let dir = if v["oneway"].as_bool() == Some(true) {
        format!("one way: {} cannot send to {}", set(side), set(&from))
    } else {
        "both ways".to_string()
    };
    format!(
        "partition: {} cut off from {} ({dir})",
        set(side),
        set(&from)
    )
}

/// A nemesis event as a sentence.
fn nemesis_sentence(e: &Event) -> String {
    let nodes = e.nodes.clone().unwrap_or_default();
    let on = nodes.join(", ");
    let v = e.value.clone().unwrap_or(Value::Null);
    match e.f.as_str() {
        "pause" => {
            let d = json_ms(&v, "duration_ms")
                .map(|d| format!(" for {}", human_time(d)))
                .unwrap_or_default();
            let at = match v["at"].as_str() {
                Some("anywhere") | None => String::new(),
                Some(a) => format!(" (strikes {a})"),
            };
            format!("pause of {on}{d}{at}")
        }
        "resume" => format!("{on} resumes"),
        "crash" => match json_ms(&v, "down_ms") {
            Some(d) => format!("crash of {on} (down for {})", human_time(d)),
            None => format!("crash of {on} (stays down)"),
        },
        "restart" => format!("{on} restarts"),
        "partition" => partition_sentence(&nodes, &v),
        "heal" => match &v["id"] {
            Value::String(s) if s == "all" => "heal of every partition".to_string(),
            id => format!("heal of partition {id}"),
        },
        "clock-jump" => {
            let d = json_ms(&v, "delta_ms").unwrap_or(0);
            let err = json_ms(&v, "wall_error_ms")
                .map(|e| format!(" (wall clock now {} from true time)", signed_time(e)))
                .unwrap_or_default();
            format!("clock jump {} on {on}{err}", signed_time(d))
        }
        "skew" => format!(
            "clock skew on {on}: wall clock set {} from true time",
            signed_time(json_ms(&v, "skew_ms").unwrap_or(0))
        ),
        "drift" => format!(
            "clock drift on {on}: {:+} ppm",
            v["drift_ppm"].as_i64().unwrap_or(0)
        ),
        "disk-stall" => match json_ms(&v, "duration_ms") {
            Some(d) => format!("disk stall on {on} for {}", human_time(d)),
            None => format!("disk stall on {on}"),
        },
        "disk-ready" => format!("disk of {on} ready"),
        f if v.is_null() => format!("{f} on {on}"),
        f => format!("{f} on {on}: {v}"),
    }
}

/// An event as a sentence (no times).
pub fn sentence(e: &Event) -> String {
    if e.process == "nemesis" {
        return nemesis_sentence(e);
    }
    let v = e.value.clone().unwrap_or(Value::Null);
    match (e.kind, e.f.as_str()) {
        (EventType::Event, "leader") => {
            format!("{} becomes leader (term {})", e.process, v["term"])
        }
        (EventType::Event, "connection") => {
            let why = e
                .reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let state = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            format!("{} connection {state}{why}", e.process)
        }
        (EventType::Event, "expire") => {
            let key = e.key.as_deref().unwrap_or("?");
            let at = v
                .get("index")
                .map(|i| format!(" (log index {i})"))
                .unwrap_or_default();
            format!("{}: the lock key {key} expires{at}", e.process)
        }
        _ => format!("{}: {}", e.process, describe(e)),
    }
}

/// " at 2.445 s true; client-1 mono 2.3 s, wall 00:00:02.301": true time beside the
/// recording node's clocks.
fn when(e: &Event) -> String {
    let mut t = format!(" at {} true time", human_time(e.time_ns as i64));
    let node = match (&e.nodes, e.process.as_str()) {
        (Some(n), "nemesis") => n.join(", "),
        _ => e.process.clone(),
    };
    if let Some(m) = e.local_ns {
        let _ = write!(t, "; {node} local mono {}", human_time(m));
    }
    if let Some(w) = e.wall_ms {
        let _ = write!(t, ", local wall {}", wall_clock(w));
    }
    t
}

/// Tooltip text for an event: the sentence, true time, local clocks (escaped).
fn title(e: &Event) -> String {
    esc(&format!("{}{}", sentence(e), when(e)))
}

/// Every kind of mark, in legend order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    Hold,
    HoldFocus,
    HoldOther,
    StaleGrant,
    Leader,
    Partition,
    Pause,
    Crash,
    DiskStall,
    Suspended,
    Lost,
    ClockFault,
    Expiry,
    ExpiryFocus,
    Write,
    WriteRejected,
    WriteFocus,
    Named,
    NamedOther,
}

impl Mark {
    fn label(self, focus: &str) -> String {
        match self {
            Mark::Hold => "hold (acquire ok to release), token as label".into(),
            Mark::HoldFocus => format!("hold the {focus} violation names"),
            Mark::HoldOther => "hold another check's violation names".into(),
            Mark::StaleGrant => "stale grant: token lower than one granted before".into(),
            Mark::Leader => "leader and its term".into(),
            Mark::Partition => "partition (band: a node on the cut-off side)".into(),
            Mark::Pause => "paused".into(),
            Mark::Crash => "crashed (until restart)".into(),
            Mark::DiskStall => "disk stall".into(),
            Mark::Suspended => "connection SUSPENDED".into(),
            Mark::Lost => "connection LOST".into(),
            Mark::ClockFault => "clock jump, skew or drift".into(),
            Mark::Expiry => "server expiry of a lock key".into(),
            Mark::ExpiryFocus => format!("expiry the {focus} violation names"),
            Mark::Write => "storage write".into(),
            Mark::WriteRejected => "storage write rejected by fencing".into(),
            Mark::WriteFocus => format!("storage write the {focus} violation names"),
            Mark::Named => format!("other event the {focus} violation names"),
            Mark::NamedOther => "event another check's violation names".into(),
        }
    }

    /// The mark drawn over `[x0, x1]` around the centre line `y` (a lane's, or the
    /// legend's), with `tip` as tooltip.
    fn draw(self, x0: f64, x1: f64, y: f64, tip: &str) -> String {
        let w = (x1 - x0).max(2.0);
        let t = format!("<title>{tip}</title>");
        let bar = |fill: &str, top: f64, h: f64| {
            format!(
                r##"<rect x="{x0:.1}" y="{:.1}" width="{w:.1}" height="{h}" fill="{fill}">{t}</rect>"##,
                y + top
            )
        };
        match self {
            Mark::Hold => bar(GREEN, -7.0, 14.0),
            Mark::HoldFocus => bar(RED, -7.0, 14.0),
            Mark::HoldOther => bar(LIGHT_RED, -7.0, 14.0),
            Mark::Leader => bar(LEADERS[0], -8.0, 16.0),
            Mark::Partition => bar(ORANGE, -7.0, 14.0),
            Mark::Pause => bar(PAUSE, -LANE / 2.0 + 1.0, LANE - 2.0),
            Mark::Crash => bar(CRASH, -LANE / 2.0 + 1.0, LANE - 2.0),
            Mark::DiskStall => bar(BROWN, 10.0, 4.0),
            Mark::Suspended => bar(AMBER, 10.0, 4.0),
            Mark::Lost => bar(LOST, 10.0, 4.0),
            Mark::StaleGrant => format!(
                r##"<path d="M{x0:.1} {:.1} l6 6 l-6 6 l-6 -6 z" fill="{AMBER}" stroke="#000">{t}</path>"##,
                y - 6.0
            ),
            Mark::ClockFault => format!(
                r##"<path d="M{:.1} {:.1} l5 -9 l5 9 z" fill="{PURPLE}">{t}</path>"##,
                x0 - 5.0,
                y + 14.0
            ),
            Mark::Expiry | Mark::ExpiryFocus => format!(
                r##"<path d="M{:.1} {:.1} l8 8 m0 -8 l-8 8" stroke="{}" stroke-width="2">{t}</path>"##,
                x0 - 4.0,
                y - 4.0,
                if self == Mark::Expiry { "#333" } else { RED }
            ),
            Mark::Write | Mark::WriteRejected | Mark::WriteFocus => format!(
                r##"<rect x="{:.1}" y="{:.1}" width="4" height="14" fill="{}" stroke="{BLUE}">{t}</rect>"##,
                x0 - 2.0,
                y - 7.0,
                match self {
                    Mark::Write => BLUE,
                    Mark::WriteRejected => "none",
                    _ => RED,
                }
            ),
            Mark::Named | Mark::NamedOther => format!(
                r##"<circle cx="{x0:.1}" cy="{y}" r="5" fill="none" stroke="{}" stroke-width="2">{t}</circle>"##,
                if self == Mark::Named { RED } else { LIGHT_RED }
            ),
        }
    }

    /// How far the legend moves the mark's centre line so that the sample sits on the
    /// legend's text line (marks drawn along a lane's bottom edge are lifted).
    fn legend_dy(self) -> f64 {
        match self {
            Mark::DiskStall | Mark::Suspended | Mark::Lost => -12.0,
            Mark::ClockFault => -9.0,
            _ => 0.0,
        }
    }

    /// Whether the mark is a bar (its legend sample is one).
    fn is_bar(self) -> bool {
        !matches!(
            self,
            Mark::StaleGrant
                | Mark::ClockFault
                | Mark::Expiry
                | Mark::ExpiryFocus
                | Mark::Write
                | Mark::WriteRejected
                | Mark::WriteFocus
                | Mark::Named
                | Mark::NamedOther
        )
    }
}

/// A span of a fault on one node.
struct Span<'a> {
    node: String,
    mark: Mark,
    t0: u64,
    t1: u64,
    event: &'a Event,
}

/// A partition from its event to its heal.
struct Cut<'a> {
    t0: u64,
    t1: u64,
    event: &'a Event,
}

/// Fault spans (pause, crash, disk stall) per node, and partitions, from the nemesis
/// events; what is still open at the end lasts until `end`.
fn fault_spans(history: &[Event], end: u64) -> (Vec<Span<'_>>, Vec<Cut<'_>>) {
    let mut open: BTreeMap<(String, Mark), &Event> = BTreeMap::new();
    let mut parts: BTreeMap<String, &Event> = BTreeMap::new();
    let (mut spans, mut cuts) = (Vec::new(), Vec::new());
    let id = |e: &Event| e.value.as_ref().map(|v| v["id"].to_string());
    for e in history.iter().filter(|e| e.process == "nemesis") {
        let nodes = e.nodes.clone().unwrap_or_default();
        let (start, stop) = match e.f.as_str() {
            "pause" => (Some(Mark::Pause), None),
            "crash" => (Some(Mark::Crash), None),
            "disk-stall" => (Some(Mark::DiskStall), None),
            "resume" => (None, Some(Mark::Pause)),
            "restart" => (None, Some(Mark::Crash)),
            "disk-ready" => (None, Some(Mark::DiskStall)),
            _ => (None, None),
        };
        for n in nodes {
            if let Some(m) = start {
                open.entry((n.clone(), m)).or_insert(e);
            }
            if let Some(m) = stop {
                if let Some(s) = open.remove(&(n.clone(), m)) {
                    spans.push(Span {
                        node: n,
                        mark: m,
                        t0: s.time_ns,
                        t1: e.time_ns,
                        event: s,
                    });
                }
            }
        }
        if e.f == "partition" {
            parts.insert(id(e).unwrap_or_default(), e);
        } else if e.f == "heal" {
            let healed: Vec<String> = match id(e) {
                Some(i) if i == "\"all\"" => parts.keys().cloned().collect(),
                Some(i) => vec![i],
                None => vec![],
            };
            for i in healed {
                if let Some(s) = parts.remove(&i) {
                    cuts.push(Cut {
                        t0: s.time_ns,
                        t1: e.time_ns,
                        event: s,
                    });
                }
            }
        }
    }
    for ((node, mark), s) in open {
        spans.push(Span {
            node,
            mark,
            t0: s.time_ns,
            t1: end.max(s.time_ns),
            event: s,
        });
    }
    for s in parts.into_values() {
        cuts.push(Cut {
            t0: s.time_ns,
            t1: end.max(s.time_ns),
            event: s,
        });
    }
    cuts.sort_by_key(|c| (c.t0, c.event.index));
    (spans, cuts)
}

/// Leader bars: (node, term, from, to, event). A leader's bar ends when a leader of a
/// higher term appears, when its node crashes, or at `end`.
fn leader_bars(history: &[Event], end: u64) -> Vec<(String, u64, u64, u64, &Event)> {
    let leaders: Vec<(&Event, u64)> = history
        .iter()
        .filter(|e| e.kind == EventType::Event && e.f == "leader" && e.process != "nemesis")
        .map(|e| {
            (
                e,
                e.value
                    .as_ref()
                    .and_then(|v| v["term"].as_u64())
                    .unwrap_or(0),
            )
        })
        .collect();
    leaders
        .iter()
        .map(|&(e, term)| {
            let next = leaders
                .iter()
                .filter(|(o, t)| *t > term && o.index > e.index)
                .map(|(o, _)| o.time_ns)
                .min();
            let crash = history
                .iter()
                .filter(|c| c.index > e.index && c.process == "nemesis" && c.f == "crash")
                .find(|c| c.nodes.iter().flatten().any(|n| *n == e.process))
                .map(|c| c.time_ns);
            let t1 = [next, crash].into_iter().flatten().min().unwrap_or(end);
            (e.process.clone(), term, e.time_ns, t1.max(e.time_ns), e)
        })
        .collect()
}

/// Connection bands of Curator clients: (client, mark, from, to, event) while SUSPENDED
/// or LOST, until the client's next connection event or `end`.
fn connection_bands(history: &[Event], end: u64) -> Vec<(String, Mark, u64, u64, &Event)> {
    let mut last: BTreeMap<&str, &Event> = BTreeMap::new();
    let mut out = Vec::new();
    let state = |e: &Event| match e.value.as_ref().and_then(Value::as_str) {
        Some("SUSPENDED") => Some(Mark::Suspended),
        Some("LOST") => Some(Mark::Lost),
        _ => None,
    };
    let conn = |e: &&Event| e.kind == EventType::Event && e.f == "connection";
    for e in history.iter().filter(conn) {
        if let Some(prev) = last.insert(e.process.as_str(), e) {
            if let Some(m) = state(prev) {
                out.push((prev.process.clone(), m, prev.time_ns, e.time_ns, prev));
            }
        }
    }
    for prev in last.into_values() {
        if let Some(m) = state(prev) {
            out.push((
                prev.process.clone(),
                m,
                prev.time_ns,
                end.max(prev.time_ns),
                prev,
            ));
        }
    }
    out
}

/// Stale grants: acquire `ok`s whose token is lower than one granted earlier on the same
/// lock, with that earlier grant.
fn stale_grants(history: &[Event]) -> Vec<(&Event, &Event)> {
    let mut best: BTreeMap<&str, &Event> = BTreeMap::new();
    let mut out = Vec::new();
    for e in history
        .iter()
        .filter(|e| e.kind == EventType::Ok && e.f == "acquire")
    {
        let (Some(lock), Some(tok)) = (e.lock.as_deref(), e.token) else {
            continue;
        };
        match best.get(lock) {
            Some(b) if b.token.is_some_and(|t| t > tok) => out.push((e, *b)),
            _ => {
                best.insert(lock, e);
            }
        }
    }
    out
}

/// Everything a picture is drawn from and into.
struct Canvas<'a> {
    history: &'a [Event],
    lo: u64,
    hi: u64,
    /// Events the focused check's first violation names.
    focus: BTreeSet<u64>,
    /// Events other violated checks' first violations name.
    other: BTreeSet<u64>,
    /// Centre line of each node lane.
    rows: BTreeMap<String, f64>,
    body: String,
    marks: BTreeSet<Mark>,
}

impl Canvas<'_> {
    fn x(&self, t: u64) -> f64 {
        let span = (self.hi - self.lo).max(1) as f64;
        LEFT + (t.clamp(self.lo, self.hi) - self.lo) as f64 / span * (RIGHT - LEFT)
    }

    fn visible(&self, t0: u64, t1: u64) -> bool {
        t1 >= self.lo && t0 <= self.hi
    }

    /// Draw `mark` over true times `[t0, t1]` at height `y`.
    fn put(&mut self, mark: Mark, t0: u64, t1: u64, y: f64, tip: &str) {
        let (x0, x1) = (self.x(t0), self.x(t1));
        self.body.push_str(&mark.draw(x0, x1, y, tip));
        self.marks.insert(mark);
    }

    /// A label at `x` on the centre line `y`: white inside a bar, dark outside.
    fn label(&mut self, x: f64, y: f64, text: &str, inside: bool) {
        let _ = write!(
            self.body,
            r##"<text x="{x:.1}" y="{:.1}" font-size="{SMALL}" fill="{}">{}</text>"##,
            y + 4.0,
            if inside { "#fff" } else { "#222" },
            esc(text)
        );
    }
}

/// The name of the first violated check in `reports` ("" if none): the focus of a
/// single timeline.
pub fn first_violated(reports: &[CheckReport]) -> &'static str {
    reports
        .iter()
        .find(|r| r.verdict == Verdict::Violated)
        .map_or("", |r| r.name)
}

/// The focused check's first violation, and the events other violated checks' first
/// violations name.
fn violations<'r>(
    reports: &'r [CheckReport],
    focus: &str,
) -> (Option<&'r crate::check::Violation>, BTreeSet<u64>) {
    let violated = || reports.iter().filter(|r| r.verdict == Verdict::Violated);
    let first = violated()
        .find(|r| r.name == focus)
        .and_then(|r| r.violations.first());
    let other = violated()
        .filter(|r| r.name != focus)
        .flat_map(|r| r.violations.first())
        .flat_map(|v| v.events.iter().copied())
        .collect();
    (first, other)
}

/// The true-time window: around the events `named`, or the whole run.
fn window(history: &[Event], named: &BTreeSet<u64>, end_ns: u64) -> (u64, u64) {
    let times: Vec<u64> = named
        .iter()
        .filter_map(|&i| history.get(i as usize))
        .map(|e| e.time_ns)
        .collect();
    match (times.iter().min(), times.iter().max()) {
        (Some(&lo), Some(&hi)) => {
            let pad = ((hi - lo) / 4).max(400_000_000);
            // On whole milliseconds, so the heading reads "630 ms to 5.188 s".
            let lo = lo.saturating_sub(pad) / 1_000_000 * 1_000_000;
            (
                lo,
                (hi + pad).min(end_ns.max(hi)).div_ceil(1_000_000) * 1_000_000,
            )
        }
        _ => (0, end_ns.max(1)),
    }
}

/// The node lanes in order: servers, then the storage, then clients (each by name).
fn lanes(history: &[Event]) -> Vec<String> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for e in history {
        if e.process == "nemesis" {
            names.extend(e.nodes.iter().flatten().cloned());
        } else {
            names.insert(e.process.clone());
        }
    }
    let rank = |n: &str| match n {
        _ if n.starts_with("client-") => 2,
        "storage" => 1,
        _ => 0,
    };
    let mut v: Vec<String> = names.into_iter().collect();
    v.sort_by(|a, b| (rank(a), a).cmp(&(rank(b), b)));
    v
}

/// Put each partition on the first network row where it does not overlap the previous
/// bar; returns the row of each and the number of rows.
fn net_rows(c: &Canvas, cuts: &[Cut]) -> (Vec<usize>, usize) {
    let mut ends: Vec<f64> = Vec::new();
    let mut rows = Vec::new();
    for cut in cuts {
        let x0 = c.x(cut.t0);
        let r = match ends.iter().position(|&e| e + 4.0 < x0) {
            Some(r) => r,
            None => {
                ends.push(f64::MIN);
                ends.len() - 1
            }
        };
        ends[r] = c.x(cut.t1).max(x0 + 2.0);
        rows.push(r);
    }
    (rows, ends.len())
}

/// Draw `history` (a run that ended at `end_ns`) around the first violation of the check
/// named `focus` in `reports`: its events in red, those of other violated checks' first
/// violations in light red. Without a violation of `focus`, the whole run is drawn.
pub fn timeline_svg(
    history: &[Event],
    reports: &[CheckReport],
    focus: &str,
    end_ns: u64,
    heading: &str,
) -> String {
    let (first, other) = violations(reports, focus);
    let named: BTreeSet<u64> = first
        .iter()
        .flat_map(|v| v.events.iter().copied())
        .collect();
    let (lo, hi) = window(history, &named, end_ns);
    let mut c = Canvas {
        history,
        lo,
        hi,
        focus: named,
        other: other.clone(),
        rows: BTreeMap::new(),
        body: String::new(),
        marks: BTreeSet::new(),
    };
    c.other.retain(|i| !c.focus.contains(i));
    let mut head = format!(
        "true time {} to {}",
        human_time(lo as i64),
        human_time(hi as i64)
    );
    head.push_str("; hover a mark for the event and the node's own clocks");
    let mut text = vec![head];
    if let Some(v) = first {
        text.extend(wrap(&format!("{focus}: {}", v.message), FONT, RIGHT - 8.0));
    }
    let mut y = 26.0 + text.len() as f64 * 16.0;
    let top = y;
    let (spans, cuts) = fault_spans(history, end_ns);
    let cuts: Vec<Cut> = cuts.into_iter().filter(|k| c.visible(k.t0, k.t1)).collect();
    if !cuts.is_empty() {
        y = network_lane(&mut c, &cuts, y);
    }
    let leaders: Vec<_> = leader_bars(history, end_ns)
        .into_iter()
        .filter(|l| c.visible(l.2, l.3))
        .collect();
    if !leaders.is_empty() {
        leader_lane(&mut c, &leaders, y);
        y += LEADER_LANE;
    }
    for name in lanes(history) {
        let _ = write!(
            c.body,
            r##"<line x1="0" y1="{y}" x2="{WIDTH}" y2="{y}" stroke="#e4e4e4"/><text x="8" y="{:.1}" font-size="{FONT}">{}</text>"##,
            y + LANE / 2.0 + 4.0,
            esc(&name)
        );
        c.rows.insert(name, y + LANE / 2.0);
        y += LANE;
    }
    let axis = axis(&c, top, y);
    node_bands(&mut c, &spans, &cuts, end_ns);
    holds(&mut c, end_ns);
    points(&mut c);
    let mut legend = String::new();
    let bottom = draw_legend(&mut legend, &c.marks, focus, y + 30.0);
    let mut s = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {bottom}" width="{WIDTH}" height="{bottom}" font-family="sans-serif" font-size="{FONT}">"#
    );
    let _ = write!(
        s,
        r##"<rect width="100%" height="100%" fill="#fff"/><text x="8" y="18" font-size="14" font-weight="bold">{}</text>"##,
        esc(heading)
    );
    for (i, t) in text.iter().enumerate() {
        let _ = write!(
            s,
            r##"<text x="8" y="{}" fill="#444">{}</text>"##,
            36.0 + i as f64 * 16.0,
            esc(t)
        );
    }
    s.push_str(&axis);
    s.push_str(&c.body);
    s.push_str(&legend);
    s.push_str("</svg>");
    s
}

/// Grid lines and time labels on round values (about eight), below the lanes.
fn axis(c: &Canvas, top: f64, bottom: f64) -> String {
    let (lo, hi) = (c.lo, c.hi);
    let step = [1u64, 2, 5]
        .iter()
        .flat_map(|m| (0..12).map(move |p| m * 10u64.pow(p) * 1_000))
        .filter(|st| (hi - lo) / st <= 8)
        .min()
        .unwrap_or(1_000_000_000_000);
    let mut s =
        format!(r##"<line x1="0" y1="{bottom}" x2="{WIDTH}" y2="{bottom}" stroke="#e4e4e4"/>"##);
    let mut t = lo.div_ceil(step) * step;
    while t <= hi {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{top}" x2="{0:.1}" y2="{bottom}" stroke="#f0f0f0"/><text x="{0:.1}" y="{1}" text-anchor="middle" fill="#555" font-size="{SMALL}">{2}</text>"##,
            c.x(t),
            bottom + 15.0,
            human_time(t as i64)
        );
        t += step;
    }
    s
}

/// The network lane from `y`: one bar per partition, labelled when the label fits;
/// returns the lane's bottom.
fn network_lane(c: &mut Canvas, cuts: &[Cut], y: f64) -> f64 {
    let (rows, n) = net_rows(c, cuts);
    let height = n as f64 * NET_ROW + 6.0;
    let _ = write!(
        c.body,
        r##"<line x1="0" y1="{y}" x2="{WIDTH}" y2="{y}" stroke="#e4e4e4"/><text x="8" y="{:.1}" font-size="{FONT}">network</text>"##,
        y + height / 2.0 + 4.0
    );
    for (i, cut) in cuts.iter().enumerate() {
        let cy = y + 3.0 + rows[i] as f64 * NET_ROW + NET_ROW / 2.0;
        let tip = format!(
            "{}, from {} to {} true time ({})",
            sentence(cut.event),
            human_time(cut.t0 as i64),
            human_time(cut.t1 as i64),
            human_time((cut.t1 - cut.t0) as i64)
        );
        c.put(Mark::Partition, cut.t0, cut.t1, cy, &esc(&tip));
        let next = (i + 1..cuts.len())
            .find(|&j| rows[j] == rows[i])
            .map_or(RIGHT, |j| c.x(cuts[j].t0) - 4.0);
        let side = set(cut.event.nodes.as_deref().unwrap_or_default());
        let from = set(&strings(
            &cut.event.value.clone().unwrap_or(Value::Null)["from"],
        ));
        let (x0, x1) = (c.x(cut.t0), c.x(cut.t1));
        for text in [
            format!("{side} cut off from {from}"),
            format!("{side} cut off"),
        ] {
            if let Some((lx, inside)) = place_label(x0, x1, &text, SMALL, next) {
                c.label(lx, cy, &text, inside);
                break;
            }
        }
    }
    y + height
}

/// The leader lane at `y`: "raft-1 · term 3" bars.
fn leader_lane(c: &mut Canvas, bars: &[(String, u64, u64, u64, &Event)], y: f64) {
    let cy = y + LEADER_LANE / 2.0;
    let _ = write!(
        c.body,
        r##"<line x1="0" y1="{y}" x2="{WIDTH}" y2="{y}" stroke="#e4e4e4"/><text x="8" y="{:.1}" font-size="{FONT}">leader</text>"##,
        cy + 4.0
    );
    let nodes: BTreeSet<&str> = bars.iter().map(|b| b.0.as_str()).collect();
    for (i, (node, term, t0, t1, e)) in bars.iter().enumerate() {
        let colour = LEADERS[nodes.iter().position(|n| n == node).unwrap_or(0) % LEADERS.len()];
        let tip = format!(
            "{}, leads until {} true time{}",
            sentence(e),
            human_time(*t1 as i64),
            when(e)
        );
        let mark = Mark::Leader
            .draw(c.x(*t0), c.x(*t1), cy, &esc(&tip))
            .replacen(LEADERS[0], colour, 1);
        c.body.push_str(&mark);
        c.marks.insert(Mark::Leader);
        let next = bars[i + 1..]
            .iter()
            .map(|b| c.x(b.2) - 4.0)
            .find(|&x| x > c.x(*t0))
            .unwrap_or(RIGHT);
        let text = format!("{node} · term {term}");
        if let Some((lx, inside)) = place_label(c.x(*t0), c.x(*t1), &text, SMALL, next) {
            c.label(lx, cy, &text, inside);
        }
    }
}

/// Bands inside node lanes: pauses, crashes, disk stalls, the partition band of each
/// cut-off node, Curator connection states.
fn node_bands(c: &mut Canvas, spans: &[Span], cuts: &[Cut], end_ns: u64) {
    let mut bands: Vec<(String, Mark, u64, u64, &Event)> = spans
        .iter()
        .map(|s| (s.node.clone(), s.mark, s.t0, s.t1, s.event))
        .collect();
    bands.extend(connection_bands(c.history, end_ns));
    for (node, mark, t0, t1, e) in bands {
        let Some(&y) = c.rows.get(node.as_str()) else {
            continue;
        };
        if !c.visible(t0, t1) || c.x(t1) <= c.x(t0) {
            continue;
        }
        let what = match mark {
            Mark::Pause => "paused",
            Mark::Crash => "crashed",
            Mark::DiskStall => "disk stalled",
            Mark::Suspended => "connection SUSPENDED",
            _ => "connection LOST",
        };
        let tip = format!(
            "{node} {what} from {} to {} true time ({}): {}{}",
            human_time(t0 as i64),
            human_time(t1 as i64),
            human_time((t1 - t0) as i64),
            sentence(e),
            when(e)
        );
        c.put(mark, t0, t1, y, &esc(&tip));
        let (x0, x1) = (c.x(t0), c.x(t1));
        if matches!(mark, Mark::Crash | Mark::Pause) && x1 - x0 >= text_width(what, SMALL) + 6.0 {
            let fill = if mark == Mark::Crash { "#fff" } else { "#555" };
            let _ = write!(
                c.body,
                r##"<text x="{:.1}" y="{:.1}" font-size="{SMALL}" fill="{fill}">{what}</text>"##,
                x0 + 3.0,
                y - LANE / 2.0 + 11.0
            );
        }
    }
    for cut in cuts {
        for node in cut.event.nodes.iter().flatten() {
            if let Some(&y) = c.rows.get(node.as_str()) {
                let tip = format!("{node} cut off: {}", sentence(cut.event));
                let (x0, x1) = (c.x(cut.t0), c.x(cut.t1).max(c.x(cut.t0) + 2.0));
                let _ = write!(
                    c.body,
                    r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="3" fill="{ORANGE}"><title>{}</title></rect>"##,
                    y - LANE / 2.0 + 1.0,
                    x1 - x0,
                    esc(&tip)
                );
            }
        }
    }
}

/// Hold bars with their token labels.
fn holds(c: &mut Canvas, end_ns: u64) {
    let all = hold_intervals(c.history, end_ns);
    let holds: Vec<&Hold> = all
        .iter()
        .filter(|h| c.visible(h.start_ns, h.end_ns))
        .collect();
    for h in &holds {
        let Some(&y) = c.rows.get(h.process.as_str()) else {
            continue;
        };
        let names = |set: &BTreeSet<u64>| {
            set.contains(&h.start_event) || h.end_event.is_some_and(|e| set.contains(&e))
        };
        let mark = if names(&c.focus) {
            Mark::HoldFocus
        } else if names(&c.other) {
            Mark::HoldOther
        } else {
            Mark::Hold
        };
        let token = h.token.map(|t| format!("token {t}"));
        let start = &c.history[h.start_event as usize];
        let tip = format!(
            "{} held {}{} from {} to {} true time ({}); acquired{}",
            h.process,
            h.lock,
            token
                .as_ref()
                .map(|t| format!(" with {t}"))
                .unwrap_or_default(),
            human_time(h.start_ns as i64),
            human_time(h.end_ns as i64),
            human_time((h.end_ns - h.start_ns) as i64),
            when(start)
        );
        c.put(mark, h.start_ns, h.end_ns, y, &esc(&tip));
        let (x0, x1) = (c.x(h.start_ns), c.x(h.end_ns).max(c.x(h.start_ns) + 2.0));
        let next = holds
            .iter()
            .filter(|o| o.process == h.process && o.start_ns > h.start_ns)
            .map(|o| c.x(o.start_ns) - 4.0)
            .fold(RIGHT, f64::min);
        if let Some(t) = token {
            if let Some((lx, inside)) = place_label(x0, x1, &t, SMALL, next) {
                c.label(lx, y, &t, inside);
            }
        }
    }
}

/// Point marks: stale grants, clock faults, expirations, storage writes, and anything a
/// violation names.
fn points(c: &mut Canvas) {
    let stale: BTreeMap<u64, &Event> = stale_grants(c.history)
        .into_iter()
        .map(|(e, before)| (e.index, before))
        .collect();
    let (lo, hi) = (c.lo, c.hi);
    for e in c
        .history
        .iter()
        .filter(|e| e.time_ns >= lo && e.time_ns <= hi)
    {
        let t = e.time_ns;
        if e.process == "nemesis" && matches!(e.f.as_str(), "clock-jump" | "skew" | "drift") {
            for n in e.nodes.iter().flatten() {
                if let Some(&y) = c.rows.get(n.as_str()) {
                    c.put(Mark::ClockFault, t, t, y, &title(e));
                }
            }
            continue;
        }
        let Some(&y) = c.rows.get(e.process.as_str()) else {
            continue;
        };
        let focus = c.focus.contains(&e.index);
        let mark = if e.kind == EventType::Event && e.f == "expire" {
            Some(if focus {
                Mark::ExpiryFocus
            } else {
                Mark::Expiry
            })
        } else if e.process == "storage" && e.f == "write" {
            Some(match (e.accepted, focus) {
                (Some(false), _) => Mark::WriteRejected,
                (_, true) => Mark::WriteFocus,
                _ => Mark::Write,
            })
        } else if focus && !(e.f == "acquire" || e.f == "release") {
            Some(Mark::Named)
        } else {
            None
        };
        if let Some(m) = mark {
            c.put(m, t, t, y, &title(e));
        }
        if c.other.contains(&e.index) {
            c.put(Mark::NamedOther, t, t, y, &title(e));
        }
        if let Some(before) = stale.get(&e.index) {
            stale_mark(c, e, before, y);
        }
    }
}

/// A stale grant's diamond and label.
fn stale_mark(c: &mut Canvas, e: &Event, before: &Event, y: f64) {
    let (tok, prev) = (e.token.unwrap_or(0), before.token.unwrap_or(0));
    let tip = format!(
        "stale grant: {} was granted {} token {tok}{}, after {} had been granted token {prev} at {} true time: the grant came from a stale view of the lock (e.g. a node answering from its stale local state)",
        e.process,
        e.lock.as_deref().unwrap_or("?"),
        when(e),
        before.process,
        human_time(before.time_ns as i64)
    );
    c.put(Mark::StaleGrant, e.time_ns, e.time_ns, y - 8.0, &esc(&tip));
    let text = format!("stale grant (token {tok} after {prev})");
    let x = c.x(e.time_ns);
    let lx = if x + 8.0 + text_width(&text, SMALL) <= RIGHT {
        x + 8.0
    } else {
        x - 8.0 - text_width(&text, SMALL)
    };
    let _ = write!(
        c.body,
        r##"<text x="{lx:.1}" y="{:.1}" font-size="{SMALL}" fill="#000" stroke="#fff" stroke-width="3" paint-order="stroke">{}</text>"##,
        y - LANE / 2.0 + 11.0,
        esc(&text)
    );
}

/// The legend from `y`: a sample of each mark in `marks` with its label, wrapping onto
/// as many lines as needed; returns the picture's bottom.
fn draw_legend(s: &mut String, marks: &BTreeSet<Mark>, focus: &str, y: f64) -> f64 {
    let mut x = 8.0;
    let mut line_y = y + 12.0;
    for &m in marks {
        let label = m.label(focus);
        let w = 22.0 + text_width(&label, SMALL) + 18.0;
        if x + w > WIDTH - 8.0 && x > 8.0 {
            x = 8.0;
            line_y += 22.0;
        }
        let sample = if m.is_bar() {
            // Full-lane bands are drawn shorter in the legend: a 16 px box.
            let cy = if matches!(m, Mark::Pause | Mark::Crash) {
                0.0
            } else {
                line_y
            };
            let mut d = m.draw(x, x + 16.0, cy + m.legend_dy(), &esc(&label));
            if cy == 0.0 {
                let fill = if m == Mark::Crash { CRASH } else { PAUSE };
                d = format!(
                    r##"<rect x="{x:.1}" y="{:.1}" width="16" height="16" fill="{fill}"/>"##,
                    line_y - 8.0
                );
            }
            d
        } else {
            m.draw(x + 8.0, x + 8.0, line_y + m.legend_dy(), &esc(&label))
        };
        s.push_str(&sample);
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" font-size="{SMALL}" fill="#333">{}</text>"##,
            x + 22.0,
            line_y + 4.0,
            esc(&label)
        );
        x += w;
    }
    line_y + 18.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Violation;
    use serde_json::json;

    fn ev(i: u64, p: &str, kind: EventType, f: &str, t_ms: u64) -> Event {
        let mut e = Event::new(p, kind, f).at(t_ms * 1_000_000).lock("L");
        e.index = i;
        e
    }

    fn nem(i: u64, f: &str, t_ms: u64, nodes: &[&str], value: Value) -> Event {
        let mut e = Event::new("nemesis", EventType::Event, f)
            .at(t_ms * 1_000_000)
            .nodes(nodes.iter().map(|n| n.to_string()).collect())
            .value(value);
        e.index = i;
        e
    }

    fn mutex(events: Vec<u64>) -> Vec<CheckReport> {
        vec![CheckReport {
            name: "mutex",
            verdict: Verdict::Violated,
            violations: vec![Violation::new("overlap", events)],
        }]
    }

    fn redis_history() -> Vec<Event> {
        vec![
            ev(0, "client-0", EventType::Invoke, "acquire", 90),
            ev(1, "client-0", EventType::Ok, "acquire", 100).token(Some(17)),
            nem(
                2,
                "pause",
                150,
                &["client-0"],
                json!({"duration_ms": 1500.0, "at": "anywhere"}),
            ),
            ev(3, "redis-0", EventType::Event, "expire", 1100),
            ev(4, "client-1", EventType::Ok, "acquire", 1200).token(Some(18)),
            nem(5, "resume", 1650, &["client-0"], Value::Null),
            ev(6, "client-0", EventType::Invoke, "release", 1700),
            nem(7, "crash", 1800, &["redis-0"], json!({"down_ms": 300.0})),
            nem(8, "restart", 2100, &["redis-0"], Value::Null),
        ]
    }

    #[test]
    fn draws_lanes_holds_faults_and_the_violation() {
        let h = redis_history();
        let svg = timeline_svg(
            &h,
            &mutex(vec![1, 4, 6]),
            "mutex",
            3_000_000_000,
            "row 1 <seed 0>",
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        for lane in ["redis-0", "client-0", "client-1"] {
            assert!(svg.contains(&format!(">{lane}</text>")), "{lane}");
        }
        assert!(svg.contains(RED), "the violating holds are red");
        assert!(svg.contains("client-0 paused from 150 ms to 1.65 s true time (1.5 s)"));
        assert!(svg.contains("row 1 &lt;seed 0&gt;"), "text is escaped");
        assert!(svg.contains("mutex: overlap"), "the violation's message");
        assert!(!svg.contains("<script") && !svg.contains("href") && !svg.contains(" id="));
        assert!(!svg.contains("network"), "no partition, no network lane");
        assert!(!svg.contains(">leader</text>"), "no leader, no leader lane");
    }

    #[test]
    fn legend_lists_the_marks_present_and_only_those() {
        let h = redis_history();
        let svg = timeline_svg(&h, &mutex(vec![1, 4, 6]), "mutex", 3_000_000_000, "t");
        for m in [Mark::HoldFocus, Mark::Pause, Mark::Crash, Mark::Expiry] {
            assert!(
                svg.contains(&format!(">{}</text>", esc(&m.label("mutex")))),
                "{m:?}"
            );
        }
        for m in [
            Mark::Partition,
            Mark::Leader,
            Mark::Suspended,
            Mark::WriteRejected,
        ] {
            assert!(!svg.contains(&esc(&m.label("mutex"))), "{m:?}");
        }
    }

    #[test]
    fn crash_and_pause_look_different() {
        let h = redis_history();
        let svg = timeline_svg(&h, &mutex(vec![1, 4, 6]), "mutex", 3_000_000_000, "t");
        let fill_of = |tip: &str| {
            let at = svg.find(tip).expect(tip);
            let rect = svg[..at].rfind("<rect").unwrap();
            svg[rect..at].split("fill=\"").nth(1).unwrap()[..4].to_string()
        };
        assert_eq!(fill_of("redis-0 crashed from"), CRASH);
        assert_eq!(&fill_of("client-0 paused from")[..4], &PAUSE[..4]);
        assert_ne!(CRASH, PAUSE);
    }

    #[test]
    fn partitions_get_a_network_lane_and_human_tooltips() {
        let mut h = redis_history();
        h.push(nem(
            9,
            "partition",
            1300,
            &["raft-0"],
            json!({"id": 4, "oneway": false, "from": ["raft-1", "raft-2", "client-0"]}),
        ));
        h.push(nem(10, "heal", 1900, &[], json!({"id": 4})));
        let svg = timeline_svg(&h, &mutex(vec![1, 4, 6]), "mutex", 3_000_000_000, "t");
        assert!(svg.contains(">network</text>"));
        assert!(svg.contains(
            "partition: {raft-0} cut off from {raft-1, raft-2, client-0} (both ways), from 1.3 s to 1.9 s"
        ));
        // The full label does not fit in or right of the bar: the short one does.
        assert!(svg.contains(">{raft-0} cut off</text>"), "{svg}");
        // The network lane is above the first node lane and the band inside raft-0's lane.
        let net = svg.find(">network</text>").unwrap();
        assert!(net < svg.find(">raft-0</text>").unwrap());
        assert!(!svg.contains(r#"value="#), "no raw JSON");
        let mut jump = nem(
            11,
            "clock-jump",
            1000,
            &["redis-0"],
            json!({"delta_ms": 1200.0, "wall_error_ms": 1200.0}),
        );
        jump.local_ns = Some(1_000_000_000);
        jump.wall_ms = Some(crate::sim::EPOCH_NS / 1_000_000 + 2_200);
        assert_eq!(
            title(&jump),
            "clock jump +1.2 s on redis-0 (wall clock now +1.2 s from true time) at 1 s true time; redis-0 local mono 1 s, local wall 00:00:02.200"
        );
    }

    #[test]
    fn a_long_token_label_is_never_clipped() {
        let h = vec![
            ev(0, "client-0", EventType::Ok, "acquire", 1000).token(Some(12345)),
            ev(1, "client-0", EventType::Invoke, "release", 1010),
            ev(2, "client-0", EventType::Ok, "acquire", 2000).token(Some(12346)),
            ev(3, "client-0", EventType::Invoke, "release", 2900),
        ];
        let svg = timeline_svg(&h, &[], "mutex", 3_000_000_000, "t");
        // Short hold: dark label to the right of its bar; long hold: white label inside.
        assert!(svg.contains(r##"fill="#222">token 12345</text>"##), "{svg}");
        assert!(svg.contains(r##"fill="#fff">token 12346</text>"##), "{svg}");
        let x = |tok: &str| {
            let at = svg.find(&format!(">{tok}</text>")).unwrap();
            let t = svg[..at].rfind("<text x=\"").unwrap() + 9;
            svg[t..].split('"').next().unwrap().parse::<f64>().unwrap()
        };
        let left = |t_ms: u64| LEFT + t_ms as f64 / 3000.0 * (RIGHT - LEFT);
        assert!(
            x("token 12345") > left(1010),
            "outside, right of the short bar"
        );
        assert!(x("token 12346") >= left(2000));
    }

    #[test]
    fn raft_histories_get_a_leader_lane_and_stale_grants() {
        let leader = |i, p: &str, t, term: u64| {
            let mut e = ev(i, p, EventType::Event, "leader", t).value(json!({"term": term}));
            e.lock = None;
            e
        };
        let h = vec![
            leader(0, "raft-0", 100, 1),
            ev(1, "client-0", EventType::Ok, "acquire", 500).token(Some(23)),
            leader(2, "raft-1", 900, 2),
            ev(3, "client-1", EventType::Ok, "acquire", 1000).token(Some(21)),
            ev(4, "client-1", EventType::Invoke, "release", 1100),
            ev(5, "client-0", EventType::Invoke, "release", 1500),
        ];
        let svg = timeline_svg(&h, &mutex(vec![1, 3, 4, 5]), "mutex", 2_000_000_000, "t");
        assert!(svg.contains(">leader</text>"));
        assert!(svg.contains(">raft-0 · term 1</text>") && svg.contains(">raft-1 · term 2</text>"));
        assert!(svg.contains("raft-0 becomes leader (term 1), leads until 900 ms true time"));
        assert!(svg.contains(">stale grant (token 21 after 23)</text>"));
        assert!(svg.contains(&esc(&Mark::StaleGrant.label("mutex"))));
    }

    #[test]
    fn zk_clients_get_connection_bands() {
        let conn = |i, t, state: &str| {
            let mut e = ev(i, "client-0", EventType::Event, "connection", t).value(state);
            e.lock = None;
            e
        };
        let h = vec![
            conn(0, 100, "CONNECTED"),
            ev(1, "client-0", EventType::Ok, "acquire", 200),
            conn(2, 700, "SUSPENDED"),
            conn(3, 1200, "LOST"),
            ev(4, "client-1", EventType::Ok, "acquire", 1500),
            ev(5, "client-0", EventType::Invoke, "release", 1800),
        ];
        let svg = timeline_svg(&h, &mutex(vec![1, 4, 5]), "mutex", 2_000_000_000, "t");
        assert!(svg.contains("client-0 connection SUSPENDED from 700 ms to 1.2 s true time"));
        assert!(
            svg.contains(&format!("fill=\"{AMBER}\"")) && svg.contains(&format!("fill=\"{LOST}\""))
        );
        assert!(
            svg.contains(">connection SUSPENDED</text>") && svg.contains(">connection LOST</text>")
        );
    }

    #[test]
    fn times_read_like_people_write_them() {
        assert_eq!(human_time(2_445_000_000), "2.445 s");
        assert_eq!(human_time(3_000_000_000), "3 s");
        assert_eq!(human_time(850_000_000), "850 ms");
        assert_eq!(human_time(12_500_000), "12.5 ms");
        assert_eq!(human_time(40_000), "40 µs");
        assert_eq!(human_time(-80_000_000), "-80 ms");
        assert_eq!(human_time(0), "0 s");
        assert_eq!(human_time(7), "7 ns");
        assert_eq!(signed_time(1_200_000_000), "+1.2 s");
    }
}
