//! One `Watch` stream, served from the node's applied state (etcd's `watchServer` over
//! its `watchableStore`):
//!
//! * **Create** answers `created` with the watch's id (the client's, or the stream's next
//!   one: ids count up from 0, skipping those in use, and are never reused), then, if
//!   `start_revision` is at or before the store's revision, every event
//!   since then in one response (etcd's catch-up of an unsynced watcher), headed with the
//!   current revision. A start before the compacted revision answers `canceled` with
//!   `compact_revision` instead (etcd's `ErrCompacted` for a watcher).
//! * **Afterwards** each applied write's events go out as one response per revision
//!   (etcd's `notify` of synced watchers), filtered by the watch's range and filters.
//! * **Cancel** answers `canceled`; **progress** answers an empty response at the current
//!   revision.

use super::super::etcd_api::kv_pb;
use super::super::etcd_api::ApiError;
use super::super::etcdpb::{etcdserverpb as pb, mvccpb};
use super::super::kv::{text_of, Event, EventKind, KeySpec, ServiceError};
use super::Node;
use std::collections::BTreeMap;
use tonic::Streaming;

type Replies = super::super::etcd_grpc::Replies<pb::WatchResponse>;

/// One watch of a stream.
struct Watcher {
    keys: KeySpec,
    /// The next revision whose events it has not seen.
    next: u64,
    prev_kv: bool,
    no_put: bool,
    no_delete: bool,
}

impl Watcher {
    fn wants(&self, e: &Event) -> bool {
        let kind_ok = match e.kind {
            EventKind::Put => !self.no_put,
            EventKind::Delete => !self.no_delete,
        };
        kind_ok && self.keys.contains(&e.kv.key)
    }

    fn event_pb(&self, e: &Event) -> mvccpb::Event {
        let kind = match e.kind {
            EventKind::Put => mvccpb::event::EventType::Put,
            EventKind::Delete => mvccpb::event::EventType::Delete,
        };
        mvccpb::Event {
            r#type: kind as i32,
            kv: Some(kv_pb(e.kv.clone())),
            prev_kv: if self.prev_kv {
                e.prev_kv.clone().map(kv_pb)
            } else {
                None
            },
        }
    }
}

/// The watches of one stream.
struct Stream {
    node: Node,
    replies: Replies,
    watchers: BTreeMap<i64, Watcher>,
    /// The next id to give a watch created without one: etcd's `watchStream.nextID`,
    /// which only grows (ids are not reused after a cancel).
    next_id: i64,
}

/// Serve one stream until the client closes it or goes away.
pub(super) async fn serve(node: Node, mut requests: Streaming<pb::WatchRequest>, replies: Replies) {
    let mut stream = Stream {
        node: node.clone(),
        replies,
        watchers: BTreeMap::new(),
        next_id: 0,
    };
    loop {
        // Registered before the delivery: an apply after it still wakes us.
        let applied = node.applied.notified();
        if !stream.deliver().await {
            return;
        }
        tokio::select! {
            msg = requests.message() => match msg {
                Ok(Some(req)) => {
                    if !stream.handle(req).await {
                        return;
                    }
                }
                _ => return,
            },
            _ = applied => {}
        }
    }
}

/// Returns once `key` is deleted at revision `from` or later, as a watch on `key` from
/// `from` reports its first delete event; a `from` already compacted fails as that
/// watch would (`ErrCompacted`).
pub(super) async fn wait_delete(node: &Node, key: &str, from: u64) -> Result<(), ApiError> {
    let mut next = from;
    loop {
        // Registered before the look: an apply after it still wakes us.
        let applied = node.applied.notified();
        {
            let s = node.server.borrow();
            let store = s.service.store();
            if next != 0 && next < store.compacted() {
                return Err(ApiError::Service(ServiceError::Compacted));
            }
            let deleted = |e: &Event| e.kind == EventKind::Delete && e.kv.key == key;
            if store.events_since(next).iter().any(deleted) {
                return Ok(());
            }
            next = next.max(store.revision() + 1);
        }
        applied.await;
    }
}

impl Stream {
    fn header(&self, revision: u64) -> Option<pb::ResponseHeader> {
        self.node.ids().header(revision)
    }

    async fn send(&self, r: pb::WatchResponse) -> bool {
        self.replies.send(Ok(r)).await.is_ok()
    }

    async fn handle(&mut self, req: pb::WatchRequest) -> bool {
        use pb::watch_request::RequestUnion as U;
        match req.request_union {
            Some(U::CreateRequest(c)) => self.create(c).await,
            Some(U::CancelRequest(c)) => {
                let known = self.watchers.remove(&c.watch_id).is_some();
                !known
                    || self
                        .send(pb::WatchResponse {
                            header: self.header(0),
                            watch_id: c.watch_id,
                            canceled: true,
                            ..Default::default()
                        })
                        .await
            }
            Some(U::ProgressRequest(_)) => {
                self.send(pb::WatchResponse {
                    header: self.header(0),
                    watch_id: -1,
                    ..Default::default()
                })
                .await
            }
            None => true,
        }
    }

    async fn create(&mut self, c: pb::WatchCreateRequest) -> bool {
        use pb::watch_create_request::FilterType as F;
        let keys = KeySpec {
            key: text_of(c.key),
            range_end: text_of(c.range_end),
        };
        let empty = !keys.is_single() && keys.range_end != "\0" && keys.range_end <= keys.key;
        let duplicate = c.watch_id != 0 && self.watchers.contains_key(&c.watch_id);
        if empty || duplicate {
            let reason = if empty {
                "mvcc: watcher range is empty"
            } else {
                "mvcc: duplicate watch ID provided on the WatchStream"
            };
            return self
                .send(pb::WatchResponse {
                    header: self.header(0),
                    watch_id: -1,
                    created: true,
                    canceled: true,
                    cancel_reason: reason.into(),
                    ..Default::default()
                })
                .await;
        }
        let id = if c.watch_id != 0 {
            c.watch_id
        } else {
            while self.watchers.contains_key(&self.next_id) {
                self.next_id += 1;
            }
            self.next_id += 1;
            self.next_id - 1
        };
        let (revision, compacted) = {
            let s = self.node.server.borrow();
            (s.service.store().revision(), s.service.store().compacted())
        };
        let start = c.start_revision.max(0) as u64;
        let created = pb::WatchResponse {
            header: self.header(revision),
            watch_id: id,
            created: true,
            ..Default::default()
        };
        if !self.send(created).await {
            return false;
        }
        if start != 0 && start < compacted {
            return self
                .send(pb::WatchResponse {
                    header: self.node.ids().without_revision(),
                    watch_id: id,
                    canceled: true,
                    compact_revision: compacted as i64,
                    ..Default::default()
                })
                .await;
        }
        let filters: Vec<_> = c
            .filters
            .iter()
            .filter_map(|f| F::try_from(*f).ok())
            .collect();
        let w = Watcher {
            keys,
            next: if start == 0 { revision + 1 } else { start },
            prev_kv: c.prev_kv,
            no_put: filters.contains(&F::Noput),
            no_delete: filters.contains(&F::Nodelete),
        };
        if w.next <= revision {
            return self.catch_up(id, w, revision).await;
        }
        self.watchers.insert(id, w);
        true
    }

    /// A watch starting in the past: every event since its start in one response.
    async fn catch_up(&mut self, id: i64, mut w: Watcher, revision: u64) -> bool {
        let events: Vec<mvccpb::Event> = {
            let s = self.node.server.borrow();
            let since = s.service.store().events_since(w.next);
            since
                .iter()
                .filter(|e| w.wants(e))
                .map(|e| w.event_pb(e))
                .collect()
        };
        w.next = revision + 1;
        self.watchers.insert(id, w);
        events.is_empty()
            || self
                .send(pb::WatchResponse {
                    header: self.header(revision),
                    watch_id: id,
                    events,
                    ..Default::default()
                })
                .await
    }

    /// Send every watcher the events applied since it last looked, one response per
    /// revision.
    async fn deliver(&mut self) -> bool {
        let mut out = Vec::new();
        {
            let s = self.node.server.borrow();
            let store = s.service.store();
            for (&id, w) in self.watchers.iter_mut() {
                let mut by_rev: BTreeMap<u64, Vec<mvccpb::Event>> = BTreeMap::new();
                for e in store.events_since(w.next).iter().filter(|e| w.wants(e)) {
                    by_rev.entry(e.revision()).or_default().push(w.event_pb(e));
                }
                // A watch from a future revision waits for it.
                w.next = w.next.max(store.revision() + 1);
                out.extend(by_rev.into_iter().map(|(rev, events)| (id, rev, events)));
            }
        }
        for (id, rev, events) in out {
            let r = pb::WatchResponse {
                header: self.header(rev),
                watch_id: id,
                events,
                ..Default::default()
            };
            if !self.send(r).await {
                return false;
            }
        }
        true
    }
}
