//! A [`Scenario`] built in Rust rather than read from a file: the same envelope,
//! `[lock]` keys, workload, network, faults and expectations, typed, and checked by the
//! one validation a file goes through (the errors name the same keys).
//!
//! ```
//! use locksim::check::MUTEX;
//! use locksim::scenario::{Expect, Workload};
//! use locksim::{Fault, FaultPoint, Scenario};
//!
//! let scenario = Scenario::builder("pause-past-lease", "redis")
//!     .duration_ms(5000)
//!     .lock_param("ttl_ms", 500)
//!     .workload(Workload { clients: 2, ..Workload::default() })
//!     .fault(1000, Fault::Pause {
//!         nodes: vec!["client-0".into()],
//!         duration_ms: 1500,
//!         at: FaultPoint::BeforeWrite,
//!     })
//!     .expect(&MUTEX, Expect::Violated)
//!     .build()
//!     .unwrap();
//! assert_eq!(scenario.nodes(), ["redis-0", "storage", "client-0", "client-1"]);
//! ```

use super::faults::RawFaults;
use super::{
    find_family, ClockSpec, CrashSpec, DiskStallSpec, Expect, ExplicitFaults, Network,
    PartitionSpec, PauseSpec, RawScenario, RawSelector, Runner, Scenario, ScenarioError, Selector,
    Workload,
};
use crate::check::Check;
use crate::key_error::KeyError;
use crate::locks::param::Range;
use crate::locks::{ConfigError, Family, ALGORITHMS};
use crate::sim::{Fault, Schedule, TimedFault};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A scenario under construction: [`Scenario::builder`], then one call per key a file
/// would set, then [`ScenarioBuilder::build`]. Keys not set take a file's defaults.
#[derive(Debug, Clone)]
pub struct ScenarioBuilder {
    name: String,
    description: String,
    algorithm: String,
    families: Vec<Family>,
    /// `[lock]`, each value as TOML or why it cannot be.
    lock: Vec<(String, Result<toml::Value, String>)>,
    duration_ms: Option<u64>,
    liveness_ms: Option<u64>,
    workload: Workload,
    network: Network,
    random: RawFaults,
    at: Schedule,
    expect: BTreeMap<String, Expect>,
}

impl Scenario {
    /// A scenario called `name` of the family `algorithm` (one of
    /// [`ALGORITHMS`] unless [`ScenarioBuilder::families`]
    /// gives another list), built in Rust.
    pub fn builder(name: impl Into<String>, algorithm: &str) -> ScenarioBuilder {
        ScenarioBuilder {
            name: name.into(),
            description: String::new(),
            algorithm: algorithm.to_string(),
            families: ALGORITHMS.to_vec(),
            lock: Vec::new(),
            duration_ms: None,
            liveness_ms: None,
            workload: Workload::default(),
            network: Network::default(),
            random: RawFaults::default(),
            at: Schedule::new(),
            expect: BTreeMap::new(),
        }
    }
}

impl ScenarioBuilder {
    /// What it reproduces (`description`).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }

    /// Find the algorithm in `families` instead of locksim's own list (e.g. a list
    /// with a family of your own, as [`Scenario::parse_with`] takes).
    pub fn families(mut self, families: &[Family]) -> Self {
        self.families = families.to_vec();
        self
    }

    /// Simulated duration of one seed, ms (`duration_ms`, required).
    pub fn duration_ms(mut self, ms: u64) -> Self {
        self.duration_ms = Some(ms);
        self
    }

    /// Liveness window after the last fault heals, ms (`liveness_ms`) [5 × the lease].
    pub fn liveness_ms(mut self, ms: u64) -> Self {
        self.liveness_ms = Some(ms);
        self
    }

    /// One key of `[lock]`, the algorithm's parameters (`locksim list` shows each
    /// family's): any value serde writes as TOML (a number, a string, a list, ...).
    pub fn lock_param(mut self, key: &str, value: impl serde::Serialize) -> Self {
        let value = toml::Value::try_from(value).map_err(|e| e.to_string());
        self.lock.push((key.to_string(), value));
        self
    }

    /// What every client does (`[workload]`).
    pub fn workload(mut self, workload: Workload) -> Self {
        self.workload = workload;
        self
    }

    /// Network behaviour (`[network]`).
    pub fn network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// An explicit fault at `at_ms` of true time (one `[[faults.at]]` entry).
    pub fn fault(mut self, at_ms: u64, fault: Fault) -> Self {
        self.at.push(TimedFault { at_ms, fault });
        self
    }

    /// Random pauses (`[faults] pause`).
    pub fn random_pause(mut self, spec: PauseSpec) -> Self {
        self.random.pause = Some(PauseSpec {
            nodes: raw(&spec.nodes),
            duration_ms: spec.duration_ms,
            at: spec.at,
        });
        self
    }

    /// Random partitions (`[faults] partition`).
    pub fn random_partition(mut self, spec: PartitionSpec) -> Self {
        self.random.partition = Some(PartitionSpec {
            nodes: raw(&spec.nodes),
            duration_ms: spec.duration_ms,
            oneway: spec.oneway,
        });
        self
    }

    /// Random clock faults (`[faults] clock`).
    pub fn random_clock(mut self, spec: ClockSpec) -> Self {
        self.random.clock = Some(ClockSpec {
            nodes: raw(&spec.nodes),
            skew_ms: spec.skew_ms,
            drift_ppm: spec.drift_ppm,
            jump_ms: spec.jump_ms,
        });
        self
    }

    /// Random crashes (`[faults] crash`).
    pub fn random_crash(mut self, spec: CrashSpec) -> Self {
        self.random.crash = Some(CrashSpec {
            nodes: raw(&spec.nodes),
            down_ms: spec.down_ms,
            at: spec.at,
        });
        self
    }

    /// Random disk stalls (`[faults] disk-stall`).
    pub fn random_disk_stall(mut self, spec: DiskStallSpec) -> Self {
        self.random.disk_stall = Some(DiskStallSpec {
            nodes: raw(&spec.nodes),
            duration_ms: spec.duration_ms,
        });
        self
    }

    /// Gap between random faults, ms (`[faults] interval_ms`) [[500, 3000]].
    pub fn fault_interval_ms(mut self, min: u64, max: u64) -> Self {
        self.random.interval_ms = Some(Range([min, max]));
        self
    }

    /// Each seed enables a random non-empty subset of the random kinds
    /// (`[faults] swarm`) [false].
    pub fn swarm(mut self, on: bool) -> Self {
        self.random.swarm = Some(on);
        self
    }

    /// What a sweep must find for `check` (`[expect]`).
    pub fn expect(mut self, check: &Check, expect: Expect) -> Self {
        self.expect.insert(check.name.to_string(), expect);
        self
    }

    /// The scenario, checked as a file with these keys would be. The error's `file` is
    /// `<name>`: no file was read. Files the `[lock]` keys name are read relative to
    /// the current directory.
    pub fn build(self) -> Result<Scenario, ScenarioError> {
        let file = PathBuf::from(format!("<{}>", self.name));
        self.checked(&file)
            .map_err(|error| ScenarioError { file, error })
    }

    fn checked(self, file: &Path) -> Result<Scenario, KeyError> {
        let family = find_family(&self.algorithm, &self.families)?;
        let mut lock = toml::Table::new();
        for (key, value) in self.lock {
            let value = value.map_err(|e| {
                KeyError::new(&key, format!("cannot be written as TOML: {e}")).under_key("lock")
            })?;
            lock.insert(key, value);
        }
        // The family reads `[lock]` out of a scenario's text: hand it one with only that
        // table, whose places mean nothing to the caller.
        let text = if lock.is_empty() {
            String::new()
        } else {
            let doc = toml::Table::from_iter([("lock".to_string(), toml::Value::Table(lock))]);
            toml::to_string(&doc).map_err(|e| KeyError::new("lock", e.to_string()))?
        };
        let lock = (family.configure)(&text, Path::new("")).map_err(|e| match e {
            ConfigError::Toml(e) => e.unplaced(),
            ConfigError::Invalid(e) => e.under_key("lock"),
        })?;
        let duration_ms = self
            .duration_ms
            .ok_or_else(|| KeyError::missing("duration_ms", "required"))?;
        let raw = RawScenario {
            name: self.name,
            description: self.description,
            algorithm: self.algorithm,
            duration_ms,
            liveness_ms: self.liveness_ms,
            lock: None,
            workload: self.workload,
            network: self.network,
            faults: self.random,
            expect: self.expect,
        };
        Scenario::validated(
            file,
            raw,
            lock,
            ExplicitFaults::Typed(self.at),
            Runner::Simulation,
        )
    }
}

/// A selector as a file would write it, to be checked as one is.
fn raw(selector: &Selector) -> RawSelector {
    match selector {
        Selector::Group(g) => RawSelector::Name(g.name().to_string()),
        Selector::Nodes(v) => RawSelector::Nodes(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{LIVENESS, MUTEX};
    use crate::scenario::Group;
    use crate::sim::FaultPoint;

    const FILE: &str = r#"
name = "t"
algorithm = "redis"
duration_ms = 4000
[lock]
ttl_ms = 300
[workload]
clients = 2
[faults]
pause = { nodes = "clients", duration_ms = [100, 400] }
[[faults.at]]
at_ms = 1000
kind = "pause"
nodes = ["client-0"]
duration_ms = 900
at = "before-write"
[expect]
mutex = "violated"
"#;

    fn built() -> ScenarioBuilder {
        Scenario::builder("t", "redis")
            .duration_ms(4000)
            .lock_param("ttl_ms", 300)
            .workload(Workload {
                clients: 2,
                ..Workload::default()
            })
            .random_pause(PauseSpec {
                nodes: Selector::Group(Group::Clients),
                duration_ms: Range([100, 400]),
                at: FaultPoint::Anywhere,
            })
            .fault(
                1000,
                Fault::Pause {
                    nodes: vec!["client-0".into()],
                    duration_ms: 900,
                    at: FaultPoint::BeforeWrite,
                },
            )
            .expect(&MUTEX, Expect::Violated)
    }

    /// The builder and the file make the same scenario: the same nodes, faults and
    /// expectations, and the same history for a seed.
    #[test]
    fn a_built_scenario_is_the_file_with_the_same_keys() {
        let b = built().build().unwrap();
        let f = Scenario::parse(Path::new("t.toml"), FILE).unwrap();
        assert_eq!(b.file, Path::new("<t>"));
        assert_eq!(b.nodes(), f.nodes());
        assert_eq!(b.liveness_ms, f.liveness_ms);
        assert_eq!(b.workload, f.workload);
        assert_eq!(b.faults, f.faults);
        assert_eq!(b.expect, f.expect);
        assert_eq!(format!("{:?}", b.lock), format!("{:?}", f.lock));
        assert_eq!(crate::run(&b, 3).history, crate::run(&f, 3).history);
    }

    /// Errors name the key a file's would, without a line (there is no text).
    #[test]
    fn a_builder_is_checked_as_a_file_is() {
        let message = |b: ScenarioBuilder| b.build().unwrap_err().message();
        assert_eq!(
            message(built().fault(
                5000,
                Fault::Pause {
                    nodes: vec!["client-0".into()],
                    duration_ms: 5,
                    at: FaultPoint::Anywhere,
                }
            )),
            "key `faults.at[1].at_ms`: expected a time before duration_ms = 4000, got 5000"
        );
        let m = message(built().fault(
            10,
            Fault::Pause {
                nodes: vec!["client-9".into()],
                duration_ms: 5,
                at: FaultPoint::Anywhere,
            },
        ));
        assert!(
            m.starts_with("key `faults.at[1].nodes`: unknown node `client-9`"),
            "{m}"
        );
        let m = message(built().lock_param("ttl", 5));
        assert!(
            m.contains("unknown field `ttl`") && !m.contains("line"),
            "{m}"
        );
        let m = message(built().lock_param("ttl_ms", 0));
        assert!(m.starts_with("key `lock.ttl_ms`"), "{m}");
        let m = message(built().workload(Workload {
            clients: 0,
            ..Workload::default()
        }));
        assert!(m.starts_with("key `workload.clients`"), "{m}");
        let m = message(Scenario::builder("t", "redis"));
        assert_eq!(m, "missing key `duration_ms`: required");
        let m = message(Scenario::builder("t", "etcd").duration_ms(5));
        assert!(m.contains("unknown algorithm `etcd`"), "{m}");
        let e = built().expect(&LIVENESS, Expect::Holds).swarm(true);
        assert!(e.build().is_ok());
        let e = Scenario::builder("t", "redis")
            .duration_ms(1000)
            .swarm(true)
            .build()
            .unwrap_err();
        assert_eq!(e.to_string().split(':').next(), Some("<t>"));
        assert!(
            e.message().starts_with("key `faults.swarm`: has no effect"),
            "{e}"
        );
    }
}
