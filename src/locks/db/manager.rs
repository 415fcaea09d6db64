//! The failover manager `db-manager` (`[lock] standby = true`): what MHA's
//! `masterha_manager` and orchestrator do for a primary with one standby.
//!
//! - Every [`PERIOD`] it asks the primary for its status (MHA pings with `SELECT 1`).
//!   A primary that answers read-only (it restarted: servers boot with `read_only = ON`)
//!   is made writable.
//! - When the primary has not answered for `down_after_ms`, it promotes the standby
//!   (`STOP SLAVE; SET GLOBAL read_only = OFF`: the standby applies what it has received
//!   and becomes the primary clients should use) and records a `failover` event
//!   (`value` {old, new, position}). It retries the promotion until the standby answers.
//! - There is one failover: afterwards the manager watches the new primary only, and the
//!   old one, when it comes back, stays read-only — MHA does not re-add a failed master
//!   (`masterha_manager` even exits after a failover).
//! - It keeps nothing on disk; at a restart it asks the standby whether it was promoted.

use super::params::DbParams;
use super::replication::{AdminRequest, AdminStatus, Role, ADMIN_PORT};
use super::standby::{PRIMARY, STANDBY};
use crate::history::{names, EventType};
use crate::net::{encode_frame, CallError, Frames, Remote};
use crate::sim::NodeCtx;
use std::time::Duration;

/// How often the manager checks the primary.
const PERIOD: Duration = Duration::from_millis(100);
/// Deadline of one request.
const REQUEST: Duration = Duration::from_millis(100);

/// A connection to one database node's admin port.
struct Admin(Remote<Frames>);

impl Admin {
    fn new(host: &str) -> Admin {
        Admin(Remote::new(host, ADMIN_PORT, REQUEST, Frames))
    }

    async fn ask(&mut self, ctx: &NodeCtx, req: AdminRequest) -> Result<AdminStatus, CallError> {
        let mut out = Vec::new();
        encode_frame(
            &serde_json::to_vec(&req).expect("requests serialise"),
            &mut out,
        );
        let reply = self.0.request(ctx, &out).await?;
        serde_json::from_slice(&reply).map_err(|e| {
            self.0.disconnect();
            CallError::Io(format!("unreadable status: {e}"))
        })
    }
}

/// Run the manager until the simulation ends.
pub(crate) async fn manager_main(ctx: NodeCtx, p: DbParams) {
    let Some(settings) = p.standby() else {
        return std::future::pending().await;
    };
    let down_after_ns = settings.down_after_ms as i64 * 1_000_000;
    let mut primary = Admin::new(PRIMARY);
    let mut standby = Admin::new(STANDBY);
    // A restarted manager learns whether it already failed over.
    let mut failed_over = matches!(
        standby.ask(&ctx, AdminRequest::Status).await,
        Ok(AdminStatus {
            role: Role::Primary,
            ..
        })
    );
    let mut last_seen = ctx.mono_ns();
    loop {
        ctx.sleep(PERIOD).await;
        let current = if failed_over {
            &mut standby
        } else {
            &mut primary
        };
        match current.ask(&ctx, AdminRequest::Status).await {
            Ok(status) => {
                last_seen = ctx.mono_ns();
                if status.read_only {
                    tracing::info!("{} is back read-only: making it writable", current.0.host());
                    let _ = current.ask(&ctx, AdminRequest::SetWritable).await;
                }
            }
            Err(e) => {
                tracing::debug!("{} did not answer: {e}", current.0.host());
                if !failed_over && ctx.mono_ns() - last_seen >= down_after_ns {
                    failed_over = promote(&ctx, &mut standby).await;
                    last_seen = ctx.mono_ns();
                }
            }
        }
    }
}

/// Promote the standby; whether it answered.
async fn promote(ctx: &NodeCtx, standby: &mut Admin) -> bool {
    match standby.ask(ctx, AdminRequest::Promote).await {
        Ok(status) => {
            tracing::info!(position = status.position, "failed over to {STANDBY}");
            ctx.record(ctx.event(EventType::Event, names::FAILOVER).value(
                serde_json::json!({"old": PRIMARY, "new": STANDBY, "position": status.position}),
            ));
            true
        }
        Err(e) => {
            tracing::warn!("cannot promote {STANDBY}: {e}");
            false
        }
    }
}
