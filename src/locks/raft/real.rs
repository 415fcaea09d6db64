//! The Raft family's real counterpart for live mode: a cluster of Debian's `etcd`
//! (3.4) members `raft-0 ..`, one per server node, with the scenario's Raft timing
//! (`--heartbeat-interval` = `heartbeat_tick × tick_ms`, `--election-timeout` =
//! `election_tick × tick_ms`) and pre-vote. Each member listens on its private ports and
//! advertises its proxies' (`--initial-advertise-peer-urls`, `--advertise-client-urls`),
//! so Raft's own traffic and its lease forwarding cross the run's proxies.

use super::params::{Fsync, LessorCheck, ReadMode};
use super::wire::CLIENT_PORT;
use super::RaftParams;
use crate::real::{find_binary, Addresses, Patience, RealCluster, RealPort, WaitError};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// etcd refuses an election timeout below five heartbeats.
const MIN_ELECTIONS_PER_HEARTBEAT: u64 = 5;

/// A real etcd cluster for a live run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RealEtcd {
    /// The scenario's parameters.
    pub params: RaftParams,
}

impl RealEtcd {
    fn members(&self) -> Vec<String> {
        (0..self.params.nodes)
            .map(|i| format!("raft-{i}"))
            .collect()
    }

    /// `--heartbeat-interval` and `--election-timeout`, ms: the scenario's, with the
    /// heartbeat lowered to a fifth of the election timeout if it is above (etcd's rule).
    fn timing_ms(&self) -> (u64, u64) {
        let p = &self.params;
        let election = p.election_timeout_ms();
        let heartbeat = (p.heartbeat_tick * p.tick_ms).min(election / MIN_ELECTIONS_PER_HEARTBEAT);
        (heartbeat.max(1), election)
    }
}

impl RealCluster for RealEtcd {
    fn system(&self) -> &'static str {
        "etcd"
    }

    fn ports(&self, _node: &str) -> Vec<RealPort> {
        vec![
            RealPort {
                label: "client",
                sim_port: Some(CLIENT_PORT),
            },
            RealPort {
                label: "peer",
                sim_port: None,
            },
        ]
    }

    fn command(&self, node: &str, dir: &Path, addrs: &Addresses) -> io::Result<Command> {
        let url = |port: u16| format!("http://127.0.0.1:{port}");
        let cluster: Vec<String> = self
            .members()
            .iter()
            .map(|m| format!("{m}={}", url(addrs.public(m, "peer"))))
            .collect();
        let (heartbeat, election) = self.timing_ms();
        let mut cmd = Command::new(find_binary("etcd", "etcd-server")?);
        cmd.args(["--name", node])
            .arg("--data-dir")
            .arg(dir.join("data"))
            .args(["--listen-peer-urls", &url(addrs.listen(node, "peer"))])
            .args(["--listen-client-urls", &url(addrs.listen(node, "client"))])
            .args([
                "--initial-advertise-peer-urls",
                &url(addrs.public(node, "peer")),
            ])
            .args([
                "--advertise-client-urls",
                &url(addrs.public(node, "client")),
            ])
            // Ignored at a restart: the data folder holds the membership.
            .args(["--initial-cluster", &cluster.join(",")])
            .args(["--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", "locksim"])
            .args(["--heartbeat-interval", &heartbeat.to_string()])
            .args(["--election-timeout", &election.to_string()])
            .args([
                "--logger",
                "zap",
                "--log-outputs",
                "stderr",
                "--log-level",
                "warn",
            ]);
        if self.params.pre_vote {
            cmd.arg("--pre-vote");
        }
        Ok(cmd)
    }

    /// Every member answers `GET /health` with `{"health":"true"}`: it has a leader and
    /// a quorum (its client port accepts connections long before).
    fn wait_ready(&self, addrs: &Addresses, patience: &Patience) -> Result<(), WaitError> {
        for m in self.members() {
            let port = addrs.listen(&m, "client");
            let what = format!("{m}: etcd healthy (GET /health on 127.0.0.1:{port})");
            patience.wait(&what, || healthy(port))?;
        }
        Ok(())
    }

    fn unchecked(&self) -> Vec<(&'static str, &'static str)> {
        const RAFT: &str = "reads the model's Raft events, which etcd does not expose";
        vec![
            (
                "lock-linearizable",
                "needs the server's record of each holder a lease revoke removed; etcd's \
                 watch shows the delete, not why",
            ),
            ("raft-election-safety", RAFT),
            ("raft-log", RAFT),
            ("raft-apply", RAFT),
        ]
    }

    fn not_applied(&self) -> Vec<String> {
        let p = &self.params;
        let mut out = Vec::new();
        let ttl_ms = p.for_real().ttl_ms;
        if ttl_ms != p.ttl_ms {
            out.push(format!(
                "ttl_ms: {ttl_ms} ms, not {} (etcd's lease TTLs are whole real seconds, at \
                 least its minimum)",
                p.ttl_ms
            ));
        }
        let (heartbeat, election) = self.timing_ms();
        if heartbeat != p.heartbeat_tick * p.tick_ms {
            out.push(format!(
                "heartbeat_tick: --heartbeat-interval {heartbeat} ms, not {} (etcd wants an \
                 election timeout of at least 5 heartbeats, {election} ms)",
                p.heartbeat_tick * p.tick_ms
            ));
        }
        if !p.check_quorum {
            out.push("check_quorum = false (etcd always checks quorum)".into());
        }
        if p.read != ReadMode::ReadIndex {
            out.push("read (etcd 3.4's linearizable reads use ReadIndex)".into());
        }
        if p.lessor_check != LessorCheck::EnsureLeadership {
            out.push("lessor_check (real etcd's lessor is what its version does)".into());
        }
        if p.fsync != Fsync::Always {
            out.push("fsync = \"none\" (etcd 3.4 always syncs its WAL)".into());
        }
        if p.lock_delay_ms > 0 {
            out.push("lock_delay_ms (a model extension etcd does not have)".into());
        }
        for (key, set) in [
            ("lessor_check_ms", p.lessor_check_ms.is_some()),
            ("revoke_retry_ms", p.revoke_retry_ms.is_some()),
        ] {
            if set {
                out.push(format!("{key} (etcd's lessor timers are fixed)"));
            }
        }
        out
    }
}

/// Whether the member whose client port is `port` answers `GET /health` with
/// `{"health":"true"}` within half a second.
fn healthy(port: u16) -> bool {
    let ask = || -> io::Result<String> {
        let mut s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_millis(500)))?;
        s.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
        let mut text = String::new();
        s.read_to_string(&mut text)?;
        Ok(text)
    };
    ask().is_ok_and(|t| t.starts_with("HTTP/1.0 200") && t.contains("\"health\":\"true\""))
}
