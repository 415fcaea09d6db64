//! The `locksim` subcommands, one file each: sweep tables and JSON lines (`run`), the
//! summary of a sweep run in shards (`merge`), explained counterexamples in true and local time (`replay`), linearizability of a
//! history file (`check`), the catalogue (`list`), harness speed (`bench`) and a model
//! server for real clients (`serve`). Each returns its exit code.

mod bench;
mod check;
mod list;
mod live;
mod merge;
mod replay;
mod report;
mod run;
mod serve;
mod shrink;

pub use bench::bench_command;
pub use check::check_command;
pub use list::list_command;
pub use live::{live_command, parse_duration_ms};
pub use merge::merge_command;
pub use replay::replay_command;
pub use report::{report_command, ReportJob};
pub use run::run_command;
pub use serve::serve_command;
pub use shrink::shrink_command;

use crate::sweep::SeedSet;

/// Exit code for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Parse the seeds of a `run`: `--seeds A..B`, `--seed N` and `--shard K/N` (defaults:
/// 0..100, the whole range). A selection with no seed is an error: a sweep over nothing
/// proves nothing.
pub fn parse_seeds(
    range: Option<&str>,
    seed: Option<u64>,
    shard: Option<&str>,
) -> Result<SeedSet, String> {
    let set = match (range, seed) {
        (_, Some(s)) => SeedSet::one(s),
        (Some(r), None) => {
            let (a, b) = r
                .split_once("..")
                .ok_or_else(|| format!("--seeds: expected A..B (e.g. 0..100), got `{r}`"))?;
            let num = |x: &str| {
                x.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("--seeds: `{x}` is not a seed number (0 to {})", u64::MAX))
            };
            let (a, b) = (num(a)?, num(b)?);
            if a >= b {
                return Err(format!("--seeds: expected A < B, got {a}..{b}"));
            }
            SeedSet::range(a, b)
        }
        (None, None) => SeedSet::range(0, 100),
    };
    let set = match shard {
        None => set,
        Some(shard) => {
            let (k, n) = parse_shard(shard)?;
            set.shard(k, n)
        }
    };
    if set.count() == 0 {
        return Err(format!(
            "--shard {}: selects no seed of the {} given; a sweep over no seed proves nothing",
            shard.unwrap_or(""),
            if seed.is_some() { "one seed" } else { "range" }
        ));
    }
    Ok(set)
}

/// Parse `--shard K/N` (1 <= K <= N).
pub fn parse_shard(shard: &str) -> Result<(u64, u64), String> {
    let parsed = shard
        .split_once('/')
        .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    match parsed {
        Some((k, n)) if n >= 1 && (1..=n).contains(&k) => Ok((k, n)),
        _ => Err(format!(
            "--shard: expected K/N with 1 <= K <= N, got `{shard}`"
        )),
    }
}

pub use crate::report::ms;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_ranges_and_shards() {
        let all = |r, s, sh| parse_seeds(r, s, sh).map(|x| x.iter().collect::<Vec<_>>());
        assert_eq!(parse_seeds(None, None, None).unwrap().count(), 100);
        assert_eq!(all(Some("5..8"), None, None).unwrap(), [5, 6, 7]);
        assert_eq!(all(None, Some(9), None).unwrap(), [9]);
        assert_eq!(all(Some("0..10"), None, Some("2/3")).unwrap(), [1, 4, 7]);
        assert!(parse_seeds(Some("8..5"), None, None).is_err());
        assert!(parse_seeds(Some("x"), None, None).is_err());
        assert!(parse_seeds(None, None, Some("4/3")).is_err());
        let e = parse_seeds(None, Some(7), Some("2/2")).unwrap_err();
        assert!(e.contains("selects no seed"), "{e}");
        let huge = parse_seeds(Some("0..18446744073709551615"), None, None).unwrap();
        assert_eq!(huge.count(), u64::MAX);
    }
}
