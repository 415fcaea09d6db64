//! The TOML scenario format: parsing and validation with errors that name the file, the
//! key and what was expected. Unknown keys are errors, never silently ignored.
//!
//! See `DESIGN.md` ("Scenario format") for the full format; every key is documented on
//! the struct that holds it below.

use crate::check::CHECK_NAMES;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A scenario error: which file, and what is wrong (including key and expectation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The scenario file.
    pub file: PathBuf,
    /// What is wrong, naming the key and what was expected.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// An inclusive range `[min, max]` drawn uniformly.
pub type Range<T> = [T; 2];

/// Lock algorithms locksim knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Single Redis node with the SET NX PX lock (or its variants).
    Redis,
    /// A Redis primary with asynchronous replicas and sentinel failover; the same lock
    /// client, which finds the primary through the sentinels.
    RedisReplicated,
    /// Redlock over N independent Redis nodes.
    Redlock,
}

impl Algorithm {
    /// Every algorithm name in the DESIGN, with whether it is implemented.
    pub const ALL: &'static [(&'static str, bool)] = &[
        ("redis", true),
        ("redis-replicated", true),
        ("redlock", true),
        ("zk", false),
        ("raft", false),
    ];

    /// The scenario name of the algorithm.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Redis => "redis",
            Algorithm::RedisReplicated => "redis-replicated",
            Algorithm::Redlock => "redlock",
        }
    }
}

/// How the Redis lock is acquired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Acquire {
    /// `SET key value NX PX ttl`: atomic.
    SetNxPx,
    /// `SETNX key value` then `PEXPIRE key ttl`: a crash in between leaves a key that never
    /// expires (catalogue row 3).
    SetnxThenExpire,
}

/// How the Redis lock is released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unlock {
    /// The redis.io script: delete only if the value is still ours.
    CompareAndDelete,
    /// Plain `DEL`: deletes whoever's lock is there (catalogue row 2).
    Del,
}

/// Where a fencing token comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenSource {
    /// No token.
    None,
    /// `INCR` of a counter key, atomically with the acquire.
    Incr,
}

/// Lease renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Renew {
    /// The lease runs for `ttl_ms` and is never extended.
    None,
    /// Redisson-style watchdog: extend to `ttl_ms` every `ttl_ms / 3` while held.
    Watchdog,
}

/// Redis persistence (`appendonly` + `appendfsync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Persistence {
    /// No persistence: a restart comes back empty.
    None,
    /// AOF fsynced once a second: a crash loses up to a second of writes.
    Everysec,
    /// AOF fsynced before every reply.
    Always,
}

/// `[lock]` for `algorithm = "redis"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisParams {
    /// Lease time in ms [1000].
    #[serde(default = "default_ttl")]
    pub ttl_ms: u64,
    /// Acquire variant [set-nx-px].
    #[serde(default = "default_acquire")]
    pub acquire: Acquire,
    /// Unlock variant [compare-and-delete].
    #[serde(default = "default_unlock")]
    pub unlock: Unlock,
    /// Fencing token source [none].
    #[serde(default = "default_token")]
    pub token: TokenSource,
    /// Renewal [none].
    #[serde(default = "default_renew")]
    pub renew: Renew,
    /// Server persistence [none].
    #[serde(default = "default_persistence")]
    pub persistence: Persistence,
    /// Per-request deadline, client local ms [200].
    #[serde(default = "default_request_timeout")]
    pub request_timeout_ms: u64,
    /// Delay between acquire attempts, local ms [[20, 60]].
    #[serde(default = "default_retry_delay")]
    pub retry_delay_ms: Range<u64>,
    /// Clock-drift allowance subtracted from the lease: `ttl × factor + 2 ms` [0.01].
    #[serde(default = "default_drift_factor")]
    pub drift_factor: f64,
    /// `redis-replicated` only: number of replicas [2].
    pub replicas: Option<u32>,
    /// `redis-replicated` only: number of sentinels [3] (quorum: a majority of them).
    pub sentinels: Option<u32>,
    /// `redis-replicated` only: a sentinel considers the primary down after this long
    /// without a reply to PING [1000].
    pub down_after_ms: Option<u64>,
    /// `redis-replicated` only: delay before a replica applies each replicated command,
    /// ms [[0, 50]].
    pub replication_lag_ms: Option<Range<u64>>,
    /// `redis-replicated` only: after acquiring, the client runs `WAIT wait_replicas
    /// wait_timeout_ms` and treats fewer acknowledgements as a failed acquire [0: no WAIT].
    pub wait_replicas: Option<u32>,
    /// `redis-replicated` only: the WAIT timeout, ms [100].
    pub wait_timeout_ms: Option<u64>,
}

/// Replication settings of `redis-replicated`, with defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Replication {
    /// Number of replicas.
    pub replicas: u32,
    /// Number of sentinels.
    pub sentinels: u32,
    /// Down-after period, ms.
    pub down_after_ms: u64,
    /// Replication lag range, ms.
    pub lag_ms: Range<u64>,
    /// Replicas to WAIT for after an acquire (0: no WAIT).
    pub wait_replicas: u32,
    /// WAIT timeout, ms.
    pub wait_timeout_ms: u64,
}

impl RedisParams {
    /// The replication settings with their defaults.
    pub fn replication(&self) -> Replication {
        Replication {
            replicas: self.replicas.unwrap_or(2),
            sentinels: self.sentinels.unwrap_or(3),
            down_after_ms: self.down_after_ms.unwrap_or(1000),
            lag_ms: self.replication_lag_ms.unwrap_or([0, 50]),
            wait_replicas: self.wait_replicas.unwrap_or(0),
            wait_timeout_ms: self.wait_timeout_ms.unwrap_or(100),
        }
    }

    /// The replication-only keys that are set (an error for plain `redis`).
    fn replication_keys_set(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        for (k, set) in [
            ("replicas", self.replicas.is_some()),
            ("sentinels", self.sentinels.is_some()),
            ("down_after_ms", self.down_after_ms.is_some()),
            ("replication_lag_ms", self.replication_lag_ms.is_some()),
            ("wait_replicas", self.wait_replicas.is_some()),
            ("wait_timeout_ms", self.wait_timeout_ms.is_some()),
        ] {
            if set {
                v.push(k);
            }
        }
        v
    }
}

/// Which clock a Redlock client measures elapsed acquisition time with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClockKind {
    /// The monotonic clock: immune to wall-clock steps.
    Monotonic,
    /// The wall clock, as the reference clients that call `time()` do.
    Wall,
}

/// `[lock]` for `algorithm = "redlock"` (redis.io, "Distributed Locks with Redis").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedlockParams {
    /// Number of independent Redis nodes `redis-0 .. redis-N-1` [5].
    #[serde(default = "default_redlock_nodes")]
    pub nodes: u32,
    /// Lease time in ms [1000].
    #[serde(default = "default_ttl")]
    pub ttl_ms: u64,
    /// Drift allowance: `drift = ttl × factor + 2 ms` [0.01].
    #[serde(default = "default_drift_factor")]
    pub drift_factor: f64,
    /// Clock used to measure the acquisition time [monotonic].
    #[serde(default = "default_clock_kind")]
    pub clock: ClockKind,
    /// Refuse a majority whose remaining validity is not positive [true]. `false` models a
    /// client that returns as soon as a majority answers, without re-checking.
    #[serde(default = "default_true")]
    pub reject_expired: bool,
    /// Per-node request deadline, local ms [50] (small against the TTL, as the spec asks).
    #[serde(default = "default_node_timeout")]
    pub node_timeout_ms: u64,
    /// Attempts per acquire before giving up [3].
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Random delay between attempts, local ms [[50, 150]].
    #[serde(default = "default_redlock_retry_delay")]
    pub retry_delay_ms: Range<u64>,
    /// Each node's persistence [none].
    #[serde(default = "default_persistence")]
    pub persistence: Persistence,
    /// A restarted node stays unavailable this long before serving (antirez's delayed
    /// restart; at least the max TTL makes a fast restart safe) [0].
    #[serde(default)]
    pub restart_delay_ms: u64,
}

fn default_redlock_nodes() -> u32 {
    5
}
fn default_clock_kind() -> ClockKind {
    ClockKind::Monotonic
}
fn default_node_timeout() -> u64 {
    50
}
fn default_retries() -> u32 {
    3
}
fn default_redlock_retry_delay() -> Range<u64> {
    [50, 150]
}

fn default_ttl() -> u64 {
    1000
}
fn default_acquire() -> Acquire {
    Acquire::SetNxPx
}
fn default_unlock() -> Unlock {
    Unlock::CompareAndDelete
}
fn default_token() -> TokenSource {
    TokenSource::None
}
fn default_renew() -> Renew {
    Renew::None
}
fn default_persistence() -> Persistence {
    Persistence::None
}
fn default_request_timeout() -> u64 {
    200
}
fn default_retry_delay() -> Range<u64> {
    [20, 60]
}
fn default_drift_factor() -> f64 {
    0.01
}

/// Algorithm parameters, one variant per algorithm.
#[derive(Debug, Clone, PartialEq)]
pub enum LockParams {
    /// `algorithm = "redis"` and `"redis-replicated"`.
    Redis(RedisParams),
    /// `algorithm = "redlock"`.
    Redlock(RedlockParams),
}

impl LockParams {
    /// The lease time, if the algorithm is lease based.
    pub fn ttl_ms(&self) -> u64 {
        match self {
            LockParams::Redis(p) => p.ttl_ms,
            LockParams::Redlock(p) => p.ttl_ms,
        }
    }
}

/// `[workload]`: what every client does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Number of clients `client-0 .. client-N-1` [3].
    #[serde(default = "default_clients")]
    pub clients: u32,
    /// How long one acquire may take before giving up, local ms [2000].
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
    /// Per-request deadline to the storage, local ms [500].
    #[serde(default = "default_storage_timeout")]
    pub storage_timeout_ms: u64,
}

fn default_clients() -> u32 {
    3
}
fn default_acquire_timeout() -> u64 {
    2000
}
fn default_work() -> Range<u64> {
    [10, 100]
}
fn default_think() -> Range<u64> {
    [0, 50]
}
fn default_true() -> bool {
    true
}
fn default_storage_timeout() -> u64 {
    500
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
    [1, 10]
}

impl Default for Network {
    fn default() -> Self {
        Network {
            latency_ms: default_latency(),
            loss: 0.0,
        }
    }
}

/// Which nodes a fault may hit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Selector {
    /// `"clients"`, `"servers"` or `"all"`.
    Group(String),
    /// An explicit list of node names.
    Nodes(Vec<String>),
}

/// Where a pause or crash strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FaultPoint {
    /// At the drawn instant, wherever the node is.
    #[default]
    Anywhere,
    /// Armed at the drawn instant; strikes when the client next reaches the point between
    /// its validity check and its write (Kleppmann's window).
    BeforeWrite,
    /// Armed at the drawn instant; strikes right after the client's next successful
    /// acquire, before it reads: the holder then sleeps through its lease and wakes up
    /// believing it holds the lock (an extension of DESIGN.md).
    AfterAcquire,
    /// Armed at the drawn instant; strikes inside a multi-step acquire, after the lock key
    /// is set and before it is complete (e.g. between SETNX and EXPIRE). An extension of
    /// DESIGN.md, which names only the first two points: row 3 needs it.
    MidAcquire,
}

impl FaultPoint {
    /// Name used in scenarios and events.
    pub fn name(self) -> &'static str {
        match self {
            FaultPoint::Anywhere => "anywhere",
            FaultPoint::BeforeWrite => "before-write",
            FaultPoint::AfterAcquire => "after-acquire",
            FaultPoint::MidAcquire => "mid-acquire",
        }
    }
}

/// `[faults].pause`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseSpec {
    /// Nodes that may be paused.
    pub nodes: Selector,
    /// Pause length, true ms.
    pub duration_ms: Range<u64>,
    /// Where the pause strikes [anywhere].
    #[serde(default)]
    pub at: FaultPoint,
}

/// `[faults].partition`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionSpec {
    /// Nodes that may be cut off (a random non-empty subset of them, from everyone else).
    pub nodes: Selector,
    /// How long until heal, ms.
    pub duration_ms: Range<u64>,
    /// Drop only traffic from the cut-off side [false].
    #[serde(default)]
    pub oneway: bool,
}

/// `[faults].clock`: each clock fault draws one of the given sub-kinds.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    /// Nodes whose clocks may be disturbed.
    pub nodes: Selector,
    /// Set the wall clock this far off true time.
    pub skew_ms: Option<Range<i64>>,
    /// Set the drift rate (both clocks).
    pub drift_ppm: Option<Range<i64>>,
    /// Step the wall clock by this much.
    pub jump_ms: Option<Range<i64>>,
}

/// `[faults].crash`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrashSpec {
    /// Nodes that may crash.
    pub nodes: Selector,
    /// Down time before the restart, ms.
    pub down_ms: Range<u64>,
    /// Where the crash strikes [anywhere].
    #[serde(default)]
    pub at: FaultPoint,
}

/// Kinds of explicit fault entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Stop-the-world pause of the nodes for `duration_ms`.
    Pause,
    /// Cut `nodes` off from every other node (for `duration_ms`, or until `heal`).
    Partition,
    /// Repair every partition.
    Heal,
    /// Step the wall clock by `delta_ms`.
    ClockJump,
    /// Set the wall clock `skew_ms` off true time.
    Skew,
    /// Set the drift rate to `drift_ppm`.
    Drift,
    /// Crash the nodes (restarting after `down_ms`, if given).
    Crash,
    /// Restart crashed nodes.
    Restart,
}

/// One `[[faults.at]]` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitFault {
    /// True time of the entry, ms.
    pub at_ms: u64,
    /// What happens.
    pub kind: FaultKind,
    /// The nodes affected (not for `heal`).
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Pause or partition length, ms.
    pub duration_ms: Option<u64>,
    /// Pauses and crashes: where they strike [anywhere].
    #[serde(default)]
    pub at: FaultPoint,
    /// `clock-jump`: the step, ms (negative steps back).
    pub delta_ms: Option<i64>,
    /// `skew`: wall offset from true time, ms.
    pub skew_ms: Option<i64>,
    /// `drift`: new drift rate, ppm.
    pub drift_ppm: Option<i64>,
    /// `crash`: restart after this long, ms (none: stay down until `restart`).
    pub down_ms: Option<u64>,
    /// `partition`: drop only traffic from `nodes` to the others [false].
    #[serde(default)]
    pub oneway: bool,
    /// `partition`: cut `nodes` off from these nodes only [every other node].
    #[serde(default)]
    pub peers: Vec<String>,
}

/// `[faults]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// Gap between random faults, ms [[500, 3000]].
    #[serde(default = "default_interval")]
    pub interval_ms: Range<u64>,
    /// Each seed enables a random non-empty subset of the kinds below [false].
    #[serde(default)]
    pub swarm: bool,
    /// Random pauses.
    pub pause: Option<PauseSpec>,
    /// Random partitions.
    pub partition: Option<PartitionSpec>,
    /// Random clock faults.
    pub clock: Option<ClockSpec>,
    /// Random crashes.
    pub crash: Option<CrashSpec>,
    /// Explicit schedule.
    #[serde(default)]
    pub at: Vec<ExplicitFault>,
}

fn default_interval() -> Range<u64> {
    [500, 3000]
}

impl Default for Faults {
    fn default() -> Self {
        toml::from_str("").expect("defaults parse")
    }
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario<L> {
    name: String,
    #[serde(default)]
    description: String,
    #[allow(dead_code)] // read in the first pass
    algorithm: String,
    duration_ms: u64,
    liveness_ms: Option<u64>,
    lock: L,
    #[serde(default)]
    workload: Workload,
    #[serde(default)]
    network: Network,
    #[serde(default)]
    faults: Faults,
    #[serde(default)]
    expect: BTreeMap<String, Expect>,
}

/// A validated scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Where it was read from (for messages).
    pub file: PathBuf,
    /// Short name.
    pub name: String,
    /// What it reproduces.
    pub description: String,
    /// Lock algorithm.
    pub algorithm: Algorithm,
    /// Simulated duration of one seed, ms.
    pub duration_ms: u64,
    /// Liveness window after the last fault heals, ms [5 × TTL].
    pub liveness_ms: u64,
    /// Algorithm parameters.
    pub lock: LockParams,
    /// Client behaviour.
    pub workload: Workload,
    /// Network behaviour.
    pub network: Network,
    /// Fault injection.
    pub faults: Faults,
    /// Expectations per check name.
    pub expect: BTreeMap<String, Expect>,
}

impl Scenario {
    /// Read and validate a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.to_path_buf(),
            message: format!("cannot read file: {e}"),
        })?;
        Scenario::parse(path, &text)
    }

    /// Parse and validate scenario text; `path` is used in messages only.
    pub fn parse(path: &Path, text: &str) -> Result<Scenario, ScenarioError> {
        let err = |message: String| ScenarioError {
            file: path.to_path_buf(),
            message,
        };
        // First pass: which algorithm decides the shape of [lock].
        let table: toml::Table = toml::from_str(text).map_err(|e| err(toml_message(&e, text)))?;
        let algorithm = match table.get("algorithm") {
            None => return Err(err("missing key `algorithm`: expected one of redis, redis-replicated, redlock, zk, raft".into())),
            Some(toml::Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(err(format!(
                    "key `algorithm`: expected a string, got {}",
                    other.type_str()
                )))
            }
        };
        let (algorithm, raw) = match algorithm.as_str() {
            name @ ("redis" | "redis-replicated") => {
                let raw: RawScenario<RedisParams> =
                    toml::from_str(text).map_err(|e| err(toml_message(&e, text)))?;
                let alg = if name == "redis" {
                    if let Some(k) = raw.lock.replication_keys_set().first() {
                        return Err(err(format!(
                            "key `lock.{k}`: only valid with algorithm = \"redis-replicated\""
                        )));
                    }
                    Algorithm::Redis
                } else {
                    Algorithm::RedisReplicated
                };
                let lock = LockParams::Redis(raw.lock.clone());
                (alg, raw.map_lock(lock))
            }
            "redlock" => {
                let raw: RawScenario<RedlockParams> =
                    toml::from_str(text).map_err(|e| err(toml_message(&e, text)))?;
                let lock = LockParams::Redlock(raw.lock.clone());
                (Algorithm::Redlock, raw.map_lock(lock))
            }
            other => {
                return Err(match Algorithm::ALL.iter().find(|(n, _)| *n == other) {
                    Some(_) => err(format!(
                        "key `algorithm`: `{other}` is not implemented yet; implemented: redis, redis-replicated, redlock"
                    )),
                    None => err(format!(
                        "key `algorithm`: unknown algorithm `{other}`; expected one of redis, redis-replicated, redlock, zk, raft"
                    )),
                })
            }
        };
        let scenario = Scenario {
            file: path.to_path_buf(),
            name: raw.name,
            description: raw.description,
            algorithm,
            duration_ms: raw.duration_ms,
            liveness_ms: raw
                .liveness_ms
                .unwrap_or(raw.lock.ttl_ms().saturating_mul(5)),
            lock: raw.lock,
            workload: raw.workload,
            network: raw.network,
            faults: raw.faults,
            expect: raw.expect,
        };
        scenario.validate().map_err(err)?;
        Ok(scenario)
    }

    /// Every node name in this scenario: servers, storage, clients.
    pub fn nodes(&self) -> Vec<String> {
        let mut v = self.servers();
        v.push("storage".to_string());
        v.extend(self.clients());
        v
    }

    /// Lock server node names: Redis nodes first, then sentinels.
    pub fn servers(&self) -> Vec<String> {
        let redis = |n: u32| (0..n).map(|i| format!("redis-{i}")).collect::<Vec<_>>();
        match (&self.algorithm, &self.lock) {
            (Algorithm::RedisReplicated, LockParams::Redis(p)) => {
                let r = p.replication();
                let mut v = redis(r.replicas + 1);
                v.extend((0..r.sentinels).map(|i| format!("sentinel-{i}")));
                v
            }
            (Algorithm::Redlock, LockParams::Redlock(p)) => redis(p.nodes),
            _ => redis(1),
        }
    }

    /// Client node names.
    pub fn clients(&self) -> Vec<String> {
        (0..self.workload.clients)
            .map(|i| format!("client-{i}"))
            .collect()
    }

    /// Resolve a selector to node names (validated at load time, so never fails after).
    pub fn select(&self, sel: &Selector) -> Vec<String> {
        match sel {
            Selector::Group(g) if g == "clients" => self.clients(),
            Selector::Group(g) if g == "servers" => self.servers(),
            Selector::Group(_) => self.nodes(),
            Selector::Nodes(v) => v.clone(),
        }
    }

    fn validate(&self) -> Result<(), String> {
        // Every time is bounded by one simulated hour, so local-time arithmetic in a run
        // can never overflow, whatever the input.
        const HOUR: u64 = 3_600_000;
        let range = |key: &str, r: &Range<u64>| -> Result<(), String> {
            if r[0] > r[1] {
                return Err(format!(
                    "key `{key}`: expected [min, max] with min <= max, got [{}, {}]",
                    r[0], r[1]
                ));
            }
            if r[1] > HOUR {
                return Err(format!(
                    "key `{key}`: expected values of at most {HOUR} (one hour), got {}",
                    r[1]
                ));
            }
            Ok(())
        };
        let irange = |key: &str, r: &Range<i64>| -> Result<(), String> {
            if r[0] > r[1] {
                return Err(format!(
                    "key `{key}`: expected [min, max] with min <= max, got [{}, {}]",
                    r[0], r[1]
                ));
            }
            if r[0] < -(HOUR as i64) || r[1] > HOUR as i64 {
                return Err(format!(
                    "key `{key}`: expected values within ±{HOUR}, got [{}, {}]",
                    r[0], r[1]
                ));
            }
            Ok(())
        };
        let positive = |key: &str, v: u64| -> Result<(), String> {
            if v == 0 {
                return Err(format!("key `{key}`: expected a positive number, got 0"));
            }
            if v > HOUR {
                return Err(format!(
                    "key `{key}`: expected at most {HOUR} (one hour), got {v}"
                ));
            }
            Ok(())
        };
        if self.name.trim().is_empty() {
            return Err("key `name`: expected a non-empty string".into());
        }
        positive("duration_ms", self.duration_ms)?;
        if self.duration_ms > 3_600_000 {
            return Err(format!(
                "key `duration_ms`: expected at most 3600000 (one simulated hour), got {}",
                self.duration_ms
            ));
        }
        match &self.lock {
            LockParams::Redis(p) => {
                positive("lock.ttl_ms", p.ttl_ms)?;
                positive("lock.request_timeout_ms", p.request_timeout_ms)?;
                range("lock.retry_delay_ms", &p.retry_delay_ms)?;
                if !(0.0..1.0).contains(&p.drift_factor) {
                    return Err(format!(
                        "key `lock.drift_factor`: expected a number in [0, 1), got {}",
                        p.drift_factor
                    ));
                }
                let r = p.replication();
                if !(1..=8).contains(&r.replicas) {
                    return Err(format!(
                        "key `lock.replicas`: expected 1 to 8, got {}",
                        r.replicas
                    ));
                }
                if !(1..=7).contains(&r.sentinels) {
                    return Err(format!(
                        "key `lock.sentinels`: expected 1 to 7, got {}",
                        r.sentinels
                    ));
                }
                positive("lock.down_after_ms", r.down_after_ms)?;
                range("lock.replication_lag_ms", &r.lag_ms)?;
                positive("lock.wait_timeout_ms", r.wait_timeout_ms)?;
                if r.wait_replicas > r.replicas {
                    return Err(format!(
                        "key `lock.wait_replicas`: expected at most replicas = {}, got {}",
                        r.replicas, r.wait_replicas
                    ));
                }
            }
            LockParams::Redlock(p) => {
                if !(1..=15).contains(&p.nodes) {
                    return Err(format!(
                        "key `lock.nodes`: expected 1 to 15, got {}",
                        p.nodes
                    ));
                }
                positive("lock.ttl_ms", p.ttl_ms)?;
                positive("lock.node_timeout_ms", p.node_timeout_ms)?;
                positive("lock.retries", p.retries as u64)?;
                range("lock.retry_delay_ms", &p.retry_delay_ms)?;
                if !(0.0..1.0).contains(&p.drift_factor) {
                    return Err(format!(
                        "key `lock.drift_factor`: expected a number in [0, 1), got {}",
                        p.drift_factor
                    ));
                }
            }
        }
        positive("liveness_ms", self.liveness_ms)?;
        let w = &self.workload;
        if !(1..=64).contains(&w.clients) {
            return Err(format!(
                "key `workload.clients`: expected 1 to 64, got {}",
                w.clients
            ));
        }
        positive("workload.acquire_timeout_ms", w.acquire_timeout_ms)?;
        positive("workload.storage_timeout_ms", w.storage_timeout_ms)?;
        range("workload.work_ms", &w.work_ms)?;
        range("workload.think_ms", &w.think_ms)?;
        range("network.latency_ms", &self.network.latency_ms)?;
        if !(0.0..=1.0).contains(&self.network.loss) {
            return Err(format!(
                "key `network.loss`: expected a probability in [0, 1], got {}",
                self.network.loss
            ));
        }
        let f = &self.faults;
        range("faults.interval_ms", &f.interval_ms)?;
        if f.interval_ms[0] == 0 {
            return Err("key `faults.interval_ms`: expected a minimum gap of at least 1 ms".into());
        }
        if let Some(p) = &f.pause {
            self.validate_selector("faults.pause.nodes", &p.nodes)?;
            range("faults.pause.duration_ms", &p.duration_ms)?;
        }
        if let Some(p) = &f.partition {
            self.validate_selector("faults.partition.nodes", &p.nodes)?;
            range("faults.partition.duration_ms", &p.duration_ms)?;
        }
        if let Some(c) = &f.clock {
            self.validate_selector("faults.clock.nodes", &c.nodes)?;
            if c.skew_ms.is_none() && c.drift_ppm.is_none() && c.jump_ms.is_none() {
                return Err(
                    "key `faults.clock`: expected at least one of skew_ms, drift_ppm, jump_ms"
                        .into(),
                );
            }
            if let Some(r) = &c.skew_ms {
                irange("faults.clock.skew_ms", r)?;
            }
            if let Some(r) = &c.jump_ms {
                irange("faults.clock.jump_ms", r)?;
            }
            if let Some(r) = &c.drift_ppm {
                irange("faults.clock.drift_ppm", r)?;
                if r[0] <= -1_000_000 {
                    return Err(format!("key `faults.clock.drift_ppm`: expected values > -1000000 (a clock cannot stop), got {}", r[0]));
                }
            }
        }
        if let Some(c) = &f.crash {
            self.validate_selector("faults.crash.nodes", &c.nodes)?;
            range("faults.crash.down_ms", &c.down_ms)?;
        }
        for (i, e) in f.at.iter().enumerate() {
            self.validate_explicit(i, e)?;
        }
        let random =
            f.pause.is_some() || f.partition.is_some() || f.clock.is_some() || f.crash.is_some();
        if random && self.duration_ms <= self.liveness_ms {
            // Random faults stop liveness_ms before the end; with no room they would
            // silently never happen.
            return Err(format!(
                "key `faults`: random faults are configured, but they must end liveness_ms = {} before duration_ms = {}, which leaves no time for them; lengthen duration_ms or set a shorter liveness_ms",
                self.liveness_ms, self.duration_ms
            ));
        }
        for name in self.expect.keys() {
            if !CHECK_NAMES.contains(&name.as_str()) {
                return Err(format!(
                    "key `expect.{name}`: unknown check; expected one of {}",
                    CHECK_NAMES.join(", ")
                ));
            }
            if name == "lock-linearizable" && self.algorithm == Algorithm::Redlock {
                return Err(format!(
                    "key `expect.{name}`: not defined for redlock (each node expires its own copy of the key; see the check's docs)"
                ));
            }
        }
        Ok(())
    }

    fn validate_selector(&self, key: &str, sel: &Selector) -> Result<(), String> {
        match sel {
            Selector::Group(g) => {
                if !["clients", "servers", "all"].contains(&g.as_str()) {
                    return Err(format!(
                        "key `{key}`: expected \"clients\", \"servers\", \"all\" or a list of node names, got \"{g}\""
                    ));
                }
            }
            Selector::Nodes(v) => {
                if v.is_empty() {
                    return Err(format!("key `{key}`: expected at least one node name"));
                }
                self.validate_names(key, v)?;
            }
        }
        Ok(())
    }

    fn validate_names(&self, key: &str, names: &[String]) -> Result<(), String> {
        let all = self.nodes();
        for n in names {
            if !all.contains(n) {
                return Err(format!(
                    "key `{key}`: unknown node `{n}`; nodes in this scenario: {}",
                    all.join(", ")
                ));
            }
        }
        Ok(())
    }

    fn validate_explicit(&self, i: usize, e: &ExplicitFault) -> Result<(), String> {
        let key = |k: &str| format!("faults.at[{i}].{k}");
        let need = |k: &str, present: bool, kind: &str| -> Result<(), String> {
            if !present {
                return Err(format!("key `{}`: required for kind = \"{kind}\"", key(k)));
            }
            Ok(())
        };
        let forbid = |k: &str, present: bool, kind: &str| -> Result<(), String> {
            if present {
                return Err(format!(
                    "key `{}`: not used by kind = \"{kind}\" (remove it)",
                    key(k)
                ));
            }
            Ok(())
        };
        for (k, v) in [
            ("duration_ms", e.duration_ms),
            ("down_ms", e.down_ms),
            ("delta_ms", e.delta_ms.map(i64::unsigned_abs)),
            ("skew_ms", e.skew_ms.map(i64::unsigned_abs)),
        ] {
            if v.is_some_and(|v| v > 3_600_000) {
                return Err(format!(
                    "key `{}`: expected at most 3600000 (one hour) in magnitude",
                    key(k)
                ));
            }
        }
        if e.at_ms >= self.duration_ms {
            return Err(format!(
                "key `{}`: expected a time before duration_ms = {}, got {}",
                key("at_ms"),
                self.duration_ms,
                e.at_ms
            ));
        }
        self.validate_names(&key("nodes"), &e.nodes)?;
        let kind = match e.kind {
            FaultKind::Pause => "pause",
            FaultKind::Partition => "partition",
            FaultKind::Heal => "heal",
            FaultKind::ClockJump => "clock-jump",
            FaultKind::Skew => "skew",
            FaultKind::Drift => "drift",
            FaultKind::Crash => "crash",
            FaultKind::Restart => "restart",
        };
        if e.kind == FaultKind::Heal {
            forbid("nodes", !e.nodes.is_empty(), kind)?;
        } else {
            need("nodes", !e.nodes.is_empty(), kind)?;
        }
        need(
            "duration_ms",
            e.duration_ms.is_some() || !matches!(e.kind, FaultKind::Pause),
            kind,
        )?;
        forbid(
            "duration_ms",
            e.duration_ms.is_some() && !matches!(e.kind, FaultKind::Pause | FaultKind::Partition),
            kind,
        )?;
        need(
            "delta_ms",
            e.delta_ms.is_some() || e.kind != FaultKind::ClockJump,
            kind,
        )?;
        forbid(
            "delta_ms",
            e.delta_ms.is_some() && e.kind != FaultKind::ClockJump,
            kind,
        )?;
        need(
            "skew_ms",
            e.skew_ms.is_some() || e.kind != FaultKind::Skew,
            kind,
        )?;
        forbid(
            "skew_ms",
            e.skew_ms.is_some() && e.kind != FaultKind::Skew,
            kind,
        )?;
        need(
            "drift_ppm",
            e.drift_ppm.is_some() || e.kind != FaultKind::Drift,
            kind,
        )?;
        forbid(
            "drift_ppm",
            e.drift_ppm.is_some() && e.kind != FaultKind::Drift,
            kind,
        )?;
        if let Some(d) = e.drift_ppm {
            if d <= -1_000_000 {
                return Err(format!(
                    "key `{}`: expected a value > -1000000, got {d}",
                    key("drift_ppm")
                ));
            }
        }
        forbid(
            "down_ms",
            e.down_ms.is_some() && e.kind != FaultKind::Crash,
            kind,
        )?;
        forbid(
            "at",
            e.at != FaultPoint::Anywhere && !matches!(e.kind, FaultKind::Pause | FaultKind::Crash),
            kind,
        )?;
        forbid("oneway", e.oneway && e.kind != FaultKind::Partition, kind)?;
        forbid(
            "peers",
            !e.peers.is_empty() && e.kind != FaultKind::Partition,
            kind,
        )?;
        self.validate_names(&key("peers"), &e.peers)?;
        if let Some(n) = e.peers.iter().find(|p| e.nodes.contains(p)) {
            return Err(format!(
                "key `{}`: `{n}` is on both sides of the partition",
                key("peers")
            ));
        }
        if e.kind == FaultKind::Partition && e.peers.is_empty() {
            let all = self.nodes();
            if e.nodes.len() >= all.len() {
                return Err(format!(
                    "key `{}`: a partition cuts these nodes off from the rest, so it must leave at least one node out",
                    key("nodes")
                ));
            }
        }
        Ok(())
    }
}

impl<L> RawScenario<L> {
    fn map_lock(self, lock: LockParams) -> RawScenario<LockParams> {
        RawScenario {
            name: self.name,
            description: self.description,
            algorithm: self.algorithm,
            duration_ms: self.duration_ms,
            liveness_ms: self.liveness_ms,
            lock,
            workload: self.workload,
            network: self.network,
            faults: self.faults,
            expect: self.expect,
        }
    }
}

/// toml's message on one line, with the dotted key and the line/column it refers to.
fn toml_message(e: &toml::de::Error, text: &str) -> String {
    let msg = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else {
        return msg;
    };
    let start = span.start.min(text.len());
    let line_no = text[..start].matches('\n').count() + 1;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..start].chars().count() + 1;
    let line = text[line_start..].lines().next().unwrap_or("");
    // serde names unknown fields itself; for type errors, name the key from the source.
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('[') && !msg.contains('`'))
        .map(|k| {
            let section = text[..line_start].lines().rev().find_map(|l| {
                l.trim()
                    .strip_prefix('[')
                    .map(|s| s.trim_matches(['[', ']']))
            });
            match section {
                Some(sec) => format!("key `{sec}.{k}`: "),
                None => format!("key `{k}`: "),
            }
        })
        .unwrap_or_default();
    format!("{key}{msg} (line {line_no}, column {column})")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn minimal_scenario_gets_defaults() {
        let s = parse(MINIMAL).unwrap();
        assert_eq!(s.liveness_ms, 500);
        assert_eq!(s.workload.clients, 3);
        assert_eq!(s.network.latency_ms, [1, 10]);
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
        assert!(e.message.contains("unknown field `ttl`"), "{e}");
    }

    #[test]
    fn bad_range_names_key() {
        let e = parse(&format!("{MINIMAL}[workload]\nwork_ms = [5, 1]\n")).unwrap_err();
        assert_eq!(
            e.message,
            "key `workload.work_ms`: expected [min, max] with min <= max, got [5, 1]"
        );
    }

    #[test]
    fn unknown_algorithm_and_unimplemented_algorithm() {
        let e = parse(&MINIMAL.replace("\"redis\"", "\"etcd\"")).unwrap_err();
        assert!(e.message.contains("unknown algorithm `etcd`"), "{e}");
        let e = parse(&MINIMAL.replace("\"redis\"", "\"raft\"")).unwrap_err();
        assert!(e.message.contains("not implemented yet"), "{e}");
        let e = parse(&format!("{MINIMAL}replicas = 2\n")).unwrap_err();
        assert!(
            e.message
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
        assert!(e.message.contains("unknown field `unlock`"), "{e}");
    }

    #[test]
    fn unknown_node_is_an_error() {
        let e = parse(&format!(
            "{MINIMAL}[[faults.at]]\nat_ms = 10\nkind = \"pause\"\nnodes = [\"client-9\"]\nduration_ms = 5\n"
        ))
        .unwrap_err();
        assert!(e.message.contains("unknown node `client-9`"), "{e}");
        assert!(e.message.contains("faults.at[0].nodes"), "{e}");
    }

    #[test]
    fn explicit_fault_fields_are_checked_per_kind() {
        let e = parse(&format!(
            "{MINIMAL}[[faults.at]]\nat_ms = 10\nkind = \"pause\"\nnodes = [\"client-0\"]\n"
        ))
        .unwrap_err();
        assert!(
            e.message.contains("faults.at[0].duration_ms`: required"),
            "{e}"
        );
        let e = parse(&format!(
            "{MINIMAL}[[faults.at]]\nat_ms = 10\nkind = \"heal\"\ndelta_ms = 5\n"
        ))
        .unwrap_err();
        assert!(e.message.contains("not used by kind"), "{e}");
    }

    #[test]
    fn unknown_check_in_expect() {
        let e = parse(&format!("{MINIMAL}[expect]\nsafety = \"holds\"\n")).unwrap_err();
        assert!(e.message.contains("unknown check"), "{e}");
        let e = parse(&format!("{MINIMAL}[expect]\nmutex = \"maybe\"\n")).unwrap_err();
        assert!(e.message.contains("unknown variant `maybe`"), "{e}");
    }

    #[test]
    fn broken_toml_is_an_error() {
        let e = parse("name = \"x\nalgorithm = 3").unwrap_err();
        assert!(e.message.contains("line"), "{e}");
        let e = parse("algorithm = 3").unwrap_err();
        assert!(e.message.contains("expected a string"), "{e}");
    }

    #[test]
    fn type_errors_name_the_dotted_key() {
        let e = parse(&format!("{MINIMAL}[workload]\nclients = \"many\"\n")).unwrap_err();
        assert!(
            e.message
                .starts_with("key `workload.clients`: invalid type"),
            "{e}"
        );
        assert!(e.message.contains("line 8"), "{e}");
    }

    #[test]
    fn random_faults_need_room_before_the_liveness_tail() {
        let e = parse(&format!(
            "{}[faults]\ncrash = {{ nodes = \"servers\", down_ms = [1, 2] }}\n",
            MINIMAL.replace("ttl_ms = 100", "ttl_ms = 300")
        ))
        .unwrap_err();
        assert!(e.message.contains("leaves no time"), "{e}");
    }

    #[test]
    fn absurd_times_are_rejected_not_overflowed() {
        let e = parse(&format!(
            "{MINIMAL}[workload]\nwork_ms = [0, 9223372036854775807]\n"
        ))
        .unwrap_err();
        assert!(
            e.message.contains("workload.work_ms") && e.message.contains("one hour"),
            "{e}"
        );
        let e = parse(&MINIMAL.replace("ttl_ms = 100", "ttl_ms = 99999999999")).unwrap_err();
        assert!(e.message.contains("lock.ttl_ms"), "{e}");
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
        assert!(e.message.contains("faults.pause.nodes"), "{e}");
    }
}
