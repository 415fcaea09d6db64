//! [`main_with`]: the whole `locksim` command line, for locksim's families and a binary's
//! own. The `locksim` binary is `main_with(&[])`.

use super::args::{Cli, Command};
use super::families::{is_users, with_builtins};
use super::Binary;
use super::{parse_seeds, EXIT_BAD_INPUT};
use crate::locks::Family;
use clap::Parser;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The `locksim` command line, with `families` (yours) beside locksim's own: call it
/// from the `main` of a binary of your own, and that binary runs `run`, `replay` (with
/// `--svg`, `--history`, `--edn`), `shrink`, `report`, `merge`, `list` and `check` on
/// scenarios whose `algorithm` is one of your families or one of locksim's.
///
/// Parses the process's arguments as `locksim` does and returns the exit code the
/// subcommand gives (the same codes, documented in each subcommand's `--help`; 2 on bad
/// input). An `algorithm` that names no family is refused with the list of all of them,
/// yours included. A family of yours named like one of locksim's own (or two of yours
/// with one name) is refused before any argument is read: exit 2, and the name said.
///
/// On glibc it first tells the C allocator to keep blocks under 64 MiB in its heap (and
/// the heap's free top up to 256 MiB) instead of unmapping them after each use: a Lua
/// script that allocates without bound otherwise costs a page fault per page on every
/// retry.
///
/// What runs real processes is for locksim's families only: `live` on a scenario of
/// yours says the family has no real counterpart, and `serve` that it serves locksim's
/// models; both exit 2. The commands a binary prints for you to run next (`replay: ...`,
/// `reproduce with: ...`) name it as it was run.
///
/// # Example
///
/// A binary of a crate that depends on locksim, with a family `Toy` written as
/// [`crate::plugin`] shows (`examples/my_locksim.rs` in a locksim checkout is this
/// binary for the toy family of `examples/toy/mod.rs`):
///
/// ```no_run
/// use locksim::plugin::*;
/// # #[derive(Debug, Clone, serde::Deserialize)]
/// # struct Toy {}
/// # impl Algorithm for Toy {
/// #     const NAME: &'static str = "toy";
/// #     const ABOUT: &'static str = "a toy";
/// #     fn params() -> Vec<ParamDoc> { Vec::new() }
/// #     fn servers(&self) -> Vec<String> { vec!["toy-0".into()] }
/// #     fn server_main(&self, _: NodeCtx) -> LocalBoxFuture<'static, ()> { todo!() }
/// #     fn client(&self) -> Box<dyn LockClient> { todo!() }
/// #     fn lease_ms(&self) -> Option<u64> { None }
/// #     fn fencing_token(&self) -> Option<&'static str> { None }
/// # }
///
/// fn main() -> std::process::ExitCode {
///     locksim::cli::main_with(&[Family::of::<Toy>()])
/// }
/// ```
///
/// Then `my-locksim run toy.toml --seeds 0..20`, `my-locksim replay toy.toml --seed 3
/// --svg seed-3.svg`, `my-locksim shrink toy.toml --seed 3` and `my-locksim list` (which
/// shows `toy` with its `[lock]` keys) work as `locksim`'s do.
pub fn main_with(families: &[Family]) -> ExitCode {
    super::malloc::keep_big_blocks();
    let families = match with_builtins(families) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("locksim: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let cli = Cli::parse();
    if simulates(&cli.command) {
        if let Err(e) = crate::sim::check_tokio_seeded() {
            eprintln!("locksim: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    }
    let name = Binary::name_of_program(&families);
    let hint = Binary::hint_of_program(&name, &families);
    let binary = Binary {
        name: &name,
        hint: &hint,
        families: &families,
    };
    ExitCode::from(dispatch(cli.command, binary))
}

/// Whether `command` runs simulations. Those are refused (exit 2) in a build without
/// `--cfg tokio_unstable` (`crate::sim::check_tokio_seeded`): a seed of a family that
/// `select!`s unbiased would not replay, and replay and shrink rest on that. A refusal
/// cannot hit locksim's own builds: its `.cargo/config.toml` sets the flag for every
/// `cargo` command in the checkout (tests and doc tests included).
fn simulates(command: &Command) -> bool {
    match command {
        Command::Report { merge, .. } => merge.is_empty(),
        Command::Run { .. }
        | Command::Replay { .. }
        | Command::Shrink { .. }
        | Command::Bench { .. } => true,
        _ => false,
    }
}

/// Run one subcommand; its exit code.
fn dispatch(command: Command, binary: Binary<'_>) -> u8 {
    let families = binary.families;
    match command {
        Command::Run {
            scenario,
            seeds,
            seed,
            jobs,
            shard,
            json,
            quiet,
        } => run(
            RunArgs {
                scenario: &scenario,
                seeds: seeds.as_deref(),
                seed,
                jobs,
                shard: shard.as_deref(),
                json: json.as_deref(),
                quiet,
            },
            binary,
        ),
        Command::Merge { files, json } => {
            let files: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
            super::merge_command(&files, json.as_deref(), binary.hint)
        }
        Command::Replay {
            scenario,
            seed,
            history,
            edn,
            svg,
            trace,
        } => super::replay_command(
            &scenario,
            families,
            seed,
            history.as_deref(),
            edn.as_deref(),
            svg.as_deref(),
            trace,
        ),
        Command::Check {
            history,
            model,
            init,
            timeout,
            memo_limit,
            json,
            svg,
        } => super::check_command(
            &history,
            &model,
            init.as_deref(),
            timeout,
            memo_limit,
            json,
            svg.as_deref(),
        ),
        Command::Report {
            seeds,
            out,
            matrix,
            jobs,
            shard,
            merge,
            overwrite,
            reuse,
        } => {
            let writes_report = shard.is_none();
            if writes_report && !overwrite && out.join("guarantees.md").exists() {
                eprintln!(
                    "locksim: report: {} already holds a report (guarantees.md); pass --out DIR \
                     to write a new one elsewhere, or --overwrite to replace it",
                    out.display()
                );
                return EXIT_BAD_INPUT;
            }
            report(
                seeds,
                &out,
                matrix,
                jobs,
                (shard.as_deref(), merge, reuse),
                binary,
            )
        }
        Command::Shrink {
            scenario,
            seed,
            check,
            out,
            budget,
        } => {
            let opts = crate::shrink::ShrinkOptions {
                check,
                budget: budget as usize,
            };
            let bar = std::io::stderr().is_terminal();
            super::shrink_command(&scenario, binary, seed, &opts, out.as_deref(), bar)
        }
        Command::List {
            params: Some(name), ..
        } => super::list_params_command(&name, families),
        Command::List { sims, params: None } => super::list_command(&sims, families),
        other => dispatch_processes(other, binary),
    }
}

/// The subcommands that run real processes or measure locksim itself: locksim's
/// families only.
fn dispatch_processes(command: Command, binary: Binary<'_>) -> u8 {
    let families = binary.families;
    match command {
        Command::LiveNode { spec } => super::live_node_main(&spec),
        Command::ServeNode { spec } => super::serve_node_main(&spec),
        Command::Live {
            scenario,
            duration,
            seed,
            history,
            client,
            servers,
        } => super::live_command(
            &scenario,
            super::LiveOptions {
                duration: &duration,
                seed,
                servers: &servers,
                history: history.as_deref(),
                client: client.as_deref(),
                families,
            },
        ),
        Command::Serve {
            family,
            port,
            nodes,
            tick_ms,
            events,
            seed,
        } => {
            if is_users(&family, families) {
                eprintln!(
                    "locksim: serve: `{family}` is this binary's own family; serve runs \
                     locksim's models only: zk, raft, redis, db"
                );
                return EXIT_BAD_INPUT;
            }
            let events = match events {
                None => super::ServedEvents::None,
                Some(None) => super::ServedEvents::AllButApply,
                Some(Some(_apply)) => super::ServedEvents::All,
            };
            super::serve_command(&family, port, nodes, tick_ms, events, seed)
        }
        Command::Bench {
            seeds,
            matrix,
            markdown,
        } => super::bench_command(super::BenchOptions {
            seeds,
            matrix: matrix.as_deref(),
            markdown,
            families,
        }),
        // `dispatch` handles every other subcommand.
        Command::Run { .. }
        | Command::Merge { .. }
        | Command::Replay { .. }
        | Command::Check { .. }
        | Command::Report { .. }
        | Command::Shrink { .. }
        | Command::List { .. } => dispatch(command, binary),
    }
}

/// `run`'s arguments as given.
struct RunArgs<'a> {
    scenario: &'a Path,
    seeds: Option<&'a str>,
    seed: Option<u64>,
    jobs: Option<u16>,
    shard: Option<&'a str>,
    json: Option<&'a str>,
    quiet: bool,
}

/// `locksim run`: parse the seed selection, then sweep.
fn run(args: RunArgs<'_>, binary: Binary<'_>) -> u8 {
    let seeds = match parse_seeds(args.seeds, args.seed, args.shard) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let jobs = jobs_or_cores(args.jobs);
    let bar = !args.quiet && std::io::stderr().is_terminal();
    super::run_command(
        args.scenario,
        binary,
        seeds,
        jobs,
        args.json,
        args.quiet,
        bar,
    )
}

/// `locksim report`: merge shards' results, or run (a shard of) the matrix.
fn report(
    seeds: Option<u64>,
    out: &Path,
    matrix: PathBuf,
    jobs: Option<u16>,
    (shard, merge, reuse): (Option<&str>, Vec<PathBuf>, Vec<PathBuf>),
    binary: Binary<'_>,
) -> u8 {
    let jobs = jobs_or_cores(jobs);
    let bar = std::io::stderr().is_terminal();
    let job = if !merge.is_empty() {
        super::ReportJob::Merge(merge)
    } else {
        let shard = match shard.map(super::parse_shard).transpose() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("locksim: {e}");
                return EXIT_BAD_INPUT;
            }
        };
        super::ReportJob::Run {
            matrix,
            seeds,
            shard,
            jobs,
            reuse,
        }
    };
    super::report_command(job, out, binary, bar)
}

/// `--jobs`, else one per core.
fn jobs_or_cores(jobs: Option<u16>) -> usize {
    jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    )
}
