//! The `locksim` command line, as a library: [`main_with`] runs it for locksim's
//! families and your own, so that a binary of your own (a `main` of one line) gets
//! `run`, `replay`, `shrink`, `report`, `merge`, `list` and `check` for the families you
//! wrote with [`crate::plugin`].
//!
//! The subcommands are one file each: sweep tables and JSON lines (`run`), the summary of
//! a sweep run in shards (`merge`), explained counterexamples in true and local time
//! (`replay`), linearizability of a history file (`check`), the catalogue (`list`),
//! harness speed (`bench`) and a model server for real clients (`serve`). Each returns
//! its exit code.

mod args;
mod bench;
mod binary;
mod check;
mod escaped_tasks;
mod families;
mod list;
mod live;
mod main_with;
mod malloc;
mod merge;
mod merge_error;
mod replay;
mod report;
mod run;
mod seed_args;
mod serve;
mod shrink;

#[doc(hidden)]
pub use binary::Binary;
pub use main_with::main_with;

/// Exit code for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

/// `replay`'s exit code when the seed could not run to its end (a harness error): unlike
/// 1, it says nothing about the lock.
pub const EXIT_HARNESS_ERROR: u8 = 4;

// The subcommands one by one: what `main_with` runs, public for the binaries built before
// it and not part of the interface (their arguments change with the command line).
#[doc(hidden)]
pub use bench::{bench_command, BenchOptions};
#[doc(hidden)]
pub use check::check_command;
#[doc(hidden)]
pub use list::{list_command, list_params_command};
#[doc(hidden)]
pub use live::{live_command, parse_duration_ms, LiveOptions};
#[doc(hidden)]
pub use merge::merge_command;
#[doc(hidden)]
pub use replay::replay_command;
#[doc(hidden)]
pub use report::{report_command, ReportJob};
#[doc(hidden)]
pub use run::run_command;
#[doc(hidden)]
pub use seed_args::{parse_seeds, parse_shard, SeedArgError};
#[doc(hidden)]
pub use serve::{serve_command, ServedEvents};
#[doc(hidden)]
pub use shrink::shrink_command;

/// A client process of a live run (the binary's hidden `live-node` entry).
#[doc(hidden)]
pub use crate::live::live_node_main;
/// A model server process of a live run (the binary's hidden `serve-node` entry).
#[doc(hidden)]
pub use crate::live::serve_node_main;
pub(crate) use crate::report::ms;

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
        let e = parse_seeds(None, Some(7), Some("2/2"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("selects no seed"), "{e}");
        let huge = parse_seeds(Some("0..18446744073709551615"), None, None).unwrap();
        assert_eq!(huge.count(), u64::MAX);
    }
}
