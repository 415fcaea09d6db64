//! A whole simulated run of hand-made hosts.

use super::*;
use crate::history::{names, EventType};

/// A server whose spawned task panics 100 ms after every start, for `panicking_starts`
/// starts, and a bystander that records a heartbeat every 50 ms.
fn world(panicking_starts: u32) -> World {
    let starts = Rc::new(std::cell::Cell::new(0u32));
    let server = Host::new("server", move |ctx| {
        starts.set(starts.get() + 1);
        let panics = starts.get() <= panicking_starts;
        Box::pin(async move {
            let c = ctx.clone();
            ctx.spawn(async move {
                c.sleep(Duration::from_millis(100)).await;
                assert!(!panics, "to_commit 1 is out of range [last_index 0]");
                c.record(c.event(EventType::Event, "alive"));
            });
            std::future::pending::<()>().await;
        })
    });
    let bystander = Host::new("bystander", |ctx| {
        Box::pin(async move {
            loop {
                ctx.sleep(Duration::from_millis(50)).await;
                ctx.record(ctx.event(EventType::Event, "tick"));
            }
        })
    });
    World {
        duration_ms: 1000,
        network: Network {
            latency_ms: [1, 1],
            loss: 0.0,
        },
        hosts: vec![server, bystander],
        faults: FaultPlan::Fixed(Vec::new()),
        progress: None,
    }
}

fn at_ms(h: &History, f: &str) -> Vec<u64> {
    h.iter()
        .filter(|e| e.f == f)
        .map(|e| e.time_ns / 1_000_000)
        .collect()
}

#[test]
fn a_node_that_panics_crashes_and_a_supervisor_restarts_it_until_it_runs() {
    let r = super::super::on_fresh_thread(|| run(world(2), 0));
    assert_eq!(r.error, None);
    // Two starts panic 100 ms in, each is a crash then and a restart 100 ms later; the
    // third start runs.
    let panics = at_ms(&r.history, names::PANIC);
    assert_eq!(panics.len(), 2, "{panics:?}");
    // The crash is applied at the end of the tick (1 ms) the panic happened in.
    let crashes = at_ms(&r.history, names::CRASH);
    assert_eq!(crashes, panics.iter().map(|t| t + 1).collect::<Vec<_>>());
    let restarts: Vec<u64> = crashes.iter().map(|t| t + 100).collect();
    assert_eq!(at_ms(&r.history, names::RESTART), restarts);
    let alive = at_ms(&r.history, "alive");
    assert_eq!(alive.len(), 1);
    assert!((restarts[1] + 100..restarts[1] + 110).contains(&alive[0]));
    let first = r.history.iter().find(|e| e.f == names::PANIC).unwrap();
    assert_eq!(first.process, "server");
    assert_eq!(
        first.value.as_ref().unwrap()["message"],
        "to_commit 1 is out of range [last_index 0]"
    );
    // The rest of the world ran on: 19 ticks in 1 s.
    assert_eq!(at_ms(&r.history, "tick").len(), 19);
}

#[test]
fn a_panic_outside_node_code_is_still_the_harness_s() {
    let caught = std::panic::catch_unwind(|| {
        super::super::on_fresh_thread(|| {
            let mut w = world(0);
            w.progress = Some(Box::new(|ms| {
                assert!(ms < 500, "a harness bug");
                true
            }));
            run(w, 0)
        })
    });
    assert!(caught.is_err());
}
