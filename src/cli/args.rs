//! The command line of `locksim` (and of a user's binary built on
//! [`main_with`](super::main_with)): its subcommands, their options and help text, as
//! clap parses them.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// One example per subcommand, under `locksim --help`.
const EXAMPLES: &str = "Examples:
  locksim run sims/redis-01-pause-past-lease.toml --seeds 0..20
  locksim replay sims/redis-01-pause-past-lease.toml --seed 0 --svg pause.svg
  locksim shrink sims/redis-01-pause-past-lease-random.toml --seed 0
  locksim run sims/zk-baseline.toml --shard 1/2 --json part1.jsonl   (then: locksim merge part*.jsonl)
  locksim check history.edn --model cas-register
  locksim report --out /tmp/report --seeds 20
  locksim list --params redis
  locksim live sims/redis-01-pause-past-lease.toml --duration 10s
  locksim serve redis --port 6379
  locksim bench --seeds 5";

/// Deterministic simulation and verification of distributed locks.
#[derive(Parser)]
#[command(
    name = "locksim",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("LOCKSIM_SOURCE"), ")"),
    about,
    max_term_width = 100,
    after_help = EXAMPLES
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Run a scenario over a range of seeds and check every history.
    ///
    /// Exit code: 0 when every check met the scenario's `expect`, 1 when not, 2 on bad input.
    Run {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Seed range, `A..B` (B exclusive) [0..100].
        #[arg(long, conflicts_with = "seed")]
        seeds: Option<String>,
        /// A single seed.
        #[arg(long, allow_negative_numbers = true)]
        seed: Option<u64>,
        /// Worker threads (each seed still runs on one thread), 1 to 1024 [number of cores].
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024), allow_negative_numbers = true)]
        jobs: Option<u16>,
        /// Run only shard K of N (1-based) of the seed range: every N-th seed from the
        /// K-th, for CI matrices; `locksim merge` combines the shards' --json files.
        #[arg(long)]
        shard: Option<String>,
        /// Write one JSON object per seed and a summary line to FILE (`-`: stdout).
        #[arg(long)]
        json: Option<String>,
        /// No progress bar and no per-check table.
        #[arg(long)]
        quiet: bool,
    },
    /// Combine the --json files of `run --shard K/N` into one run's summary.
    ///
    /// The files are one per shard, in any order; the summary is the one a run over the
    /// whole seed range gives, printed as `run` prints it.
    ///
    /// Every shard 1..N of the same scenario and seed range must be there exactly once,
    /// and none interrupted. The merged wall time is the longest shard's (the sweep's
    /// when the shards ran in parallel).
    ///
    /// Exit code: 0 when every check met the scenario's `expect`, 1 when not, 2 on bad
    /// input (an unreadable or malformed file, a missing, repeated or interrupted shard,
    /// files of different sweeps).
    Merge {
        /// The shards' `run --json` files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Write the merged summary line `{"summary": ...}` to FILE (`-`: stdout).
        #[arg(long)]
        json: Option<String>,
    },
    /// Re-run one seed and explain its violations in true and local time.
    ///
    /// Exit code: 0 when the seed violates no check, 1 when it violates one (whatever the
    /// scenario's `expect` says: replay reports the seed, not the sweep), 2 on bad input or
    /// an output file that cannot be written, 4 when the seed could not run to its end (a
    /// harness error).
    Replay {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// The seed to replay.
        #[arg(long, allow_negative_numbers = true)]
        seed: u64,
        /// Also write the history as JSONL to FILE.
        #[arg(long)]
        history: Option<PathBuf>,
        /// Also write the history as Jepsen EDN to FILE.
        #[arg(long)]
        edn: Option<PathBuf>,
        /// Also draw the counterexample timeline to FILE (SVG: one lane per node, holds,
        /// faults, expirations, zoomed to the first violation).
        #[arg(long)]
        svg: Option<PathBuf>,
        /// Print the tracing log of every node (simulated time, node name).
        #[arg(long)]
        trace: bool,
    },
    /// Check a history for linearizability against a model.
    ///
    /// The search has two budgets, --timeout (default 60 s) and --memo-limit (default
    /// 1024 MiB); when either runs out the verdict is `unknown`, never a guess.
    ///
    /// Exit code: 0 linearizable, 1 not, 3 unknown (a budget ran out), 2 bad input.
    Check {
        /// History file: `.edn` (Jepsen/Knossos) or locksim JSONL.
        history: PathBuf,
        /// register | cas-register | mutex | fenced-lock | fenced-register.
        #[arg(long)]
        model: String,
        /// Initial value for register models, as EDN (e.g. `0`, `nil`) [0].
        #[arg(long)]
        init: Option<String>,
        /// Give up after this many seconds with verdict `unknown` (exit 3); at most
        /// 604800 (a week) [60].
        #[arg(long, value_name = "SECS")]
        timeout: Option<f64>,
        /// Give up with verdict `unknown` (exit 3) rather than let the search's memory (its
        /// memo, and its stack) grow past this many MiB [1024].
        #[arg(long, value_name = "MIB")]
        memo_limit: Option<u64>,
        /// Print the verdict as JSON.
        #[arg(long)]
        json: bool,
        /// Write an SVG picture of the history (one lane per process, failure in red).
        #[arg(long)]
        svg: Option<PathBuf>,
    },
    /// Measure every algorithm under every fault class: the guarantees report.
    ///
    /// Writes guarantees.md, guarantees.json and index.html; or computes one shard of it on
    /// this machine (--shard K/N writes partial-K-of-N.json), or merges shards (--merge)
    /// into exactly the files one machine would write.
    ///
    /// Exit code: 0 written, 2 bad input (or shards that do not belong together).
    Report {
        /// Seeds per cell [the matrix file's `seeds`].
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000), conflicts_with = "merge")]
        seeds: Option<u64>,
        /// Output folder.
        #[arg(long, default_value = "reports")]
        out: PathBuf,
        /// The matrix definition.
        #[arg(long, default_value = "reports/matrix.toml", conflicts_with = "merge")]
        matrix: PathBuf,
        /// Worker threads, 1 to 1024 [number of cores].
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
        jobs: Option<u16>,
        /// Compute shard K of N of every cell's seeds (every N-th seed from K-1) and write
        /// <out>/partial-K-of-N.json instead of the reports.
        #[arg(long, value_name = "K/N", conflicts_with = "merge")]
        shard: Option<String>,
        /// Merge these partial files (or folders holding partial-*.json) and write the
        /// reports, byte-identical to a single machine's.
        #[arg(long, value_name = "PATH", num_args = 1..)]
        merge: Vec<PathBuf>,
        /// Replace the report already in --out (its guarantees.md): without it, report
        /// refuses to overwrite one, such as the committed reports/.
        #[arg(long)]
        overwrite: bool,
        /// Take the cells this earlier report (a guarantees.json, its cells/ beside it)
        /// counted for the same experiment (same seeds, same scenario) instead of running
        /// them again; the report names the build that counted each row. Repeatable.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["merge", "shard"])]
        reuse: Vec<PathBuf>,
    },
    /// Cut a violating seed's faults down to the ones that matter, as a new scenario.
    ///
    /// The scenario written has an explicit fault schedule that reproduces the violation.
    ///
    /// Exit code: 0 written, 1 the seed violates nothing (or not --check), 2 bad input.
    Shrink {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// The violating seed.
        #[arg(long, allow_negative_numbers = true)]
        seed: u64,
        /// The check to keep violated [the first one the seed violates].
        #[arg(long)]
        check: Option<String>,
        /// Where to write the shrunk scenario [<scenario>-shrunk-seed-N.toml in the current
        /// folder]. Paths inside it (Lua scripts) are rewritten to stay valid from there.
        #[arg(long)]
        out: Option<PathBuf>,
        /// At most this many candidate runs, 1 to 100000.
        #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        budget: u64,
    },
    /// List the catalogue's scenarios, the algorithms, fault kinds and checks.
    ///
    /// The scenarios are those of a folder (sims/ of a locksim checkout), by algorithm and
    /// catalogue row.
    ///
    /// Example: `locksim list --params redis` (one algorithm's [lock] keys).
    List {
        /// The folder of scenario files to list.
        #[arg(long, default_value = "sims", value_name = "DIR")]
        sims: PathBuf,
        /// Print only this algorithm's `[lock]` keys, defaults and checks.
        #[arg(long, value_name = "ALGORITHM")]
        params: Option<String>,
    },
    /// One client node of a live run, in its own process (started by `locksim live`).
    #[command(hide = true)]
    LiveNode {
        /// The node's spec (JSON).
        spec: String,
    },
    /// One model server of a live run, in its own process (started by `locksim live
    /// --servers model`).
    #[command(hide = true)]
    ServeNode {
        /// The server's spec (JSON).
        spec: String,
    },
    /// Run a scenario against real servers, real processes and real signals.
    ///
    /// The family's real servers run on 127.0.0.1 (redis-server and Sentinel, an etcd
    /// cluster, a ZooKeeper ensemble, MariaDB: started, paused with SIGSTOP,
    /// crashed with SIGKILL and restarted by locksim; all killed on exit), every link
    /// through locksim's proxies (partitions, latency, loss), each client in its own
    /// process (paused with SIGSTOP too), and check its history. Exit 0: expectations
    /// met; 1: not; 2: bad input.
    Live {
        /// Scenario file (TOML) of a family with a real counterpart: redis,
        /// redis-replicated, redlock, raft (etcd), zk (ZooKeeper), db (MariaDB; not with
        /// standby = true).
        scenario: std::path::PathBuf,
        /// How long to run, real time (`30s`, `1500ms`).
        #[arg(long, default_value = "30s")]
        duration: String,
        /// Seed of the random faults and the clients' choices.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write the history as JSONL to FILE.
        #[arg(long)]
        history: Option<std::path::PathBuf>,
        /// An external lock client, "PROGRAM ARGS" (split on spaces), in place of the
        /// scenario's `[workload.client]` or its family's own client (see
        /// docs/external-clients.md).
        #[arg(long, value_name = "COMMAND")]
        client: Option<String>,
        /// The servers: `real` (the family's real ones) or `model` (locksim's model
        /// servers, a process each, faulted as real ones; zk, raft, redis, redlock).
        #[arg(long, default_value = "real", value_name = "real|model")]
        servers: String,
    },
    /// Serve a family's model on 127.0.0.1 to real clients until interrupted.
    ///
    /// For example zkCli.sh, kazoo, Curator for zk; etcdctl, python-etcd3 for raft;
    /// redis-cli, redis-py for redis; mariadb, PyMySQL for db. Exit 0 when stopped, 2 on
    /// bad input.
    Serve {
        /// The family: zk, raft, redis or db.
        family: String,
        /// Loopback port of the (first) server [2181 for zk, 2379 for raft, 6379 for redis, 3306 for db].
        #[arg(long)]
        port: Option<u16>,
        /// Servers: 1, or 3 or 5 (a zk ensemble or raft cluster on consecutive ports).
        #[arg(long, default_value_t = 1)]
        nodes: u32,
        /// zk: ZooKeeper's tickTime, ms (sessions negotiate to 2 to 20 ticks) [2000];
        /// raft: etcd's heartbeat interval, ms (elections after 10) [100].
        #[arg(long)]
        tick_ms: Option<u64>,
        /// Print the events the servers record (JSON lines): an expiry that deleted an
        /// ephemeral node or leased keys, a session or lease its client ended, a new leader.
        /// `--events apply` adds raft's line per log entry applied
        #[arg(long, num_args = 0..=1, value_name = "apply", value_parser = ["apply"])]
        events: Option<Option<String>>,
        /// Seed of the servers' ids (zk sessions, raft leases) and election timeouts, to
        /// repeat a run's ids [a fresh one each start, printed]
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Measure harness speed: seeds/s, simulated seconds per wall second, checker ops/s.
    Bench {
        /// Seeds to run per measurement, 1 to 10000.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000), allow_negative_numbers = true)]
        seeds: u64,
        /// The guarantees matrix whose report time to estimate, row by row (seed 0 of
        /// every cell) [reports/matrix.toml, when there]
        #[arg(long)]
        matrix: Option<PathBuf>,
        /// Print only the speed page's tables, as Markdown (scripts/speed-table writes them
        /// into docs/speed.md)
        #[arg(long)]
        markdown: bool,
    },
}
