//! Curator's framework (apache/curator, read at 88dee99a) over one ZooKeeper handle at a
//! time ([`super::handle`]): its connection states, retry loop and background
//! operations. The lock recipe on top is [`super::mutex`].
//!
//! * Connection states (`ConnectionStateManager`): CONNECTED at the first connection,
//!   SUSPENDED when the connection is lost, RECONNECTED when a connection (same session,
//!   or a new one after LOST) is back, LOST when the server reports the session expired
//!   *or* when a whole session timeout has passed since SUSPENDED (Curator ≥ 3,
//!   `sessionExpirationPercent = 100`: `checkSessionExpiration` then injects an
//!   expiration). Curator measures that with `System.currentTimeMillis()`, so this does
//!   too: the client's *wall* clock.
//! * After LOST the handle is replaced by a new one with a new session (`ConnectionState
//!   .reset()`); an operation that started on the old one may carry on on the new one.
//! * `RetryLoop.callWithRetry` with `ExponentialBackoffRetry`: an operation first waits
//!   up to `connectionTimeoutMs` for a connection, and is retried after
//!   `ConnectionLoss`, `SessionExpired`, `SessionMoved` (and `OperationTimeout`, which
//!   this model never produces) while retries remain, sleeping
//!   `base × max(1, random(0 .. 2^(n+1)))` before retry n.
//! * Background operations (`FailedDeleteManager`, `FindAndDeleteProtectedNodeInBackground`)
//!   run until they succeed.
//!
//! # History
//!
//! The client records its Curator state changes as point events `connection` with the
//! state as value (CONNECTED, SUSPENDED, RECONNECTED, LOST) and why, so a replay shows
//! what the holder knew.

use super::handle::{send_thread, HandleEvents, ZkHandle};
use super::params::ZkParams;
use super::proto::{Request, Response};
use super::states::{CuratorState, Disconnect, StateReason};
use super::tree::{SessionId, ZkError};
use super::watches::Watcher;
use crate::history::{names, EventType};
use crate::sim::NodeCtx;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;
use tokio::sync::Notify;

/// A Curator background operation, retried until it succeeds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Background {
    /// A guaranteed delete (`FailedDeleteManager`).
    Delete(String),
    /// Delete whatever child of `parent` starts with `prefix` (a protected create's
    /// node whose outcome is unknown).
    FindAndDelete { parent: String, prefix: String },
}

/// The holder's belief in its grant (for `on_suspended = "stop"`).
struct Belief {
    until: Rc<Cell<i64>>,
    lost: bool,
}

struct State {
    curator: CuratorState,
    suspended_at_wall_ms: i64,
    belief: Option<Belief>,
    background: Vec<Background>,
}

struct Inner {
    handle: ZkHandle,
    state: RefCell<State>,
    /// Any change of connection or belief: waiters re-check.
    changed: Notify,
    started: Cell<bool>,
}

/// A Curator framework over one ZooKeeper handle at a time. Cheap to clone.
#[derive(Clone)]
pub(crate) struct CuratorFramework(Rc<Inner>);

impl CuratorFramework {
    /// A framework for the servers `zk-0 .. zk-{servers-1}` (not connected until
    /// [`CuratorFramework::start`]).
    pub(crate) fn new(params: ZkParams) -> CuratorFramework {
        CuratorFramework(Rc::new(Inner {
            handle: ZkHandle::new(params),
            state: RefCell::new(State {
                curator: CuratorState::Latent,
                suspended_at_wall_ms: 0,
                belief: None,
                background: Vec::new(),
            }),
            changed: Notify::new(),
            started: Cell::new(false),
        }))
    }

    /// Start the handle's send thread, the LOST timer and the background operations
    /// (once).
    pub(crate) fn start(&self, ctx: &NodeCtx) {
        if self.0.started.replace(true) {
            return;
        }
        ctx.spawn(send_thread(
            self.0.handle.clone(),
            self.clone(),
            ctx.clone(),
        ));
        ctx.spawn(lost_timer(self.clone(), ctx.clone()));
        ctx.spawn(background(self.clone(), ctx.clone()));
    }

    /// The parameters.
    pub(crate) fn params(&self) -> &ZkParams {
        self.0.handle.params()
    }

    /// The current session (0 before the first connection).
    pub(crate) fn session(&self) -> SessionId {
        self.0.handle.session()
    }

    /// Whether connected now.
    pub(crate) fn is_connected(&self) -> bool {
        self.0.handle.is_connected()
    }

    /// One ZooKeeper call on the current connection, no retry ([`ZkHandle::call`]).
    pub(crate) async fn call(
        &self,
        req: Request,
        watcher: Option<Watcher>,
    ) -> Result<Response, ZkError> {
        self.0.handle.call(req, watcher).await
    }

    /// Wait until `ready` holds or `timeout` of local time passes; returns whether it holds.
    async fn wait_for(&self, ctx: &NodeCtx, timeout: Duration, ready: impl Fn() -> bool) -> bool {
        let deadline = ctx.mono_ns() + timeout.as_nanos() as i64;
        loop {
            let changed = self.0.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if ready() {
                return true;
            }
            let left = deadline - ctx.mono_ns();
            if left <= 0 {
                return false;
            }
            tokio::select! {
                biased;
                _ = changed => {}
                _ = ctx.sleep(Duration::from_nanos(left as u64)) => {}
            }
        }
    }

    /// Curator's `blockUntilConnectedOrTimedOut`.
    pub(crate) async fn wait_connected(&self, ctx: &NodeCtx, timeout: Duration) -> bool {
        self.wait_for(ctx, timeout, || self.is_connected()).await
    }

    /// Curator's `RetryLoop.callWithRetry` around `op` (see the module docs).
    pub(crate) async fn retry<T, F, Fut>(&self, ctx: &NodeCtx, mut op: F) -> Result<T, ZkError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ZkError>>,
    {
        let p = self.params();
        let mut n = 0u32;
        loop {
            let connected = self
                .wait_connected(ctx, Duration::from_millis(p.connection_timeout_ms))
                .await;
            let r = if connected {
                op().await
            } else {
                Err(ZkError::ConnectionLoss)
            };
            match r {
                Err(ZkError::ConnectionLoss | ZkError::SessionExpired | ZkError::SessionMoved)
                    if n < p.retries =>
                {
                    let bound = 1u64 << (n + 1);
                    let k = ctx.rand_range(0, bound - 1).max(1);
                    ctx.sleep(Duration::from_millis(p.retry_base_ms * k)).await;
                    n += 1;
                }
                other => return other,
            }
        }
    }

    /// `call` under the retry loop.
    pub(crate) async fn retry_call(
        &self,
        ctx: &NodeCtx,
        req: Request,
        watcher: Option<Watcher>,
    ) -> Result<Response, ZkError> {
        self.retry(ctx, || self.call(req.clone(), watcher.clone()))
            .await
    }

    /// Queue a background operation (run until it succeeds).
    fn background(&self, op: Background) {
        let mut s = self.0.state.borrow_mut();
        if !s.background.contains(&op) {
            s.background.push(op);
        }
        drop(s);
        self.0.changed.notify_waiters();
    }

    /// A guaranteed delete that failed in the foreground goes on in the background.
    pub(crate) fn delete_in_background(&self, path: &str) {
        self.background(Background::Delete(path.to_string()));
    }

    /// `FindAndDeleteProtectedNodeInBackground`: delete the child of `parent` named with
    /// `prefix`, whenever it can be found.
    pub(crate) fn find_and_delete_in_background(&self, parent: &str, prefix: &str) {
        self.background(Background::FindAndDelete {
            parent: parent.to_string(),
            prefix: prefix.to_string(),
        });
    }

    /// Believe in a grant from now on: valid while connected (until 2/3 of the session
    /// timeout after the last reply, when the connection would be declared lost), lost
    /// for good at SUSPENDED or LOST. Returns the belief's local deadline.
    pub(crate) fn hold(&self, ctx: &NodeCtx) -> Rc<Cell<i64>> {
        let now = ctx.mono_ns();
        let (until, lost) = match self.0.handle.connected_until() {
            Some(until) => (until, false),
            None => (now, true),
        };
        let mut s = self.0.state.borrow_mut();
        let cell = Rc::new(Cell::new(until));
        s.belief = Some(Belief {
            until: cell.clone(),
            lost,
        });
        cell
    }

    /// Stop believing (the grant was released).
    pub(crate) fn unhold(&self) {
        self.0.state.borrow_mut().belief = None;
    }

    /// Completes when the held grant's belief is lost (SUSPENDED, LOST, or its deadline
    /// passed on the local clock).
    pub(crate) async fn belief_lost(&self, ctx: &NodeCtx) {
        loop {
            let changed = self.0.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let until = {
                let s = self.0.state.borrow();
                match &s.belief {
                    None => return,
                    Some(b) if b.lost => return,
                    Some(b) => b.until.get(),
                }
            };
            let left = until - ctx.mono_ns();
            if left <= 0 {
                return;
            }
            tokio::select! {
                biased;
                _ = changed => {}
                _ = ctx.sleep(Duration::from_nanos(left as u64)) => {}
            }
        }
    }

    fn set_curator(&self, ctx: &NodeCtx, s: &mut State, to: CuratorState, why: StateReason) {
        if s.curator == to {
            return;
        }
        tracing::debug!(
            from = s.curator.name(),
            to = to.name(),
            %why,
            "connection state"
        );
        s.curator = to;
        if to == CuratorState::Suspended {
            s.suspended_at_wall_ms = ctx.wall_ms();
        }
        if matches!(to, CuratorState::Suspended | CuratorState::Lost) {
            if let Some(b) = s.belief.as_mut() {
                if !b.lost {
                    b.lost = true;
                    b.until.set(b.until.get().min(ctx.mono_ns()));
                }
            }
        }
        ctx.record(
            ctx.event(EventType::Event, names::CONNECTION)
                .value(to.name())
                .reason(why.to_string()),
        );
    }

    /// The session is gone: LOST, and the handle starts over (a new session at the next
    /// connection; watches are dropped with the old session).
    fn expire(&self, ctx: &NodeCtx, why: StateReason) {
        let watchers = self.0.handle.reset();
        self.set_curator(ctx, &mut self.0.state.borrow_mut(), CuratorState::Lost, why);
        for w in watchers {
            w.notify_one();
        }
        self.0.changed.notify_waiters();
    }
}

impl HandleEvents for CuratorFramework {
    fn connected(&self, ctx: &NodeCtx, why: StateReason) {
        let mut s = self.0.state.borrow_mut();
        let to = match s.curator {
            CuratorState::Latent => CuratorState::Connected,
            CuratorState::Suspended | CuratorState::Lost => CuratorState::Reconnected,
            other => other,
        };
        self.set_curator(ctx, &mut s, to, why);
        drop(s);
        self.0.changed.notify_waiters();
    }

    fn disconnected(&self, ctx: &NodeCtx, why: Disconnect) {
        let mut s = self.0.state.borrow_mut();
        if matches!(
            s.curator,
            CuratorState::Connected | CuratorState::Reconnected
        ) {
            self.set_curator(ctx, &mut s, CuratorState::Suspended, StateReason::Lost(why));
        }
        drop(s);
        self.0.changed.notify_waiters();
    }

    fn expired(&self, ctx: &NodeCtx, why: StateReason) {
        self.expire(ctx, why);
    }

    fn heard(&self, until: i64) {
        if let Some(b) = self.0.state.borrow_mut().belief.as_mut() {
            if !b.lost {
                b.until.set(until);
            }
        }
    }
}

/// Curator's LOST timer: a session timeout (on the wall clock) after SUSPENDED with no
/// reconnection, inject an expiration.
async fn lost_timer(client: CuratorFramework, ctx: NodeCtx) {
    loop {
        let changed = client.0.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let (suspended, since, timeout_ms) = {
            let s = client.0.state.borrow();
            (
                s.curator == CuratorState::Suspended,
                s.suspended_at_wall_ms,
                client.0.handle.timeout_ms() as i64,
            )
        };
        if !suspended {
            changed.await;
            continue;
        }
        let elapsed = ctx.wall_ms() - since;
        if elapsed >= timeout_ms {
            client.expire(
                &ctx,
                StateReason::TimedOut {
                    elapsed_ms: elapsed,
                },
            );
            continue;
        }
        tokio::select! {
            biased;
            _ = changed => {}
            _ = ctx.sleep(Duration::from_millis((timeout_ms - elapsed) as u64)) => {}
        }
    }
}

/// Run background operations whenever connected, until each succeeds.
async fn background(client: CuratorFramework, ctx: NodeCtx) {
    loop {
        let ready = client
            .wait_for(&ctx, Duration::from_secs(3600), || {
                client.is_connected() && !client.0.state.borrow().background.is_empty()
            })
            .await;
        if !ready {
            continue;
        }
        let ops = std::mem::take(&mut client.0.state.borrow_mut().background);
        let mut failed = Vec::new();
        for op in ops {
            let done = match &op {
                Background::Delete(path) => matches!(
                    client
                        .call(
                            Request::Delete {
                                path: path.clone(),
                                version: -1
                            },
                            None
                        )
                        .await,
                    Ok(_) | Err(ZkError::NoNode)
                ),
                Background::FindAndDelete { parent, prefix } => {
                    match client
                        .call(
                            Request::GetChildren {
                                path: parent.clone(),
                                watch: false,
                                with_stat: false,
                            },
                            None,
                        )
                        .await
                    {
                        Ok(Response::Children { children, .. }) => {
                            let mut ok = true;
                            for c in children.iter().filter(|c| c.starts_with(prefix.as_str())) {
                                let path = format!("{parent}/{c}");
                                let r = client
                                    .call(Request::Delete { path, version: -1 }, None)
                                    .await;
                                ok &= matches!(r, Ok(_) | Err(ZkError::NoNode));
                            }
                            ok
                        }
                        Err(ZkError::NoNode) => true,
                        _ => false,
                    }
                }
            };
            if done {
                tracing::debug!(?op, "background operation done");
            } else {
                failed.push(op);
            }
        }
        if !failed.is_empty() {
            client.0.state.borrow_mut().background.extend(failed);
            ctx.sleep(Duration::from_millis(client.params().retry_base_ms))
                .await;
        }
    }
}
