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

/// `session`'s ephemeral nodes in `tree` that own no lock `owners` names (read before
/// the close deletes them): waiters of this layout, and every node of other layouts.
/// Served, their deletion is reported too: a recipe other than Curator's (kazoo's `Lock`
/// keeps `<path>/<uuid>__lock__<seq>`, Curator's semaphore `<path>/leases/…`, a user's
/// own `InterProcessMutex` any path) holds its locks with such nodes, and the server
/// cannot tell which of them held one.
pub(crate) fn other_ephemerals(
    tree: &DataTree,
    session: SessionId,
    owners: &[LostOwner],
) -> Vec<String> {
    tree.ephemerals(session)
        .into_iter()
        .filter(|path| !owners.iter().any(|o| &o.path == path))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::zk::db::{Op, Txn, TxnOk, ZkDb};
    use crate::locks::zk::tree::CreateMode;

    fn apply(
        db: &mut ZkDb,
        session: SessionId,
        op: Op,
    ) -> Result<TxnOk, crate::locks::zk::tree::ZkError> {
        let zxid = db.last_zxid() + 1;
        let txn = Txn {
            session,
            owner: 1,
            time_ms: 0,
            op,
        };
        db.apply(zxid, &txn).result
    }

    fn create(db: &mut ZkDb, session: SessionId, path: &str, mode: CreateMode) -> String {
        let op = Op::Create {
            path: path.into(),
            data: vec![],
            mode,
        };
        match apply(db, session, op) {
            Ok(TxnOk::Created { path, .. }) => path,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_first_child_in_sequence_order_owns_the_lock_and_a_close_names_it_once() {
        let mut db = ZkDb::new();
        for s in [1, 2] {
            apply(&mut db, s, Op::CreateSession { timeout_ms: 1000 }).unwrap();
        }
        create(&mut db, 1, LOCK_ROOT, CreateMode::Container);
        create(&mut db, 1, &lock_base("L"), CreateMode::Container);
        let seq = CreateMode::EphemeralSequential;
        let owner = create(&mut db, 1, "/locks/L/lock-", seq);
        let waiter = create(&mut db, 2, "/locks/L/_c_0000-lock-", seq);
        // Session 1 also waits behind itself with a second node: one entry only.
        create(&mut db, 1, "/locks/L/lock-", seq);
        assert_eq!(lock_owner(&db.tree, "L").as_deref(), Some(owner.as_str()));
        assert_eq!(lock_of(&owner), Some("L"));
        assert_eq!(lock_of("/locks/L"), None);
        let lost = lost_owners(&db.tree, 1);
        assert_eq!(
            lost,
            vec![LostOwner {
                lock: "L".into(),
                path: owner,
                session: 1
            }]
        );
        apply(&mut db, 1, Op::CloseSession).unwrap();
        assert_eq!(lock_owner(&db.tree, "L").as_deref(), Some(waiter.as_str()));
        assert_eq!(
            lost_owners(&db.tree, 2).len(),
            1,
            "the waiter became the owner"
        );
    }
}
