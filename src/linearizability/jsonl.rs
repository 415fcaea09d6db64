//! Reading locksim's JSONL histories for the checker: a fast path for the fields it
//! needs (borrowed, no allocation per line), a strict slow path that names the line and
//! the problem, and duplicate keys rejected rather than guessed.

use super::ops::{InputError, Interner, Order, Pairer, RawEvent, RawOp};
use crate::history::edn::Value;
use crate::history::EventType;
use serde::Deserialize;
use std::fmt;

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

/// Read a locksim JSONL history into operations. Lines must be [`crate::history::Event`]s (one JSON
/// object per line, no key twice); fields the checker does not use are ignored.
pub fn raw_ops_from_jsonl(text: &str) -> Result<Vec<RawOp>, InputError> {
    let mut names = Interner::default();
    let mut p = Pairer::for_file(Order::IndexAndTime);
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
    let mut p = Pairer::for_file(Order::IndexAndTime);
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
    if !line.trim_start().starts_with('{') && line.contains("jepsen.") {
        return Err(bad(
            "expected a locksim JSONL event (one JSON object per line), but this looks like Jepsen's text log; give such logs a .log file name".into(),
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
    let mut sc = Scan { line, i: 0 };
    sc.ws();
    if sc.peek() != Some(b'{') {
        return None;
    }
    sc.i += 1;
    sc.ws();
    if sc.peek() == Some(b'}') {
        return None;
    }
    let mut fields = Fields::default();
    loop {
        sc.ws();
        let k = sc.string()?;
        sc.ws();
        if sc.peek() != Some(b':') {
            return None;
        }
        sc.i += 1;
        sc.ws();
        fields.read(k, &mut sc)?;
        sc.ws();
        match sc.peek() {
            Some(b',') => sc.i += 1,
            Some(b'}') => {
                sc.i += 1;
                break;
            }
            _ => return None,
        }
    }
    sc.ws();
    if sc.i != line.len() {
        return None;
    }
    fields.event(lineno, names)
}

/// [`fast_event`]'s cursor: each method reads one token at byte `i` of `line`, or
/// returns None (or false) when the token is not of the fast path's shape.
struct Scan<'a> {
    line: &'a str,
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.line.as_bytes().get(self.i).copied()
    }

    fn ws(&mut self) {
        let b = self.line.as_bytes();
        while self.i < b.len() && matches!(b[self.i], b' ' | b'\t' | b'\r') {
            self.i += 1;
        }
    }

    /// A string without escapes or control characters.
    fn string(&mut self) -> Option<&'a str> {
        let b = self.line.as_bytes();
        if b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
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
        self.i = j + 1;
        self.line.get(start..j)
    }

    /// A non-negative integer that fits a u64, without leading zeros (no fraction or
    /// exponent).
    fn number(&mut self) -> Option<u64> {
        let b = self.line.as_bytes();
        let start = self.i;
        let mut v: u64 = 0;
        while self.i < b.len() && b[self.i].is_ascii_digit() {
            v = v.checked_mul(10)?.checked_add((b[self.i] - b'0') as u64)?;
            self.i += 1;
        }
        if self.i == start || (b[start] == b'0' && self.i - start > 1) {
            return None;
        }
        match b.get(self.i) {
            Some(b'.' | b'e' | b'E') => None,
            _ => Some(v),
        }
    }

    /// Whether `word` (`null`, `true`, `false`) is next; if so, skip it.
    fn literal(&mut self, word: &str) -> bool {
        let found = self.line[self.i..].starts_with(word);
        if found {
            self.i += word.len();
        }
        found
    }
}

/// The fields [`fast_event`] has read so far.
#[derive(Default)]
struct Fields<'a> {
    index: Option<u64>,
    time_ns: Option<u64>,
    process: Option<&'a str>,
    kind: Option<EventType>,
    f: Option<&'a str>,
    lock: Option<&'a str>,
    key: Option<&'a str>,
    value: Option<Value>,
    token: Option<u64>,
    accepted: Option<bool>,
    served: bool,
    /// Keys seen, one bit each (a duplicate goes to the serde path, which rejects it).
    seen: u16,
}

impl<'a> Fields<'a> {
    /// Mark the key with bit `bit` seen; None if it was already.
    fn once(&mut self, bit: u16) -> Option<()> {
        if self.seen & bit != 0 {
            return None;
        }
        self.seen |= bit;
        Some(())
    }

    /// Read the value of key `k` at the cursor.
    fn read(&mut self, k: &str, sc: &mut Scan<'a>) -> Option<()> {
        match k {
            "index" => {
                self.once(1 << 0)?;
                self.index = Some(sc.number()?);
            }
            "time_ns" => {
                self.once(1 << 1)?;
                self.time_ns = Some(sc.number()?);
            }
            "process" => {
                self.once(1 << 2)?;
                self.process = Some(sc.string()?);
            }
            "type" => {
                self.once(1 << 3)?;
                self.kind = Some(event_type(sc.string()?)?);
            }
            "f" => {
                self.once(1 << 4)?;
                self.f = Some(sc.string()?);
            }
            "lock" | "key" => self.read_lock_or_key(k, sc)?,
            "token" => {
                self.once(1 << 7)?;
                if !sc.literal("null") {
                    self.token = Some(sc.number()?);
                }
            }
            "accepted" => {
                self.once(1 << 8)?;
                self.accepted = read_accepted(sc)?;
            }
            "value" => {
                self.once(1 << 9)?;
                self.value = Some(read_value(sc)?);
            }
            "valid_ms" | "local_ns" | "wall_ms" => {
                self.once(match k {
                    "valid_ms" => 1 << 10,
                    "local_ns" => 1 << 13,
                    _ => 1 << 14,
                })?;
                // Not needed: checked to be an integer, and skipped.
                if sc.peek() == Some(b'-') {
                    sc.i += 1;
                }
                sc.number()?;
            }
            "reason" | "client" => {
                self.once(if k == "reason" { 1 << 11 } else { 1 << 12 })?;
                if !sc.literal("null") {
                    sc.string()?;
                    self.served |= k == "client";
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// `lock` or `key`: a string or null.
    fn read_lock_or_key(&mut self, k: &str, sc: &mut Scan<'a>) -> Option<()> {
        self.once(if k == "lock" { 1 << 5 } else { 1 << 6 })?;
        let v = if sc.peek() == Some(b'n') {
            if !sc.literal("null") {
                return None;
            }
            None
        } else {
            Some(sc.string()?)
        };
        if k == "lock" {
            self.lock = v;
        } else {
            self.key = v;
        }
        Some(())
    }

    /// The event, when the line had the fields every event needs.
    fn event(self, lineno: usize, names: &mut Interner) -> Option<RawEvent> {
        Some(RawEvent {
            line: lineno,
            index: self.index,
            served: self.served,
            kind: self.kind?,
            process: names.get(self.process?),
            f: names.get(self.f?),
            value: self.value.unwrap_or(Value::Nil),
            time_ns: self.time_ns,
            key: self.lock.or(self.key).map(|k| names.get(k)),
            token: self.token,
            accepted: self.accepted,
        })
    }
}

/// An event's `type`.
fn event_type(s: &str) -> Option<EventType> {
    Some(match s {
        "invoke" => EventType::Invoke,
        "ok" => EventType::Ok,
        "fail" => EventType::Fail,
        "info" => EventType::Info,
        "event" => EventType::Event,
        _ => return None,
    })
}

/// `accepted`: true, false or null (None).
fn read_accepted(sc: &mut Scan) -> Option<Option<bool>> {
    if sc.literal("true") {
        Some(Some(true))
    } else if sc.literal("false") {
        Some(Some(false))
    } else if sc.literal("null") {
        Some(None)
    } else {
        None
    }
}

/// `value`: a string, null or a non-negative integer that fits an i64.
fn read_value(sc: &mut Scan) -> Option<Value> {
    Some(match sc.peek()? {
        b'"' => Value::Str(sc.string()?.to_string()),
        b'n' if sc.literal("null") => Value::Nil,
        b'0'..=b'9' => Value::Int(i64::try_from(sc.number()?).ok()?),
        _ => return None,
    })
}
