//! A blocking command's timeout argument (`BLPOP key 0.5`), read as Redis 7.0's
//! `getTimeoutFromObjectOrReply` reads seconds: the text is a C `long double` (`strtold`:
//! decimal or hexadecimal, `inf`; no leading space, nothing after the number, no NaN, at
//! most 5119 bytes), the time is `ceil(seconds * 1000)` ms, and `0` means no timeout.
//!
//! The model computes in `f64`, not the x87's 80-bit `long double`: a result can differ
//! by a millisecond for a timeout written with more than 15 significant digits. Numbers
//! beyond `f64`'s range are placed by their decimal exponent instead, as `long double`
//! places them: too large for a millisecond count (an error, as Redis's conversion gives
//! a negative count), too small to be zero (1 ms when positive), or beyond `long double`
//! too (`not a float`).

use crate::locks::redis::resp::Value;

const ERR_NOT_FLOAT: &str = "ERR timeout is not a float or out of range";
const ERR_NEGATIVE: &str = "ERR timeout is negative";

/// Redis's `MAX_LONG_DOUBLE_CHARS`: a longer argument is not a number.
const MAX_CHARS: usize = 5 * 1024;

/// The decimal exponents past which a `long double` overflows or underflows to zero
/// (`strtold` then sets `ERANGE`, which Redis refuses).
const LONG_DOUBLE_MAX_EXP10: i64 = 4932;
const LONG_DOUBLE_MIN_EXP10: i64 = -4951;

/// The timeout in ms (`0`: wait forever), or Redis's error reply.
pub(crate) fn timeout_ms(arg: &[u8]) -> Result<i64, Value> {
    let seconds = long_double(arg).ok_or_else(|| Value::err(ERR_NOT_FLOAT))?;
    let ms = match seconds {
        Seconds::Value(s) => (s * 1000.0).ceil(),
        Seconds::Tiny { negative } => {
            if negative {
                0.0
            } else {
                1.0
            }
        }
        Seconds::Huge => f64::INFINITY,
    };
    // C's conversion of a value outside `long long` gives LLONG_MIN on x86-64: negative.
    if !(0.0..2f64.powi(63)).contains(&ms) {
        return Err(Value::err(ERR_NEGATIVE));
    }
    Ok(ms as i64)
}

/// A number as `strtold` reads it, where `f64` cannot hold it.
#[derive(Debug, PartialEq)]
enum Seconds {
    Value(f64),
    /// Non-zero, but below `f64`'s smallest.
    Tiny {
        negative: bool,
    },
    /// Finite, but above `f64`'s largest.
    Huge,
}

/// Redis's `string2ld`: the whole argument as one number, or `None`.
fn long_double(arg: &[u8]) -> Option<Seconds> {
    if arg.is_empty() || arg.len() >= MAX_CHARS || arg[0].is_ascii_whitespace() || arg[0] == 0x0b {
        return None;
    }
    let text = std::str::from_utf8(arg).ok()?;
    let (negative, unsigned) = match text.as_bytes()[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    // Bytes, not a str slice: `0é` has no char boundary at 2.
    if unsigned.len() > 2 && unsigned.as_bytes()[..2].eq_ignore_ascii_case(b"0x") {
        return hexadecimal(&unsigned[2..], negative);
    }
    let v: f64 = text.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    let Some(exp10) = decimal_exponent(unsigned) else {
        // `inf`, `infinity`, or zero.
        return Some(Seconds::Value(v));
    };
    if !(LONG_DOUBLE_MIN_EXP10..=LONG_DOUBLE_MAX_EXP10).contains(&exp10) {
        return None;
    }
    Some(if v.is_infinite() {
        Seconds::Huge
    } else if v == 0.0 {
        Seconds::Tiny { negative }
    } else {
        Seconds::Value(v)
    })
}

/// For a decimal number without sign (already known to parse), the power of ten of its
/// first significant digit; `None` for zero or a word (`inf`).
fn decimal_exponent(unsigned: &str) -> Option<i64> {
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(i) => (&unsigned[..i], unsigned[i + 1..].parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    if !mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let point = mantissa.find('.').unwrap_or(mantissa.len());
    let first = mantissa.bytes().position(|b| (b'1'..=b'9').contains(&b))?;
    // Digits before the point count from 0 upwards, after it from -1 downwards.
    let place = if first < point {
        (point - first - 1) as i64
    } else {
        -((first - point) as i64)
    };
    Some(exponent.saturating_add(place))
}

/// The binary exponents past which a `long double` overflows or underflows to zero.
const LONG_DOUBLE_MAX_EXP2: f64 = 16384.0;
const LONG_DOUBLE_MIN_EXP2: f64 = -16445.0;

/// `strtold`'s hexadecimal form after `0x`: hex digits with an optional point (at least
/// one digit), then an optional binary exponent `p[+-]digits`.
fn hexadecimal(text: &str, negative: bool) -> Option<Seconds> {
    let (digits, exponent) = match text.find(['p', 'P']) {
        Some(i) => {
            let e = &text[i + 1..];
            let unsigned = e.strip_prefix(['+', '-']).unwrap_or(e);
            if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // A huge exponent saturates: the value is then 0 or infinite either way.
            let n = unsigned.parse::<i64>().unwrap_or(i64::MAX).min(100_000) as i32;
            (&text[..i], if e.starts_with('-') { -n } else { n })
        }
        None => (text, 0),
    };
    let mut value = 0.0f64;
    let mut scale = 0i32;
    let mut seen_point = false;
    let mut any = false;
    for b in digits.bytes() {
        match b {
            b'.' if !seen_point => seen_point = true,
            _ => {
                let d = (b as char).to_digit(16)?;
                value = value * 16.0 + f64::from(d);
                any = true;
                if seen_point {
                    scale -= 4;
                }
            }
        }
    }
    if !any {
        return None;
    }
    let exp2 = exponent.saturating_add(scale);
    let sign = if negative { -1.0 } else { 1.0 };
    if value == 0.0 {
        return Some(Seconds::Value(0.0));
    }
    let magnitude = f64::from(exp2) + value.log2();
    if !(LONG_DOUBLE_MIN_EXP2..LONG_DOUBLE_MAX_EXP2).contains(&magnitude) {
        return None;
    }
    let v = sign * value * 2f64.powi(exp2);
    Some(if v.is_infinite() {
        Seconds::Huge
    } else if v == 0.0 {
        Seconds::Tiny { negative }
    } else {
        Seconds::Value(v)
    })
}

#[cfg(test)]
mod tests {
    use super::timeout_ms;
    use crate::locks::redis::resp::Value;

    fn ms(s: &str) -> Result<i64, String> {
        timeout_ms(s.as_bytes()).map_err(|e| match e {
            Value::Error(m) => m,
            other => format!("{other:?}"),
        })
    }

    #[test]
    fn seconds_become_milliseconds_rounded_up() {
        assert_eq!(ms("0"), Ok(0));
        assert_eq!(ms("0.1"), Ok(100));
        assert_eq!(ms("1.5"), Ok(1500));
        assert_eq!(ms(".05"), Ok(50));
        assert_eq!(ms("+0.05"), Ok(50));
        assert_eq!(ms("1."), Ok(1000));
        assert_eq!(ms("5e-4"), Ok(1));
        assert_eq!(ms("0.0001"), Ok(1));
        assert_eq!(ms("-0.0001"), Ok(0));
        assert_eq!(ms("-0"), Ok(0));
        assert_eq!(ms("1e-400"), Ok(1));
        assert_eq!(ms("0x10"), Ok(16_000));
        assert_eq!(ms("0x0.1p1"), Ok(125));
        assert_eq!(ms("0x1p-2000"), Ok(1));
    }

    #[test]
    fn redis_errors() {
        let not_float = Err("ERR timeout is not a float or out of range".to_string());
        let negative = Err("ERR timeout is negative".to_string());
        for bad in [
            "abc", "", " 1", "1 ", "nan", "0x", "0x1p", "1e", "1e5000", "1e-5000", "0é", "-0é",
        ] {
            assert_eq!(ms(bad), not_float, "{bad:?}");
        }
        for neg in [
            "-1",
            "-0.002",
            "inf",
            "-inf",
            "infinity",
            "1e400",
            "9223372036854775807",
        ] {
            assert_eq!(ms(neg), negative, "{neg:?}");
        }
        assert_eq!(ms(&"1".repeat(5120)), not_float);
    }
}
