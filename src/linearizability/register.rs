//! `register` and `cas-register`: a single register holding an EDN value, as in Knossos.
//!
//! Operations: `:read` (value observed; `nil` matches any state), `:write v`, and for
//! `cas-register` `:cas [old new]` (succeeds, and is legal, only when the register holds
//! `old`). Failed operations are dropped; an indeterminate write or cas may take effect
//! at any time after its invocation, or never; indeterminate reads have no effect and
//! are dropped. Values are interned, so the state is one `u32` and steps are cheap.
//!
//! Operations may carry a `:key` (or `:lock`): each key is then an independent register
//! (P-compositionality).

use super::model::{Effect, Model, ValueTable};
use super::ops::{intern_process, skip_or_reject, InputError, Operation, RawOp};
use crate::history::edn::Value;
use crate::history::names;
use std::collections::HashMap;
use std::sync::Arc;

/// A register operation over interned values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegisterOp {
    /// A read that observed the value (None: matches anything).
    Read(Option<u32>),
    /// A write of the value.
    Write(u32),
    /// A successful compare-and-set from the first value to the second.
    Cas(u32, u32),
}

/// The `register` / `cas-register` model. Holds the interned values.
#[derive(Clone, Debug)]
pub struct Register {
    values: ValueTable,
    init: u32,
    cas: bool,
    keys: Vec<Option<Arc<str>>>,
    procs: Vec<String>,
}

impl Register {
    /// A register with initial value `init`; `cas` enables `:cas` operations.
    pub fn new(init: Value, cas: bool) -> Register {
        let mut r = Register {
            values: ValueTable::default(),
            init: 0,
            cas,
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

    /// The value with id `id`.
    pub fn value(&self, id: u32) -> &Value {
        self.values.get(id)
    }

    /// The process table of the last [`Self::ops_from_raw`] (names by index).
    pub fn processes(&self) -> &[String] {
        &self.procs
    }

    /// Interpret raw operations (model name for messages: `register` or `cas-register`).
    pub fn ops_from_raw(
        &mut self,
        raw: &[RawOp],
    ) -> Result<Vec<Operation<RegisterOp>>, InputError> {
        let model = if self.cas { "cas-register" } else { "register" };
        let mut procs: HashMap<&str, u32> = HashMap::new();
        let mut out = Vec::with_capacity(raw.len());
        self.keys.clear();
        self.procs.clear();
        for r in raw {
            let op = match &*r.f {
                names::READ => {
                    if r.is_indeterminate() {
                        continue; // no effect either way
                    }
                    if r.value.is_nil() {
                        RegisterOp::Read(None)
                    } else {
                        RegisterOp::Read(Some(self.intern(&r.value)))
                    }
                }
                names::WRITE => RegisterOp::Write(self.intern(&r.value)),
                names::CAS if self.cas => match r.value.as_seq() {
                    Some([old, new]) => {
                        let (o, n) = (self.intern(old), self.intern(new));
                        RegisterOp::Cas(o, n)
                    }
                    _ => {
                        return Err(InputError::new(
                            r.line,
                            format!("a :cas value must be [old new], got {}", r.value),
                        ))
                    }
                },
                _ => {
                    let known: &[&str] = if self.cas {
                        &[names::READ, names::WRITE, names::CAS]
                    } else {
                        &[names::READ, names::WRITE]
                    };
                    skip_or_reject(r, model, known, &[])?;
                    continue;
                }
            };
            let p = intern_process(&mut procs, &mut self.procs, &r.process);
            out.push(Operation::from_raw(op, p, r));
            self.keys.push(r.key.clone());
        }
        Ok(out)
    }
}

impl Model for Register {
    type State = u32;
    type Op = RegisterOp;

    fn init(&self) -> u32 {
        self.init
    }

    fn step(&self, s: &u32, op: &RegisterOp) -> Option<u32> {
        match *op {
            RegisterOp::Read(None) => Some(*s),
            RegisterOp::Read(Some(v)) => (v == *s).then_some(*s),
            RegisterOp::Write(v) => Some(v),
            RegisterOp::Cas(old, new) => (old == *s).then_some(new),
        }
    }

    fn partition(&self, ops: &[Operation<RegisterOp>]) -> Vec<Vec<usize>> {
        partition_by_key(&self.keys, ops.len())
    }

    fn effect(&self, op: &RegisterOp) -> Effect<u32> {
        match *op {
            RegisterOp::Read(None) => Effect::Identity,
            RegisterOp::Read(Some(_)) => Effect::ReadOnly,
            RegisterOp::Cas(a, b) if a == b => Effect::ReadOnly,
            RegisterOp::Cas(_, b) => Effect::Sets(b),
            RegisterOp::Write(v) => Effect::Overwrite(v),
        }
    }

    fn requires(&self, op: &RegisterOp) -> Option<u32> {
        match *op {
            RegisterOp::Read(Some(v)) | RegisterOp::Cas(v, _) => Some(v),
            RegisterOp::Read(None) | RegisterOp::Write(_) => None,
        }
    }

    fn describe_partition(&self, _ops: &[Operation<RegisterOp>], part: &[usize]) -> String {
        describe_key(&self.keys, part)
    }

    fn describe_op(&self, op: &RegisterOp) -> String {
        match *op {
            RegisterOp::Read(None) => "read (any)".into(),
            RegisterOp::Read(Some(v)) => format!("read {}", self.value(v)),
            RegisterOp::Write(v) => format!("write {}", self.value(v)),
            RegisterOp::Cas(o, n) => format!("cas {} → {}", self.value(o), self.value(n)),
        }
    }

    fn describe_state(&self, s: &u32) -> String {
        format!("value = {}", self.value(*s))
    }
}

/// Group operation indices by key, in order of each key's first appearance. When
/// `keys` does not cover the operations (built by hand), everything is one part.
pub(crate) fn partition_by_key(keys: &[Option<Arc<str>>], n: usize) -> Vec<Vec<usize>> {
    if keys.len() != n {
        return vec![(0..n).collect()];
    }
    let mut index: HashMap<&Option<Arc<str>>, usize> = HashMap::new();
    let mut parts: Vec<Vec<usize>> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let next = parts.len();
        let p = *index.entry(k).or_insert(next);
        if p == parts.len() {
            parts.push(Vec::new());
        }
        parts[p].push(i);
    }
    parts
}

/// `key "k"` for a part whose operations carry a key.
pub(crate) fn describe_key(keys: &[Option<Arc<str>>], part: &[usize]) -> String {
    match part.first().and_then(|&i| keys.get(i)) {
        Some(Some(k)) => format!("key {k:?}"),
        _ => String::new(),
    }
}
