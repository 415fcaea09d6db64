//! The etcd-like service one Raft node runs: the replicated [`Store`] applied from
//! committed entries, plus the node-local [`Lessor`], behind the calls a node's network
//! loop makes.
//!
//! # Proposals
//!
//! A log entry's data is a [`Proposal`] encoded as JSON (`serde_json`: fields in
//! declaration order, no maps with random order, so the bytes are a pure function of the
//! value): `{"id": <request id>, "req": <Request>}`. The id is chosen by the proposing node
//! (e.g. `raft id << 48 | counter`) so it can tell which applied entry answers which
//! client request; raft-rs may drop or lose a proposal, so the node keeps a deadline per
//! request and never assumes the entry it is waiting for will come.
//!
//! # Wiring (what the node loop does with a [`crate::consensus::core::Output`])
//!
//! 1. `soft_state`: [`Service::on_role`] (demotes the lessor when leadership is lost).
//! 2. each committed entry, in order: [`Service::apply`] with the node's role and local
//!    monotonic time; answer the waiting client, if the proposal was this node's.
//! 3. read states: answer the read once [`Store::applied_index`] ≥ the read's index.
//! 4. periodically (every `lessor_check_ms`): [`Service::expired_leases`], then propose a
//!    `LeaseRevoke` for each, after the `lessor_check` gate (see [`super::lease`]).
//! 5. LeaseKeepAlive requests: [`Service::keep_alive`] on the leader; a follower answers
//!    "not primary" (etcd forwards to the leader; a client can retry there). A renew of
//!    an expired lease waits, as etcd's does, until its revoke is applied or the lessor
//!    is demoted.
//! 6. watch / `waitDelete`: [`Store::first_delete_at_or_after`], polled after each apply
//!    (a node answers a waiting watch as soon as its applied state shows the delete).
//!
//! Reads that do not go through the log use [`Store::range`] on the node's applied state
//! (after ReadIndex, under a lease, or `read = "local"`).

use super::kv::lock_delay::delay_lease_id;
use super::kv::{LeaseId, Request, Response, ServiceError, Store};
use super::lease::{LeaseError, Lessor};
use super::params::RaftParams;
use crate::consensus::core::Committed;
use serde::{Deserialize, Serialize};

/// A log entry's payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Proposal {
    /// Request id chosen by the proposer.
    pub id: u64,
    /// The request.
    pub req: Request,
}

impl Proposal {
    /// The entry bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("encode proposal")
    }

    /// Decode entry bytes.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Proposal, ServiceError> {
        serde_json::from_slice(bytes).map_err(|e| ServiceError::Decode(e.to_string()))
    }
}

/// The outcome of applying one proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    /// Log index.
    pub index: u64,
    /// The proposal's request id (0 if it did not decode).
    pub id: u64,
    /// The answer.
    pub result: Result<Response, ServiceError>,
}

/// One node's service state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Service {
    store: Store,
    lessor: Lessor,
    extend_ns: i64,
}

impl Service {
    /// An empty service for a node with these parameters: minimum lease TTL
    /// ⌈1.5 × election timeout⌉, promotion extends leases by one election timeout, expired
    /// leases are listed again every `revoke_retry_ms` (etcd: its request timeout).
    pub(crate) fn new(params: &RaftParams) -> Service {
        let election_ns = params.election_timeout_ms() as i64 * 1_000_000;
        let mut store = Store::new(params.min_lease_ttl_ms());
        store.set_lock_delay_ms(params.lock_delay_ms);
        Service {
            store,
            lessor: Lessor::new(params.revoke_retry_ms() as i64 * 1_000_000),
            extend_ns: election_ns,
        }
    }

    /// The replicated store.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// The lessor.
    pub(crate) fn lessor(&self) -> &Lessor {
        &self.lessor
    }

    /// Apply a committed entry. `is_leader`: the node's role now; `now_ns`: its local
    /// monotonic time. The leader's no-op (empty data) promotes the lessor and returns
    /// `None`.
    pub(crate) fn apply(
        &mut self,
        entry: &Committed,
        is_leader: bool,
        now_ns: i64,
    ) -> Option<Applied> {
        if entry.data.is_empty() {
            self.store.set_applied_index(entry.index);
            if is_leader {
                self.lessor.promote(&self.store, now_ns, self.extend_ns);
            }
            return None;
        }
        let p = match Proposal::decode(&entry.data) {
            Ok(p) => p,
            Err(e) => {
                self.store.set_applied_index(entry.index);
                return Some(Applied {
                    index: entry.index,
                    id: 0,
                    result: Err(e),
                });
            }
        };
        let before = self.store.revision();
        let result = self.store.apply(entry.index, &p.req);
        match (&p.req, &result) {
            (_, Ok(Response::LeaseGrant { id, ttl_ms, .. })) => {
                self.lessor.granted(*id, *ttl_ms, now_ns)
            }
            (Request::LeaseRevoke { id, .. }, Ok(r)) => {
                self.lessor.revoked(*id);
                // A revoke that freed a lock by failure granted a delay lease under its
                // new revision: the lessor times it like any other (`kv::lock_delay`).
                let delay = delay_lease_id(r.revision());
                match self.store.lease(delay) {
                    Some(l) if r.revision() > before => {
                        self.lessor.granted(delay, l.ttl_ms, now_ns)
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        Some(Applied {
            index: entry.index,
            id: p.id,
            result,
        })
    }

    /// The node's role changed: a node that is no longer leader demotes its lessor
    /// (promotion waits for the no-op of the new term, see [`Service::apply`]).
    pub(crate) fn on_role(&mut self, is_leader: bool) {
        if !is_leader && self.lessor.is_primary() {
            self.lessor.demote();
        }
    }

    /// LeaseKeepAlive on this node at local time `now_ns`: the TTL in ms.
    pub(crate) fn keep_alive(&mut self, id: LeaseId, now_ns: i64) -> Result<u64, LeaseError> {
        self.lessor.renew(&self.store, id, now_ns)
    }

    /// Leases this node's lessor considers expired at `now_ns` (empty unless primary).
    pub(crate) fn expired_leases(&mut self, now_ns: i64) -> Vec<LeaseId> {
        self.lessor.expired(now_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consensus::testkit::Cluster;
    use crate::locks::raft::kv::{PutRequest, RangeRequest};

    const MS: i64 = 1_000_000;

    /// A cluster whose nodes run a Service on their applied entries (true ms as every
    /// node's local clock).
    struct Env {
        c: Cluster,
        services: Vec<Service>,
        seen: Vec<usize>,
        next_id: u64,
    }

    impl Env {
        fn new(seed: u64) -> Env {
            let params = RaftParams::default();
            let n = params.nodes as usize;
            Env {
                services: vec![Service::new(&params); n],
                seen: vec![0; n],
                c: Cluster::new(params.raft_config(), seed),
                next_id: 1,
            }
        }

        /// Apply what each node committed since last time; revoke expired leases.
        fn sync(&mut self) {
            let now = self.c.now_ms as i64 * MS;
            for id in self.c.ids() {
                let i = (id - 1) as usize;
                if !self.c.is_up(id) {
                    continue;
                }
                let leader = self.c.node(id).is_leader();
                self.services[i].on_role(leader);
                while self.seen[i] < self.c.applied[i].len() {
                    let e = self.c.applied[i][self.seen[i]].clone();
                    self.services[i].apply(&e, leader, now);
                    self.seen[i] += 1;
                }
                for lease in self.services[i].expired_leases(now) {
                    let p = Proposal {
                        id: 1 << 60 | lease,
                        req: Request::lease_expiry(lease),
                    };
                    let _ = self.c.node_mut(id).propose(p.encode());
                    self.c.process(id);
                }
            }
        }

        fn run_ms(&mut self, ms: u64) {
            for _ in 0..ms {
                self.c.step();
                self.sync();
            }
        }

        fn request(&mut self, req: Request) {
            let p = Proposal {
                id: self.next_id,
                req,
            };
            self.next_id += 1;
            assert!(self.c.commit(&p.encode(), 2000));
            self.sync();
        }

        fn leader(&mut self) -> u64 {
            let l = self.c.wait_leader(2000);
            self.sync();
            l
        }
    }

    #[test]
    fn lease_expiry_is_decided_by_the_leader_and_applied_everywhere() {
        let mut env = Env::new(21);
        let l = env.leader();
        env.run_ms(50);
        assert!(env.services[(l - 1) as usize].lessor().is_primary());
        env.request(Request::LeaseGrant { id: 9, ttl_ms: 300 });
        env.request(Request::Put(PutRequest::new("lock/9", "", 9)));
        let granted_at = env.c.now_ms;
        // Kept alive on the leader: survives well past its TTL.
        for _ in 0..6 {
            env.run_ms(100);
            let now = env.c.now_ms as i64 * MS;
            assert_eq!(env.services[(l - 1) as usize].keep_alive(9, now), Ok(300));
            let f = env.c.ids().find(|&id| id != l).unwrap();
            assert_eq!(
                env.services[(f - 1) as usize].keep_alive(9, now),
                Err(LeaseError::NotPrimary)
            );
        }
        // Left alone: revoked about a TTL after the last renewal, on every node.
        let renewed_at = env.c.now_ms;
        assert!(renewed_at > granted_at + 500);
        env.run_ms(250);
        for s in &env.services {
            assert!(s.store().get("lock/9").is_some());
        }
        env.run_ms(100);
        for s in &env.services {
            assert!(s.store().get("lock/9").is_none());
            assert!(s.store().lease(9).is_none());
            let rev = s.store().revision();
            assert_eq!(s.store().first_delete_at_or_after("lock/9", 0), Some(rev));
        }
        // All nodes applied the same state.
        let first = env.services[0].store().clone();
        assert!(env.services.iter().all(|s| *s.store() == first));
    }

    #[test]
    fn a_new_leader_extends_every_lease_by_an_election_timeout() {
        let mut env = Env::new(22);
        let l = env.leader();
        env.run_ms(50);
        env.request(Request::LeaseGrant {
            id: 4,
            ttl_ms: 1000,
        });
        env.run_ms(100);
        env.c.crash(l);
        let crashed_at = env.c.now_ms;
        let l2 = env.leader();
        assert_ne!(l2, l);
        // Promotion happens when the new leader applies its term's no-op.
        assert!({
            let mut ok = false;
            for _ in 0..200 {
                env.run_ms(1);
                if env.services[(l2 - 1) as usize].lessor().is_primary() {
                    ok = true;
                    break;
                }
            }
            ok
        });
        let promoted_at = env.c.now_ms as i64 * MS;
        let left = env.services[(l2 - 1) as usize]
            .lessor()
            .remaining_ns(4, promoted_at)
            .unwrap();
        assert_eq!(
            left,
            (1000 + 100) * MS,
            "TTL + election timeout from promotion"
        );
        assert!(promoted_at > crashed_at as i64 * MS);
        // The old leader's lessor is gone with it; no other node is primary.
        let primaries = env
            .c
            .ids()
            .filter(|&id| env.c.is_up(id) && env.services[(id - 1) as usize].lessor().is_primary())
            .count();
        assert_eq!(primaries, 1);
        let r = env.services[(l2 - 1) as usize]
            .store()
            .range(&RangeRequest::get("x"))
            .unwrap();
        assert_eq!(r.count, 0);
    }

    #[test]
    fn proposals_round_trip_and_bad_entries_are_reported() {
        let p = Proposal {
            id: 7,
            req: Request::lease_expiry(3),
        };
        assert_eq!(Proposal::decode(&p.encode()), Ok(p.clone()));
        assert_eq!(
            String::from_utf8(p.encode()).unwrap(),
            r#"{"id":7,"req":{"lease-revoke":{"id":3}}}"#
        );
        // A client's revoke says so; the lessor's is written as before it could.
        let by_client = Proposal {
            id: 7,
            req: Request::LeaseRevoke {
                id: 3,
                by: super::super::kv::Revoker::Client,
            },
        };
        assert_eq!(Proposal::decode(&by_client.encode()), Ok(by_client.clone()));
        assert_eq!(
            String::from_utf8(by_client.encode()).unwrap(),
            r#"{"id":7,"req":{"lease-revoke":{"id":3,"by":"client"}}}"#
        );
        let mut s = Service::new(&RaftParams::default());
        let applied = s
            .apply(
                &Committed {
                    index: 1,
                    term: 1,
                    data: b"garbage".to_vec(),
                },
                true,
                0,
            )
            .unwrap();
        assert!(matches!(applied.result, Err(ServiceError::Decode(_))));
        assert_eq!(s.store().applied_index(), 1);
    }
}
