//! Real `redis-server` processes on loopback for live mode: started on a free
//! 127.0.0.1 port with the scenario's persistence, paused (SIGSTOP), resumed (SIGCONT),
//! crashed (SIGKILL) and restarted on the same port and data folder, and always killed
//! when dropped. Every process started is listed in a [`Supervisor`], which a Ctrl-C
//! handler can empty.

use crate::locks::redis::resp::{decode, encode_command, Value};
use crate::locks::redis::Persistence;
use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where `redis-server` is: on `PATH`, or in `/usr/bin` or `/usr/local/bin`.
pub fn redis_server_binary() -> io::Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")])
        .map(|d| d.join("redis-server"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                "redis-server not found: install it (e.g. `apt-get install -y redis-server`)",
            )
        })
}

/// The process ids of every live process, so that an interrupt can kill them all.
#[derive(Debug, Clone, Default)]
pub struct Supervisor(Arc<Mutex<Vec<u32>>>);

impl Supervisor {
    pub(crate) fn add(&self, pid: u32) {
        self.0.lock().expect("not poisoned").push(pid);
    }

    pub(crate) fn remove(&self, pid: u32) {
        self.0.lock().expect("not poisoned").retain(|p| *p != pid);
    }

    /// SIGKILL every process still listed (they may be stopped: SIGKILL ends those too).
    pub fn kill_all(&self) {
        for pid in self.0.lock().expect("not poisoned").drain(..) {
            let _ = signal(pid, libc::SIGKILL);
        }
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

/// For `pre_exec` of every process live mode starts: the kernel SIGKILLs it when locksim
/// ends, even when locksim itself is SIGKILLed and cannot clean up.
pub(crate) fn die_with_locksim() -> io::Result<()> {
    // SAFETY: prctl(2) is async-signal-safe, as code between fork and exec must be.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    Ok(())
}

/// What a process is started as (again, after a crash: a restarted primary comes back
/// as a primary, and the sentinels demote it, as they would a real one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A redis-server that starts as a primary.
    Primary,
    /// A redis-server that starts as a replica of the primary on this port.
    Replica {
        /// The initial primary's port.
        primary_port: u16,
    },
    /// A Sentinel (`redis-server sentinel.conf --sentinel`) monitoring the primary on
    /// this port as `mymaster`.
    Sentinel {
        /// The initial primary's port.
        primary_port: u16,
        /// Sentinels that must agree the primary is down (a majority, as in the model).
        quorum: u32,
        /// `down-after-milliseconds`; the failover timeout is twice that, as in the model.
        down_after_ms: u64,
    },
}

/// One `redis-server` (or Sentinel) on 127.0.0.1.
#[derive(Debug)]
pub struct RedisProcess {
    /// The node name it stands for (`redis-0`).
    pub name: String,
    /// Its loopback port.
    pub port: u16,
    dir: PathBuf,
    persistence: Persistence,
    role: Role,
    child: Option<Child>,
    paused: bool,
    supervisor: Supervisor,
}

impl RedisProcess {
    /// Start `name` as `role` on a free loopback port with its data in a new folder
    /// under `root`; returns once it accepts connections (or fails after 10 s).
    pub fn start(
        name: &str,
        root: &Path,
        persistence: Persistence,
        role: Role,
        supervisor: &Supervisor,
    ) -> io::Result<RedisProcess> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let dir = root.join(format!("{name}-{port}"));
        std::fs::create_dir_all(&dir)?;
        let mut p = RedisProcess {
            name: name.to_string(),
            port,
            dir,
            persistence,
            role,
            child: None,
            paused: false,
            supervisor: supervisor.clone(),
        };
        p.spawn()?;
        Ok(p)
    }

    fn spawn(&mut self) -> io::Result<()> {
        let (aof, fsync) = match self.persistence {
            Persistence::None => ("no", "everysec"),
            Persistence::Everysec => ("yes", "everysec"),
            Persistence::Always => ("yes", "always"),
        };
        let mut cmd = Command::new(redis_server_binary()?);
        // SAFETY: die_with_locksim only calls prctl(2).
        unsafe { cmd.pre_exec(die_with_locksim) };
        // Its own process group, so a terminal's Ctrl-C reaches locksim only.
        cmd.process_group(0);
        let port = self.port.to_string();
        match self.role {
            Role::Sentinel {
                primary_port,
                quorum,
                down_after_ms,
            } => {
                // Sentinel rewrites its file as it learns (epochs, peers, the primary):
                // written once, so a restarted sentinel resumes from what it knew.
                let conf = self.dir.join("sentinel.conf");
                if !conf.exists() {
                    let text = format!(
                        "port {port}\nbind 127.0.0.1\nprotected-mode no\ndaemonize no\n\
                         dir {dir}\n\
                         sentinel monitor mymaster 127.0.0.1 {primary_port} {quorum}\n\
                         sentinel down-after-milliseconds mymaster {down_after_ms}\n\
                         sentinel failover-timeout mymaster {timeout}\n\
                         sentinel parallel-syncs mymaster 1\n",
                        dir = self.dir.display(),
                        timeout = 2 * down_after_ms,
                    );
                    std::fs::write(&conf, text)?;
                }
                cmd.arg(&conf).arg("--sentinel");
            }
            Role::Primary | Role::Replica { .. } => {
                cmd.args(["--port", &port, "--bind", "127.0.0.1"])
                    .args(["--save", "", "--appendonly", aof, "--appendfsync", fsync])
                    .args(["--daemonize", "no", "--protected-mode", "yes"])
                    // A replica's first sync starts at once, not after Redis's 5 s wait.
                    .args(["--repl-diskless-sync-delay", "0"])
                    // Expirations as pub/sub events: live mode records them as the model
                    // does.
                    .args(["--notify-keyspace-events", "Ex"])
                    .arg("--dir")
                    .arg(&self.dir);
                if let Role::Replica { primary_port } = self.role {
                    cmd.args(["--replicaof", "127.0.0.1", &primary_port.to_string()]);
                }
            }
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        self.supervisor.add(child.id());
        self.child = Some(child);
        self.paused = false;
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() >= deadline {
                return Err(io::Error::other(format!(
                    "{}: redis-server did not listen on 127.0.0.1:{} within 10 s",
                    self.name, self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    fn pid(&self) -> io::Result<u32> {
        self.child
            .as_ref()
            .map(Child::id)
            .ok_or_else(|| io::Error::other(format!("{} is not running", self.name)))
    }

    /// Freeze the process (SIGSTOP): it keeps its sockets and answers nothing.
    pub fn pause(&mut self) -> io::Result<()> {
        signal(self.pid()?, libc::SIGSTOP)?;
        self.paused = true;
        Ok(())
    }

    /// Thaw it (SIGCONT).
    pub fn resume(&mut self) -> io::Result<()> {
        signal(self.pid()?, libc::SIGCONT)?;
        self.paused = false;
        Ok(())
    }

    /// Whether it is running (started and not crashed).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Kill it (SIGKILL): what the AOF had fsynced is all a restart gets back.
    pub fn crash(&mut self) -> io::Result<()> {
        if let Some(mut child) = self.child.take() {
            self.supervisor.remove(child.id());
            child.kill()?;
            child.wait()?;
        }
        self.paused = false;
        Ok(())
    }

    /// Start it again on the same port and data folder (after [`Self::crash`]).
    pub fn restart(&mut self) -> io::Result<()> {
        self.crash()?;
        self.spawn()
    }
}

/// Send one command to the process on `port` and read its reply (blocking, 1 s deadline).
pub fn ask(port: u16, args: &[&[u8]]) -> io::Result<Value> {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut out = Vec::new();
    encode_command(args, &mut out);
    s.write_all(&out)?;
    let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::other("connection closed before a reply"));
        }
        buf.extend_from_slice(&chunk[..n]);
        match decode(&buf) {
            Ok(Some((v, _))) => return Ok(v),
            Ok(None) => {}
            Err(e) => return Err(io::Error::other(format!("bad reply: {e:?}"))),
        }
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.crash();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn ping(port: u16) -> io::Result<String> {
        let mut s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_millis(300)))?;
        s.write_all(b"*1\r\n$4\r\nPING\r\n")?;
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    fn set_get(port: u16, set: bool) -> io::Result<String> {
        let mut s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_millis(1000)))?;
        let cmd: &[u8] = if set {
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
        } else {
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
        };
        s.write_all(cmd)?;
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf)?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    #[test]
    fn pause_resume_crash_restart_and_kill_on_drop() {
        let root = std::env::temp_dir().join(format!("locksim-live-test-{}", std::process::id()));
        let sup = Supervisor::default();
        let mut p = RedisProcess::start("redis-0", &root, Persistence::Always, Role::Primary, &sup)
            .expect("redis-server starts (scripts/test installs it; or apt-get install -y redis-server)");
        assert_eq!(ping(p.port).unwrap(), "+PONG\r\n");
        p.pause().unwrap();
        assert!(ping(p.port).is_err(), "a stopped server answers nothing");
        p.resume().unwrap();
        assert_eq!(ping(p.port).unwrap(), "+PONG\r\n");
        assert_eq!(set_get(p.port, true).unwrap(), "+OK\r\n");
        // appendfsync always: the write survives SIGKILL and a restart.
        p.crash().unwrap();
        assert!(ping(p.port).is_err());
        p.restart().unwrap();
        // A restarted server accepts connections before it has loaded its AOF, and
        // answers LOADING until then, as real clients see too.
        let mut got = set_get(p.port, false).unwrap();
        for _ in 0..500 {
            if !got.starts_with("-LOADING") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            got = set_get(p.port, false).unwrap();
        }
        assert_eq!(got, "$1\r\nv\r\n");
        let (port, pid) = (p.port, p.pid().unwrap());
        assert_eq!(sup.0.lock().unwrap().as_slice(), &[pid]);
        p.pause().unwrap();
        drop(p); // killed although stopped
        assert!(ping(port).is_err());
        assert!(sup.0.lock().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&root);
    }
}
