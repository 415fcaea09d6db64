//! Random faults: fault schedules drawn from the seed (the random nemesis's draws; the
//! applier in `applier.rs` applies them with the explicit ones).
//!
//! A gap from `interval_ms`, then one of the enabled kinds with its parameters, again and
//! again. With `swarm = true` each seed first enables a random non-empty subset of the
//! kinds (Groce et al., "Swarm Testing", ISSTA 2012): a seed that only pauses finds pause
//! bugs that constant partitions would mask.
//!
//! Draws are ordinary [`TimedFault`]s, so the schedule a run applied can be written back
//! as explicit `[[faults.at]]` entries and replayed exactly. Random faults start and heal
//! before `until_ms`, leaving a quiet tail in which a liveness check can expect the lock
//! to be granted again.

use super::fault::{Fault, FaultPoint, Schedule, TimedFault};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Random pauses: which nodes, how long, where they strike.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomPause {
    /// Candidate nodes.
    pub nodes: Vec<String>,
    /// Pause length range, true ms.
    pub duration_ms: [u64; 2],
    /// Where the pause strikes.
    pub at: FaultPoint,
}

/// Random partitions: a random non-empty subset of `nodes` is cut off from the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomPartition {
    /// Candidate nodes.
    pub nodes: Vec<String>,
    /// How long until heal, ms.
    pub duration_ms: [u64; 2],
    /// Drop only traffic from the cut-off side.
    pub oneway: bool,
}

/// Random clock faults: each draws one of the configured sub-kinds.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomClock {
    /// Candidate nodes.
    pub nodes: Vec<String>,
    /// Wall clock offsets, ms.
    pub skew_ms: Option<[i64; 2]>,
    /// Drift rates, ppm.
    pub drift_ppm: Option<[i64; 2]>,
    /// Wall clock steps, ms.
    pub jump_ms: Option<[i64; 2]>,
}

/// Random crashes with a restart.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomCrash {
    /// Candidate nodes.
    pub nodes: Vec<String>,
    /// Down time range, ms.
    pub down_ms: [u64; 2],
    /// Where the crash strikes.
    pub at: FaultPoint,
}

/// Random disk stalls.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomDiskStall {
    /// Candidate nodes.
    pub nodes: Vec<String>,
    /// Stall length range, true ms.
    pub duration_ms: [u64; 2],
}

/// The random part of a fault plan, with node selectors already resolved to names.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RandomFaults {
    /// Gap between faults, ms.
    pub interval_ms: [u64; 2],
    /// Each seed enables a random non-empty subset of the kinds.
    pub swarm: bool,
    /// Faults start and heal before this true time, ms.
    pub until_ms: u64,
    /// Random pauses.
    pub pause: Option<RandomPause>,
    /// Random partitions.
    pub partition: Option<RandomPartition>,
    /// Random clock faults.
    pub clock: Option<RandomClock>,
    /// Random crashes.
    pub crash: Option<RandomCrash>,
    /// Random disk stalls.
    pub disk_stall: Option<RandomDiskStall>,
}

impl RandomFaults {
    /// Whether any kind is configured.
    pub fn any(&self) -> bool {
        self.pause.is_some()
            || self.partition.is_some()
            || self.clock.is_some()
            || self.crash.is_some()
            || self.disk_stall.is_some()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Pause,
    Partition,
    Clock,
    Crash,
    DiskStall,
}

/// The kinds of random fault a seed enables (all configured ones, or a swarm subset).
fn enabled_kinds(f: &RandomFaults, rng: &mut ChaCha8Rng) -> Vec<Kind> {
    let mut kinds = Vec::new();
    if f.pause.is_some() {
        kinds.push(Kind::Pause);
    }
    if f.partition.is_some() {
        kinds.push(Kind::Partition);
    }
    if f.clock.is_some() {
        kinds.push(Kind::Clock);
    }
    if f.crash.is_some() {
        kinds.push(Kind::Crash);
    }
    // Last, so that schedules without disk stalls draw exactly what they drew before.
    if f.disk_stall.is_some() {
        kinds.push(Kind::DiskStall);
    }
    if !f.swarm || kinds.len() <= 1 {
        return kinds;
    }
    loop {
        let subset: Vec<Kind> = kinds
            .iter()
            .copied()
            .filter(|_| rng.gen_bool(0.5))
            .collect();
        if !subset.is_empty() {
            return subset;
        }
    }
}

fn draw(rng: &mut ChaCha8Rng, r: [u64; 2]) -> u64 {
    rng.gen_range(r[0]..=r[1])
}

fn draw_i(rng: &mut ChaCha8Rng, r: [i64; 2]) -> i64 {
    rng.gen_range(r[0]..=r[1])
}

fn pick(rng: &mut ChaCha8Rng, nodes: &[String]) -> String {
    nodes.choose(rng).expect("selectors are non-empty").clone()
}

/// The random faults of `seed`, in time order. `all` is every node of the run (a
/// partition must leave at least one of them on the other side).
pub(crate) fn draw_schedule(f: &RandomFaults, all: &[String], seed: u64) -> Schedule {
    let mut out = Vec::new();
    // The nemesis has its own stream, so adding a node does not reshuffle faults.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6e65_6d65_7369_7321);
    let kinds = enabled_kinds(f, &mut rng);
    if kinds.is_empty() {
        return out;
    }
    let end = f.until_ms;
    let mut t = draw(&mut rng, f.interval_ms);
    while t < end {
        let kind = *kinds.choose(&mut rng).expect("non-empty");
        let room = end - t;
        let fault = match kind {
            Kind::Pause => {
                let p = f.pause.as_ref().expect("enabled");
                let node = pick(&mut rng, &p.nodes);
                Fault::Pause {
                    nodes: vec![node],
                    duration_ms: draw(&mut rng, p.duration_ms).min(room),
                    at: p.at,
                }
            }
            Kind::Partition => {
                let p = f.partition.as_ref().expect("enabled");
                let side = loop {
                    let side: Vec<String> = p
                        .nodes
                        .iter()
                        .filter(|_| rng.gen_bool(0.5))
                        .cloned()
                        .collect();
                    if !side.is_empty() && side.len() < all.len() {
                        break side;
                    }
                    if p.nodes.len() == 1 && all.len() > 1 {
                        break p.nodes.clone();
                    }
                };
                Fault::Partition {
                    nodes: side,
                    duration_ms: Some(draw(&mut rng, p.duration_ms).min(room)),
                    oneway: p.oneway,
                    peers: Vec::new(),
                }
            }
            Kind::Clock => {
                let c = f.clock.as_ref().expect("enabled");
                let node = pick(&mut rng, &c.nodes);
                let mut subs = Vec::new();
                if let Some(r) = c.skew_ms {
                    subs.push(Fault::Skew {
                        nodes: vec![node.clone()],
                        skew_ms: draw_i(&mut rng, r),
                    });
                }
                if let Some(r) = c.drift_ppm {
                    subs.push(Fault::Drift {
                        nodes: vec![node.clone()],
                        drift_ppm: draw_i(&mut rng, r),
                    });
                }
                if let Some(r) = c.jump_ms {
                    subs.push(Fault::ClockJump {
                        nodes: vec![node.clone()],
                        delta_ms: draw_i(&mut rng, r),
                    });
                }
                let i = rng.gen_range(0..subs.len());
                subs.swap_remove(i)
            }
            Kind::Crash => {
                let c = f.crash.as_ref().expect("enabled");
                let node = pick(&mut rng, &c.nodes);
                Fault::Crash {
                    nodes: vec![node],
                    down_ms: Some(draw(&mut rng, c.down_ms).min(room)),
                    at: c.at,
                }
            }
            Kind::DiskStall => {
                let d = f.disk_stall.as_ref().expect("enabled");
                let node = pick(&mut rng, &d.nodes);
                Fault::DiskStall {
                    nodes: vec![node],
                    duration_ms: draw(&mut rng, d.duration_ms).min(room),
                }
            }
        };
        out.push(TimedFault { at_ms: t, fault });
        t += draw(&mut rng, f.interval_ms).max(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn all() -> Vec<String> {
        names(&["redis-0", "storage", "client-0", "client-1", "client-2"])
    }

    fn faults() -> RandomFaults {
        RandomFaults {
            interval_ms: [500, 3000],
            swarm: true,
            until_ms: 15_000,
            pause: Some(RandomPause {
                nodes: names(&["client-0", "client-1", "client-2"]),
                duration_ms: [500, 9000],
                at: FaultPoint::Anywhere,
            }),
            partition: Some(RandomPartition {
                nodes: all(),
                duration_ms: [500, 9000],
                oneway: false,
            }),
            clock: Some(RandomClock {
                nodes: names(&["redis-0"]),
                skew_ms: None,
                drift_ppm: None,
                jump_ms: Some([-100, 100]),
            }),
            crash: Some(RandomCrash {
                nodes: names(&["redis-0"]),
                down_ms: [0, 100],
                at: FaultPoint::Anywhere,
            }),
            disk_stall: None,
        }
    }

    #[test]
    fn same_seed_same_schedule_and_seeds_differ() {
        let f = faults();
        assert_eq!(draw_schedule(&f, &all(), 7), draw_schedule(&f, &all(), 7));
        let distinct: std::collections::BTreeSet<String> = (0..20)
            .map(|i| format!("{:?}", draw_schedule(&f, &all(), i)))
            .collect();
        assert!(distinct.len() > 15);
    }

    #[test]
    fn random_faults_heal_before_the_quiet_tail() {
        let f = RandomFaults {
            swarm: false,
            ..faults()
        };
        for seed in 0..50 {
            let sched = draw_schedule(&f, &all(), seed);
            assert!(!sched.is_empty());
            for tf in &sched {
                let end = tf.at_ms + tf.fault.duration_ms().unwrap_or(0);
                assert!(end <= f.until_ms, "{tf:?}");
                if let Fault::Partition { nodes, .. } = &tf.fault {
                    assert!(!nodes.is_empty() && nodes.len() < all().len());
                }
            }
        }
    }

    #[test]
    fn disk_stalls_draw_from_their_nodes_and_durations() {
        let f = RandomFaults {
            swarm: false,
            pause: None,
            partition: None,
            clock: None,
            crash: None,
            disk_stall: Some(RandomDiskStall {
                nodes: names(&["redis-0"]),
                duration_ms: [100, 200],
            }),
            ..faults()
        };
        let sched = draw_schedule(&f, &all(), 3);
        assert!(!sched.is_empty());
        for tf in &sched {
            match &tf.fault {
                Fault::DiskStall { nodes, duration_ms } => {
                    assert_eq!(nodes, &names(&["redis-0"]));
                    assert!(*duration_ms <= 200, "{tf:?}");
                }
                other => panic!("only disk stalls are enabled: {other:?}"),
            }
        }
    }

    #[test]
    fn swarm_enables_a_non_empty_subset() {
        let f = RandomFaults {
            partition: None,
            clock: None,
            ..faults()
        };
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let k = enabled_kinds(&f, &mut rng);
            assert!(!k.is_empty());
            seen.insert(format!("{k:?}"));
        }
        assert_eq!(seen.len(), 3, "{seen:?}");
    }
}
