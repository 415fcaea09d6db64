//! A `locksim` of your own: the whole command line (`run`, `replay --svg`, `shrink`,
//! `report`, `merge`, `list`, `check`) for your families beside locksim's, here the toy
//! family of `examples/toy/mod.rs`.
//!
//! ```text
//! cargo build --release --example my_locksim
//! target/release/examples/my_locksim run examples/toy.toml --seeds 0..20
//! target/release/examples/my_locksim replay examples/toy.toml --seed 1 --svg toy.svg
//! target/release/examples/my_locksim shrink examples/toy.toml --seed 1
//! ```

mod toy;

use locksim::plugin::Family;
use std::process::ExitCode;

fn main() -> ExitCode {
    locksim::cli::main_with(&[Family::of::<toy::Toy>()])
}
