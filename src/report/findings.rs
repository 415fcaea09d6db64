//! Sentences generated from the numbers, so that the report's words can never disagree
//! with its cells: what each row was measured to break, and where.

use super::evidence::bound_text;
use super::guarantees::Guarantees;

/// "Measured on 200 seeds per cell: broke `mutex` (fencing off: pause 200/200, clock
/// 7/200; on: pause 200/200) … Held everywhere else (each ≤ 1.5%)." for one row.
pub(crate) fn measured(g: &Guarantees, row: &str) -> String {
    let mut broke = Vec::new();
    let mut undecided = Vec::new();
    for check in g.check_names() {
        let per_setting = |pick: &dyn Fn(u64, u64) -> u64| -> Vec<String> {
            g.fencing_settings()
                .into_iter()
                .filter_map(|fencing| {
                    let hits: Vec<String> = g
                        .columns
                        .iter()
                        .filter_map(|col| {
                            let cell = g.cell(row, &col.name, fencing)?;
                            let c = cell.checks.get(&check)?;
                            let k = pick(c.violations, c.unknown);
                            (k > 0).then(|| format!("{} {k}/{}", col.name, cell.seeds))
                        })
                        .collect();
                    (!hits.is_empty()).then(|| {
                        let setting = if fencing { "fencing on" } else { "fencing off" };
                        format!("{setting}: {}", hits.join(", "))
                    })
                })
                .collect()
        };
        let v = per_setting(&|violations, _| violations);
        if !v.is_empty() {
            broke.push(format!("`{check}` ({})", v.join("; ")));
        }
        let u = per_setting(&|violations, unknown| if violations == 0 { unknown } else { 0 });
        if !u.is_empty() {
            undecided.push(format!("`{check}` ({})", u.join("; ")));
        }
    }
    let mut s = format!("Measured on {} seeds per cell: ", g.seeds);
    if broke.is_empty() {
        s.push_str("no check broke in any cell");
    } else {
        s.push_str(&format!("broke {}", broke.join(", ")));
    }
    if !undecided.is_empty() {
        s.push_str(&format!(
            "; the checker's budget left undecided {}",
            undecided.join(", ")
        ));
    }
    s.push_str(&format!(
        ". Every other applicable cell held on every seed (violation rate {} at 95% confidence).",
        bound_text(g.seeds)
    ));
    s
}
