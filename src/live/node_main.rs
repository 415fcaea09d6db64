//! The client side of live mode: `locksim live-node SPEC` runs one client node of a live
//! run in its own process, so that a pause is a real SIGSTOP of the process (timers,
//! sockets and all) and a crash a real SIGKILL. The node's code is the simulation's, on
//! a single-threaded runtime; its events go to stdout as they are recorded, and
//! locksim's orders (armed faults, clock faults) come in on stdin. Its connections go
//! through locksim's proxies, which apply the partitions. With an external client
//! ([`super::external_client`]) the node's lock client is that program, in this
//! process's group: a pause point stops the whole group.

use super::adapter_protocol::AdapterFailure;
use super::external_client::{adapter_env, ExternalClient, Fail};
use super::messages::{FromNode, NodeSpec, ToNode};
use crate::history::Recorder;
use crate::locks::LocalBoxFuture;
use crate::net::LiveNet;
use crate::scenario::Scenario;
use crate::sim::{NodeCtx, NodeRequest, NodeState};
use std::io::Write;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

/// Write one line to stdout now: locksim may SIGKILL this process at any moment, and
/// what was recorded before must reach it.
fn send(msg: &FromNode) {
    let mut line = serde_json::to_string(msg).expect("messages serialise");
    line.push('\n');
    let mut out = std::io::stdout().lock();
    // locksim gone: nothing to report to; stdin's end stops the process.
    let _ = out.write_all(line.as_bytes()).and_then(|()| out.flush());
}

/// Run the node `spec` describes (JSON) until locksim kills it or closes its stdin.
/// Returns the exit code: 2 for a bad spec or scenario.
pub fn live_node_main(spec: &str) -> u8 {
    let spec: NodeSpec = match serde_json::from_str(spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim live-node: bad spec: {e}");
            return 2;
        }
    };
    let mut scenario = match Scenario::load_live(&spec.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim live-node: {e}");
            return 2;
        }
    };
    scenario.duration_ms = spec.duration_ms;
    scenario.lock = scenario.lock.for_real();
    let world = crate::deploy::world(&scenario, scenario.fault_plan());
    let Some(host) = world.hosts.into_iter().find(|h| h.name == spec.node) else {
        eprintln!("locksim live-node: no node {} in the scenario", spec.node);
        return 2;
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("locksim live-node: cannot start the runtime: {e}");
            return 2;
        }
    };
    let net = Rc::new(LiveNet::with_epoch(spec.ports.clone(), spec.epoch_ns));
    let state = Rc::new(NodeState::restarted(
        &spec.node,
        spec.seed,
        spec.incarnation,
    ));
    *state.clock.borrow_mut() = spec.clock.clone();
    let recorder = Recorder::forwarding(|e| send(&FromNode::Event(Box::new(e.clone()))));
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let ctx = NodeCtx::new(state.clone(), recorder).with_live(net.clone());
        let run = match &spec.client {
            Some(program) => external_main(ctx, &spec, &scenario, program),
            None => (host.main)(ctx),
        };
        tokio::task::spawn_local(state.pause.wrap(run));
        let orders = tokio::task::spawn_local(obey(state.clone()));
        // The node's own requests, from its fault points.
        while !orders.is_finished() {
            for req in state.take_requests() {
                match req {
                    NodeRequest::ResumeAfter(ns) => {
                        // The node is already frozen in-process (the fault point flipped
                        // its pause switch); now its whole process group stops for real:
                        // this process and its external client, if any.
                        send(&FromNode::Stopping { ns });
                        // SAFETY: kill(2) of this process's own group (pid 0), a valid
                        // signal number.
                        unsafe { libc::kill(0, libc::SIGSTOP) };
                        state.pause.resume();
                    }
                    NodeRequest::Crash(down_ns) => send(&FromNode::Crash { down_ns }),
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    0
}

/// The workload with the external client `program` as its lock client. A failure of
/// the adapter (or its start) is reported to locksim, and this process exits: the run
/// ends.
fn external_main(
    ctx: NodeCtx,
    spec: &NodeSpec,
    scenario: &Scenario,
    program: &crate::scenario::ClientProgram,
) -> LocalBoxFuture<'static, ()> {
    let command = program.display();
    let fail: Fail = Rc::new(move |failure: AdapterFailure| {
        send(&FromNode::ClientFailed {
            command: command.clone(),
            failure,
        });
        // The adapter dies with this process (PR_SET_PDEATHSIG); locksim kills the
        // group's rest.
        std::process::exit(2);
    });
    let env = adapter_env(spec, scenario);
    let (workload, program) = (scenario.workload.clone(), program.clone());
    Box::pin(async move {
        match ExternalClient::start(&ctx, &program, &env, fail.clone()) {
            Ok(client) => crate::workload::client_main(ctx, &workload, Box::new(client)).await,
            Err(failure) => fail(failure),
        }
    })
}

/// Apply locksim's orders from stdin until it closes it (then the process ends).
async fn obey(state: Rc<NodeState>) {
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match serde_json::from_str::<ToNode>(&line) {
            Ok(ToNode::Arm { point, fault }) => state.arm(point, fault),
            Ok(ToNode::Clock { at_ns, change }) => {
                change.apply(&mut state.clock.borrow_mut(), at_ns);
            }
            Err(e) => eprintln!(
                "locksim live-node {}: bad order {line:?}: {e}",
                state.name()
            ),
        }
    }
}
