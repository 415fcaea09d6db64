//! The seeds a command runs: `--seeds A..B`, `--seed N`, `--shard K/N`.

use crate::sweep::SeedSet;
use std::fmt;

/// A `--seeds`, `--seed` or `--shard` argument that selects no seeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeedArgError {
    /// `--seeds` not of the form `A..B`.
    Range(String),
    /// A bound of `--seeds` that is not a seed number.
    Seed(String),
    /// `--seeds A..B` with `A >= B`.
    Order(u64, u64),
    /// `--shard` not of the form `K/N` with `1 <= K <= N`.
    Shard(String),
    /// A shard with no seed of the range (or of the one seed) in it.
    NoSeed {
        /// The `--shard` argument.
        shard: String,
        /// Whether `--seed` gave one seed (else a range).
        one_seed: bool,
    },
}

impl fmt::Display for SeedArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeedArgError::Range(r) if r.trim().parse::<u64>().is_ok() => write!(
                f,
                "--seeds: expected A..B (e.g. 0..100), got `{r}`; one seed is `--seed {}`",
                r.trim()
            ),
            SeedArgError::Range(r) => {
                write!(f, "--seeds: expected A..B (e.g. 0..100), got `{r}`")
            }
            SeedArgError::Seed(x) => write!(
                f,
                "--seeds: `{x}` is not a seed number (0 to {})",
                u64::MAX
            ),
            SeedArgError::Order(a, b) => write!(f, "--seeds: expected A < B, got {a}..{b}"),
            SeedArgError::Shard(s) => {
                write!(f, "--shard: expected K/N with 1 <= K <= N, got `{s}`")
            }
            SeedArgError::NoSeed { shard, one_seed } => write!(
                f,
                "--shard {shard}: selects no seed of the {} given; a sweep over no seed proves nothing",
                if *one_seed { "one seed" } else { "range" }
            ),
        }
    }
}

impl std::error::Error for SeedArgError {}

/// Parse the seeds of a `run`: `--seeds A..B`, `--seed N` and `--shard K/N` (defaults:
/// 0..100, the whole range). A selection with no seed is an error: a sweep over nothing
/// proves nothing.
pub fn parse_seeds(
    range: Option<&str>,
    seed: Option<u64>,
    shard: Option<&str>,
) -> Result<SeedSet, SeedArgError> {
    let set = match (range, seed) {
        (_, Some(s)) => SeedSet::one(s),
        (Some(r), None) => {
            let (a, b) = r
                .split_once("..")
                .ok_or_else(|| SeedArgError::Range(r.to_string()))?;
            let num = |x: &str| {
                x.trim()
                    .parse::<u64>()
                    .map_err(|_| SeedArgError::Seed(x.to_string()))
            };
            let (a, b) = (num(a)?, num(b)?);
            if a >= b {
                return Err(SeedArgError::Order(a, b));
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
        return Err(SeedArgError::NoSeed {
            shard: shard.unwrap_or("").to_string(),
            one_seed: seed.is_some(),
        });
    }
    Ok(set)
}

/// Parse `--shard K/N` (1 <= K <= N).
pub fn parse_shard(shard: &str) -> Result<(u64, u64), SeedArgError> {
    let parsed = shard
        .split_once('/')
        .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    match parsed {
        Some((k, n)) if n >= 1 && (1..=n).contains(&k) => Ok((k, n)),
        _ => Err(SeedArgError::Shard(shard.to_string())),
    }
}
