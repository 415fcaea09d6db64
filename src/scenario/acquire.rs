//! `[workload] acquire`: how long a client waits for a lock someone else holds.
//!
//! `"wait"` (the default) blocks up to `acquire_timeout_ms`, as every client always has;
//! `"try"` makes one non-blocking attempt; `{ try_for_ms = N }` blocks at most N ms. Each
//! family maps the mode to its real call ([`crate::locks::Wait`]), so a scenario can show
//! what a `tryLock` does that a blocking lock does not.

use crate::locks::Wait;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::time::Duration;

/// What `acquire` must be, for messages.
const EXPECTED: &str = "\"wait\", \"try\" or { try_for_ms = N }";

/// The value of `[workload] acquire`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AcquireMode {
    /// Block up to `acquire_timeout_ms` (today's behaviour).
    #[default]
    Wait,
    /// One non-blocking attempt: a held lock fails at once ("busy").
    Try,
    /// Block at most this many ms.
    TryFor(u64),
}

impl AcquireMode {
    /// The wait an acquire call gets, given the workload's `acquire_timeout_ms` (which
    /// also bounds a try's own requests).
    pub fn wait(self, acquire_timeout_ms: u64) -> Wait {
        let timeout = Duration::from_millis(acquire_timeout_ms);
        match self {
            AcquireMode::Wait => Wait::For(timeout),
            AcquireMode::Try => Wait::No(timeout),
            AcquireMode::TryFor(ms) => Wait::For(Duration::from_millis(ms)),
        }
    }
}

impl<'de> Deserialize<'de> for AcquireMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ModeVisitor)
    }
}

struct ModeVisitor;

impl<'de> Visitor<'de> for ModeVisitor {
    type Value = AcquireMode;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<AcquireMode, E> {
        match v {
            "wait" => Ok(AcquireMode::Wait),
            "try" => Ok(AcquireMode::Try),
            other => Err(E::custom(format!("expected {EXPECTED}, got `{other}`"))),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AcquireMode, A::Error> {
        let mut ms = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "try_for_ms" || ms.is_some() {
                return Err(de::Error::custom(format!(
                    "unexpected key `{key}` in the table; expected {EXPECTED}"
                )));
            }
            ms = Some(map.next_value::<u64>().map_err(|e| {
                de::Error::custom(format!("try_for_ms: {e}; expected a positive number of ms"))
            })?);
        }
        ms.map(AcquireMode::TryFor)
            .ok_or_else(|| de::Error::custom(format!("missing try_for_ms; expected {EXPECTED}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Result<AcquireMode, toml::de::Error> {
        #[derive(Deserialize)]
        struct T {
            acquire: AcquireMode,
        }
        toml::from_str::<T>(&format!("acquire = {v}")).map(|t| t.acquire)
    }

    #[test]
    fn the_three_forms() {
        assert_eq!(parse("\"wait\"").unwrap(), AcquireMode::Wait);
        assert_eq!(parse("\"try\"").unwrap(), AcquireMode::Try);
        assert_eq!(
            parse("{ try_for_ms = 30 }").unwrap(),
            AcquireMode::TryFor(30)
        );
        assert_eq!(AcquireMode::default(), AcquireMode::Wait);
    }

    #[test]
    fn each_maps_to_a_wait() {
        let d = Duration::from_millis;
        assert_eq!(AcquireMode::Wait.wait(2000), Wait::For(d(2000)));
        assert_eq!(AcquireMode::Try.wait(2000), Wait::No(d(2000)));
        assert_eq!(AcquireMode::TryFor(30).wait(2000), Wait::For(d(30)));
    }

    #[test]
    fn errors_say_what_was_expected() {
        for bad in [
            "\"block\"",
            "{ wait_ms = 1 }",
            "{}",
            "5",
            "{ try_for_ms = -1 }",
        ] {
            let e = parse(bad).unwrap_err().message().to_string();
            assert!(
                e.contains("try_for_ms") && (e.contains("expected") || e.contains("missing")),
                "{bad}: {e}"
            );
        }
    }
}
