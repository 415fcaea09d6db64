//! locksim's side of a live client process (see [`super::node_main`]): start it, give it
//! orders, signal it, and turn what it writes into the run's history. The process leads
//! its own process group, which holds its external client too, if it runs one: a pause
//! is SIGSTOP/SIGCONT of the group, a crash SIGKILL of the group and, after the down
//! time, a new process for the next incarnation.

use super::adapter_protocol::AdapterFailure;
use super::messages::{FromNode, NodeSpec, ToNode};
use crate::history::{Event, EventType, Recorder};
use crate::real::{die_with_locksim, signal_group, Supervisor};
use std::cell::{Cell, RefCell};
use std::io;
use std::path::Path;
use std::process::Stdio;
use std::rc::Rc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// What a client process asked for or did, for the driver to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Note {
    /// It stopped itself at an armed pause: SIGCONT it after this many ns.
    Stopping(u64),
    /// It reached an armed crash point: kill it (restart after the ns given).
    Crash(Option<u64>),
    /// It ended without being killed (it panicked or could not start).
    Died,
    /// Its external client failed (a bad line, an exit, a hang): the run must end.
    ClientFailed {
        /// The adapter's command, for the message.
        command: String,
        /// What went wrong.
        failure: AdapterFailure,
    },
}

/// Notes from every client process, by node name, in arrival order.
pub(crate) type Inbox = Rc<RefCell<Vec<(String, Note)>>>;

/// One running client process.
pub(crate) struct NodeProcess {
    pid: u32,
    orders: mpsc::UnboundedSender<ToNode>,
    /// When locksim killed it (true ns), for the reader to close its last operation.
    killed_at: Rc<Cell<Option<u64>>>,
    stopped: bool,
    supervisor: Supervisor,
    child: tokio::process::Child,
}

impl NodeProcess {
    /// Start the process for `spec`; its events go to `recorder`, its notes to `inbox`.
    pub(crate) fn spawn(
        exe: &Path,
        spec: NodeSpec,
        recorder: Recorder,
        inbox: Inbox,
        supervisor: &Supervisor,
    ) -> io::Result<NodeProcess> {
        let text = serde_json::to_string(&spec).expect("a spec serialises");
        let spec_node = spec.node.clone();
        let mut cmd = tokio::process::Command::new(exe);
        cmd.arg("live-node")
            .arg(text)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Its own process group: a Ctrl-C at the terminal reaches locksim only,
            // which then ends the run and kills its processes itself; and its external
            // client, in the same group, is paused and killed with it.
            .process_group(0)
            .kill_on_drop(true);
        // SAFETY: die_with_locksim's closure only makes async-signal-safe calls.
        unsafe { cmd.pre_exec(die_with_locksim()) };
        let mut child = cmd.spawn()?;
        let pid = child.id().ok_or_else(|| io::Error::other("no pid"))?;
        supervisor.add_group(pid, &spec_node);
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let (stdin, stdout) = stdin
            .zip(stdout)
            .ok_or_else(|| io::Error::other("no pipes"))?;
        let (orders, mut rx) = mpsc::unbounded_channel::<ToNode>();
        tokio::task::spawn_local(async move {
            let mut stdin = stdin;
            while let Some(order) = rx.recv().await {
                let mut line = serde_json::to_string(&order).expect("orders serialise");
                line.push('\n');
                if stdin.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
        let killed_at = Rc::new(Cell::new(None));
        let (name, killed) = (spec.node.clone(), killed_at.clone());
        tokio::task::spawn_local(read_notes(name, stdout, recorder, inbox, killed));
        Ok(NodeProcess {
            pid,
            orders,
            killed_at,
            stopped: false,
            supervisor: supervisor.clone(),
            child,
        })
    }

    /// Send it an order (lost if it is already gone, which is what a dead process gets).
    pub(crate) fn order(&self, order: ToNode) {
        let _ = self.orders.send(order);
    }

    /// Whether it is stopped (SIGSTOP by locksim or by itself).
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// SIGSTOP its group.
    pub(crate) fn stop(&mut self) -> io::Result<()> {
        signal_group(self.pid, libc::SIGSTOP)?;
        self.stopped = true;
        Ok(())
    }

    /// It stopped itself (a [`Note::Stopping`]).
    pub(crate) fn stopped_itself(&mut self) {
        self.stopped = true;
    }

    /// SIGCONT its group, once the kernel shows it stopped; `Ok(false)` when it has not
    /// stopped yet (it stops its group just after its note), so the caller retries.
    pub(crate) fn resume(&mut self) -> io::Result<bool> {
        if !process_is_stopped(self.pid) {
            return Ok(false);
        }
        signal_group(self.pid, libc::SIGCONT)?;
        self.stopped = false;
        Ok(true)
    }

    /// SIGKILL its group at true time `now_ns`; its reader then closes its outstanding
    /// operation as indeterminate (`info`, Jepsen's convention for a crashed process).
    pub(crate) fn kill(&mut self, now_ns: u64) {
        if self.killed_at.get().is_none() {
            self.killed_at.set(Some(now_ns));
            let _ = signal_group(self.pid, libc::SIGKILL);
            self.supervisor.remove(self.pid);
        }
    }
}

impl Drop for NodeProcess {
    /// Kill it and reap it before going on, so no process of the run outlives it (a
    /// SIGKILLed process is gone within milliseconds; give up after 2 s).
    fn drop(&mut self) {
        self.kill(0);
        let deadline = crate::net::monotonic_ns() + 2_000_000_000;
        while matches!(self.child.try_wait(), Ok(None)) && crate::net::monotonic_ns() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// Whether process `pid` is in the stopped state (`T` in /proc/PID/stat).
fn process_is_stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The state follows the command name, which is in parentheses and may hold spaces.
    let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
    state.is_some_and(|s| s.starts_with('T') || s.starts_with('t'))
}

/// Forward a client process's lines: events to the history, requests to the inbox. At
/// its end, close its last operation if locksim killed it, or report it died.
async fn read_notes(
    name: String,
    stdout: tokio::process::ChildStdout,
    recorder: Recorder,
    inbox: Inbox,
    killed_at: Rc<Cell<Option<u64>>>,
) {
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut last_op: Option<Event> = None;
    while let Ok(Some(line)) = lines.next_line().await {
        let note = match serde_json::from_str::<FromNode>(&line) {
            Ok(FromNode::Event(e)) => {
                if e.process == name && e.kind != EventType::Event {
                    last_op = Some((*e).clone());
                }
                recorder.push(*e);
                continue;
            }
            Ok(FromNode::Stopping { ns }) => Note::Stopping(ns),
            Ok(FromNode::Crash { down_ns }) => Note::Crash(down_ns),
            // Killing the group can end the adapter just before its node: what the node
            // then reports is the kill's doing, not the adapter's.
            Ok(FromNode::ClientFailed { .. }) if killed_at.get().is_some() => continue,
            Ok(FromNode::ClientFailed { command, failure }) => {
                Note::ClientFailed { command, failure }
            }
            Err(e) => {
                eprintln!("locksim: {name} wrote {line:?}: {e}");
                continue;
            }
        };
        inbox.borrow_mut().push((name.clone(), note));
    }
    match killed_at.get() {
        Some(t) => {
            if let Some(mut info) = last_op.filter(|e| e.kind == EventType::Invoke) {
                info.kind = EventType::Info;
                info.time_ns = t;
                info.reason = Some("crashed".into());
                recorder.push(info);
            }
        }
        None => inbox.borrow_mut().push((name, Note::Died)),
    }
}
