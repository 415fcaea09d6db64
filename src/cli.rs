//! The `locksim` subcommands, one file each: sweep tables and JSON lines (`run`),
//! explained counterexamples in true and local time (`replay`), linearizability of a
//! history file (`check`), the catalogue (`list`) and harness speed (`bench`). Each returns its exit code.

mod bench;
mod check;
mod list;
mod replay;
mod run;

pub use bench::bench_command;
pub use check::check_command;
pub use list::list_command;
pub use replay::{explain, replay_command};
pub use run::run_command;

/// Exit code for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

/// Which seeds a `run` covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seeds(pub Vec<u64>);

impl Seeds {
    /// From `--seeds A..B`, `--seed N` and `--shard K/N` (defaults: 0..100, whole range).
    pub fn parse(
        range: Option<&str>,
        seed: Option<u64>,
        shard: Option<&str>,
    ) -> Result<Seeds, String> {
        let all: Vec<u64> = match (range, seed) {
            (_, Some(s)) => vec![s],
            (Some(r), None) => {
                let (a, b) = r
                    .split_once("..")
                    .ok_or_else(|| format!("--seeds: expected A..B (e.g. 0..100), got `{r}`"))?;
                let a: u64 = a
                    .parse()
                    .map_err(|_| format!("--seeds: `{a}` is not a seed number"))?;
                let b: u64 = b
                    .parse()
                    .map_err(|_| format!("--seeds: `{b}` is not a seed number"))?;
                if a >= b {
                    return Err(format!("--seeds: expected A < B, got {a}..{b}"));
                }
                (a..b).collect()
            }
            (None, None) => (0..100).collect(),
        };
        let Some(shard) = shard else {
            return Ok(Seeds(all));
        };
        let parsed = shard
            .split_once('/')
            .and_then(|(k, n)| Some((k.parse::<usize>().ok()?, n.parse::<usize>().ok()?)));
        match parsed {
            Some((k, n)) if n >= 1 && (1..=n).contains(&k) => Ok(Seeds(
                all.into_iter()
                    .enumerate()
                    .filter(|(i, _)| i % n == k - 1)
                    .map(|(_, s)| s)
                    .collect(),
            )),
            _ => Err(format!(
                "--shard: expected K/N with 1 <= K <= N, got `{shard}`"
            )),
        }
    }
}

/// Format true or local nanoseconds as milliseconds with three decimals.
pub fn ms(ns: i64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_ranges_and_shards() {
        assert_eq!(Seeds::parse(None, None, None).unwrap().0.len(), 100);
        assert_eq!(Seeds::parse(Some("5..8"), None, None).unwrap().0, [5, 6, 7]);
        assert_eq!(Seeds::parse(None, Some(9), None).unwrap().0, [9]);
        assert_eq!(
            Seeds::parse(Some("0..10"), None, Some("2/3")).unwrap().0,
            [1, 4, 7]
        );
        assert!(Seeds::parse(Some("8..5"), None, None).is_err());
        assert!(Seeds::parse(Some("x"), None, None).is_err());
        assert!(Seeds::parse(None, None, Some("4/3")).is_err());
    }
}
