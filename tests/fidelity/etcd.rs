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
//!
//! Each section (KV, txns, leases, watches, compaction, the Mutex recipe, unknown
//! methods, extras, binary keys, lease expiry, the Lock service) is a test of its own:
//! `the_model_answers_as_etcd_does::kv`, ... They share one etcd member and one model,
//! and run once each, in this order, on both at once (each section starts from the
//! revisions, keys and leases the earlier ones left, as one transcript did).

mod kv;
mod leases;
mod lock;

use crate::support::in_order::{panic_message, InOrder};
use crate::support::kept::keep_until_exit;
use crate::support::{real_etcd, served};

use locksim::history::Recorder;
use locksim::testing::etcd::etcdserverpb as pb;
use locksim::testing::etcd::mvccpb;
use locksim::testing::ServeFamily;
use locksim::testing::{Deadlines, GrpcChannel, LiveNet};
use locksim::testing::{NodeCtx, NodeState};
use pb::cluster_client::ClusterClient;
use pb::compare::{CompareResult, CompareTarget, TargetUnion};
use pb::kv_client::KvClient;
use pb::lease_client::LeaseClient;
use pb::range_request::{SortOrder, SortTarget};
use pb::request_op::Request as Op;
use pb::response_op::Response as OpResp;
use pb::watch_client::WatchClient;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Mutex;
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

fn prefix_del(p: &str) -> pb::DeleteRangeRequest {
    pb::DeleteRangeRequest {
        key: p.into(),
        range_end: prefix_end(p),
        prev_kv: false,
    }
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

/// One side's client, once the server answers; terms are shown relative to its term then.
async fn connect(port: u16) -> Side {
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
    side
}

/// The sections, in the order they run on both servers.
const SECTIONS: &[&str] = &[
    "kv",
    "txn",
    "leases",
    "watch",
    "compaction",
    "mutex",
    "unknown_methods",
    "extras",
    "binary_keys",
    "lease_expiry",
    "lock_service",
];

/// Runs the section `SECTIONS[index]` on `side`.
async fn run_section(side: &mut Side, index: usize) {
    match SECTIONS[index] {
        "kv" => kv::kv_basics(side).await,
        "txn" => kv::txns(side).await,
        "leases" => leases::leases(side).await,
        "watch" => leases::watches(side).await,
        "compaction" => leases::compaction(side).await,
        "mutex" => leases::mutex(side, 10).await,
        "unknown_methods" => leases::misc(side).await,
        "extras" => leases::extras(side).await,
        "binary_keys" => leases::binary(side).await,
        "lease_expiry" => leases::expiry(side).await,
        "lock_service" => lock::lock_service(side).await,
        other => unreachable!("no section {other}"),
    }
}

/// A section's transcript, or the panic that stopped it.
type Ran = Result<Transcript, String>;

/// One side's client in a thread of its own (a current-thread runtime and a `LocalSet`,
/// as a node runs), which runs the sections it is sent, one at a time.
struct SideThread {
    sections: std::sync::mpsc::Sender<usize>,
    transcripts: std::sync::mpsc::Receiver<Ran>,
}

impl SideThread {
    fn start(port: u16) -> SideThread {
        let (sections, todo) = std::sync::mpsc::channel::<usize>();
        let (done, transcripts) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            let local = tokio::task::LocalSet::new();
            let caught = |p: Box<dyn std::any::Any + Send>| panic_message(&*p);
            let connected =
                std::panic::catch_unwind(AssertUnwindSafe(|| local.block_on(&rt, connect(port))));
            let mut side = match connected.map_err(caught) {
                Ok(side) => side,
                Err(why) => {
                    for _ in todo {
                        let _ = done.send(Err(why.clone()));
                    }
                    return;
                }
            };
            for index in todo {
                let ran = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    local.block_on(&rt, run_section(&mut side, index))
                }));
                let out = std::mem::take(&mut side.out);
                if done.send(ran.map(|()| out).map_err(caught)).is_err() {
                    return;
                }
            }
        });
        SideThread {
            sections,
            transcripts,
        }
    }

    /// Starts section `index` on this side.
    fn run(&self, index: usize) {
        self.sections.send(index).expect("the side's thread waits");
    }

    /// The transcript of the section last started.
    fn transcript(&self) -> Ran {
        let ended = || Err("the side's thread ended".to_string());
        self.transcripts.recv().unwrap_or_else(|_| ended())
    }
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

/// Both sides of the comparison, kept from one section to the next: etcd's and the
/// model's clients, and the model's server.
struct Runner {
    etcd: SideThread,
    model: SideThread,
    _model_server: served::Served,
}

/// One section's transcripts, etcd's and the model's, and how long the section took.
type Outcome = (Ran, Ran, Duration);

/// The sections run so far.
static SECTIONS_RUN: Mutex<InOrder<Runner, Outcome>> = Mutex::new(InOrder::new());

/// Starts the model and etcd (stopped when the process exits) with the same timing, and
/// a client of each.
fn start() -> Runner {
    let model = served::serve(ServeFamily::Raft, 1, u64::from(real_etcd::HEARTBEAT_MS));
    let real = real_etcd::start_real_etcd();
    let runner = Runner {
        etcd: SideThread::start(real.client_port),
        model: SideThread::start(model.port()),
        _model_server: model,
    };
    keep_until_exit(real);
    runner
}

/// Section `index`'s outcome, on both sides at once (their waits for lease expiry
/// overlap).
fn outcome(index: usize) -> Outcome {
    InOrder::outcome(&SECTIONS_RUN, index, start, |r, i| {
        let started = Instant::now();
        r.etcd.run(i);
        r.model.run(i);
        (r.etcd.transcript(), r.model.transcript(), started.elapsed())
    })
}

/// Compares section `name` of both transcripts, step by step.
fn check(name: &str) {
    let index = SECTIONS.iter().position(|n| *n == name);
    let (theirs, ours, took) = outcome(index.expect("a section"));
    let theirs = theirs.unwrap_or_else(|e| panic!("{name} stopped on etcd: {e}"));
    let ours = ours.unwrap_or_else(|e| panic!("{name} stopped on the model: {e}"));
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
        "{name}: compared {} replies and watch responses with etcd 3.4 in {took:.1?}; {} deliberate differences:",
        theirs.len(),
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

/// One test per section of the comparison, and one that they compare enough.
mod the_model_answers_as_etcd_does {
    use super::check;

    #[test]
    fn kv() {
        check("kv");
    }

    #[test]
    fn txn() {
        check("txn");
    }

    #[test]
    fn leases() {
        check("leases");
    }

    #[test]
    fn watch() {
        check("watch");
    }

    #[test]
    fn compaction() {
        check("compaction");
    }

    #[test]
    fn mutex() {
        check("mutex");
    }

    #[test]
    fn unknown_methods() {
        check("unknown_methods");
    }

    #[test]
    fn extras() {
        check("extras");
    }

    #[test]
    fn binary_keys() {
        check("binary_keys");
    }

    #[test]
    fn lease_expiry() {
        check("lease_expiry");
    }

    #[test]
    fn lock_service() {
        check("lock_service");
    }

    /// The sections together compare at least 300 replies and responses.
    #[test]
    fn in_all_at_least_300_steps() {
        let compared: usize = (0..super::SECTIONS.len())
            .map(|i| super::outcome(i).0.map_or(0, |t| t.len()))
            .sum();
        assert!(compared >= 300, "only {compared} compared");
    }
}
