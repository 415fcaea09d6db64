//! Reading Jepsen EDN histories for the checker, with Jepsen's and Knossos's conventions:
//! the order of the entries is real-time order (an `:index`, where given, must agree
//! with it), `:time` is kept for display only, entries of non-integer processes such as
//! `:nemesis` are skipped, and fields the checker does not use (`:error`, ...) are
//! ignored.

use super::ops::{InputError, Interner, Order, Pairer, RawEvent, RawOp};
use crate::history::edn::{self, Value};
use crate::history::EventType;

fn name_of(v: &Value) -> Option<String> {
    match v {
        Value::Keyword(s) | Value::Symbol(s) | Value::Str(s) => Some(s.clone()),
        _ => None,
    }
}

fn non_negative(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_int)
        .and_then(|t| u64::try_from(t).ok())
}

/// Read a Jepsen EDN history (a vector of maps, or one map per line) into operations.
pub fn raw_ops_from_edn(text: &str) -> Result<Vec<RawOp>, InputError> {
    let mut names = Interner::default();
    let mut pairer = Pairer::for_file(Order::Index);
    for form in edn::HistoryForms::new(text) {
        let (line, form) = form.map_err(|e| InputError::new(e.line, e.message))?;
        let map = match &form {
            Value::Map(_) => &form,
            Value::Tagged(_, inner) if matches!(**inner, Value::Map(_)) => inner,
            _ => {
                return Err(InputError::new(
                    line,
                    format!("expected an operation map: {form}"),
                ))
            }
        };
        match edn_event(line, map, &mut names)? {
            Some(e) => pairer.push(e)?,
            None => pairer.skip(line, non_negative(map.get("index")))?,
        }
    }
    pairer.finish()
}

/// The event of one operation map, or None for an entry that is not a client's.
fn edn_event(
    line: usize,
    map: &Value,
    names: &mut Interner,
) -> Result<Option<RawEvent>, InputError> {
    let bad = |why: &str| InputError::new(line, format!("{why}: {map}"));
    let process = match map.get("process") {
        Some(Value::Int(i)) => i.to_string(),
        Some(Value::Str(s)) | Some(Value::Symbol(s)) => s.clone(),
        // :nemesis and friends are not clients (Knossos's `client-op?`).
        Some(Value::Keyword(_)) => return Ok(None),
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
    let f = map
        .get("f")
        .and_then(name_of)
        .ok_or_else(|| bad("operation without an :f"))?;
    let key = map
        .get("lock")
        .or_else(|| map.get("key"))
        .and_then(|v| name_of(v).or_else(|| v.as_int().map(|i| i.to_string())));
    let accepted = match map.get("accepted") {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    };
    Ok(Some(RawEvent {
        line,
        index: non_negative(map.get("index")),
        served: map.get("client").is_some_and(|c| !c.is_nil()),
        kind,
        process: names.get(&process),
        f: names.get(&f),
        value: map.get("value").cloned().unwrap_or(Value::Nil),
        time_ns: non_negative(map.get("time")),
        key: key.map(|k| names.get(&k)),
        token: non_negative(map.get("token")),
        accepted,
    }))
}
