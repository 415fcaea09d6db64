//! A linearizability checker for histories of concurrent operations: the engine, the
//! object models locksim needs, Jepsen EDN and locksim JSONL input, explanations of
//! violations and an SVG picture of them. Jepsen's text log (`.log`) is read too.
//!
//! # What is checked
//!
//! A history is a set of operations, each with an invocation and (maybe) a completion.
//! It is *linearizable* (Herlihy & Wing, 1990) when there is a total order of the
//! operations that (a) respects real time — if `a` completed before `b` was invoked, `a`
//! comes first — and (b) is a legal sequential execution of the object's [`Model`].
//!
//! Conventions follow Jepsen and Knossos (K. Kingsbury, `github.com/jepsen-io/knossos`):
//!
//! - an operation completing `:fail` definitely did not happen and is dropped;
//! - an `:info` completion, or an invoke with no completion at all, is *indeterminate*: it
//!   may take effect at any point after its invoke, or never; its return time is +∞
//!   ([`INDETERMINATE`]);
//! - a `:read` whose value is `nil` matches any state (models drop indeterminate reads:
//!   they have no effect);
//! - time is the position of an event in the history. The checker never orders by a
//!   timestamp; which stamps must agree with the positions depends on the format:
//!   - Jepsen EDN: the order of the entries is the real-time order (Knossos and Porcupine
//!     linearize by position). An `:index`, where present, must increase with it (gaps
//!     are fine; a repeated or decreasing one is an error, also on `:nemesis` entries).
//!     `:time` is kept for display only and may go back: each Jepsen worker stamps it
//!     from its own thread, so neighbouring entries are routinely out of `:time` order;
//!   - Jepsen's text log (`.log`, Porcupine's `etcd_NNN.log`): the order of the lines;
//!   - locksim JSONL, written by locksim with simulated, exact times: `index` must
//!     increase and `time_ns` must not go back; a file that contradicts its own stamps is
//!     malformed.
//!
//!   When two operations' endpoints share a position (only point events can), calls sort
//!   before returns, so the operations count as concurrent: the permissive choice.
//!
//! Malformed histories are errors, never guesses, and each rule is one Jepsen never
//! breaks: a completion without an invoke, a completion whose `:f` differs from its
//! invoke's, an invoke from a process whose previous invoke has no completion at all, an
//! operation name the model does not know, a `:cas` value that is not `[old new]`, a key
//! given twice in one event (JSONL object or EDN map), and the stamps above. What Jepsen
//! does write is accepted as Knossos accepts it: `:fail` completions with an `:error`
//! (dropped), `:info` completions (indeterminate, keeping the invoke's value), invokes
//! left open at the end, record tags (`#jepsen.history.Op{...}`), and fields the checker
//! does not use. A process whose operation completed `:info` may invoke again (Knossos
//! accepts this; Jepsen normally gives the thread a fresh process id): the `:info`
//! operation stays pending forever, concurrent with the process's later operations. In
//! EDN and logs, events of processes that are keywords (such as `:nemesis`) are not
//! client operations and are skipped, as Knossos's `client-op?` skips non-integer
//! processes; integer and string processes are clients.
//! `event` lines (`:type :event`) are point operations (call = return): observations,
//! which a model that does not know their `f` skips (the nemesis's pauses). An `ok`
//! line of a process that never invokes is a point operation only when it names the
//! `client` it served — the `storage` server's own log in locksim; any other completion
//! without an invoke is an error. Each model also skips the operations of the other
//! objects locksim records in the same history (the lock's `acquire`/`release` for
//! `fenced-register`, the storage's `read`/`write` for `fenced-lock`).
//!
//! Jepsen's text log is read with the same conventions as EDN. Porcupine's etcd model
//! is stricter in two ways: a read of `nil` there means the key is absent (here it
//! matches any value, as in Knossos, which Jepsen's etcd test used), and a `:fail` cas
//! there asserts the register did not hold the expected value (here it is dropped). So
//! every linearization Porcupine finds is one here, and a violation found here is one
//! there; check the etcd logs with `--model cas-register --init nil` (Porcupine's
//! initial value is nil). On all 102 of Porcupine's etcd logs the verdicts agree.
//!
//! # The engine
//!
//! [`check`] is the Wing–Gong–Lowe algorithm:
//!
//! - J. M. Wing and C. Gong, "Testing and verifying concurrent objects", *Journal of
//!   Parallel and Distributed Computing* 17(1), 1993: depth-first search over the
//!   operations that may be linearized next, backtracking when an operation's return is
//!   reached before it could be linearized.
//! - G. Lowe, "Testing for linearizability", *Concurrency and Computation: Practice and
//!   Experience* 29(4), 2017: *just-in-time* linearization (only operations invoked
//!   before the first pending return are candidates; the search walks a doubly-linked
//!   list of call/return entries and lifts the entries of linearized operations) and
//!   *memoisation*: a configuration (set of linearized operations, model state) that was
//!   explored once is never explored again. The set is kept as the highest linearized
//!   operation plus the sorted list of the not-yet-linearized operations below it —
//!   small, because only concurrent and indeterminate operations can be in it — and is
//!   hashed incrementally (Zobrist hashing) with a fixed hasher, so runs are repeatable.
//! - A. Horn and D. Kroening, "Faster linearizability checking via P-compositionality",
//!   FORTE 2015: a history of an object that is a product of independent objects (locks
//!   by name, registers by key) is linearizable iff each projection is; [`Model::partition`]
//!   splits the history and each part is checked on its own.
//! - Knossos and Porcupine (A. Athalye, `github.com/anishathalye/porcupine`) for the
//!   conventions above and the shape of the search.
//!
//! Indeterminate operations (return at +∞) are kept out of the list. Equal ones (same
//! `op`) are interchangeable once invoked, so they form a class whose members are only
//! ever linearized in call order, and a configuration records how many of each class are
//! used; they are tried at the just-in-time point (when the walk reaches the first
//! pending return). The history is linearizable once every determinate operation is.
//! The memo also skips a configuration when one already seen has the same determinate
//! operations linearized, a state that subsumes this one ([`Model::subsumes`]; e.g. a
//! fenced lock with an earlier last token) and no more of any class used: that one can do
//! everything this one can, in no more steps, so completeness is kept (a completable
//! configuration with the fewest steps left is never skipped). Two optional model hints
//! keep the pending classes cheap: a *guard* ([`Model::op_guard`]) says in which states
//! an operation can be legal, so only the few matching classes are tried at a dead end,
//! and a *dead* operation ([`Model::op_dead`]) can never be legal again, so whether it was
//! used is forgotten. Without these reductions a few hundred pending `info` operations
//! make the search explode; with them a lock history of a million operations with 1%
//! lost responses checks in well under a second.
//!
//! # Reductions
//!
//! Four more reductions keep histories with many concurrent operations cheap; each skips
//! only moves that another, tried move can replace (see `search.rs` for the arguments),
//! and each is tested against a brute-force oracle. They use [`Model::effect`], a hint
//! about what an operation does regardless of the state:
//!
//! 1. *forced moves*: a legal operation that never changes the state (a read) is
//!    linearized at once, without trying alternatives;
//! 2. *equal operations*: of pending operations with equal `op` (two writes of the same
//!    value), only the one that returns first is tried;
//! 3. *overwrites reaching the same state*: a blind write of `c` is not tried when an
//!    operation that returns first leads to `c` as well (a compare-and-set to `c`);
//! 4. *absorbed overwrites*: a blind write whose value no operation can observe is
//!    linearized just before another blind write, which hides it.
//!
//! On the cas-register histories of [`generate::cas_history`] (values 0–4, a third each
//! of reads, writes and compare-and-sets) the search alone refutes 10,000 operations by
//! 20 processes with one corrupted read in about 0.3 s; by 30 processes in about 4 s.
//!
//! # Before and around the search
//!
//! The search proves a linearizable history fast (it needs one order) but refutes a
//! broken one slowly: it must try every interleaving of the concurrent operations that
//! come before the violation, and by 40 processes those are too many for any budget. Two
//! stages find most violations without that, on parts whose operations all have a known
//! [`Effect`] (the register and mutex models give them):
//!
//! - the *pre-pass* (`refute.rs`) checks necessary conditions in near-linear time: an
//!   operation legal in one state only ([`Model::requires`]: a read of `v`, a
//!   compare-and-set from `v`) needs a setter of that state that can precede it with no
//!   setter forced in between. When none exists the history is refuted with a
//!   [`Refutation`] naming the operations that prove it; when exactly one exists, the
//!   orders that forces narrow the intervals of the history the search then works on
//!   (every linearization respects them), and the pass repeats.
//! - *windows* (`window.rs`, `stages.rs`): with a budget set, a first search gets an
//!   eighth of it; when it runs out, the operations around the point where it got stuck
//!   are searched alone, from every state the object can reach (a window of a
//!   linearizable history is linearizable from one of them). A window no state can
//!   linearize refutes the history ([`Window`]); otherwise the search goes on with the
//!   rest of the budget.
//!
//! Both only ever refute, so no verdict they give is wrong; the only cost to a history
//! they cannot refute is the windows' time (at most an eighth of what is left), which a
//! history that needed nearly all of its budget can miss. Each is tested against the
//! brute-force oracle, and the pre-pass's explanations are replayed step by step from
//! the history alone. With them the corrupted 10,000-operation histories
//! above are refuted in milliseconds at 20 to 50 processes (`locksim bench`).
//!
//! # Budgets
//!
//! A time budget ([`CheckOptions::timeout`]) and a cap on the memo's size
//! ([`CheckOptions::memo_limit`], [`DEFAULT_MEMO_LIMIT`] unless set) bound the search;
//! past either the verdict is [`LinVerdict::Unknown`], never a guess, and
//! [`SearchStats::stopped`] says which ran out. `locksim check` uses
//! [`DEFAULT_TIMEOUT`] unless `--timeout` says otherwise. (`std::time::Instant` is fine
//! here: the checker runs outside simulations.)
//!
//! # Fast path for fenced locks
//!
//! Successful acquires of a fenced lock carry unique, increasing tokens, which fix their
//! order; each determinate release belongs to its process's preceding grant; each hold
//! without a release must be ended by the next expiry. The linearization is then forced,
//! and checking it is a sort plus one greedy pass over real time — see
//! [`FencedLock`]'s docs. When indeterminate operations are present and the forced
//! order without them fails, violations that no indeterminate operation could explain
//! (a token granted twice, token order against real time, a hold that nothing could end
//! before the next grant) are still reported at once; otherwise the search decides.
//!
//! # Explanations
//!
//! When a history is not linearizable the search reports the deepest dead end it met:
//! the longest linearizable prefix found, the operation that could not be placed after
//! it, the operations concurrent with that one, and the model state at that point
//! ([`Explanation`]); [`render_svg`] draws it, one lane per process. A
//! [`CheckOutcome`] builds descriptions, text and picture only when asked
//! ([`CheckOutcome::summary`], [`CheckOutcome::text`], [`CheckOutcome::svg`]), so the
//! per-seed checks of a sweep pay for none of them.

mod cli;
mod edn_input;
mod explain;
mod fenced_lock;
mod fenced_register;
pub mod generate;
mod jepsen_log;
mod jsonl;
mod memo;
mod model;
mod mutex;
mod ops;
mod refute;
mod register;
mod search;
mod stages;
mod svg;
mod unobserved;
mod window;

#[cfg(test)]
mod jepsen_tests;
#[cfg(test)]
mod refute_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod window_tests;

pub use cli::{
    check_events, check_file, check_file_opts, check_raw, check_raw_opts, memo_limit_from_mib,
    raw_ops_from_file, timeout_from_secs, BudgetError, CheckOutcome, MAX_MEMO_LIMIT_MIB,
    MODEL_NAMES,
};
pub use edn_input::raw_ops_from_edn;
pub use explain::{
    explanation_text, Derivation, Explanation, LinVerdict, OpInfo, Refutation, Window,
};
pub use fenced_lock::{FencedLock, LockOp, LockState};
pub use fenced_register::{FencedRegister, FencedRegisterOp, FencedRegisterState};
pub use jepsen_log::raw_ops_from_jepsen_log;
pub use jsonl::{raw_ops_from_jsonl, raw_ops_from_jsonl_reader};
pub use model::{Effect, Model};
pub use mutex::{Mutex, MutexOp};
pub use ops::{events_to_edn, raw_ops_from_events, InputError, Operation, RawOp, INDETERMINATE};
pub use register::{Register, RegisterOp};
pub use search::{
    CheckOptions, SearchStats, Stop, DEFAULT_MEMO_LIMIT, DEFAULT_TIMEOUT, MAX_TIMEOUT,
};
pub use stages::{check, check_with_stats};
pub use svg::render_svg;
