//! Which tables and lines the report shows, shared by the Markdown and the HTML: the
//! fault classes (re-entry columns apart), the checks that need a table (those that
//! broke or went undecided somewhere) and those summed up in one line, and a row's
//! fencing settings folded into one line when they read the same.

use super::evidence::bound_text;
use super::guarantees::{CellResult, ColumnInfo, Guarantees};
use crate::check::STORAGE_LINEARIZABLE;

/// A cell's text for `check`: `✗ k/N` violated on k of N seeds, `? k/N` undecided on k
/// (checker budget), `✓ 0/N ≤ x%` held on all N with the 95% upper bound on the rate,
/// `–` not applicable.
pub(crate) fn cell_symbol(cell: &CellResult, check: &str) -> String {
    match cell.checks.get(check) {
        None => "–".into(),
        Some(c) if c.violations > 0 => format!("✗ {}/{}", c.violations, cell.seeds),
        Some(c) if c.unknown > 0 => format!("? {}/{}", c.unknown, cell.seeds),
        Some(_) => format!("✓ 0/{} {}", cell.seeds, bound_text(cell.seeds)),
    }
}

/// Checks that test the harness, not the lock: shown as such.
pub(crate) const HARNESS_SELF_CHECKS: [&str; 1] = [STORAGE_LINEARIZABLE.name];

/// The fault-class columns: every column but the re-entry ones (which change the
/// clients, not the faults, and have their own section).
pub(crate) fn fault_columns(g: &Guarantees) -> Vec<&ColumnInfo> {
    g.columns.iter().filter(|c| !c.reentrant).collect()
}

/// The re-entry columns.
pub(crate) fn reentry_columns(g: &Guarantees) -> Vec<&ColumnInfo> {
    g.columns.iter().filter(|c| c.reentrant).collect()
}

/// Whether `check` held on every seed of every cell that runs it, undecided nowhere.
pub(crate) fn holds_everywhere(g: &Guarantees, check: &str) -> bool {
    g.cells
        .iter()
        .filter_map(|c| c.checks.get(check))
        .all(|c| c.violations == 0 && c.unknown == 0)
}

/// The checks that get a table (something broke or went undecided), and those that
/// held everywhere (one line).
pub(crate) fn split_checks(g: &Guarantees) -> (Vec<String>, Vec<String>) {
    g.check_names()
        .into_iter()
        .partition(|c| !holds_everywhere(g, c))
}

/// The lines of a row in `check`'s table: `(label, fencing)` per fencing setting the row
/// ran, folded into one `off = on` line (showing the off cells) when every column
/// reads the same.
pub(crate) fn setting_lines(
    g: &Guarantees,
    row: &str,
    check: &str,
    columns: &[&ColumnInfo],
) -> Vec<(&'static str, bool)> {
    let settings: Vec<bool> = g
        .fencing_settings()
        .into_iter()
        .filter(|f| g.cells.iter().any(|c| c.row == row && c.fencing == *f))
        .collect();
    let symbols = |fencing: bool| -> Vec<Option<String>> {
        columns
            .iter()
            .map(|col| {
                g.cell(row, &col.name, fencing)
                    .map(|c| cell_symbol(c, check))
            })
            .collect()
    };
    let label = |f: bool| if f { "on" } else { "off" };
    if settings.len() == 2 && symbols(settings[0]) == symbols(settings[1]) {
        return vec![("off = on", settings[0])];
    }
    settings.into_iter().map(|f| (label(f), f)).collect()
}

/// The one line for the checks that held in every cell (Markdown inline).
pub(crate) fn held_everywhere_line(g: &Guarantees, held: &[String]) -> Option<String> {
    if held.is_empty() {
        return None;
    }
    let names: Vec<String> = held
        .iter()
        .map(|c| {
            if HARNESS_SELF_CHECKS.contains(&c.as_str()) {
                format!(
                    "`{c}` (a harness self-check: it tests locksim's storage model, not the lock)"
                )
            } else {
                format!("`{c}`")
            }
        })
        .collect();
    Some(format!(
        "Held on every seed of every cell that runs them, so no table: {} (each {} per cell at 95 % confidence).",
        names.join(", "),
        super::evidence::bound_text(g.seeds)
    ))
}

/// What the re-entry section is about (Markdown inline).
pub(crate) const REENTRY_INTRO: &str = "No faults here: every holder acquires the lock it already holds, then releases twice. \
A client that is not re-entrant waits for itself or takes a second hold, so `mutex` and the linearizability checks can break without any fault: \
a property of the client library, not of how the lock survives faults, so it is kept out of the fault tables. \
Fencing off; `reentrant` itself is under *Choosing a lock*.";
