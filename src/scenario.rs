//! The TOML scenario format: the envelope (name, duration, workload, network, faults,
//! expectations) with errors that name the file, the key and what was expected. Unknown
//! keys are errors, never silently ignored.
//!
//! The `[lock]` table belongs to the algorithm: the scenario finds the family named by
//! `algorithm` in [`crate::locks::ALGORITHMS`] and hands it the table, so its keys live
//! with the algorithm (`src/locks/<family>/params.rs`). The format is
//! described in `docs/scenario-format.md`; every envelope key is documented below.

use crate::check::{self, Check};
use crate::key_error::{self, KeyError};
use crate::locks::param::{self, Range};
use crate::locks::{AlgorithmConfig, ConfigError, Family, ALGORITHMS};
use crate::sim::random_faults::{
    RandomClock, RandomCrash, RandomDiskStall, RandomPartition, RandomPause,
};
use crate::sim::{FaultPlan, FaultPoint, RandomFaults};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod acquire;
mod builder;
mod client;
mod faults;
mod validate;

pub use acquire::AcquireMode;
pub use builder::ScenarioBuilder;
pub use client::{ClientProgram, DEFAULT_REPLY_GRACE_MS};
use faults::RawFaults;
pub use faults::{
    ClockSpec, CrashSpec, DiskStallSpec, Faults, PartitionSpec, PauseSpec, MAX_RANDOM_FAULTS,
};

/// A scenario error: which file, and what is wrong (including key and expectation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The scenario file.
    pub file: PathBuf,
    /// What is wrong, naming the key and what was expected (no key: the file itself).
    pub error: KeyError,
}

impl ScenarioError {
    /// The message without the file: the key, what is wrong, and where.
    pub fn message(&self) -> String {
        self.error.to_string()
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.error)
    }
}

impl std::error::Error for ScenarioError {}

/// `[workload]`: what every client does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Number of clients `client-0 .. client-N-1` (default 3).
    #[serde(default = "default_clients")]
    pub clients: u32,
    /// How long one acquire may take before giving up, local ms (default 2000).
    #[serde(default = "default_acquire_timeout")]
    pub acquire_timeout_ms: u64,
    /// Work between read and write, local ms [[10, 100]].
    #[serde(default = "default_work")]
    pub work_ms: Range<u64>,
    /// Pause between release and the next acquire, local ms [[0, 50]].
    #[serde(default = "default_think")]
    pub think_ms: Range<u64>,
    /// Skip the write when the lease has run out by the local clock [true].
    #[serde(default = "default_true")]
    pub check_validity: bool,
    /// Send the fencing token to the storage, which rejects stale tokens [true].
    #[serde(default = "default_true")]
    pub fencing: bool,
    /// With fencing: a read also carries its token and raises the storage's high-water
    /// mark, so a stale holder's read-modify-write cannot interleave with a newer
    /// holder's [true]. (With `false`, only writes are fenced, as in Kleppmann's figure.)
    #[serde(default = "default_true")]
    pub fence_reads: bool,
    /// Per-request deadline to the storage, local ms (default 500).
    #[serde(default = "default_storage_timeout")]
    pub storage_timeout_ms: u64,
    /// How an acquire waits for a held lock: `"wait"` (up to `acquire_timeout_ms`),
    /// `"try"` (one non-blocking attempt) or `{ try_for_ms = N }` ["wait"].
    #[serde(default)]
    pub acquire: AcquireMode,
    /// Each holder re-acquires the lock it holds, then releases twice (the inner release,
    /// then the outer), to show which clients are re-entrant; the `reentrant` check
    /// judges it [false].
    #[serde(default)]
    pub reentrant: bool,
    /// `[workload.client]`: an external lock client program in place of the family's
    /// own client, in live mode only (`docs/external-clients.md`); none by default.
    #[serde(default)]
    pub client: Option<ClientProgram>,
}

fn default_clients() -> u32 {
    3
}
fn default_acquire_timeout() -> u64 {
    2000
}
fn default_work() -> Range<u64> {
    Range([10, 100])
}
fn default_think() -> Range<u64> {
    Range([0, 50])
}
fn default_true() -> bool {
    true
}
fn default_storage_timeout() -> u64 {
    500
}

impl Workload {
    /// The fault points the client loop passes through (`src/workload.rs`), besides the
    /// lock client's own (`AlgorithmConfig::client_fault_points`).
    pub const FAULT_POINTS: &'static [FaultPoint] = &[
        FaultPoint::AfterAcquire,
        FaultPoint::BeforeWrite,
        FaultPoint::Waiting,
    ];
}

impl Default for Workload {
    fn default() -> Self {
        toml::from_str("").expect("defaults parse")
    }
}

/// `[network]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// One-way message latency range, ms [[1, 10]].
    #[serde(default = "default_latency")]
    pub latency_ms: Range<u64>,
    /// Probability per tick that a link fails (turmoil `fail_rate`; links repair with
    /// probability 0.5 per tick). turmoil TCP has no retransmit, so a lost segment wedges
    /// the connection until the client's deadline and reconnect [0.0].
    #[serde(default)]
    pub loss: f64,
}

fn default_latency() -> Range<u64> {
    Range([1, 10])
}

impl Default for Network {
    fn default() -> Self {
        Network {
            latency_ms: default_latency(),
            loss: 0.0,
        }
    }
}

/// A named set of nodes a selector may give instead of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Every client, `"clients"`.
    Clients,
    /// Every lock server the algorithm declares, `"servers"`.
    Servers,
    /// Every node, storage included, `"all"`.
    All,
}

impl Group {
    /// Every group.
    pub const ALL: [Group; 3] = [Group::Clients, Group::Servers, Group::All];

    /// Its name in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            Group::Clients => "clients",
            Group::Servers => "servers",
            Group::All => "all",
        }
    }

    /// The group called `name`.
    pub fn from_name(name: &str) -> Option<Group> {
        Group::ALL.into_iter().find(|g| g.name() == name)
    }
}

/// Which nodes a random fault may hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// A group of nodes.
    Group(Group),
    /// An explicit list of node names.
    Nodes(Vec<String>),
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Group(g) => f.write_str(g.name()),
            Selector::Nodes(v) => f.write_str(&v.join(",")),
        }
    }
}

/// A selector as written. A group's name is checked with the rest of the scenario (an
/// unknown one is named with its key), so any string parses here.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(
    untagged,
    expecting = "data did not match any variant of untagged enum Selector"
)]
enum RawSelector {
    /// A group's name.
    Name(String),
    /// An explicit list of node names.
    Nodes(Vec<String>),
}

/// An expectation for one check over a seed sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// No seed may violate the check.
    Holds,
    /// At least one seed must violate the check.
    Violated,
    /// Either is fine.
    Any,
}

/// The envelope as written; `[lock]` is the algorithm's and is read by it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: String,
    #[serde(default)]
    description: String,
    #[allow(dead_code)] // read in the first pass, to pick the family
    algorithm: String,
    duration_ms: u64,
    liveness_ms: Option<u64>,
    #[allow(dead_code)] // read by the algorithm's own parser
    lock: Option<toml::Table>,
    #[serde(default)]
    workload: Workload,
    #[serde(default)]
    network: Network,
    #[serde(default)]
    faults: RawFaults,
    #[serde(default)]
    expect: BTreeMap<String, Expect>,
}

/// What will run a scenario: an external client runs only live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runner {
    /// `locksim run`, `replay`, `report`, ...: the simulation.
    Simulation,
    /// `locksim live`.
    Live,
}

/// The `[[faults.at]]` entries of a scenario, to be checked.
enum ExplicitFaults<'t> {
    /// As written in `text`: tables with their spans, whose lines errors name.
    Written {
        entries: Vec<toml::Spanned<toml::Table>>,
        text: &'t str,
    },
    /// Already typed (a [`ScenarioBuilder`]'s): checked for what types cannot say.
    Typed(crate::sim::Schedule),
}

/// A validated scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Where it was read from (for messages).
    pub file: PathBuf,
    /// Short name.
    pub name: String,
    /// What it reproduces.
    pub description: String,
    /// The lock algorithm, configured by `[lock]`.
    pub lock: Arc<dyn AlgorithmConfig>,
    /// Simulated duration of one seed, ms.
    pub duration_ms: u64,
    /// Liveness window after the last fault heals, ms [5 × the lease].
    pub liveness_ms: u64,
    /// Client behaviour.
    pub workload: Workload,
    /// Network behaviour.
    pub network: Network,
    /// Fault injection.
    pub faults: Faults,
    /// Expectations per check name.
    pub expect: BTreeMap<String, Expect>,
}

/// The longest simulated run: one hour.
pub const MAX_DURATION_MS: u64 = param::MAX_MS;

/// The most `[[faults.at]]` entries a scenario may have (a shrunk schedule has a few; a
/// published timeline a dozen).
pub const MAX_EXPLICIT_FAULTS: usize = 10_000;

/// The largest scenario file accepted, bytes: room for [`MAX_EXPLICIT_FAULTS`] entries,
/// while bounding what parsing a hostile file can cost.
pub const MAX_SCENARIO_BYTES: u64 = 4 << 20;

impl Scenario {
    /// Read and validate a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, ALGORITHMS)
    }

    /// [`Scenario::load`] with another list of algorithm families (e.g. locksim's own
    /// followed by a user's).
    pub fn load_with(path: &Path, families: &[Family]) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(path, &Scenario::read_text(path)?, families)
    }

    /// A scenario file's text: a regular file of at most [`MAX_SCENARIO_BYTES`], UTF-8.
    pub fn read_text(path: &Path) -> Result<String, ScenarioError> {
        use crate::user_file::{read_text_capped, ReadError};
        read_text_capped(path, MAX_SCENARIO_BYTES).map_err(|e| ScenarioError {
            file: path.to_path_buf(),
            error: KeyError::here(match e {
                ReadError::TooLarge(cap) => {
                    format!("the file is larger than {cap} bytes, the most a scenario may be")
                }
                ReadError::NotUtf8 { .. } => format!("{e}; a scenario is a TOML file"),
                ReadError::Io(_) | ReadError::NotRegular(_) => format!("cannot read file: {e}"),
            }),
        })
    }

    /// Parse and validate scenario text; `path` is used in messages only.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(path, text, ALGORITHMS)
    }

    /// [`Scenario::load`] for `locksim live`, the one runner that takes an external
    /// client (`[workload.client]`, its program's path resolved from the file's folder).
    pub fn load_live(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_live_with(path, ALGORITHMS)
    }

    /// [`Scenario::load_live`] with another list of algorithm families: a user's family
    /// is then named as one without a real counterpart, not as an unknown one.
    pub(crate) fn load_live_with(
        path: &Path,
        families: &[Family],
    ) -> Result<Scenario, ScenarioError> {
        let text = Scenario::read_text(path)?;
        Scenario::parse_in(path, &text, families, Runner::Live)
    }

    /// [`Scenario::parse`] with another list of algorithm families (e.g. a test's own).
    pub fn parse_with(
        path: &Path,
        text: &str,
        families: &[Family],
    ) -> Result<Scenario, ScenarioError> {
        Scenario::parse_in(path, text, families, Runner::Simulation)
    }

    fn parse_in(
        path: &Path,
        text: &str,
        families: &[Family],
        runner: Runner,
    ) -> Result<Scenario, ScenarioError> {
        let err = |error: KeyError| ScenarioError {
            file: path.to_path_buf(),
            error,
        };
        let family = pick_family(text, families).map_err(err)?;
        let mut raw: RawScenario = key_error::toml::from_str(text).map_err(err)?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let lock = (family.configure)(text, dir).map_err(|e| {
            err(match e {
                ConfigError::Toml(e) => e,
                ConfigError::Invalid(e) => e.under_key("lock"),
            })
        })?;
        let entries = std::mem::take(&mut raw.faults.at);
        let explicit = ExplicitFaults::Written { entries, text };
        let mut scenario = Scenario::validated(path, raw, lock, explicit, runner).map_err(err)?;
        scenario.workload.client = scenario.workload.client.map(|c| c.resolved_from(dir));
        Ok(scenario)
    }

    /// The scenario from its parsed envelope, configured lock and explicit faults,
    /// checked: the one validation both a file and a [`ScenarioBuilder`] go through.
    fn validated(
        path: &Path,
        raw: RawScenario,
        lock: Arc<dyn AlgorithmConfig>,
        explicit: ExplicitFaults<'_>,
        runner: Runner,
    ) -> Result<Scenario, KeyError> {
        let liveness_ms = raw
            .liveness_ms
            .unwrap_or(lock.lease_ms().unwrap_or(1000).saturating_mul(5));
        let mut scenario = Scenario {
            file: path.to_path_buf(),
            name: raw.name,
            description: raw.description,
            lock,
            duration_ms: raw.duration_ms,
            liveness_ms,
            workload: raw.workload,
            network: raw.network,
            faults: Faults::none(),
            expect: raw.expect,
        };
        scenario.validate_envelope()?;
        if scenario.workload.client.is_some() && runner == Runner::Simulation {
            return Err(KeyError::new(
                "workload.client",
                "an external client runs only under `locksim live` (a real program cannot \
                 be simulated): `locksim live FILE --duration 10s`",
            ));
        }
        scenario.faults = scenario.validate_random(&raw.faults)?;
        scenario.validate_tail()?;
        scenario.validate_unused(&raw.faults)?;
        scenario.faults.at = scenario.explicit_faults(explicit)?;
        Ok(scenario)
    }

    /// The algorithm's name.
    pub fn algorithm(&self) -> &'static str {
        self.lock.name()
    }

    /// Every node name in this scenario: servers, storage, clients.
    pub fn nodes(&self) -> Vec<String> {
        let mut v = self.servers();
        v.push("storage".to_string());
        v.extend(self.clients());
        v
    }

    /// Lock server node names, as the algorithm declares them.
    pub fn servers(&self) -> Vec<String> {
        self.lock.servers()
    }

    /// Client node names.
    pub fn clients(&self) -> Vec<String> {
        (0..self.workload.clients)
            .map(|i| format!("client-{i}"))
            .collect()
    }

    /// The checks run on every seed (the algorithm's), in report order.
    pub fn checks(&self) -> Vec<&'static Check> {
        let mut checks = self.lock.checks();
        // Only a workload that re-enters has anything for `reentrant` to judge.
        if self.workload.reentrant {
            checks.push(&check::REENTRANT);
        }
        checks
    }

    /// Whether a check is shown as not applicable — the report's `–`, the CLI's `n/a`:
    /// it has a `reason` (from [`Scenario::not_applicable`]) and no seed violated it or
    /// left it undecided. A check said not to apply that broke anyway is shown with its
    /// verdict: something is wrong, and hiding it would hide that.
    pub fn shown_not_applicable(
        reason: Option<&String>,
        violations: u64,
        unknown: u64,
    ) -> Option<&String> {
        reason.filter(|_| violations == 0 && unknown == 0)
    }

    /// Standard checks that can say nothing about this scenario, each with the reason:
    /// the ones the algorithm omits, `token-order` and `fencing` when it hands out no
    /// token, `fencing` when the workload sends none. (They may still run, and hold
    /// vacuously; reports show "not applicable" rather than a pass.)
    pub fn not_applicable(&self) -> BTreeMap<&'static str, String> {
        let alg = self.algorithm();
        let mut na: BTreeMap<&'static str, String> = self
            .lock
            .omitted_checks()
            .into_iter()
            .map(|(c, why)| (c.name, why.to_string()))
            .collect();
        let defined = self.checks();
        for c in crate::check::STANDARD {
            // A family's own variant of a standard check (zk's and raft's
            // `lock-linearizable`) takes its name and its place in the reports.
            if !defined.iter().any(|d| d == c || d.name == c.name) {
                na.entry(c.name)
                    .or_insert_with(|| format!("not defined for {alg}"));
            }
        }
        if self.lock.fencing_token().is_none() {
            let why = format!("{alg} with these parameters hands out no fencing token");
            na.insert(
                check::TOKEN_ORDER.name,
                format!("{why}: there are no tokens to order"),
            );
            na.insert(
                check::FENCING.name,
                format!("{why}: the storage has no token to reject a stale write by"),
            );
        } else if !self.workload.fencing {
            na.insert(
                check::FENCING.name,
                "fencing is off: clients send no token, so the storage cannot reject a stale write (`counter` shows what that costs)".to_string(),
            );
        }
        na
    }

    /// Resolve a selector to node names (validated at load time, so never fails after).
    pub fn select(&self, sel: &Selector) -> Vec<String> {
        match sel {
            Selector::Group(Group::Clients) => self.clients(),
            Selector::Group(Group::Servers) => self.servers(),
            Selector::Group(Group::All) => self.nodes(),
            Selector::Nodes(v) => v.clone(),
        }
    }

    /// The random nemesis, with selectors resolved. Faults end `liveness_ms` before the
    /// end of the run, leaving a quiet tail for the liveness check.
    pub fn random_faults(&self) -> RandomFaults {
        let f = &self.faults;
        RandomFaults {
            interval_ms: *f.interval_ms,
            swarm: f.swarm,
            until_ms: self.duration_ms.saturating_sub(self.liveness_ms),
            pause: f.pause.as_ref().map(|p| RandomPause {
                nodes: self.select(&p.nodes),
                duration_ms: *p.duration_ms,
                at: p.at,
            }),
            partition: f.partition.as_ref().map(|p| RandomPartition {
                nodes: self.select(&p.nodes),
                duration_ms: *p.duration_ms,
                oneway: p.oneway,
            }),
            clock: f.clock.as_ref().map(|c| RandomClock {
                nodes: self.select(&c.nodes),
                skew_ms: c.skew_ms.map(|r| r.0),
                drift_ppm: c.drift_ppm.map(|r| r.0),
                jump_ms: c.jump_ms.map(|r| r.0),
            }),
            crash: f.crash.as_ref().map(|c| RandomCrash {
                nodes: self.select(&c.nodes),
                down_ms: *c.down_ms,
                at: c.at,
            }),
            disk_stall: f.disk_stall.as_ref().map(|d| RandomDiskStall {
                nodes: self.disk_nodes_in(&d.nodes),
                duration_ms: *d.duration_ms,
            }),
        }
    }

    /// The nodes with a disk (see [`Algorithm::disk_nodes`](crate::locks::Algorithm)).
    pub fn disk_nodes(&self) -> Vec<String> {
        self.lock.disk_nodes()
    }

    /// The selected nodes that have a disk, in node order.
    fn disk_nodes_in(&self, sel: &Selector) -> Vec<String> {
        let disks = self.disk_nodes();
        self.select(sel)
            .into_iter()
            .filter(|n| disks.contains(n))
            .collect()
    }

    /// The faults of a run: the explicit schedule plus the random nemesis.
    pub fn fault_plan(&self) -> FaultPlan {
        FaultPlan::Drawn {
            explicit: self.faults.at.clone(),
            random: Box::new(self.random_faults()),
        }
    }
}

/// The first pass: the family that `algorithm` names, which decides the shape of
/// `[lock]`, and every table of the envelope a table.
fn pick_family<'f>(text: &str, families: &'f [Family]) -> Result<&'f Family, KeyError> {
    let table: toml::Table = key_error::toml::from_str(text)?;
    let algorithm = match table.get("algorithm") {
        None => {
            return Err(KeyError::missing(
                "algorithm",
                format!("expected one of {}", family_names(families)),
            ))
        }
        Some(toml::Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(KeyError::new(
                "algorithm",
                format!("expected a string, got {}", other.type_str()),
            ))
        }
    };
    // Every table of the envelope must be a table: `[[lock]]` (an array of tables)
    // would otherwise be read field by field as a sequence.
    for key in ["lock", "workload", "network", "faults", "expect"] {
        if let Some(v) = table.get(key).filter(|v| !v.is_table()) {
            let got = match v {
                toml::Value::Array(a) if a.iter().all(|x| x.is_table()) => {
                    format!("an array of tables (`[[{key}]]`)")
                }
                other => format!("a {}", other.type_str()),
            };
            return Err(KeyError::new(
                key,
                format!("expected a table (`[{key}]`), got {got}"),
            ));
        }
    }
    find_family(&algorithm, families)
}

/// The family called `algorithm`; the error names the `algorithm` key and the choices.
fn find_family<'f>(algorithm: &str, families: &'f [Family]) -> Result<&'f Family, KeyError> {
    families
        .iter()
        .find(|f| f.name == algorithm)
        .ok_or_else(|| {
            KeyError::new(
                "algorithm",
                format!(
                    "unknown algorithm `{algorithm}`; expected one of {}",
                    family_names(families)
                ),
            )
        })
}

/// The families' names, for messages.
fn family_names(families: &[Family]) -> String {
    families
        .iter()
        .map(|f| f.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_error::Place;

    const MINIMAL: &str = r#"
name = "t"
algorithm = "redis"
duration_ms = 1000
[lock]
ttl_ms = 100
"#;

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(Path::new("sims/t.toml"), text)
    }

    #[test]
    fn a_familys_own_lock_linearizable_stands_for_the_standard_one() {
        for file in [
            "raft-16-waiter-lease-expires.toml",
            "zk-13-session-expiry-pause.toml",
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("sims")
                .join(file);
            let s = Scenario::load(&path).unwrap();
            assert!(s.checks().iter().all(|c| *c != &check::LOCK_LINEARIZABLE));
            let na = s.not_applicable();
            assert!(
                !na.contains_key(check::LOCK_LINEARIZABLE.name),
                "{file}: {na:?}"
            );
        }
    }

    /// toml's errors name the key from where they point in the document, and the hint
    /// comes from the type: inside inline tables, array elements and quoted keys, and in
    /// a file with `[[faults.at]]` entries (kept as spanned tables).
    #[test]
    fn toml_errors_name_the_key_they_point_at() {
        let cases = [
            (
                "network = { latency_ms = \"x\" }\n",
                "key `network.latency_ms`: invalid type",
            ),
            (
                "[workload]\nwork_ms = [\n  1,\n  \"x\",\n]\n",
                "key `workload.work_ms[1]`: invalid type: string \"x\", expected u64 (line 7, column 3)",
            ),
            (
                "[workload]\n\"clients\" = \"x\"\n",
                "key `workload.clients`: invalid type",
            ),
            (
                "[[faults.at]]\nat_ms = 5\nkind = \"crash\"\nnodes = [\"redis-0\"]\n[workload]\nthnk_ms = [1, 2]\n",
                "unknown field `thnk_ms`, expected one of `clients`",
            ),
        ];
        for (tail, want) in cases {
            let text = format!("name = \"t\"\nalgorithm = \"redis\"\nduration_ms = 1000\n{tail}");
            let e = parse(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{tail}: {e}");
        }
        let e = parse("name = \"t\"\nalgorithm = \"redis\"\nduration_ms = 1000\n[[faults.at]]\nat_ms = 5\nkind = \"crash\"\nnodes = [\"redis-0\"]\n[workload]\nthnk_ms = [1, 2]\n").unwrap_err().to_string();
        assert!(
            e.ends_with("(did you mean `think_ms`?) (line 9, column 1)"),
            "{e}"
        );
        let e = parse(&format!("{MINIMAL}tll_ms = 5\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("(did you mean `ttl_ms`?)"), "{e}");
    }

    #[test]
    fn minimal_scenario_gets_defaults() {
        let s = parse(MINIMAL).unwrap();
        assert_eq!(s.liveness_ms, 500);
        assert_eq!(s.workload.clients, 3);
        assert_eq!(s.network.latency_ms, Range([1, 10]));
        assert_eq!(
            s.nodes(),
            ["redis-0", "storage", "client-0", "client-1", "client-2"]
        );
    }

    #[test]
    fn unknown_key_names_file_key_and_line() {
        let e = parse(&format!("{MINIMAL}bogus = 1\n")).unwrap_err();
        let m = e.to_string();
        assert!(m.starts_with("sims/t.toml: "), "{m}");
        assert!(m.contains("bogus"), "{m}");
        assert!(m.contains("line"), "{m}");
    }

    #[test]
    fn unknown_lock_key_is_an_error() {
        let e = parse(&MINIMAL.replace("ttl_ms = 100", "ttl = 100")).unwrap_err();
        assert!(e.message().contains("unknown field `ttl`"), "{e}");
    }

    #[test]
    fn ranges_are_exactly_two_numbers() {
        for bad in ["[1, 2, \"junk\"]", "[1, 2, 3]", "[1]", "[]"] {
            let e = parse(&format!("{MINIMAL}[workload]\nwork_ms = {bad}\n")).unwrap_err();
            assert!(
                e.message().contains("workload.work_ms") && e.message().contains("exactly two"),
                "{bad}: {e}"
            );
        }
        let e = parse(&MINIMAL.replace("ttl_ms = 100", "ttl_ms = 100\nretry_delay_ms = [1, 2, 3]"))
            .unwrap_err();
        assert!(e.message().contains("exactly two"), "{e}");
    }

    #[test]
    fn messages_name_long_keys_without_echoing_them() {
        let e = parse(&format!("{MINIMAL}{} = 1\n", "k".repeat(5000))).unwrap_err();
        assert!(e.message().contains("(5000 characters)"), "{e}");
        assert!(e.message().len() < 1000, "{e}");
        let e = parse(&format!("{MINIMAL}[workload]\nclients =")).unwrap_err();
        assert!(e.message().contains("expected a value"), "{e}");
    }

    #[test]
    fn bad_range_names_key() {
        let e = parse(&format!("{MINIMAL}[workload]\nwork_ms = [5, 1]\n")).unwrap_err();
        assert_eq!(
            e.message(),
            "key `workload.work_ms`: expected [min, max] with min <= max, got [5, 1]"
        );
    }

    #[test]
    fn unknown_algorithm_and_keys_of_another_deployment() {
        let e = parse(&MINIMAL.replace("\"redis\"", "\"etcd\"")).unwrap_err();
        assert!(e.message().contains("unknown algorithm `etcd`"), "{e}");
        for name in ["redis", "redis-replicated", "redlock", "db", "raft", "zk"] {
            assert!(e.message().contains(name), "{e}");
        }
        let e = parse(&format!("{MINIMAL}replicas = 2\n")).unwrap_err();
        assert!(
            e.message()
                .contains("only valid with algorithm = \"redis-replicated\""),
            "{e}"
        );
    }

    #[test]
    fn replicated_and_redlock_node_names() {
        let s = parse(&format!(
            "{}replicas = 1\nsentinels = 2\n",
            MINIMAL.replace("\"redis\"", "\"redis-replicated\"")
        ))
        .unwrap();
        assert_eq!(
            s.servers(),
            ["redis-0", "redis-1", "sentinel-0", "sentinel-1"]
        );
        let s = parse(&MINIMAL.replace("\"redis\"", "\"redlock\"")).unwrap();
        assert_eq!(s.servers().len(), 5);
        let e = parse(&format!(
            "{}unlock = \"del\"\n",
            MINIMAL.replace("\"redis\"", "\"redlock\"")
        ))
        .unwrap_err();
        assert!(e.message().contains("unknown field `unlock`"), "{e}");
    }

    #[test]
    fn unknown_node_is_an_error() {
        let e = parse(&format!(
            "{MINIMAL}[[faults.at]]\nat_ms = 10\nkind = \"pause\"\nnodes = [\"client-9\"]\nduration_ms = 5\n"
        ))
        .unwrap_err();
        assert!(e.message().contains("unknown node `client-9`"), "{e}");
        assert_eq!(e.error.path().to_string(), "faults.at[0].nodes");
        assert_eq!(e.error.place(), Some(Place::Entry { line: 7 }));
    }

    #[test]
    fn explicit_fault_fields_are_checked_per_kind() {
        let e = parse(&format!(
            "{MINIMAL}[[faults.at]]\nat_ms = 10\nkind = \"pause\"\nnodes = [\"client-0\"]\n"
        ))
        .unwrap_err();
        assert!(
            e.message().contains("faults.at[0].duration_ms`: required"),
            "{e}"
        );
        let e = parse(&format!(
            "{MINIMAL}[[faults.at]]\nat_ms = 10\nkind = \"heal\"\ndelta_ms = 5\n"
        ))
        .unwrap_err();
        assert!(e.message().contains("not used by kind"), "{e}");
    }

    #[test]
    fn unknown_check_in_expect() {
        let e = parse(&format!("{MINIMAL}[expect]\nsafety = \"holds\"\n")).unwrap_err();
        assert!(e.message().contains("unknown check"), "{e}");
        let e = parse(&format!("{MINIMAL}[expect]\nmutex = \"maybe\"\n")).unwrap_err();
        assert!(e.message().contains("unknown variant `maybe`"), "{e}");
    }

    #[test]
    fn broken_toml_is_an_error() {
        let e = parse("name = \"x\nalgorithm = 3").unwrap_err();
        assert!(e.message().contains("line"), "{e}");
        let e = parse("algorithm = 3").unwrap_err();
        assert!(e.message().contains("expected a string"), "{e}");
    }

    #[test]
    fn type_errors_name_the_dotted_key() {
        let e = parse(&format!("{MINIMAL}[workload]\nclients = \"many\"\n")).unwrap_err();
        assert!(
            e.message()
                .starts_with("key `workload.clients`: invalid type"),
            "{e}"
        );
        assert!(e.message().contains("line 8"), "{e}");
    }

    #[test]
    fn random_faults_need_room_before_the_liveness_tail() {
        let e = parse(&format!(
            "{}[faults]\ncrash = {{ nodes = \"servers\", down_ms = [1, 2] }}\n",
            MINIMAL.replace("ttl_ms = 100", "ttl_ms = 300")
        ))
        .unwrap_err();
        assert!(e.message().contains("leaves no time"), "{e}");
    }

    #[test]
    fn absurd_times_are_rejected_not_overflowed() {
        let e = parse(&format!(
            "{MINIMAL}[workload]\nwork_ms = [0, 9223372036854775807]\n"
        ))
        .unwrap_err();
        assert!(
            e.message().contains("workload.work_ms") && e.message().contains("one hour"),
            "{e}"
        );
        let e = parse(&MINIMAL.replace("ttl_ms = 100", "ttl_ms = 99999999999")).unwrap_err();
        assert!(e.message().contains("lock.ttl_ms"), "{e}");
    }

    /// No input text makes the parser panic.
    #[test]
    fn parser_never_panics() {
        use proptest::prelude::*;
        let keys = "(name|algorithm|duration_ms|ttl_ms|clients|work_ms|at_ms|kind|nodes|\\[lock\\]|\\[workload\\]|\\[\\[faults.at\\]\\]|\\[faults\\]|pause|=|\"redis\"|\"pause\"|\\[1, 2\\]|-5|\n| ){0,40}";
        proptest!(ProptestConfig::with_cases(500), |(text in keys)| {
            let _ = parse(&text);
            let _ = parse(&format!("{MINIMAL}{text}"));
        });
    }

    #[test]
    fn fault_points_that_can_never_strike_are_rejected() {
        let pause = |nodes: &str, at: &str| {
            format!("{MINIMAL}[[faults.at]]\nat_ms = 10\nkind = \"pause\"\nnodes = [{nodes}]\nduration_ms = 5\nat = \"{at}\"\n")
        };
        let e = parse(&pause("\"redis-0\"", "before-write")).unwrap_err();
        assert!(e.message().contains("`redis-0` is not a client"), "{e}");
        let e = parse(&pause("\"client-0\"", "mid-acquire")).unwrap_err();
        assert!(e.message().contains("never reached"), "{e}");
        assert!(parse(&pause("\"client-0\"", "before-write")).is_ok());
        let two_step = pause("\"client-0\"", "mid-acquire").replace(
            "ttl_ms = 100",
            "ttl_ms = 100\nacquire = \"setnx-then-expire\"",
        );
        assert!(parse(&two_step).is_ok());
        let e = parse(&format!(
            "{MINIMAL}[faults]\npause = {{ nodes = \"all\", duration_ms = [1, 2], at = \"before-write\" }}\n"
        ))
        .unwrap_err();
        assert!(e.message().contains("faults.pause.at"), "{e}");
    }

    #[test]
    fn selector_groups_and_lists() {
        let s = parse(&format!(
            "{MINIMAL}[faults]\npause = {{ nodes = \"clients\", duration_ms = [1, 2] }}\npartition = {{ nodes = [\"redis-0\"], duration_ms = [1, 2] }}\n"
        ))
        .unwrap();
        assert_eq!(s.select(&s.faults.pause.as_ref().unwrap().nodes).len(), 3);
        let e = parse(&format!(
            "{MINIMAL}[faults]\npause = {{ nodes = \"everyone\", duration_ms = [1, 2] }}\n"
        ))
        .unwrap_err();
        assert_eq!(e.error.path().to_string(), "faults.pause.nodes");
        assert_eq!(
            s.faults.partition.as_ref().unwrap().nodes,
            Selector::Nodes(vec!["redis-0".into()])
        );
        assert_eq!(
            s.faults.pause.as_ref().unwrap().nodes,
            Selector::Group(Group::Clients)
        );
    }
}
