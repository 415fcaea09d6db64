//! The library side of `locksim check HISTORY --model NAME [--init EDN] [--timeout S]`.
//!
//! A check returns a [`CheckOutcome`]: the verdict and what it cost, plus what is needed
//! to describe the operations. Descriptions, the explanation text and the SVG picture
//! are built only when asked for ([`CheckOutcome::text`], [`CheckOutcome::svg`], ...),
//! so a caller that only needs the verdict (the per-seed checks of a sweep) pays nothing
//! for them.

use super::edn_input::raw_ops_from_edn;
use super::explain::{explanation_text_with, LinVerdict, OpInfo};
use super::fenced_lock::FencedLock;
use super::fenced_register::FencedRegister;
use super::jepsen_log::raw_ops_from_jepsen_log;
use super::jsonl::raw_ops_from_jsonl_reader;
use super::model::Model;
use super::mutex::Mutex;
use super::ops::{raw_ops_from_events, InputError, Operation, RawOp};
use super::register::Register;
use super::search::{CheckOptions, SearchStats, Stop, MAX_TIMEOUT};
use super::stages::check_with_stats;
use super::svg::render_svg;
use crate::history::edn::{self, Value};
use crate::history::Event;
use crate::plural::plural;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The models `check` knows, by name.
pub const MODEL_NAMES: &[&str] = &[
    "register",
    "cas-register",
    "mutex",
    "fenced-lock",
    "fenced-register",
];

/// Operations drawn in the picture of a history without a violation.
const HEAD_OPS: usize = 80;

/// What an outcome keeps to describe its operations on request.
trait Detail: Send + Sync {
    /// The view of operation `i`.
    fn op_info(&self, i: usize) -> Option<OpInfo>;
    /// Views of every operation.
    fn all(&self) -> Vec<OpInfo>;
    /// Views of the first `k` operations by call.
    fn head(&self, k: usize) -> Vec<OpInfo>;
}

struct Checked<M: Model> {
    model: M,
    ops: Vec<Operation<M::Op>>,
    procs: Vec<String>,
}

impl<M> Detail for Checked<M>
where
    M: Model + Send + Sync,
    M::Op: Send + Sync,
{
    fn op_info(&self, i: usize) -> Option<OpInfo> {
        self.ops
            .get(i)
            .map(|o| OpInfo::of(&self.model, o, &self.procs))
    }

    fn all(&self) -> Vec<OpInfo> {
        OpInfo::from_ops(&self.model, &self.ops, &self.procs)
    }

    fn head(&self, k: usize) -> Vec<OpInfo> {
        let ops = &self.ops;
        let mut idx: Vec<usize> = (0..ops.len()).collect();
        if idx.len() > k && k > 0 {
            idx.select_nth_unstable_by_key(k - 1, |&i| (ops[i].call, i));
            idx.truncate(k);
        }
        idx.sort_by_key(|&i| (ops[i].call, i));
        idx.iter()
            .map(|&i| OpInfo::of(&self.model, &ops[i], &self.procs))
            .collect()
    }
}

/// The result of checking one history.
#[derive(Clone)]
pub struct CheckOutcome {
    /// The verdict.
    pub verdict: LinVerdict,
    /// The model's name.
    pub model: String,
    /// The file checked (empty when not from a file).
    pub file: String,
    /// Number of operations checked (after dropping failed ones).
    pub ops: usize,
    /// Wall time spent checking (after reading and parsing).
    pub elapsed: Duration,
    /// What the search cost, and which budget ran out if one did.
    pub stats: SearchStats,
    /// The options (budgets) the check ran with.
    pub options: CheckOptions,
    detail: Arc<dyn Detail>,
}

impl fmt::Debug for CheckOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CheckOutcome")
            .field("verdict", &self.verdict)
            .field("model", &self.model)
            .field("file", &self.file)
            .field("ops", &self.ops)
            .field("elapsed", &self.elapsed)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl CheckOutcome {
    /// The `locksim check` exit code: 0 linearizable, 1 violation, 3 unknown.
    pub fn exit_code(&self) -> i32 {
        self.verdict.exit_code()
    }

    /// The view of operation `i` (an index of the explanation), described on demand.
    pub fn op_info(&self, i: usize) -> Option<OpInfo> {
        self.detail.op_info(i)
    }

    /// Why the verdict is unknown, in words (empty otherwise).
    fn unknown_reason(&self) -> String {
        if self.verdict != LinVerdict::Unknown {
            return String::new();
        }
        match self.stats.stopped {
            Some(Stop::Memory) => format!(
                "the search's memo reached its cap ({} MiB)",
                self.options.memo_limit.unwrap_or(0) >> 20
            ),
            _ => match self.options.timeout {
                Some(t) => format!("the time budget ({:.3} s) ran out", t.as_secs_f64()),
                None => "the time budget ran out".to_string(),
            },
        }
    }

    /// One line: the verdict, and for a violation the operation that cannot be placed,
    /// the length of the longest linearizable prefix, the state there and how many
    /// operations are concurrent with it. Cheap: describes one operation.
    pub fn summary(&self) -> String {
        match &self.verdict {
            LinVerdict::Linearizable => format!(
                "linearizable: {} against the {} model",
                plural(self.ops as u64, "operation"),
                self.model
            ),
            LinVerdict::Unknown => format!(
                "unknown: {} before the search over {} finished (model {})",
                self.unknown_reason(),
                plural(self.ops as u64, "operation"),
                self.model
            ),
            LinVerdict::NotLinearizable(e) => {
                let part = if e.partition.is_empty() {
                    String::new()
                } else {
                    format!(" on {}", e.partition)
                };
                let label = |i: usize| {
                    self.op_info(i)
                        .map_or_else(|| format!("operation {i}"), |o| o.label())
                };
                let failing = label(e.failing);
                if let Some(r) = &e.refutation {
                    let why = match r.blocker {
                        Some(q) => format!("{} overwrites every possible source", label(q)),
                        None => "nothing before it leaves that".to_string(),
                    };
                    return format!(
                        "not linearizable against the {} model{part}: {failing} needs {} and no operation can leave it that ({why}; refuted before any search)",
                        self.model, e.state
                    );
                }
                let window = e.window.as_ref().map_or_else(String::new, |w| {
                    format!(
                        " in a window of {} that no starting state can linearize",
                        plural(w.operations as u64, "operation")
                    )
                });
                format!(
                    "not linearizable against the {} model{part}: {failing} cannot be placed after the longest linearizable prefix found{window} ({}; {}); {} not linearized",
                    self.model,
                    plural(e.prefix.len() as u64, "operation"),
                    e.state,
                    plural(e.concurrent.len() as u64, "concurrent operation"),
                )
            }
        }
    }

    /// A human report: the verdict, and for a violation the explanation (the end of the
    /// longest linearizable prefix, the operation that cannot follow it, the state there
    /// and the operations concurrent with it).
    pub fn text(&self) -> String {
        match &self.verdict {
            LinVerdict::NotLinearizable(e) => {
                explanation_text_with(|i| self.op_info(i).expect("explanations index ops"), e)
            }
            LinVerdict::Unknown => format!(
                "UNKNOWN: {} before the search over {} finished (model {}).\n",
                self.unknown_reason(),
                plural(self.ops as u64, "operation"),
                self.model
            ),
            LinVerdict::Linearizable => format!(
                "linearizable: {} against the {} model ({:.1} ms).\n",
                plural(self.ops as u64, "operation"),
                self.model,
                self.elapsed.as_secs_f64() * 1e3
            ),
        }
    }

    /// A standalone SVG picture: the history around the violation, or (no violation) its
    /// first operations.
    pub fn svg(&self) -> String {
        match &self.verdict {
            LinVerdict::NotLinearizable(e) => render_svg(&self.detail.all(), Some(e)),
            _ => render_svg(&self.detail.head(HEAD_OPS), None),
        }
    }

    /// A JSON report: `{file, model, verdict, ops, elapsed_ms, stats, explanation}`;
    /// `stats` has `configurations`, `memo_bytes` and `stopped` (`"time"`, `"memory"` or
    /// null); the explanation (null unless violated) has `partition`, `prefix_length`,
    /// `prefix_tail` (the last 50 linearized operations), `failing`, `concurrent`,
    /// `state`, `narrowed` (how many intervals the pre-pass narrowed before the search),
    /// `window` (null unless found in a window: `from`, `to`, `first`,
    /// `operations`, `states`; see [`super::Window`]) and `refutation` (null unless the
    /// pre-pass refuted the history: `blocker`, `last_source`, `next_source`, `initial`,
    /// `later_indeterminate`, `derived`; see [`super::Refutation`]).
    pub fn to_json(&self) -> serde_json::Value {
        let explanation = match &self.verdict {
            LinVerdict::NotLinearizable(e) => {
                let op = |i: usize| serde_json::to_value(self.op_info(i)).unwrap_or_default();
                let tail = e.prefix.len().saturating_sub(50);
                serde_json::json!({
                    "partition": e.partition,
                    "prefix_length": e.prefix.len(),
                    "prefix_tail": e.prefix[tail..].iter().map(|&i| op(i)).collect::<Vec<_>>(),
                    "failing": op(e.failing),
                    "concurrent": e.concurrent.iter().map(|&i| op(i)).collect::<Vec<_>>(),
                    "state": e.state,
                    "narrowed": e.narrowed,
                    "window": e.window.as_ref().map(|w| serde_json::json!({
                        "from": w.from,
                        "to": w.to,
                        "first": op(w.first),
                        "operations": w.operations,
                        "states": w.states,
                    })),
                    "refutation": e.refutation.as_ref().map(|r| serde_json::json!({
                        "blocker": r.blocker.map(op),
                        "last_source": r.last_source.map(op),
                        "next_source": r.next_source.map(op),
                        "initial": r.initial,
                        "later_indeterminate": r.later_indeterminate,
                        "derived": r.derived.iter().map(|d| serde_json::json!({
                            "before": op(d.before),
                            "after": op(d.after),
                            "reader": op(d.reader),
                            "source": op(d.source),
                        })).collect::<Vec<_>>(),
                    })),
                })
            }
            _ => serde_json::Value::Null,
        };
        serde_json::json!({
            "file": self.file,
            "model": self.model,
            "verdict": self.verdict.name(),
            "ops": self.ops,
            "elapsed_ms": self.elapsed.as_secs_f64() * 1e3,
            "stats": self.stats,
            "explanation": explanation,
        })
    }
}

/// A `--timeout` in seconds as a budget: finite, positive and at most [`MAX_TIMEOUT`]
/// (so that no budget can overflow `Instant` arithmetic).
pub fn timeout_from_secs(secs: f64) -> Result<Duration, BudgetError> {
    if !(secs.is_finite() && secs > 0.0) {
        return Err(BudgetError::Seconds(secs));
    }
    if secs > MAX_TIMEOUT.as_secs_f64() {
        return Err(BudgetError::TooLong(secs));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| BudgetError::Seconds(secs))
}

/// A `--memo-limit` in MiB as a byte cap: at least 1 MiB, at most [`MAX_MEMO_LIMIT_MIB`].
pub fn memo_limit_from_mib(mib: u64) -> Result<usize, BudgetError> {
    if mib == 0 || mib > MAX_MEMO_LIMIT_MIB {
        return Err(BudgetError::Mib(mib));
    }
    usize::try_from(mib)
        .ok()
        .and_then(|m| m.checked_mul(1 << 20))
        .ok_or(BudgetError::TooBig(mib))
}

/// A `--timeout` or `--memo-limit` out of range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BudgetError {
    /// Seconds that are not a positive, finite number.
    Seconds(f64),
    /// Seconds beyond [`MAX_TIMEOUT`].
    TooLong(f64),
    /// MiB outside 1 to [`MAX_MEMO_LIMIT_MIB`].
    Mib(u64),
    /// MiB this machine cannot address.
    TooBig(u64),
}

impl std::fmt::Display for BudgetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BudgetError::Seconds(secs) => write!(
                f,
                "expected a positive, finite number of seconds, got {secs}"
            ),
            BudgetError::TooLong(secs) => write!(
                f,
                "{secs} s is more than the maximum of {} s (one week)",
                MAX_TIMEOUT.as_secs()
            ),
            BudgetError::Mib(mib) => write!(
                f,
                "expected a number of MiB from 1 to {MAX_MEMO_LIMIT_MIB}, got {mib}"
            ),
            BudgetError::TooBig(mib) => {
                write!(f, "{mib} MiB does not fit this machine's address space")
            }
        }
    }
}

impl std::error::Error for BudgetError {}

/// The largest `--memo-limit` accepted, in MiB (1 TiB).
pub const MAX_MEMO_LIMIT_MIB: u64 = 1 << 20;

/// Read a history file into operations: `.edn` files as Jepsen EDN, `.log` files as
/// Jepsen's text log, anything else as locksim JSONL. Errors name the file and, where
/// there is one, the line.
pub fn raw_ops_from_file(path: &Path) -> Result<Vec<RawOp>, InputError> {
    let file = path.display().to_string();
    match path.extension().and_then(|e| e.to_str()) {
        Some("edn") => {
            let text = read_text(path).map_err(|e| e.in_file(&file))?;
            raw_ops_from_edn(&text).map_err(|mut e| {
                if text.trim_start().starts_with("{\"") {
                    e.reason.push_str(
                        " (this looks like locksim JSONL, one JSON object per line: only files named *.edn are read as EDN)",
                    );
                }
                e.in_file(&file)
            })
        }
        Some("log") => {
            let text = read_text(path).map_err(|e| e.in_file(&file))?;
            raw_ops_from_jepsen_log(&text).map_err(|e| e.in_file(&file))
        }
        _ => {
            let f = std::fs::File::open(path).map_err(cannot_read)?;
            raw_ops_from_jsonl_reader(std::io::BufReader::with_capacity(1 << 16, f))
                .map_err(|e| e.in_file(&file))
        }
    }
}

fn cannot_read(e: std::io::Error) -> InputError {
    InputError::new(0, format!("cannot read: {e}"))
}

/// A whole file as UTF-8 text; an error names the line of the first invalid byte.
fn read_text(path: &Path) -> Result<String, InputError> {
    let bytes = std::fs::read(path).map_err(cannot_read)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
        let col = at
            - bytes[..at]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1);
        InputError::new(
            line,
            format!(
                "not valid UTF-8 (byte {} of the line); a history is UTF-8 text",
                col + 1
            ),
        )
    })
}

/// Check a history file: `.edn` files are Jepsen EDN, `.log` files Jepsen's text log,
/// anything else locksim JSONL.
/// `init` is the initial value (EDN) for `register`, `cas-register` and
/// `fenced-register` (default 0). Errors name the file, the line and the reason. The
/// memo cap is the default ([`CheckOptions::default`]).
pub fn check_file(
    path: &Path,
    model: &str,
    init: Option<&str>,
    timeout: Option<Duration>,
) -> Result<CheckOutcome, InputError> {
    let opts = CheckOptions {
        timeout,
        ..CheckOptions::default()
    };
    check_file_opts(path, model, init, &opts)
}

/// [`check_file`] with every option.
pub fn check_file_opts(
    path: &Path,
    model: &str,
    init: Option<&str>,
    opts: &CheckOptions,
) -> Result<CheckOutcome, InputError> {
    let file = path.display().to_string();
    let raw = raw_ops_from_file(path)?;
    let mut out = check_raw_opts(&raw, model, init, opts).map_err(|e| e.in_file(&file))?;
    out.file = file;
    Ok(out)
}

/// Check locksim events (e.g. a run's history) against a model.
pub fn check_events(
    events: &[Event],
    model: &str,
    init: Option<&str>,
    timeout: Option<Duration>,
) -> Result<CheckOutcome, InputError> {
    check_raw(&raw_ops_from_events(events)?, model, init, timeout)
}

/// Check raw operations against the model called `model`.
pub fn check_raw(
    raw: &[RawOp],
    model: &str,
    init: Option<&str>,
    timeout: Option<Duration>,
) -> Result<CheckOutcome, InputError> {
    let opts = CheckOptions {
        timeout,
        ..CheckOptions::default()
    };
    check_raw_opts(raw, model, init, &opts)
}

/// [`check_raw`] with every option.
pub fn check_raw_opts(
    raw: &[RawOp],
    model: &str,
    init: Option<&str>,
    opts: &CheckOptions,
) -> Result<CheckOutcome, InputError> {
    let init_value = match init {
        None => Value::Int(0),
        Some(s) => edn::parse(s).map_err(|e| InputError::new(0, format!("--init: {e}")))?,
    };
    let no_init = |m: &str| {
        if init.is_some() {
            Err(InputError::new(
                0,
                format!("--init is not used by the {m} model"),
            ))
        } else {
            Ok(())
        }
    };
    let opts = *opts;
    match model {
        "register" | "cas-register" => {
            let mut m = Register::new(init_value, model == "cas-register");
            let ops = m.ops_from_raw(raw)?;
            let procs = m.processes().to_vec();
            Ok(run(m, ops, procs, model, opts))
        }
        "mutex" => {
            no_init(model)?;
            let mut m = Mutex::new();
            let ops = m.ops_from_raw(raw)?;
            let procs = m.processes().to_vec();
            Ok(run(m, ops, procs, model, opts))
        }
        "fenced-lock" => {
            no_init(model)?;
            let mut m = FencedLock::new(true);
            let ops = m.ops_from_raw(raw)?;
            let procs = m.processes().to_vec();
            Ok(run(m, ops, procs, model, opts))
        }
        "fenced-register" => {
            let mut m = FencedRegister::new(init_value);
            let ops = m.ops_from_raw(raw)?;
            let procs = m.processes().to_vec();
            Ok(run(m, ops, procs, model, opts))
        }
        other => Err(InputError::new(
            0,
            format!(
                "unknown model {other:?}{}; expected one of {}",
                crate::did_you_mean::closest(other, MODEL_NAMES.iter().copied())
                    .map_or(String::new(), |m| format!(" (did you mean {m:?}?)")),
                MODEL_NAMES.join(", ")
            ),
        )),
    }
}

fn run<M>(
    m: M,
    ops: Vec<Operation<M::Op>>,
    procs: Vec<String>,
    name: &str,
    opts: CheckOptions,
) -> CheckOutcome
where
    M: Model + Send + Sync + 'static,
    M::Op: Send + Sync,
{
    let start = Instant::now();
    let (verdict, stats) = check_with_stats(&m, &ops, opts);
    let elapsed = start.elapsed();
    CheckOutcome {
        verdict,
        model: name.to_string(),
        file: String::new(),
        ops: ops.len(),
        elapsed,
        stats,
        options: opts,
        detail: Arc::new(Checked {
            model: m,
            ops,
            procs,
        }),
    }
}
