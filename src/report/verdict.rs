//! The verdict the report opens with, generated from the counts (never typed): per row,
//! whether the protected resource stays safe with fencing on (which fault classes break
//! `fencing`, on how many seeds), what breaks mutual exclusion, what the lock costs, and
//! how its model is checked against the real server. A reader choosing a lock answers
//! "which lock, and what breaks it" from this table; the tables below are the evidence.

use super::evidence::bound_text;
use super::guarantees::{CellResult, Guarantees, RowInfo};
use crate::check::{COUNTER, FENCING, MUTEX};
use crate::metrics::bytes;

/// A check broken in one fault class: how often, and where its first counterexample is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Break {
    /// The fault class.
    pub column: String,
    /// Violating seeds.
    pub violations: u64,
    /// Seeds run.
    pub seeds: u64,
    /// Where the first counterexample's timeline is, relative to the output folder.
    pub anchor: Option<String>,
}

impl Break {
    /// `pause 200/200`.
    pub(crate) fn text(&self) -> String {
        format!("{} {}/{}", self.column, self.violations, self.seeds)
    }
}

/// Whether the protected resource stayed safe.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resource {
    /// With fencing on, `fencing` held in every fault class on every seed.
    SafeWithFencing,
    /// With fencing on, `fencing` broke in these fault classes.
    FencingBreaks(Vec<Break>),
    /// The lock has no token (no fencing-on cells): `counter` with fencing off broke
    /// in these classes (none: it held).
    NoToken(Vec<Break>),
}

/// What a row costs, from its no-fault cell (fencing off).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowCost {
    /// TCP data bytes the hosts sent each other per grant.
    pub bytes_per_grant: Option<f64>,
    /// Share of the run with a client waiting and nobody holding, without faults.
    pub unavailable: f64,
    /// The fault class with the highest such share, and that share.
    pub worst_unavailable: Option<(String, f64)>,
    /// Acquire latency (invoke to grant), every grant: p50 and p99, ms.
    pub p50_ms: Option<f64>,
    /// See `p50_ms`.
    pub p99_ms: Option<f64>,
}

/// One row's verdict.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RowVerdict {
    /// The row's name.
    pub row: String,
    /// With fencing on (or, without a token, off): the resource.
    pub resource: Resource,
    /// Fault classes breaking mutual exclusion (fencing off: fencing changes what the
    /// storage accepts, not who holds the lock).
    pub mutex: Vec<Break>,
    /// Its cost.
    pub cost: Option<RowCost>,
    /// How its model is checked against the real server.
    pub fidelity: Option<String>,
}

/// The fault classes (not the re-entry columns, which measure the client, not faults).
fn fault_columns(g: &Guarantees) -> impl Iterator<Item = &super::guarantees::ColumnInfo> {
    g.columns.iter().filter(|c| !c.reentrant)
}

/// The breaks of `check` in a row's cells with `fencing`, one per fault class.
fn breaks(g: &Guarantees, row: &str, fencing: bool, check: &str) -> Vec<Break> {
    fault_columns(g)
        .filter_map(|col| {
            let cell = g.cell(row, &col.name, fencing)?;
            let c = cell.checks.get(check).filter(|c| c.violations > 0)?;
            Some(Break {
                column: col.name.clone(),
                violations: c.violations,
                seeds: cell.seeds,
                anchor: c.timeline.clone(),
            })
        })
        .collect()
}

/// Whether the row ran with fencing on anywhere.
fn has_fenced_cells(g: &Guarantees, row: &str) -> bool {
    g.cells.iter().any(|c| c.row == row && c.fencing)
}

/// The no-fault (first fault class) cell costs are read from: fencing off when run.
fn base_cell<'g>(g: &'g Guarantees, row: &str) -> Option<&'g CellResult> {
    let base = fault_columns(g).next()?;
    g.cell(row, &base.name, false)
        .or_else(|| g.cell(row, &base.name, true))
}

fn row_cost(g: &Guarantees, row: &str) -> Option<RowCost> {
    let cell = base_cell(g, row)?;
    let worst = fault_columns(g)
        .skip(1)
        .filter_map(|col| {
            let c = g.cell(row, &col.name, cell.fencing)?;
            Some((col.name.clone(), c.cost.unavailable))
        })
        .fold(None, |best: Option<(String, f64)>, (name, v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((name, v)),
        });
    let l = &cell.cost.latency_ms.all;
    Some(RowCost {
        bytes_per_grant: cell.cost.traffic.bytes_per_grant,
        unavailable: cell.cost.unavailable,
        worst_unavailable: worst,
        p50_ms: l.p50,
        p99_ms: l.p99,
    })
}

/// Every row's verdict, in the matrix's order.
pub(crate) fn verdicts(g: &Guarantees) -> Vec<RowVerdict> {
    g.rows.iter().map(|r| verdict(g, r)).collect()
}

fn verdict(g: &Guarantees, r: &RowInfo) -> RowVerdict {
    let resource = if has_fenced_cells(g, &r.name) {
        let b = breaks(g, &r.name, true, FENCING.name);
        if b.is_empty() {
            Resource::SafeWithFencing
        } else {
            Resource::FencingBreaks(b)
        }
    } else {
        Resource::NoToken(breaks(g, &r.name, false, COUNTER.name))
    };
    let mutex_setting = g.cells.iter().any(|c| c.row == r.name && !c.fencing);
    RowVerdict {
        row: r.name.clone(),
        resource,
        mutex: breaks(g, &r.name, !mutex_setting, MUTEX.name),
        cost: row_cost(g, &r.name),
        fidelity: r.fidelity.clone(),
    }
}

/// The resource's verdict in words (Markdown inline), and whether it is safe.
pub(crate) fn resource_text(g: &Guarantees, v: &RowVerdict) -> (String, bool) {
    match &v.resource {
        Resource::SafeWithFencing => (
            format!(
                "safe: `fencing` held everywhere ({} per class)",
                bound_text(g.seeds)
            ),
            true,
        ),
        Resource::FencingBreaks(b) => (format!("breaks `fencing`: {}", list(b)), false),
        Resource::NoToken(b) if b.is_empty() => (
            "no token to fence with; `counter` held with fencing off".to_string(),
            true,
        ),
        Resource::NoToken(b) => (
            format!("no token to fence with: `counter` breaks under {}", list(b)),
            false,
        ),
    }
}

/// What breaks mutual exclusion, in words.
pub(crate) fn mutex_text(v: &RowVerdict) -> String {
    if v.mutex.is_empty() {
        "held everywhere".to_string()
    } else {
        list(&v.mutex)
    }
}

fn list(b: &[Break]) -> String {
    b.iter().map(Break::text).collect::<Vec<_>>().join(", ")
}

/// A latency as the page prints it: two significant digits at most (the figures are
/// histogram bucket tops, up to 12.5 % above the true percentile), in ms or s.
pub(crate) fn approx_ms(v: Option<f64>) -> String {
    let Some(v) = v else {
        return "–".into();
    };
    if v >= 1000.0 {
        format!("{:.1} s", v / 1000.0)
    } else if v >= 100.0 {
        format!("{} ms", ((v / 10.0).round() * 10.0) as u64)
    } else if v >= 10.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.1} ms")
    }
}

/// A share as a whole percentage (`40 %`; under one: `0.4 %`).
pub(crate) fn share(f: f64) -> String {
    let p = f * 100.0;
    if p >= 1.0 || p == 0.0 {
        format!("{p:.0} %")
    } else {
        format!("{p:.1} %")
    }
}

/// The cost columns' texts: sent per grant, unavailable, acquire p50 · p99.
pub(crate) fn cost_texts(v: &RowVerdict) -> [String; 3] {
    let Some(c) = &v.cost else {
        return ["–".into(), "–".into(), "–".into()];
    };
    let unavailable = match &c.worst_unavailable {
        Some((col, w)) => format!("{} · {} ({col})", share(c.unavailable), share(*w)),
        None => share(c.unavailable),
    };
    [
        c.bytes_per_grant.map_or("–".into(), bytes),
        unavailable,
        format!("{} · {}", approx_ms(c.p50_ms), approx_ms(c.p99_ms)),
    ]
}

/// The header of the verdict table (Markdown inline).
pub(crate) const HEADER: [&str; 7] = [
    "lock",
    "the protected resource, fencing on",
    "mutual exclusion breaks under",
    "sent per grant",
    "unavailable: no faults · worst",
    "acquire p50 · p99",
    "model checked against the real server by",
];

/// The fidelity tests a row's model caveat names (`tests/fidelity/redis.rs` ->
/// `redis.rs`), in order, each once; empty when the matrix says nothing.
pub(crate) fn fidelity_tests(v: &RowVerdict) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for word in v.fidelity.as_deref().unwrap_or_default().split_whitespace() {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '_' && c != '.');
        if let Some(name) = word.rsplit('/').next().filter(|n| n.ends_with(".rs")) {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// What the cost columns mean (Markdown inline), printed under the table.
pub(crate) const COST_DEFINITIONS: &str = "Costs are from each lock's no-fault cell, fencing off, in simulated time. \
*Sent per grant*: TCP data bytes all hosts sent each other (requests, replies, refused retries, replication, heartbeats) divided by grants. \
*Unavailable*: the share of the run in which a client waited for the lock and nobody held it; with no faults and three clients contending all run, that is the hand-off gap between one holder's release and the next grant, not an outage; *worst* is the fault class where it was highest. \
*Acquire p50 · p99*: invoke to grant over every grant, waiting for the holder included; the figures are tops of histogram buckets, so each is up to 12.5 % above the true percentile and is printed to two digits.";

/// The sentence above the table: which locks keep the resource safe, which do not.
pub(crate) fn summary(g: &Guarantees, vs: &[RowVerdict]) -> String {
    let safe: Vec<&str> = vs
        .iter()
        .filter(|v| v.resource == Resource::SafeWithFencing)
        .map(|v| v.row.as_str())
        .collect();
    let broken: Vec<String> = vs
        .iter()
        .filter_map(|v| match &v.resource {
            Resource::FencingBreaks(b) => Some(format!("{} ({})", v.row, list(b))),
            _ => None,
        })
        .collect();
    let no_token: Vec<&str> = vs
        .iter()
        .filter(|v| matches!(v.resource, Resource::NoToken(_)))
        .map(|v| v.row.as_str())
        .collect();
    let mut parts = Vec::new();
    if !safe.is_empty() {
        parts.push(format!(
            "With fencing on, the protected resource stayed safe on all {} seeds of every fault class for {}",
            g.seeds,
            safe.join(", ")
        ));
    }
    if !broken.is_empty() {
        parts.push(format!(
            "With fencing on, `fencing` still broke for {}",
            broken.join("; ")
        ));
    }
    if !no_token.is_empty() {
        parts.push(format!(
            "No token for {}: nothing protects the resource once mutual exclusion breaks",
            no_token.join(", ")
        ));
    }
    let mut s = parts.join(". ");
    if !s.is_empty() {
        s.push('.');
    }
    s
}

/// Each algorithm's model caveat, once, in the order the rows first name it.
pub(crate) fn models(g: &Guarantees) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = Vec::new();
    for r in &g.rows {
        if let Some(f) = &r.fidelity {
            if !v.iter().any(|(a, _)| *a == r.algorithm) {
                v.push((r.algorithm.clone(), f.clone()));
            }
        }
    }
    v
}

/// The caveats every reader needs beside the numbers (Markdown inline).
pub(crate) fn caveats(g: &Guarantees) -> Vec<String> {
    let window = match g.fault_window_ms {
        Some(w) => format!(
            "faults strike in the first {} s of each {} s run, then stop so the liveness check can see the lock recover",
            w as f64 / 1e3,
            g.duration_ms as f64 / 1e3
        ),
        None => format!("each seed is one {} s run", g.duration_ms as f64 / 1e3),
    };
    vec![
        "These are locksim's models of the servers and client libraries, not the servers: the last column says which fidelity test compares each model with the real server, and what it does not compare.".to_string(),
        format!(
            "A count such as 57/200 is the share of seeds (runs) that broke at the matrix's fault rate: {window}. It is not a rate per hour of production."
        ),
        "`✓ 0/200` means no seed broke, not that none can: the bound beside it is the 95 % upper limit on the rate per run.".to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::{approx_ms, share};

    #[test]
    fn figures_are_printed_to_two_digits() {
        assert_eq!(approx_ms(Some(4.23)), "4.2 ms");
        assert_eq!(approx_ms(Some(37.4)), "37 ms");
        assert_eq!(approx_ms(Some(374.0)), "370 ms");
        assert_eq!(approx_ms(Some(1234.0)), "1.2 s");
        assert_eq!(approx_ms(None), "–");
        assert_eq!(share(0.408), "41 %");
        assert_eq!(share(0.004), "0.4 %");
        assert_eq!(share(0.0), "0 %");
    }
}
