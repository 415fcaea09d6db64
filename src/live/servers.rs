//! The real servers of a live run: one `redis-server` (`redis`), N independent ones
//! (`redlock`), or a primary, its replicas and Sentinels (`redis-replicated`), started
//! with the scenario's persistence and failure detection, and ready before any client.

use super::process::{ask, RedisProcess, Role, Supervisor};
use crate::locks::redis::resp::Value;
use crate::locks::redis::Persistence;
use crate::scenario::Scenario;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The `[lock]` keys real servers need, read again from the scenario's file (the
/// algorithm keeps its parameters to itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// `persistence` [none].
    pub persistence: Persistence,
    /// `down_after_ms` of `redis-replicated` [1000].
    pub down_after_ms: u64,
    /// Whether `replication_lag_ms` is set: the model's delay, which real replication
    /// does not have.
    pub lag_set: bool,
}

impl ServerConfig {
    /// Read the keys from `scenario`'s file (already validated by the scenario's load).
    pub fn of(scenario: &Scenario) -> Result<ServerConfig, String> {
        #[derive(serde::Deserialize)]
        struct Lock {
            persistence: Option<Persistence>,
            down_after_ms: Option<u64>,
            replication_lag_ms: Option<toml::Value>,
        }
        #[derive(serde::Deserialize)]
        struct Text {
            lock: Option<toml::Value>,
        }
        let text = std::fs::read_to_string(&scenario.file)
            .map_err(|e| format!("{}: {e}", scenario.file.display()))?;
        let t: Text = toml::from_str(&text).map_err(|e| e.to_string())?;
        let lock = t.lock.and_then(|v| v.try_into::<Lock>().ok());
        Ok(ServerConfig {
            persistence: lock
                .as_ref()
                .and_then(|l| l.persistence)
                .unwrap_or(Persistence::None),
            down_after_ms: lock.as_ref().and_then(|l| l.down_after_ms).unwrap_or(1000),
            lag_set: lock.is_some_and(|l| l.replication_lag_ms.is_some()),
        })
    }
}

/// Start `scenario`'s servers under `root`: `redis-0` first (the primary, for
/// `redis-replicated`), then the other `redis-*` (its replicas there, else independent),
/// then the `sentinel-*`. For a replicated set, returns once every replica is in sync
/// and every sentinel knows every replica and every other sentinel (at most 30 s).
pub fn start_servers(
    scenario: &Scenario,
    config: ServerConfig,
    root: &Path,
    supervisor: &Supervisor,
) -> Result<BTreeMap<String, RedisProcess>, String> {
    let names = scenario.servers();
    let replicated = names.iter().any(|n| n.starts_with("sentinel-"));
    let redis: Vec<&String> = names.iter().filter(|n| n.starts_with("redis-")).collect();
    let sentinels: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("sentinel-"))
        .collect();
    let mut servers = BTreeMap::new();
    let mut start = |name: &str, role: Role| -> Result<u16, String> {
        let p = RedisProcess::start(name, root, config.persistence, role, supervisor)
            .map_err(|e| format!("{name}: {e}"))?;
        let port = p.port;
        servers.insert(name.to_string(), p);
        Ok(port)
    };
    let mut primary_port = None;
    for name in &redis {
        let role = match primary_port {
            Some(primary_port) if replicated => Role::Replica { primary_port },
            _ => Role::Primary,
        };
        let port = start(name, role)?;
        primary_port.get_or_insert(port);
    }
    if replicated {
        let primary_port = primary_port.ok_or("a replicated set needs redis-0")?;
        let quorum = sentinels.len() as u32 / 2 + 1;
        for name in &sentinels {
            let role = Role::Sentinel {
                primary_port,
                quorum,
                down_after_ms: config.down_after_ms,
            };
            start(name, role)?;
        }
        wait_until_replicated(&servers, redis.len() - 1, sentinels.len() - 1)?;
    }
    Ok(servers)
}

/// Wait until each replica's link to the primary is up and each sentinel sees
/// `replicas` replicas and `peers` other sentinels (Sentinel finds both through the
/// primary, every 2 s or so).
fn wait_until_replicated(
    servers: &BTreeMap<String, RedisProcess>,
    replicas: usize,
    peers: usize,
) -> Result<(), String> {
    let deadline = crate::net::monotonic_ns() + 30_000_000_000;
    for (name, p) in servers {
        let ready = || -> bool {
            if name == "redis-0" {
                return true;
            }
            if name.starts_with("redis-") {
                let info = ask(p.port, &[b"INFO", b"replication"]);
                return matches!(info, Ok(Value::Bulk(Some(t)))
                    if String::from_utf8_lossy(&t).contains("master_link_status:up"));
            }
            let Ok(Value::Array(Some(fields))) =
                ask(p.port, &[b"SENTINEL", b"master", b"mymaster"])
            else {
                return false;
            };
            let field = |key: &str| -> Option<usize> {
                let i = fields
                    .iter()
                    .position(|f| f.as_bulk() == Some(key.as_bytes()))?;
                std::str::from_utf8(fields.get(i + 1)?.as_bulk()?)
                    .ok()?
                    .parse()
                    .ok()
            };
            field("num-slaves") == Some(replicas) && field("num-other-sentinels") == Some(peers)
        };
        while !ready() {
            if crate::net::monotonic_ns() > deadline {
                return Err(format!(
                    "{name} was not ready within 30 s (replicas in sync, sentinels knowing \
                     {replicas} replicas and {peers} other sentinels)"
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    Ok(())
}
