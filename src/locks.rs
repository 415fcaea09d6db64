//! Lock algorithms. Each family is one folder implementing one trait, [`Algorithm`], and
//! one line in [`ALGORITHMS`]; nothing else in the crate names a family.
//!
//! An algorithm's parameters *are* its value: the `[lock]` table of a scenario
//! deserialises into the family's params struct, which then says which server nodes
//! exist, what each runs, how clients lock, and which checks are defined for it.
//! Variants are parameters of one client (see each family's `params.rs`), never copies
//! of a client that differ in one line.

pub(crate) mod db;
pub mod param;
pub(crate) mod raft;
pub(crate) mod redis;
pub(crate) mod redlock;
pub(crate) mod zk;

pub(crate) use param::{ParamDoc, ParamError};

use crate::check::{Check, QUALITY, STANDARD};
use crate::key_error;
use crate::real::RealCluster;
use crate::sim::{FaultPoint, NodeCtx};
use serde::de::DeserializeOwned;
use std::cell::Cell;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

pub use crate::sim::LocalBoxFuture;

/// A parameters value as a JSON object (its serde keys are its `[lock]` keys), for
/// [`Algorithm::effective_table`].
pub(crate) fn table_of<T: serde::Serialize>(
    params: &T,
) -> serde_json::Map<String, serde_json::Value> {
    match serde_json::to_value(params) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    }
}

/// A granted lock, as the client believes it.
#[derive(Debug, Clone)]
pub struct Grant {
    /// Lock name.
    pub lock: String,
    /// Fencing token, when the algorithm has one.
    pub token: Option<u64>,
    /// The unique value identifying this holder to the servers (e.g. the Redis value).
    pub owner_value: String,
    /// End of validity on the client's local monotonic clock, ns, for lease locks. Shared
    /// with a renewal task, which moves it forward.
    pub valid_until: Option<Rc<Cell<i64>>>,
}

/// A grant's `valid_until` when it has no lease but may still end: an external client's
/// grant without a `validity_ms`, which a `lost` notice ends (the workload records no
/// validity for it).
pub(crate) const NO_LEASE_NS: i64 = i64::MAX;

impl Grant {
    /// The local monotonic deadline of the lease, if any.
    pub fn valid_until_ns(&self) -> Option<i64> {
        self.valid_until.as_ref().map(|c| c.get())
    }
}

/// Why an acquire or release did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockError {
    /// Definitely did not take effect (lock busy until the timeout, or refused).
    Failed(String),
    /// May have taken effect: a request timed out or its connection broke.
    Indeterminate(String),
}

impl LockError {
    /// The human reason.
    pub fn reason(&self) -> &str {
        match self {
            LockError::Failed(r) | LockError::Indeterminate(r) => r,
        }
    }
}

/// How long an acquire may wait for a lock someone else holds (the workload's `acquire`
/// key). It is a parameter of the one acquire call, not a copy of a client: each family
/// maps it to its real API's own blocking and non-blocking calls (Curator's
/// `acquire(time)`, etcd's `Lock`/`TryLock`, Redisson's `tryLock(wait, lease)`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Block until granted or until this much local time has passed (`acquire = "wait"`
    /// with `acquire_timeout_ms`, or `acquire = { try_for_ms = N }`).
    For(Duration),
    /// One non-blocking attempt (`acquire = "try"`): a held lock fails at once. The
    /// duration bounds only the attempt's own requests, as the deadline of the caller's
    /// context bounds etcd's `TryLock`.
    No(Duration),
}

impl Wait {
    /// The local monotonic deadline (ns) of an acquire that starts now.
    pub fn deadline_ns(self, ctx: &NodeCtx) -> i64 {
        let d = match self {
            Wait::For(d) | Wait::No(d) => d,
        };
        ctx.mono_ns() + d.as_nanos() as i64
    }

    /// Whether this is a single non-blocking attempt.
    pub fn once(self) -> bool {
        matches!(self, Wait::No(_))
    }

    /// The reason of an acquire that ended without the lock: `busy: {why}` for a try,
    /// `timed out; last attempt: {why}` for a wait that ran out.
    pub fn gave_up(self, why: &str) -> String {
        if self.once() {
            format!("busy: {why}")
        } else {
            format!("timed out; last attempt: {why}")
        }
    }
}

/// A lock client: one per client node, used by the workload.
///
/// A second `acquire` while the client holds the lock (`reentrant = true` in the
/// workload) does what the real client does on a second call from the same holder:
/// Curator and Redisson count it, etcd's `Mutex` finds its own key, a `SET NX` finds the
/// key taken.
pub trait LockClient {
    /// Try to acquire `lock`, waiting as `wait` says.
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        wait: Wait,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>>;

    /// Release a grant. `Ok(true)` if the servers released *this* holder's lock,
    /// `Ok(false)` if it was no longer held by it.
    fn release<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>>;

    /// Best-effort release of whatever an acquire with an unknown outcome may have taken
    /// (so an indeterminate acquire does not block everyone for a whole lease).
    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>>;

    /// A future that completes when the client learns, while holding `grant`, that it
    /// lost it (e.g. Curator's SUSPENDED when the holder treats it as a loss), so the
    /// workload stops working at once instead of at its next validity check. `None`
    /// (the default): the client learns nothing between acquire and release.
    fn lost<'a>(&'a self, ctx: &'a NodeCtx, grant: &'a Grant) -> Option<LocalBoxFuture<'a, ()>> {
        let _ = (ctx, grant);
        None
    }
}

/// A lock algorithm family (or deployment variant), implemented by its parameters type:
/// the value of a scenario's `[lock]` table.
pub trait Algorithm: fmt::Debug + Clone + DeserializeOwned + Send + Sync + 'static {
    /// The scenario's `algorithm = "..."` name.
    const NAME: &'static str;
    /// One line on what it is, for `locksim list`.
    const ABOUT: &'static str;
    /// Every `[lock]` key with its default and meaning, for `locksim list`.
    fn params() -> Vec<ParamDoc>;

    /// Check values serde cannot (ranges, relations between keys).
    fn validate(&self) -> Result<(), ParamError> {
        Ok(())
    }

    /// Read files the parameters name (e.g. lock scripts), relative to `dir`, the
    /// scenario file's folder. Called once, after [`Algorithm::validate`].
    fn load_files(&mut self, dir: &std::path::Path) -> Result<(), ParamError> {
        let _ = dir;
        Ok(())
    }

    /// The server node names it adds, in start order.
    fn servers(&self) -> Vec<String>;

    /// The server nodes that have a disk (a log or data file they write and sync),
    /// which a `disk-stall` fault may name: every server unless the algorithm says
    /// otherwise.
    fn disk_nodes(&self) -> Vec<String> {
        self.servers()
    }

    /// What server node `ctx.name()` runs (called at each start and restart).
    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()>;

    /// A lock client for one client node.
    fn client(&self) -> Box<dyn LockClient>;

    /// The lease time, for lease locks: a scenario's default `liveness_ms` is 5 × this.
    fn lease_ms(&self) -> Option<u64>;

    /// The checks defined for this algorithm, in report order: the standard ones unless
    /// the algorithm says otherwise (and why, in its docs), plus any of its own.
    fn checks(&self) -> Vec<&'static Check> {
        STANDARD.to_vec()
    }

    /// Where the lock's fencing token comes from, in a few words for reports; `None` when
    /// it hands out none (then `token-order` and `fencing` have nothing to check).
    fn fencing_token(&self) -> Option<&'static str>;

    /// Standard checks [`Algorithm::checks`] leaves out, each with the reason (reports
    /// show them as not applicable, with the reason).
    fn omitted_checks(&self) -> Vec<(&'static Check, &'static str)> {
        Vec::new()
    }

    /// The fault points its clients pass through (a pause or crash armed for any other
    /// point could never strike). The workload's points are always passed.
    fn client_fault_points(&self) -> &'static [FaultPoint] {
        &[]
    }

    /// How the family's real counterpart runs in live mode (`locksim live`), or `None`
    /// when it has none (the database model): see `crate::real`.
    fn real(&self) -> Option<Rc<dyn RealCluster>> {
        None
    }

    /// These parameters as the lock clients need them against the real servers (etcd's
    /// lease seconds are real seconds, not the simulation's scaled ones): the same by
    /// default.
    fn for_real(&self) -> Self {
        self.clone()
    }

    /// The effective `[lock]` table as a JSON object: every key the algorithm defines,
    /// with its value, defaults filled in (what an external client is told, so that a
    /// real library runs the scenario's settings). Empty by default.
    fn effective_table(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
}

/// A configured algorithm with its type erased: what a [`Scenario`](crate::Scenario)
/// holds. Implemented for every [`Algorithm`].
pub trait AlgorithmConfig: fmt::Debug + Send + Sync {
    /// The algorithm's name.
    fn name(&self) -> &'static str;
    /// See [`Algorithm::servers`].
    fn servers(&self) -> Vec<String>;
    /// See [`Algorithm::disk_nodes`].
    fn disk_nodes(&self) -> Vec<String>;
    /// See [`Algorithm::server_main`].
    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()>;
    /// See [`Algorithm::client`].
    fn client(&self) -> Box<dyn LockClient>;
    /// See [`Algorithm::lease_ms`].
    fn lease_ms(&self) -> Option<u64>;
    /// [`Algorithm::checks`], then the quality checks ([`QUALITY`]).
    fn checks(&self) -> Vec<&'static Check>;
    /// See [`Algorithm::fencing_token`].
    fn fencing_token(&self) -> Option<&'static str>;
    /// See [`Algorithm::omitted_checks`].
    fn omitted_checks(&self) -> Vec<(&'static Check, &'static str)>;
    /// See [`Algorithm::client_fault_points`].
    fn client_fault_points(&self) -> &'static [FaultPoint];
    /// See [`Algorithm::real`].
    fn real(&self) -> Option<Rc<dyn RealCluster>>;
    /// See [`Algorithm::for_real`].
    fn for_real(&self) -> Arc<dyn AlgorithmConfig>;
    /// See [`Algorithm::effective_table`].
    fn effective_table(&self) -> serde_json::Value;
}

impl<A: Algorithm> AlgorithmConfig for A {
    fn name(&self) -> &'static str {
        A::NAME
    }
    fn servers(&self) -> Vec<String> {
        Algorithm::servers(self)
    }
    fn disk_nodes(&self) -> Vec<String> {
        Algorithm::disk_nodes(self)
    }
    fn server_main(&self, ctx: NodeCtx) -> LocalBoxFuture<'static, ()> {
        Algorithm::server_main(self, ctx)
    }
    fn client(&self) -> Box<dyn LockClient> {
        Algorithm::client(self)
    }
    fn lease_ms(&self) -> Option<u64> {
        Algorithm::lease_ms(self)
    }
    /// The algorithm's checks, then the [`QUALITY`] ones: every algorithm is measured by
    /// them, whatever its own list says.
    fn checks(&self) -> Vec<&'static Check> {
        let mut checks = Algorithm::checks(self);
        for &q in QUALITY {
            if !checks.contains(&q) {
                checks.push(q);
            }
        }
        checks
    }
    fn fencing_token(&self) -> Option<&'static str> {
        Algorithm::fencing_token(self)
    }
    fn omitted_checks(&self) -> Vec<(&'static Check, &'static str)> {
        Algorithm::omitted_checks(self)
    }
    fn client_fault_points(&self) -> &'static [FaultPoint] {
        Algorithm::client_fault_points(self)
    }
    fn real(&self) -> Option<Rc<dyn RealCluster>> {
        Algorithm::real(self)
    }
    fn for_real(&self) -> Arc<dyn AlgorithmConfig> {
        Arc::new(Algorithm::for_real(self))
    }
    fn effective_table(&self) -> serde_json::Value {
        serde_json::Value::Object(Algorithm::effective_table(self))
    }
}

/// Why a `[lock]` table was not accepted.
#[derive(Debug)]
pub enum ConfigError {
    /// It does not deserialise: the key at fault and its place in the scenario text.
    Toml(crate::key_error::KeyError),
    /// It deserialises but a value is not valid.
    Invalid(ParamError),
}

/// One entry of the algorithm list.
#[derive(Clone, Copy)]
pub struct Family {
    /// `algorithm = "..."`.
    pub name: &'static str,
    /// What it is.
    pub about: &'static str,
    /// Its `[lock]` keys.
    pub params: fn() -> Vec<ParamDoc>,
    /// Deserialise and validate the `[lock]` table of a whole scenario text (parsing
    /// the whole text keeps toml's line and column in errors); files it names are read
    /// relative to the given folder (the scenario file's).
    pub configure: ConfigureFn,
}

/// [`Family::configure`]: the scenario text and its folder to a configured algorithm.
pub(crate) type ConfigureFn =
    fn(&str, &std::path::Path) -> Result<Arc<dyn AlgorithmConfig>, ConfigError>;

impl Family {
    /// The entry for algorithm `A`.
    pub const fn of<A: Algorithm>() -> Family {
        Family {
            name: A::NAME,
            about: A::ABOUT,
            params: A::params,
            configure: configure::<A>,
        }
    }
}

impl fmt::Debug for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

fn configure<A: Algorithm>(
    text: &str,
    dir: &std::path::Path,
) -> Result<Arc<dyn AlgorithmConfig>, ConfigError> {
    // Only `[lock]` is read here; the scenario envelope checks every other key.
    #[derive(serde::Deserialize)]
    struct LockTable<P> {
        lock: Option<P>,
    }
    let table: LockTable<A> = key_error::toml::from_str(text).map_err(ConfigError::Toml)?;
    let mut params = match table.lock {
        Some(p) => p,
        None => key_error::toml::from_str::<A>("").map_err(ConfigError::Toml)?,
    };
    params.validate().map_err(ConfigError::Invalid)?;
    params.load_files(dir).map_err(ConfigError::Invalid)?;
    Ok(Arc::new(params))
}

/// Every algorithm locksim implements. Adding one = its folder + one line here.
pub const ALGORITHMS: &[Family] = &[
    Family::of::<redis::Single>(),
    Family::of::<redis::Replicated>(),
    Family::of::<redlock::Redlock>(),
    Family::of::<db::DbParams>(),
    Family::of::<raft::RaftParams>(),
    Family::of::<zk::ZkParams>(),
];
