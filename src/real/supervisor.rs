//! Every process a live run starts, by pid and the node it stands for: an interrupt
//! kills them all, and the proxies ask it which node opened a connection.

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};

/// The process ids of every live process with their node names, so that an interrupt
/// can kill them all and a proxy can tell whose connection it accepted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Supervisor(Arc<Mutex<BTreeMap<u32, Listed>>>);

/// A listed process: its node, and whether its whole process group is the node's.
#[derive(Debug, Clone)]
struct Listed {
    node: String,
    group: bool,
}

impl Supervisor {
    /// List `pid` as node `node`'s process.
    pub(crate) fn add(&self, pid: u32, node: &str) {
        let node = node.to_string();
        self.lock().insert(pid, Listed { node, group: false });
    }

    /// List `pid`, the leader of its own process group, as node `node`'s process: the
    /// whole group is the node's (a client node's process and its external client),
    /// and [`Supervisor::kill_all`] kills the group.
    pub(crate) fn add_group(&self, pid: u32, node: &str) {
        let node = node.to_string();
        self.lock().insert(pid, Listed { node, group: true });
    }

    /// Forget `pid` (it was killed and reaped).
    pub(crate) fn remove(&self, pid: u32) {
        self.lock().remove(&pid);
    }

    /// Every listed process: pid → node.
    pub(crate) fn processes(&self) -> BTreeMap<u32, String> {
        self.lock()
            .iter()
            .map(|(pid, l)| (*pid, l.node.clone()))
            .collect()
    }

    /// SIGKILL every process still listed, and the group of each group leader (they may
    /// be stopped: SIGKILL ends those too).
    pub(crate) fn kill_all(&self) {
        for (pid, listed) in std::mem::take(&mut *self.lock()) {
            if listed.group {
                let _ = signal_group(pid, libc::SIGKILL);
            }
            let _ = signal(pid, libc::SIGKILL);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, Listed>> {
        // A panic while holding it leaves a map that is still whole.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Send signal `sig` (`libc::SIGSTOP`, `SIGCONT`, `SIGKILL`) to `pid`.
pub(crate) fn signal(pid: u32, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: kill(2) with a pid of a child this process started and a valid signal.
    if unsafe { libc::kill(pid as libc::pid_t, sig) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Send signal `sig` to every process of the process group `pgid` (a process locksim
/// started as the leader of its own group).
pub(crate) fn signal_group(pgid: u32, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: kill(2) with a negative pid: the group of a child this process started.
    if unsafe { libc::kill(-(pgid as libc::pid_t), sig) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// For `pre_exec` of every process live mode starts: the kernel SIGKILLs it when the
/// thread that started it ends, even when locksim itself is SIGKILLed and cannot clean up
/// (`PR_SET_PDEATHSIG` follows the forking *thread*: live mode starts every process from
/// the thread that runs the whole run). If locksim died before the `prctl`, the process
/// exits at once.
pub(crate) fn die_with_locksim() -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
    let locksim = std::process::id() as libc::pid_t;
    move || {
        // SAFETY: prctl(2), getppid(2) and _exit(2) are async-signal-safe, as code
        // between fork and exec must be.
        unsafe {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != locksim {
                libc::_exit(1);
            }
        }
        Ok(())
    }
}
