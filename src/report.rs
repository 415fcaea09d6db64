//! What locksim reports beyond one run's table: counterexample stories (text) and
//! timelines (SVG), and the guarantees matrix that compares algorithms — defined in a
//! file, its cells' seeds run on one machine or sharded over many ([`partial`]), written
//! as Markdown, JSON and one self-contained HTML page.

mod choosing;
mod error;
mod evidence;
mod findings;
mod guarantees;
mod html;
mod markdown;
mod matrix;
pub mod partial;
mod story;
mod timeline;

pub use error::{Difference, ReportError};
pub use evidence::{bound_text, percent, upper_bound_95};
pub use guarantees::{
    anchor, build, CellResult, CheckCell, CheckInfo, ColumnInfo, Guarantees, RowInfo, Timeline,
};
pub use html::html;
pub use markdown::{cell_symbol, markdown};
pub use matrix::{Cell, Column, Matrix, Row};
pub use partial::{compute, merge, read_partials, ComputeSpec, Partial};
pub use story::{describe, error_replies, event_line, explain, ms, wall_clock};
pub use timeline::{first_violated, human_time, sentence, timeline_svg};

use std::path::Path;

/// The build a report comes from: `locksim <version> (<commit> <commit date>)`, the
/// commit stamped by `build.rs` ("unknown" outside a git checkout).
pub fn source_stamp() -> String {
    format!(
        "locksim {} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("LOCKSIM_SOURCE")
    )
}

/// Write `guarantees.md`, `guarantees.json` and `index.html` into `out`.
pub fn write_reports(g: &Guarantees, out: &Path) -> Result<(), ReportError> {
    let write = |name: &str, text: String| {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| ReportError::Write(p, e))
    };
    write("guarantees.md", markdown(g))?;
    let json = serde_json::to_string_pretty(g).map_err(ReportError::Encode)?;
    write("guarantees.json", json + "\n")?;
    write("index.html", html(g))
}
