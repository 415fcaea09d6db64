//! One error for "this key of this file is wrong": the scenario envelope, its
//! `[[faults.at]]` entries and every algorithm's `[lock]` keys report through
//! [`KeyError`]. The key is a [`KeyPath`] built from segments (a checker names its own
//! key, its caller prefixes where the table sits with [`KeyError::under`]), never a
//! string assembled by hand, so `faults.at[3].nodes` is spelt one way everywhere.

use std::fmt;

mod probe;
mod table;
pub(crate) mod toml;

pub(crate) use table::{from_table, TableError};

/// One step of a key path: a table key or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A table key, e.g. `workload`.
    Key(String),
    /// An array index, e.g. the `3` of `faults.at[3]`.
    Index(usize),
}

/// Where a key sits in its file, e.g. `faults.at[0].nodes` (empty: the file itself).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KeyPath(Vec<Segment>);

impl KeyPath {
    /// The path of one key; a dotted key (`workload.clients`) is split at its dots.
    pub fn key(key: &str) -> KeyPath {
        let mut p = KeyPath::default();
        p.push_dotted(key);
        p
    }

    fn push_dotted(&mut self, key: &str) {
        self.0
            .extend(key.split('.').map(|k| Segment::Key(k.to_string())));
    }

    /// Its segments, outermost first.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// Whether it names no key (an error about the file as a whole).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `outer`, then this path.
    fn prefixed(mut self, outer: impl IntoIterator<Item = Segment>) -> KeyPath {
        let mut v: Vec<Segment> = outer.into_iter().collect();
        v.append(&mut self.0);
        KeyPath(v)
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Segment::Key(k) if i == 0 => f.write_str(k)?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Where in the file the error points, when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// A `[[faults.at]]` entry starting on this line (the entry is checked as a whole,
    /// after parsing, so its own line is the one place known).
    Entry {
        /// 1-based line.
        line: usize,
    },
    /// The exact place toml reports.
    At {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
    },
}

/// What is wrong with the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Its value is not valid (or the message says what else).
    Invalid,
    /// It is required and absent.
    Missing,
}

/// A key of a file whose value is not accepted: which key, where, and what was expected.
///
/// Shown as ``key `faults.at[0].nodes`: MESSAGE (entry at line 7)``; without a path (toml
/// naming the key itself, e.g. "unknown field `x`") as the message and its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    path: KeyPath,
    problem: Problem,
    place: Option<Place>,
    /// What is wrong and what was expected.
    pub message: String,
}

impl KeyError {
    /// An error about `key` (relative to the table the checker sees; dots split it).
    pub fn new(key: &str, message: impl Into<String>) -> KeyError {
        KeyError::at(KeyPath::key(key), message)
    }

    /// An error about the key at `path`.
    pub fn at(path: KeyPath, message: impl Into<String>) -> KeyError {
        KeyError {
            path,
            problem: Problem::Invalid,
            place: None,
            message: message.into(),
        }
    }

    /// An error about the table the checker sees as a whole (its caller names it with
    /// [`KeyError::under`]).
    pub fn here(message: impl Into<String>) -> KeyError {
        KeyError::at(KeyPath::default(), message)
    }

    /// A required key that is absent.
    pub fn missing(key: &str, message: impl Into<String>) -> KeyError {
        KeyError {
            problem: Problem::Missing,
            ..KeyError::new(key, message)
        }
    }

    /// The same error, its key inside `table` (dots split it).
    pub fn under_key(self, table: &str) -> KeyError {
        let mut outer = KeyPath::default();
        outer.push_dotted(table);
        KeyError {
            path: self.path.prefixed(outer.0),
            ..self
        }
    }

    /// The same error, its key inside entry `index` of the array `table`
    /// (`.under("faults.at", 3)`: `faults.at[3].…`).
    pub fn under(self, table: &str, index: usize) -> KeyError {
        let mut outer = KeyPath::default();
        outer.push_dotted(table);
        outer.0.push(Segment::Index(index));
        KeyError {
            path: self.path.prefixed(outer.0),
            ..self
        }
    }

    /// The same error, pointing at `place`.
    pub fn placed(self, place: Place) -> KeyError {
        KeyError {
            place: Some(place),
            ..self
        }
    }

    /// The same error, pointing nowhere (its place was in text the user did not write).
    pub fn unplaced(self) -> KeyError {
        KeyError {
            place: None,
            ..self
        }
    }

    /// The key (empty when the message names it, or for the file as a whole).
    pub fn path(&self) -> &KeyPath {
        &self.path
    }

    /// What is wrong with the key.
    pub fn problem(&self) -> Problem {
        self.problem
    }

    /// Where in the file, when known.
    pub fn place(&self) -> Option<Place> {
        self.place
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.path.is_empty() {
            let what = match self.problem {
                Problem::Invalid => "key",
                Problem::Missing => "missing key",
            };
            write!(f, "{what} {}: ", quoted_short(&self.path.to_string()))?;
        }
        f.write_str(&self.message)?;
        match self.place {
            None => Ok(()),
            Some(Place::Entry { line }) => write!(f, " (entry at line {line})"),
            Some(Place::At { line, column }) => write!(f, " (line {line}, column {column})"),
        }
    }
}

impl std::error::Error for KeyError {}

/// Longest name a message quotes whole.
const MAX_QUOTED: usize = 64;

/// `` `name` ``, or for a name longer than a line its start and its length: a hostile
/// 5 MB key is named, not echoed.
fn quoted_short(name: &str) -> String {
    let chars = name.chars().count();
    if chars > MAX_QUOTED {
        let head: String = name.chars().take(MAX_QUOTED).collect();
        format!("`{head}…` ({chars} characters)")
    } else {
        format!("`{name}`")
    }
}

/// Cut every `quoted` name longer than a line in a message down to its start and its
/// length (as `quoted_short` does).
pub(crate) fn shorten(msg: &str) -> String {
    let parts: Vec<&str> = msg.split('`').collect();
    let mut out = String::with_capacity(msg.len().min(1024));
    for (i, part) in parts.iter().enumerate() {
        // Odd parts are quoted, when a closing backtick follows.
        let quoted = i % 2 == 1 && i + 1 < parts.len();
        if quoted {
            out.push_str(&quoted_short(part));
        } else {
            if i % 2 == 1 {
                out.push('`');
            }
            out.push_str(part);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_built_from_segments_and_prefixed() {
        let e = KeyError::new("nodes", "expected at least one node name").under("faults.at", 3);
        assert_eq!(
            e.path().segments(),
            [
                Segment::Key("faults".into()),
                Segment::Key("at".into()),
                Segment::Index(3),
                Segment::Key("nodes".into())
            ]
        );
        assert_eq!(e.path().to_string(), "faults.at[3].nodes");
        let e = e.placed(Place::Entry { line: 7 });
        assert_eq!(
            e.to_string(),
            "key `faults.at[3].nodes`: expected at least one node name (entry at line 7)"
        );
        let e = KeyError::here("whole").under("faults.at", 0);
        assert_eq!(e.path().to_string(), "faults.at[0]");
        let e = KeyError::new("ttl_ms", "m").under_key("lock");
        assert_eq!(e.to_string(), "key `lock.ttl_ms`: m");
        let e = KeyError::missing("algorithm", "expected one of x");
        assert_eq!(e.problem(), Problem::Missing);
        assert_eq!(e.to_string(), "missing key `algorithm`: expected one of x");
    }

    #[test]
    fn long_names_are_named_not_echoed() {
        assert_eq!(
            shorten("unknown field `a`, expected `b`"),
            "unknown field `a`, expected `b`"
        );
        let long = shorten(&format!("unknown field `{}` here", "x".repeat(5000)));
        assert!(
            long.len() < 200 && long.contains("(5000 characters) here"),
            "{long}"
        );
        assert_eq!(shorten("odd ` count"), "odd ` count");
        let e = KeyError::new(&"k".repeat(100), "m");
        assert!(e.to_string().contains("(100 characters): m"), "{e}");
    }
}
