//! Blocking list pops, `BLPOP` and `BRPOP`, as Redis 7.0's `t_list.c` and `blocked.c`:
//! the connections blocked on keys, and serving them when a push arrives.
//!
//! - `BLPOP key [key ...] timeout` pops from the first of its keys that holds a list (in
//!   argument order; a key of another type answers `WRONGTYPE`) and answers
//!   `[key, value]`. When none does, the connection blocks: no reply now
//!   ([`Outcome::blocked`](super::Outcome::blocked) says until when), and it reads no
//!   further command until it is served or times out.
//! - A push that creates a list some connection waits on marks the key ready; after the
//!   command (after the whole `EXEC` or script), the connections blocked on it are served
//!   in the order they blocked, one element each, while the list lasts
//!   ([`Outcome::unblocked`](super::Outcome::unblocked)). Each pop propagates as `LPOP`/
//!   `RPOP key`, as Redis rewrites it.
//! - A timeout (`ceil(seconds * 1000)` ms on the server's wall clock; `0` never) answers
//!   a null array ([`RedisServer::time_out_blocked`]). Inside `MULTI` a pop that would
//!   block answers the null array at once; scripts may not call it at all (Redis's
//!   `noscript` flag).
//! - A connection that closes leaves the queues ([`RedisServer::disconnect`]). Deleting
//!   a waited-on key, or giving it another type, wakes no one: waiters wait for a list.

use super::keyspace::{wrongtype, Data, Entry};
use super::timeout::timeout_ms;
use super::{cmd, Client, ClientId, Ctx, RedisServer};
use crate::locks::redis::resp::Value;
use std::collections::{BTreeMap, VecDeque};

/// How long a blocked connection waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    /// Timeout 0: until served.
    Forever,
    /// Until the server's wall clock passes this time (ms since the Unix epoch).
    Until(i64),
}

/// Which end a blocked pop takes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Head,
    Tail,
}

/// One blocked connection.
#[derive(Clone, Debug)]
struct Waiter {
    db: usize,
    /// Its keys, each once, in argument order.
    keys: Vec<Vec<u8>>,
    end: End,
    until: Block,
}

/// The blocked connections and the keys pushes have made ready.
#[derive(Clone, Debug, Default)]
pub(crate) struct Blocked {
    /// Connections blocked on each (database, key), in the order they blocked.
    queues: BTreeMap<(usize, Vec<u8>), VecDeque<ClientId>>,
    waiters: BTreeMap<ClientId, Waiter>,
    /// Keys that became lists while someone waits on them (Redis's `ready_keys`), in
    /// order, each once.
    ready: Vec<(usize, Vec<u8>)>,
}

impl Blocked {
    fn block(&mut self, client: ClientId, waiter: Waiter) {
        for key in &waiter.keys {
            self.queues
                .entry((waiter.db, key.clone()))
                .or_default()
                .push_back(client);
        }
        self.waiters.insert(client, waiter);
    }

    /// Takes `client` out of every queue (a closed connection, a served or timed-out
    /// pop).
    pub(crate) fn unblock(&mut self, client: ClientId) {
        let Some(waiter) = self.waiters.remove(&client) else {
            return;
        };
        for key in &waiter.keys {
            let k = (waiter.db, key.clone());
            if let Some(q) = self.queues.get_mut(&k) {
                q.retain(|&c| c != client);
                if q.is_empty() {
                    self.queues.remove(&k);
                }
            }
        }
    }

    /// A list was created at `key` (Redis's `signalKeyAsReady`).
    pub(crate) fn signal(&mut self, db: usize, key: &[u8]) {
        let k = (db, key.to_vec());
        if self.queues.contains_key(&k) && !self.ready.contains(&k) {
            self.ready.push(k);
        }
    }
}

impl RedisServer {
    pub(crate) fn cmd_blpop(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.blocking_pop(cl, c, args, End::Head)
    }

    pub(crate) fn cmd_brpop(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.blocking_pop(cl, c, args, End::Tail)
    }

    /// `BLPOP`/`BRPOP key [key ...] timeout`.
    fn blocking_pop(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>], end: End) -> Value {
        let (keys, timeout) = args[1..].split_at(args.len() - 2);
        let ms = match timeout_ms(&timeout[0]) {
            Ok(ms) => ms,
            Err(e) => return e,
        };
        for key in keys {
            match self.lookup(c, key) {
                None => {}
                Some(Entry {
                    data: Data::List(_),
                    ..
                }) => return self.pop_for(c, key, end).unwrap_or(Value::Array(None)),
                Some(_) => return wrongtype(),
            }
        }
        if c.deny_blocking {
            return Value::Array(None);
        }
        let until = match ms {
            0 => Block::Forever,
            ms => Block::Until(c.now.saturating_add(ms)),
        };
        let mut unique: Vec<Vec<u8>> = Vec::with_capacity(keys.len());
        for key in keys {
            if !unique.contains(key) {
                unique.push(key.clone());
            }
        }
        let waiter = Waiter {
            db: c.db,
            keys: unique,
            end,
            until,
        };
        self.blocked.block(cl.id, waiter);
        c.fx.blocked = Some(until);
        Value::Array(None)
    }

    /// Pops one element of the list at `key` (database `c.db`) for a blocking pop:
    /// `[key, value]`, propagated as `LPOP`/`RPOP key`; `None` if there is no list.
    fn pop_for(&mut self, c: &mut Ctx, key: &[u8], end: End) -> Option<Value> {
        let Some(Entry {
            data: Data::List(l),
            ..
        }) = self.lookup(c, key)
        else {
            return None;
        };
        let value = match end {
            End::Head => l.pop_front(),
            End::Tail => l.pop_back(),
        }?;
        if l.is_empty() {
            self.db(c).remove(key);
        }
        let name: &[u8] = match end {
            End::Head => b"LPOP",
            End::Tail => b"RPOP",
        };
        self.effect(c, cmd(&[name, key]));
        Some(Value::array(vec![Value::bulk(key), Value::bulk(&value)]))
    }

    /// After a command: serves the connections blocked on the keys it made ready (Redis's
    /// `handleClientsBlockedOnKeys`), in the order the keys became ready, each key's
    /// waiters in the order they blocked.
    pub(crate) fn serve_ready(&mut self, c: &mut Ctx) {
        let db = c.db;
        while !self.blocked.ready.is_empty() {
            for (key_db, key) in std::mem::take(&mut self.blocked.ready) {
                c.db = key_db;
                self.serve_key(c, &key);
            }
        }
        c.db = db;
    }

    /// Serves the waiters of `key` in database `c.db` while its list lasts.
    fn serve_key(&mut self, c: &mut Ctx, key: &[u8]) {
        let k = (c.db, key.to_vec());
        let waiting: Vec<ClientId> = self
            .blocked
            .queues
            .get(&k)
            .map_or_else(Vec::new, |q| q.iter().copied().collect());
        for client in waiting {
            let Some(end) = self.blocked.waiters.get(&client).map(|w| w.end) else {
                continue;
            };
            let Some(reply) = self.pop_for(c, key, end) else {
                return;
            };
            self.blocked.unblock(client);
            c.fx.unblocked.push((client, reply));
        }
    }

    /// Whether connection `client` waits in a blocking pop.
    pub fn is_blocked(&self, client: ClientId) -> bool {
        self.blocked.waiters.contains_key(&client)
    }

    /// Ends the blocking pops whose timeout has passed at `now_ms` (strictly after their
    /// deadline, as Redis): each connection and its reply, a null array, in deadline
    /// order. None while a script holds the server (Redis checks timeouts between
    /// events, which a running script does not reach).
    pub fn time_out_blocked(&mut self, now_ms: i64) -> Vec<(ClientId, Value)> {
        if self.busy() {
            return Vec::new();
        }
        let mut due: Vec<(i64, ClientId)> = self
            .blocked
            .waiters
            .iter()
            .filter_map(|(&id, w)| match w.until {
                Block::Until(at) if at < now_ms => Some((at, id)),
                _ => None,
            })
            .collect();
        due.sort_unstable();
        due.into_iter()
            .map(|(_, id)| {
                self.blocked.unblock(id);
                (id, Value::Array(None))
            })
            .collect()
    }
}
