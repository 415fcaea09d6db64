//! The nodes of a live run and what a fault does to them: the real servers (processes
//! locksim started), the client processes (`locksim live-node`), the in-process nodes
//! (the storage), and the proxies every link crosses. This is live mode's
//! [`FaultTarget`]; the run's `Nemesis` (`sim/applier.rs`) decides when.
//!
//! A pause is SIGSTOP then SIGCONT of a process (of a client's whole process group, its
//! external client included; the storage's pause switch in this one), a crash SIGKILL
//! (its task aborted) and a restart a server on the same ports and data folder, a
//! client as its next incarnation. Clock faults of clients and the storage change their
//! `Clock` as in simulation; a server's clock is the machine's, as is an external
//! client's, and a disk stall needs a device locksim does not control: all three are
//! listed as not applied.

use super::error::LiveError;
use super::messages::{NodeSpec, ToNode};
use super::node_process::{Inbox, NodeProcess};
use crate::history::Recorder;
use crate::net::LiveNet;
use crate::real::{Proxies, RealCluster, ServerProcess, Supervisor};
use crate::sim::{
    close_crashed_op, Action, ArmedFault, Clock, ClockChange, FaultPoint, FaultTarget, HostMain,
    NodeCtx, NodeState, Resumed, Via,
};
use std::collections::BTreeMap;
use std::rc::Rc;

/// One in-process node (the storage): its state and running task.
struct Local {
    state: Rc<NodeState>,
    main: HostMain,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// A client node: its running process, if up, its incarnation, and its clock (kept
/// here too: a new process starts from it, and the history records its readings).
struct Client {
    process: Option<NodeProcess>,
    incarnation: u32,
    clock: Clock,
}

/// Every node of a live run, and the proxies between them.
pub(super) struct LiveNodes {
    pub(super) recorder: Recorder,
    pub(super) net: Rc<LiveNet>,
    pub(super) servers: BTreeMap<String, ServerProcess>,
    pub(super) proxies: Proxies,
    locals: BTreeMap<String, Local>,
    clients: BTreeMap<String, Client>,
    /// What client processes report.
    pub(super) inbox: Inbox,
    /// The spec every client process starts from (node and incarnation vary).
    spec: NodeSpec,
    exe: std::path::PathBuf,
    supervisor: Supervisor,
}

impl LiveNodes {
    /// The running servers and proxies, before any other node starts.
    pub(super) fn new(
        recorder: Recorder,
        net: Rc<LiveNet>,
        servers: BTreeMap<String, ServerProcess>,
        proxies: Proxies,
        spec: NodeSpec,
        exe: std::path::PathBuf,
        supervisor: Supervisor,
    ) -> LiveNodes {
        LiveNodes {
            recorder,
            net,
            servers,
            proxies,
            locals: BTreeMap::new(),
            clients: BTreeMap::new(),
            inbox: Inbox::default(),
            spec,
            exe,
            supervisor,
        }
    }

    /// Start the family's observers of the servers (each reads one server's events, in
    /// this process).
    pub(super) fn start_observers(
        &self,
        cluster: &dyn RealCluster,
        seed: u64,
    ) -> Vec<tokio::task::JoinHandle<()>> {
        let mut watchers = Vec::new();
        for name in self.servers.keys() {
            let state = Rc::new(NodeState::new(name, seed));
            let ctx = NodeCtx::new(state, self.recorder.clone()).with_live(self.net.clone());
            if let Some(task) = cluster.observer(name, ctx) {
                watchers.push(tokio::task::spawn_local(task));
            }
        }
        watchers
    }

    /// Start the hosts that are not servers, in the world's order: each of `clients` in
    /// its own process (`locksim live-node`), the others (the storage) in this one.
    pub(super) async fn start_nodes(
        &mut self,
        clients: &[String],
        hosts: Vec<crate::sim::Host>,
        seed: u64,
    ) -> Result<(), LiveError> {
        // Storage first (clients connect to it), as the world starts hosts in order.
        for host in hosts {
            if self.servers.contains_key(&host.name) {
                continue;
            }
            if clients.contains(&host.name) {
                let process = self.spawn_client(&host.name, 0)?;
                let client = Client {
                    process: Some(process),
                    incarnation: 0,
                    clock: Clock::default(),
                };
                self.clients.insert(host.name, client);
                continue;
            }
            let state = Rc::new(NodeState::new(&host.name, seed));
            let mut local = Local {
                state,
                main: host.main,
                task: None,
            };
            local.task = Some(self.run_local(&local));
            self.locals.insert(host.name, local);
            tokio::task::yield_now().await;
        }
        Ok(())
    }

    /// What the in-process nodes' code asked for, by node.
    pub(super) fn take_requests(&self) -> Vec<(String, crate::sim::NodeRequest)> {
        self.locals
            .iter()
            .flat_map(|(n, l)| l.state.take_requests().into_iter().map(|r| (n.clone(), r)))
            .collect()
    }

    /// Client `node` stopped itself at an armed pause point.
    pub(super) fn stopped_itself(&mut self, node: &str) {
        if let Some(p) = self.process_mut(node) {
            p.stopped_itself();
        }
    }

    /// End every node (tasks aborted, client processes killed); returns the end time.
    pub(super) fn finish(&mut self) -> u64 {
        for l in self.locals.values_mut() {
            if let Some(t) = l.task.take() {
                t.abort();
            }
        }
        let end_ns = self.net.elapsed_ns();
        for c in self.clients.values_mut() {
            if let Some(mut p) = c.process.take() {
                p.kill(end_ns);
            }
        }
        end_ns
    }

    /// Start incarnation `incarnation` of client `node` in its own process, with the
    /// links cut now.
    fn spawn_client(&self, node: &str, incarnation: u32) -> Result<NodeProcess, LiveError> {
        let spec = NodeSpec {
            node: node.to_string(),
            incarnation,
            clock: self
                .clients
                .get(node)
                .map(|c| c.clock.clone())
                .unwrap_or_default(),
            ..self.spec.clone()
        };
        NodeProcess::spawn(
            &self.exe,
            spec,
            self.recorder.clone(),
            self.inbox.clone(),
            &self.supervisor,
        )
        .map_err(|source| LiveError::ClientStart {
            node: node.to_string(),
            source,
        })
    }

    /// The running process of client `node`, if it is a client and up.
    fn process_mut(&mut self, node: &str) -> Option<&mut NodeProcess> {
        self.clients.get_mut(node).and_then(|c| c.process.as_mut())
    }

    /// Start (or restart) an in-process node: a fresh context, its code under its pause
    /// switch.
    fn run_local(&self, local: &Local) -> tokio::task::JoinHandle<()> {
        let ctx =
            NodeCtx::new(local.state.clone(), self.recorder.clone()).with_live(self.net.clone());
        let run = (local.main)(ctx);
        tokio::task::spawn_local(local.state.pause.wrap(run))
    }
}

/// An I/O error signalling or restarting `node`'s process.
fn fault_error(node: &str) -> impl FnOnce(std::io::Error) -> LiveError + '_ {
    move |source| LiveError::Fault {
        node: node.to_string(),
        source,
    }
}

impl FaultTarget for LiveNodes {
    type Error = LiveError;

    fn supports(&self, action: &Action) -> bool {
        match action {
            Action::Pause { .. }
            | Action::Resume { .. }
            | Action::Partition { .. }
            | Action::Heal { .. }
            | Action::HealAll => true,
            // A point inside locksim's own client (`mid-acquire`) is never reached by an
            // external client's library: such a fault is not applied, never faked. The
            // workload's points (`waiting` freezes a library in its wait) are reached.
            Action::ArmPause { node, point, .. } | Action::ArmCrash { node, point, .. } => {
                let external = self.spec.client.is_some() && self.clients.contains_key(node);
                !external || crate::scenario::Workload::FAULT_POINTS.contains(point)
            }
            // A server whose restart could not resume from its disk (a model server's
            // disk lives in its process) is not crashed.
            Action::Crash { node, .. } | Action::Restart { node } => self
                .servers
                .get(node)
                .is_none_or(ServerProcess::crashes_apply),
            // A server's clocks are the machine's, which stay true, as are those of an
            // external client (a real program); the other clients' and the storage's are
            // the simulation's (node code reads them).
            Action::ClockJump { node, .. }
            | Action::Skew { node, .. }
            | Action::Drift { node, .. } => {
                let external = self.spec.client.is_some() && self.clients.contains_key(node);
                let real_program = self.servers.contains_key(node) || external;
                !real_program
            }
            // A real disk is not locksim's to slow down.
            Action::DiskStall { .. } | Action::DiskReady { .. } => false,
        }
    }

    /// SIGSTOP for a process, the pause switch in this one.
    fn stop(&mut self, node: &str) -> Result<Option<Via>, LiveError> {
        if let Some(p) = self.servers.get_mut(node) {
            if !p.is_running() {
                return Ok(None);
            }
            p.pause().map_err(fault_error(node))?;
        } else if let Some(c) = self.clients.get_mut(node) {
            match c.process.as_mut() {
                Some(p) if !p.is_stopped() => p.stop().map_err(fault_error(node))?,
                _ => return Ok(None),
            }
        } else {
            let s = &self.locals[node].state;
            if s.is_crashed() || s.pause.is_paused() {
                return Ok(None);
            }
            s.pause.pause();
            return Ok(Some(Via::Switch));
        }
        Ok(Some(Via::Signal))
    }

    /// SIGCONT for a process, the pause switch in this one.
    fn resume(&mut self, node: &str) -> Result<Resumed, LiveError> {
        if let Some(p) = self.servers.get_mut(node) {
            if !p.is_running() {
                return Ok(Resumed::Nothing);
            }
            p.resume().map_err(fault_error(node))?;
            Ok(Resumed::By(Via::Signal))
        } else if let Some(c) = self.clients.get_mut(node) {
            let Some(p) = c.process.as_mut().filter(|p| p.is_stopped()) else {
                return Ok(Resumed::Nothing);
            };
            // Resumed only once the kernel shows the process stopped: one that has not
            // reached its own SIGSTOP yet is tried again shortly.
            Ok(if p.resume().map_err(fault_error(node))? {
                Resumed::By(Via::Signal)
            } else {
                Resumed::NotStoppedYet
            })
        } else {
            let s = &self.locals[node].state;
            if !s.pause.is_paused() {
                return Ok(Resumed::Nothing);
            }
            s.pause.resume();
            Ok(Resumed::By(Via::Switch))
        }
    }

    /// SIGKILL for a process, its task aborted in this one.
    fn kill(&mut self, now: u64, node: &str) -> Result<bool, LiveError> {
        if let Some(p) = self.servers.get_mut(node) {
            if !p.is_running() {
                return Ok(false);
            }
            p.crash().map_err(fault_error(node))?;
        } else if let Some(c) = self.clients.get_mut(node) {
            // Its reader closes its outstanding operation once the pipe ends.
            let Some(mut p) = c.process.take() else {
                return Ok(false);
            };
            p.kill(now);
        } else {
            let l = self.locals.get_mut(node).expect("a known node");
            if l.state.is_crashed() {
                return Ok(false);
            }
            if let Some(t) = l.task.take() {
                t.abort();
            }
            l.state.set_crashed(true);
            close_crashed_op(&self.recorder, node, now);
        }
        Ok(true)
    }

    /// A server on its ports and data, a client as its next incarnation.
    fn start(&mut self, node: &str) -> Result<bool, LiveError> {
        if let Some(p) = self.servers.get_mut(node) {
            if p.is_running() {
                return Ok(false);
            }
            p.restart().map_err(fault_error(node))?;
        } else if let Some(c) = self.clients.get(node) {
            if c.process.is_some() {
                return Ok(false);
            }
            let incarnation = c.incarnation + 1;
            let p = self.spawn_client(node, incarnation)?;
            let c = self.clients.get_mut(node).expect("known");
            (c.process, c.incarnation) = (Some(p), incarnation);
        } else {
            let l = &self.locals[node];
            if !l.state.is_crashed() {
                return Ok(false);
            }
            l.state.set_crashed(false);
            let task = self.run_local(l);
            self.locals.get_mut(node).expect("known").task = Some(task);
        }
        Ok(true)
    }

    /// In the proxies, which every link crosses.
    fn cut(&mut self, from: &str, to: &str) {
        self.proxies.set_cut(from, to, true);
    }

    fn repair(&mut self, from: &str, to: &str) {
        self.proxies.set_cut(from, to, false);
    }

    /// A client's or the storage's (`supports` refuses a server's).
    fn change_clock(
        &mut self,
        now: u64,
        node: &str,
        change: ClockChange,
    ) -> (&'static str, serde_json::Value) {
        if let Some(c) = self.clients.get_mut(node) {
            if let Some(p) = &c.process {
                p.order(ToNode::Clock { at_ns: now, change });
            }
            change.apply(&mut c.clock, now)
        } else {
            change.apply(&mut self.locals[node].state.clock.borrow_mut(), now)
        }
    }

    fn stall_disk(&mut self, node: &str, _until_ns: u64) {
        unreachable!("live mode does not stall disks ({node}): `supports` refuses them")
    }

    fn disk_stalled_until(&self, node: &str) -> u64 {
        unreachable!("live mode does not stall disks ({node}): `supports` refuses them")
    }

    /// In this process, or ordered to the client's own (a real server runs none of
    /// locksim's code: nothing to arm).
    fn arm(&mut self, node: &str, point: FaultPoint, fault: ArmedFault) {
        if let Some(l) = self.locals.get(node) {
            l.state.arm(point, fault);
        } else if let Some(p) = self.process_mut(node) {
            p.order(ToNode::Arm { point, fault });
        }
    }

    /// Live events carry the run's true time only.
    fn local_time(&self, _node: &str, _now: u64) -> Option<(i64, i64)> {
        None
    }
}
