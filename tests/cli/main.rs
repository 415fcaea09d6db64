//! The `locksim` binary's integration tests, in one binary: its commands and exit codes,
//! hostile inputs, `check` on published and broken histories, the HTML report, `serve`
//! to real clients, and live mode against real servers (`live`). Each module is one
//! concern; `cargo test --release --test cli live` runs one of them.

#[path = "../support/mod.rs"]
mod support;

mod bad_inputs;
mod check_robustness;
mod commands;
mod jepsen_data;
mod live;
mod report;
mod serve;
