//! An external client: a [`LockClient`] that is any program, an *adapter* wrapping a
//! real lock library, spoken to over JSON lines on its stdin and stdout
//! (`docs/external-clients.md`; the messages are [`super::adapter_protocol`]'s). A live
//! client node runs it in place of its family's own client; the workload, the storage,
//! the fault points and the history stay locksim's.
//!
//! The adapter runs in the node's process group (it is not moved to a group of its own),
//! so the pauses and crashes locksim inflicts on the group take it too, and the proxies
//! count its connections as the node's; it dies with the node's process
//! (`PR_SET_PDEATHSIG`). One request is outstanding at a time. A task reads every line
//! the adapter writes: replies answer the outstanding request, notices (`lost`,
//! `renewed`) change a held grant at any time. Anything the protocol does not allow (a
//! malformed line, an exit, a hang) is an [`AdapterFailure`], handed to the node's
//! `fail`, which ends the run.

use super::adapter_protocol::{
    parse_line, quoted, AdapterFailure, Incoming, LineProblem, Mode, Notice, Op, Reply, Request,
    MAX_LINE_BYTES,
};
use super::messages::NodeSpec;
use crate::locks::{Grant, LocalBoxFuture, LockClient, LockError, Wait, NO_LEASE_NS};
use crate::real::die_with_locksim;
use crate::scenario::{ClientProgram, Scenario};
use crate::sim::NodeCtx;
use std::cell::{Cell, RefCell};
use std::process::Stdio;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, watch};

/// What the node does with an adapter's failure: report it and end (see `node_main`).
pub(crate) type Fail = Rc<dyn Fn(AdapterFailure)>;

/// How often the hang watch looks at the clock.
const HANG_TICK: Duration = Duration::from_millis(10);

/// The most one hang-watch tick counts: a longer gap is time the process was stopped
/// (SIGSTOP), which is not time the adapter had to answer.
const MAX_TICK_NS: u64 = 50_000_000;

/// The environment locksim gives an adapter (`LOCKSIM_*`, see the spec's table): the
/// node, its incarnation, the algorithm, the servers' proxied addresses and the
/// effective `[lock]` table.
pub(crate) fn adapter_env(spec: &NodeSpec, scenario: &Scenario) -> Vec<(String, String)> {
    let servers: Vec<(String, u16)> = scenario
        .servers()
        .into_iter()
        .filter_map(|s| spec.ports.get(&s).map(|p| (s, *p)))
        .collect();
    let named: Vec<String> = servers
        .iter()
        .map(|(s, p)| format!("{s}=127.0.0.1:{p}"))
        .collect();
    let bare: Vec<String> = servers
        .iter()
        .map(|(_, p)| format!("127.0.0.1:{p}"))
        .collect();
    [
        ("LOCKSIM_NODE", spec.node.clone()),
        ("LOCKSIM_INCARNATION", spec.incarnation.to_string()),
        ("LOCKSIM_ALGORITHM", scenario.algorithm().to_string()),
        ("LOCKSIM_SERVERS", named.join(",")),
        ("LOCKSIM_CONNECT", bare.join(",")),
        ("LOCKSIM_LOCK", scenario.lock.effective_table().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A grant the adapter gave and the workload has not released.
struct Held {
    /// The adapter's id of it.
    grant: String,
    lock: String,
    /// Shared with the [`Grant`]: a notice moves it.
    valid_until: Rc<Cell<i64>>,
    /// Whether it came with a lease (`validity_ms`).
    lease: bool,
    /// Set by a `lost` notice.
    lost: watch::Sender<bool>,
}

/// The outstanding request.
struct Pending {
    id: u64,
    op: Op,
    /// As written, for messages.
    line: String,
    answer: oneshot::Sender<Answer>,
}

/// A reply, as the workload's call takes it.
enum Answer {
    Granted(Grant),
    Refused(String),
    Unknown(String),
    Released(bool),
}

/// What the requests and the reader task share.
struct Shared {
    ctx: NodeCtx,
    held: RefCell<Vec<Held>>,
    pending: RefCell<Option<Pending>>,
    fail: Fail,
    failed: Cell<bool>,
}

impl Shared {
    /// Report `f` once; the outstanding request then ends (indeterminate).
    fn failed(&self, f: AdapterFailure) {
        if !self.failed.replace(true) {
            self.pending.borrow_mut().take();
            (self.fail)(f);
        }
    }

    /// Act on one line the adapter wrote.
    fn take_line(&self, line: &str) -> Result<(), LineProblem> {
        let (id, reply) = match parse_line(line)? {
            Incoming::Notice(n) => {
                self.notice(n);
                return Ok(());
            }
            Incoming::Reply { id, reply } => (id, reply),
        };
        let pending = self
            .pending
            .borrow_mut()
            .take()
            .ok_or(LineProblem::NoRequest)?;
        if id != pending.id {
            return Err(LineProblem::WrongId {
                expected: pending.id,
                got: id,
            });
        }
        if !reply.answers(&pending.op) {
            return Err(LineProblem::WrongReply {
                reply: reply.name().to_string(),
                op: pending.op.name().to_string(),
            });
        }
        let answer = match reply {
            Reply::Granted {
                grant,
                owner,
                token,
                validity_ms,
            } => {
                let Op::Acquire { lock, .. } = &pending.op else {
                    unreachable!("`answers` lets a grant answer only an acquire")
                };
                Answer::Granted(self.hold(lock, grant, owner, token, validity_ms))
            }
            Reply::Refused { reason } => Answer::Refused(reason),
            Reply::Unknown { reason } => Answer::Unknown(reason),
            Reply::Released { released } => Answer::Released(released),
        };
        // The workload's call may be gone (its node crashed in-process): nothing to tell.
        let _ = pending.answer.send(answer);
        Ok(())
    }

    /// Record a grant (here, so that a notice right after it finds it) and make the
    /// workload's [`Grant`]: its validity on the node's monotonic clock.
    fn hold(
        &self,
        lock: &str,
        grant: String,
        owner: Option<String>,
        token: Option<u64>,
        validity_ms: Option<u64>,
    ) -> Grant {
        let until = match validity_ms {
            Some(ms) => self.ctx.mono_ns().saturating_add(ms_to_ns(ms)),
            None => NO_LEASE_NS,
        };
        let valid_until = Rc::new(Cell::new(until));
        self.held.borrow_mut().push(Held {
            grant: grant.clone(),
            lock: lock.to_string(),
            valid_until: valid_until.clone(),
            lease: validity_ms.is_some(),
            lost: watch::channel(false).0,
        });
        Grant {
            lock: lock.to_string(),
            token,
            owner_value: owner.unwrap_or(grant),
            valid_until: Some(valid_until),
        }
    }

    /// A notice: a lost grant's validity ends now; a renewed lease runs on. One for a
    /// grant no longer held is ignored.
    fn notice(&self, notice: Notice) {
        let held = self.held.borrow();
        let (Notice::Lost { grant } | Notice::Renewed { grant, .. }) = &notice;
        let Some(h) = held.iter().find(|h| &h.grant == grant) else {
            return;
        };
        let now = self.ctx.mono_ns();
        match notice {
            Notice::Lost { .. } => {
                h.valid_until.set(h.valid_until.get().min(now));
                h.lost.send_replace(true);
            }
            Notice::Renewed { validity_ms, .. } if h.lease && !*h.lost.borrow() => {
                h.valid_until.set(now.saturating_add(ms_to_ns(validity_ms)));
            }
            // A renewal of a grant without a lease, or of one already lost, changes
            // nothing the workload looks at.
            Notice::Renewed { .. } => {}
        }
    }

    /// The held grant whose validity cell `grant` shares.
    fn position(&self, grant: &Grant) -> Option<usize> {
        let cell = grant.valid_until.as_ref()?;
        self.held
            .borrow()
            .iter()
            .position(|h| Rc::ptr_eq(&h.valid_until, cell))
    }
}

fn ms_to_ns(ms: u64) -> i64 {
    i64::try_from(ms.saturating_mul(1_000_000)).unwrap_or(i64::MAX)
}

/// A running adapter, as the node's lock client.
pub(crate) struct ExternalClient {
    shared: Rc<Shared>,
    stdin: tokio::process::ChildStdin,
    next_id: u64,
    grace_ms: u64,
}

impl ExternalClient {
    /// Start `program` with `env` (and its own `env`) for the node of `ctx`; a failure
    /// later goes to `fail`.
    pub(crate) fn start(
        ctx: &NodeCtx,
        program: &ClientProgram,
        env: &[(String, String)],
        fail: Fail,
    ) -> Result<ExternalClient, AdapterFailure> {
        let mut cmd = tokio::process::Command::new(&program.command[0]);
        cmd.args(&program.command[1..])
            .envs(&program.env)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        // No process group of its own: it stays in the node's, which locksim pauses and
        // kills. It dies with the node's process, as that one dies with locksim.
        // SAFETY: die_with_locksim's closure only makes async-signal-safe calls.
        unsafe { cmd.pre_exec(die_with_locksim()) };
        let mut child = cmd.spawn().map_err(|e| AdapterFailure::CannotStart {
            error: format!("{}: {e}", program.command[0]),
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(AdapterFailure::CannotStart {
                error: "no pipes to it".into(),
            });
        };
        let shared = Rc::new(Shared {
            ctx: ctx.clone(),
            held: RefCell::new(Vec::new()),
            pending: RefCell::new(None),
            fail,
            failed: Cell::new(false),
        });
        tokio::task::spawn_local(read_lines(shared.clone(), child, stdout));
        Ok(ExternalClient {
            shared,
            stdin,
            next_id: 0,
            grace_ms: program.reply_grace_ms,
        })
    }

    /// Send `op` and wait for its reply, for at most its timeout plus the grace of time
    /// this process ran; a hang is a failure.
    async fn call(&mut self, op: Op) -> Result<Answer, LockError> {
        let gone = || LockError::Indeterminate("the external client failed".into());
        if self.shared.failed.get() {
            return Err(gone());
        }
        self.next_id += 1;
        let (id, timeout_ms) = (self.next_id, op.timeout_ms());
        let request = Request { id, op };
        let line = serde_json::to_string(&request).expect("requests serialise");
        let (answer, reply) = oneshot::channel();
        *self.shared.pending.borrow_mut() = Some(Pending {
            id,
            op: request.op,
            line: line.clone(),
            answer,
        });
        let limit_ns = timeout_ms
            .saturating_add(self.grace_ms)
            .saturating_mul(1_000_000);
        let stdin = &mut self.stdin;
        let exchange = async {
            let mut bytes = line.clone().into_bytes();
            bytes.push(b'\n');
            // A write to an adapter that exited fails; its reader reports the exit.
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.flush().await;
            reply.await
        };
        tokio::select! {
            answer = exchange => answer.map_err(|_| gone()),
            () = running_time(limit_ns) => {
                self.shared.failed(AdapterFailure::Hang {
                    request: line,
                    timeout_ms,
                    grace_ms: self.grace_ms,
                });
                Err(gone())
            }
        }
    }

    /// A release or an abandon: `released` as `Ok`, the others as errors.
    async fn release_call(&mut self, op: Op) -> Result<bool, LockError> {
        match self.call(op).await? {
            Answer::Released(r) => Ok(r),
            Answer::Refused(r) => Err(LockError::Failed(r)),
            Answer::Unknown(r) => Err(LockError::Indeterminate(r)),
            Answer::Granted(_) => unreachable!("`answers` lets a grant answer only an acquire"),
        }
    }
}

impl LockClient for ExternalClient {
    fn acquire<'a>(
        &'a mut self,
        _ctx: &'a NodeCtx,
        lock: &'a str,
        wait: Wait,
    ) -> LocalBoxFuture<'a, Result<Grant, LockError>> {
        Box::pin(async move {
            let (mode, d) = match wait {
                Wait::For(d) => (Mode::Wait, d),
                Wait::No(d) => (Mode::Try, d),
            };
            // The workload acquires a lock it holds only in its re-entrant inner acquire.
            let reentrant = self.shared.held.borrow().iter().any(|h| h.lock == lock);
            let op = Op::Acquire {
                lock: lock.to_string(),
                mode,
                timeout_ms: u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
                reentrant,
            };
            match self.call(op).await? {
                Answer::Granted(g) => Ok(g),
                Answer::Refused(r) => Err(LockError::Failed(r)),
                Answer::Unknown(r) => Err(LockError::Indeterminate(r)),
                Answer::Released(_) => unreachable!("`answers` keeps `released` from an acquire"),
            }
        })
    }

    fn release<'a>(
        &'a mut self,
        _ctx: &'a NodeCtx,
        grant: &'a Grant,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        Box::pin(async move {
            // Forgotten first: a notice for it from now on is ignored.
            let held = self
                .shared
                .position(grant)
                .map(|i| self.shared.held.borrow_mut().remove(i));
            let Some(held) = held else {
                return Err(LockError::Failed("not a grant of this client".into()));
            };
            let op = Op::Release {
                lock: held.lock,
                grant: held.grant,
            };
            self.release_call(op).await
        })
    }

    fn abandon<'a>(
        &'a mut self,
        _ctx: &'a NodeCtx,
        lock: &'a str,
    ) -> LocalBoxFuture<'a, Result<bool, LockError>> {
        let op = Op::Abandon {
            lock: lock.to_string(),
        };
        Box::pin(self.release_call(op))
    }

    fn lost<'a>(&'a self, _ctx: &'a NodeCtx, grant: &'a Grant) -> Option<LocalBoxFuture<'a, ()>> {
        let i = self.shared.position(grant)?;
        let mut lost = self.shared.held.borrow()[i].lost.subscribe();
        Some(Box::pin(async move {
            if lost.wait_for(|l| *l).await.is_err() {
                // Released meanwhile: it can no longer be lost.
                std::future::pending::<()>().await;
            }
        }))
    }
}

/// Complete once this process has run `limit_ns` (ticks longer than [`MAX_TICK_NS`]
/// count as that much: the rest was a SIGSTOP).
async fn running_time(limit_ns: u64) {
    let mut ran = 0u64;
    let mut last = crate::net::monotonic_ns();
    while ran < limit_ns {
        tokio::time::sleep(HANG_TICK).await;
        let now = crate::net::monotonic_ns();
        ran += now.saturating_sub(last).min(MAX_TICK_NS);
        last = now;
    }
}

/// What reading a line gave.
enum LineRead {
    Line,
    TooLong,
    End,
}

/// Read one line into `buf` (without its `\n`), at most [`MAX_LINE_BYTES`]; a last line
/// without `\n` counts.
async fn read_line_capped<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<LineRead> {
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if buf.is_empty() {
                LineRead::End
            } else {
                LineRead::Line
            });
        }
        let (take, ends) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let content = if ends { take - 1 } else { take };
        let room = MAX_LINE_BYTES.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..content.min(room)]);
        r.consume(take);
        if content > room {
            return Ok(LineRead::TooLong);
        }
        if ends {
            return Ok(LineRead::Line);
        }
    }
}

/// Read the adapter's lines until it ends its output or writes one the protocol does
/// not allow; either is a failure (the node is running: a crash kills both at once).
async fn read_lines(
    shared: Rc<Shared>,
    mut child: tokio::process::Child,
    stdout: tokio::process::ChildStdout,
) {
    let mut reader = tokio::io::BufReader::new(stdout);
    let mut number = 0u64;
    loop {
        let mut buf = Vec::new();
        let read = read_line_capped(&mut reader, &mut buf).await;
        number += 1;
        let bad = |problem, line: &str| AdapterFailure::BadLine {
            number,
            line: quoted(line),
            problem,
        };
        let text = String::from_utf8_lossy(&buf).into_owned();
        let failure = match read {
            Ok(LineRead::Line) if std::str::from_utf8(&buf).is_err() => {
                bad(LineProblem::NotUtf8, &text)
            }
            Ok(LineRead::Line) => match shared.take_line(&text) {
                Ok(()) => continue,
                Err(problem) => bad(problem, &text),
            },
            Ok(LineRead::TooLong) => bad(LineProblem::TooLong, &text),
            Ok(LineRead::End) | Err(_) => AdapterFailure::Exited {
                status: exit_status(&mut child).await,
                pending: shared.pending.borrow().as_ref().map(|p| p.line.clone()),
            },
        };
        shared.failed(failure);
        return;
    }
}

/// The adapter's exit status once it has ended (it may close its stdout a little
/// before it exits), or that it still runs.
async fn exit_status(child: &mut tokio::process::Child) -> String {
    match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
        Ok(Ok(status)) => status.to_string(),
        Ok(Err(e)) => format!("its status is unknown: {e}"),
        Err(_) => "it closed its stdout and still runs".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// LOCKSIM_LOCK holds every `[lock]` key of every family live mode runs, with a
    /// value (a default filled in, or derived), and LOCKSIM_SERVERS every server.
    #[test]
    fn the_environment_names_every_lock_key_and_server() {
        for family in crate::live::live_families() {
            let text = format!("name = \"t\"\nalgorithm = \"{family}\"\nduration_ms = 5000\n");
            let mut scenario = Scenario::parse(Path::new("t.toml"), &text).unwrap();
            scenario.lock = scenario.lock.for_real();
            let servers = scenario.servers();
            let spec = NodeSpec {
                scenario: "t.toml".into(),
                duration_ms: 1,
                seed: 0,
                node: "client-0".into(),
                incarnation: 2,
                epoch_ns: 0,
                ports: servers
                    .iter()
                    .zip(40000..)
                    .map(|(s, p)| (s.clone(), p))
                    .collect(),
                clock: crate::sim::Clock::default(),
                client: None,
            };
            let env: std::collections::BTreeMap<String, String> =
                adapter_env(&spec, &scenario).into_iter().collect();
            assert_eq!(env["LOCKSIM_ALGORITHM"], family);
            assert_eq!(env["LOCKSIM_INCARNATION"], "2");
            assert_eq!(env["LOCKSIM_SERVERS"].split(',').count(), servers.len());
            assert!(env["LOCKSIM_SERVERS"].starts_with(&format!("{}=127.0.0.1:40000", servers[0])));
            assert!(env["LOCKSIM_CONNECT"].starts_with("127.0.0.1:40000"));
            let lock: serde_json::Value = serde_json::from_str(&env["LOCKSIM_LOCK"]).unwrap();
            let family = crate::locks::ALGORITHMS
                .iter()
                .find(|f| f.name == family)
                .unwrap();
            for doc in (family.params)() {
                let v = &lock[doc.key];
                // Null where absence is the setting: no `scripts` given; db's unique row
                // without a cleaner (no `cleaner_timeout_ms`, so no lease, `ttl_ms`).
                // And a standby's keys without one (they say `standby:`, `semi-sync:`).
                let absent_means_none = ["scripts", "cleaner_timeout_ms", "ttl_ms"];
                let standby_only = ["standby:", "semi-sync:"];
                assert!(
                    !v.is_null()
                        || absent_means_none.contains(&doc.key)
                        || standby_only.iter().any(|p| doc.meaning.starts_with(p)),
                    "{}: {} has no value in {lock}",
                    family.name,
                    doc.key
                );
            }
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lines_are_capped_and_a_last_line_without_newline_counts() {
        let data = b"{\"a\":1}\nlast".to_vec();
        let mut r = tokio::io::BufReader::new(&data[..]);
        let mut buf = Vec::new();
        assert!(matches!(
            read_line_capped(&mut r, &mut buf).await.unwrap(),
            LineRead::Line
        ));
        assert_eq!(buf, b"{\"a\":1}");
        buf.clear();
        assert!(matches!(
            read_line_capped(&mut r, &mut buf).await.unwrap(),
            LineRead::Line
        ));
        assert_eq!(buf, b"last");
        buf.clear();
        assert!(matches!(
            read_line_capped(&mut r, &mut buf).await.unwrap(),
            LineRead::End
        ));
        let long = vec![b'x'; MAX_LINE_BYTES + 10];
        let mut r = tokio::io::BufReader::new(&long[..]);
        buf.clear();
        assert!(matches!(
            read_line_capped(&mut r, &mut buf).await.unwrap(),
            LineRead::TooLong
        ));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn running_time_counts_ticks() {
        let t = crate::net::monotonic_ns();
        running_time(30_000_000).await;
        assert!(crate::net::monotonic_ns() - t >= 30_000_000);
    }
}
