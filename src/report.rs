//! What locksim reports beyond one run's table: counterexample stories (text) and
//! timelines (SVG), and the guarantees matrix that compares algorithms — defined in a
//! file, run cell by cell, written as Markdown, JSON and one self-contained HTML page.

mod guarantees;
mod html;
mod markdown;
mod matrix;
mod story;
mod timeline;

pub use guarantees::{run_matrix, CellResult, CheckCell, ColumnInfo, Guarantees, RowInfo};
pub use html::html;
pub use markdown::{markdown, symbol};
pub use matrix::{Cell, Column, Matrix, Row};
pub use story::{describe, event_line, explain, ms, wall_clock};
pub use timeline::{first_violated, human_time, sentence, timeline_svg};

use std::path::Path;

/// Write `guarantees.md`, `guarantees.json` and `index.html` into `out`.
pub fn write_reports(g: &Guarantees, out: &Path, command: &str) -> Result<(), String> {
    let write = |name: &str, text: String| {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: cannot write: {e}", p.display()))
    };
    write("guarantees.md", markdown(g, command))?;
    let json = serde_json::to_string_pretty(g).map_err(|e| e.to_string())?;
    write("guarantees.json", json + "\n")?;
    write("index.html", html(g, command))
}
