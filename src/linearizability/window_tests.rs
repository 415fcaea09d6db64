//! Tests of the windows (`window.rs`): the lemma they rest on, checked by brute force,
//! and refutations the oracle confirms.

use super::search::Limits;
use super::tests::{arb_reg_op, jitter, oracle, reg_model, run_register, small, stretch};
use super::window::{reachable_states, refute_around, starting_states, window, InWindow};
use super::*;
use proptest::prelude::*;

/// The lemma: a linearizable history's window is linearizable from some reachable state,
/// and from one of the states the windows try (one standing for all no operation needs).
fn lemma_holds<M: Model>(m: &M, ops: &[Operation<M::Op>], t1: u64, t2: u64) -> bool {
    if !oracle(m, ops) {
        return true;
    }
    let (w, _) = window(ops, t1, t2);
    let reachable = reachable_states(m, ops).expect("effects known");
    let tried = starting_states(m, &w, &reachable).expect("few states");
    tried
        .into_iter()
        .any(|init| oracle(&InWindow { model: m, init }, &w))
}

/// Windows reaching back 2, 4 and 8 invocations: small histories then get windows that
/// do not start at the beginning.
const SMALL_SPANS: [usize; 3] = [2, 4, 8];

fn unbounded() -> Limits {
    Limits {
        deadline: None,
        memo_limit: None,
        stats: Default::default(),
        stuck_at: None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn windows_of_linearizable_registers_are_linearizable_from_some_state(
        ops in small(arb_reg_op()),
        a in 0u64..40,
        len in 0u64..40,
    ) {
        prop_assert!(lemma_holds(&reg_model(), &ops, a, a + len), "{:?}", ops);
    }

    #[test]
    fn windows_of_stretched_registers(
        choices in prop::collection::vec((any::<u8>(), any::<u8>()), 1..=9),
        j in jitter(),
        which in any::<prop::sample::Index>(),
        newval in 0u32..3,
        a in 0u64..200,
        len in 0u64..120,
    ) {
        let mut ops = stretch(run_register(&choices), &j, &[false, false, true]);
        let i = which.index(ops.len());
        if let RegisterOp::Read(v) = &mut ops[i].op {
            *v = Some(newval);
        }
        prop_assert!(lemma_holds(&reg_model(), &ops, a, a + len), "{:?}", ops);
        // A refutation around any operation is one the oracle confirms.
        let m = reg_model();
        let found = refute_around(&m, &ops, i, &reachable_states(&m, &ops).unwrap(), &SMALL_SPANS, &mut unbounded());
        prop_assert!(found.is_none() || !oracle(&m, &ops), "{:?}", ops);
    }

    #[test]
    fn mutex_windows(
        ops in small(prop_oneof![Just(MutexOp::Acquire), Just(MutexOp::Release)]),
        a in 0u64..40,
        len in 0u64..40,
        which in any::<prop::sample::Index>(),
    ) {
        let m = Mutex::new();
        prop_assert!(lemma_holds(&m, &ops, a, a + len), "{:?}", ops);
        let found = refute_around(&m, &ops, which.index(ops.len()), &reachable_states(&m, &ops).unwrap(), &SMALL_SPANS, &mut unbounded());
        prop_assert!(found.is_none() || !oracle(&m, &ops), "{:?}", ops);
    }
}

/// A stale read in a 40-process history that the pre-pass cannot refute and a search
/// of the whole history cannot finish: a window around it refutes it.
#[test]
fn a_window_refutes_what_the_whole_search_cannot() {
    let raw = generate::changed_read(1, 10_000, 40, 4278, 1);
    let opts = CheckOptions {
        timeout: Some(DEFAULT_TIMEOUT),
        ..CheckOptions::default()
    };
    let out = check_raw_opts(&raw, "cas-register", None, &opts).unwrap();
    let LinVerdict::NotLinearizable(e) = &out.verdict else {
        panic!("{}", out.text())
    };
    let w = e.window.as_ref().expect("found in a window");
    assert!(w.operations < 200, "{w:?}");
    assert!(
        out.text().contains("No order of a window of"),
        "{}",
        out.text()
    );
    // Without the windows the search gives up (on a quarter of the memo, to be quick).
    let opts = CheckOptions {
        windows: false,
        memo_limit: Some(DEFAULT_MEMO_LIMIT / 4),
        ..opts
    };
    let out = check_raw_opts(&raw, "cas-register", None, &opts).unwrap();
    assert_eq!(out.verdict, LinVerdict::Unknown);
}

/// How the stages decide histories with one read changed: every 17th of the last reads
/// of generated 10,000-operation histories, each changed to every other value, checked
/// with a 20 s budget. Run with
/// `cargo test --profile fast-build --lib sweep_of_changed_reads -- --ignored --nocapture`;
/// `LOCKSIM_STAGES=search` turns the pre-pass and the windows off, `=prepass` the
/// windows only.
#[test]
#[ignore]
fn sweep_of_changed_reads() {
    use crate::history::edn::Value;
    let stages = std::env::var("LOCKSIM_STAGES").unwrap_or_default();
    let opts = CheckOptions {
        timeout: Some(std::time::Duration::from_secs(20)),
        prepass: stages != "search",
        windows: stages != "search" && stages != "prepass",
        ..CheckOptions::default()
    };
    println!("procs  changed  linearizable  pre-pass  window  search  unknown  slowest");
    for procs in [20, 30, 40, 50] {
        let events = generate::cas_history(1, 10_000, procs, true);
        let raw = raw_ops_from_events(&events).unwrap();
        let reads: Vec<usize> = (0..raw.len())
            .filter(|&i| &*raw[i].f == "read" && !raw[i].is_indeterminate())
            .collect();
        let mut count = [0usize; 6];
        let mut slowest = 0f64;
        for k in 0..100 {
            let i = reads[reads.len() - 1 - 17 * k];
            for v in (0..5).map(Value::Int).filter(|v| *v != raw[i].value) {
                let mut bad = raw.clone();
                bad[i].value = v;
                let t = std::time::Instant::now();
                let out = check_raw_opts(&bad, "cas-register", None, &opts).unwrap();
                slowest = slowest.max(t.elapsed().as_secs_f64());
                count[0] += 1;
                count[match &out.verdict {
                    LinVerdict::Linearizable => 1,
                    LinVerdict::NotLinearizable(e) if e.refutation.is_some() => 2,
                    LinVerdict::NotLinearizable(e) if e.window.is_some() => 3,
                    LinVerdict::NotLinearizable(_) => 4,
                    LinVerdict::Unknown => 5,
                }] += 1;
            }
        }
        let [n, lin, pre, win, search, unknown] = count;
        println!("{procs:>5}  {n:>7}  {lin:>12}  {pre:>8}  {win:>6}  {search:>6}  {unknown:>7}  {slowest:.2} s");
    }
}
