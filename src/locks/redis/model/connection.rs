//! Connections: the per-client state ([`Client`]) and the commands about it — HELLO,
//! AUTH, SELECT, CLIENT, QUIT, RESET, PING/ECHO — and the server-level INFO and COMMAND.
//!
//! Protocol choice: a connection that says `HELLO 3` gets RESP3 on the wire for the types
//! that differ (null, maps, pushes); the model's replies carry [`Value::Map`] and
//! [`Value::Push`] where Redis 7 sends them, and the node encodes each reply with the
//! client's protocol ([`Value::encode_resp`]).

use super::keyspace::DATABASES;
use super::{lossy, Ctx, RedisServer, ERR_NOT_INT, ERR_SYNTAX};
use crate::locks::redis::resp::{parse_i64, Value};
use std::collections::BTreeSet;

/// The Redis version the model answers as (`INFO`, `HELLO`, `redis.REDIS_VERSION`).
pub(crate) const REDIS_VERSION: &str = "7.0.15";

/// A connection's id (`CLIENT ID`).
pub(crate) type ClientId = u64;

/// Server settings that change replies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// `requirepass`: clients must `AUTH` (or `HELLO ... AUTH`) before other commands.
    pub requirepass: Option<String>,
    /// `busy-reply-threshold` (formerly `lua-time-limit`), ms: a script still running
    /// after this long is taken never to end, and other clients get `BUSY` (default 5000).
    pub busy_reply_threshold_ms: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            requirepass: None,
            busy_reply_threshold_ms: 5000,
        }
    }
}

/// What a node tells the model about its replication role, for `INFO replication` and
/// `HELLO`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoleInfo {
    /// `Some(host)` on a replica.
    pub primary: Option<String>,
    /// Connected replicas (on a primary).
    pub replicas: u64,
    /// The replication offset.
    pub offset: u64,
}

/// A transaction being queued.
#[derive(Clone, Debug, Default)]
pub(crate) struct Multi {
    pub(crate) queued: Vec<Vec<Vec<u8>>>,
    /// A command was refused while queueing: `EXEC` answers `EXECABORT`.
    pub(crate) error: bool,
}

/// One connection's state.
#[derive(Clone, Debug)]
pub struct Client {
    /// `CLIENT ID`.
    pub id: ClientId,
    /// The selected database.
    pub db: usize,
    /// The protocol, 2 or 3 (`HELLO`).
    pub resp: u8,
    /// Passed `AUTH` (or no password is required).
    pub authenticated: bool,
    /// `CLIENT SETNAME`.
    pub name: Option<Vec<u8>>,
    pub(crate) multi: Option<Multi>,
    pub(crate) channels: BTreeSet<Vec<u8>>,
    pub(crate) patterns: BTreeSet<Vec<u8>>,
}

impl Client {
    pub(crate) fn new(id: ClientId, authenticated: bool) -> Client {
        Client {
            id,
            db: 0,
            resp: 2,
            authenticated,
            name: None,
            multi: None,
            channels: BTreeSet::new(),
            patterns: BTreeSet::new(),
        }
    }

    /// The replication stream, the AOF or a script: no connection, always authenticated.
    pub(crate) fn internal(db: usize) -> Client {
        let mut c = Client::new(0, true);
        c.db = db;
        c
    }

    /// Inside `MULTI`.
    pub fn in_multi(&self) -> bool {
        self.multi.is_some()
    }

    /// Subscribed to a channel or pattern.
    pub fn subscribed(&self) -> bool {
        !self.channels.is_empty() || !self.patterns.is_empty()
    }

    pub(crate) fn subscriptions(&self) -> i64 {
        (self.channels.len() + self.patterns.len()) as i64
    }

    pub(crate) fn flag_multi_error(&mut self) {
        if let Some(m) = &mut self.multi {
            m.error = true;
        }
    }

    pub(crate) fn queue(&mut self, args: Vec<Vec<u8>>) {
        if let Some(m) = &mut self.multi {
            m.queued.push(args);
        }
    }
}

/// Redis's check for `CLIENT SETNAME`: printable ASCII without spaces.
fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&b| (b'!'..=b'~').contains(&b))
}

const ERR_BAD_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";
const ERR_WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

impl RedisServer {
    /// Whether `user`/`pass` log in as the default user.
    fn credentials_ok(&self, user: &[u8], pass: &[u8]) -> bool {
        user == b"default"
            && self
                .config
                .requirepass
                .as_ref()
                .is_none_or(|p| p.as_bytes() == pass)
    }

    pub(crate) fn cmd_ping(&mut self, cl: &mut Client, _: &mut Ctx, args: &[Vec<u8>]) -> Value {
        if args.len() > 2 {
            return super::wrong_args("ping");
        }
        if cl.subscribed() && cl.resp == 2 {
            let msg = args.get(1).map_or(&[][..], |m| m);
            return Value::array(vec![Value::bulk(b"pong"), Value::bulk(msg)]);
        }
        match args.get(1) {
            None => Value::simple("PONG"),
            Some(m) => Value::bulk(m),
        }
    }

    pub(crate) fn cmd_echo(&mut self, _: &mut Client, _: &mut Ctx, args: &[Vec<u8>]) -> Value {
        Value::bulk(&args[1])
    }

    /// `HELLO [protover [AUTH user pass] [SETNAME name]]`.
    pub(crate) fn cmd_hello(&mut self, cl: &mut Client, _: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let mut proto = cl.resp;
        if let Some(v) = args.get(1) {
            match parse_i64(v) {
                Some(n @ 2..=3) => proto = n as u8,
                Some(_) => return Value::err("NOPROTO unsupported protocol version"),
                None => {
                    return Value::err("ERR Protocol version is not an integer or out of range")
                }
            }
        }
        let (mut auth, mut name) = (None, None);
        let mut j = 2;
        while j < args.len() {
            let more = args.len() - j - 1;
            match args[j].to_ascii_lowercase().as_slice() {
                b"auth" if more >= 2 => {
                    auth = Some((&args[j + 1], &args[j + 2]));
                    j += 3;
                }
                b"setname" if more >= 1 => {
                    name = Some(&args[j + 1]);
                    j += 2;
                }
                _ => {
                    return Value::err(format!(
                        "ERR Syntax error in HELLO option '{}'",
                        lossy(&args[j])
                    ))
                }
            }
        }
        if let Some((user, pass)) = auth {
            if !self.credentials_ok(user, pass) {
                return Value::err(ERR_WRONGPASS);
            }
            cl.authenticated = true;
        }
        if !cl.authenticated {
            return Value::err(
                "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
            );
        }
        if let Some(n) = name {
            if !valid_name(n) {
                return Value::err(ERR_BAD_NAME);
            }
            cl.name = (!n.is_empty()).then(|| n.clone());
        }
        cl.resp = proto;
        let role = if self.role.primary.is_some() {
            "replica"
        } else {
            "master"
        };
        let s = |t: &str| Value::bulk(t.as_bytes());
        Value::Map(vec![
            (s("server"), s("redis")),
            (s("version"), s(REDIS_VERSION)),
            (s("proto"), Value::int(proto as i64)),
            (s("id"), Value::int(cl.id as i64)),
            (s("mode"), s("standalone")),
            (s("role"), s(role)),
            (s("modules"), Value::array(vec![])),
        ])
    }

    /// `AUTH [user] pass`.
    pub(crate) fn cmd_auth(&mut self, cl: &mut Client, _: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let (user, pass) = match args.len() {
            2 => {
                if self.config.requirepass.is_none() {
                    return Value::err("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?");
                }
                (&b"default"[..], &args[1])
            }
            3 => (args[1].as_slice(), &args[2]),
            _ => return Value::err(ERR_SYNTAX),
        };
        if self.credentials_ok(user, pass) {
            cl.authenticated = true;
            Value::ok()
        } else {
            Value::err(ERR_WRONGPASS)
        }
    }

    pub(crate) fn cmd_select(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match parse_i64(&args[1]) {
            Some(n) if i32::try_from(n).is_err() => Value::err(ERR_NOT_INT),
            None => Value::err(ERR_NOT_INT),
            Some(n) if n < 0 || n >= DATABASES as i64 => Value::err("ERR DB index is out of range"),
            Some(n) => {
                cl.db = n as usize;
                c.db = cl.db;
                Value::ok()
            }
        }
    }

    pub(crate) fn cmd_quit(&mut self, _: &mut Client, c: &mut Ctx, _: &[Vec<u8>]) -> Value {
        c.fx.close = true;
        Value::ok()
    }

    /// `RESET`: back to a fresh connection's state (but the same id).
    pub(crate) fn cmd_reset(&mut self, cl: &mut Client, c: &mut Ctx, _: &[Vec<u8>]) -> Value {
        self.pubsub.unsubscribe_all(cl);
        self.watches.unwatch_all(cl.id);
        let fresh = Client::new(cl.id, self.config.requirepass.is_none());
        *cl = fresh;
        c.db = 0;
        Value::simple("RESET")
    }

    /// `INFO [section ...]`: the server, clients, replication and keyspace sections.
    pub(crate) fn cmd_info(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let wanted: Vec<String> = args[1..]
            .iter()
            .map(|a| lossy(a).to_ascii_lowercase())
            .collect();
        let all = wanted.is_empty()
            || wanted
                .iter()
                .any(|w| matches!(w.as_str(), "all" | "default" | "everything"));
        let want = |s: &str| all || wanted.iter().any(|w| w == s);
        let mut sections = Vec::new();
        if want("server") {
            sections.push(format!(
                "# Server\r\nredis_version:{REDIS_VERSION}\r\nredis_mode:standalone\r\nos:locksim model\r\narch_bits:64\r\nprocess_id:1\r\ntcp_port:6379\r\n"
            ));
        }
        if want("clients") {
            sections.push(format!(
                "# Clients\r\nconnected_clients:{}\r\n",
                self.next_client_id.saturating_sub(3)
            ));
        }
        if want("replication") {
            let r = &self.role;
            let body = match &r.primary {
                Some(host) => format!(
                    "role:slave\r\nmaster_host:{host}\r\nmaster_port:6379\r\nmaster_link_status:up\r\nslave_repl_offset:{}\r\n",
                    r.offset
                ),
                None => format!(
                    "role:master\r\nconnected_slaves:{}\r\nmaster_repl_offset:{}\r\n",
                    r.replicas, r.offset
                ),
            };
            sections.push(format!("# Replication\r\n{body}"));
        }
        if want("keyspace") {
            let mut s = String::from("# Keyspace\r\n");
            for (i, db) in self.dbs.iter().enumerate() {
                if !db.is_empty() {
                    let expires = db.values().filter(|e| e.expire_at_ms.is_some()).count();
                    s.push_str(&format!(
                        "db{i}:keys={},expires={expires},avg_ttl=0\r\n",
                        db.len()
                    ));
                }
            }
            sections.push(s);
        }
        let _ = c;
        Value::bulk(sections.join("\r\n").as_bytes())
    }

    pub(crate) fn cmd_client_id(&mut self, cl: &mut Client, _: &mut Ctx, _: &[Vec<u8>]) -> Value {
        Value::int(cl.id as i64)
    }

    pub(crate) fn cmd_client_setname(
        &mut self,
        cl: &mut Client,
        _: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        let name = &args[2];
        if !valid_name(name) {
            return Value::err(ERR_BAD_NAME);
        }
        cl.name = (!name.is_empty()).then(|| name.clone());
        Value::ok()
    }

    pub(crate) fn cmd_client_getname(
        &mut self,
        cl: &mut Client,
        _: &mut Ctx,
        _: &[Vec<u8>],
    ) -> Value {
        match &cl.name {
            Some(n) => Value::bulk(n),
            None => Value::nil(),
        }
    }

    pub(crate) fn cmd_client_help(&mut self, _: &mut Client, _: &mut Ctx, _: &[Vec<u8>]) -> Value {
        help(
            "CLIENT",
            &["ID", "GETNAME", "SETNAME <connection-name>", "HELP"],
        )
    }
}

/// A `HELP` reply: a header line and one line per subcommand.
pub(crate) fn help(container: &str, lines: &[&str]) -> Value {
    let mut out = vec![Value::simple(format!(
        "{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ))];
    out.extend(lines.iter().map(|l| Value::simple(*l)));
    Value::array(out)
}
