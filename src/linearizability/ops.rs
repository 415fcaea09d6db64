//! From recorded events (Jepsen EDN or locksim JSONL) to model-independent operations
//! ([`RawOp`]): invocations paired with completions, `:fail` dropped, `:info` and missing
//! completions indeterminate. See the module docs of `linearizability` for the rules.

use super::memo::FxHasher;
use super::model::INDETERMINATE;
use crate::history::edn::{self, Value};
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
    /// Recorded as `type: event`: something a server or the nemesis observed, which
    /// models that do not know its `f` skip (see [`skip_or_reject`]).
    pub event: bool,
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
    /// The recorded position (`index`), when present.
    index: Option<u64>,
    /// Whether it names the client it served (`client`): a server's log of a request.
    served: bool,
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
    /// Server log lines (completions without an invoke that name a client):
    /// (line, process, message); an error if the process turns out to invoke.
    orphans: Vec<(usize, Arc<str>, String)>,
    pos: u64,
    /// Whether to check recorded indices and times (files; a run's events are recorded
    /// in order by construction, and hand-built ones often carry none).
    check_stamps: bool,
    /// The last recorded index and time, with their lines.
    last_index: Option<(u64, usize)>,
    last_time: Option<(u64, usize)>,
}

impl Pairer {
    /// A pairer for a history read from a file: recorded indices and times are checked.
    fn for_file() -> Pairer {
        Pairer {
            check_stamps: true,
            ..Pairer::default()
        }
    }

    fn orphan_error(&self, before: usize) -> Option<InputError> {
        self.orphans
            .iter()
            .find(|(line, p, _)| *line < before && self.invoked.contains(p))
            .map(|(line, _, msg)| InputError::new(*line, msg.clone()))
    }

    /// Recorded positions must increase and recorded times must not go back: the
    /// checker takes the order of the lines as real-time order, so a history whose own
    /// stamps contradict it is malformed. (Indices may skip: a filtered history, such as
    /// the storage's lines of a run, keeps the run's indices.)
    fn check_order(&mut self, e: &RawEvent) -> Result<(), InputError> {
        if let Some(i) = e.index {
            if let Some((prev, line)) = self.last_index {
                if i <= prev {
                    return Err(InputError::new(
                        e.line,
                        format!(
                            "index {i} does not follow index {prev} of line {line}: events must be listed in the order they happened, with increasing indices"
                        ),
                    ));
                }
            }
            self.last_index = Some((i, e.line));
        }
        if let Some(t) = e.time_ns {
            if let Some((prev, line)) = self.last_time {
                if t < prev {
                    return Err(InputError::new(
                        e.line,
                        format!(
                            "time {t} ns is earlier than time {prev} ns of line {line}: events must be listed in true-time order"
                        ),
                    ));
                }
            }
            self.last_time = Some((t, e.line));
        }
        Ok(())
    }

    fn push(&mut self, e: RawEvent) -> Result<(), InputError> {
        if self.check_stamps {
            self.check_order(&e)?;
        }
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
                    event: false,
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
                        // A server's own log of a request it served (locksim's storage)
                        // is `ok` without an invoke, and names the client it served.
                        let log = e.kind == EventType::Ok && e.served;
                        if !log
                            || e.process.parse::<i64>().is_ok()
                            || self.invoked.contains(&e.process)
                        {
                            let hint = if e.kind == EventType::Ok && !e.served {
                                " (a server's log line of a request it served must name the client)"
                            } else {
                                ""
                            };
                            return Err(self.orphan_error(e.line).unwrap_or_else(|| {
                                InputError::new(e.line, format!("{msg}{hint}"))
                            }));
                        }
                        self.orphans.push((e.line, e.process.clone(), msg));
                        self.out.push(Some(point_op(e, pos, false)));
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
            EventType::Event => self.out.push(Some(point_op(e, pos, true))),
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

fn point_op(e: RawEvent, pos: u64, event: bool) -> RawOp {
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
        event,
    }
}

/// For a model that does not know `r.f`: Ok when the operation is to be skipped — a
/// point event (`type: event`: an observation, such as the nemesis's), or an operation
/// of another object that locksim records in the same history (`others`) — else an
/// error naming what the model expects.
pub(crate) fn skip_or_reject(
    r: &RawOp,
    model: &str,
    known: &[&str],
    others: &[&str],
) -> Result<(), InputError> {
    if r.event || others.contains(&&*r.f) {
        return Ok(());
    }
    let list = |names: &[&str]| match names {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    };
    let skipped = if others.is_empty() {
        "point events (type event) are skipped".to_string()
    } else {
        format!(
            "{} (other objects' operations) and point events (type event) are skipped",
            list(others)
        )
    };
    Err(InputError::new(
        r.line,
        format!(
            "operation :{} (process {}) is not one the {model} model knows: expected {}; {skipped}",
            r.f,
            r.process,
            list(known),
        ),
    ))
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
    let mut pairer = Pairer::for_file();
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
        let index = map
            .get("index")
            .and_then(Value::as_int)
            .and_then(|t| u64::try_from(t).ok());
        pairer.push(RawEvent {
            line,
            index,
            served: map.get("client").is_some_and(|c| !c.is_nil()),
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
        index: Some(e.index),
        served: e.client.is_some(),
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
    index: Option<u64>,
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
    #[serde(default)]
    client: Option<serde_json::Value>,
}

/// Any JSON value in which no object has a key twice (serde_json keeps the last of
/// duplicate keys; a history with two `type`s or two `value`s is malformed).
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeys)
    }
}

impl<'de> serde::de::Visitor<'de> for NoDuplicateKeys {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        let mut seen: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
        while let Some(k) = map.next_key::<String>()? {
            map.next_value::<NoDuplicateKeys>()?;
            if let Some(k) = seen.replace(k) {
                return Err(serde::de::Error::custom(format!("duplicate key {k:?}")));
            }
        }
        Ok(NoDuplicateKeys)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_none<E>(self) -> Result<Self, E> {
        Ok(NoDuplicateKeys)
    }
}

/// Read a locksim JSONL history into operations. Lines must be [`Event`]s (one JSON
/// object per line, no key twice); fields the checker does not use are ignored.
pub fn raw_ops_from_jsonl(text: &str) -> Result<Vec<RawOp>, InputError> {
    let mut names = Interner::default();
    let mut p = Pairer::for_file();
    p.out.reserve(text.len() / 200 + 1);
    for (i, line) in text.lines().enumerate() {
        jsonl_line(line, i + 1, &mut names, &mut p)?;
    }
    p.finish()
}

/// [`raw_ops_from_jsonl`] over a reader, one line at a time (a large file never sits in
/// memory as text). A line that is not UTF-8 is an error naming the line.
pub fn raw_ops_from_jsonl_reader(reader: impl std::io::BufRead) -> Result<Vec<RawOp>, InputError> {
    let mut names = Interner::default();
    let mut p = Pairer::for_file();
    let mut reader = reader;
    let mut buf: Vec<u8> = Vec::new();
    let mut lineno = 0;
    loop {
        buf.clear();
        lineno += 1;
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {
                let line = std::str::from_utf8(&buf).map_err(|e| {
                    InputError::new(
                        lineno,
                        format!(
                            "not valid UTF-8 (byte {} of the line); a history is UTF-8 text",
                            e.valid_up_to() + 1
                        ),
                    )
                })?;
                jsonl_line(
                    line.trim_end_matches(['\n', '\r']),
                    lineno,
                    &mut names,
                    &mut p,
                )?
            }
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

/// Whether a line that is not a JSON object looks like Jepsen EDN (`{:process 0 ...}`,
/// `[{:type ...`, a comment).
fn looks_like_edn(line: &str) -> bool {
    let t = line
        .trim_start()
        .trim_start_matches(['[', '('])
        .trim_start();
    t.starts_with("{:") || t.starts_with(';') || t.starts_with("#jepsen") || t.starts_with(":")
}

fn slow_event(line: &str, lineno: usize, names: &mut Interner) -> Result<RawEvent, InputError> {
    let bad = |why: String| InputError::new(lineno, why);
    if looks_like_edn(line) {
        return Err(bad(
            "expected a locksim JSONL event (one JSON object per line), but this looks like Jepsen EDN; give EDN histories a .edn file name".into(),
        ));
    }
    if !line.trim_start().starts_with('{') {
        return Err(bad(
            "expected a locksim JSONL event: one JSON object per line".into(),
        ));
    }
    serde_json::from_str::<NoDuplicateKeys>(line)
        .map_err(|err| bad(format!("malformed JSON: {err}")))?;
    let e: LiteEvent =
        serde_json::from_str(line).map_err(|err| bad(format!("not a locksim event: {err}")))?;
    Ok(RawEvent {
        line: lineno,
        index: e.index,
        served: e.client.is_some_and(|c| !c.is_null()),
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
/// have no escapes and whose keys are all different. Returns None on anything else, and
/// the serde path then reads (or rejects, with a precise message) the line.
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
    let (mut index, mut time_ns, mut process, mut kind, mut f) = (None, None, None, None, None);
    let (mut lock, mut key, mut value, mut token, mut accepted) = (None, None, None, None, None);
    let mut served = false;
    // Keys seen, one bit each (a duplicate goes to the serde path, which rejects it).
    let mut seen: u16 = 0;
    let mut once = |bit: u16| -> Option<()> {
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        Some(())
    };
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
            "index" => {
                once(1 << 0)?;
                index = Some(number(&mut i)?);
            }
            "time_ns" => {
                once(1 << 1)?;
                time_ns = Some(number(&mut i)?);
            }
            "process" => {
                once(1 << 2)?;
                process = Some(string(&mut i)?);
            }
            "type" => {
                once(1 << 3)?;
                kind = Some(match string(&mut i)? {
                    "invoke" => EventType::Invoke,
                    "ok" => EventType::Ok,
                    "fail" => EventType::Fail,
                    "info" => EventType::Info,
                    "event" => EventType::Event,
                    _ => return None,
                })
            }
            "f" => {
                once(1 << 4)?;
                f = Some(string(&mut i)?);
            }
            "lock" | "key" => {
                once(if k == "lock" { 1 << 5 } else { 1 << 6 })?;
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
                once(1 << 7)?;
                if line[i..].starts_with("null") {
                    i += 4;
                } else {
                    token = Some(number(&mut i)?);
                }
            }
            "accepted" => {
                once(1 << 8)?;
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
                once(1 << 9)?;
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
            "valid_ms" | "local_ns" | "wall_ms" => {
                once(match k {
                    "valid_ms" => 1 << 10,
                    "local_ns" => 1 << 13,
                    _ => 1 << 14,
                })?;
                if b.get(i) == Some(&b'-') {
                    i += 1;
                }
                number(&mut i)?;
            }
            "reason" | "client" => {
                once(if k == "reason" { 1 << 11 } else { 1 << 12 })?;
                if line[i..].starts_with("null") {
                    i += 4;
                } else {
                    string(&mut i)?;
                    served |= k == "client";
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
        index,
        served,
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
