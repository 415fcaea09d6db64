//! Reading Jepsen's text log (`jepsen.log`; Porcupine's `test_data/jepsen/etcd_NNN.log`):
//! one operation per line, logged by `jepsen.util` as process, type, `:f` and value,
//! separated by tabs or spaces, optionally followed by an error:
//!
//! ```text
//! INFO  jepsen.util - 4   :invoke :cas    [1 3]
//! INFO  jepsen.util - 4   :fail   :cas    [1 3]
//! INFO  jepsen.util - 2   :info   :write  :timed-out
//! ```
//!
//! Lines of other loggers (and `jepsen.util` lines that are not operations) are skipped,
//! as are the operations of non-integer processes such as `:nemesis`. The order of the
//! lines is real-time order (the log carries no index, and its timestamps, when present,
//! are the log's, not the operations'). Events then pair as in EDN: `:fail` did not
//! happen, `:info` and a missing completion are indeterminate (an `:info` completion keeps
//! the invocation's value, not the logged `:timed-out`).

use super::ops::{InputError, Interner, Order, Pairer, RawEvent, RawOp};
use crate::history::edn::{self, Value};
use crate::history::EventType;

/// The text after `jepsen.util -` on an operation line, else None (a line of another
/// logger, a stack trace, a message that is not an operation).
fn op_text(line: &str) -> Option<&str> {
    let at = line.find("jepsen.util")?;
    let rest = line[at + "jepsen.util".len()..].trim_start();
    let rest = rest.strip_prefix('-')?.trim_start();
    rest.starts_with(|c: char| c.is_ascii_digit() || c == ':')
        .then_some(rest)
}

/// The next EDN value of an operation line, and the text after it.
fn next_value(text: &str, lineno: usize) -> Result<(Value, &str), InputError> {
    edn::parse_prefix(text).map_err(|e| InputError::new(lineno, e.message))
}

/// The event of one operation line, or None for a non-client process.
fn log_event(
    text: &str,
    lineno: usize,
    names: &mut Interner,
) -> Result<Option<RawEvent>, InputError> {
    let bad = |why: &str| InputError::new(lineno, format!("{why}: {}", text.trim_end()));
    let (process, rest) = next_value(text, lineno)?;
    let process = match process {
        Value::Int(i) => i.to_string(),
        Value::Keyword(_) => return Ok(None), // :nemesis: not a client
        _ => return Err(bad("expected an integer process")),
    };
    let (kind, rest) = next_value(rest, lineno)?;
    let kind = match kind.as_keyword() {
        Some("invoke") => EventType::Invoke,
        Some("ok") => EventType::Ok,
        Some("fail") => EventType::Fail,
        Some("info") => EventType::Info,
        _ => {
            return Err(bad(
                "expected :invoke, :ok, :fail or :info after the process",
            ))
        }
    };
    let (f, rest) = next_value(rest, lineno)?;
    let f = match f {
        Value::Keyword(f) => f,
        _ => return Err(bad("expected an operation keyword (:read, :write, ...)")),
    };
    // What follows the value (an error, when logged) is not used.
    let value = if rest.trim().is_empty() {
        Value::Nil
    } else {
        next_value(rest, lineno)?.0
    };
    Ok(Some(RawEvent {
        line: lineno,
        index: None,
        served: false,
        kind,
        process: names.get(&process),
        f: names.get(&f),
        value,
        time_ns: None,
        key: None,
        token: None,
        accepted: None,
    }))
}

/// Read a Jepsen text log into operations (see the module docs).
pub fn raw_ops_from_jepsen_log(text: &str) -> Result<Vec<RawOp>, InputError> {
    let mut names = Interner::default();
    let mut pairer = Pairer::for_file(Order::Index);
    for (i, line) in text.lines().enumerate() {
        let Some(op) = op_text(line) else { continue };
        if let Some(e) = log_event(op, i + 1, &mut names)? {
            pairer.push(e)?;
        }
    }
    pairer.finish()
}
