//! "Choosing a lock": beside the safety tables, what people choosing a lock compare —
//! whether it queues waiters fairly, whether it re-enters, what an acquire costs and how
//! often the lock is unobtainable — per fault class, and sentences generated from those
//! numbers (never written by hand, so they cannot disagree with the cells).
//!
//! Costs are in simulated time: functions of the links the matrix describes (its
//! `[network]`), not of the machine that ran it. Every figure is from the cells with
//! fencing off (fencing changes what the storage accepts, not what the lock costs).

use super::evidence::bound_text;
use super::guarantees::{CellResult, Guarantees};
use crate::check::{FAIR, REENTRANT as REENTRANT_CHECK};
use crate::metrics::{bytes, TrafficCost};

/// The reentrancy check's name.
const REENTRANT: &str = REENTRANT_CHECK.name;

/// One cell of a table: its text, where it links, and how it reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    /// The text.
    pub text: String,
    /// The link, when there is one (a cell's scenario file).
    pub href: Option<String>,
    /// `ok`, `bad`, `unk` or `na` followed by ` quality` for a quality check's verdict
    /// (it links to the cell's scenario, not to a timeline), or `""` for a number.
    pub class: &'static str,
}

/// One table: a heading, the words under it, a header line and one line per algorithm.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    /// Its anchor and heading.
    pub id: String,
    /// The heading.
    pub heading: String,
    /// What it shows (Markdown inline: backticks only).
    pub about: String,
    /// The header line.
    pub header: Vec<String>,
    /// The lines; the first cell names the algorithm.
    pub rows: Vec<Vec<Cell>>,
}

/// The section's words before its tables.
pub(crate) const INTRO: &str = "Safety is half of what people compare when they choose a lock. \
The other half: whether waiters are served in the order they asked (`fair`), whether a \
holder may take the lock again (`reentrant`), how long an acquire takes, how many grants a \
second the lock sustains, how much of the time the lock was unobtainable while a client \
wanted it, and what the hosts sent each other per grant (TCP data bytes and segments, one \
segment per write: requests, replies, refused retries, replication and heartbeats). Times are simulated: they are functions of the matrix's links, not of a \
machine, and the same seeds give the same numbers everywhere. Figures are from the cells \
with fencing off; latencies are p50 and p99 of acquire invoke to grant, `uncontended` when \
the lock was free and nobody waited at the invoke. With clients that contend all run long, \
most uncontended acquires are the first ones, so they include connecting and opening a \
session (and, for a consensus service, waiting for its first leader): their count is shown \
beside them.";

/// The cost table of each fault class, then the reentrancy table when a column
/// exercises it.
pub(crate) fn tables(g: &Guarantees) -> Vec<Table> {
    let mut v: Vec<Table> = g
        .columns
        .iter()
        .filter(|c| !c.reentrant)
        .map(|c| cost_table(g, &c.name))
        .collect();
    v.extend(reentrancy_table(g));
    v
}

/// The fencing setting costs are read from: off when the matrix ran it.
fn setting(g: &Guarantees) -> bool {
    let settings = g.fencing_settings();
    !settings.contains(&false) && settings.contains(&true)
}

/// The cell of `row` in `column` that costs are read from.
fn cost_cell<'g>(g: &'g Guarantees, row: &str, column: &str) -> Option<&'g CellResult> {
    g.cell(row, column, setting(g))
}

fn cost_table(g: &Guarantees, column: &str) -> Table {
    let header = [
        "algorithm",
        "fair",
        "inversions per 100 grants",
        "max bypass",
        "uncontended p50 (grants)",
        "contended p50",
        "contended p99",
        "grants/s",
        "unavailable",
        "sent per grant",
    ];
    let rows = g
        .rows
        .iter()
        .filter_map(|r| cost_cell(g, &r.name, column).map(|c| (r, c)))
        .map(|(r, cell)| {
            let l = &cell.cost.latency_ms;
            vec![
                plain(r.name.clone()),
                quality_cell(cell, FAIR.name),
                plain(per_100(cell.cost.fifo_inversions, cell.cost.grants)),
                plain(cell.cost.max_bypass.to_string()),
                plain(format!(
                    "{} ({})",
                    ms(l.uncontended.p50),
                    l.uncontended.count
                )),
                plain(ms(l.contended.p50)),
                plain(ms(l.contended.p99)),
                plain(format!("{:.2}", cell.cost.grants_per_s)),
                plain(percent(cell.cost.unavailable)),
                plain(sent(&cell.cost.traffic)),
            ]
        })
        .collect();
    Table {
        id: format!("cost-{column}"),
        heading: format!("Fairness and cost under {column}"),
        about: format!("Fault class `{column}`. `fair`: whether a waiter was ever overtaken by one that asked later (✗ k/N: on k of N seeds; a quality, not a safety break); how often (FIFO inversions per 100 grants) and by how many at once (max bypass: the most waiters one grant overtook). Latencies are histogram bucket tops (up to 12.5 % above the true percentile), printed to two digits; `uncontended` acquires are mostly each client's first, with its connection and session set-up. `unavailable`: the share of the run with a client waiting and nobody holding (without faults, the hand-off gaps of a saturated lock)."),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    }
}

/// Who re-enters: the `reentrant` check in the columns whose clients re-acquire.
fn reentrancy_table(g: &Guarantees) -> Option<Table> {
    let columns: Vec<&str> = g
        .columns
        .iter()
        .filter(|c| c.reentrant)
        .map(|c| c.name.as_str())
        .collect();
    if columns.is_empty() {
        return None;
    }
    let rows = g
        .rows
        .iter()
        .map(|r| {
            let mut line = vec![plain(r.name.clone())];
            line.extend(columns.iter().map(|col| match cost_cell(g, &r.name, col) {
                Some(cell) => quality_cell(cell, REENTRANT),
                None => plain(String::new()),
            }));
            line
        })
        .collect();
    Some(Table {
        id: "reentrancy".into(),
        heading: "Reentrancy".into(),
        about: "A holder acquires the lock it holds, then releases twice. `reentrant` holds when the second acquire succeeds at once and nobody else holds the lock before the last release.".into(),
        header: std::iter::once("algorithm".to_string())
            .chain(columns.iter().map(|c| format!("`reentrant` ({c})")))
            .collect(),
        rows,
    })
}

fn plain(text: String) -> Cell {
    Cell {
        text,
        href: None,
        class: "",
    }
}

/// A quality check's verdict in a cell, linked to the cell's scenario.
fn quality_cell(cell: &CellResult, check: &str) -> Cell {
    let Some(c) = cell.quality.get(check) else {
        return Cell {
            text: "–".into(),
            href: None,
            class: "na quality",
        };
    };
    let (text, class) = if c.violations > 0 {
        (format!("✗ {}/{}", c.violations, cell.seeds), "bad quality")
    } else if c.unknown > 0 {
        (format!("? {}/{}", c.unknown, cell.seeds), "unk quality")
    } else {
        (
            format!("✓ 0/{} {}", cell.seeds, bound_text(cell.seeds)),
            "ok quality",
        )
    };
    Cell {
        text,
        href: Some(cell.scenario.clone()),
        class,
    }
}

/// `n` per 100 of `of`, one decimal (`–` when there were none).
fn per_100(n: u64, of: u64) -> String {
    if of == 0 {
        "–".into()
    } else {
        format!("{:.1}", n as f64 * 100.0 / of as f64)
    }
}

/// A latency percentile: a histogram bucket top, printed to two digits (see
/// [`super::verdict::approx_ms`]).
fn ms(v: Option<f64>) -> String {
    super::verdict::approx_ms(v)
}

/// Bytes and segments per grant: `2.1 KiB / 18.0 seg`.
fn sent(t: &TrafficCost) -> String {
    match (t.bytes_per_grant, t.segments_per_grant) {
        (Some(b), Some(s)) => format!("{} / {s:.1} seg", bytes(b)),
        _ => "–".into(),
    }
}

fn percent(f: f64) -> String {
    format!("{:.1} %", f * 100.0)
}

/// The findings: sentences computed from the cells, each naming the cells it rests on.
pub(crate) fn findings(g: &Guarantees) -> Vec<String> {
    let Some(base) = g.columns.iter().find(|c| !c.reentrant) else {
        return Vec::new();
    };
    let base = base.name.as_str();
    let mut v = Vec::new();
    v.extend(fairness(g, base));
    v.extend(fairness_under_faults(g, base));
    v.extend(inversion_rates(g));
    v.extend(latency(g, base));
    v.extend(availability(g, base));
    v.extend(reentrancy(g));
    v
}

/// Rows whose quality check `check` held (or broke) on every seed of `column`.
fn split_by(g: &Guarantees, column: &str, check: &str) -> (Vec<String>, Vec<String>) {
    let (mut held, mut broke) = (Vec::new(), Vec::new());
    for r in &g.rows {
        let Some(cell) = cost_cell(g, &r.name, column) else {
            continue;
        };
        match cell.quality.get(check) {
            Some(c) if c.violations > 0 => {
                broke.push(format!("{} ({}/{})", r.name, c.violations, cell.seeds))
            }
            Some(c) if c.unknown == 0 => held.push(r.name.clone()),
            _ => {}
        }
    }
    (held, broke)
}

fn fairness(g: &Guarantees, base: &str) -> Option<String> {
    let (held, broke) = split_by(g, base, FAIR.name);
    let parts = [
        (!held.is_empty()).then(|| {
            format!(
                "grants followed request order on every seed for {}",
                held.join(", ")
            )
        }),
        (!broke.is_empty()).then(|| {
            format!(
                "a waiter was overtaken by a later one for {}",
                broke.join(", ")
            )
        }),
    ];
    let parts: Vec<String> = parts.into_iter().flatten().collect();
    (!parts.is_empty()).then(|| format!("Under `{base}`, {}.", parts.join("; ")))
}

/// Which faults break the order of the rows that queue without them.
fn fairness_under_faults(g: &Guarantees, base: &str) -> Option<String> {
    let (queued, _) = split_by(g, base, FAIR.name);
    let mut hits = Vec::new();
    for row in &queued {
        for col in g.columns.iter().filter(|c| c.name != base && !c.reentrant) {
            let Some(cell) = cost_cell(g, row, &col.name) else {
                continue;
            };
            if let Some(c) = cell.quality.get(FAIR.name).filter(|c| c.violations > 0) {
                hits.push(format!(
                    "{row} under {} ({}/{})",
                    col.name, c.violations, cell.seeds
                ));
            }
        }
    }
    (!queued.is_empty()).then(|| {
        if hits.is_empty() {
            format!("No fault class broke the order of {}.", queued.join(", "))
        } else {
            format!(
                "Faults break the queue of the locks that keep it under `{base}`: {}.",
                hits.join(", ")
            )
        }
    })
}

/// Per fault class, the rows overtaking waiters least and most often: a lock that queues
/// may still invert requests that reach its queue in another order than they were made.
fn inversion_rates(g: &Guarantees) -> Vec<String> {
    g.columns
        .iter()
        .filter(|c| !c.reentrant)
        .filter_map(|col| {
            let r = ranked(g, &col.name, |c| {
                (c.cost.grants > 0)
                    .then(|| c.cost.fifo_inversions as f64 * 100.0 / c.cost.grants as f64)
            })?;
            let ((lo, lo_v), (hi, hi_v)) = extremes(&r)?;
            Some(format!(
                "Under `{}`, FIFO inversions per 100 grants: fewest {lo} ({lo_v:.1}), most {hi} ({hi_v:.1}).",
                col.name
            ))
        })
        .collect()
}

/// A number read from a cell.
type Figure = fn(&CellResult) -> Option<f64>;

/// The fastest and slowest row by a latency figure of the base column.
fn latency(g: &Guarantees, base: &str) -> Vec<String> {
    let figures: [(&str, Figure); 2] = [
        ("uncontended acquire p50", |c| {
            c.cost.latency_ms.uncontended.p50
        }),
        ("contended acquire p99", |c| c.cost.latency_ms.contended.p99),
    ];
    let mut v: Vec<String> = figures
        .iter()
        .filter_map(|(what, f)| {
            let ranked = ranked(g, base, f)?;
            let ((lo, lo_v), (hi, hi_v)) = extremes(&ranked)?;
            Some(format!(
                "Under `{base}`, {what}: lowest {lo} ({lo_v:.1} ms), highest {hi} ({hi_v:.1} ms)."
            ))
        })
        .collect();
    if let Some(r) = ranked(g, base, |c| Some(c.cost.grants_per_s)) {
        if let Some(((lo, lo_v), (hi, hi_v))) = extremes(&r) {
            v.push(format!(
                "Under `{base}`, grants per simulated second: most {hi} ({hi_v:.2}), fewest {lo} ({lo_v:.2})."
            ));
        }
    }
    v.extend(traffic(g, base));
    v
}

/// The rows sending the least and the most per grant in the base column.
fn traffic(g: &Guarantees, base: &str) -> Option<String> {
    let r = ranked(g, base, |c| c.cost.traffic.bytes_per_grant)?;
    let ((lo, lo_v), (hi, hi_v)) = extremes(&r)?;
    Some(format!(
        "Under `{base}`, the hosts sent each other the least per grant for {lo} ({}), the most for {hi} ({}, {:.1}×): client requests and replies, retries of refused acquires, and server-to-server replication and heartbeats.",
        bytes(*lo_v),
        bytes(*hi_v),
        hi_v / lo_v.max(1.0)
    ))
}

/// For each fault class, the rows least and most often unobtainable.
fn availability(g: &Guarantees, base: &str) -> Vec<String> {
    g.columns
        .iter()
        .filter(|c| !c.reentrant)
        .filter_map(|col| {
            let r = ranked(g, &col.name, |c| Some(c.cost.unavailable))?;
            let ((lo, lo_v), (hi, hi_v)) = extremes(&r)?;
            let when = if col.name == base {
                format!("Under `{base}`")
            } else {
                format!("Under `{}` faults", col.name)
            };
            Some(format!(
                "{when}, the lock was unobtainable while a client wanted it {} of the time for {hi}, {} for {lo}.",
                percent(*hi_v),
                percent(*lo_v)
            ))
        })
        .collect()
}

fn reentrancy(g: &Guarantees) -> Vec<String> {
    g.columns
        .iter()
        .filter(|c| c.reentrant)
        .filter_map(|col| {
            let (held, broke) = split_by(g, &col.name, REENTRANT);
            let parts = [
                (!held.is_empty()).then(|| format!("reentrant: {}", held.join(", "))),
                (!broke.is_empty()).then(|| format!("not reentrant: {}", broke.join(", "))),
            ];
            let parts: Vec<String> = parts.into_iter().flatten().collect();
            (!parts.is_empty()).then(|| format!("Re-entry (`{}`): {}.", col.name, parts.join("; ")))
        })
        .collect()
}

/// A row's name and its figure.
type Ranked = (String, f64);

/// The lowest and the highest of rows ranked ascending; each is the first row, in the
/// matrix's order, with its value (of rows that tie, the one the matrix lists first).
fn extremes(ranked: &[Ranked]) -> Option<(&Ranked, &Ranked)> {
    let lo = ranked.first()?;
    let top = ranked.last()?.1;
    let hi = ranked.iter().find(|(_, v)| *v == top)?;
    Some((lo, hi))
}

/// Rows with a figure in `column`, ascending (ties in row order).
fn ranked(
    g: &Guarantees,
    column: &str,
    figure: impl Fn(&CellResult) -> Option<f64>,
) -> Option<Vec<(String, f64)>> {
    let mut v: Vec<(String, f64)> = g
        .rows
        .iter()
        .filter_map(|r| {
            let cell = cost_cell(g, &r.name, column)?;
            Some((r.name.clone(), figure(cell)?))
        })
        .collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1));
    (v.len() >= 2).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::extremes;

    #[test]
    fn ties_name_the_row_listed_first() {
        let ranked: Vec<(String, f64)> = [("a", 1.0), ("b", 1.0), ("c", 3.0), ("d", 3.0)]
            .iter()
            .map(|(r, v)| (r.to_string(), *v))
            .collect();
        let (lo, hi) = extremes(&ranked).unwrap();
        assert_eq!((lo.0.as_str(), hi.0.as_str()), ("a", "c"));
        assert!(extremes(&[]).is_none());
    }
}
