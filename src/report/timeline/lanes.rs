//! Drawing the lanes: the network lane, the leader lane, fault bands, holds, point
//! events and stale grants.

use super::*;
use crate::history::names;

/// The network lane from `y`: one bar per partition, labelled when the label fits;
/// returns the lane's bottom.
pub(super) fn network_lane(c: &mut Canvas, cuts: &[Cut], y: f64) -> f64 {
    let (rows, n) = net_rows(c, cuts);
    let height = n as f64 * NET_ROW + 6.0;
    let _ = write!(
        c.body,
        r##"<line x1="0" y1="{y}" x2="{WIDTH}" y2="{y}" stroke="#e4e4e4"/><text x="8" y="{:.1}" font-size="{FONT}">network</text>"##,
        y + height / 2.0 + 4.0
    );
    for (i, cut) in cuts.iter().enumerate() {
        let cy = y + 3.0 + rows[i] as f64 * NET_ROW + NET_ROW / 2.0;
        let tip = format!(
            "{}, from {} to {} true time ({})",
            sentence(cut.event),
            human_time(cut.t0 as i64),
            human_time(cut.t1 as i64),
            human_time((cut.t1 - cut.t0) as i64)
        );
        c.put(Mark::Partition, cut.t0, cut.t1, cy, &esc(&tip));
        let next = (i + 1..cuts.len())
            .find(|&j| rows[j] == rows[i])
            .map_or(RIGHT, |j| c.x(cuts[j].t0) - 4.0);
        let side = set(cut.event.nodes.as_deref().unwrap_or_default());
        let from = set(&strings(
            &cut.event.value.clone().unwrap_or(Value::Null)["from"],
        ));
        let (x0, x1) = (c.x(cut.t0), c.x(cut.t1));
        for text in [
            format!("{side} cut off from {from}"),
            format!("{side} cut off"),
        ] {
            if let Some((lx, inside)) = place_label(x0, x1, &text, SMALL, next) {
                c.label(lx, cy, &text, inside, Layer::Base);
                break;
            }
        }
    }
    y + height
}

/// The leader lane at `y`: "raft-1 · term 3" bars.
pub(super) fn leader_lane(c: &mut Canvas, bars: &[(String, u64, u64, u64, &Event)], y: f64) {
    let cy = y + LEADER_LANE / 2.0;
    let _ = write!(
        c.body,
        r##"<line x1="0" y1="{y}" x2="{WIDTH}" y2="{y}" stroke="#e4e4e4"/><text x="8" y="{:.1}" font-size="{FONT}">leader</text>"##,
        cy + 4.0
    );
    let nodes: BTreeSet<&str> = bars.iter().map(|b| b.0.as_str()).collect();
    for (i, (node, term, t0, t1, e)) in bars.iter().enumerate() {
        let colour = LEADERS[nodes.iter().position(|n| n == node).unwrap_or(0) % LEADERS.len()];
        let tip = format!(
            "{}, leads until {} true time{}",
            sentence(e),
            human_time(*t1 as i64),
            when(e)
        );
        let mark = Mark::Leader
            .draw(c.x(*t0), c.x(*t1), cy, &esc(&tip))
            .replacen(LEADERS[0], colour, 1);
        c.body.push_str(&mark);
        c.marks.insert(Mark::Leader);
        let next = bars[i + 1..]
            .iter()
            .map(|b| c.x(b.2) - 4.0)
            .find(|&x| x > c.x(*t0))
            .unwrap_or(RIGHT);
        let text = format!("{node} · term {term}");
        if let Some((lx, inside)) = place_label(c.x(*t0), c.x(*t1), &text, SMALL, next) {
            c.label(lx, cy, &text, inside, Layer::Base);
        }
    }
}

/// Bands inside node lanes: pauses, crashes, disk stalls, the partition band of each
/// cut-off node, Curator connection states.
pub(super) fn node_bands(c: &mut Canvas, spans: &[Span], cuts: &[Cut], end_ns: u64) {
    let mut bands: Vec<(String, Mark, u64, u64, &Event)> = spans
        .iter()
        .map(|s| (s.node.clone(), s.mark, s.t0, s.t1, s.event))
        .collect();
    bands.extend(connection_bands(c.history, end_ns));
    for (node, mark, t0, t1, e) in bands {
        let Some(&y) = c.rows.get(node.as_str()) else {
            continue;
        };
        if !c.visible(t0, t1) || c.x(t1) <= c.x(t0) {
            continue;
        }
        let what = match mark {
            Mark::Pause => "paused",
            Mark::Crash => "crashed",
            Mark::DiskStall => "disk stalled",
            Mark::Suspended => "connection SUSPENDED",
            _ => "connection LOST",
        };
        let tip = format!(
            "{node} {what} from {} to {} true time ({}): {}{}",
            human_time(t0 as i64),
            human_time(t1 as i64),
            human_time((t1 - t0) as i64),
            sentence(e),
            when(e)
        );
        c.put(mark, t0, t1, y, &esc(&tip));
        let (x0, x1) = (c.x(t0), c.x(t1));
        if matches!(mark, Mark::Crash | Mark::Pause) && x1 - x0 >= text_width(what, SMALL) + 6.0 {
            let fill = if mark == Mark::Crash { "#fff" } else { "#555" };
            let _ = write!(
                c.body,
                r##"<text x="{:.1}" y="{:.1}" font-size="{SMALL}" fill="{fill}">{what}</text>"##,
                x0 + 3.0,
                y - LANE / 2.0 + 11.0
            );
        }
    }
    for cut in cuts {
        for node in cut.event.nodes.iter().flatten() {
            if let Some(&y) = c.rows.get(node.as_str()) {
                let tip = format!("{node} cut off: {}", sentence(cut.event));
                let (x0, x1) = (c.x(cut.t0), c.x(cut.t1).max(c.x(cut.t0) + 2.0));
                let _ = write!(
                    c.body,
                    r##"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="3" fill="{ORANGE}"><title>{}</title></rect>"##,
                    y - LANE / 2.0 + 1.0,
                    x1 - x0,
                    esc(&tip)
                );
            }
        }
    }
}

/// Every hold to draw: the holds the checks see (the history without re-entrant
/// events), then each re-entrant (inner) hold, flagged `true`.
fn all_holds(history: &[Event], end_ns: u64) -> Vec<(Hold, bool)> {
    let outer = hold_intervals(&outer_only(history), end_ns);
    // The inner acquires and releases pair up as holds of their own; a crash ends them.
    let inner: Vec<Event> = history
        .iter()
        .filter(|e| e.is_reentrant() || e.process == "nemesis")
        .cloned()
        .collect();
    let inner = if inner.iter().any(Event::is_reentrant) {
        hold_intervals(&inner, end_ns)
    } else {
        Vec::new()
    };
    outer
        .into_iter()
        .map(|h| (h, false))
        .chain(inner.into_iter().map(|h| (h, true)))
        .collect()
}

/// Sub-rows of one lane's holds (in start order): each goes on the first row where the
/// previous hold has ended, so overlapping holds (an inner hold inside its outer one)
/// stack instead of hiding each other. Returns the row of each and the number of rows.
fn hold_rows(holds: &[&(Hold, bool)]) -> (Vec<usize>, usize) {
    let mut ends: Vec<u64> = Vec::new();
    let rows = holds
        .iter()
        .map(|(h, _)| match ends.iter().position(|&e| e <= h.start_ns) {
            Some(r) => {
                ends[r] = h.end_ns.max(h.start_ns + 1);
                r
            }
            None => {
                ends.push(h.end_ns.max(h.start_ns + 1));
                ends.len() - 1
            }
        })
        .collect();
    (rows, ends.len().max(1))
}

/// Hold bars with their token labels, stacked in sub-rows where a lane's holds overlap.
pub(super) fn holds(c: &mut Canvas, end_ns: u64) {
    let mut all: Vec<(Hold, bool)> = all_holds(c.history, end_ns)
        .into_iter()
        .filter(|(h, _)| c.visible(h.start_ns, h.end_ns))
        .collect();
    all.sort_by(|(a, ai), (b, bi)| {
        (&a.process, a.start_ns, ai, a.start_event).cmp(&(
            &b.process,
            b.start_ns,
            bi,
            b.start_event,
        ))
    });
    let lanes: BTreeSet<String> = all.iter().map(|(h, _)| h.process.clone()).collect();
    for lane in lanes {
        let Some(&y) = c.rows.get(lane.as_str()) else {
            continue;
        };
        let mine: Vec<&(Hold, bool)> = all.iter().filter(|(h, _)| h.process == lane).collect();
        let (rows, n) = hold_rows(&mine);
        // One row: a 14 px bar on the centre line; more share the lane's middle 30 px.
        let pitch = if n == 1 { 14.0 } else { 30.0 / n as f64 };
        let height = if n == 1 { 14.0 } else { pitch - 1.0 };
        for (i, (h, inner)) in mine.iter().enumerate() {
            let cy = y - pitch * n as f64 / 2.0 + pitch * (rows[i] as f64 + 0.5);
            let next = mine[i + 1..]
                .iter()
                .zip(&rows[i + 1..])
                .find(|(_, &r)| r == rows[i])
                .map_or(RIGHT, |((o, _), _)| c.x(o.start_ns) - 4.0);
            hold(c, h, *inner, (cy, height), next);
        }
    }
}

/// One hold's bar at centre line and height `row`, and its token label when it fits
/// before `next` (the next bar on its row).
fn hold(c: &mut Canvas, h: &Hold, inner: bool, (cy, height): (f64, f64), next: f64) {
    let names = |set: &BTreeSet<u64>| {
        set.contains(&h.start_event) || h.end_event.is_some_and(|e| set.contains(&e))
    };
    let mark = if names(&c.focus) {
        Mark::HoldFocus
    } else if names(&c.other) {
        Mark::HoldOther
    } else if inner {
        Mark::HoldInner
    } else {
        Mark::Hold
    };
    let token = h.token.map(|t| format!("token {t}"));
    let start = &c.history[h.start_event as usize];
    let tip = format!(
        "{} held {}{}{} from {} to {} true time ({}); acquired{}",
        h.process,
        h.lock,
        if inner { " again (re-entrant)" } else { "" },
        token
            .as_ref()
            .map(|t| format!(" with {t}"))
            .unwrap_or_default(),
        human_time(h.start_ns as i64),
        human_time(h.end_ns as i64),
        human_time((h.end_ns - h.start_ns) as i64),
        when(start)
    );
    let (x0, x1) = (c.x(h.start_ns), c.x(h.end_ns).max(c.x(h.start_ns) + 2.0));
    let bar = mark.hold_bar(x0, x1, cy, height, &esc(&tip));
    c.layer(mark.layer()).push_str(&bar);
    c.marks.insert(mark);
    // A label needs a bar tall enough to hold it.
    if let (Some(t), true) = (token, height >= 12.0) {
        if let Some((lx, inside)) = place_label(x0, x1, &t, SMALL, next) {
            c.label(lx, cy, &t, inside && !inner, mark.layer());
        }
    }
}

/// Point marks: stale grants, clock faults, expirations, storage writes, and anything a
/// violation names.
pub(super) fn points(c: &mut Canvas) {
    let stale: BTreeMap<u64, &Event> = stale_grants(c.history)
        .into_iter()
        .map(|(e, before)| (e.index, before))
        .collect();
    let (lo, hi) = (c.lo, c.hi);
    // Stale grants per lane in the window: one is labelled beside its diamond; more get
    // one note under the lane's name, so their labels never overprint.
    let mut stale_left: BTreeMap<&str, usize> = BTreeMap::new();
    for e in c.history.iter().filter(|e| stale.contains_key(&e.index)) {
        if e.time_ns >= lo && e.time_ns <= hi {
            *stale_left.entry(e.process.as_str()).or_default() += 1;
        }
    }
    let mut labelled: BTreeSet<&str> = BTreeSet::new();
    for e in c
        .history
        .iter()
        .filter(|e| e.time_ns >= lo && e.time_ns <= hi)
    {
        let t = e.time_ns;
        if e.process == "nemesis"
            && matches!(e.f.as_str(), names::CLOCK_JUMP | names::SKEW | names::DRIFT)
        {
            for n in e.nodes.iter().flatten() {
                if let Some(&y) = c.rows.get(n.as_str()) {
                    c.put(Mark::ClockFault, t, t, y, &title(e));
                }
            }
            continue;
        }
        let Some(&y) = c.rows.get(e.process.as_str()) else {
            continue;
        };
        let focus = c.focus.contains(&e.index);
        let mark = if e.kind == EventType::Event && e.f == names::EXPIRE {
            Some(if focus {
                Mark::ExpiryFocus
            } else {
                Mark::Expiry
            })
        } else if e.process == "storage" && e.f == names::WRITE {
            Some(match (e.accepted, focus) {
                (Some(false), _) => Mark::WriteRejected,
                (_, true) => Mark::WriteFocus,
                _ => Mark::Write,
            })
        } else if focus && !(e.f == names::ACQUIRE || e.f == names::RELEASE) {
            Some(Mark::Named)
        } else {
            None
        };
        if let Some(m) = mark {
            c.put(m, t, t, y, &title(e));
        }
        if c.other.contains(&e.index) {
            c.put(Mark::NamedOther, t, t, y, &title(e));
        }
        if let Some(before) = stale.get(&e.index) {
            let label = labelled
                .insert(e.process.as_str())
                .then(|| stale_left.get(e.process.as_str()).copied().unwrap_or(1) - 1);
            stale_mark(c, e, before, y, label);
        }
    }
}

/// A stale grant's diamond, and for the first of its lane (`more` says how many others
/// the lane shows) a label: beside the diamond when it is the only one, else one note
/// under the lane's name counting them all.
pub(super) fn stale_mark(c: &mut Canvas, e: &Event, before: &Event, y: f64, more: Option<usize>) {
    let (tok, prev) = (e.token.unwrap_or(0), before.token.unwrap_or(0));
    let tip = format!(
        "stale grant: {} was granted {} token {tok}{}, after {} had been granted token {prev} at {} true time: the grant came from a stale view of the lock (e.g. a node answering from its stale local state)",
        e.process,
        e.lock.as_deref().unwrap_or("?"),
        when(e),
        before.process,
        human_time(before.time_ns as i64)
    );
    c.put(Mark::StaleGrant, e.time_ns, e.time_ns, y - 8.0, &esc(&tip));
    let Some(more) = more else {
        return;
    };
    if more > 0 {
        let _ = write!(
            c.body,
            r##"<text x="8" y="{:.1}" font-size="11" fill="#8a5a00">{} stale grants</text>"##,
            y + 15.0,
            more + 1
        );
        return;
    }
    let text = format!("stale grant (token {tok} after {prev})");
    let x = c.x(e.time_ns);
    let lx = if x + 8.0 + text_width(&text, SMALL) <= RIGHT {
        x + 8.0
    } else {
        x - 8.0 - text_width(&text, SMALL)
    };
    let _ = write!(
        c.body,
        r##"<text x="{lx:.1}" y="{:.1}" font-size="{SMALL}" fill="#000" stroke="#fff" stroke-width="3" paint-order="stroke">{}</text>"##,
        y - LANE / 2.0 + 11.0,
        esc(&text)
    );
}
