//! The algorithms a binary built on [`main_with`](super::main_with) knows: locksim's own,
//! then the binary's, every name once (a scenario's `algorithm` must pick one family).

use crate::locks::{Family, ALGORITHMS};
use std::fmt;

/// Why a binary's own family list was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FamilyNameError {
    /// One of the binary's families has the name of one of locksim's own.
    Builtin(&'static str),
    /// Two of the binary's families have the same name.
    Repeated(&'static str),
}

impl fmt::Display for FamilyNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FamilyNameError::Builtin(name) => write!(
                f,
                "this binary's family `{name}` has the name of one of locksim's own families \
                 ({}): give it another `Algorithm::NAME`",
                builtin_names()
            ),
            FamilyNameError::Repeated(name) => write!(
                f,
                "this binary names two families `{name}`: give each its own `Algorithm::NAME`"
            ),
        }
    }
}

impl std::error::Error for FamilyNameError {}

/// locksim's families followed by `own`, or the first name that would be ambiguous.
pub(crate) fn with_builtins(own: &[Family]) -> Result<Vec<Family>, FamilyNameError> {
    let mut all = ALGORITHMS.to_vec();
    for family in own {
        if ALGORITHMS.iter().any(|b| b.name == family.name) {
            return Err(FamilyNameError::Builtin(family.name));
        }
        if all.iter().any(|f| f.name == family.name) {
            return Err(FamilyNameError::Repeated(family.name));
        }
        all.push(*family);
    }
    Ok(all)
}

/// Whether `name` is one of `families` but not one of locksim's own: a user's family.
pub(crate) fn is_users(name: &str, families: &[Family]) -> bool {
    families.iter().any(|f| f.name == name) && !ALGORITHMS.iter().any(|f| f.name == name)
}

/// locksim's own families' names, comma-separated.
fn builtin_names() -> String {
    let names: Vec<&str> = ALGORITHMS.iter().map(|f| f.name).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family that is `redis` under another name.
    fn renamed(name: &'static str) -> Family {
        Family {
            name,
            ..ALGORITHMS[0]
        }
    }

    #[test]
    fn the_binarys_families_follow_locksims_own() {
        let all = with_builtins(&[renamed("mine"), renamed("yours")]).unwrap();
        let names: Vec<&str> = all.iter().map(|f| f.name).collect();
        assert_eq!(
            names[..ALGORITHMS.len()],
            builtin_names().split(", ").collect::<Vec<_>>()[..]
        );
        assert_eq!(names[ALGORITHMS.len()..], ["mine", "yours"]);
        assert!(is_users("mine", &all));
        assert!(!is_users("redis", &all));
        assert!(!is_users("nobody", &all));
        assert_eq!(with_builtins(&[]).unwrap().len(), ALGORITHMS.len());
    }

    #[test]
    fn a_name_taken_twice_is_refused() {
        let clash = with_builtins(&[renamed("zk")]).unwrap_err();
        assert_eq!(clash, FamilyNameError::Builtin("zk"));
        assert!(
            clash.to_string().contains("locksim's own families (redis,"),
            "{clash}"
        );
        let twice = with_builtins(&[renamed("mine"), renamed("mine")]).unwrap_err();
        assert_eq!(twice, FamilyNameError::Repeated("mine"));
    }
}
