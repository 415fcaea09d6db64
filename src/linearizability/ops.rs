//! From recorded events (Jepsen EDN or locksim JSONL) to model-independent operations
//! ([`RawOp`]): invocations paired with completions, `:fail` dropped, `:info` and missing
//! completions indeterminate. See the module docs of `linearizability` for the rules.

use super::model::INDETERMINATE;
use crate::edn::{self, Value};
use crate::history::{Event, EventType};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::fmt::Write;

/// A history that cannot be checked: which file, which line, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The file, when reading one (empty otherwise).
    pub file: String,
    /// 1-based line (0 when the problem is not tied to a line).
    pub line: usize,
    /// What was wrong.
    pub reason: String,
}

impl InputError {
    /// An error at `line` (no file yet).
    pub fn new(line: usize, reason: impl Into<String>) -> InputError {
        InputError {
            file: String::new(),
            line,
            reason: reason.into(),
        }
    }

    /// The same error, naming `file`.
    pub fn in_file(mut self, file: impl Into<String>) -> InputError {
        self.file = file.into();
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file.is_empty(), self.line) {
            (true, 0) => write!(f, "{}", self.reason),
            (true, l) => write!(f, "line {l}: {}", self.reason),
            (false, 0) => write!(f, "{}: {}", self.file, self.reason),
            (false, l) => write!(f, "{}:{l}: {}", self.file, self.reason),
        }
    }
}

impl std::error::Error for InputError {}

/// One operation of a history, before a model interprets it.
#[derive(Clone, Debug, PartialEq)]
pub struct RawOp {
    /// Process name (`"3"` for Jepsen process 3, `"client-1"`).
    pub process: String,
    /// Operation name, without a colon (`read`, `cas`, `acquire`, `expire`).
    pub f: String,
    /// The completion's value when it completed `ok`, else the invocation's value.
    pub value: Value,
    /// Position of the invocation (events are numbered in file order).
    pub call: u64,
    /// Position of the completion, or [`INDETERMINATE`].
    pub ret: u64,
    /// 1-based source line of the invocation.
    pub line: usize,
    /// True time of the invocation in ns, when recorded.
    pub call_ns: Option<u64>,
    /// True time of the completion in ns, when recorded.
    pub ret_ns: Option<u64>,
    /// Lock name or key (`lock`, else `key`), when recorded.
    pub key: Option<String>,
    /// Fencing token (completion's, else invocation's), when recorded.
    pub token: Option<u64>,
    /// For writes to fenced storage: whether it was accepted.
    pub accepted: Option<bool>,
    /// A point event (a server's `event` or its own log of a served request).
    pub point: bool,
}

impl RawOp {
    /// Whether the operation may take effect at any time after its call, or never.
    pub fn is_indeterminate(&self) -> bool {
        self.ret == INDETERMINATE
    }
}

/// One event before pairing.
struct RawEvent {
    line: usize,
    kind: EventType,
    process: String,
    f: String,
    value: Value,
    time_ns: Option<u64>,
    key: Option<String>,
    token: Option<u64>,
    accepted: Option<bool>,
}

/// Pair invocations with completions. `ok` completions from a process that never invokes
/// and whose name is not an integer (a server's own log, such as `storage`) become point
/// operations; any other completion without an invoke is an error.
fn pair(events: Vec<RawEvent>) -> Result<Vec<RawOp>, InputError> {
    let invokers: std::collections::HashSet<String> = events
        .iter()
        .filter(|e| e.kind == EventType::Invoke)
        .map(|e| e.process.clone())
        .collect();
    // Ops in invocation order; `None` for dropped (failed) ones.
    let mut out: Vec<Option<RawOp>> = Vec::with_capacity(events.len() / 2 + 1);
    let mut pending: HashMap<String, usize> = HashMap::new();
    for (pos, e) in events.into_iter().enumerate() {
        let pos = pos as u64;
        match e.kind {
            EventType::Invoke => {
                if let Some(&prev) = pending.get(&e.process) {
                    let prev_line = out[prev].as_ref().map_or(0, |o| o.line);
                    return Err(InputError::new(
                        e.line,
                        format!(
                            "process {} invokes {} while its {} invoked on line {prev_line} has not completed",
                            e.process,
                            e.f,
                            out[prev].as_ref().map_or("operation", |o| o.f.as_str()),
                        ),
                    ));
                }
                pending.insert(e.process.clone(), out.len());
                out.push(Some(RawOp {
                    process: e.process,
                    f: e.f,
                    value: e.value,
                    call: pos,
                    ret: INDETERMINATE,
                    line: e.line,
                    call_ns: e.time_ns,
                    ret_ns: None,
                    key: e.key,
                    token: e.token,
                    accepted: e.accepted,
                    point: false,
                }));
            }
            EventType::Ok | EventType::Fail | EventType::Info => {
                let idx = match pending.remove(&e.process) {
                    Some(i) => i,
                    None if !invokers.contains(&e.process) && e.process.parse::<i64>().is_err() => {
                        if e.kind == EventType::Ok {
                            out.push(Some(point_op(e, pos)));
                        }
                        continue;
                    }
                    None => {
                        return Err(InputError::new(
                            e.line,
                            format!(
                                "{} completion of {} by process {} without an invoke",
                                e.kind.as_str(),
                                e.f,
                                e.process
                            ),
                        ))
                    }
                };
                let op = out[idx].as_mut().expect("pending ops are present");
                if op.f != e.f {
                    return Err(InputError::new(
                        e.line,
                        format!(
                            "completion :f {} does not match the invoke :f {} on line {}",
                            e.f, op.f, op.line
                        ),
                    ));
                }
                match e.kind {
                    EventType::Ok => {
                        op.ret = pos;
                        op.ret_ns = e.time_ns;
                        op.value = e.value;
                        if e.key.is_some() {
                            op.key = e.key;
                        }
                        if e.token.is_some() {
                            op.token = e.token;
                        }
                        if e.accepted.is_some() {
                            op.accepted = e.accepted;
                        }
                    }
                    EventType::Fail => out[idx] = None,
                    _ => {} // info: stays indeterminate, keeps the invoke's value
                }
            }
            EventType::Event => out.push(Some(point_op(e, pos))),
        }
    }
    Ok(out.into_iter().flatten().collect())
}

fn point_op(e: RawEvent, pos: u64) -> RawOp {
    RawOp {
        process: e.process,
        f: e.f,
        value: e.value,
        call: pos,
        ret: pos,
        line: e.line,
        call_ns: e.time_ns,
        ret_ns: e.time_ns,
        key: e.key,
        token: e.token,
        accepted: e.accepted,
        point: true,
    }
}

fn name_of(v: &Value) -> Option<String> {
    match v {
        Value::Keyword(s) | Value::Symbol(s) | Value::Str(s) => Some(s.clone()),
        _ => None,
    }
}

/// Read a Jepsen EDN history (a vector of maps, or one map per line) into operations.
pub fn raw_ops_from_edn(text: &str) -> Result<Vec<RawOp>, InputError> {
    let forms = edn::read_history_forms(text).map_err(|e| InputError::new(e.line, e.message))?;
    let mut events = Vec::with_capacity(forms.len());
    for (line, form) in forms {
        let bad = |why: &str| InputError::new(line, format!("{why}: {form}"));
        let map = match &form {
            Value::Map(_) => &form,
            Value::Tagged(_, inner) if matches!(**inner, Value::Map(_)) => inner,
            _ => return Err(bad("expected an operation map")),
        };
        let process = match map.get("process") {
            Some(Value::Int(i)) => i.to_string(),
            Some(Value::Str(s)) => s.clone(),
            Some(Value::Keyword(_)) => continue, // :nemesis and friends: not clients
            Some(Value::Symbol(s)) => s.clone(),
            _ => return Err(bad("operation without an integer or string :process")),
        };
        let kind = match map.get("type").and_then(Value::as_keyword) {
            Some("invoke") => EventType::Invoke,
            Some("ok") => EventType::Ok,
            Some("fail") => EventType::Fail,
            Some("info") => EventType::Info,
            Some("event") => EventType::Event,
            _ => return Err(bad("operation without :type :invoke, :ok, :fail or :info")),
        };
        let f = match map.get("f").and_then(name_of) {
            Some(f) => f,
            None => return Err(bad("operation without an :f")),
        };
        let time_ns = map
            .get("time")
            .and_then(Value::as_int)
            .and_then(|t| u64::try_from(t).ok());
        let key = map
            .get("lock")
            .or_else(|| map.get("key"))
            .and_then(|v| name_of(v).or_else(|| v.as_int().map(|i| i.to_string())));
        let token = map
            .get("token")
            .and_then(Value::as_int)
            .and_then(|t| u64::try_from(t).ok());
        let accepted = match map.get("accepted") {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        };
        events.push(RawEvent {
            line,
            kind,
            process,
            f,
            value: map.get("value").cloned().unwrap_or(Value::Nil),
            time_ns,
            key,
            token,
            accepted,
        });
    }
    pair(events)
}

fn event_to_raw(e: Event, line: usize) -> RawEvent {
    RawEvent {
        line,
        kind: e.kind,
        process: e.process,
        f: e.f,
        value: e.value.as_ref().map_or(Value::Nil, Value::from_json),
        time_ns: Some(e.time_ns),
        key: e.lock.or(e.key),
        token: e.token,
        accepted: e.accepted,
    }
}

/// Operations from locksim [`Event`]s (line numbers are positions + 1).
pub fn raw_ops_from_events(events: &[Event]) -> Result<Vec<RawOp>, InputError> {
    let raw = events
        .iter()
        .enumerate()
        .map(|(i, e)| event_to_raw(e.clone(), i + 1))
        .collect();
    pair(raw)
}

/// The fields of a JSONL event the checker needs, borrowed where possible.
#[derive(Deserialize)]
struct LiteEvent<'a> {
    #[serde(default)]
    time_ns: Option<u64>,
    #[serde(borrow)]
    process: std::borrow::Cow<'a, str>,
    #[serde(rename = "type")]
    kind: EventType,
    #[serde(borrow)]
    f: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    lock: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    key: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    value: Option<serde_json::Value>,
    #[serde(default)]
    token: Option<u64>,
    #[serde(default)]
    accepted: Option<bool>,
}

/// Read a locksim JSONL history into operations. Lines must be [`Event`]s; fields the
/// checker does not use are ignored.
pub fn raw_ops_from_jsonl(text: &str) -> Result<Vec<RawOp>, InputError> {
    let mut raw = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let e: LiteEvent =
            serde_json::from_str(line).map_err(|err| InputError::new(i + 1, err.to_string()))?;
        raw.push(RawEvent {
            line: i + 1,
            kind: e.kind,
            process: e.process.into_owned(),
            f: e.f.into_owned(),
            value: e.value.as_ref().map_or(Value::Nil, Value::from_json),
            time_ns: e.time_ns,
            key: e.lock.or(e.key).map(|k| k.into_owned()),
            token: e.token,
            accepted: e.accepted,
        });
    }
    pair(raw)
}

/// Write locksim events as a Jepsen-style EDN history (one map per line inside a vector):
/// `{:index 12, :time 1503000000, :process "client-1", :type :invoke, :f :acquire, ...}`.
/// Optional fields are written only when present; [`raw_ops_from_edn`] reads it back.
pub fn events_to_edn(events: &[Event]) -> String {
    let mut s = String::with_capacity(events.len() * 96 + 4);
    s.push('[');
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            s.push_str("\n ");
        }
        let _ = write!(
            s,
            "{{:index {}, :time {}, :process {}, :type :{}, :f :{}",
            e.index,
            e.time_ns,
            Value::Str(e.process.clone()),
            e.kind.as_str(),
            e.f
        );
        if let Some(l) = &e.lock {
            let _ = write!(s, ", :lock {}", Value::Str(l.clone()));
        }
        if let Some(k) = &e.key {
            let _ = write!(s, ", :key {}", Value::Str(k.clone()));
        }
        let v = e.value.as_ref().map_or(Value::Nil, Value::from_json);
        let _ = write!(s, ", :value {v}");
        if let Some(t) = e.token {
            let _ = write!(s, ", :token {t}");
        }
        if let Some(a) = e.accepted {
            let _ = write!(s, ", :accepted {a}");
        }
        if let Some(r) = &e.reason {
            let _ = write!(s, ", :reason {}", Value::Str(r.clone()));
        }
        if let Some(c) = &e.client {
            let _ = write!(s, ", :client {}", Value::Str(c.clone()));
        }
        s.push('}');
    }
    s.push_str("]\n");
    s
}

/// The index of process `name` in `names`, adding it when new.
pub(crate) fn intern_process<'a>(
    map: &mut HashMap<&'a str, u32>,
    names: &mut Vec<String>,
    name: &'a str,
) -> u32 {
    if let Some(&p) = map.get(name) {
        return p;
    }
    let p = names.len() as u32;
    names.push(name.to_string());
    map.insert(name, p);
    p
}
