//! The book's speed tables, as `locksim bench --markdown` prints them: `scripts/speed-table`
//! writes them into `docs/speed.md` between its `bench:begin` and `bench:end` lines, so the page's figures
//! come from a run of `bench`, never from typing.

use super::families::FamilyBench;
use super::matrix::MatrixBench;
use super::REPORT_JOBS;
use std::fmt::Write;

/// The family table's header row.
pub(crate) const FAMILY_HEADER: &str =
    "| family | hosts | seeds/s | simulated s per wall s | raw floor, seeds/s | overhead |";
/// The report table's header row.
pub(crate) const REPORT_HEADER: &str =
    "| matrix row | cells | s per seed | minutes on 2 threads | at the raw floor, s per seed | at the raw floor, minutes |";

/// The Markdown of the families (and the report's rows, if measured), with the
/// machine's floor in `host_ticks_per_s`.
pub(super) fn tables(
    families: &[&FamilyBench],
    report: Option<&MatrixBench>,
    host_ticks_per_s: f64,
) -> String {
    let mut s = String::new();
    let seeds = families.first().map_or(0, |f| f.seeds);
    let _ = writeln!(
        s,
        "`locksim bench`, {seeds} seeds per family on one thread (harness and floor \
         alternating per seed); this machine's raw turmoil floor: {:.0} k host-ticks/s.\n",
        host_ticks_per_s / 1e3
    );
    let _ = writeln!(s, "{FAMILY_HEADER}\n|---|---|---|---|---|---|");
    for f in families {
        let _ = writeln!(
            s,
            "| {} | {} | {:.2} | {:.1} | {:.2} | {:.2}× |",
            f.label,
            f.hosts,
            f.seeds_per_s(),
            f.sim_per_wall(),
            f.floor_seeds_per_s(),
            f.overhead()
        );
    }
    if let Some(m) = report {
        let _ = writeln!(
            s,
            "\nThe guarantees report, from seed 0 of each of its {} cells on one thread, \
             for {} seeds per cell on {REPORT_JOBS} threads:\n",
            m.cells(),
            m.seeds
        );
        let _ = writeln!(s, "{REPORT_HEADER}\n|---|---|---|---|---|---|");
        for r in &m.rows {
            let _ = writeln!(
                s,
                "| {} | {} | {:.3} | {:.1} | {:.3} | {:.1} |",
                r.name,
                r.cells,
                r.seconds_per_seed,
                r.minutes(m.seeds, REPORT_JOBS),
                r.floor_seconds_per_seed,
                r.floor_minutes(m.seeds, REPORT_JOBS)
            );
        }
        let _ = writeln!(
            s,
            "| **whole report** | {} | | **{:.0}** | | **{:.0}** |",
            m.cells(),
            m.minutes(REPORT_JOBS),
            m.floor_minutes(REPORT_JOBS)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::bench::families::FAMILIES;
    use std::path::Path;

    /// The lines `scripts/speed-table` writes the tables between.
    const BEGIN: &str = "<!-- bench:begin";
    const END: &str = "<!-- bench:end -->";

    /// The first cells of the table under `header` in `block`.
    fn first_cells<'a>(block: &'a str, header: &str) -> Vec<&'a str> {
        block
            .lines()
            .skip_while(|l| *l != header)
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                l.trim_start_matches('|')
                    .split('|')
                    .next()
                    .unwrap_or("")
                    .trim()
            })
            .collect()
    }

    /// `docs/speed.md` holds bench's tables as `scripts/speed-table` writes them: one
    /// line per family and per matrix row, in order. A family or a row added without
    /// running the script again fails here.
    #[test]
    fn the_speed_page_holds_benchs_tables_for_every_family_and_row() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let page = std::fs::read_to_string(root.join("docs/speed.md")).unwrap();
        let block = page
            .split_once(BEGIN)
            .and_then(|(_, rest)| rest.split_once(END))
            .map(|(b, _)| b)
            .expect("docs/speed.md has the bench:begin and bench:end lines");
        let labels: Vec<&str> = FAMILIES.iter().map(|(l, _)| *l).collect();
        assert_eq!(first_cells(block, FAMILY_HEADER), labels);
        let m = crate::report::Matrix::load(&root.join("reports/matrix.toml")).unwrap();
        let mut rows: Vec<&str> = m.rows.iter().map(|r| r.name.as_str()).collect();
        rows.push("**whole report**");
        assert_eq!(first_cells(block, REPORT_HEADER), rows);
    }
}
