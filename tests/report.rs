//! `locksim report` on a small matrix: the three reports are written and well-formed
//! (the JSON parses and has every cell, the Markdown has a table per check, the HTML is
//! one self-contained page with a timeline for each violated cell), and the cell files
//! replay.

use std::process::Command;

const MATRIX: &str = r#"
seeds = 2
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
"#;

#[test]
fn a_small_matrix_writes_well_formed_reports() {
    let dir = std::env::temp_dir().join(format!("locksim-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let matrix = dir.join("matrix.toml");
    std::fs::write(&matrix, MATRIX).unwrap();
    let out = dir.join("out");
    let status = Command::new(env!("CARGO_BIN_EXE_locksim"))
        .args(["report", "--jobs", "2", "--matrix"])
        .arg(&matrix)
        .arg("--out")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("guarantees.json")).unwrap())
            .unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2 * 2 * 2, "rows x columns x fencing");
    let redlock = cells.iter().find(|c| c["row"] == "redlock").unwrap();
    assert!(
        redlock["checks"].get("lock-linearizable").is_none(),
        "not defined for Redlock"
    );
    let paused = cells
        .iter()
        .find(|c| c["row"] == "redis" && c["column"] == "pause" && c["fencing"] == false)
        .unwrap();
    assert_eq!(paused["checks"]["mutex"]["violations"], 2, "{paused}");
    let replay = paused["checks"]["mutex"]["replay"].as_str().unwrap();
    assert!(replay.starts_with("locksim replay ") && replay.contains("--seed 0"));

    let md = std::fs::read_to_string(out.join("guarantees.md")).unwrap();
    for check in ["mutex", "token-order", "fencing", "counter", "liveness"] {
        assert!(md.contains(&format!("## `{check}`")), "{check}");
    }
    assert!(md.contains("| redis | off | ✓ | ✗ 2/2 |"), "{md}");
    assert!(md.contains("Under process pauses"));

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(html.contains("<svg"), "a timeline for the violated cells");
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("<link"));
    assert_eq!(
        html.matches("http").count(),
        html.matches("http://www.w3.org/2000/svg").count(),
        "no network references"
    );

    // Every cell is a scenario that loads and replays.
    let cell = out.join("cells/redis--pause--unfenced.toml");
    let s = locksim::Scenario::load(&cell).unwrap();
    let r = locksim::run(&s, 0);
    assert!(locksim::check_run(&s, &r)
        .iter()
        .any(|c| c.name == "mutex" && c.verdict == locksim::Verdict::Violated));
}
