//! Whole runs of the family through the harness: the etcd client's session behaviour, read
//! back from the history.

use crate::check::LOCK_LINEARIZABLE;
use crate::history::{Event, EventType};
use crate::scenario::Scenario;
use crate::{check_run, run, Verdict};
use std::path::Path;

fn scenario(body: &str) -> Scenario {
    let text = format!("name = \"t\"\nalgorithm = \"raft\"\n{body}");
    Scenario::parse(Path::new("t.toml"), &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The first successful acquire of `client`, and the release invoked after it.
fn first_hold<'a>(h: &'a [Event], client: &str) -> (&'a Event, &'a Event) {
    let ok = h
        .iter()
        .find(|e| e.process == client && e.kind == EventType::Ok && e.f == "acquire")
        .expect("an acquire");
    let release = h
        .iter()
        .find(|e| {
            e.process == client
                && e.kind == EventType::Invoke
                && e.f == "release"
                && e.index > ok.index
        })
        .expect("a release");
    (ok, release)
}

/// One client holds through a long critical section and is cut off from every Raft node
/// 100 ms into it: its session ends (no keepalive answer within the TTL), and the holder
/// stops at once only with `on_session_lost = "stop"`.
fn cut_off_holder(on_session_lost: &str) -> Vec<(f64, f64, String)> {
    let s = scenario(&format!(
        "duration_ms = 4000\nliveness_ms = 4000\n[lock]\nttl_ms = 500\non_session_lost = \"{on_session_lost}\"\n\
         [workload]\nclients = 1\nthink_ms = [0, 0]\nwork_ms = [3000, 3000]\n\
         [[faults.at]]\nat_ms = 600\nkind = \"partition\"\nnodes = [\"client-0\"]\nduration_ms = 3000\n"
    ));
    (0..3)
        .map(|seed| {
            let r = run(&s, seed);
            let (ok, release) = first_hold(&r.history, "client-0");
            assert!(
                ok.time_ms() < 600.0,
                "seed {seed}: acquired at {}",
                ok.time_ms()
            );
            let reason = release.reason.clone().unwrap_or_default();
            (ok.time_ms(), release.time_ms(), reason)
        })
        .collect()
}

#[test]
fn a_holder_that_stops_on_session_lost_stops_when_its_session_ends() {
    for (acquired, released, reason) in cut_off_holder("stop") {
        // Session ends within TTL + a deadline round (100 ms) of the last answer, which
        // came before the cut at 600 ms.
        assert!(
            released < 600.0 + 500.0 + 100.0 + 10.0,
            "released at {released}"
        );
        assert_eq!(reason, "expired");
        assert!(released - acquired < 3000.0);
    }
    for (acquired, released, reason) in cut_off_holder("continue") {
        assert!(released - acquired >= 3000.0, "{acquired} .. {released}");
        assert_eq!(reason, "expired");
    }
}

#[test]
fn a_keepalive_that_finds_the_lease_gone_cuts_the_grants_validity() {
    // One Raft node whose clock runs twice as fast as the client's: a 500 ms lease lasts
    // 250 ms there, and keepalive rounds 300 ms apart let it expire between two
    // keepalives. The node revokes it; the next keepalive learns it is gone. The grant's
    // validity (first answer + 500 ms of the client's clock) would outlast the 400 ms
    // critical section; cut to that keepalive, it ends before, and the write is skipped.
    let s = scenario(
        "duration_ms = 1500\nliveness_ms = 1500\n[lock]\nnodes = 1\nttl_ms = 500\nkeepalive_retry_ms = 300\n\
         [workload]\nclients = 1\nthink_ms = [0, 0]\nwork_ms = [400, 400]\n\
         [[faults.at]]\nat_ms = 0\nkind = \"drift\"\nnodes = [\"raft-0\"]\ndrift_ppm = 1000000\n",
    );
    for seed in 0..3 {
        let r = run(&s, seed);
        let h = &r.history;
        let (_, release) = first_hold(h, "client-0");
        assert_eq!(
            release.reason.as_deref(),
            Some("expired"),
            "seed {seed}: the holder wrote after its lease was revoked"
        );
        assert!(h.iter().any(|e| e.process == "raft-0" && e.f == "expire"));
        assert_eq!(
            check_run(&s, &r).verdict(&LOCK_LINEARIZABLE),
            Verdict::Holds
        );
    }
}

#[test]
fn a_keepalive_of_a_lease_an_old_leader_expired_is_renewed_by_the_next_leader() {
    // From 1 s, raft-0 is cut off from its peers (not from the client) and its clock runs
    // twice as fast. If it leads, it steps down (check_quorum) and the client's
    // keepalives, refused with NotLeader, are retried until the next leader answers; its
    // promotion extended every lease, so the session lives on and the holder writes.
    // (With these timings raft-0 steps down before the lease expires there, so the held
    // renew of an expired lease is not what this exercises.)
    let s = scenario(
        "duration_ms = 3500\nliveness_ms = 3500\n[lock]\nttl_ms = 500\nkeepalive_retry_ms = 300\n\
         [workload]\nclients = 1\nthink_ms = [0, 0]\nwork_ms = [2000, 2000]\n\
         [[faults.at]]\nat_ms = 1000\nkind = \"partition\"\nnodes = [\"raft-0\"]\npeers = [\"raft-1\", \"raft-2\"]\nduration_ms = 2500\n\
         [[faults.at]]\nat_ms = 1000\nkind = \"drift\"\nnodes = [\"raft-0\"]\ndrift_ppm = 1000000\n",
    );
    let mut led = 0;
    for seed in 0..12 {
        let r = run(&s, seed);
        let h = &r.history;
        let leader_at_cut = h
            .iter()
            .rev()
            .find(|e| e.f == "leader" && e.time_ms() < 1000.0)
            .map(|e| e.process.as_str());
        let (ok, release) = first_hold(h, "client-0");
        if leader_at_cut != Some("raft-0") || ok.time_ms() > 900.0 {
            continue;
        }
        led += 1;
        assert_eq!(release.reason.as_deref(), Some("done"), "seed {seed}");
        assert!(!h.iter().any(|e| e.f == "expire"), "seed {seed}");
    }
    assert!(led > 0, "raft-0 never led at the cut");
}

#[test]
fn a_keepalive_of_an_expired_lease_waits_for_its_revoke() {
    // One Raft node whose clock runs twice as fast as the client's: a 500 ms lease lasts
    // 250 ms there, and keepalive rounds 300 ms apart send the next keepalive after it
    // expired. The lessor looks every 400 ms of its clock (200 ms), so the keepalive
    // usually arrives before the revoke is applied. etcd's Renew blocks then until the
    // revoke applies: the session ends (and a holder that stops on it stops) only once
    // the key is gone. Answered at once, the holder would stop before the revoke, while
    // its key still owns the lock; treated as no answer, it would stop a round or more
    // after it.
    let s = scenario(
        "duration_ms = 1500\nliveness_ms = 1500\n[lock]\nnodes = 1\nttl_ms = 500\nkeepalive_retry_ms = 300\n\
         lessor_check_ms = 400\nrequest_timeout_ms = 1000\non_session_lost = \"stop\"\n\
         [workload]\nclients = 1\nthink_ms = [0, 0]\nwork_ms = [1000, 1000]\n\
         [[faults.at]]\nat_ms = 0\nkind = \"drift\"\nnodes = [\"raft-0\"]\ndrift_ppm = 1000000\n",
    );
    for seed in 0..3 {
        let r = run(&s, seed);
        let h = &r.history;
        let (ok, release) = first_hold(h, "client-0");
        let expire = h
            .iter()
            .find(|e| e.process == "raft-0" && e.f == "expire" && e.index > ok.index)
            .unwrap_or_else(|| panic!("seed {seed}: the lease was not revoked"));
        assert_eq!(release.reason.as_deref(), Some("expired"), "seed {seed}");
        let after = release.time_ms() - expire.time_ms();
        assert!(
            (0.0..50.0).contains(&after),
            "seed {seed}: the holder stopped {after} ms after the revoke"
        );
    }
}
