//! `mutex`: no two processes hold the lock at once (true time).
use super::Violation;
use crate::history::Event;

/// A hold interval of one process on one lock, in true time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    /// The holding process.
    pub process: String,
    /// Lock name.
    pub lock: String,
    /// Fencing token of the grant, if any.
    pub token: Option<u64>,
    /// True time of the acquire `ok`.
    pub start_ns: u64,
    /// True time the hold ended (release invoke, crash of the holder, or end of run).
    pub end_ns: u64,
    /// Index of the acquire `ok` event.
    pub start_event: u64,
    /// Index of the event that ended the hold, if any.
    pub end_event: Option<u64>,
}

/// Every hold interval in `history`.
pub fn hold_intervals(_history: &[Event], _end_ns: u64) -> Vec<Hold> {
    todo!()
}

/// Check `mutex`.
pub fn check_mutex(_history: &[Event], _end_ns: u64) -> Vec<Violation> {
    todo!()
}
