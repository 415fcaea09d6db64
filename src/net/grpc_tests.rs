//! A toy etcd over gRPC in a simulation: `KV.Range` and a `Watch` echo served from
//! node-local (`Rc`) state behind tonic's `Send` traits, called through the generated
//! clients over [`GrpcChannel`]; twice, with identical results.

use super::*;
use crate::history::Recorder;
use crate::locks::raft::etcdpb::etcdserverpb as pb;
use crate::locks::raft::etcdpb::mvccpb;
use crate::sim::NodeState;
use pb::watch_request::RequestUnion;
use std::collections::BTreeMap;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Request, Response, Status};

const PORT: u16 = 2379;

type Store = Rc<RefCell<BTreeMap<Vec<u8>, mvccpb::KeyValue>>>;
type WatchOut = mpsc::UnboundedSender<Result<pb::WatchResponse, Status>>;

/// A call crossing from tonic's `Send` world to the node's task.
enum Call {
    Range(pb::RangeRequest, oneshot::Sender<pb::RangeResponse>),
    Watch(tonic::Streaming<pb::WatchRequest>, WatchOut),
}

/// What tonic holds: only a `Send + Sync` sender of calls.
#[derive(Clone)]
struct Bridge(mpsc::UnboundedSender<Call>);

fn down() -> Status {
    Status::unavailable("node is down")
}

#[tonic::async_trait]
impl pb::kv_server::Kv for Bridge {
    async fn range(
        &self,
        request: Request<pb::RangeRequest>,
    ) -> Result<Response<pb::RangeResponse>, Status> {
        let (tx, rx) = oneshot::channel();
        let call = Call::Range(request.into_inner(), tx);
        self.0.send(call).map_err(|_| down())?;
        rx.await.map(Response::new).map_err(|_| down())
    }
}

#[tonic::async_trait]
impl pb::watch_server::Watch for Bridge {
    async fn watch(
        &self,
        request: Request<tonic::Streaming<pb::WatchRequest>>,
    ) -> Result<Response<tonic::codegen::BoxStream<pb::WatchResponse>>, Status> {
        let (tx, rx) = mpsc::unbounded_channel();
        let call = Call::Watch(request.into_inner(), tx);
        self.0.send(call).map_err(|_| down())?;
        Ok(Response::new(Box::pin(UnboundedReceiverStream::new(rx))))
    }
}

fn header(rev: i64) -> Option<pb::ResponseHeader> {
    Some(pb::ResponseHeader {
        cluster_id: 1,
        member_id: 7,
        revision: rev,
        raft_term: 2,
    })
}

fn range(store: &Store, req: &pb::RangeRequest) -> pb::RangeResponse {
    let store = store.borrow();
    let kvs: Vec<_> = store
        .range(req.key.clone()..req.range_end.clone())
        .map(|(_, kv)| kv.clone())
        .collect();
    pb::RangeResponse {
        header: header(3),
        count: kvs.len() as i64,
        kvs,
        more: false,
    }
}

/// The node's side: answers calls with its `Rc` state; a task per watch stream.
async fn node_loop(ctx: NodeCtx, store: Store, mut calls: mpsc::UnboundedReceiver<Call>) {
    while let Some(call) = calls.recv().await {
        match call {
            Call::Range(req, reply) => drop(reply.send(range(&store, &req))),
            Call::Watch(input, out) => drop(ctx.spawn(watch_echo(store.clone(), input, out))),
        }
    }
}

/// Answers a create with `created` and the key's current value as a PUT event, a
/// cancel with `canceled`.
async fn watch_echo(store: Store, mut input: tonic::Streaming<pb::WatchRequest>, out: WatchOut) {
    while let Ok(Some(req)) = input.message().await {
        let resp = match req.request_union {
            Some(RequestUnion::CreateRequest(c)) => {
                let kv = store.borrow().get(&c.key).cloned();
                let events = kv.map(|kv| mvccpb::Event {
                    r#type: mvccpb::event::EventType::Put as i32,
                    kv: Some(kv),
                    prev_kv: None,
                });
                pb::WatchResponse {
                    header: header(3),
                    watch_id: c.watch_id,
                    created: true,
                    events: events.into_iter().collect(),
                    ..Default::default()
                }
            }
            Some(RequestUnion::CancelRequest(c)) => pb::WatchResponse {
                header: header(3),
                watch_id: c.watch_id,
                canceled: true,
                cancel_reason: "cancelled by the client".into(),
                ..Default::default()
            },
            _ => pb::WatchResponse {
                header: header(3),
                ..Default::default()
            },
        };
        if out.send(Ok(resp)).is_err() {
            return;
        }
    }
}

fn kv(key: &str, value: &str, rev: i64) -> (Vec<u8>, mvccpb::KeyValue) {
    let kv = mvccpb::KeyValue {
        key: key.into(),
        create_revision: rev,
        mod_revision: rev,
        version: 1,
        value: value.into(),
        lease: 0,
    };
    (key.into(), kv)
}

async fn toy_server(ctx: NodeCtx) {
    let store: Store = Rc::new(RefCell::new(BTreeMap::from([
        kv("a", "1", 2),
        kv("b", "2", 3),
    ])));
    let (tx, rx) = mpsc::unbounded_channel();
    drop(ctx.spawn(node_loop(ctx.clone(), store, rx)));
    let bridge = Bridge(tx);
    let router = GrpcRouter::new()
        .serving(pb::kv_server::KvServer::new(bridge.clone()))
        .serving(pb::watch_server::WatchServer::new(bridge));
    assert_eq!(router.services(), ["etcdserverpb.KV", "etcdserverpb.Watch"]);
    serve_grpc(ctx, PORT, router).await.unwrap();
}

fn watch_create(key: &str, id: i64) -> pb::WatchRequest {
    let c = pb::WatchCreateRequest {
        key: key.into(),
        watch_id: id,
        ..Default::default()
    };
    pb::WatchRequest {
        request_union: Some(RequestUnion::CreateRequest(c)),
    }
}

fn watch_cancel(id: i64) -> pb::WatchRequest {
    let c = pb::WatchCancelRequest { watch_id: id };
    pb::WatchRequest {
        request_union: Some(RequestUnion::CancelRequest(c)),
    }
}

/// The client's script; every result is logged with the true time it arrived.
async fn toy_client(ctx: NodeCtx, log: Rc<RefCell<Vec<String>>>) {
    let ch = GrpcChannel::new(ctx.clone(), "etcd-0", PORT);
    let note = |what: String| log.borrow_mut().push(format!("{} {what}", ctx.true_ns()));
    let mut kv = pb::kv_client::KvClient::new(ch.clone());
    let req = pb::RangeRequest {
        key: "a".into(),
        range_end: "c".into(),
        ..Default::default()
    };
    let got = kv.range(req).await.unwrap().into_inner();
    assert_eq!(got.count, 2);
    assert_eq!(got.kvs[1].value, b"2");
    note(format!("range {got:?}"));

    // Not overridden by the impl: the generated stub's Unimplemented.
    let put = kv.put(pb::PutRequest::default()).await.unwrap_err();
    assert_eq!(put.code(), tonic::Code::Unimplemented);
    note(format!("put {:?}", put.code()));
    // A service not routed: the router's Unimplemented.
    let mut lease = pb::lease_client::LeaseClient::new(ch.clone());
    let grant = lease.lease_grant(pb::LeaseGrantRequest { ttl: 5, id: 0 });
    let grant = grant.await.unwrap_err();
    assert_eq!(grant.code(), tonic::Code::Unimplemented);
    note(format!("lease {:?}", grant.code()));
    note(raw_unknown_path(&ch).await);

    let (tx, rx) = mpsc::unbounded_channel();
    tx.send(watch_create("a", 5)).unwrap();
    let mut watch = pb::watch_client::WatchClient::new(ch.clone());
    let stream = UnboundedReceiverStream::new(rx);
    let mut events = watch.watch(stream).await.unwrap().into_inner();
    let created = events.message().await.unwrap().unwrap();
    assert!(created.created && created.watch_id == 5 && created.events.len() == 1);
    note(format!("watch {created:?}"));
    tx.send(watch_cancel(5)).unwrap();
    let cancelled = events.message().await.unwrap().unwrap();
    assert!(cancelled.canceled);
    note(format!("watch {cancelled:?}"));
    assert_eq!(ch.connects(), 1, "every call shared one connection");
}

/// An unknown method as raw HTTP/2: a real gRPC server's answer, HTTP 200 with
/// `grpc-status: 12`.
async fn raw_unknown_path(ch: &GrpcChannel) -> String {
    let req = http::Request::post("/etcdserverpb.Auth/AuthEnable")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(tonic::body::Body::empty())
        .unwrap();
    let resp = ch.clone().call(req).await.unwrap();
    assert_eq!(resp.status(), http::StatusCode::OK);
    let status = resp.headers().get("grpc-status").unwrap().to_str().unwrap();
    assert_eq!(status, "12");
    format!("raw {} grpc-status {status}", resp.status())
}

fn run_toy(seed: u64) -> Vec<String> {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(10))
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(5))
        .rng_seed(seed)
        .build();
    let state = Rc::new(NodeState::new("etcd-0", seed));
    sim.host("etcd-0", move || {
        let ctx = NodeCtx::new(state.clone(), Recorder::new());
        async move {
            toy_server(ctx).await;
            Ok(())
        }
    });
    let log = Rc::new(RefCell::new(Vec::new()));
    let out = log.clone();
    sim.client("client-0", async move {
        let ctx = NodeCtx::new(Rc::new(NodeState::new("client-0", seed)), Recorder::new());
        toy_client(ctx, out).await;
        Ok(())
    });
    sim.run().unwrap();
    log.take()
}

#[test]
fn etcd_grpc_over_simulated_tcp_is_deterministic() {
    let first = run_toy(7);
    assert_eq!(first.len(), 6, "{first:#?}");
    assert_eq!(first, run_toy(7), "same seed, same bytes and times");
}
