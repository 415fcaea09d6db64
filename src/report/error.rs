//! What can go wrong making a report: files that cannot be read or written, a matrix or
//! a partial file that says something impossible, shards that do not belong together.
//! Every message names the file it is about.

use crate::scenario::ScenarioError;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why a report, a shard of it or a merge could not be made.
#[derive(Debug)]
pub(crate) enum ReportError {
    /// A file could not be read.
    ReadFile(PathBuf, io::Error),
    /// A folder of partial files could not be listed.
    ReadFolder(PathBuf, io::Error),
    /// A folder could not be created.
    Create(PathBuf, io::Error),
    /// A file could not be written.
    Write(PathBuf, io::Error),
    /// A result could not be encoded as JSON.
    Encode(serde_json::Error),
    /// The matrix file is not valid TOML for a matrix.
    MatrixToml {
        /// The matrix file.
        path: PathBuf,
        /// The 1-based line TOML points at, when it does.
        line: Option<usize>,
        /// TOML's message.
        message: String,
    },
    /// A row or column name that cannot name files.
    BadName(PathBuf, String),
    /// A matrix without a row, a column or a fencing setting.
    EmptyMatrix(PathBuf),
    /// A cell's scenario (generated from the matrix) does not load.
    Cell(Box<ScenarioError>),
    /// A folder with no partial file in it.
    NoPartials(PathBuf),
    /// A file that is not a partial report.
    NotAPartial(PathBuf, serde_json::Error),
    /// A partial report of another format.
    Format {
        /// The file.
        path: PathBuf,
        /// Its format.
        found: String,
        /// The format this build reads.
        expected: &'static str,
    },
    /// Nothing was given to merge.
    NothingToMerge,
    /// Two shards of different runs.
    Differ {
        /// The first shard's file.
        first: PathBuf,
        /// The other shard's file.
        other: PathBuf,
        /// What differs.
        what: Difference,
    },
    /// Two files are the same shard.
    SameShard {
        /// The file seen first.
        first: PathBuf,
        /// The other.
        other: PathBuf,
        /// Which shard, of how many.
        shard: (u64, u64),
    },
    /// A shard is missing.
    MissingShard {
        /// Which shard, of how many.
        shard: (u64, u64),
        /// Shards given.
        have: usize,
    },
    /// A shard's cells or checks differ from the others'.
    CellsDiffer(PathBuf),
    /// The counts name other cells than the matrix stored with them.
    CellCount {
        /// Cells in the counts.
        counts: usize,
        /// Cells the matrix defines.
        matrix: usize,
    },
    /// Counts of a cell the matrix does not have.
    UnknownCell(String),
    /// A file given to `--reuse` that is not a `guarantees.json`.
    NotAReport(PathBuf, serde_json::Error),
}

/// What differs between two shards that should be of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Difference {
    /// Built from different sources (their stamps).
    Builds(String, String),
    /// Different matrix files.
    Matrix,
    /// Different seed counts.
    Seeds(u64, u64),
    /// Cut differently: shard `k` of `of` against shards of `n`.
    Sharding {
        /// The shard's index.
        k: u64,
        /// Its shard count.
        of: u64,
        /// The first shard's count.
        n: u64,
    },
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Difference::Builds(a, b) => write!(f, "locksim builds ({a} vs {b})"),
            Difference::Matrix => write!(f, "matrix files"),
            Difference::Seeds(a, b) => write!(f, "seed counts ({a} vs {b})"),
            Difference::Sharding { k, of, n } => write!(f, "shardings ({k}/{of} vs ?/{n})"),
        }
    }
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ReportError::*;
        match self {
            ReadFile(p, e) => write!(f, "{}: cannot read file: {e}", p.display()),
            ReadFolder(p, e) => write!(f, "{}: cannot read folder: {e}", p.display()),
            Create(p, e) => write!(f, "{}: cannot create: {e}", p.display()),
            Write(p, e) => write!(f, "{}: cannot write: {e}", p.display()),
            Encode(e) => write!(f, "{e}"),
            MatrixToml {
                path,
                line,
                message,
            } => {
                write!(f, "{}", path.display())?;
                if let Some(line) = line {
                    write!(f, ":{line}")?;
                }
                write!(f, ": {message}")
            }
            BadName(p, name) => write!(
                f,
                "{}: name `{name}`: expected letters, digits and `-` (it names files)",
                p.display()
            ),
            EmptyMatrix(p) => write!(
                f,
                "{}: expected at least one row, one column and one fencing setting",
                p.display()
            ),
            Cell(e) => write!(f, "{e}"),
            NoPartials(p) => write!(
                f,
                "{}: no partial-K-of-N.json in this folder (written by `locksim report --shard K/N`)",
                p.display()
            ),
            NotAPartial(p, e) => write!(
                f,
                "{}:{}: expected a partial report (written by `locksim report --shard K/N`): {e}",
                p.display(),
                e.line()
            ),
            Format {
                path,
                found,
                expected,
            } => write!(
                f,
                "{}: format `{found}`, expected `{expected}`",
                path.display()
            ),
            NothingToMerge => write!(f, "nothing to merge"),
            Differ { first, other, what } => write!(
                f,
                "{} and {}: different {what}; shards merge only with shards of the same run",
                first.display(),
                other.display()
            ),
            SameShard {
                first,
                other,
                shard: (k, n),
            } => write!(
                f,
                "{} and {} are both shard {k}/{n}",
                first.display(),
                other.display()
            ),
            MissingShard { shard: (k, n), have } => {
                write!(f, "shard {k}/{n} is missing (have {have} of {n})")
            }
            CellsDiffer(p) => write!(
                f,
                "{}: its cells or checks differ from the other shards' (a damaged file?)",
                p.display()
            ),
            CellCount { counts, matrix } => write!(
                f,
                "the counts name {counts} cells, the matrix in them defines {matrix}: not the same cells (a damaged partial file?)"
            ),
            UnknownCell(cell) => write!(f, "cell `{cell}` is not in the matrix"),
            NotAReport(p, e) => write!(
                f,
                "{}:{}: expected a guarantees.json written by `locksim report`: {e}",
                p.display(),
                e.line()
            ),
        }
    }
}

impl std::error::Error for ReportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        use ReportError::*;
        match self {
            ReadFile(_, e) | ReadFolder(_, e) | Create(_, e) | Write(_, e) => Some(e),
            Encode(e) | NotAPartial(_, e) | NotAReport(_, e) => Some(e),
            Cell(e) => Some(&**e),
            _ => None,
        }
    }
}
