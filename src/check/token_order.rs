//! `token-order`: fencing tokens are unique and increase with real-time order of grants.
use super::Violation;
use crate::history::Event;

/// Check `token-order`.
pub fn check_token_order(_history: &[Event]) -> Vec<Violation> {
    todo!()
}
