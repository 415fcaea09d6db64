//! String commands: SET and its relatives, GET/GETDEL/GETEX, and the INCR family.

use super::keyspace::{wrongtype, Data, Entry};
use super::{
    as_given, cmd, invalid_expire, Client, Ctx, RedisServer, ERR_NOT_INT, ERR_OVERFLOW, ERR_SYNTAX,
};
use crate::locks::redis::resp::{parse_i64, Value};

/// Which expiry option a `SET` or `GETEX` carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ExpireOpt {
    Ex,
    Px,
    ExAt,
    PxAt,
}

impl ExpireOpt {
    fn parse(opt: &[u8]) -> Option<ExpireOpt> {
        Some(match opt {
            b"ex" => ExpireOpt::Ex,
            b"px" => ExpireOpt::Px,
            b"exat" => ExpireOpt::ExAt,
            b"pxat" => ExpireOpt::PxAt,
            _ => return None,
        })
    }

    /// The absolute deadline (ms) for `raw` at `now`, or the error reply of `command`.
    fn deadline(self, raw: &[u8], now: i64, command: &str) -> Result<i64, Value> {
        let Some(mut ms) = parse_i64(raw) else {
            return Err(Value::err(ERR_NOT_INT));
        };
        let seconds = matches!(self, ExpireOpt::Ex | ExpireOpt::ExAt);
        if ms <= 0 || (seconds && ms > i64::MAX / 1000) {
            return Err(invalid_expire(command));
        }
        if seconds {
            ms *= 1000;
        }
        if matches!(self, ExpireOpt::Ex | ExpireOpt::Px) {
            match ms.checked_add(now) {
                Some(abs) if abs > 0 => ms = abs,
                _ => return Err(invalid_expire(command)),
            }
        }
        Ok(ms)
    }
}

impl RedisServer {
    /// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`.
    pub(crate) fn cmd_set(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
        let mut expire: Option<(ExpireOpt, &[u8])> = None;
        let mut j = 3;
        // Option parsing as in Redis's parseExtendedStringArgumentsOrReply: repeating an
        // option is allowed, combining conflicting ones is a syntax error.
        while j < args.len() {
            let opt = args[j].to_ascii_lowercase();
            let next = args.get(j + 1);
            match (opt.as_slice(), ExpireOpt::parse(&opt)) {
                (b"nx", _) if !xx => nx = true,
                (b"xx", _) if !nx => xx = true,
                (b"get", _) => get = true,
                (b"keepttl", _) if expire.is_none() => keepttl = true,
                (_, Some(kind))
                    if !keepttl && next.is_some() && expire.is_none_or(|(k, _)| k == kind) =>
                {
                    expire = next.map(|n| (kind, n.as_slice()));
                    j += 1;
                }
                _ => return Value::err(ERR_SYNTAX),
            }
            j += 1;
        }
        let deadline = match expire {
            Some((kind, raw)) => match kind.deadline(raw, c.now, "set") {
                Ok(at) => Some(at),
                Err(e) => return e,
            },
            None => None,
        };
        let old = if get {
            match self.get_str(c, &args[1]) {
                Ok(v) => Some(v),
                Err(e) => return e,
            }
        } else {
            None
        };
        let found = self.lookup(c, &args[1]).is_some();
        if (nx && found) || (xx && !found) {
            return match old {
                Some(old) => Value::Bulk(old),
                None => Value::nil(),
            };
        }
        let key = args[1].clone();
        let value = args[2].clone();
        let kept = if keepttl {
            self.db(c).get(&key).and_then(|e| e.expire_at_ms)
        } else {
            None
        };
        self.db(c).insert(
            key.clone(),
            Entry {
                data: Data::Str(value.clone()),
                expire_at_ms: deadline.or(kept),
            },
        );
        // Propagated as the effect: the NX/XX condition held, relative TTLs are absolute.
        let mut effect = vec![b"SET".to_vec(), key, value];
        if let Some(at) = deadline {
            effect.push(b"PXAT".to_vec());
            effect.push(at.to_string().into_bytes());
        } else if keepttl {
            effect.push(b"KEEPTTL".to_vec());
        }
        self.effect(c, effect);
        match old {
            Some(old) => Value::Bulk(old),
            None => Value::ok(),
        }
    }

    /// `SETNX key value`: 1 if set, 0 if the key exists.
    pub(crate) fn cmd_setnx(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        if self.lookup(c, &args[1]).is_some() {
            return Value::int(0);
        }
        let entry = Entry::new(Data::Str(args[2].clone()));
        self.db(c).insert(args[1].clone(), entry);
        self.effect(c, cmd(&[b"SET", &args[1], &args[2]]));
        Value::int(1)
    }

    /// `SETEX key seconds value`.
    pub(crate) fn cmd_setex(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.set_with_ttl(cl, c, args, ExpireOpt::Ex, "setex")
    }

    /// `PSETEX key ms value`.
    pub(crate) fn cmd_psetex(&mut self, cl: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.set_with_ttl(cl, c, args, ExpireOpt::Px, "psetex")
    }

    fn set_with_ttl(
        &mut self,
        _: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
        kind: ExpireOpt,
        name: &str,
    ) -> Value {
        let at = match kind.deadline(&args[2], c.now, name) {
            Ok(at) => at,
            Err(e) => return e,
        };
        self.lookup(c, &args[1]);
        let entry = Entry {
            data: Data::Str(args[3].clone()),
            expire_at_ms: Some(at),
        };
        self.db(c).insert(args[1].clone(), entry);
        let at = at.to_string();
        self.effect(
            c,
            cmd(&[b"SET", &args[1], &args[3], b"PXAT", at.as_bytes()]),
        );
        Value::ok()
    }

    pub(crate) fn cmd_get(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match self.get_str(c, &args[1]) {
            Ok(v) => Value::Bulk(v),
            Err(e) => e,
        }
    }

    /// `GETDEL key`: the value, and the key is gone.
    pub(crate) fn cmd_getdel(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match self.get_str(c, &args[1]) {
            Ok(Some(v)) => {
                self.db(c).remove(&args[1]);
                self.effect(c, cmd(&[b"DEL", &args[1]]));
                Value::bulk(&v)
            }
            Ok(None) => Value::nil(),
            Err(e) => e,
        }
    }

    /// `GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]`.
    pub(crate) fn cmd_getex(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let mut expire: Option<(ExpireOpt, &[u8])> = None;
        let mut persist = false;
        let mut j = 2;
        while j < args.len() {
            let opt = args[j].to_ascii_lowercase();
            let next = args.get(j + 1);
            match (opt.as_slice(), ExpireOpt::parse(&opt)) {
                (b"persist", _) if expire.is_none() => persist = true,
                (_, Some(kind))
                    if !persist && next.is_some() && expire.is_none_or(|(k, _)| k == kind) =>
                {
                    expire = next.map(|n| (kind, n.as_slice()));
                    j += 1;
                }
                _ => return Value::err(ERR_SYNTAX),
            }
            j += 1;
        }
        let deadline = match expire {
            Some((kind, raw)) => match kind.deadline(raw, c.now, "getex") {
                Ok(at) => Some(at),
                Err(e) => return e,
            },
            None => None,
        };
        let value = match self.get_str(c, &args[1]) {
            Ok(Some(v)) => v,
            Ok(None) => return Value::nil(),
            Err(e) => return e,
        };
        if let Some(at) = deadline {
            if self.already_expired(at, c.now) {
                self.db(c).remove(&args[1]);
                self.effect(c, cmd(&[b"DEL", &args[1]]));
            } else {
                self.set_deadline(c, &args[1], at, &[]);
            }
        } else if persist {
            let had = self
                .db(c)
                .get_mut(&args[1])
                .and_then(|e| e.expire_at_ms.take());
            if had.is_some() {
                self.effect(c, cmd(&[b"PERSIST", &args[1]]));
            }
        }
        Value::Bulk(Some(value))
    }

    pub(crate) fn cmd_incr(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.incr_by(c, args, 1)
    }

    pub(crate) fn cmd_decr(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.incr_by(c, args, -1)
    }

    pub(crate) fn cmd_incrby(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match parse_i64(&args[2]) {
            None => Value::err(ERR_NOT_INT),
            Some(n) => self.incr_by(c, args, n),
        }
    }

    pub(crate) fn cmd_decrby(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match parse_i64(&args[2]) {
            None => Value::err(ERR_NOT_INT),
            Some(i64::MIN) => Value::err("ERR decrement would overflow"),
            Some(n) => self.incr_by(c, args, -n),
        }
    }

    /// `INCR`/`DECR`/`INCRBY`/`DECRBY`: keeps the key's TTL; a missing key counts as 0.
    fn incr_by(&mut self, c: &mut Ctx, args: &[Vec<u8>], delta: i64) -> Value {
        let key = &args[1];
        let (current, ttl) = match self.lookup(c, key) {
            None => (0, None),
            Some(Entry {
                data: Data::Str(s),
                expire_at_ms,
            }) => match parse_i64(s) {
                Some(n) => (n, *expire_at_ms),
                None => return Value::err(ERR_NOT_INT),
            },
            Some(_) => return wrongtype(),
        };
        let Some(new) = current.checked_add(delta) else {
            return Value::err(ERR_OVERFLOW);
        };
        self.db(c).insert(
            key.clone(),
            Entry {
                data: Data::Str(new.to_string().into_bytes()),
                expire_at_ms: ttl,
            },
        );
        self.effect(c, as_given(args));
        Value::int(new)
    }
}
