//! "Did you mean …?" for a misspelt key: the known key one edit away, or the one that
//! differs only by its unit suffix (`duration` for `duration_ms`), so that an error about
//! an unknown key can name the key the user wanted.

/// Unit suffixes a key may carry; a key written without (or with another) is a near miss.
const UNIT_SUFFIXES: [&str; 4] = ["_ms", "_ns", "_s", "_mib"];

/// The candidate the user most likely meant by `unknown`, if any is close: one edit away
/// (insert, delete, replace or swap two neighbours), or equal once unit suffixes are
/// dropped. Ties go to the first candidate, so the answer is stable.
pub(crate) fn closest<'a>(
    unknown: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        if c == unknown {
            continue;
        }
        let score = if without_unit(c) == without_unit(unknown) {
            0
        } else if edits_at_most_one(unknown, c) {
            1
        } else {
            continue;
        };
        if best.is_none_or(|(s, _)| score < s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

fn without_unit(key: &str) -> &str {
    UNIT_SUFFIXES
        .iter()
        .find_map(|s| key.strip_suffix(s))
        .unwrap_or(key)
}

/// Whether `a` becomes `b` by at most one insertion, deletion, replacement or swap of two
/// neighbouring characters (Damerau's "one edit").
fn edits_at_most_one(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    match (a.len(), b.len()) {
        (0, n) | (n, 0) => n <= 1,
        (m, n) if m == n => {
            a[1..] == b[1..] || (m >= 2 && a[0] == b[1] && a[1] == b[0] && a[2..] == b[2..])
        }
        (m, n) if m + 1 == n => a == &b[1..],
        (m, n) if m == n + 1 => &a[1..] == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_edit_or_a_unit_away() {
        let keys = ["kind", "nodes", "duration_ms", "at"];
        assert_eq!(closest("duration", keys), Some("duration_ms"));
        assert_eq!(closest("duration_s", keys), Some("duration_ms"));
        assert_eq!(closest("node", keys), Some("nodes"));
        assert_eq!(closest("knid", keys), Some("kind"));
        assert_eq!(closest("kinds", keys), Some("kind"));
        assert_eq!(closest("nodez", keys), Some("nodes"));
        assert_eq!(closest("durations", keys), None);
        assert_eq!(closest("zzz", keys), None);
        assert_eq!(
            closest("kind", keys),
            None,
            "the key itself is not a suggestion"
        );
    }
}
