//! From recorded events (Jepsen EDN or locksim JSONL) to model-independent operations
//! ([`RawOp`]): invocations paired with completions, `:fail` dropped, `:info` and missing
//! completions indeterminate. See the module docs of `linearizability` for the rules.
//! [`Operation`] is one of them in a model's terms, with its real-time interval.

use super::memo::FxHasher;
use crate::history::edn::Value;
use crate::history::{Event, EventType};
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

/// The return time of an operation that never returned (or returned `:info`): +∞.
pub const INDETERMINATE: u64 = u64::MAX;

/// One operation of a history: what it did (`op`, in the model's terms), who did it, and
/// its real-time interval `[call, ret]`.
///
/// Times are positions in the history (see the module docs); `ret` is [`INDETERMINATE`]
/// for an operation that may take effect at any time after `call`, or never.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation<O> {
    /// The operation in the model's terms (input and observed output).
    pub op: O,
    /// Index of the process in the history's process table.
    pub process: u32,
    /// Position of the invocation.
    pub call: u64,
    /// Position of the completion, or [`INDETERMINATE`].
    pub ret: u64,
    /// 1-based source line of the invocation (0 when unknown).
    pub line: usize,
    /// True time of the invocation in ns, when the history has times (display only).
    pub call_ns: Option<u64>,
    /// True time of the completion in ns, when known (display only).
    pub ret_ns: Option<u64>,
}

impl<O> Operation<O> {
    /// The operation `op` of process `process`, with the position, line and times of `raw`.
    pub fn from_raw(op: O, process: u32, raw: &RawOp) -> Operation<O> {
        Operation {
            op,
            process,
            call: raw.call,
            ret: raw.ret,
            line: raw.line,
            call_ns: raw.call_ns,
            ret_ns: raw.ret_ns,
        }
    }

    /// A determinate operation over `[call, ret]` by process 0 with no source line.
    pub fn new(op: O, call: u64, ret: u64) -> Operation<O> {
        Operation {
            op,
            process: 0,
            call,
            ret,
            line: 0,
            call_ns: None,
            ret_ns: None,
        }
    }

    /// Builder: set the process.
    pub fn by(mut self, process: u32) -> Operation<O> {
        self.process = process;
        self
    }

    /// Whether the operation may take effect at any time after its call, or never.
    pub fn is_indeterminate(&self) -> bool {
        self.ret == INDETERMINATE
    }
}

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
    /// models that do not know its `f` skip (see `skip_or_reject`).
    pub event: bool,
}

impl RawOp {
    /// Whether the operation may take effect at any time after its call, or never.
    pub fn is_indeterminate(&self) -> bool {
        self.ret == INDETERMINATE
    }
}

/// One event before pairing.
pub(super) struct RawEvent {
    pub(super) line: usize,
    /// The recorded position (`index`), when present.
    pub(super) index: Option<u64>,
    /// Whether it names the client it served (`client`): a server's log of a request.
    pub(super) served: bool,
    pub(super) kind: EventType,
    pub(super) process: Arc<str>,
    pub(super) f: Arc<str>,
    pub(super) value: Value,
    pub(super) time_ns: Option<u64>,
    pub(super) key: Option<Arc<str>>,
    pub(super) token: Option<u64>,
    pub(super) accepted: Option<bool>,
}

type FxBuild = BuildHasherDefault<FxHasher>;

/// Shares one allocation per distinct name (processes, `f`s, keys).
#[derive(Default)]
pub(super) struct Interner {
    names: HashMap<Box<str>, Arc<str>, FxBuild>,
}

impl Interner {
    pub(super) fn get(&mut self, s: &str) -> Arc<str> {
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
pub(super) struct Pairer {
    pub(super) out: Vec<Option<RawOp>>,
    pending: HashMap<Arc<str>, usize, FxBuild>,
    invoked: HashSet<Arc<str>, FxBuild>,
    /// Server log lines (completions without an invoke that name a client):
    /// (line, process, message); an error if the process turns out to invoke.
    orphans: Vec<(usize, Arc<str>, String)>,
    pos: u64,
    /// Which recorded stamps must agree with the order of the lines.
    order: Order,
    /// The last recorded index and time, with their lines.
    last_index: Option<(u64, usize)>,
    last_time: Option<(u64, usize)>,
}

/// Which recorded stamps a history's line order is checked against. The order of the
/// lines is always the real-time order; stamps that contradict it make the file
/// malformed only where the writer guarantees them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Order {
    /// Nothing checked: a run's events are in order by construction, and hand-built ones
    /// often carry no stamps.
    #[default]
    Trusted,
    /// `index` must increase; times are for display only. Jepsen's workers stamp `:time`
    /// from their own threads, so neighbouring entries are routinely out of `:time`
    /// order, and Knossos and Porcupine order by position.
    Index,
    /// `index` must increase and `time_ns` must not go back: locksim's JSONL, whose times
    /// are simulated and exact.
    IndexAndTime,
}

impl Pairer {
    /// A pairer for a history read from a file, checking the stamps `order` names.
    pub(super) fn for_file(order: Order) -> Pairer {
        Pairer {
            order,
            ..Pairer::default()
        }
    }

    fn orphan_error(&self, before: usize) -> Option<InputError> {
        self.orphans
            .iter()
            .find(|(line, p, _)| *line < before && self.invoked.contains(p))
            .map(|(line, _, msg)| InputError::new(*line, msg.clone()))
    }

    /// Recorded positions must increase and (for [`Order::IndexAndTime`]) recorded times
    /// must not go back: the checker takes the order of the lines as real-time order, so
    /// a history whose own guaranteed stamps contradict it is malformed. (Indices may
    /// skip: a filtered history, such as the storage's lines of a run, keeps the run's
    /// indices.)
    fn check_order(
        &mut self,
        line: usize,
        index: Option<u64>,
        time_ns: Option<u64>,
    ) -> Result<(), InputError> {
        if self.order == Order::Trusted {
            return Ok(());
        }
        if let Some(i) = index {
            if let Some((prev, prev_line)) = self.last_index {
                if i <= prev {
                    return Err(InputError::new(
                        line,
                        format!(
                            "index {i} does not follow index {prev} of line {prev_line}: events must be listed in the order they happened, with increasing indices"
                        ),
                    ));
                }
            }
            self.last_index = Some((i, line));
        }
        match time_ns {
            Some(t) if self.order == Order::IndexAndTime => self.check_time(line, t),
            _ => Ok(()),
        }
    }

    fn check_time(&mut self, line: usize, t: u64) -> Result<(), InputError> {
        if let Some((prev, prev_line)) = self.last_time {
            if t < prev {
                return Err(InputError::new(
                    line,
                    format!(
                        "time {t} ns is earlier than time {prev} ns of line {prev_line}: events of a locksim JSONL history must be listed in true-time order"
                    ),
                ));
            }
        }
        self.last_time = Some((t, line));
        Ok(())
    }

    /// An entry that is not a client operation (a Jepsen `:nemesis` entry): skipped, but
    /// its `index` still has to follow the order.
    pub(super) fn skip(&mut self, line: usize, index: Option<u64>) -> Result<(), InputError> {
        self.check_order(line, index, None)
    }

    pub(super) fn push(&mut self, e: RawEvent) -> Result<(), InputError> {
        self.check_order(e.line, e.index, e.time_ns)?;
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

    pub(super) fn finish(self) -> Result<Vec<RawOp>, InputError> {
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

/// Write locksim events as a Jepsen-style EDN history (one map per line inside a vector):
/// `{:index 12, :time 1503000000, :process "client-1", :type :invoke, :f :acquire, ...}`.
/// Optional fields are written only when present; [`raw_ops_from_edn`](super::raw_ops_from_edn)
/// reads it back.
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
