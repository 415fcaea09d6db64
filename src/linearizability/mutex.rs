//! `mutex`: Knossos's mutex model. The state is locked or free; acquiring a locked mutex
//! and releasing a free one are illegal. Owners are not tracked (as in Knossos); see
//! [`FencedLock`](super::FencedLock) for a lock that tracks owners and tokens.
//!
//! Operations: `acquire`, `release`; a `lock` or `key` field makes each lock name an
//! independent mutex.

use super::model::{Effect, Model};
use super::ops::{intern_process, skip_or_reject, InputError, Operation, RawOp};
use super::register::{describe_key, partition_by_key};
use crate::history::names;
use std::collections::HashMap;
use std::sync::Arc;

/// A mutex operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MutexOp {
    /// Take the mutex.
    Acquire,
    /// Give it back.
    Release,
}

/// The `mutex` model.
#[derive(Clone, Debug, Default)]
pub struct Mutex {
    keys: Vec<Option<Arc<str>>>,
    procs: Vec<String>,
}

impl Mutex {
    /// A free mutex.
    pub fn new() -> Mutex {
        Mutex::default()
    }

    /// The process table of the last [`Self::ops_from_raw`] (names by index).
    pub fn processes(&self) -> &[String] {
        &self.procs
    }

    /// Interpret raw operations (`acquire`, `release`).
    pub fn ops_from_raw(&mut self, raw: &[RawOp]) -> Result<Vec<Operation<MutexOp>>, InputError> {
        let mut procs: HashMap<&str, u32> = HashMap::new();
        let mut out = Vec::with_capacity(raw.len());
        self.keys.clear();
        self.procs.clear();
        for r in raw {
            let op = match &*r.f {
                names::ACQUIRE => MutexOp::Acquire,
                names::RELEASE => MutexOp::Release,
                _ => {
                    skip_or_reject(r, "mutex", &[names::ACQUIRE, names::RELEASE], &[])?;
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

impl Model for Mutex {
    type State = bool;
    type Op = MutexOp;

    fn init(&self) -> bool {
        false
    }

    fn step(&self, locked: &bool, op: &MutexOp) -> Option<bool> {
        match op {
            MutexOp::Acquire => (!*locked).then_some(true),
            MutexOp::Release => (*locked).then_some(false),
        }
    }

    fn partition(&self, ops: &[Operation<MutexOp>]) -> Vec<Vec<usize>> {
        partition_by_key(&self.keys, ops.len())
    }

    fn effect(&self, op: &MutexOp) -> Effect<bool> {
        match op {
            MutexOp::Acquire => Effect::Sets(true),
            MutexOp::Release => Effect::Sets(false),
        }
    }

    fn requires(&self, op: &MutexOp) -> Option<bool> {
        match op {
            MutexOp::Acquire => Some(false),
            MutexOp::Release => Some(true),
        }
    }

    fn describe_partition(&self, _ops: &[Operation<MutexOp>], part: &[usize]) -> String {
        describe_key(&self.keys, part)
    }

    fn describe_op(&self, op: &MutexOp) -> String {
        match op {
            MutexOp::Acquire => names::ACQUIRE.into(),
            MutexOp::Release => names::RELEASE.into(),
        }
    }

    fn describe_state(&self, locked: &bool) -> String {
        if *locked { "locked" } else { "free" }.into()
    }
}
