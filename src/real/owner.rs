//! Which process opened a loopback connection, from the kernel's tables: the socket
//! whose local port is the connection's peer port and whose remote port is ours, in
//! `/proc/net/tcp` (or `tcp6`: Java's sockets are IPv6 ones with v4-mapped addresses),
//! gives an inode; the process with an fd on `socket:[inode]` opened it. This is how one
//! proxy port serves every directed link into a server: a peer is told one address for
//! a server (Raft's member list, a Sentinel's hello), whoever dials it.
//!
//! A process in the process group of a listed process counts as that process's node:
//! a client node's external client (an adapter program, a JVM) runs in the group of
//! the node's own process, and its connections are the node's.

use std::collections::BTreeMap;
use std::path::Path;

/// The pid among `candidates` whose process holds the client end of the loopback
/// connection from port `peer_port` to port `local_port`, if the kernel still lists it.
pub(crate) fn connection_owner(
    peer_port: u16,
    local_port: u16,
    candidates: impl IntoIterator<Item = u32>,
) -> Option<u32> {
    let inode = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .find_map(|table| socket_inode(&table, peer_port, local_port))?;
    let target = format!("socket:[{inode}]");
    candidates
        .into_iter()
        .find(|pid| holds(Path::new(&format!("/proc/{pid}/fd")), &target))
}

/// The inode of the socket in `table` (`/proc/net/tcp` text) from `local` to `remote`
/// ports (0 when the kernel shows none: a socket in TIME_WAIT).
fn socket_inode(table: &str, local: u16, remote: u16) -> Option<u64> {
    let port = |addr: &str| {
        addr.rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok())
    };
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (l, r, inode) = (f.get(1)?, f.get(2)?, f.get(9)?);
        (port(l)? == local && port(r)? == remote)
            .then(|| inode.parse().ok())
            .flatten()
            .filter(|i| *i != 0)
    })
}

/// Whether a link in `fd_dir` points at `target`.
fn holds(fd_dir: &Path, target: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(fd_dir) else {
        return false;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .any(|l| l.as_os_str() == target)
}

/// Name the owner of a connection: its node in `processes` (pid → node), or the node
/// of the listed process whose process group it is in, `locksim` for locksim's own
/// (readiness checks, observers), or `None`.
pub(crate) fn owner_name(
    peer_port: u16,
    local_port: u16,
    processes: &BTreeMap<u32, String>,
) -> Option<String> {
    let me = std::process::id();
    let pids = processes.keys().copied().chain([me]);
    if let Some(pid) = connection_owner(peer_port, local_port, pids) {
        return Some(
            processes
                .get(&pid)
                .cloned()
                .unwrap_or_else(|| "locksim".to_string()),
        );
    }
    // Not a listed process itself: a member of a listed process's group, if any.
    let members = group_members(Path::new("/proc"), processes);
    let pid = connection_owner(peer_port, local_port, members.keys().copied())?;
    members.get(&pid).cloned()
}

/// Every process under `proc` (the `/proc` folder) whose process group is led by a
/// process of `processes`, with that process's node; the listed ones themselves left out.
fn group_members(proc: &Path, processes: &BTreeMap<u32, String>) -> BTreeMap<u32, String> {
    let Ok(entries) = std::fs::read_dir(proc) else {
        return BTreeMap::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| !processes.contains_key(pid))
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(proc.join(pid.to_string()).join("stat")).ok()?;
            let node = processes.get(&process_group(&stat)?)?;
            Some((pid, node.clone()))
        })
        .collect()
}

/// The process group in a `/proc/PID/stat` line: the third field after the command
/// name, which is in parentheses and may hold spaces and parentheses itself.
fn process_group(stat: &str) -> Option<u32> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 20 4 30 10 -1
";

    #[test]
    fn finds_the_client_end_by_its_ports() {
        // 0x9C40 = 40000 dialled 0x1F90 = 8080: the client end is line 1.
        assert_eq!(socket_inode(TABLE, 40000, 8080), Some(2222));
        assert_eq!(socket_inode(TABLE, 8080, 40000), Some(3333));
        assert_eq!(socket_inode(TABLE, 40001, 8080), None);
    }

    #[test]
    fn reads_the_process_group_after_the_command_name() {
        let stat = "4242 (a (b) c) S 1 4240 4240 0 -1 4194560 100";
        assert_eq!(process_group(stat), Some(4240));
        assert_eq!(process_group("4242 (x"), None);
    }

    /// A process in the group of a listed one (an adapter in its client node's group)
    /// owns its connections as that node.
    #[test]
    fn a_member_of_a_listed_process_group_counts_as_its_node() {
        use std::os::unix::process::CommandExt;
        use std::process::{Command, Stdio};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut leader = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        // bash opens the connection itself (its /dev/tcp), in the leader's group.
        let mut member = Command::new("bash")
            .arg("-c")
            .arg(format!("exec 3<>/dev/tcp/127.0.0.1/{port}; sleep 30"))
            .process_group(leader.id() as i32)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let (_server, peer) = listener.accept().unwrap();
        let listed = BTreeMap::from([(leader.id(), "client-0".to_string())]);
        let found = owner_name(peer.port(), port, &listed);
        let unlisted = owner_name(peer.port(), port, &BTreeMap::new());
        let _ = (member.kill(), leader.kill());
        let _ = (member.wait(), leader.wait());
        assert_eq!(found.as_deref(), Some("client-0"));
        assert_eq!(unlisted, None);
    }

    #[test]
    fn finds_this_process_as_the_owner_of_its_own_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let _client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (_server, peer) = listener.accept().unwrap();
        let none = BTreeMap::new();
        assert_eq!(
            owner_name(peer.port(), port, &none).as_deref(),
            Some("locksim")
        );
        assert_eq!(connection_owner(peer.port(), port, [1]), None);
    }
}
