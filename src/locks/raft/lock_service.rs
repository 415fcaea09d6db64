//! etcd's Lock service (`v3lockpb.Lock`, etcd 3.4's `etcdserver/api/v3lock`) on a Raft
//! node's client port. etcd's lock server runs its own client's `concurrency` recipe for
//! the caller: a session on the caller's lease (orphaned at once, so the server never
//! keeps the lease alive) and `Mutex.Lock` on it. Here the same steps go to the node as
//! [`Call`]s, as the node's other services do:
//!
//! * **`Lock{name, lease}`**: one Txn, `If(CreateRevision(name/<lease hex>) == 0)
//!   Then(Put(key, "", lease), Get(name/, FirstCreate)) Else(Get(key), Get(name/,
//!   FirstCreate))`; the key's create revision is the Txn's revision, or the existing
//!   key's (a second `Lock` on the same lease takes the same place in the queue). If the
//!   first-created key is the caller's, the answer is the key and the Txn's header. Else
//!   etcd's `waitDeletes`: read the newest key created before the caller's, wait for its
//!   delete ([`Call::WaitDelete`], a watch from the read's revision), read again; none
//!   left: the answer carries the last read's header. As in etcd 3.4 there is no check
//!   after the wait: a waiter whose lease was revoked meanwhile is answered with a key
//!   that no longer exists (etcd #11456). A missing lease fails the Txn's put
//!   (`requested lease not found`). Lease 0 means no lease: etcd's session grants one of
//!   60 s, which nobody keeps alive.
//! * **A waiter that stops waiting** (its call cancelled, or a read or wait failed):
//!   its key is deleted, as `Mutex.Lock` does.
//! * **`Unlock{key}`**: a plain delete of `key`, answered with the delete's header.
//!
//! Errors: etcd's lock server returns its in-process client's error, which gRPC sends as
//! `Unknown` with etcd's message (etcd's own statuses keep their code only when they come
//! from etcd's KV service directly); the model does the same.
//!
//! locksim's own simulated clients never call this service (they run the recipe on the
//! client side, [`super::mutex`]), so it changes no simulated history.

use super::etcd_api::{self as api, HeaderIds};
use super::etcd_grpc::{Call, EtcdService};
use super::etcdpb::etcdserverpb as pb;
use super::etcdpb::v3lockpb::{self as lockpb, lock_server};
use super::kv::{
    bytes_of, text_of, Compare, DeleteRequest, KeySpec, OpResponse, PutRequest, RangeRequest,
    Request, Response, TxnOp, TxnRequest, TxnResponse,
};
use tokio::sync::{mpsc, oneshot};
use tonic::Status;

type Rpc<T> = Result<tonic::Response<T>, Status>;

/// The TTL of the lease etcd's session grants for `Lock` with lease 0: `concurrency`'s
/// `defaultSessionTTL`, seconds.
const DEFAULT_SESSION_TTL_S: i64 = 60;

/// etcd's lock server answers its client's errors as `Unknown`, with their message.
fn as_lock_server(s: Status) -> Status {
    Status::unknown(s.message())
}

/// The key of `lease` under `prefix`: etcd formats the lease id (a signed 64-bit number)
/// with Go's `%x`.
fn lock_key(prefix: &str, lease: i64) -> String {
    if lease < 0 {
        format!("{prefix}-{:x}", lease.unsigned_abs())
    } else {
        format!("{prefix}{lease:x}")
    }
}

/// `Mutex.Lock`'s first step (`tryAcquire`): queue `key` under `prefix`, bound to
/// `lease`, unless it is there already; read the lock's first key either way.
fn try_acquire(key: &str, prefix: &str, lease: i64) -> TxnRequest {
    let owner = || TxnOp::Range(RangeRequest::first_created(prefix));
    // A negative id names no lease the model grants: the put fails as on a missing one.
    let lease = u64::try_from(lease).unwrap_or(u64::MAX);
    TxnRequest {
        compare: vec![Compare::create_revision_is(key, 0)],
        success: vec![TxnOp::Put(PutRequest::new(key, "", lease)), owner()],
        failure: vec![TxnOp::Range(RangeRequest::get(key)), owner()],
    }
}

/// The create revision of the caller's key (the Txn's revision if it put it) and of the
/// lock's first key, if any.
fn queue_position(t: &TxnResponse) -> (u64, Option<u64>) {
    let first_kv = |op: Option<&OpResponse>| match op {
        Some(OpResponse::Range(r)) => r.kvs.first().map(|kv| kv.create_revision),
        _ => None,
    };
    let mine = if t.succeeded {
        t.revision
    } else {
        first_kv(t.responses.first()).unwrap_or(t.revision)
    };
    (mine, first_kv(t.responses.get(1)))
}

/// A waiter's key, deleted if the waiter stops waiting before it holds the lock (etcd's
/// `Mutex.Lock` unlocks when its wait fails, including when its call is cancelled).
struct WaiterKey {
    calls: mpsc::UnboundedSender<Call>,
    key: Option<String>,
}

impl WaiterKey {
    /// The delete of the key, as the node takes it.
    fn delete(key: String) -> Request {
        Request::DeleteRange(DeleteRequest::of(KeySpec::key(key)))
    }

    /// The waiter holds the lock: its key stays.
    fn keep(mut self) {
        self.key = None;
    }

    /// The wait failed: delete the key and wait for the answer, as etcd does before it
    /// answers the error.
    async fn abandon(mut self) {
        if let Some(key) = self.key.take() {
            let (tx, rx) = oneshot::channel();
            if self
                .calls
                .send(Call::Propose(Self::delete(key), tx))
                .is_ok()
            {
                let _ = rx.await;
            }
        }
    }
}

impl Drop for WaiterKey {
    /// The call was cancelled while it waited: delete the key without waiting (nobody is
    /// left to answer).
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let (tx, _) = oneshot::channel();
            let _ = self.calls.send(Call::Propose(Self::delete(key), tx));
        }
    }
}

impl EtcdService {
    /// `Lock` with lease 0: etcd's session grants a lease of its default TTL.
    async fn session_lease(&self) -> Result<i64, Status> {
        let ttl_ms = self.ttl_ms(DEFAULT_SESSION_TTL_S);
        match self.propose(Request::LeaseGrant { id: 0, ttl_ms }).await? {
            (Response::LeaseGrant { id, .. }, _) => Ok(id as i64),
            (other, _) => Err(super::etcd_grpc::unexpected(other)),
        }
    }

    /// etcd's `waitDeletes(prefix, max_rev)`: until no key under `prefix` created at or
    /// before `max_rev` is left, wait for the newest one's delete. The header of the read
    /// that found none.
    async fn wait_deletes(&self, prefix: &str, max_rev: u64) -> Result<HeaderIds, Status> {
        loop {
            let read = RangeRequest::last_created_at_or_before(prefix, max_rev);
            let (found, ids) = self.ask(|reply| Call::Range(read, reply)).await?;
            let Some(ahead) = found.kvs.first() else {
                return Ok(HeaderIds {
                    revision: found.revision,
                    ..ids
                });
            };
            let key = ahead.key.clone();
            let from = found.revision;
            self.ask(|reply| Call::WaitDelete { key, from, reply })
                .await?;
        }
    }

    /// `Mutex.Lock` for the caller: the key and the header it is answered with.
    async fn lock_for(&self, name: Vec<u8>, lease: i64) -> Result<(String, HeaderIds), Status> {
        let lease = if lease == 0 {
            self.session_lease().await?
        } else {
            lease
        };
        let prefix = format!("{}/", text_of(name));
        let key = lock_key(&prefix, lease);
        let txn = try_acquire(&key, &prefix, lease);
        let (t, ids) = match self.propose(Request::Txn(txn)).await? {
            (Response::Txn(t), ids) => (t, ids),
            (other, _) => return Err(super::etcd_grpc::unexpected(other)),
        };
        let (mine, first) = queue_position(&t);
        if first.is_none_or(|first| first == mine) {
            let revision = t.revision;
            return Ok((key, HeaderIds { revision, ..ids }));
        }
        let waiter = WaiterKey {
            calls: self.calls().clone(),
            key: Some(key.clone()),
        };
        match self.wait_deletes(&prefix, mine.saturating_sub(1)).await {
            Ok(ids) => {
                waiter.keep();
                Ok((key, ids))
            }
            Err(e) => {
                waiter.abandon().await;
                Err(e)
            }
        }
    }
}

#[tonic::async_trait]
impl lock_server::Lock for EtcdService {
    async fn lock(&self, req: tonic::Request<lockpb::LockRequest>) -> Rpc<lockpb::LockResponse> {
        let r = req.into_inner();
        let (key, ids) = self
            .lock_for(r.name, r.lease)
            .await
            .map_err(as_lock_server)?;
        Ok(tonic::Response::new(lockpb::LockResponse {
            header: ids.header(ids.revision),
            key: bytes_of(&key),
        }))
    }

    async fn unlock(
        &self,
        req: tonic::Request<lockpb::UnlockRequest>,
    ) -> Rpc<lockpb::UnlockResponse> {
        let del = pb::DeleteRangeRequest {
            key: req.into_inner().key,
            ..Default::default()
        };
        let d = api::delete_request(del).map_err(|e| as_lock_server(e.status()))?;
        match self
            .propose(Request::DeleteRange(d))
            .await
            .map_err(as_lock_server)?
        {
            (Response::DeleteRange(r), ids) => Ok(tonic::Response::new(lockpb::UnlockResponse {
                header: ids.header(r.revision),
            })),
            (other, _) => Err(super::etcd_grpc::unexpected(other)),
        }
    }
}
