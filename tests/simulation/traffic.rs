//! The traffic count (`metrics.traffic`) misses no byte: for every family, with and
//! without faults, the bytes and data segments locksim's transport counted equal what
//! turmoil itself logged sending from one host to another (its `Send` trace events,
//! emitted in `turmoil`'s link code, below every protocol locksim speaks). A stream opened
//! around the count, or a count of a write turmoil never sent, breaks the equality.

use locksim::testing::Traffic;
use locksim::{run, Scenario};
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One scenario per family and shape: baselines, and partitions, crashes, pauses and
/// failovers, where sends meet cut links and dead hosts.
const SCENARIOS: &[&str] = &[
    "redis-baseline-fenced",
    "redis-05-async-failover-random",
    "redis-06-minority-primary-random",
    "redlock-baseline",
    "redlock-08-delayed-restart-random",
    "zk-baseline",
    "zk-13-session-expiry-pause-random",
    "raft-baseline",
    "raft-18-stuck-old-leader-random",
    "db-baseline",
    "db-for-update-partition-random",
];

/// Adds up turmoil's `Send` events that carry TCP data.
struct TurmoilSends(Arc<Mutex<Traffic>>);

#[derive(Default)]
struct SendFields {
    message: String,
    protocol: String,
}

impl Visit for SendFields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "protocol" => self.protocol = format!("{value:?}"),
            _ => {}
        }
    }
}

impl<S: Subscriber> Layer<S> for TurmoilSends {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "turmoil" {
            return;
        }
        let mut f = SendFields::default();
        event.record(&mut f);
        // A data segment prints as `TCP [0x2A, 0x0D, ...]`; SYN and FIN as words.
        let Some(list) = f.protocol.strip_prefix("TCP [") else {
            return;
        };
        if f.message != "Send" {
            return;
        }
        let mut t = self.0.lock().expect("one thread");
        t.bytes += list.split(", ").count() as u64;
        t.segments += 1;
    }
}

/// (what locksim counted, what turmoil logged) for one run. Tracing's callsite interest
/// is global: a simulation on another test thread, with no subscriber, can still cache
/// turmoil's send event as "never" while this run is live, and then nothing is logged.
/// The run is deterministic, so it is run again (at most three times) until turmoil's
/// log is seen.
fn counted_and_logged(s: &Scenario, seed: u64) -> (Traffic, Traffic) {
    let mut out = counted_and_logged_once(s, seed);
    for _ in 0..2 {
        if out.1.segments > 0 {
            break;
        }
        out = counted_and_logged_once(s, seed);
    }
    out
}

/// One run of [`counted_and_logged`].
fn counted_and_logged_once(s: &Scenario, seed: u64) -> (Traffic, Traffic) {
    let logged = Arc::new(Mutex::new(Traffic::default()));
    let subscriber = tracing_subscriber::registry().with(TurmoilSends(logged.clone()));
    let result = tracing::subscriber::with_default(subscriber, || {
        // Tests on other threads run simulations with no subscriber: one that first hits
        // turmoil's send event while this subscriber is being set up can leave it cached
        // as "never" (tracing's callsite interest is global), and then nothing is logged
        // here. Rebuilding the cache with this subscriber live closes that race.
        tracing::callsite::rebuild_interest_cache();
        run(s, seed)
    });
    let logged = *logged.lock().expect("one thread");
    (result.traffic.expect("a simulated run counts"), logged)
}

#[test]
fn every_byte_turmoil_sends_is_counted_once() {
    for name in SCENARIOS {
        let s = Scenario::load(Path::new(&format!("sims/{name}.toml"))).expect("valid scenario");
        for seed in 0..2 {
            let (counted, logged) = counted_and_logged(&s, seed);
            assert!(
                logged.segments > 0,
                "{name} seed {seed}: turmoil logged no send"
            );
            assert_eq!(
                counted, logged,
                "{name} seed {seed}: counted vs turmoil's log"
            );
        }
    }
}

#[test]
fn the_count_is_part_of_the_deterministic_run() {
    let s = Scenario::load(Path::new("sims/raft-baseline.toml")).expect("valid scenario");
    assert_eq!(run(&s, 3).traffic, run(&s, 3).traffic);
}
