//! The library side of `locksim check HISTORY --model NAME [--init EDN] [--timeout S]`.

use super::explain::{explanation_text, LinVerdict, OpInfo};
use super::fenced_lock::FencedLock;
use super::fenced_register::FencedRegister;
use super::model::{Model, Operation};
use super::mutex::Mutex;
use super::ops::{
    raw_ops_from_edn, raw_ops_from_events, raw_ops_from_jsonl_reader, InputError, RawOp,
};
use super::register::Register;
use super::search::{check, CheckOptions};
use super::svg::render_svg;
use crate::edn::{self, Value};
use crate::history::Event;
use std::path::Path;
use std::time::{Duration, Instant};

/// The models `check` knows, by name.
pub const MODEL_NAMES: &[&str] = &[
    "register",
    "cas-register",
    "mutex",
    "fenced-lock",
    "fenced-register",
];

/// The result of checking one history.
#[derive(Clone, Debug)]
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
    /// Views of the operations the explanation and picture refer to (all operations when
    /// the history is not linearizable; empty otherwise).
    pub op_info: Vec<OpInfo>,
    /// A human report: the verdict, and for a violation the explanation.
    pub text: String,
    /// A standalone SVG picture of the history around the violation.
    pub svg: String,
}

impl CheckOutcome {
    /// The `locksim check` exit code: 0 linearizable, 1 violation, 3 unknown.
    pub fn exit_code(&self) -> i32 {
        self.verdict.exit_code()
    }

    /// A JSON report: `{file, model, verdict, ops, elapsed_ms, explanation}`; the
    /// explanation (null unless violated) has `partition`, `prefix_length`, `prefix_tail`
    /// (the last 50 linearized operations), `failing`, `concurrent` and `state`.
    pub fn to_json(&self) -> serde_json::Value {
        let explanation = match &self.verdict {
            LinVerdict::NotLinearizable(e) => {
                let op = |i: usize| serde_json::to_value(&self.op_info[i]).unwrap_or_default();
                let tail = e.prefix.len().saturating_sub(50);
                serde_json::json!({
                    "partition": e.partition,
                    "prefix_length": e.prefix.len(),
                    "prefix_tail": e.prefix[tail..].iter().map(|&i| op(i)).collect::<Vec<_>>(),
                    "failing": op(e.failing),
                    "concurrent": e.concurrent.iter().map(|&i| op(i)).collect::<Vec<_>>(),
                    "state": e.state,
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
            "explanation": explanation,
        })
    }
}

/// Read a history file into operations: `.edn` files as Jepsen EDN, anything else as
/// locksim JSONL. Errors name the file and, where there is one, the line.
pub fn raw_ops_from_file(path: &Path) -> Result<Vec<RawOp>, InputError> {
    let file = path.display().to_string();
    let cannot = |e: std::io::Error| InputError::new(0, format!("cannot read: {e}")).in_file(&file);
    if path.extension().is_some_and(|e| e == "edn") {
        let bytes = std::fs::read(path).map_err(cannot)?;
        let text = String::from_utf8(bytes).map_err(|e| {
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
            .in_file(&file)
        })?;
        raw_ops_from_edn(&text).map_err(|mut e| {
            if text.trim_start().starts_with("{\"") {
                e.reason.push_str(
                    " (this looks like locksim JSONL, one JSON object per line: only files named *.edn are read as EDN)",
                );
            }
            e.in_file(&file)
        })
    } else {
        let f = std::fs::File::open(path).map_err(cannot)?;
        raw_ops_from_jsonl_reader(std::io::BufReader::with_capacity(1 << 16, f))
            .map_err(|e| e.in_file(&file))
    }
}

/// Check a history file: `.edn` files are Jepsen EDN, anything else locksim JSONL.
/// `init` is the initial value (EDN) for `register`, `cas-register` and
/// `fenced-register` (default 0). Errors name the file, the line and the reason.
pub fn check_file(
    path: &Path,
    model: &str,
    init: Option<&str>,
    timeout: Option<Duration>,
) -> Result<CheckOutcome, InputError> {
    let file = path.display().to_string();
    let raw = raw_ops_from_file(path)?;
    let mut out = check_raw(&raw, model, init, timeout).map_err(|e| e.in_file(&file))?;
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
    let opts = CheckOptions {
        timeout,
        ..CheckOptions::default()
    };
    match model {
        "register" | "cas-register" => {
            let mut m = Register::new(init_value, model == "cas-register");
            let ops = m.ops_from_raw(raw)?;
            let procs = m.processes().to_vec();
            Ok(run(&m, &ops, &procs, model, opts))
        }
        "mutex" => {
            no_init(model)?;
            let mut m = Mutex::new();
            let ops = m.ops_from_raw(raw)?;
            let procs = m.processes().to_vec();
            Ok(run(&m, &ops, &procs, model, opts))
        }
        "fenced-lock" => {
            no_init(model)?;
            let mut m = FencedLock::new(true);
            let ops = m.ops_from_raw(raw)?;
            let procs = m.processes().to_vec();
            Ok(run(&m, &ops, &procs, model, opts))
        }
        "fenced-register" => {
            let mut m = FencedRegister::new(init_value);
            let ops = m.ops_from_raw(raw)?;
            let procs = m.processes().to_vec();
            Ok(run(&m, &ops, &procs, model, opts))
        }
        other => Err(InputError::new(
            0,
            format!(
                "unknown model {other:?}; expected one of {}",
                MODEL_NAMES.join(", ")
            ),
        )),
    }
}

fn run<M: Model>(
    m: &M,
    ops: &[Operation<M::Op>],
    procs: &[String],
    name: &str,
    opts: CheckOptions,
) -> CheckOutcome {
    let start = Instant::now();
    let verdict = check(m, ops, opts);
    let elapsed = start.elapsed();
    let (op_info, text, svg) = match &verdict {
        LinVerdict::NotLinearizable(e) => {
            let info = OpInfo::from_ops(m, ops, procs);
            let text = explanation_text(&info, e);
            let svg = render_svg(&info, Some(e));
            (info, text, svg)
        }
        v => {
            let head: Vec<Operation<M::Op>> = {
                let mut idx: Vec<usize> = (0..ops.len()).collect();
                if idx.len() > 80 {
                    idx.select_nth_unstable_by_key(79, |&i| (ops[i].call, i));
                    idx.truncate(80);
                }
                idx.sort_by_key(|&i| (ops[i].call, i));
                idx.iter().map(|&i| ops[i].clone()).collect()
            };
            let info = OpInfo::from_ops(m, &head, procs);
            let svg = render_svg(&info, None);
            let text = match v {
                LinVerdict::Unknown => format!(
                    "UNKNOWN: the time budget ran out before the search over {} operations finished (model {name}).\n",
                    ops.len()
                ),
                _ => format!(
                    "linearizable: {} operations against the {name} model ({:.1} ms).\n",
                    ops.len(),
                    elapsed.as_secs_f64() * 1e3
                ),
            };
            (Vec::new(), text, svg)
        }
    };
    CheckOutcome {
        verdict,
        model: name.to_string(),
        file: String::new(),
        ops: ops.len(),
        elapsed,
        op_info,
        text,
        svg,
    }
}
