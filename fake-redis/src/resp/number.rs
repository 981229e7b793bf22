//! The number rules Redis reads and writes numbers by, shared by the codec, the commands and the
//! embedded Lua: `string2ll`'s integers ([`parse_i64`]), C's `%.17g` ([`format_g17`]) and Lua
//! 5.1's `tonumber` on a string ([`lua_tonumber`]).
//!
//! They are the fake's own: the lock's crate keeps identical copies for its scripts' native twins,
//! and the fake depends on no lock crate. Their behaviour is Redis's, fixed by the tests below and
//! by the conformance suites; neither copy may change alone.

/// Parses an integer as Redis's `string2ll` does: an optional `-`, digits, no leading zeros, no
/// `+`, no spaces, no `-0`, within `i64`. Redis reads command arguments, stored counters and the
/// protocol's lengths by this one rule, so the fake's commands, codec and
/// keyspace share this parser.
#[inline]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    match digits {
        [b'0'] if !negative => return Some(0),
        // Redis refuses 21 bytes or more (`LONG_STR_SIZE`), so a `-` and 19 digits at most; 20
        // digits would not fit anyway.
        [b'1'..=b'9', ..] if digits.len() <= 19 => {}
        _ => return None,
    }
    // 19 digits stay below `u64::MAX`: no overflow check until the sign is applied.
    let mut magnitude: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude * 10 + u64::from(b - b'0');
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// C's `%.17g`, which Redis 7.0's Lua bridge and its double replies both use.
pub fn format_g17(n: f64) -> String {
    format_g(n, 17)
}

/// C's `%.<digits>g`.
fn format_g(n: f64, digits: i32) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.to_owned();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    if n == 0.0 {
        return if n.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let sci = format!("{n:.prec$e}", prec = (digits - 1) as usize);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if !(-4..digits).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mantissa), exp.abs());
    }
    let decimals = (digits - 1 - exp).max(0) as usize;
    trim(&format!("{n:.decimals$}"))
}

/// Lua 5.1's `tonumber` on a string as far as Redis's replies need it: a decimal or `0x` hex
/// integer, or a decimal float, with surrounding whitespace allowed; anything else is `nil`.
pub fn lua_tonumber(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if t.is_empty() {
        return None;
    }
    let (neg, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        let v = u64::from_str_radix(hex, 16).ok()? as f64;
        return Some(if neg { -v } else { v });
    }
    if !body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    t.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_parse_as_redis_does() {
        assert_eq!(parse_i64(b"30000"), Some(30000));
        assert_eq!(parse_i64(b"-5"), Some(-5));
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"00",
            b"01",
            b" 1",
            b"1a",
            b"1.0",
            b"-0",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"99999999999999999999",
            b"x",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        // 21 bytes is too long even when the value would fit.
        assert_eq!(parse_i64(b"-00000000000000000001"), None);
    }

    #[test]
    fn numbers_print_as_redis_prints_them() {
        assert_eq!(format_g17(1_700_000_015_000.0), "1700000015000");
        assert_eq!(format_g17(-5000.0), "-5000");
        assert_eq!(format_g17(0.1), "0.10000000000000001");
        assert_eq!(format_g17(1e20), "1e+20");
        assert_eq!(format_g17(-1e20), "-1e+20");
        assert_eq!(format_g17(1.5), "1.5");
        assert_eq!(format_g17(f64::NAN), "nan");
        assert_eq!(format_g17(f64::NEG_INFINITY), "-inf");
        assert_eq!(format_g17(-0.0), "-0");
    }

    #[test]
    fn tonumber_follows_lua() {
        assert_eq!(lua_tonumber(b"1"), Some(1.0));
        assert_eq!(lua_tonumber(b" 7 "), Some(7.0));
        assert_eq!(lua_tonumber(b"2.5"), Some(2.5));
        assert_eq!(lua_tonumber(b"0x10"), Some(16.0));
        assert_eq!(lua_tonumber(b"-0x10"), Some(-16.0));
        assert_eq!(lua_tonumber(b"1e3"), Some(1000.0));
        assert_eq!(lua_tonumber(b"x"), None);
        assert_eq!(lua_tonumber(b""), None);
        assert_eq!(lua_tonumber(b"inf"), None);
    }
}
