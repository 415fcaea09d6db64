//! Who runs the command line: a binary built on [`main_with`](super::main_with), what its
//! hints call it and which algorithms its scenarios may name.

use crate::locks::{Family, ALGORITHMS};
use std::path::Path;

/// Who runs the command line: what its hints call it, and what its scenarios may name.
#[derive(Debug, Clone, Copy)]
pub struct Binary<'a> {
    /// The binary's name in hints (`replay: NAME replay FILE --seed 3`).
    pub name: &'a str,
    /// The algorithms a scenario may name: locksim's, then the binary's own.
    pub families: &'a [Family],
}

impl Binary<'_> {
    /// What hints call the binary that knows `families`: `locksim` for locksim's
    /// families alone (whatever the file is called), else the name it was run by (a
    /// user's binary knows families `locksim` does not).
    pub(crate) fn name_of_program(families: &[Family]) -> String {
        let own = families.len() > ALGORITHMS.len();
        let invoked = std::env::args_os()
            .next()
            .and_then(|a| Some(Path::new(&a).file_name()?.to_string_lossy().into_owned()));
        match invoked {
            Some(name) if own => name,
            _ => "locksim".to_string(),
        }
    }
}
