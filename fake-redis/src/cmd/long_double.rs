//! `INCRBYFLOAT` and `HINCRBYFLOAT` arithmetic as Redis does it: in C's `long double`, which on
//! the x86-64 servers Redis runs on is the 80-bit extended format (a 64-bit mantissa, a 15-bit
//! exponent), printed with `%.17Lf` and its trailing zeros trimmed.
//!
//! An `f64` keeps 11 fewer mantissa bits and a far smaller range, so it prints other digits
//! (`123456789.123456789` is `123456789.12345678899873747` in Redis), leaves a residue where
//! Redis cancels to `0`, moves `9223372036854775807` when adding `0`, and overflows at `1e309`.
//! So the value is kept here as an exact `mantissa × 2^exponent` with the extended format's
//! precision and range: the decimal text is read with correct rounding (as `strtold` reads it),
//! the sum is rounded once to nearest-even (as the FPU does), and the printing is exact (as glibc's
//! `printf` is). The few big-integer steps this needs are below; they run on a command's
//! argument, never on the lock's path.

/// Bits of the extended format's mantissa (its integer bit included).
const MANTISSA_BITS: u32 = 64;
/// The smallest exponent of a mantissa's unit: the extended format's smallest subnormal is
/// `2^-16445`.
const MIN_EXP: i64 = -16445;
/// Values at or above `2^16384` overflow the format.
const MAX_BINARY_MAGNITUDE: i64 = 16384;
/// Redis's `MAX_LONG_DOUBLE_CHARS`: longer float arguments are refused.
const MAX_CHARS: usize = 5 * 1024;

/// A finite extended-precision value: `(-1)^negative × mantissa × 2^exponent`, the mantissa at
/// most 64 bits. Zero is a zero mantissa (its sign kept, as `-0.0` keeps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LongDouble {
    negative: bool,
    mantissa: u64,
    exponent: i64,
}

/// Why a result is no finite value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotFinite {
    /// Too large for the format (`isinf` would say so).
    Infinite,
}

/// What `string2ld` reads: a finite value, or an infinity (`inf`, `-Infinity`), which is a valid
/// argument whose every sum is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A finite value.
    Finite(LongDouble),
    /// Plus or minus infinity.
    Infinite,
}

impl Parsed {
    /// `self + other`: [`NotFinite`] when either is infinite or the sum overflows.
    pub(crate) fn add(self, other: Parsed) -> Result<LongDouble, NotFinite> {
        match (self, other) {
            (Parsed::Finite(a), Parsed::Finite(b)) => a.add(b),
            _ => Err(NotFinite::Infinite),
        }
    }
}

impl LongDouble {
    /// The value 0, what a missing key or field counts as.
    pub(crate) const ZERO: Parsed = Parsed::Finite(LongDouble {
        negative: false,
        mantissa: 0,
        exponent: 0,
    });

    /// Redis's `string2ld`: the whole argument as `strtold` reads it, refusing a leading space,
    /// NaN, an overflow, an underflow to zero, and text of 5120 bytes or more.
    pub(crate) fn parse(arg: &[u8]) -> Option<Parsed> {
        if arg.is_empty()
            || arg.len() >= MAX_CHARS
            || arg[0].is_ascii_whitespace()
            || arg[0] == 0x0b
        {
            return None;
        }
        let (negative, rest) = match arg[0] {
            b'-' => (true, &arg[1..]),
            b'+' => (false, &arg[1..]),
            _ => (false, arg),
        };
        if rest.eq_ignore_ascii_case(b"inf") || rest.eq_ignore_ascii_case(b"infinity") {
            return Some(Parsed::Infinite);
        }
        let hex = rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x';
        let (digits, exp2, exp10) = if hex {
            hex_digits(&rest[2..])?
        } else {
            decimal_digits(rest)?
        };
        from_parts(negative, &digits, exp2, exp10).map(Parsed::Finite)
    }

    /// `(long long)ceill(value * 1000.0)` in C's `long double` on x86-64, as Redis turns a
    /// timeout in seconds into milliseconds: the product rounded once to the 64-bit mantissa
    /// (nearest-even), rounded up to an integer, and `i64::MIN` (the conversion's "integer
    /// indefinite") when that does not fit.
    pub(crate) fn thousandfold_ceiling(self) -> i64 {
        let mut m = u128::from(self.mantissa) * 1000;
        let mut e = self.exponent;
        let bits = 128 - i64::from(m.leading_zeros());
        if bits > i64::from(MANTISSA_BITS) {
            let shift = (bits - i64::from(MANTISSA_BITS)) as u32;
            let rest = m & ((1u128 << shift) - 1);
            let half = 1u128 << (shift - 1);
            m >>= shift;
            e += i64::from(shift);
            if rest > half || (rest == half && m & 1 == 1) {
                m += 1;
            }
        }
        let magnitude = if m == 0 {
            0
        } else if e >= 0 {
            if e >= 64 || m.leading_zeros() < e as u32 + 64 {
                return i64::MIN;
            }
            m << e
        } else if e <= -128 {
            // Below one: up to 1, or down to -0.
            u128::from(!self.negative)
        } else {
            let shift = (-e) as u32;
            let fraction = m & ((1u128 << shift) - 1) != 0;
            (m >> shift) + u128::from(fraction && !self.negative)
        };
        match i64::try_from(magnitude) {
            Ok(v) if self.negative => -v,
            Ok(v) => v,
            // Out of range either way (and -2^63 is i64::MIN itself).
            Err(_) => i64::MIN,
        }
    }

    /// The value of an `i64` (exact: it fits the 64-bit mantissa).
    #[cfg(test)]
    pub(crate) fn from_i64(n: i64) -> LongDouble {
        LongDouble {
            negative: n < 0,
            mantissa: n.unsigned_abs(),
            exponent: 0,
        }
    }

    /// `self + other`, rounded to nearest-even as the FPU rounds it.
    pub(crate) fn add(self, other: LongDouble) -> Result<LongDouble, NotFinite> {
        if self.mantissa == 0 && other.mantissa == 0 {
            // -0 + -0 is -0; any other sum of zeros is +0.
            return Ok(LongDouble {
                negative: self.negative && other.negative,
                ..self
            });
        }
        if other.mantissa == 0 {
            return Ok(self);
        }
        if self.mantissa == 0 {
            return Ok(other);
        }
        let (big, small) = if self.exponent >= other.exponent {
            (self, other)
        } else {
            (other, self)
        };
        // Align on the smaller exponent, at most 62 bits up: past that the smaller operand is
        // far below the rounding point and only its presence (a sticky bit) matters.
        let gap = big.exponent - small.exponent;
        let (a, b, exponent) = if gap <= 62 {
            (
                u128::from(big.mantissa) << gap,
                u128::from(small.mantissa),
                small.exponent,
            )
        } else {
            let drop = gap - 62;
            let kept = if drop >= 128 {
                0
            } else {
                u128::from(small.mantissa) >> drop
            };
            let lost = drop >= 64 || (small.mantissa & ((1u64 << drop) - 1)) != 0;
            (
                u128::from(big.mantissa) << 62,
                kept | u128::from(lost),
                big.exponent - 62,
            )
        };
        let (negative, magnitude) = if big.negative == small.negative {
            (big.negative, a + b)
        } else if a >= b {
            (big.negative, a - b)
        } else {
            (small.negative, b - a)
        };
        if magnitude == 0 {
            return Ok(LongDouble {
                negative: false,
                mantissa: 0,
                exponent: 0,
            });
        }
        round(negative, &Big::from_u128(magnitude), exponent, false)
    }

    /// Redis's `ld2string(…, LD_STR_HUMAN)`: `%.17Lf`, then trailing zeros (and a trailing
    /// point) trimmed, and `-0` written `0`.
    pub(crate) fn to_human(self) -> String {
        // round(|value| × 10^17), ties to even, as glibc's printf rounds.
        let mut scaled = Big::from_u128(u128::from(self.mantissa));
        scaled.mul_pow10(17);
        let fixed = if self.exponent >= 0 {
            scaled.shl(self.exponent as u64);
            scaled
        } else {
            let shift = self.exponent.unsigned_abs();
            let half = scaled.bit(shift - 1);
            let below = scaled.any_below(shift - 1);
            scaled.shr(shift);
            if half && (below || scaled.bit(0)) {
                scaled.add_small(1);
            }
            scaled
        };
        let digits = fixed.to_decimal();
        let mut text = String::with_capacity(digits.len() + 20);
        if self.negative {
            text.push('-');
        }
        if digits.len() <= 17 {
            text.push('0');
            text.push('.');
            text.extend(std::iter::repeat_n('0', 17 - digits.len()));
            text.push_str(&digits);
        } else {
            let (whole, fraction) = digits.split_at(digits.len() - 17);
            text.push_str(whole);
            text.push('.');
            text.push_str(fraction);
        }
        let trimmed = text.trim_end_matches('0').trim_end_matches('.');
        if trimmed == "-0" {
            "0".to_owned()
        } else {
            trimmed.to_owned()
        }
    }
}

/// Decimal text `digits[.digits][e[sign]digits]`: its digits and power of ten.
fn decimal_digits(text: &[u8]) -> Option<(Big, i64, i64)> {
    let (digits, exp10) = positional(text, 10, b'e', 1)?;
    Some((digits, 0, exp10))
}

/// Hexadecimal text after `0x`: `hex[.hex][p[sign]digits]`, its digits and power of two.
fn hex_digits(text: &[u8]) -> Option<(Big, i64, i64)> {
    let (digits, exp2) = positional(text, 16, b'p', 4)?;
    Some((digits, exp2, 0))
}

/// Digits in `radix` with an optional point and an optional exponent after `marker` (either
/// case): the digits as an integer and the exponent, less `scale` per fraction digit.
fn positional(text: &[u8], radix: u32, marker: u8, scale: i64) -> Option<(Big, i64)> {
    let (mantissa, exponent) = match text.iter().position(|&c| c | 0x20 == marker) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let (whole, fraction) = split_point(mantissa)?;
    let mut digits = Big::zero();
    for &c in whole.iter().chain(fraction) {
        digits.mul_small(radix);
        digits.add_small((c as char).to_digit(radix)?);
    }
    let exp = exponent.map_or(Some(0), signed_exponent)? - scale * fraction.len() as i64;
    Some((digits, exp))
}

/// Splits digits at an optional point; at least one digit is required.
fn split_point(mantissa: &[u8]) -> Option<(&[u8], &[u8])> {
    let (whole, fraction) = match mantissa.iter().position(|&c| c == b'.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, &[][..]),
    };
    (!whole.is_empty() || !fraction.is_empty()).then_some((whole, fraction))
}

/// An exponent `[sign]digits`, saturated far beyond any value the format holds.
fn signed_exponent(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut n: i64 = 0;
    for &c in digits {
        n = (n * 10 + i64::from(c - b'0')).min(1 << 40);
    }
    Some(if negative { -n } else { n })
}

/// `digits × 2^exp2 × 10^exp10`, correctly rounded; None on overflow, or on a nonzero value that
/// rounds to zero (`strtold`'s ERANGE cases that `string2ld` refuses).
fn from_parts(negative: bool, digits: &Big, exp2: i64, exp10: i64) -> Option<LongDouble> {
    if digits.is_zero() {
        return Some(LongDouble {
            negative,
            mantissa: 0,
            exponent: 0,
        });
    }
    // A cheap estimate first, so no huge power of ten is ever built: log2(10) < 3.33.
    let magnitude =
        digits.bit_len() as i64 + exp2 + (exp10 as f64 * std::f64::consts::LOG2_10) as i64;
    if magnitude > MAX_BINARY_MAGNITUDE + 8 {
        return None;
    }
    if magnitude < MIN_EXP - 8 {
        return None;
    }
    let value = if exp10 >= 0 {
        let mut n = digits.clone();
        n.mul_pow10(exp10 as u64);
        round(negative, &n, exp2, false)
    } else {
        // digits / 10^-exp10: a quotient of at least 66 bits, and whether anything remained.
        let mut divisor = Big::from_u128(1);
        divisor.mul_pow10(exp10.unsigned_abs());
        let shift = 66 + divisor.bit_len() as i64 - digits.bit_len() as i64;
        let mut numerator = digits.clone();
        if shift >= 0 {
            numerator.shl(shift as u64);
        } else {
            divisor.shl(shift.unsigned_abs());
        }
        let (quotient, inexact) = numerator.div_small_quotient(&divisor);
        round(negative, &Big::from_u128(quotient), exp2 - shift, inexact)
    };
    match value {
        Ok(v) if v.mantissa == 0 => None,
        Ok(v) => Some(v),
        Err(NotFinite::Infinite) => None,
    }
}

/// Rounds `magnitude × 2^exponent` (plus a little more when `sticky`) to the format, nearest-even,
/// with gradual underflow.
fn round(
    negative: bool,
    magnitude: &Big,
    exponent: i64,
    sticky: bool,
) -> Result<LongDouble, NotFinite> {
    let len = magnitude.bit_len() as i64;
    let mut drop = (len - i64::from(MANTISSA_BITS)).max(0);
    if exponent + drop < MIN_EXP {
        drop = MIN_EXP - exponent;
    }
    let (mantissa, mut exponent) = if drop == 0 {
        (magnitude.low_u64(), exponent)
    } else {
        let d = drop as u64;
        let half = magnitude.bit(d - 1);
        let below = sticky || magnitude.any_below(d - 1);
        let mut kept = magnitude.clone();
        kept.shr(d);
        let mut m = u128::from(kept.low_u64());
        if half && (below || m & 1 == 1) {
            m += 1;
        }
        let mut e = exponent + drop;
        if m >> MANTISSA_BITS != 0 {
            m >>= 1;
            e += 1;
        }
        (m as u64, e)
    };
    if mantissa == 0 {
        exponent = 0;
    }
    if mantissa != 0 && exponent + i64::from(64 - mantissa.leading_zeros()) > MAX_BINARY_MAGNITUDE {
        return Err(NotFinite::Infinite);
    }
    Ok(LongDouble {
        negative,
        mantissa,
        exponent,
    })
}

/// A non-negative big integer, little-endian 32-bit limbs, no trailing zero limbs.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    fn zero() -> Big {
        Big(Vec::new())
    }

    fn from_u128(mut n: u128) -> Big {
        let mut limbs = Vec::new();
        while n != 0 {
            limbs.push(n as u32);
            n >>= 32;
        }
        Big(limbs)
    }

    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    fn bit_len(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => 32 * (self.0.len() as u64 - 1) + u64::from(32 - top.leading_zeros()),
        }
    }

    fn bit(&self, i: u64) -> bool {
        self.0
            .get((i / 32) as usize)
            .is_some_and(|limb| limb >> (i % 32) & 1 == 1)
    }

    /// Whether any bit below bit `i` is set.
    fn any_below(&self, i: u64) -> bool {
        let whole = ((i / 32) as usize).min(self.0.len());
        if self.0[..whole].iter().any(|&l| l != 0) {
            return true;
        }
        let part = i % 32;
        part != 0
            && self
                .0
                .get(whole)
                .is_some_and(|l| l & ((1 << part) - 1) != 0)
    }

    fn low_u64(&self) -> u64 {
        let lo = u64::from(self.0.first().copied().unwrap_or(0));
        let hi = u64::from(self.0.get(1).copied().unwrap_or(0));
        lo | hi << 32
    }

    fn mul_small(&mut self, factor: u32) {
        let mut carry = 0u64;
        for limb in &mut self.0 {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
        self.trim();
    }

    fn add_small(&mut self, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.0 {
            if carry == 0 {
                return;
            }
            let sum = u64::from(*limb) + carry;
            *limb = sum as u32;
            carry = sum >> 32;
        }
        if carry != 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul_pow10(&mut self, mut power: u64) {
        while power >= 9 {
            self.mul_small(1_000_000_000);
            power -= 9;
        }
        self.mul_small(10u32.pow(power as u32));
    }

    fn shl(&mut self, bits: u64) {
        if self.is_zero() {
            return;
        }
        let (limbs, part) = ((bits / 32) as usize, (bits % 32) as u32);
        if part != 0 {
            let mut carry = 0u32;
            for limb in &mut self.0 {
                let next = *limb >> (32 - part);
                *limb = *limb << part | carry;
                carry = next;
            }
            if carry != 0 {
                self.0.push(carry);
            }
        }
        self.0.splice(0..0, std::iter::repeat_n(0, limbs));
    }

    fn shr(&mut self, bits: u64) {
        let limbs = ((bits / 32) as usize).min(self.0.len());
        self.0.drain(..limbs);
        let part = (bits % 32) as u32;
        if part != 0 {
            let mut carry = 0u32;
            for limb in self.0.iter_mut().rev() {
                let next = *limb << (32 - part);
                *limb = *limb >> part | carry;
                carry = next;
            }
        }
        self.trim();
    }

    fn cmp(&self, other: &Big) -> std::cmp::Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }

    /// `self -= other`, `other` being no larger.
    fn sub(&mut self, other: &Big) {
        let mut borrow = 0i64;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let sub = i64::from(other.0.get(i).copied().unwrap_or(0)) + borrow;
            let mut v = i64::from(*limb) - sub;
            borrow = 0;
            if v < 0 {
                v += 1 << 32;
                borrow = 1;
            }
            *limb = v as u32;
        }
        self.trim();
    }

    /// `self / divisor` for a quotient below 2^70, by shift and subtract, and whether a
    /// remainder was left.
    fn div_small_quotient(mut self, divisor: &Big) -> (u128, bool) {
        let mut quotient = 0u128;
        for bit in (0..70u64).rev() {
            let mut shifted = divisor.clone();
            shifted.shl(bit);
            if self.cmp(&shifted) != std::cmp::Ordering::Less {
                self.sub(&shifted);
                quotient |= 1 << bit;
            }
        }
        (quotient, !self.is_zero())
    }

    fn to_decimal(&self) -> String {
        let mut n = self.clone();
        let mut chunks = Vec::new();
        while !n.is_zero() {
            let mut rest = 0u64;
            for limb in n.0.iter_mut().rev() {
                let cur = rest << 32 | u64::from(*limb);
                *limb = (cur / 1_000_000_000) as u32;
                rest = cur % 1_000_000_000;
            }
            n.trim();
            chunks.push(rest as u32);
        }
        let Some((last, rest)) = chunks.split_last() else {
            return "0".to_owned();
        };
        let mut text = last.to_string();
        for chunk in rest.iter().rev() {
            text.push_str(&format!("{chunk:09}"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(start: &str, by: &str) -> Option<String> {
        let a = LongDouble::parse(start.as_bytes())?;
        let b = LongDouble::parse(by.as_bytes())?;
        a.add(b).ok().map(LongDouble::to_human)
    }

    fn finite(text: &[u8]) -> Option<LongDouble> {
        match LongDouble::parse(text)? {
            Parsed::Finite(v) => Some(v),
            Parsed::Infinite => None,
        }
    }

    #[test]
    fn sums_print_as_redis_s_long_double_does() {
        assert_eq!(
            incr("0.024390243902439025", "-0.024390243902439025").as_deref(),
            Some("0")
        );
        assert_eq!(
            incr("0", "123456789.123456789").as_deref(),
            Some("123456789.12345678899873747")
        );
        assert_eq!(
            incr("9223372036854775807", "0").as_deref(),
            Some("9223372036854775807")
        );
        assert_eq!(incr("0.1", "0.2").as_deref(), Some("0.3"));
        assert_eq!(incr("10.5", "0").as_deref(), Some("10.5"));
        assert_eq!(incr("3", "0").as_deref(), Some("3"));
        assert_eq!(incr("1", "inf"), None);
        assert_eq!(LongDouble::parse(b"-Infinity"), Some(Parsed::Infinite));
        assert_eq!(incr("5.0e3", "0").as_deref(), Some("5000"));
        assert_eq!(incr("-1e-18", "0").as_deref(), Some("0"));
        // Past f64's range; Redis prints the nearest extended value's 309 digits.
        let big = incr("1e309", "0").unwrap_or_default();
        assert!(
            big.starts_with("9999999999999999999863494245812564547663"),
            "{big}"
        );
        assert_eq!(big.len(), 309);
        assert_eq!(incr("0x10", "0x1p-1").as_deref(), Some("16.5"));
        assert_eq!(
            LongDouble::from_i64(i64::MIN).to_human(),
            "-9223372036854775808"
        );
    }

    #[test]
    fn string2ld_refuses_what_redis_refuses() {
        for bad in [
            "", " 1", "1 ", "abc", "nan", "-nan", "1e", "0x", "1e99999", "1e-99999", ".", "--1",
            "1..2",
        ] {
            assert_eq!(LongDouble::parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert!(finite(b"0e-99999").is_some());
        assert!(finite(b".5").is_some());
        assert!(finite(b"5.").is_some());
        assert!(finite(&vec![b'1'; 5119]).is_none(), "overflows");
        assert!(finite(&[b"0.".as_slice(), &vec![b'1'; 5117]].concat()).is_some());
        assert!(LongDouble::parse(&[b"0.".as_slice(), &vec![b'1'; 5118]].concat()).is_none());
    }

    #[test]
    fn overflow_is_refused_and_the_largest_value_prints_whole() {
        let max = LongDouble {
            negative: false,
            mantissa: u64::MAX,
            exponent: MAX_BINARY_MAGNITUDE - 64,
        };
        assert_eq!(max.add(max), Err(NotFinite::Infinite));
        assert!(max.to_human().starts_with("11897314953572317650"));
        assert_eq!(max.to_human().len(), 4933);
    }
}
