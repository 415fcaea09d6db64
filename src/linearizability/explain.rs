//! Verdicts and explanations of violations.

use super::model::{Model, Operation, INDETERMINATE};
use serde::Serialize;
use std::fmt::Write;

/// Why a history is not linearizable: the deepest point the search reached.
///
/// All indices refer to the checked slice of operations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The independent part (e.g. `lock "L"`) that failed; empty when there is one part.
    pub partition: String,
    /// The longest linearizable prefix found, in linearization order.
    pub prefix: Vec<usize>,
    /// The operation that cannot be placed after `prefix`.
    pub failing: usize,
    /// Operations not in `prefix` whose intervals overlap `failing`'s.
    pub concurrent: Vec<usize>,
    /// The model state after `prefix`.
    pub state: String,
}

impl Explanation {
    /// Fill in `concurrent` from the operations of `part` (indices into `ops`).
    pub(crate) fn with_concurrent<O>(mut self, ops: &[Operation<O>], part: &[usize]) -> Self {
        let f = &ops[self.failing];
        let mut in_prefix = vec![false; ops.len()];
        for &i in &self.prefix {
            in_prefix[i] = true;
        }
        self.concurrent = part
            .iter()
            .copied()
            .filter(|&i| i != self.failing && !in_prefix[i])
            .filter(|&i| ops[i].call <= f.ret && ops[i].ret >= f.call)
            .collect();
        self.concurrent.sort_by_key(|&i| (ops[i].call, i));
        self
    }
}

/// The verdict of a linearizability check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinVerdict {
    /// Some order of the operations respects real time and the model.
    Linearizable,
    /// No such order exists; the explanation shows where the search got stuck.
    NotLinearizable(Explanation),
    /// The time budget ran out before the search finished. Never a guess.
    Unknown,
}

impl LinVerdict {
    /// `"linearizable"`, `"not-linearizable"` or `"unknown"`.
    pub fn name(&self) -> &'static str {
        match self {
            LinVerdict::Linearizable => "linearizable",
            LinVerdict::NotLinearizable(_) => "not-linearizable",
            LinVerdict::Unknown => "unknown",
        }
    }

    /// The `locksim check` exit code: 0 linearizable, 1 violation, 3 unknown.
    pub fn exit_code(&self) -> i32 {
        match self {
            LinVerdict::Linearizable => 0,
            LinVerdict::NotLinearizable(_) => 1,
            LinVerdict::Unknown => 3,
        }
    }
}

/// A model-independent view of one operation, for explanations and pictures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpInfo {
    /// Process name.
    pub process: String,
    /// What the operation did, e.g. `write 3` or `acquire → token 7`.
    pub description: String,
    /// Position of the invocation.
    pub call: u64,
    /// Position of the completion (`u64::MAX` when indeterminate).
    pub ret: u64,
    /// Whether the operation is indeterminate (`info` or no completion).
    pub indeterminate: bool,
    /// 1-based source line of the invocation (0 when unknown).
    pub line: usize,
    /// True time of the invocation in ns, when known.
    pub call_ns: Option<u64>,
    /// True time of the completion in ns, when known.
    pub ret_ns: Option<u64>,
}

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

    /// One line: `client-1 write 3 (line 12)` plus `[indeterminate]` when it is.
    pub fn label(&self) -> String {
        let mut s = if self.process.bytes().all(|b| b.is_ascii_digit()) {
            format!("process {} {}", self.process, self.description)
        } else {
            format!("{} {}", self.process, self.description)
        };
        if self.indeterminate {
            s.push_str(" [indeterminate]");
        }
        if self.line > 0 {
            let _ = write!(s, " (line {})", self.line);
        }
        if let Some(ns) = self.call_ns {
            let _ = write!(s, " @{:.3}ms", ns as f64 / 1e6);
        }
        s
    }
}

/// A human explanation of a violation.
pub fn explanation_text(ops: &[OpInfo], e: &Explanation) -> String {
    explanation_text_with(|i| ops[i].clone(), e)
}

/// [`explanation_text`] with operations described on demand by `op` (only the few the
/// text shows are).
pub(crate) fn explanation_text_with(op: impl Fn(usize) -> OpInfo, e: &Explanation) -> String {
    let mut s = String::new();
    let part = if e.partition.is_empty() {
        String::new()
    } else {
        format!(" on {}", e.partition)
    };
    let _ = writeln!(s, "NOT linearizable{part}.");
    let f = op(e.failing);
    let _ = writeln!(
        s,
        "After the longest linearizable prefix found ({}), no legal order can place:\n  {}",
        crate::plural::plural(e.prefix.len() as u64, "operation"),
        f.label()
    );
    let _ = writeln!(s, "Model state at that point: {}", e.state);
    const SHOW: usize = 12;
    if !e.prefix.is_empty() {
        let _ = writeln!(s, "The prefix ends with:");
        let start = e.prefix.len().saturating_sub(SHOW);
        if start > 0 {
            let _ = writeln!(s, "  ... {start} earlier operations");
        }
        for (k, &i) in e.prefix.iter().enumerate().skip(start) {
            let _ = writeln!(s, "  {:>5}. {}", k + 1, op(i).label());
        }
    }
    if e.concurrent.is_empty() {
        let _ = writeln!(s, "No other operation is concurrent with it.");
    } else {
        let _ = writeln!(s, "Operations concurrent with it, also not linearized:");
        for &i in e.concurrent.iter().take(SHOW) {
            let _ = writeln!(s, "  {}", op(i).label());
        }
        if e.concurrent.len() > SHOW {
            let _ = writeln!(s, "  ... and {} more", e.concurrent.len() - SHOW);
        }
    }
    s
}
