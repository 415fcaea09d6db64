//! The history: every operation clients invoked and completed, every operation the
//! storage served, and every point event servers and the nemesis observed, stamped with
//! true (simulated) time.
//!
//! One [`Event`] per line in JSONL (`docs/design-decisions.md`, "History conventions the
//! checkers rely on", says what the checkers assume of it). Types follow Jepsen:
//! `invoke`, `ok`, `fail` (definitely did not happen), `info` (may have happened, at any
//! time after its invoke) and `event` (a point event a server or the nemesis observed).
//!
//! # Vocabulary recorded by a run
//!
//! The names in `f` are the constants of [`names`].
//!
//! | process | type | f | fields |
//! |---|---|---|---|
//! | `client-N` | invoke/ok/fail/info | `acquire` | `lock`; ok: `token` (if the algorithm has one), `valid_ms` |
//! | `client-N` | invoke/ok/fail/info | `read` | `key`, `token`; ok: `value` |
//! | `client-N` | invoke/ok/fail/info | `write` | `key`, `token`, `value`; ok: `accepted` |
//! | `client-N` | invoke/ok/fail/info | `release` | `lock`, `token`; invoke: `reason` = `done` \| `expired` |
//! | `storage` | ok | `read` / `write` | `key`, `token`, `value`, `accepted`, `client` |
//! | `redis-N` | event | `expire` | `key` (a lock key expired on the server) |
//! | `raft-N` | event | `expire` | `key` = the lock whose owner key a lease revoke removed (recorded by the leader applying it); `value` {index} |
//! | `raft-N` | event | `leader` / `apply` | `value` {term} / {index, term, hash}: the Raft invariants' input |
//! | `zk-N` | event | `expire` | `key` = the lock whose owner node a session close deleted; `value` {zxid, node, session} (every server of an ensemble records it when it applies the close) |
//! | `zk-N` | event | `leader` | `value` {term}: the server leads its ensemble |
//! | `client-N` | event | `connection` | `value` = Curator's state (CONNECTED, SUSPENDED, RECONNECTED, LOST), `reason` |
//! | `client-N` | event | `error-reply` ([`ERROR_REPLY`]) | `lock`; `value` {script = `acquire` \| `release` \| `extend`, server}; `reason` = the reply's text: a Redis lock script call got an error reply (see [`ErrorReply`]) |
//! | `nemesis` | event | `pause` `resume` `partition` `heal` `clock-jump` `skew` `drift` `crash` `restart` | `nodes`, `value` (details) |
//!
//! Every event also carries the recording node's local clocks (`local_ns`: monotonic,
//! `wall_ms`: wall clock) when it has them, so a replay can show true time and each
//! node's local time side by side.

pub mod acquire_errors;
pub mod attempts;
pub mod edn;
pub mod names;
pub mod values;

pub use acquire_errors::{acquire_errors, AcquireErrors};
pub use attempts::{acquire_attempts, Attempt};
pub use names::ERROR_REPLY;
pub use values::EventValue;

use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;

/// The Jepsen-style type of an [`Event`].
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash,
)]
#[serde(rename_all = "lowercase")]
pub enum EventType {
    /// An operation began.
    #[default]
    Invoke,
    /// An operation completed and took effect.
    Ok,
    /// An operation completed and definitely did not take effect.
    Fail,
    /// An operation's outcome is unknown: it may take effect at any time after its invoke.
    Info,
    /// A point event observed by a server or the nemesis.
    Event,
}

impl EventType {
    /// The name used in JSONL (`"invoke"`, `"ok"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Invoke => "invoke",
            EventType::Ok => "ok",
            EventType::Fail => "fail",
            EventType::Info => "info",
            EventType::Event => "event",
        }
    }
}

/// One line of a history.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// Position in the history, from 0.
    pub index: u64,
    /// True (simulated) time in nanoseconds since the start of the run.
    pub time_ns: u64,
    /// The process (node) that recorded the event, e.g. `client-1`, `storage`, `nemesis`.
    pub process: String,
    /// Jepsen type.
    #[serde(rename = "type")]
    pub kind: EventType,
    /// The operation or event name, e.g. `acquire`, `write`, `expire`, `pause`.
    pub f: String,
    /// Lock name for lock operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock: Option<String>,
    /// Key for storage operations and server events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Operation value (read result, written value, fault details).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Fencing token, when the operation carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    /// For storage writes: whether the write was accepted (fencing may reject it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<bool>,
    /// Why: a release's reason (`done`, `expired`), a failure's cause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For storage events: the client that sent the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// For nemesis events: the nodes affected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<String>>,
    /// For a successful lease acquire: the validity the client computed, in local ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_ms: Option<u64>,
    /// The recording node's monotonic clock at the event, in nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_ns: Option<i64>,
    /// The recording node's wall clock at the event, in ms since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<i64>,
    /// `true` on a re-entrant acquire or release (`workload.reentrant`): a second acquire
    /// by the holder, and the inner release that pairs with it. Absent otherwise, so
    /// histories without re-entry are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reentrant: Option<bool>,
}

impl Event {
    /// A new event with the given process, type and f; other fields empty.
    pub fn new(process: impl Into<String>, kind: EventType, f: impl Into<String>) -> Event {
        Event {
            process: process.into(),
            kind,
            f: f.into(),
            ..Event::default()
        }
    }

    /// Builder: set `time_ns`.
    pub fn at(mut self, time_ns: u64) -> Event {
        self.time_ns = time_ns;
        self
    }

    /// Builder: set `lock`.
    pub fn lock(mut self, lock: impl Into<String>) -> Event {
        self.lock = Some(lock.into());
        self
    }

    /// Builder: mark a re-entrant acquire or release (`inner`); unmarked when false.
    pub fn reentrant(mut self, inner: bool) -> Event {
        self.reentrant = inner.then_some(true);
        self
    }

    /// Whether this is a re-entrant acquire or release.
    pub fn is_reentrant(&self) -> bool {
        self.reentrant == Some(true)
    }

    /// Builder: set `key`.
    pub fn key(mut self, key: impl Into<String>) -> Event {
        self.key = Some(key.into());
        self
    }

    /// Builder: set `token` (None leaves it empty).
    pub fn token(mut self, token: Option<u64>) -> Event {
        self.token = token;
        self
    }

    /// Builder: set `value`.
    pub fn value(mut self, value: impl Into<serde_json::Value>) -> Event {
        self.value = Some(value.into());
        self
    }

    /// Builder: set `accepted`.
    pub fn accepted(mut self, accepted: bool) -> Event {
        self.accepted = Some(accepted);
        self
    }

    /// Builder: set `reason`.
    pub fn reason(mut self, reason: impl Into<String>) -> Event {
        self.reason = Some(reason.into());
        self
    }

    /// Builder: set `client`.
    pub fn client(mut self, client: impl Into<String>) -> Event {
        self.client = Some(client.into());
        self
    }

    /// Builder: set `nodes`.
    pub fn nodes(mut self, nodes: Vec<String>) -> Event {
        self.nodes = Some(nodes);
        self
    }

    /// The value as an integer, if it is one.
    pub fn value_i64(&self) -> Option<i64> {
        self.value.as_ref().and_then(|v| v.as_i64())
    }

    /// True time in milliseconds (for messages).
    pub fn time_ms(&self) -> f64 {
        self.time_ns as f64 / 1e6
    }
}

/// What an [`ERROR_REPLY`] event says: one error reply to one lock script call, as the
/// client saw it. It is a reply the client received, so it belongs in the history beside
/// the operation it ended; the operation's own record (`fail`, `info`) is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorReply<'a> {
    /// Which lock script the call ran: `acquire`, `release` or `extend`.
    pub script: &'a str,
    /// The server that replied (`redis-0`), when the client knows which one it is.
    pub server: Option<&'a str>,
    /// The error reply's text, e.g. `ERR user_script:1: boom script: <sha>, on
    /// @user_script:1.`.
    pub text: &'a str,
}

impl<'a> ErrorReply<'a> {
    /// The event recording this reply to a call about `lock`, for `process`. Its time
    /// is the recorder's to set.
    pub fn event(&self, process: impl Into<String>, lock: &str) -> Event {
        Event::new(process, EventType::Event, ERROR_REPLY)
            .lock(lock)
            .value(serde_json::json!({"script": self.script, "server": self.server}))
            .reason(self.text)
    }

    /// The reply `e` records, if it is an [`ERROR_REPLY`] event.
    pub fn of(e: &'a Event) -> Option<ErrorReply<'a>> {
        if e.kind != EventType::Event || e.f != ERROR_REPLY {
            return None;
        }
        let value = e.value.as_ref();
        let field = |name: &str| value.and_then(|v| v.get(name)).and_then(|v| v.as_str());
        Some(ErrorReply {
            script: field("script").unwrap_or("?"),
            server: field("server"),
            text: e.reason.as_deref().unwrap_or(""),
        })
    }
}

/// A whole history, in recording order (which is true-time order).
pub type History = Vec<Event>;

/// Shared, append-only recorder used by every node of a run. Cloning shares the buffer.
///
/// A run is single-threaded (turmoil), so `Rc<RefCell<_>>` is enough and keeps the order
/// of events exactly the order in which the simulation produced them.
#[derive(Clone, Default)]
pub struct Recorder {
    events: Rc<RefCell<Vec<Event>>>,
    /// Where events go instead, if set (a live client process streams them to locksim).
    sink: Option<Sink>,
}

/// Where a forwarding [`Recorder`] hands its events.
type Sink = Rc<dyn Fn(&Event)>;

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        Recorder::default()
    }

    /// A recorder that keeps nothing and hands every event to `sink` as it is pushed.
    pub fn forwarding(sink: impl Fn(&Event) + 'static) -> Recorder {
        Recorder {
            events: Rc::default(),
            sink: Some(Rc::new(sink)),
        }
    }

    /// Append `event`, assigning its index. `time_ns` must already be set.
    pub fn push(&self, mut event: Event) {
        if let Some(sink) = &self.sink {
            return sink(&event);
        }
        let mut events = self.events.borrow_mut();
        event.index = events.len() as u64;
        events.push(event);
    }

    /// Take a copy of everything recorded so far.
    pub fn snapshot(&self) -> History {
        self.events.borrow().clone()
    }

    /// Take everything recorded, leaving the recorder empty.
    pub fn take(&self) -> History {
        std::mem::take(&mut *self.events.borrow_mut())
    }

    /// The most recent operation record (invoke, ok, fail or info: not a point event) of
    /// `process`, if any. A client's point events (a Redlock majority, a Curator
    /// connection state) can follow its last invoke without completing it.
    pub fn last_op_of(&self, process: &str) -> Option<Event> {
        self.events
            .borrow()
            .iter()
            .rev()
            .find(|e| e.process == process && e.kind != EventType::Event)
            .cloned()
    }

    /// Number of events recorded so far.
    pub fn len(&self) -> usize {
        self.events.borrow().len()
    }

    /// Whether nothing has been recorded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Serialise a history as JSONL (one event per line, trailing newline).
pub fn to_jsonl(history: &[Event]) -> String {
    let mut out = String::with_capacity(history.len() * 128);
    for e in history {
        // Serialising our own struct cannot fail.
        out.push_str(&serde_json::to_string(e).expect("event serialises"));
        out.push('\n');
    }
    out
}

/// Parse a JSONL history. Errors name the 1-based line and what was wrong.
pub fn from_jsonl(text: &str) -> Result<History, JsonlError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let e: Event =
            serde_json::from_str(line).map_err(|error| JsonlError { line: i + 1, error })?;
        out.push(e);
    }
    Ok(out)
}

/// A line of a JSONL history that is not an event.
#[derive(Debug)]
pub struct JsonlError {
    /// 1-based line.
    pub line: usize,
    /// What JSON found wrong.
    pub error: serde_json::Error,
}

impl std::fmt::Display for JsonlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.error)
    }
}

impl std::error::Error for JsonlError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// A stable 64-bit FNV-1a hash of a history's JSONL bytes (for determinism checks).
pub fn hash(history: &[Event]) -> u64 {
    fnv1a(to_jsonl(history).as_bytes())
}

/// FNV-1a over bytes: stable across machines and Rust versions, unlike `DefaultHasher`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_round_trip() {
        let r = Recorder::new();
        r.push(
            Event::new("client-1", EventType::Invoke, "acquire")
                .at(5)
                .lock("L"),
        );
        r.push(
            Event::new("client-1", EventType::Ok, "acquire")
                .at(9)
                .lock("L")
                .token(Some(34)),
        );
        let h = r.take();
        assert_eq!(h[1].index, 1);
        let text = to_jsonl(&h);
        assert!(text.starts_with(
            r#"{"index":0,"time_ns":5,"process":"client-1","type":"invoke","f":"acquire","lock":"L"}"#
        ));
        assert_eq!(from_jsonl(&text).unwrap(), h);
        assert_eq!(hash(&h), hash(&from_jsonl(&text).unwrap()));
    }

    #[test]
    fn error_replies_round_trip_through_their_event() {
        let reply = ErrorReply {
            script: "acquire",
            server: Some("redis-0"),
            text: "ERR user_script:1: boom",
        };
        let e = reply.event("client-1", "L");
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"index":0,"time_ns":0,"process":"client-1","type":"event","f":"error-reply","lock":"L","value":{"script":"acquire","server":"redis-0"},"reason":"ERR user_script:1: boom"}"#
        );
        assert_eq!(ErrorReply::of(&e), Some(reply));
        assert_eq!(
            ErrorReply::of(&Event::new("client-1", EventType::Event, "majority")),
            None
        );
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        let err = from_jsonl("\n{\"index\":0}\n").unwrap_err().to_string();
        assert!(err.starts_with("line 2:"), "{err}");
        let err = from_jsonl(r#"{"index":0,"time_ns":1,"process":"p","type":"bogus","f":"x"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1"), "{err}");
    }
}
