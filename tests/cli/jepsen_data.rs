//! The published Jepsen histories, when a copy is at hand: every Knossos `.edn` history
//! under `data/` and every Porcupine `etcd_NNN.log` under `LOCKSIM_JEPSEN_DATA`
//! (searched recursively) gets the published verdict, and none is refused as bad input.
//!
//! Verdicts: Knossos's folder (`MODEL/good`, `MODEL/bad`; Knossos checks `cas-register`
//! from 0 in `test/knossos/core_test.clj`, `mutex` free); Porcupine's
//! `checkJepsen(t, N, correct)` calls in its `porcupine_test.go`, found in the same scan
//! (its etcd model starts from nil). Knossos models locksim lacks (`multi-register`) are
//! skipped and counted. Run with
//! `LOCKSIM_JEPSEN_DATA=DIR cargo test --profile fast-build --test cli jepsen_data -- --ignored --nocapture`.

use locksim::history::edn::{read_history_forms, Value};
use locksim::linearizability::{check_file_opts, CheckOptions, LinVerdict, MODEL_NAMES};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Every file under `dir`, in sorted order.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// Porcupine's published verdicts: `checkJepsen(t, 12, false)` → 12 → false.
fn porcupine_verdicts(files: &[PathBuf]) -> BTreeMap<u32, bool> {
    let mut out = BTreeMap::new();
    for f in files.iter().filter(|f| f.ends_with("porcupine_test.go")) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for call in text.split("checkJepsen(t, ").skip(1) {
            let args: Vec<&str> = call.split(')').next().unwrap_or("").split(", ").collect();
            if let [n, ok] = args[..] {
                if let (Ok(n), Ok(ok)) = (n.trim().parse(), ok.trim().parse()) {
                    out.insert(n, ok);
                }
            }
        }
    }
    out
}

/// What a history is checked with and what it should give.
struct Case {
    /// Model folder (Knossos) or `etcd` (Porcupine), for the tally.
    group: String,
    model: String,
    init: Option<&'static str>,
    /// The published verdict (None: none published).
    linearizable: Option<bool>,
}

fn case_of(f: &Path, porcupine: &BTreeMap<u32, bool>) -> Option<Case> {
    let name = f.file_name()?.to_str()?;
    let parent = |k: usize| {
        f.ancestors()
            .nth(k)
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string()
    };
    if let Some(n) = name
        .strip_prefix("etcd_")
        .and_then(|n| n.strip_suffix(".log"))
    {
        return Some(Case {
            group: "etcd (porcupine)".into(),
            model: "cas-register".into(),
            init: Some("nil"),
            linearizable: n.parse().ok().and_then(|n: u32| porcupine.get(&n).copied()),
        });
    }
    if !name.ends_with(".edn") {
        return None;
    }
    let linearizable = match parent(1).as_str() {
        "good" => Some(true),
        "bad" => Some(false),
        _ => None,
    };
    let model = parent(2);
    Some(Case {
        group: model.clone(),
        init: (model == "cas-register").then_some("0"),
        model,
        linearizable,
    })
}

/// Whether an EDN history has an entry whose `:time` is earlier than the one before.
fn time_goes_back(f: &Path) -> bool {
    let text = std::fs::read_to_string(f).unwrap_or_default();
    let times: Vec<i64> = read_history_forms(&text)
        .unwrap_or_default()
        .iter()
        .filter_map(|(_, v)| v.get("time").and_then(Value::as_int))
        .collect();
    times.windows(2).any(|w| w[1] < w[0])
}

#[derive(Default)]
struct Tally {
    files: usize,
    agree: usize,
    no_verdict: usize,
    time_back: usize,
    skipped: usize,
}

#[test]
#[ignore = "needs LOCKSIM_JEPSEN_DATA: a folder holding Knossos's data/ and/or Porcupine's repository"]
fn published_histories_get_the_published_verdicts() {
    let Some(root) = std::env::var_os("LOCKSIM_JEPSEN_DATA") else {
        println!("LOCKSIM_JEPSEN_DATA is not set: nothing to scan");
        return;
    };
    let started = Instant::now();
    let mut files = Vec::new();
    walk(Path::new(&root), &mut files);
    let porcupine = porcupine_verdicts(&files);
    let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
    let mut problems: Vec<String> = Vec::new();
    let opts = CheckOptions {
        timeout: Some(Duration::from_secs(120)),
        ..CheckOptions::default()
    };
    for f in &files {
        let Some(case) = case_of(f, &porcupine) else {
            continue;
        };
        let t = tally.entry(case.group.clone()).or_default();
        t.files += 1;
        if f.extension().is_some_and(|e| e == "edn") {
            t.time_back += usize::from(time_goes_back(f));
        }
        if !MODEL_NAMES.contains(&case.model.as_str()) {
            t.skipped += 1;
            continue;
        }
        match check_file_opts(f, &case.model, case.init, &opts) {
            Err(e) => problems.push(format!("refused (exit 2): {e}")),
            Ok(out) => match (case.linearizable, &out.verdict) {
                (None, _) => t.no_verdict += 1,
                (Some(want), v) if *v != LinVerdict::Unknown && want == (out.exit_code() == 0) => {
                    t.agree += 1
                }
                (Some(want), _) => problems.push(format!(
                    "{}: published {}, locksim says {}",
                    f.display(),
                    if want {
                        "linearizable"
                    } else {
                        "not linearizable"
                    },
                    out.summary()
                )),
            },
        }
    }
    for (group, t) in &tally {
        println!(
            "{group}: {} files, {} agree, {} without a published verdict, {} skipped (model not in locksim), {} with :time out of order",
            t.files, t.agree, t.no_verdict, t.skipped, t.time_back
        );
    }
    println!("wall time {:.2} s", started.elapsed().as_secs_f64());
    assert!(!tally.is_empty(), "no histories found under {root:?}");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
