//! Transactions: MULTI/EXEC/DISCARD and optimistic locking with WATCH, as `multi.c`.
//!
//! A transaction's commands are queued on the connection ([`Client`]) and run by `EXEC`
//! one after another inside one [`RedisServer::execute_as`] call, so nothing else runs in
//! between. `WATCH` is server state: any write to a watched key (including its expiry)
//! marks the watching connections dirty, and their `EXEC` answers a nil array.

use super::commands::lookup;
use super::keyspace::{is_expired, Db};
use super::{Client, ClientId, Ctx, RedisServer};
use crate::locks::redis::resp::Value;
use std::collections::{BTreeMap, BTreeSet};

/// One connection watching one key.
#[derive(Clone, Debug)]
struct Watcher {
    client: ClientId,
    /// The key was logically expired when WATCH was called (Redis's `wk->expired`).
    expired: bool,
}

/// Every watched key, and the connections a write has made dirty.
#[derive(Clone, Debug, Default)]
pub(crate) struct Watches {
    /// Watchers per (database, key), in WATCH order.
    keys: BTreeMap<(usize, Vec<u8>), Vec<Watcher>>,
    /// The keys each connection watches.
    by_client: BTreeMap<ClientId, Vec<(usize, Vec<u8>)>>,
    /// Connections whose next EXEC must fail (Redis's `CLIENT_DIRTY_CAS`).
    dirty: BTreeSet<ClientId>,
}

impl Watches {
    fn watch(&mut self, dbs: &[Db], now: i64, client: ClientId, db: usize, key: &[u8]) {
        let watched = self.by_client.entry(client).or_default();
        if watched.iter().any(|(d, k)| *d == db && k == key) {
            return;
        }
        watched.push((db, key.to_vec()));
        let expired = dbs[db]
            .get(key)
            .is_some_and(|e| is_expired(e.expire_at_ms, now));
        self.keys
            .entry((db, key.to_vec()))
            .or_default()
            .push(Watcher { client, expired });
    }

    /// Forget every key `client` watches (but not whether it is dirty).
    fn unwatch_keys(&mut self, client: ClientId) {
        for (db, key) in self.by_client.remove(&client).unwrap_or_default() {
            let k = (db, key);
            if let Some(ws) = self.keys.get_mut(&k) {
                ws.retain(|w| w.client != client);
                if ws.is_empty() {
                    self.keys.remove(&k);
                }
            }
        }
    }

    /// `UNWATCH`, and what EXEC, DISCARD, RESET and a closed connection do.
    pub(crate) fn unwatch_all(&mut self, client: ClientId) {
        self.unwatch_keys(client);
        self.dirty.remove(&client);
    }

    /// A write to `key` in `db` (Redis's `touchWatchedKey`), after it was applied.
    pub(crate) fn touch(&mut self, dbs: &[Db], db: usize, key: &[u8]) {
        let k = (db, key.to_vec());
        let Some(ws) = self.keys.get_mut(&k) else {
            return;
        };
        let mut hit = Vec::new();
        for w in ws.iter_mut() {
            if w.expired {
                // Watched while already expired: its deletion is no change. Redis stops
                // at a watcher whose expired key is still there (kept as it does).
                if !dbs[db].contains_key(key) {
                    w.expired = false;
                    continue;
                }
                break;
            }
            hit.push(w.client);
        }
        for c in hit {
            self.dirty.insert(c);
            self.unwatch_keys(c);
        }
    }

    /// FLUSHDB/FLUSHALL of `db` (Redis's `touchAllWatchedKeysInDb`), before it is
    /// emptied: every connection watching a key that exists there becomes dirty.
    pub(crate) fn touch_db(&mut self, dbs: &[Db], db: usize) {
        let hit: Vec<ClientId> = self
            .keys
            .iter()
            .filter(|((d, key), _)| *d == db && dbs[db].contains_key(key))
            .flat_map(|(_, ws)| ws.iter().map(|w| w.client))
            .collect();
        for c in hit {
            self.dirty.insert(c);
            self.unwatch_keys(c);
        }
    }

    /// Whether EXEC must fail for `client`: dirty, or a watched key (not expired when
    /// watched) has expired since (Redis's `isWatchedKeyExpired`).
    fn exec_fails(&self, dbs: &[Db], now: i64, client: ClientId) -> bool {
        if self.dirty.contains(&client) {
            return true;
        }
        let Some(watched) = self.by_client.get(&client) else {
            return false;
        };
        watched.iter().any(|(db, key)| {
            let was_expired = self
                .keys
                .get(&(*db, key.clone()))
                .and_then(|ws| ws.iter().find(|w| w.client == client))
                .is_some_and(|w| w.expired);
            !was_expired
                && dbs[*db]
                    .get(key)
                    .is_some_and(|e| is_expired(e.expire_at_ms, now))
        })
    }
}

impl RedisServer {
    pub(crate) fn cmd_multi(&mut self, cl: &mut Client, _: &mut Ctx, _: &[Vec<u8>]) -> Value {
        if cl.in_multi() {
            return Value::err("ERR MULTI calls can not be nested");
        }
        cl.multi = Some(Default::default());
        Value::ok()
    }

    pub(crate) fn cmd_discard(&mut self, cl: &mut Client, _: &mut Ctx, _: &[Vec<u8>]) -> Value {
        if cl.multi.take().is_none() {
            return Value::err("ERR DISCARD without MULTI");
        }
        self.watches.unwatch_all(cl.id);
        Value::ok()
    }

    pub(crate) fn cmd_watch(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        if cl.in_multi() {
            return Value::err("ERR WATCH inside MULTI is not allowed");
        }
        // Watching once dirty changes nothing: EXEC fails anyway.
        if !self.watches.dirty.contains(&cl.id) {
            for key in &args[1..] {
                self.watches.watch(&self.dbs, c.now, cl.id, cl.db, key);
            }
        }
        Value::ok()
    }

    pub(crate) fn cmd_unwatch(&mut self, cl: &mut Client, _: &mut Ctx, _: &[Vec<u8>]) -> Value {
        self.watches.unwatch_all(cl.id);
        Value::ok()
    }

    /// `EXEC`: `EXECABORT` after a queueing error, a nil array if a watched key changed,
    /// else every queued command's reply.
    pub(crate) fn cmd_exec(&mut self, cl: &mut Client, c: &mut Ctx, _: &[Vec<u8>]) -> Value {
        let Some(multi) = cl.multi.take() else {
            return Value::err("ERR EXEC without MULTI");
        };
        let fails = self.watches.exec_fails(&self.dbs, c.now, cl.id);
        self.watches.unwatch_all(cl.id);
        if multi.error {
            return Value::err("EXECABORT Transaction discarded because of previous errors.");
        }
        if fails {
            return Value::Array(None);
        }
        let mut replies = Vec::with_capacity(multi.queued.len());
        // Nothing in a transaction blocks: BLPOP on empty lists answers a null array.
        c.deny_blocking = true;
        for args in &multi.queued {
            let reply = match lookup(args) {
                Ok(spec) => self.call(spec, cl, c, args),
                // Queued only after a successful lookup.
                Err(_) => unreachable!("queued commands were looked up"),
            };
            replies.push(reply);
        }
        c.deny_blocking = false;
        let replies = Value::array(replies);
        // A script in it never ends: EXEC's whole reply waits for SCRIPT KILL.
        self.hold_for_busy_script(&replies);
        replies
    }
}
