//! The [`Model`] trait (a sequential specification), and how a model describes the
//! operations it checks ([`OpInfo::from_ops`]).

use super::explain::{Explanation, OpInfo};
use super::ops::{Operation, INDETERMINATE};
use std::fmt::Debug;
use std::hash::Hash;

/// What an operation does to the state, independently of the state: a hint that lets the
/// search skip moves that cannot matter (see the reductions of the search). Every
/// variant but [`Effect::Other`] is a promise about [`Model::step`]; a wrong promise
/// loses linearizations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect<S> {
    /// Nothing known (always correct).
    Other,
    /// Legal in every state, and changes nothing (a read that matches any value).
    Identity,
    /// Legal in some states only, and changes nothing wherever legal (a read of a value,
    /// a rejected fenced write).
    ReadOnly,
    /// Legal in every state, and always leads to this state (a blind write).
    Overwrite(S),
    /// Legal in some states only, but wherever legal it leads to this state (a
    /// compare-and-set to this value, a read of it).
    Sets(S),
}

/// A sequential specification of an object.
///
/// `step` must be deterministic: given a state and an operation (input *and* observed
/// output), it returns the next state, or `None` when the operation is illegal in that
/// state. Indeterminate operations carry whatever the model needs to take the most
/// permissive legal effect (e.g. an unknown fencing token).
pub trait Model {
    /// The object's state. Hashing must be deterministic (no random state inside).
    type State: Clone + Eq + Hash + Debug;
    /// One operation: its input and its observed output. Equal operations must behave
    /// identically in [`Model::step`] (the search treats equal indeterminate operations
    /// as interchangeable).
    type Op: Clone + Debug + Eq + Hash;

    /// The initial state.
    fn init(&self) -> Self::State;

    /// The state after `op`, or `None` when `op` is illegal in `state`.
    fn step(&self, state: &Self::State, op: &Self::Op) -> Option<Self::State>;

    /// Split a history into independent parts (P-compositionality, Horn & Kroening 2015):
    /// each inner vector lists indices into `ops` and each part is checked alone from
    /// [`Model::init`]. The default is one part holding everything.
    fn partition(&self, ops: &[Operation<Self::Op>]) -> Vec<Vec<usize>> {
        vec![(0..ops.len()).collect()]
    }

    /// A short human description of a partition (e.g. `lock "L"`), for explanations.
    fn describe_partition(&self, ops: &[Operation<Self::Op>], part: &[usize]) -> String {
        let _ = (ops, part);
        String::new()
    }

    /// Whether state `a` can do everything `b` can: every operation legal in `b` is legal
    /// in `a`, and the state it leads to from `a` subsumes the one from `b`. The search
    /// skips a configuration whose state is subsumed by one already explored (with the
    /// same operations linearized). The default is equality, always correct.
    fn subsumes(&self, a: &Self::State, b: &Self::State) -> bool {
        a == b
    }

    /// A hash equal for any two states one of which may subsume the other (the default
    /// hashes the whole state, which matches the default [`Model::subsumes`]).
    fn subsumption_hash(&self, state: &Self::State) -> u64 {
        use std::hash::Hasher;
        let mut h = super::memo::FxHasher::default();
        state.hash(&mut h);
        h.finish()
    }

    /// A key such that `op` can only be legal in states whose [`Model::state_guard`] is
    /// the same key (None: no such restriction, the default). It lets the search find the
    /// few pending indeterminate operations that may apply in a state without trying
    /// every one. A hint only: a wrong guard loses linearizations, a missing one costs
    /// time.
    fn op_guard(&self, op: &Self::Op) -> Option<u64> {
        let _ = op;
        None
    }

    /// The key guarded operations must have to be legal in `state` (see
    /// [`Model::op_guard`]; None: no guarded operation is legal).
    fn state_guard(&self, state: &Self::State) -> Option<u64> {
        let _ = state;
        None
    }

    /// Whether `op` can never be legal again, in `state` or any state reachable from it.
    /// The search then forgets whether such an indeterminate operation was used, which
    /// keeps its memo small. Must agree with [`Model::subsumes`]: if `a` subsumes `b`,
    /// an operation dead in `a` is dead in `b`. The default, false, is always correct.
    fn op_dead(&self, state: &Self::State, op: &Self::Op) -> bool {
        let _ = (state, op);
        false
    }

    /// What `op` does independently of the state (see [`Effect`]); the default,
    /// [`Effect::Other`], is always correct.
    fn effect(&self, op: &Self::Op) -> Effect<Self::State> {
        let _ = op;
        Effect::Other
    }

    /// The only state in which `op` is legal, when there is exactly one (a read of `v`, a
    /// compare-and-set from `v`); None otherwise or when unknown (the default). A promise
    /// about [`Model::step`]: the pre-pass of the check refutes histories with it (see
    /// `refute.rs`), so a wrong one loses linearizations. The pre-pass runs only on parts
    /// whose operations all have an [`Effect`] other than [`Effect::Other`].
    fn requires(&self, op: &Self::Op) -> Option<Self::State> {
        let _ = op;
        None
    }

    /// A short human description of an operation, e.g. `cas 1→2`.
    fn describe_op(&self, op: &Self::Op) -> String;

    /// A short human description of a state.
    fn describe_state(&self, state: &Self::State) -> String;

    /// An optional exact fast path for one part: `Some(Ok(()))` when the part is
    /// linearizable, `Some(Err(explanation))` when it is not, `None` to let the general
    /// search decide. Must agree with the search whenever it answers.
    fn fast_check(
        &self,
        ops: &[Operation<Self::Op>],
        part: &[usize],
    ) -> Option<Result<(), Explanation>> {
        let _ = (ops, part);
        None
    }
}

/// Values interned to small ids, so model states stay `Copy` and cheap to hash.
/// Ids are assigned in first-seen order, so they are the same on every run.
#[derive(Clone, Debug, Default)]
pub(crate) struct ValueTable {
    values: Vec<crate::history::edn::Value>,
    index: std::collections::HashMap<crate::history::edn::Value, u32>,
}

impl ValueTable {
    /// The id of `v`, adding it when new.
    pub(crate) fn intern(&mut self, v: &crate::history::edn::Value) -> u32 {
        if let Some(&id) = self.index.get(v) {
            return id;
        }
        let id = self.values.len() as u32;
        self.values.push(v.clone());
        self.index.insert(v.clone(), id);
        id
    }

    /// The value with id `id`.
    pub(crate) fn get(&self, id: u32) -> &crate::history::edn::Value {
        &self.values[id as usize]
    }
}

/// A model names what each operation did: the views explanations and pictures show.
impl OpInfo {
    /// Views of `ops` described by `model`; `processes` names the process indices.
    pub fn from_ops<M: Model>(
        model: &M,
        ops: &[Operation<M::Op>],
        processes: &[String],
    ) -> Vec<OpInfo> {
        ops.iter()
            .map(|o| OpInfo::of(model, o, processes))
            .collect()
    }

    /// The view of one operation (see [`OpInfo::from_ops`]).
    pub fn of<M: Model>(model: &M, o: &Operation<M::Op>, processes: &[String]) -> OpInfo {
        OpInfo {
            process: processes
                .get(o.process as usize)
                .cloned()
                .unwrap_or_else(|| o.process.to_string()),
            description: model.describe_op(&o.op),
            call: o.call,
            ret: o.ret,
            indeterminate: o.ret == INDETERMINATE,
            line: o.line,
            call_ns: o.call_ns,
            ret_ns: o.ret_ns,
        }
    }
}
