//! The znode tree: ZooKeeper's `DataTree` with its server-side `WatchManager`, as a pure
//! state machine (no I/O, no clock: every zxid and time is an argument).
//!
//! Semantics follow `org.apache.zookeeper.server.DataTree` and the checks of
//! `PrepRequestProcessor` (apache/zookeeper, read at 53a78e36f):
//!
//! * **create**: checked in `PrepRequestProcessor`'s order — a slash (`BadArguments`), the
//!   parent (`NoNode`), the whole path with its sequence suffix (`BadArguments`: empty,
//!   `.` or `..` segments, control characters), the node itself (`NodeExists`), an
//!   ephemeral parent (`NoChildrenForEphemerals`). A sequential node's name is the path
//!   plus the parent's `cversion` as 10 digits (`String.format("%010d", parentCVersion)`).
//!   The create bumps the parent's `cversion` and sets its `pzxid`; the node gets
//!   `czxid = mzxid = pzxid = zxid`, versions 0, and its session as `ephemeralOwner`
//!   when ephemeral. Containers (`CreateMode.CONTAINER`) are tracked for the container
//!   manager.
//! * **delete**: `NoNode`; `BadVersion` unless the version is -1 or the node's; `NotEmpty`
//!   (checked in that order, as `PrepRequestProcessor`). The parent's `pzxid` moves; its
//!   stored `cversion` does not, so sequence numbers count creates, never deletes. On
//!   the wire `cversion` counts changes (`DataNode.copyStat`: 2 × creates − children),
//!   see `proto.rs`: both measured against ZooKeeper 3.8 by `tests/fidelity/zk.rs`.
//! * **the system nodes** `/zookeeper`, `/zookeeper/quota` and `/zookeeper/config` exist
//!   from the start, as in every ZooKeeper server.
//! * **setData**: `NoNode`, `BadVersion`; bumps `version`, sets `mzxid`/`mtime`.
//! * **watches** are one-shot and per watcher (here: a connection id). `getData` and
//!   `exists` set data watches (`exists` also on a missing node), `getChildren` a child
//!   watch (only when the node exists). `NodeCreated` and `NodeDataChanged` fire data
//!   watches; `NodeDeleted` fires the node's data and child watches (each watcher once);
//!   `NodeChildrenChanged` fires the parent's child watches. Events carry the zxid of the
//!   transaction that fired them, and come out in the order the transactions are applied,
//!   so a watcher sees them in zxid order.
//! * **setWatches** (a client re-registering its watches on a new connection) fires at
//!   once what changed after the client's last zxid, as `DataTree.setWatches`.
//! * **removeWatches** removes the watcher's own watches of a type (data, child or
//!   both) on a path; **checkWatches** removes nothing and, as ZooKeeper 3.8.0 does,
//!   answers whether the path has a watch of that type at all, whoever set it.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A ZooKeeper transaction id: the position of a write in the total order.
pub(crate) type Zxid = u64;
/// A session id.
pub type SessionId = u64;
/// Who set a watch (the server's connection id).
pub(crate) type WatcherId = u64;

/// A znode's metadata (`org.apache.zookeeper.data.Stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Stat {
    /// zxid of the create.
    pub czxid: Zxid,
    /// zxid of the last data change.
    pub mzxid: Zxid,
    /// zxid of the last change to the children.
    pub pzxid: Zxid,
    /// Creation time (the proposer's wall clock, ms).
    pub ctime: i64,
    /// Last modification time.
    pub mtime: i64,
    /// Data version.
    pub version: i32,
    /// Number of creates of children (the sequence counter).
    pub cversion: i32,
    /// Owning session of an ephemeral node, 0 otherwise.
    pub ephemeral_owner: SessionId,
    /// Number of children.
    pub num_children: u32,
    /// Length of the node's data, bytes.
    pub data_length: u32,
}

/// How a node is created (`org.apache.zookeeper.CreateMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CreateMode {
    /// Lives until deleted.
    Persistent,
    /// Persistent, with a sequence suffix.
    PersistentSequential,
    /// Deleted when its session closes.
    Ephemeral,
    /// Ephemeral, with a sequence suffix.
    EphemeralSequential,
    /// Deleted by the container manager once it has had children and has none.
    Container,
}

impl CreateMode {
    /// Owned by a session.
    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    /// Named with a sequence suffix.
    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential | CreateMode::EphemeralSequential
        )
    }
}

/// ZooKeeper's error codes (`KeeperException.Code`) that this model produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZkError {
    /// The node (or its parent, for a create) does not exist.
    NoNode,
    /// The node already exists.
    NodeExists,
    /// The version does not match.
    BadVersion,
    /// The node has children.
    NotEmpty,
    /// Ephemeral nodes cannot have children.
    NoChildrenForEphemerals,
    /// An invalid path or argument.
    BadArguments,
    /// The session is closed or expired.
    SessionExpired,
    /// The session moved to another server: a request sent through the old one.
    SessionMoved,
    /// Client side: the connection was lost before the reply came (the request may or
    /// may not have been applied).
    ConnectionLoss,
    /// The server does not implement the operation.
    Unimplemented,
    /// A request the server could not read.
    MarshallingError,
    /// `checkWatches`/`removeWatches`: the connection has no such watch on the path.
    NoWatcher,
    /// Any other code a server sent (`KeeperException.Code`).
    Other(i32),
}

impl ZkError {
    /// ZooKeeper's numeric code.
    pub fn code(self) -> i32 {
        match self {
            ZkError::NoNode => -101,
            ZkError::NodeExists => -110,
            ZkError::BadVersion => -103,
            ZkError::NotEmpty => -111,
            ZkError::NoChildrenForEphemerals => -108,
            ZkError::BadArguments => -8,
            ZkError::SessionExpired => -112,
            ZkError::SessionMoved => -118,
            ZkError::ConnectionLoss => -4,
            ZkError::Unimplemented => -6,
            ZkError::MarshallingError => -5,
            ZkError::NoWatcher => -121,
            ZkError::Other(code) => code,
        }
    }

    /// The error with ZooKeeper's numeric `code` (not 0, which is success).
    pub fn from_code(code: i32) -> ZkError {
        [
            ZkError::NoNode,
            ZkError::NodeExists,
            ZkError::BadVersion,
            ZkError::NotEmpty,
            ZkError::NoChildrenForEphemerals,
            ZkError::BadArguments,
            ZkError::SessionExpired,
            ZkError::SessionMoved,
            ZkError::ConnectionLoss,
            ZkError::Unimplemented,
            ZkError::MarshallingError,
            ZkError::NoWatcher,
        ]
        .into_iter()
        .find(|e| e.code() == code)
        .unwrap_or(ZkError::Other(code))
    }
}

impl fmt::Display for ZkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            ZkError::NoNode => "NoNode",
            ZkError::NodeExists => "NodeExists",
            ZkError::BadVersion => "BadVersion",
            ZkError::NotEmpty => "Directory not empty",
            ZkError::NoChildrenForEphemerals => "NoChildrenForEphemerals",
            ZkError::BadArguments => "BadArguments",
            ZkError::SessionExpired => "Session expired",
            ZkError::SessionMoved => "Session moved",
            ZkError::ConnectionLoss => "ConnectionLoss",
            ZkError::Unimplemented => "Unimplemented",
            ZkError::MarshallingError => "MarshallingError",
            ZkError::NoWatcher => "NoWatcher",
            ZkError::Other(code) => return write!(f, "KeeperErrorCode = {code}"),
        };
        write!(f, "KeeperErrorCode = {name}")
    }
}

impl std::error::Error for ZkError {}

/// Which of a path's watches `checkWatches` and `removeWatches` mean
/// (`Watcher.WatcherType`): data watches (set by `getData` and `exists`), child
/// watches, or either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WatchKind {
    /// Child watches (`Children`, 1 on the wire).
    Children,
    /// Data and exist watches (`Data`, 2).
    Data,
    /// Either (`Any`, 3).
    Any,
}

/// A watch event type (`Watcher.Event.EventType`).
// The variants keep ZooKeeper's own names (NodeCreated, NodeDeleted, ...).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// The watched (missing) node was created.
    NodeCreated,
    /// The node was deleted.
    NodeDeleted,
    /// The node's data changed.
    NodeDataChanged,
    /// A child was created or deleted.
    NodeChildrenChanged,
}

/// A fired watch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WatchedEvent {
    /// What happened.
    pub kind: EventKind,
    /// The watched path.
    pub path: String,
    /// The zxid of the transaction that fired it.
    pub zxid: Zxid,
}

/// Watches fired by one operation, per watcher, in firing order.
pub(crate) type Fired = Vec<(WatcherId, WatchedEvent)>;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    data: Vec<u8>,
    stat: Stat,
    children: BTreeSet<String>,
    container: bool,
}

/// The tree, its ephemeral and container indexes, and the server's watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DataTree {
    nodes: BTreeMap<String, Node>,
    ephemerals: BTreeMap<SessionId, BTreeSet<String>>,
    containers: BTreeSet<String>,
    data_watches: BTreeMap<String, BTreeSet<WatcherId>>,
    child_watches: BTreeMap<String, BTreeSet<WatcherId>>,
}

impl Default for DataTree {
    fn default() -> Self {
        DataTree::new()
    }
}

/// `path` is absolute, has no empty component and no trailing slash (ZooKeeper's
/// `PathUtils.validatePath`, minus the character rules).
pub(crate) fn validate_path(path: &str) -> Result<(), ZkError> {
    if path == "/" {
        return Ok(());
    }
    if !path.starts_with('/') || path.ends_with('/') || path.contains("//") {
        return Err(ZkError::BadArguments);
    }
    // PathUtils.validatePath: no relative segments, no control characters.
    let relative = path.split('/').any(|seg| seg == "." || seg == "..");
    let control = path.chars().any(|c| {
        c == '\0' || ('\u{1}'..='\u{1f}').contains(&c) || ('\u{7f}'..='\u{9f}').contains(&c)
    });
    if relative || control {
        return Err(ZkError::BadArguments);
    }
    Ok(())
}

/// `(parent, name)` of a valid non-root path.
pub(crate) fn split_path(path: &str) -> (&str, &str) {
    let i = path.rfind('/').expect("absolute path");
    let parent = if i == 0 { "/" } else { &path[..i] };
    (parent, &path[i + 1..])
}

impl DataTree {
    /// A fresh tree: the root and ZooKeeper's system nodes `/zookeeper`,
    /// `/zookeeper/quota` and `/zookeeper/config`, which every server has from the start
    /// (not created by transactions: zxid 0, no `cversion` counted).
    pub(crate) fn new() -> DataTree {
        let node = |children: &[&str]| Node {
            data: Vec::new(),
            stat: Stat {
                num_children: children.len() as u32,
                ..Stat::default()
            },
            children: children.iter().map(|c| c.to_string()).collect(),
            container: false,
        };
        let nodes = BTreeMap::from([
            ("/".to_string(), node(&["zookeeper"])),
            ("/zookeeper".to_string(), node(&["config", "quota"])),
            ("/zookeeper/config".to_string(), node(&[])),
            ("/zookeeper/quota".to_string(), node(&[])),
        ]);
        DataTree {
            nodes,
            ephemerals: BTreeMap::new(),
            containers: BTreeSet::new(),
            data_watches: BTreeMap::new(),
            child_watches: BTreeMap::new(),
        }
    }

    /// The node's stat, if it exists.
    pub(crate) fn stat(&self, path: &str) -> Option<Stat> {
        self.nodes.get(path).map(|n| n.stat)
    }

    /// The ephemeral nodes of `session`, sorted.
    pub(crate) fn ephemerals(&self, session: SessionId) -> Vec<String> {
        self.ephemerals
            .get(&session)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The node's children (names), sorted, without setting a watch.
    pub(crate) fn children(&self, path: &str) -> Option<Vec<String>> {
        self.nodes
            .get(path)
            .map(|n| n.children.iter().cloned().collect())
    }

    /// Create a node (see the module docs). Returns the actual path (with its sequence
    /// suffix) and the new node's stat.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn create(
        &mut self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        session: SessionId,
        zxid: Zxid,
        time_ms: i64,
        fired: &mut Fired,
    ) -> Result<(String, Stat), ZkError> {
        // PrepRequestProcessor's order: a slash, the parent, the whole path (with its
        // sequence suffix), the node itself, an ephemeral parent.
        if !path.contains('/') || path.contains('\0') {
            return Err(ZkError::BadArguments);
        }
        let (parent_path, _) = split_path(path);
        let parent = self.nodes.get(parent_path).ok_or(ZkError::NoNode)?;
        let path = if mode.is_sequential() {
            format!("{path}{:010}", parent.stat.cversion)
        } else {
            path.to_string()
        };
        validate_path(&path)?;
        if self.nodes.contains_key(&path) {
            return Err(ZkError::NodeExists);
        }
        if parent.stat.ephemeral_owner != 0 {
            return Err(ZkError::NoChildrenForEphemerals);
        }
        let (parent_path, name) = split_path(&path);
        let (parent_path, name) = (parent_path.to_string(), name.to_string());
        let parent = self.nodes.get_mut(&parent_path).expect("checked above");
        parent.stat.cversion += 1;
        parent.stat.pzxid = zxid;
        parent.children.insert(name);
        parent.stat.num_children = parent.children.len() as u32;
        let owner = if mode.is_ephemeral() { session } else { 0 };
        let stat = Stat {
            czxid: zxid,
            mzxid: zxid,
            pzxid: zxid,
            ctime: time_ms,
            mtime: time_ms,
            version: 0,
            cversion: 0,
            ephemeral_owner: owner,
            num_children: 0,
            data_length: data.len() as u32,
        };
        self.nodes.insert(
            path.clone(),
            Node {
                data: data.to_vec(),
                stat,
                children: BTreeSet::new(),
                container: mode == CreateMode::Container,
            },
        );
        if owner != 0 {
            self.ephemerals
                .entry(owner)
                .or_default()
                .insert(path.clone());
        }
        if mode == CreateMode::Container {
            self.containers.insert(path.clone());
        }
        self.trigger_data(&path, EventKind::NodeCreated, zxid, fired);
        self.trigger_child(&parent_path, EventKind::NodeChildrenChanged, zxid, fired);
        Ok((path, stat))
    }

    /// Delete a node with `version` (-1: any).
    pub(crate) fn delete(
        &mut self,
        path: &str,
        version: i32,
        zxid: Zxid,
        fired: &mut Fired,
    ) -> Result<(), ZkError> {
        validate_path(path)?;
        if path == "/" {
            return Err(ZkError::BadArguments);
        }
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        if version != -1 && version != node.stat.version {
            return Err(ZkError::BadVersion);
        }
        if !node.children.is_empty() {
            return Err(ZkError::NotEmpty);
        }
        self.remove(path, zxid, fired);
        Ok(())
    }

    /// Remove an existing childless node and fire its watches (no checks).
    fn remove(&mut self, path: &str, zxid: Zxid, fired: &mut Fired) {
        let node = self.nodes.remove(path).expect("caller checked");
        let (parent_path, name) = split_path(path);
        if let Some(parent) = self.nodes.get_mut(parent_path) {
            parent.children.remove(name);
            parent.stat.num_children = parent.children.len() as u32;
            if zxid > parent.stat.pzxid {
                parent.stat.pzxid = zxid;
            }
        }
        let owner = node.stat.ephemeral_owner;
        if owner != 0 {
            if let Some(set) = self.ephemerals.get_mut(&owner) {
                set.remove(path);
                if set.is_empty() {
                    self.ephemerals.remove(&owner);
                }
            }
        }
        self.containers.remove(path);
        // NodeDeleted reaches the node's data and child watchers, each once.
        let mut who: BTreeSet<WatcherId> = self.data_watches.remove(path).unwrap_or_default();
        who.extend(self.child_watches.remove(path).unwrap_or_default());
        for w in who {
            fired.push((
                w,
                WatchedEvent {
                    kind: EventKind::NodeDeleted,
                    path: path.to_string(),
                    zxid,
                },
            ));
        }
        let parent_path = parent_path.to_string();
        self.trigger_child(&parent_path, EventKind::NodeChildrenChanged, zxid, fired);
    }

    /// Set a node's data with `version` (-1: any).
    pub(crate) fn set_data(
        &mut self,
        path: &str,
        data: &[u8],
        version: i32,
        zxid: Zxid,
        time_ms: i64,
        fired: &mut Fired,
    ) -> Result<Stat, ZkError> {
        validate_path(path)?;
        let node = self.nodes.get_mut(path).ok_or(ZkError::NoNode)?;
        if version != -1 && version != node.stat.version {
            return Err(ZkError::BadVersion);
        }
        node.data = data.to_vec();
        node.stat.data_length = data.len() as u32;
        node.stat.version += 1;
        node.stat.mzxid = zxid;
        node.stat.mtime = time_ms;
        let stat = node.stat;
        self.trigger_data(path, EventKind::NodeDataChanged, zxid, fired);
        Ok(stat)
    }

    /// Delete every ephemeral node of `session` (a session close), in path order.
    /// Returns the deleted paths.
    pub(crate) fn kill_session(
        &mut self,
        session: SessionId,
        zxid: Zxid,
        fired: &mut Fired,
    ) -> Vec<String> {
        let paths = self.ephemerals(session);
        for p in &paths {
            // Ephemerals have no children, so this cannot fail.
            if self.nodes.contains_key(p) {
                self.remove(p, zxid, fired);
            }
        }
        self.ephemerals.remove(&session);
        paths
    }

    /// `deleteContainer`: delete `path` only if it is a container without children.
    pub(crate) fn delete_container(
        &mut self,
        path: &str,
        zxid: Zxid,
        fired: &mut Fired,
    ) -> Result<(), ZkError> {
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        if !node.container {
            return Err(ZkError::BadArguments);
        }
        if !node.children.is_empty() {
            return Err(ZkError::NotEmpty);
        }
        self.remove(path, zxid, fired);
        Ok(())
    }

    /// Containers the container manager deletes: no children, and at least one child
    /// ever (`cversion > 0`), as `ContainerManager.getCandidates`.
    pub(crate) fn container_candidates(&self) -> Vec<String> {
        self.containers
            .iter()
            .filter(|p| {
                self.nodes
                    .get(*p)
                    .is_some_and(|n| n.children.is_empty() && n.stat.cversion > 0)
            })
            .cloned()
            .collect()
    }

    /// `getData`, setting a data watch for `watcher` if given (only if the node exists).
    pub(crate) fn get_data(
        &mut self,
        path: &str,
        watcher: Option<WatcherId>,
    ) -> Result<(Vec<u8>, Stat), ZkError> {
        validate_path(path)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        let out = (node.data.clone(), node.stat);
        if let Some(w) = watcher {
            self.data_watches
                .entry(path.to_string())
                .or_default()
                .insert(w);
        }
        Ok(out)
    }

    /// `exists`, setting a data watch for `watcher` if given, whether or not the node
    /// exists (a watch on a missing node fires on its creation).
    pub(crate) fn exists(
        &mut self,
        path: &str,
        watcher: Option<WatcherId>,
    ) -> Result<Option<Stat>, ZkError> {
        validate_path(path)?;
        if let Some(w) = watcher {
            self.data_watches
                .entry(path.to_string())
                .or_default()
                .insert(w);
        }
        Ok(self.stat(path))
    }

    /// `getChildren` (sorted), setting a child watch for `watcher` if given and the node
    /// exists.
    pub(crate) fn get_children(
        &mut self,
        path: &str,
        watcher: Option<WatcherId>,
    ) -> Result<(Vec<String>, Stat), ZkError> {
        validate_path(path)?;
        let node = self.nodes.get(path).ok_or(ZkError::NoNode)?;
        let out = (node.children.iter().cloned().collect(), node.stat);
        if let Some(w) = watcher {
            self.child_watches
                .entry(path.to_string())
                .or_default()
                .insert(w);
        }
        Ok(out)
    }

    /// `setWatches` of a reconnecting client whose last seen zxid is `relative`: fires
    /// what changed since at once, registers the rest (`DataTree.setWatches`). `paths`
    /// are the client's data, exist and child watches.
    pub(crate) fn set_watches(
        &mut self,
        relative: Zxid,
        paths: [&[String]; 3],
        watcher: WatcherId,
        last_zxid: Zxid,
        fired: &mut Fired,
    ) {
        let [data, exist, child] = paths;
        let ev = |kind, path: &str| {
            (
                watcher,
                WatchedEvent {
                    kind,
                    path: path.to_string(),
                    zxid: last_zxid,
                },
            )
        };
        for p in data {
            match self.nodes.get(p) {
                None => fired.push(ev(EventKind::NodeDeleted, p)),
                Some(n) if n.stat.mzxid > relative => fired.push(ev(EventKind::NodeDataChanged, p)),
                Some(_) => {
                    self.data_watches
                        .entry(p.clone())
                        .or_default()
                        .insert(watcher);
                }
            }
        }
        for p in exist {
            if self.nodes.contains_key(p) {
                fired.push(ev(EventKind::NodeCreated, p));
            } else {
                self.data_watches
                    .entry(p.clone())
                    .or_default()
                    .insert(watcher);
            }
        }
        for p in child {
            match self.nodes.get(p) {
                None => fired.push(ev(EventKind::NodeDeleted, p)),
                Some(n) if n.stat.pzxid > relative => {
                    fired.push(ev(EventKind::NodeChildrenChanged, p))
                }
                Some(_) => {
                    self.child_watches
                        .entry(p.clone())
                        .or_default()
                        .insert(watcher);
                }
            }
        }
    }

    /// Forget every watch of `watcher` (its connection closed).
    pub(crate) fn remove_watcher(&mut self, watcher: WatcherId) {
        for map in [&mut self.data_watches, &mut self.child_watches] {
            map.retain(|_, set| {
                set.remove(&watcher);
                !set.is_empty()
            });
        }
    }

    /// Whether anyone has a watch of `kind` on `path`: what ZooKeeper 3.8.0's
    /// `DataTree.containsWatcher` answers, whichever watcher is asked about (its
    /// `WatchManager` looks only at whether the path has watchers).
    pub(crate) fn is_watched(&self, path: &str, kind: WatchKind) -> bool {
        self.watch_maps(kind)
            .iter()
            .any(|map| map.get(path).is_some_and(|set| !set.is_empty()))
    }

    /// Remove `watcher`'s watches of `kind` on `path` (`DataTree.removeWatch`): whether
    /// there was one.
    pub(crate) fn remove_watch(&mut self, path: &str, kind: WatchKind, watcher: WatcherId) -> bool {
        let mut removed = false;
        let (data, child) = (&mut self.data_watches, &mut self.child_watches);
        let maps = match kind {
            WatchKind::Data => vec![data],
            WatchKind::Children => vec![child],
            WatchKind::Any => vec![data, child],
        };
        for map in maps {
            if let Some(set) = map.get_mut(path) {
                removed |= set.remove(&watcher);
                if set.is_empty() {
                    map.remove(path);
                }
            }
        }
        removed
    }

    fn watch_maps(&self, kind: WatchKind) -> Vec<&BTreeMap<String, BTreeSet<WatcherId>>> {
        match kind {
            WatchKind::Data => vec![&self.data_watches],
            WatchKind::Children => vec![&self.child_watches],
            WatchKind::Any => vec![&self.data_watches, &self.child_watches],
        }
    }

    /// Number of watches set (all watchers, both kinds).
    #[cfg(test)]
    pub(crate) fn watch_count(&self) -> usize {
        self.data_watches.values().map(|s| s.len()).sum::<usize>()
            + self.child_watches.values().map(|s| s.len()).sum::<usize>()
    }

    fn trigger_data(&mut self, path: &str, kind: EventKind, zxid: Zxid, fired: &mut Fired) {
        for w in self.data_watches.remove(path).unwrap_or_default() {
            fired.push((
                w,
                WatchedEvent {
                    kind,
                    path: path.to_string(),
                    zxid,
                },
            ));
        }
    }

    fn trigger_child(&mut self, path: &str, kind: EventKind, zxid: Zxid, fired: &mut Fired) {
        for w in self.child_watches.remove(path).unwrap_or_default() {
            fired.push((
                w,
                WatchedEvent {
                    kind,
                    path: path.to_string(),
                    zxid,
                },
            ));
        }
    }
}
