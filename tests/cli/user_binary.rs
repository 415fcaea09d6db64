//! A user's own binary built on `locksim::cli::main_with`: `examples/my_locksim.rs`, the
//! toy family of `examples/toy/mod.rs` beside locksim's. It runs, replays (with `--svg`)
//! and shrinks its own family's scenario (`examples/toy.toml`) as `locksim` does its
//! families', and says clearly what it cannot do.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");
const TOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/toy.toml");

/// The example binary, built by cargo in this test binary's profile: `cargo test` has
/// already built it (it builds every example), and `cargo test --test cli` alone has not;
/// either way cargo brings it up to date (a no-op when it is), once per test binary.
fn my_locksim() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        // This test binary is <target>/<profile>/deps/cli-HASH.
        let exe = std::env::current_exe().expect("the test binary's path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("<target>/<profile>/deps/");
        let target_dir = profile_dir.parent().expect("<target>/<profile>/");
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args([
                "build",
                "--quiet",
                "--example",
                "my_locksim",
                "--target-dir",
            ])
            .arg(target_dir)
            .current_dir(MANIFEST_DIR);
        // A profile's folder is its name, except the dev and test profiles' (`debug`).
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => {}
            Some(profile) => {
                cargo.args(["--profile", profile]);
            }
        }
        let status = cargo.status().expect("cargo runs");
        assert!(
            status.success(),
            "cargo build --example my_locksim: {status}"
        );
        profile_dir
            .join("examples")
            .join(format!("my_locksim{}", std::env::consts::EXE_SUFFIX))
    })
}

/// `my_locksim ARGS` in `dir`: (exit code, stdout, stderr).
fn run_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(my_locksim())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("my_locksim runs");
    (
        out.status.code().expect("exited normally, not by a signal"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh empty folder for one test.
fn empty_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locksim-my-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn run_replay_svg_and_shrink_work_on_the_binarys_own_family() {
    let dir = empty_dir("toy");
    // A sweep: every seed's pause past the lease breaks mutex, as the file expects.
    let (code, out, err) = run_in(&dir, &["run", TOY, "--seeds", "0..4"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("toy-pause-past-lease (toy): 4 seeds"), "{out}");
    assert!(out.contains("expect violated met"), "{out}");
    // The hint names the binary that knows the family, not `locksim`.
    assert!(out.contains("replay: my_locksim replay "), "{out}");

    // One seed explained, drawn as SVG; exit 1: the seed violates a check.
    let (code, out, err) = run_in(&dir, &["replay", TOY, "--seed", "0", "--svg", "t.svg"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("mutex         VIOLATED"), "{out}");
    let svg = std::fs::read_to_string(dir.join("t.svg")).expect("the SVG is written");
    assert!(
        svg.starts_with("<svg") && svg.contains("client-1"),
        "{svg:.300}"
    );

    // The seed's faults cut down to a scenario that reproduces it, which the binary runs.
    let (code, out, err) = run_in(
        &dir,
        &[
            "shrink",
            TOY,
            "--seed",
            "0",
            "--out",
            "shrunk.toml",
            "--budget",
            "50",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("`mutex` violated"), "{out}");
    assert!(
        out.contains("reproduce with: my_locksim run shrunk.toml --seed 0"),
        "{out}"
    );
    let shrunk = std::fs::read_to_string(dir.join("shrunk.toml")).unwrap();
    assert!(shrunk.contains("algorithm = \"toy\""), "{shrunk}");
    let (code, out, err) = run_in(&dir, &["run", "shrunk.toml", "--seed", "0"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("first violating seed: 0 (mutex"), "{out}");
}

#[test]
fn the_binary_lists_its_family_and_names_it_among_the_known_ones() {
    let dir = empty_dir("names");
    let (code, out, err) = run_in(&dir, &["list", "--sims", "."]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\n  toy "), "{out}");
    assert!(out.contains("\n  redis "), "{out}");
    let (code, out, err) = run_in(&dir, &["list", "--params", "toy"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ttl_ms"), "{out}");

    // An unknown algorithm: exit 2, the choices listed, the binary's own included.
    let bad = dir.join("nope.toml");
    std::fs::write(
        &bad,
        "name = \"n\"\nalgorithm = \"nope\"\nduration_ms = 1000\n",
    )
    .unwrap();
    let (code, out, err) = run_in(&dir, &["run", "nope.toml", "--seed", "1"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("unknown algorithm `nope`"), "{err}");
    assert!(err.contains("zk, toy"), "{err}");

    // What needs real servers is locksim's families' only: said, exit 2, no panic.
    let (code, out, err) = run_in(&dir, &["live", TOY, "--duration", "1s"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("\"toy\"") && err.contains("no real"), "{err}");
    let (code, out, err) = run_in(&dir, &["serve", "toy"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("`toy` is this binary's own family"), "{err}");
}

#[test]
fn report_and_merge_work_on_the_binarys_own_family() {
    let dir = empty_dir("report");
    let matrix = "seeds = 2\nduration_ms = 3000\nfencing = [false, true]\n\
                  [workload]\nclients = 3\n\
                  [[row]]\nname = \"toy\"\nalgorithm = \"toy\"\nlock = { ttl_ms = 500 }\n\
                  [[column]]\nname = \"pause\"\n\
                  faults = { pause = { nodes = \"clients\", duration_ms = [600, 2000], at = \"before-write\" } }\n";
    std::fs::write(dir.join("m.toml"), matrix).unwrap();
    let (code, out, err) = run_in(&dir, &["report", "--matrix", "m.toml", "--out", "out"]);
    assert_eq!(code, 0, "{out}{err}");
    let md = std::fs::read_to_string(dir.join("out/guarantees.md")).unwrap();
    assert!(
        md.contains("`my_locksim report --matrix m.toml --seeds 2`"),
        "{md}"
    );
    assert!(dir.join("out/cells/toy--pause--fenced.toml").exists());

    // Two shards of a sweep, merged as one run.
    for k in ["1/2", "2/2"] {
        let file = format!("shard-{}.jsonl", &k[..1]);
        let args = [
            "run", TOY, "--seeds", "0..4", "--shard", k, "--json", &file, "--quiet",
        ];
        let (code, out, err) = run_in(&dir, &args);
        assert_eq!(code, 0, "{out}{err}");
    }
    let (code, out, err) = run_in(&dir, &["merge", "shard-1.jsonl", "shard-2.jsonl"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("4 seeds from 2 shards"), "{out}");
    assert!(out.contains("replay: my_locksim replay "), "{out}");
}
