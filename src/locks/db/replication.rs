//! Primary → standby replication of the database (`[lock] standby = true`), as a MariaDB
//! replica with GTID positions does it, and the node's side of the failover manager.
//!
//! - **The binlog is the redo log.** Every redo record a node logs (a committed
//!   transaction's row images, an `AUTO_INCREMENT` or sequence allocation) has a position:
//!   its number in the node's redo log, counted from 1 — the stand-in for a GTID's
//!   sequence number. A restarted node reads its positions back from its log.
//! - **Shipping.** The standby `db-1` connects to the primary's replication port
//!   ([`REPL_PORT`], a stand-in for `COM_BINLOG_DUMP_GTID` on MySQL's port) and asks for
//!   what follows its position (`Dump`); the primary streams batches of records. Each
//!   batch waits `replication_lag_ms` (drawn per commit, never overtaking an earlier one)
//!   before it leaves the primary: what the dump thread, the network and the standby's
//!   I/O thread add. A commit still waiting when the primary crashes is never shipped.
//! - **Applying.** The standby applies each batch to its own [`Db`](super::model::Db)
//!   ([`Db::apply_replicated`](super::model::Db::apply_replicated)), logs the records to
//!   its own redo log (so its log is the primary's, record for record, and its position
//!   is its log's length), then acknowledges its position (`Ack`). After a partition or a
//!   crash of either side it reconnects and resumes from its position: a record already
//!   applied is skipped ([`fresh`]), a gap ends the link and it asks again. A standby
//!   whose position is beyond the primary's log (the primary lost flushed-later records:
//!   `fsync = "none"`) is refused, as MariaDB refuses a replica whose GTID the master's
//!   binlog lacks (error 1236), and keeps asking.
//! - **Semi-sync** (`replication = "semi-sync"`, `AFTER_SYNC`): a connection whose
//!   statement logged records is answered only once the standby has acknowledged them,
//!   or after `semi_sync_timeout_ms` (`rpl_semi_sync_master_timeout`, MariaDB's default
//!   10 s), when the primary falls back to async until the standby has acknowledged
//!   everything logged (MariaDB switches semi-sync back on then). A standby that is
//!   unreachable for longer than the timeout thus costs the guarantee: the control
//!   scenario sets the timeout longer than its run. Only `db-0` waits: the promoted
//!   standby has no standby of its own (`rpl_semi_sync_master_enabled` is set on the
//!   primary only, and the old primary is not re-added). Simplifications: other sessions see a
//!   commit before it is acknowledged (`AFTER_COMMIT`'s visibility), and a statement
//!   granted a row lock after waiting is answered at once.
//! - **Read-only.** A server boots with `read_only = ON` (the my.cnf MHA and orchestrator
//!   recommend for every server), except `db-0` at its first boot, the installed
//!   primary; the manager turns it off on the server it takes as the primary. Every
//!   write statement on a read-only server fails with 1290 `ER_OPTION_PREVENTS_STATEMENT`;
//!   a plain or locking read does not (MariaDB allows `SELECT … FOR UPDATE` there).
//! - **Roles** are kept on the node's disk ([`ROLE_FILE`]): `db-0` starts as the primary,
//!   `db-1` as its standby; promotion makes `db-1` the primary for good. A former primary
//!   that comes back after a failover boots read-only and nobody turns that off: MHA does
//!   not re-add it.
//! - **The manager's requests** ([`AdminRequest`], on [`ADMIN_PORT`]) stand in for its
//!   MySQL admin connection: `SELECT @@read_only` and the position (`Status`), `STOP
//!   SLAVE; SET GLOBAL read_only = OFF` (`Promote`, recorded as a `promote` event) and
//!   `SET GLOBAL read_only = OFF` (`SetWritable`).

use super::model::{Redo, Reply, Statement};
use super::standby::{Replication, Standby, PRIMARY};
use crate::history::{names, EventType};
use crate::net::{encode_frame, Decoder, Frames};
use crate::sim::NodeCtx;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

/// The replication port (MySQL serves the binlog dump on 3306; kept apart here so the
/// client protocol can change without it).
pub(crate) const REPL_PORT: u16 = 3307;
/// The port the failover manager's requests go to.
pub(crate) const ADMIN_PORT: u16 = 3308;
/// `ER_OPTION_PREVENTS_STATEMENT`.
pub(crate) const ER_OPTION_PREVENTS_STATEMENT: u16 = 1290;
/// The node's role on its disk.
pub(crate) const ROLE_FILE: &str = "locksim_role";

/// A link silent this long is dead (the primary sends a heartbeat batch every
/// [`HEARTBEAT`], the standby acknowledges each): `slave_net_timeout`, scaled down.
const REPL_TIMEOUT: Duration = Duration::from_millis(1000);
const HEARTBEAT: Duration = Duration::from_millis(300);
/// Delay before the standby reconnects.
const RETRY: Duration = Duration::from_millis(100);

/// A database node's replication role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Role {
    /// Takes writes (unless read-only) and ships them.
    Primary,
    /// Applies what the primary ships.
    Standby,
}

/// A request of the failover manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum AdminRequest {
    /// Role, `@@read_only` and position.
    Status,
    /// Stop replicating, apply what was received, become a writable primary.
    Promote,
    /// `SET GLOBAL read_only = OFF`.
    SetWritable,
}

/// A node's answer to every [`AdminRequest`]: its state afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AdminStatus {
    /// Its role.
    pub role: Role,
    /// `@@read_only`.
    pub read_only: bool,
    /// Its position: records in its redo log.
    pub position: u64,
}

/// The replication connection's messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Wire {
    /// Standby → primary: send the records after position `from`.
    Dump { from: u64 },
    /// Primary → standby: the records at positions `start + 1 ..` (none: a heartbeat).
    Batch { start: u64, records: Vec<Redo> },
    /// Standby → primary: everything up to `pos` is applied and logged.
    Ack { pos: u64 },
    /// Primary → standby: it cannot serve this dump.
    Refuse { why: String },
}

/// A node's log of redo records by position, and when each may be shipped.
#[derive(Debug, Default)]
pub(crate) struct Binlog {
    records: Vec<Redo>,
    /// (end position, local ns from which it may be shipped), both rising.
    pending: VecDeque<(u64, i64)>,
    /// Every record up to this position may be shipped.
    ready: u64,
}

impl Binlog {
    /// The log read back from a redo log (all of it may be shipped at once).
    pub(crate) fn recovered(records: Vec<Redo>) -> Binlog {
        let ready = records.len() as u64;
        Binlog {
            records,
            pending: VecDeque::new(),
            ready,
        }
    }

    /// The position of the last record.
    pub(crate) fn position(&self) -> u64 {
        self.records.len() as u64
    }

    /// Append `records`, to be shipped from `due_ns` on.
    pub(crate) fn log(&mut self, records: &[Redo], due_ns: i64) {
        self.records.extend_from_slice(records);
        self.pending.push_back((self.position(), due_ns));
    }

    /// Everything may be shipped now (a promoted standby has nothing to wait for).
    fn release_all(&mut self) {
        self.pending.clear();
        self.ready = self.position();
    }

    /// The position up to which records may be shipped at `now_ns`.
    pub(crate) fn ready(&mut self, now_ns: i64) -> u64 {
        while let Some(&(end, due)) = self.pending.front() {
            if due > now_ns {
                break;
            }
            self.ready = end;
            self.pending.pop_front();
        }
        self.ready
    }

    /// When the next waiting record may be shipped.
    fn next_due(&self) -> Option<i64> {
        self.pending.front().map(|&(_, due)| due)
    }

    /// The records at positions `from + 1 ..= to`.
    fn between(&self, from: u64, to: u64) -> Vec<Redo> {
        self.records[from as usize..to as usize].to_vec()
    }
}

/// A batch that starts past the standby's position: records in between are missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Gap {
    /// The standby's position.
    pub position: u64,
    /// The batch's start.
    pub start: u64,
}

/// What a standby at `position` applies of a batch of `records` at positions `start + 1
/// ..`: the records past its position (none if it has them all already), or a [`Gap`].
pub(crate) fn fresh(position: u64, start: u64, records: &[Redo]) -> Result<&[Redo], Gap> {
    if start > position {
        return Err(Gap { position, start });
    }
    let skip = ((position - start) as usize).min(records.len());
    Ok(&records[skip..])
}

/// Whether a statement writes (refused on a read-only server).
fn writes(stmt: &Statement) -> bool {
    match stmt {
        Statement::Insert { .. }
        | Statement::Update { .. }
        | Statement::Delete { .. }
        | Statement::DeleteOlder { .. }
        | Statement::NextVal { .. } => true,
        Statement::UpdateWhere { .. } | Statement::DeleteWhere { .. } => true,
        Statement::Select { nextval, .. } | Statement::Query { nextval, .. } => nextval.is_some(),
        // Named locks live in the server's memory: MariaDB takes them when read-only.
        Statement::GetLock { .. }
        | Statement::ReleaseLock { .. }
        | Statement::IsFreeLock { .. }
        | Statement::IsUsedLock { .. }
        | Statement::ReleaseAllLocks
        | Statement::Ping
        | Statement::Begin
        | Statement::Commit
        | Statement::Rollback => false,
    }
}

struct State {
    settings: Standby,
    role: Role,
    read_only: bool,
    binlog: Binlog,
    /// The latest shipping time handed out: a commit never overtakes an earlier one.
    last_due_ns: i64,
    /// The standby's acknowledged position (primary).
    acked: u64,
    /// Semi-sync is on (off after a timeout, until the standby has caught up).
    semi_sync_on: bool,
    /// This node has a standby to wait for: `db-0`. The promoted standby has none
    /// (nobody re-adds the old primary), so it answers commits at once.
    has_standby: bool,
    /// The current dump connection: an older one's feeder stops.
    dump: u64,
    changed: Rc<Notify>,
}

impl State {
    fn status(&self) -> AdminStatus {
        AdminStatus {
            role: self.role,
            read_only: self.read_only,
            position: self.binlog.position(),
        }
    }

    fn ack(&mut self, pos: u64) {
        self.acked = self.acked.max(pos);
        if !self.semi_sync_on && self.acked >= self.binlog.position() {
            tracing::info!(pos, "the standby caught up: semi-sync on");
            self.semi_sync_on = true;
        }
        self.changed.notify_waiters();
    }
}

/// A database node's replication state; empty (every hook a no-op) without a standby.
#[derive(Clone, Default)]
pub(crate) struct Link(Option<Rc<RefCell<State>>>);

impl Link {
    /// The link at a (re)start: the role from the node's disk (the first boot writes it),
    /// the positions from its redo log `redo`.
    pub(crate) fn boot(ctx: &NodeCtx, settings: Option<Standby>, redo: &[u8]) -> Link {
        let Some(settings) = settings else {
            return Link(None);
        };
        let stored = String::from_utf8_lossy(ctx.disk().read(ROLE_FILE)).into_owned();
        let (role, first_boot) = match stored.trim() {
            "primary" => (Role::Primary, false),
            "standby" => (Role::Standby, false),
            _ if ctx.name() == PRIMARY => (Role::Primary, true),
            _ => (Role::Standby, true),
        };
        if first_boot {
            write_role(ctx, role);
        }
        let records: Vec<Redo> = redo
            .split(|&b| b == b'\n')
            .map_while(|line| serde_json::from_slice::<Redo>(line).ok())
            .collect();
        let position = records.len() as u64;
        tracing::debug!(?role, position, "replication boots");
        Link(Some(Rc::new(RefCell::new(State {
            settings,
            role,
            // Read-only at every boot but the installed primary's first.
            read_only: !(first_boot && role == Role::Primary),
            binlog: Binlog::recovered(records),
            last_due_ns: i64::MIN,
            acked: 0,
            semi_sync_on: true,
            has_standby: ctx.name() == PRIMARY,
            dump: 0,
            changed: Rc::new(Notify::new()),
        }))))
    }

    /// Records the node logged (after writing them to its redo log): a primary ships
    /// them after `replication_lag_ms`.
    pub(crate) fn log(&self, ctx: &NodeCtx, records: &[Redo]) {
        let Some(st) = &self.0 else {
            return;
        };
        if records.is_empty() {
            return;
        }
        let mut s = st.borrow_mut();
        let now = ctx.mono_ns();
        let due = if s.role == Role::Primary {
            let [lo, hi] = s.settings.lag_ms;
            (now + ctx.rand_range(lo, hi) as i64 * 1_000_000).max(s.last_due_ns)
        } else {
            now
        };
        s.last_due_ns = due;
        s.binlog.log(records, due);
        s.changed.notify_waiters();
    }

    /// The node's position (0 without a standby).
    pub(crate) fn position(&self) -> u64 {
        self.0
            .as_ref()
            .map_or(0, |st| st.borrow().binlog.position())
    }

    /// MySQL's refusal of a write on a read-only server, if this is one.
    pub(crate) fn refuse(&self, stmt: &Statement) -> Option<Reply> {
        let st = self.0.as_ref()?;
        if !st.borrow().read_only || !writes(stmt) {
            return None;
        }
        Some(Reply::error(
            ER_OPTION_PREVENTS_STATEMENT,
            "ER_OPTION_PREVENTS_STATEMENT",
            "The MariaDB server is running with the --read-only option so it cannot execute this statement",
        ))
    }

    /// Semi-sync: when the node logged records since position `before`, wait until the
    /// standby acknowledged them or the timeout passed (then fall back to async).
    pub(crate) async fn wait_for_standby(&self, ctx: &NodeCtx, before: u64) {
        let Some(st) = &self.0 else {
            return;
        };
        let (target, timeout_ns) = {
            let s = st.borrow();
            if s.settings.replication != Replication::SemiSync
                || !s.has_standby
                || s.role != Role::Primary
                || !s.semi_sync_on
                || s.binlog.position() <= before
            {
                return;
            }
            let timeout_ns = s.settings.semi_sync_timeout_ms as i64 * 1_000_000;
            (s.binlog.position(), timeout_ns)
        };
        let start = ctx.mono_ns();
        loop {
            let changed = {
                let s = st.borrow();
                if s.acked >= target || !s.semi_sync_on || s.role != Role::Primary {
                    return;
                }
                s.changed.clone()
            };
            let left = timeout_ns - (ctx.mono_ns() - start);
            if left <= 0 {
                tracing::info!(
                    target,
                    "semi-sync timed out: async until the standby catches up"
                );
                st.borrow_mut().semi_sync_on = false;
                return;
            }
            tokio::select! {
                biased;
                _ = changed.notified() => {}
                _ = ctx.sleep(Duration::from_nanos(left as u64)) => {}
            }
        }
    }

    /// Start the node's replication tasks: the dump port, the manager's port, and on a
    /// standby the link to the primary, which hands each batch to `apply` (which must
    /// apply it to the model and log it through [`Link::log`]).
    pub(crate) fn start<F: Fn(&[Redo]) + 'static>(&self, ctx: &NodeCtx, apply: F) {
        let Some(st) = &self.0 else {
            return;
        };
        ctx.spawn(serve_dumps(ctx.clone(), st.clone()));
        {
            let (ctx2, st) = (ctx.clone(), st.clone());
            ctx.spawn(async move {
                let answer = move |ctx: &NodeCtx, req: Result<Vec<u8>, _>, out: &mut Vec<u8>| {
                    if let Ok(Ok(req)) = req.map(|b| serde_json::from_slice(&b)) {
                        let status = admin(ctx, &st, req);
                        let bytes = serde_json::to_vec(&status).expect("a status serialises");
                        encode_frame(&bytes, out);
                    }
                };
                crate::net::serve(ctx2, ADMIN_PORT, Frames, answer).await
            });
        }
        if st.borrow().role == Role::Standby {
            ctx.spawn(follow(ctx.clone(), st.clone(), apply));
        }
    }
}

fn write_role(ctx: &NodeCtx, role: Role) {
    let mut disk = ctx.disk();
    disk.truncate(ROLE_FILE);
    let text = match role {
        Role::Primary => "primary\n",
        Role::Standby => "standby\n",
    };
    disk.append(ROLE_FILE, text.as_bytes());
    disk.fsync(ROLE_FILE);
}

/// Answer one manager request.
fn admin(ctx: &NodeCtx, st: &Rc<RefCell<State>>, req: AdminRequest) -> AdminStatus {
    let mut s = st.borrow_mut();
    match req {
        AdminRequest::Status => {}
        AdminRequest::SetWritable => s.read_only = false,
        AdminRequest::Promote => {
            if s.role == Role::Standby {
                // Every batch received is applied already: nothing is left to replay.
                s.role = Role::Primary;
                s.binlog.release_all();
                s.acked = s.binlog.position();
                s.dump += 1;
                let position = s.binlog.position();
                write_role(ctx, Role::Primary);
                tracing::info!(position, "promoted to primary");
                ctx.record(ctx.event(EventType::Event, names::PROMOTE).value(position));
            }
            s.read_only = false;
            s.changed.notify_waiters();
        }
    }
    s.status()
}

async fn send(wr: &mut crate::net::tcp::WriteHalf, msg: &Wire) -> std::io::Result<()> {
    let mut out = Vec::new();
    encode_frame(
        &serde_json::to_vec(msg).expect("replication messages serialise"),
        &mut out,
    );
    wr.write_all(&out).await
}

/// The next message within [`REPL_TIMEOUT`]; None on silence, a closed or broken link,
/// or bytes that are no message.
async fn recv(
    ctx: &NodeCtx,
    rd: &mut crate::net::tcp::ReadHalf,
    buf: &mut Vec<u8>,
) -> Option<Wire> {
    let mut chunk = [0u8; 4096];
    loop {
        match Frames.decode(buf) {
            Ok(Some((frame, used))) => {
                buf.drain(..used);
                return serde_json::from_slice(&frame).ok();
            }
            Ok(None) => {}
            Err(_) => return None,
        }
        match ctx.timeout(REPL_TIMEOUT, rd.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    }
}

/// Accept dump connections (every node listens; only a primary serves them).
async fn serve_dumps(ctx: NodeCtx, st: Rc<RefCell<State>>) {
    let listener = crate::net::tcp::listen(&ctx, REPL_PORT)
        .await
        .expect("bind on a fresh simulated host cannot fail");
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            continue;
        };
        ctx.spawn(feed(ctx.clone(), st.clone(), stream));
    }
}

/// Primary side of one dump connection: check the standby's position, then ship what
/// is ready, a heartbeat when idle, until the link dies or a newer dump replaces it.
async fn feed(ctx: NodeCtx, st: Rc<RefCell<State>>, stream: crate::net::SimStream) {
    let (mut rd, mut wr, _open) = stream.into_split();
    let mut buf = Vec::new();
    let Some(Wire::Dump { from }) = recv(&ctx, &mut rd, &mut buf).await else {
        return;
    };
    let refusal = {
        let s = st.borrow();
        if s.role != Role::Primary {
            Some("not a primary".to_string())
        } else if from > s.binlog.position() {
            Some(format!(
                "the standby's position {from} is not in this server's log (it has {})",
                s.binlog.position()
            ))
        } else {
            None
        }
    };
    if let Some(why) = refusal {
        tracing::warn!(from, "dump refused: {why}");
        let _ = send(&mut wr, &Wire::Refuse { why }).await;
        return;
    }
    let dump = {
        let mut s = st.borrow_mut();
        s.dump += 1;
        // The standby has exactly what it says, whatever it acknowledged before.
        s.acked = from;
        s.changed.notify_waiters();
        s.dump
    };
    tracing::debug!(from, "standby connected");
    let alive = Rc::new(std::cell::Cell::new(true));
    {
        let (ctx2, st, alive) = (ctx.clone(), st.clone(), alive.clone());
        ctx.spawn(async move {
            while let Some(Wire::Ack { pos }) = recv(&ctx2, &mut rd, &mut buf).await {
                let mut s = st.borrow_mut();
                if s.dump != dump {
                    break;
                }
                s.ack(pos);
            }
            alive.set(false);
            st.borrow().changed.notify_waiters();
        });
    }
    ship(&ctx, &st, &mut wr, from, dump, &alive).await;
}

/// Ship ready records from position `sent` on, as long as dump `dump` is current.
async fn ship(
    ctx: &NodeCtx,
    st: &Rc<RefCell<State>>,
    wr: &mut crate::net::tcp::WriteHalf,
    mut sent: u64,
    dump: u64,
    alive: &std::cell::Cell<bool>,
) {
    let mut last_send = ctx.mono_ns();
    loop {
        let now = ctx.mono_ns();
        let (batch, wake, changed) = {
            let mut s = st.borrow_mut();
            if s.dump != dump || s.role != Role::Primary || !alive.get() {
                return;
            }
            let ready = s.binlog.ready(now);
            let batch = (ready > sent).then(|| (s.binlog.between(sent, ready), ready));
            let heartbeat_at = last_send + HEARTBEAT.as_nanos() as i64;
            let wake = s
                .binlog
                .next_due()
                .map_or(heartbeat_at, |d| d.min(heartbeat_at));
            (batch, wake, s.changed.clone())
        };
        if let Some((records, ready)) = batch {
            if send(
                wr,
                &Wire::Batch {
                    start: sent,
                    records,
                },
            )
            .await
            .is_err()
            {
                return;
            }
            sent = ready;
            last_send = ctx.mono_ns();
            continue;
        }
        if now >= last_send + HEARTBEAT.as_nanos() as i64 {
            let beat = Wire::Batch {
                start: sent,
                records: Vec::new(),
            };
            if send(wr, &beat).await.is_err() {
                return;
            }
            last_send = ctx.mono_ns();
            continue;
        }
        let nap = Duration::from_nanos((wake - now).max(1) as u64);
        tokio::select! {
            biased;
            _ = changed.notified() => {}
            _ = ctx.sleep(nap) => {}
        }
    }
}

/// Standby side: follow the primary from this node's position until promoted.
async fn follow<F: Fn(&[Redo])>(ctx: NodeCtx, st: Rc<RefCell<State>>, apply: F) {
    let standby = |st: &Rc<RefCell<State>>| st.borrow().role == Role::Standby;
    while standby(&st) {
        let connect = crate::net::tcp::connect(&ctx, PRIMARY, REPL_PORT, RETRY);
        let (mut rd, mut wr, _open) = match connect.await {
            Ok(Ok(s)) => s.into_split(),
            _ => {
                ctx.sleep(RETRY).await;
                continue;
            }
        };
        let from = st.borrow().binlog.position();
        if send(&mut wr, &Wire::Dump { from }).await.is_err() {
            continue;
        }
        let mut buf = Vec::new();
        while let Some(msg) = recv(&ctx, &mut rd, &mut buf).await {
            if !standby(&st) {
                return;
            }
            let Wire::Batch { start, records } = msg else {
                tracing::warn!("replication stopped: {msg:?}");
                ctx.sleep(REPL_TIMEOUT).await;
                break;
            };
            let position = st.borrow().binlog.position();
            match fresh(position, start, &records) {
                Ok([]) => {}
                Ok(new) => apply(new),
                Err(gap) => {
                    tracing::warn!(?gap, "replication gap: asking again");
                    break;
                }
            }
            let pos = st.borrow().binlog.position();
            if send(&mut wr, &Wire::Ack { pos }).await.is_err() {
                break;
            }
        }
        tracing::debug!("lost the link to {PRIMARY}; reconnecting");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::locks::db::model::{Change, Row};

    fn put(id: u64) -> Redo {
        Redo::Commit(vec![Change::Put(Row {
            id,
            name: format!("L{id}"),
            owner: "c".into(),
            version: 0,
            updated_at_ms: 0,
        })])
    }

    #[test]
    fn a_resumed_stream_skips_what_the_standby_has_and_refuses_a_gap() {
        let batch = [put(3), put(4), put(5)];
        // The standby has 1..=3: only 4 and 5 are new.
        assert_eq!(fresh(3, 2, &batch), Ok(&batch[1..]));
        // It has them all: nothing is applied twice.
        assert_eq!(fresh(5, 2, &batch), Ok(&batch[3..]));
        assert_eq!(fresh(9, 2, &batch), Ok(&batch[3..]));
        // Exactly where it stands.
        assert_eq!(fresh(2, 2, &batch), Ok(&batch[..]));
        // Records 2 and 3 missing: a gap, nothing applied.
        assert_eq!(
            fresh(1, 3, &batch),
            Err(Gap {
                position: 1,
                start: 3
            })
        );
    }

    #[test]
    fn records_ship_in_order_once_due_and_recovered_ones_at_once() {
        let mut log = Binlog::recovered(vec![put(1), put(2)]);
        assert_eq!((log.position(), log.ready(0)), (2, 2));
        log.log(&[put(3)], 100);
        log.log(&[put(4), Redo::AutoInc(5)], 150);
        assert_eq!(log.ready(99), 2);
        assert_eq!(log.next_due(), Some(100));
        assert_eq!(log.ready(120), 3);
        assert_eq!(log.ready(150), 5);
        assert_eq!(log.between(2, 5), vec![put(3), put(4), Redo::AutoInc(5)]);
        assert_eq!(log.next_due(), None);
    }

    #[test]
    fn a_standby_applying_the_stream_in_pieces_ends_as_the_primary() {
        use crate::locks::db::model::{Config, Db, Now, Statement};
        let cfg = Config {
            lock_wait_timeout_ns: 1_000_000_000,
            wait_timeout_ns: 10_000_000_000,
        };
        let now = Now {
            mono_ns: 0,
            wall_ms: 1000,
        };
        let mut primary = Db::new(cfg);
        let c = primary.connect(now);
        let mut log = Vec::new();
        for (name, owner) in [("a", "x"), ("b", "y")] {
            let insert = Statement::Insert {
                name: name.into(),
                owner: owner.into(),
            };
            primary.execute(c, insert, now);
            log.extend(primary.take_effects().redo);
        }
        // A rolled-back insert: its id (3) is allocated for good.
        let insert = Statement::Insert {
            name: "r".into(),
            owner: "z".into(),
        };
        for stmt in [Statement::Begin, insert, Statement::Rollback] {
            primary.execute(c, stmt, now);
        }
        log.extend(primary.take_effects().redo);
        let del = Statement::Delete {
            name: "a".into(),
            owner: None,
        };
        primary.execute(c, del, now);
        log.extend(primary.take_effects().redo);
        let mut standby = Db::new(cfg);
        let mut position = 0u64;
        // Two overlapping deliveries (a reconnect resends from an older start).
        for (start, end) in [(0, 3), (1, log.len())] {
            let new = fresh(position, start as u64, &log[start..end]).expect("no gap");
            standby.apply_replicated(new);
            position += new.len() as u64;
        }
        assert_eq!(position, log.len() as u64);
        assert_eq!(standby.rows(), primary.rows());
        // Its own redo log is the primary's, so a restart recovers the same state.
        let own = standby.take_effects().redo;
        assert_eq!(own, log);
        assert_eq!(
            Db::recover(cfg, &Db::encode_redo(&own)).rows(),
            primary.rows()
        );
        // AUTO_INCREMENT continues where the primary's was: the rolled-back insert took 3.
        let s = standby.connect(now);
        let insert = Statement::Insert {
            name: "c".into(),
            owner: "w".into(),
        };
        assert_eq!(
            standby.execute(s, insert, now),
            Some(Reply::Ok {
                affected: 1,
                insert_id: Some(4)
            })
        );
    }
}
