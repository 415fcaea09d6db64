//! Long runs must not leak sockets. turmoil 0.7.2 keeps the socket of every connect
//! that fails (partition, no listener, host down) or is cancelled, and a server never
//! learns of a client connection whose FIN a partition dropped; over a long run the
//! first exhausts a client's 16,384 ephemeral ports (`ports exhausted`) and the second
//! makes a server's `accept` panic when a client's port counter wraps around (`already
//! connected`). See `src/net/tcp.rs` for the fix.
//!
//! The fast tests reproduce each leak in seconds; the `#[ignore]`d soaks run one hour of
//! simulated time under partitions for every algorithm family:
//! `cargo test --profile fast-build --test simulation soak:: -- --ignored --nocapture`.

use locksim::history::Recorder;
use locksim::plugin::{encode_frame, serve, CallError, Frames, Remote};
use locksim::sweep::{run_seed, summarize, SeedSet};
use locksim::testing::{Kernel, NodeCtx, NodeState};
use locksim::Scenario;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

fn scenario(text: &str) -> Scenario {
    Scenario::parse(Path::new("soak.toml"), text).unwrap_or_else(|e| panic!("{e}"))
}

/// Run one seed; it must end without a harness error and meet its expectations.
fn run_to_the_end(s: &Scenario, seed: u64) {
    let start = Instant::now();
    let (_, outcome) = run_seed(s, seed);
    let wall = start.elapsed().as_secs_f64();
    let summary = summarize(s, SeedSet::one(seed), std::slice::from_ref(&outcome), wall);
    println!(
        "{}: seed {seed}, {:.0} simulated s in {wall:.1} s wall, {} events",
        s.name, outcome.sim_s, outcome.events
    );
    assert_eq!(outcome.error, None, "{}: harness error", s.name);
    assert_eq!(
        outcome.sim_s,
        s.duration_ms as f64 / 1e3,
        "{}: stopped early",
        s.name
    );
    assert!(summary.expect_met, "{}: {:?}", s.name, summary.checks);
}

/// A client cut off from its server retries every millisecond: without the fix each
/// refused connect leaked a port, and the 16,384th panicked after ~20 simulated s.
#[test]
fn refused_connects_do_not_exhaust_ports() {
    let s = scenario(
        r#"name = "refused-connects"
algorithm = "redis"
duration_ms = 40000
liveness_ms = 2000
[lock]
ttl_ms = 200
retry_delay_ms = [1, 1]
request_timeout_ms = 20
[workload]
clients = 1
acquire_timeout_ms = 1000
[[faults.at]]
at_ms = 500
kind = "partition"
nodes = ["client-0"]
duration_ms = 37000
[expect]
liveness = "holds"
"#,
    );
    run_to_the_end(&s, 0);
}

/// Connects to a paused server time out (turmoil completes the handshake only when the
/// server accepts): without the fix each cancelled connect leaked a port.
#[test]
fn connects_to_a_paused_server_do_not_exhaust_ports() {
    let mut text = r#"name = "paused-server-connects"
algorithm = "redis"
duration_ms = 130000
liveness_ms = 2000
[lock]
ttl_ms = 200
retry_delay_ms = [1, 1]
request_timeout_ms = 5
[workload]
clients = 1
acquire_timeout_ms = 1000
[expect]
liveness = "holds"
"#
    .to_string();
    for at in [1000, 32000, 63000, 94000] {
        text += &format!(
            "[[faults.at]]\nat_ms = {at}\nkind = \"pause\"\nnodes = [\"redis-0\"]\nduration_ms = 30000\n"
        );
    }
    run_to_the_end(&scenario(&text), 0);
}

/// Two of three Redlock nodes restart and stay unbound for `restart_delay_ms`; the
/// client keeps asking them. Without the fix turmoil refused each SYN on arrival and
/// leaked its socket, exhausting the client's ports after ~60 simulated s.
#[test]
fn connects_to_a_server_without_a_listener_do_not_exhaust_ports() {
    let mut text = r#"name = "unbound-server-connects"
algorithm = "redlock"
duration_ms = 100000
liveness_ms = 2000
[lock]
nodes = 3
ttl_ms = 200
node_timeout_ms = 20
retry_delay_ms = [1, 1]
restart_delay_ms = 95000
[workload]
clients = 1
acquire_timeout_ms = 1000
"#
    .to_string();
    // No majority until the end: liveness is violated, and nothing is expected.
    for node in ["redis-0", "redis-1"] {
        text += &format!(
            "[[faults.at]]\nat_ms = 500\nkind = \"crash\"\nnodes = [\"{node}\"]\ndown_ms = 0\n"
        );
    }
    run_to_the_end(&scenario(&text), 0);
}

/// A client drops a connection while cut off, so its FIN is lost and the server's end
/// stays open. With two ephemeral ports every other connect reuses a port: without
/// keepalive the server still held the old connection on it and its accept panicked
/// (`already connected`). With keepalive the server has closed its end by then: after
/// three unanswered probes while the link stays cut, or at the first probe after it
/// heals, which the client's kernel resets.
#[test]
fn half_open_server_connections_are_reaped_before_their_port_comes_back() {
    let net = Kernel::new();
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(1000))
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(2))
        .ephemeral_ports(49152..=49153)
        .build();
    let server = Rc::new(NodeState::new("server", 0));
    let n = net.clone();
    sim.host("server", move || {
        let ctx = NodeCtx::new(server.clone(), Recorder::new()).with_kernel(n.clone());
        async move {
            serve(ctx, 7000, Frames, |_, _, out| encode_frame(b"1", out)).await;
            Ok(())
        }
    });
    let client = Rc::new(NodeState::new("client", 0));
    sim.client("client", async move {
        let ctx = NodeCtx::new(client, Recorder::new()).with_kernel(net.clone());
        let cut = |on: bool| {
            if on {
                turmoil::partition("client", "server");
            } else {
                turmoil::repair("client", "server");
            }
            net.set_cut("client", "server", on);
            net.set_cut("server", "client", on);
        };
        let remote = || Remote::new("server", 7000, Duration::from_millis(50), Frames);
        let mut ping = Vec::new();
        encode_frame(b"PING", &mut ping);
        let one = Ok(b"1".to_vec());
        // Connects alternate between the two ports, so the third of each step reuses
        // the first one's port.
        for (step, probes_reset) in [false, true].into_iter().enumerate() {
            // The server answers, then the link is cut, the next request
            // times out and the client drops the connection, its FIN lost.
            let mut half_open = remote();
            assert_eq!(half_open.request(&ctx, &ping).await, one);
            cut(true);
            let lost = half_open.request(&ctx, &ping).await;
            assert_eq!(lost, Err(CallError::Timeout), "step {step}");
            if probes_reset {
                // Healed: the first probe, at 60 s idle, is reset.
                cut(false);
                ctx.sleep(Duration::from_secs(70)).await;
            } else {
                // Still cut: three probes (60, 80, 100 s) unanswered, closed at 120 s.
                ctx.sleep(Duration::from_secs(130)).await;
                cut(false);
            }
            // The other port, closed cleanly.
            let mut other = remote();
            assert_eq!(other.request(&ctx, &ping).await, one);
            drop(other);
            // The first port again.
            let mut reuse = remote();
            assert_eq!(reuse.request(&ctx, &ping).await, one);
        }
        Ok(())
    });
    sim.run().expect("no socket collision");
}

fn soak(algorithm_toml: &str) {
    run_to_the_end(&scenario(algorithm_toml), 0);
}

/// An hour of a baseline lock under random partitions of any node, 3 fenced clients:
/// every check but `mutex` (a lease lock's) must hold. `extra` adds family checks.
fn soak_partitions(algorithm: &str, lock: &str, extra: &str) {
    soak(&format!(
        r#"name = "soak-{algorithm}"
algorithm = "{algorithm}"
duration_ms = 3600000
[lock]
{lock}
[workload]
clients = 3
fencing = true
[faults]
interval_ms = [300, 1500]
partition = {{ nodes = "all", duration_ms = [100, 2000] }}
[expect]
mutex = "any"
token-order = "holds"
fencing = "holds"
counter = "holds"
liveness = "holds"
lock-linearizable = "holds"
storage-linearizable = "holds"
{extra}"#
    ));
}

/// `redis-baseline-fenced` for an hour, partitions only.
#[test]
#[ignore = "one simulated hour: run with --release -- --ignored"]
fn soak_redis_one_hour_of_partitions() {
    soak_partitions(
        "redis",
        r#"ttl_ms = 1000
token = "incr"
persistence = "always""#,
        "",
    );
}

/// `redis-replicated-baseline` for an hour, partitions only (the primary and the
/// sentinels stay connected, so there is no failover).
#[test]
#[ignore = "one simulated hour: run with --release -- --ignored"]
fn soak_redis_replicated_one_hour_of_partitions() {
    soak(
        r#"name = "soak-redis-replicated"
algorithm = "redis-replicated"
duration_ms = 3600000
[lock]
ttl_ms = 1000
token = "incr"
replicas = 2
sentinels = 3
down_after_ms = 500
replication_lag_ms = [0, 200]
[workload]
clients = 3
fencing = true
[faults]
interval_ms = [300, 1500]
partition = { nodes = ["redis-1", "redis-2", "client-0", "client-1", "client-2"], duration_ms = [100, 2000] }
[expect]
mutex = "any"
token-order = "holds"
fencing = "holds"
counter = "holds"
liveness = "holds"
lock-linearizable = "holds"
storage-linearizable = "holds"
"#,
    );
}

/// `redlock-baseline` for an hour, partitions only.
#[test]
#[ignore = "one simulated hour: run with --release -- --ignored"]
fn soak_redlock_one_hour_of_partitions() {
    soak(
        r#"name = "soak-redlock"
algorithm = "redlock"
duration_ms = 3600000
liveness_ms = 3000
[lock]
nodes = 5
ttl_ms = 1000
clock = "monotonic"
reject_expired = true
persistence = "none"
restart_delay_ms = 1000
[workload]
clients = 3
fencing = false
storage_timeout_ms = 100
[faults]
interval_ms = [400, 1500]
partition = { nodes = "all", duration_ms = [100, 2000] }
[expect]
mutex = "holds"
token-order = "holds"
fencing = "holds"
counter = "holds"
liveness = "holds"
storage-linearizable = "holds"
"#,
    );
}

/// `raft-baseline`'s safety options (the defaults) for an hour.
#[test]
#[ignore = "one simulated hour: run with --release -- --ignored"]
fn soak_raft_one_hour_of_partitions() {
    soak_partitions(
        "raft",
        "ttl_ms = 500",
        "raft-election-safety = \"holds\"\nraft-log = \"holds\"\nraft-apply = \"holds\"\n",
    );
}

/// `zk-baseline`'s ensemble in protected mode for an hour.
#[test]
#[ignore = "one simulated hour: run with --release -- --ignored"]
fn soak_zk_one_hour_of_partitions() {
    soak_partitions("zk", "servers = 3\nsession_timeout_ms = 1000", "");
}

/// `db-baseline`'s unique-row lock and cleaner for an hour.
#[test]
#[ignore = "one simulated hour: run with --release -- --ignored"]
fn soak_db_one_hour_of_partitions() {
    soak_partitions(
        "db",
        "scheme = \"unique-row\"\ncleaner_timeout_ms = 1000",
        "",
    );
}
