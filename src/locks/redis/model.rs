//! The Redis server model: keyspace, command engine, Lua scripting and client
//! connections, as a pure state machine.
//!
//! [`RedisServer::execute_as`] runs one command of one connection ([`Client`]) at a given
//! wall-clock time and returns an [`Outcome`]: the replies, the commands to propagate to
//! the append-only file and to replicas, the keys it found expired and the pub/sub
//! messages to deliver to other connections. No I/O, no clock, no OS randomness: the host
//! around it owns the sockets, the node clock and the disk. [`RedisServer::execute`] runs
//! a command as the replication/AOF stream does (no connection of its own).
//!
//! Semantics follow Redis 7.0 (`t_string.c`, `t_hash.c`, `t_list.c`, `expire.c`, `db.c`,
//! `multi.c`, `pubsub.c`, `eval.c`, `script_lua.c`), including its error replies; the
//! differential test `tests/fidelity/redis.rs` compares replies with a real
//! `redis-server`. Values are strings, hashes or lists. By concept:
//!
//! - [`keyspace`]: databases, typed entries, lazy and active expiry, snapshots;
//! - `strings`, `keys`, `hashes`, `lists`: the data commands;
//! - `scripting` and [`lua`]: `EVAL`/`EVALSHA`/`SCRIPT` running any script in embedded
//!   Lua 5.1, as Redis does;
//! - `blocking` (with `timeout`): BLPOP/BRPOP, the connections blocked on keys and
//!   serving them when a push arrives; `glob`: the patterns of KEYS and PSUBSCRIBE;
//! - `connection`: HELLO, AUTH, SELECT, CLIENT, RESET, QUIT, INFO, COMMAND;
//! - `multi`: WATCH/MULTI/EXEC/DISCARD; `pubsub`: (P)SUBSCRIBE and PUBLISH;
//! - `commands`: the command table (arity and flags) and the dispatch rules.
//!
//! Deliberate differences (each listed again where it is implemented):
//!
//! - Propagation is effects-only (as Redis 7 always does for scripts) and not wrapped in
//!   `MULTI`/`EXEC`: the commands of one [`Outcome`] are one atomic unit for the consumer.
//!   The stream starts in database 0 without a leading `SELECT 0`. `PUBLISH` is not
//!   propagated (Redis sends it to replicas only).
//! - Active expiry ([`RedisServer::active_expire`]) removes every expired key at once
//!   instead of sampling.
//! - A script's Lua runs to a deterministic instruction budget (`busy-reply-threshold`
//!   worth): one still running then is taken never to end, and the server is busy
//!   (`BUSY`, `SCRIPT KILL`: see `busy`) where a real one might end it later.
//!
//! Time: `now_ms` is the server's *wall* clock (ms since the Unix epoch). Keys store an
//! absolute expire-at time and are compared with `now_ms`, so a wall-clock jump forward
//! expires keys early, exactly as in Redis. A key is expired once `now_ms > expire_at`
//! (Redis's `keyIsExpired`: at `now_ms == expire_at` the key still exists with PTTL 0),
//! while `EXPIRE`-family commands delete immediately when the new deadline is
//! `<= now_ms` (Redis's `checkAlreadyExpired`).

mod blocking;
#[cfg(test)]
mod blocking_tests;
mod busy;
#[cfg(test)]
mod busy_tests;
mod commands;
mod connection;
mod glob;
mod hashes;
mod introspection;
mod keys;
pub(crate) mod keyspace;
mod lists;
pub(crate) mod lua;
mod multi;
mod pubsub;
mod scripting;
mod strings;
#[cfg(test)]
mod tests;
mod timeout;

pub use blocking::Block;
pub(crate) use commands::is_write;
pub use connection::{Client, ServerConfig};
pub(crate) use connection::{ClientId, RoleInfo};
pub(crate) use lua::{script_sha, ScriptRun, EXTEND_SCRIPT, TOKEN_ACQUIRE_SCRIPT, UNLOCK_SCRIPT};

use super::resp::Value;
use blocking::Blocked;
use keyspace::{Db, DATABASES};
use multi::Watches;
use pubsub::PubSub;

const ERR_SYNTAX: &str = "ERR syntax error";
const ERR_NOT_INT: &str = "ERR value is not an integer or out of range";
const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";
const ERR_WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// `ERR wrong number of arguments for 'get' command`.
fn wrong_args(name: &str) -> Value {
    Value::err(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR invalid expire time in 'set' command`.
fn invalid_expire(name: &str) -> Value {
    Value::err(format!("ERR invalid expire time in '{name}' command"))
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn cmd(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// The command as given, with its name in upper case (what Redis propagates for writes
/// it does not rewrite).
fn as_given(args: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = args.to_vec();
    out[0].make_ascii_uppercase();
    out
}

/// What one command did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The reply to send to the client.
    pub reply: Value,
    /// Further replies to the same client, after `reply` (`SUBSCRIBE a b` answers once per
    /// channel).
    pub more: Vec<Value>,
    /// Commands to append to the AOF and send to replicas, in order, as one atomic unit:
    /// writes only, as their effects (relative TTLs made absolute, scripts replaced by
    /// what they did, lazily expired keys as `DEL key`, a `SELECT` where the database
    /// changes). Empty for reads and for writes that changed nothing.
    pub propagate: Vec<Vec<Vec<u8>>>,
    /// Keys this command found expired and deleted (lazy expiry), in the order found.
    pub expired: Vec<Vec<u8>>,
    /// Pub/sub messages for other connections: (subscriber, message), in order.
    pub deliveries: Vec<(ClientId, Value)>,
    /// The connection is to be closed once the replies are sent (`QUIT`).
    pub close: bool,
    /// What the script this command ran cost (`EVAL`, `EVALSHA`). When it is
    /// [`ScriptRun::endless`] the server is [busy](RedisServer::busy) and `reply` is held
    /// back: it reaches the connection as [`Outcome::killed`] once `SCRIPT KILL` stops it.
    pub script: Option<ScriptRun>,
    /// The server stops (`SHUTDOWN`): no reply, every connection closes.
    pub shutdown: bool,
    /// `SCRIPT KILL` stopped the busy script: its connection and the reply it gets.
    pub killed: Option<(ClientId, Value)>,
    /// The command blocked its connection (`BLPOP` on empty lists) until served or this
    /// deadline: `reply` is not sent, and the connection runs no further command until
    /// its reply comes as one of [`Outcome::unblocked`] or from
    /// [`RedisServer::time_out_blocked`].
    pub blocked: Option<Block>,
    /// Blocked connections this command served (it pushed to a list they wait on), each
    /// with its reply, in order: after this command's own reply and `deliveries`.
    pub unblocked: Vec<(ClientId, Value)>,
}

/// Side effects collected while a command runs.
#[derive(Default)]
pub(crate) struct Effects {
    /// (database, command) in order.
    propagate: Vec<(usize, Vec<Vec<u8>>)>,
    pub(crate) expired: Vec<Vec<u8>>,
    pub(crate) more: Vec<Value>,
    pub(crate) deliveries: Vec<(ClientId, Value)>,
    pub(crate) close: bool,
    pub(crate) script: Option<ScriptRun>,
    pub(crate) shutdown: bool,
    pub(crate) killed: Option<(ClientId, Value)>,
    pub(crate) blocked: Option<Block>,
    pub(crate) unblocked: Vec<(ClientId, Value)>,
}

/// One command's execution context: the time, the database and the side effects.
pub(crate) struct Ctx {
    /// The server's wall clock, ms since the Unix epoch.
    pub(crate) now: i64,
    /// The database the command runs in.
    pub(crate) db: usize,
    /// Inside `EXEC`: a blocking pop answers at once (Redis's `CLIENT_DENY_BLOCKING`).
    pub(crate) deny_blocking: bool,
    pub(crate) fx: Effects,
}

/// The Redis server: databases, script engine, connections' shared state.
pub struct RedisServer {
    dbs: Vec<Db>,
    /// The Lua interpreter and its script cache; created on the first script. Not
    /// persisted: a restarted server answers `EVALSHA` with `NOSCRIPT`, as Redis does.
    lua: Option<lua::LuaEngine>,
    /// A script stopped at its budget, holding the server until `SCRIPT KILL`.
    busy: Option<busy::BusyScript>,
    /// The PRNG behind scripts' `math.random` (Redis's `redisLrand48`): one sequence per
    /// server process, not reset per script or by `SCRIPT FLUSH`.
    lua_rand: lua::Lrand48,
    config: ServerConfig,
    /// Replaying the AOF: no expiry, as in Redis while `server.loading`.
    loading: bool,
    next_client_id: ClientId,
    watches: Watches,
    pubsub: PubSub,
    /// Connections blocked in `BLPOP`/`BRPOP`.
    blocked: Blocked,
    /// The pseudo-client that applies a replication stream or an AOF ([`Self::execute`]).
    stream_client: Client,
    /// The database the propagated stream is in (it starts in 0).
    propagated_db: usize,
    /// What `INFO replication` and `HELLO` report; the node keeps it current.
    pub role: connection::RoleInfo,
}

impl Default for RedisServer {
    fn default() -> Self {
        RedisServer::new()
    }
}

impl std::fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisServer")
            .field("dbs", &self.dbs)
            .field("loading", &self.loading)
            .finish_non_exhaustive()
    }
}

impl RedisServer {
    /// An empty server with the default configuration (no password, 16 databases).
    pub fn new() -> Self {
        RedisServer::with_config(ServerConfig::default())
    }

    /// An empty server with `config`.
    pub fn with_config(config: ServerConfig) -> Self {
        RedisServer {
            dbs: vec![Db::new(); DATABASES],
            lua: None,
            busy: None,
            lua_rand: lua::Lrand48::default(),
            config,
            loading: false,
            // Redis's first connection gets a small id; any increasing sequence will do.
            next_client_id: 3,
            watches: Watches::default(),
            pubsub: PubSub::default(),
            blocked: Blocked::default(),
            stream_client: Client::internal(0),
            propagated_db: 0,
            role: connection::RoleInfo::default(),
        }
    }

    /// The server's configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// A new connection's client state (its id, database 0, RESP2, authenticated unless
    /// `requirepass` is set).
    pub fn connect(&mut self) -> Client {
        let id = self.next_client_id;
        self.next_client_id += 1;
        Client::new(id, self.config.requirepass.is_none())
    }

    /// Forget a closed connection: its subscriptions, watched keys and blocking pop.
    pub fn disconnect(&mut self, client: &mut Client) {
        self.pubsub.unsubscribe_all(client);
        self.watches.unwatch_all(client.id);
        self.blocked.unblock(client.id);
    }

    /// Runs one command as the replication stream or AOF does (`args[0]` is the name,
    /// case-insensitive) at wall-clock time `now_ms`: a `SELECT` in the stream switches
    /// the database for the commands after it.
    pub fn execute(&mut self, now_ms: i64, args: &[Vec<u8>]) -> Outcome {
        let mut client = std::mem::replace(&mut self.stream_client, Client::internal(0));
        let out = self.execute_as(&mut client, now_ms, args);
        self.stream_client = client;
        out
    }

    /// Runs one command of `client` at wall-clock time `now_ms` (ms since the Unix epoch).
    pub fn execute_as(&mut self, client: &mut Client, now_ms: i64, args: &[Vec<u8>]) -> Outcome {
        let mut c = Ctx {
            now: now_ms,
            db: client.db,
            deny_blocking: false,
            fx: Effects::default(),
        };
        let reply = self.process(client, &mut c, args);
        self.serve_ready(&mut c);
        let mut propagate = Vec::with_capacity(c.fx.propagate.len());
        for (db, effect) in c.fx.propagate {
            if db != self.propagated_db {
                propagate.push(cmd(&[b"SELECT", db.to_string().as_bytes()]));
                self.propagated_db = db;
            }
            propagate.push(effect);
        }
        Outcome {
            reply,
            more: c.fx.more,
            propagate,
            expired: c.fx.expired,
            deliveries: c.fx.deliveries,
            close: c.fx.close,
            script: c.fx.script,
            shutdown: c.fx.shutdown,
            killed: c.fx.killed,
            blocked: c.fx.blocked,
            unblocked: c.fx.unblocked,
        }
    }

    /// Records a write's effect for propagation, and touches the keys it wrote (WATCH).
    fn effect(&mut self, c: &mut Ctx, args: Vec<Vec<u8>>) {
        let name = args[0].to_ascii_lowercase();
        match name.as_slice() {
            b"del" | b"unlink" => {
                for k in &args[1..] {
                    self.watches.touch(&self.dbs, c.db, k);
                }
            }
            b"select" | b"flushdb" | b"flushall" => {}
            _ => {
                if let Some(k) = args.get(1) {
                    self.watches.touch(&self.dbs, c.db, k);
                }
            }
        }
        c.fx.propagate.push((c.db, args));
    }

    /// Redis's active expiry over every database, as the effects to propagate: the keys
    /// removed (sorted by database, then key) and the `DEL`s (with any `SELECT` needed).
    pub fn active_expire_outcome(&mut self, now_ms: i64) -> Outcome {
        let gone = self.active_expire_dbs(now_ms);
        let mut c = Ctx {
            now: now_ms,
            db: 0,
            deny_blocking: false,
            fx: Effects::default(),
        };
        let mut expired = Vec::with_capacity(gone.len());
        for (db, key) in gone {
            c.fx.propagate.push((db, cmd(&[b"DEL", &key])));
            expired.push(key);
        }
        let mut propagate = Vec::new();
        for (db, effect) in c.fx.propagate {
            if db != self.propagated_db {
                propagate.push(cmd(&[b"SELECT", db.to_string().as_bytes()]));
                self.propagated_db = db;
            }
            propagate.push(effect);
        }
        Outcome {
            reply: Value::ok(),
            more: Vec::new(),
            propagate,
            expired,
            deliveries: Vec::new(),
            close: false,
            script: None,
            shutdown: false,
            killed: None,
            blocked: None,
            unblocked: Vec::new(),
        }
    }

    /// Restart from an append-only log of propagated commands: forgets all state
    /// (keys and script cache), replays `log` with expiry suspended (as Redis does while
    /// loading), then drops the keys whose absolute deadline has passed at `now_ms`.
    /// Returns them as [`RedisServer::active_expire_outcome`] does: `expired` sorted (the
    /// harness may record them as expiries) and the `DEL`s a primary appends to its AOF,
    /// as Redis's first expire cycle after loading does. Without those `DEL`s a second
    /// crash would load the dead key again and expire it a second time. Error replies
    /// during replay are ignored.
    pub fn load(&mut self, now_ms: i64, log: &[Vec<Vec<u8>>]) -> Outcome {
        // A replica's full resync replaces the dataset: watchers of keys there are dirty.
        for i in 0..self.dbs.len() {
            self.watches.touch_db(&self.dbs, i);
            self.dbs[i].clear();
        }
        self.lua = None;
        self.busy = None;
        self.stream_client = Client::internal(0);
        self.loading = true;
        for args in log {
            self.execute(now_ms, args);
        }
        self.loading = false;
        // The stream continues in the database the log ended in.
        self.propagated_db = self.stream_client.db;
        self.active_expire_outcome(now_ms)
    }
}
