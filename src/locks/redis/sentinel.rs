//! Redis Sentinel, the parts that decide lock safety (redis.io, "High availability with
//! Redis Sentinel"):
//!
//! 1. Every sentinel PINGs the primary; without a valid reply for `down_after_ms` it
//!    considers the primary *subjectively down* (SDOWN). A down primary that answers
//!    `BUSY` (a script that never ends) gets one `SCRIPT KILL` per down period.
//! 2. It asks the other sentinels (`SENTINEL is-master-down-by-addr`); when a quorum (here
//!    a majority of sentinels) agrees, the primary is *objectively down* (ODOWN).
//! 3. It starts an election for a new epoch, asking the others for their vote with the
//!    same command; each sentinel votes once per epoch, first come first served. A
//!    sentinel with a majority of votes leads the failover.
//! 4. The leader promotes the reachable replica with the highest replication offset
//!    (`REPLICAOF NO ONE`; ties broken by name), tells the other sentinels the new
//!    configuration with its epoch, and points every other node at the new primary.
//! 5. Periodically every sentinel re-points nodes that disagree with the configuration:
//!    this is how an old primary that was partitioned away learns it was demoted, once it
//!    is reachable again — until then it keeps accepting writes, which are dropped when it
//!    resynchronises as a replica.
//!
//! Clients find the primary with `SENTINEL get-master-addr-by-name`.

use super::endpoint::{redis_remote, Call, RedisRemote};
use super::params::Replication;
use super::resp::Value;
use super::resp::{Commands, ProtocolError};
use super::{MASTER_NAME, REDIS_PORT, SENTINEL_PORT};
use crate::history::names;
use crate::history::EventType;
use crate::sim::NodeCtx;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

const PERIOD: Duration = Duration::from_millis(100);
const REQUEST: Duration = Duration::from_millis(100);

#[derive(Debug)]
struct State {
    /// The configured primary and the epoch of that configuration.
    primary: String,
    config_epoch: u64,
    /// Highest epoch seen, and the vote cast in each epoch.
    current_epoch: u64,
    votes: BTreeMap<u64, String>,
    /// Whether this sentinel sees the primary as subjectively down.
    sdown: bool,
    /// No own failover attempt before this local time (ns): set after voting for another
    /// sentinel, as Sentinel waits out the winner's failover before trying itself.
    quiet_until: i64,
    /// The failover timeout: twice `down_after_ms`, in ns.
    failover_timeout: i64,
}

type Shared = Rc<RefCell<State>>;

/// Run a sentinel over the Redis nodes in `servers` (names starting with `redis-`) and
/// its peer sentinels (names starting with `sentinel-`).
pub(crate) async fn sentinel_main(ctx: NodeCtx, r: Replication, servers: Vec<String>) {
    let redis: Vec<String> = servers
        .iter()
        .filter(|s| s.starts_with("redis-"))
        .cloned()
        .collect();
    let peers: Vec<String> = servers
        .iter()
        .filter(|s| s.starts_with("sentinel-") && s.as_str() != ctx.name())
        .cloned()
        .collect();
    let state: Shared = Rc::new(RefCell::new(State {
        primary: "redis-0".to_string(),
        config_epoch: 0,
        current_epoch: 0,
        votes: BTreeMap::new(),
        sdown: false,
        quiet_until: 0,
        failover_timeout: 2 * (r.down_after_ms * 1_000_000) as i64,
    }));
    {
        let (ctx2, st) = (ctx.clone(), state.clone());
        ctx.spawn(async move {
            let answer = move |ctx: &NodeCtx,
                               req: Result<Vec<Vec<u8>>, ProtocolError>,
                               out: &mut Vec<u8>| {
                match req {
                    Ok(args) => command(ctx, &st, &args).encode(out),
                    // Redis replies with the protocol error and closes the connection.
                    Err(e) => Value::Error(format!("ERR {e}")).encode(out),
                }
            };
            crate::net::serve(ctx2, SENTINEL_PORT, Commands, answer).await
        });
    }
    monitor(ctx, state, r, redis, peers).await
}

/// Answer one sentinel command.
fn command(ctx: &NodeCtx, st: &Shared, args: &[Vec<u8>]) -> Value {
    let words: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    let mut s = st.borrow_mut();
    match w[..] {
        ["PING"] | ["ping"] => Value::simple("PONG"),
        [c, sub, name]
            if c.eq_ignore_ascii_case("sentinel")
                && sub.eq_ignore_ascii_case("get-master-addr-by-name") =>
        {
            if name != MASTER_NAME {
                return Value::Array(None);
            }
            Value::array(vec![
                Value::bulk(s.primary.as_bytes()),
                Value::bulk(REDIS_PORT.to_string().as_bytes()),
            ])
        }
        // is-master-down-by-addr <primary> <port> <epoch> <runid|*>: our SDOWN view, and
        // our vote for <epoch> when runid is not "*".
        [c, sub, addr, _port, epoch, runid]
            if c.eq_ignore_ascii_case("sentinel")
                && sub.eq_ignore_ascii_case("is-master-down-by-addr") =>
        {
            let epoch: u64 = epoch.parse().unwrap_or(0);
            let down = s.sdown && addr == s.primary;
            let mut leader = "*".to_string();
            let mut leader_epoch = 0;
            if runid != "*" {
                if epoch > s.current_epoch {
                    s.current_epoch = epoch;
                }
                let vote = s
                    .votes
                    .entry(epoch)
                    .or_insert_with(|| runid.to_string())
                    .clone();
                if vote == runid && runid != ctx.name() {
                    s.quiet_until = ctx.mono_ns() + s.failover_timeout;
                }
                leader = vote;
                leader_epoch = epoch;
            }
            Value::array(vec![
                Value::int(down as i64),
                Value::bulk(leader.as_bytes()),
                Value::int(leader_epoch as i64),
            ])
        }
        // Our stand-in for Sentinel's hello messages: adopt a newer configuration.
        [c, sub, epoch, primary]
            if c.eq_ignore_ascii_case("sentinel") && sub.eq_ignore_ascii_case("config") =>
        {
            let epoch: u64 = epoch.parse().unwrap_or(0);
            if epoch > s.config_epoch {
                s.config_epoch = epoch;
                s.current_epoch = s.current_epoch.max(epoch);
                s.primary = primary.to_string();
                s.sdown = false;
                drop(s);
                tracing::info!("adopted config epoch {epoch}: primary {primary}");
                ctx.record(
                    ctx.event(EventType::Event, names::CONFIG)
                        .value(serde_json::json!({"epoch": epoch, "primary": primary})),
                );
            }
            Value::ok()
        }
        _ => Value::err(format!("ERR unknown sentinel command {words:?}")),
    }
}

struct Links {
    redis: BTreeMap<String, RedisRemote>,
    peers: BTreeMap<String, RedisRemote>,
}

impl Links {
    fn redis(&mut self, name: &str) -> &mut RedisRemote {
        self.redis
            .entry(name.to_string())
            .or_insert_with(|| redis_remote(name, REDIS_PORT, REQUEST))
    }
}

/// Watch the configured primary, every [`PERIOD`], in the steps of the module docs.
async fn monitor(ctx: NodeCtx, st: Shared, r: Replication, redis: Vec<String>, peers: Vec<String>) {
    let mut m = Monitor::new(ctx, st, r, redis, peers);
    loop {
        m.ctx.sleep(PERIOD).await;
        let primary = m.watch();
        let (sdown, now) = m.check_down(&primary).await;
        m.maybe_fail_over(&primary, sdown, now).await;
        if m.ctx.mono_ns() >= m.next_sweep {
            m.sweep().await;
        }
    }
}

/// A sentinel's monitoring task: its links and what it remembers between rounds.
struct Monitor {
    ctx: NodeCtx,
    st: Shared,
    r: Replication,
    redis: Vec<String>,
    peers: Vec<String>,
    links: Links,
    /// A majority of all sentinels, this one included.
    quorum: usize,
    /// Local time (ns) of the watched primary's last PONG, or of when it became the
    /// primary.
    last_ok: i64,
    watched: String,
    /// Local time (ns) of the next reconfiguration sweep.
    next_sweep: i64,
    /// Whether SCRIPT KILL was sent in this down period.
    script_kill_sent: bool,
}

impl Monitor {
    fn new(
        ctx: NodeCtx,
        st: Shared,
        r: Replication,
        redis: Vec<String>,
        peers: Vec<String>,
    ) -> Self {
        let links = Links {
            redis: BTreeMap::new(),
            peers: peers
                .iter()
                .map(|p| (p.clone(), redis_remote(p, SENTINEL_PORT, REQUEST)))
                .collect(),
        };
        let total = peers.len() + 1;
        let quorum = total / 2 + 1;
        let last_ok = ctx.mono_ns();
        let watched = st.borrow().primary.clone();
        let next_sweep = ctx.mono_ns();
        Monitor {
            ctx,
            st,
            r,
            redis,
            peers,
            links,
            quorum,
            last_ok,
            watched,
            next_sweep,
            script_kill_sent: false,
        }
    }

    /// The configured primary; a new one starts with a clean record.
    fn watch(&mut self) -> String {
        let primary = self.st.borrow().primary.clone();
        if primary != self.watched {
            self.watched = primary.clone();
            self.last_ok = self.ctx.mono_ns();
        }
        primary
    }

    /// 1. SDOWN: PING the primary. Returns whether it is subjectively down, and the
    ///    local time of the reply.
    async fn check_down(&mut self, primary: &str) -> (bool, i64) {
        let reply = self.links.redis(primary).call(&self.ctx, &[b"PING"]).await;
        let pong = matches!(reply, Ok(Value::Simple(ref s)) if s == "PONG");
        let now = self.ctx.mono_ns();
        if pong {
            self.last_ok = now;
        }
        let sdown = now - self.last_ok > (self.r.down_after_ms * 1_000_000) as i64;
        // A primary down because a script never ends: Sentinel sends SCRIPT KILL, once
        // per down period (it ends the script if it has not written).
        let busy = matches!(reply, Ok(Value::Error(ref e)) if e.starts_with("BUSY"));
        self.script_kill_sent &= sdown;
        if busy && sdown && !self.script_kill_sent {
            self.script_kill_sent = true;
            tracing::info!("{primary} is busy with a script: SCRIPT KILL");
            let _ = self
                .links
                .redis(primary)
                .call(&self.ctx, &[b"SCRIPT", b"KILL"])
                .await;
        }
        if sdown != self.st.borrow().sdown {
            self.st.borrow_mut().sdown = sdown;
            tracing::info!(
                "{primary} is {}",
                if sdown {
                    "subjectively down"
                } else {
                    "up again"
                }
            );
        }
        (sdown, now)
    }

    /// 2–4. ODOWN, election, failover: when the primary is down and no failover of
    /// another sentinel is awaited.
    async fn maybe_fail_over(&mut self, primary: &str, sdown: bool, now: i64) {
        let quiet_until = self.st.borrow().quiet_until;
        if !(sdown && now >= quiet_until) {
            return;
        }
        let agree = 1 + ask_peers(&self.ctx, &mut self.links, primary, 0, "*")
            .await
            .0;
        if agree < self.quorum {
            return;
        }
        let epoch = self.vote_for_self();
        tracing::info!("{primary} objectively down ({agree} agree); election for epoch {epoch}");
        let votes = 1 + ask_peers(&self.ctx, &mut self.links, primary, epoch, self.ctx.name())
            .await
            .1;
        if votes >= self.quorum {
            failover(
                &self.ctx,
                &self.st,
                &mut self.links,
                &self.redis,
                primary,
                epoch,
            )
            .await;
        } else {
            // Lost or split vote: back off a random while, as sentinels do.
            let backoff = self
                .ctx
                .rand_range(self.r.down_after_ms, 2 * self.r.down_after_ms);
            self.st.borrow_mut().quiet_until = self.ctx.mono_ns() + (backoff * 1_000_000) as i64;
        }
    }

    /// Start an election: a new epoch, with this sentinel's vote for itself.
    fn vote_for_self(&self) -> u64 {
        let mut s = self.st.borrow_mut();
        s.current_epoch += 1;
        let e = s.current_epoch;
        s.votes.insert(e, self.ctx.name().to_string());
        e
    }

    /// 5. Reconfigure stragglers, and tell peers our configuration (hello); once a
    ///    second, when there has been a failover.
    async fn sweep(&mut self) {
        self.next_sweep = self.ctx.mono_ns() + 1_000_000_000;
        let (primary, epoch) = {
            let s = self.st.borrow();
            (s.primary.clone(), s.config_epoch)
        };
        if epoch > 0 {
            self.reconfigure(&primary).await;
            self.hello(epoch, &primary).await;
        }
    }

    /// Make `primary` a primary and every other reachable node its replica.
    async fn reconfigure(&mut self, primary: &str) {
        // The configured primary must be one: a competing failover may have pointed it
        // elsewhere. The newest epoch's choice wins.
        let role = self.links.redis(primary).call(&self.ctx, &[b"ROLE"]).await;
        if matches!(&role, Ok(Value::Array(Some(v))) if v.first() == Some(&Value::bulk(b"slave"))) {
            let _ = self
                .links
                .redis(primary)
                .call(&self.ctx, &[b"REPLICAOF", b"NO", b"ONE"])
                .await;
        }
        for node in self.redis.iter().filter(|n| **n != primary) {
            let role = self.links.redis(node).call(&self.ctx, &[b"ROLE"]).await;
            let follows = matches!(&role, Ok(Value::Array(Some(v)))
                if v.first() == Some(&Value::bulk(b"slave")) && v.get(1) == Some(&Value::bulk(primary.as_bytes())));
            if role.is_ok() && !follows {
                let port = REDIS_PORT.to_string();
                let _ = self
                    .links
                    .redis(node)
                    .call(
                        &self.ctx,
                        &[b"REPLICAOF", primary.as_bytes(), port.as_bytes()],
                    )
                    .await;
            }
        }
    }

    /// Tell every peer the configuration `(epoch, primary)`.
    async fn hello(&mut self, epoch: u64, primary: &str) {
        let e = epoch.to_string();
        for p in self.peers.iter() {
            let link = self.links.peers.get_mut(p).expect("every peer has a link");
            let _ = link
                .call(
                    &self.ctx,
                    &[b"SENTINEL", b"config", e.as_bytes(), primary.as_bytes()],
                )
                .await;
        }
    }
}

/// Ask every peer `is-master-down-by-addr`; returns (how many say down, how many voted
/// for `runid` in `epoch`).
async fn ask_peers(
    ctx: &NodeCtx,
    links: &mut Links,
    primary: &str,
    epoch: u64,
    runid: &str,
) -> (usize, usize) {
    let (mut down, mut votes) = (0, 0);
    let e = epoch.to_string();
    let port = REDIS_PORT.to_string();
    for link in links.peers.values_mut() {
        let args: [&[u8]; 6] = [
            b"SENTINEL",
            b"is-master-down-by-addr",
            primary.as_bytes(),
            port.as_bytes(),
            e.as_bytes(),
            runid.as_bytes(),
        ];
        if let Ok(Value::Array(Some(v))) = link.call(ctx, &args).await {
            if v.first() == Some(&Value::int(1)) {
                down += 1;
            }
            if runid != "*" && v.get(1) == Some(&Value::bulk(runid.as_bytes())) {
                votes += 1;
            }
        }
    }
    (down, votes)
}

/// Promote the best reachable replica of `old` and publish the new configuration.
async fn failover(
    ctx: &NodeCtx,
    st: &Shared,
    links: &mut Links,
    redis: &[String],
    old: &str,
    epoch: u64,
) {
    // The replica with the highest replication offset wins; ties go to the lowest name.
    let mut best: Option<(u64, String)> = None;
    for node in redis.iter().filter(|n| n.as_str() != old) {
        if let Ok(Value::Array(Some(v))) = links.redis(node).call(ctx, &[b"ROLE"]).await {
            let offset = match v.first() {
                Some(r) if *r == Value::bulk(b"slave") => v.get(4).and_then(Value::as_int),
                _ => None,
            };
            if let Some(off) = offset {
                let off = off.max(0) as u64;
                if best.as_ref().is_none_or(|(b, _)| off > *b) {
                    best = Some((off, node.clone()));
                }
            }
        }
    }
    let Some((offset, chosen)) = best else {
        tracing::info!("failover for epoch {epoch}: no reachable replica");
        return;
    };
    if !matches!(
        links
            .redis(&chosen)
            .call(ctx, &[b"REPLICAOF", b"NO", b"ONE"])
            .await,
        Ok(Value::Simple(_))
    ) {
        return;
    }
    {
        let mut s = st.borrow_mut();
        if epoch <= s.config_epoch {
            return;
        }
        s.primary = chosen.clone();
        s.config_epoch = epoch;
        s.sdown = false;
    }
    tracing::info!("failover epoch {epoch}: promoted {chosen} (offset {offset}) over {old}");
    ctx.record(
        ctx.event(EventType::Event, names::FAILOVER)
            .value(serde_json::json!({
                "epoch": epoch, "old": old, "new": chosen, "offset": offset,
            })),
    );
    let port = REDIS_PORT.to_string();
    for node in redis.iter().filter(|n| **n != chosen) {
        let _ = links
            .redis(node)
            .call(ctx, &[b"REPLICAOF", chosen.as_bytes(), port.as_bytes()])
            .await;
    }
    let e = epoch.to_string();
    for link in links.peers.values_mut() {
        let _ = link
            .call(
                ctx,
                &[b"SENTINEL", b"config", e.as_bytes(), chosen.as_bytes()],
            )
            .await;
    }
}
