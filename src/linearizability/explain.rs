//! Verdicts and explanations of violations.

use super::ops::Operation;
use serde::Serialize;
use std::fmt::Write;

/// Why a history is not linearizable: the deepest point the search reached.
///
/// All indices refer to the checked slice of operations.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explanation {
    /// The independent part (e.g. `lock "L"`) that failed; empty when there is one part.
    pub partition: Box<str>,
    /// The longest linearizable prefix found, in linearization order.
    pub prefix: Vec<usize>,
    /// The operation that cannot be placed after `prefix`.
    pub failing: usize,
    /// Operations not in `prefix` whose intervals overlap `failing`'s.
    pub concurrent: Vec<usize>,
    /// The model state after `prefix`; for a [`Refutation`], the state `failing` needs.
    pub state: String,
    /// Set when the pre-pass refuted the history before any search (`prefix` is then
    /// empty): why nothing can leave `failing` the state it needs.
    pub refutation: Option<Box<Refutation>>,
    /// Set when the violation was found in a window of the history (`prefix`, `failing`
    /// and `state` are then those of the window searched from one of its states).
    pub window: Option<Box<Window>>,
    /// How many operations' intervals the pre-pass narrowed before the search found this
    /// dead end (by orders every linearization respects; 0: none).
    pub narrowed: usize,
}

/// A window of the history that is linearizable from no state the object can reach,
/// which proves the whole history is not (see `window.rs`): the operations invoked
/// from position `from` that completed by position `to`, with those straddling `from`
/// legal anywhere and those pending at `to` free to take effect or not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    /// The first position of the window.
    pub from: u64,
    /// The last position of the window: the return of the operation a first search of
    /// the whole history could not place (the window's own dead end may differ).
    pub to: u64,
    /// The operation invoked first in the window, maybe one straddling `from` (an index
    /// into the checked operations).
    pub first: usize,
    /// How many operations the window holds.
    pub operations: usize,
    /// The starting states tried, each failing (one stands for all states no operation
    /// of the window needs).
    pub states: Vec<String>,
}

/// Why the pre-pass found that no operation can leave the failing operation `x` the
/// state `s` it needs (indices into the checked operations). A state is left by the last
/// *setter* (an operation that writes it) before `x`; every reason below is an order
/// that holds in every linearization, by real time or by a listed [`Derivation`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refutation {
    /// A setter that must take effect before `x` and after every setter of `s` that can
    /// precede `x` (and after the initial state): it overwrites them all. None when no
    /// setter is forced before `x`.
    pub blocker: Option<usize>,
    /// Of the setters of `s` that can precede `x`, the one that may take effect last
    /// (it still must precede `blocker`). None when there is none.
    pub last_source: Option<usize>,
    /// The first determinate setter of `s` that must follow `x`, if any.
    pub next_source: Option<usize>,
    /// Whether the initial state is `s` (then `blocker` follows it too).
    pub initial: bool,
    /// Whether an indeterminate setter of `s` exists (all invoked after `x` completed).
    pub later_indeterminate: bool,
    /// Orders derived from other operations' only sources that the reasons rely on, in
    /// the order derived.
    pub derived: Vec<Derivation>,
}

/// One derived order: `before` takes effect before `after`, because `source` is the only
/// operation that can leave `reader` the state it needs. Either `(before, after)` is
/// `(source, reader)`, or `before` is a setter that must precede `reader` (so it
/// precedes its only source), or `after` is a setter that must follow `source` (so it
/// follows `reader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Derivation {
    /// The operation that takes effect first.
    pub before: usize,
    /// The operation that takes effect after it.
    pub after: usize,
    /// The operation whose only source forces the order.
    pub reader: usize,
    /// That only source.
    pub source: usize,
}

impl Explanation {
    /// The same explanation with every operation index `i` replaced by `f(i)`.
    pub(crate) fn map_indices(mut self, f: impl Fn(usize) -> usize) -> Self {
        self.failing = f(self.failing);
        self.prefix.iter_mut().for_each(|i| *i = f(*i));
        self.concurrent.iter_mut().for_each(|i| *i = f(*i));
        if let Some(r) = &mut self.refutation {
            for i in [&mut r.blocker, &mut r.last_source, &mut r.next_source]
                .into_iter()
                .flatten()
            {
                *i = f(*i);
            }
            for d in &mut r.derived {
                for i in [&mut d.before, &mut d.after, &mut d.reader, &mut d.source] {
                    *i = f(*i);
                }
            }
        }
        if let Some(w) = &mut self.window {
            w.first = f(w.first);
        }
        self
    }

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
    if let Some(r) = &e.refutation {
        let _ = writeln!(s, "NOT linearizable{part} (refuted before any search).");
        refutation_text(&mut s, &op, e, r);
        return s;
    }
    let _ = writeln!(s, "NOT linearizable{part}.");
    if let Some(w) = &e.window {
        let _ = writeln!(
            s,
            "No order of a window of {} operations, from\n  {}\nto where a search of the whole history got stuck (those straddling its start legal\nanywhere, those pending at its end free to take effect or not), is legal from any state\nit could start from ({}); so no order of the whole history is. In the window, from the\nstart that got furthest:",
            w.operations,
            op(w.first).label(),
            w.states.join("; ")
        );
    }
    let f = op(e.failing);
    let _ = writeln!(
        s,
        "After the longest linearizable prefix found ({}), no legal order can place:\n  {}",
        crate::plural::plural(e.prefix.len() as u64, "operation"),
        f.label()
    );
    let _ = writeln!(s, "Model state at that point: {}", e.state);
    if e.narrowed > 0 {
        let _ = writeln!(
            s,
            "(The search used narrower intervals for {}, by orders the pre-pass derived that\nevery linearization respects: an operation can be forced earlier than real time alone\nforces it.)",
            crate::plural::plural(e.narrowed as u64, "operation")
        );
    }
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

/// Derived orders shown in the text at most (the JSON has them all).
const SHOW_DERIVED: usize = 20;

/// The reasons of a [`Refutation`], one per line, and the derived orders they use.
fn refutation_text(s: &mut String, op: &impl Fn(usize) -> OpInfo, e: &Explanation, r: &Refutation) {
    let x = op(e.failing);
    // Real time where it says so, else the derived orders listed at the end.
    let before = |a: &OpInfo, b: &OpInfo, name: &str| {
        if a.ret < b.call {
            format!("completed before {name} was invoked")
        } else {
            format!("must take effect before {name} (derived below)")
        }
    };
    let _ = writeln!(
        s,
        "  {}\nneeds {} just before it takes effect, and no operation can leave it that:",
        x.label(),
        e.state
    );
    match (r.blocker.map(op), r.last_source.map(op)) {
        (Some(q), last) => {
            let _ = writeln!(
                s,
                "  - an overwriting operation\n      {}\n    {};",
                q.label(),
                before(&q, &x, "it")
            );
            match last {
                Some(p) => {
                    let _ = writeln!(
                        s,
                        "    every operation that could leave that state before it must take effect before the\n    overwriting one; of them the one that may take effect last,\n      {}\n    {}.",
                        p.label(),
                        before(&p, &q, "the overwriting one")
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "    no operation that leaves that state can come before it{}.",
                        if r.initial {
                            ""
                        } else {
                            ", and the initial state differs"
                        }
                    );
                }
            }
            if r.initial {
                let _ = writeln!(
                    s,
                    "    (The initial state is that state, and is overwritten as well.)"
                );
            }
        }
        (None, _) => {
            let _ = writeln!(
                s,
                "  - no operation that leaves that state can come before it, and the initial state differs."
            );
        }
    }
    if let Some(p) = r.next_source.map(op) {
        let _ = writeln!(
            s,
            "  - the next operation that leaves that state\n      {}\n    {}.",
            p.label(),
            if x.ret < p.call {
                "was invoked after it completed"
            } else {
                "must take effect after it (derived below)"
            }
        );
    }
    if r.later_indeterminate {
        let _ = writeln!(
            s,
            "  - every indeterminate operation that leaves it was invoked after it completed."
        );
    }
    if r.derived.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "Derived orders (each holds in every linearization, by real time and the ones above it):"
    );
    for (k, d) in r.derived.iter().take(SHOW_DERIVED).enumerate() {
        let (b, a) = (op(d.before).label(), op(d.after).label());
        let why = if (d.before, d.after) == (d.source, d.reader) {
            "the former is the only operation that can leave the latter the state it needs"
                .to_string()
        } else if d.after == d.source {
            format!(
                "the former must precede\n         {}\n       whose only possible source is the latter",
                op(d.reader).label()
            )
        } else {
            format!(
                "the latter must follow\n         {}\n       the only possible source of the former",
                op(d.source).label()
            )
        };
        let _ = writeln!(s, "  {:>3}. {b}\n       before {a}:\n       {why}.", k + 1);
    }
    if r.derived.len() > SHOW_DERIVED {
        let _ = writeln!(
            s,
            "  ... and {} more (see --json)",
            r.derived.len() - SHOW_DERIVED
        );
    }
}
