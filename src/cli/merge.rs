//! `locksim merge`: the summary of a sweep run in shards (`run --shard K/N --json FILE`
//! on many machines), from their JSON files: the summary one run over the whole range
//! gives, once every shard is there exactly once and none was interrupted.

use super::merge_error::MergeError;
use super::run::{open_json, report, write_summary_line, Examples, FirstViolation};
use super::EXIT_BAD_INPUT;
use crate::check::{CheckKind, Verdict};
use crate::plural::plural;
use crate::sweep::{SeedSet, Summary, MAX_ERRORS_LISTED};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// Merge the `run --json` outputs in `files` into one summary; print it as `run` does
/// (and as a JSON line to `json`, `-` for stdout). Exit code: 0 when every expectation
/// is met, 1 when not, 2 on bad input (an unreadable or malformed file, or files that are
/// not every shard of one sweep, once each, complete). `program`: the binary's name, for
/// the replay hint.
pub fn merge_command(files: &[&Path], json: Option<&str>, program: &str) -> u8 {
    let mut shards = Vec::with_capacity(files.len());
    for file in files {
        match read_shard(file) {
            Ok(shard) => shards.push(shard),
            Err(e) => {
                eprintln!("locksim: {e}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    if let Err(e) = check_complete(&mut shards) {
        eprintln!("locksim: {e}");
        return EXIT_BAD_INPUT;
    }
    let summaries: Vec<Summary> = shards.iter().map(|s| s.summary.clone()).collect();
    let Some(merged) = Summary::combine(&summaries) else {
        eprintln!("locksim: merge: no file given");
        return EXIT_BAD_INPUT;
    };
    if let Some(mut out) = match open_json(json) {
        Ok(out) => out,
        Err(code) => return code,
    } {
        if let Err(e) = write_summary_line(&mut *out, &merged) {
            eprintln!("locksim: writing JSON: {e}");
            return EXIT_BAD_INPUT;
        }
    }
    let text = report(
        &merged,
        &examples(&shards),
        &format!("from {}", plural(shards.len() as u64, "shard")),
        false,
        program,
    );
    // As `run`: human text to stderr when the JSON goes to stdout.
    if json == Some("-") {
        eprint!("{text}");
    } else {
        print!("{text}");
    }
    if merged.expect_met {
        0
    } else {
        1
    }
}

/// One shard's file, read.
#[derive(Debug)]
struct Shard {
    /// The file, as named on the command line.
    file: String,
    /// Its summary line.
    summary: Summary,
    /// Its first violating seed (the file's seeds are in order).
    first_violation: Option<FirstViolation>,
    /// Its first harness errors: (seed, message).
    errors: Vec<(u64, String)>,
}

/// One line of `run --json`: a seed's outcome or the summary. Only what merging uses is
/// read; other keys are ignored.
#[derive(Deserialize)]
struct Line {
    summary: Option<Summary>,
    seed: Option<u64>,
    #[serde(default)]
    checks: Vec<CheckLine>,
    error: Option<String>,
}

/// A check's verdict on one seed, as a seed's line gives it.
#[derive(Deserialize)]
struct CheckLine {
    name: String,
    /// Written for quality checks only; absent: safety or liveness (both count).
    #[serde(default)]
    kind: CheckKind,
    verdict: Verdict,
    #[serde(default)]
    violations: Vec<ViolationLine>,
}

/// A counterexample, as a seed's line gives it.
#[derive(Deserialize)]
struct ViolationLine {
    message: String,
}

/// Read one `run --json` file: its seed lines (for the report's examples), then its
/// summary, which must be the last line and count as many seeds as there are lines.
fn read_shard(path: &Path) -> Result<Shard, MergeError> {
    let file = path.display().to_string();
    let reader = std::fs::File::open(path)
        .map(std::io::BufReader::new)
        .map_err(|e| MergeError::Read(file.clone(), None, e))?;
    let (mut summary, mut seed_lines) = (None, 0u64);
    let (mut first_violation, mut errors) = (None, Vec::new());
    for (i, line) in reader.lines().enumerate() {
        let at = i + 1;
        let line = line.map_err(|e| MergeError::Read(file.clone(), Some(at), e))?;
        if line.trim().is_empty() {
            continue;
        }
        if summary.is_some() {
            return Err(MergeError::AfterSummary((file, at)));
        }
        let line: Line =
            serde_json::from_str(&line).map_err(|e| MergeError::NotALine((file.clone(), at), e))?;
        match (line.summary, line.seed) {
            (Some(s), _) => summary = Some(s),
            (None, Some(seed)) => {
                seed_lines += 1;
                if first_violation.is_none() {
                    first_violation = violation_of(seed, &line.checks);
                }
                if let (Some(e), true) = (line.error, errors.len() < MAX_ERRORS_LISTED) {
                    errors.push((seed, e));
                }
            }
            (None, None) => return Err(MergeError::NeitherSeedNorSummary((file, at))),
        }
    }
    let summary = summary.ok_or_else(|| MergeError::NoSummary(file.clone()))?;
    if summary.seeds != seed_lines {
        return Err(MergeError::SeedLines {
            file,
            lines: seed_lines,
            counted: summary.seeds,
        });
    }
    Ok(Shard {
        file,
        summary,
        first_violation,
        errors,
    })
}

/// The seed's violation, if it violated some check.
fn violation_of(seed: u64, checks: &[CheckLine]) -> Option<FirstViolation> {
    let counted = checks.iter().filter(|c| c.kind.counts_as_violation());
    let verdicts = counted.map(|c| {
        let message = c.violations.first().map(|v| v.message.as_str());
        (c.name.as_str(), c.verdict, message)
    });
    let first = FirstViolation::new(seed, verdicts);
    (!first.checks.is_empty()).then_some(first)
}

/// Check that `shards` are every shard of one sweep, once each, none interrupted, and
/// sort them by shard. Err: what is wrong, naming the files.
fn check_complete(shards: &mut [Shard]) -> Result<(), MergeError> {
    let Some(first) = shards.first() else {
        return Err(MergeError::NoFile);
    };
    let (file, s) = (&first.file, &first.summary);
    let n = s.shard.1;
    let mut seen: BTreeMap<u64, &str> = BTreeMap::new();
    for shard in shards.iter() {
        let (other, t) = (&shard.file, &shard.summary);
        let set = check_counts(other, t)?;
        let (first, other) = (file.clone(), other.clone());
        if t.scenario != s.scenario || t.algorithm != s.algorithm {
            return Err(MergeError::Scenarios {
                first,
                other,
                scenarios: Box::new([
                    (s.scenario.clone(), s.algorithm.clone()),
                    (t.scenario.clone(), t.algorithm.clone()),
                ]),
            });
        }
        if t.seed_range != s.seed_range {
            return Err(MergeError::Seeds {
                first,
                other,
                a: range_words(s),
                b: range_words(t),
            });
        }
        if t.shard.1 != n {
            return Err(MergeError::Cut {
                first,
                other,
                a: (s.shard.0, n),
                b: t.shard,
            });
        }
        if !same_checks(s, t) {
            return Err(MergeError::Checks { first, other });
        }
        if let Some(earlier) = seen.insert(set.shard_index().0, &shard.file) {
            return Err(MergeError::SameShard {
                first: earlier.to_string(),
                other,
                shard: (set.shard_index().0, n),
            });
        }
    }
    let missing: Vec<(u64, u64)> = (1..=n)
        .filter(|k| !seen.contains_key(k))
        .take(10)
        .map(|k| (k, n))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            more: n - seen.len() as u64 - missing.len() as u64,
            missing,
            given: seen.len() as u64,
        });
    }
    shards.sort_by_key(|s| s.summary.shard.0);
    Ok(())
}

/// The shard's seeds, once its summary is sane and complete: a valid range and shard,
/// not interrupted, as many seeds as the shard has.
fn check_counts(file: &str, t: &Summary) -> Result<SeedSet, MergeError> {
    let set = t.seed_set().ok_or_else(|| MergeError::Nonsense {
        file: file.to_string(),
        seed_range: t.seed_range,
        shard: t.shard,
    })?;
    let shard = set.shard_index();
    if t.interrupted {
        return Err(MergeError::Interrupted {
            file: file.to_string(),
            done: t.seeds,
            count: set.count(),
            shard,
        });
    }
    if t.seeds != set.count() {
        return Err(MergeError::Count {
            file: file.to_string(),
            seeds: t.seeds,
            range: range_words(t),
            shard,
            count: set.count(),
        });
    }
    Ok(set)
}

/// A summary's seed range as `--seeds` takes it: `A..B`.
fn range_words(s: &Summary) -> String {
    format!("{}..{}", s.seed_range.0, s.seed_range.1)
}

/// Whether two summaries have the same checks with the same expectations.
fn same_checks(a: &Summary, b: &Summary) -> bool {
    a.checks.len() == b.checks.len()
        && a.checks
            .iter()
            .zip(&b.checks)
            .all(|((n, x), (m, y))| n == m && x.expect == y.expect)
}

/// The report's examples for the merged sweep: the first violating seed of all (the
/// lowest; each file gives its own first), and the first harness errors of all.
fn examples(shards: &[Shard]) -> Examples {
    let first_violation = shards
        .iter()
        .filter_map(|s| s.first_violation.as_ref())
        .min_by_key(|v| v.seed)
        .cloned();
    let mut errors: Vec<(u64, String)> = shards.iter().flat_map(|s| s.errors.clone()).collect();
    errors.sort_by_key(|e| e.0);
    errors.truncate(MAX_ERRORS_LISTED);
    Examples {
        first_violation,
        errors,
    }
}
