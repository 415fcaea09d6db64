//! The guarantees matrix's definition, read from a file (`reports/matrix.toml`): which
//! algorithm variants (rows), which fault classes (columns), with fencing on and off,
//! how many seeds per cell. Each cell is an ordinary scenario, written to
//! `cells/<row>--<column>--<fenced|unfenced>.toml` so any cell can be replayed.
//!
//! ```toml
//! seeds = 30                      # per cell (`locksim report --seeds N` overrides)
//! duration_ms = 8000
//! fencing = [false, true]
//! [workload]                      # every cell's [workload] (fencing is set per cell)
//! clients = 3
//!
//! [[row]]
//! name = "redis"                  # the row's label and file-name stem
//! algorithm = "redis"
//! lock = { ttl_ms = 1000, token = "incr" }
//! why = "One Redis node: ..."     # shown in the report
//! fencing = [false]               # this row's settings (default: the matrix's)
//! formerly = ["redis-old"]        # earlier names, whose anchors still lead here
//!
//! [fidelity]                      # per algorithm: how its model is checked
//! redis = "tests/fidelity/redis.rs against redis-server"
//!
//! [[column]]
//! name = "pause"
//! faults = { pause = { nodes = "clients", duration_ms = [500, 3000] } }
//!
//! [[column]]
//! name = "reentrant"              # a column may set workload keys instead of faults
//! workload = { reentrant = true }
//! ```

use super::error::ReportError;
use crate::locks::Family;
use crate::scenario::Scenario;
use serde::Deserialize;
use std::path::Path;

/// One row: an algorithm with parameters.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Row {
    /// Label and file-name stem (letters, digits, `-`).
    pub name: String,
    /// The scenario's `algorithm`.
    pub algorithm: String,
    /// The scenario's `[lock]` table.
    #[serde(default)]
    pub lock: toml::Table,
    /// Why it holds or breaks, for the reader.
    #[serde(default)]
    pub why: String,
    /// Extra `[workload]` keys for this row.
    #[serde(default)]
    pub workload: toml::Table,
    /// The fencing settings this row runs with (default: the matrix's). A lock without
    /// a token has nothing to fence with, so a "fencing on" row would only repeat the
    /// "off" one.
    pub fencing: Option<Vec<bool>>,
    /// Names the row had before (links and anchors made with them still reach it).
    #[serde(default)]
    pub formerly: Vec<String>,
}

/// One column: a fault class.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Column {
    /// Label and file-name stem.
    pub name: String,
    /// What it injects, for the reader.
    #[serde(default)]
    pub about: String,
    /// The scenario's `[faults]` table (empty: no faults).
    #[serde(default)]
    pub faults: toml::Table,
    /// `[workload]` keys this column sets on top of the matrix's and the row's (e.g.
    /// `reentrant = true`: a column that measures re-entry, not a fault).
    #[serde(default)]
    pub workload: toml::Table,
}

/// The whole matrix.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Matrix {
    /// Seeds per cell.
    #[serde(default = "default_seeds")]
    pub seeds: u64,
    /// Simulated duration of a seed, ms.
    #[serde(default = "default_duration")]
    pub duration_ms: u64,
    /// `liveness_ms` of every cell (default: the algorithm's).
    pub liveness_ms: Option<u64>,
    /// Fencing settings to run each row with.
    #[serde(default = "default_fencing")]
    pub fencing: Vec<bool>,
    /// Every cell's `[workload]` (the row's keys and `fencing` are added).
    #[serde(default)]
    pub workload: toml::Table,
    /// Every cell's `[network]`.
    #[serde(default)]
    pub network: toml::Table,
    /// The rows.
    #[serde(rename = "row")]
    pub rows: Vec<Row>,
    /// The columns.
    #[serde(rename = "column")]
    pub columns: Vec<Column>,
    /// Per algorithm: how its model is checked against the real server (the report's
    /// model caveat).
    #[serde(default)]
    pub fidelity: std::collections::BTreeMap<String, String>,
}

fn default_seeds() -> u64 {
    30
}
fn default_duration() -> u64 {
    8000
}
fn default_fencing() -> Vec<bool> {
    vec![false, true]
}

/// One cell of the matrix.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    /// Its row.
    pub row: usize,
    /// Its column.
    pub column: usize,
    /// Whether clients send fencing tokens to the storage.
    pub fencing: bool,
}

impl Cell {
    /// `<row>--<column>--<fenced|unfenced>`: the cell's scenario name and file stem.
    pub(crate) fn stem(&self, m: &Matrix) -> String {
        format!(
            "{}--{}--{}",
            m.rows[self.row].name,
            m.columns[self.column].name,
            if self.fencing { "fenced" } else { "unfenced" }
        )
    }
}

impl Matrix {
    /// Read and check a matrix file; errors name the file and what is wrong.
    pub(crate) fn load(path: &Path) -> Result<Matrix, ReportError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ReportError::ReadFile(path.to_path_buf(), e))?;
        Matrix::parse(&text, path)
    }

    /// Parse and check a matrix file's text (`path` names it in errors).
    pub(crate) fn parse(text: &str, path: &Path) -> Result<Matrix, ReportError> {
        let m: Matrix = toml::from_str(text).map_err(|e| ReportError::MatrixToml {
            path: path.to_path_buf(),
            line: e.span().map(|s| text[..s.start].lines().count().max(1)),
            message: e.message().to_string(),
        })?;
        let slug =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        for name in m
            .rows
            .iter()
            .map(|r| &r.name)
            .chain(m.columns.iter().map(|c| &c.name))
        {
            if !slug(name) {
                return Err(ReportError::BadName(path.to_path_buf(), name.clone()));
            }
        }
        let no_fencing = |r: &Row| r.fencing.as_ref().is_some_and(|f| f.is_empty());
        if m.rows.is_empty()
            || m.columns.is_empty()
            || m.fencing.is_empty()
            || m.rows.iter().any(no_fencing)
        {
            return Err(ReportError::EmptyMatrix(path.to_path_buf()));
        }
        Ok(m)
    }

    /// Every cell: row by row, fencing settings, then columns.
    pub(crate) fn cells(&self) -> Vec<Cell> {
        let mut v = Vec::new();
        for (row, r) in self.rows.iter().enumerate() {
            for &fencing in r.fencing.as_ref().unwrap_or(&self.fencing) {
                for column in 0..self.columns.len() {
                    v.push(Cell {
                        row,
                        column,
                        fencing,
                    });
                }
            }
        }
        v
    }

    /// Write every cell's scenario to `<out>/cells/<stem>.toml` and load it back (its
    /// algorithm one of `families`): the cells in order, as (stem, scenario).
    pub(crate) fn write_cells(
        &self,
        out: &Path,
        families: &[Family],
    ) -> Result<Vec<(String, Scenario)>, ReportError> {
        let dir = out.join("cells");
        std::fs::create_dir_all(&dir).map_err(|e| ReportError::Create(dir.clone(), e))?;
        self.cells()
            .iter()
            .map(|cell| {
                let stem = cell.stem(self);
                let file = dir.join(format!("{stem}.toml"));
                let text = self.scenario_text(cell);
                std::fs::write(&file, &text).map_err(|e| ReportError::Write(file.clone(), e))?;
                let scenario = Scenario::parse_with(&file, &text, families)
                    .map_err(|e| ReportError::Cell(Box::new(e)))?;
                Ok((stem, scenario))
            })
            .collect()
    }

    /// The scenario of `cell`, parsed from its text without writing it (errors name it
    /// as `cells/<stem>.toml`).
    pub(crate) fn cell_scenario(
        &self,
        cell: &Cell,
        families: &[Family],
    ) -> Result<Scenario, ReportError> {
        let file = Path::new("cells").join(format!("{}.toml", cell.stem(self)));
        Scenario::parse_with(&file, &self.scenario_text(cell), families)
            .map_err(|e| ReportError::Cell(Box::new(e)))
    }

    /// The scenario text of `cell`.
    pub(crate) fn scenario_text(&self, cell: &Cell) -> String {
        let (row, column) = (&self.rows[cell.row], &self.columns[cell.column]);
        let mut t = toml::Table::new();
        t.insert("name".into(), cell.stem(self).into());
        t.insert(
            "description".into(),
            format!(
                "Guarantees matrix cell: {} under {} faults, fencing {}",
                row.name,
                column.name,
                if cell.fencing { "on" } else { "off" }
            )
            .into(),
        );
        t.insert("algorithm".into(), row.algorithm.clone().into());
        t.insert("duration_ms".into(), (self.duration_ms as i64).into());
        if let Some(l) = self.liveness_ms {
            t.insert("liveness_ms".into(), (l as i64).into());
        }
        t.insert("lock".into(), toml::Value::Table(row.lock.clone()));
        let mut w = self.workload.clone();
        w.extend(row.workload.clone());
        w.extend(column.workload.clone());
        w.insert("fencing".into(), cell.fencing.into());
        t.insert("workload".into(), toml::Value::Table(w));
        if !self.network.is_empty() {
            t.insert("network".into(), toml::Value::Table(self.network.clone()));
        }
        if !column.faults.is_empty() {
            t.insert("faults".into(), toml::Value::Table(column.faults.clone()));
        }
        toml::to_string(&t).expect("a table serialises")
    }
}
