//! The external-client protocol's messages (`docs/external-clients.md`): the requests
//! locksim writes to an adapter's stdin, the replies and notices it reads from the
//! adapter's stdout (one JSON object per line), and what makes a line or an adapter
//! unacceptable ([`AdapterFailure`]), each naming the line at fault.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// One request to the adapter, as written: `{"id": 1, "op": "acquire", ...}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Request {
    /// 1, 2, 3, ... per adapter process.
    pub id: u64,
    /// What is asked.
    #[serde(flatten)]
    pub op: Op,
}

/// What a request asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub(crate) enum Op {
    /// Take lock `lock`.
    Acquire {
        /// The lock.
        lock: String,
        /// Block up to `timeout_ms`, or one attempt.
        mode: Mode,
        /// How long a wait may take, or how long a try's own requests may take, ms.
        timeout_ms: u64,
        /// The workload acquires a lock this client already holds.
        reentrant: bool,
    },
    /// Release grant `grant` of lock `lock`.
    Release {
        /// The lock.
        lock: String,
        /// The adapter's id of the grant.
        grant: String,
    },
    /// Undo what an acquire with an unknown outcome may have taken.
    Abandon {
        /// The lock.
        lock: String,
    },
}

impl Op {
    /// Its `op` name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::Acquire { .. } => "acquire",
            Op::Release { .. } => "release",
            Op::Abandon { .. } => "abandon",
        }
    }

    /// Its `timeout_ms` (0 for a release or an abandon, which carry none).
    pub(crate) fn timeout_ms(&self) -> u64 {
        match self {
            Op::Acquire { timeout_ms, .. } => *timeout_ms,
            Op::Release { .. } | Op::Abandon { .. } => 0,
        }
    }
}

/// How an acquire waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Mode {
    /// Block until granted, for at most `timeout_ms`.
    Wait,
    /// One non-blocking attempt.
    Try,
}

/// A reply's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The library says this client holds the lock.
    Granted {
        /// The adapter's id of the grant.
        grant: String,
        /// The value identifying the holder to the servers (default: the grant).
        owner: Option<String>,
        /// A fencing token.
        token: Option<u64>,
        /// How much of a lease remains, ms.
        validity_ms: Option<u64>,
    },
    /// Definitely did not take effect.
    Refused {
        /// Why.
        reason: String,
    },
    /// May have taken effect.
    Unknown {
        /// Why.
        reason: String,
    },
    /// Released: `true` if the servers released this holder's lock.
    Released {
        /// Whether it was still held.
        released: bool,
    },
}

impl Reply {
    /// Its `reply` name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Reply::Granted { .. } => "granted",
            Reply::Refused { .. } => "refused",
            Reply::Unknown { .. } => "unknown",
            Reply::Released { .. } => "released",
        }
    }

    /// Whether it may answer `op` (a grant answers only an acquire, `released` only a
    /// release or an abandon).
    pub(crate) fn answers(&self, op: &Op) -> bool {
        match self {
            Reply::Granted { .. } => matches!(op, Op::Acquire { .. }),
            Reply::Released { .. } => !matches!(op, Op::Acquire { .. }),
            Reply::Refused { .. } | Reply::Unknown { .. } => true,
        }
    }
}

/// An unsolicited notice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Notice {
    /// The library told its user the holder lost grant `grant`.
    Lost {
        /// The grant.
        grant: String,
    },
    /// A renewal extended grant `grant`'s lease to `validity_ms` from now.
    Renewed {
        /// The grant.
        grant: String,
        /// The lease left, ms.
        validity_ms: u64,
    },
}

/// One line the adapter wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Incoming {
    /// The reply to request `id`.
    Reply {
        /// The request it answers.
        id: u64,
        /// What it says.
        reply: Reply,
    },
    /// A notice.
    Notice(Notice),
}

/// What is wrong with a line the adapter wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum LineProblem {
    /// It does not parse as JSON (serde_json's message).
    NotJson(String),
    /// It is JSON but not an object.
    NotObject,
    /// It has neither `reply` nor `notice`, or both.
    NoKind,
    /// Its `reply` is not one of the protocol's.
    UnknownReply(String),
    /// Its `notice` is not one of the protocol's.
    UnknownNotice(String),
    /// A required field is absent or a field has the wrong type.
    Field {
        /// The field.
        field: String,
        /// What it must be.
        expected: String,
    },
    /// A reply when no request is outstanding.
    NoRequest,
    /// A reply whose `id` is not the outstanding request's.
    WrongId {
        /// The outstanding request's id.
        expected: u64,
        /// The reply's.
        got: u64,
    },
    /// A reply that cannot answer the outstanding request (`granted` to a release).
    WrongReply {
        /// The reply's name.
        reply: String,
        /// The request's op.
        op: String,
    },
    /// Longer than [`MAX_LINE_BYTES`] (its start is kept).
    TooLong,
    /// Not UTF-8.
    NotUtf8,
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineProblem::NotJson(e) => write!(f, "not a JSON object: {e}"),
            LineProblem::NotObject => f.write_str("not a JSON object"),
            LineProblem::NoKind => {
                f.write_str("expected exactly one of `reply` (a reply) and `notice` (a notice)")
            }
            LineProblem::UnknownReply(r) => write!(
                f,
                "unknown reply `{r}`: expected granted, refused, unknown or released"
            ),
            LineProblem::UnknownNotice(n) => {
                write!(f, "unknown notice `{n}`: expected lost or renewed")
            }
            LineProblem::Field { field, expected } => {
                write!(f, "field `{field}`: expected {expected}")
            }
            LineProblem::NoRequest => f.write_str("a reply with no request outstanding"),
            LineProblem::WrongId { expected, got } => write!(
                f,
                "a reply to id {got}, but the outstanding request is id {expected}"
            ),
            LineProblem::WrongReply { reply, op } => {
                write!(f, "a `{reply}` reply cannot answer an {op} request")
            }
            LineProblem::TooLong => write!(f, "a line longer than {MAX_LINE_BYTES} bytes"),
            LineProblem::NotUtf8 => f.write_str("not UTF-8"),
        }
    }
}

/// The longest line an adapter may write.
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

/// Why an external client cannot go on: the run ends with this, naming the line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum AdapterFailure {
    /// Line `number` of its stdout (`line`, cut short if long) is not acceptable.
    BadLine {
        /// 1-based line number of its stdout.
        number: u64,
        /// The line (its start, if long).
        line: String,
        /// What is wrong with it.
        problem: LineProblem,
    },
    /// It exited or closed its stdout while its node ran.
    Exited {
        /// Its exit status, as the system says it (or that it still runs).
        status: String,
        /// The request it had not answered, if any.
        pending: Option<String>,
    },
    /// It could not be started.
    CannotStart {
        /// The system's reason.
        error: String,
    },
    /// It did not answer `request` within its `timeout_ms` plus the grace, in time its
    /// client ran.
    Hang {
        /// The request, as written.
        request: String,
        /// The request's timeout, ms.
        timeout_ms: u64,
        /// The scenario's `reply_grace_ms`.
        grace_ms: u64,
    },
}

impl fmt::Display for AdapterFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdapterFailure::BadLine {
                number,
                line,
                problem,
            } => write!(f, "line {number} of its output, {line:?}: {problem}"),
            AdapterFailure::Exited { status, pending } => {
                write!(f, "it ended its output while its node ran ({status})")?;
                match pending {
                    Some(r) => write!(f, "; unanswered: {r}"),
                    None => Ok(()),
                }
            }
            AdapterFailure::CannotStart { error } => write!(f, "cannot start it: {error}"),
            AdapterFailure::Hang {
                request,
                timeout_ms,
                grace_ms,
            } => write!(
                f,
                "no reply to {request} within its timeout_ms + reply_grace_ms = {timeout_ms} + \
                 {grace_ms} ms of the time its client ran (it hangs)"
            ),
        }
    }
}

/// The longest piece of a line a message quotes.
const QUOTED_CHARS: usize = 200;

/// `line` as a message quotes it: its first [`QUOTED_CHARS`] characters.
pub(crate) fn quoted(line: &str) -> String {
    if line.chars().count() <= QUOTED_CHARS {
        return line.to_string();
    }
    let head: String = line.chars().take(QUOTED_CHARS).collect();
    format!("{head}…")
}

/// Parse one line (without its `\n`).
pub(crate) fn parse_line(line: &str) -> Result<Incoming, LineProblem> {
    let value: Value =
        serde_json::from_str(line).map_err(|e| LineProblem::NotJson(e.to_string()))?;
    let Value::Object(obj) = value else {
        return Err(LineProblem::NotObject);
    };
    match (obj.get("reply"), obj.get("notice")) {
        (Some(reply), None) => {
            let id = u64_field(&obj, "id")?.ok_or_else(|| missing("id", UNSIGNED))?;
            let reply = reply.as_str().ok_or_else(|| missing("reply", "a string"))?;
            Ok(Incoming::Reply {
                id,
                reply: parse_reply(reply, &obj)?,
            })
        }
        (None, Some(notice)) => {
            let notice = notice
                .as_str()
                .ok_or_else(|| missing("notice", "a string"))?;
            Ok(Incoming::Notice(parse_notice(notice, &obj)?))
        }
        _ => Err(LineProblem::NoKind),
    }
}

const UNSIGNED: &str = "an unsigned 64-bit integer";

fn parse_reply(reply: &str, obj: &Map<String, Value>) -> Result<Reply, LineProblem> {
    let reason = || required_str(obj, "reason");
    Ok(match reply {
        "granted" => Reply::Granted {
            grant: required_str(obj, "grant")?,
            owner: str_field(obj, "owner")?,
            token: u64_field(obj, "token")?,
            validity_ms: u64_field(obj, "validity_ms")?,
        },
        "refused" => Reply::Refused { reason: reason()? },
        "unknown" => Reply::Unknown { reason: reason()? },
        "released" => Reply::Released {
            released: match obj.get("released") {
                Some(Value::Bool(b)) => *b,
                _ => return Err(missing("released", "a boolean (true or false)")),
            },
        },
        other => return Err(LineProblem::UnknownReply(other.to_string())),
    })
}

fn parse_notice(notice: &str, obj: &Map<String, Value>) -> Result<Notice, LineProblem> {
    Ok(match notice {
        "lost" => Notice::Lost {
            grant: required_str(obj, "grant")?,
        },
        "renewed" => Notice::Renewed {
            grant: required_str(obj, "grant")?,
            validity_ms: u64_field(obj, "validity_ms")?
                .ok_or_else(|| missing("validity_ms", UNSIGNED))?,
        },
        other => return Err(LineProblem::UnknownNotice(other.to_string())),
    })
}

fn missing(field: &str, expected: &str) -> LineProblem {
    LineProblem::Field {
        field: field.to_string(),
        expected: expected.to_string(),
    }
}

/// An optional string field (`null` counts as absent).
fn str_field(obj: &Map<String, Value>, field: &str) -> Result<Option<String>, LineProblem> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(missing(field, "a string")),
    }
}

fn required_str(obj: &Map<String, Value>, field: &str) -> Result<String, LineProblem> {
    str_field(obj, field)?.ok_or_else(|| missing(field, "a string"))
}

/// An optional unsigned integer field (`null` counts as absent).
fn u64_field(obj: &Map<String, Value>, field: &str) -> Result<Option<u64>, LineProblem> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| missing(field, UNSIGNED)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_written_as_the_spec_shows() {
        let r = Request {
            id: 1,
            op: Op::Acquire {
                lock: "L".into(),
                mode: Mode::Wait,
                timeout_ms: 2000,
                reentrant: false,
            },
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"id":1,"op":"acquire","lock":"L","mode":"wait","timeout_ms":2000,"reentrant":false}"#
        );
        let r = Request {
            id: 2,
            op: Op::Release {
                lock: "L".into(),
                grant: "g1".into(),
            },
        };
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"id":2,"op":"release","lock":"L","grant":"g1"}"#
        );
    }

    #[test]
    fn replies_and_notices_parse() {
        assert_eq!(
            parse_line(
                r#"{"id": 1, "reply": "granted", "grant": "g1", "token": 42, "validity_ms": 950}"#
            ),
            Ok(Incoming::Reply {
                id: 1,
                reply: Reply::Granted {
                    grant: "g1".into(),
                    owner: None,
                    token: Some(42),
                    validity_ms: Some(950)
                }
            })
        );
        assert_eq!(
            parse_line(r#"{"id": 2, "reply": "released", "released": false}"#),
            Ok(Incoming::Reply {
                id: 2,
                reply: Reply::Released { released: false }
            })
        );
        assert_eq!(
            parse_line(r#"{"notice": "lost", "grant": "g1", "reason": "SUSPENDED"}"#),
            Ok(Incoming::Notice(Notice::Lost { grant: "g1".into() }))
        );
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let cases = [
            ("hello", "not a JSON object"),
            ("[1]", "not a JSON object"),
            (r#"{"id": 1}"#, "exactly one of `reply`"),
            (r#"{"id": 1, "reply": "ok"}"#, "unknown reply `ok`"),
            (r#"{"notice": "gone"}"#, "unknown notice `gone`"),
            (
                r#"{"id": 1, "reply": "granted"}"#,
                "field `grant`: expected a string",
            ),
            (r#"{"reply": "refused", "reason": "x"}"#, "field `id`"),
            (
                r#"{"id": 1, "reply": "granted", "grant": "g", "token": -1}"#,
                "field `token`",
            ),
            (
                r#"{"id": 1, "reply": "released", "released": "yes"}"#,
                "a boolean",
            ),
            (
                r#"{"notice": "renewed", "grant": "g"}"#,
                "field `validity_ms`",
            ),
        ];
        for (line, want) in cases {
            let e = parse_line(line).unwrap_err().to_string();
            assert!(e.contains(want), "{line}: {e}");
        }
    }

    #[test]
    fn only_fitting_replies_answer_a_request() {
        let release = Op::Release {
            lock: "L".into(),
            grant: "g".into(),
        };
        let granted = Reply::Granted {
            grant: "g".into(),
            owner: None,
            token: None,
            validity_ms: None,
        };
        assert!(!granted.answers(&release));
        assert!(Reply::Released { released: true }.answers(&release));
        assert!(!Reply::Released { released: true }.answers(&Op::Acquire {
            lock: "L".into(),
            mode: Mode::Try,
            timeout_ms: 1,
            reentrant: false
        }));
    }
}
