//! Why `locksim merge` refuses its files: one unreadable or malformed, or the set not
//! every shard of one sweep, once each, complete. Every message names the files.

use crate::plural::plural;
use std::fmt;
use std::io;

/// A shard file named on the command line, and a 1-based line in it.
pub(super) type At = (String, usize);

/// What is wrong with the files given to `locksim merge`.
#[derive(Debug)]
pub(super) enum MergeError {
    /// No file was given.
    NoFile,
    /// A file (or one of its lines, when given) could not be read.
    Read(String, Option<usize>, io::Error),
    /// A line after the summary line.
    AfterSummary(At),
    /// A line that is not JSON of `locksim run --json`.
    NotALine(At, serde_json::Error),
    /// A line with neither `seed` nor `summary`.
    NeitherSeedNorSummary(At),
    /// The file ends without its summary line.
    NoSummary(String),
    /// The summary counts other seeds than the file has lines.
    SeedLines {
        file: String,
        lines: u64,
        counted: u64,
    },
    /// Two files of different scenarios: `(name, algorithm)` of each.
    Scenarios {
        first: String,
        other: String,
        scenarios: Box<[(String, String); 2]>,
    },
    /// Two files sweeping different seed ranges (`A..B` each).
    Seeds {
        first: String,
        other: String,
        a: String,
        b: String,
    },
    /// Two files of sweeps cut in a different number of shards.
    Cut {
        first: String,
        other: String,
        a: (u64, u64),
        b: (u64, u64),
    },
    /// Two files checking different things.
    Checks { first: String, other: String },
    /// Two files of the same shard.
    SameShard {
        first: String,
        other: String,
        shard: (u64, u64),
    },
    /// Shards missing: the first few, how many more, how many files were given.
    Missing {
        missing: Vec<(u64, u64)>,
        more: u64,
        given: u64,
    },
    /// A summary whose seed range or shard makes no sense.
    Nonsense {
        file: String,
        seed_range: (u64, u128),
        shard: (u64, u64),
    },
    /// A shard interrupted before its last seed.
    Interrupted {
        file: String,
        done: u64,
        count: u64,
        shard: (u64, u64),
    },
    /// A summary counting other seeds than its shard has.
    Count {
        file: String,
        seeds: u64,
        range: String,
        shard: (u64, u64),
        count: u64,
    },
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use MergeError::*;
        match self {
            NoFile => write!(f, "merge: no file given"),
            Read(file, None, e) => write!(f, "{file}: cannot read: {e}"),
            Read(file, Some(at), e) => write!(f, "{file}:{at}: cannot read: {e}"),
            AfterSummary((file, at)) => write!(
                f,
                "{file}:{at}: a line after the summary line; one file per `locksim run --json`"
            ),
            NotALine((file, at), e) => {
                write!(f, "{file}:{at}: not a line of `locksim run --json`: {e}")
            }
            NeitherSeedNorSummary((file, at)) => write!(
                f,
                "{file}:{at}: neither a seed's line nor the summary line (no `seed` or `summary` key)"
            ),
            NoSummary(file) => write!(
                f,
                "{file}: no summary line at the end: did `locksim run --json` finish writing it?"
            ),
            SeedLines {
                file,
                lines,
                counted,
            } => write!(
                f,
                "{file}: {} but its summary counts {}",
                plural(*lines, "seed line"),
                plural(*counted, "seed")
            ),
            Scenarios {
                first,
                other,
                scenarios,
            } => {
                let [a, b] = &**scenarios;
                write!(
                    f,
                    "{first} and {other} are different scenarios: `{}` ({}) and `{}` ({})",
                    a.0, a.1, b.0, b.1
                )
            }
            Seeds { first, other, a, b } => {
                write!(f, "{first} and {other} sweep different seeds: {a} and {b}")
            }
            Cut { first, other, a, b } => write!(
                f,
                "{first} is shard {}/{} but {other} is shard {}/{}: the sweep was cut differently",
                a.0, a.1, b.0, b.1
            ),
            Checks { first, other } => write!(
                f,
                "{first} and {other} check different things or expect different verdicts \
                 (was the scenario edited between the runs?)"
            ),
            SameShard {
                first,
                other,
                shard: (k, n),
            } => write!(f, "{first} and {other} are both shard {k}/{n}"),
            Missing {
                missing,
                more,
                given,
            } => {
                let shards: Vec<String> =
                    missing.iter().map(|(k, n)| format!("shard {k}/{n}")).collect();
                write!(f, "{} missing", shards.join(", "))?;
                if *more > 0 {
                    write!(f, " and {more} more")?;
                }
                write!(f, " (given: {})", plural(*given, "file"))
            }
            Nonsense {
                file,
                seed_range,
                shard,
            } => write!(
                f,
                "{file}: its summary's seed_range {seed_range:?} or shard {shard:?} makes no sense"
            ),
            Interrupted {
                file,
                done,
                count,
                shard: (k, n),
            } => write!(
                f,
                "{file}: interrupted after {done} of {} (shard {k}/{n}); run that shard again",
                plural(*count, "seed")
            ),
            Count {
                file,
                seeds,
                range,
                shard: (k, n),
                count,
            } => write!(
                f,
                "{file}: counts {} but shard {k}/{n} of {range} has {count}",
                plural(*seeds, "seed")
            ),
        }
    }
}

impl std::error::Error for MergeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MergeError::Read(_, _, e) => Some(e),
            MergeError::NotALine(_, e) => Some(e),
            _ => None,
        }
    }
}
