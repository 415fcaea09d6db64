//! The command line: exit codes, bad input reported with file/key/expectation (never a
//! panic), JSON lines, and replays that show true and local time.

use std::path::Path;
use std::process::Command;

fn locksim(args: &[&str]) -> (i32, String, String) {
    locksim_in(std::path::Path::new("."), args)
}

/// `locksim` run from `dir`, as a user outside the checkout would.
fn locksim_in(dir: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    // As a user runs it: not under cargo, whose variables this test inherits (hints
    // would spell `cargo run --release --`).
    let out = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(args)
        .current_dir(dir)
        .env_remove("CARGO")
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
    // Acquires succeed: nothing to say about error replies.
    assert!(s.get("acquire_errors").is_none(), "{s}");
    assert!(lines[0].get("acquire_errors").is_none());
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

const BOOM: &str = "tests/fixtures/lock_scripts/boom.toml";

#[test]
fn a_script_that_always_errors_is_named_beside_the_liveness_failure() {
    let (code, out, err) = locksim(&["run", BOOM, "--seed", "0"]);
    assert_eq!(code, 0, "liveness is expected violated: {out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    let eg = lines
        .iter()
        .position(|l| l.starts_with("  e.g. no client acquired L within 5000.0 ms"))
        .expect("the liveness failure");
    let cause = lines[eg + 1];
    assert!(
        cause.starts_with(
            "  no acquire succeeded on seed 0: every acquire (459) failed on the same error \
             reply to the acquire script: ERR user_script:3: boom script: "
        ),
        "{out}"
    );

    let (_, json, _) = locksim(&["run", BOOM, "--seeds", "0..2", "--json", "-"]);
    let last = json.lines().last().expect("a summary line");
    let s = &serde_json::from_str::<serde_json::Value>(last).unwrap()["summary"];
    let d = &s["acquire_errors"];
    assert_eq!(
        (&d["seeds"], &d["seed"], &d["distinct"]),
        (&2.into(), &0.into(), &1.into())
    );
    assert_eq!(d["count"], d["acquires"]);
    assert!(
        d["error"].as_str().unwrap().contains(": boom script: "),
        "{d}"
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .starts_with("every acquire ("),
        "{d}"
    );

    let (code, out, _) = locksim(&["replay", BOOM, "--seed", "0"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("error replies to lock scripts: 459, all the same\n"),
        "{out}"
    );
    let first = out
        .lines()
        .find(|l| l.contains("| error reply from redis-0 to the acquire script of L: "))
        .expect("the first error reply, in a row");
    assert!(
        first.contains("14.000 ms") && first.contains("client-1"),
        "{first}"
    );
    assert!(first
        .ends_with("boom script: 327bff4a7a397c7a19c9e361db7d7b8d7f68fd02, on @user_script:3."));
    assert!(
        out.contains("no acquire succeeded: every acquire (459) failed"),
        "{out}"
    );
}

#[test]
fn list_names_algorithms_faults_and_scenarios() {
    let (code, out, _) = locksim(&["list"]);
    assert_eq!(code, 0);
    for needle in [
        "redis",
        "redlock",
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
    // The pre-pass refutes it: the read of 0 at line 499 has no possible source, since
    // the write of 2 at line 468 must come between every write of 0 and it.
    assert!(
        out.contains("NOT linearizable (refuted before any search)")
            && out.contains("process 70 read 0 (line 499)")
            && out.contains("process 76 write 2 (line 468)"),
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
    let blocker = &v["explanation"]["refutation"]["blocker"];
    assert_eq!(blocker["description"], "write 2", "{v}");
    assert_eq!(blocker["line"], 468, "{v}");
    // Bad input: unknown model, missing file, malformed EDN with its line.
    let (code, _, err) = locksim(&[
        "check",
        &format!("{data}/bad/cas-failure.edn"),
        "--model",
        "queue",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown model"), "{err}");
    let (code, _, err) = locksim(&[
        "check",
        &format!("{data}/bad/cas-failure.edn"),
        "--model",
        "casregister",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did you mean \"cas-register\"?"), "{err}");
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

/// `locksim run … --json FILE` with these extra arguments; its exit code and stdout.
fn run_to(scenario: &str, seeds: &str, extra: &[&str], json: &std::path::Path) -> (i32, String) {
    let mut args = vec!["run", scenario, "--seeds", seeds, "--json"];
    args.push(json.to_str().unwrap());
    args.extend(extra);
    let (code, out, err) = locksim(&args);
    assert!(code == 0 || code == 1, "{out}{err}");
    (code, out)
}

/// The summary line of a JSON file, as a value.
fn summary_of(text: &str) -> serde_json::Value {
    let last = text.lines().last().expect("a summary line");
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    v["summary"].clone()
}

#[test]
fn merged_shards_summarise_as_one_run() {
    let dir = empty_dir("merge");
    let scenario = "sims/redis-02-del-after-expiry.toml";
    let whole = dir.join("whole.jsonl");
    let (whole_code, whole_text) = run_to(scenario, "0..12", &["--jobs", "2"], &whole);
    let mut files = Vec::new();
    for k in [3, 1, 2] {
        let file = dir.join(format!("shard-{k}.jsonl"));
        let shard = format!("{k}/3");
        run_to(scenario, "0..12", &["--shard", &shard, "--quiet"], &file);
        files.push(file.to_str().unwrap().to_string());
    }
    let merged = dir.join("merged.json");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--json", merged.to_str().unwrap()]);
    let (code, text, err) = locksim(&args);
    assert_eq!(code, whole_code, "{text}{err}");

    let mut want = summary_of(&std::fs::read_to_string(&whole).unwrap());
    let merged_text = std::fs::read_to_string(&merged).unwrap();
    assert_eq!(merged_text.lines().count(), 1, "{merged_text}");
    let mut got = summary_of(&merged_text);
    assert_eq!(want["seed_range"], serde_json::json!([0, 12]));
    assert_eq!(want["scenario_file"], scenario);
    for s in [&mut want, &mut got] {
        assert_eq!(s["shard"], serde_json::json!([1, 1]));
        assert!(s["wall_s"].as_f64().unwrap() > 0.0, "{s}");
        s.as_object_mut().unwrap().remove("wall_s");
    }
    assert_eq!(got, want);
    assert_eq!(got["seeds"], 12);
    assert!(got["first_violation_seed"].is_u64(), "{got}");

    // The same words, but for the first line (threads or shards) and the speed.
    let middle = |t: &str| {
        let lines: Vec<String> = t.lines().map(str::to_string).collect();
        lines[1..lines.len() - 1].to_vec()
    };
    assert!(text.contains(": 12 seeds from 3 shards\n"), "{text}");
    assert_eq!(middle(&text), middle(&whole_text));
    assert!(text.contains("locksim replay sims/redis-02-del-after-expiry.toml --seed"));
}

#[test]
fn merge_rejects_missing_repeated_mismatched_and_broken_shards_naming_the_file() {
    let dir = empty_dir("merge-bad");
    let scenario = "sims/redis-02-del-after-expiry.toml";
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    for k in [1, 2] {
        let shard = format!("{k}/2");
        let file = dir.join(format!("s{k}.jsonl"));
        run_to(scenario, "0..4", &["--shard", &shard, "--quiet"], &file);
    }
    let other = dir.join("other.jsonl");
    run_to(
        "sims/redis-03-set-nx-px.toml",
        "0..4",
        &["--shard", "2/2", "--quiet"],
        &other,
    );
    let s2 = std::fs::read_to_string(dir.join("s2.jsonl")).unwrap();
    std::fs::write(dir.join("again.jsonl"), &s2).unwrap();
    let mut broken: Vec<&str> = s2.lines().collect();
    broken[1] = "{\"seed\": 3, \"checks\": [";
    std::fs::write(dir.join("broken.jsonl"), broken.join("\n")).unwrap();
    let interrupted = s2.replace("\"wall_s\"", "\"interrupted\":true,\"wall_s\"");
    std::fs::write(dir.join("stopped.jsonl"), interrupted).unwrap();

    let cases: &[(&[&str], &[&str])] = &[
        (&["s1.jsonl"], &["shard 2/2 missing"]),
        (
            &["s1.jsonl", "s2.jsonl", "again.jsonl"],
            &["s2.jsonl and", "again.jsonl are both shard 2/2"],
        ),
        (
            &["s1.jsonl", "other.jsonl"],
            &["s1.jsonl and", "other.jsonl are different scenarios"],
        ),
        (&["s1.jsonl", "broken.jsonl"], &["broken.jsonl:2:"]),
        (
            &["s1.jsonl", "stopped.jsonl"],
            &["stopped.jsonl: interrupted"],
        ),
        (
            &["s1.jsonl", "no-such.jsonl"],
            &["no-such.jsonl: cannot read"],
        ),
    ];
    for (files, needles) in cases {
        let files: Vec<String> = files.iter().map(|f| path(f)).collect();
        let mut args = vec!["merge"];
        args.extend(files.iter().map(String::as_str));
        let (code, out, err) = locksim(&args);
        assert_eq!(code, 2, "{files:?}: {out}{err}");
        assert!(!err.contains("panicked"), "{err}");
        for n in *needles {
            assert!(err.contains(n), "{files:?}: expected `{n}` in: {err}");
        }
    }
}

/// `fair` is a quality check: a racing Redis lock breaks it on every seed, `[expect]`
/// can say so, but no seed is violating for it; the summary carries the costs.
#[test]
fn fairness_is_reported_but_never_makes_a_seed_violating() {
    let text = format!(
        "{GOOD}[workload]\nclients = 3\n[expect]\nmutex = \"holds\"\nfair = \"violated\"\n"
    );
    let path = scenario_file("fair.toml", &text);
    let (code, out, err) = locksim(&["run", &path, "--seeds", "0..2", "--json", "-"]);
    assert_eq!(code, 0, "{out}{err}");
    let s = summary_of(&out);
    assert_eq!(s["violating_seeds"], 0, "{s}");
    assert!(s["first_violation_seed"].is_null(), "{s}");
    assert_eq!(s["checks"]["fair"]["kind"], "quality", "{s}");
    assert_eq!(s["checks"]["fair"]["violations"], 2, "{s}");
    assert!(s["checks"]["mutex"].get("kind").is_none(), "{s}");
    assert!(s["metrics"]["grants"].as_u64().unwrap() > 0, "{s}");
    let seed: serde_json::Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert!(
        seed["metrics"]["latency_ms"]["all"]["p50"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        err.contains("  fair                 quality: broken in 2/2 seeds (first: seed 0)"),
        "{err}"
    );
    assert!(
        err.contains("\nno violation in 2 seeds\n") && err.contains("\ncost: "),
        "{err}"
    );
}

/// The layering lib.rs promises holds: `scripts/layers` finds no import pointing up its
/// Layers list, no unplaced module and no file cycle.
#[test]
fn imports_point_down_the_layers() {
    let out = Command::new("python3")
        .arg("scripts/layers")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("python3 runs");
    let found = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(found.is_empty(), "scripts/layers:\n{found}");
}

#[test]
fn hints_spell_the_command_as_invoked_under_cargo_run() {
    let out = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args([
            "run",
            "sims/redis-01-pause-past-lease.toml",
            "--seeds",
            "0..2",
        ])
        .env("CARGO", "cargo")
        .env("CARGO_PKG_NAME", "locksim")
        .output()
        .expect("binary runs");
    let text = String::from_utf8_lossy(&out.stdout);
    // The profile this test binary was built in: release, or fast-build under scripts/test.
    let profile = Path::new(env!("CARGO_BIN_EXE_locksim"))
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
        .expect("<target>/<profile>/locksim");
    let cargo_run = match profile {
        "release" => "cargo run --release --".to_string(),
        "debug" => "cargo run --".to_string(),
        other => format!("cargo run --profile {other} --"),
    };
    assert!(
        text.contains(&format!(
            "{cargo_run} replay sims/redis-01-pause-past-lease.toml --seed 0"
        )),
        "{text}"
    );
}

#[test]
fn list_starts_with_the_scenarios_by_row_and_lists_parameters_on_demand() {
    let (code, out, _) = locksim(&["list"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("scenarios in "), "{out:.200}");
    let row1 = out
        .find("redis-01-pause-past-lease.toml")
        .expect("row 1 listed");
    let row12 = out.find("redis-12-").expect("row 12 listed");
    let db20 = out.find("db-20-").expect("row 20 listed");
    assert!(row1 < row12 && row12 < db20, "by family, then by row");
    assert!(
        out.lines().all(|l| l.chars().count() <= 100),
        "a line over 100 columns"
    );
    let (code, out, _) = locksim(&["list", "--params", "redis"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("ttl_ms") && out.contains("unlock") && out.contains("checks: "),
        "{out}"
    );
    let (code, _, err) = locksim(&["list", "--params", "rediss"]);
    assert_eq!(code, 2);
    assert!(err.contains("did you mean `redis`?"), "{err}");
}

#[test]
fn every_help_fits_100_columns_and_version_names_the_commit() {
    for sub in [
        "", "run", "merge", "replay", "check", "report", "shrink", "list", "live", "serve", "bench",
    ] {
        let args: Vec<&str> = [sub, "--help"]
            .into_iter()
            .filter(|a| !a.is_empty())
            .collect();
        let (code, out, _) = locksim(&args);
        assert_eq!(code, 0, "{sub} --help");
        for line in out.lines() {
            assert!(line.chars().count() <= 100, "{sub} --help: {line}");
        }
    }
    let (_, out, _) = locksim(&["--version"]);
    assert!(out.starts_with("locksim 0.") && out.contains(" ("), "{out}");
}

#[test]
fn near_misses_get_a_suggestion() {
    let (code, _, err) = locksim(&["run", "sims/redis-01-pause-past-lease.toml", "--seeds", "5"]);
    assert_eq!(code, 2);
    assert!(err.contains("one seed is `--seed 5`"), "{err}");
}

#[test]
fn run_says_n_a_where_the_report_says_dash() {
    // No token and no fencing: `fencing` and `token-order` cannot say anything. The CLI
    // prints n/a and why (the report's "–", by the same rule), and an expectation of
    // "holds" on them is met only vacuously, which the line says.
    let (code, out, _) = locksim(&[
        "run",
        "sims/redis-01-pause-past-lease.toml",
        "--seeds",
        "0..2",
    ]);
    assert_eq!(code, 0, "{out}");
    for check in ["fencing", "token-order"] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(check))
            .unwrap_or_else(|| panic!("no {check} line: {out}"));
        assert!(
            line.contains("n/a: ") && line.contains("no fencing token"),
            "{line}"
        );
        assert!(!line.contains("holds"), "{line}");
    }
    assert!(out.contains("met (vacuously: n/a)"), "{out}");
    // The JSON summary carries the same reason.
    let (_, json, _) = locksim(&[
        "run",
        "sims/redis-01-pause-past-lease.toml",
        "--seeds",
        "0..1",
        "--json",
        "-",
        "--quiet",
    ]);
    assert!(json.contains("\"not_applicable\""), "{json}");
    // Replay says it per seed.
    let (_, replay, _) = locksim(&[
        "replay",
        "sims/redis-01-pause-past-lease.toml",
        "--seed",
        "0",
    ]);
    assert!(replay.contains("fencing       n/a: "), "{replay}");
}
