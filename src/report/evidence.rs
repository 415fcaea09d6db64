//! How much N seeds say. A check that held on every one of N seeds is not "guaranteed":
//! all a sweep shows is that its violation rate per seed is probably small. The report
//! states the exact one-sided 95% upper bound on that rate (Clopper–Pearson with zero
//! failures, `1 − 0.05^(1/N)`; the "rule of three", 3/N, approximates it).

/// The one-sided 95% upper confidence bound on the per-seed violation rate after `n`
/// seeds without a violation (1 for `n = 0`: no evidence at all).
pub(crate) fn upper_bound_95(n: u64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    1.0 - 0.05f64.powf(1.0 / n as f64)
}

/// A rate as a percentage with two significant digits: `1.5%`, `0.15%`, `14%`.
pub(crate) fn percent(rate: f64) -> String {
    let p = rate * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else if p >= 1.0 {
        format!("{p:.1}%")
    } else if p >= 0.1 {
        format!("{p:.2}%")
    } else {
        format!("{p:.3}%")
    }
}

/// `≤ 1.5%`: the bound after `n` clean seeds, as a cell shows it.
pub(crate) fn bound_text(n: u64) -> String {
    format!("≤ {}", percent(upper_bound_95(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_match_the_exact_binomial() {
        // (1 - p)^n = 0.05 at the bound.
        for n in [1u64, 20, 200, 5000] {
            let p = upper_bound_95(n);
            assert!(((1.0 - p).powf(n as f64) - 0.05).abs() < 1e-9, "{n}");
            // The rule of three is within a few percent for large n.
            if n >= 200 {
                assert!((p * n as f64 - 3.0).abs() < 0.05, "{n}: {p}");
            }
        }
        assert_eq!(bound_text(200), "≤ 1.5%");
        assert_eq!(bound_text(20), "≤ 14%");
        assert_eq!(bound_text(2000), "≤ 0.15%");
        assert_eq!(upper_bound_95(0), 1.0);
    }
}
