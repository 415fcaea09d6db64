//! The fault applier: the one owner of a run's pending fault actions, its live
//! partitions and the count of partitions cutting each directed link, for simulated and
//! live runs alike.
//!
//! What an action *does* is the run's business: the simulated world and live mode each
//! implement [`FaultTarget`] (a pause switch or SIGSTOP, turmoil's crash or SIGKILL, a cut
//! in turmoil or in a proxy) and say, for every [`Action`] variant, whether they apply it
//! at all. [`Nemesis`] decides when: it applies the actions that are due in time order
//! (ties in the order they were scheduled), records the nemesis's events, schedules what
//! follows (a pause's resume, a crash's restart, a disk stall's end) and lists the
//! actions its target does not apply.

use super::clock::ClockChange;
use super::fault::{Action, FaultPoint};
use super::node::{ArmedFault, NodeRequest};
use crate::history::names;
use crate::history::{Event, EventType, Recorder};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt;

/// How long to wait before resuming again a process that has not reached its own
/// SIGSTOP yet (it raises it just after telling locksim).
const RESUME_RETRY_NS: u64 = 1_000_000;

/// How a node was stopped or let go on: its pause switch, in this process, or a signal
/// to its own process (recorded with the event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// The node's [`PauseSwitch`](super::PauseSwitch).
    Switch,
    /// SIGSTOP / SIGCONT.
    Signal,
}

/// What resuming a node did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resumed {
    /// It goes on: a `resume` event.
    By(Via),
    /// Nothing to record: it was not paused, or its freeze was its own work (not a fault).
    Nothing,
    /// Its process has not stopped itself yet: the applier tries again shortly.
    NotStoppedYet,
}

/// What a fault does to one kind of run's nodes and links. Each method is one effect;
/// [`Nemesis`] calls them only for actions [`FaultTarget::supports`] accepts.
pub(crate) trait FaultTarget {
    /// Why an effect failed (a signal that could not be sent, a process that would not
    /// start).
    type Error;

    /// Whether this target applies `action` at all; the applier lists those it does not.
    /// Implementations decide every variant by name (no catch-all arm), so a new kind
    /// of fault does not compile until each kind of run has decided.
    fn supports(&self, action: &Action) -> bool;

    /// Stop `node` now; `None` if it is down or stopped already.
    fn stop(&mut self, node: &str) -> Result<Option<Via>, Self::Error>;

    /// Let a stopped `node` go on.
    fn resume(&mut self, node: &str) -> Result<Resumed, Self::Error>;

    /// Kill `node` at true time `now`, closing its open operation as indeterminate; false
    /// if it is down already.
    fn kill(&mut self, now: u64, node: &str) -> Result<bool, Self::Error>;

    /// Start a killed `node` again; false if it is up.
    fn start(&mut self, node: &str) -> Result<bool, Self::Error>;

    /// Cut the directed link `from → to` (the applier calls this once per link, however
    /// many partitions cut it).
    fn cut(&mut self, from: &str, to: &str);

    /// Restore the directed link `from → to` (once the last partition cutting it heals).
    fn repair(&mut self, from: &str, to: &str);

    /// Change `node`'s clock at true time `now`: the event's name and value.
    fn change_clock(
        &mut self,
        now: u64,
        node: &str,
        change: ClockChange,
    ) -> (&'static str, serde_json::Value);

    /// Stall `node`'s disk until true time `until_ns`.
    fn stall_disk(&mut self, node: &str, until_ns: u64);

    /// Until when `node`'s disk is stalled (true ns; in the past when it is not).
    fn disk_stalled_until(&self, node: &str) -> u64;

    /// Arm `fault` at `node`'s `point`: it strikes when the node's code gets there.
    fn arm(&mut self, node: &str, point: FaultPoint, fault: ArmedFault);

    /// `node`'s local readings (monotonic ns, wall ms) at true time `now`, recorded with
    /// an event about that node alone; `None`: the event carries true time only.
    fn local_time(&self, node: &str, now: u64) -> Option<(i64, i64)>;
}

/// An action a run's target does not apply, listed by the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotApplied {
    /// When it was due, true ns.
    pub(crate) at_ns: u64,
    /// The action.
    pub(crate) action: Action,
}

impl fmt::Display for NotApplied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.0} ms: {:?}", self.at_ns as f64 / 1e6, self.action)
    }
}

/// A directed link (from, to), by host name.
type Link = (String, String);

/// The fault applier of one run (see the module documentation).
pub(crate) struct Nemesis<T> {
    target: T,
    recorder: Recorder,
    /// Every host, in registration order: a partition without peers cuts its side off
    /// from all the others.
    hosts: Vec<String>,
    /// Directed links currently cut, with how many partitions cut them: overlapping
    /// partitions heal independently.
    cuts: BTreeMap<Link, u32>,
    /// Live partitions by id: the directed links each one cut.
    partitions: BTreeMap<u64, Vec<Link>>,
    /// Future actions by (time, insertion sequence).
    pending: BTreeMap<(u64, u64), Action>,
    seq: u64,
    not_applied: Vec<NotApplied>,
}

impl<T: FaultTarget> Nemesis<T> {
    /// An applier acting on `target`, recording into `recorder`, over `hosts`.
    pub(crate) fn new(target: T, recorder: Recorder, hosts: Vec<String>) -> Nemesis<T> {
        Nemesis {
            target,
            recorder,
            hosts,
            cuts: BTreeMap::new(),
            partitions: BTreeMap::new(),
            pending: BTreeMap::new(),
            seq: 0,
            not_applied: Vec::new(),
        }
    }

    /// The nodes and links it acts on.
    pub(crate) fn target(&self) -> &T {
        &self.target
    }

    /// The nodes and links it acts on, to change.
    pub(crate) fn target_mut(&mut self) -> &mut T {
        &mut self.target
    }

    /// The actions its target did not apply, in the order they were due.
    pub(crate) fn not_applied(&self) -> &[NotApplied] {
        &self.not_applied
    }

    /// Apply `action` at true time `at_ns` (after any action already due then).
    pub(crate) fn schedule(&mut self, at_ns: u64, action: Action) {
        self.pending.insert((at_ns, self.seq), action);
        self.seq += 1;
    }

    /// Apply every action due at or before `now`, including those the applied ones
    /// schedule for now.
    pub(crate) fn apply_due(&mut self, now: u64) -> Result<(), T::Error> {
        while let Some(entry) = self.pending.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let action = entry.remove();
            self.apply(now, action)?;
        }
        Ok(())
    }

    /// Serve what `node`'s code asked for at true time `now`: a pause point's resume
    /// later, a crash point's crash now.
    pub(crate) fn serve(
        &mut self,
        now: u64,
        node: String,
        request: NodeRequest,
    ) -> Result<(), T::Error> {
        match request {
            NodeRequest::ResumeAfter(ns) => {
                self.schedule(now + ns, Action::Resume { node });
                Ok(())
            }
            NodeRequest::Crash(down_ns) => self.apply(now, Action::Crash { node, down_ns }),
        }
    }

    /// Apply one action, due now: each kind is one step below.
    pub(crate) fn apply(&mut self, now: u64, action: Action) -> Result<(), T::Error> {
        tracing::info!("nemesis at {:.3} ms: {action:?}", now as f64 / 1e6);
        if !self.target.supports(&action) {
            self.not_applied.push(NotApplied { at_ns: now, action });
            return Ok(());
        }
        match action {
            Action::Pause { node, duration_ns } => self.pause(now, node, duration_ns)?,
            Action::ArmPause {
                node,
                duration_ns,
                point,
            } => self
                .target
                .arm(&node, point, ArmedFault::Pause { duration_ns }),
            Action::Resume { node } => self.resume(now, node)?,
            Action::Partition {
                id,
                side,
                peers,
                oneway,
            } => self.partition(now, id, side, peers, oneway),
            Action::Heal { id } => {
                if let Some(links) = self.partitions.remove(&id) {
                    self.uncut(links);
                    self.record(now, names::HEAL, vec![], json!({"id": id}));
                }
            }
            Action::HealAll => {
                let links: Vec<Link> = std::mem::take(&mut self.partitions)
                    .into_values()
                    .flatten()
                    .collect();
                self.uncut(links);
                self.record(now, names::HEAL, vec![], json!({"id": "all"}));
            }
            Action::ClockJump { .. } | Action::Skew { .. } | Action::Drift { .. } => {
                let (node, change) = action.clock_change().expect("a clock action");
                let (f, value) = self.target.change_clock(now, node, change);
                self.record(now, f, vec![node.to_string()], value);
            }
            Action::Crash { node, down_ns } => self.crash(now, node, down_ns)?,
            Action::ArmCrash {
                node,
                down_ns,
                point,
            } => self.target.arm(&node, point, ArmedFault::Crash { down_ns }),
            Action::Restart { node } => {
                if self.target.start(&node)? {
                    self.record(now, names::RESTART, vec![node], json!(null));
                }
            }
            Action::DiskStall { node, duration_ns } => self.stall_disk(now, node, duration_ns),
            Action::DiskReady { node } => {
                // Overlapping stalls: only the last one's end is the disk's recovery.
                if self.target.disk_stalled_until(&node) <= now {
                    self.record(now, names::DISK_READY, vec![node], json!(null));
                }
            }
        }
        Ok(())
    }

    /// Record a nemesis event about `nodes` (with the local readings of a single node).
    fn record(&self, now: u64, f: &str, nodes: Vec<String>, value: serde_json::Value) {
        let local = match &nodes[..] {
            [one] => self.target.local_time(one, now),
            _ => None,
        };
        let mut e = Event::new("nemesis", EventType::Event, f)
            .at(now)
            .nodes(nodes)
            .value(value);
        if let Some((mono_ns, wall_ms)) = local {
            e.local_ns = Some(mono_ns);
            e.wall_ms = Some(wall_ms);
        }
        self.recorder.push(e);
    }

    /// Stop `node` for `duration_ns` (unless it is down or stopped already).
    fn pause(&mut self, now: u64, node: String, duration_ns: u64) -> Result<(), T::Error> {
        let Some(via) = self.target.stop(&node)? else {
            return Ok(());
        };
        let mut value = json!({"duration_ms": duration_ns as f64 / 1e6, "at": "anywhere"});
        if via == Via::Signal {
            value["signal"] = json!("SIGSTOP");
        }
        self.record(now, names::PAUSE, vec![node.clone()], value);
        self.schedule(now + duration_ns, Action::Resume { node });
        Ok(())
    }

    /// Let `node` go on, if it is stopped.
    fn resume(&mut self, now: u64, node: String) -> Result<(), T::Error> {
        match self.target.resume(&node)? {
            Resumed::By(Via::Switch) => self.record(now, names::RESUME, vec![node], json!(null)),
            Resumed::By(Via::Signal) => {
                let value = json!({"signal": "SIGCONT"});
                self.record(now, names::RESUME, vec![node], value)
            }
            Resumed::Nothing => {}
            Resumed::NotStoppedYet => self.schedule(now + RESUME_RETRY_NS, Action::Resume { node }),
        }
        Ok(())
    }

    /// Crash `node` (unless it is down): its restart, if any, is due after `down_ns`.
    fn crash(&mut self, now: u64, node: String, down_ns: Option<u64>) -> Result<(), T::Error> {
        if !self.target.kill(now, &node)? {
            return Ok(());
        }
        let value = json!({"down_ms": down_ns.map(|d| d as f64 / 1e6)});
        self.record(now, names::CRASH, vec![node.clone()], value);
        if let Some(d) = down_ns {
            self.schedule(now + d, Action::Restart { node });
        }
        Ok(())
    }

    /// Stall `node`'s disk for `duration_ns`; its end is an event too.
    fn stall_disk(&mut self, now: u64, node: String, duration_ns: u64) {
        self.target.stall_disk(&node, now + duration_ns);
        let value = json!({"duration_ms": duration_ns as f64 / 1e6});
        self.record(now, names::DISK_STALL, vec![node.clone()], value);
        self.schedule(now + duration_ns, Action::DiskReady { node });
    }

    /// Cut the links of partition `id`, counting each cut so that overlapping partitions
    /// heal independently.
    fn partition(
        &mut self,
        now: u64,
        id: u64,
        side: Vec<String>,
        peers: Vec<String>,
        oneway: bool,
    ) {
        let (others, links) = partition_links(&self.hosts, &side, peers, oneway);
        for (a, b) in &links {
            let n = self.cuts.entry((a.clone(), b.clone())).or_insert(0);
            if *n == 0 {
                self.target.cut(a, b);
            }
            *n += 1;
        }
        self.partitions.insert(id, links);
        let value = json!({"id": id, "oneway": oneway, "from": others});
        self.record(now, names::PARTITION, side, value);
    }

    /// Take back one partition's cuts: a link is repaired when no partition cuts it.
    fn uncut(&mut self, links: Vec<Link>) {
        for link in links {
            if let Some(n) = self.cuts.get_mut(&link) {
                *n -= 1;
                if *n == 0 {
                    self.cuts.remove(&link);
                    self.target.repair(&link.0, &link.1);
                }
            }
        }
    }
}

/// The hosts a partition of `side` cuts it from (`peers`, or every other host of `all`),
/// and the directed links it cuts: side → others, and back unless `oneway`.
fn partition_links(
    all: &[String],
    side: &[String],
    peers: Vec<String>,
    oneway: bool,
) -> (Vec<String>, Vec<Link>) {
    let others: Vec<String> = if peers.is_empty() {
        all.iter().filter(|b| !side.contains(b)).cloned().collect()
    } else {
        peers
    };
    let mut links = Vec::new();
    for a in side {
        for b in &others {
            links.push((a.clone(), b.clone()));
            if !oneway {
                links.push((b.clone(), a.clone()));
            }
        }
    }
    (others, links)
}

/// Jepsen's convention, in simulated and live runs alike: the outstanding operation of a
/// crashed process (its last, if an invoke) is indeterminate, closed as `info` at `now`.
pub(crate) fn close_crashed_op(recorder: &Recorder, node: &str, now: u64) {
    if let Some(last) = recorder.last_op_of(node) {
        if last.kind == EventType::Invoke {
            let mut info = last.clone();
            info.kind = EventType::Info;
            info.time_ns = now;
            info.reason = Some("crashed".into());
            recorder.push(info);
        }
    }
}

#[cfg(test)]
#[path = "applier_tests.rs"]
mod tests;
