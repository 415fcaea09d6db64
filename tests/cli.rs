//! The command line: exit codes, bad input reported with file/key/expectation (never a
//! panic), JSON lines, and replays that show true and local time.

use std::process::Command;

fn locksim(args: &[&str]) -> (i32, String, String) {
    locksim_in(std::path::Path::new("."), args)
}

/// `locksim` run from `dir`, as a user outside the checkout would.
fn locksim_in(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs");
    (
        out.status.code().expect("exited normally, not by a signal"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh empty folder for one test.
fn empty_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("locksim-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const SIMS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/sims");

fn scenario_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("locksim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

const GOOD: &str =
    "name = \"t\"\nalgorithm = \"redis\"\nduration_ms = 3000\n[lock]\nttl_ms = 500\n";

#[test]
fn bad_input_exits_2_naming_file_key_and_expectation() {
    let cases: &[(&str, String, &[&str])] = &[
        (
            "broken.toml",
            "name = \"x\n".to_string(),
            &["broken.toml", "line 1"],
        ),
        (
            "unknown-key.toml",
            format!("{GOOD}colour = 1\n"),
            &["unknown-key.toml", "colour"],
        ),
        (
            "bad-range.toml",
            format!("{GOOD}[workload]\nwork_ms = [9, 1]\n"),
            &["workload.work_ms", "min <= max"],
        ),
        (
            "unknown-node.toml",
            format!("{GOOD}[[faults.at]]\nat_ms = 1\nkind = \"crash\"\nnodes = [\"redis-7\"]\n"),
            &["faults.at[0].nodes", "unknown node `redis-7`"],
        ),
        (
            "unknown-algorithm.toml",
            GOOD.replace("\"redis\"", "\"chubby\""),
            &["algorithm", "chubby", "expected one of"],
        ),
        (
            "wrong-type.toml",
            GOOD.replace("3000", "\"long\""),
            &["key `duration_ms`", "expected u64", "line 3"],
        ),
    ];
    for (file, text, needles) in cases {
        let path = scenario_file(file, text);
        let (code, _, err) = locksim(&["run", &path, "--seeds", "0..2", "--quiet"]);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(!err.contains("panicked"), "{file}: {err}");
        for n in *needles {
            assert!(err.contains(n), "{file}: expected `{n}` in: {err}");
        }
    }
    let (code, _, err) = locksim(&["run", "no/such/file.toml"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no/such/file.toml") && err.contains("cannot read"),
        "{err}"
    );
    let (code, _, err) = locksim(&["run", "sims/redis-01-pause-past-lease.toml", "--seeds", "5"]);
    assert_eq!(code, 2);
    assert!(err.contains("--seeds"), "{err}");
}

#[test]
fn run_reports_violation_and_exit_code_follows_expectations() {
    // Row 1 expects mutex violated: met → 0, and the output tells how to replay.
    let (code, out, _) = locksim(&[
        "run",
        "sims/redis-01-pause-past-lease.toml",
        "--seeds",
        "0..3",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("first violating seed: 0"), "{out}");
    assert!(
        out.contains("locksim replay sims/redis-01-pause-past-lease.toml --seed 0"),
        "{out}"
    );
    // Demand the opposite of what happens: exit 1.
    let text = std::fs::read_to_string("sims/redis-01-pause-past-lease.toml")
        .unwrap()
        .replace("mutex = \"violated\"", "mutex = \"holds\"");
    let path = scenario_file("wrong-expectation.toml", &text);
    let (code, out, _) = locksim(&["run", &path, "--seeds", "0..2"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("NOT MET"), "{out}");
}

#[test]
fn json_lines_then_summary() {
    let (code, out, _) = locksim(&[
        "run",
        "sims/redis-01-pause-past-lease-fenced.toml",
        "--seeds",
        "0..4",
        "--json",
        "-",
    ]);
    assert_eq!(code, 0);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["seed"], 0);
    let s = &lines[4]["summary"];
    assert_eq!(s["seeds"], 4);
    assert_eq!(s["expect_met"], true);
    assert_eq!(s["checks"]["mutex"]["first_seed"], 0);
    assert!(s["checks"]["fencing"]["first_seed"].is_null());
    for key in [
        "scenario",
        "violating_seeds",
        "first_violation_seed",
        "wall_s",
        "sim_s",
    ] {
        assert!(!s[key].is_null(), "summary lacks {key}: {s}");
    }
}

#[test]
fn replay_shows_true_and_local_time_and_writes_history() {
    let hist = scenario_file("h.jsonl", "");
    let (code, out, _) = locksim(&[
        "replay",
        "sims/redis-04-server-clock-jump.toml",
        "--seed",
        "0",
        "--history",
        &hist,
    ]);
    assert_eq!(code, 1, "a violating seed exits 1: {out}");
    assert!(out.contains("mutex         VIOLATED"), "{out}");
    assert!(out.contains("true time") && out.contains("local mono") && out.contains("local wall"));
    // The jumped server's wall clock runs 2 s ahead of true time in the clock-jump line.
    let jump = out
        .lines()
        .find(|l| l.contains("|!clock-jump"))
        .expect("jump shown");
    assert!(
        jump.contains("1000.000 ms") && jump.contains("00:00:03.000"),
        "{jump}"
    );
    let h = locksim::history::from_jsonl(&std::fs::read_to_string(&hist).unwrap()).unwrap();
    assert!(h.iter().any(|e| e.f == "expire"));
}

#[test]
fn list_names_algorithms_faults_and_scenarios() {
    let (code, out, _) = locksim(&["list"]);
    assert_eq!(code, 0);
    for needle in [
        "redis",
        "redlock",
        "unlock",
        "clock-jump",
        "liveness",
        "redis-01-pause-past-lease.toml",
    ] {
        assert!(out.contains(needle), "list lacks {needle}");
    }
    assert!(!out.contains("INVALID"), "{out}");
}

#[test]
fn list_outside_a_checkout_says_where_it_looked_and_how_to_look_elsewhere() {
    let dir = empty_dir("list");
    let (code, out, _) = locksim_in(&dir, &["list"]);
    assert_eq!(code, 0);
    let sims = dir.join("sims");
    assert!(
        out.contains(&format!("scenarios in {}", sims.display())),
        "{out}"
    );
    assert!(out.contains("--sims"), "{out}");
    let (code, out, _) = locksim_in(&dir, &["list", "--sims", SIMS]);
    assert_eq!(code, 0);
    assert!(out.contains("redis-01-pause-past-lease.toml"), "{out}");
}

#[test]
fn shrink_writes_into_the_current_folder_with_script_paths_that_still_resolve() {
    let dir = empty_dir("shrink");
    let scenario = format!("{SIMS}/redis-12-redisson-watchdog.toml");
    let (code, out, err) = locksim_in(
        &dir,
        &["shrink", &scenario, "--seed", "0", "--budget", "20"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let written = dir.join("redis-12-redisson-watchdog-shrunk-seed-0.toml");
    let text = std::fs::read_to_string(&written).expect("written in the current folder");
    assert!(text.contains("../"), "script paths rebased: {text}");
    assert!(
        !std::path::Path::new(SIMS)
            .join("redis-12-redisson-watchdog-shrunk-seed-0.toml")
            .exists(),
        "nothing written into sims/"
    );
    // The Lua scripts load from the new place, and the violation reproduces.
    let (code, out, err) = locksim_in(&dir, &["run", written.to_str().unwrap(), "--seed", "0"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("mutex") && out.contains("violated"), "{out}");
}

#[test]
fn one_seed_one_thread_in_the_words() {
    let (_, out, _) = locksim(&[
        "run",
        &format!("{SIMS}/redis-01-pause-past-lease.toml"),
        "--seed",
        "0",
    ]);
    assert!(out.contains(": 1 seed on 1 thread\n"), "{out}");
}

#[test]
fn replay_trace_logs_every_node_in_simulated_time() {
    let (_, _, err) = locksim(&[
        "replay",
        "sims/redis-01-pause-past-lease.toml",
        "--seed",
        "0",
        "--trace",
    ]);
    // Server commands, client decisions and nemesis actions, each with its node.
    assert!(
        err.contains("redis-0") && err.contains("SET L client-"),
        "{}",
        &err[..err.len().min(2000)]
    );
    assert!(err.contains("client-0") && err.contains("acquired L"));
    assert!(err.contains("nemesis at") && err.contains("ArmPause"));
    assert!(err.contains("ms"), "simulated-time stamps");
}

#[test]
fn check_exit_codes_on_knossos_and_bad_input() {
    let data = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/knossos/cas-register"
    );
    let (code, out, _) = locksim(&[
        "check",
        &format!("{data}/good/memstress3-4.edn"),
        "--model",
        "cas-register",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("linearizable"), "{out}");
    let svg = scenario_file("bad.svg", "");
    let (code, out, _) = locksim(&[
        "check",
        &format!("{data}/bad/cas-failure.edn"),
        "--model",
        "cas-register",
        "--init",
        "0",
        "--svg",
        &svg,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("NOT linearizable") && out.contains("no legal order can place"),
        "{out}"
    );
    let pic = std::fs::read_to_string(&svg).unwrap();
    assert!(
        pic.starts_with("<svg") || pic.starts_with("<?xml"),
        "{}",
        &pic[..80.min(pic.len())]
    );
    let (code, out, _) = locksim(&[
        "check",
        &format!("{data}/bad/cas-failure.edn"),
        "--model",
        "cas-register",
        "--json",
    ]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("JSON");
    assert!(!v["explanation"].is_null(), "{v}");
    // Bad input: unknown model, missing file, malformed EDN with its line.
    let (code, _, err) = locksim(&[
        "check",
        &format!("{data}/bad/cas-failure.edn"),
        "--model",
        "queue",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown model"), "{err}");
    let (code, _, _) = locksim(&["check", "nope.edn", "--model", "register"]);
    assert_eq!(code, 2);
    let broken = scenario_file(
        "broken.edn",
        "[{:process 0, :type :invoke, :f :read}\n {:process 0 :type",
    );
    let (code, _, err) = locksim(&["check", &broken, "--model", "register"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("broken.edn:2:") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn replay_writes_edn_that_check_reads() {
    let edn = scenario_file("row2.edn", "");
    let (code, _, _) = locksim(&[
        "replay",
        "sims/redis-02-del-after-expiry.toml",
        "--seed",
        "0",
        "--edn",
        &edn,
    ]);
    assert_eq!(code, 1);
    // Plain DEL deleted another holder's key: the lock history is not linearizable.
    let (code, out, _) = locksim(&["check", &edn, "--model", "fenced-lock"]);
    assert_eq!(code, 1, "{out}");
}
