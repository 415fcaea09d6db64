//! Whether this build lets turmoil seed tokio's RNG.
//!
//! turmoil seeds each host runtime's RNG (which picks the branch order of a
//! `tokio::select!` without `biased`) only when tokio is compiled with
//! `--cfg tokio_unstable`. locksim's own `.cargo/config.toml` sets it, but a crate that
//! depends on locksim does not inherit that file. Rust flags apply to every crate of a
//! build, so `cfg!(tokio_unstable)` here says whether tokio had it too.
//!
//! The decision: the library's [`crate::run`] keeps its infallible signature (changing
//! it would break every caller, and locksim's own families never `select!` unbiased) and
//! warns loudly once per process; [`check_tokio_seeded`] is the typed check a user's
//! test calls, and the CLI refuses a simulation with exit 2, since its whole promise (a
//! seed replays, a shrink is exact) would silently not hold for a user's family.

use std::fmt;
use std::sync::Once;

/// What a dependent crate's `.cargo/config.toml` must hold (locksim's own has it).
pub const TOKIO_UNSTABLE_CONFIG: &str = "[build]\nrustflags = [\"--cfg\", \"tokio_unstable\"]";

/// This build lacks `--cfg tokio_unstable`: turmoil cannot seed tokio's RNG, so a
/// `tokio::select!` without `biased` (in your code or a library's) picks branches at
/// random and a seed no longer replays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnseededTokio;

impl fmt::Display for UnseededTokio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "this build lacks `--cfg tokio_unstable`, so turmoil cannot seed tokio's RNG: a \
             `tokio::select!` without `biased` picks its branch at random and a seed does \
             not replay. A crate depending on locksim sets it in its own \
             `.cargo/config.toml` (locksim's is not inherited):\n\n{TOKIO_UNSTABLE_CONFIG}\n\n\
             (or RUSTFLAGS=\"--cfg tokio_unstable\"; note that a RUSTFLAGS variable replaces \
             the file's flags), then rebuild"
        )
    }
}

impl std::error::Error for UnseededTokio {}

/// `Ok` when this build seeds tokio's RNG (compiled with `--cfg tokio_unstable`);
/// otherwise the error says how to set it. Call it at the top of a determinism test.
pub fn check_tokio_seeded() -> Result<(), UnseededTokio> {
    seeded_if(cfg!(tokio_unstable))
}

/// The decision, apart from how this crate was compiled (so it can be tested).
pub(crate) fn seeded_if(has_cfg: bool) -> Result<(), UnseededTokio> {
    if has_cfg {
        Ok(())
    } else {
        Err(UnseededTokio)
    }
}

/// Print [`UnseededTokio`]'s message to stderr, once per process, if this build lacks
/// the flag.
pub(crate) fn warn_once_if_unseeded() {
    static WARNED: Once = Once::new();
    if let Err(e) = check_tokio_seeded() {
        WARNED.call_once(|| eprintln!("locksim: WARNING: {e}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_with_the_flag_is_seeded() {
        assert_eq!(seeded_if(true), Ok(()));
        // locksim's own builds set it in .cargo/config.toml.
        assert_eq!(check_tokio_seeded(), Ok(()));
    }

    #[test]
    fn without_the_flag_the_message_says_how_a_dependent_crate_sets_it() {
        let msg = seeded_if(false).unwrap_err().to_string();
        assert!(msg.contains("tokio_unstable"), "{msg}");
        assert!(msg.contains(".cargo/config.toml"), "{msg}");
        assert!(msg.contains(TOKIO_UNSTABLE_CONFIG), "{msg}");
        // The same flags as locksim's own file.
        let own = include_str!("../../.cargo/config.toml");
        assert!(own.contains("[build]"), "{own}");
        assert!(
            own.contains(r#"rustflags = ["--cfg", "tokio_unstable"]"#),
            "{own}"
        );
    }
}
