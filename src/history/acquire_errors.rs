//! Why no acquire succeeded, when the acquires got error replies: a pure function of a
//! history, so `run`'s summary and `replay` can put the cause beside a liveness failure
//! ("no client acquired L within 5000 ms" says nothing of a script that raised `boom`).
//!
//! # Semantics
//!
//! - Only a history with **no acquire `ok`** is diagnosed: once some acquire succeeded,
//!   error replies are not why nothing was acquired.
//! - The unit is the **acquire operation** (a client's acquire invoke up to its `fail` or
//!   `info`; a new invoke by the same client ends the previous one). Each is counted once,
//!   with the text of the *last* [`ERROR_REPLY`] to the `acquire` script its client
//!   recorded while it was open, or with none. An operation still open at the end of the
//!   history counts only if it saw an error reply (it may yet have got another answer).
//! - The diagnosis exists when at least one counted acquire saw an error reply. It names
//!   the most common text (ties: the one seen first) and how many acquires ended on it.
//!   "Every acquire" means every counted one: an acquire that ended without an error
//!   reply (busy, a timeout) makes the diagnosis say "N of M" instead.

use super::{names, ErrorReply, Event, EventType, ERROR_REPLY};
use crate::plural::plural;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the acquires of a history with no successful acquire ended on error replies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcquireErrors {
    /// Acquire operations counted (see the module docs); none succeeded.
    pub acquires: u64,
    /// How many of them ended on [`error`](AcquireErrors::error).
    pub count: u64,
    /// The most common error reply's text, as the client saw it.
    pub error: String,
    /// How many different error replies the counted acquires ended on.
    pub distinct: u64,
}

impl AcquireErrors {
    /// The diagnosis in words, e.g. "every acquire (462) failed on the same error reply
    /// to the acquire script: ERR user_script:1: boom ...".
    pub fn describe(&self) -> String {
        let to = "error reply to the acquire script";
        if self.count == self.acquires {
            if self.acquires == 1 {
                return format!("the one acquire failed on an {to}: {}", self.error);
            }
            return format!(
                "every acquire ({}) failed on the same {to}: {}",
                self.acquires, self.error
            );
        }
        let of_many = if self.distinct > 1 {
            format!(", the most common of {} different ones", self.distinct)
        } else {
            String::new()
        };
        format!(
            "{} of {} failed on this {to}{of_many}: {}",
            self.count,
            plural(self.acquires, "acquire"),
            self.error
        )
    }
}

/// The diagnosis of `history` (see the module docs): `None` when some acquire
/// succeeded or no acquire got an error reply.
pub fn acquire_errors(history: &[Event]) -> Option<AcquireErrors> {
    // Per client: the last acquire error text of its open acquire (None: none yet).
    let mut open: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    let mut ended: Vec<Option<&str>> = Vec::new();
    for e in history {
        if e.f == names::ACQUIRE {
            match e.kind {
                EventType::Ok => return None,
                EventType::Invoke => ended.extend(open.insert(&e.process, None)),
                EventType::Fail | EventType::Info => {
                    ended.push(open.remove(e.process.as_str()).flatten())
                }
                EventType::Event => {}
            }
        } else if e.f == ERROR_REPLY {
            let reply = ErrorReply::of(e).filter(|r| r.script == names::ACQUIRE);
            if let (Some(reply), Some(last)) = (reply, open.get_mut(e.process.as_str())) {
                *last = Some(reply.text);
            }
        }
    }
    ended.extend(open.into_values().filter(Option::is_some));
    most_common(&ended)
}

/// The most common text among `ended` (ties: the first seen), with the counts.
fn most_common(ended: &[Option<&str>]) -> Option<AcquireErrors> {
    // text -> (count, position of its first acquire)
    let mut texts: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    for (i, text) in ended.iter().enumerate() {
        if let Some(t) = text {
            texts.entry(t).or_insert((0, i)).0 += 1;
        }
    }
    let (error, (count, _)) = texts
        .iter()
        .max_by_key(|(_, (count, first))| (*count, std::cmp::Reverse(*first)))?;
    Some(AcquireErrors {
        acquires: ended.len() as u64,
        count: *count,
        error: error.to_string(),
        distinct: texts.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::EventType::{Fail, Info, Invoke, Ok};

    const BOOM: &str = "ERR user_script:1: boom script: 1b9d, on @user_script:1.";

    fn op(p: &str, kind: EventType) -> Event {
        Event::new(p, kind, "acquire").lock("L")
    }
    fn reply(p: &str, script: &str, text: &str) -> Event {
        let server = Some("redis-0");
        ErrorReply {
            script,
            server,
            text,
        }
        .event(p, "L")
    }
    /// One client's acquire that got `text` and ended as `kind`.
    fn failed(p: &str, text: &str, kind: EventType) -> Vec<Event> {
        vec![op(p, Invoke), reply(p, "acquire", text), op(p, kind)]
    }

    #[test]
    fn every_acquire_on_the_same_error() {
        let mut h = failed("client-0", BOOM, Info);
        h.extend(failed("client-1", BOOM, Info));
        h.extend(failed("client-0", BOOM, Fail));
        let d = acquire_errors(&h).expect("a diagnosis");
        assert_eq!((d.acquires, d.count, d.distinct), (3, 3, 1));
        assert_eq!(
            d.describe(),
            format!(
                "every acquire (3) failed on the same error reply to the acquire script: {BOOM}"
            )
        );
        let one = acquire_errors(&failed("client-0", BOOM, Info)).unwrap();
        assert_eq!(
            one.describe(),
            format!("the one acquire failed on an error reply to the acquire script: {BOOM}")
        );
    }

    #[test]
    fn mixed_errors_name_the_most_common() {
        let busy = "BUSY Redis is busy running a script.";
        let mut h = failed("client-0", busy, Info);
        h.extend(failed("client-1", BOOM, Info));
        h.extend(failed("client-1", BOOM, Info));
        // An acquire that ended with no error reply (lock busy, a timeout) counts too.
        h.extend([op("client-0", Invoke), op("client-0", Fail)]);
        // Still open at the end, after an error reply: counted.
        h.extend([op("client-2", Invoke), reply("client-2", "acquire", busy)]);
        // Still open, no reply yet: not counted.
        h.push(op("client-3", Invoke));
        // Release and extend errors are not why an acquire failed.
        h.push(reply("client-1", "release", "ERR other"));
        let d = acquire_errors(&h).unwrap();
        assert_eq!((d.acquires, d.count, d.distinct), (5, 2, 2));
        assert_eq!(
            d.describe(),
            format!(
                "2 of 5 acquires failed on this error reply to the acquire script, the most \
                 common of 2 different ones: {busy}"
            )
        );
        // A tie goes to the text seen first; one text that not every acquire got.
        let mut h = failed("client-0", BOOM, Info);
        h.extend([op("client-1", Invoke), op("client-1", Fail)]);
        let d = acquire_errors(&h).unwrap();
        assert_eq!(
            d.describe(),
            format!("1 of 2 acquires failed on this error reply to the acquire script: {BOOM}")
        );
    }

    #[test]
    fn the_last_error_of_an_acquire_counts_once() {
        // The built-in token script answers an error, the client retries within one
        // acquire until its timeout: one acquire, its last text.
        let mut h = vec![op("client-0", Invoke)];
        h.push(reply("client-0", "acquire", "OOM command not allowed"));
        h.push(reply("client-0", "acquire", BOOM));
        h.push(op("client-0", Fail));
        let d = acquire_errors(&h).unwrap();
        assert_eq!((d.acquires, d.count, d.error.as_str()), (1, 1, BOOM));
    }

    #[test]
    fn no_errors_or_a_grant_no_diagnosis() {
        assert_eq!(acquire_errors(&[]), None);
        let h = [op("client-0", Invoke), op("client-0", Fail)];
        assert_eq!(acquire_errors(&h), None);
        // Errors, but some acquire succeeded: they are not why nothing was acquired.
        let mut h = failed("client-0", BOOM, Info);
        h.extend([op("client-1", Invoke), op("client-1", Ok)]);
        assert_eq!(acquire_errors(&h), None);
        // Only a release script's errors.
        let h = [
            op("client-0", Invoke),
            reply("client-0", "release", BOOM),
            op("client-0", Fail),
        ];
        assert_eq!(acquire_errors(&h), None);
    }
}
