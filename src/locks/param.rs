//! What every algorithm's parameters share: their documentation rows, their errors and
//! the checks of numbers and ranges (also used for the scenario's own keys).

pub use crate::key_error::KeyError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The longest time any key may name: one simulated hour, so local-time arithmetic in a
/// run can never overflow, whatever the input.
pub const MAX_MS: u64 = crate::sim::MAX_FAULT_MS;

/// An inclusive range `[min, max]` drawn uniformly. In TOML exactly two numbers: serde's
/// own `[T; 2]` silently drops extra elements (`[1, 2, "junk"]`), this does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Range<T>(pub [T; 2]);

impl<T> std::ops::Deref for Range<T> {
    type Target = [T; 2];
    fn deref(&self) -> &[T; 2] {
        &self.0
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Range<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Pair<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Pair<T> {
            type Value = Range<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("[min, max]: an array of exactly two numbers")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Range<T>, A::Error> {
                use serde::de::Error;
                let min = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(0, &self))?;
                let max = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(1, &self))?;
                let mut n = 2;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                if n > 2 {
                    return Err(A::Error::invalid_length(n, &self));
                }
                Ok(Range([min, max]))
            }
        }
        d.deserialize_seq(Pair(std::marker::PhantomData))
    }
}

/// One `[lock]` key, for `locksim list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamDoc {
    /// The key.
    pub key: &'static str,
    /// Its default, as TOML (`"1000"`, `"\"set-nx-px\""`, `"[20, 60]"`), or `""` when
    /// the default is derived from other keys (the meaning then says how).
    pub default: &'static str,
    /// What it means and its values.
    pub meaning: &'static str,
}

impl ParamDoc {
    /// A documentation row.
    pub const fn new(key: &'static str, default: &'static str, meaning: &'static str) -> Self {
        ParamDoc {
            key,
            default,
            meaning,
        }
    }
}

/// A parameter value that is not valid: its key (relative to `[lock]`) and why. The
/// scenario's [`KeyError`], under the name the [`Algorithm`](crate::locks::Algorithm)
/// trait gives it.
pub type ParamError = KeyError;

/// A positive time or count of at most one hour.
pub fn positive(key: &str, v: u64) -> Result<(), KeyError> {
    if v == 0 {
        return Err(KeyError::new(key, "expected a positive number, got 0"));
    }
    at_most_an_hour(key, v)
}

/// At most one hour (in ms).
pub fn at_most_an_hour(key: &str, v: u64) -> Result<(), KeyError> {
    if v > MAX_MS {
        return Err(KeyError::new(
            key,
            format!("expected at most {MAX_MS} (one hour), got {v}"),
        ));
    }
    Ok(())
}

/// `[min, max]` with `min <= max <= one hour`.
pub fn range(key: &str, r: &Range<u64>) -> Result<(), KeyError> {
    if r[0] > r[1] {
        return Err(KeyError::new(
            key,
            format!(
                "expected [min, max] with min <= max, got [{}, {}]",
                r[0], r[1]
            ),
        ));
    }
    if r[1] > MAX_MS {
        return Err(KeyError::new(
            key,
            format!(
                "expected values of at most {MAX_MS} (one hour), got {}",
                r[1]
            ),
        ));
    }
    Ok(())
}

/// `[min, max]` with `min <= max`, both within ± one hour.
pub fn signed_range(key: &str, r: &Range<i64>) -> Result<(), KeyError> {
    if r[0] > r[1] {
        return Err(KeyError::new(
            key,
            format!(
                "expected [min, max] with min <= max, got [{}, {}]",
                r[0], r[1]
            ),
        ));
    }
    let h = MAX_MS as i64;
    if r[0] < -h || r[1] > h {
        return Err(KeyError::new(
            key,
            format!("expected values within ±{MAX_MS}, got [{}, {}]", r[0], r[1]),
        ));
    }
    Ok(())
}

/// A number in `[0, 1)`.
pub fn fraction(key: &str, v: f64) -> Result<(), KeyError> {
    if !(0.0..1.0).contains(&v) {
        return Err(KeyError::new(
            key,
            format!("expected a number in [0, 1), got {v}"),
        ));
    }
    Ok(())
}

/// An integer in `lo..=hi`.
pub fn between(key: &str, v: u64, lo: u64, hi: u64) -> Result<(), KeyError> {
    if !(lo..=hi).contains(&v) {
        return Err(KeyError::new(
            key,
            format!("expected {lo} to {hi}, got {v}"),
        ));
    }
    Ok(())
}
