//! Key-space commands of any type: DEL, EXISTS, TYPE, KEYS, the EXPIRE family, TTL and
//! EXPIRETIME, PERSIST, DBSIZE, FLUSHDB/FLUSHALL.

use super::glob::glob_match;
use super::keyspace::is_expired;
use super::{as_given, invalid_expire, lossy, Client, Ctx, RedisServer, ERR_NOT_INT, ERR_SYNTAX};
use crate::locks::redis::resp::{parse_i64, Value};

impl RedisServer {
    /// `DEL`/`UNLINK key...`: the number of keys removed.
    pub(crate) fn cmd_del(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let mut removed = 0;
        for key in &args[1..] {
            // A key that had expired is gone already (and propagated as its own DEL).
            if self.expire_if_needed(c, key) {
                continue;
            }
            if self.db(c).remove(key.as_slice()).is_some() {
                removed += 1;
            }
        }
        if removed > 0 {
            self.effect(c, as_given(args));
        }
        Value::int(removed)
    }

    pub(crate) fn cmd_exists(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let mut n = 0;
        for k in &args[1..] {
            if self.lookup(c, k).is_some() {
                n += 1;
            }
        }
        Value::int(n)
    }

    pub(crate) fn cmd_type(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let t = self
            .lookup(c, &args[1])
            .map_or("none", |e| e.data.type_name());
        Value::simple(t)
    }

    /// `KEYS pattern`: the names matching the glob, leaving out keys whose time has
    /// passed (without deleting them, as Redis). In key order; Redis answers in its hash
    /// table's order, which nobody can rely on.
    pub(crate) fn cmd_keys(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let pattern = &args[1];
        // Exactly `*` lists every key without matching (so the empty name too).
        let all = pattern.as_slice() == b"*";
        let now = c.now;
        let names = self
            .db(c)
            .iter()
            .filter(|(k, e)| (all || glob_match(pattern, k)) && !is_expired(e.expire_at_ms, now))
            .map(|(k, _)| Value::bulk(k))
            .collect();
        Value::array(names)
    }

    pub(crate) fn cmd_expire(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let now = c.now;
        self.expire(c, args, now, true)
    }

    pub(crate) fn cmd_pexpire(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let now = c.now;
        self.expire(c, args, now, false)
    }

    pub(crate) fn cmd_expireat(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.expire(c, args, 0, true)
    }

    pub(crate) fn cmd_pexpireat(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.expire(c, args, 0, false)
    }

    /// `EXPIRE`/`PEXPIRE`/`EXPIREAT`/`PEXPIREAT key time [NX|XX|GT|LT]`.
    /// `base` is added to the time (now for the relative forms, 0 for the absolute).
    fn expire(&mut self, c: &mut Ctx, args: &[Vec<u8>], base: i64, seconds: bool) -> Value {
        let name = lossy(&args[0]).to_ascii_lowercase();
        let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
        for opt in &args[3..] {
            match opt.to_ascii_lowercase().as_slice() {
                b"nx" => nx = true,
                b"xx" => xx = true,
                b"gt" => gt = true,
                b"lt" => lt = true,
                _ => return Value::err(format!("ERR Unsupported option {}", lossy(opt))),
            }
        }
        if nx && (xx || gt || lt) {
            return Value::err(
                "ERR NX and XX, GT or LT options at the same time are not compatible",
            );
        }
        if gt && lt {
            return Value::err("ERR GT and LT options at the same time are not compatible");
        }
        let Some(mut when) = parse_i64(&args[2]) else {
            return Value::err(ERR_NOT_INT);
        };
        if seconds {
            match when.checked_mul(1000) {
                Some(ms) => when = ms,
                None => return invalid_expire(&name),
            }
        }
        let Some(when) = when.checked_add(base) else {
            return invalid_expire(&name);
        };
        let key = &args[1];
        let Some(entry) = self.lookup(c, key) else {
            return Value::int(0);
        };
        let current = entry.expire_at_ms;
        // No TTL counts as an infinite one for GT and LT.
        let refused = (nx && current.is_some())
            || (xx && current.is_none())
            || (gt && current.is_none_or(|c| when <= c))
            || (lt && current.is_some_and(|c| when >= c));
        if refused {
            return Value::int(0);
        }
        self.set_deadline(c, key, when, &args[3..]);
        Value::int(1)
    }

    pub(crate) fn cmd_ttl(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.ttl(c, &args[1], false)
    }

    pub(crate) fn cmd_pttl(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.ttl(c, &args[1], true)
    }

    /// `TTL`/`PTTL key`: -2 if missing, -1 without TTL, else the time left (seconds
    /// rounded to nearest, as Redis does).
    fn ttl(&mut self, c: &mut Ctx, key: &[u8], ms: bool) -> Value {
        let now = c.now;
        let Some(e) = self.lookup(c, key) else {
            return Value::int(-2);
        };
        match e.expire_at_ms {
            None => Value::int(-1),
            Some(at) => {
                let left = at.saturating_sub(now).max(0);
                Value::int(if ms { left } else { (left + 500) / 1000 })
            }
        }
    }

    pub(crate) fn cmd_expiretime(
        &mut self,
        _: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        self.expiretime(c, &args[1], false)
    }

    pub(crate) fn cmd_pexpiretime(
        &mut self,
        _: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        self.expiretime(c, &args[1], true)
    }

    /// `EXPIRETIME`/`PEXPIRETIME key`: the absolute deadline (s or ms), -1 without TTL,
    /// -2 if missing.
    fn expiretime(&mut self, c: &mut Ctx, key: &[u8], ms: bool) -> Value {
        match self.lookup(c, key) {
            None => Value::int(-2),
            Some(e) => match e.expire_at_ms {
                None => Value::int(-1),
                Some(at) => Value::int(if ms { at } else { at / 1000 }),
            },
        }
    }

    /// `PERSIST key`: 1 if a TTL was removed.
    pub(crate) fn cmd_persist(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let removed = self
            .lookup(c, &args[1])
            .and_then(|e| e.expire_at_ms.take())
            .is_some();
        if removed {
            self.effect(c, as_given(args));
        }
        Value::int(i64::from(removed))
    }

    /// `DBSIZE`: keys in the current database, including expired ones not yet removed.
    pub(crate) fn cmd_dbsize(&mut self, _: &mut Client, c: &mut Ctx, _: &[Vec<u8>]) -> Value {
        Value::int(self.db(c).len() as i64)
    }

    pub(crate) fn cmd_flushdb(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.flush(c, args, Some(c.db))
    }

    pub(crate) fn cmd_flushall(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.flush(c, args, None)
    }

    /// `FLUSHDB`/`FLUSHALL [ASYNC|SYNC]`: empties one database or all.
    fn flush(&mut self, c: &mut Ctx, args: &[Vec<u8>], only: Option<usize>) -> Value {
        match &args[1..] {
            [] => {}
            [m] if matches!(m.to_ascii_lowercase().as_slice(), b"sync" | b"async") => {}
            _ => return Value::err(ERR_SYNTAX),
        }
        for i in 0..self.dbs.len() {
            if only.is_none_or(|d| d == i) {
                self.watches.touch_db(&self.dbs, i);
                self.dbs[i].clear();
            }
        }
        self.effect(c, as_given(args));
        Value::ok()
    }
}
