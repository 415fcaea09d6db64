//! Tests of the ensemble's write path: a deposed leader's transactions, Raft timing.

use super::*;
use crate::locks::zk::db::Op;

/// The window of issue 19: a leader that was paused (it does not tick) while the
/// others elected a new one steps a message from the new leader; its Raft core is
/// now a follower that knows the new leader, but the server has not yet handled the
/// Ready that drops its session tracker. A session close its expirer finds due then
/// must not reach the log: raft-rs would forward it, and the new leader, which
/// considers the session live, would commit it.
#[test]
fn a_deposed_leader_does_not_get_its_own_transactions_committed() {
    let p = raft_params(&ZkParams {
        servers: 3,
        ..ZkParams::default()
    });
    for seed in 0..4 {
        let mut c = Cluster::new(p.clone(), seed);
        let old = c.wait_leader(3000);
        let epoch = c.node(old).term();
        // Paused: cut off and not ticking.
        c.isolate(old);
        c.tick_every[(old - 1) as usize] = u64::MAX / 2;
        assert!(c.run_until(3000, |c| c.leader().is_some_and(|l| l != old)));
        let new = c.leader().unwrap();
        c.heal();
        assert!(c.run_until(1000, |c| c.node(old).leader_id() == new));
        assert!(!c.node(old).is_leader());
        let close = Proposal {
            id: 7,
            txn: Txn {
                session: 42,
                owner: 0,
                time_ms: 0,
                op: Op::CloseSession,
            },
        }
        .encode();
        let proposed = propose_own(c.node_mut(old), Some(epoch), close.clone());
        c.process(old);
        c.run_ms(500);
        assert!(
            c.applied_by(&close).is_empty(),
            "seed {seed}: the deposed leader's close was committed"
        );
        assert!(!proposed, "seed {seed}: Raft took it");
        // The new leader's own proposal at its epoch goes through.
        let t = c.node(new).term();
        assert!(propose_own(c.node_mut(new), Some(t), close.clone()));
        c.process(new);
        c.run_ms(200);
        assert_eq!(c.applied_by(&close).len(), 3);
        // A tracker of an older epoch (leadership lost and regained) is not enough.
        assert!(!propose_own(c.node_mut(new), Some(t - 1), close.clone()));
    }
}

#[test]
fn raft_timing() {
    let p = ZkParams::default();
    let r = raft_params(&ZkParams { servers: 3, ..p });
    assert_eq!((r.nodes, r.tick_ms, r.election_tick), (3, 20, 10));
    r.validate().unwrap();
}
