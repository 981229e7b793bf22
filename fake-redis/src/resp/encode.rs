//! Replies as Redis 7.0 writes them, for a RESP2 or a RESP3 client.
//!
//! The engine builds every reply as a [`Frame`] in RESP3's vocabulary, and
//! [`encode`] writes it straight into a connection's output buffer: for a
//! RESP2 client it downgrades on the way (a map as a flat array, a double as a
//! bulk string, ...) without building a second tree, so a reply costs no
//! allocation beyond the buffer's growth (and a double's text). The bytes are
//! those of Redis's `addReply*` functions; [`format_double`] is the one place
//! a double becomes text, on the wire and off it.

use crate::resp::Frame;
use bytes::{BufMut, BytesMut};
use std::fmt::Write as _;

/// Appends `frame` to `out` as Redis 7.0 writes it to a client speaking
/// `protocol_version`: 3 (or more) for RESP3, anything else for RESP2.
///
/// RESP2 has no nulls, maps, sets, doubles, booleans, pushes, big numbers,
/// verbatim strings or attributes, so they are written the way Redis's `addReply*`
/// functions write them for RESP2 clients: `$-1`/`*-1`, flat arrays, bulk
/// strings and integers (see [`Frame`]'s variants).
pub fn encode(frame: &Frame, protocol_version: u8, out: &mut BytesMut) {
    let resp3 = protocol_version >= 3;
    // RESP2 sends sets and pushes as plain arrays.
    let resp3_or_array = |prefix: u8| if resp3 { prefix } else { b'*' };
    match frame {
        Frame::Simple(text) => put_line(out, b'+', text.as_bytes()),
        Frame::Error(text) => put_line(out, b'-', text.as_bytes()),
        Frame::ErrorBytes(text) => put_line(out, b'-', text),
        Frame::Integer(n) => put_header(out, b':', *n),
        Frame::Bulk(data) => put_bulk(out, data),
        Frame::Null => {
            out.put_slice(if resp3 { b"_\r\n" } else { b"$-1\r\n" });
        }
        Frame::NullArray => {
            out.put_slice(if resp3 { b"_\r\n" } else { b"*-1\r\n" });
        }
        Frame::Array(items) => put_aggregate(out, b'*', items, protocol_version),
        Frame::Set(items) => put_aggregate(out, resp3_or_array(b'~'), items, protocol_version),
        Frame::Push(items) => put_aggregate(out, resp3_or_array(b'>'), items, protocol_version),
        Frame::Map(pairs) => {
            if resp3 {
                put_header(out, b'%', len_i64(pairs.len()));
            } else {
                put_header(out, b'*', len_i64(pairs.len()).saturating_mul(2));
            }
            for (key, value) in pairs {
                encode(key, protocol_version, out);
                encode(value, protocol_version, out);
            }
        }
        Frame::Double(d) => {
            let text = format_double(*d);
            if resp3 {
                out.put_u8(b',');
                out.put_slice(text.as_bytes());
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, text.as_bytes());
            }
        }
        Frame::DoubleText(text) => {
            if resp3 {
                put_line(out, b',', text.as_bytes());
            } else {
                put_bulk(out, text.as_bytes());
            }
        }
        Frame::Boolean(b) => {
            if resp3 {
                out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" });
            } else {
                out.put_slice(if *b { b":1\r\n" } else { b":0\r\n" });
            }
        }
        Frame::BigNumber(digits) => {
            if resp3 {
                put_line(out, b'(', digits.as_bytes());
            } else {
                put_bulk(out, digits.as_bytes());
            }
        }
        Frame::Verbatim { format, text } => {
            if resp3 {
                put_header(out, b'=', len_i64(text.len()).saturating_add(4));
                out.put_slice(format);
                out.put_u8(b':');
                out.put_slice(text);
                out.put_slice(b"\r\n");
            } else {
                put_bulk(out, text);
            }
        }
        Frame::Attribute { attributes, value } => {
            if resp3 {
                put_header(out, b'|', len_i64(attributes.len()));
                for (key, attribute) in attributes {
                    encode(key, protocol_version, out);
                    encode(attribute, protocol_version, out);
                }
            }
            encode(value, protocol_version, out);
        }
    }
}

fn len_i64(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

/// `<prefix><n>\r\n`. Every bulk string, aggregate and integer reply starts with one, so the
/// digits are made here rather than through `fmt`.
fn put_header(out: &mut BytesMut, prefix: u8, n: i64) {
    // The prefix, a sign, 19 digits and the line end.
    let mut line = [0u8; 23];
    let mut start = line.len() - 2;
    line[start..].copy_from_slice(b"\r\n");
    let mut rest = n.unsigned_abs();
    loop {
        start -= 1;
        line[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        start -= 1;
        line[start] = b'-';
    }
    start -= 1;
    line[start] = prefix;
    out.put_slice(&line[start..]);
}

/// `<prefix><text>\r\n`, with `\r` and `\n` in `text` written as spaces so
/// that the reply stays one line.
pub(crate) fn put_line(out: &mut BytesMut, prefix: u8, text: &[u8]) {
    out.reserve(text.len() + 3);
    out.put_u8(prefix);
    for &b in text {
        out.put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
    }
    out.put_slice(b"\r\n");
}

/// `$<len>\r\n<data>\r\n`.
fn put_bulk(out: &mut BytesMut, data: &[u8]) {
    put_header(out, b'$', len_i64(data.len()));
    out.put_slice(data);
    out.put_slice(b"\r\n");
}

fn put_aggregate(out: &mut BytesMut, prefix: u8, items: &[Frame], protocol_version: u8) {
    put_header(out, prefix, len_i64(items.len()));
    for item in items {
        encode(item, protocol_version, out);
    }
}

/// Formats a double as Redis 7.0's `addReplyDouble` does: `inf` and `-inf`
/// for infinities, otherwise C's `%.17g` (so `nan`/`-nan`, `-0`,
/// `0.10000000000000001`, `1e+20`, `1.4999999999999999e-07`). The one
/// formatter: the engine's RESP2 downgrades and its front doors print doubles
/// with it too.
#[must_use]
pub fn format_double(d: f64) -> String {
    if d.is_nan() {
        return if d.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    let mut out = String::new();
    if d.is_sign_negative() {
        out.push('-');
    }
    if d == 0.0 {
        out.push('0');
        return out;
    }
    // 17 significant digits, correctly rounded: "d.dddddddddddddddde<exp>".
    let sci = format!("{:.16e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..17).contains(&exp) {
        // %f style with 16 - exp decimals, trailing zeros removed.
        if exp >= 0 {
            let (int_part, frac) = digits.split_at(exp as usize + 1);
            out.push_str(int_part);
            let frac = frac.trim_end_matches('0');
            if !frac.is_empty() {
                out.push('.');
                out.push_str(frac);
            }
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.push_str(digits.trim_end_matches('0'));
        }
    } else {
        // %e style with 16 decimals, trailing zeros removed.
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        let rest = rest.trim_end_matches('0');
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
    }
    out
}

/// Formats a double as Redis 7.2 and later (and Valkey) reply with it, their `d2string`: `nan`,
/// `inf`, `-inf`, `0` and `-0` as words; an integral value within half of `i64`'s range as an
/// integer (`100000000000000000`); any other as the shortest digits that read back to it, laid
/// out as those releases' `fpconv_dtoa` lays them out: plainly while the zeros it would add stay
/// few (`1.1`, `0.00001`, `12345678901234568000000`), otherwise with an exponent of no padding
/// (`1.5e-7`, `1e+20`, `1.7976931348623157e+308`).
#[must_use]
pub fn format_double_shortest(d: f64) -> String {
    if d.is_nan() {
        return "nan".to_string();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if d == 0.0 {
        return if d.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let half = (i64::MAX / 2) as f64;
    if (-half..=half).contains(&d) && d.fract() == 0.0 {
        return (d as i64).to_string();
    }
    let mut out = String::new();
    if d.is_sign_negative() {
        out.push('-');
    }
    // Rust's `{:e}` gives the shortest digits that read back to `d`: "d.ddde<exp>".
    let sci = format!("{:e}", d.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let point: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let n = digits.len() as i32;
    // d = digits * 10^k, and `point` is the exponent of its first digit.
    let k = point - (n - 1);
    let e = point.unsigned_abs();
    if k >= 0 && (e as i32) < n + 7 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', k as usize));
    } else if k < 0 && (k > -7 || e < 4) {
        let whole = n + k;
        if whole <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-whole) as usize));
            out.push_str(&digits);
        } else {
            let (int_part, frac) = digits.split_at(whole as usize);
            out.push_str(int_part);
            out.push('.');
            out.push_str(frac);
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let sign = if point < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{e}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use proptest::prelude::*;

    fn encoded(frame: &Frame, version: u8) -> Vec<u8> {
        let mut out = BytesMut::new();
        encode(frame, version, &mut out);
        out.to_vec()
    }

    // 3.141 is the double DEBUG PROTOCOL sends, not an approximation of pi.
    #[allow(clippy::approx_constant)]
    #[test]
    fn encode_every_frame_in_both_versions() {
        let nested = Frame::Array(vec![
            Frame::Integer(0),
            Frame::Integer(1),
            Frame::Integer(2),
        ]);
        let map = Frame::Map(vec![
            (Frame::Integer(0), Frame::Boolean(false)),
            (Frame::Integer(1), Frame::Boolean(true)),
        ]);
        let cases: Vec<(Frame, &[u8], &[u8])> = vec![
            (Frame::OK, b"+OK\r\n", b"+OK\r\n"),
            (Frame::simple("a\r\nb"), b"+a  b\r\n", b"+a  b\r\n"),
            (Frame::error("ERR x"), b"-ERR x\r\n", b"-ERR x\r\n"),
            (Frame::Integer(-12345), b":-12345\r\n", b":-12345\r\n"),
            (Frame::Integer(0), b":0\r\n", b":0\r\n"),
            (
                Frame::Integer(i64::MIN),
                b":-9223372036854775808\r\n",
                b":-9223372036854775808\r\n",
            ),
            (
                Frame::Integer(i64::MAX),
                b":9223372036854775807\r\n",
                b":9223372036854775807\r\n",
            ),
            (
                Frame::bulk(&b"Hello World"[..]),
                b"$11\r\nHello World\r\n",
                b"$11\r\nHello World\r\n",
            ),
            (Frame::bulk(Bytes::new()), b"$0\r\n\r\n", b"$0\r\n\r\n"),
            (Frame::Null, b"$-1\r\n", b"_\r\n"),
            (Frame::NullArray, b"*-1\r\n", b"_\r\n"),
            (
                nested.clone(),
                b"*3\r\n:0\r\n:1\r\n:2\r\n",
                b"*3\r\n:0\r\n:1\r\n:2\r\n",
            ),
            (Frame::Array(vec![]), b"*0\r\n", b"*0\r\n"),
            (
                Frame::Set(vec![
                    Frame::Integer(0),
                    Frame::Integer(1),
                    Frame::Integer(2),
                ]),
                b"*3\r\n:0\r\n:1\r\n:2\r\n",
                b"~3\r\n:0\r\n:1\r\n:2\r\n",
            ),
            (
                map,
                b"*4\r\n:0\r\n:0\r\n:1\r\n:1\r\n",
                b"%2\r\n:0\r\n#f\r\n:1\r\n#t\r\n",
            ),
            (Frame::Double(3.141), b"$5\r\n3.141\r\n", b",3.141\r\n"),
            (Frame::Double(f64::INFINITY), b"$3\r\ninf\r\n", b",inf\r\n"),
            (
                Frame::Double(f64::NEG_INFINITY),
                b"$4\r\n-inf\r\n",
                b",-inf\r\n",
            ),
            (Frame::Double(f64::NAN), b"$3\r\nnan\r\n", b",nan\r\n"),
            (
                Frame::Double(0.1),
                b"$19\r\n0.10000000000000001\r\n",
                b",0.10000000000000001\r\n",
            ),
            (Frame::Boolean(true), b":1\r\n", b"#t\r\n"),
            (Frame::Boolean(false), b":0\r\n", b"#f\r\n"),
            (
                Frame::Push(vec![Frame::bulk(&b"message"[..]), Frame::Integer(42)]),
                b"*2\r\n$7\r\nmessage\r\n:42\r\n",
                b">2\r\n$7\r\nmessage\r\n:42\r\n",
            ),
            (
                Frame::BigNumber("1234567999999999999999999999999999999".into()),
                b"$37\r\n1234567999999999999999999999999999999\r\n",
                b"(1234567999999999999999999999999999999\r\n",
            ),
            (
                Frame::Verbatim {
                    format: *b"txt",
                    text: Bytes::from_static(b"This is a verbatim\nstring"),
                },
                b"$25\r\nThis is a verbatim\nstring\r\n",
                b"=29\r\ntxt:This is a verbatim\nstring\r\n",
            ),
            // Redis 7.4.1's DEBUG PROTOCOL attrib, to a RESP2 and a RESP3 client.
            (
                Frame::Attribute {
                    attributes: vec![(
                        Frame::bulk(&b"key-popularity"[..]),
                        Frame::Array(vec![Frame::bulk(&b"key:123"[..]), Frame::Integer(90)]),
                    )],
                    value: Box::new(Frame::bulk(&b"Some real reply following the attribute"[..])),
                },
                b"$39\r\nSome real reply following the attribute\r\n",
                b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n\
                  $39\r\nSome real reply following the attribute\r\n",
            ),
        ];
        for (frame, resp2, resp3) in &cases {
            assert_eq!(encoded(frame, 2), *resp2, "{frame:?} RESP2");
            assert_eq!(encoded(frame, 3), *resp3, "{frame:?} RESP3");
        }
        // Nesting keeps the version all the way down.
        let outer = Frame::Array(vec![Frame::Null, Frame::Set(vec![Frame::Boolean(true)])]);
        assert_eq!(encoded(&outer, 2), b"*2\r\n$-1\r\n*1\r\n:1\r\n");
        assert_eq!(encoded(&outer, 3), b"*2\r\n_\r\n~1\r\n#t\r\n");
    }

    // 3.141 is the double DEBUG PROTOCOL sends, not an approximation of pi.
    #[allow(clippy::approx_constant)]
    #[test]
    fn doubles_format_like_redis_7_0() {
        // Values as Redis 7.0.15 replied to ZSCORE.
        let cases: &[(f64, &str)] = &[
            (0.1, "0.10000000000000001"),
            (1e20, "1e+20"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1.5e-7, "1.4999999999999999e-07"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (3.0, "3"),
            (3.141, "3.141"),
            (0.0, "0"),
            (-0.0, "-0"),
            (-2.5, "-2.5"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (1e100, "1e+100"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "4.9406564584124654e-324"),
            (-f64::NAN, "-nan"),
        ];
        for (d, text) in cases {
            assert_eq!(format_double(*d), *text, "{d:e}");
        }
    }

    /// The engine once printed every NaN as `nan`; Redis 7.0.15 prints the sign glibc's `%.17g`
    /// gives it (`EVAL "return {double=0/0}" 0`, a negative NaN on x86, replies `$4 -nan` and
    /// `,-nan`), in both protocols.
    #[test]
    fn a_negative_nan_keeps_its_sign_in_both_versions() {
        let nan = Frame::Double(-f64::NAN);
        assert_eq!(encoded(&nan, 2), b"$4\r\n-nan\r\n");
        assert_eq!(encoded(&nan, 3), b",-nan\r\n");
        assert_eq!(encoded(&Frame::Double(f64::NAN), 2), b"$3\r\nnan\r\n");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn double_text_round_trips(d in any::<f64>()) {
            let text = format_double(d);
            let back: f64 = text.parse().unwrap();
            if d.is_nan() {
                prop_assert!(back.is_nan());
            } else {
                prop_assert_eq!(back.to_bits(), d.to_bits());
            }
        }
    }

    /// What redis-server 7.4.1 answered to `ZSCORE` after `ZADD` of each score.
    #[test]
    fn shortest_doubles_read_as_redis_7_4_prints_them() {
        let cases: &[(f64, &str)] = &[
            (1e20, "1e+20"),
            (1.5e-7, "1.5e-7"),
            (0.0001, "0.0001"),
            (0.00001, "0.00001"),
            (123456789012345678.0, "123456789012345680"),
            (1e21, "1e+21"),
            (12345678901234567890123.0, "12345678901234568000000"),
            (0.1, "0.1"),
            (1.1, "1.1"),
            (1e-300, "1e-300"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (100.0, "100"),
            (1e17, "100000000000000000"),
            (-2.5, "-2.5"),
            (0.0, "0"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (d, text) in cases {
            assert_eq!(format_double_shortest(*d), *text, "{d:e}");
        }
    }
}
