//! Typed `value`s of the events whose fields a check or the report reads: one struct for
//! the recorder that writes the value and the readers that take it apart, so the two
//! cannot drift apart.
//!
//! The JSON is the same as a `json!` object with the same fields: `serde_json` keeps an
//! object's keys sorted (its `preserve_order` feature is off), whatever the struct's field
//! order. Fields are declared in that order anyway, so the struct reads as its JSONL.

use super::{names, Event};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The typed `value` of the events named [`EventValue::F`].
pub trait EventValue: Serialize + DeserializeOwned {
    /// The `f` of the events that carry this value.
    const F: &'static str;

    /// This value as an event's JSON `value`.
    fn to_json(&self) -> serde_json::Value {
        // A struct of numbers and strings always serialises.
        serde_json::to_value(self).expect("event values serialise")
    }

    /// The value `e` carries, if `e` is named [`EventValue::F`] and its value has this
    /// shape.
    fn of(e: &Event) -> Option<Self> {
        if e.f != Self::F {
            return None;
        }
        // An object only: serde would also take a struct from an array (`[4]`), which the
        // recorders never write.
        let value = e.value.as_ref().filter(|v| v.is_object())?;
        Self::deserialize(value).ok()
    }
}

/// A Raft or ZooKeeper server's [`names::LEADER`] event: it leads its ensemble.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leader {
    /// The term (the ZooKeeper ensemble's Raft term) it leads in.
    pub term: u64,
}

impl EventValue for Leader {
    const F: &'static str = names::LEADER;
}

/// A Raft node's [`names::APPLY`] event: it applied one committed log entry.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Apply {
    /// FNV-1a of the entry's bytes, 16 hex digits (EDN and JSON readers lose u64
    /// precision past 2^53).
    pub hash: String,
    /// The entry's log index.
    pub index: u64,
    /// The entry's term.
    pub term: u64,
}

impl EventValue for Apply {
    const F: &'static str = names::APPLY;
}

/// The part of an [`Apply`] value `raft-apply` reads: it needs the index only, so an
/// event without a term or hash (a hand-written history) is still checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedIndex {
    /// The entry's log index.
    pub index: u64,
}

impl EventValue for AppliedIndex {
    const F: &'static str = names::APPLY;
}

/// A Raft node's [`names::EXPIRE`] event: a lease revoke it applied removed a lock's
/// owner key. Also the value of [`names::REVOKE`].
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct RaftExpire {
    /// The revoke's log index.
    pub index: u64,
    /// The keys it deleted. Served only (`locksim serve`): empty, and not written, in
    /// simulation, whose histories are as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// The lease, in hex as `etcdctl` prints it. Served only, like `keys`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
}

impl RaftExpire {
    /// The value simulations record: the revoke's index only.
    pub fn at(index: u64) -> RaftExpire {
        RaftExpire {
            index,
            keys: Vec::new(),
            lease: None,
        }
    }
}

impl EventValue for RaftExpire {
    const F: &'static str = names::EXPIRE;
}

/// A ZooKeeper server's [`names::EXPIRE`] event: a session close it applied deleted a
/// lock's owner node.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ZkExpire {
    /// The owner node's path. Only said, never read: a value without it still parses.
    #[serde(default)]
    pub node: String,
    /// The closed session, `0x` and hex. Only said, never read, like `node`.
    #[serde(default)]
    pub session: String,
    /// The close's zxid.
    pub zxid: u64,
}

impl EventValue for ZkExpire {
    const F: &'static str = names::EXPIRE;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::EventType;

    /// The JSON each value had when recorders wrote it with `json!`.
    #[test]
    fn values_serialise_as_the_objects_they_replace() {
        let apply = Apply {
            hash: "00000000000000ff".into(),
            index: 3,
            term: 2,
        };
        assert_eq!(
            apply.to_json(),
            serde_json::json!({ "index": 3, "term": 2, "hash": "00000000000000ff" })
        );
        assert_eq!(
            serde_json::to_string(&apply.to_json()).unwrap(),
            r#"{"hash":"00000000000000ff","index":3,"term":2}"#
        );
        let expire = ZkExpire {
            node: "/locks/L/_c_1-lock-0000000001".into(),
            session: "0x1".into(),
            zxid: 9,
        };
        assert_eq!(
            serde_json::to_string(&expire.to_json()).unwrap(),
            r#"{"node":"/locks/L/_c_1-lock-0000000001","session":"0x1","zxid":9}"#
        );
        assert_eq!(
            Leader { term: 4 }.to_json(),
            serde_json::json!({ "term": 4 })
        );
        assert_eq!(
            RaftExpire::at(7).to_json(),
            serde_json::json!({ "index": 7 })
        );
    }

    #[test]
    fn values_read_back_only_from_their_events() {
        let e = Event::new("raft-0", EventType::Event, names::LEADER)
            .value(Leader { term: 4 }.to_json());
        assert_eq!(Leader::of(&e), Some(Leader { term: 4 }));
        let other = Event::new("raft-0", EventType::Event, names::APPLY)
            .value(Leader { term: 4 }.to_json());
        assert_eq!(Leader::of(&other), None);
        let bad = Event::new("raft-0", EventType::Event, names::LEADER)
            .value(serde_json::json!({ "term": "x" }));
        assert_eq!(Leader::of(&bad), None);
        let bare = Event::new("zk-0", EventType::Event, names::EXPIRE)
            .value(serde_json::json!({ "zxid": 7 }));
        assert_eq!(ZkExpire::of(&bare).map(|x| x.zxid), Some(7));
    }
}
