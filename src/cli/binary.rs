//! Who runs the command line: a binary built on [`main_with`](super::main_with), what its
//! hints call it and which algorithms its scenarios may name.

use crate::locks::{Family, ALGORITHMS};
use std::path::Path;

/// Who runs the command line: what its hints call it, and what its scenarios may name.
#[derive(Debug, Clone, Copy)]
pub struct Binary<'a> {
    /// The binary's name in files it writes (a report's replay commands): the same
    /// bytes however it was started.
    pub name: &'a str,
    /// The command as the user invoked it, in printed hints (`replay: HINT replay FILE
    /// --seed 3`): [`Self::name`], or `cargo run --release --` under `cargo run`.
    pub hint: &'a str,
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

    /// How hints spell the command: `cargo run --release --` (`cargo run --` for the dev
    /// profile, `cargo run --profile P --` for another) when cargo started locksim's own
    /// binary (`cargo run` sets `CARGO` and the package's name for the program it runs),
    /// else `name`.
    pub(crate) fn hint_of_program(name: &str, families: &[Family]) -> String {
        let under_cargo = std::env::var_os("CARGO").is_some()
            && std::env::var_os("CARGO_PKG_NAME").is_some_and(|n| n == "locksim");
        if !under_cargo || families.len() > ALGORITHMS.len() {
            return name.to_string();
        }
        // cargo runs target/[TRIPLE/]PROFILE/locksim; `debug` holds the dev profile's.
        let profile = std::env::args_os().next().and_then(|a| {
            let dir = Path::new(&a).parent()?.file_name()?;
            Some(dir.to_string_lossy().into_owned())
        });
        cargo_run_in(profile.as_deref())
    }
}

/// `cargo run` spelled for the build in a profile's folder.
fn cargo_run_in(profile_dir: Option<&str>) -> String {
    match profile_dir {
        Some("release") => "cargo run --release --".to_string(),
        Some("debug") | None => "cargo run --".to_string(),
        Some(profile) => format!("cargo run --profile {profile} --"),
    }
}

#[cfg(test)]
mod tests {
    use super::cargo_run_in;

    #[test]
    fn each_profiles_folder_spells_its_own_cargo_run() {
        assert_eq!(cargo_run_in(Some("release")), "cargo run --release --");
        assert_eq!(cargo_run_in(Some("debug")), "cargo run --");
        assert_eq!(cargo_run_in(None), "cargo run --");
        assert_eq!(
            cargo_run_in(Some("fast-build")),
            "cargo run --profile fast-build --"
        );
    }
}
