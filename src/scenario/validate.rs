//! Checking a scenario after it parses: values serde cannot check (ranges, relations
//! between keys, node names, fault points a client must reach), each error naming its
//! key. The checks run in the order of the file's keys, so the first error reported is
//! the first one a reader meets.

use super::faults::{check_density, RawFaults, DEFAULT_INTERVAL_MS};
use super::{
    AcquireMode, ClockSpec, CrashSpec, DiskStallSpec, ExplicitFaults, Faults, Group, PartitionSpec,
    PauseSpec, RawSelector, Scenario, Selector, Workload, MAX_DURATION_MS, MAX_EXPLICIT_FAULTS,
};
use crate::key_error::{KeyError, Place};
use crate::locks::param;
use crate::sim::{Fault, FaultPoint, Schedule, TimedFault};

impl Scenario {
    /// The envelope's own keys, before `[faults]`.
    pub(super) fn validate_envelope(&self) -> Result<(), KeyError> {
        if self.name.trim().is_empty() {
            return Err(KeyError::new("name", "expected a non-empty string"));
        }
        param::positive("duration_ms", self.duration_ms).map_err(|_| {
            KeyError::new(
                "duration_ms",
                format!(
                    "expected 1 to {MAX_DURATION_MS} (one simulated hour), got {}",
                    self.duration_ms
                ),
            )
        })?;
        param::positive("liveness_ms", self.liveness_ms)?;
        let w = &self.workload;
        param::between("clients", w.clients as u64, 1, 64)
            .and_then(|()| param::positive("acquire_timeout_ms", w.acquire_timeout_ms))
            .and_then(|()| param::positive("storage_timeout_ms", w.storage_timeout_ms))
            .and_then(|()| param::range("work_ms", &w.work_ms))
            .and_then(|()| param::range("think_ms", &w.think_ms))
            .and_then(|()| match w.acquire {
                AcquireMode::TryFor(ms) => param::positive("acquire.try_for_ms", ms),
                AcquireMode::Wait | AcquireMode::Try => Ok(()),
            })
            .map_err(|e| e.under_key("workload"))?;
        if let Some(client) = &w.client {
            client.validate()?;
        }
        param::range("latency_ms", &self.network.latency_ms).map_err(|e| e.under_key("network"))?;
        if !(0.0..=1.0).contains(&self.network.loss) {
            return Err(KeyError::new(
                "network.loss",
                format!(
                    "expected a probability in [0, 1], got {}",
                    self.network.loss
                ),
            ));
        }
        Ok(())
    }

    /// `[faults]`' random nemesis: its selectors resolved and its values checked.
    pub(super) fn validate_random(&self, raw: &RawFaults) -> Result<Faults, KeyError> {
        let interval_ms = raw.interval_ms.unwrap_or(DEFAULT_INTERVAL_MS);
        param::range("faults.interval_ms", &interval_ms)?;
        if interval_ms[0] == 0 {
            return Err(KeyError::new(
                "faults.interval_ms",
                "expected a minimum gap of at least 1 ms",
            ));
        }
        check_density(interval_ms, raw.any_random(), self.duration_ms)?;
        let under = |kind: &'static str| move |e: KeyError| e.under_key(kind).under_key("faults");
        Ok(Faults {
            interval_ms,
            swarm: raw.swarm.unwrap_or(false),
            pause: raw
                .pause
                .as_ref()
                .map(|s| self.pause(s))
                .transpose()
                .map_err(under("pause"))?,
            partition: raw
                .partition
                .as_ref()
                .map(|s| self.partition(s))
                .transpose()
                .map_err(under("partition"))?,
            clock: raw
                .clock
                .as_ref()
                .map(|s| self.clock(s))
                .transpose()
                .map_err(under("clock"))?,
            crash: raw
                .crash
                .as_ref()
                .map(|s| self.crash(s))
                .transpose()
                .map_err(under("crash"))?,
            disk_stall: raw
                .disk_stall
                .as_ref()
                .map(|s| self.disk_stall(s))
                .transpose()
                .map_err(under("disk-stall"))?,
            at: Schedule::new(),
        })
    }

    fn pause(&self, s: &PauseSpec<RawSelector>) -> Result<PauseSpec, KeyError> {
        let nodes = self.validate_selector(&s.nodes)?;
        param::range("duration_ms", &s.duration_ms)?;
        self.validate_point(s.at, &self.select(&nodes))?;
        Ok(PauseSpec {
            nodes,
            duration_ms: s.duration_ms,
            at: s.at,
        })
    }

    fn partition(&self, s: &PartitionSpec<RawSelector>) -> Result<PartitionSpec, KeyError> {
        let nodes = self.validate_selector(&s.nodes)?;
        param::range("duration_ms", &s.duration_ms)?;
        Ok(PartitionSpec {
            nodes,
            duration_ms: s.duration_ms,
            oneway: s.oneway,
        })
    }

    fn clock(&self, c: &ClockSpec<RawSelector>) -> Result<ClockSpec, KeyError> {
        let nodes = self.validate_selector(&c.nodes)?;
        if c.skew_ms.is_none() && c.drift_ppm.is_none() && c.jump_ms.is_none() {
            return Err(KeyError::here(
                "expected at least one of skew_ms, drift_ppm, jump_ms",
            ));
        }
        if let Some(r) = &c.skew_ms {
            param::signed_range("skew_ms", r)?;
        }
        if let Some(r) = &c.jump_ms {
            param::signed_range("jump_ms", r)?;
        }
        if let Some(r) = &c.drift_ppm {
            param::signed_range("drift_ppm", r)?;
            if r[0] <= -1_000_000 {
                return Err(KeyError::new(
                    "drift_ppm",
                    format!(
                        "expected values > -1000000 (a clock cannot stop), got {}",
                        r[0]
                    ),
                ));
            }
        }
        Ok(ClockSpec {
            nodes,
            skew_ms: c.skew_ms,
            drift_ppm: c.drift_ppm,
            jump_ms: c.jump_ms,
        })
    }

    fn crash(&self, c: &CrashSpec<RawSelector>) -> Result<CrashSpec, KeyError> {
        let nodes = self.validate_selector(&c.nodes)?;
        param::range("down_ms", &c.down_ms)?;
        self.validate_point(c.at, &self.select(&nodes))?;
        Ok(CrashSpec {
            nodes,
            down_ms: c.down_ms,
            at: c.at,
        })
    }

    fn disk_stall(&self, d: &DiskStallSpec<RawSelector>) -> Result<DiskStallSpec, KeyError> {
        let nodes = self.validate_selector(&d.nodes)?;
        param::range("duration_ms", &d.duration_ms)?;
        if self.disk_nodes_in(&nodes).is_empty() {
            return Err(KeyError::new(
                "nodes",
                format!(
                    "selects no node with a disk; nodes with a disk here: {}",
                    self.disk_nodes_or_none()
                ),
            ));
        }
        Ok(DiskStallSpec {
            nodes,
            duration_ms: d.duration_ms,
        })
    }

    /// Room for random faults before the liveness tail, and expectations only for
    /// checks this scenario runs.
    pub(super) fn validate_tail(&self) -> Result<(), KeyError> {
        if self.faults.any_random() && self.duration_ms <= self.liveness_ms {
            // Random faults stop liveness_ms before the end; with no room they would
            // silently never happen.
            return Err(KeyError::new(
                "faults",
                format!(
                    "random faults are configured, but they must end liveness_ms = {} before duration_ms = {}, which leaves no time for them; lengthen duration_ms or set a shorter liveness_ms",
                    self.liveness_ms, self.duration_ms
                ),
            ));
        }
        let checks = self.checks();
        for name in self.expect.keys() {
            if checks.iter().any(|c| c.name == name) {
                continue;
            }
            let known = crate::check::STANDARD.iter().any(|c| c.name == name);
            let message = if name == crate::check::REENTRANT.name {
                "defined only when the workload re-enters (`workload.reentrant = true`)".into()
            } else if known {
                format!(
                    "not defined for {} (see `locksim list` for the checks each algorithm defines)",
                    self.algorithm()
                )
            } else {
                format!(
                    "unknown check; expected one of {}",
                    checks.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
                )
            };
            return Err(KeyError::new(name, message).under_key("expect"));
        }
        Ok(())
    }

    /// Keys of the random nemesis with no random kind to act on would do nothing.
    pub(super) fn validate_unused(&self, raw: &RawFaults) -> Result<(), KeyError> {
        if self.faults.any_random() {
            return Ok(());
        }
        for (key, set) in [
            ("interval_ms", raw.interval_ms.is_some()),
            ("swarm", raw.swarm.is_some()),
        ] {
            if set {
                return Err(KeyError::new(
                    key,
                    "has no effect, because no random fault kind (pause, partition, clock, crash, disk-stall) is configured in [faults]; remove it or add a kind",
                )
                .under_key("faults"));
            }
        }
        Ok(())
    }

    /// The `[[faults.at]]` entries, each checked; errors name the entry (and, for
    /// written ones, its line).
    pub(super) fn explicit_faults(
        &self,
        explicit: ExplicitFaults<'_>,
    ) -> Result<Schedule, KeyError> {
        let count = match &explicit {
            ExplicitFaults::Written { entries, .. } => entries.len(),
            ExplicitFaults::Typed(schedule) => schedule.len(),
        };
        if count > MAX_EXPLICIT_FAULTS {
            return Err(KeyError::new(
                "faults.at",
                format!(
                    "{count} entries; at most {MAX_EXPLICIT_FAULTS} explicit faults are accepted"
                ),
            ));
        }
        let all = self.nodes();
        match explicit {
            ExplicitFaults::Written { entries, text } => {
                let mut schedule = Schedule::with_capacity(entries.len());
                for (i, entry) in entries.into_iter().enumerate() {
                    let line = text[..entry.span().start.min(text.len())]
                        .matches('\n')
                        .count()
                        + 1;
                    let fault = self
                        .timed_fault(entry.into_inner(), &all)
                        .map_err(|e| e.under("faults.at", i).placed(Place::Entry { line }))?;
                    schedule.push(fault);
                }
                Ok(schedule)
            }
            ExplicitFaults::Typed(schedule) => {
                for (i, f) in schedule.iter().enumerate() {
                    self.validate_at(f.at_ms)
                        .and_then(|()| self.validate_fault(&f.fault, &all))
                        .map_err(|e| e.under("faults.at", i))?;
                }
                Ok(schedule)
            }
        }
    }

    /// One `[[faults.at]]` table as a fault; errors name keys of the entry.
    fn timed_fault(&self, mut table: toml::Table, all: &[String]) -> Result<TimedFault, KeyError> {
        let at_ms = match table.remove("at_ms") {
            Some(toml::Value::Integer(t)) if t >= 0 => t as u64,
            Some(v) => {
                return Err(KeyError::new(
                    "at_ms",
                    format!("expected a non-negative integer (ms), got {v}"),
                ))
            }
            None => return Err(KeyError::new("at_ms", "required")),
        };
        self.validate_at(at_ms)?;
        let fault = Fault::from_table(table)?;
        self.validate_fault(&fault, all)?;
        Ok(TimedFault { at_ms, fault })
    }

    /// An explicit fault's time falls inside the run.
    fn validate_at(&self, at_ms: u64) -> Result<(), KeyError> {
        if at_ms >= self.duration_ms {
            return Err(KeyError::new(
                "at_ms",
                format!(
                    "expected a time before duration_ms = {}, got {at_ms}",
                    self.duration_ms
                ),
            ));
        }
        Ok(())
    }

    /// An explicit fault names known nodes, disks they have and points they reach.
    fn validate_fault(&self, fault: &Fault, all: &[String]) -> Result<(), KeyError> {
        fault.validate(all)?;
        if let Fault::DiskStall { nodes, .. } = fault {
            self.validate_disk_nodes(nodes)?;
        }
        if let Some(point) = fault.point() {
            self.validate_point(point, fault.nodes())?;
        }
        Ok(())
    }

    /// A disk stall can name only nodes with a disk: on any other it could do nothing.
    fn validate_disk_nodes(&self, nodes: &[String]) -> Result<(), KeyError> {
        let disks = self.disk_nodes();
        match nodes.iter().find(|n| !disks.contains(n)) {
            None => Ok(()),
            Some(n) => Err(KeyError::new(
                "nodes",
                format!(
                    "`{n}` has no disk a stall could slow down; nodes with a disk here: {}",
                    self.disk_nodes_or_none()
                ),
            )),
        }
    }

    fn disk_nodes_or_none(&self) -> String {
        let disks = self.disk_nodes();
        if disks.is_empty() {
            "none".to_string()
        } else {
            disks.join(", ")
        }
    }

    /// A pause or crash armed for `point` strikes only when a client reaches it: the
    /// nodes must be clients, and the point one that this workload and lock pass. Errors
    /// name the `at` key.
    fn validate_point(&self, point: FaultPoint, nodes: &[String]) -> Result<(), KeyError> {
        if point == FaultPoint::Anywhere {
            return Ok(());
        }
        let mut points: Vec<FaultPoint> = Workload::FAULT_POINTS.to_vec();
        points.extend_from_slice(self.lock.client_fault_points());
        if !points.contains(&point) {
            let names: Vec<&str> = std::iter::once("anywhere")
                .chain(points.iter().map(|p| p.name()))
                .collect();
            return Err(KeyError::new(
                "at",
                format!(
                    "`{}` is never reached by this scenario's clients ({}), so the fault could never strike; expected one of {}",
                    point.name(),
                    self.algorithm(),
                    names.join(", ")
                ),
            ));
        }
        let clients = self.clients();
        if let Some(n) = nodes.iter().find(|n| !clients.contains(n)) {
            return Err(KeyError::new(
                "at",
                format!(
                    "`{}` is a point in client code, but `{n}` is not a client, so the fault could never strike; use at = \"anywhere\" or client nodes",
                    point.name()
                ),
            ));
        }
        Ok(())
    }

    /// A selector as written, resolved: a known group, or known node names. Errors name
    /// the `nodes` key of the spec.
    fn validate_selector(&self, sel: &RawSelector) -> Result<Selector, KeyError> {
        match sel {
            RawSelector::Name(g) => match Group::from_name(g) {
                Some(g) => Ok(Selector::Group(g)),
                None => Err(KeyError::new(
                    "nodes",
                    format!(
                        "expected \"clients\", \"servers\", \"all\" or a list of node names, got \"{g}\""
                    ),
                )),
            },
            RawSelector::Nodes(v) => {
                if v.is_empty() {
                    return Err(KeyError::new("nodes", "expected at least one node name"));
                }
                let all = self.nodes();
                if let Some(n) = v.iter().find(|n| !all.contains(n)) {
                    return Err(KeyError::new(
                        "nodes",
                        format!(
                            "unknown node `{n}`; nodes in this scenario: {}",
                            all.join(", ")
                        ),
                    ));
                }
                Ok(Selector::Nodes(v.clone()))
            }
        }
    }
}
