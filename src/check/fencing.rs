//! `fencing`: the storage never accepts a stale token.
use super::Violation;
use crate::history::Event;

/// Check `fencing`.
pub fn check_fencing(_history: &[Event]) -> Vec<Violation> {
    todo!()
}
