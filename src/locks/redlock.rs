//! Redlock (redis.io, "Distributed Locks with Redis"): a lock held on a majority of N
//! independent Redis nodes. (Client: to be implemented.)

use crate::locks::{Grant, LocalBoxFuture, LockClient, LockError};
use crate::scenario::RedlockParams;
use crate::sim::NodeCtx;
use std::time::Duration;

/// A Redis node of a Redlock deployment: after a restart it stays down for
/// `restart_delay_ms` before serving (antirez's delayed restart), then serves as usual.
pub async fn server_main(ctx: NodeCtx, params: &RedlockParams) {
    if ctx.incarnation() > 0 && params.restart_delay_ms > 0 {
        ctx.sleep(Duration::from_millis(params.restart_delay_ms))
            .await;
    }
    super::redis::serve_node(ctx, params.persistence).await
}

/// The Redlock client.
pub struct Redlock {
    #[allow(dead_code)]
    params: RedlockParams,
}

impl Redlock {
    /// A client over `redis-0 .. redis-{nodes-1}`.
    pub fn new(params: RedlockParams) -> Redlock {
        Redlock { params }
    }
}

impl LockClient for Redlock {
    fn acquire<'a>(
        &'a mut self,
        _ctx: &'a NodeCtx,
        _lock: &'a str,
        _timeout: Duration,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(async { Err(LockError::Failed("redlock: not implemented".into())) })
    }

    fn release<'a>(
        &'a mut self,
        _ctx: &'a NodeCtx,
        _grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async { Ok(false) })
    }

    fn abandon<'a>(
        &'a mut self,
        _ctx: &'a NodeCtx,
        _lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async { Ok(false) })
    }
}
