//! Golden histories: the FNV-1a hash of the JSONL history of seeds 0..20 of every file in
//! `sims/`, committed in `tests/golden/history_hashes.txt`. A refactoring must leave every
//! hash unchanged; a deliberate behaviour change regenerates the file with
//! `LOCKSIM_BLESS=1 cargo test --release --test golden` and explains each change.

use locksim::history::hash;
use locksim::{run, Scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const SEEDS: u64 = 20;
const GOLDEN: &str = "tests/golden/history_hashes.txt";

fn scenarios() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("sims")
        .expect("sims/ exists")
        .map(|e| e.expect("readable").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

/// The history hash of every scenario and seed (two threads; each run stays on one).
fn current(files: &[PathBuf]) -> BTreeMap<(String, u64), String> {
    let out = std::sync::Mutex::new(BTreeMap::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(f) = files.get(i) else { return };
                let s = Scenario::load(f).unwrap_or_else(|e| panic!("{e}"));
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                for seed in 0..SEEDS {
                    let r = run(&s, seed);
                    assert!(r.error.is_none(), "{name} seed {seed}: {:?}", r.error);
                    let h = format!("{:016x}", hash(&r.history));
                    out.lock().unwrap().insert((name.clone(), seed), h);
                }
            });
        }
    });
    out.into_inner().unwrap()
}

fn parse(text: &str) -> BTreeMap<(String, u64), String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut w = l.split_whitespace();
            let (f, s, h) = (w.next().unwrap(), w.next().unwrap(), w.next().unwrap());
            ((f.to_string(), s.parse().unwrap()), h.to_string())
        })
        .collect()
}

#[test]
fn histories_match_the_golden_hashes() {
    let files = scenarios();
    let now = current(&files);
    if std::env::var_os("LOCKSIM_BLESS").is_some() {
        let mut text = String::from("# scenario seed fnv1a(history JSONL); see tests/golden.rs\n");
        for ((f, s), h) in &now {
            text.push_str(&format!("{f} {s} {h}\n"));
        }
        std::fs::create_dir_all(Path::new(GOLDEN).parent().unwrap()).unwrap();
        std::fs::write(GOLDEN, text).unwrap();
        return;
    }
    let golden = parse(&std::fs::read_to_string(GOLDEN).expect("golden file exists"));
    let mut diffs = Vec::new();
    for (key, h) in &now {
        match golden.get(key) {
            Some(g) if g == h => {}
            Some(g) => diffs.push(format!("{} seed {}: {g} -> {h}", key.0, key.1)),
            None => diffs.push(format!("{} seed {}: new (no golden hash)", key.0, key.1)),
        }
    }
    for key in golden.keys().filter(|k| !now.contains_key(*k)) {
        diffs.push(format!(
            "{} seed {}: golden hash but no scenario",
            key.0, key.1
        ));
    }
    assert!(
        diffs.is_empty(),
        "{} histories differ from {GOLDEN}:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
