//! A lock family written outside locksim, with nothing but [`locksim::plugin`]: its
//! parameters, a server on the shared transport, a client, and a few seeds of it through
//! the same scenarios, nemesis and checks as locksim's own families.
//!
//! The toy (`examples/toy/mod.rs`) is a one-server lease lock whose fencing token is a
//! counter. A client paused past its lease breaks mutual exclusion, and the token keeps
//! the counter right anyway: Kleppmann's argument, on a family of twenty lines.
//!
//! ```text
//! cargo run --release --example toy_family
//! ```
//!
//! It exits non-zero when a check's verdict is not the one expected (`cargo test` runs
//! the same expectations).

mod toy;

use locksim::plugin::*;
use std::process::ExitCode;
use toy::Toy;

/// The algorithms these scenarios may name: the toy alone.
const FAMILIES: &[Family] = &[Family::of::<Toy>()];

/// A six-second toy scenario with three clients and a 500 ms lease.
fn toy(name: &str) -> ScenarioBuilder {
    Scenario::builder(name, Toy::NAME)
        .families(FAMILIES)
        .duration_ms(6000)
        .lock_param("ttl_ms", 500)
}

/// Every expectation of the toy; each one not met, described.
fn verify() -> Vec<String> {
    let mut unmet = Vec::new();
    let mut expect = |what: String, met: bool| {
        println!("{} {what}", if met { "ok  " } else { "FAIL" });
        if !met {
            unmet.push(what);
        }
    };

    // Without faults every standard check holds.
    let calm = toy("toy").build().unwrap_or_else(|e| panic!("{e}"));
    let nodes = calm.nodes();
    expect(
        format!("nodes {nodes:?}"),
        nodes == ["toy-0", "storage", "client-0", "client-1", "client-2"],
    );
    for seed in 0..3 {
        let result = run(&calm, seed);
        let reports = check_run(&calm, &result);
        for check in [&MUTEX, &TOKEN_ORDER, &FENCING, &COUNTER, &LIVENESS] {
            let verdict = reports.verdict(check);
            expect(
                format!("calm seed {seed}: {} {verdict:?}", check.name),
                result.error.is_none() && verdict == Verdict::Holds,
            );
        }
    }

    // Its own keys are checked like any family's.
    let typo = match toy("typo").lock_param("ttl", 5).build() {
        Ok(_) => "accepted".to_string(),
        Err(e) => e.to_string(),
    };
    expect(
        format!("a `ttl` key is refused: {typo}"),
        typo.contains("unknown field `ttl`"),
    );

    // A client paused past its lease breaks mutual exclusion on some seed; the fencing
    // token keeps the counter right on every one.
    let paused = toy("paused")
        .fault(
            1000,
            Fault::Pause {
                nodes: vec!["client-0".into()],
                duration_ms: 1500,
                at: FaultPoint::BeforeWrite,
            },
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut broken = Vec::new();
    for seed in 0..10 {
        let reports = check_run(&paused, &run(&paused, seed));
        if reports.verdict(&MUTEX) == Verdict::Violated {
            broken.push(seed);
        }
        let counter = reports.verdict(&COUNTER);
        expect(
            format!("paused seed {seed}: counter {counter:?}"),
            counter == Verdict::Holds,
        );
    }
    expect(
        format!("a pause past the lease breaks mutex (seeds {broken:?})"),
        !broken.is_empty(),
    );
    unmet
}

fn main() -> ExitCode {
    let unmet = verify();
    if unmet.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("toy_family: {} expectations not met", unmet.len());
        ExitCode::FAILURE
    }
}

/// `cargo test` runs the example's expectations (`test = true` in Cargo.toml).
#[test]
fn the_toy_family_meets_its_expectations() {
    let unmet = verify();
    assert!(unmet.is_empty(), "not met: {unmet:#?}");
}
