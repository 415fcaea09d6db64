//! etcd-client's own `lock()` / `unlock()`, on a kept-alive lease, run under locksim's
//! faults and checks against locksim's etcd model: the lock code a Rust service ships,
//! in a deterministic simulation.
//!
//! ```text
//! cargo run --release --example etcd_client_lock -- run examples/etcd_client/row-17.toml --seeds 0..50
//! cargo run --release --example etcd_client_lock -- run examples/etcd_client/row-17-unfenced.toml --seeds 0..50
//! cargo run --release --example etcd_client_lock -- run examples/etcd_client/baseline.toml --seeds 0..20
//! cargo run --release --example etcd_client_lock -- replay examples/etcd_client/row-17.toml --seed 0 --svg row-17.svg
//! cargo test --profile fast-build --example etcd_client_lock
//! ```
//!
//! Building it needs a `protoc` (etcd-client compiles etcd's protos):
//! `apt-get install protobuf-compiler`.
//!
//! # Step by step
//!
//! 1. **The dependencies** (`Cargo.toml`): `etcd-client` with its `raw-channel` feature
//!    (a client on a channel of your own), `tower` for the box etcd-client wants the
//!    channel in, and `locksim` itself.
//! 2. **The family** (`etcd_client/mod.rs`): a `[lock]` table type implementing
//!    [`Algorithm`]. The servers are locksim's etcd model
//!    ([`locksim::plugin::models::Raft`]: `raft-0..` serving etcd's v3 gRPC API, the
//!    Lock service included, on port 2379); the family delegates the servers, the
//!    lease time, the checks and the table's validation to it, and returns its own
//!    [`LockClient`]. The keys of locksim's own etcd client that this client does not
//!    honour are refused, with the key named.
//! 3. **The channel** (`etcd_client/endpoints.rs`): a [`SendGrpcChannel`] per server
//!    (the node's HTTP/2 connection, `Send + Sync` as etcd-client requires, its tasks
//!    spawned on the node), boxed as `etcd_client::Channel::Custom` and handed to
//!    `Client::from_channel`. A failed call's `Status` carries the channel's
//!    [`ChannelError`], which says whether the request was sent: the client tells an
//!    indeterminate outcome from a failure.
//! 4. **The lease** (`etcd_client/lease.rs`): `lease_grant`, and `lease_keep_alive` in a
//!    task spawned with [`NodeCtx::spawn`], so that a pause freezes the keepalives with
//!    the holder. Lease TTLs travel in etcd's whole seconds, which the model runs at its
//!    cluster's pace (one election timeout, 100 ms by default): `ttl_ms = 500` is a
//!    grant of 5 such seconds.
//! 5. **The lock** (`etcd_client/mutex.rs`): `lock(name, with_lease(id))`, a `get` of
//!    the key for its create revision (the fencing token), and `unlock` + `lease_revoke`.
//! 6. **Running it**: [`main`] is `locksim::cli::main_with` with this family, so the
//!    whole command line runs it (`run`, `replay --svg`, `shrink`, `list`, ...). The
//!    scenarios are catalogue row 17 with `algorithm = "etcd-client"`: client-0 freezes
//!    for 1.5 s between its validity check and its write, past its 500 ms lease; its
//!    keepalive task freezes too, the lease expires, client-1 is granted the lock.
//!    `row-17.toml` writes with the token (mutex violated, the storage rejects the
//!    stale write: `fencing` and `counter` hold); `row-17-unfenced.toml` writes without
//!    it (the stale write lands: `counter` violated). `baseline.toml` is the control:
//!    sims/raft-baseline.toml's faults of every kind on every node, where the token,
//!    the counter and the lock service's history hold.
//! 7. **Testing it** (`cargo test`, below): a few seeds of each scenario meet its
//!    `[expect]`, a seed run twice gives the same history bytes
//!    ([`assert_deterministic`], which also fails on a task that escaped the node), and
//!    the build seeds tokio ([`check_tokio_seeded`]).

// The folder is named for the crate it wraps; the module is not (`etcd_client` is
// etcd-client's crate name).
#[path = "etcd_client/mod.rs"]
mod family;

use family::EtcdClientLock;
use locksim::plugin::*;
#[cfg(test)]
use std::path::Path;
use std::process::ExitCode;

/// The algorithms these scenarios may name: etcd-client's lock, beside locksim's own.
const FAMILIES: &[Family] = &[Family::of::<EtcdClientLock>()];

fn main() -> ExitCode {
    locksim::cli::main_with(FAMILIES)
}

/// The scenario at `path` (relative to the crate), with this family.
#[cfg(test)]
fn scenario(path: &str) -> Scenario {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    Scenario::load_with(&file, FAMILIES).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// Each expectation of `scenario`'s `[expect]` not met over `seeds`, described: `holds`
/// needs no seed to violate the check, `violated` at least one.
#[cfg(test)]
fn unmet(scenario: &Scenario, seeds: std::ops::Range<u64>) -> Vec<String> {
    let mut violated: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    for seed in seeds.clone() {
        let result = run(scenario, seed);
        assert!(result.error.is_none(), "seed {seed}: {:?}", result.error);
        let reports = check_run(scenario, &result);
        for name in scenario.expect.keys() {
            let check = scenario.lock.checks().into_iter().find(|c| c.name == name);
            let check = check.unwrap_or_else(|| panic!("no check {name}"));
            if reports.verdict(check) == Verdict::Violated {
                violated.entry(name.clone()).or_default().push(seed);
            }
        }
    }
    let mut unmet = Vec::new();
    for (name, expect) in &scenario.expect {
        let seeds_violating = violated.get(name).cloned().unwrap_or_default();
        let met = match expect {
            Expect::Holds => seeds_violating.is_empty(),
            Expect::Violated => !seeds_violating.is_empty(),
            Expect::Any => true,
        };
        if !met {
            unmet.push(format!(
                "{}: {name} expected {expect:?}, violated on seeds {seeds_violating:?} of {seeds:?}",
                scenario.name
            ));
        }
    }
    unmet
}

/// Row 17 with the token: the paused holder's lease expires and another client is
/// granted the lock (mutex violated); the storage rejects the stale write.
#[test]
fn row_17_breaks_mutex_and_the_token_fences_the_stale_write() {
    let unmet = unmet(&scenario("examples/etcd_client/row-17.toml"), 0..4);
    assert!(unmet.is_empty(), "{unmet:#?}");
}

/// Row 17 without the token: the stale write lands.
#[test]
fn row_17_unfenced_loses_an_update() {
    let unmet = unmet(&scenario("examples/etcd_client/row-17-unfenced.toml"), 0..4);
    assert!(unmet.is_empty(), "{unmet:#?}");
}

/// The control: under every kind of fault, with the model's safety options on, the
/// token and the lock service's history hold (mutex may break).
#[test]
fn the_baseline_holds_under_every_fault() {
    let unmet = unmet(&scenario("examples/etcd_client/baseline.toml"), 0..2);
    assert!(unmet.is_empty(), "{unmet:#?}");
}

/// A seed run twice gives the same history, byte for byte, and etcd-client starts no
/// task outside the node.
#[test]
fn a_seed_is_deterministic() {
    check_tokio_seeded().unwrap_or_else(|e| panic!("{e}"));
    let row_17 = scenario("examples/etcd_client/row-17.toml");
    for seed in [0, 1] {
        assert_deterministic(&row_17, seed);
    }
}

/// Keys of locksim's own client that this one does not honour are refused, by name.
#[test]
fn keys_the_client_does_not_honour_are_refused() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/etcd_client/row-17.toml"),
    )
    .unwrap();
    for (key, value) in [
        ("keepalive_retry_ms", "50"),
        ("deadline_check_ms", "100"),
        ("post_wait_check", "false"),
        ("on_session_lost", "\"stop\""),
    ] {
        let bad = text.replace("[lock]\n", &format!("[lock]\n{key} = {value}\n"));
        let err = Scenario::parse_with(Path::new("bad.toml"), &bad, FAMILIES)
            .err()
            .unwrap_or_else(|| panic!("{key} = {value} was accepted"));
        let message = err.to_string();
        assert!(message.contains(key), "{key}: {message}");
        assert!(message.contains("not honoured"), "{key}: {message}");
    }
    let typo = text.replace("[lock]\n", "[lock]\nttl = 5\n");
    let err = Scenario::parse_with(Path::new("bad.toml"), &typo, FAMILIES).err();
    assert!(err.is_some_and(|e| e.to_string().contains("ttl")));
}
