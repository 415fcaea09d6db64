//! Counts in prose: "1 thread", "2 threads", "1 process", "3 processes".

/// `n` and the noun, plural unless `n` is 1 (nouns ending in `s` take `es`).
pub(crate) fn plural(n: u64, noun: &str) -> String {
    match (n, noun.ends_with('s')) {
        (1, _) => format!("1 {noun}"),
        (_, true) => format!("{n} {noun}es"),
        (_, false) => format!("{n} {noun}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::plural;

    #[test]
    fn one_is_singular() {
        assert_eq!(plural(1, "thread"), "1 thread");
        assert_eq!(plural(0, "fault"), "0 faults");
        assert_eq!(plural(2, "process"), "2 processes");
    }
}
