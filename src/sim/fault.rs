//! Faults: one tagged enum, used everywhere a fault is named — the scenario's
//! `[[faults.at]]` entries, the random nemesis's draws, the schedule a run applied (which
//! a shrinker cuts down), the world that applies them, and `locksim list`.
//!
//! Adding a fault kind = one variant of [`Fault`] (its TOML fields are its own fields),
//! its line in [`Fault::KINDS`], its expansion in [`Fault::actions`], and, for a new
//! [`Action`], its step in the applier (`Nemesis::apply` in `sim/applier.rs`) and what
//! each `FaultTarget` does with it: the simulated world's and live mode's `supports`
//! name every variant, so neither compiles until it has decided.

use super::clock::ClockChange;
use crate::key_error::{KeyError, TableError};
use serde::{Deserialize, Serialize};

const MS: u64 = 1_000_000;

/// The longest time any fault field may name: one simulated hour, so local-time
/// arithmetic can never overflow whatever the input.
pub(crate) const MAX_FAULT_MS: u64 = 3_600_000;

/// Where a pause or crash strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FaultPoint {
    /// At the scheduled instant, wherever the node is.
    #[default]
    Anywhere,
    /// Armed at the scheduled instant; strikes when the client next reaches the point
    /// between its validity check and its write (Kleppmann's window).
    BeforeWrite,
    /// Armed at the scheduled instant; strikes right after the client's next successful
    /// acquire, before it reads: the holder then sleeps through its lease and wakes up
    /// believing it holds the lock.
    AfterAcquire,
    /// Armed at the scheduled instant; strikes inside a multi-step acquire, after the
    /// lock is partly taken and before it is complete (e.g. between SETNX and EXPIRE).
    MidAcquire,
    /// Armed at the scheduled instant; strikes while the client waits for the lock: once
    /// its current (or next) acquire has been outstanding for [`WAITING_STRIKES_AFTER`]
    /// of its own time, when the lock service has queued it behind the holder. The
    /// workload reaches it, not the lock client, so it strikes inside any client's wait,
    /// a real library's (an external adapter's) included, where `mid-acquire` cannot.
    Waiting,
}

/// How long an acquire must have been outstanding before a fault armed at
/// [`FaultPoint::Waiting`] strikes: long past an uncontended acquire's round trips, so
/// the client is queued behind the holder, not still asking.
pub const WAITING_STRIKES_AFTER: std::time::Duration = std::time::Duration::from_millis(200);

impl FaultPoint {
    /// Name used in scenarios and events.
    pub fn name(self) -> &'static str {
        match self {
            FaultPoint::Anywhere => "anywhere",
            FaultPoint::BeforeWrite => "before-write",
            FaultPoint::AfterAcquire => "after-acquire",
            FaultPoint::MidAcquire => "mid-acquire",
            FaultPoint::Waiting => "waiting",
        }
    }
}

/// One fault. The TOML form is the variant's fields plus `kind = "<variant>"`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fault {
    /// Stop-the-world pause of each node for `duration_ms`.
    Pause {
        /// The nodes paused.
        nodes: Vec<String>,
        /// Pause length, true ms.
        duration_ms: u64,
        /// Where the pause strikes (default `anywhere`).
        #[serde(default, skip_serializing_if = "is_anywhere")]
        at: FaultPoint,
    },
    /// Cut `nodes` off from `peers` (every other node when empty), for `duration_ms` or
    /// until a `heal`.
    Partition {
        /// The cut-off side.
        nodes: Vec<String>,
        /// How long until this partition heals, ms (none: until a `heal`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// Drop only traffic from `nodes` to the others [false].
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        oneway: bool,
        /// Cut `nodes` off from these nodes only [every other node].
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        peers: Vec<String>,
    },
    /// Repair every partition.
    Heal {},
    /// Step each node's wall clock by `delta_ms` (negative steps back).
    ClockJump {
        /// The nodes.
        nodes: Vec<String>,
        /// The step, ms.
        delta_ms: i64,
    },
    /// Set each node's wall clock `skew_ms` off true time.
    Skew {
        /// The nodes.
        nodes: Vec<String>,
        /// Offset from true time, ms.
        skew_ms: i64,
    },
    /// Set each node's clock rate error (both clocks).
    Drift {
        /// The nodes.
        nodes: Vec<String>,
        /// Drift, parts per million (> -1000000: a clock cannot stop).
        drift_ppm: i64,
    },
    /// Crash each node (unsynced disk data is lost), restarting after `down_ms` if given.
    Crash {
        /// The nodes.
        nodes: Vec<String>,
        /// Down time before the restart, ms (none: until a `restart`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        down_ms: Option<u64>,
        /// Where the crash strikes (default `anywhere`).
        #[serde(default, skip_serializing_if = "is_anywhere")]
        at: FaultPoint,
    },
    /// Restart crashed nodes.
    Restart {
        /// The nodes.
        nodes: Vec<String>,
    },
    /// Stall each node's disk for `duration_ms`: the process keeps running and stepping
    /// network messages, but every fsync it starts meanwhile completes only when the
    /// stall ends (a saturated or failing device: etcd #15247, #12528).
    DiskStall {
        /// The nodes.
        nodes: Vec<String>,
        /// Stall length, true ms.
        duration_ms: u64,
    },
}

fn is_anywhere(p: &FaultPoint) -> bool {
    *p == FaultPoint::Anywhere
}

/// A fault at a point in true time: one `[[faults.at]]` entry, or one random draw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimedFault {
    /// True time, ms.
    pub at_ms: u64,
    /// What happens.
    #[serde(flatten)]
    pub fault: Fault,
}

/// A fault schedule in application order (explicit entries first, then random draws;
/// the world applies them in true-time order, stably).
pub type Schedule = Vec<TimedFault>;

impl Fault {
    /// Every kind with what it does, for `locksim list`.
    pub const KINDS: &'static [(&'static str, &'static str)] = &[
        (
            "pause",
            "stop-the-world freeze of nodes (duration_ms; at = anywhere | after-acquire | before-write | mid-acquire | waiting)",
        ),
        (
            "partition",
            "cut nodes off from the rest or from peers (duration_ms; oneway = true: outbound only)",
        ),
        ("heal", "repair every partition"),
        ("clock-jump", "step nodes' wall clocks (delta_ms)"),
        ("skew", "set nodes' wall clock offset from true time (skew_ms)"),
        ("drift", "set nodes' clock rate error (drift_ppm)"),
        (
            "crash",
            "kill nodes; unsynced disk data is lost; restart after down_ms (at = as for pause)",
        ),
        ("restart", "restart crashed nodes"),
        (
            "disk-stall",
            "nodes' fsyncs block until the stall ends while the process runs (duration_ms; servers with a disk)",
        ),
    ];

    /// The kind's name, as in `kind = "..."`.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Pause { .. } => "pause",
            Fault::Partition { .. } => "partition",
            Fault::Heal {} => "heal",
            Fault::ClockJump { .. } => "clock-jump",
            Fault::Skew { .. } => "skew",
            Fault::Drift { .. } => "drift",
            Fault::Crash { .. } => "crash",
            Fault::Restart { .. } => "restart",
            Fault::DiskStall { .. } => "disk-stall",
        }
    }

    /// The nodes the fault names (empty for `heal`).
    pub fn nodes(&self) -> &[String] {
        match self {
            Fault::Heal {} => &[],
            Fault::Pause { nodes, .. }
            | Fault::Partition { nodes, .. }
            | Fault::ClockJump { nodes, .. }
            | Fault::Skew { nodes, .. }
            | Fault::Drift { nodes, .. }
            | Fault::Crash { nodes, .. }
            | Fault::DiskStall { nodes, .. }
            | Fault::Restart { nodes } => nodes,
        }
    }

    /// Where it strikes, for the kinds that have a fault point.
    pub fn point(&self) -> Option<FaultPoint> {
        match self {
            Fault::Pause { at, .. } | Fault::Crash { at, .. } => Some(*at),
            _ => None,
        }
    }

    /// How long the fault lasts, ms, when it heals by itself (pause, partition, crash,
    /// disk stall).
    pub fn duration_ms(&self) -> Option<u64> {
        match self {
            Fault::Pause { duration_ms, .. } | Fault::DiskStall { duration_ms, .. } => {
                Some(*duration_ms)
            }
            Fault::Partition { duration_ms, .. } => *duration_ms,
            Fault::Crash { down_ms, .. } => *down_ms,
            _ => None,
        }
    }

    /// Check the fault against the run's node names: known nodes, bounded times, a
    /// partition that leaves someone on the other side.
    pub fn validate(&self, all: &[String]) -> Result<(), KeyError> {
        let known = |field: &str, names: &[String]| -> Result<(), KeyError> {
            for n in names {
                if !all.contains(n) {
                    return Err(KeyError::new(
                        field,
                        format!(
                            "unknown node `{n}`; nodes in this scenario: {}",
                            all.join(", ")
                        ),
                    ));
                }
            }
            Ok(())
        };
        let bounded = |field: &str, v: u64| -> Result<(), KeyError> {
            if v > MAX_FAULT_MS {
                return Err(KeyError::new(
                    field,
                    format!("expected at most {MAX_FAULT_MS} (one hour) in magnitude, got {v}"),
                ));
            }
            Ok(())
        };
        if !matches!(self, Fault::Heal {}) {
            if self.nodes().is_empty() {
                return Err(KeyError::new("nodes", "expected at least one node name"));
            }
            known("nodes", self.nodes())?;
        }
        match self {
            Fault::Pause { duration_ms, .. } | Fault::DiskStall { duration_ms, .. } => {
                bounded("duration_ms", *duration_ms)?
            }
            Fault::Partition {
                nodes,
                duration_ms,
                peers,
                ..
            } => {
                if let Some(d) = duration_ms {
                    bounded("duration_ms", *d)?;
                }
                known("peers", peers)?;
                if let Some(n) = peers.iter().find(|p| nodes.contains(p)) {
                    return Err(KeyError::new(
                        "peers",
                        format!("`{n}` is on both sides of the partition"),
                    ));
                }
                if peers.is_empty() && all.iter().all(|n| nodes.contains(n)) {
                    return Err(KeyError::new(
                        "nodes",
                        "a partition cuts these nodes off from the rest, so it must leave at least one node out",
                    ));
                }
            }
            Fault::ClockJump { delta_ms, .. } => bounded("delta_ms", delta_ms.unsigned_abs())?,
            Fault::Skew { skew_ms, .. } => bounded("skew_ms", skew_ms.unsigned_abs())?,
            Fault::Drift { drift_ppm, .. } => {
                if *drift_ppm <= -1_000_000 || *drift_ppm > 1_000_000 {
                    return Err(KeyError::new(
                        "drift_ppm",
                        format!(
                            "expected a value in (-1000000, 1000000] (a clock cannot stop or run backwards), got {drift_ppm}"
                        ),
                    ));
                }
            }
            Fault::Crash { down_ms, .. } => {
                if let Some(d) = down_ms {
                    bounded("down_ms", *d)?;
                }
            }
            Fault::Heal {} | Fault::Restart { .. } => {}
        }
        Ok(())
    }

    /// Parse one `[[faults.at]]` table (without its `at_ms`). Errors name the field and,
    /// for a field the kind does not have or lacks, the kind.
    pub fn from_table(table: toml::Table) -> Result<Fault, KeyError> {
        let kind = match table.get("kind") {
            Some(toml::Value::String(k)) => k.clone(),
            Some(v) => {
                return Err(KeyError::new(
                    "kind",
                    format!("expected a string, got {}", v.type_str()),
                ))
            }
            None => {
                return Err(KeyError::new(
                    "kind",
                    format!("missing; expected one of {}", Self::kind_names()),
                ))
            }
        };
        if !Self::KINDS.iter().any(|(k, _)| *k == kind) {
            return Err(KeyError::new(
                "kind",
                format!(
                    "unknown fault kind `{kind}`; expected one of {}",
                    Self::kind_names()
                ),
            ));
        }
        crate::key_error::from_table::<Fault>(table).map_err(|e| Self::explain(&kind, e))
    }

    fn kind_names() -> String {
        Self::KINDS
            .iter()
            .map(|(k, _)| *k)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// serde's error, restated with the field and the kind.
    fn explain(kind: &str, e: TableError) -> KeyError {
        match e {
            TableError::UnknownField { field, expected } => {
                let advice = match crate::did_you_mean::closest(&field, expected.iter().copied()) {
                    Some(key) => format!("(did you mean `{key}`?)"),
                    None => "(remove it)".to_string(),
                };
                KeyError::new(&field, format!("not used by kind = \"{kind}\" {advice}"))
            }
            TableError::MissingField(field) => {
                KeyError::new(field, format!("required for kind = \"{kind}\""))
            }
            TableError::Other(msg) => KeyError::here(msg.trim().replace('\n', " ")),
        }
    }

    /// What the world does for this fault at true time `t` (ns). Partitions take their
    /// id from `next_id`, in schedule order, so a heal can name them.
    pub fn actions(&self, t: u64, next_id: &mut u64, out: &mut Vec<(u64, Action)>) {
        let each =
            |nodes: &[String], out: &mut Vec<(u64, Action)>, f: &dyn Fn(String) -> Action| {
                for n in nodes {
                    out.push((t, f(n.clone())));
                }
            };
        match self {
            Fault::Pause {
                nodes,
                duration_ms,
                at,
            } => {
                let duration_ns = duration_ms * MS;
                each(nodes, out, &|node| match at {
                    FaultPoint::Anywhere => Action::Pause { node, duration_ns },
                    point => Action::ArmPause {
                        node,
                        duration_ns,
                        point: *point,
                    },
                });
            }
            Fault::Partition {
                nodes,
                duration_ms,
                oneway,
                peers,
            } => {
                let id = *next_id;
                *next_id += 1;
                out.push((
                    t,
                    Action::Partition {
                        id,
                        side: nodes.clone(),
                        peers: peers.clone(),
                        oneway: *oneway,
                    },
                ));
                if let Some(d) = duration_ms {
                    out.push((t + d * MS, Action::Heal { id }));
                }
            }
            Fault::Heal {} => out.push((t, Action::HealAll)),
            Fault::ClockJump { nodes, delta_ms } => each(nodes, out, &|node| Action::ClockJump {
                node,
                delta_ns: delta_ms * MS as i64,
            }),
            Fault::Skew { nodes, skew_ms } => each(nodes, out, &|node| Action::Skew {
                node,
                skew_ns: skew_ms * MS as i64,
            }),
            Fault::Drift { nodes, drift_ppm } => each(nodes, out, &|node| Action::Drift {
                node,
                ppm: *drift_ppm,
            }),
            Fault::Crash { nodes, down_ms, at } => {
                let down_ns = down_ms.map(|d| d * MS);
                each(nodes, out, &|node| match at {
                    FaultPoint::Anywhere => Action::Crash { node, down_ns },
                    point => Action::ArmCrash {
                        node,
                        down_ns,
                        point: *point,
                    },
                });
            }
            Fault::Restart { nodes } => each(nodes, out, &|node| Action::Restart { node }),
            Fault::DiskStall { nodes, duration_ms } => {
                each(nodes, out, &|node| Action::DiskStall {
                    node,
                    duration_ns: duration_ms * MS,
                })
            }
        }
    }
}

/// The world's actions for a whole schedule, in true-time order (stable: at equal times,
/// schedule order).
pub(crate) fn actions(schedule: &[TimedFault]) -> Vec<(u64, Action)> {
    let mut out = Vec::new();
    let mut next_id = 0u64;
    for f in schedule {
        f.fault.actions(f.at_ms * MS, &mut next_id, &mut out);
    }
    out.sort_by_key(|(t, _)| *t);
    out
}

/// One thing the world does to a node or the network at a point in true time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Freeze `node` now for `duration_ns`.
    Pause {
        /// Node.
        node: String,
        /// Pause length, true ns.
        duration_ns: u64,
    },
    /// Arm a pause that strikes when `node` reaches `point`.
    ArmPause {
        /// Node.
        node: String,
        /// Pause length, true ns.
        duration_ns: u64,
        /// Where it strikes.
        point: FaultPoint,
    },
    /// Unfreeze `node`.
    Resume {
        /// Node.
        node: String,
    },
    /// Cut `side` off from `peers` (only outbound from `side` when `oneway`).
    Partition {
        /// Partition id (its heal names it).
        id: u64,
        /// The cut-off nodes.
        side: Vec<String>,
        /// The nodes they are cut off from (empty: every other node).
        peers: Vec<String>,
        /// Drop only traffic from `side`.
        oneway: bool,
    },
    /// Heal partition `id`.
    Heal {
        /// Partition id.
        id: u64,
    },
    /// Heal every partition.
    HealAll,
    /// Step `node`'s wall clock.
    ClockJump {
        /// Node.
        node: String,
        /// Step, ns.
        delta_ns: i64,
    },
    /// Set `node`'s wall clock this far from true time.
    Skew {
        /// Node.
        node: String,
        /// Offset, ns.
        skew_ns: i64,
    },
    /// Set `node`'s drift.
    Drift {
        /// Node.
        node: String,
        /// Drift, ppm.
        ppm: i64,
    },
    /// Crash `node` now; restart after `down_ns` if given.
    Crash {
        /// Node.
        node: String,
        /// Down time.
        down_ns: Option<u64>,
    },
    /// Arm a crash that strikes when `node` reaches `point`.
    ArmCrash {
        /// Node.
        node: String,
        /// Down time.
        down_ns: Option<u64>,
        /// Where it strikes.
        point: FaultPoint,
    },
    /// Restart a crashed `node`.
    Restart {
        /// Node.
        node: String,
    },
    /// Stall `node`'s disk for `duration_ns` from now.
    DiskStall {
        /// Node.
        node: String,
        /// Stall length, true ns.
        duration_ns: u64,
    },
    /// The end of a disk stall (scheduled by the world when it applies `DiskStall`):
    /// recorded, so that the history says when the disk recovered.
    DiskReady {
        /// Node.
        node: String,
    },
}

impl Action {
    /// The node and clock change of a clock action (`ClockJump`, `Skew`, `Drift`).
    pub fn clock_change(&self) -> Option<(&str, ClockChange)> {
        match self {
            Action::ClockJump { node, delta_ns } => Some((
                node,
                ClockChange::Jump {
                    delta_ns: *delta_ns,
                },
            )),
            Action::Skew { node, skew_ns } => Some((node, ClockChange::Skew { skew_ns: *skew_ns })),
            Action::Drift { node, ppm } => Some((node, ClockChange::Drift { ppm: *ppm })),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_error::KeyPath;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn each_kind_parses_with_exactly_its_fields() {
        let f = Fault::from_table(table(
            "kind = \"pause\"\nnodes = [\"client-0\"]\nduration_ms = 5\nat = \"before-write\"",
        ))
        .unwrap();
        assert_eq!(f.point(), Some(FaultPoint::BeforeWrite));
        let e = Fault::from_table(table("kind = \"heal\"\ndelta_ms = 5")).unwrap_err();
        assert_eq!(e.path(), &KeyPath::key("delta_ms"));
        assert!(e.message.contains("not used by kind = \"heal\""), "{e:?}");
        let e = Fault::from_table(table("kind = \"pause\"\nnodes = [\"a\"]")).unwrap_err();
        assert_eq!(e.path(), &KeyPath::key("duration_ms"));
        assert!(e.message.contains("required"), "{e:?}");
        let e = Fault::from_table(table("kind = \"pause\"\nnodes = [\"a\"]\nduraton_ms = 5"))
            .unwrap_err();
        assert_eq!(e.path(), &KeyPath::key("duraton_ms"));
        assert!(
            e.message.ends_with("(did you mean `duration_ms`?)"),
            "{e:?}"
        );
        let e = Fault::from_table(table("kind = \"pause\"\nnodes = \"a\"\nduration_ms = 5"))
            .unwrap_err();
        assert!(e.path().is_empty(), "{e:?}");
        assert_eq!(e.message, "invalid type: string \"a\", expected a sequence");
        let e = Fault::from_table(table("kind = \"bogus\"")).unwrap_err();
        assert_eq!(e.path(), &KeyPath::key("kind"));
        assert!(e.message.contains("unknown fault kind"), "{e:?}");
    }

    #[test]
    fn serialises_back_to_the_same_fault() {
        let f = TimedFault {
            at_ms: 10,
            fault: Fault::Partition {
                nodes: vec!["a".into()],
                duration_ms: Some(5),
                oneway: false,
                peers: vec![],
            },
        };
        let text = toml::to_string(&f).unwrap();
        let mut t: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(t.remove("at_ms"), Some(toml::Value::Integer(10)));
        assert_eq!(Fault::from_table(t).unwrap(), f.fault);
    }

    #[test]
    fn schedules_expand_per_node_and_heal_in_time_order() {
        let s = vec![
            TimedFault {
                at_ms: 1500,
                fault: Fault::Pause {
                    nodes: vec!["client-0".into(), "client-1".into()],
                    duration_ms: 300,
                    at: FaultPoint::BeforeWrite,
                },
            },
            TimedFault {
                at_ms: 100,
                fault: Fault::Partition {
                    nodes: vec!["redis-0".into()],
                    duration_ms: Some(50),
                    oneway: false,
                    peers: vec![],
                },
            },
        ];
        let a = actions(&s);
        assert_eq!(a.len(), 4);
        assert!(matches!(a[0], (t, Action::Partition { id: 0, .. }) if t == 100 * MS));
        assert_eq!(a[1], (150 * MS, Action::Heal { id: 0 }));
        assert!(matches!(
            &a[2].1,
            Action::ArmPause { node, point: FaultPoint::BeforeWrite, .. } if node == "client-0"
        ));
    }
}
