//! A self-contained SVG picture of a history: one lane per process, operations as bars
//! in time, the linearized prefix numbered in green, the operation that cannot be placed
//! in red and the operations concurrent with it in orange. Indeterminate operations fade
//! out to the right edge. Large histories are cut to a window around the failure.

use super::explain::{Explanation, OpInfo};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// At most this many operations are drawn.
const MAX_OPS: usize = 80;

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => o.push(c),
        }
    }
    o
}

/// Which operations to draw: everything when small, else a window around the failure
/// (or the beginning of the history when there is no failure).
fn select(ops: &[OpInfo], e: Option<&Explanation>) -> Vec<usize> {
    if ops.len() <= MAX_OPS {
        return (0..ops.len()).collect();
    }
    let Some(e) = e else {
        let mut v: Vec<usize> = (0..ops.len()).collect();
        v.sort_by_key(|&i| (ops[i].call, i));
        v.truncate(MAX_OPS);
        return v;
    };
    let f = &ops[e.failing];
    let centre = f.call;
    // The ops nearest the failing op's call, by distance of their intervals.
    let dist = |i: usize| {
        let o = &ops[i];
        if o.ret >= centre && o.call <= centre {
            0
        } else if o.call > centre {
            o.call - centre
        } else {
            centre - o.ret
        }
    };
    let mut v: Vec<usize> = (0..ops.len()).collect();
    v.select_nth_unstable_by_key(MAX_OPS - 1, |&i| (dist(i), i));
    v.truncate(MAX_OPS);
    for i in std::iter::once(e.failing).chain(cited(e)) {
        if !v.contains(&i) {
            v.push(i);
        }
    }
    v
}

/// The operations a refutation names besides the failing one: the overwriting one
/// first, then the sources.
fn cited(e: &Explanation) -> Vec<usize> {
    e.refutation
        .iter()
        .flat_map(|r| [r.blocker, r.last_source, r.next_source])
        .flatten()
        .collect()
}

/// Render `ops` (and the explanation of a violation, if any) as a standalone SVG.
pub fn render_svg(ops: &[OpInfo], explanation: Option<&Explanation>) -> String {
    let shown = select(ops, explanation);
    let pic = Picture {
        ops,
        roles: Roles::new(explanation),
        layout: Layout::new(ops, &shown),
    };
    let mut s = String::new();
    pic.header(&mut s);
    pic.title(&mut s, explanation);
    pic.key(&mut s, shown.len());
    pic.lanes(&mut s);
    if shown.contains(&pic.roles.failing) {
        pic.failure_line(&mut s);
    }
    for &i in &pic.layout.by_call {
        pic.operation(&mut s, i);
    }
    pic.time_axis(&mut s);
    pic.footer(&mut s);
    s
}

/// Left margin (lane names), top margin (title and key), lane height and the width of
/// one endpoint rank, in px.
const LEFT: f64 = 110.0;
const TOP: f64 = 84.0;
const LANE_H: f64 = 34.0;
const STEP: f64 = 48.0;

/// What the explanation says each operation is.
struct Roles {
    /// 1-based position in the linearized prefix.
    prefix_pos: HashMap<usize, usize>,
    concurrent: HashMap<usize, ()>,
    /// The operation that cannot be placed (`usize::MAX`: none).
    failing: usize,
    /// The operation a refutation says overwrites every possible source.
    overwriting: Option<usize>,
    /// The other operations a refutation names.
    sources: Vec<usize>,
}

impl Roles {
    fn new(explanation: Option<&Explanation>) -> Roles {
        let mut prefix_pos: HashMap<usize, usize> = HashMap::new();
        let mut concurrent: HashMap<usize, ()> = HashMap::new();
        let mut failing = usize::MAX;
        if let Some(e) = explanation {
            for (k, &i) in e.prefix.iter().enumerate() {
                prefix_pos.insert(i, k + 1);
            }
            for &i in &e.concurrent {
                concurrent.insert(i, ());
            }
            failing = e.failing;
        }
        let overwriting = explanation
            .and_then(|e| e.refutation.as_ref())
            .and_then(|r| r.blocker);
        let sources: Vec<usize> = explanation
            .map(|e| {
                cited(e)
                    .into_iter()
                    .filter(|&i| Some(i) != overwriting)
                    .collect()
            })
            .unwrap_or_default();
        Roles {
            prefix_pos,
            concurrent,
            failing,
            overwriting,
            sources,
        }
    }

    /// Fill and stroke of operation `i`.
    fn colours(&self, i: usize, o: &OpInfo) -> (&'static str, &'static str) {
        if i == self.failing {
            ("#ea4335", "#a50e0e")
        } else if Some(i) == self.overwriting {
            ("#a142f4", "#681da8")
        } else if self.prefix_pos.contains_key(&i) || self.sources.contains(&i) {
            ("#34a853", "#137333")
        } else if self.concurrent.contains_key(&i) {
            ("#fbbc04", "#b06000")
        } else if o.indeterminate {
            ("url(#fade)", "#9aa0a6")
        } else {
            ("#dadce0", "#80868b")
        }
    }

    /// The hover text of operation `i`: its label and its role.
    fn tip(&self, i: usize, o: &OpInfo) -> String {
        let mut tip = o.label();
        if let Some(k) = self.prefix_pos.get(&i) {
            let _ = write!(tip, " — linearized #{k}");
        }
        if i == self.failing {
            tip.push_str(" — cannot be placed");
        } else if Some(i) == self.overwriting {
            tip.push_str(" — overwrites every possible source");
        } else if self.sources.contains(&i) {
            tip.push_str(" — leaves the state needed, but cannot be its source");
        }
        tip
    }

    /// The text drawn on operation `i`: its description, numbered when linearized.
    fn text(&self, i: usize, o: &OpInfo) -> String {
        match self.prefix_pos.get(&i) {
            Some(k) => format!("#{k} {}", o.description),
            None => o.description.clone(),
        }
    }
}

/// Where everything goes.
struct Layout<'a> {
    /// Process names, in order of first appearance.
    lanes: Vec<&'a str>,
    lane_of: HashMap<&'a str, usize>,
    /// The operations drawn, in call order.
    by_call: Vec<usize>,
    /// Rank of each distinct finite endpoint: x is the order of events, not their time.
    points: BTreeMap<u64, usize>,
    /// True time of an endpoint, when the history has it.
    ns_at: BTreeMap<u64, u64>,
    width: f64,
    right_edge: f64,
    height: f64,
}

impl<'a> Layout<'a> {
    fn new(ops: &'a [OpInfo], shown: &[usize]) -> Layout<'a> {
        let mut lanes: Vec<&str> = Vec::new();
        let mut lane_of: HashMap<&str, usize> = HashMap::new();
        let mut by_call = shown.to_vec();
        by_call.sort_by_key(|&i| (ops[i].call, i));
        for &i in &by_call {
            let p = ops[i].process.as_str();
            if !lane_of.contains_key(p) {
                lane_of.insert(p, lanes.len());
                lanes.push(p);
            }
        }
        let mut points: BTreeMap<u64, usize> = BTreeMap::new();
        let mut ns_at: BTreeMap<u64, u64> = BTreeMap::new();
        for &i in shown {
            points.insert(ops[i].call, 0);
            if let Some(ns) = ops[i].call_ns {
                ns_at.insert(ops[i].call, ns);
            }
            if !ops[i].indeterminate {
                points.insert(ops[i].ret, 0);
                if let Some(ns) = ops[i].ret_ns {
                    ns_at.insert(ops[i].ret, ns);
                }
            }
        }
        for (k, v) in points.values_mut().enumerate() {
            *v = k;
        }
        let width = LEFT + STEP * (points.len() as f64 + 2.0) + 20.0;
        let width = width.max(900.0);
        let height = TOP + LANE_H * lanes.len() as f64 + 56.0;
        Layout {
            lanes,
            lane_of,
            by_call,
            points,
            ns_at,
            width,
            right_edge: width - 20.0,
            height,
        }
    }

    /// The x of rank `rank`.
    fn x_of_rank(rank: usize) -> f64 {
        LEFT + STEP * (rank as f64 + 0.5)
    }

    /// The x of endpoint `t`.
    fn x_of(&self, t: u64) -> f64 {
        Self::x_of_rank(self.points[&t])
    }
}

/// What to draw, and where; its methods write the parts of the SVG in order.
struct Picture<'a> {
    ops: &'a [OpInfo],
    roles: Roles,
    layout: Layout<'a>,
}

impl Picture<'_> {
    fn header(&self, s: &mut String) {
        let (width, height) = (self.layout.width, self.layout.height);
        let _ = write!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="monospace" font-size="11">
<defs><linearGradient id="fade" x1="0" x2="1" y1="0" y2="0"><stop offset="0" stop-color="#9aa0a6" stop-opacity="0.9"/><stop offset="1" stop-color="#9aa0a6" stop-opacity="0.05"/></linearGradient></defs>
<rect width="100%" height="100%" fill="white"/>
"##
        );
    }

    fn title(&self, s: &mut String, explanation: Option<&Explanation>) {
        let (title, subtitle) = match explanation {
            Some(e) => (failure_title(self.ops, e), failure_subtitle(e)),
            None => (format!("{} operations", self.ops.len()), String::new()),
        };
        let _ = writeln!(
            s,
            r#"<text x="10" y="20" font-size="13" font-weight="bold">{}</text><text x="10" y="38" font-size="12">{}</text>"#,
            esc(&title),
            esc(&subtitle)
        );
    }

    /// The colour key, and a note when the history is cut to a window.
    fn key(&self, s: &mut String, shown: usize) {
        let first_key = if self.roles.overwriting.is_some() || !self.roles.sources.is_empty() {
            r##"<g font-size="11"><rect x="10" y="48" width="14" height="10" fill="#34a853"/><text x="28" y="57">source of that state</text><rect x="690" y="48" width="14" height="10" fill="#a142f4"/><text x="708" y="57">overwrites it</text>"##
        } else {
            r##"<g font-size="11"><rect x="10" y="48" width="14" height="10" fill="#34a853"/><text x="28" y="57">linearized prefix (#order)</text>"##
        };
        s.push_str(first_key);
        let _ = writeln!(
            s,
            concat!(
                r##"<rect x="220" y="48" width="14" height="10" fill="#ea4335"/><text x="238" y="57">cannot be placed</text>"##,
                r##"<rect x="370" y="48" width="14" height="10" fill="#fbbc04"/><text x="388" y="57">concurrent with it</text>"##,
                r##"<rect x="530" y="48" width="14" height="10" fill="url(#fade)"/><text x="548" y="57">indeterminate</text></g>"##
            )
        );
        if shown < self.ops.len() {
            let _ = writeln!(
                s,
                r##"<text x="10" y="76" fill="#666">showing {} of {} operations around the failure</text>"##,
                shown,
                self.ops.len()
            );
        }
    }

    /// One line and name per process.
    fn lanes(&self, s: &mut String) {
        let (left, right_edge) = (LEFT, self.layout.right_edge);
        for (k, p) in self.layout.lanes.iter().enumerate() {
            let y = TOP + LANE_H * k as f64;
            let _ = writeln!(
                s,
                r##"<line x1="{left}" x2="{right_edge}" y1="{:.1}" y2="{:.1}" stroke="#eee"/><text x="10" y="{:.1}">{}</text>"##,
                y + LANE_H / 2.0,
                y + LANE_H / 2.0,
                y + LANE_H / 2.0 + 4.0,
                esc(p)
            );
        }
    }

    /// A dashed red line at the failing operation's call.
    fn failure_line(&self, s: &mut String) {
        let x = self.layout.x_of(self.ops[self.roles.failing].call);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#ea4335" stroke-dasharray="4 3"/>"##,
            TOP - 6.0,
            self.layout.height - 30.0
        );
    }

    /// Operation `i`: a bar from call to return (to the right edge when indeterminate),
    /// or a diamond for a point event.
    fn operation(&self, s: &mut String, i: usize) {
        let o = &self.ops[i];
        let lane = self.layout.lane_of[o.process.as_str()];
        let y = TOP + LANE_H * lane as f64 + 6.0;
        if !o.indeterminate && o.call == o.ret {
            self.point(s, i, y);
        } else {
            self.bar(s, i, y);
        }
    }

    /// A point event: a diamond with its label beside it.
    fn point(&self, s: &mut String, i: usize, y: f64) {
        let o = &self.ops[i];
        let (fill, stroke) = self.roles.colours(i, o);
        let (cx, cy) = (self.layout.x_of(o.call), y + (LANE_H - 12.0) / 2.0);
        let _ = writeln!(
            s,
            r#"<g><title>{}</title><path d="M{:.1} {:.1} l7 -9 l7 9 l-7 9 z" fill="{fill}" stroke="{stroke}"/><text x="{:.1}" y="{:.1}">{}</text></g>"#,
            esc(&self.roles.tip(i, o)),
            cx - 7.0,
            cy,
            cx + 10.0,
            cy + 4.0,
            esc(&self.roles.text(i, o))
        );
    }

    /// An operation with a duration: a bar with its (shortened) label inside.
    fn bar(&self, s: &mut String, i: usize, y: f64) {
        let o = &self.ops[i];
        let (fill, stroke) = self.roles.colours(i, o);
        let x1 = self.layout.x_of(o.call) - 4.0;
        let x2 = if o.indeterminate {
            self.layout.right_edge
        } else {
            self.layout.x_of(o.ret) + 4.0
        };
        let dash = if o.indeterminate {
            r#" stroke-dasharray="3 2""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<g><title>{}</title><rect x="{x1:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" rx="3" fill="{fill}" stroke="{stroke}"{dash}/>"#,
            esc(&self.roles.tip(i, o)),
            (x2 - x1).max(4.0),
            LANE_H - 12.0
        );
        let text = truncate(self.roles.text(i, o), x2 - x1);
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text></g>"#,
            x1 + 3.0,
            y + (LANE_H - 12.0) / 2.0 + 4.0,
            esc(&text)
        );
    }

    /// Time ticks (true time, when the history has it), spaced at least 90 px apart.
    fn time_axis(&self, s: &mut String) {
        let axis_y = TOP + LANE_H * self.layout.lanes.len() as f64 + 8.0;
        let mut last_x = f64::NEG_INFINITY;
        for (&pos, &rank) in &self.layout.points {
            let x = Layout::x_of_rank(rank);
            if let Some(ns) = self.layout.ns_at.get(&pos) {
                if x - last_x >= 90.0 {
                    let _ = writeln!(
                        s,
                        r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#999"/><text x="{:.1}" y="{:.1}" fill="#666" font-size="10">{:.3} ms</text>"##,
                        axis_y,
                        axis_y + 5.0,
                        x - 20.0,
                        axis_y + 17.0,
                        *ns as f64 / 1e6
                    );
                    last_x = x;
                }
            }
        }
    }

    fn footer(&self, s: &mut String) {
        let _ = writeln!(
            s,
            r##"<text x="10" y="{:.1}" fill="#666">time →  (bars span invocation to completion; x is the order of events; hover a bar for details)</text>"##,
            self.layout.height - 10.0
        );
        s.push_str("</svg>\n");
    }
}

/// The title of a violation: which operation cannot be placed, and on which part.
fn failure_title(ops: &[OpInfo], e: &Explanation) -> String {
    format!(
        "NOT linearizable{}: {} cannot be placed",
        if e.partition.is_empty() {
            String::new()
        } else {
            format!(" on {}", e.partition)
        },
        ops[e.failing].label(),
    )
}

/// The subtitle of a violation: what the failing operation needs, and why it cannot have
/// it.
fn failure_subtitle(e: &Explanation) -> String {
    match &e.refutation {
        Some(_) => format!(
            "it needs {}; the purple operation overwrites every green one that could leave it that (refuted before any search)",
            e.state
        ),
        None => format!(
            "after a linearizable prefix of {} operations{}; model state there: {}",
            e.prefix.len(),
            e.window.as_ref().map_or_else(String::new, |w| format!(
                " of a window of {} that no starting state can linearize",
                w.operations
            )),
            e.state
        ),
    }
}

/// `text` cut with an ellipsis to fit a bar `width` px wide (at least one character).
fn truncate(text: String, width: f64) -> String {
    let max_chars = ((width / 6.6) as usize).max(1);
    if text.chars().count() > max_chars {
        text.chars()
            .take(max_chars.saturating_sub(1))
            .collect::<String>()
            + "…"
    } else {
        text
    }
}
