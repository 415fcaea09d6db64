//! The keyspace: databases of typed values with absolute expiry, lazy expiry on access,
//! and the snapshot a full resynchronisation sends.

use super::{cmd, Ctx, RedisServer, ERR_WRONGTYPE};
use crate::locks::redis::resp::Value;
use std::collections::{BTreeMap, VecDeque};

/// A value's type and contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Data {
    /// A string.
    Str(Vec<u8>),
    /// A hash, fields in insertion order (as Redis's listpack encoding keeps them).
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    /// A list.
    List(VecDeque<Vec<u8>>),
}

impl Data {
    /// `TYPE`'s name for it.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Data::Str(_) => "string",
            Data::Hash(_) => "hash",
            Data::List(_) => "list",
        }
    }
}

/// One key's value and absolute expiry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) data: Data,
    /// Absolute wall-clock deadline in ms since the Unix epoch; `None`: no TTL.
    pub(crate) expire_at_ms: Option<i64>,
}

impl Entry {
    pub(crate) fn new(data: Data) -> Entry {
        Entry {
            data,
            expire_at_ms: None,
        }
    }
}

/// One database (`SELECT n`).
pub(crate) type Db = BTreeMap<Vec<u8>, Entry>;

/// The number of databases, as Redis's default `databases 16`.
pub(crate) const DATABASES: usize = 16;

/// Redis's `keyIsExpired`: strictly after the deadline.
pub(crate) fn is_expired(expire_at_ms: Option<i64>, now_ms: i64) -> bool {
    matches!(expire_at_ms, Some(at) if now_ms > at)
}

/// A `WRONGTYPE` reply.
pub(crate) fn wrongtype() -> Value {
    Value::err(ERR_WRONGTYPE)
}

impl RedisServer {
    /// The current database of `c`.
    pub(crate) fn db(&mut self, c: &Ctx) -> &mut Db {
        &mut self.dbs[c.db]
    }

    /// Lazy expiry (Redis's `expireIfNeeded`): deletes the key if its deadline has
    /// passed, records it and propagates `DEL key`. True if it deleted.
    pub(crate) fn expire_if_needed(&mut self, c: &mut Ctx, key: &[u8]) -> bool {
        if self.loading {
            return false;
        }
        match self.dbs[c.db].get(key) {
            Some(e) if is_expired(e.expire_at_ms, c.now) => {
                self.dbs[c.db].remove(key);
                c.fx.expired.push(key.to_vec());
                self.effect(c, cmd(&[b"DEL", key]));
                true
            }
            _ => false,
        }
    }

    /// Looks a key up, expiring it lazily first.
    pub(crate) fn lookup(&mut self, c: &mut Ctx, key: &[u8]) -> Option<&mut Entry> {
        self.expire_if_needed(c, key);
        self.dbs[c.db].get_mut(key)
    }

    /// A string value: `Ok(None)` if missing, `Err(WRONGTYPE)` if another type.
    pub(crate) fn get_str(&mut self, c: &mut Ctx, key: &[u8]) -> Result<Option<Vec<u8>>, Value> {
        match self.lookup(c, key) {
            None => Ok(None),
            Some(Entry {
                data: Data::Str(s), ..
            }) => Ok(Some(s.clone())),
            Some(_) => Err(wrongtype()),
        }
    }

    /// Redis's `checkAlreadyExpired`: a new deadline at or before now deletes the key,
    /// except while loading.
    pub(crate) fn already_expired(&self, when: i64, now: i64) -> bool {
        !self.loading && when <= now
    }

    /// Gives an existing key the absolute deadline `when`, or deletes it if `when` has
    /// already passed; propagates `PEXPIREAT key when [flags]` or `DEL key`.
    pub(crate) fn set_deadline(&mut self, c: &mut Ctx, key: &[u8], when: i64, flags: &[Vec<u8>]) {
        if self.already_expired(when, c.now) {
            self.dbs[c.db].remove(key);
            self.effect(c, cmd(&[b"DEL", key]));
        } else if let Some(e) = self.dbs[c.db].get_mut(key) {
            e.expire_at_ms = Some(when);
            let mut effect = cmd(&[b"PEXPIREAT", key, when.to_string().as_bytes()]);
            effect.extend(flags.iter().cloned());
            self.effect(c, effect);
        }
    }

    /// Redis's active expiry cycle, exhaustive: removes every key whose deadline has
    /// passed (`now_ms > expire_at`) from every database and returns them, sorted by
    /// database then key. The caller should propagate `DEL key` for each (in its database,
    /// see [`RedisServer::expired_dels`]), as Redis does, so that the AOF and replicas agree.
    pub fn active_expire(&mut self, now_ms: i64) -> Vec<Vec<u8>> {
        self.active_expire_dbs(now_ms)
            .into_iter()
            .map(|(_, k)| k)
            .collect()
    }

    /// [`RedisServer::active_expire`] with each key's database.
    pub(crate) fn active_expire_dbs(&mut self, now_ms: i64) -> Vec<(usize, Vec<u8>)> {
        let mut gone = Vec::new();
        // The expire cycle is a timer event: Redis does not run it inside a script.
        if self.busy() {
            return gone;
        }
        for (i, db) in self.dbs.iter_mut().enumerate() {
            let keys: Vec<Vec<u8>> = db
                .iter()
                .filter(|(_, e)| is_expired(e.expire_at_ms, now_ms))
                .map(|(k, _)| k.clone())
                .collect();
            for k in keys {
                db.remove(&k);
                gone.push((i, k));
            }
        }
        for (db, k) in &gone {
            self.watches.touch(&self.dbs, *db, k);
        }
        gone
    }

    /// A key's absolute expiry in ms since the Unix epoch (database 0), if it exists and
    /// has one. Inspection only: does not expire anything.
    pub fn get_expire_at(&self, key: &[u8]) -> Option<i64> {
        self.dbs[0].get(key).and_then(|e| e.expire_at_ms)
    }

    /// A string key's value in database 0, even if logically expired. Inspection only.
    pub fn peek(&self, key: &[u8]) -> Option<&[u8]> {
        match self.dbs[0].get(key).map(|e| &e.data) {
            Some(Data::Str(s)) => Some(s.as_slice()),
            _ => None,
        }
    }

    /// The dataset as commands that rebuild it, database by database in key order (a
    /// `SELECT n` before each non-empty database other than 0, and at the end one that
    /// restores the propagation stream's database): what a primary sends a replica on a
    /// full resynchronisation (Redis sends an RDB file). Strings are `SET k v [PXAT t]`,
    /// hashes `HSET`, lists `RPUSH`, each followed by `PEXPIREAT` when it has a TTL.
    pub fn snapshot(&self) -> Vec<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let mut selected = 0;
        for (i, db) in self.dbs.iter().enumerate() {
            if db.is_empty() {
                continue;
            }
            if i != selected {
                out.push(cmd(&[b"SELECT", i.to_string().as_bytes()]));
                selected = i;
            }
            for (k, e) in db {
                let at = e.expire_at_ms.map(|t| t.to_string().into_bytes());
                match (&e.data, &at) {
                    (Data::Str(v), Some(at)) => out.push(cmd(&[b"SET", k, v, b"PXAT", at])),
                    (Data::Str(v), None) => out.push(cmd(&[b"SET", k, v])),
                    (Data::Hash(fields), _) => {
                        let mut c = cmd(&[b"HSET", k]);
                        for (f, v) in fields {
                            c.push(f.clone());
                            c.push(v.clone());
                        }
                        out.push(c);
                    }
                    (Data::List(items), _) => {
                        let mut c = cmd(&[b"RPUSH", k]);
                        c.extend(items.iter().cloned());
                        out.push(c);
                    }
                }
                if let (Data::Hash(_) | Data::List(_), Some(at)) = (&e.data, &at) {
                    out.push(cmd(&[b"PEXPIREAT", k, at]));
                }
            }
        }
        if selected != self.propagated_db {
            out.push(cmd(&[b"SELECT", self.propagated_db.to_string().as_bytes()]));
        }
        out
    }

    /// The number of keys in database 0, including expired ones not yet removed (like
    /// DBSIZE).
    pub fn len(&self) -> usize {
        self.dbs[0].len()
    }

    /// True when database 0 holds no keys.
    pub fn is_empty(&self) -> bool {
        self.dbs[0].is_empty()
    }
}
