//! `guarantees.md`: the verdict, then the matrix as GitHub-readable tables, one per check
//! that broke somewhere, every cell linked (a violation to its timeline on its cell's page under `timelines/`,
//! the others to the cell's scenario file).

use super::choosing;
use super::evidence::bound_text;
use super::findings::measured;
use super::guarantees::Guarantees;
use super::tables::{self, cell_symbol};
use super::verdict;
use crate::check;
use std::fmt::Write as _;

/// The words every page starts with: what the numbers are and are not. `violated_links`
/// says where a violated cell leads.
pub(crate) fn how_to_read(g: &Guarantees, violated_links: &str) -> String {
    format!(
        "`✗ k/N`: the check was violated on k of N seeds ({violated_links}). \
         `✓ 0/N ≤ x%`: it held on all N seeds, which does not prove it \
         always holds: at 95% confidence the rate of violating seeds is at most x% \
         (for N = {1}: {0}; about 3/N, the rule of three). `? k/N`: the checker's time budget \
         ran out on k seeds. `–`: the check cannot apply to this cell (the reasons are listed \
         under the table). Fencing on: clients send their fencing token and the storage \
         rejects stale ones; `off = on`: both settings read the same in every column, shown once.",
        bound_text(g.seeds),
        g.seeds
    )
}

/// Who counted what: one build for a whole run; with `--reuse`, each build and its rows.
pub(crate) fn stamp(g: &Guarantees) -> String {
    match g.counted_by.as_slice() {
        [one] => format!("Counts computed by {}", one.locksim),
        many => {
            let parts: Vec<String> = many
                .iter()
                .map(|b| format!("{} (rows {})", b.locksim, b.rows.join(", ")))
                .collect();
            format!("Counts computed by {}", parts.join("; "))
        }
    }
}

/// The Markdown report.
pub(crate) fn markdown(g: &Guarantees) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Which lock, and what breaks it: lock algorithms under faults (measured)\n"
    );
    verdict_section(&mut s, g);
    let _ = writeln!(
        s,
        "## How this was measured\n\n{} with `{}`: {} seeds per cell, {} simulated seconds per seed. \
         Each cell is an ordinary scenario in `cells/`; the same build and command write these files \
         byte for byte on any machine, or sharded over many (`--shard K/N`, then `--merge`). \
         The same page in HTML: `index.html`; the counterexamples' timelines: `timelines/`, a page per cell.\n",
        stamp(g),
        g.command,
        g.seeds,
        g.duration_ms as f64 / 1e3
    );
    let _ = writeln!(
        s,
        "{}\n",
        how_to_read(
            g,
            "the cell links to its first counterexample's timeline (`timelines/<cell>.html`); every other cell links to the cell's scenario file"
        )
    );
    pause_table(&mut s, g);
    let (tabled, held) = tables::split_checks(g);
    let _ = writeln!(s, "## Checks\n");
    for c in &g.checks {
        let _ = writeln!(s, "- **`{}`**: {}", c.name, c.about);
    }
    let _ = writeln!(s, "\n## Fault classes\n");
    for c in &g.columns {
        let _ = writeln!(s, "- **{}**: {}", c.name, c.about);
    }
    let _ = writeln!(s);
    if let Some(line) = tables::held_everywhere_line(g, &held) {
        let _ = writeln!(s, "{line}\n");
    }
    for check in &tabled {
        check_table(&mut s, g, check);
    }
    reentry_section(&mut s, g);
    choosing_section(&mut s, g);
    let _ = writeln!(s, "## Why each algorithm holds or breaks\n");
    for r in &g.rows {
        let params: Vec<String> = r.lock.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let _ = writeln!(
            s,
            "- **{}** (`algorithm = \"{}\"`{}{}): {} *{}*",
            r.name,
            r.algorithm,
            if params.is_empty() { "" } else { ", " },
            params.join(", "),
            r.why,
            measured(g, &r.name)
        );
    }
    let _ = writeln!(s, "\n## First violation of each check\n");
    for t in &g.timelines {
        for check in &t.checks {
            let _ = writeln!(
                s,
                "- `{}`: [`{check}` at seed {}]({}#{}) — `{}`",
                t.cell,
                t.seed,
                t.page,
                super::guarantees::anchor(&t.cell, check),
                t.replay
            );
        }
    }
    s
}

/// The verdict: a sentence, a line per lock, the cost figures' definitions, the model
/// caveats and the caveats.
fn verdict_section(s: &mut String, g: &Guarantees) {
    let vs = verdict::verdicts(g);
    let _ = writeln!(s, "## Verdict\n\n{}\n", verdict::summary(g, &vs));
    let _ = writeln!(s, "| {} |", verdict::HEADER.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(verdict::HEADER.len()));
    for v in &vs {
        let (resource, safe) = verdict::resource_text(g, v);
        let [sent, unavailable, latency] = verdict::cost_texts(v);
        let model = verdict::fidelity_tests(v).join(", ");
        let _ = writeln!(
            s,
            "| {} | {} {} | {} | {sent} | {unavailable} | {latency} | {} |",
            v.row,
            if safe { "✓" } else { "✗" },
            resource,
            verdict::mutex_text(v),
            if model.is_empty() { "–" } else { &model }
        );
    }
    let _ = writeln!(s, "\n{}\n", verdict::COST_DEFINITIONS);
    let _ = writeln!(s, "**The models.**\n");
    for (algorithm, f) in verdict::models(g) {
        let _ = writeln!(s, "- `{algorithm}`: {f}");
    }
    let _ = writeln!(s, "\n**Caveats.**\n");
    for c in verdict::caveats(g) {
        let _ = writeln!(s, "- {c}");
    }
    let _ = writeln!(s);
}

/// Re-entry on its own: what a holder that takes the lock again does to the checks.
fn reentry_section(s: &mut String, g: &Guarantees) {
    let columns = tables::reentry_columns(g);
    if columns.is_empty() {
        return;
    }
    let checks = g.check_names();
    let _ = writeln!(s, "## Re-entry\n\n{}\n", tables::REENTRY_INTRO);
    for col in columns {
        let _ = writeln!(s, "### {}: {}\n", col.name, col.about);
        let _ = writeln!(s, "| algorithm | {} |", checks.join(" | "));
        let _ = writeln!(s, "|---|{}", "---|".repeat(checks.len()));
        for r in &g.rows {
            let cells: Vec<String> = checks
                .iter()
                .map(|c| linked(g, &r.name, &col.name, false, c))
                .collect();
            let _ = writeln!(s, "| {} | {} |", r.name, cells.join(" | "));
        }
        let _ = writeln!(s);
    }
}

/// Choosing a lock: fairness, reentrancy and cost per fault class, then what the numbers
/// say, in generated sentences.
fn choosing_section(s: &mut String, g: &Guarantees) {
    let _ = writeln!(s, "## Choosing a lock: fairness, reentrancy and cost\n");
    let _ = writeln!(s, "{}\n", choosing::INTRO);
    for f in choosing::findings(g) {
        let _ = writeln!(s, "- {f}");
    }
    let _ = writeln!(s);
    for t in choosing::tables(g) {
        let _ = writeln!(s, "### {}\n\n{}\n", t.heading, t.about);
        let _ = writeln!(s, "| {} |", t.header.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(t.header.len()));
        for line in &t.rows {
            let cells: Vec<String> = line
                .iter()
                .map(|c| match &c.href {
                    Some(h) => format!("[{}]({h})", c.text),
                    None => c.text.clone(),
                })
                .collect();
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        let _ = writeln!(s);
    }
}

/// Kleppmann's question first: under pauses no lease lock keeps mutual exclusion, but
/// some keep the resource safe.
fn pause_table(s: &mut String, g: &Guarantees) {
    let Some(pause) = g.columns.iter().find(|c| c.name == "pause") else {
        return;
    };
    let _ = writeln!(s, "## Under process pauses: the lock or the resource?\n");
    let _ = writeln!(
        s,
        "A holder paused past its lease wakes up believing it holds the lock (Kleppmann, 2016). \
         `mutex` says whether two clients ever held the lock at once; `counter` and `fencing` \
         say whether the protected resource stayed correct anyway.\n"
    );
    let _ = writeln!(
        s,
        "| algorithm | mutex | counter, no fencing | counter, fencing | fencing |\n|---|---|---|---|---|"
    );
    for r in &g.rows {
        let cells = [
            (false, check::MUTEX.name),
            (false, check::COUNTER.name),
            (true, check::COUNTER.name),
            (true, check::FENCING.name),
        ]
        .map(|(fencing, check)| linked(g, &r.name, &pause.name, fencing, check));
        let _ = writeln!(s, "| {} | {} |", r.name, cells.join(" | "));
    }
    let _ = writeln!(s);
}

/// One check's table: a line per row and fencing setting (one when both read the same),
/// a column per fault class.
fn check_table(s: &mut String, g: &Guarantees, check: &str) {
    let _ = writeln!(s, "## `{check}`\n");
    let columns = tables::fault_columns(g);
    let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
    let _ = writeln!(s, "| algorithm | fencing | {} |", names.join(" | "));
    let _ = writeln!(s, "|---|---|{}", "---|".repeat(names.len()));
    for r in &g.rows {
        for (label, fencing) in tables::setting_lines(g, &r.name, check, &columns) {
            let cells: Vec<String> = names
                .iter()
                .map(|col| linked(g, &r.name, col, fencing, check))
                .collect();
            let _ = writeln!(s, "| {} | {label} | {} |", r.name, cells.join(" | "));
        }
    }
    let _ = writeln!(s);
    not_applicable(s, g, check);
}

/// Why the table's `–` cells are not applicable: each distinct reason once, with the
/// rows it applies to.
fn not_applicable(s: &mut String, g: &Guarantees, check: &str) {
    let mut reasons: Vec<(String, Vec<String>)> = Vec::new();
    for cell in &g.cells {
        let why = match cell.not_applicable.get(check) {
            Some(why) => why.clone(),
            None if !cell.checks.contains_key(check) => {
                "another family's own check, not defined here".to_string()
            }
            None => continue,
        };
        let label = format!(
            "{} (fencing {})",
            cell.row,
            if cell.fencing { "on" } else { "off" }
        );
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, rows)) if !rows.contains(&label) => rows.push(label),
            Some(_) => {}
            None => reasons.push((why, vec![label])),
        }
    }
    for (why, rows) in &reasons {
        let _ = writeln!(s, "- `–` for {}: {why}", rows.join(", "));
    }
    if !reasons.is_empty() {
        let _ = writeln!(s);
    }
}

/// A cell's symbol linked: a violation to its first counterexample's timeline (on its
/// cell's page), any other verdict to the cell's scenario file (`–` stays plain).
fn linked(g: &Guarantees, row: &str, column: &str, fencing: bool, check: &str) -> String {
    let Some(cell) = g.cell(row, column, fencing) else {
        return String::new();
    };
    let sym = cell_symbol(cell, check);
    match cell.checks.get(check) {
        Some(c) if c.violations > 0 && c.timeline.is_some() => {
            format!("[{sym}]({})", c.timeline.as_deref().unwrap_or_default())
        }
        Some(_) => format!("[{sym}]({})", cell.scenario),
        None => sym,
    }
}
