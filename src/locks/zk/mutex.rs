//! Curator's `InterProcessMutex` (apache/curator `LockInternals`,
//! `StandardLockInternalsDriver`, `CreateBuilderImpl`, `ProtectedMode`, read at 88dee99a)
//! as locksim's [`LockClient`].
//!
//! # acquire (`LockInternals.attemptLock`)
//!
//! 1. `createsTheLock`: `create().creatingParentContainersIfNeeded().withProtection()
//!    .withMode(EPHEMERAL_SEQUENTIAL).forPath("/locks/L/lock-")`. With protection the
//!    name is `_c_<GUID>-lock-`, the GUID fresh for each acquire (`ProtectedMode`). The
//!    create runs in the retry loop; after a `ConnectionLoss` the next try first looks
//!    for a child with the GUID prefix (`findProtectedNodeInForeground`) and uses it if
//!    found — unless the session changed meanwhile (`validateFoundNode`: the old
//!    session's node is deleted in the background). Without protection the retry simply
//!    creates again, and the first node, if it was created, is an orphan that this
//!    client's session keeps alive: it sorts first and nobody ever acquires again
//!    (CURATOR-79, ZOOKEEPER-1262; catalogue row 15). A missing parent (`NoNode`) is
//!    created as containers (`ZKPaths.mkdirs`) and the create tried again. If all tries
//!    fail with protection on, the GUID's node is deleted in the background
//!    (`FindAndDeleteProtectedNodeInBackground`).
//! 2. `internalLockLoop`: `getChildren("/locks/L")`, sorted by the sequence after the last
//!    `lock-`; first → the lock is ours. Otherwise `getData` with a watch on the
//!    predecessor (not `exists`, to leave no watch behind) and wait for the watch, a
//!    connection change, or the acquire timeout; `NoNode` → look again at once.
//! 3. On timeout, or on an error, our node is deleted (`deleteOurPath`, a guaranteed
//!    delete: in the background if the foreground delete fails).
//!
//! # Outcomes, honestly
//!
//! * **ok**: we saw our node first. The fencing token is its `czxid` (from the create's
//!   stat, or an `exists` when protected mode found the node), or its sequence suffix.
//!   Like Curator, the lock loop compares names only: after a LOST it can find and use
//!   a node of its *old* session that the server has not expired yet (the server may
//!   have heard from the client after the client last heard from it, and expiry is
//!   rounded up to a tick); the server then expires it and grants the next waiter.
//! * **fail** (did not take effect) only when no node of ours can be left: we deleted
//!   it ourselves, and no create of this acquire had its reply lost.
//! * **info** (may have taken effect) otherwise: a create whose reply was lost and not
//!   found again in the same session (the node may exist, sort first and hold the lock
//!   for our session); our node vanished or was already gone when we deleted it (its
//!   session expired — it may have owned the lock, and an `expire` was recorded); a
//!   delete we could not confirm. An acquire never spans two sessions once a create's
//!   outcome is unknown: where Curator would retry inside the call after a session
//!   change (`validateFoundNode`), the operation ends and the workload starts a new one,
//!   which sends the same requests, so the history never holds two grants for one
//!   acquire.
//! * **Sequential path not found** (our node vanished from the children: its session
//!   ended): Curator's `attemptLock` retries inside the call while its retry policy
//!   allows (`retries`, with the backoff sleep), and so does this client; the history
//!   closes the part before the retry as an `info` acquire and opens a new `invoke`
//!   (the vanished node may have owned the lock). Past the retries, the acquire ends
//!   `info`.
//!
//! `abandon` (after an info acquire) deletes our node if known and, with protection, any
//! node with our GUID; it reports a release only if a node it deleted itself was first
//! (owned the lock) — a waiter's node going away releases nothing, and a delete whose
//! reply was lost on the owner node is info.
//!
//! # release
//!
//! A guaranteed delete of our node: `Ok(true)` when our delete removed it; `Ok(false)`
//! when it was already gone (the session's end took it and ended our hold, with an
//! `expire`); info when a delete's reply was lost (then `NoNode` may be our own delete or
//! the session's end) or it could not be confirmed (it goes on in the background).
//!
//! # SUSPENDED
//!
//! `InterProcessMutex` itself ignores connection states: a holder that is SUSPENDED (or
//! LOST) still "holds" (CURATOR-206: by design). With `on_suspended = "stop"` the
//! grant's `valid_until` is the client's belief — `readTimeout` (2/3 of the session
//! timeout) after the last reply, ended for good at SUSPENDED or LOST — and
//! [`LockClient::lost`] tells the workload to stop working at once; its validity check
//! then skips the write.
//!
//! What `stop` then guarantees: no write *starts* after the belief ended. The server
//! expires the session no earlier than a session timeout after the last request it
//! received, and that request preceded the client's last reply by a one-way latency; so,
//! with equal clock rates, the belief ends at least `T/3 −` one-way latency before the
//! server can expire the session and grant the lock to someone else. Mutual exclusion
//! holds if the holder is not paused and a write that started in time finishes (or
//! gives up) within that margin; a pause after the validity check, a write slower than
//! the margin, or a client clock running slower than the server's by more than the
//! margin allows are the windows no client-side check closes — the czxid token does.

use super::curator::CuratorFramework;
use super::params::{OnSuspended, ZkParams, ZkToken};
use super::proto::{Request, Response};
use super::tree::{CreateMode, SessionId, Stat, ZkError};
use super::watches::Watcher;
use crate::history::names;
use crate::history::EventType;
use crate::locks::{Grant, LocalBoxFuture, LockClient, LockError, Wait as AcquireWait};
use crate::sim::NodeCtx;
use layout::{lock_base, sort_lock_children, LOCK_NAME};
use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;

pub(crate) mod layout;

/// The Curator mutex client of one client node.
pub(crate) struct CuratorMutex {
    client: CuratorFramework,
    /// The GUID of the current (or last) acquire, in protected mode.
    guid: Option<String>,
    /// Our lock node of the current (or last) acquire, if created.
    our_path: Option<String>,
    /// Sessions in which a create of the current acquire may have made a node we do
    /// not know (its reply was lost).
    maybe_sessions: RefCell<BTreeSet<SessionId>>,
    /// Curator's `threadData` entry (`LockData`): the grant this client holds and its
    /// `lockCount`. An acquire while it is set only counts up, with no request, and a
    /// release only counts down until the last one.
    held: Option<(Grant, u32)>,
}

/// What a delete of our node did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deleted {
    /// Our delete removed it.
    ByUs,
    /// It was gone before we tried.
    AlreadyGone,
    /// It is gone, by our delete (reply lost) or by the end of its session.
    Ambiguous,
    /// Not confirmed (the delete goes on in the background).
    Unconfirmed,
}

/// What one try of `createsTheLock` came to.
enum Created {
    /// Our lock node: created (with its stat) or found again by protected mode.
    Node(String, Option<Stat>),
    /// The acquire ends here with this error: no further try, no background delete.
    GaveUp(ZkError),
}

/// What `createsTheLock` keeps from one try to the next.
struct CreateTries<'a> {
    /// The lock's folder (`/locks/L`).
    base: &'a str,
    /// The path to create: `base/lock-`, or `base/_c_<GUID>-lock-` with protection.
    path: String,
    /// `_c_<GUID>-` with protection.
    prefix: Option<String>,
    /// The session protected mode trusts a found node of (the first connected try's).
    session: Cell<SessionId>,
    /// No connected try yet: the first creates without looking for an earlier node.
    first: Cell<bool>,
}

/// How `internalLockLoop` ended.
#[derive(Debug)]
enum Wait {
    /// Our node sorts first: the lock is ours.
    Ours,
    /// The deadline passed while we waited for a predecessor.
    TimedOut,
    /// Our node is gone from the children ("Sequential path not found"): its session
    /// ended.
    Vanished,
    /// A request failed past its retries.
    Failed(ZkError),
}

/// Why an acquire did not succeed, before mapping to [`LockError`].
enum Failure {
    /// The lock was not ours and no node of ours can exist.
    Definite(String),
    /// The outcome is unknown.
    Unknown(String),
}

fn uuid(ctx: &NodeCtx) -> String {
    let (a, b) = (ctx.rand_u64(), ctx.rand_u64());
    // A version-4 UUID's canonical text form.
    let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    let a = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// `ExponentialBackoffRetry`'s sleep before retry `n`: `base × max(1, random(0 ..
/// 2^(n+1)))`.
async fn backoff(ctx: &NodeCtx, base_ms: u64, n: u32) {
    let bound = 1u64 << (n + 1);
    let k = ctx.rand_range(0, bound - 1).max(1);
    ctx.sleep(Duration::from_millis(base_ms * k)).await;
}

/// The sequence suffix of a lock node name.
pub(crate) fn sequence_of(path: &str) -> Option<u64> {
    let tail = path.get(path.len().checked_sub(10)?..)?;
    tail.parse().ok()
}

impl CuratorMutex {
    /// A client with its own Curator framework (started at the first acquire).
    pub(crate) fn new(params: ZkParams) -> CuratorMutex {
        CuratorMutex {
            client: CuratorFramework::new(params),
            guid: None,
            our_path: None,
            maybe_sessions: RefCell::new(BTreeSet::new()),
            held: None,
        }
    }

    fn params(&self) -> &ZkParams {
        self.client.params()
    }

    /// Whether a create of this acquire may have left an unknown node in a session other
    /// than `current`.
    fn maybe_in_other_session(&self, current: SessionId) -> bool {
        self.maybe_sessions.borrow().iter().any(|&s| s != current)
    }

    /// One call; if it was sent and its reply lost, `maybe` gets the session it was sent
    /// in (the request may have been applied).
    async fn call_noting(
        &self,
        req: Request,
        maybe: &Cell<Option<SessionId>>,
    ) -> Result<Response, ZkError> {
        let (sent, session) = (self.client.is_connected(), self.client.session());
        let r = self.client.call(req, None).await;
        if sent && matches!(r, Err(ZkError::ConnectionLoss | ZkError::SessionExpired)) {
            maybe.set(Some(session));
        }
        r
    }

    /// [`Self::call_noting`] under the retry loop.
    async fn retry_noting(
        &self,
        ctx: &NodeCtx,
        req: Request,
        maybe: &Cell<Option<SessionId>>,
    ) -> Result<Response, ZkError> {
        self.client
            .retry(ctx, || self.call_noting(req.clone(), maybe))
            .await
    }

    /// `ZKPaths.mkdirs(..., asContainers = true)` for `base`'s ancestors and `base`.
    async fn mkdirs(&self, base: &str) -> Result<(), ZkError> {
        let mut path = String::new();
        for part in base.split('/').filter(|p| !p.is_empty()) {
            path.push('/');
            path.push_str(part);
            let r = self
                .client
                .call(
                    Request::Create {
                        path: path.clone(),
                        data: Vec::new(),
                        mode: CreateMode::Container,
                        with_stat: true,
                    },
                    None,
                )
                .await;
            match r {
                Ok(_) | Err(ZkError::NodeExists) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One try of the create (with `creatingParentContainersIfNeeded`).
    async fn create_once(
        &self,
        ctx: &NodeCtx,
        base: &str,
        path: &str,
    ) -> Result<(String, Stat), ZkError> {
        // Curator stores the client's address as the lock node's data.
        let data = ctx.name().as_bytes().to_vec();
        let create = || Request::Create {
            path: path.to_string(),
            data: data.clone(),
            mode: CreateMode::EphemeralSequential,
            // Curator creates through create2.
            with_stat: true,
        };
        let maybe = Cell::new(None);
        let r = match self.call_noting(create(), &maybe).await {
            Err(ZkError::NoNode) => {
                self.mkdirs(base).await?;
                self.call_noting(create(), &maybe).await
            }
            r => r,
        };
        if let Some(session) = maybe.get() {
            // The create may have been applied with its reply lost.
            self.maybe_sessions.borrow_mut().insert(session);
        }
        match r? {
            Response::Created { path, stat } => Ok((path, stat)),
            _ => Err(ZkError::BadArguments),
        }
    }

    /// `findProtectedNodeInForeground` + `validateFoundNode`.
    async fn find_protected(
        &self,
        ctx: &NodeCtx,
        base: &str,
        prefix: &str,
        session: &Cell<SessionId>,
    ) -> Result<Option<String>, ZkError> {
        let r = self
            .client
            .retry_call(
                ctx,
                Request::GetChildren {
                    path: base.to_string(),
                    watch: false,
                    with_stat: false,
                },
                None,
            )
            .await;
        let found = match r {
            Ok(Response::Children { children, .. }) => children
                .into_iter()
                .find(|c| c.starts_with(prefix))
                .map(|c| format!("{base}/{c}")),
            Ok(_) | Err(ZkError::NoNode) => None,
            Err(e) => return Err(e),
        };
        let now = self.client.session();
        if session.get() != now {
            tracing::debug!(
                old = session.get(),
                new = now,
                "session changed during protected mode"
            );
            if let Some(f) = &found {
                self.client.delete_in_background(f);
            }
            session.set(now);
            return Ok(None);
        }
        Ok(found)
    }

    /// `createsTheLock`: the protected create under the retry loop (module docs).
    async fn create_lock_node(
        &self,
        ctx: &NodeCtx,
        base: &str,
    ) -> Result<(String, Option<Stat>), ZkError> {
        let prefix = self.guid.as_ref().map(|g| format!("_c_{g}-"));
        let path = format!("{base}/{}{LOCK_NAME}", prefix.as_deref().unwrap_or(""));
        let tries = CreateTries {
            base,
            path,
            prefix,
            session: Cell::new(self.client.session()),
            first: Cell::new(true),
        };
        match self
            .client
            .retry(ctx, || self.create_attempt(ctx, &tries))
            .await
        {
            Ok(Created::Node(path, stat)) => Ok((path, stat)),
            Ok(Created::GaveUp(e)) => Err(e),
            Err(e) => {
                // All tries failed: the node of a create whose reply was lost goes in the
                // background (`FindAndDeleteProtectedNodeInBackground`).
                if let Some(prefix) = &tries.prefix {
                    if e == ZkError::ConnectionLoss {
                        self.client.find_and_delete_in_background(base, prefix);
                    }
                }
                Err(e)
            }
        }
    }

    /// One connected try of `createsTheLock`: after the first, protected mode looks for
    /// the node of an earlier try before it creates.
    async fn create_attempt(
        &self,
        ctx: &NodeCtx,
        tries: &CreateTries<'_>,
    ) -> Result<Created, ZkError> {
        let current = self.client.session();
        if self.maybe_in_other_session(current) {
            // A create of the old session may have left a node that owned the lock and
            // expired with it: this acquire ends here, unknown (Curator would delete
            // that node and create anew in the same call).
            if let Some(prefix) = &tries.prefix {
                self.client
                    .find_and_delete_in_background(tries.base, prefix);
            }
            return Ok(Created::GaveUp(ZkError::SessionExpired));
        }
        if tries.session.get() == 0 {
            tries.session.set(current);
        }
        let found = if tries.first.replace(false) {
            None
        } else {
            self.find_earlier_try(ctx, tries).await?
        };
        match found {
            Some(f) => {
                tracing::debug!(path = f, "protected mode found our node");
                // Found in the session it was created in: nothing unknown left.
                self.maybe_sessions
                    .borrow_mut()
                    .remove(&tries.session.get());
                Ok(Created::Node(f, None))
            }
            None => {
                let (path, stat) = self.create_once(ctx, tries.base, &tries.path).await?;
                Ok(Created::Node(path, Some(stat)))
            }
        }
    }

    /// With protection, the node an earlier try of this acquire created, if found in the
    /// same session; a connection error finds nothing (the try creates anew).
    async fn find_earlier_try(
        &self,
        ctx: &NodeCtx,
        tries: &CreateTries<'_>,
    ) -> Result<Option<String>, ZkError> {
        let Some(prefix) = &tries.prefix else {
            return Ok(None);
        };
        match self
            .find_protected(ctx, tries.base, prefix, &tries.session)
            .await
        {
            Err(ZkError::ConnectionLoss | ZkError::SessionExpired | ZkError::SessionMoved) => {
                Ok(None)
            }
            r => r,
        }
    }

    /// `internalLockLoop` until the lock is ours or `deadline` (local ns) passes.
    async fn lock_loop(&self, ctx: &NodeCtx, base: &str, our: &str, deadline: i64) -> Wait {
        let watcher: Watcher = Rc::new(Notify::new());
        let name = our.rsplit('/').next().unwrap_or(our).to_string();
        loop {
            let r = self
                .client
                .retry_call(
                    ctx,
                    Request::GetChildren {
                        path: base.to_string(),
                        watch: false,
                        with_stat: false,
                    },
                    None,
                )
                .await;
            let mut children = match r {
                Ok(Response::Children { children, .. }) => children,
                Ok(_) | Err(ZkError::NoNode) => Vec::new(),
                Err(e) => return Wait::Failed(e),
            };
            sort_lock_children(&mut children);
            let Some(i) = children.iter().position(|c| *c == name) else {
                // "Sequential path not found": the session that owned it is gone.
                return Wait::Vanished;
            };
            if i == 0 {
                return Wait::Ours;
            }
            let previous = format!("{base}/{}", children[i - 1]);
            let r = self
                .client
                .retry_call(
                    ctx,
                    Request::GetData {
                        path: previous.clone(),
                        watch: true,
                    },
                    Some(watcher.clone()),
                )
                .await;
            match r {
                Ok(_) => {}
                // It has been deleted (the lock was released): look again.
                Err(ZkError::NoNode) => continue,
                Err(e) => return Wait::Failed(e),
            }
            let left = deadline - ctx.mono_ns();
            if left <= 0 {
                return Wait::TimedOut;
            }
            tracing::debug!(watching = previous, "waiting for the predecessor");
            let _ = ctx
                .timeout(Duration::from_nanos(left as u64), watcher.notified())
                .await;
        }
    }

    /// `deleteOurPath`: a guaranteed delete (in the background if it fails here).
    async fn delete_ours(&self, ctx: &NodeCtx, path: &str) -> Deleted {
        let maybe = Cell::new(None);
        let r = self
            .retry_noting(
                ctx,
                Request::Delete {
                    path: path.to_string(),
                    version: -1,
                },
                &maybe,
            )
            .await;
        match r {
            Ok(_) => Deleted::ByUs,
            // NoNode after a delete whose reply was lost: gone, by us or by the end of
            // the session (which records an expire if the node owned the lock).
            Err(ZkError::NoNode) if maybe.get().is_some() => Deleted::Ambiguous,
            Err(ZkError::NoNode) => Deleted::AlreadyGone,
            Err(_) => {
                self.client.delete_in_background(path);
                Deleted::Unconfirmed
            }
        }
    }

    async fn token(
        &self,
        ctx: &NodeCtx,
        path: &str,
        stat: Option<Stat>,
    ) -> Result<Option<u64>, ZkError> {
        Ok(match self.params().token {
            ZkToken::None => None,
            ZkToken::Sequence => sequence_of(path),
            ZkToken::Czxid => match stat {
                Some(s) => Some(s.czxid),
                None => {
                    let r = self
                        .client
                        .retry_call(
                            ctx,
                            Request::Exists {
                                path: path.to_string(),
                                watch: false,
                            },
                            None,
                        )
                        .await?;
                    match r {
                        Response::Exists { stat: Some(s) } => Some(s.czxid),
                        _ => return Err(ZkError::NoNode),
                    }
                }
            },
        })
    }

    /// `internalLock`: re-entry counts up (`lockData.lockCount.incrementAndGet()`);
    /// otherwise `attemptLock`, and a grant becomes the thread's `LockData`.
    async fn internal_lock(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        wait: AcquireWait,
    ) -> Result<Grant, Failure> {
        if let Some((grant, count)) = &mut self.held {
            if grant.lock == lock {
                *count += 1;
                return Ok(grant.clone());
            }
        }
        let grant = self.acquire_impl(ctx, lock, wait).await?;
        self.held = Some((grant.clone(), 1));
        Ok(grant)
    }

    /// `attemptLock` with `acquire(time, unit)`'s wait: a try (`AcquireWait::No`) is
    /// `acquire(0, ms)`, which creates its node, looks once and deletes it if another
    /// node sorts first.
    async fn acquire_impl(
        &mut self,
        ctx: &NodeCtx,
        lock: &str,
        wait: AcquireWait,
    ) -> Result<Grant, Failure> {
        self.client.start(ctx);
        let deadline = match wait {
            AcquireWait::For(_) => wait.deadline_ns(ctx),
            AcquireWait::No(_) => ctx.mono_ns(),
        };
        let base = lock_base(lock);
        self.guid = self.params().protected.then(|| uuid(ctx));
        self.our_path = None;
        self.maybe_sessions.get_mut().clear();
        // Not ours, and no node of ours left behind, unless a create's outcome is unknown.
        let failed = |me: &Self, why: String| {
            if me.maybe_sessions.borrow().is_empty() {
                Failure::Definite(why)
            } else {
                Failure::Unknown(format!("{why}; a create's reply was lost"))
            }
        };
        let mut retry = 0u32;
        let (our, stat, r) = loop {
            let (our, stat) = match self.create_lock_node(ctx, &base).await {
                Ok(x) => x,
                Err(e) => return Err(failed(self, format!("create: {e}"))),
            };
            self.our_path = Some(our.clone());
            let r = self.lock_loop(ctx, &base, &our, deadline).await;
            if matches!(r, Wait::Vanished) && retry < self.params().retries {
                self.try_again(ctx, lock, &our, retry).await;
                retry += 1;
                continue;
            }
            break (our, stat, r);
        };
        // Definite only if *we* deleted our node: gone otherwise means its session's
        // end took it, and it may have owned the lock (an expire) before.
        let after_delete = |me: &Self, d: Deleted, why: String| match d {
            Deleted::ByUs => failed(me, why),
            Deleted::AlreadyGone | Deleted::Ambiguous | Deleted::Unconfirmed => {
                Failure::Unknown(format!("{why}; delete of our node: {d:?}"))
            }
        };
        match r {
            Wait::Ours => {
                let token = match self.token(ctx, &our, stat).await {
                    Ok(t) => t,
                    Err(e) => {
                        let d = self.delete_ours(ctx, &our).await;
                        return Err(after_delete(self, d, format!("reading the token: {e}")));
                    }
                };
                // A node of an earlier session of ours may have owned the lock unseen
                // (and expired with it): this grant cannot be the only one.
                if self.maybe_in_other_session(self.client.session()) {
                    return Err(Failure::Unknown(
                        "acquired, but a create of an earlier session had its reply lost".into(),
                    ));
                }
                let valid_until = (self.params().on_suspended == OnSuspended::Stop)
                    .then(|| self.client.hold(ctx));
                Ok(Grant {
                    lock: lock.to_string(),
                    token,
                    owner_value: our,
                    valid_until,
                })
            }
            Wait::TimedOut => {
                let d = self.delete_ours(ctx, &our).await;
                let why = match wait {
                    AcquireWait::For(_) => "timed out waiting for the lock",
                    AcquireWait::No(_) => "busy: another lock node sorts first (acquire(0))",
                };
                Err(after_delete(self, d, why.into()))
            }
            Wait::Vanished => Err(Failure::Unknown(
                "our lock node vanished (its session expired)".into(),
            )),
            Wait::Failed(e) => {
                let d = self.delete_ours(ctx, &our).await;
                Err(after_delete(self, d, e.to_string()))
            }
        }
    }

    /// `attemptLock` after "Sequential path not found" (`NoNodeException`): Curator
    /// deletes our path (guaranteed, already gone), asks the retry policy (a backoff
    /// sleep) and creates the lock node again, with a new protection GUID, within the
    /// same acquire and its deadline. The history splits the call there: the node that
    /// vanished may have owned the lock before its session's end took it (the server
    /// recorded an `expire`), so that much of the call ends as an `info` acquire and the
    /// rest is a new `invoke`; one completion can never stand for two grants.
    async fn try_again(&mut self, ctx: &NodeCtx, lock: &str, our: &str, retry: u32) {
        tracing::debug!(path = our, retry, "sequential path not found: trying again");
        let _ = self.delete_ours(ctx, our).await;
        ctx.record(
            ctx.event(EventType::Info, names::ACQUIRE)
                .lock(lock)
                .reason("our lock node vanished (its session expired); Curator tries again"),
        );
        ctx.record(ctx.event(EventType::Invoke, names::ACQUIRE).lock(lock));
        backoff(ctx, self.params().retry_base_ms, retry).await;
        self.guid = self.params().protected.then(|| uuid(ctx));
        self.our_path = None;
        // A create of the closed part whose reply was lost belongs to its info.
        self.maybe_sessions.get_mut().clear();
    }

    async fn release_impl(&mut self, ctx: &NodeCtx, grant: &Grant) -> Result<bool, LockError> {
        // `release()`: count down; only the last release deletes the node (and the
        // thread's `LockData` goes whatever the delete does).
        if let Some((held, count)) = &mut self.held {
            if held.owner_value == grant.owner_value && *count > 1 {
                *count -= 1;
                return Ok(true);
            }
        }
        self.held = None;
        self.client.unhold();
        match self.delete_ours(ctx, &grant.owner_value).await {
            Deleted::ByUs => Ok(true),
            // The session's end took it (and ended our hold): this release did nothing.
            Deleted::AlreadyGone => Ok(false),
            d => Err(LockError::Indeterminate(format!(
                "delete of our node {d:?}"
            ))),
        }
    }

    /// Delete what an info acquire may have left (module docs).
    async fn abandon_impl(&mut self, ctx: &NodeCtx, lock: &str) -> Result<bool, LockError> {
        self.client.start(ctx);
        let base = lock_base(lock);
        let prefix = self.guid.as_ref().map(|g| format!("_c_{g}-"));
        let r = self
            .client
            .retry_call(
                ctx,
                Request::GetChildren {
                    path: base.clone(),
                    watch: false,
                    with_stat: false,
                },
                None,
            )
            .await;
        let mut children = match r {
            Ok(Response::Children { children, .. }) => children,
            Ok(_) | Err(ZkError::NoNode) => Vec::new(),
            Err(e) => {
                if let Some(p) = &self.our_path {
                    self.client.delete_in_background(p);
                }
                if let Some(prefix) = &prefix {
                    self.client.find_and_delete_in_background(&base, prefix);
                }
                return Err(LockError::Indeterminate(format!("getChildren: {e}")));
            }
        };
        sort_lock_children(&mut children);
        let ours = |c: &String| {
            let full = format!("{base}/{c}");
            self.our_path.as_deref() == Some(full.as_str())
                || prefix.as_deref().is_some_and(|p| c.starts_with(p))
        };
        let mine: Vec<(usize, String)> = children
            .iter()
            .enumerate()
            .filter(|(_, c)| ours(c))
            .map(|(i, c)| (i, format!("{base}/{c}")))
            .collect();
        let mut released = false;
        for (i, path) in mine {
            let d = self.delete_ours(ctx, &path).await;
            // Only a node that sorted first held the lock; a waiter's node going away
            // releases nothing.
            match (i == 0, d) {
                (true, Deleted::ByUs) => released = true,
                (true, Deleted::Ambiguous) | (_, Deleted::Unconfirmed) => {
                    return Err(LockError::Indeterminate(format!("delete of {path}: {d:?}")))
                }
                _ => {}
            }
        }
        self.our_path = None;
        Ok(released)
    }
}

impl LockClient for CuratorMutex {
    fn acquire<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
        wait: AcquireWait,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(async move {
            match self.internal_lock(ctx, lock, wait).await {
                Ok(g) => Ok(g),
                Err(Failure::Definite(why)) => Err(LockError::Failed(why)),
                Err(Failure::Unknown(why)) => Err(LockError::Indeterminate(why)),
            }
        })
    }

    fn release<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(self.release_impl(ctx, grant))
    }

    fn abandon<'a>(
        &'a mut self,
        ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(self.abandon_impl(ctx, lock))
    }

    fn lost<'a>(&'a self, ctx: &'a NodeCtx, _grant: &'a Grant) -> Option<LocalBoxFuture<'a, ()>> {
        (self.params().on_suspended == OnSuspended::Stop)
            .then(|| Box::pin(self.client.belief_lost(ctx)) as LocalBoxFuture<'a, ()>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_suffixes_and_protected_names() {
        assert_eq!(sequence_of("/locks/L/_c_x-lock-0000000042"), Some(42));
        assert_eq!(sequence_of("/locks/L/lock-0000000000"), Some(0));
        assert_eq!(sequence_of("lock-"), None);
    }
}
