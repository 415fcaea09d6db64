//! From recorded events (Jepsen EDN or locksim JSONL) to model-independent operations
//! ([`RawOp`]): invocations paired with completions, `:fail` dropped, `:info` and missing
//! completions indeterminate. See the module docs of `linearizability` for the rules.

use super::model::INDETERMINATE;
use super::search::FxHasher;
use crate::edn::{self, Value};
use crate::history::{Event, EventType};
use serde::Deserialize;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fmt::Write;
use std::hash::BuildHasherDefault;
use std::sync::Arc;

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

    /// The `locksim check` exit code for bad input: 2.
    pub fn exit_code(&self) -> i32 {
        2
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
    pub process: Arc<str>,
    /// Operation name, without a colon (`read`, `cas`, `acquire`, `expire`).
    pub f: Arc<str>,
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
    pub key: Option<Arc<str>>,
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
    process: Arc<str>,
    f: Arc<str>,
    value: Value,
    time_ns: Option<u64>,
    key: Option<Arc<str>>,
    token: Option<u64>,
    accepted: Option<bool>,
}

type FxBuild = BuildHasherDefault<FxHasher>;

/// Shares one allocation per distinct name (processes, `f`s, keys).
#[derive(Default)]
struct Interner {
    names: HashMap<Box<str>, Arc<str>, FxBuild>,
}

impl Interner {
    fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(a) = self.names.get(s) {
            return a.clone();
        }
        let a: Arc<str> = Arc::from(s);
        self.names.insert(s.into(), a.clone());
        a
    }
}

/// Pairs invocations with completions as events stream in. `ok` completions from a
/// process that never invokes and whose name is not an integer (a server's own log, such
/// as `storage`) become point operations; any other completion without an invoke is an
/// error, reported for the earliest line.
#[derive(Default)]
struct Pairer {
    out: Vec<Option<RawOp>>,
    pending: HashMap<Arc<str>, usize, FxBuild>,
    invoked: HashSet<Arc<str>, FxBuild>,
    /// Completions without an invoke: (line, process, message).
    orphans: Vec<(usize, Arc<str>, String)>,
    pos: u64,
}

impl Pairer {
    fn orphan_error(&self, before: usize) -> Option<InputError> {
        self.orphans
            .iter()
            .find(|(line, p, _)| *line < before && self.invoked.contains(p))
            .map(|(line, _, msg)| InputError::new(*line, msg.clone()))
    }

    fn push(&mut self, e: RawEvent) -> Result<(), InputError> {
        let pos = self.pos;
        self.pos += 1;
        match e.kind {
            EventType::Invoke => {
                if !self.invoked.contains(&e.process) {
                    self.invoked.insert(e.process.clone());
                }
                if let Some(&prev) = self.pending.get(&e.process) {
                    if let Some(err) = self.orphan_error(e.line) {
                        return Err(err);
                    }
                    let (prev_line, prev_f) = self.out[prev]
                        .as_ref()
                        .map_or((0, "operation"), |o| (o.line, &*o.f));
                    return Err(InputError::new(
                        e.line,
                        format!(
                            "process {} invokes {} while its {prev_f} invoked on line {prev_line} has not completed",
                            e.process, e.f,
                        ),
                    ));
                }
                self.pending.insert(e.process.clone(), self.out.len());
                self.out.push(Some(RawOp {
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
                let idx = match self.pending.remove(&e.process) {
                    Some(i) => i,
                    None => {
                        let msg = format!(
                            "{} completion of {} by process {} without an invoke",
                            e.kind.as_str(),
                            e.f,
                            e.process
                        );
                        if e.process.parse::<i64>().is_ok() || self.invoked.contains(&e.process) {
                            return Err(self
                                .orphan_error(e.line)
                                .unwrap_or_else(|| InputError::new(e.line, msg)));
                        }
                        self.orphans.push((e.line, e.process.clone(), msg));
                        if e.kind == EventType::Ok {
                            self.out.push(Some(point_op(e, pos)));
                        }
                        return Ok(());
                    }
                };
                let op = self.out[idx].as_mut().expect("pending ops are present");
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
                    EventType::Fail => self.out[idx] = None,
                    _ => {} // info: stays indeterminate, keeps the invoke's value
                }
            }
            EventType::Event => self.out.push(Some(point_op(e, pos))),
        }
        Ok(())
    }

    fn finish(self) -> Result<Vec<RawOp>, InputError> {
        if let Some(err) = self.orphan_error(usize::MAX) {
            return Err(err);
        }
        Ok(self.out.into_iter().flatten().collect())
    }
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
    let mut names = Interner::default();
    let mut pairer = Pairer::default();
    for form in edn::HistoryForms::new(text) {
        let (line, form) = form.map_err(|e| InputError::new(e.line, e.message))?;
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
        pairer.push(RawEvent {
            line,
            kind,
            process: names.get(&process),
            f: names.get(&f),
            value: map.get("value").cloned().unwrap_or(Value::Nil),
            time_ns,
            key: key.map(|k| names.get(&k)),
            token,
            accepted,
        })?;
    }
    pairer.finish()
}

fn event_to_raw(e: &Event, line: usize, names: &mut Interner) -> RawEvent {
    RawEvent {
        line,
        kind: e.kind,
        process: names.get(&e.process),
        f: names.get(&e.f),
        value: e.value.as_ref().map_or(Value::Nil, Value::from_json),
        time_ns: Some(e.time_ns),
        key: e.lock.as_ref().or(e.key.as_ref()).map(|k| names.get(k)),
        token: e.token,
        accepted: e.accepted,
    }
}

/// Operations from locksim [`Event`]s (line numbers are positions + 1).
pub fn raw_ops_from_events(events: &[Event]) -> Result<Vec<RawOp>, InputError> {
    let mut names = Interner::default();
    let mut p = Pairer::default();
    for (i, e) in events.iter().enumerate() {
        p.push(event_to_raw(e, i + 1, &mut names))?;
    }
    p.finish()
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
    let mut names = Interner::default();
    let mut p = Pairer::default();
    p.out.reserve(text.len() / 200 + 1);
    for (i, line) in text.lines().enumerate() {
        jsonl_line(line, i + 1, &mut names, &mut p)?;
    }
    p.finish()
}

/// [`raw_ops_from_jsonl`] over a reader, one line at a time (a large file never sits in
/// memory as text).
pub fn raw_ops_from_jsonl_reader(reader: impl std::io::BufRead) -> Result<Vec<RawOp>, InputError> {
    let mut names = Interner::default();
    let mut p = Pairer::default();
    let mut reader = reader;
    let mut line = String::new();
    let mut lineno = 0;
    loop {
        line.clear();
        lineno += 1;
        match reader.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => jsonl_line(
                line.trim_end_matches(['\n', '\r']),
                lineno,
                &mut names,
                &mut p,
            )?,
            Err(e) => return Err(InputError::new(lineno, format!("cannot read: {e}"))),
        }
    }
    p.finish()
}

fn jsonl_line(
    line: &str,
    lineno: usize,
    names: &mut Interner,
    p: &mut Pairer,
) -> Result<(), InputError> {
    if line.trim().is_empty() {
        return Ok(());
    }
    let e = match fast_event(line, lineno, names) {
        Some(e) => e,
        None => slow_event(line, lineno, names)?,
    };
    p.push(e)
}

fn slow_event(line: &str, lineno: usize, names: &mut Interner) -> Result<RawEvent, InputError> {
    let e: LiteEvent =
        serde_json::from_str(line).map_err(|err| InputError::new(lineno, err.to_string()))?;
    Ok(RawEvent {
        line: lineno,
        kind: e.kind,
        process: names.get(&e.process),
        f: names.get(&e.f),
        value: e.value.as_ref().map_or(Value::Nil, Value::from_json),
        time_ns: e.time_ns,
        key: e.lock.or(e.key).map(|k| names.get(&k)),
        token: e.token,
        accepted: e.accepted,
    })
}

/// A scanner for the common shape of a JSONL event line: a flat object whose strings
/// have no escapes. Returns None on anything else, and the serde path then reads (or
/// rejects, with a precise message) the line.
fn fast_event(line: &str, lineno: usize, names: &mut Interner) -> Option<RawEvent> {
    let b = line.as_bytes();
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\r') {
            *i += 1;
        }
    };
    let string = |i: &mut usize| -> Option<&str> {
        if b.get(*i) != Some(&b'"') {
            return None;
        }
        let start = *i + 1;
        let mut j = start;
        while j < b.len() && b[j] != b'"' {
            if b[j] == b'\\' || b[j] < 0x20 {
                return None;
            }
            j += 1;
        }
        if j >= b.len() {
            return None;
        }
        *i = j + 1;
        line.get(start..j)
    };
    let number = |i: &mut usize| -> Option<u64> {
        let start = *i;
        let mut v: u64 = 0;
        while *i < b.len() && b[*i].is_ascii_digit() {
            v = v.checked_mul(10)?.checked_add((b[*i] - b'0') as u64)?;
            *i += 1;
        }
        if *i == start || (b[start] == b'0' && *i - start > 1) {
            return None;
        }
        match b.get(*i) {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(v),
        }
    };
    ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let (mut time_ns, mut process, mut kind, mut f) = (None, None, None, None);
    let (mut lock, mut key, mut value, mut token, mut accepted) = (None, None, None, None, None);
    ws(&mut i);
    if b.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        ws(&mut i);
        let k = string(&mut i)?;
        ws(&mut i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        ws(&mut i);
        match k {
            "time_ns" => time_ns = Some(number(&mut i)?),
            "process" => process = Some(string(&mut i)?),
            "type" => {
                kind = Some(match string(&mut i)? {
                    "invoke" => EventType::Invoke,
                    "ok" => EventType::Ok,
                    "fail" => EventType::Fail,
                    "info" => EventType::Info,
                    "event" => EventType::Event,
                    _ => return None,
                })
            }
            "f" => f = Some(string(&mut i)?),
            "lock" | "key" => {
                let v = if b.get(i) == Some(&b'n') {
                    if !line[i..].starts_with("null") {
                        return None;
                    }
                    i += 4;
                    None
                } else {
                    Some(string(&mut i)?)
                };
                if k == "lock" {
                    lock = v;
                } else {
                    key = v;
                }
            }
            "token" => {
                if line[i..].starts_with("null") {
                    i += 4;
                } else {
                    token = Some(number(&mut i)?);
                }
            }
            "accepted" => {
                if line[i..].starts_with("true") {
                    accepted = Some(true);
                    i += 4;
                } else if line[i..].starts_with("false") {
                    accepted = Some(false);
                    i += 5;
                } else if line[i..].starts_with("null") {
                    i += 4;
                } else {
                    return None;
                }
            }
            "value" => {
                value = Some(match b.get(i)? {
                    b'"' => Value::Str(string(&mut i)?.to_string()),
                    b'n' if line[i..].starts_with("null") => {
                        i += 4;
                        Value::Nil
                    }
                    b'0'..=b'9' => Value::Int(i64::try_from(number(&mut i)?).ok()?),
                    _ => return None,
                })
            }
            "index" | "valid_ms" => {
                number(&mut i)?;
            }
            "reason" | "client" => {
                if line[i..].starts_with("null") {
                    i += 4;
                } else {
                    string(&mut i)?;
                }
            }
            _ => return None,
        }
        ws(&mut i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {
                i += 1;
                break;
            }
            _ => return None,
        }
    }
    ws(&mut i);
    if i != b.len() {
        return None;
    }
    Some(RawEvent {
        line: lineno,
        kind: kind?,
        process: names.get(process?),
        f: names.get(f?),
        value: value.unwrap_or(Value::Nil),
        time_ns,
        key: lock.or(key).map(|k| names.get(k)),
        token,
        accepted,
    })
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
