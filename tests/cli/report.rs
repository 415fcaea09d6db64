//! `locksim report` on a small matrix: the three reports are written and well-formed
//! (the JSON parses and has every cell, the Markdown has a table per check, the HTML is
//! one self-contained page), every violated cell links to a timeline of its first
//! violation, every `–` says why, the cell files replay, and shards merged give the very
//! same bytes as one run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const MATRIX: &str = r#"
seeds = 3
duration_ms = 4000
liveness_ms = 1500
[workload]
clients = 2
[[row]]
name = "redis"
algorithm = "redis"
lock = { ttl_ms = 500, token = "incr" }
why = "one node"
[[row]]
name = "redlock"
algorithm = "redlock"
lock = { nodes = 3, ttl_ms = 500 }
why = "no token"
[[column]]
name = "none"
about = "nothing"
[[column]]
name = "pause"
about = "pauses before the write"
faults = { interval_ms = [200, 400], pause = { nodes = "clients", duration_ms = [600, 900], at = "before-write" } }
[[column]]
name = "reentrant"
about = "holders re-acquire"
workload = { reentrant = true }
"#;

/// Run `locksim report` in `dir` with `args`; its exit status and stderr.
fn report(dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .arg("report")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh folder with the matrix in it.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("locksim-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("matrix.toml"), MATRIX).unwrap();
    dir
}

/// Every file under `dir`, relative path -> bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                files.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    files
}

#[test]
fn a_small_matrix_writes_well_formed_reports() {
    let dir = folder("one");
    let (ok, err) = report(
        &dir,
        &["--jobs", "2", "--matrix", "matrix.toml", "--out", "out"],
    );
    assert!(ok, "{err}");
    let out = dir.join("out");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("guarantees.json")).unwrap())
            .unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2 * 3 * 2, "rows x columns x fencing");
    let redlock = cells.iter().find(|c| c["row"] == "redlock").unwrap();
    assert!(redlock["checks"].get("lock-linearizable").is_none());
    for check in ["lock-linearizable", "token-order", "fencing"] {
        let why = redlock["not_applicable"][check]
            .as_str()
            .unwrap_or_default();
        assert!(
            !why.is_empty(),
            "Redlock's {check} is not applicable, with a reason"
        );
    }
    let paused = cells
        .iter()
        .find(|c| c["row"] == "redis" && c["column"] == "pause" && c["fencing"] == false)
        .unwrap();
    assert_eq!(paused["checks"]["mutex"]["violations"], 3, "{paused}");
    assert!(
        paused["not_applicable"]["fencing"].is_string(),
        "fencing off"
    );
    let replay = paused["checks"]["mutex"]["replay"].as_str().unwrap();
    assert!(replay.starts_with("locksim replay out/cells/") && replay.contains("--seed 0"));
    let clean = &paused["checks"]["liveness"];
    let bound = clean["upper_bound_95"].as_f64().unwrap();
    assert!(
        (bound - (1.0 - 0.05f64.powf(1.0 / 3.0))).abs() < 1e-9,
        "{clean}"
    );

    let md = std::fs::read_to_string(out.join("guarantees.md")).unwrap();
    for check in ["mutex", "counter"] {
        assert!(md.contains(&format!("## `{check}`")), "{check}");
    }
    // Checks that held in every cell are one line, not a table; the self-check says so.
    assert!(!md.contains("## `liveness`"), "{md}");
    assert!(
        md.contains("`storage-linearizable` (a harness self-check"),
        "{md}"
    );
    // The verdict comes first, generated from the counts.
    let verdict_at = md.find("## Verdict").unwrap();
    assert!(verdict_at < md.find("## `mutex`").unwrap());
    let redis_line = md[verdict_at..]
        .lines()
        .find(|l| l.starts_with("| redis |"))
        .unwrap();
    let mutex_pause = paused["checks"]["mutex"]["violations"].as_u64().unwrap();
    assert!(
        redis_line.contains(&format!("pause {mutex_pause}/3")),
        "{redis_line}"
    );
    // Re-entry is a section of its own, not a fault column.
    assert!(md.contains("## Re-entry"), "{md}");
    assert!(
        !md.contains("| algorithm | fencing | none | pause | reentrant |"),
        "{md}"
    );
    assert!(
        md.contains("| redis | off = on | [✓ 0/3 ≤ 63%](cells/redis--none--unfenced.toml) | [✗ 3/3](timelines/redis--pause--unfenced.html#redis--pause--unfenced--mutex) |"),
        "{md}"
    );
    assert!(md.contains("Under process pauses") && md.contains("(measured)"));
    // The sentence under each row comes from its cells, so it cannot contradict them.
    assert!(
        md.contains("Measured on 3 seeds per cell: broke `mutex` (fencing off: pause 3/3; fencing on: pause 3/3)"),
        "{md}"
    );
    // Beside the safety tables: fairness and cost per fault class, with generated words.
    assert!(
        md.contains("## Choosing a lock: fairness, reentrancy and cost"),
        "{md}"
    );
    for column in ["none", "pause"] {
        assert!(
            md.contains(&format!("### Fairness and cost under {column}")),
            "{md}"
        );
    }
    assert!(md.contains("| algorithm | fair | inversions per 100 grants | max bypass | uncontended p50 (grants) | contended p50 | contended p99 | grants/s | unavailable | sent per grant |\n"), "{md}");
    // Redlock asks five servers for what one Redis grants.
    assert!(
        md.contains("Under `none`, the hosts sent each other the least per grant for redis ("),
        "{md}"
    );
    assert!(
        md.contains(
            "Under `none`, a waiter was overtaken by a later one for redis (3/3), redlock (3/3)."
        ),
        "{md}"
    );
    assert!(
        md.contains("Under `pause` faults, the lock was unobtainable while a client wanted it "),
        "{md}"
    );
    // Re-entry is a column of its own: a plain `SET NX` and Redlock find their own key.
    assert!(md.contains("### Reentrancy"), "{md}");
    assert!(
        !md.contains("### Fairness and cost under reentrant"),
        "{md}"
    );
    assert!(
        md.contains("Re-entry (`reentrant`): not reentrant: redis (3/3), redlock (3/3)."),
        "{md}"
    );
    let none = cells
        .iter()
        .find(|c| c["row"] == "redis" && c["column"] == "none" && c["fencing"] == false)
        .unwrap();
    assert!(none["cost"]["grants"].as_u64().unwrap() > 0, "{none}");
    assert!(
        none["cost"]["latency_ms"]["all"]["p50"].as_f64().unwrap() > 0.0,
        "{none}"
    );
    assert!(none["quality"]["fair"]["violations"].is_u64(), "{none}");
    let traffic = &none["cost"]["traffic"];
    assert!(traffic["bytes"].as_u64().unwrap() > 0, "{none}");
    assert!(
        traffic["segments_per_grant"].as_f64().unwrap() >= 2.0,
        "a grant takes a request and a reply at least: {none}"
    );
    assert!(
        none["checks"].get("fair").is_none(),
        "quality checks are tabled apart"
    );
    assert!(
        !md.to_lowercase().contains("guarantee "),
        "measured, not guaranteed"
    );

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("<link"));
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count(),
        "no network references"
    );
    links_resolve(&html, &out);
    stamp_and_counts_agree(&out);

    // Every cell is a scenario that loads and replays.
    let cell = out.join("cells/redis--pause--unfenced.toml");
    let s = locksim::Scenario::load(&cell).unwrap();
    let r = locksim::run(&s, 0);
    assert!(locksim::check_run(&s, &r)
        .iter()
        .any(|c| c.name == "mutex" && c.verdict == locksim::Verdict::Violated));
}

/// The stamp the pages print is the build that counted the cells, as the JSON says, and
/// the verdict's mutual-exclusion breaks are the JSON's counts (fencing off, fault
/// classes only).
fn stamp_and_counts_agree(out: &Path) {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("guarantees.json")).unwrap())
            .unwrap();
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let md = std::fs::read_to_string(out.join("guarantees.md")).unwrap();
    let builds = json["counted_by"].as_array().unwrap();
    assert!(!builds.is_empty());
    for b in builds {
        let stamp = b["locksim"].as_str().unwrap();
        assert!(md.contains(stamp) && html.contains(stamp), "{stamp}");
    }
    for cell in json["cells"].as_array().unwrap() {
        let stamp = cell["counted_by"].as_str().unwrap();
        assert!(builds.iter().any(|b| b["locksim"] == stamp), "{cell}");
    }
    let reentry: Vec<&str> = json["columns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["reentrant"] == true)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let verdict = &md[md.find("## Verdict").unwrap()..md.find("## How this was measured").unwrap()];
    for cell in json["cells"].as_array().unwrap() {
        let column = cell["column"].as_str().unwrap();
        if cell["fencing"] == true || reentry.contains(&column) {
            continue;
        }
        let row = cell["row"].as_str().unwrap();
        let line = verdict
            .lines()
            .find(|l| l.starts_with(&format!("| {row} |")))
            .unwrap();
        let mutex = line.split(" | ").nth(2).unwrap();
        let seeds = cell["seeds"].as_u64().unwrap();
        match cell["checks"]["mutex"]["violations"].as_u64() {
            Some(k) if k > 0 => {
                assert!(mutex.contains(&format!("{column} {k}/{seeds}")), "{line}")
            }
            _ => assert!(!mutex.contains(&format!("{column} ")), "{line}"),
        }
    }
}

/// The committed report (reports/): its stamp and verdict agree with its counts, every
/// link resolves, one timeline per run, and the page stays small (the pictures are on
/// the cells' pages).
#[test]
fn the_committed_report_agrees_with_its_counts() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    stamp_and_counts_agree(&out);
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        html.len() <= 1_500_000,
        "reports/index.html is {} bytes, over 1.5 MB",
        html.len()
    );
    links_resolve(&html, &out);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("guarantees.json")).unwrap())
            .unwrap();
    let mut runs = BTreeSet::new();
    for t in json["timelines"].as_array().unwrap() {
        let run = (t["cell"].as_str().unwrap(), t["seed"].as_u64().unwrap());
        assert!(runs.insert(run), "{run:?} drawn twice");
    }
}

/// The ids a page holds.
fn ids_of(html: &str) -> BTreeSet<&str> {
    html.split(" id=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect()
}

/// Every ✗ cell links to an anchor (on the page, or on its cell's timeline page) inside
/// a section that holds a timeline of that check; every other link is an anchor or a
/// file that exists; every `–` says why.
fn links_resolve(html: &str, out: &Path) {
    let ids = ids_of(html);
    let mut pages: BTreeMap<String, String> = BTreeMap::new();
    let mut violated = 0;
    for td in html.split("<td").skip(1) {
        let td = &td[..td.find("</td>").unwrap()];
        if td.starts_with(" class=\"na quality\"") {
            // A quality check the family does not run: nothing to link.
            continue;
        }
        if td.starts_with(" class=\"na\"") {
            let title = td.split("title=\"").nth(1).unwrap_or_default();
            assert!(title.len() > 30, "a – without a reason: {td}");
            continue;
        }
        for href in td
            .split("href=\"")
            .skip(1)
            .map(|h| &h[..h.find('"').unwrap()])
        {
            let Some((file, id)) = href.split_once('#') else {
                // A broken quality check (`fair`) links to its cell: it has no timeline.
                let quality = td.starts_with(" class=\"bad quality\"");
                assert!(td.contains("✓") || td.contains("?") || quality, "{td}");
                assert!(out.join(href).is_file(), "{href} missing");
                continue;
            };
            let page: &str = if file.is_empty() {
                html
            } else {
                pages.entry(file.to_string()).or_insert_with(|| {
                    std::fs::read_to_string(out.join(file))
                        .unwrap_or_else(|e| panic!("{href}: {e}"))
                })
            };
            assert!(
                file.is_empty() || ids_of(page).contains(id),
                "dangling link {href}"
            );
            assert!(!file.is_empty() || ids.contains(id), "dangling link {href}");
            if td.contains("✗") {
                violated += 1;
                let at = page.find(&format!(" id=\"{id}\"")).unwrap();
                let section = &page[page[..at].rfind("<section").unwrap()..];
                let section = &section[..section.find("</section>").unwrap()];
                assert!(section.contains("<svg"), "{id}: no timeline");
                let check = id.rsplit("--").next().unwrap();
                assert!(section.contains(&format!("<code>{check}</code>")), "{id}");
            }
        }
    }
    assert!(violated > 0, "the pause column violates something");
    // The timeline pages' own links lead back to files that exist.
    for (file, page) in &pages {
        let dir = out.join(file).parent().unwrap().to_path_buf();
        for href in page
            .split("href=\"")
            .skip(1)
            .map(|h| &h[..h.find('"').unwrap()])
        {
            let target = href.split('#').next().unwrap();
            assert!(dir.join(target).is_file(), "{file}: {href} missing");
        }
    }
}

#[test]
fn shards_merged_are_byte_identical_to_one_run() {
    let dir = folder("shards");
    let (ok, err) = report(
        &dir,
        &["--jobs", "2", "--matrix", "matrix.toml", "--out", "out"],
    );
    assert!(ok, "{err}");
    let one = tree(&dir.join("out"));
    std::fs::remove_dir_all(dir.join("out")).unwrap();
    for k in 1..=3 {
        let shard = format!("{k}/3");
        let out = format!("shard{k}");
        let (ok, err) = report(
            &dir,
            &[
                "--jobs",
                "1",
                "--matrix",
                "matrix.toml",
                "--shard",
                &shard,
                "--out",
                &out,
            ],
        );
        assert!(ok, "{err}");
    }
    // A missing shard and a duplicated one are refused, naming the problem.
    let (ok, err) = report(&dir, &["--merge", "shard1", "shard3", "--out", "out"]);
    assert!(!ok && err.contains("shard 2/3 is missing"), "{err}");
    let (ok, err) = report(
        &dir,
        &[
            "--merge", "shard1", "shard1", "shard2", "shard3", "--out", "out",
        ],
    );
    assert!(!ok && err.contains("both shard 1/3"), "{err}");
    // A damaged file (a cell gone) is refused, not reported without that cell.
    let text = std::fs::read_to_string(dir.join("shard1/partial-1-of-3.json")).unwrap();
    let mut damaged: serde_json::Value = serde_json::from_str(&text).unwrap();
    damaged["shard"] = serde_json::json!([1, 1]);
    damaged["cells"].as_array_mut().unwrap().pop();
    std::fs::write(dir.join("damaged.json"), damaged.to_string()).unwrap();
    let (ok, err) = report(&dir, &["--merge", "damaged.json", "--out", "damaged"]);
    assert!(!ok && err.contains("not the same cells"), "{err}");
    let (ok, err) = report(&dir, &["--merge", "matrix.toml", "--out", "out"]);
    assert!(
        !ok && err.contains("matrix.toml:2: expected a partial report"),
        "{err}"
    );

    let (ok, err) = report(
        &dir,
        &[
            "--merge",
            "shard2",
            "shard1",
            "shard3/partial-3-of-3.json",
            "--out",
            "out",
        ],
    );
    assert!(ok, "{err}");
    let merged = tree(&dir.join("out"));
    assert_eq!(
        one.keys().collect::<Vec<_>>(),
        merged.keys().collect::<Vec<_>>()
    );
    for (file, bytes) in &one {
        assert!(
            bytes == &merged[file],
            "{file} differs between one run and merged shards"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn report_refuses_to_replace_a_report_without_overwrite() {
    let dir = folder("guard");
    std::fs::create_dir_all(dir.join("out")).unwrap();
    std::fs::write(dir.join("out/guarantees.md"), "an earlier report").unwrap();
    let (ok, err) = report(
        &dir,
        &["--matrix", "matrix.toml", "--out", "out", "--seeds", "1"],
    );
    assert!(!ok, "{err}");
    assert!(
        err.contains("already holds a report") && err.contains("--overwrite"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("out/guarantees.md")).unwrap(),
        "an earlier report"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
