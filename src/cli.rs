//! The `locksim` subcommands, one file each: sweep tables and JSON lines (`run`), the
//! summary of a sweep run in shards (`merge`), explained counterexamples in true and local time (`replay`), linearizability of a
//! history file (`check`), the catalogue (`list`), harness speed (`bench`) and a model
//! server for real clients (`serve`). Each returns its exit code.

mod bench;
mod check;
mod list;
mod live;
mod merge;
mod merge_error;
mod replay;
mod report;
mod run;
mod seed_args;
mod serve;
mod shrink;

pub use bench::bench_command;
pub use check::check_command;
pub use list::list_command;
pub use live::{live_command, parse_duration_ms, LiveOptions};
pub use merge::merge_command;
pub use replay::replay_command;
pub use report::{report_command, ReportJob};
pub use run::run_command;
pub use seed_args::{parse_seeds, parse_shard, SeedArgError};
pub use serve::{serve_command, ServedEvents};
pub use shrink::shrink_command;

/// Exit code for bad input.
pub const EXIT_BAD_INPUT: u8 = 2;

/// A client process of a live run (the binary's hidden `live-node` entry).
pub use crate::live::live_node_main;
/// A model server process of a live run (the binary's hidden `serve-node` entry).
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
