//! Generated histories: proptest against the brute-force oracle and the fast paths, generated
//! linearizable and CAS histories, the bench files, and the search's reductions and budgets.

use super::*;

// ---------------------------------------------------------------- generators

/// Random real-time intervals: (process, call, ret) with per-process sequential ops.
pub(in crate::linearizability) fn intervals(
    n: usize,
    procs: u32,
    seed: &[u16],
) -> Vec<(u32, u64, u64)> {
    let mut t = vec![0u64; procs as usize];
    let mut out = Vec::new();
    for (i, &r) in seed.iter().take(n).enumerate() {
        let p = (r as u32 + i as u32) % procs;
        let call = t[p as usize] + (r as u64 % 5);
        let ret = call + 1 + (r as u64 >> 3) % 9;
        t[p as usize] = ret + 1;
        out.push((p, call, ret));
    }
    out
}

pub(in crate::linearizability) fn arb_reg_op() -> impl Strategy<Value = RegisterOp> {
    prop_oneof![
        prop::option::weighted(0.9, 0u32..3).prop_map(RegisterOp::Read),
        (0u32..3).prop_map(RegisterOp::Write),
        (0u32..3, 0u32..3).prop_map(|(a, b)| RegisterOp::Cas(a, b)),
    ]
}

fn arb_lock_op() -> impl Strategy<Value = LockOp> {
    prop_oneof![
        3 => prop::option::weighted(0.9, 0u64..6).prop_map(|token| LockOp::Acquire { p: 0, token }),
        3 => prop::option::weighted(0.3, 0u64..6).prop_map(|token| LockOp::Release { p: 0, token }),
        1 => Just(LockOp::Expire),
    ]
}

fn arb_freg_op() -> impl Strategy<Value = FencedRegisterOp> {
    prop_oneof![
        prop::option::weighted(0.9, 0u32..3).prop_map(FencedRegisterOp::Read),
        (prop::option::weighted(0.9, 0u64..4), 0u32..3, any::<bool>()).prop_map(
            |(token, value, a)| {
                FencedRegisterOp::Write {
                    token,
                    value,
                    accepted: Some(a),
                }
            }
        ),
    ]
}

/// Small random histories: ops with intervals, some indeterminate.
pub(in crate::linearizability) fn small<O: std::fmt::Debug + Clone>(
    ops: impl Strategy<Value = O>,
) -> impl Strategy<Value = Vec<Operation<O>>> {
    (
        prop::collection::vec((ops, any::<u16>(), prop::bool::weighted(0.2)), 1..=8),
        1u32..4,
    )
        .prop_map(|(v, procs)| {
            let seeds: Vec<u16> = v.iter().map(|x| x.1).collect();
            let iv = intervals(v.len(), procs, &seeds);
            v.into_iter()
                .zip(iv)
                .map(|((o, _, indet), (p, call, ret))| Operation {
                    op: o,
                    process: p,
                    call,
                    ret: if indet { INDETERMINATE } else { ret },
                    line: 0,
                    call_ns: None,
                    ret_ns: None,
                })
                .collect()
        })
}

/// The fenced lock with plain equality in the memo (no state subsumption), as a
/// reference for the subsumption.
struct EqLock(FencedLock);

impl Model for EqLock {
    type State = LockState;
    type Op = LockOp;
    fn init(&self) -> LockState {
        self.0.init()
    }
    fn step(&self, s: &LockState, op: &LockOp) -> Option<LockState> {
        self.0.step(s, op)
    }
    fn describe_op(&self, op: &LockOp) -> String {
        self.0.describe_op(op)
    }
    fn describe_state(&self, s: &LockState) -> String {
        self.0.describe_state(s)
    }
}

/// Medium random lock histories: many processes, many indeterminate operations.
fn medium_lock() -> impl Strategy<Value = Vec<Operation<LockOp>>> {
    (
        prop::collection::vec(
            (
                prop_oneof![
                    3 => prop::option::weighted(0.7, 0u64..12).prop_map(|token| LockOp::Acquire { p: 0, token }),
                    3 => prop::option::weighted(0.3, 0u64..6).prop_map(|token| LockOp::Release { p: 0, token }),
                    2 => Just(LockOp::Expire),
                ],
                any::<u16>(),
                prop::bool::weighted(0.35),
            ),
            8..40,
        ),
        2u32..5,
    )
        .prop_map(|(v, procs)| {
            let seeds: Vec<u16> = v.iter().map(|x| x.1).collect();
            let iv = intervals(v.len(), procs, &seeds);
            let mut ops: Vec<Operation<LockOp>> = v
                .into_iter()
                .zip(iv)
                .map(|((o, _, indet), (p, call, ret))| Operation {
                    op: o,
                    process: p,
                    call,
                    ret: if indet { INDETERMINATE } else { ret },
                    line: 0,
                    call_ns: None,
                    ret_ns: None,
                })
                .collect();
            fix_lock(&mut ops);
            ops
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// Subsumption in the memo and the fast path agree with the plain memo.
    #[test]
    fn lock_subsumption_matches_plain_memo(ops in medium_lock()) {
        let m = FencedLock::new(true);
        let plain = is_lin(&verdict(&EqLock(m.clone()), &ops, false));
        prop_assert_eq!(is_lin(&verdict(&m, &ops, false)), plain, "search {:?}", ops);
        prop_assert_eq!(is_lin(&verdict(&m, &ops, true)), plain, "fast {:?}", ops);
    }
}

fn fix_lock(ops: &mut [Operation<LockOp>]) {
    for o in ops.iter_mut() {
        match &mut o.op {
            LockOp::Acquire { p, .. } | LockOp::Release { p, .. } => *p = o.process,
            LockOp::Expire => {
                o.ret = o.call; // a point event
            }
        }
    }
}

fn fix_freg(ops: &mut [Operation<FencedRegisterOp>]) {
    for o in ops.iter_mut() {
        if o.is_indeterminate() {
            if let FencedRegisterOp::Write { accepted, .. } = &mut o.op {
                *accepted = None;
            }
        }
    }
}

pub(in crate::linearizability) fn reg_model() -> Register {
    let mut m = Register::new(Value::Int(0), true);
    // Ids are values: 0..=7 (the register starts at 0).
    for v in 1..=7 {
        m.intern(&Value::Int(v));
    }
    m
}

fn freg_model() -> FencedRegister {
    let mut m = FencedRegister::new(Value::Int(0));
    m.intern(&Value::Int(1));
    m.intern(&Value::Int(2));
    m
}

/// Stretch a sequential execution (ops at linearization points 10, 20, ...) into
/// overlapping intervals; `jitter` drives the stretch, `indet` marks indeterminate ops.
pub(in crate::linearizability) fn stretch<O>(
    seq: Vec<O>,
    jitter: &[(u8, u8, bool)],
    points: &[bool],
) -> Vec<Operation<O>> {
    seq.into_iter()
        .enumerate()
        .map(|(i, o)| {
            let lp = 20 * (i as u64 + 1);
            let (a, b, indet) = jitter[i % jitter.len()];
            let point = points[i % points.len()];
            let (call, ret) = if point {
                (lp, lp)
            } else {
                (
                    lp - (a as u64 % 10) * (a as u64 % 3),
                    lp + (b as u64 % 10) * (b as u64 % 4),
                )
            };
            Operation {
                op: o,
                process: (a as u32 ^ b as u32) % 5,
                call,
                ret: if indet { INDETERMINATE } else { ret },
                line: 0,
                call_ns: None,
                ret_ns: None,
            }
        })
        .collect()
}

/// A random legal sequential execution of the cas register.
pub(in crate::linearizability) fn run_register(choices: &[(u8, u8)]) -> Vec<RegisterOp> {
    let mut v = 0u32;
    choices
        .iter()
        .map(|&(k, x)| {
            let x = x as u32 % 3;
            match k % 4 {
                0 => RegisterOp::Read(Some(v)),
                1 => RegisterOp::Read(None),
                2 => {
                    v = x;
                    RegisterOp::Write(x)
                }
                _ => {
                    let o = RegisterOp::Cas(v, x);
                    v = x;
                    o
                }
            }
        })
        .collect()
}

fn run_lock(choices: &[(u8, u8)]) -> Vec<(LockOp, u32)> {
    let mut owner: Option<u32> = None;
    let mut last = 0u64;
    choices
        .iter()
        .map(|&(k, x)| match owner {
            None => {
                let p = x as u32 % 5;
                last += 1 + (k as u64 % 3);
                owner = Some(p);
                (
                    LockOp::Acquire {
                        p,
                        token: Some(last),
                    },
                    p,
                )
            }
            Some(p) => {
                owner = None;
                if k % 3 == 0 {
                    (LockOp::Expire, 99)
                } else {
                    let token = (x % 2 == 0).then_some(last);
                    (LockOp::Release { p, token }, p)
                }
            }
        })
        .collect()
}

fn run_freg(choices: &[(u8, u8)]) -> Vec<FencedRegisterOp> {
    let (mut hi, mut v) = (0u64, 0u32);
    choices
        .iter()
        .map(|&(k, x)| {
            let t = (x as u64) % 6;
            let val = (k as u32) % 3;
            if k % 3 == 0 {
                FencedRegisterOp::Read(Some(v))
            } else {
                let accepted = t >= hi;
                if accepted {
                    hi = t;
                    v = val;
                }
                FencedRegisterOp::Write {
                    token: Some(t),
                    value: val,
                    accepted: Some(accepted),
                }
            }
        })
        .collect()
}

pub(in crate::linearizability) type Jitter = Vec<(u8, u8, bool)>;

pub(in crate::linearizability) fn jitter() -> impl Strategy<Value = Jitter> {
    prop::collection::vec(
        (any::<u8>(), any::<u8>(), prop::bool::weighted(0.15)),
        1..20,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    // ------------------------------------------------ no false negatives (oracle)

    #[test]
    fn register_matches_oracle(ops in small(arb_reg_op())) {
        let m = reg_model();
        let want = oracle(&m, &ops);
        prop_assert_eq!(is_lin(&verdict(&m, &ops, true)), want, "{:?}", ops);
    }

    #[test]
    fn mutex_matches_oracle(ops in small(prop_oneof![Just(MutexOp::Acquire), Just(MutexOp::Release)])) {
        let m = Mutex::new();
        let want = oracle(&m, &ops);
        prop_assert_eq!(is_lin(&verdict(&m, &ops, true)), want, "{:?}", ops);
    }

    #[test]
    fn fenced_lock_matches_oracle_and_fast_path(mut ops in small(arb_lock_op())) {
        fix_lock(&mut ops);
        let m = FencedLock::new(true);
        let want = oracle(&m, &ops);
        let slow = is_lin(&verdict(&m, &ops, false));
        let fast = is_lin(&verdict(&m, &ops, true));
        prop_assert_eq!(slow, want, "search {:?}", ops);
        prop_assert_eq!(fast, want, "fast path {:?}", ops);
    }

    #[test]
    fn fenced_register_matches_oracle(mut ops in small(arb_freg_op())) {
        fix_freg(&mut ops);
        let m = freg_model();
        let want = oracle(&m, &ops);
        prop_assert_eq!(is_lin(&verdict(&m, &ops, true)), want, "{:?}", ops);
    }

    #[test]
    fn mutated_register_histories_match_oracle(
        choices in prop::collection::vec((any::<u8>(), any::<u8>()), 1..=8),
        j in jitter(),
        which in any::<prop::sample::Index>(),
        newval in 0u32..3,
        shift in 0u64..30,
    ) {
        let mut ops = stretch(run_register(&choices), &j, &[false]);
        let i = which.index(ops.len());
        match &mut ops[i].op {
            RegisterOp::Read(v) => *v = Some(newval),
            RegisterOp::Write(v) => *v = newval,
            RegisterOp::Cas(a, _) => *a = newval,
        }
        ops[i].call += shift;
        if ops[i].ret != INDETERMINATE {
            ops[i].ret += shift;
        }
        let m = reg_model();
        prop_assert_eq!(is_lin(&verdict(&m, &ops, true)), oracle(&m, &ops), "{:?}", ops);
    }

    #[test]
    fn mutated_lock_histories_match_oracle(
        choices in prop::collection::vec((any::<u8>(), any::<u8>()), 1..=8),
        j in jitter(),
        which in any::<prop::sample::Index>(),
        tok in 0u64..8,
        shift in 0u64..30,
    ) {
        let seq = run_lock(&choices);
        let procs: Vec<u32> = seq.iter().map(|x| x.1).collect();
        let mut ops = stretch(seq.into_iter().map(|x| x.0).collect(), &j, &[false]);
        for (o, p) in ops.iter_mut().zip(procs) {
            o.process = p;
            if matches!(o.op, LockOp::Expire) {
                o.ret = o.call;
            }
        }
        let i = which.index(ops.len());
        if let LockOp::Acquire { token, .. } = &mut ops[i].op {
            *token = Some(tok);
        }
        ops[i].call += shift;
        if ops[i].ret != INDETERMINATE {
            ops[i].ret = ops[i].ret.max(ops[i].call);
        }
        let m = FencedLock::new(true);
        let want = oracle(&m, &ops);
        prop_assert_eq!(is_lin(&verdict(&m, &ops, false)), want, "search {:?}", ops);
        prop_assert_eq!(is_lin(&verdict(&m, &ops, true)), want, "fast {:?}", ops);
    }

    // ------------------------------------------------ no false positives (generated)

    #[test]
    fn generated_register_histories_are_linearizable(
        choices in prop::collection::vec((any::<u8>(), any::<u8>()), 1..200),
        j in jitter(),
        phantoms in prop::collection::vec((0u32..3, 0u64..2000), 0..4),
    ) {
        let mut ops = stretch(run_register(&choices), &j, &[false]);
        // Indeterminate writes that never took effect.
        for (v, t) in phantoms {
            ops.push(Operation::new(RegisterOp::Write(v), t, INDETERMINATE).by(7));
        }
        let m = reg_model();
        prop_assert!(is_lin(&verdict(&m, &ops, true)));
    }

    #[test]
    fn generated_mutex_histories_are_linearizable(n in 1usize..200, j in jitter()) {
        let seq: Vec<MutexOp> = (0..n).map(|i| if i % 2 == 0 { MutexOp::Acquire } else { MutexOp::Release }).collect();
        let ops = stretch(seq, &j, &[false]);
        prop_assert!(is_lin(&verdict(&Mutex::new(), &ops, true)));
    }

    #[test]
    fn generated_lock_histories_are_linearizable(
        choices in prop::collection::vec((any::<u8>(), any::<u8>()), 1..300),
        j in jitter(),
        phantoms in prop::collection::vec((0u32..5, 0u64..3000), 0..3),
    ) {
        let seq = run_lock(&choices);
        let procs: Vec<u32> = seq.iter().map(|x| x.1).collect();
        let points: Vec<bool> = seq.iter().map(|x| matches!(x.0, LockOp::Expire)).collect();
        let mut ops = stretch(seq.into_iter().map(|x| x.0).collect(), &j, &points);
        for (o, p) in ops.iter_mut().zip(procs) {
            o.process = p;
            if matches!(o.op, LockOp::Expire) {
                o.ret = o.call;
            }
        }
        for (p, t) in phantoms {
            ops.push(Operation::new(LockOp::Acquire { p, token: None }, t, INDETERMINATE).by(p));
        }
        let m = FencedLock::new(true);
        prop_assert!(is_lin(&verdict(&m, &ops, true)));
        prop_assert!(is_lin(&verdict(&m, &ops, false)));
    }

    #[test]
    fn generated_fenced_register_histories_are_linearizable(
        choices in prop::collection::vec((any::<u8>(), any::<u8>()), 1..200),
        j in jitter(),
    ) {
        let mut ops = stretch(run_freg(&choices), &j, &[false]);
        fix_freg(&mut ops);
        prop_assert!(is_lin(&verdict(&freg_model(), &ops, true)));
    }
}

#[test]
fn timeout_gives_unknown() {
    // Many concurrent indeterminate writes and a read no order explains: exponential.
    let mut m = Register::new(Value::Int(0), true);
    let vals: Vec<u32> = (0..40).map(|i| m.intern(&Value::Int(i + 1))).collect();
    let bad = m.intern(&Value::Int(999));
    let mut ops: Vec<Operation<RegisterOp>> = vals
        .iter()
        .enumerate()
        .map(|(i, &v)| Operation::new(RegisterOp::Write(v), i as u64, INDETERMINATE).by(i as u32))
        .collect();
    for k in 0..40u64 {
        ops.push(
            Operation::new(
                RegisterOp::Read(Some(vals[(k as usize * 7) % 40])),
                100 + 2 * k,
                101 + 2 * k,
            )
            .by(50),
        );
    }
    ops.push(Operation::new(RegisterOp::Read(Some(bad)), 500, 501).by(51));
    let v = check(
        &m,
        &ops,
        CheckOptions {
            timeout: Some(Duration::from_millis(200)),
            memo_limit: None,
            fast_path: true,
            prepass: true,
            windows: true,
        },
    );
    assert!(
        matches!(v, LinVerdict::Unknown | LinVerdict::NotLinearizable(_)),
        "{v:?}"
    );
}

/// Manual benchmark: `LOCKSIM_BENCH=file1,file2 LOCKSIM_MODEL=fenced-lock cargo test
/// --release --lib bench_files -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_files() {
    let files = std::env::var("LOCKSIM_BENCH").unwrap_or_default();
    let model = std::env::var("LOCKSIM_MODEL").unwrap_or_else(|_| "fenced-lock".into());
    let init = std::env::var("LOCKSIM_INIT").ok();
    let secs: u64 = std::env::var("LOCKSIM_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    for f in files.split(',').filter(|f| !f.is_empty()) {
        let start = std::time::Instant::now();
        let out = check_file(
            std::path::Path::new(f),
            &model,
            init.as_deref(),
            Some(Duration::from_secs(secs)),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let total = start.elapsed();
        println!(
            "{f}: {} ops, {} total {:.1} ms (check {:.1} ms, parse {:.1} ms), {:.0} ops/s end-to-end",
            out.ops,
            out.verdict.name(),
            total.as_secs_f64() * 1e3,
            out.elapsed.as_secs_f64() * 1e3,
            (total - out.elapsed).as_secs_f64() * 1e3,
            out.ops as f64 / total.as_secs_f64()
        );
        if !matches!(out.verdict, LinVerdict::Linearizable) {
            println!("{}", out.text());
        }
        if let Ok(dir) = std::env::var("LOCKSIM_SVG_DIR") {
            let name = std::path::Path::new(f)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            std::fs::write(format!("{dir}/{name}.svg"), out.svg()).unwrap();
            std::fs::write(format!("{dir}/{name}.json"), out.to_json().to_string()).unwrap();
        }
    }
}

// ---------------------------------------------------------------- reductions

/// The register with no [`Model::effect`] hints: none of the reductions that need them
/// apply, so it is a reference for them.
struct PlainRegister(Register);

impl Model for PlainRegister {
    type State = u32;
    type Op = RegisterOp;
    fn init(&self) -> u32 {
        self.0.init()
    }
    fn step(&self, s: &u32, op: &RegisterOp) -> Option<u32> {
        self.0.step(s, op)
    }
    fn describe_op(&self, op: &RegisterOp) -> String {
        self.0.describe_op(op)
    }
    fn describe_state(&self, s: &u32) -> String {
        self.0.describe_state(s)
    }
}

/// A register whose hints lie: it claims writes never change the state. The oracle tests
/// must catch such a model (they have teeth).
struct LyingRegister(Register);

impl Model for LyingRegister {
    type State = u32;
    type Op = RegisterOp;
    fn init(&self) -> u32 {
        self.0.init()
    }
    fn step(&self, s: &u32, op: &RegisterOp) -> Option<u32> {
        self.0.step(s, op)
    }
    fn effect(&self, op: &RegisterOp) -> Effect<u32> {
        match op {
            RegisterOp::Write(_) => Effect::ReadOnly,
            _ => self.0.effect(op),
        }
    }
    fn describe_op(&self, op: &RegisterOp) -> String {
        self.0.describe_op(op)
    }
    fn describe_state(&self, s: &u32) -> String {
        self.0.describe_state(s)
    }
}

#[test]
fn a_wrong_effect_hint_is_caught() {
    // write 0 || write 1, then read 0: linearizable (write 1 first). A model that says a
    // write changes nothing forces "write 0" when the register already holds 0, and
    // misses the linearization: the oracle tests would fail on it.
    use RegisterOp::*;
    let ops = vec![
        op(Write(0), 1, 0, 5),
        op(Write(1), 2, 0, 9),
        op(Read(Some(0)), 2, 12, 16),
    ];
    let m = reg_model();
    assert!(oracle(&m, &ops));
    assert!(is_lin(&verdict(&m, &ops, true)));
    assert!(is_lin(&verdict(&PlainRegister(m.clone()), &ops, true)));
    assert!(!is_lin(&verdict(&LyingRegister(m.clone()), &ops, true)));
}

/// Writes of mostly distinct values and reads of values that may never be written: the
/// shapes in which overwrites are unobserved (reduction 4), same-state overwrites
/// (reduction 3) and forced reads (reduction 1) matter.
fn arb_write_heavy_op() -> impl Strategy<Value = RegisterOp> {
    prop_oneof![
        5 => (0u32..6).prop_map(RegisterOp::Write),
        2 => prop::option::weighted(0.9, 0u32..7).prop_map(RegisterOp::Read),
        1 => (0u32..3, 0u32..6).prop_map(|(a, b)| RegisterOp::Cas(a, b)),
    ]
}

/// Histories of up to 9 operations by 2 to 5 processes, overlapping a lot.
fn crowded<O: std::fmt::Debug + Clone>(
    ops: impl Strategy<Value = O>,
) -> impl Strategy<Value = Vec<Operation<O>>> {
    (
        prop::collection::vec((ops, 0u64..12, 1u64..14, prop::bool::weighted(0.2)), 1..=9),
        2u32..6,
    )
        .prop_map(|(v, procs)| {
            let mut free = vec![0u64; procs as usize];
            v.into_iter()
                .enumerate()
                .map(|(i, (o, gap, len, indet))| {
                    let p = (i as u32) % procs;
                    let call = free[p as usize] + gap;
                    let ret = call + len;
                    free[p as usize] = ret + 1;
                    Operation {
                        op: o,
                        process: p,
                        call,
                        ret: if indet { INDETERMINATE } else { ret },
                        line: 0,
                        call_ns: None,
                        ret_ns: None,
                    }
                })
                .collect()
        })
}

/// Raw cas-register histories as events: each of up to 4 processes invokes a random
/// operation and completes it `ok`, `fail` or `info` (or never), with random values.
fn arb_raw_history() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec((0usize..4, 0u8..3, 0i64..3, 0i64..3, 0u8..10), 1..24).prop_map(|steps| {
        let mut pending: Vec<Option<(&'static str, serde_json::Value)>> = vec![None; 4];
        let mut out = Vec::new();
        for (p, f, a, b, how) in steps {
            let name = p.to_string();
            match pending[p].take() {
                None => {
                    let (f, v) = match f {
                        0 => ("read", serde_json::Value::Null),
                        1 => ("write", a.into()),
                        _ => ("cas", serde_json::json!([a, b])),
                    };
                    out.push(Event::new(name, EventType::Invoke, f).value(v.clone()));
                    pending[p] = Some((f, v));
                }
                Some((f, v)) => {
                    let kind = match how {
                        0 => EventType::Fail,
                        1 => EventType::Info,
                        _ => EventType::Ok,
                    };
                    let v = if f == "read" && kind == EventType::Ok {
                        a.into()
                    } else {
                        v
                    };
                    out.push(Event::new(name, kind, f).value(v));
                }
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    /// Every reduction against the brute-force oracle, on histories where they fire.
    #[test]
    fn reductions_match_oracle_on_crowded_registers(ops in crowded(arb_write_heavy_op())) {
        let m = reg_model();
        let want = oracle(&m, &ops);
        prop_assert_eq!(is_lin(&verdict(&m, &ops, true)), want, "{:?}", ops);
        prop_assert_eq!(is_lin(&verdict(&PlainRegister(m.clone()), &ops, true)), want, "plain {:?}", ops);
    }

    /// Failed and indeterminate operations, through pairing and the model, against the
    /// oracle on the operations the model keeps.
    #[test]
    fn raw_histories_with_fail_and_info_match_oracle(events in arb_raw_history()) {
        let raw = raw_ops_from_events(&events).unwrap();
        let mut m = Register::new(Value::Int(0), true);
        let ops = m.ops_from_raw(&raw).unwrap();
        let want = oracle(&m, &ops);
        let out = check_raw(&raw, "cas-register", None, None).unwrap();
        prop_assert_eq!(is_lin(&out.verdict), want, "{:?}", ops);
    }

    /// The generated cas-register histories: linearizable when asked, and not when not
    /// (small enough for the oracle to agree).
    #[test]
    fn generated_cas_histories_have_the_verdict_asked_for(seed in any::<u64>(), procs in 1usize..5, n in 1usize..8) {
        for linearizable in [true, false] {
            let events = generate::cas_history(seed, n, procs, linearizable);
            let raw = raw_ops_from_events(&events).unwrap();
            let mut m = Register::new(Value::Int(0), true);
            let ops = m.ops_from_raw(&raw).unwrap();
            prop_assert_eq!(oracle(&m, &ops), linearizable, "{:?}", ops);
            let out = check_raw(&raw, "cas-register", None, None).unwrap();
            prop_assert_eq!(is_lin(&out.verdict), linearizable);
        }
    }
}

#[test]
fn generated_cas_histories_are_deterministic_and_well_formed() {
    let a = generate::cas_history(7, 500, 10, false);
    assert_eq!(a, generate::cas_history(7, 500, 10, false));
    assert_ne!(a, generate::cas_history(8, 500, 10, false));
    assert_eq!(a.len(), 1000);
    // Written as JSONL and read back as a file would be.
    let text = crate::history::to_jsonl(&a);
    let raw = raw_ops_from_jsonl(&text).unwrap();
    assert_eq!(raw, raw_ops_from_events(&a).unwrap());
    for (linearizable, verdict) in [(true, "linearizable"), (false, "not-linearizable")] {
        let m = generate::time_cas_check(3, 2000, 10, linearizable, &CheckOptions::default());
        assert_eq!(m.verdict, verdict, "{}", m.line());
        // The corrupted twin is refuted before any search.
        assert_eq!(
            m.configurations > 0 && m.memo_bytes > 0,
            linearizable,
            "{}",
            m.line()
        );
    }
}

/// `n` writes of distinct values, all concurrent, then reads of the given values.
fn concurrent_writes(n: u32, reads: &[u32]) -> (Register, Vec<Operation<RegisterOp>>) {
    let mut m = Register::new(Value::Int(0), false);
    let ids: Vec<u32> = (0..=n + 1)
        .map(|v| m.intern(&Value::Int(v as i64)))
        .collect();
    let mut ops: Vec<Operation<RegisterOp>> = (0..n)
        .map(|p| {
            op(
                RegisterOp::Write(ids[p as usize + 1]),
                p,
                p as u64,
                (n + p) as u64,
            )
        })
        .collect();
    for (k, &v) in reads.iter().enumerate() {
        let t = 2 * n as u64 + 2 * k as u64;
        ops.push(op(RegisterOp::Read(Some(ids[v as usize])), n, t, t + 1));
    }
    (m, ops)
}

#[test]
fn many_concurrent_writes_of_unread_values_are_cheap() {
    // The 50-line history: 24 concurrent writes, then a read of a value nothing
    // wrote last (the initial 0, or a value nobody wrote). Before the absorbed-overwrite
    // reduction this took 2^24 configurations.
    for read in [0, 25] {
        let (m, ops) = concurrent_writes(24, &[read]);
        let (v, stats) = check_with_stats(&m, &ops, CheckOptions::default());
        assert!(matches!(v, LinVerdict::NotLinearizable(_)), "{v:?}");
        assert!(stats.configurations < 1000, "{stats:?}");
    }
    // Reading the value of one of them: linearizable.
    let (m, ops) = concurrent_writes(24, &[7]);
    assert!(is_lin(&verdict(&m, &ops, true)));
}

#[test]
fn budgets_give_unknown_and_say_which() {
    // 22 concurrent writes whose values are all read later, in an order no
    // linearization allows: every subset of the writes is a configuration.
    let reads: Vec<u32> = (1..=22).collect();
    let (m, ops) = concurrent_writes(22, &reads);
    let opts = CheckOptions {
        timeout: None,
        memo_limit: Some(1 << 20),
        fast_path: true,
        prepass: true,
        windows: true,
    };
    let (v, stats) = check_with_stats(&m, &ops, opts);
    assert_eq!(v, LinVerdict::Unknown);
    assert_eq!(stats.stopped, Some(Stop::Memory));
    assert!(stats.memo_bytes <= 1 << 20, "{stats:?}");
    let opts = CheckOptions {
        timeout: Some(Duration::from_millis(100)),
        memo_limit: None,
        fast_path: true,
        prepass: true,
        windows: true,
    };
    let start = std::time::Instant::now();
    let (v, stats) = check_with_stats(&m, &ops, opts);
    assert_eq!(v, LinVerdict::Unknown);
    assert_eq!(stats.stopped, Some(Stop::Time));
    assert!(start.elapsed() < Duration::from_secs(5));
    // A budget too large for `Instant` is no budget, not a panic.
    let (m, ops) = concurrent_writes(3, &[3]);
    let opts = CheckOptions {
        timeout: Some(Duration::MAX),
        ..CheckOptions::default()
    };
    assert!(is_lin(&check(&m, &ops, opts)));
}

/// Manual benchmark of the checker on generated cas-register histories:
/// `cargo test --profile fast-build --lib bench_generated -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_generated() {
    let opts = CheckOptions {
        timeout: Some(crate::linearizability::DEFAULT_TIMEOUT),
        ..CheckOptions::default()
    };
    for (ops, procs, linearizable) in [
        (10_000, 20, false),
        (10_000, 20, true),
        (10_000, 30, false),
        (10_000, 30, true),
        (10_000, 40, false),
        (10_000, 40, true),
        (10_000, 50, false),
        (10_000, 50, true),
    ] {
        let m = generate::time_cas_check(1, ops, procs, linearizable, &opts);
        println!("{}", m.line());
    }
    let opts = CheckOptions {
        prepass: false,
        ..opts
    };
    for procs in [20, 30, 40, 50] {
        let m = generate::time_cas_check(1, 10_000, procs, false, &opts);
        println!("without the pre-pass: {}", m.line());
    }
}
