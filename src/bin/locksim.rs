//! `locksim`: the command-line front end. The command line lives in the library
//! ([`locksim::cli::main_with`]), so that a binary of a user's own runs it for their
//! families too; this one runs locksim's families alone.

use std::process::ExitCode;

fn main() -> ExitCode {
    locksim::cli::main_with(&[])
}
