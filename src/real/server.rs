//! One real server process of a live run, started from its family's [`RealCluster`]
//! command: paused (SIGSTOP), resumed (SIGCONT), crashed (SIGKILL) and restarted on the
//! same ports and data folder, and always killed when dropped.

use super::supervisor::{die_with_locksim, signal, Supervisor};
use super::{Addresses, Patience, RealCluster, WaitError};
use std::fmt;
use std::io;
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::rc::Rc;

/// One real server on 127.0.0.1.
pub(crate) struct ServerProcess {
    /// The node name it stands for (`redis-0`, `raft-1`, `zk-2`).
    pub name: String,
    /// Where it is reachable once up: its first port's listen port (`None`: a node that
    /// serves no port, as a scheduled job, which only dials the others).
    pub port: Option<u16>,
    dir: PathBuf,
    cluster: Rc<dyn RealCluster>,
    addrs: Rc<Addresses>,
    child: Option<Child>,
    supervisor: Supervisor,
}

impl ServerProcess {
    /// Start `name` with its data in a new folder under `root`; it returns at once (see
    /// [`Self::wait_listening`]): the servers of a cluster may only open their ports
    /// once a quorum of them runs.
    pub(crate) fn start(
        name: &str,
        root: &Path,
        cluster: Rc<dyn RealCluster>,
        addrs: Rc<Addresses>,
        supervisor: &Supervisor,
    ) -> io::Result<ServerProcess> {
        let port = cluster
            .ports(name)
            .first()
            .map(|p| addrs.listen(name, p.label));
        let dir = root.join(name);
        std::fs::create_dir_all(&dir)?;
        let mut p = ServerProcess {
            name: name.to_string(),
            port,
            dir,
            cluster,
            addrs,
            child: None,
            supervisor: supervisor.clone(),
        };
        p.spawn()?;
        Ok(p)
    }

    fn spawn(&mut self) -> io::Result<()> {
        let mut cmd = self.cluster.command(&self.name, &self.dir, &self.addrs)?;
        // SAFETY: die_with_locksim's closure only makes async-signal-safe calls.
        unsafe { cmd.pre_exec(die_with_locksim()) };
        // Its own process group, so a terminal's Ctrl-C reaches locksim only.
        cmd.process_group(0).stdin(Stdio::null());
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("server.log"))?;
        cmd.stdout(log.try_clone()?).stderr(log);
        let child = cmd.spawn().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("{}: {:?}: {e}", self.name, cmd.get_program()),
            )
        })?;
        self.supervisor.add(child.id(), &self.name);
        self.child = Some(child);
        Ok(())
    }

    /// Block until it accepts connections on its first port (see [`Patience`]); the
    /// error carries the end of its log. A node without ports is up once started.
    pub(crate) fn wait_listening(&mut self, patience: &Patience) -> Result<(), NotListening> {
        let Some(port) = self.port else {
            return Ok(());
        };
        let mut exited = false;
        let child = &mut self.child;
        let what = format!("{} on 127.0.0.1:{port}", self.name);
        let waited = patience.wait(&what, || {
            exited = child
                .as_mut()
                .map(|c| c.try_wait().ok().flatten().is_some())
                .unwrap_or(true);
            exited || TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let why = match waited {
            Err(e) => Why::Waited(e),
            Ok(()) if exited => Why::Exited { what },
            Ok(()) => return Ok(()),
        };
        Err(NotListening {
            why,
            system: self.cluster.system(),
            log_tail: self.log_tail(12),
        })
    }

    /// The last `lines` lines of its log (stdout and stderr).
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    fn pid(&self) -> io::Result<u32> {
        self.child
            .as_ref()
            .map(Child::id)
            .ok_or_else(|| io::Error::other(format!("{} is not running", self.name)))
    }

    /// Freeze the process (SIGSTOP): it keeps its sockets and answers nothing.
    pub(crate) fn pause(&mut self) -> io::Result<()> {
        signal(self.pid()?, libc::SIGSTOP)
    }

    /// Thaw it (SIGCONT).
    pub(crate) fn resume(&mut self) -> io::Result<()> {
        signal(self.pid()?, libc::SIGCONT)
    }

    /// Whether a crash of it is applied (see [`RealCluster::crashes_apply`]).
    pub(crate) fn crashes_apply(&self) -> bool {
        self.cluster.crashes_apply(&self.name)
    }

    /// Whether it is running (started and not crashed).
    pub(crate) fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Kill it (SIGKILL): what it had synced to its data folder is all a restart gets.
    pub(crate) fn crash(&mut self) -> io::Result<()> {
        if let Some(mut child) = self.child.take() {
            self.supervisor.remove(child.id());
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Start it again on the same ports and data folder (after [`Self::crash`]); returns
    /// at once, as clients of a restarting server find it refusing or still loading.
    pub(crate) fn restart(&mut self) -> io::Result<()> {
        self.crash()?;
        self.spawn()
    }
}

/// A server that did not come to accept connections, with the end of its log.
#[derive(Debug)]
pub(crate) struct NotListening {
    why: Why,
    system: &'static str,
    log_tail: String,
}

/// Why a server is not listening.
#[derive(Debug)]
enum Why {
    /// Waiting for it ended (the start-up limit, a signal).
    Waited(WaitError),
    /// Its process exited; `what` names it and its port.
    Exited { what: String },
}

impl fmt::Display for NotListening {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.why {
            Why::Waited(e) => write!(f, "{e}")?,
            Why::Exited { what } => write!(f, "{what} exited")?,
        }
        write!(f, " ({}); its log ends:\n{}", self.system, self.log_tail)
    }
}

// The message includes its cause's (see `source`'s convention).
impl std::error::Error for NotListening {}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.crash();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
