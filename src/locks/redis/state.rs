//! A Redis node's state, shared by its connection tasks and its replication links: the
//! keyspace, the node's role and the primary's replication stream. The node's edge
//! (`node.rs`) and replication (`replication.rs`) both work on it; neither owns it.

use super::model::{ClientId, RedisServer};
use super::params::Persistence;
use super::resp::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use tokio::sync::Notify;

/// A node's replication role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Accepts writes and streams them to replicas.
    Primary,
    /// Applies the stream of `primary`; refuses writes with `READONLY`.
    Replica {
        /// The node it replicates from.
        primary: String,
    },
}

/// A Redis node's state, shared by its connection tasks.
pub(crate) struct RedisNodeState {
    /// The keyspace.
    pub server: RedisServer,
    /// Current role.
    pub role: Role,
    /// Bumped on every role change: tasks of an older role see it and stop.
    pub generation: u64,
    /// The replication stream (primary side) and offsets.
    pub stream: Stream,
    /// Replica side: the primary offset applied so far.
    pub applied: u64,
    pub(super) persistence: Persistence,
    /// Each open connection's inbox for pub/sub messages other connections publish.
    pub(super) mailboxes: BTreeMap<ClientId, tokio::sync::mpsc::UnboundedSender<Value>>,
    /// What a script that never ends (or the `EXEC` holding it) wrote: propagated when
    /// `SCRIPT KILL` ends it, as Redis propagates a command once it returns.
    pub(super) held_effects: Vec<Vec<Vec<u8>>>,
    /// Where `SCRIPT KILL` sends the busy script's reply: its connection waits on it.
    pub(super) killed_reply: Option<tokio::sync::oneshot::Sender<Value>>,
}

impl RedisNodeState {
    /// The node's AOF policy.
    pub(crate) fn persistence_policy(&self) -> Persistence {
        self.persistence
    }
}

/// A shared handle to a node's state.
pub(crate) type Node = Rc<RefCell<RedisNodeState>>;

/// The primary's replication stream and its replicas' acknowledgements.
#[derive(Default)]
pub(crate) struct Stream {
    /// Replication id: changes when a node becomes primary.
    pub(super) replid: u64,
    /// Offset of `bytes[0]`.
    pub(super) base: u64,
    pub(super) bytes: Vec<u8>,
    /// A replica has linked since the start (Redis's replication backlog exists): until
    /// then writes are not buffered and the offset stays 0, as `ROLE` shows on a fresh
    /// server.
    pub(super) backlog: bool,
    /// Per replica: (link id, acknowledged offset; none before its first `REPLCONF ACK`,
    /// while it loads the snapshot, so WAIT does not count it yet).
    pub(super) acks: BTreeMap<String, (u64, Option<u64>)>,
    pub(super) next_link: u64,
    pub(super) changed: Rc<Notify>,
}

impl Stream {
    /// The replication offset: bytes ever appended.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// Append encoded commands and wake the feeders.
    pub(crate) fn append(&mut self, bytes: &[u8]) {
        if !self.backlog {
            return;
        }
        self.bytes.extend_from_slice(bytes);
        self.changed.notify_waiters();
    }

    /// Start a new history at `offset` (a promotion): new id, no replicas yet.
    pub(super) fn restart_at(&mut self, offset: u64) {
        self.replid += 1;
        self.base = offset;
        // A promoted replica kept a backlog of its primary's stream.
        self.backlog = true;
        self.bytes.clear();
        self.acks.clear();
        self.changed.notify_waiters();
    }

    /// Replicas currently linked.
    pub(crate) fn replicas(&self) -> usize {
        self.acks.len()
    }

    pub(super) fn acked(&self, target: u64) -> usize {
        self.acks
            .values()
            .filter(|(_, off)| off.is_some_and(|off| off >= target))
            .count()
    }
}
