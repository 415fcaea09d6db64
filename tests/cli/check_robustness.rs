//! `locksim check` on hostile input: a regression corpus of bad histories and options.
//! Each must exit 2 (bad input) with a message naming the file and where in it — or 3
//! (unknown) when a budget is spent — never panic, and finish within seconds.

use std::process::Command;
use std::time::{Duration, Instant};

/// Run `locksim ARGS`: (exit code, stdout, stderr, wall time).
fn locksim(args: &[&str]) -> (i32, String, String, Duration) {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(args)
        .output()
        .expect("binary runs");
    (
        out.status.code().expect("exited normally, not by a signal"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        start.elapsed(),
    )
}

fn file(name: &str, bytes: impl AsRef<[u8]>) -> String {
    let dir = std::env::temp_dir().join(format!("locksim-robust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_string_lossy().into_owned()
}

/// Check `path` against `model` with extra `args`; the exit code must be `code`, and the
/// combined output must contain every needle. Returns stdout + stderr.
fn expect(path: &str, model: &str, args: &[&str], code: i32, needles: &[&str]) -> String {
    let mut all = vec!["check", path, "--model", model];
    all.extend_from_slice(args);
    let (got, out, err, took) = locksim(&all);
    let text = format!("{out}{err}");
    assert_eq!(got, code, "{path} {args:?}: {text}");
    assert!(!text.contains("panicked"), "{path}: {text}");
    assert!(took < Duration::from_secs(10), "{path}: took {took:?}");
    for n in needles {
        assert!(
            text.contains(n),
            "{path} {args:?}: expected {n:?} in {text}"
        );
    }
    if code == 2 {
        // A reason follows the location: never an empty message.
        let line = err.lines().next().unwrap_or("");
        assert!(
            line.trim_end().len() > "locksim: ".len() + path.len() + 8,
            "{line}"
        );
    }
    text
}

const GOOD_EDN: &str = "[{:process 0, :type :invoke, :f :write, :value 1}\n {:process 0, :type :ok, :f :write, :value 1}]\n";

#[test]
fn bad_timeouts_and_memo_limits_exit_2() {
    let p = file("good.edn", GOOD_EDN);
    for t in ["1e300", "1e19", "604801", "NaN", "inf", "0", "0.0"] {
        let text = expect(&p, "register", &["--timeout", t], 2, &["--timeout"]);
        assert!(
            text.contains("maximum") || text.contains("positive, finite"),
            "{text}"
        );
    }
    // The largest accepted values work.
    expect(
        &p,
        "register",
        &["--timeout", "604800"],
        0,
        &["linearizable"],
    );
    expect(&p, "register", &["--timeout", "1e-9"], 0, &[]);
    for m in ["0", "99999999999"] {
        expect(&p, "register", &["--memo-limit", m], 2, &["--memo-limit"]);
    }
    let (code, _, err, _) = locksim(&["check", &p, "--model", "register", "--timeout", "-1"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn edn_that_would_overflow_the_stack_is_an_error_or_fine() {
    // 50,000 chained discards with nothing left to discard.
    let p = file(
        "discards.edn",
        format!("[{}{GOOD_EDN}]", "#_ ".repeat(50_000)),
    );
    expect(
        &p,
        "register",
        &[],
        2,
        &["discards.edn:3:", "#_ on line 1", "nothing to discard"],
    );
    // 50,000 chained discards of 50,000 values: an empty history.
    let p = file(
        "discarded.edn",
        format!("[{}{}]", "#_ ".repeat(50_000), "1 ".repeat(50_000)),
    );
    expect(&p, "register", &[], 0, &["linearizable: 0 operations"]);
    // Deep nesting, inside a discard and out.
    let deep = "[".repeat(100_000);
    let p = file("deep.edn", format!("[#_ {deep}"));
    expect(&p, "register", &[], 2, &["deep.edn:1:", "nesting deeper"]);
    let p = file("deeper.edn", &deep);
    expect(&p, "register", &[], 2, &["deeper.edn:1:", "nesting deeper"]);
    let p = file("tagged.edn", "#a ".repeat(100_000));
    expect(&p, "register", &[], 2, &["tagged.edn:1:"]);
}

#[test]
fn models_reject_unknown_operations() {
    let lock = file(
        "unknown-f.edn",
        "[{:process 0, :type :invoke, :f :acquire, :lock \"L\"}\n {:process 0, :type :ok, :f :acquire, :lock \"L\", :token 1}\n {:process 1, :type :invoke, :f :lock, :lock \"L\"}\n {:process 1, :type :ok, :f :lock, :lock \"L\"}]",
    );
    expect(
        &lock,
        "fenced-lock",
        &[],
        2,
        &["unknown-f.edn:3:", ":lock", "fenced-lock model"],
    );
    let reg = file(
        "unknown-f.jsonl",
        "{\"index\":0,\"time_ns\":1,\"process\":\"c\",\"type\":\"invoke\",\"f\":\"incr\",\"key\":\"k\"}\n{\"index\":1,\"time_ns\":2,\"process\":\"c\",\"type\":\"ok\",\"f\":\"incr\",\"key\":\"k\"}\n",
    );
    expect(
        &reg,
        "fenced-register",
        &[],
        2,
        &["unknown-f.jsonl:1:", ":incr", "fenced-register model"],
    );
    // Operations of the other object and observations are skipped, not errors.
    let mixed = file(
        "mixed.jsonl",
        "{\"index\":0,\"time_ns\":1,\"process\":\"nemesis\",\"type\":\"event\",\"f\":\"pause\"}\n{\"index\":1,\"time_ns\":2,\"process\":\"c\",\"type\":\"invoke\",\"f\":\"acquire\",\"lock\":\"L\"}\n{\"index\":2,\"time_ns\":3,\"process\":\"c\",\"type\":\"ok\",\"f\":\"acquire\",\"lock\":\"L\",\"token\":1}\n{\"index\":3,\"time_ns\":4,\"process\":\"c\",\"type\":\"invoke\",\"f\":\"write\",\"key\":\"k\",\"token\":1,\"value\":1}\n{\"index\":4,\"time_ns\":5,\"process\":\"storage\",\"type\":\"ok\",\"f\":\"write\",\"key\":\"k\",\"token\":1,\"value\":1,\"accepted\":true,\"client\":\"c\"}\n{\"index\":5,\"time_ns\":6,\"process\":\"c\",\"type\":\"ok\",\"f\":\"write\",\"key\":\"k\",\"token\":1,\"value\":1,\"accepted\":true}\n",
    );
    expect(
        &mixed,
        "fenced-lock",
        &[],
        0,
        &["linearizable: 1 operation against"],
    );
    expect(
        &mixed,
        "fenced-register",
        &[],
        0,
        &["linearizable: 1 operation against"],
    );
}

#[test]
fn completions_without_invokes_are_errors() {
    let edn = file(
        "orphan.edn",
        "[{:process \"a\", :type :invoke, :f :write, :value 1}\n {:process \"a\", :type :ok, :f :write, :value 1}\n {:process \"b\", :type :ok, :f :write, :value 2}]",
    );
    expect(
        &edn,
        "register",
        &[],
        2,
        &["orphan.edn:3:", "without an invoke"],
    );
    let jsonl = file(
        "orphan.jsonl",
        "{\"index\":0,\"time_ns\":1,\"process\":\"client-1\",\"type\":\"ok\",\"f\":\"write\",\"key\":\"k\",\"value\":1}\n",
    );
    expect(
        &jsonl,
        "fenced-register",
        &[],
        2,
        &["orphan.jsonl:1:", "without an invoke", "client"],
    );
}

#[test]
fn duplicate_keys_are_errors() {
    let jsonl = file(
        "dup.jsonl",
        "{\"index\":0,\"time_ns\":1,\"process\":\"a\",\"type\":\"invoke\",\"f\":\"read\"}\n{\"index\":1,\"time_ns\":2,\"process\":\"a\",\"type\":\"ok\",\"f\":\"read\",\"value\":1,\"value\":0}\n",
    );
    expect(
        &jsonl,
        "register",
        &[],
        2,
        &["dup.jsonl:2:", "duplicate key \"value\""],
    );
    let unused = file(
        "dup-unused.jsonl",
        "{\"index\":0,\"time_ns\":1,\"process\":\"a\",\"type\":\"invoke\",\"f\":\"read\",\"reason\":\"x\",\"reason\":\"y\"}\n",
    );
    expect(
        &unused,
        "register",
        &[],
        2,
        &["dup-unused.jsonl:1:", "duplicate key"],
    );
    let edn = file(
        "dup.edn",
        "[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 0, :type :ok, :f :read, :value 1,\n  :value 0}]",
    );
    expect(
        &edn,
        "register",
        &[],
        2,
        &["dup.edn:3:", "duplicate key :value"],
    );
    let set = file(
        "dup-set.edn",
        "[{:process 0, :type :invoke, :f :read, :value #{1 1}}]",
    );
    expect(
        &set,
        "register",
        &[],
        2,
        &["dup-set.edn:1:", "duplicate element 1"],
    );
}

#[test]
fn recorded_order_must_match_the_lines() {
    let ev = |i: u64, t: u64, ty: &str| {
        format!(
            "{{\"index\":{i},\"time_ns\":{t},\"process\":\"a\",\"type\":\"{ty}\",\"f\":\"write\",\"value\":1}}\n"
        )
    };
    let back = file("index-back.jsonl", ev(5, 1, "invoke") + &ev(4, 2, "ok"));
    expect(
        &back,
        "register",
        &[],
        2,
        &["index-back.jsonl:2:", "index 4"],
    );
    let same = file("index-same.jsonl", ev(5, 1, "invoke") + &ev(5, 2, "ok"));
    expect(
        &same,
        "register",
        &[],
        2,
        &["index-same.jsonl:2:", "index 5"],
    );
    // The completion stamped before its invoke.
    let time = file("time-back.jsonl", ev(0, 900, "invoke") + &ev(1, 100, "ok"));
    expect(
        &time,
        "register",
        &[],
        2,
        &["time-back.jsonl:2:", "true-time order"],
    );
    // In EDN the entries' order (and :index) is real time and :time is display-only:
    // Jepsen's workers stamp :time from their own threads.
    let edn = file(
        "time-back.edn",
        "[{:index 0, :time 900, :process 0, :type :invoke, :f :write, :value 1}\n {:index 1, :time 100, :process 0, :type :ok, :f :write, :value 1}]",
    );
    expect(
        &edn,
        "register",
        &[],
        0,
        &["linearizable: 1 operation against"],
    );
    let edn = file(
        "index-back.edn",
        "[{:index 4, :process 0, :type :invoke, :f :write, :value 1}\n {:index 3, :process 0, :type :ok, :f :write, :value 1}]",
    );
    expect(
        &edn,
        "register",
        &[],
        2,
        &["index-back.edn:2:", "index 3 does not follow index 4"],
    );
    // A repeated :index is an error even on a skipped :nemesis entry.
    let edn = file(
        "index-same.edn",
        "[{:index 0, :process 0, :type :invoke, :f :write, :value 1}\n {:index 0, :process :nemesis, :type :info, :f :start}\n {:index 1, :process 0, :type :ok, :f :write, :value 1}]",
    );
    expect(
        &edn,
        "register",
        &[],
        2,
        &["index-same.edn:2:", "index 0 does not follow index 0"],
    );
    // Gaps are fine (a filtered history keeps its indices).
    let gaps = file("gaps.jsonl", ev(3, 1, "invoke") + &ev(9, 1, "ok"));
    expect(
        &gaps,
        "register",
        &[],
        0,
        &["linearizable: 1 operation against"],
    );
}

#[test]
fn jepsen_text_logs_are_read_by_extension() {
    let log = "INFO  jepsen.core - starting\nINFO  jepsen.util - 0\t:invoke\t:write\t3\nINFO  jepsen.util - :nemesis\t:info\t:start\tnil\nINFO  jepsen.util - 0\t:ok\t:write\t3\nINFO  jepsen.util - 1\t:invoke\t:read\tnil\nINFO  jepsen.util - 1\t:ok\t:read\tREAD\n";
    let good = file("etcd-good.log", log.replace("READ", "3"));
    expect(
        &good,
        "cas-register",
        &["--init", "nil"],
        0,
        &["linearizable: 2 operations"],
    );
    let bad = file("etcd-bad.log", log.replace("READ", "4"));
    expect(
        &bad,
        "cas-register",
        &["--init", "nil"],
        1,
        &["NOT linearizable"],
    );
    let broken = file("etcd-broken.log", log.replace(":ok\t:read", ":done\t:read"));
    expect(
        &broken,
        "cas-register",
        &[],
        2,
        &["etcd-broken.log:6:", ":invoke, :ok, :fail or :info"],
    );
    // The same log under another name is read as JSONL, and says what it looks like.
    let misnamed = file("etcd.txt", log.replace("READ", "3"));
    expect(
        &misnamed,
        "cas-register",
        &[],
        2,
        &["etcd.txt:1:", "Jepsen's text log", ".log"],
    );
}

#[test]
fn truncated_and_misnamed_files_say_what_is_wrong_and_where() {
    let edn = file(
        "eof.edn",
        "[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 0, :type :ok, :f :read, :value",
    );
    expect(
        &edn,
        "register",
        &[],
        2,
        &["eof.edn:2:", "value of key :value"],
    );
    let edn = file(
        "eof-line.edn",
        "{:process 0, :type :invoke, :f :read, :value",
    );
    expect(
        &edn,
        "register",
        &[],
        2,
        &["eof-line.edn:1:", "end of input"],
    );
    let jsonl = file(
        "eof.jsonl",
        "{\"index\":0,\"time_ns\":1,\"process\":\"a\",\"type\":\"invoke\",\"f\":\"read\",\"value\":",
    );
    expect(&jsonl, "register", &[], 2, &["eof.jsonl:1:", "EOF"]);
    // EDN in a .jsonl file, JSONL in a .edn file.
    let misnamed = file("history.jsonl", GOOD_EDN);
    expect(
        &misnamed,
        "register",
        &[],
        2,
        &["history.jsonl:1:", "looks like Jepsen EDN", ".edn"],
    );
    let misnamed = file(
        "history.edn",
        "{\"index\":0,\"time_ns\":1,\"process\":\"a\",\"type\":\"invoke\",\"f\":\"read\"}\n",
    );
    expect(
        &misnamed,
        "register",
        &[],
        2,
        &["history.edn:1:", "looks like locksim JSONL"],
    );
    // A JSON array is not an event, even when its elements would fit one.
    let array = file("array.jsonl", "[null, \"a\", \"invoke\", \"read\"]\n");
    expect(
        &array,
        "register",
        &[],
        2,
        &["array.jsonl:1:", "JSON object"],
    );
}

#[test]
fn non_utf8_files_name_the_line() {
    let edn = file(
        "latin1.edn",
        b"[{:process 0, :type :invoke, :f :read, :value nil}\n {:process 0, :type :ok, :f :read, :value \"\xe9\"}]".as_slice(),
    );
    expect(&edn, "register", &[], 2, &["latin1.edn:2:", "UTF-8"]);
    let jsonl = file(
        "latin1.jsonl",
        b"{\"index\":0,\"time_ns\":1,\"process\":\"a\",\"type\":\"invoke\",\"f\":\"read\"}\n{\"index\":1,\"time_ns\":2,\"process\":\"a\",\"type\":\"ok\",\"f\":\"read\",\"value\":\"\xe9\"}\n".as_slice(),
    );
    expect(&jsonl, "register", &[], 2, &["latin1.jsonl:2:", "UTF-8"]);
}

/// `n` concurrent writes of 1..=n by processes 0..n, then reads of `reads` by process n.
fn concurrent_writes(n: usize, reads: &[usize]) -> String {
    let mut lines = Vec::new();
    for p in 0..n {
        lines.push(format!(
            "{{:process {p}, :type :invoke, :f :write, :value {}}}",
            p + 1
        ));
    }
    for p in 0..n {
        lines.push(format!(
            "{{:process {p}, :type :ok, :f :write, :value {}}}",
            p + 1
        ));
    }
    for r in reads {
        lines.push(format!(
            "{{:process {n}, :type :invoke, :f :read, :value nil}}"
        ));
        lines.push(format!("{{:process {n}, :type :ok, :f :read, :value {r}}}"));
    }
    format!("[{}]\n", lines.join("\n "))
}

#[test]
fn many_concurrent_writes_are_decided_or_unknown_within_the_budget() {
    // The 50-line history: 24 concurrent writes, then a read of 0.
    let p = file("writes24.edn", concurrent_writes(24, &[0]));
    expect(&p, "register", &[], 1, &["NOT linearizable"]);
    // Every write's value read afterwards, in an order no linearization allows: the
    // search needs every subset of the writes. The budgets end it.
    let reads: Vec<usize> = (1..=22).collect();
    let p = file("writes22-reads.edn", concurrent_writes(22, &reads));
    expect(
        &p,
        "register",
        &["--timeout", "1"],
        3,
        &["UNKNOWN", "time budget"],
    );
    let text = expect(&p, "register", &["--memo-limit", "1", "--json"], 3, &[]);
    let v: serde_json::Value = serde_json::from_str(text.trim()).expect("JSON");
    assert_eq!(v["verdict"], "unknown");
    assert_eq!(v["stats"]["stopped"], "memory");
}

#[test]
fn locksim_run_histories_are_still_accepted() {
    let h = file("run.jsonl", "");
    let e = file("run.edn", "");
    let (code, _, err, _) = locksim(&[
        "replay",
        "sims/redis-01-pause-past-lease.toml",
        "--seed",
        "0",
        "--history",
        &h,
        "--edn",
        &e,
    ]);
    assert!(code == 0 || code == 1, "{err}");
    for path in [&h, &e] {
        for model in ["fenced-lock", "fenced-register"] {
            let (code, out, err, _) = locksim(&["check", path, "--model", model]);
            assert!(code == 0 || code == 1, "{path} {model}: {out}{err}");
        }
    }
}
