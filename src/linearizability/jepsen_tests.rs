//! Tests: Jepsen's and Knossos's history conventions are accepted as Knossos accepts
//! them — entry order is real time and `:time` is display-only (EDN), `:nemesis`
//! entries, `:info` completions, `:fail` with `:error`, trailing invokes, `:index` — and
//! Jepsen's text log reads like EDN.

use super::*;
use crate::history::Event;
use proptest::prelude::*;

fn verdict_of(raw: &[RawOp], model: &str, init: Option<&str>) -> LinVerdict {
    check_raw(raw, model, init, None)
        .unwrap_or_else(|e| panic!("{e}"))
        .verdict
}

fn is_violation(v: &LinVerdict) -> bool {
    matches!(v, LinVerdict::NotLinearizable(_))
}

/// A cas-register history the way Jepsen writes one: workers' `:time`s out of order
/// across processes, `:index` on every entry, nemesis entries with odd values, a `:fail`
/// with `:error`, an `:info` write whose thread comes back as process 8, a record tag,
/// and an invoke left open at the end. `last_read` is the value process 8 reads.
fn jepsen_cas_history(last_read: i64) -> String {
    format!(
        r#"[{{:type :invoke, :f :write, :value 1, :process 0, :time 1000, :index 0}}
{{:type :invoke, :f :read, :value nil, :process 1, :time 990, :index 1}}
{{:type :info, :f :start, :value nil, :process :nemesis, :time 995, :index 2}}
{{:type :ok, :f :write, :value 1, :process 0, :time 1500, :index 3}}
{{:type :ok, :f :read, :value 1, :process 1, :time 1490, :index 4}}
{{:type :invoke, :f :cas, :value [1 2], :process 2, :time 1600, :index 5}}
{{:type :invoke, :f :write, :value 3, :process 3, :time 1590, :index 6}}
{{:type :fail, :f :cas, :value [1 2], :process 2, :time 1700, :error :timeout-before-send, :index 7}}
#jepsen.history.Op{{:type :info, :f :write, :value 3, :process 3, :time 1650, :error [:timeout "no reply"], :index 8}}
{{:type :info, :f :stop, :value [:isolated {{"n1" #{{"n2" "n3"}}}}], :process :nemesis, :time 1800, :index 9}}
{{:type :invoke, :f :read, :value nil, :process 8, :time 1900, :index 10}}
{{:type :ok, :f :read, :value {last_read}, :process 8, :time 1890, :index 11}}
{{:type :invoke, :f :read, :value nil, :process 0, :time 2000, :index 12}}]"#
    )
}

#[test]
fn jepsen_edn_conventions_are_accepted() {
    let raw = raw_ops_from_edn(&jepsen_cas_history(3)).unwrap_or_else(|e| panic!("{e}"));
    // The failed cas is dropped, the nemesis skipped; the trailing read stays open.
    assert_eq!(raw.len(), 5, "{raw:?}");
    assert_eq!(raw[2].call_ns, Some(1590), "times are kept for display");
    let v = verdict_of(&raw, "cas-register", Some("0"));
    assert_eq!(v, LinVerdict::Linearizable);
    // 2 was only ever offered by the failed cas: nothing can have written it.
    let raw = raw_ops_from_edn(&jepsen_cas_history(2)).unwrap();
    assert!(is_violation(&verdict_of(&raw, "cas-register", Some("0"))));
}

#[test]
fn jepsen_mutex_history_with_times_out_of_order() {
    // The shape of Knossos's data/mutex/bad/etcd.edn: releases failing :not-held, the
    // third invoke stamped before the second completion.
    let text = "[{:type :invoke, :f :release, :process 1, :time 341187643, :index 0}
{:type :fail, :f :release, :process 1, :time 342667129, :error :not-held, :index 1}
{:type :invoke, :f :acquire, :process 3, :time 371408519, :index 2}
{:type :invoke, :f :release, :process 4, :time 584312016, :index 3}
{:type :fail, :f :release, :process 4, :time 585400396, :error :not-held, :index 4}
{:type :invoke, :f :release, :process 0, :time 584353142, :index 5}
{:type :fail, :f :release, :process 0, :time 585436373, :error :not-held, :index 6}
{:type :ok, :f :acquire, :process 3, :time 600000000, :index 7}
{:type :invoke, :f :acquire, :process 2, :time 584335820, :index 8}
{:type :ok, :f :acquire, :process 2, :time 700000000, :index 9}]";
    let raw = raw_ops_from_edn(text).unwrap_or_else(|e| panic!("{e}"));
    assert!(is_violation(&verdict_of(&raw, "mutex", None)));
    let one_holder = text.replace(
        ":type :ok, :f :acquire, :process 2",
        ":type :info, :f :acquire, :process 2",
    );
    let raw = raw_ops_from_edn(&one_holder).unwrap();
    assert_eq!(verdict_of(&raw, "mutex", None), LinVerdict::Linearizable);
}

/// Jepsen's text log: other loggers' lines, tab- and space-separated operations, a
/// nemesis, `:info ... :timed-out`, a timed-out read, an invoke left open.
fn jepsen_log(cas_outcome: &str) -> String {
    format!(
        "2015-03-01 12:00:00,000 INFO  jepsen.core - Worker 0 starting
INFO  jepsen.util - 0\t:invoke\t:read\tnil
INFO  jepsen.util - 1   :invoke :write  3
INFO  jepsen.util - :nemesis\t:info\t:start\tnil
INFO  jepsen.util - 0\t:ok\t:read\tnil
INFO  jepsen.util - 1\t:ok\t:write\t3
INFO  jepsen.util - 2\t:invoke\t:cas\t[3 4]
INFO  jepsen.util - 2\t{cas_outcome}
INFO  jepsen.util - 0\t:invoke\t:read\tnil
INFO  jepsen.util - 0\t:fail\t:read\t:timed-out
INFO  jepsen.util - 7\t:invoke\t:read\tnil
INFO  jepsen.util - 7\t:ok\t:read\t4
\tat clojure.lang.AFn.run(AFn.java:22)
INFO  jepsen.util - 1\t:invoke\t:write\t5
"
    )
}

#[test]
fn jepsen_text_log_reads_like_edn() {
    let raw = raw_ops_from_jepsen_log(&jepsen_log(":info\t:cas\t:timed-out")).unwrap();
    assert_eq!(raw.len(), 5, "{raw:?}");
    assert_eq!(
        raw[2].value.to_string(),
        "[3 4]",
        "info keeps the invoke's value"
    );
    let v = verdict_of(&raw, "cas-register", Some("nil"));
    assert_eq!(v, LinVerdict::Linearizable);
    // A failed cas did not happen: nothing wrote 4.
    let raw = raw_ops_from_jepsen_log(&jepsen_log(":fail\t:cas\t[3 4]")).unwrap();
    assert!(is_violation(&verdict_of(&raw, "cas-register", Some("nil"))));
}

#[test]
fn malformed_jepsen_log_lines_name_the_line() {
    let e = raw_ops_from_jepsen_log(
        "INFO jepsen.util - 3\t:invoke\t:read\tnil\nINFO jepsen.util - 3\t:done\t:read\t1\n",
    )
    .unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    assert!(e.reason.contains(":invoke, :ok, :fail or :info"), "{e}");
    let e = raw_ops_from_jepsen_log("\n\nINFO jepsen.util - 3 :invoke :cas [1").unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    let e = raw_ops_from_jepsen_log("INFO jepsen.util - 3 :ok :read 1").unwrap_err();
    assert!(e.reason.contains("without an invoke"), "{e}");
    let e = raw_ops_from_jepsen_log("INFO jepsen.util - 3 :invoke \"read\" nil").unwrap_err();
    assert!(e.reason.contains("operation keyword"), "{e}");
    assert!(raw_ops_from_jepsen_log("").unwrap().is_empty());
}

/// Permute the `time_ns` stamps within consecutive windows of `window` events, by the
/// order of `keys`: what Jepsen's per-thread clocks do to neighbouring entries.
fn shuffle_times(events: &mut [Event], window: usize, keys: &[u16]) {
    for (w, chunk) in events.chunks_mut(window).enumerate() {
        let mut times: Vec<u64> = chunk.iter().map(|e| e.time_ns).collect();
        let mut order: Vec<usize> = (0..times.len()).collect();
        order.sort_by_key(|&i| (keys[(w * window + i) % keys.len()], i));
        times = order.iter().map(|&i| times[i]).collect();
        for (e, t) in chunk.iter_mut().zip(times) {
            e.time_ns = t;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// No input makes the log reader (or a check of what it read) panic.
    #[test]
    fn jepsen_log_never_panics(
        cut in 0usize..600,
        junk in "[\\[\\]{}:a-z0-9 \\t\\n\"#-]{0,12}",
    ) {
        let text = jepsen_log(":info\t:cas\t:timed-out");
        let at = text.char_indices().map(|(i, _)| i).find(|&i| i >= cut).unwrap_or(text.len());
        let mangled = format!("{}{junk}{}", &text[..at], &text[at..]);
        if let Ok(raw) = raw_ops_from_jepsen_log(&mangled) {
            let _ = check_raw(&raw, "cas-register", Some("nil"), None);
        }
        let line = format!("INFO jepsen.util - {junk}");
        let _ = raw_ops_from_jepsen_log(&line);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// EDN orders by entry position: stamps shuffled within small windows give the same
    /// verdict (and explanation) as the unshuffled history, while the same events as
    /// locksim JSONL are refused as soon as a time goes back.
    #[test]
    fn shuffled_edn_times_keep_the_verdict(
        seed in any::<u64>(),
        procs in 1usize..6,
        n in 1usize..40,
        window in 2usize..5,
        keys in prop::collection::vec(any::<u16>(), 1..64),
    ) {
        for linearizable in [true, false] {
            let events = generate::cas_history(seed, n, procs, linearizable);
            let mut shuffled = events.clone();
            shuffle_times(&mut shuffled, window, &keys);
            let a = raw_ops_from_edn(&events_to_edn(&events)).unwrap();
            let b = raw_ops_from_edn(&events_to_edn(&shuffled)).unwrap();
            let va = verdict_of(&a, "cas-register", None);
            prop_assert_eq!(!is_violation(&va), linearizable);
            prop_assert_eq!(&verdict_of(&b, "cas-register", None), &va);
            let back = shuffled.windows(2).any(|w| w[1].time_ns < w[0].time_ns);
            let jsonl = raw_ops_from_jsonl(&crate::history::to_jsonl(&shuffled));
            prop_assert_eq!(jsonl.is_err(), back);
        }
    }
}
