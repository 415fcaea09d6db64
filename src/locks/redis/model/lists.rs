//! List commands: enough of a second type for WRONGTYPE semantics and simple queues
//! (LPUSH, RPUSH, LPOP, RPOP, LRANGE, LLEN); the blocking pops are in `blocking`.

use super::keyspace::{wrongtype, Data, Entry};
use super::{as_given, Client, Ctx, RedisServer, ERR_NOT_INT};
use crate::locks::redis::resp::{parse_i64, Value};
use std::collections::VecDeque;

type Items = VecDeque<Vec<u8>>;

impl RedisServer {
    /// The list at `key`: `Ok(None)` if missing, `Err(WRONGTYPE)` if another type.
    fn list(&mut self, c: &mut Ctx, key: &[u8]) -> Result<Option<&mut Items>, Value> {
        match self.lookup(c, key) {
            None => Ok(None),
            Some(Entry {
                data: Data::List(l),
                ..
            }) => Ok(Some(l)),
            Some(_) => Err(wrongtype()),
        }
    }

    pub(crate) fn cmd_lpush(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.push(c, args, true)
    }

    pub(crate) fn cmd_rpush(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.push(c, args, false)
    }

    fn push(&mut self, c: &mut Ctx, args: &[Vec<u8>], front: bool) -> Value {
        match self.list(c, &args[1]) {
            Ok(Some(_)) => {}
            Ok(None) => {
                let entry = Entry::new(Data::List(VecDeque::new()));
                self.db(c).insert(args[1].clone(), entry);
                // A new list: connections blocked on it are served after the command.
                self.blocked.signal(c.db, &args[1]);
            }
            Err(e) => return e,
        }
        let Some(Data::List(l)) = self.db(c).get_mut(&args[1]).map(|e| &mut e.data) else {
            unreachable!("a list is there");
        };
        for item in &args[2..] {
            if front {
                l.push_front(item.clone());
            } else {
                l.push_back(item.clone());
            }
        }
        let len = l.len() as i64;
        self.effect(c, as_given(args));
        Value::int(len)
    }

    pub(crate) fn cmd_lpop(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.pop(c, args, true)
    }

    pub(crate) fn cmd_rpop(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        self.pop(c, args, false)
    }

    /// `LPOP`/`RPOP key [count]`.
    fn pop(&mut self, c: &mut Ctx, args: &[Vec<u8>], front: bool) -> Value {
        if args.len() > 3 {
            return super::wrong_args(&String::from_utf8_lossy(&args[0]).to_ascii_lowercase());
        }
        let count = match args.get(2).map(|a| parse_i64(a)) {
            None => None,
            Some(Some(n)) if n >= 0 => Some(n as usize),
            Some(Some(_)) => return Value::err("ERR value is out of range, must be positive"),
            Some(None) => return Value::err(ERR_NOT_INT),
        };
        let l = match self.list(c, &args[1]) {
            Ok(Some(l)) => l,
            Ok(None) if count.is_some() => return Value::Array(None),
            Ok(None) => return Value::nil(),
            Err(e) => return e,
        };
        let n = count.unwrap_or(1).min(l.len());
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let item = if front { l.pop_front() } else { l.pop_back() };
            out.extend(item);
        }
        if l.is_empty() {
            self.db(c).remove(&args[1]);
        }
        if n > 0 {
            self.effect(c, as_given(args));
        }
        match count {
            Some(_) => Value::array(out.iter().map(|v| Value::bulk(v)).collect()),
            None => Value::Bulk(out.pop()),
        }
    }

    /// `LRANGE key start stop`, with negative indexes from the end.
    pub(crate) fn cmd_lrange(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let (Some(start), Some(stop)) = (parse_i64(&args[2]), parse_i64(&args[3])) else {
            return Value::err(ERR_NOT_INT);
        };
        let l = match self.list(c, &args[1]) {
            Ok(Some(l)) => l,
            Ok(None) => return Value::array(vec![]),
            Err(e) => return e,
        };
        let len = l.len() as i64;
        let start = if start < 0 {
            (len + start).max(0)
        } else {
            start
        };
        let stop = if stop < 0 {
            len + stop
        } else {
            stop.min(len - 1)
        };
        if start > stop || start >= len {
            return Value::array(vec![]);
        }
        Value::array(
            l.iter()
                .skip(start as usize)
                .take((stop - start + 1) as usize)
                .map(|v| Value::bulk(v))
                .collect(),
        )
    }

    pub(crate) fn cmd_llen(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        match self.list(c, &args[1]) {
            Ok(l) => Value::int(l.map_or(0, |l| l.len() as i64)),
            Err(e) => e,
        }
    }
}
