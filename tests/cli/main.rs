//! The `locksim` binary's integration tests, in one binary: its commands and exit codes,
//! hostile inputs, `check` on published and broken histories, the HTML report, `serve`
//! to real clients, and a user's own binary built on `main_with`. Each module is one concern; `cargo test --profile fast-build --test cli
//! report` runs one of them. Live mode has a binary of its own (`tests/live.rs`): its
//! verdicts hang on real timing, so it shares the machine only with other live runs.

#[path = "../support/mod.rs"]
mod support;

mod bad_inputs;
mod check_robustness;
mod commands;
mod jepsen_data;
mod lua_memory_cap;
mod report;
mod serve;
mod serve_db;
mod serve_events;
mod user_binary;
