//! The applier against a fake target that records every effect it is asked for.

use super::*;

/// A target that applies everything but disk stalls, and writes down each effect.
#[derive(Default)]
struct Fake {
    calls: Vec<String>,
    stopped: std::collections::BTreeSet<String>,
}

impl FaultTarget for Fake {
    type Error = std::convert::Infallible;

    fn supports(&self, action: &Action) -> bool {
        match action {
            Action::DiskStall { .. } | Action::DiskReady { .. } => false,
            Action::Pause { .. }
            | Action::ArmPause { .. }
            | Action::Resume { .. }
            | Action::Partition { .. }
            | Action::Heal { .. }
            | Action::HealAll
            | Action::ClockJump { .. }
            | Action::Skew { .. }
            | Action::Drift { .. }
            | Action::Crash { .. }
            | Action::ArmCrash { .. }
            | Action::Restart { .. } => true,
        }
    }

    fn stop(&mut self, node: &str) -> Result<Option<Via>, Self::Error> {
        self.calls.push(format!("stop {node}"));
        Ok(self.stopped.insert(node.to_string()).then_some(Via::Switch))
    }

    fn resume(&mut self, node: &str) -> Result<Resumed, Self::Error> {
        self.calls.push(format!("resume {node}"));
        Ok(if self.stopped.remove(node) {
            Resumed::By(Via::Switch)
        } else {
            Resumed::Nothing
        })
    }

    fn kill(&mut self, _now: u64, node: &str) -> Result<bool, Self::Error> {
        self.calls.push(format!("kill {node}"));
        Ok(true)
    }

    fn start(&mut self, node: &str) -> Result<bool, Self::Error> {
        self.calls.push(format!("start {node}"));
        Ok(true)
    }

    fn cut(&mut self, from: &str, to: &str) {
        self.calls.push(format!("cut {from}>{to}"));
    }

    fn repair(&mut self, from: &str, to: &str) {
        self.calls.push(format!("repair {from}>{to}"));
    }

    fn change_clock(
        &mut self,
        _now: u64,
        node: &str,
        change: ClockChange,
    ) -> (&'static str, serde_json::Value) {
        self.calls.push(format!("clock {node} {change:?}"));
        ("clock", json!(null))
    }

    fn stall_disk(&mut self, node: &str, _until_ns: u64) {
        unreachable!("the fake refuses disk stalls ({node})")
    }

    fn disk_stalled_until(&self, node: &str) -> u64 {
        unreachable!("the fake refuses disk stalls ({node})")
    }

    fn arm(&mut self, node: &str, point: FaultPoint, _fault: ArmedFault) {
        self.calls.push(format!("arm {node} {}", point.name()));
    }

    fn local_time(&self, _node: &str, _now: u64) -> Option<(i64, i64)> {
        None
    }
}

fn nemesis() -> (Nemesis<Fake>, Recorder) {
    let recorder = Recorder::new();
    let hosts = ["a", "b", "c"].map(String::from).to_vec();
    (
        Nemesis::new(Fake::default(), recorder.clone(), hosts),
        recorder,
    )
}

fn partition(id: u64, side: &[&str], peers: &[&str]) -> Action {
    Action::Partition {
        id,
        side: side.iter().map(|s| s.to_string()).collect(),
        peers: peers.iter().map(|s| s.to_string()).collect(),
        oneway: false,
    }
}

fn take_calls(n: &mut Nemesis<Fake>) -> Vec<String> {
    std::mem::take(&mut n.target_mut().calls)
}

fn apply(n: &mut Nemesis<Fake>, now: u64, action: Action) {
    let Ok(()) = n.apply(now, action);
}

#[test]
fn overlapping_partitions_heal_independently() {
    let (mut n, recorder) = nemesis();
    apply(&mut n, 1, partition(1, &["a"], &[]));
    apply(&mut n, 2, partition(2, &["a"], &["b"]));
    // a↔b is cut once, though two partitions cut it.
    assert_eq!(
        take_calls(&mut n),
        ["cut a>b", "cut b>a", "cut a>c", "cut c>a"]
    );
    apply(&mut n, 3, Action::Heal { id: 1 });
    assert_eq!(take_calls(&mut n), ["repair a>c", "repair c>a"]);
    apply(&mut n, 4, Action::Heal { id: 2 });
    assert_eq!(take_calls(&mut n), ["repair a>b", "repair b>a"]);
    // A partition healed already heals nothing and records nothing.
    apply(&mut n, 5, Action::Heal { id: 2 });
    assert!(take_calls(&mut n).is_empty());
    let events: Vec<(String, serde_json::Value)> = recorder
        .take()
        .into_iter()
        .map(|e| (e.f, e.value.unwrap_or_default()))
        .collect();
    assert_eq!(events.len(), 4, "{events:?}");
    assert_eq!(events[0].1["from"], json!(["b", "c"]));
    assert_eq!(events[1].1["from"], json!(["b"]));
    assert_eq!(events[2], (names::HEAL.to_string(), json!({"id": 1})));
    assert_eq!(events[3], (names::HEAL.to_string(), json!({"id": 2})));
}

#[test]
fn heal_all_repairs_every_link_once_and_is_recorded() {
    let (mut n, recorder) = nemesis();
    apply(&mut n, 1, partition(1, &["a"], &["b"]));
    apply(&mut n, 1, partition(2, &["b"], &["a"]));
    apply(&mut n, 1, partition(3, &["c"], &["a"]));
    take_calls(&mut n);
    apply(&mut n, 2, Action::HealAll);
    let mut repaired = take_calls(&mut n);
    repaired.sort();
    assert_eq!(
        repaired,
        ["repair a>b", "repair a>c", "repair b>a", "repair c>a"]
    );
    // Nothing is left to heal, but a heal-all is an event all the same.
    apply(&mut n, 3, Action::HealAll);
    assert!(take_calls(&mut n).is_empty());
    let heals: Vec<_> = recorder
        .take()
        .into_iter()
        .filter(|e| e.f == names::HEAL)
        .map(|e| (e.time_ns, e.value.unwrap_or_default()))
        .collect();
    assert_eq!(
        heals,
        [(2, json!({"id": "all"})), (3, json!({"id": "all"}))]
    );
}

#[test]
fn pending_actions_run_in_time_order_then_insertion_order() {
    let (mut n, _) = nemesis();
    let arm = |node: &str| Action::ArmCrash {
        node: node.into(),
        down_ns: None,
        point: FaultPoint::BeforeWrite,
    };
    n.schedule(5, arm("x"));
    n.schedule(1, arm("y"));
    n.schedule(5, arm("z"));
    n.schedule(9, arm("later"));
    let Ok(()) = n.apply_due(4);
    assert_eq!(take_calls(&mut n), ["arm y before-write"]);
    let Ok(()) = n.apply_due(5);
    assert_eq!(
        take_calls(&mut n),
        ["arm x before-write", "arm z before-write"]
    );
    let Ok(()) = n.apply_due(8);
    assert!(take_calls(&mut n).is_empty());
}

#[test]
fn what_an_action_schedules_follows_it() {
    let (mut n, recorder) = nemesis();
    n.schedule(
        10,
        Action::Pause {
            node: "a".into(),
            duration_ns: 0,
        },
    );
    n.schedule(
        10,
        Action::Crash {
            node: "b".into(),
            down_ns: Some(5),
        },
    );
    // A zero-length pause's resume is due at once: it runs in the same call, after the
    // crash scheduled before it.
    let Ok(()) = n.apply_due(10);
    assert_eq!(take_calls(&mut n), ["stop a", "kill b", "resume a"]);
    let Ok(()) = n.apply_due(15);
    assert_eq!(take_calls(&mut n), ["start b"]);
    let fs: Vec<String> = recorder.take().into_iter().map(|e| e.f).collect();
    assert_eq!(
        fs,
        [names::PAUSE, names::CRASH, names::RESUME, names::RESTART]
    );
}

#[test]
fn an_action_the_target_does_not_apply_is_listed_not_applied() {
    let (mut n, recorder) = nemesis();
    let stall = Action::DiskStall {
        node: "a".into(),
        duration_ns: 5,
    };
    apply(&mut n, 3_000_000, stall.clone());
    assert!(take_calls(&mut n).is_empty());
    assert!(
        recorder.take().is_empty(),
        "nothing happened, nothing recorded"
    );
    assert_eq!(
        n.not_applied(),
        [NotApplied {
            at_ns: 3_000_000,
            action: stall
        }]
    );
    assert_eq!(
        n.not_applied()[0].to_string(),
        "3 ms: DiskStall { node: \"a\", duration_ns: 5 }"
    );
}

#[test]
fn a_node_request_is_served_as_its_action() {
    let (mut n, _) = nemesis();
    let Ok(()) = n.serve(7, "a".into(), NodeRequest::ResumeAfter(3));
    assert!(take_calls(&mut n).is_empty(), "the resume is due later");
    let Ok(()) = n.serve(8, "b".into(), NodeRequest::Crash(None));
    assert_eq!(take_calls(&mut n), ["kill b"]);
    let Ok(()) = n.apply_due(10);
    assert_eq!(take_calls(&mut n), ["resume a"]);
}
