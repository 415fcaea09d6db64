//! `timelines/<cell>.html`: a cell's counterexamples, one self-contained page per cell
//! (no network, no scripts), so `index.html` stays small. One section per run (a seed
//! that is the first in the cell to violate one or more checks, anchored
//! `<cell>--seed-<seed>` and `<cell>--<check>` for each): the picture, scaled to the
//! page's width, and under it in HTML what it shows — the window, each violated
//! check's message and the events it names, the legend.

use super::guarantees::{anchor, Guarantees, Timeline};
use super::html::{esc, inline, STYLE};
use std::fmt::Write as _;

/// Every cell with a counterexample, and its page's HTML, in the report's order.
pub(crate) fn timeline_pages(g: &Guarantees) -> Vec<(String, String)> {
    let mut pages: Vec<(String, String)> = Vec::new();
    for t in &g.timelines {
        if !pages.iter().any(|(page, _)| *page == t.page) {
            pages.push((t.page.clone(), page(g, &t.cell)));
        }
    }
    pages
}

/// One cell's page.
fn page(g: &Guarantees, cell_name: &str) -> String {
    let cell = g.cells.iter().find(|c| c.name == cell_name);
    let mut s = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{0}: counterexamples (locksim)</title><style>{STYLE}</style></head><body>\
         <p><a href=\"../index.html#counterexamples\">← every counterexample</a> · \
         <a href=\"../index.html\">the report</a></p><h1>{0}</h1>",
        esc(cell_name)
    );
    if let Some(c) = cell {
        let _ = write!(
            s,
            "<p>Algorithm <a href=\"../index.html#alg-{0}\">{0}</a>, fault class \
             <a href=\"../index.html#fault-{1}\">{1}</a>, fencing {2}; the scenario: \
             <a href=\"../{3}\">{3}</a>. Hover a mark for the event, its true time and the \
             node's own clocks.</p>",
            esc(&c.row),
            esc(&c.column),
            if c.fencing { "on" } else { "off" },
            esc(&c.scenario)
        );
    }
    for t in g.timelines.iter().filter(|t| t.cell == cell_name) {
        section(&mut s, g, t);
    }
    s.push_str("</body></html>\n");
    s
}

/// One run: its anchors, heading, counts, replay command, picture and words.
fn section(s: &mut String, g: &Guarantees, t: &Timeline) {
    let cell = g.cells.iter().find(|c| c.name == t.cell);
    let _ = write!(s, "<section class=\"cx\" id=\"{}\">", esc(&t.id));
    for check in &t.checks {
        let _ = write!(s, "<span id=\"{}\"></span>", esc(&anchor(&t.cell, check)));
    }
    let codes: Vec<String> = t
        .checks
        .iter()
        .map(|c| format!("<code>{}</code>", esc(c)))
        .collect();
    let _ = write!(s, "<h2>Seed {}: {}</h2><p>", t.seed, codes.join(", "));
    let n = cell.map_or(0, |c| c.seeds);
    let counts: Vec<String> = t
        .checks
        .iter()
        .map(|check| {
            let k = cell
                .and_then(|c| c.checks.get(check))
                .map_or(0, |x| x.violations);
            format!(
                "<a href=\"../index.html#check-{0}\"><code>{0}</code></a> \
                 (<a href=\"../index.html#table-{0}\">{k} of {n} seeds</a>)",
                esc(check)
            )
        })
        .collect();
    let _ = write!(
        s,
        "The first seed of this cell to violate {}. ",
        counts.join(", ")
    );
    let _ = write!(
        s,
        "Replay: <code>{}</code>; add <code>--history run.jsonl</code> for every event, one \
         per line.</p>",
        esc(&t.replay)
    );
    let Some(d) = &t.drawing else {
        let _ = write!(
            s,
            "<p>Seed {} failed inside the harness; replay it for the error.</p></section>",
            t.seed
        );
        return;
    };
    let _ = write!(
        s,
        "<div class=\"svgbox\">{}</div><div class=\"words\"><div><p>{}.</p>",
        d.svg,
        esc(&d.window)
    );
    for cap in &d.captions {
        let drawn = if cap.focus {
            "its events in red"
        } else {
            "its events in light red: its first violation in this cell came at another seed"
        };
        let _ = write!(
            s,
            "<p><b><code>{}</code></b> ({drawn}): {}</p><ol>",
            esc(cap.check),
            lines_cited(&inline(&cap.message), &t.replay)
        );
        for (time, words) in &cap.events {
            let _ = write!(s, "<li>{}: {}</li>", esc(time), esc(words));
        }
        s.push_str("</ol>");
    }
    s.push_str("</div><ul class=\"legend\">");
    for (sample, label) in &d.legend {
        let _ = write!(s, "<li>{sample}{}</li>", esc(label));
    }
    s.push_str("</ul></div></section>");
}

/// A message that cites lines of the history ("(line 167)", the linearizability
/// checker's) says which file those are: the one the replay writes.
fn lines_cited(message: &str, replay: &str) -> String {
    if !message.contains("(line ") {
        return message.to_string();
    }
    format!(
        "{message} (Lines are those of the history <code>{} --history run.jsonl</code> writes.)",
        esc(replay)
    )
}
