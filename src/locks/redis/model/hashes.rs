//! Hash commands: what Redisson's lock scripts use (HSET, HGET, HINCRBY, HEXISTS, HDEL,
//! HLEN) and a few neighbours (HMSET, HSETNX, HGETALL).

use super::keyspace::{wrongtype, Data, Entry};
use super::{as_given, wrong_args, Client, Ctx, RedisServer, ERR_NOT_INT, ERR_OVERFLOW};
use crate::locks::redis::resp::{parse_i64, Value};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

impl RedisServer {
    /// The hash at `key`: `Ok(None)` if missing, `Err(WRONGTYPE)` if another type.
    fn hash(&mut self, c: &mut Ctx, key: &[u8]) -> Result<Option<&mut Fields>, Value> {
        match self.lookup(c, key) {
            None => Ok(None),
            Some(Entry {
                data: Data::Hash(h),
                ..
            }) => Ok(Some(h)),
            Some(_) => Err(wrongtype()),
        }
    }

    /// The hash at `key`, created empty if missing.
    fn hash_or_new(&mut self, c: &mut Ctx, key: &[u8]) -> Result<&mut Fields, Value> {
        if self.hash(c, key)?.is_none() {
            self.db(c)
                .insert(key.to_vec(), Entry::new(Data::Hash(Vec::new())));
        }
        match self.db(c).get_mut(key).map(|e| &mut e.data) {
            Some(Data::Hash(h)) => Ok(h),
            _ => unreachable!("inserted above"),
        }
    }

    /// `HSET key field value [field value ...]` (and `HMSET`, which answers OK).
    pub(crate) fn cmd_hset(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        if args.len() % 2 == 1 {
            return wrong_args(&name);
        }
        let h = match self.hash_or_new(c, &args[1]) {
            Ok(h) => h,
            Err(e) => return e,
        };
        let mut created = 0;
        for pair in args[2..].chunks(2) {
            match h.iter_mut().find(|(f, _)| *f == pair[0]) {
                Some((_, v)) => *v = pair[1].clone(),
                None => {
                    h.push((pair[0].clone(), pair[1].clone()));
                    created += 1;
                }
            }
        }
        self.effect(c, as_given(args));
        if name == "hmset" {
            Value::ok()
        } else {
            Value::int(created)
        }
    }

    /// `HSETNX key field value`: 1 if the field was set.
    pub(crate) fn cmd_hsetnx(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let h = match self.hash_or_new(c, &args[1]) {
            Ok(h) => h,
            Err(e) => return e,
        };
        if h.iter().any(|(f, _)| *f == args[2]) {
            return Value::int(0);
        }
        h.push((args[2].clone(), args[3].clone()));
        self.effect(c, as_given(args));
        Value::int(1)
    }

    pub(crate) fn cmd_hget(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match self.hash(c, &args[1]) {
            Ok(h) => Value::Bulk(
                h.and_then(|h| h.iter().find(|(f, _)| *f == args[2]))
                    .map(|(_, v)| v.clone()),
            ),
            Err(e) => e,
        }
    }

    /// `HINCRBY key field increment`: the new value; a missing field counts as 0.
    pub(crate) fn cmd_hincrby(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let Some(delta) = parse_i64(&args[3]) else {
            return Value::err(ERR_NOT_INT);
        };
        let h = match self.hash_or_new(c, &args[1]) {
            Ok(h) => h,
            Err(e) => return e,
        };
        let pos = h.iter().position(|(f, _)| *f == args[2]);
        let current = match pos {
            None => 0,
            Some(i) => match parse_i64(&h[i].1) {
                Some(n) => n,
                None => return Value::err("ERR hash value is not an integer"),
            },
        };
        let Some(new) = current.checked_add(delta) else {
            return Value::err(ERR_OVERFLOW);
        };
        let text = new.to_string().into_bytes();
        match pos {
            Some(i) => h[i].1 = text,
            None => h.push((args[2].clone(), text)),
        }
        self.effect(c, as_given(args));
        Value::int(new)
    }

    pub(crate) fn cmd_hexists(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match self.hash(c, &args[1]) {
            Ok(h) => Value::int(i64::from(
                h.is_some_and(|h| h.iter().any(|(f, _)| *f == args[2])),
            )),
            Err(e) => e,
        }
    }

    /// `HDEL key field...`: fields removed; an emptied hash is deleted.
    pub(crate) fn cmd_hdel(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let h = match self.hash(c, &args[1]) {
            Ok(Some(h)) => h,
            Ok(None) => return Value::int(0),
            Err(e) => return e,
        };
        let before = h.len();
        h.retain(|(f, _)| !args[2..].contains(f));
        let removed = before - h.len();
        if h.is_empty() {
            self.db(c).remove(&args[1]);
        }
        if removed > 0 {
            self.effect(c, as_given(args));
        }
        Value::int(removed as i64)
    }

    pub(crate) fn cmd_hlen(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match self.hash(c, &args[1]) {
            Ok(h) => Value::int(h.map_or(0, |h| h.len() as i64)),
            Err(e) => e,
        }
    }

    /// `HGETALL key`: a map (RESP3), field and value pairs (RESP2), in insertion order.
    pub(crate) fn cmd_hgetall(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match self.hash(c, &args[1]) {
            Ok(h) => Value::Map(
                h.map(|h| {
                    h.iter()
                        .map(|(f, v)| (Value::bulk(f), Value::bulk(v)))
                        .collect()
                })
                .unwrap_or_default(),
            ),
            Err(e) => e,
        }
    }
}
