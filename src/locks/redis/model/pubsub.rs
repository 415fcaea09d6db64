//! Pub/sub: (P)SUBSCRIBE, (P)UNSUBSCRIBE and PUBLISH (Redisson's lock waits for the
//! unlock message on a channel).
//!
//! Subscriptions are server state keyed by connection; a PUBLISH answers the number of
//! receivers and returns each message as a delivery for the node to write on the
//! subscriber's connection ([`super::Outcome::deliveries`]). Messages are RESP3 pushes,
//! which a RESP2 connection receives as arrays.

use super::glob::glob_match;
use super::{Client, ClientId, Ctx, RedisServer};
use crate::locks::redis::resp::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Channel and pattern subscriptions of every connection.
#[derive(Clone, Debug, Default)]
pub(crate) struct PubSub {
    channels: BTreeMap<Vec<u8>, BTreeSet<ClientId>>,
    patterns: BTreeMap<Vec<u8>, BTreeSet<ClientId>>,
}

impl PubSub {
    /// Drop every subscription of `client` (a closed connection, RESET).
    pub(crate) fn unsubscribe_all(&mut self, client: &mut Client) {
        for ch in std::mem::take(&mut client.channels) {
            remove(&mut self.channels, &ch, client.id);
        }
        for p in std::mem::take(&mut client.patterns) {
            remove(&mut self.patterns, &p, client.id);
        }
    }
}

fn remove(map: &mut BTreeMap<Vec<u8>, BTreeSet<ClientId>>, key: &[u8], id: ClientId) {
    if let Some(set) = map.get_mut(key) {
        set.remove(&id);
        if set.is_empty() {
            map.remove(key);
        }
    }
}

/// `[kind, name, count]`: the confirmation of one (un)subscription.
fn confirm(kind: &str, name: Option<&[u8]>, count: i64) -> Value {
    Value::Push(vec![
        Value::bulk(kind.as_bytes()),
        name.map_or(Value::nil(), Value::bulk),
        Value::int(count),
    ])
}

/// Splits one reply per channel into the reply and the further replies.
fn replies(c: &mut Ctx, mut all: Vec<Value>) -> Value {
    let first = all.remove(0);
    c.fx.more.extend(all);
    first
}

impl RedisServer {
    pub(crate) fn cmd_subscribe(
        &mut self,
        cl: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        self.subscribe(cl, c, args, false)
    }

    pub(crate) fn cmd_psubscribe(
        &mut self,
        cl: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        self.subscribe(cl, c, args, true)
    }

    fn subscribe(
        &mut self,
        cl: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
        pattern: bool,
    ) -> Value {
        if cl.in_multi() {
            // Redis 7.0 runs it inside MULTI only for RESP3; RESP2 clients are refused.
            if cl.resp == 2 {
                return Value::err("ERR Command not allowed inside a transaction");
            }
        }
        let mut out = Vec::new();
        for name in &args[1..] {
            let (mine, map, kind) = if pattern {
                (&mut cl.patterns, &mut self.pubsub.patterns, "psubscribe")
            } else {
                (&mut cl.channels, &mut self.pubsub.channels, "subscribe")
            };
            if mine.insert(name.clone()) {
                map.entry(name.clone()).or_default().insert(cl.id);
            }
            out.push(confirm(kind, Some(name), cl.subscriptions()));
        }
        replies(c, out)
    }

    pub(crate) fn cmd_unsubscribe(
        &mut self,
        cl: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        self.unsubscribe(cl, c, args, false)
    }

    pub(crate) fn cmd_punsubscribe(
        &mut self,
        cl: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
    ) -> Value {
        self.unsubscribe(cl, c, args, true)
    }

    /// `(P)UNSUBSCRIBE [name ...]`: the named ones, or all; one reply each (one with a nil
    /// name when there was nothing to leave).
    fn unsubscribe(
        &mut self,
        cl: &mut Client,
        c: &mut Ctx,
        args: &[Vec<u8>],
        pattern: bool,
    ) -> Value {
        let kind = if pattern {
            "punsubscribe"
        } else {
            "unsubscribe"
        };
        let names: Vec<Vec<u8>> = if args.len() > 1 {
            args[1..].to_vec()
        } else if pattern {
            cl.patterns.iter().cloned().collect()
        } else {
            cl.channels.iter().cloned().collect()
        };
        if names.is_empty() {
            return confirm(kind, None, cl.subscriptions());
        }
        let mut out = Vec::new();
        for name in names {
            let (mine, map) = if pattern {
                (&mut cl.patterns, &mut self.pubsub.patterns)
            } else {
                (&mut cl.channels, &mut self.pubsub.channels)
            };
            if mine.remove(&name) {
                remove(map, &name, cl.id);
            }
            out.push(confirm(kind, Some(&name), cl.subscriptions()));
        }
        replies(c, out)
    }

    /// `PUBLISH channel message`: the number of connections that receive it.
    pub(crate) fn cmd_publish(&mut self, _: &mut Client, c: &mut Ctx, args: &[Vec<u8>]) -> Value {
        let (channel, message) = (&args[1], &args[2]);
        let mut n = 0;
        for &id in self.pubsub.channels.get(channel).into_iter().flatten() {
            let msg = vec![
                Value::bulk(b"message"),
                Value::bulk(channel),
                Value::bulk(message),
            ];
            c.fx.deliveries.push((id, Value::Push(msg)));
            n += 1;
        }
        for (pattern, ids) in &self.pubsub.patterns {
            if !glob_match(pattern, channel) {
                continue;
            }
            for &id in ids {
                let msg = vec![
                    Value::bulk(b"pmessage"),
                    Value::bulk(pattern),
                    Value::bulk(channel),
                    Value::bulk(message),
                ];
                c.fx.deliveries.push((id, Value::Push(msg)));
                n += 1;
            }
        }
        Value::int(n)
    }
}
