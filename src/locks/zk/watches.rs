//! The client's watch registry (ZooKeeper's `ZKWatchManager`): which watchers wait on
//! which path, per kind; one-shot delivery; and the list a reconnect re-registers
//! (`SetWatches`).

use super::tree::{EventKind, WatchedEvent};
use std::collections::BTreeMap;
use std::rc::Rc;
use tokio::sync::Notify;

/// A watcher: woken by its watches and by connection-state changes.
pub(crate) type Watcher = Rc<Notify>;

/// The client's registered watches (`ZKWatchManager`): path → watchers, per kind.
#[derive(Default)]
pub(super) struct Watches {
    pub(super) data: BTreeMap<String, Vec<Watcher>>,
    pub(super) exist: BTreeMap<String, Vec<Watcher>>,
    pub(super) child: BTreeMap<String, Vec<Watcher>>,
}

pub(super) fn add(map: &mut BTreeMap<String, Vec<Watcher>>, path: &str, w: Watcher) {
    let v = map.entry(path.to_string()).or_default();
    if !v.iter().any(|x| Rc::ptr_eq(x, &w)) {
        v.push(w);
    }
}

impl Watches {
    pub(super) fn is_empty(&self) -> bool {
        self.data.is_empty() && self.exist.is_empty() && self.child.is_empty()
    }

    /// The watchers an event reaches, removed (one-shot), as `ZKWatchManager.materialize`.
    pub(super) fn materialize(&mut self, ev: &WatchedEvent) -> Vec<Watcher> {
        let mut out = Vec::new();
        let p = &ev.path;
        match ev.kind {
            EventKind::NodeCreated | EventKind::NodeDataChanged => {
                out.extend(self.data.remove(p).unwrap_or_default());
                out.extend(self.exist.remove(p).unwrap_or_default());
            }
            EventKind::NodeChildrenChanged => out.extend(self.child.remove(p).unwrap_or_default()),
            EventKind::NodeDeleted => {
                out.extend(self.data.remove(p).unwrap_or_default());
                out.extend(self.exist.remove(p).unwrap_or_default());
                out.extend(self.child.remove(p).unwrap_or_default());
            }
        }
        out
    }

    pub(super) fn all(&self) -> Vec<Watcher> {
        let mut out: Vec<Watcher> = Vec::new();
        for v in self
            .data
            .values()
            .chain(self.exist.values())
            .chain(self.child.values())
        {
            for w in v {
                if !out.iter().any(|x| Rc::ptr_eq(x, w)) {
                    out.push(w.clone());
                }
            }
        }
        out
    }
}
