//! The simulation's integration tests, in one binary: whole runs of the harness and the
//! families (no real server, no subprocess), their determinism, and the tools built on
//! runs (shrinking, mutations, traffic counting, hour-long soaks). Each module is one
//! concern; `cargo test --profile fast-build --test simulation determinism` runs one of them.

mod db;
mod determinism;
mod disk_stall;
mod guards;
mod harness;
mod lock_scripts;
mod mutations;
mod redlock;
mod reentrant;
mod replication;
mod script_limits;
mod shrink;
mod soak;
mod traffic;
