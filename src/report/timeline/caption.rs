//! The words beside a timeline: each violated check's first violation, its message and
//! the events it names in true-time order, a grant from a stale view called out as one
//! (the event that broke the lock, which a message about a later write may not name
//! first).

use super::*;

/// One violated check of a run, as the page captions its picture.
#[derive(Debug, Clone)]
pub(crate) struct Caption {
    /// The check.
    pub check: &'static str,
    /// Its first violation's message.
    pub message: String,
    /// Whether the picture is zoomed on it and draws its events in red (else light red).
    pub focus: bool,
    /// The events its first violation names, in true-time order: (true time, sentence).
    pub events: Vec<(String, String)>,
}

/// The captions of every violated check in `reports` (quality checks are not
/// violations): the `focus` checks first, in report order, then the others.
pub(super) fn captions(history: &[Event], reports: &[CheckReport], focus: &[&str]) -> Vec<Caption> {
    let stale: BTreeMap<u64, &Event> = stale_grants(history)
        .into_iter()
        .map(|(e, before)| (e.index, before))
        .collect();
    let violated: Vec<&CheckReport> = reports.iter().filter(|r| r.is_violation()).collect();
    let (mut first, rest): (Vec<&CheckReport>, Vec<&CheckReport>) =
        violated.into_iter().partition(|r| focus.contains(&r.name));
    first.extend(rest);
    first
        .into_iter()
        .filter_map(|r| {
            let v = r.violations.first()?;
            let mut named: Vec<&Event> = v
                .events
                .iter()
                .filter_map(|&i| history.get(i as usize))
                .collect();
            named.sort_by_key(|e| (e.time_ns, e.index));
            named.dedup_by_key(|e| e.index);
            let events = named
                .into_iter()
                .map(|e| {
                    (
                        human_time(e.time_ns as i64),
                        event_words(e, stale.get(&e.index)),
                    )
                })
                .collect();
            Some(Caption {
                check: r.name,
                message: v.message.clone(),
                focus: focus.contains(&r.name),
                events,
            })
        })
        .collect()
}

/// An event as the caption lists it; a stale grant says what it came after.
fn event_words(e: &Event, stale_after: Option<&&Event>) -> String {
    let mut s = sentence(e);
    if let Some(before) = stale_after {
        let _ = write!(
            s,
            " — a stale grant: token {} had already been granted to {} at {}",
            before.token.unwrap_or(0),
            before.process,
            human_time(before.time_ns as i64)
        );
    }
    s
}
