//! One model server of a live run in its own process: `locksim serve-node SPEC` runs
//! one server node of the scenario with the code `locksim serve` runs (see
//! [`crate::serve::start_node`]), on the ports its address book gives (its own as it
//! listens on them, its peers' public ones: the run's proxies), until locksim kills it.
//! Its events go to a file locksim merges into the history once the run is over.

use crate::net::LiveNet;
use crate::real::ServeNodeSpec;
use crate::scenario::Scenario;
use crate::serve::{run_until_stopped, start_node, Incarnation};
use std::io::Write;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Run the server `spec` describes (JSON) until SIGTERM or SIGKILL. Returns the exit
/// code: 2 for a bad spec, scenario or events file.
pub fn serve_node_main(spec: &str) -> u8 {
    let spec: ServeNodeSpec = match serde_json::from_str(spec) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim serve-node: bad spec: {e}");
            return 2;
        }
    };
    let mut scenario = match Scenario::load(&spec.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("locksim serve-node: {e}");
            return 2;
        }
    };
    // As the clients of the run take them (etcd's real seconds, see `for_real`).
    scenario.lock = scenario.lock.for_real();
    if !scenario.lock.servers().contains(&spec.node) {
        eprintln!(
            "locksim serve-node: no server {} in the scenario",
            spec.node
        );
        return 2;
    }
    let events = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&spec.events);
    let events = match events {
        Ok(f) => f,
        Err(e) => {
            eprintln!("locksim serve-node: {}: {e}", spec.events.display());
            return 2;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("locksim serve-node: cannot start the runtime: {e}");
            return 2;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let _ = signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone());
    // Time zero is the machine's monotonic zero: locksim puts the events on the run's
    // clock (which starts once every server is up).
    let net = Rc::new(LiveNet::with_epoch(spec.ports.clone(), 0));
    // One write a line, at once: a SIGKILL may come at any moment.
    let on_event = Rc::new(move |line: &str| {
        let _ = (&events).write_all(format!("{line}\n").as_bytes());
    });
    let local = tokio::task::LocalSet::new();
    let lock = scenario.lock.clone();
    local.block_on(&rt, async move {
        // The run's seed: a restarted server draws new ids (its incarnation is mixed in).
        let incarnation = Incarnation {
            seed: spec.seed,
            number: spec.incarnation,
            apply_events: true,
        };
        let node = start_node(&spec.node, incarnation, &net, on_event, |ctx| {
            lock.server_main(ctx)
        });
        run_until_stopped(vec![node], &stop).await;
    });
    0
}
