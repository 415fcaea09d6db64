//! `index.html`: one self-contained page (no network, no scripts). The verdict first
//! (which lock keeps the resource safe, what breaks it, what it costs, how its model is
//! checked); then how it was measured and a table of contents;
//! the checks and fault classes defined where the tables use them; every cell linked —
//! a violated one to its first counterexample's timeline (on its cell's page under
//! `timelines/`, see [`super::pages`]), a clean one to its scenario file with the seeds
//! it held on; a `–` says why on hover; then why each algorithm holds or breaks, in
//! words and in the measured numbers, and the list of counterexamples: one run per line,
//! anchored by each check it is the first to violate, linked to its timeline.

use super::choosing;
use super::evidence::bound_text;
use super::findings::measured;
use super::guarantees::{CellResult, Guarantees};
use super::markdown::{how_to_read, stamp};
use super::tables::cell_symbol;
use super::verdict::{self, Break, Resource, RowVerdict};
use super::{tables, tables::fault_columns};
use crate::check;
use std::fmt::Write as _;

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `code` spans from Markdown backticks, the rest escaped.
pub(super) fn inline(s: &str) -> String {
    esc(s)
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_string()
            }
        })
        .collect()
}

/// The style of `index.html` and of the timeline pages.
pub(super) const STYLE: &str = "body{font:16px/1.45 sans-serif;margin:0 auto;padding:.6em 1em;max-width:1360px;color:#222}\
h1{font-size:1.45em;margin:.2em 0 .3em}h2{margin-top:2em;border-bottom:1px solid #ddd}\
.scroll{overflow-x:auto;max-width:100%}\
table{border-collapse:collapse;margin:.6em 0;font-size:14px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:center}\
th{background:#f4f4f4}td.ok{background:#e6f4ea}td.bad{background:#fbe3e3}td.unk{background:#fff4ce}\
td.bad.quality{background:#eef0f7}td.ok.quality{background:#f6f8fb}\
td.na{color:#777}td.name,th.name{text-align:left}td a{color:inherit;text-decoration:none;display:block}td a:hover{text-decoration:underline}\
td small{color:#555}code{background:#f4f4f4;padding:1px 3px;word-break:break-word}nav ol{columns:2}\
table.verdict{font-size:13.5px}table.verdict td{text-align:left;vertical-align:top}table.verdict td a{display:inline;text-decoration:underline}\
table.verdict td.num{text-align:right}p.lede{margin:.3em 0}.defs{font-size:13px;color:#444}\
.cx{margin:2em 0;padding-top:.5em;border-top:1px solid #eee}.svgbox svg{display:block;width:100%;height:auto}\
.svgbox{max-width:1100px}.words{display:grid;grid-template-columns:minmax(0,2fr) minmax(0,1fr);gap:1.5em;font-size:14px}\
.words ol{padding-left:1.2em;margin:.2em 0}ul.legend{list-style:none;padding:0;margin:.3em 0;font-size:13px}\
ul.legend svg{width:20px;height:16px;vertical-align:middle;margin-right:.3em}td.cxs a{display:inline;text-decoration:underline}\
@media (max-width:900px){.words{display:block}}\
dt{font-weight:bold;margin-top:.6em}.stamp{color:#555}:target{outline:3px solid #fc0}ul.na{font-size:13px;color:#555}";

/// The HTML page.
pub(crate) fn html(g: &Guarantees) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>locksim: which lock, and what breaks it (measured)</title>\
         <style>{STYLE}</style></head><body>\
         <h1>Which lock, and what breaks it: lock algorithms under faults, measured</h1>"
    );
    verdict_section(&mut s, g);
    let _ = write!(
        s,
        "<h2 id=\"method\">How this was measured</h2>\
         <p class=\"stamp\" id=\"stamp\">{} with <code>{}</code>: {} seeds per cell, {} simulated \
         seconds per seed. The same build and command write this page byte for byte on any machine, \
         or sharded over many (<code>--shard K/N</code>, then <code>--merge</code>).</p><p>{}</p>",
        esc(&stamp(g)),
        esc(&g.command),
        g.seeds,
        g.duration_ms as f64 / 1e3,
        inline(&how_to_read(
            g,
            "the cell links to its first counterexample's timeline, on the cell's page"
        ))
    );
    contents(&mut s, g);
    pause_table(&mut s, g);
    definitions(&mut s, g);
    let (tabled, held) = tables::split_checks(g);
    if let Some(line) = tables::held_everywhere_line(g, &held) {
        let _ = write!(s, "<p id=\"held-everywhere\">{}</p>", inline(&line));
    }
    for check in &held {
        // The old tables' anchors lead to the line that replaced them.
        let _ = write!(s, "<span id=\"table-{}\"></span>", esc(check));
    }
    for check in &tabled {
        check_table(&mut s, g, check);
    }
    reentry_section(&mut s, g);
    choosing_section(&mut s, g);
    why(&mut s, g);
    counterexamples(&mut s, g);
    let _ = writeln!(s, "</body></html>");
    s
}

/// A table in a box that scrolls sideways on a narrow screen.
fn scrolling(table: &str) -> String {
    format!("<div class=\"scroll\">{table}</div>")
}

/// Breaks as links to their first counterexamples.
fn break_links(b: &[Break]) -> String {
    b.iter()
        .map(|b| match &b.anchor {
            Some(a) => format!("<a href=\"{}\">{}</a>", esc(a), esc(&b.text())),
            None => esc(&b.text()),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The verdict cell about the resource: its class and text.
fn resource_td(g: &Guarantees, v: &RowVerdict) -> (&'static str, String) {
    match &v.resource {
        Resource::FencingBreaks(b) => (
            "bad",
            format!("✗ <code>fencing</code> breaks: {}", break_links(b)),
        ),
        Resource::NoToken(b) if !b.is_empty() => (
            "bad",
            format!(
                "✗ no token to fence with: <code>counter</code> breaks: {}",
                break_links(b)
            ),
        ),
        _ => (
            "ok",
            format!("✓ {}", inline(&verdict::resource_text(g, v).0)),
        ),
    }
}

/// The verdict: a sentence, a line per lock, the definitions, the models, the caveats.
fn verdict_section(s: &mut String, g: &Guarantees) {
    let vs = verdict::verdicts(g);
    let _ = write!(
        s,
        "<p class=\"lede\" id=\"verdict\">{}</p>",
        inline(&verdict::summary(g, &vs))
    );
    let mut t = String::from("<table class=\"verdict\"><thead><tr>");
    for (i, h) in verdict::HEADER.iter().enumerate() {
        let class = if i == 0 { " class=\"name\"" } else { "" };
        let _ = write!(t, "<th{class}>{}</th>", inline(h));
    }
    t.push_str("</tr></thead><tbody>");
    for v in &vs {
        let (class, resource) = resource_td(g, v);
        let mutex = if v.mutex.is_empty() {
            "<td class=\"ok\">✓ held everywhere</td>".to_string()
        } else {
            format!("<td class=\"bad\">✗ {}</td>", break_links(&v.mutex))
        };
        let [sent, unavailable, latency] = verdict::cost_texts(v);
        let tests = verdict::fidelity_tests(v);
        let algorithm = g
            .rows
            .iter()
            .find(|r| r.name == v.row)
            .map_or("", |r| r.algorithm.as_str());
        let model = if tests.is_empty() {
            "–".to_string()
        } else {
            format!(
                "<a href=\"#model-{}\">{}</a>",
                esc(algorithm),
                esc(&tests.join(", "))
            )
        };
        let _ = write!(
            t,
            "<tr><td class=\"name\"><a href=\"#alg-{0}\">{0}</a></td><td class=\"{class}\">{resource}</td>{mutex}\
             <td class=\"num\">{1}</td><td class=\"num\">{2}</td><td class=\"num\">{3}</td><td>{model}</td></tr>",
            esc(&v.row),
            esc(&sent),
            esc(&unavailable),
            esc(&latency)
        );
    }
    t.push_str("</tbody></table>");
    s.push_str(&scrolling(&t));
    let _ = write!(
        s,
        "<p class=\"defs\">{}</p><p class=\"defs\"><b>The models.</b> ",
        inline(verdict::COST_DEFINITIONS)
    );
    for (algorithm, text) in verdict::models(g) {
        let _ = write!(
            s,
            "<span id=\"model-{0}\"><code>{0}</code>: {1}</span> ",
            esc(&algorithm),
            inline(&text)
        );
    }
    s.push_str("</p><p class=\"defs\"><b>Caveats.</b> ");
    for c in verdict::caveats(g) {
        let _ = write!(s, "{} ", inline(&c));
    }
    s.push_str("</p>");
}

/// The table of contents.
fn contents(s: &mut String, g: &Guarantees) {
    let _ = write!(
        s,
        "<nav><h2>Contents</h2><ol><li><a href=\"#verdict\">Verdict</a></li>"
    );
    if g.columns.iter().any(|c| c.name == "pause") {
        let _ = write!(s, "<li><a href=\"#pauses\">Under process pauses</a></li>");
    }
    let _ = write!(
        s,
        "<li><a href=\"#checks\">The checks</a></li><li><a href=\"#faults\">Fault classes</a></li>"
    );
    let (tabled, _) = tables::split_checks(g);
    for check in &tabled {
        let _ = write!(
            s,
            "<li><a href=\"#table-{0}\">Table: <code>{0}</code></a></li>",
            esc(check)
        );
    }
    if !tables::reentry_columns(g).is_empty() {
        let _ = write!(s, "<li><a href=\"#reentry\">Re-entry</a></li>");
    }
    let _ = write!(
        s,
        "<li><a href=\"#choosing\">Choosing a lock: fairness, reentrancy and cost</a></li>"
    );
    let _ = write!(
        s,
        "<li><a href=\"#why\">Why each algorithm holds or breaks</a></li>\
         <li><a href=\"#counterexamples\">Counterexamples</a> ({} runs)</li></ol></nav>",
        g.timelines.len()
    );
}

/// The class of a cell's `<td>`.
fn class(cell: &CellResult, check: &str) -> &'static str {
    match cell.checks.get(check) {
        None => "na",
        Some(c) if c.violations > 0 => "bad",
        Some(c) if c.unknown > 0 => "unk",
        Some(_) => "ok",
    }
}

/// One cell as a `<td>`: linked, with a tooltip in words.
fn td(g: &Guarantees, row: &str, column: &str, fencing: bool, check: &str) -> String {
    let Some(cell) = g.cell(row, column, fencing) else {
        return "<td></td>".into();
    };
    let n = cell.seeds;
    let (href, title) = match cell.checks.get(check) {
        None => {
            let alg = g
                .rows
                .iter()
                .find(|r| r.name == cell.row)
                .map_or("this algorithm", |r| r.algorithm.as_str());
            let title = match cell.not_applicable.get(check) {
                Some(why) => format!("{check} does not apply here: {why}"),
                None => format!("{check} is another family's own check; {alg} does not define it"),
            };
            return format!("<td class=\"na\" title=\"{}\">–</td>", esc(&title));
        }
        Some(c) if c.violations > 0 => (
            c.timeline.clone().unwrap_or_default(),
            format!(
                "{check} violated on {} of {n} seeds of {}; first at seed {}: click for its timeline",
                c.violations,
                cell.name,
                c.first_seed.unwrap_or_default()
            ),
        ),
        Some(c) if c.unknown > 0 => (
            cell.scenario.clone(),
            format!("the checker's budget ran out on {} of {n} seeds; none violated {check}", c.unknown),
        ),
        Some(_) => (
            cell.scenario.clone(),
            format!(
                "{check} held on all {n} seeds (0..{n}) of {}: violation rate {} at 95% confidence",
                cell.scenario,
                bound_text(n)
            ),
        ),
    };
    let sym = cell_symbol(cell, check);
    let (main, bound) = sym
        .split_once(" ≤")
        .map_or((sym.as_str(), None), |(a, b)| (a, Some(b)));
    let bound = bound.map_or(String::new(), |b| format!("<br><small>≤{}</small>", esc(b)));
    let warn = if cell.harness_errors > 0 {
        format!(
            " ⚠ {} harness error(s), first {}",
            cell.harness_errors,
            cell.first_error.as_deref().unwrap_or("")
        )
    } else {
        String::new()
    };
    format!(
        "<td class=\"{}\"><a href=\"{}\" title=\"{}{}\">{}{}</a></td>",
        class(cell, check),
        esc(&href),
        esc(&title),
        esc(&warn),
        esc(main),
        bound
    )
}

/// Kleppmann's question first: under pauses no lease lock keeps mutual exclusion, but
/// some keep the resource safe.
fn pause_table(s: &mut String, g: &Guarantees) {
    let Some(pause) = g.columns.iter().find(|c| c.name == "pause") else {
        return;
    };
    let _ = write!(
        s,
        "<h2 id=\"pauses\">Under process pauses: the lock or the resource?</h2><p>No lease \
         lock keeps mutual exclusion when its holder pauses past the lease. What differs is \
         whether the <i>resource</i> stays safe: with a fencing token the storage rejects the \
         stale holder's write.</p><div class=\"scroll\"><table><thead><tr><th class=\"name\">algorithm</th>\
         <th><a href=\"#check-mutex\">mutex</a></th><th><a href=\"#check-counter\">counter</a>, no fencing</th>\
         <th><a href=\"#check-counter\">counter</a>, fencing</th><th><a href=\"#check-fencing\">fencing</a></th></tr></thead><tbody>"
    );
    for r in &g.rows {
        let _ = write!(
            s,
            "<tr><td class=\"name\"><a href=\"#alg-{0}\">{0}</a></td>",
            esc(&r.name)
        );
        for (fencing, check) in [
            (false, check::MUTEX.name),
            (false, check::COUNTER.name),
            (true, check::COUNTER.name),
            (true, check::FENCING.name),
        ] {
            s.push_str(&td(g, &r.name, &pause.name, fencing, check));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
}

/// The checks and the fault classes, defined once; tables link here.
fn definitions(s: &mut String, g: &Guarantees) {
    let _ = write!(s, "<h2 id=\"checks\">The checks</h2><dl>");
    for c in &g.checks {
        let _ = write!(
            s,
            "<dt id=\"check-{0}\"><code>{0}</code></dt><dd>{1}</dd>",
            esc(&c.name),
            inline(&c.about)
        );
    }
    let _ = write!(s, "</dl><h2 id=\"faults\">Fault classes</h2><dl>");
    for c in &g.columns {
        let _ = write!(
            s,
            "<dt id=\"fault-{0}\">{0}</dt><dd>{1}</dd>",
            esc(&c.name),
            inline(&c.about)
        );
    }
    s.push_str("</dl>");
}

/// One check's table: a line per row and fencing setting (one when both read the same),
/// a column per fault class, the reasons for its `–` under it.
fn check_table(s: &mut String, g: &Guarantees, check: &str) {
    let about = g
        .checks
        .iter()
        .find(|c| c.name == check)
        .map_or(String::new(), |c| inline(&c.about));
    let _ = write!(
        s,
        "<h2 id=\"table-{0}\"><code>{0}</code></h2><p><a href=\"#check-{0}\">{0}</a>: {about}</p>\
         <div class=\"scroll\"><table><thead><tr><th class=\"name\">algorithm</th><th>fencing</th>",
        esc(check)
    );
    let columns = fault_columns(g);
    for c in &columns {
        let _ = write!(
            s,
            "<th><a href=\"#fault-{0}\" title=\"{1}\">{0}</a></th>",
            esc(&c.name),
            esc(&c.about)
        );
    }
    s.push_str("</tr></thead><tbody>");
    for r in &g.rows {
        for (label, fencing) in tables::setting_lines(g, &r.name, check, &columns) {
            let _ = write!(
                s,
                "<tr><td class=\"name\"><a href=\"#alg-{0}\">{0}</a></td><td>{1}</td>",
                esc(&r.name),
                label
            );
            for c in &columns {
                s.push_str(&td(g, &r.name, &c.name, fencing, check));
            }
            s.push_str("</tr>");
        }
    }
    s.push_str("</tbody></table></div>");
    not_applicable_list(s, g, check);
}

/// Why a table's `–` cells do not apply, each reason once with its rows: readable
/// without hovering.
fn not_applicable_list(s: &mut String, g: &Guarantees, check: &str) {
    let mut reasons: Vec<(String, Vec<String>)> = Vec::new();
    for cell in &g.cells {
        let Some(why) = cell.not_applicable.get(check) else {
            continue;
        };
        let label = format!(
            "{} (fencing {})",
            cell.row,
            if cell.fencing { "on" } else { "off" }
        );
        match reasons.iter_mut().find(|(w, _)| w == why) {
            Some((_, rows)) if !rows.contains(&label) => rows.push(label),
            Some(_) => {}
            None => reasons.push((why.clone(), vec![label])),
        }
    }
    if reasons.is_empty() {
        return;
    }
    s.push_str("<ul class=\"na\">");
    for (why, rows) in &reasons {
        let _ = write!(
            s,
            "<li>– for {}: {}</li>",
            esc(&rows.join(", ")),
            inline(why)
        );
    }
    s.push_str("</ul>");
}

/// Re-entry on its own: every check under the columns whose holders re-acquire.
fn reentry_section(s: &mut String, g: &Guarantees) {
    let columns = tables::reentry_columns(g);
    if columns.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "<h2 id=\"reentry\">Re-entry</h2><p>{}</p>",
        inline(tables::REENTRY_INTRO)
    );
    let checks = g.check_names();
    for col in columns {
        let _ = write!(
            s,
            "<h3 id=\"reentry-{0}\">{0}</h3><p>{1}</p><div class=\"scroll\"><table><thead><tr><th class=\"name\">algorithm</th>",
            esc(&col.name),
            inline(&col.about)
        );
        for c in &checks {
            let _ = write!(s, "<th><a href=\"#check-{0}\">{0}</a></th>", esc(c));
        }
        s.push_str("</tr></thead><tbody>");
        for r in &g.rows {
            let _ = write!(
                s,
                "<tr><td class=\"name\"><a href=\"#alg-{0}\">{0}</a></td>",
                esc(&r.name)
            );
            for c in &checks {
                s.push_str(&td(g, &r.name, &col.name, false, c));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table></div>");
    }
}

/// Choosing a lock: the same tables and sentences as the Markdown's.
fn choosing_section(s: &mut String, g: &Guarantees) {
    let _ = write!(
        s,
        "<h2 id=\"choosing\">Choosing a lock: fairness, reentrancy and cost</h2><p>{}</p><ul>",
        inline(choosing::INTRO)
    );
    for f in choosing::findings(g) {
        let _ = write!(s, "<li>{}</li>", inline(&f));
    }
    s.push_str("</ul>");
    for t in choosing::tables(g) {
        let _ = write!(
            s,
            "<h3 id=\"{}\">{}</h3><p>{}</p><div class=\"scroll\"><table><thead><tr>",
            esc(&t.id),
            esc(&t.heading),
            inline(&t.about)
        );
        for (i, h) in t.header.iter().enumerate() {
            let class = if i == 0 { " class=\"name\"" } else { "" };
            let _ = write!(s, "<th{class}>{}</th>", inline(h));
        }
        s.push_str("</tr></thead><tbody>");
        for line in &t.rows {
            s.push_str("<tr>");
            for (i, c) in line.iter().enumerate() {
                let class = if i == 0 { "name" } else { c.class };
                let text = esc(&c.text);
                let body = match &c.href {
                    Some(h) => format!("<a href=\"{}\">{text}</a>", esc(h)),
                    None => text,
                };
                let _ = write!(s, "<td class=\"{class}\">{body}</td>");
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table></div>");
    }
}

/// Why each algorithm holds or breaks: the matrix file's words, then the numbers'.
fn why(s: &mut String, g: &Guarantees) {
    let _ = write!(
        s,
        "<h2 id=\"why\">Why each algorithm holds or breaks</h2><dl>"
    );
    for r in &g.rows {
        let params: Vec<String> = r.lock.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        for old in &r.formerly {
            // The row's earlier name still leads here.
            let _ = write!(s, "<span id=\"alg-{}\"></span>", esc(old));
        }
        let _ = write!(
            s,
            "<dt id=\"alg-{0}\">{0} <code>algorithm = \"{1}\"{2}{3}</code></dt><dd>{4}<br><i>{5}</i></dd>",
            esc(&r.name),
            esc(&r.algorithm),
            if params.is_empty() { "" } else { ", " },
            esc(&params.join(", ")),
            inline(&r.why),
            inline(&measured(g, &r.name))
        );
    }
    s.push_str("</dl>");
}

/// The counterexamples: one line per run, anchored by each check it is the first in its
/// cell to violate (`<cell>--<check>`, the anchors earlier pages linked to), linked to
/// its timeline on the cell's page.
fn counterexamples(s: &mut String, g: &Guarantees) {
    let _ = write!(
        s,
        "<h2 id=\"counterexamples\">Counterexamples</h2><p>One timeline per run: the first \
         seed of a cell that violated a check, with every check it violated marked, each on \
         its cell's page (<code>timelines/</code>) with the command that replays it. A violated \
         cell in the tables links there directly.</p><div class=\"scroll\"><table>\
         <thead><tr><th class=\"name\">cell</th><th>seed</th><th>first violation of</th>\
         </tr></thead><tbody>"
    );
    for t in &g.timelines {
        let checks: Vec<String> = t
            .checks
            .iter()
            .map(|check| {
                let id = super::guarantees::anchor(&t.cell, check);
                format!(
                    "<a id=\"{0}\" href=\"{1}#{0}\"><code>{2}</code></a>",
                    esc(&id),
                    esc(&t.page),
                    esc(check)
                )
            })
            .collect();
        // Anchors made with a row's earlier name still lead here.
        let row = g
            .cells
            .iter()
            .find(|c| c.name == t.cell)
            .and_then(|c| g.rows.iter().find(|r| r.name == c.row));
        let mut old_ids = String::new();
        for old in row.map_or(&[][..], |r| r.formerly.as_slice()) {
            if let Some(rest) = row.and_then(|r| t.cell.strip_prefix(r.name.as_str())) {
                for check in &t.checks {
                    let _ = write!(
                        old_ids,
                        "<span id=\"{}{}--{}\"></span>",
                        esc(old),
                        esc(rest),
                        esc(check)
                    );
                }
            }
        }
        let _ = write!(
            s,
            "<tr><td class=\"name\">{old_ids}<a href=\"{0}#{1}\">{2}</a></td><td>{3}</td>\
             <td class=\"cxs\">{4}</td></tr>",
            esc(&t.page),
            esc(&t.id),
            esc(&t.cell),
            t.seed,
            checks.join(", ")
        );
    }
    s.push_str("</tbody></table></div>");
}
