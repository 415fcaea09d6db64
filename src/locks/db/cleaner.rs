//! The cleaner node: the articles' scheduled job that deletes lock rows older than a
//! timeout, so a holder that crashed does not block everyone forever.
//!
//! It runs every `cleaner_interval_ms` of its *own* monotonic clock, but the age is
//! decided by the *database's* clock: it sends `DELETE FROM method_lock WHERE updated_at
//! < NOW(3) - INTERVAL …`, and both `updated_at` (set at `INSERT`) and `NOW()` are the
//! server's wall clock — the way such a job is written in SQL. So the cleaner's clock
//! faults only change *when* it runs; a step of the database's wall clock changes which
//! rows are "old" (forward: leases end early). A job that computes the cutoff itself
//! (`WHERE updated_at < ?` with its own `now - timeout`) would make its own wall clock's
//! skew against the database's part of every lease; that variant is not modelled.

use super::model::Statement;
use super::params::DbParams;
use super::session::Session;
use crate::sim::NodeCtx;
use std::time::Duration;

/// Run the cleaner until the simulation ends (nothing to do without a timeout).
pub(crate) async fn cleaner_main(ctx: NodeCtx, p: DbParams) {
    let Some(ms) = p.cleaner_timeout_ms else {
        return std::future::pending().await;
    };
    let timeout = Duration::from_millis(p.request_timeout_ms + p.lock_wait_timeout_ms);
    let mut session = Session::with_hosts(
        &p.db_hosts(), // failover (issue 41): db-0[, db-1]
        Duration::from_millis((p.wait_timeout_ms / 2).max(1)),
    );
    let stmt = Statement::DeleteOlder { ms };
    loop {
        ctx.sleep(Duration::from_millis(p.cleaner_interval_ms))
            .await;
        match session.call(&ctx, &stmt, timeout).await {
            Ok(r) => tracing::debug!("{} -> {r:?}", stmt.sql()),
            Err(e) => tracing::debug!("{} failed: {e}", stmt.sql()),
        }
    }
}
