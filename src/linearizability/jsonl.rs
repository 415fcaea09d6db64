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
