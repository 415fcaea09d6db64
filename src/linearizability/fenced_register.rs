//! `fenced-register`: Kleppmann's fenced storage, the specification `storage-linearizable`
//! checks (`docs/checks.md`).
//!
//! State `(hi, v)`: the highest token accepted (0 at first) and the value.
//! `write(t, x)` is accepted iff t ≥ hi, and then hi = t, v = x; a rejected write is
//! legal iff t < hi and changes nothing; `read` returns v (`nil` matches anything). An
//! indeterminate write does what the storage would do at its linearization point
//! (accept iff t ≥ hi), or nothing. A write without a token (fencing off) is always
//! accepted and leaves hi alone.
//!
//! Input: `read` and `write` operations with `key`, `token`, `value` and, for writes,
//! `accepted` (a completed write without it counts as accepted). In EDN a write's value
//! may also be `[token value]`. In locksim JSONL the clients' operations are used when
//! there are any; otherwise the storage server's own log (point events). Each key is an
//! independent register. The lock's `acquire`s and `release`s and point events of other
//! names are skipped; any other operation name is an error.
//!
//! Extension (locksim's `fence_reads`): a read that *carries a token* is fenced like a
//! write — accepted iff t ≥ hi, then hi = t and it returns v; rejected iff t < hi, and
//! then it returns nothing and changes nothing. A read without a token is the plain read
//! of the spec. (Fencing writes alone lets a stale holder's read-modify-write slip in
//! before the new holder's first write; see `docs/design-decisions.md`, "Fenced reads".)

use super::model::{Effect, Model, ValueTable};
use super::ops::{intern_process, skip_or_reject, InputError, Operation, RawOp};
use super::register::{describe_key, partition_by_key};
use crate::history::edn::Value;
use crate::history::names;
use std::collections::HashMap;
use std::sync::Arc;

/// A fenced-register operation over interned values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FencedRegisterOp {
    /// A read that observed the value (None: matches anything).
    Read(Option<u32>),
    /// A read carrying a fencing token (the storage fences reads).
    FencedRead {
        /// The token.
        token: u64,
        /// The value observed when accepted (None: matches anything).
        value: Option<u32>,
        /// Whether the storage accepted it (None: unknown).
        accepted: Option<bool>,
    },
    /// A write of `value` carrying `token`.
    Write {
        /// The fencing token (None: unfenced).
        token: Option<u64>,
        /// The value written.
        value: u32,
        /// Whether the storage accepted it (None: unknown, indeterminate).
        accepted: Option<bool>,
    },
}

/// The state of a fenced register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FencedRegisterState {
    /// The highest token accepted so far (0 at first).
    pub hi: u64,
    /// The current value (interned).
    pub v: u32,
}

/// The `fenced-register` model.
#[derive(Clone, Debug)]
pub struct FencedRegister {
    values: ValueTable,
    init: u32,
    keys: Vec<Option<Arc<str>>>,
    procs: Vec<String>,
}

impl FencedRegister {
    /// A register whose value starts as `init` and whose highest token starts at 0.
    pub fn new(init: Value) -> FencedRegister {
        let mut r = FencedRegister {
            values: ValueTable::default(),
            init: 0,
            keys: Vec::new(),
            procs: Vec::new(),
        };
        r.init = r.intern(&init);
        r
    }

    /// The id of `v`, adding it when new.
    pub fn intern(&mut self, v: &Value) -> u32 {
        self.values.intern(v)
    }

    /// The process table of the last [`Self::ops_from_raw`] (names by index).
    pub fn processes(&self) -> &[String] {
        &self.procs
    }

    /// Interpret raw operations (see the module docs for which are used).
    pub fn ops_from_raw(
        &mut self,
        raw: &[RawOp],
    ) -> Result<Vec<Operation<FencedRegisterOp>>, InputError> {
        let relevant = |r: &&RawOp| matches!(&*r.f, names::READ | names::WRITE);
        for r in raw.iter().filter(|r| !relevant(r)) {
            skip_or_reject(
                r,
                "fenced-register",
                &[names::READ, names::WRITE],
                &[names::ACQUIRE, names::RELEASE],
            )?;
        }
        let any_client = raw.iter().filter(relevant).any(|r| !r.point);
        let mut procs: HashMap<&str, u32> = HashMap::new();
        let mut out = Vec::new();
        self.keys.clear();
        self.procs.clear();
        for r in raw
            .iter()
            .filter(relevant)
            .filter(|r| r.point != any_client)
        {
            let op = if &*r.f == names::READ {
                let indeterminate = r.is_indeterminate();
                let value = (!r.value.is_nil() && !indeterminate).then(|| self.intern(&r.value));
                match r.token {
                    Some(token) => FencedRegisterOp::FencedRead {
                        token,
                        value,
                        accepted: (!indeterminate).then(|| r.accepted.unwrap_or(true)),
                    },
                    // A plain read that may not have happened constrains nothing.
                    None if indeterminate => continue,
                    None => FencedRegisterOp::Read(value),
                }
            } else {
                let (token, value) = match (r.token, r.value.as_seq()) {
                    (Some(t), _) => (Some(t), r.value.clone()),
                    (None, Some([Value::Int(t), v])) => match u64::try_from(*t) {
                        Ok(t) => (Some(t), v.clone()),
                        Err(_) => {
                            return Err(InputError::new(r.line, format!("negative token {t}")))
                        }
                    },
                    (None, _) => (None, r.value.clone()),
                };
                let accepted = if r.is_indeterminate() {
                    None
                } else {
                    Some(r.accepted.unwrap_or(true))
                };
                FencedRegisterOp::Write {
                    token,
                    value: self.intern(&value),
                    accepted,
                }
            };
            let p = intern_process(&mut procs, &mut self.procs, &r.process);
            out.push(Operation::from_raw(op, p, r));
            self.keys.push(r.key.clone());
        }
        Ok(out)
    }
}

impl Model for FencedRegister {
    type State = FencedRegisterState;
    type Op = FencedRegisterOp;

    fn init(&self) -> FencedRegisterState {
        FencedRegisterState {
            hi: 0,
            v: self.init,
        }
    }

    fn step(&self, s: &FencedRegisterState, op: &FencedRegisterOp) -> Option<FencedRegisterState> {
        match *op {
            FencedRegisterOp::Read(None) => Some(*s),
            FencedRegisterOp::Read(Some(v)) => (v == s.v).then_some(*s),
            FencedRegisterOp::FencedRead {
                token,
                value,
                accepted,
            } => {
                let accept = token >= s.hi;
                match accepted {
                    Some(a) if a != accept => None,
                    _ if !accept => Some(*s),
                    _ if value.is_some_and(|v| v != s.v) => None,
                    _ => Some(FencedRegisterState { hi: token, v: s.v }),
                }
            }
            FencedRegisterOp::Write {
                token: None,
                value,
                accepted,
            } => match accepted {
                Some(false) => Some(*s),
                _ => Some(FencedRegisterState { hi: s.hi, v: value }),
            },
            FencedRegisterOp::Write {
                token: Some(t),
                value,
                accepted,
            } => {
                let accept = t >= s.hi;
                match accepted {
                    Some(a) if a != accept => None,
                    _ if accept => Some(FencedRegisterState { hi: t, v: value }),
                    _ => Some(*s),
                }
            }
        }
    }

    fn partition(&self, ops: &[Operation<FencedRegisterOp>]) -> Vec<Vec<usize>> {
        partition_by_key(&self.keys, ops.len())
    }

    fn effect(&self, op: &FencedRegisterOp) -> Effect<FencedRegisterState> {
        match op {
            FencedRegisterOp::Read(None) => Effect::Identity,
            FencedRegisterOp::Read(Some(_))
            | FencedRegisterOp::FencedRead {
                accepted: Some(false),
                ..
            }
            | FencedRegisterOp::Write {
                accepted: Some(false),
                ..
            } => Effect::ReadOnly,
            _ => Effect::Other,
        }
    }

    fn describe_partition(&self, _ops: &[Operation<FencedRegisterOp>], part: &[usize]) -> String {
        describe_key(&self.keys, part)
    }

    fn describe_op(&self, op: &FencedRegisterOp) -> String {
        match *op {
            FencedRegisterOp::Read(None) => "read (any)".into(),
            FencedRegisterOp::Read(Some(v)) => format!("read {}", self.values.get(v)),
            FencedRegisterOp::FencedRead {
                token,
                value,
                accepted,
            } => {
                let v = value.map_or("any".to_string(), |v| self.values.get(v).to_string());
                let a = match accepted {
                    Some(true) => "accepted",
                    Some(false) => "rejected",
                    None => "outcome unknown",
                };
                format!("read {v} (token {token}, {a})")
            }
            FencedRegisterOp::Write {
                token,
                value,
                accepted,
            } => {
                let t = token.map_or("no token".to_string(), |t| format!("token {t}"));
                let a = match accepted {
                    Some(true) => "accepted",
                    Some(false) => "rejected",
                    None => "outcome unknown",
                };
                format!("write {} ({t}, {a})", self.values.get(value))
            }
        }
    }

    fn describe_state(&self, s: &FencedRegisterState) -> String {
        // `hi` counts fenced reads too when the storage fences them.
        format!(
            "value = {}, highest accepted token = {}",
            self.values.get(s.v),
            s.hi
        )
    }
}

#[cfg(test)]
mod fenced_read_tests {
    use super::*;

    fn step_all(ops: &[FencedRegisterOp]) -> Option<FencedRegisterState> {
        let m = FencedRegister::new(Value::Int(0));
        ops.iter().try_fold(m.init(), |s, op| m.step(&s, op))
    }

    fn read(token: u64, accepted: bool) -> FencedRegisterOp {
        FencedRegisterOp::FencedRead {
            token,
            value: Some(0),
            accepted: Some(accepted),
        }
    }

    fn write(token: u64, accepted: bool) -> FencedRegisterOp {
        FencedRegisterOp::Write {
            token: Some(token),
            value: 1,
            accepted: Some(accepted),
        }
    }

    #[test]
    fn a_fenced_read_raises_the_mark_for_later_writes() {
        // Token 5 read first: the stale holder's token-4 write must be rejected…
        assert!(step_all(&[read(5, true), write(4, false)]).is_some());
        // …and accepting it is not linearizable.
        assert!(step_all(&[read(5, true), write(4, true)]).is_none());
        // A read below the mark is rejected, and leaves the state alone.
        let s = step_all(&[read(5, true), read(3, false)]).unwrap();
        assert_eq!(s.hi, 5);
        assert!(step_all(&[read(5, true), read(3, true)]).is_none());
        // Plain (unfenced) reads leave the mark where it was.
        let s = step_all(&[FencedRegisterOp::Read(Some(0)), write(1, true)]).unwrap();
        assert_eq!(s.hi, 1);
    }
}
