//! Where the lock recipe keeps its locks (Curator's `InterProcessMutex`, apache/curator
//! `StandardLockInternalsDriver`, read at 88dee99a): lock `L` is the children of
//! `/locks/L`, ordered by the sequence suffix after the last `lock-`
//! (`fixForSorting`), and the first child owns the lock.
//!
//! ZooKeeper knows nothing of this; the recipe does, and so does the history: a session
//! close that deletes a lock's owner node is the lock's `expire` event, which the
//! simulated server ([`super::super::core`]) and live mode's log reader name with
//! [`lost_owners`] and [`sort_lock_children`].

use crate::locks::zk::tree::{split_path, DataTree, SessionId};

/// Where the lock recipe keeps its locks: lock `L` lives under `/locks/L`.
pub(crate) const LOCK_ROOT: &str = "/locks";
/// The recipe's lock name: nodes are `[_c_<GUID>-]lock-<10 digits>`.
pub(crate) const LOCK_NAME: &str = "lock-";

/// A lock's owner node deleted by a session close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LostOwner {
    /// The lock name (`L` of `/locks/L`).
    pub lock: String,
    /// The owner node's path.
    pub path: String,
    /// Its session.
    pub session: SessionId,
}

/// The sort key of a lock node name: what follows the last `lock-`.
pub(crate) fn lock_sort_key(name: &str) -> &str {
    match name.rfind(LOCK_NAME) {
        Some(i) => &name[i + LOCK_NAME.len()..],
        None => name,
    }
}

/// Children of a lock path in the recipe's order (`LockInternals.getSortedChildren`).
pub(crate) fn sort_lock_children(children: &mut [String]) {
    children.sort_by(|a, b| lock_sort_key(a).cmp(lock_sort_key(b)).then(a.cmp(b)));
}

/// The path of lock `lock`'s node directory.
pub(crate) fn lock_base(lock: &str) -> String {
    format!("{LOCK_ROOT}/{lock}")
}

/// The lock a node at `path` waits on or holds (`L` of `/locks/L/<node>`), if any.
pub(crate) fn lock_of(path: &str) -> Option<&str> {
    let (parent, _) = split_path(path);
    parent
        .strip_prefix(LOCK_ROOT)
        .and_then(|l| l.strip_prefix('/'))
        .filter(|l| !l.contains('/'))
}

/// The node that owns lock `lock` in `tree` (the first child of `/locks/lock`), if any.
pub(crate) fn lock_owner(tree: &DataTree, lock: &str) -> Option<String> {
    let base = lock_base(lock);
    let mut children = tree.children(&base)?;
    sort_lock_children(&mut children);
    children.first().map(|c| format!("{base}/{c}"))
}

/// The locks `session`'s ephemeral nodes own in `tree`: what closing the session takes
/// from their holders. Read *before* the close deletes them: a session can hold a lock
/// with one node while another of its nodes waits behind it (one entry per lock).
pub(crate) fn lost_owners(tree: &DataTree, session: SessionId) -> Vec<LostOwner> {
    let mut owners: Vec<LostOwner> = Vec::new();
    for path in tree.ephemerals(session) {
        let Some(lock) = lock_of(&path) else {
            continue;
        };
        if lock_owner(tree, lock).as_deref() == Some(path.as_str())
            && !owners.iter().any(|o| o.lock == lock)
        {
            owners.push(LostOwner {
                lock: lock.to_string(),
                path: path.clone(),
                session,
            });
        }
    }
    owners
}
