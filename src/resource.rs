//! The protected resource: a storage server holding counters, optionally fenced.
//!
//! Kleppmann's storage ("How to do distributed locking", 2016): every request carries the
//! client's fencing token; the storage remembers the highest token it has accepted and
//! rejects anything older. Without tokens it accepts everything — the lock alone must
//! then keep writers apart, which no lease lock can do under process pauses.
//!
//! With `fence_reads` (the default) a read carries its token too and raises the
//! high-water mark. Fencing writes alone is not enough for a read-modify-write: a stale
//! holder that reads, pauses, and writes *before* the new holder's first write is still
//! accepted, and the new holder's write then loses the stale one's update.
//!
//! The storage's state lives outside its turmoil host, so it survives crashes (it is the
//! durable system of record). It records every request it serves, with true time.
//!
//! Its protocol is one text line per length-prefixed frame: `READ key token|- client`
//! answered `OK value` or `ERR reason`, and `WRITE key value token|- client` answered
//! `OK 1` (accepted) or `OK 0` (fenced out).

use crate::history::{names, EventType};
use crate::net::{encode_frame, serve, CallError, FrameTooLarge, Frames, Remote, Tcp};
use crate::sim::NodeCtx;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

/// TCP port of the storage server.
pub(crate) const STORAGE_PORT: u16 = 7000;

#[derive(Default)]
struct Store {
    values: BTreeMap<String, i64>,
    /// Highest token accepted so far (None: no token seen).
    hi: Option<u64>,
}

/// The storage's durable state. Cloning shares it.
#[derive(Clone, Default)]
pub(crate) struct StorageState(Rc<RefCell<Store>>);

impl StorageState {
    /// Empty storage: every counter is 0.
    pub(crate) fn new() -> StorageState {
        StorageState::default()
    }

    /// Whether a request with `token` is current: no token (unfenced) or ≥ the mark.
    fn admits(&self, token: Option<u64>) -> bool {
        match (token, self.0.borrow().hi) {
            (Some(t), Some(hi)) => t >= hi,
            _ => true,
        }
    }

    fn raise(&self, token: Option<u64>) {
        if let Some(t) = token {
            let mut s = self.0.borrow_mut();
            s.hi = Some(s.hi.map_or(t, |h| h.max(t)));
        }
    }

    /// `READ key token|- client` → the value, or an error when fenced out.
    /// `WRITE key value token|- client` → 1 accepted, 0 rejected.
    fn handle(&self, ctx: &NodeCtx, request: &[u8], fence_reads: bool) -> Reply {
        let text = String::from_utf8_lossy(request);
        let token = |s: &str| s.parse::<u64>().ok();
        match text.split(' ').collect::<Vec<_>>()[..] {
            ["READ", key, tok, client] => {
                let token = token(tok);
                let accepted = !fence_reads || self.admits(token);
                if accepted && fence_reads {
                    self.raise(token);
                }
                let value = *self.0.borrow().values.get(key).unwrap_or(&0);
                // An unfenced read's token is not part of the storage's state: record
                // none, so the history says exactly what the storage did.
                let recorded = if fence_reads { token } else { None };
                ctx.record(
                    ctx.event(EventType::Ok, names::READ)
                        .key(key)
                        .token(recorded)
                        .value(value)
                        .accepted(accepted)
                        .client(client),
                );
                if accepted {
                    Reply::Ok(value)
                } else {
                    Reply::Err(format!("STALE token {tok} is older than the storage's"))
                }
            }
            ["WRITE", key, value, tok, client] => {
                let Ok(value) = value.parse::<i64>() else {
                    return Reply::Err("value is not an integer".into());
                };
                let token = token(tok);
                let accepted = self.admits(token);
                if accepted {
                    self.raise(token);
                    self.0.borrow_mut().values.insert(key.to_string(), value);
                }
                ctx.record(
                    ctx.event(EventType::Ok, names::WRITE)
                        .key(key)
                        .token(token)
                        .value(value)
                        .accepted(accepted)
                        .client(client),
                );
                Reply::Ok(accepted as i64)
            }
            _ => Reply::Err(format!("unknown storage command {text:?}")),
        }
    }
}

/// A storage reply on the wire.
enum Reply {
    Ok(i64),
    Err(String),
}

impl Reply {
    fn encode(&self, out: &mut Vec<u8>) {
        let line = match self {
            Reply::Ok(v) => format!("OK {v}"),
            Reply::Err(e) => format!("ERR {e}"),
        };
        encode_frame(line.as_bytes(), out);
    }

    fn decode(bytes: &[u8]) -> Result<StorageReply, CallError> {
        let text = String::from_utf8_lossy(bytes);
        match text.split_once(' ') {
            Some(("OK", v)) => v
                .parse()
                .map(StorageReply::Ok)
                .map_err(|_| CallError::Io(format!("unexpected reply {text:?}"))),
            Some(("ERR", e)) => Ok(StorageReply::Rejected(e.to_string())),
            _ => Err(CallError::Io(format!("unexpected reply {text:?}"))),
        }
    }
}

/// The storage server's main loop.
pub(crate) async fn storage_main(ctx: NodeCtx, state: StorageState, fence_reads: bool) {
    let answer = move |ctx: &NodeCtx,
                       request: Result<Vec<u8>, FrameTooLarge>,
                       out: &mut Vec<u8>| match request {
        Ok(r) => state.handle(ctx, &r, fence_reads).encode(out),
        Err(e) => Reply::Err(format!("protocol error: {e}")).encode(out),
    };
    serve(ctx, STORAGE_PORT, Frames, answer).await
}

/// Result of a storage request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StorageReply {
    /// Read value, or whether a write was accepted.
    Ok(i64),
    /// The storage refused the request (a stale token on a fenced read).
    Rejected(String),
}

/// A client's connection to the storage.
pub(crate) struct StorageClient {
    remote: Remote<Frames, Tcp>,
}

impl StorageClient {
    /// A client whose requests time out after `timeout` local time.
    pub(crate) fn new(timeout: Duration) -> StorageClient {
        StorageClient {
            remote: Remote::with_connector("storage", STORAGE_PORT, timeout, Frames, Tcp),
        }
    }

    fn tok(token: Option<u64>) -> String {
        token.map_or("-".to_string(), |t| t.to_string())
    }

    async fn call(&mut self, ctx: &NodeCtx, line: String) -> Result<StorageReply, CallError> {
        let mut out = Vec::with_capacity(line.len() + 4);
        encode_frame(line.as_bytes(), &mut out);
        Reply::decode(&self.remote.request(ctx, &out).await?)
    }

    /// Read `key`, carrying `token`.
    pub(crate) async fn read(
        &mut self,
        ctx: &NodeCtx,
        key: &str,
        token: Option<u64>,
    ) -> Result<StorageReply, CallError> {
        let line = format!("READ {key} {} {}", Self::tok(token), ctx.name());
        self.call(ctx, line).await
    }

    /// Write `value` to `key`, carrying `token`.
    pub(crate) async fn write(
        &mut self,
        ctx: &NodeCtx,
        key: &str,
        value: i64,
        token: Option<u64>,
    ) -> Result<StorageReply, CallError> {
        let line = format!("WRITE {key} {value} {} {}", Self::tok(token), ctx.name());
        self.call(ctx, line).await
    }
}
