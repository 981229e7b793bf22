//! HyperLogLog commands (`PFADD`, `PFCOUNT`, `PFMERGE`) on Redis 7.0's own representation, so
//! that a value written by one server is read by the other and `PFCOUNT` gives Redis's estimate.
//!
//! A HyperLogLog is a string: a 16-byte header (`HYLL`, the encoding, three unused bytes, and
//! the cached cardinality in little-endian order, its top bit set when stale), then 16384 6-bit
//! registers, either dense (12288 bytes, packed from the low bits of each byte) or sparse (runs:
//! `00xxxxxx` zeros, `01xxxxxx yyyyyyyy` long zeros, `1vvvvvxx` a value repeated). Elements are
//! hashed with MurmurHash64A (seed `0xadc83b19`): the low 14 bits pick the register, the run of
//! zeros above them (plus one) is its candidate value. A sparse value is edited in place as
//! Redis's `hllSparseSet` edits it (split the run, then merge equal neighbours), so its bytes
//! match Redis's after the same commands, and becomes dense past 3000 bytes or when a register
//! needs a value above 32. The estimate is Ertl's improved estimator, as in Redis 7.0.

use super::{Args, CmdResult, Cx, Spec, WRITE, WRONGTYPE};
use crate::engine::db::Value;
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static PFADD: Spec = Spec::new("pfadd", -2, WRITE, pfadd_command);
pub(crate) static PFCOUNT: Spec = Spec::new("pfcount", -2, 0, pfcount_command);
pub(crate) static PFMERGE: Spec =
    Spec::new("pfmerge", -2, WRITE, pfmerge_command).with_reads(super::ReadRule::Always);

const P: u32 = 14;
const Q: u32 = 64 - P;
const REGISTERS: usize = 1 << P;
const HEADER: usize = 16;
const DENSE_SIZE: usize = HEADER + (REGISTERS * 6).div_ceil(8);
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
/// Redis's `hll-sparse-max-bytes` default.
const SPARSE_MAX_BYTES: usize = 3000;
const SPARSE_VAL_MAX_VALUE: u8 = 32;
const SPARSE_VAL_MAX_LEN: usize = 4;
const SPARSE_ZERO_MAX_LEN: usize = 64;

pub(super) const INVALID_HLL: Frame = Frame::error("INVALIDOBJ Corrupted HLL object detected");
const NOT_AN_HLL: Frame = Frame::error("WRONGTYPE Key is not a valid HyperLogLog string value.");

/// Austin Appleby's MurmurHash64A, as Redis's copy computes it on a little-endian machine.
fn murmur64a(key: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = seed ^ (key.len() as u64).wrapping_mul(M);
    let mut chunks = key.chunks_exact(8);
    for chunk in &mut chunks {
        let mut k = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element falls in and the value it proposes (Redis's `hllPatLen`).
fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, 0xadc8_3b19);
    let index = (hash as usize) & (REGISTERS - 1);
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

fn dense_get(registers: &[u8], i: usize) -> u8 {
    let (byte, fb) = (i * 6 / 8, (i * 6) & 7);
    let b0 = u16::from(registers[byte]);
    let b1 = u16::from(registers.get(byte + 1).copied().unwrap_or(0));
    (((b0 >> fb) | (b1 << (8 - fb))) & 63) as u8
}

fn dense_set(registers: &mut [u8], i: usize, value: u8) {
    let (byte, fb) = (i * 6 / 8, (i * 6) & 7);
    let v = u16::from(value);
    registers[byte] &= !((63u16 << fb) as u8);
    registers[byte] |= (v << fb) as u8;
    if let Some(next) = registers.get_mut(byte + 1) {
        *next &= !((63u16 >> (8 - fb)) as u8);
        *next |= (v >> (8 - fb)) as u8;
    }
}

/// One run of a sparse representation: its register count and value (0 for the zero runs).
fn sparse_runs(payload: &[u8]) -> impl Iterator<Item = (usize, u8)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let op = *payload.get(at)?;
        Some(if op & 0xc0 == 0 {
            at += 1;
            (usize::from(op & 0x3f) + 1, 0)
        } else if op & 0x80 == 0 {
            let low = usize::from(payload.get(at + 1).copied().unwrap_or(0));
            at += 2;
            (((usize::from(op & 0x3f) << 8) | low) + 1, 0)
        } else {
            at += 1;
            (usize::from(op & 3) + 1, ((op >> 2) & 0x1f) + 1)
        })
    })
}

/// The registers of a valid HyperLogLog value, None when its sparse runs do not cover exactly
/// every register.
pub(super) fn registers(hll: &[u8]) -> Option<Vec<u8>> {
    let payload = &hll[HEADER..];
    if hll[4] == DENSE {
        return Some((0..REGISTERS).map(|i| dense_get(payload, i)).collect());
    }
    let mut out = Vec::with_capacity(REGISTERS);
    for (len, value) in sparse_runs(payload) {
        if out.len() + len > REGISTERS {
            return None;
        }
        out.extend(std::iter::repeat_n(value, len));
    }
    (out.len() == REGISTERS).then_some(out)
}

/// The value at `key` checked as a HyperLogLog (Redis's `isHLLObjectOrReply`); None when missing.
pub(super) fn read(cx: &mut Cx<'_>, key: &[u8]) -> Result<Option<Bytes>, Frame> {
    let Some(entry) = cx.lookup(key) else {
        return Ok(None);
    };
    let Value::Str(s) = &entry.value else {
        return Err(WRONGTYPE);
    };
    let valid = s.len() >= HEADER
        && &s[..4] == b"HYLL"
        && s[4] <= SPARSE
        && (s[4] != DENSE || s.len() == DENSE_SIZE);
    if valid {
        Ok(Some(s.clone()))
    } else {
        Err(NOT_AN_HLL)
    }
}

/// An empty HyperLogLog: sparse, one long zero run.
fn empty() -> Vec<u8> {
    let mut hll = vec![0u8; HEADER + 2];
    hll[..4].copy_from_slice(b"HYLL");
    hll[4] = SPARSE;
    let run = REGISTERS - 1;
    hll[HEADER] = 0x40 | (run >> 8) as u8;
    hll[HEADER + 1] = (run & 0xff) as u8;
    hll
}

fn invalidate_cache(hll: &mut [u8]) {
    hll[15] |= 0x80;
}

/// Rewrites a sparse value dense (Redis's `hllSparseToDense`); false when it is corrupt.
pub(super) fn to_dense(hll: &mut Vec<u8>) -> bool {
    if hll[4] == DENSE {
        return true;
    }
    let Some(values) = registers(hll) else {
        return false;
    };
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HEADER].copy_from_slice(&hll[..HEADER]);
    dense[4] = DENSE;
    for (i, &v) in values.iter().enumerate() {
        if v != 0 {
            dense_set(&mut dense[HEADER..], i, v);
        }
    }
    *hll = dense;
    true
}

/// Raises register `index` to `count`: 1 if it changed, 0 if not, None for a corrupt value.
fn set_register(hll: &mut Vec<u8>, index: usize, count: u8) -> Option<u8> {
    if hll[4] == DENSE {
        let registers = &mut hll[HEADER..];
        if dense_get(registers, index) >= count {
            return Some(0);
        }
        dense_set(registers, index, count);
        return Some(1);
    }
    if count > SPARSE_VAL_MAX_VALUE {
        return promote(hll, index, count);
    }
    sparse_set(hll, index, count)
}

fn promote(hll: &mut Vec<u8>, index: usize, count: u8) -> Option<u8> {
    if !to_dense(hll) {
        return None;
    }
    dense_set(&mut hll[HEADER..], index, count);
    Some(1)
}

fn val_op(value: u8, len: usize) -> u8 {
    0x80 | ((value - 1) << 2) | (len as u8 - 1)
}

fn zero_ops(len: usize, out: &mut Vec<u8>) {
    if len > SPARSE_ZERO_MAX_LEN {
        out.push(0x40 | ((len - 1) >> 8) as u8);
        out.push(((len - 1) & 0xff) as u8);
    } else {
        out.push((len - 1) as u8);
    }
}

/// Redis's `hllSparseSet`: finds the run holding `index`, splits it around the new value, and
/// merges equal neighbouring values.
fn sparse_set(hll: &mut Vec<u8>, index: usize, count: u8) -> Option<u8> {
    let end = hll.len();
    let (mut p, mut first, mut prev) = (HEADER, 0usize, None);
    let mut span = 0;
    while p < end {
        let op = hll[p];
        let (len, oplen) = if op & 0xc0 == 0 {
            (usize::from(op & 0x3f) + 1, 1)
        } else if op & 0x80 != 0 {
            (usize::from(op & 3) + 1, 1)
        } else {
            let low = usize::from(*hll.get(p + 1)?);
            (((usize::from(op & 0x3f) << 8) | low) + 1, 2)
        };
        span = len;
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return None;
    }
    let op = hll[p];
    let (is_val, is_xzero) = (op & 0x80 != 0, op & 0xc0 == 0x40);
    let runlen = span;
    let mut simple = false;
    if is_val {
        let old = ((op >> 2) & 0x1f) + 1;
        if old >= count {
            return Some(0);
        }
        if runlen == 1 {
            hll[p] = val_op(count, 1);
            simple = true;
        }
    }
    if !is_val && !is_xzero && runlen == 1 {
        hll[p] = val_op(count, 1);
        simple = true;
    }
    if !simple {
        let last = first + span - 1;
        let mut seq = Vec::with_capacity(5);
        if is_val {
            let current = ((op >> 2) & 0x1f) + 1;
            if index != first {
                seq.push(val_op(current, index - first));
            }
            seq.push(val_op(count, 1));
            if index != last {
                seq.push(val_op(current, last - index));
            }
        } else {
            if index != first {
                zero_ops(index - first, &mut seq);
            }
            seq.push(val_op(count, 1));
            if index != last {
                zero_ops(last - index, &mut seq);
            }
        }
        let oldlen = if is_xzero { 2 } else { 1 };
        if seq.len() > oldlen && hll.len() + seq.len() - oldlen > SPARSE_MAX_BYTES {
            return promote(hll, index, count);
        }
        hll.splice(p..p + oldlen, seq);
    }
    // Merge equal neighbouring values, scanning up to five opcodes from the one before.
    let mut p = prev.unwrap_or(HEADER);
    let mut scan = 5;
    while p < hll.len() && scan > 0 {
        scan -= 1;
        let op = hll[p];
        if op & 0xc0 == 0x40 {
            p += 2;
            continue;
        }
        if op & 0xc0 == 0 {
            p += 1;
            continue;
        }
        if let Some(&next) = hll.get(p + 1)
            && next & 0x80 != 0
        {
            let (v1, v2) = ((op >> 2) & 0x1f, (next >> 2) & 0x1f);
            let len = usize::from(op & 3) + usize::from(next & 3) + 2;
            if v1 == v2 && len <= SPARSE_VAL_MAX_LEN {
                hll[p + 1] = val_op(v1 + 1, len);
                hll.remove(p);
                continue;
            }
        }
        p += 1;
    }
    Some(1)
}

/// Redis 7.0's `hllCount`: Ertl's estimator over the register histogram.
fn estimate(values: &[u8]) -> u64 {
    let m = REGISTERS as f64;
    let mut histogram = [0u32; 64];
    for &v in values {
        histogram[usize::from(v) & 63] += 1;
    }
    let mut z = m * tau((m - f64::from(histogram[Q as usize + 1])) / m);
    for j in (1..=Q as usize).rev() {
        z += f64::from(histogram[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(histogram[0]) / m);
    const ALPHA_INF: f64 = 0.721_347_520_444_481_7;
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let previous = z;
        z += x * y;
        y += y;
        if previous == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let previous = z;
        y *= 0.5;
        z -= (1.0 - x).powi(2) * y;
        if previous == z {
            return z / 3.0;
        }
    }
}

/// [`read`] for a command that may write the value in place (`PFADD`, `PFCOUNT` of one key,
/// `PFMERGE`'s destination, `PFDEBUG`). Redis unshares a valid HyperLogLog before it edits it
/// (`dbUnshareStringValue`), even when it then changes nothing, so from then on `OBJECT
/// ENCODING` says `raw`, where a restored or `SET` copy of the same bytes is `embstr`.
pub(super) fn read_unshared(cx: &mut Cx<'_>, key: &[u8]) -> Result<Option<Bytes>, Frame> {
    let hll = read(cx, key)?;
    if hll.is_some() {
        super::server::note_raw(cx, key);
    }
    Ok(hll)
}

/// Writes `hll` at `key`, keeping its TTL (a new key gets none), and signals `WATCH`. Redis makes
/// a HyperLogLog as a raw string and edits it in place: it stays `raw`.
pub(super) fn store(cx: &mut Cx<'_>, key: &[u8], hll: Vec<u8>) {
    let now = cx.now;
    let db = cx.keyspace();
    match db.write(key, now) {
        Some(entry) => entry.value = Value::Str(Bytes::from(hll)),
        None => db.insert(key, Value::Str(Bytes::from(hll)), None, now),
    }
    db.touch(key);
    super::server::note_raw(cx, key);
}

/// `PFADD key [element…]`: 1 if a register changed (or the key was created), else 0.
fn pfadd_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let (mut hll, mut updated) = match read_unshared(cx, key)? {
        None => (empty(), true),
        Some(s) => (s.to_vec(), false),
    };
    for element in args {
        let (index, count) = pattern(element);
        match set_register(&mut hll, index, count) {
            Some(changed) => updated |= changed == 1,
            None => return Err(INVALID_HLL),
        }
    }
    if updated {
        invalidate_cache(&mut hll);
        store(cx, key, hll);
        cx.notify(super::class::STRING, "pfadd", key);
    }
    Ok(Frame::Integer(i64::from(updated)))
}

/// `PFCOUNT key…`: the estimate of one HyperLogLog (from its cache, which a stale cache is
/// rewritten with, a change `WATCH` hears of), or of the union of several.
fn pfcount_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() > 1 {
        let mut union = vec![0u8; REGISTERS];
        for key in args {
            let Some(hll) = read(cx, key)? else {
                continue;
            };
            let values = registers(&hll).ok_or(INVALID_HLL)?;
            for (u, v) in union.iter_mut().zip(values) {
                *u = (*u).max(v);
            }
        }
        return Ok(Frame::Integer(estimate(&union) as i64));
    }
    let key = args.next_bytes()?;
    let Some(hll) = read_unshared(cx, key)? else {
        return Ok(Frame::Integer(0));
    };
    if hll[15] & 0x80 == 0 {
        let card = u64::from_le_bytes(hll[8..16].try_into().expect("eight bytes"));
        return Ok(Frame::Integer(card as i64));
    }
    let values = registers(&hll).ok_or(INVALID_HLL)?;
    let card = estimate(&values);
    let mut hll = hll.to_vec();
    hll[8..16].copy_from_slice(&card.to_le_bytes());
    store(cx, key, hll);
    Ok(Frame::Integer(card as i64))
}

/// `PFMERGE destkey [sourcekey…]`: the destination (itself a source) becomes the union, dense if
/// any input was dense.
fn pfmerge_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let destination = args.peek().cloned().unwrap_or_default();
    let mut union = vec![0u8; REGISTERS];
    let mut dense = false;
    for key in args {
        let Some(hll) = read(cx, key)? else {
            continue;
        };
        dense |= hll[4] == DENSE;
        let values = registers(&hll).ok_or(INVALID_HLL)?;
        for (u, v) in union.iter_mut().zip(values) {
            *u = (*u).max(v);
        }
    }
    // Read already, with the sources; Redis looks it up again as a write.
    let mut hll = match cx.writing(|cx| read_unshared(cx, &destination))? {
        None => empty(),
        Some(s) => s.to_vec(),
    };
    if dense && !to_dense(&mut hll) {
        return Err(INVALID_HLL);
    }
    for (i, &v) in union.iter().enumerate() {
        if v != 0 {
            set_register(&mut hll, i, v);
        }
    }
    invalidate_cache(&mut hll);
    store(cx, &destination, hll);
    cx.notify(super::class::STRING, "pfadd", &destination);
    Ok(Frame::simple("OK"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_hll_counts_zero_and_one_element_one() {
        let mut hll = empty();
        assert_eq!(estimate(&registers(&hll).unwrap()), 0);
        let (index, count) = pattern(b"a");
        assert_eq!(set_register(&mut hll, index, count), Some(1));
        assert_eq!(set_register(&mut hll, index, count), Some(0));
        assert_eq!(estimate(&registers(&hll).unwrap()), 1);
    }

    #[test]
    fn dense_registers_round_trip_at_every_bit_position() {
        let mut registers = vec![0u8; DENSE_SIZE - HEADER];
        for i in [0, 1, 2, 3, 4, 5, 16382, 16383] {
            dense_set(&mut registers, i, 63 - i as u8 % 7);
            assert_eq!(dense_get(&registers, i), 63 - i as u8 % 7);
        }
        assert_eq!(dense_get(&registers, 6), 0);
    }
}
