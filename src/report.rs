//! What locksim reports beyond one run's table: counterexample stories (text) and
//! timelines (SVG), and the guarantees matrix that compares algorithms — defined in a
//! file, its cells' seeds run on one machine or sharded over many ([`partial`]), written
//! as Markdown, JSON and one self-contained HTML page (with a page of timelines per cell
//! that has counterexamples); cells an earlier report already
//! counted may be taken from it ([`reuse`]) instead of run again.

mod choosing;
mod error;
mod evidence;
mod findings;
mod guarantees;
mod html;
mod markdown;
mod matrix;
mod pages;
pub(crate) mod partial;
mod reuse;
mod story;
mod tables;
mod timeline;
mod verdict;

pub(crate) use error::ReportError;
pub(crate) use guarantees::{build, Guarantees, Reused};
pub(crate) use html::html;
pub(crate) use markdown::markdown;
pub(crate) use matrix::Matrix;
pub(crate) use partial::{compute, merge, read_partials, ComputeSpec, Partial};
pub(crate) use reuse::reused_cells;
pub(crate) use story::ms;
pub(crate) use story::{error_replies, explain};
pub(crate) use timeline::{first_violated, timeline_svg};

use std::path::Path;

/// The build a report comes from: `locksim <version> (<commit> <commit date>)`, the
/// commit stamped by `build.rs` ("unknown" outside a git checkout).
pub(crate) fn source_stamp() -> String {
    format!(
        "locksim {} ({})",
        env!("CARGO_PKG_VERSION"),
        env!("LOCKSIM_SOURCE")
    )
}

/// Write `guarantees.md`, `guarantees.json`, `index.html` and the timeline pages
/// (`timelines/<cell>.html`, replacing any the folder held) into `out`.
pub(crate) fn write_reports(g: &Guarantees, out: &Path) -> Result<(), ReportError> {
    let write = |name: &str, text: String| {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| ReportError::Write(p, e))
    };
    write("guarantees.md", markdown(g))?;
    let json = serde_json::to_string_pretty(g).map_err(ReportError::Encode)?;
    write("guarantees.json", json + "\n")?;
    write("index.html", html(g))?;
    let folder = out.join("timelines");
    // Pages of cells that no longer have a counterexample must not linger.
    if let Ok(old) = std::fs::read_dir(&folder) {
        for f in old.flatten() {
            if f.path().extension().is_some_and(|x| x == "html") {
                std::fs::remove_file(f.path()).map_err(|e| ReportError::Write(f.path(), e))?;
            }
        }
    }
    std::fs::create_dir_all(&folder).map_err(|e| ReportError::Create(folder.clone(), e))?;
    for (page, text) in pages::timeline_pages(g) {
        write(&page, text)?;
    }
    Ok(())
}
