//! Bitmap commands: strings read and written as arrays of bits, most significant bit of each
//! byte first, as Redis addresses them (`SETBIT`, `GETBIT`, `BITCOUNT`, `BITPOS`, `BITOP`) and as
//! integers of 1 to 64 bits at any bit offset (`BITFIELD`, `BITFIELD_RO`).
//!
//! A write past the end grows the string with zero bytes (a missing key is an empty string), as
//! far as Redis's 512 MiB limit, and keeps the key's TTL; `WATCH` hears of it only when the
//! string grew or a bit changed for `SETBIT`, and on any `SET`/`INCRBY` of `BITFIELD`, as Redis
//! 7.0 signals them. Ranges of `BITCOUNT` and `BITPOS` count in bytes, or in bits with `BIT`,
//! negative from the end. The order in which each command checks its arguments and the key is
//! Redis's, since it decides which error a bad call sees.

use super::{Args, CmdResult, Cx, SYNTAX, Spec, WRITE, int, is};
use crate::engine::db::Value;
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static SETBIT: Spec = Spec::new("setbit", 4, WRITE, setbit_command);
pub(crate) static GETBIT: Spec = Spec::new("getbit", 3, 0, getbit_command);
pub(crate) static BITCOUNT: Spec = Spec::new("bitcount", -2, 0, bitcount_command);
pub(crate) static BITPOS: Spec = Spec::new("bitpos", -3, 0, bitpos_command);
pub(crate) static BITOP: Spec =
    Spec::new("bitop", -4, WRITE, bitop_command).with_reads(super::ReadRule::Except(2));
pub(crate) static BITFIELD: Spec = Spec::new("bitfield", -2, WRITE, bitfield_command)
    .with_reads(super::ReadRule::Decide(super::reads::bitfield_reads));
pub(crate) static BITFIELD_RO: Spec = Spec::new("bitfield_ro", -2, 0, bitfield_command);

const BAD_OFFSET: Frame = Frame::error("ERR bit offset is not an integer or out of range");
const BAD_TYPE: Frame = Frame::error(
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but \
     i64 is.",
);

/// Redis's `proto-max-bulk-len`: no bit may lie past 512 MiB.
const MAX_BYTES: u64 = 512 * 1024 * 1024;

/// A bit offset, Redis's `getBitOffsetFromArgument`: `#n` (when `width` is given) counts in
/// fields of that width.
fn bit_offset(arg: &[u8], width: Option<u32>) -> Result<u64, Frame> {
    let (text, scale) = match (arg.first(), width) {
        (Some(b'#'), Some(w)) => (&arg[1..], i64::from(w)),
        _ => (arg, 1),
    };
    let offset = crate::resp::number::parse_i64(text)
        .and_then(|n| n.checked_mul(scale))
        .ok_or(BAD_OFFSET)?;
    if offset < 0 || (offset as u64 >> 3) >= MAX_BYTES {
        return Err(BAD_OFFSET);
    }
    Ok(offset as u64)
}

/// The string at `key` for reading: None when missing, WRONGTYPE for another type.
fn read(cx: &mut Cx<'_>, key: &[u8]) -> Result<Option<Bytes>, Frame> {
    super::strings::get(cx, key)
}

/// The string at `key` as bytes to modify, grown with zeros to hold bit `max_bit`: them, and
/// whether the key was created or grew (Redis's `lookupStringForBitCommand`).
///
/// Redis unshares the string it finds (`dbUnshareStringValue`), so from then on it is `raw`
/// (`OBJECT ENCODING`), even when no bit changes; one it creates is `raw` too.
fn for_writing(cx: &mut Cx<'_>, key: &[u8], max_bit: u64) -> Result<(Vec<u8>, bool), Frame> {
    let old = read(cx, key)?;
    super::server::note_raw(cx, key);
    let need = (max_bit >> 3) as usize + 1;
    let mut bytes = old.as_deref().map(<[u8]>::to_vec).unwrap_or_default();
    let grown = old.is_none() || bytes.len() < need;
    if bytes.len() < need {
        bytes.resize(need, 0);
    }
    Ok((bytes, grown))
}

/// Writes `bytes` back at `key`, keeping its TTL (a missing key gets none); `WATCH` hears of it,
/// and a `setbit` keyspace event announces it, if it `changed` something.
fn store(cx: &mut Cx<'_>, key: &[u8], bytes: Vec<u8>, changed: bool) {
    let now = cx.now;
    let db = cx.keyspace();
    match db.write(key, now) {
        Some(entry) => entry.value = Value::Str(Bytes::from(bytes)),
        None => db.insert(key, Value::Str(Bytes::from(bytes)), None, now),
    }
    if changed {
        db.touch(key);
        cx.notify(super::class::STRING, "setbit", key);
    }
    super::server::note_raw(cx, key);
}

fn bit_at(bytes: &[u8], offset: u64) -> bool {
    let byte = (offset >> 3) as usize;
    bytes
        .get(byte)
        .is_some_and(|b| b & (0x80 >> (offset & 7)) != 0)
}

fn setbit_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let offset = bit_offset(args.next_bytes()?, None)?;
    let on = match int(args.next_bytes()?) {
        Ok(v @ (0 | 1)) => v == 1,
        _ => return Err(Frame::error("ERR bit is not an integer or out of range")),
    };
    let (mut bytes, grown) = for_writing(cx, key, offset)?;
    let was = bit_at(&bytes, offset);
    if grown || was != on {
        let mask = 0x80u8 >> (offset & 7);
        let byte = &mut bytes[(offset >> 3) as usize];
        *byte = if on { *byte | mask } else { *byte & !mask };
        store(cx, key, bytes, true);
    }
    Ok(Frame::Integer(i64::from(was)))
}

fn getbit_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let offset = bit_offset(args.next_bytes()?, None)?;
    let value = read(cx, key)?;
    Ok(Frame::Integer(i64::from(
        value.is_some_and(|v| bit_at(&v, offset)),
    )))
}

/// A `BYTE|BIT` unit word.
fn in_bits(arg: &[u8]) -> Result<bool, Frame> {
    super::keyword(arg, &[("bit", true), ("byte", false)])
}

/// A range of `BITCOUNT`/`BITPOS` resolved as Redis resolves it against `total` units: negative
/// indexes from the end, clamped; None when empty.
fn clamp(start: i64, end: i64, total: i64) -> Option<(i64, i64)> {
    let start = if start < 0 { total + start } else { start }.max(0);
    let end = if end < 0 { total + end } else { end }
        .max(0)
        .min(total - 1);
    (start <= end).then_some((start, end))
}

/// `BITCOUNT key [start end [BYTE|BIT]]`: the set bits in the range. The key is looked up
/// first: a missing key is 0 whatever the arguments.
fn bitcount_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let Some(value) = read(cx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let len = value.len() as i64;
    // The range in bits, both ends included.
    let (start, end) = match args.remaining() {
        0 if len == 0 => return Ok(Frame::Integer(0)),
        0 => (0, len * 8 - 1),
        2 | 3 => {
            let (start, end) = (args.next_int()?, args.next_int()?);
            let bits = match args.next() {
                Some(unit) => in_bits(unit)?,
                None => false,
            };
            if start < 0 && end < 0 && start > end {
                return Ok(Frame::Integer(0));
            }
            let total = if bits { len * 8 } else { len };
            match clamp(start, end, total) {
                None => return Ok(Frame::Integer(0)),
                Some((start, end)) if bits => (start, end),
                Some((start, end)) => (start * 8, end * 8 + 7),
            }
        }
        _ => return Err(SYNTAX),
    };
    Ok(Frame::Integer(count_bits(&value, start as u64, end as u64)))
}

/// The set bits of `bytes` from bit `start` to bit `end`, both included.
fn count_bits(bytes: &[u8], start: u64, end: u64) -> i64 {
    let (first, last) = ((start >> 3) as usize, (end >> 3) as usize);
    let mut count: u64 = bytes[first..=last]
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum();
    // Less the bits of the edge bytes outside the range.
    let head = bytes[first] & !(0xffu8 >> (start & 7));
    let tail = match end & 7 {
        7 => 0,
        e => bytes[last] & (0xffu8 >> (e + 1)),
    };
    count -= u64::from(head.count_ones()) + u64::from(tail.count_ones());
    count as i64
}

/// `BITPOS key bit [start [end [BYTE|BIT]]]`: the first bit equal to `bit` in the range, -1 if
/// none. A missing key is all zeros; without an explicit end, the zeros past the string count.
fn bitpos_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let bit = match args.next_int()? {
        b @ (0 | 1) => b == 1,
        _ => return Err(Frame::error("ERR The bit argument must be 1 or 0.")),
    };
    let Some(value) = read(cx, key)? else {
        return Ok(Frame::Integer(if bit { -1 } else { 0 }));
    };
    let len = value.len() as i64;
    let (range, end_given) = match args.remaining() {
        0 => (
            clamp(0, len - 1, len).map(|(s, e)| (s * 8, e * 8 + 7)),
            false,
        ),
        1..=3 => {
            let start = args.next_int()?;
            let bits = if args.remaining() == 2 {
                let end = args.next_bytes()?;
                let bits = in_bits(args.next_bytes()?)?;
                Some((int(end)?, bits))
            } else {
                None
            };
            let (end, bits, end_given) = match bits {
                Some((end, bits)) => (end, bits, true),
                None => match args.next() {
                    Some(end) => (int(end)?, false, true),
                    None => (len - 1, false, false),
                },
            };
            let total = if bits { len * 8 } else { len };
            let range = clamp(start, end, total)
                .map(|(s, e)| if bits { (s, e) } else { (s * 8, e * 8 + 7) });
            (range, end_given)
        }
        _ => return Err(SYNTAX),
    };
    let Some((start, end)) = range else {
        return Ok(Frame::Integer(-1));
    };
    let found = first_bit(&value, start as u64, end as u64, bit).map(|i| i as i64);
    Ok(Frame::Integer(match found {
        Some(i) => i,
        // Past the range: the zero padding to the end of its last byte, when no end was given.
        None if !bit && !end_given => (end / 8 + 1) * 8,
        None => -1,
    }))
}

/// The first bit equal to `bit` from bit `start` to bit `end` of `bytes`, a byte at a time
/// where a whole byte cannot hold it.
fn first_bit(bytes: &[u8], start: u64, end: u64, bit: bool) -> Option<u64> {
    let skip = if bit { 0x00 } else { 0xff };
    let mut i = start;
    while i <= end {
        if i & 7 == 0 && i + 7 <= end && bytes[(i >> 3) as usize] == skip {
            i += 8;
            continue;
        }
        if bit_at(bytes, i) == bit {
            return Some(i);
        }
        i += 1;
    }
    None
}

#[derive(Clone, Copy)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// `BITOP AND|OR|XOR|NOT destkey key…`: the result's length (that of the longest input, shorter
/// ones padded with zeros); an empty result deletes the destination.
fn bitop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.next_bytes()?;
    let op = super::keyword(
        name,
        &[
            ("and", BitOp::And),
            ("or", BitOp::Or),
            ("xor", BitOp::Xor),
            ("not", BitOp::Not),
        ],
    )?;
    let destination = args.next_bytes()?;
    if matches!(op, BitOp::Not) && args.remaining() != 1 {
        return Err(Frame::error(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let mut inputs = Vec::with_capacity(args.remaining());
    for key in args {
        inputs.push(read(cx, key)?.unwrap_or_default());
    }
    let longest = inputs.iter().map(Bytes::len).max().unwrap_or(0);
    let byte = |input: &Bytes, i: usize| input.get(i).copied().unwrap_or(0);
    let result: Vec<u8> = (0..longest)
        .map(|i| {
            let first = byte(&inputs[0], i);
            inputs[1..].iter().fold(
                if matches!(op, BitOp::Not) {
                    !first
                } else {
                    first
                },
                |acc, input| match op {
                    BitOp::And => acc & byte(input, i),
                    BitOp::Or => acc | byte(input, i),
                    BitOp::Xor => acc ^ byte(input, i),
                    BitOp::Not => acc,
                },
            )
        })
        .collect();
    let value = (!result.is_empty()).then(|| Value::Str(Bytes::from(result)));
    super::store_or_delete(cx, destination, value, (super::class::STRING, "set"));
    // Redis stores the result as it built it, a `raw` string.
    super::server::note_raw(cx, destination);
    Ok(Frame::Integer(longest as i64))
}

/// What `OVERFLOW` says to do when a `SET` or `INCRBY` does not fit its field.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// A field's type: signed or not, and its width.
#[derive(Clone, Copy)]
struct FieldType {
    signed: bool,
    bits: u32,
}

impl FieldType {
    /// `i1`…`i64` or `u1`…`u63`.
    fn parse(arg: &[u8]) -> Result<FieldType, Frame> {
        let signed = match arg.first() {
            Some(b'i') => true,
            Some(b'u') => false,
            _ => return Err(BAD_TYPE),
        };
        match crate::resp::number::parse_i64(&arg[1..]) {
            Some(bits) if bits >= 1 && bits <= if signed { 64 } else { 63 } => Ok(FieldType {
                signed,
                bits: bits as u32,
            }),
            _ => Err(BAD_TYPE),
        }
    }

    /// The field's value as stored in `raw` (its low `bits` bits), sign-extended if signed.
    fn value(self, raw: u64) -> i64 {
        if self.signed && self.bits < 64 && raw & (1 << (self.bits - 1)) != 0 {
            (raw | (u64::MAX << self.bits)) as i64
        } else {
            raw as i64
        }
    }

    /// `old + incr` (for `SET`, `old` is the new value and `incr` 0) under `overflow`: the value
    /// to store, or None when it fails. Redis's `check{Signed,Unsigned}BitfieldOverflow`.
    fn add(self, old: i64, incr: i64, overflow: Overflow) -> Option<i64> {
        let bits = self.bits;
        let wrap = |sum: u64| -> i64 {
            if self.signed {
                if bits == 64 {
                    sum as i64
                } else if sum & (1 << (bits - 1)) != 0 {
                    (sum | (u64::MAX << bits)) as i64
                } else {
                    (sum & !(u64::MAX << bits)) as i64
                }
            } else {
                (sum & !(u64::MAX << bits)) as i64
            }
        };
        let sum = (old as u64).wrapping_add(incr as u64);
        let (min, max) = if self.signed {
            let max = if bits == 64 {
                i64::MAX as i128
            } else {
                (1i128 << (bits - 1)) - 1
            };
            (-max - 1, max)
        } else {
            (0, (1i128 << bits) - 1)
        };
        let exact = if self.signed {
            i128::from(old) + i128::from(incr)
        } else {
            i128::from(old as u64) + i128::from(incr)
        };
        if (min..=max).contains(&exact) {
            return Some(exact as i64);
        }
        match overflow {
            Overflow::Wrap => Some(wrap(sum)),
            Overflow::Sat => Some(if exact > max { max as i64 } else { min as i64 }),
            Overflow::Fail => None,
        }
    }
}

/// One `GET`, `SET` or `INCRBY` of `BITFIELD`.
struct FieldOp {
    kind: FieldOpKind,
    ty: FieldType,
    offset: u64,
    overflow: Overflow,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldOpKind {
    Get,
    Set(i64),
    Incrby(i64),
}

/// The `bits` bits of `bytes` from bit `offset`, most significant first (zeros past the end).
fn read_field(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0u64, |acc, i| {
        (acc << 1) | u64::from(bit_at(bytes, offset + i))
    })
}

fn write_field(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    for i in 0..u64::from(bits) {
        let on = value >> (u64::from(bits) - 1 - i) & 1 == 1;
        let at = offset + i;
        let mask = 0x80u8 >> (at & 7);
        let byte = &mut bytes[(at >> 3) as usize];
        *byte = if on { *byte | mask } else { *byte & !mask };
    }
}

/// `BITFIELD key [GET type offset] [SET type offset value] [INCRBY type offset increment]
/// [OVERFLOW WRAP|SAT|FAIL]…` and `BITFIELD_RO key [GET type offset]…`: one reply per `GET`,
/// `SET` (the old value) and `INCRBY` (the new value), nil for a failed overflow. Every
/// operation is parsed before the key is looked up.
fn bitfield_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let readonly_command = is(args.name(), "bitfield_ro");
    let key = args.next_bytes()?;
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut highest_write: Option<u64> = None;
    while let Some(sub) = args.next() {
        let left = args.remaining();
        let kind = if is(sub, "get") && left >= 2 {
            FieldOpKind::Get
        } else if is(sub, "set") && left >= 3 {
            FieldOpKind::Set(0)
        } else if is(sub, "incrby") && left >= 3 {
            FieldOpKind::Incrby(0)
        } else if is(sub, "overflow") && left >= 1 {
            let word = args.next_bytes()?;
            overflow = super::keyword(
                word,
                &[
                    ("wrap", Overflow::Wrap),
                    ("sat", Overflow::Sat),
                    ("fail", Overflow::Fail),
                ],
            )
            .map_err(|_| Frame::error("ERR Invalid OVERFLOW type specified"))?;
            continue;
        } else {
            return Err(SYNTAX);
        };
        let ty = FieldType::parse(args.next_bytes()?)?;
        let offset = bit_offset(args.next_bytes()?, Some(ty.bits))?;
        let kind = match kind {
            FieldOpKind::Get => kind,
            _ => {
                let last = offset + u64::from(ty.bits) - 1;
                highest_write = Some(highest_write.map_or(last, |h| h.max(last)));
                let value = args.next_int()?;
                match kind {
                    FieldOpKind::Set(_) => FieldOpKind::Set(value),
                    _ => FieldOpKind::Incrby(value),
                }
            }
        };
        ops.push(FieldOp {
            kind,
            ty,
            offset,
            overflow,
        });
    }
    let (mut bytes, grown) = match highest_write {
        None => (
            read(cx, key)?
                .as_deref()
                .map(<[u8]>::to_vec)
                .unwrap_or_default(),
            false,
        ),
        Some(_) if readonly_command => {
            return Err(Frame::error(
                "ERR BITFIELD_RO only supports the GET subcommand",
            ));
        }
        Some(last) => for_writing(cx, key, last)?,
    };
    // Redis 7.0 signals the key when a field that was written changed, or the string grew.
    let mut changed = false;
    let mut replies = Vec::with_capacity(ops.len());
    for op in &ops {
        let (ty, bits) = (op.ty, op.ty.bits);
        let old = ty.value(read_field(&bytes, op.offset, bits));
        let (new, reply) = match op.kind {
            FieldOpKind::Get => {
                replies.push(Frame::Integer(old));
                continue;
            }
            // A negative value for an unsigned field is its two's complement, so it overflows.
            FieldOpKind::Set(v) => (ty.add(v, 0, op.overflow), Frame::Integer(old)),
            FieldOpKind::Incrby(incr) => {
                let new = ty.add(old, incr, op.overflow);
                (new, new.map_or(Frame::Null, Frame::Integer))
            }
        };
        match new {
            Some(new) => {
                write_field(&mut bytes, op.offset, bits, new as u64);
                changed |= grown || new != old;
                replies.push(reply);
            }
            None => replies.push(Frame::Null),
        }
    }
    if highest_write.is_some() {
        store(cx, key, bytes, changed);
    }
    Ok(Frame::Array(replies))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_wrap_saturate_and_fail_as_redis_s_overflow_checks() {
        let i8 = FieldType {
            signed: true,
            bits: 8,
        };
        assert_eq!(i8.add(127, 1, Overflow::Wrap), Some(-128));
        assert_eq!(i8.add(127, 1, Overflow::Sat), Some(127));
        assert_eq!(i8.add(-128, -1, Overflow::Sat), Some(-128));
        assert_eq!(i8.add(127, 1, Overflow::Fail), None);
        let u2 = FieldType {
            signed: false,
            bits: 2,
        };
        assert_eq!(u2.add(3, 1, Overflow::Wrap), Some(0));
        assert_eq!(u2.add(0, -1, Overflow::Sat), Some(0));
        assert_eq!(u2.add(-1, 0, Overflow::Wrap), Some(3));
        let i64 = FieldType {
            signed: true,
            bits: 64,
        };
        assert_eq!(i64.add(i64::MAX, 1, Overflow::Wrap), Some(i64::MIN));
        assert_eq!(i64.add(i64::MAX, 1, Overflow::Sat), Some(i64::MAX));
    }

    #[test]
    fn bit_ranges_count_only_their_bits() {
        let bytes = [0xffu8, 0x0f];
        assert_eq!(count_bits(&bytes, 0, 15), 12);
        assert_eq!(count_bits(&bytes, 4, 11), 4);
        assert_eq!(count_bits(&bytes, 12, 15), 4);
        assert_eq!(count_bits(&bytes, 1, 1), 1);
    }
}
