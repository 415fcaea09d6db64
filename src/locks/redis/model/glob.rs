//! Redis's glob patterns (`stringmatchlen` in `util.c`), as `KEYS` and `PSUBSCRIBE` use
//! them: `*` any run of bytes, `?` one byte, `[abc]` one of a class, `[^abc]` one not in
//! it, `[a-z]` a range (its ends in either order), `\x` the byte `x`, here and inside a
//! class. Case-sensitive.
//!
//! Redis's corner cases are kept, as they decide what a pattern matches:
//!
//! - an empty string matches only the empty pattern (`KEYS *` lists an empty key name
//!   because `KEYS` skips matching for exactly `*`; `**` does not);
//! - in a class, `x-]` is the range from `x` to `]`, so the class does not end there;
//! - a class without its `]` ends with the pattern (`[ab` is `[ab]`);
//! - a `\` at the very end is a literal backslash;
//! - once the rest of a pattern after `*` fails against every suffix, no earlier `*` is
//!   tried further (Redis's `skipLongerMatches`, which bounds the work);
//! - a match nested more than 1000 stars deep fails (Redis 7.0.10's guard against
//!   abusive patterns; here it also bounds the recursion, so no pattern overflows the
//!   stack).

/// How deep stars may nest before a match fails, as in Redis.
const MAX_NESTING: u32 = 1000;

/// Whether `s` matches the glob `pattern`, as Redis's `stringmatchlen`.
pub(crate) fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    let mut give_up = false;
    matches_from(pattern, s, &mut give_up, 0)
}

/// Matches `s` against `p`, `nesting` stars deep; `give_up` is set once a `*`'s rest
/// matched no suffix.
fn matches_from(mut p: &[u8], mut s: &[u8], give_up: &mut bool, nesting: u32) -> bool {
    if nesting > MAX_NESTING {
        return false;
    }
    while let (Some(&head), Some(&byte)) = (p.first(), s.first()) {
        match head {
            b'*' => {
                // A run of stars is one star.
                while p.get(1) == Some(&b'*') {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                // The rest must match some non-empty suffix.
                while !s.is_empty() {
                    if matches_from(&p[1..], s, give_up, nesting + 1) {
                        return true;
                    }
                    if *give_up {
                        return false;
                    }
                    s = &s[1..];
                }
                *give_up = true;
                return false;
            }
            b'?' => {}
            b'[' => {
                let (hit, last) = class(p, byte);
                if !hit {
                    return false;
                }
                p = &p[last..];
            }
            b'\\' if p.len() >= 2 => {
                p = &p[1..];
                if p[0] != byte {
                    return false;
                }
            }
            literal => {
                if literal != byte {
                    return false;
                }
            }
        }
        s = &s[1..];
        p = &p[1..];
        if s.is_empty() {
            while p.first() == Some(&b'*') {
                p = &p[1..];
            }
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

/// Matches `byte` against the class at `p` (`p[0]` is `[`): whether it matches, and the
/// index of the class's last byte in `p` (its `]`, or the pattern's last byte when the
/// class is not closed).
fn class(p: &[u8], byte: u8) -> (bool, usize) {
    let mut j = 1;
    let negate = p.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut hit = false;
    loop {
        let rest = p.len().saturating_sub(j);
        if rest >= 2 && p[j] == b'\\' {
            j += 1;
            hit |= p[j] == byte;
        } else if rest >= 1 && p[j] == b']' {
            break;
        } else if rest == 0 {
            // Unclosed: the class ends with the pattern.
            j = p.len() - 1;
            break;
        } else if rest >= 3 && p[j + 1] == b'-' {
            let (lo, hi) = (p[j].min(p[j + 2]), p[j].max(p[j + 2]));
            hit |= (lo..=hi).contains(&byte);
            j += 2;
        } else {
            hit |= p[j] == byte;
        }
        j += 1;
    }
    (hit != negate, j)
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    fn m(p: &str, s: &str) -> bool {
        glob_match(p.as_bytes(), s.as_bytes())
    }

    #[test]
    fn stars_and_question_marks() {
        assert!(m("*", "abc"));
        assert!(m("lock:*", "lock:a"));
        assert!(m("lock:*", "lock:"));
        assert!(!m("lock:*", "lock"));
        assert!(m("a*b*c", "aXbYc"));
        assert!(!m("a*b*c", "aXbY"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("*a", "a"));
        assert!(m("a**", "a"));
    }

    #[test]
    fn stars_nested_past_a_thousand_fail_instead_of_overflowing_the_stack() {
        let deep = |n| "*a".repeat(n);
        assert!(m(&deep(999), &"a".repeat(999)));
        assert!(!m(&deep(1002), &"a".repeat(1002)));
        // Far past the guard: no stack overflow.
        assert!(!m(&deep(200_000), &"a".repeat(200_000)));
    }

    #[test]
    fn classes_ranges_and_escapes() {
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hallo"));
        assert!(m("x\\*", "x*"));
        assert!(!m("x\\*", "xy"));
        assert!(m("[\\]]", "]"));
        assert!(m("x\\", "x\\"));
    }

    #[test]
    fn redis_corner_cases() {
        // The empty string matches only the empty pattern.
        assert!(!m("*", ""));
        assert!(m("", ""));
        // `a-]` is the range `]`..`a`: the class goes on to the next `]`.
        assert!(m("[a-]x]", "x"));
        assert!(m("[a-]x]", "_"));
        assert!(!m("[a-]x]", "b"));
        // An unclosed class ends with the pattern.
        assert!(m("[ab", "b"));
        assert!(!m("[", "["));
    }
}
