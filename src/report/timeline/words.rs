//! The words of a timeline: times, sentences for tooltips, label widths and placement.

use super::*;
use crate::history::values::{Leader, RaftExpire};
use crate::history::{names, EventValue};

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A duration or instant for people: "2.445 s", "850 ms", "12.5 ms", "40 µs", "-80 ms".
pub(crate) fn human_time(ns: i64) -> String {
    if ns == 0 {
        return "0 s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    let (v, unit) = if a >= 1_000_000_000 {
        (a as f64 / 1e9, "s")
    } else if a >= 1_000_000 {
        (a as f64 / 1e6, "ms")
    } else if a >= 1_000 {
        (a as f64 / 1e3, "µs")
    } else {
        (a as f64, "ns")
    };
    let n = format!("{v:.3}");
    let n = n.trim_end_matches('0').trim_end_matches('.');
    format!("{sign}{n} {unit}")
}

/// `human_time` with an explicit sign: "+1.2 s", "-80 ms".
pub(super) fn signed_time(ns: i64) -> String {
    if ns >= 0 {
        format!("+{}", human_time(ns))
    } else {
        human_time(ns)
    }
}

/// Estimated width in px of `s` at font size `size` (sans-serif, ~0.6 em per char).
pub(super) fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * 0.6 * size
}

/// Where a label for the bar `[x0, x1]` goes: inside when it fits, else right of the bar
/// when it ends before `limit`, else nowhere. Returns (x, inside).
pub(super) fn place_label(
    x0: f64,
    x1: f64,
    text: &str,
    size: f64,
    limit: f64,
) -> Option<(f64, bool)> {
    let w = text_width(text, size);
    if x1 - x0 >= w + 6.0 {
        Some((x0 + 3.0, true))
    } else if x1 + 4.0 + w <= limit.min(RIGHT) {
        Some((x1 + 4.0, false))
    } else {
        None
    }
}

/// Split `text` into lines of at most `max` px at font size `size`, at spaces.
pub(super) fn wrap(text: &str, size: f64, max: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if text_width(&candidate, size) > max && !line.is_empty() {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = candidate;
        }
    }
    lines.push(line);
    lines
}

pub(super) fn set(nodes: &[String]) -> String {
    format!("{{{}}}", nodes.join(", "))
}

/// A JSON number of milliseconds as nanoseconds.
pub(super) fn json_ms(v: &Value, key: &str) -> Option<i64> {
    v.get(key)?.as_f64().map(|ms| (ms * 1e6).round() as i64)
}

pub(super) fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().map_or_else(|| s.to_string(), str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// A partition event as a sentence: who is cut off from whom, in which direction.
pub(super) fn partition_sentence(side: &[String], v: &Value) -> String {
    let from = strings(&v["from"]);
    let dir = if v["oneway"].as_bool() == Some(true) {
        format!("one way: {} cannot send to {}", set(side), set(&from))
    } else {
        "both ways".to_string()
    };
    format!(
        "partition: {} cut off from {} ({dir})",
        set(side),
        set(&from)
    )
}

/// A nemesis event as a sentence.
pub(super) fn nemesis_sentence(e: &Event) -> String {
    let nodes = e.nodes.clone().unwrap_or_default();
    let on = nodes.join(", ");
    let v = e.value.clone().unwrap_or(Value::Null);
    match e.f.as_str() {
        names::PAUSE => {
            let d = json_ms(&v, "duration_ms")
                .map(|d| format!(" for {}", human_time(d)))
                .unwrap_or_default();
            let at = match v["at"].as_str() {
                Some("anywhere") | None => String::new(),
                Some(a) => format!(" (strikes {a})"),
            };
            format!("pause of {on}{d}{at}")
        }
        names::RESUME => format!("{on} resumes"),
        names::CRASH => match json_ms(&v, "down_ms") {
            Some(d) => format!("crash of {on} (down for {})", human_time(d)),
            None => format!("crash of {on} (stays down)"),
        },
        names::RESTART => format!("{on} restarts"),
        names::PARTITION => partition_sentence(&nodes, &v),
        names::HEAL => match &v["id"] {
            Value::String(s) if s == "all" => "heal of every partition".to_string(),
            id => format!("heal of partition {id}"),
        },
        names::CLOCK_JUMP => {
            let d = json_ms(&v, "delta_ms").unwrap_or(0);
            let err = json_ms(&v, "wall_error_ms")
                .map(|e| format!(" (wall clock now {} from true time)", signed_time(e)))
                .unwrap_or_default();
            format!("clock jump {} on {on}{err}", signed_time(d))
        }
        names::SKEW => format!(
            "clock skew on {on}: wall clock set {} from true time",
            signed_time(json_ms(&v, "skew_ms").unwrap_or(0))
        ),
        names::DRIFT => format!(
            "clock drift on {on}: {:+} ppm",
            v["drift_ppm"].as_i64().unwrap_or(0)
        ),
        names::DISK_STALL => match json_ms(&v, "duration_ms") {
            Some(d) => format!("disk stall on {on} for {}", human_time(d)),
            None => format!("disk stall on {on}"),
        },
        names::DISK_READY => format!("disk of {on} ready"),
        f if v.is_null() => format!("{f} on {on}"),
        f => format!("{f} on {on}: {v}"),
    }
}

/// An event as a sentence (no times).
pub(crate) fn sentence(e: &Event) -> String {
    if e.process == "nemesis" {
        return nemesis_sentence(e);
    }
    let v = e.value.clone().unwrap_or(Value::Null);
    match (e.kind, e.f.as_str()) {
        (EventType::Event, names::LEADER) => {
            // A malformed value is shown as it is.
            let term = Leader::of(e).map_or_else(|| v["term"].to_string(), |l| l.term.to_string());
            format!("{} becomes leader (term {term})", e.process)
        }
        (EventType::Event, names::CONNECTION) => {
            let why = e
                .reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let state = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            format!("{} connection {state}{why}", e.process)
        }
        (EventType::Event, names::EXPIRE) => {
            let key = e.key.as_deref().unwrap_or("?");
            let at = RaftExpire::of(e)
                .map(|x| format!(" (log index {})", x.index))
                .unwrap_or_default();
            format!("{}: the lock key {key} expires{at}", e.process)
        }
        _ => format!("{}: {}", e.process, describe(e)),
    }
}

/// " at 2.445 s true; client-1 mono 2.3 s, wall 00:00:02.301": true time beside the
/// recording node's clocks.
pub(super) fn when(e: &Event) -> String {
    let mut t = format!(" at {} true time", human_time(e.time_ns as i64));
    let node = match (&e.nodes, e.process.as_str()) {
        (Some(n), "nemesis") => n.join(", "),
        _ => e.process.clone(),
    };
    if let Some(m) = e.local_ns {
        let _ = write!(t, "; {node} local mono {}", human_time(m));
    }
    if let Some(w) = e.wall_ms {
        let _ = write!(t, ", local wall {}", wall_clock(w));
    }
    t
}

/// Tooltip text for an event: the sentence, true time, local clocks (escaped).
pub(super) fn title(e: &Event) -> String {
    esc(&format!("{}{}", sentence(e), when(e)))
}
