//! `counter`: no lost updates.
use super::Violation;
use crate::history::Event;

/// Check `counter`.
pub fn check_counter(_history: &[Event]) -> Vec<Violation> {
    todo!()
}
