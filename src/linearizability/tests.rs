//! Tests: Knossos data, proptest against a brute-force oracle, generated linearizable
//! histories, malformed input, fast path against search.

use super::*;
use crate::history::edn::Value;
use crate::history::{Event, EventType};
use proptest::prelude::*;
use std::path::PathBuf;
use std::time::Duration;

// ---------------------------------------------------------------- oracle

/// Brute force: try every order consistent with real time, with indeterminate operations
/// optionally left out.
pub(super) fn oracle<M: Model>(m: &M, ops: &[Operation<M::Op>]) -> bool {
    fn go<M: Model>(m: &M, ops: &[Operation<M::Op>], used: &mut Vec<bool>, s: &M::State) -> bool {
        // Done when every determinate op is used.
        if ops
            .iter()
            .zip(used.iter())
            .all(|(o, &u)| u || o.is_indeterminate())
        {
            return true;
        }
        for i in 0..ops.len() {
            if used[i] {
                continue;
            }
            // `i` can go next iff no unused determinate op must precede it.
            let blocked = (0..ops.len()).any(|j| {
                j != i && !used[j] && !ops[j].is_indeterminate() && ops[j].ret < ops[i].call
            });
            if blocked {
                continue;
            }
            if let Some(n) = m.step(s, &ops[i].op) {
                used[i] = true;
                if go(m, ops, used, &n) {
                    return true;
                }
                used[i] = false;
            }
        }
        false
    }
    let mut used = vec![false; ops.len()];
    go(m, ops, &mut used, &m.init())
}

fn verdict<M: Model>(m: &M, ops: &[Operation<M::Op>], fast: bool) -> LinVerdict {
    check(
        m,
        ops,
        CheckOptions {
            timeout: None,
            memo_limit: None,
            fast_path: fast,
            prepass: true,
            windows: true,
        },
    )
}

fn is_lin(v: &LinVerdict) -> bool {
    match v {
        LinVerdict::Linearizable => true,
        LinVerdict::NotLinearizable(_) => false,
        LinVerdict::Unknown => panic!("no timeout was set"),
    }
}

// ---------------------------------------------------------------- knossos data

/// The vendored Knossos histories (`tests/data/README.md` gives their provenance).
fn knossos_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/knossos/cas-register")
}

fn knossos_files(kind: &str) -> Vec<PathBuf> {
    let dir = knossos_dir().join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "edn"))
        .collect();
    files.sort();
    files
}

#[test]
fn knossos_good_histories_are_linearizable() {
    let files = knossos_files("good");
    assert_eq!(files.len(), 100, "expected 100 good histories");
    for f in files {
        let out = check_file(&f, "cas-register", Some("0"), Some(Duration::from_secs(60)))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            out.verdict,
            LinVerdict::Linearizable,
            "{}: {}",
            f.display(),
            out.text()
        );
        assert_eq!(out.exit_code(), 0);
    }
}

#[test]
fn knossos_bad_histories_are_not_linearizable() {
    let files = knossos_files("bad");
    assert_eq!(files.len(), 3, "expected 3 bad histories");
    for f in files {
        let out = check_file(&f, "cas-register", Some("0"), Some(Duration::from_secs(60)))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(out.verdict, LinVerdict::NotLinearizable(_)),
            "{}: {:?}",
            f.display(),
            out.verdict
        );
        assert_eq!(out.exit_code(), 1);
        assert!(out.text().contains("NOT linearizable"), "{}", out.text());
        assert!({
            let svg = out.svg();
            svg.starts_with("<svg") && svg.contains("#ea4335")
        });
        assert_eq!(out.to_json()["verdict"], "not-linearizable");
    }
}

#[test]
fn knossos_bad_analysis_explanation() {
    let f = knossos_dir().join("bad/bad-analysis.edn");
    let out = check_file(&f, "cas-register", None, None).unwrap();
    let LinVerdict::NotLinearizable(e) = &out.verdict else {
        panic!("{:?}", out.verdict)
    };
    // The spurious read of 2: every write of 2 before it is overwritten by a write of 0
    // that completed before it began (refuted before the search).
    let failing = out.op_info(e.failing).unwrap();
    assert_eq!(failing.description, "read 2", "{}", out.text());
    let r = e.refutation.as_ref().expect("refuted before the search");
    assert_eq!(
        out.op_info(r.blocker.unwrap()).unwrap().description,
        "write 0"
    );
    assert!(out.summary().contains("overwrites every possible source"));
    // The search alone also gets stuck at a read, after a linearizable prefix.
    let raw = raw_ops_from_file(&f).unwrap();
    let opts = CheckOptions {
        prepass: false,
        ..CheckOptions::default()
    };
    let out = check_raw_opts(&raw, "cas-register", None, &opts).unwrap();
    let LinVerdict::NotLinearizable(e) = &out.verdict else {
        panic!("{:?}", out.verdict)
    };
    assert!(out
        .op_info(e.failing)
        .unwrap()
        .description
        .starts_with("read"));
    assert!(!e.prefix.is_empty());
}

// ---------------------------------------------------------------- unit histories

fn op<O>(o: O, p: u32, call: u64, ret: u64) -> Operation<O> {
    Operation::new(o, call, ret).by(p)
}

#[test]
fn register_basics() {
    let mut m = Register::new(Value::Int(0), true);
    let v1 = m.intern(&Value::Int(1));
    let v0 = m.intern(&Value::Int(0));
    use RegisterOp::*;
    // write 1 || read 0, then read 1: fine.
    let ok = vec![
        op(Write(v1), 0, 0, 5),
        op(Read(Some(v0)), 1, 1, 2),
        op(Read(Some(v1)), 1, 6, 7),
    ];
    assert!(is_lin(&verdict(&m, &ok, true)));
    // read 1 strictly before write 1: not fine.
    let bad = vec![op(Read(Some(v1)), 1, 0, 1), op(Write(v1), 0, 2, 3)];
    let v = verdict(&m, &bad, true);
    let LinVerdict::NotLinearizable(e) = v else {
        panic!("{v:?}")
    };
    assert_eq!(e.failing, 0);
    // Refuted before the search: the read needs 1 and nothing before it writes 1.
    assert_eq!(e.state, "value = 1");
    assert!(e.refutation.is_some());
    // The search alone finds the same op, at the initial state.
    let opts = CheckOptions {
        prepass: false,
        ..CheckOptions::default()
    };
    let LinVerdict::NotLinearizable(e) = check(&m, &bad, opts) else {
        panic!("the search missed it")
    };
    assert_eq!((e.failing, e.state.as_str()), (0, "value = 0"));
    assert!(e.refutation.is_none());
    // An indeterminate write explains the read.
    let info = vec![
        op(Write(v1), 0, 0, INDETERMINATE),
        op(Read(Some(v1)), 1, 2, 3),
        op(Read(Some(v0)), 1, 4, 5),
    ];
    assert!(!is_lin(&verdict(&m, &info, true)));
    let info2 = vec![
        op(Write(v1), 0, 0, INDETERMINATE),
        op(Read(Some(v0)), 1, 2, 3),
        op(Read(Some(v1)), 1, 4, 5),
    ];
    assert!(is_lin(&verdict(&m, &info2, true)));
}

#[test]
fn fenced_lock_jsonl_events() {
    let ev = vec![
        Event::new("client-1", EventType::Invoke, "acquire")
            .at(1)
            .lock("L"),
        Event::new("client-1", EventType::Ok, "acquire")
            .at(2)
            .lock("L")
            .token(Some(1)),
        Event::new("redis-0", EventType::Event, "expire")
            .at(3)
            .key("L"),
        Event::new("client-2", EventType::Invoke, "acquire")
            .at(4)
            .lock("L"),
        Event::new("client-2", EventType::Ok, "acquire")
            .at(5)
            .lock("L")
            .token(Some(2)),
        Event::new("client-1", EventType::Invoke, "release")
            .at(6)
            .lock("L"),
        Event::new("client-1", EventType::Ok, "release")
            .at(7)
            .lock("L"),
        Event::new("nemesis", EventType::Event, "pause").at(8),
        Event::new("storage", EventType::Ok, "write")
            .at(9)
            .key("counter")
            .token(Some(2))
            .value(1)
            .accepted(true)
            .client("client-2"),
    ];
    // Indices as a recorder assigns them.
    let ev: Vec<Event> = ev
        .into_iter()
        .enumerate()
        .map(|(i, mut e)| {
            e.index = i as u64;
            e
        })
        .collect();
    // client-1 releases a lock it no longer holds.
    let out = check_events(&ev, "fenced-lock", None, None).unwrap();
    let LinVerdict::NotLinearizable(e) = &out.verdict else {
        panic!("{}", out.text())
    };
    // The fast path shows the forced order: client-1's release ends its own hold, so
    // the expiry must end client-2's, and client-2's grant came too early.
    assert_eq!(
        out.op_info(e.failing).unwrap().description,
        "acquire → token 2",
        "{}",
        out.text()
    );
    assert_eq!(&*e.partition, "lock \"L\"");
    assert_eq!(e.state, "free, last token 1");
    // The search finds a dead end too.
    let mut m = FencedLock::new(true);
    let raw = raw_ops_from_events(&ev).unwrap();
    let ops = m.ops_from_raw(&raw).unwrap();
    assert!(!is_lin(&verdict(&m, &ops, false)));
    // Without the bad release it is fine.
    let ok: Vec<Event> = ev[..5].to_vec();
    assert_eq!(
        check_events(&ok, "fenced-lock", None, None)
            .unwrap()
            .verdict,
        LinVerdict::Linearizable
    );
    // The storage log alone checks against the fenced register.
    let out = check_events(&ev, "fenced-register", None, None).unwrap();
    assert_eq!(out.verdict, LinVerdict::Linearizable, "{}", out.text());
    // EDN round trip of the same events.
    let edn = events_to_edn(&ev);
    let raw = raw_ops_from_edn(&edn).unwrap();
    assert_eq!(raw, raw_ops_from_events(&ev).unwrap());
    let out = check_raw(&raw, "fenced-lock", None, None).unwrap();
    assert_eq!(out.exit_code(), 1);
}

// ---------------------------------------------------------------- malformed input

fn edn_err(text: &str) -> InputError {
    let raw = raw_ops_from_edn(text);
    match raw {
        Err(e) => e,
        Ok(raw) => check_raw(&raw, "cas-register", None, None).expect_err("should be malformed"),
    }
}

#[test]
fn malformed_histories_name_line_and_reason() {
    let e = edn_err("[{:process 0 :type :invoke :f :read :value nil}\n{:process 1 :type :ok :f :read :value 1}]");
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("without an invoke"), "{e}");
    let e = edn_err(
        "{:process 0 :type :invoke :f :read}\n{:process 0 :type :invoke :f :write :value 1}",
    );
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("has not completed"), "{e}");
    let e = edn_err("[{:process 0 :type :invoke :f :read}\n {:process 0 :type :ok :f :write}]");
    assert!(e.reason.contains("does not match"), "{e}");
    let e = edn_err("[{:process 0 :type :invoke :f :cas :value 3}]");
    assert!(e.reason.contains("[old new]"), "{e}");
    let e = edn_err("[{:process 0 :type :invoke :f :frob :value 3}]");
    assert!(e.reason.contains("frob"), "{e}");
    let e = edn_err(
        "[{:process 0 :type :invoke :f :read}\n\n {:process 0 :type :ok :f :read :value [}]",
    );
    assert_eq!(e.line, 3, "{e}");
    let e = edn_err("[{:process 0 :f :read}]");
    assert!(e.reason.contains(":type"), "{e}");
    // After :info a process may invoke again (Knossos).
    let raw = raw_ops_from_edn(
        "{:process 0 :type :invoke :f :write :value 1}\n{:process 0 :type :info :f :write :value 1}\n{:process 0 :type :invoke :f :read :value nil}\n{:process 0 :type :ok :f :read :value 1}",
    )
    .unwrap();
    assert_eq!(raw.len(), 2);
    assert!(raw[0].is_indeterminate());
    let out = check_raw(&raw, "cas-register", None, None).unwrap();
    assert_eq!(out.verdict, LinVerdict::Linearizable);
    // JSONL: a bad line names its number; a bad model is an error.
    let e = raw_ops_from_jsonl("\n{\"index\":0}\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(check_raw(&[], "nope", None, None).is_err());
    assert!(check_raw(&[], "cas-register", Some("[1"), None).is_err());
    let e = check_file(
        std::path::Path::new("/nonexistent.edn"),
        "register",
        None,
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("/nonexistent.edn"), "{e}");
}

#[test]
fn malformed_input_is_rejected_not_guessed() {
    let jsonl = |lines: &[&str]| raw_ops_from_jsonl(&lines.join("\n"));
    // A completion without an invoke: an error, unless it is a server's log of a
    // request it served (it names the client).
    let e = jsonl(&[r#"{"process":"client-1","type":"ok","f":"write","key":"k","value":1}"#])
        .unwrap_err();
    assert!(e.reason.contains("without an invoke"), "{e}");
    let raw = jsonl(&[
        r#"{"process":"storage","type":"ok","f":"write","key":"k","value":1,"client":"c"}"#,
    ])
    .unwrap();
    assert!(raw[0].point && !raw[0].event);
    // Keys given twice, on the fast path or not.
    for line in [
        r#"{"process":"a","type":"invoke","f":"read","f":"write"}"#,
        r#"{"process":"a","type":"invoke","f":"read","reason":"x","reason":"y"}"#,
        r#"{"process":"a","type":"invoke","f":"read","value":{"x":1,"x":2}}"#,
    ] {
        let e = jsonl(&[line]).unwrap_err();
        assert!(e.reason.contains("duplicate key"), "{line}: {e}");
    }
    // Recorded order against line order.
    let e = jsonl(&[
        r#"{"index":1,"time_ns":5,"process":"a","type":"invoke","f":"read"}"#,
        r#"{"index":1,"time_ns":6,"process":"a","type":"ok","f":"read","value":0}"#,
    ])
    .unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.reason.contains("index 1"), "{e}");
    let e = jsonl(&[
        r#"{"index":1,"time_ns":5,"process":"a","type":"invoke","f":"read"}"#,
        r#"{"index":2,"time_ns":4,"process":"a","type":"ok","f":"read","value":0}"#,
    ])
    .unwrap_err();
    assert!(e.reason.contains("true-time order"), "{e}");
    // Not JSONL at all.
    let e = jsonl(&["[{:process 0, :type :invoke, :f :read}"]).unwrap_err();
    assert!(e.reason.contains("looks like Jepsen EDN"), "{e}");
    let e = jsonl(&[r#"[null, "a", "invoke", "read"]"#]).unwrap_err();
    assert!(e.reason.contains("JSON object"), "{e}");
    // Operation names a model does not know are errors; those of other objects and
    // point events are skipped.
    let raw = raw_ops_from_edn(
        "[{:process 0, :type :invoke, :f :lock}\n {:process 0, :type :ok, :f :lock}]",
    )
    .unwrap();
    for model in ["fenced-lock", "fenced-register", "mutex", "register"] {
        let e = check_raw(&raw, model, None, None).unwrap_err();
        assert!(
            e.reason.contains(":lock") && e.reason.contains(model),
            "{e}"
        );
    }
    let raw = raw_ops_from_edn(
        "[{:process 0, :type :event, :f :pause}\n {:process 1, :type :invoke, :f :read}\n {:process 1, :type :ok, :f :read, :value 0}]",
    )
    .unwrap();
    assert_eq!(check_raw(&raw, "fenced-lock", None, None).unwrap().ops, 0);
    assert_eq!(
        check_raw(&raw, "fenced-register", None, None).unwrap().ops,
        1
    );
    assert_eq!(check_raw(&raw, "register", None, None).unwrap().ops, 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn mangled_edn_never_panics(cut in 0usize..400, junk in "[\\[\\]{}:a-z0-9 \\n]{0,8}", model in 0usize..5) {
        let base = "[{:process 0, :type :invoke, :f :cas, :value [0 1]}\n {:process 1, :type :invoke, :f :read, :value nil}\n {:process 0, :type :ok, :f :cas, :value [0 1]}\n {:process 1, :type :ok, :f :read, :value 1}\n {:process 2, :type :invoke, :f :acquire}\n {:process 2, :type :info, :f :acquire}]";
        let cut = cut.min(base.len());
        let text = format!("{}{}{}", &base[..cut], junk, &base[cut..]);
        if let Ok(raw) = raw_ops_from_edn(&text) {
            let _ = check_raw(&raw, MODEL_NAMES[model], None, Some(Duration::from_secs(5)));
        }
    }
}

fn arb_event() -> impl Strategy<Value = Event> {
    (
        0u64..1_000_000,
        prop_oneof![
            Just("client-1"),
            Just("client-2"),
            Just("redis-0"),
            Just("stor\"age")
        ],
        prop_oneof![
            Just(EventType::Invoke),
            Just(EventType::Ok),
            Just(EventType::Fail),
            Just(EventType::Info),
            Just(EventType::Event)
        ],
        prop_oneof![
            Just("acquire"),
            Just("release"),
            Just("expire"),
            Just("write")
        ],
        prop::option::of(prop_oneof![Just("L"), Just("M")]),
        prop::option::of(0u64..50),
        prop::option::of(prop_oneof![
            Just(serde_json::Value::Null),
            (0i64..9).prop_map(serde_json::Value::from),
            Just(serde_json::json!([1, "x"])),
            Just(serde_json::json!(-3)),
            Just(serde_json::json!("s\\é")),
        ]),
        prop::option::of(any::<bool>()),
        prop::option::of(Just("client-1")),
        prop::option::of(any::<i64>()),
    )
        .prop_map(
            |(t, p, kind, f, lock, token, value, accepted, client, local)| {
                let mut e = Event::new(p, kind, f).at(t).token(token);
                e.lock = lock.map(str::to_string);
                e.value = value;
                e.accepted = accepted;
                e.client = client.map(str::to_string);
                e.local_ns = local;
                e.wall_ms = local.map(|l| l / 3);
                e
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The hand-written JSONL scanner agrees with serde on what it accepts.
    #[test]
    fn jsonl_reader_matches_events(mut events in prop::collection::vec(arb_event(), 0..12)) {
        // Recorded in order: indices are positions, times do not go back.
        let mut times: Vec<u64> = events.iter().map(|e| e.time_ns).collect();
        times.sort_unstable();
        for (i, e) in events.iter_mut().enumerate() {
            e.index = i as u64;
            e.time_ns = times[i];
        }
        let text = crate::history::to_jsonl(&events);
        let a = raw_ops_from_jsonl(&text);
        let b = raw_ops_from_events(&events);
        prop_assert_eq!(a, b);
    }

    #[test]
    fn jsonl_reader_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = raw_ops_from_jsonl(&text);
        let _ = raw_ops_from_jsonl(&format!("{{\"index\":0,\"time_ns\":1,{text}"));
    }
}

#[path = "generated_tests.rs"]
mod generated;

// The generators the other test modules share.
pub(super) use generated::{arb_reg_op, jitter, reg_model, run_register, small, stretch};
