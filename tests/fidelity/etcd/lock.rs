//! etcd's Lock service (`v3lockpb.Lock`): `Lock` and `Unlock` through the same generated
//! client on both sides. The server runs etcd's `concurrency.Mutex` on the caller's lease:
//! a key `name/<lease hex>` bound to it, then a wait for every older key under `name/`.

use super::*;
use locksim::testing::etcd::v3lockpb;
use v3lockpb::lock_client::LockClient;

/// Lease ids chosen by the test (apart from the leases of the other sections).
const LOCK_LEASES: i64 = 0x7400;

/// How long a `Lock` that should wait is given before it is found still waiting.
const STILL_WAITING: Duration = Duration::from_millis(400);

/// A `Lock` call running on its own while it waits for the lock (`None`: it answered
/// at once).
type Pending = Option<tokio::task::JoinHandle<Result<v3lockpb::LockResponse, tonic::Status>>>;

fn lock_str(r: &v3lockpb::LockResponse) -> String {
    format!("Lock {} key={}", header(&r.header), r.key.escape_ascii())
}

fn lock_req(name: &str, lease: i64) -> v3lockpb::LockRequest {
    v3lockpb::LockRequest {
        name: name.into(),
        lease,
    }
}

impl Side {
    fn locks(&self) -> LockClient<GrpcChannel> {
        LockClient::new(self.channel.clone())
    }

    async fn lock(&mut self, label: &str, name: &str, lease: i64) {
        let resp = self.locks().lock(lock_req(name, lease)).await;
        self.record(label, render(resp, lock_str));
    }

    async fn unlock(&mut self, label: &str, key: &str) {
        let req = v3lockpb::UnlockRequest { key: key.into() };
        let resp = self.locks().unlock(req).await;
        let s = render(resp, |r| format!("Unlock {}", header(&r.header)));
        self.record(label, s);
    }

    /// Starts a `Lock` that may wait, and records whether it is still waiting a little
    /// later (or what it answered at once).
    async fn lock_waiting(&mut self, label: &str, name: &str, lease: i64) -> Pending {
        let mut client = self.locks();
        let req = lock_req(name, lease);
        let mut call = tokio::task::spawn_local(async move {
            client.lock(req).await.map(tonic::Response::into_inner)
        });
        let (s, pending) = match tokio::time::timeout(STILL_WAITING, &mut call).await {
            Err(_) => ("waiting".to_string(), Some(call)),
            Ok(Ok(r)) => (render(r.map(tonic::Response::new), lock_str), None),
            Ok(Err(e)) => (format!("the call failed: {e}"), None),
        };
        self.record(label, s);
        pending
    }

    /// Records the answer of a waiting `Lock` (up to 3 s).
    async fn lock_answer(&mut self, label: &str, call: Pending) {
        let Some(call) = call else {
            return self.record(label, "answered before".into());
        };
        let s = match tokio::time::timeout(Duration::from_secs(3), call).await {
            Err(_) => "no answer within 3 s".to_string(),
            Ok(Ok(r)) => render(r.map(tonic::Response::new), lock_str),
            Ok(Err(e)) => format!("the call failed: {e}"),
        };
        self.record(label, s);
    }
}

/// `Lock` with lease 0: the server's session grants a lease (60 s, not kept alive) whose
/// id the server chooses, so the key's lease id is shown as `<granted>`.
async fn lease_zero(side: &mut Side) {
    let resp = side.locks().lock(lock_req("auto", 0)).await;
    let granted = resp.as_ref().ok().and_then(|r| {
        let key = String::from_utf8_lossy(&r.get_ref().key).into_owned();
        i64::from_str_radix(key.strip_prefix("auto/")?, 16).ok()
    });
    let s = render(resp, |r| {
        let key = r.key.escape_ascii().to_string();
        let shown = match granted {
            Some(id) => key.replace(&format!("{id:x}"), "<granted>"),
            None => key,
        };
        format!("Lock {} key={shown}", header(&r.header))
    });
    side.record("lock: lease 0", s);
    let Some(id) = granted else { return };
    let req = pb::LeaseTimeToLiveRequest { id, keys: true };
    let resp = side.lease.lease_time_to_live(req).await;
    let s = render(resp, |r| {
        format!(
            "TimeToLive {} ttl={} granted={} keys={}",
            header(&r.header),
            r.ttl,
            r.granted_ttl,
            r.keys.len()
        )
    });
    side.record("lock: lease 0's lease", s);
    side.revoke("lock: revoke lease 0's lease", id).await;
}

/// Lock and Unlock: uncontended, again on the same lease, contended, on a missing lease,
/// a waiter whose lease is revoked, a waiter that gives up, lease 0.
pub(super) async fn lock_service(side: &mut Side) {
    let [a, b, c, d] = [1, 2, 3, 4].map(|n| LOCK_LEASES + n);
    for (name, l) in [("a", a), ("b", b), ("c", c), ("d", d)] {
        side.grant(&format!("lock: grant lease {name}"), l, 60)
            .await;
    }
    let key = |l: i64| format!("svc/{l:x}");
    side.lock("lock: a, uncontended", "svc", a).await;
    side.range("lock: svc/ holds a's key", prefix("svc/")).await;
    side.ttl("lock: a's key is bound to a", a, true).await;
    side.lock("lock: a again, already held", "svc", a).await;
    let waiting_b = side.lock_waiting("lock: b waits for a", "svc", b).await;
    side.range("lock: svc/ while b waits", prefix("svc/")).await;
    side.lock("lock: a again while b waits", "svc", a).await;
    side.unlock("lock: unlock a", &key(a)).await;
    side.lock_answer("lock: b holds it after a's unlock", waiting_b)
        .await;
    side.range("lock: svc/ after a's unlock", prefix("svc/"))
        .await;
    // A waiter whose lease is revoked while it waits: etcd 3.4's Mutex has no check
    // after the wait, so it answers once the keys before it are gone.
    let waiting_c = side.lock_waiting("lock: c waits for b", "svc", c).await;
    side.revoke("lock: revoke c while it waits", c).await;
    side.range("lock: svc/ after c's revoke", prefix("svc/"))
        .await;
    side.unlock("lock: unlock b", &key(b)).await;
    side.lock_answer("lock: c's answer after b's unlock", waiting_c)
        .await;
    side.range("lock: svc/ after b's unlock", prefix("svc/"))
        .await;
    // A waiter that gives up (its call dropped): etcd deletes its key.
    side.lock("lock: a holds it again", "svc", a).await;
    let waiting_d = side.lock_waiting("lock: d waits for a", "svc", d).await;
    if let Some(call) = waiting_d {
        call.abort();
        let _ = call.await;
    }
    // The delete follows the cancel: wait for it (up to 2 s) before the compared read.
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        let left = side.kv.range(prefix("svc/")).await;
        if left.is_ok_and(|r| r.get_ref().count == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    side.range("lock: svc/ after d gave up", prefix("svc/"))
        .await;
    side.unlock("lock: unlock a again", &key(a)).await;
    side.unlock("lock: unlock a key that is gone", &key(a))
        .await;
    side.unlock("lock: unlock an empty key", "").await;
    side.lock("lock: a missing lease", "svc", LOCK_LEASES + 0x40)
        .await;
    side.lock("lock: the revoked lease c", "svc", c).await;
    side.lock("lock: an empty name", "", a).await;
    side.range("lock: the empty name's key", get(&format!("/{a:x}")))
        .await;
    side.unlock("lock: unlock the empty name's key", &format!("/{a:x}"))
        .await;
    lease_zero(side).await;
    for (name, l) in [("a", a), ("b", b), ("d", d)] {
        side.revoke(&format!("lock: revoke lease {name}"), l).await;
    }
    side.range("lock: svc/ at the end", prefix("svc/")).await;
}
