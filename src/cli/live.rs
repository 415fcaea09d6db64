//! `locksim live`: one scenario against its family's real servers (or, with `--servers
//! model`, locksim's model servers, a process each) on loopback for a bounded real
//! duration, its history checked as in simulation (see [`crate::live`]).

use super::EXIT_BAD_INPUT;
use crate::check::Verdict;
use crate::live::LiveServers;
use crate::locks::Family;
use crate::scenario::{ClientProgram, Expect, Scenario};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// A `--duration` that is not one: the text given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadDuration(pub String);

impl std::fmt::Display for BadDuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bad --duration `{}`: expected e.g. 30s or 1500ms, at most 1 h",
            self.0
        )
    }
}

impl std::error::Error for BadDuration {}

/// Parse a duration: `30s`, `1500ms` or a bare number of seconds.
pub fn parse_duration_ms(s: &str) -> Result<u64, BadDuration> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1000)
    } else {
        (s, 1000)
    };
    match num.trim().parse::<u64>() {
        Ok(n) if n > 0 && n * scale <= 3_600_000 => Ok(n * scale),
        _ => Err(BadDuration(s.to_string())),
    }
}

/// One line on the servers' start and what the proxies carried: connections, the links
/// between servers and, with an external client, `external_clients`' links to servers.
fn proxied_summary(
    run: &crate::live::LiveRun,
    servers: &[String],
    external_clients: Option<&[String]>,
) -> String {
    let total: u64 = run.connections.values().sum();
    let between: Vec<String> = run
        .connections
        .iter()
        .filter(|((from, _), _)| servers.contains(from))
        .map(|((from, to), n)| format!("{from}→{to} ×{n}"))
        .collect();
    let mut line = format!(
        "servers ready in {} ms; proxied: {total} connections on {} links",
        run.ready_ms,
        run.connections.len()
    );
    if !between.is_empty() {
        line += &format!("; between servers: {}", between.join(", "));
    }
    // An external client's connections are its node's (the adapter is in the node's
    // process group): shown, so that a user sees they cross the proxies.
    if let Some(clients) = external_clients {
        let clients: Vec<String> = run
            .connections
            .iter()
            .filter(|((from, to), _)| clients.contains(from) && servers.contains(to))
            .map(|((from, to), n)| format!("{from}→{to} ×{n}"))
            .collect();
        line += &format!("; clients to servers: {}", clients.join(", "));
    }
    let unknown: u64 = run
        .connections
        .iter()
        .filter(|((from, _), _)| from == "?")
        .map(|(_, n)| n)
        .sum();
    if unknown > 0 {
        line += &format!(
            "; {unknown} of unknown source (closed before the kernel showed its process): \
             never cut"
        );
    }
    line
}

/// The scenario at `path` for a live run, its external client replaced by `client`
/// (`"CMD ARGS"`) if given; `None` after printing why it cannot run.
fn load_with_client(path: &Path, client: Option<&str>, families: &[Family]) -> Option<Scenario> {
    let mut scenario = match Scenario::load_live_with(path, families) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim: {e}");
            return None;
        }
    };
    if let Some(words) = client {
        let Some(program) =
            ClientProgram::from_command_line(words, scenario.workload.client.as_ref())
        else {
            eprintln!("locksim: --client needs a command, e.g. --client \"python3 adapter.py\"");
            return None;
        };
        scenario.workload.client = Some(program);
    }
    Some(scenario)
}

/// Print the run's first line: the scenario, its duration and seed, and which servers
/// (real or locksim's model), and its external client if any; an error if the scenario
/// has no servers of that kind.
fn announce(
    scenario: &Scenario,
    seed: u64,
    servers: LiveServers,
) -> Result<(), crate::live::LiveError> {
    let system = crate::live::cluster_of(scenario, servers)?.system();
    let which = match servers {
        LiveServers::Real => format!("real {system}"),
        LiveServers::Model => format!("{system} (--servers model), a process a server,"),
    };
    println!(
        "live: {} ({}) for {} ms, seed {seed}, {which} on 127.0.0.1 behind locksim's proxies",
        scenario.name,
        scenario.lock.name(),
        scenario.duration_ms,
    );
    if let Some(program) = &scenario.workload.client {
        println!("  clients: the external client `{}`", program.display());
    }
    Ok(())
}

/// A flag SIGINT and SIGTERM set: a first signal stops the run (and kills the servers); a
/// second one exits.
fn stop_on_signals() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(signal, 130, stop.clone());
        let _ = signal_hook::flag::register(signal, stop.clone());
    }
    stop
}

/// What `locksim live` was asked for, beside the scenario file.
#[derive(Debug, Clone, Copy)]
pub struct LiveOptions<'a> {
    /// How long the run lasts (`--duration`: `30s`, `1500ms`, a bare number of seconds).
    pub duration: &'a str,
    /// The seed of its faults.
    pub seed: u64,
    /// `real` or `model` (see `LiveServers::parse`).
    pub servers: &'a str,
    /// Where to write the history (JSONL), if anywhere.
    pub history: Option<&'a Path>,
    /// An external client, `"CMD ARGS"`, replacing the scenario's.
    pub client: Option<&'a str>,
    /// The algorithms a scenario may name (locksim's own, and a user's, which have no
    /// real counterpart: named so, not as unknown).
    pub families: &'a [Family],
}

/// Run `path` live as `options` say. Exit 0 when every check met the scenario's
/// `expect`, 1 when not, 2 on bad input, when the servers cannot be run or an external
/// client fails, 130 when interrupted.
pub fn live_command(path: &Path, options: LiveOptions<'_>) -> u8 {
    let LiveOptions {
        duration,
        seed,
        servers,
        history,
        client,
        families,
    } = options;
    let duration_ms = match parse_duration_ms(duration) {
        Ok(ms) => ms,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    crate::live::remove_orphaned_folders(&std::env::temp_dir());
    let servers = match LiveServers::parse(servers) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let Some(mut scenario) = load_with_client(path, client, families) else {
        return EXIT_BAD_INPUT;
    };
    // The scenario's timeline runs for the live duration (explicit faults past it never
    // happen; random ones are drawn within it).
    scenario.duration_ms = duration_ms;
    let stop = stop_on_signals();
    if let Err(e) = announce(&scenario, seed, servers) {
        eprintln!("locksim: {}: {e}", path.display());
        return EXIT_BAD_INPUT;
    }
    let run = match crate::live::run_live(&scenario, seed, servers, stop.clone()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("locksim: {}: {e}", path.display());
            // Interrupted while the servers started: as an interrupted run.
            return if stop.load(std::sync::atomic::Ordering::Relaxed) {
                130
            } else {
                EXIT_BAD_INPUT
            };
        }
    };
    for s in &run.skipped {
        println!("  not applied live: {s}");
    }
    let clients = scenario.clients();
    let external = scenario.workload.client.is_some().then_some(&clients[..]);
    println!("  {}", proxied_summary(&run, &scenario.servers(), external));
    if let Some(out) = history {
        let text = crate::history::to_jsonl(&run.result.history);
        if let Err(e) = std::fs::write(out, text) {
            eprintln!("locksim: {}: cannot write: {e}", out.display());
            return EXIT_BAD_INPUT;
        }
    }
    let reports = crate::check_run(&scenario, &run.result);
    let mut met = true;
    for r in &reports {
        if let Some((_, why)) = run.unchecked.iter().find(|(c, _)| *c == r.name) {
            println!("  {:<21}not checked live: {why}", r.name);
            continue;
        }
        let expect = scenario.expect.get(r.name).copied();
        let ok = !matches!(
            (expect, r.verdict),
            (Some(Expect::Holds), Verdict::Violated) | (Some(Expect::Violated), Verdict::Holds)
        );
        met &= ok;
        let verdict = match r.verdict {
            Verdict::Holds => "holds".to_string(),
            Verdict::Violated if !r.is_violation() => {
                format!("quality: broken ({} violations)", r.violations.len())
            }
            Verdict::Violated => format!("violated ({} violations)", r.violations.len()),
            Verdict::Unknown => "unknown".to_string(),
        };
        let exp = match expect {
            Some(Expect::Holds) => "expect holds",
            Some(Expect::Violated) => "expect violated",
            _ => "",
        };
        let mark = if expect.is_some_and(|e| e != Expect::Any) {
            if ok {
                " met"
            } else {
                " NOT met"
            }
        } else {
            ""
        };
        println!("  {:<21}{verdict:<28}{exp}{mark}", r.name);
        if let Some(v) = r.violations.first() {
            println!("    e.g. {}", v.message);
        }
    }
    println!(
        "{} events against {} servers; {}",
        run.result.history.len(),
        servers.name(),
        if met {
            "expectations met"
        } else {
            "expectations NOT met"
        }
    );
    if run.result.error.is_some() {
        println!("  {}", run.result.error.as_deref().unwrap_or_default());
        return 130;
    }
    u8::from(!met)
}
