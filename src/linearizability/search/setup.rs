//! What a search works out before it starts: the order of the determinate operations,
//! the classes of the indeterminate ones, their guards, each operation's effect, and
//! Lowe's list of calls and returns.

use super::*;

/// The determinate operations of `part`, in call order (their local ids).
pub(super) fn determinate_order<O>(ops: &[Operation<O>], part: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = part
        .iter()
        .copied()
        .filter(|&i| !ops[i].is_indeterminate())
        .collect();
    order.sort_by_key(|&i| (ops[i].call, ops[i].ret, i));
    order
}

/// The indeterminate operations of `part` in classes of equal `op`, each in call order;
/// classes in order of first call.
pub(super) fn indeterminate_classes<O: Eq + std::hash::Hash>(
    ops: &[Operation<O>],
    part: &[usize],
) -> Vec<Vec<usize>> {
    let mut info: Vec<usize> = part
        .iter()
        .copied()
        .filter(|&i| ops[i].is_indeterminate())
        .collect();
    info.sort_by_key(|&i| (ops[i].call, i));
    let mut class_index: HashMap<&O, u32, BuildHasherDefault<FxHasher>> = HashMap::default();
    let mut classes: Vec<Vec<usize>> = Vec::new();
    for &i in &info {
        let next = classes.len() as u32;
        let c = *class_index.entry(&ops[i].op).or_insert(next);
        if c == next {
            classes.push(Vec::new());
        }
        classes[c as usize].push(i);
    }
    classes
}

/// One numbering of equal `op`s for determinate operations (in `order`) and
/// indeterminate classes, determinate ones first: (class of each determinate op, class
/// of each indeterminate class, number of classes).
pub(super) fn equality_classes<O: Eq + std::hash::Hash>(
    ops: &[Operation<O>],
    order: &[usize],
    classes: &[Vec<usize>],
) -> (Vec<u32>, Vec<u32>, usize) {
    let mut eq_index: HashMap<&O, u32, BuildHasherDefault<FxHasher>> = HashMap::default();
    let mut intern = |op| {
        let next = eq_index.len() as u32;
        *eq_index.entry(op).or_insert(next)
    };
    let eq_of: Vec<u32> = order.iter().map(|&i| intern(&ops[i].op)).collect();
    let info_eq: Vec<u32> = classes.iter().map(|m| intern(&ops[m[0]].op)).collect();
    (eq_of, info_eq, eq_index.len())
}

/// Guarded indeterminate classes by guard, each in order of first call.
pub(super) type Guarded = HashMap<u64, Vec<u32>, BuildHasherDefault<IdHasher>>;

/// The indeterminate classes without a guard ([`Model::op_guard`]), and those with one by
/// guard; each in order of first call.
pub(super) fn guards<M: Model>(
    model: &M,
    ops: &[Operation<M::Op>],
    classes: &[Vec<usize>],
) -> (Vec<u32>, Guarded) {
    let mut unguarded: Vec<u32> = Vec::new();
    let mut guarded: Guarded = HashMap::default();
    for (c, members) in classes.iter().enumerate() {
        match model.op_guard(&ops[members[0]].op) {
            None => unguarded.push(c as u32),
            Some(g) => guarded.entry(g).or_default().push(c as u32),
        }
    }
    (unguarded, guarded)
}

/// What each determinate operation does to the state, from [`Model::effect`].
pub(super) struct Effects<S> {
    /// [`Effect::Overwrite`]: legal in every state.
    pub(super) overwrite: Vec<bool>,
    /// The state it leads to wherever it is legal, when that is one state.
    pub(super) target: Vec<Option<S>>,
    /// [`Effect::Identity`].
    pub(super) identity: Vec<bool>,
    /// [`Effect::Identity`] or [`Effect::ReadOnly`]: never changes the state.
    pub(super) read_only: Vec<bool>,
}

impl<S> Effects<S> {
    pub(super) fn of<M: Model<State = S>>(
        model: &M,
        ops: &[Operation<M::Op>],
        order: &[usize],
    ) -> Self {
        let n = order.len();
        let mut fx = Effects {
            overwrite: Vec::with_capacity(n),
            target: Vec::with_capacity(n),
            identity: Vec::with_capacity(n),
            read_only: Vec::with_capacity(n),
        };
        for &i in order {
            let e = model.effect(&ops[i].op);
            fx.overwrite.push(matches!(e, Effect::Overwrite(_)));
            fx.identity.push(matches!(e, Effect::Identity));
            fx.read_only
                .push(matches!(e, Effect::Identity | Effect::ReadOnly));
            fx.target.push(match e {
                Effect::Overwrite(s) | Effect::Sets(s) => Some(s),
                Effect::Identity | Effect::ReadOnly | Effect::Other => None,
            });
        }
        fx
    }
}

/// Lowe's list of calls and returns: node 0 is the head; nodes 1..=2n in time order.
pub(super) struct TimeList {
    pub(super) next: Vec<u32>,
    pub(super) prev: Vec<u32>,
    /// Per node, `op << 1 | is_ret`.
    pub(super) node_op: Vec<u32>,
    pub(super) call_node: Vec<u32>,
    pub(super) ret_node: Vec<u32>,
}

impl TimeList {
    /// The list of the determinate operations `order` (local ids).
    pub(super) fn new<O>(ops: &[Operation<O>], order: &[usize]) -> TimeList {
        let n = order.len();
        let mut ev: Vec<(u64, u8, u32)> = Vec::with_capacity(2 * n);
        for (id, &i) in order.iter().enumerate() {
            ev.push((ops[i].call, 0, id as u32));
            ev.push((ops[i].ret, 1, id as u32));
        }
        ev.sort_unstable();
        let nodes = 2 * n + 1;
        let mut node_op = vec![0u32; nodes];
        let mut call_node = vec![0u32; n];
        let mut ret_node = vec![0u32; n];
        for (k, &(_, kind, id)) in ev.iter().enumerate() {
            let node = (k + 1) as u32;
            node_op[node as usize] = (id << 1) | kind as u32;
            if kind == 0 {
                call_node[id as usize] = node;
            } else {
                ret_node[id as usize] = node;
            }
        }
        let next = (0..nodes)
            .map(|k| if k + 1 < nodes { (k + 1) as u32 } else { NIL })
            .collect();
        let prev = (0..nodes)
            .map(|k| if k > 0 { (k - 1) as u32 } else { NIL })
            .collect();
        TimeList {
            next,
            prev,
            node_op,
            call_node,
            ret_node,
        }
    }
}
