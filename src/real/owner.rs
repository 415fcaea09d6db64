//! Which process opened a loopback connection, from the kernel's tables: the socket
//! whose local port is the connection's peer port and whose remote port is ours, in
//! `/proc/net/tcp` (or `tcp6`: Java's sockets are IPv6 ones with v4-mapped addresses),
//! gives an inode; the process with an fd on `socket:[inode]` opened it. This is how one
//! proxy port serves every directed link into a server: a peer is told one address for
//! a server (Raft's member list, a Sentinel's hello), whoever dials it.

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

/// Name the owner of a connection: its node in `processes` (pid → node), `locksim` for
/// locksim's own (readiness checks, observers), or `None`.
pub(crate) fn owner_name(
    peer_port: u16,
    local_port: u16,
    processes: &BTreeMap<u32, String>,
) -> Option<String> {
    let me = std::process::id();
    let pids = processes.keys().copied().chain([me]);
    let pid = connection_owner(peer_port, local_port, pids)?;
    Some(
        processes
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| "locksim".to_string()),
    )
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
