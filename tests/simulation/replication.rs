//! Redis replication and sentinel failover, observed through whole runs: WAIT counts
//! acknowledging replicas, the failover promotes the replica with the highest offset, and
//! a partitioned old primary is demoted once it is reachable again.

use locksim::history::{Event, EventType};
use locksim::{run, Scenario};
use std::path::Path;

fn scenario(lock_extra: &str, faults: &str) -> Scenario {
    let text = format!(
        "name = \"r\"\nalgorithm = \"redis-replicated\"\nduration_ms = 6000\nliveness_ms = 2000\n\
         [lock]\nttl_ms = 500\nreplicas = 2\nsentinels = 3\ndown_after_ms = 300\n{lock_extra}\n{faults}"
    );
    Scenario::parse(Path::new("replication.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
}

fn grants(h: &[Event]) -> Vec<u64> {
    h.iter()
        .filter(|e| e.f == "acquire" && e.kind == EventType::Ok)
        .map(|e| e.time_ns / 1_000_000)
        .collect()
}

const CUT_REDIS_2: &str = "[[faults.at]]\nat_ms = 1000\nkind = \"partition\"\nnodes = [\"redis-2\"]\nduration_ms = 2000\n";

#[test]
fn wait_blocks_grants_until_enough_replicas_acknowledge() {
    // WAIT 2 with one replica cut off returns 1: the client gives the lock back, so no
    // grant completes while redis-2 is unreachable (plus its timeout) …
    let strict = scenario(
        "wait_replicas = 2\nwait_timeout_ms = 200\nreplication_lag_ms = [0, 20]",
        CUT_REDIS_2,
    );
    // … while WAIT 1 is satisfied by redis-1 alone.
    let lenient = scenario(
        "wait_replicas = 1\nwait_timeout_ms = 200\nreplication_lag_ms = [0, 20]",
        CUT_REDIS_2,
    );
    for seed in 0..3 {
        let g = grants(&run(&strict, seed).history);
        assert!(g.iter().any(|&t| t < 1000), "seed {seed}: {g:?}");
        assert!(
            !g.iter().any(|&t| (1020..3000).contains(&t)),
            "seed {seed}: {g:?}"
        );
        assert!(
            g.iter().any(|&t| t > 3000),
            "seed {seed}: grants resume after the heal: {g:?}"
        );
        let g = grants(&run(&lenient, seed).history);
        assert!(
            g.iter().any(|&t| (1300..3000).contains(&t)),
            "seed {seed}: {g:?}"
        );
    }
}

#[test]
fn failover_promotes_the_replica_with_the_highest_offset() {
    for (lagging, expected) in [("redis-2", "redis-1"), ("redis-1", "redis-2")] {
        let faults = format!(
            "[[faults.at]]\nat_ms = 500\nkind = \"partition\"\nnodes = [\"{lagging}\"]\npeers = [\"redis-0\"]\n\
             [[faults.at]]\nat_ms = 2000\nkind = \"crash\"\nnodes = [\"redis-0\"]\n"
        );
        let s = scenario("replication_lag_ms = [0, 10]", &faults);
        for seed in 0..3 {
            let h = run(&s, seed).history;
            let failovers: Vec<&Event> = h.iter().filter(|e| e.f == "failover").collect();
            assert!(!failovers.is_empty(), "seed {seed}: no failover");
            let chosen = failovers[0].value.as_ref().unwrap()["new"]
                .as_str()
                .unwrap()
                .to_string();
            assert_eq!(chosen, expected, "seed {seed}: {lagging} lagged behind");
            assert!(
                grants(&h).iter().any(|&t| t > 2500),
                "seed {seed}: clients find the new primary through the sentinels"
            );
        }
    }
}

#[test]
fn partitioned_old_primary_is_demoted_after_the_heal() {
    let s = scenario(
        "",
        "[[faults.at]]\nat_ms = 1000\nkind = \"partition\"\nnodes = [\"redis-0\", \"client-0\"]\nduration_ms = 2000\n",
    );
    for seed in 0..3 {
        let h = run(&s, seed).history;
        let failover = h
            .iter()
            .find(|e| e.f == "failover")
            .expect("failover during partition");
        assert!(failover.time_ns < 3_000_000_000);
        let demote = h
            .iter()
            .find(|e| e.f == "demote" && e.process == "redis-0")
            .expect("old primary demoted");
        assert!(
            demote.time_ns >= 3_000_000_000,
            "only once reachable: {demote:?}"
        );
        // While cut off, the old primary kept granting to client-0.
        let minority = h.iter().any(|e| {
            e.process == "client-0"
                && e.f == "acquire"
                && e.kind == EventType::Ok
                && (1_400_000_000..3_000_000_000).contains(&e.time_ns)
        });
        assert!(minority, "seed {seed}: the minority primary kept granting");
    }
}
