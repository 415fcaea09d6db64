//! The nemesis: the fault schedule of one seed.
//!
//! Two sources, merged in true-time order:
//!
//! * explicit `[[faults.at]]` entries, exact and deterministic — the published timelines;
//! * random faults drawn from the seed: a gap from `interval_ms`, then one of the enabled
//!   kinds with its parameters. With `swarm = true` each seed first enables a random
//!   non-empty subset of the kinds (Groce et al., "Swarm Testing", ISSTA 2012): a seed
//!   that only pauses finds pause bugs that constant partitions would mask.
//!
//! Random faults start and heal before `duration_ms − liveness_ms`, leaving a quiet tail
//! in which the `liveness` check can expect the lock to be granted again.

use crate::scenario::{FaultKind, FaultPoint, Scenario, Selector};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MS: u64 = 1_000_000;

/// One thing the nemesis does at a point in true time.
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
}

/// A fault schedule: `(true time ns, action)`, sorted by time (stable for equal times).
pub type Schedule = Vec<(u64, Action)>;

/// The full schedule for `seed`: explicit entries plus random faults.
pub fn schedule(s: &Scenario, seed: u64) -> Schedule {
    let mut out = Vec::new();
    let mut next_id = 0u64;
    explicit(s, &mut out, &mut next_id);
    random(s, seed, &mut out, &mut next_id);
    // Stable: explicit entries stay before random ones at equal times.
    out.sort_by_key(|(t, _)| *t);
    out
}

fn explicit(s: &Scenario, out: &mut Schedule, next_id: &mut u64) {
    for e in &s.faults.at {
        let t = e.at_ms * MS;
        match e.kind {
            FaultKind::Pause => {
                let duration_ns = e.duration_ms.unwrap_or(0) * MS;
                for node in &e.nodes {
                    out.push((t, pause(node, duration_ns, e.at)));
                }
            }
            FaultKind::Partition => {
                let id = *next_id;
                *next_id += 1;
                out.push((
                    t,
                    Action::Partition {
                        id,
                        side: e.nodes.clone(),
                        peers: e.peers.clone(),
                        oneway: e.oneway,
                    },
                ));
                if let Some(d) = e.duration_ms {
                    out.push((t + d * MS, Action::Heal { id }));
                }
            }
            FaultKind::Heal => out.push((t, Action::HealAll)),
            FaultKind::ClockJump => {
                for node in &e.nodes {
                    let delta_ns = e.delta_ms.unwrap_or(0) * MS as i64;
                    out.push((
                        t,
                        Action::ClockJump {
                            node: node.clone(),
                            delta_ns,
                        },
                    ));
                }
            }
            FaultKind::Skew => {
                for node in &e.nodes {
                    let skew_ns = e.skew_ms.unwrap_or(0) * MS as i64;
                    out.push((
                        t,
                        Action::Skew {
                            node: node.clone(),
                            skew_ns,
                        },
                    ));
                }
            }
            FaultKind::Drift => {
                for node in &e.nodes {
                    let ppm = e.drift_ppm.unwrap_or(0);
                    out.push((
                        t,
                        Action::Drift {
                            node: node.clone(),
                            ppm,
                        },
                    ));
                }
            }
            FaultKind::Crash => {
                let down_ns = e.down_ms.map(|d| d * MS);
                for node in &e.nodes {
                    out.push((t, crash(node, down_ns, e.at)));
                }
            }
            FaultKind::Restart => {
                for node in &e.nodes {
                    out.push((t, Action::Restart { node: node.clone() }));
                }
            }
        }
    }
}

fn pause(node: &str, duration_ns: u64, point: FaultPoint) -> Action {
    match point {
        FaultPoint::Anywhere => Action::Pause {
            node: node.to_string(),
            duration_ns,
        },
        point => Action::ArmPause {
            node: node.to_string(),
            duration_ns,
            point,
        },
    }
}

fn crash(node: &str, down_ns: Option<u64>, point: FaultPoint) -> Action {
    match point {
        FaultPoint::Anywhere => Action::Crash {
            node: node.to_string(),
            down_ns,
        },
        point => Action::ArmCrash {
            node: node.to_string(),
            down_ns,
            point,
        },
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Pause,
    Partition,
    Clock,
    Crash,
}

/// The kinds of random fault a seed enables (all configured ones, or a swarm subset).
fn enabled_kinds(s: &Scenario, rng: &mut ChaCha8Rng) -> Vec<Kind> {
    let f = &s.faults;
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

fn random(s: &Scenario, seed: u64, out: &mut Schedule, next_id: &mut u64) {
    // The nemesis has its own stream, so adding a node does not reshuffle faults.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6e65_6d65_7369_7321);
    let kinds = enabled_kinds(s, &mut rng);
    if kinds.is_empty() {
        return;
    }
    let end = s.duration_ms.saturating_sub(s.liveness_ms) * MS;
    let f = &s.faults;
    let mut t = draw(&mut rng, f.interval_ms) * MS;
    while t < end {
        let kind = *kinds.choose(&mut rng).expect("non-empty");
        let room = end - t;
        match kind {
            Kind::Pause => {
                let p = f.pause.as_ref().expect("enabled");
                let node = pick(&mut rng, &s.select(&p.nodes));
                let d = (draw(&mut rng, p.duration_ms) * MS).min(room);
                out.push((t, pause(&node, d, p.at)));
            }
            Kind::Partition => {
                let p = f.partition.as_ref().expect("enabled");
                let candidates = s.select(&p.nodes);
                let all = s.nodes();
                let side = loop {
                    let side: Vec<String> = candidates
                        .iter()
                        .filter(|_| rng.gen_bool(0.5))
                        .cloned()
                        .collect();
                    if !side.is_empty() && side.len() < all.len() {
                        break side;
                    }
                    if candidates.len() == 1 && all.len() > 1 {
                        break candidates.clone();
                    }
                };
                let d = (draw(&mut rng, p.duration_ms) * MS).min(room);
                let id = *next_id;
                *next_id += 1;
                out.push((
                    t,
                    Action::Partition {
                        id,
                        side,
                        peers: Vec::new(),
                        oneway: p.oneway,
                    },
                ));
                out.push((t + d, Action::Heal { id }));
            }
            Kind::Clock => {
                let c = f.clock.as_ref().expect("enabled");
                let node = pick(&mut rng, &s.select(&c.nodes));
                let mut subs = Vec::new();
                if let Some(r) = c.skew_ms {
                    subs.push(Action::Skew {
                        node: node.clone(),
                        skew_ns: draw_i(&mut rng, r) * MS as i64,
                    });
                }
                if let Some(r) = c.drift_ppm {
                    subs.push(Action::Drift {
                        node: node.clone(),
                        ppm: draw_i(&mut rng, r),
                    });
                }
                if let Some(r) = c.jump_ms {
                    subs.push(Action::ClockJump {
                        node: node.clone(),
                        delta_ns: draw_i(&mut rng, r) * MS as i64,
                    });
                }
                let i = rng.gen_range(0..subs.len());
                out.push((t, subs.swap_remove(i)));
            }
            Kind::Crash => {
                let c = f.crash.as_ref().expect("enabled");
                let node = pick(&mut rng, &s.select(&c.nodes));
                let d = (draw(&mut rng, c.down_ms) * MS).min(room);
                out.push((t, crash(&node, Some(d), c.at)));
            }
        }
        t += draw(&mut rng, f.interval_ms).max(1) * MS;
    }
}

/// Resolve a selector for display (used by `locksim list`).
pub fn describe_selector(sel: &Selector) -> String {
    match sel {
        Selector::Group(g) => g.clone(),
        Selector::Nodes(v) => v.join(","),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            "name = \"n\"\nalgorithm = \"redis\"\nduration_ms = 20000\n[lock]\nttl_ms = 1000\n{extra}"
        );
        Scenario::parse(Path::new("t.toml"), &text).unwrap()
    }

    #[test]
    fn same_seed_same_schedule_and_seeds_differ() {
        let s = scenario(
            "[faults]\nswarm = true\npause = { nodes = \"clients\", duration_ms = [500, 3000] }\npartition = { nodes = \"all\", duration_ms = [500, 2000] }\nclock = { nodes = \"servers\", jump_ms = [-100, 100] }\ncrash = { nodes = \"servers\", down_ms = [0, 100] }\n",
        );
        assert_eq!(schedule(&s, 7), schedule(&s, 7));
        let distinct: std::collections::BTreeSet<String> =
            (0..20).map(|i| format!("{:?}", schedule(&s, i))).collect();
        assert!(distinct.len() > 15);
    }

    #[test]
    fn random_faults_heal_before_the_quiet_tail() {
        let s = scenario(
            "[faults]\npartition = { nodes = \"all\", duration_ms = [500, 9000] }\npause = { nodes = \"clients\", duration_ms = [500, 9000] }\n",
        );
        let end = (20_000 - s.liveness_ms) * MS;
        for seed in 0..50 {
            let sched = schedule(&s, seed);
            assert!(!sched.is_empty());
            for (t, a) in &sched {
                assert!(*t <= end, "{a:?} at {t}");
                if let Action::Pause { duration_ns, .. } = a {
                    assert!(t + duration_ns <= end);
                }
                if let Action::Partition { side, .. } = a {
                    assert!(!side.is_empty() && side.len() < s.nodes().len());
                }
            }
        }
    }

    #[test]
    fn explicit_entries_expand_per_node_and_schedule_heals() {
        let s = scenario(
            "[[faults.at]]\nat_ms = 1500\nkind = \"pause\"\nnodes = [\"client-0\", \"client-1\"]\nduration_ms = 300\nat = \"before-write\"\n[[faults.at]]\nat_ms = 100\nkind = \"partition\"\nnodes = [\"redis-0\"]\nduration_ms = 50\n",
        );
        let sched = schedule(&s, 0);
        assert_eq!(sched[0].0, 100 * MS);
        assert!(matches!(sched[0].1, Action::Partition { id: 0, .. }));
        assert_eq!(sched[1], (150 * MS, Action::Heal { id: 0 }));
        assert!(matches!(
            &sched[2].1,
            Action::ArmPause { node, point: FaultPoint::BeforeWrite, .. } if node == "client-0"
        ));
        assert_eq!(sched.len(), 4);
    }

    #[test]
    fn swarm_enables_a_non_empty_subset() {
        let s = scenario(
            "[faults]\nswarm = true\npause = { nodes = \"clients\", duration_ms = [1, 2] }\ncrash = { nodes = \"servers\", down_ms = [1, 2] }\n",
        );
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..40 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let k = enabled_kinds(&s, &mut rng);
            assert!(!k.is_empty());
            seen.insert(format!("{k:?}"));
        }
        assert_eq!(seen.len(), 3, "{seen:?}");
    }
}
