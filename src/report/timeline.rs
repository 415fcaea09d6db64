//! A counterexample as a picture: one run's violated checks (each one's first violation)
//! on a true-time axis, one lane per node, zoomed to the events those violations name.
//! The picture carries no sentences of its own: [`draw`] returns the SVG (it scales to
//! its container: a `viewBox`, no width) with the words a page sets beside it in HTML
//! (the window, each violation's message and the events it names, the legend);
//! [`timeline_svg`] puts them together in one standalone SVG file.
//!
//! Lanes, top to bottom: **network** (only when a partition overlaps the window), **leader**
//! (only when a server recorded a `leader` event), then the nodes: servers, the storage,
//! clients (each by name). Every mark stays inside its own lane. Marks:
//!
//! - **hold**: a bar `[acquire ok, release invoke)` on a client lane (see
//!   [`hold_intervals`], over the history the checks read: without re-entrant events),
//!   green; red when a focused check's violation names it, light red when only another
//!   violated check's first violation names it. Labelled with its token inside the bar
//!   when the text fits, else to its right when that does not run into the next hold on
//!   its row, else only in the tooltip. A very short hold is a thin tick.
//! - **re-entrant hold**: the inner hold of a holder that acquired the lock again (from
//!   its re-entrant acquire `ok` to its re-entrant release), pale green. Holds of one lane
//!   that overlap (an inner hold inside its outer one, two locks) are stacked in
//!   sub-rows of the lane, so every hold a check names is visible.
//! - **stale grant**: an amber diamond on an acquire `ok` whose token is lower than a token
//!   already granted on the same lock: the grant came from a stale view of the lock (a
//!   node's stale local state, a reply that arrived after the lease was gone). The history
//!   does not record which server answered, so this is inferred from the tokens alone.
//!   One label per lane names the first ("stale grant (token 1 after 23) +4 more"); every
//!   diamond's tooltip names its own.
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
//! - any other event a focused violation names: a hollow red circle; one that only
//!   another violated check's first violation names: a hollow light-red circle.
//!
//! Marks a violation names are drawn last (light red, then red), over everything else.
//! The legend lists each kind of mark present in the picture. Every mark's tooltip
//! (`<title>`) is a sentence with the true time and the recording node's own monotonic
//! and wall clock when it has them. Self-contained SVG: no scripts, no external
//! references, no ids, so several can be inlined in one HTML page.

use super::story::{describe, wall_clock};
use crate::check::{hold_intervals, outer_only, CheckReport, Hold, Violation};
use crate::history::{Event, EventType};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The picture's width in its own units; a page scales it to its width.
const WIDTH: f64 = 800.0;
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
const FONT: f64 = 13.0;
const SMALL: f64 = 12.0;

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
const PALE_GREEN: &str = "#9fd9b9";
const LEADERS: [&str; 5] = ["#5b7fc7", "#8c6bb1", "#3a9a9a", "#b7803a", "#6f8f2f"];

mod lanes;
mod marks;
mod spans;
#[cfg(test)]
mod tests;
mod words;

use lanes::*;
use marks::*;
use spans::*;
use words::*;
pub(crate) use words::{human_time, sentence};

mod caption;
pub(crate) use caption::Caption;

/// The layers a picture is painted in, bottom to top: marks a violation names are
/// painted over everything else (other checks' first, then the focused checks').
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    Base,
    Other,
    Focus,
}

/// Everything a picture is drawn from and into.
struct Canvas<'a> {
    history: &'a [Event],
    lo: u64,
    hi: u64,
    /// Events the focused checks' first violations name.
    focus: BTreeSet<u64>,
    /// Events other violated checks' first violations name.
    other: BTreeSet<u64>,
    /// Centre line of each node lane.
    rows: BTreeMap<String, f64>,
    /// What is painted, per layer (see [`Layer`]).
    body: String,
    other_layer: String,
    focus_layer: String,
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

    /// Where a mark of `layer` is painted.
    fn layer(&mut self, layer: Layer) -> &mut String {
        match layer {
            Layer::Base => &mut self.body,
            Layer::Other => &mut self.other_layer,
            Layer::Focus => &mut self.focus_layer,
        }
    }

    /// Draw `mark` over true times `[t0, t1]` at height `y`.
    fn put(&mut self, mark: Mark, t0: u64, t1: u64, y: f64, tip: &str) {
        let (x0, x1) = (self.x(t0), self.x(t1));
        let drawn = mark.draw(x0, x1, y, tip);
        self.layer(mark.layer()).push_str(&drawn);
        self.marks.insert(mark);
    }

    /// A label at `x` on the centre line `y`: white inside a bar, dark outside; in the
    /// layer of the mark it labels.
    fn label(&mut self, x: f64, y: f64, text: &str, inside: bool, layer: Layer) {
        let _ = write!(
            self.layer(layer),
            r##"<text x="{x:.1}" y="{:.1}" font-size="{SMALL}" fill="{}">{}</text>"##,
            y + 4.0,
            if inside { "#fff" } else { "#222" },
            esc(text)
        );
    }
}

/// A drawn timeline: the picture and the words a page sets beside it.
#[derive(Debug, Clone)]
pub(crate) struct Drawing {
    /// The SVG: a `viewBox` and no width or height, so it scales to its container.
    pub svg: String,
    /// The picture's true-time window, "true time 630 ms to 5.188 s".
    pub window: String,
    /// Every violated check of the run (focused ones first), with the events its first
    /// violation names.
    pub captions: Vec<Caption>,
    /// Each kind of mark in the picture: a sample (a small SVG) and what it means.
    pub legend: Vec<(String, String)>,
    /// The picture's height in its own units (its width is [`WIDTH`]).
    height: f64,
    /// The kinds of mark in the picture.
    marks: BTreeSet<Mark>,
}

/// The name of the first violated check in `reports` ("" if none): the focus of a
/// single timeline. Quality checks (`fair`) are not violations and are not drawn.
pub(crate) fn first_violated(reports: &[CheckReport]) -> &'static str {
    reports
        .iter()
        .find(|r| r.is_violation())
        .map_or("", |r| r.name)
}

/// The focused checks' first violations (in report order), and the events other
/// violated checks' first violations name.
fn violations<'r>(
    reports: &'r [CheckReport],
    focus: &[&str],
) -> (Vec<(&'static str, &'r Violation)>, BTreeSet<u64>) {
    let violated = || reports.iter().filter(|r| r.is_violation());
    let first = violated()
        .filter(|r| focus.contains(&r.name))
        .filter_map(|r| Some((r.name, r.violations.first()?)))
        .collect();
    let other = violated()
        .filter(|r| !focus.contains(&r.name))
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

/// Draw `history` (a run that ended at `end_ns`) around the first violations of the
/// checks named in `focus` (their events in red), with the events of other violated
/// checks' first violations in light red. Without a violation of a focused check, the
/// whole run is drawn.
pub(crate) fn draw(
    history: &[Event],
    reports: &[CheckReport],
    focus: &[&str],
    end_ns: u64,
) -> Drawing {
    let (first, other) = violations(reports, focus);
    let named: BTreeSet<u64> = first
        .iter()
        .flat_map(|(_, v)| v.events.iter().copied())
        .collect();
    let (lo, hi) = window(history, &named, end_ns);
    let mut c = Canvas {
        history,
        lo,
        hi,
        focus: named,
        other,
        rows: BTreeMap::new(),
        body: String::new(),
        other_layer: String::new(),
        focus_layer: String::new(),
        marks: BTreeSet::new(),
    };
    c.other.retain(|i| !c.focus.contains(i));
    let bottom = paint(&mut c, end_ns);
    let svg = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {bottom}" font-family="sans-serif" font-size="{FONT}"><rect width="100%" height="100%" fill="#fff"/>{}{}{}</svg>"##,
        c.body, c.other_layer, c.focus_layer
    );
    Drawing {
        svg,
        window: format!(
            "true time {} to {}",
            human_time(lo as i64),
            human_time(hi as i64)
        ),
        captions: caption::captions(history, reports, focus),
        legend: c
            .marks
            .iter()
            .map(|m| (legend_sample(*m), m.label()))
            .collect(),
        height: bottom,
        marks: c.marks,
    }
}

/// Paint the lanes, the axis and every mark into `c`; returns the picture's bottom.
fn paint(c: &mut Canvas, end_ns: u64) -> f64 {
    let top = 6.0;
    let mut y = top;
    let (spans, cuts) = fault_spans(c.history, end_ns);
    let cuts: Vec<Cut> = cuts.into_iter().filter(|k| c.visible(k.t0, k.t1)).collect();
    if !cuts.is_empty() {
        y = network_lane(c, &cuts, y);
    }
    let leaders: Vec<_> = leader_bars(c.history, end_ns)
        .into_iter()
        .filter(|l| c.visible(l.2, l.3))
        .collect();
    if !leaders.is_empty() {
        leader_lane(c, &leaders, y);
        y += LEADER_LANE;
    }
    for name in lanes(c.history) {
        let _ = write!(
            c.body,
            r##"<line x1="0" y1="{y}" x2="{WIDTH}" y2="{y}" stroke="#e4e4e4"/><text x="8" y="{:.1}" font-size="{FONT}">{}</text>"##,
            y + LANE / 2.0 + 4.0,
            esc(&name)
        );
        c.rows.insert(name, y + LANE / 2.0);
        y += LANE;
    }
    // The grid goes under everything.
    let grid = axis(c, top, y);
    c.body.insert_str(0, &grid);
    node_bands(c, &spans, &cuts, end_ns);
    holds(c, end_ns);
    points(c);
    y + 22.0
}

/// One standalone SVG file of a run (`locksim replay --svg`): `heading`, the window,
/// each violation's message, the picture and its legend, with the first violation of
/// the check named `focus` in red.
pub(crate) fn timeline_svg(
    history: &[Event],
    reports: &[CheckReport],
    focus: &str,
    end_ns: u64,
    heading: &str,
) -> String {
    let d = draw(history, reports, &[focus], end_ns);
    let mut text = vec![format!(
        "{}; hover a mark for the event and the node's own clocks",
        d.window
    )];
    for cap in &d.captions {
        text.extend(wrap(
            &format!("{}: {}", cap.check, cap.message),
            FONT,
            WIDTH - 16.0,
        ));
    }
    let top = 26.0 + text.len() as f64 * 16.0;
    let inner = d.svg.split_once('>').map_or("", |(_, rest)| rest);
    let inner = inner.strip_suffix("</svg>").unwrap_or(inner);
    let mut legend = String::new();
    let bottom = draw_legend(&mut legend, &d.marks, top + d.height + 8.0);
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {bottom}" font-family="sans-serif" font-size="{FONT}"><rect width="100%" height="100%" fill="#fff"/><text x="8" y="18" font-size="14" font-weight="bold">{}</text>"##,
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
    let _ = write!(s, r#"<g transform="translate(0 {top})">{inner}</g>"#);
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
