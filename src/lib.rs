//! locksim: deterministic simulation and verification of distributed locks.
#![warn(missing_docs)]

pub mod check;
pub mod edn;
pub mod history;
pub mod linearizability;
pub mod locks;
