//! `liveness`: the lock is acquired again soon after the last fault heals.
use super::Violation;
use crate::history::Event;

/// Check `liveness`.
pub fn check_liveness(_history: &[Event], _end_ns: u64, _liveness_ns: u64) -> Vec<Violation> {
    todo!()
}
