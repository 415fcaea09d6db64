//! Cells taken from earlier reports instead of run again (`locksim report --reuse
//! guarantees.json`): re-rendering the page, or adding a row, need not re-run the whole
//! matrix. A stored cell is reused only when it is the same experiment: the same seed
//! count and, read from the cell file beside the stored report, the same scenario (every
//! key but its name and description). A row renamed with `formerly` finds its cells under
//! the old name. Each reused cell keeps the stamp of the build that counted it, and the
//! report says which rows which build counted.

use super::error::ReportError;
use super::guarantees::{Cost, Tallies};
use super::matrix::Matrix;
use super::partial::Counts;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What this module reads of a stored `guarantees.json` (other fields are ignored).
#[derive(Deserialize)]
struct Stored {
    /// The build that counted every cell, in reports written before cells carried
    /// their own stamp.
    #[serde(default)]
    locksim: Option<String>,
    cells: Vec<StoredCell>,
}

/// A stored cell's counts.
#[derive(Deserialize)]
struct StoredCell {
    name: String,
    scenario: String,
    seeds: u64,
    checks: BTreeMap<String, Counts>,
    #[serde(default)]
    quality: BTreeMap<String, Counts>,
    cost: Cost,
    #[serde(default)]
    harness_errors: u64,
    #[serde(default)]
    first_error: Option<String>,
    #[serde(default)]
    counted_by: Option<String>,
}

/// The cells of `m` (run with `seeds` seeds) that `files` hold, by the stem they have
/// in `m`. Of two files holding a cell, the first given wins.
pub(crate) fn reused_cells(
    files: &[PathBuf],
    m: &Matrix,
    seeds: u64,
) -> Result<BTreeMap<String, Tallies>, ReportError> {
    let mut found = BTreeMap::new();
    for file in files {
        let text =
            std::fs::read_to_string(file).map_err(|e| ReportError::ReadFile(file.clone(), e))?;
        let stored: Stored =
            serde_json::from_str(&text).map_err(|e| ReportError::NotAReport(file.clone(), e))?;
        let dir = file.parent().unwrap_or(Path::new("."));
        for cell in m.cells() {
            let stem = cell.stem(m);
            if found.contains_key(&stem) {
                continue;
            }
            let row = &m.rows[cell.row];
            let names: Vec<String> = std::iter::once(row.name.as_str())
                .chain(row.formerly.iter().map(String::as_str))
                .map(|r| format!("{r}{}", &stem[row.name.len()..]))
                .collect();
            let Some(c) = stored
                .cells
                .iter()
                .find(|c| names.contains(&c.name) && c.seeds == seeds)
            else {
                continue;
            };
            let Ok(old) = std::fs::read_to_string(dir.join(&c.scenario)) else {
                continue;
            };
            if !same_experiment(&old, &m.scenario_text(&cell)) {
                continue;
            }
            let counted_by = c.counted_by.clone().or_else(|| stored.locksim.clone());
            found.insert(
                stem.clone(),
                Tallies {
                    cell: stem,
                    seeds: c.seeds,
                    checks: c.checks.clone(),
                    quality: c.quality.clone(),
                    cost: c.cost.clone(),
                    harness_errors: c.harness_errors,
                    first_error: c.first_error.clone(),
                    counted_by: counted_by.unwrap_or_else(|| "an unknown build".into()),
                },
            );
        }
    }
    Ok(found)
}

/// Whether two cell scenarios describe the same experiment: equal but for their name
/// and description (which name the row and cell).
fn same_experiment(a: &str, b: &str) -> bool {
    let parse = |t: &str| {
        t.parse::<toml::Table>().ok().map(|mut t| {
            t.remove("name");
            t.remove("description");
            t
        })
    };
    matches!((parse(a), parse(b)), (Some(x), Some(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::same_experiment;

    #[test]
    fn names_do_not_matter_parameters_do() {
        let a = "name = \"a\"\ndescription = \"x\"\nalgorithm = \"redis\"\n[lock]\nttl_ms = 1000\n";
        let b = "name = \"b\"\nalgorithm = \"redis\"\n[lock]\nttl_ms = 1000\n";
        let c = "name = \"a\"\nalgorithm = \"redis\"\n[lock]\nttl_ms = 999\n";
        assert!(same_experiment(a, b));
        assert!(!same_experiment(a, c));
        assert!(!same_experiment(a, "not toml ["));
    }
}
