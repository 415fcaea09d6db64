//! Differential fidelity for the etcd model: the same request sequences go, through the
//! same client code (locksim's generated tonic clients, `etcdpb::etcdserverpb`, over
//! locksim's own HTTP/2 [`GrpcChannel`] on a live [`NodeCtx`]), to a real etcd 3.4
//! (Debian's `etcd-server`, one member on free loopback ports, etcd's default timing:
//! see `support/real_etcd.rs`) and to the model served on loopback by `locksim::serve`
//! with the same timing (tick 100 ms: heartbeat 100 ms, election timeout 1 s, lease
//! TTLs in real seconds, smallest TTL 2 s). Both sides run at once, each in a thread of
//! its own, so the waits for lease expiry overlap. Every reply, every watch and
//! keep-alive response and every gRPC error (code and message) is compared field by
//! field.
//!
//! Normalised, because they must differ:
//!
//! * the header's `cluster_id` and `member_id` are not compared (etcd hashes its peer
//!   URL, which changes with the port, and the cluster token; the model hashes names);
//! * `raft_term` is compared relative to the side's term when the transcript begins: a
//!   fresh etcd member elects itself in term 2 (its bootstrap configuration entries are
//!   term 1), raft-rs's single node in term 1. A term change during the run would still
//!   show. The responses inside a txn carry term 0 on both sides, compared as is;
//! * the responses one write sends to several watchers of a stream are compared by
//!   revision, then watch id (etcd sends them in a Go map's order);
//! * the keys of `LeaseTimeToLive` are compared sorted (etcd lists them from a Go map);
//! * two leases that expire together are revoked in either order by etcd (a goroutine
//!   each): their DELETE events are compared by key, their revisions as a set.
//!
//! Everything else is compared as it is: revisions (header, create, mod), versions,
//! values, leases, counts, `more`, `succeeded`, nested responses and their headers,
//! `deleted`, `prev_kv(s)`, lease TTLs and granted TTLs, the lease list in its order,
//! watch ids, events, `created`, `canceled`, `compact_revision`, cancel reasons, gRPC
//! codes and messages. Lease ids are chosen by the client, so they are the same on both
//! sides. A remaining TTL is compared in whole seconds, as etcd truncates it, so the
//! steps that read one come right after the grant or keep-alive that set it (a side
//! stalled for a second there would show as a mismatch).
//!
//! Steps tagged [`DELIBERATE`] are the model's deliberate differences, each with its
//! reason; their mismatches are reported, not failed. Without etcd the test fails and
//! says how to install it: it never skips silently. `ETCD_FIDELITY_DUMP=1` prints etcd's
//! whole transcript.

#[path = "support/real_etcd.rs"]
mod real_etcd;
#[path = "support/served.rs"]
mod served;

use locksim::history::Recorder;
use locksim::locks::raft::etcdpb::etcdserverpb as pb;
use locksim::locks::raft::etcdpb::mvccpb;
use locksim::net::{Deadlines, GrpcChannel, LiveNet};
use locksim::serve::ServeFamily;
use locksim::sim::{NodeCtx, NodeState};
use pb::cluster_client::ClusterClient;
use pb::compare::{CompareResult, CompareTarget, TargetUnion};
use pb::kv_client::KvClient;
use pb::lease_client::LeaseClient;
use pb::range_request::{SortOrder, SortTarget};
use pb::request_op::Request as Op;
use pb::response_op::Response as OpResp;
use pb::watch_client::WatchClient;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::Streaming;

/// A step's label and what it observed, normalised.
type Transcript = Vec<(String, String)>;

/// The host name the client's address book gives the server under test.
const SERVER: &str = "etcd";

/// One side's run: its clients and its transcript.
struct Side {
    channel: GrpcChannel,
    kv: KvClient<GrpcChannel>,
    lease: LeaseClient<GrpcChannel>,
    out: Transcript,
}

/// One `Watch` stream: the requests' sender and the responses.
struct WatchStream {
    tx: mpsc::UnboundedSender<pb::WatchRequest>,
    rx: Streaming<pb::WatchResponse>,
}

/// One `LeaseKeepAlive` stream.
struct KeepAlive {
    tx: mpsc::UnboundedSender<pb::LeaseKeepAliveRequest>,
    rx: Streaming<pb::LeaseKeepAliveResponse>,
}

thread_local! {
    /// This side's Raft term when the transcript began: terms are shown relative to it.
    static TERM_BASE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn header(h: &Option<pb::ResponseHeader>) -> String {
    match h {
        // etcd leaves the term of the responses inside a txn 0.
        Some(h) if h.raft_term == 0 => format!("[rev={} term=0]", h.revision),
        Some(h) => {
            let base = TERM_BASE.with(|t| t.get());
            let term = i128::from(h.raft_term) - i128::from(base);
            format!("[rev={} term=base{term:+}]", h.revision)
        }
        None => "[no header]".into(),
    }
}

fn kv(k: &mvccpb::KeyValue) -> String {
    // Byte for byte: keys and values are bytes, and a lossy rendering would hide a
    // difference in the bytes that are not UTF-8.
    format!(
        "{}=\"{}\"(c={} m={} v={} lease={})",
        k.key.escape_ascii(),
        k.value.escape_ascii(),
        k.create_revision,
        k.mod_revision,
        k.version,
        k.lease
    )
}

fn kvs(k: &[mvccpb::KeyValue]) -> String {
    let all: Vec<String> = k.iter().map(kv).collect();
    format!("[{}]", all.join(", "))
}

fn range_str(r: &pb::RangeResponse) -> String {
    format!(
        "Range {} kvs={} more={} count={}",
        header(&r.header),
        kvs(&r.kvs),
        r.more,
        r.count
    )
}

fn put_str(r: &pb::PutResponse) -> String {
    let prev = r.prev_kv.as_ref().map_or("none".into(), kv);
    format!("Put {} prev={prev}", header(&r.header))
}

fn delete_str(r: &pb::DeleteRangeResponse) -> String {
    format!(
        "Delete {} deleted={} prev={}",
        header(&r.header),
        r.deleted,
        kvs(&r.prev_kvs)
    )
}

fn txn_str(r: &pb::TxnResponse) -> String {
    let ops: Vec<String> = r
        .responses
        .iter()
        .map(|op| match &op.response {
            Some(OpResp::ResponseRange(r)) => range_str(r),
            Some(OpResp::ResponsePut(r)) => put_str(r),
            Some(OpResp::ResponseDeleteRange(r)) => delete_str(r),
            Some(OpResp::ResponseTxn(r)) => txn_str(r),
            None => "empty".into(),
        })
        .collect();
    format!(
        "Txn {} succeeded={} [{}]",
        header(&r.header),
        r.succeeded,
        ops.join("; ")
    )
}

fn event_str(e: &mvccpb::Event) -> String {
    let kind = match mvccpb::event::EventType::try_from(e.r#type) {
        Ok(mvccpb::event::EventType::Put) => "PUT",
        Ok(mvccpb::event::EventType::Delete) => "DELETE",
        Err(_) => "?",
    };
    let this = e.kv.as_ref().map_or("none".into(), kv);
    let prev = e.prev_kv.as_ref().map_or("none".into(), kv);
    format!("{kind} {this} prev={prev}")
}

fn watch_str(r: &pb::WatchResponse) -> String {
    let events: Vec<String> = r.events.iter().map(event_str).collect();
    format!(
        "Watch {} id={} created={} canceled={} compact={} reason={:?} fragment={} events=[{}]",
        header(&r.header),
        r.watch_id,
        r.created,
        r.canceled,
        r.compact_revision,
        r.cancel_reason,
        r.fragment,
        events.join(", ")
    )
}

fn status_str(s: &tonic::Status) -> String {
    format!("error {:?} {:?}", s.code(), s.message())
}

fn render<T>(r: Result<tonic::Response<T>, tonic::Status>, f: impl Fn(&T) -> String) -> String {
    match r {
        Ok(r) => f(r.get_ref()),
        Err(s) => status_str(&s),
    }
}

/// etcd's `GetPrefixRangeEnd`: the key after every key with `prefix`.
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

fn get(key: &str) -> pb::RangeRequest {
    pb::RangeRequest {
        key: key.into(),
        ..Default::default()
    }
}

fn prefix(p: &str) -> pb::RangeRequest {
    pb::RangeRequest {
        key: p.into(),
        range_end: prefix_end(p),
        ..Default::default()
    }
}

fn put(key: &str, value: &str) -> pb::PutRequest {
    pb::PutRequest {
        key: key.into(),
        value: value.into(),
        ..Default::default()
    }
}

fn put_lease(key: &str, value: &str, lease: i64) -> pb::PutRequest {
    pb::PutRequest {
        lease,
        ..put(key, value)
    }
}

fn del(key: &str) -> pb::DeleteRangeRequest {
    pb::DeleteRangeRequest {
        key: key.into(),
        ..Default::default()
    }
}

fn op_get(r: pb::RangeRequest) -> pb::RequestOp {
    pb::RequestOp {
        request: Some(Op::RequestRange(r)),
    }
}

fn op_put(p: pb::PutRequest) -> pb::RequestOp {
    pb::RequestOp {
        request: Some(Op::RequestPut(p)),
    }
}

fn op_del(d: pb::DeleteRangeRequest) -> pb::RequestOp {
    pb::RequestOp {
        request: Some(Op::RequestDeleteRange(d)),
    }
}

fn op_txn(t: pb::TxnRequest) -> pb::RequestOp {
    pb::RequestOp {
        request: Some(Op::RequestTxn(t)),
    }
}

fn cmp(key: &str, result: CompareResult, target: CompareTarget, u: TargetUnion) -> pb::Compare {
    pb::Compare {
        result: result as i32,
        target: target as i32,
        key: key.into(),
        range_end: Vec::new(),
        target_union: Some(u),
    }
}

/// clientv3's `WithFirstCreate` on `pfx`: the oldest key.
fn first_create(pfx: &str) -> pb::RangeRequest {
    pb::RangeRequest {
        sort_target: SortTarget::Create as i32,
        sort_order: SortOrder::Ascend as i32,
        limit: 1,
        ..prefix(pfx)
    }
}

/// clientv3's `WithLastCreate` and `WithMaxCreateRev(max)` on `pfx` (the Mutex's
/// `waitDeletes`).
fn last_create_before(pfx: &str, max: i64) -> pb::RangeRequest {
    pb::RangeRequest {
        sort_target: SortTarget::Create as i32,
        sort_order: SortOrder::Descend as i32,
        limit: 1,
        max_create_revision: max,
        ..prefix(pfx)
    }
}

fn watch_create(key: &[u8], range_end: &[u8], start: i64) -> pb::WatchRequest {
    pb::WatchRequest {
        request_union: Some(pb::watch_request::RequestUnion::CreateRequest(
            pb::WatchCreateRequest {
                key: key.to_vec(),
                range_end: range_end.to_vec(),
                start_revision: start,
                ..Default::default()
            },
        )),
    }
}

fn watch_create_with(c: pb::WatchCreateRequest) -> pb::WatchRequest {
    pb::WatchRequest {
        request_union: Some(pb::watch_request::RequestUnion::CreateRequest(c)),
    }
}

fn watch_cancel(id: i64) -> pb::WatchRequest {
    pb::WatchRequest {
        request_union: Some(pb::watch_request::RequestUnion::CancelRequest(
            pb::WatchCancelRequest { watch_id: id },
        )),
    }
}

impl Side {
    fn record(&mut self, label: &str, what: String) {
        self.out.push((label.to_string(), what));
    }

    async fn range(&mut self, label: &str, r: pb::RangeRequest) -> Option<pb::RangeResponse> {
        let resp = self.kv.range(r).await;
        let keep = resp.as_ref().ok().map(|r| r.get_ref().clone());
        self.record(label, render(resp, range_str));
        keep
    }

    async fn put(&mut self, label: &str, p: pb::PutRequest) -> Option<pb::PutResponse> {
        let resp = self.kv.put(p).await;
        let keep = resp.as_ref().ok().map(|r| r.get_ref().clone());
        self.record(label, render(resp, put_str));
        keep
    }

    async fn delete(&mut self, label: &str, d: pb::DeleteRangeRequest) {
        let resp = self.kv.delete_range(d).await;
        self.record(label, render(resp, delete_str));
    }

    async fn txn(&mut self, label: &str, t: pb::TxnRequest) -> Option<pb::TxnResponse> {
        let resp = self.kv.txn(t).await;
        let keep = resp.as_ref().ok().map(|r| r.get_ref().clone());
        self.record(label, render(resp, txn_str));
        keep
    }

    async fn compact(&mut self, label: &str, revision: i64) {
        let resp = self.kv.compact(pb::CompactionRequest {
            revision,
            physical: true,
        });
        let s = render(resp.await, |r| format!("Compact {}", header(&r.header)));
        self.record(label, s);
    }

    async fn grant(&mut self, label: &str, id: i64, ttl: i64) {
        let resp = self
            .lease
            .lease_grant(pb::LeaseGrantRequest { ttl, id })
            .await;
        let s = render(resp, |r| {
            format!(
                "Grant {} id={} ttl={} error={:?}",
                header(&r.header),
                r.id,
                r.ttl,
                r.error
            )
        });
        self.record(label, s);
    }

    async fn revoke(&mut self, label: &str, id: i64) {
        let resp = self.lease.lease_revoke(pb::LeaseRevokeRequest { id }).await;
        let s = render(resp, |r| format!("Revoke {}", header(&r.header)));
        self.record(label, s);
    }

    async fn ttl(&mut self, label: &str, id: i64, keys: bool) {
        let req = pb::LeaseTimeToLiveRequest { id, keys };
        let resp = self.lease.lease_time_to_live(req).await;
        let s = render(resp, |r| {
            // etcd lists a lease's keys from a Go map: in no particular order.
            let mut keys: Vec<String> = r
                .keys
                .iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect();
            keys.sort();
            format!(
                "TimeToLive {} id={} ttl={} granted={} keys={keys:?}",
                header(&r.header),
                r.id,
                r.ttl,
                r.granted_ttl
            )
        });
        self.record(label, s);
    }

    async fn leases(&mut self, label: &str) {
        let resp = self.lease.lease_leases(pb::LeaseLeasesRequest {}).await;
        let s = render(resp, |r| {
            let ids: Vec<i64> = r.leases.iter().map(|l| l.id).collect();
            format!("Leases {} {ids:?}", header(&r.header))
        });
        self.record(label, s);
    }

    /// Open a watch stream with `first` as its first request (etcd sends the stream's
    /// headers with its first response), and record that response.
    async fn watch(&mut self, label: &str, first: pb::WatchRequest) -> WatchStream {
        self.watch_wanting(label, first, 1).await
    }

    /// [`Side::watch`], waiting for `want` responses (up to 3 s) before the 100 ms for
    /// more: a watch with history to catch up on answers twice (created, then the
    /// events), and a loaded machine can hold etcd's second answer past the 100 ms.
    async fn watch_wanting(
        &mut self,
        label: &str,
        first: pb::WatchRequest,
        want: usize,
    ) -> WatchStream {
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(first).expect("queued");
        let mut client = WatchClient::new(self.channel.clone());
        let rx = client
            .watch(UnboundedReceiverStream::new(rx))
            .await
            .unwrap_or_else(|s| panic!("{label}: watch refused: {s:?}"))
            .into_inner();
        let mut w = WatchStream { tx, rx };
        self.watch_responses(&mut w, label, want, Duration::from_secs(3))
            .await;
        w
    }

    /// Send `req` on `w`, then record the responses as [`Side::watch_responses`].
    async fn watch_send(
        &mut self,
        w: &mut WatchStream,
        label: &str,
        req: pb::WatchRequest,
        want: usize,
    ) {
        w.tx.send(req).expect("the stream is open");
        self.watch_responses(w, label, want, Duration::from_secs(3))
            .await;
    }

    /// Record the responses on `w` until `want` have come or `wait` has passed, then
    /// any more that come within 100 ms.
    async fn watch_responses(
        &mut self,
        w: &mut WatchStream,
        label: &str,
        want: usize,
        wait: Duration,
    ) -> Vec<pb::WatchResponse> {
        let mut got = Vec::new();
        let mut lines: Vec<((i64, i64), String)> = Vec::new();
        let deadline = Instant::now() + wait;
        loop {
            let now = Instant::now();
            let left = if got.len() < want {
                deadline.saturating_duration_since(now)
            } else {
                Duration::from_millis(100)
            };
            match tokio::time::timeout(left, w.rx.message()).await {
                Ok(Ok(Some(r))) => {
                    let rev = r.header.as_ref().map_or(0, |h| h.revision);
                    lines.push(((rev, r.watch_id), watch_str(&r)));
                    got.push(r);
                }
                Ok(Ok(None)) => {
                    lines.push(((i64::MAX, 0), "stream ended".into()));
                    break;
                }
                Ok(Err(s)) => {
                    lines.push(((i64::MAX, 0), status_str(&s)));
                    break;
                }
                Err(_) => break,
            }
        }
        // etcd sends the responses of one revision to a stream's watchers in the order of
        // a Go map: they are compared by revision, then watch id.
        lines.sort_by_key(|(k, _)| *k);
        let lines: Vec<String> = lines.into_iter().map(|(_, l)| l).collect();
        self.record(
            label,
            format!("{} responses: {}", got.len(), lines.join(" | ")),
        );
        got
    }

    async fn keep_alive_open(&mut self, label: &str, id: i64) -> KeepAlive {
        let (tx, rx) = mpsc::unbounded_channel();
        tx.send(pb::LeaseKeepAliveRequest { id }).expect("queued");
        let rx = self
            .lease
            .lease_keep_alive(UnboundedReceiverStream::new(rx))
            .await;
        let rx = rx
            .unwrap_or_else(|s| panic!("{label}: keep-alive refused: {s:?}"))
            .into_inner();
        let mut k = KeepAlive { tx, rx };
        self.keep_alive_answer(&mut k, label).await;
        k
    }

    async fn keep_alive(&mut self, k: &mut KeepAlive, label: &str, id: i64) {
        k.tx.send(pb::LeaseKeepAliveRequest { id })
            .expect("the stream is open");
        self.keep_alive_answer(k, label).await;
    }

    async fn keep_alive_answer(&mut self, k: &mut KeepAlive, label: &str) {
        let s = match tokio::time::timeout(Duration::from_secs(3), k.rx.message()).await {
            Ok(Ok(Some(r))) => format!("KeepAlive {} id={} ttl={}", header(&r.header), r.id, r.ttl),
            Ok(Ok(None)) => "stream ended".into(),
            Ok(Err(s)) => status_str(&s),
            Err(_) => "no answer".into(),
        };
        self.record(label, s);
    }
}

/// A range built from a number.
type RangeAt = fn(i64) -> pb::RangeRequest;

/// Puts, reads of every shape, deletes, and their errors.
async fn kv_basics(side: &mut Side) {
    side.range("empty store: get a", get("a")).await;
    side.put("put a", put("a", "1")).await;
    side.put(
        "put a prev_kv",
        pb::PutRequest {
            prev_kv: true,
            ..put("a", "2")
        },
    )
    .await;
    side.put(
        "put new key prev_kv",
        pb::PutRequest {
            prev_kv: true,
            ..put("b", "x")
        },
    )
    .await;
    side.range("get a", get("a")).await;
    side.range("get missing", get("zz")).await;
    // Keys created in an order unlike their key order, then changed unevenly.
    for (k, v) in [
        ("s/c", "a"),
        ("s/a", "zz"),
        ("s/d", "m"),
        ("s/b", "b"),
        ("s/a", "y"),
        ("s/a", "x"),
        ("s/c", "c"),
        ("s2", "out"),
    ] {
        side.put(&format!("put {k}={v}"), put(k, v)).await;
    }
    side.range("prefix s/", prefix("s/")).await;
    side.range("prefix s", prefix("s")).await;
    side.range(
        "from s/b to the end",
        pb::RangeRequest {
            key: "s/b".into(),
            range_end: vec![0],
            ..Default::default()
        },
    )
    .await;
    side.range(
        "every key",
        pb::RangeRequest {
            key: vec![0],
            range_end: vec![0],
            ..Default::default()
        },
    )
    .await;
    side.range(
        "range s/b..s/d",
        pb::RangeRequest {
            key: "s/b".into(),
            range_end: "s/d".into(),
            ..Default::default()
        },
    )
    .await;
    side.range(
        "range backwards",
        pb::RangeRequest {
            key: "s/d".into(),
            range_end: "s/b".into(),
            ..Default::default()
        },
    )
    .await;
    let targets = [
        ("key", SortTarget::Key),
        ("version", SortTarget::Version),
        ("create", SortTarget::Create),
        ("mod", SortTarget::Mod),
        ("value", SortTarget::Value),
    ];
    let orders = [
        ("none", SortOrder::None),
        ("ascend", SortOrder::Ascend),
        ("descend", SortOrder::Descend),
    ];
    for (tn, t) in targets {
        for (on, o) in orders {
            for limit in [0, 2] {
                let r = pb::RangeRequest {
                    sort_target: t as i32,
                    sort_order: o as i32,
                    limit,
                    ..prefix("s/")
                };
                side.range(&format!("sort by {tn} {on} limit {limit}"), r)
                    .await;
            }
        }
    }
    for limit in [1, 3, 4, 5, -1] {
        let r = pb::RangeRequest {
            limit,
            ..prefix("s/")
        };
        side.range(&format!("limit {limit}"), r).await;
    }
    side.range(
        "count_only",
        pb::RangeRequest {
            count_only: true,
            ..prefix("s/")
        },
    )
    .await;
    side.range(
        "count_only limit 1",
        pb::RangeRequest {
            count_only: true,
            limit: 1,
            ..prefix("s/")
        },
    )
    .await;
    side.range(
        "keys_only",
        pb::RangeRequest {
            keys_only: true,
            ..prefix("s/")
        },
    )
    .await;
    side.range(
        "keys_only count_only",
        pb::RangeRequest {
            keys_only: true,
            count_only: true,
            ..prefix("s/")
        },
    )
    .await;
    side.range(
        "serializable",
        pb::RangeRequest {
            serializable: true,
            ..prefix("s/")
        },
    )
    .await;
    for rev in 1..=13 {
        let r = pb::RangeRequest {
            revision: rev,
            ..prefix("s/")
        };
        side.range(&format!("prefix s/ at revision {rev}"), r).await;
    }
    side.range(
        "get a at revision 2",
        pb::RangeRequest {
            revision: 2,
            ..get("a")
        },
    )
    .await;
    side.range(
        "future revision",
        pb::RangeRequest {
            revision: 1000,
            ..get("a")
        },
    )
    .await;
    side.range(
        "negative revision",
        pb::RangeRequest {
            revision: -3,
            ..get("a")
        },
    )
    .await;
    for v in [0, 5, 8, 10, 20] {
        let filters: [(&str, RangeAt); 4] = [
            ("min_mod", |v| pb::RangeRequest {
                min_mod_revision: v,
                ..prefix("s/")
            }),
            ("max_mod", |v| pb::RangeRequest {
                max_mod_revision: v,
                ..prefix("s/")
            }),
            ("min_create", |v| pb::RangeRequest {
                min_create_revision: v,
                ..prefix("s/")
            }),
            ("max_create", |v| pb::RangeRequest {
                max_create_revision: v,
                ..prefix("s/")
            }),
        ];
        for (name, f) in filters {
            side.range(&format!("{name} {v}"), f(v)).await;
        }
    }
    side.range(
        "filters with limit and count",
        pb::RangeRequest {
            min_mod_revision: 6,
            limit: 1,
            ..prefix("s/")
        },
    )
    .await;
    // ignore_value / ignore_lease.
    side.put(
        "ignore_value",
        pb::PutRequest {
            ignore_value: true,
            prev_kv: true,
            ..put("a", "")
        },
    )
    .await;
    side.put(
        "ignore_value on a missing key",
        pb::PutRequest {
            ignore_value: true,
            ..put("nope", "")
        },
    )
    .await;
    side.put(
        "ignore_value with a value",
        pb::PutRequest {
            ignore_value: true,
            ..put("a", "v")
        },
    )
    .await;
    side.put(
        "ignore_lease",
        pb::PutRequest {
            ignore_lease: true,
            ..put("a", "3")
        },
    )
    .await;
    side.put(
        "ignore_lease with a lease",
        pb::PutRequest {
            ignore_lease: true,
            ..put_lease("a", "3", 7)
        },
    )
    .await;
    side.put(
        "ignore_lease on a missing key",
        pb::PutRequest {
            ignore_lease: true,
            ..put("nope", "v")
        },
    )
    .await;
    side.put("put with an unknown lease", put_lease("a", "4", 12345))
        .await;
    side.put("put an empty key", put("", "v")).await;
    side.put("put an empty value", put("e", "")).await;
    side.range("get an empty key", get("")).await;
    side.range("get a", get("a")).await;
    side.delete("delete an empty key", del("")).await;
    // Deletes.
    side.delete("delete nothing", del("nope")).await;
    side.delete(
        "delete nothing prev_kv",
        pb::DeleteRangeRequest {
            prev_kv: true,
            ..del("nope")
        },
    )
    .await;
    side.delete(
        "delete b prev_kv",
        pb::DeleteRangeRequest {
            prev_kv: true,
            ..del("b")
        },
    )
    .await;
    side.delete("delete e", del("e")).await;
    side.put("put s/e", put("s/e", "e")).await;
    side.delete(
        "delete s/b..s/d prev_kv",
        pb::DeleteRangeRequest {
            key: "s/b".into(),
            range_end: "s/d".into(),
            prev_kv: true,
        },
    )
    .await;
    side.delete(
        "delete prefix s/",
        pb::DeleteRangeRequest {
            key: "s/".into(),
            range_end: prefix_end("s/"),
            prev_kv: false,
        },
    )
    .await;
    side.range("prefix s after the deletes", prefix("s")).await;
    side.put("put s/a again", put("s/a", "new")).await;
    side.range("s/a recreated", get("s/a")).await;
    side.range(
        "s/a before its deletion",
        pb::RangeRequest {
            revision: 20,
            ..get("s/a")
        },
    )
    .await;
}

/// Compares on every target with every result, nested txns, and the txn errors.
async fn txns(side: &mut Side) {
    use CompareResult::{Equal, Greater, Less, NotEqual};
    side.put("txn: put t/k", put("t/k", "m")).await;
    side.put("txn: put t/k again", put("t/k", "m")).await;
    side.put("txn: put t/l", put("t/l", "z")).await;
    let then_else = |compare: Vec<pb::Compare>| pb::TxnRequest {
        compare,
        success: vec![op_get(get("t/k"))],
        failure: vec![op_get(get("t/l"))],
    };
    let results = [("=", Equal), ("!=", NotEqual), ("<", Less), (">", Greater)];
    for key in ["t/k", "t/missing"] {
        for (rn, r) in results {
            let targets = [
                ("version 2", CompareTarget::Version, TargetUnion::Version(2)),
                ("version 0", CompareTarget::Version, TargetUnion::Version(0)),
                (
                    "create 0",
                    CompareTarget::Create,
                    TargetUnion::CreateRevision(0),
                ),
                (
                    "create 30",
                    CompareTarget::Create,
                    TargetUnion::CreateRevision(30),
                ),
                ("mod 31", CompareTarget::Mod, TargetUnion::ModRevision(31)),
                (
                    "value m",
                    CompareTarget::Value,
                    TargetUnion::Value(b"m".to_vec()),
                ),
                (
                    "value empty",
                    CompareTarget::Value,
                    TargetUnion::Value(Vec::new()),
                ),
                ("lease 0", CompareTarget::Lease, TargetUnion::Lease(0)),
            ];
            for (tn, t, u) in targets {
                let c = cmp(key, r, t, u);
                side.txn(&format!("txn: {key} {tn} {rn}"), then_else(vec![c]))
                    .await;
            }
        }
    }
    // A compare over a range: all keys must match.
    for (name, end) in [("t/ prefix", prefix_end("t/")), ("from t/", vec![0])] {
        for v in [0, 1, 2] {
            let c = pb::Compare {
                range_end: end.clone(),
                ..cmp(
                    "t/",
                    Greater,
                    CompareTarget::Version,
                    TargetUnion::Version(v),
                )
            };
            side.txn(&format!("txn: {name} version > {v}"), then_else(vec![c]))
                .await;
        }
    }
    let two = vec![
        cmp(
            "t/k",
            Equal,
            CompareTarget::Version,
            TargetUnion::Version(2),
        ),
        cmp(
            "t/l",
            Equal,
            CompareTarget::Value,
            TargetUnion::Value(b"y".to_vec()),
        ),
    ];
    side.txn("txn: two compares, one false", then_else(two))
        .await;
    side.txn(
        "txn: no compares",
        pb::TxnRequest {
            compare: vec![],
            success: vec![
                op_put(pb::PutRequest {
                    prev_kv: true,
                    ..put("t/k", "n")
                }),
                op_get(prefix("t/")),
                op_del(pb::DeleteRangeRequest {
                    prev_kv: true,
                    ..del("t/l")
                }),
                op_get(prefix("t/")),
            ],
            failure: vec![],
        },
    )
    .await;
    side.txn("txn: empty", pb::TxnRequest::default()).await;
    let nested = pb::TxnRequest {
        compare: vec![cmp(
            "t/k",
            Equal,
            CompareTarget::Value,
            TargetUnion::Value(b"n".to_vec()),
        )],
        success: vec![
            op_put(put("t/a", "1")),
            op_txn(pb::TxnRequest {
                compare: vec![cmp(
                    "t/a",
                    Equal,
                    CompareTarget::Version,
                    TargetUnion::Version(1),
                )],
                success: vec![op_put(put("t/b", "2")), op_get(prefix("t/"))],
                failure: vec![op_put(put("t/c", "3"))],
            }),
            op_txn(pb::TxnRequest {
                compare: vec![cmp(
                    "t/zz",
                    Greater,
                    CompareTarget::Version,
                    TargetUnion::Version(0),
                )],
                success: vec![],
                failure: vec![op_txn(pb::TxnRequest {
                    compare: vec![],
                    success: vec![op_put(put("t/d", "4")), op_get(get("t/d"))],
                    failure: vec![],
                })],
            }),
        ],
        failure: vec![op_get(get("t/k"))],
    };
    side.txn("txn: nested", nested.clone()).await;
    side.txn("txn: nested, now failing", nested).await;
    // Duplicate keys.
    let dup = |success: Vec<pb::RequestOp>| pb::TxnRequest {
        compare: vec![],
        success,
        failure: vec![],
    };
    side.txn(
        "txn: put twice",
        dup(vec![op_put(put("t/x", "1")), op_put(put("t/x", "2"))]),
    )
    .await;
    side.txn(
        "txn: put and delete",
        dup(vec![op_put(put("t/x", "1")), op_del(del("t/x"))]),
    )
    .await;
    side.txn(
        "txn: delete a range and put in it",
        dup(vec![op_del(prefix_del("t/")), op_put(put("t/x", "1"))]),
    )
    .await;
    side.txn(
        "txn: delete twice",
        dup(vec![op_del(del("t/x")), op_del(del("t/x"))]),
    )
    .await;
    side.txn(
        "txn: get and put",
        dup(vec![op_get(get("t/x")), op_put(put("t/x", "1"))]),
    )
    .await;
    side.txn(
        "txn: put twice in the failure branch",
        pb::TxnRequest {
            compare: vec![],
            success: vec![],
            failure: vec![op_put(put("t/x", "1")), op_put(put("t/x", "2"))],
        },
    )
    .await;
    let inner = |s: Vec<pb::RequestOp>, f: Vec<pb::RequestOp>| {
        op_txn(pb::TxnRequest {
            compare: vec![],
            success: s,
            failure: f,
        })
    };
    side.txn(
        "txn: nested put of an outer put",
        dup(vec![
            op_put(put("t/x", "1")),
            inner(vec![op_put(put("t/x", "2"))], vec![]),
        ]),
    )
    .await;
    side.txn(
        "txn: nested else put of an outer put",
        dup(vec![
            op_put(put("t/x", "1")),
            inner(vec![], vec![op_put(put("t/x", "2"))]),
        ]),
    )
    .await;
    side.txn(
        "txn: nested put in both branches",
        dup(vec![inner(
            vec![op_put(put("t/x", "1"))],
            vec![op_put(put("t/x", "2"))],
        )]),
    )
    .await;
    side.txn(
        "txn: two nested txns put one key",
        dup(vec![
            inner(vec![op_put(put("t/y", "1"))], vec![]),
            inner(vec![op_put(put("t/y", "2"))], vec![]),
        ]),
    )
    .await;
    side.txn(
        "txn: nested delete of an outer put",
        dup(vec![
            op_put(put("t/y", "1")),
            inner(vec![op_del(del("t/y"))], vec![]),
        ]),
    )
    .await;
    side.txn("txn: empty op", dup(vec![pb::RequestOp { request: None }]))
        .await;
    side.txn("txn: an empty key", dup(vec![op_put(put("", "1"))]))
        .await;
    side.txn(
        "txn: ignore_value with a value",
        dup(vec![op_put(pb::PutRequest {
            ignore_value: true,
            ..put("t/a", "1")
        })]),
    )
    .await;
    side.txn(
        "txn: put with an unknown lease",
        dup(vec![op_put(put_lease("t/a", "1", 999))]),
    )
    .await;
    side.txn(
        "txn: ignore_value on a missing key",
        dup(vec![op_put(pb::PutRequest {
            ignore_value: true,
            ..put("t/none", "")
        })]),
    )
    .await;
    side.txn(
        "txn: a future revision read",
        dup(vec![op_get(pb::RangeRequest {
            revision: 1000,
            ..get("t/a")
        })]),
    )
    .await;
    let many = |n: usize| {
        (0..n)
            .map(|i| op_put(put(&format!("t/m{i:03}"), "v")))
            .collect()
    };
    side.txn("txn: 128 puts", dup(many(128))).await;
    side.txn("txn: 129 puts", dup(many(129))).await;
    let compares = |n: usize| pb::TxnRequest {
        compare: (0..n)
            .map(|_| {
                cmp(
                    "t/a",
                    Greater,
                    CompareTarget::Version,
                    TargetUnion::Version(0),
                )
            })
            .collect(),
        success: vec![],
        failure: vec![],
    };
    side.txn("txn: 128 compares", compares(128)).await;
    side.txn("txn: 129 compares", compares(129)).await;
    side.txn(
        "txn: 129 gets in the failure branch",
        pb::TxnRequest {
            compare: vec![],
            success: vec![],
            failure: (0..129).map(|_| op_get(get("t/a"))).collect(),
        },
    )
    .await;
    side.range(
        "txn: count t/",
        pb::RangeRequest {
            count_only: true,
            ..prefix("t/")
        },
    )
    .await;
    side.delete("txn: delete t/", prefix_del("t/")).await;
}

fn prefix_del(p: &str) -> pb::DeleteRangeRequest {
    pb::DeleteRangeRequest {
        key: p.into(),
        range_end: prefix_end(p),
        prev_kv: false,
    }
}

/// Lease ids chosen by the test, so that both sides' are the same.
const LEASE_BASE: i64 = 0x7000;

/// Grants, revokes, keep-alives, time-to-live, the lease list and their errors.
async fn leases(side: &mut Side) {
    let a = LEASE_BASE + 1;
    let b = LEASE_BASE + 2;
    side.leases("leases: none").await;
    side.grant("grant a ttl 60", a, 60).await;
    side.ttl("ttl of a", a, true).await;
    side.grant("grant a again", a, 30).await;
    side.grant("grant b ttl 30", b, 30).await;
    for (n, ttl) in [(3, 1), (4, 0), (5, -5), (6, 2), (7, 3)] {
        side.grant(&format!("grant ttl {ttl}"), LEASE_BASE + n, ttl)
            .await;
    }
    side.grant("grant too large a ttl", LEASE_BASE + 8, 9_000_000_001)
        .await;
    side.grant("grant the largest ttl", LEASE_BASE + 8, 9_000_000_000)
        .await;
    side.grant("grant a negative id", -5, 10).await;
    side.revoke("revoke the negative id", -5).await;
    side.leases("leases: after grants").await;
    side.put("put l/1 under a", put_lease("l/1", "1", a)).await;
    side.put("put l/2 under a", put_lease("l/2", "2", a)).await;
    side.put("put l/3 under b", put_lease("l/3", "3", b)).await;
    side.put(
        "move l/2 to b",
        pb::PutRequest {
            prev_kv: true,
            ..put_lease("l/2", "2", b)
        },
    )
    .await;
    side.put(
        "put l/1 again ignore_lease",
        pb::PutRequest {
            ignore_lease: true,
            ..put("l/1", "1b")
        },
    )
    .await;
    side.range("l/ with leases", prefix("l/")).await;
    side.ttl("ttl of a with keys", a, true).await;
    side.ttl("ttl of b with keys", b, true).await;
    side.ttl("ttl of b without keys", b, false).await;
    side.ttl("ttl of an unknown lease", 4242, true).await;
    side.ttl("ttl of lease 0", 0, false).await;
    let mut k = side.keep_alive_open("keep-alive a", a).await;
    side.keep_alive(&mut k, "keep-alive b", b).await;
    side.keep_alive(&mut k, "keep-alive unknown", 4242).await;
    side.keep_alive(&mut k, "keep-alive a again", a).await;
    side.ttl("ttl of a after keep-alive", a, false).await;
    side.revoke("revoke b", b).await;
    side.range("l/ after revoking b", prefix("l/")).await;
    side.keep_alive(&mut k, "keep-alive revoked b", b).await;
    side.ttl("ttl of revoked b", b, true).await;
    side.revoke("revoke b again", b).await;
    side.revoke("revoke unknown", 4242).await;
    side.revoke("revoke lease 0", 0).await;
    side.put("put under revoked b", put_lease("l/4", "4", b))
        .await;
    side.revoke("revoke a keyless lease", LEASE_BASE + 7).await;
    side.leases("leases: after revokes").await;
    for n in [3, 4, 5, 6, 8] {
        side.revoke(&format!("revoke lease {n}"), LEASE_BASE + n)
            .await;
    }
    side.revoke("revoke a", a).await;
    side.leases("leases: all revoked").await;
    side.range("l/ after revoking a", prefix("l/")).await;
    drop(k);
}

/// Watches: history replay, prefixes, filters, prev_kv, cancels, ids and errors.
async fn watches(side: &mut Side) {
    let base = side
        .put("watch: put w/a", put("w/a", "1"))
        .await
        .and_then(|r| r.header)
        .map_or(0, |h| h.revision);
    side.put("watch: put w/b", put("w/b", "1")).await;
    side.put("watch: put w/a again", put("w/a", "2")).await;
    side.delete("watch: delete w/b", del("w/b")).await;
    let mut w = side
        .watch_wanting(
            "watch w/a from its first revision",
            watch_create(b"w/a", b"", base),
            2,
        )
        .await;
    side.watch_send(
        &mut w,
        "watch w/ prefix from the start",
        watch_create(b"w/", &prefix_end("w/"), base),
        2,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch w/ prefix from now",
        watch_create(b"w/", &prefix_end("w/"), 0),
        1,
    )
    .await;
    let filtered = pb::WatchCreateRequest {
        key: b"w/".to_vec(),
        range_end: prefix_end("w/"),
        start_revision: base,
        prev_kv: true,
        filters: vec![pb::watch_create_request::FilterType::Noput as i32],
        ..Default::default()
    };
    side.watch_send(
        &mut w,
        "watch w/ deletes with prev_kv",
        watch_create_with(filtered),
        2,
    )
    .await;
    let no_delete = pb::WatchCreateRequest {
        key: b"w/".to_vec(),
        range_end: prefix_end("w/"),
        prev_kv: true,
        filters: vec![pb::watch_create_request::FilterType::Nodelete as i32],
        ..Default::default()
    };
    side.watch_send(
        &mut w,
        "watch w/ puts with prev_kv",
        watch_create_with(no_delete),
        1,
    )
    .await;
    side.put("watch: put w/c", put("w/c", "1")).await;
    side.watch_responses(&mut w, "events of w/c", 3, Duration::from_secs(3))
        .await;
    side.put("watch: put w/a a third time", put("w/a", "3"))
        .await;
    side.watch_responses(&mut w, "events of w/a", 5, Duration::from_secs(3))
        .await;
    side.delete("watch: delete w/ prefix", prefix_del("w/"))
        .await;
    side.watch_responses(&mut w, "events of the delete", 4, Duration::from_secs(3))
        .await;
    side.txn(
        "watch: a txn of two puts",
        pb::TxnRequest {
            compare: vec![],
            success: vec![op_put(put("w/x", "1")), op_put(put("w/y", "1"))],
            failure: vec![],
        },
    )
    .await;
    side.watch_responses(&mut w, "events of the txn", 3, Duration::from_secs(3))
        .await;
    side.watch_send(&mut w, "cancel watch 1", watch_cancel(1), 1)
        .await;
    side.watch_send(&mut w, "cancel watch 1 again", watch_cancel(1), 0)
        .await;
    side.watch_send(&mut w, "cancel an unknown watch", watch_cancel(77), 0)
        .await;
    side.put("watch: put w/x after the cancel", put("w/x", "2"))
        .await;
    side.watch_responses(&mut w, "events after the cancel", 2, Duration::from_secs(3))
        .await;
    let with_id = |id: i64| pb::WatchCreateRequest {
        key: b"w/z".to_vec(),
        watch_id: id,
        ..Default::default()
    };
    side.watch_send(
        &mut w,
        "watch with a chosen id",
        watch_create_with(with_id(100)),
        1,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch with a duplicate id",
        watch_create_with(with_id(100)),
        1,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch with the next id",
        watch_create(b"w/z", b"", 0),
        1,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch an empty range",
        watch_create(b"w/z", b"w/a", 0),
        1,
    )
    .await;
    side.watch_send(
        &mut w,
        "watch from a future revision",
        watch_create(b"w/z", b"", 1000),
        1,
    )
    .await;
    side.put("watch: put w/z", put("w/z", "1")).await;
    side.watch_responses(&mut w, "events of w/z", 4, Duration::from_secs(3))
        .await;
    // The Mutex's waitDeletes on a key that is already gone: its delete is replayed.
    let rev = side
        .put("watch: put w/gone", put("w/gone", "1"))
        .await
        .and_then(|r| r.header)
        .map_or(0, |h| h.revision);
    side.delete("watch: delete w/gone", del("w/gone")).await;
    side.watch_send(
        &mut w,
        "watch w/gone from before its delete",
        watch_create(b"w/gone", b"", rev),
        2,
    )
    .await;
    drop(w);
    side.delete("watch: clean up", prefix_del("w/")).await;
}

/// Compaction: reads, txns and watches before it, compacting again, and a future one.
async fn compaction(side: &mut Side) {
    let before = side
        .put("compact: put c/a", put("c/a", "1"))
        .await
        .and_then(|r| r.header)
        .map_or(0, |h| h.revision);
    side.put("compact: put c/a again", put("c/a", "2")).await;
    let at = side
        .put("compact: put c/b", put("c/b", "1"))
        .await
        .and_then(|r| r.header)
        .map_or(0, |h| h.revision);
    side.compact("compact at c/b's revision", at).await;
    side.range(
        "read before the compaction",
        pb::RangeRequest {
            revision: before,
            ..prefix("c/")
        },
    )
    .await;
    side.range(
        "read at the compaction",
        pb::RangeRequest {
            revision: at,
            ..prefix("c/")
        },
    )
    .await;
    side.range("read now", prefix("c/")).await;
    side.txn(
        "txn reading before the compaction",
        pb::TxnRequest {
            compare: vec![],
            success: vec![op_get(pb::RangeRequest {
                revision: before,
                ..prefix("c/")
            })],
            failure: vec![],
        },
    )
    .await;
    side.compact("compact there again", at).await;
    side.compact("compact before", before).await;
    side.compact("compact in the future", at + 100).await;
    let mut w = side
        .watch(
            "watch from before the compaction",
            watch_create(b"c/", &prefix_end("c/"), before),
        )
        .await;
    side.watch_responses(&mut w, "its cancel", 1, Duration::from_secs(3))
        .await;
    side.watch_send(
        &mut w,
        "watch from the compaction",
        watch_create(b"c/", &prefix_end("c/"), at),
        2,
    )
    .await;
    drop(w);
    side.delete("compact: clean up", prefix_del("c/")).await;
}

/// etcd's `concurrency.Mutex` (client/v3/concurrency/mutex.go, 3.4) by three sessions,
/// round after round: the acquiring txn, the re-entrant txn of a holder, `waitDeletes`
/// (the last key created before one's own, then a watch for its delete), the release.
async fn mutex(side: &mut Side, rounds: usize) {
    const PFX: &str = "/lock/m/";
    let sessions: Vec<i64> = (0..3).map(|i| LEASE_BASE + 0x100 + i).collect();
    for (i, &l) in sessions.iter().enumerate() {
        side.grant(&format!("mutex: session {i}"), l, 60).await;
    }
    let mut streams = Vec::new();
    for i in 0..3 {
        // A watch on nothing, to open each session's stream.
        let w = side
            .watch(
                &format!("mutex: open stream {i}"),
                watch_create(b"/nothing", b"", 0),
            )
            .await;
        streams.push(w);
    }
    let mut next_watch = [1i64; 3];
    for round in 0..rounds {
        let mut mine = Vec::new();
        for (i, &l) in sessions.iter().enumerate() {
            let my_key = format!("{PFX}{l:x}");
            let t = pb::TxnRequest {
                compare: vec![cmp(
                    &my_key,
                    CompareResult::Equal,
                    CompareTarget::Create,
                    TargetUnion::CreateRevision(0),
                )],
                success: vec![op_put(put_lease(&my_key, "", l)), op_get(first_create(PFX))],
                failure: vec![op_get(get(&my_key)), op_get(first_create(PFX))],
            };
            let r = side
                .txn(&format!("round {round}: lock txn {i}"), t.clone())
                .await
                .unwrap_or_else(|| panic!("round {round}: lock txn {i} failed"));
            let my_rev = r.header.map_or(0, |h| h.revision);
            mine.push((my_key, my_rev, t));
        }
        // The holder locks again: the failure branch reads its own key.
        let again = mine[0].2.clone();
        side.txn(&format!("round {round}: relock 0"), again).await;
        // Waiters look for the last key created before theirs and watch for its delete.
        for i in 1..3 {
            let r = side
                .range(
                    &format!("round {round}: waitDeletes {i}"),
                    last_create_before(PFX, mine[i].1 - 1),
                )
                .await;
            let r = r.unwrap_or_else(|| panic!("round {round}: waitDeletes {i} failed"));
            let key = r.kvs.first().map(|k| k.key.clone()).unwrap_or_default();
            let rev = r.header.map_or(0, |h| h.revision);
            let req = pb::WatchCreateRequest {
                key,
                start_revision: rev,
                ..Default::default()
            };
            side.watch_send(
                &mut streams[i],
                &format!("round {round}: watch predecessor {i}"),
                watch_create_with(req),
                1,
            )
            .await;
        }
        for i in 0..3 {
            side.delete(&format!("round {round}: unlock {i}"), del(&mine[i].0))
                .await;
            if i + 1 < 3 {
                let n = i + 1;
                let w = &mut streams[n];
                side.watch_responses(
                    w,
                    &format!("round {round}: {n} sees the delete"),
                    1,
                    Duration::from_secs(3),
                )
                .await;
                let id = next_watch[n];
                next_watch[n] += 1;
                side.watch_send(
                    w,
                    &format!("round {round}: {n} cancels"),
                    watch_cancel(id),
                    1,
                )
                .await;
                side.range(
                    &format!("round {round}: waitDeletes {n} again"),
                    last_create_before(PFX, mine[n].1 - 1),
                )
                .await;
            }
        }
    }
    side.range("mutex: nothing left", prefix(PFX)).await;
    for (i, &l) in sessions.iter().enumerate() {
        side.revoke(&format!("mutex: close session {i}"), l).await;
    }
}

/// Leases that expire: their keys go, as DELETE events, and the leases with them. A TTL
/// below the minimum is raised to it.
async fn expiry(side: &mut Side) {
    let short = LEASE_BASE + 0x200;
    let raised = LEASE_BASE + 0x201;
    let kept = LEASE_BASE + 0x202;
    side.grant("expiry: grant ttl 2", short, 2).await;
    side.put("expiry: x/1 under it", put_lease("x/1", "1", short))
        .await;
    side.grant("expiry: grant ttl 1 (raised)", raised, 1).await;
    side.put("expiry: x/2 under it", put_lease("x/2", "2", raised))
        .await;
    side.grant("expiry: grant ttl 3, kept alive", kept, 3).await;
    side.put("expiry: x/3 under it", put_lease("x/3", "3", kept))
        .await;
    let req = pb::WatchCreateRequest {
        key: b"x/".to_vec(),
        range_end: prefix_end("x/"),
        prev_kv: true,
        ..Default::default()
    };
    let mut w = side.watch("expiry: watch x/", watch_create_with(req)).await;
    let mut k = side.keep_alive_open("expiry: keep-alive", kept).await;
    let started = Instant::now();
    let mut events: Vec<mvccpb::Event> = Vec::new();
    while started.elapsed() < Duration::from_millis(4500) {
        let r = tokio::time::timeout(Duration::from_millis(500), w.rx.message()).await;
        if let Ok(Ok(Some(r))) = r {
            events.extend(r.events);
        }
        k.tx.send(pb::LeaseKeepAliveRequest { id: kept })
            .expect("open");
        let _ = tokio::time::timeout(Duration::from_secs(1), k.rx.message()).await;
        if events.len() >= 2 {
            break;
        }
    }
    // The two revocations come in either order (etcd revokes the leases that expired
    // together in goroutines of their own): the events are compared by key, their
    // revisions as a set.
    let mut revs: Vec<i64> = events
        .iter_mut()
        .map(|e| {
            let kv = e.kv.get_or_insert_with(Default::default);
            std::mem::take(&mut kv.mod_revision)
        })
        .collect();
    revs.sort();
    let mut events: Vec<String> = events.iter().map(event_str).collect();
    events.sort();
    side.record("expiry: the deletes", format!("{events:?} at {revs:?}"));
    side.watch_responses(&mut w, "expiry: nothing more", 0, Duration::ZERO)
        .await;
    side.range("expiry: x/ after", prefix("x/")).await;
    side.ttl("expiry: ttl of the expired lease", short, true)
        .await;
    side.ttl("expiry: ttl of the raised lease", raised, true)
        .await;
    side.keep_alive(&mut k, "expiry: keep-alive of an expired lease", short)
        .await;
    side.put(
        "expiry: put under an expired lease",
        put_lease("x/4", "4", short),
    )
    .await;
    side.leases("expiry: leases").await;
    side.revoke("expiry: revoke the kept one", kept).await;
    side.watch_responses(&mut w, "expiry: its delete", 1, Duration::from_secs(3))
        .await;
}

/// Methods and services the server does not have, and the cluster's member list.
async fn misc(side: &mut Side) {
    let mut grpc = tonic::client::Grpc::new(side.channel.clone());
    for path in ["/etcdserverpb.KV/Nope", "/etcdserverpb.Nope/Range", "/nope"] {
        let codec = tonic_prost::ProstCodec::<pb::RangeRequest, pb::RangeResponse>::default();
        let s = match grpc.ready().await {
            Ok(()) => {
                let req = tonic::Request::new(get("a"));
                let path = http::uri::PathAndQuery::from_static(path);
                render(grpc.unary(req, path, codec).await, range_str)
            }
            Err(e) => format!("not ready: {e}"),
        };
        side.record(&format!("unknown method {path}"), s);
    }
    side.range("after unknown methods", get("a")).await;
    let mut cluster = ClusterClient::new(side.channel.clone());
    let r = cluster.member_list(pb::MemberListRequest::default()).await;
    let s = render(r, |r| {
        let learners: Vec<bool> = r.members.iter().map(|m| m.is_learner).collect();
        format!(
            "Members {} {} learners={learners:?}",
            header(&r.header),
            r.members.len()
        )
    });
    side.record("member list", s);
}

/// Keys and values that are not UTF-8 (python-etcd3's lock value is a binary uuid):
/// stored, read, ranged by a prefix ending in 0xff, compared and deleted byte for byte.
async fn binary(side: &mut Side) {
    let uuid: Vec<u8> = vec![0x9f, 0x00, 0xc3, 0x28, 0xff, 0x80, 0x11, 0xee];
    let keys: [&[u8]; 4] = [
        b"bin/\xff",
        b"bin/\xff\x00",
        b"bin/\xfe\xff",
        b"bin/\xc3\xa9",
    ];
    for (i, key) in keys.iter().enumerate() {
        let p = pb::PutRequest {
            key: key.to_vec(),
            value: uuid.clone(),
            prev_kv: true,
            ..Default::default()
        };
        side.put(&format!("binary put {i}"), p).await;
    }
    let one = pb::RangeRequest {
        key: keys[0].to_vec(),
        ..Default::default()
    };
    side.range("binary get", one).await;
    for (label, pfx) in [
        ("bin/", &b"bin/"[..]),
        ("bin/\\xff", b"bin/\xff"),
        ("bin/\\xfe\\xff", b"bin/\xfe\xff"),
    ] {
        let mut end = pfx.to_vec();
        while end.last() == Some(&0xff) {
            end.pop();
        }
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let r = pb::RangeRequest {
            key: pfx.to_vec(),
            range_end: end,
            ..Default::default()
        };
        side.range(&format!("binary prefix {label}"), r).await;
    }
    let by_value = pb::RangeRequest {
        key: b"bin/".to_vec(),
        range_end: b"bin0".to_vec(),
        sort_order: SortOrder::Descend as i32,
        sort_target: SortTarget::Key as i32,
        ..Default::default()
    };
    side.range("binary keys descending", by_value).await;
    for (label, value) in [("same", uuid.clone()), ("other", vec![0x9f, 0x00])] {
        let c = pb::Compare {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Value as i32,
            key: keys[1].to_vec(),
            target_union: Some(TargetUnion::Value(value)),
            ..Default::default()
        };
        let t = pb::TxnRequest {
            compare: vec![c],
            success: vec![op_del(pb::DeleteRangeRequest {
                key: keys[1].to_vec(),
                prev_kv: true,
                ..Default::default()
            })],
            failure: vec![],
        };
        side.txn(&format!("binary compare value {label}"), t).await;
    }
    let rest = pb::DeleteRangeRequest {
        key: b"bin/".to_vec(),
        range_end: b"bin0".to_vec(),
        prev_kv: true,
    };
    side.delete("binary delete the rest", rest).await;
}

/// Odds and ends: server-chosen lease ids, progress requests, a watch to the end of the
/// keyspace, `keys_only` with a value sort, more malformed requests, `Status`.
async fn extras(side: &mut Side) {
    let resp = side
        .lease
        .lease_grant(pb::LeaseGrantRequest { ttl: 30, id: 0 })
        .await;
    let chosen = resp.as_ref().map_or(0, |r| r.get_ref().id);
    let s = render(resp, |r| {
        format!(
            "Grant {} id chosen={} ttl={} error={:?}",
            header(&r.header),
            r.id > 0,
            r.ttl,
            r.error
        )
    });
    side.record("extras: grant with a server-chosen id", s);
    side.put("extras: put under it", put_lease("y/a", "1", chosen))
        .await;
    let t = pb::TxnRequest {
        compare: vec![cmp(
            "y/a",
            CompareResult::Equal,
            CompareTarget::Lease,
            TargetUnion::Lease(chosen),
        )],
        success: vec![op_put(pb::PutRequest {
            prev_kv: true,
            ignore_lease: true,
            ..put("y/a", "2")
        })],
        failure: vec![],
    };
    let r = side.kv.txn(t).await;
    let s = render(r, |r| txn_str(r).replace(&chosen.to_string(), "<chosen>"));
    side.record("extras: compare the lease, keep it", s);
    side.revoke("extras: revoke it", chosen).await;
    side.range("extras: y/ after", prefix("y/")).await;
    for (k, v) in [("y/b", "3"), ("y/c", "1"), ("y/d", "2")] {
        side.put(&format!("extras: put {k}"), put(k, v)).await;
    }
    for (on, o) in [
        ("ascend", SortOrder::Ascend),
        ("descend", SortOrder::Descend),
    ] {
        let r = pb::RangeRequest {
            keys_only: true,
            sort_target: SortTarget::Value as i32,
            sort_order: o as i32,
            ..prefix("y/")
        };
        side.range(&format!("extras: keys_only by value {on}"), r)
            .await;
    }
    side.range(
        "extras: an empty key with a range end",
        pb::RangeRequest {
            key: Vec::new(),
            range_end: b"z".to_vec(),
            ..Default::default()
        },
    )
    .await;
    side.txn(
        "extras: a compare of an empty key",
        pb::TxnRequest {
            compare: vec![cmp(
                "",
                CompareResult::Equal,
                CompareTarget::Version,
                TargetUnion::Version(0),
            )],
            success: vec![],
            failure: vec![],
        },
    )
    .await;
    let mut w = side
        .watch(
            "extras: watch y/c to the end",
            watch_create(b"y/c", &[0], 0),
        )
        .await;
    let progress = pb::WatchRequest {
        request_union: Some(pb::watch_request::RequestUnion::ProgressRequest(
            pb::WatchProgressRequest {},
        )),
    };
    side.watch_send(&mut w, "extras: progress", progress, 1)
        .await;
    side.delete(
        "extras: delete from y/b to the end",
        pb::DeleteRangeRequest {
            key: b"y/b".to_vec(),
            range_end: vec![0],
            prev_kv: true,
        },
    )
    .await;
    side.watch_responses(&mut w, "extras: its events", 1, Duration::from_secs(3))
        .await;
    drop(w);
    let mut k = side.keep_alive_open("extras: keep-alive lease 0", 0).await;
    side.keep_alive(&mut k, "extras: keep-alive a negative id", -7)
        .await;
    drop(k);
    let mut m = pb::maintenance_client::MaintenanceClient::new(side.channel.clone());
    let r = m.status(pb::StatusRequest {}).await;
    let s = render(r, |r| {
        let me = r.header.as_ref().map_or(0, |h| h.member_id);
        format!(
            "Status {} version={} leader is self={} learner={} errors={:?}",
            header(&r.header),
            r.version,
            r.leader == me,
            r.is_learner,
            r.errors
        )
    });
    side.record("extras: status", s);
}

async fn transcript(port: u16) -> Transcript {
    let mut ports = BTreeMap::new();
    ports.insert(SERVER.to_string(), port);
    let net = Rc::new(LiveNet::new(ports));
    let ctx = NodeCtx::new(Rc::new(NodeState::new("client", 0)), Recorder::new()).with_live(net);
    let deadlines = Deadlines {
        connect: Duration::from_secs(5),
        call: Duration::from_secs(5),
    };
    let channel = GrpcChannel::with_deadlines(ctx, SERVER, 2379, deadlines);
    let mut side = Side {
        kv: KvClient::new(channel.clone()),
        lease: LeaseClient::new(channel.clone()),
        channel,
        out: Vec::new(),
    };
    // Ready once a read is answered (the model elects itself after it listens).
    let deadline = Instant::now() + Duration::from_secs(15);
    let term = loop {
        match side.kv.range(get("a")).await {
            Ok(r) => break r.into_inner().header.map_or(0, |h| h.raft_term),
            Err(s) if Instant::now() < deadline => {
                let _ = s;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(s) => panic!("no answer on port {port} within 15 s: {s:?}"),
        }
    };
    TERM_BASE.with(|t| t.set(term));
    kv_basics(&mut side).await;
    txns(&mut side).await;
    leases(&mut side).await;
    watches(&mut side).await;
    compaction(&mut side).await;
    mutex(&mut side, 10).await;
    misc(&mut side).await;
    extras(&mut side).await;
    binary(&mut side).await;
    expiry(&mut side).await;
    side.out
}

/// One side's transcript, in a thread of its own (a current-thread runtime and a
/// `LocalSet`, as a node runs).
fn run_side(port: u16) -> std::thread::JoinHandle<Transcript> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, transcript(port))
    })
}

/// Steps whose mismatch is a deliberate difference of the model, with the reason.
const DELIBERATE: &[(&str, &str)] = &[
    (
        "grant a negative id",
        "etcd grants a negative lease id like any other; the model's lease ids are \
         unsigned and their top bit marks its own lock-delay leases (src/locks/raft/\
         lock_delay.rs), so it refuses a negative one with InvalidArgument rather than \
         grant a lease that would pass for a lock-delay lease",
    ),
    (
        "revoke the negative id",
        "follows from the refused grant: there is no such lease in the model (NotFound)",
    ),
];

#[test]
fn the_model_answers_as_etcd_does() {
    let started = Instant::now();
    let model = served::serve(ServeFamily::Raft, 1, u64::from(real_etcd::HEARTBEAT_MS));
    let real = real_etcd::start_real_etcd();
    let theirs = run_side(real.client_port);
    let ours = run_side(model.port());
    let theirs = theirs.join().expect("the etcd side runs");
    let ours = ours.join().expect("the model side runs");
    let mut mismatches = Vec::new();
    let mut deliberate = Vec::new();
    for ((label, want), (label2, got)) in theirs.iter().zip(&ours) {
        if label != label2 {
            mismatches.push(format!(
                "the transcripts went different ways: {label} / {label2}"
            ));
            break;
        }
        if want == got {
            continue;
        }
        let line = format!("{label}:\n    etcd:  {want}\n    model: {got}");
        match DELIBERATE.iter().find(|(l, _)| l == label) {
            Some((_, why)) => deliberate.push(format!("{line}\n    why: {why}")),
            None => mismatches.push(line),
        }
    }
    println!(
        "compared {} replies and watch responses with etcd 3.4 in {:.1?}; {} deliberate differences:",
        theirs.len(),
        started.elapsed(),
        deliberate.len()
    );
    for d in &deliberate {
        println!("{d}");
    }
    if std::env::var_os("ETCD_FIDELITY_DUMP").is_some() {
        for (label, want) in &theirs {
            println!("{label}: {want}");
        }
    }
    assert!(theirs.len() >= 300, "only {} compared", theirs.len());
    if theirs.len() != ours.len() {
        mismatches.push(format!(
            "the transcripts differ in length: etcd {}, model {}",
            theirs.len(),
            ours.len()
        ));
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} replies differ from etcd's:\n{}",
        mismatches.len(),
        theirs.len(),
        mismatches.join("\n")
    );
}
