//! Redis 7.0's RDB encoding of one value, as `DUMP` writes it and `RESTORE` reads it.
//!
//! A `DUMP` payload is the value's RDB type byte and its RDB body, then the RDB version (10, two
//! bytes, little-endian) and the CRC64 of everything before (Jones polynomial, reflected, as
//! Redis's `crc64.c`), little-endian. To give the same bytes as Redis for the same writes, the
//! body uses the encoding Redis would have chosen for the value (the caller says which, from
//! what `OBJECT ENCODING` answers): a small hash or sorted set is one listpack, a set of
//! integers an intset, a list a quicklist of listpacks cut where Redis cuts them, and every
//! string (a listpack's bytes included) goes through Redis's `rdbSaveRawString`: an integer
//! encoding when it is a short canonical integer, LZF (liblzf's `lzf_compress`, byte for byte)
//! when it is over 20 bytes and shrinks by at least 4, its bytes otherwise.
//!
//! A stream is its listpack nodes as Redis lays them out, its counters and its consumer groups
//! (`engine/stream/rdb.rs`, beside the stream it reads).
//!
//! Reading accepts every type Redis 7.0 writes, and the older list and sorted-set types. The
//! payload comes from the network: every length is checked against the bytes that are left
//! before anything is allocated, a decompressed string may not outgrow the length it claims,
//! and anything malformed is an error, never a panic.

use super::db::{Hash, MAX_STRING, Value, ZSet};
use super::hash_ttl as ht;
use super::list::List;
use super::stream::Stream;
use super::version::Version;
use bytes::Bytes;

/// The RDB version Redis 7.0 writes and the newest it reads.
pub const RDB_VERSION: u16 = 10;
/// Valkey's own RDB version, which it writes from 9.0 on and reads back.
const RDB_VERSION_VALKEY: u16 = 80;

/// The RDB version a payload of `server`'s carries in its footer (`kind` is its type byte).
/// Redis 7.4 writes its own version, 12, under every value; the fake's Valkey writes 7.0's but
/// for a hash with field TTLs.
pub fn footer_version(server: Version, kind: u8) -> u16 {
    match server {
        Version::V7_0 => RDB_VERSION,
        Version::V7_4 => ht::RDB_VERSION_7_4,
        _ if matches!(kind, ht::TYPE_HASH_METADATA | ht::TYPE_HASH_LISTPACK_EX) => {
            ht::RDB_VERSION_7_4
        }
        _ => RDB_VERSION,
    }
}

/// Whether `server` reads a payload whose footer says RDB version `v`: a release reads every
/// version up to its own; Valkey reads Redis's up to 7.2's (11) and its own (80), and refuses
/// the ones between, which Redis's later releases took.
fn reads_version(server: Version, kind: u8, v: u16) -> bool {
    match server {
        Version::V7_0 => v <= RDB_VERSION,
        Version::V7_4 => v <= ht::RDB_VERSION_7_4,
        _ => {
            v <= RDB_VERSION + 1
                || v == RDB_VERSION_VALKEY
                || matches!(kind, ht::TYPE_HASH_METADATA | ht::TYPE_HASH_LISTPACK_EX)
                    && v <= ht::RDB_VERSION_7_4
        }
    }
}

const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;
/// A stream before Redis 7.0: no counters, no group read counters.
const TYPE_STREAM_LISTPACKS: u8 = 15;
/// Redis 7.0's stream: the counters and each group's read counter.
const TYPE_STREAM_LISTPACKS_2: u8 = 19;
/// Redis 7.2's stream, which 7.4 writes: each consumer's active time too.
const TYPE_STREAM_LISTPACKS_3: u8 = 21;

const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// Redis's `list-max-listpack-size -2`: a quicklist node's listpack holds at most 8 KB.
const QUICKLIST_NODE_BYTES: usize = 8192;
/// What Redis's quicklist adds to an element's length to guess its cost in a listpack.
const SIZE_ESTIMATE_OVERHEAD: usize = 8;
/// `QUICKLIST_NODE_CONTAINER_PACKED`, `..._PLAIN`.
const CONTAINER_PACKED: u64 = 2;
const CONTAINER_PLAIN: u64 = 1;

/// A listpack's header (total bytes, element count) and terminator.
const LP_HEADER: usize = 6;
const LP_EOF: u8 = 0xff;

/// Which of the stream types' fields a stream's body has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum StreamLayout {
    /// `RDB_TYPE_STREAM_LISTPACKS`: the nodes, length, last ID and groups only.
    V1,
    /// `_2`: the first and largest deleted IDs, the entries added, each group's read counter.
    V2,
    /// `_3`: each consumer's active time too.
    V3,
}

impl StreamLayout {
    fn of(kind: u8) -> StreamLayout {
        match kind {
            TYPE_STREAM_LISTPACKS => StreamLayout::V1,
            TYPE_STREAM_LISTPACKS_2 => StreamLayout::V2,
            _ => StreamLayout::V3,
        }
    }
}

// ---- CRC64 ----

const CRC64_TABLE: [u64; 256] = {
    // The reflected form of the Jones polynomial 0xad93d23594c935a9.
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5;
    let mut table = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// Redis's `crc64(0, bytes)`.
pub fn crc64(bytes: &[u8]) -> u64 {
    let mut crc = 0u64;
    for &b in bytes {
        crc = CRC64_TABLE[((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

// ---- LZF ----

const LZF_HLOG: u32 = 16;
const LZF_MAX_LIT: usize = 1 << 5;
const LZF_MAX_OFF: usize = 1 << 13;
const LZF_MAX_REF: usize = (1 << 8) + (1 << 3);

/// The hash slot of the three bytes in the low 24 bits of `h` (liblzf's `IDX` with
/// `VERY_FAST`).
fn lzf_slot(h: u32) -> usize {
    ((h >> (24 - LZF_HLOG)).wrapping_sub(h.wrapping_mul(5)) & ((1 << LZF_HLOG) - 1)) as usize
}

/// liblzf 3.6's `lzf_compress` in its default build (`HLOG` 16, `VERY_FAST`), the one Redis 7.0
/// links: the compressed bytes if they fit in `out_len`, None otherwise. Its control flow is
/// kept step for step, because the bytes must be Redis's: which matches it finds depends on
/// exactly when it updates its table. liblzf leaves the table uninitialized; a slot never
/// written holds no position here.
pub fn lzf_compress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let in_len = input.len();
    if in_len < 3 || out_len == 0 {
        return None;
    }
    let mut htab = vec![usize::MAX; 1 << LZF_HLOG];
    let mut out = vec![0u8; out_len + 4];
    let (mut ip, mut op, mut lit) = (0usize, 1usize, 0usize);
    let first = |at: usize| (u32::from(input[at]) << 8) | u32::from(input[at + 1]);
    let next = |h: u32, at: usize| (h << 8) | u32::from(input[at + 2]);
    let mut hval = first(ip);
    while ip + 2 < in_len {
        hval = next(hval, ip);
        let slot = lzf_slot(hval);
        let reference = htab[slot];
        htab[slot] = ip;
        let matched = reference < ip
            && ip - reference - 1 < LZF_MAX_OFF
            && reference > 0
            && input[reference..reference + 3] == input[ip..ip + 3];
        if matched {
            let off = ip - reference - 1;
            let mut len = 2usize;
            let maxlen = (in_len - ip - len).min(LZF_MAX_REF);
            // The room for the reference, counting the literal run it may undo.
            if op - usize::from(lit == 0) + 3 + 1 >= out_len {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1);
            if lit == 0 {
                op -= 1;
            }
            let mut done = false;
            if maxlen > 16 {
                for _ in 0..16 {
                    len += 1;
                    if input[reference + len] != input[ip + len] {
                        done = true;
                        break;
                    }
                }
            }
            if !done {
                loop {
                    len += 1;
                    if !(len < maxlen && input[reference + len] == input[ip + len]) {
                        break;
                    }
                }
            }
            len -= 2;
            ip += 1;
            if len < 7 {
                out[op] = ((off >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((off >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = off as u8;
            op += 2; // the byte, then the start of the next literal run
            lit = 0;
            ip += len + 1;
            if ip + 2 >= in_len {
                break;
            }
            ip -= 2;
            hval = first(ip);
            hval = next(hval, ip);
            htab[lzf_slot(hval)] = ip;
            ip += 1;
            hval = next(hval, ip);
            htab[lzf_slot(hval)] = ip;
            ip += 1;
        } else {
            if op >= out_len {
                return None;
            }
            lit += 1;
            out[op] = input[ip];
            op += 1;
            ip += 1;
            if lit == LZF_MAX_LIT {
                out[op - lit - 1] = (lit - 1) as u8;
                lit = 0;
                op += 1;
            }
        }
    }
    if op + 3 > out_len {
        return None;
    }
    while ip < in_len {
        lit += 1;
        out[op] = input[ip];
        op += 1;
        ip += 1;
        if lit == LZF_MAX_LIT {
            out[op - lit - 1] = (lit - 1) as u8;
            lit = 0;
            op += 1;
        }
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1);
    if lit == 0 {
        op -= 1;
    }
    out.truncate(op);
    Some(out)
}

/// liblzf's `lzf_decompress` into exactly `len` bytes: None when the input is corrupt or does
/// not make exactly `len` bytes. The output grows only as the input produces it.
pub fn lzf_decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    // A back reference of 3 input bytes makes at most 264 output bytes; and no string of Redis
    // is longer than 512 MiB (`proto-max-bulk-len`), so a payload cannot claim more memory than
    // one such string, however it repeats itself.
    if len > input.len().saturating_mul(LZF_MAX_REF / 3 + 1) || len > MAX_STRING {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(len.min(input.len() * 4));
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let literal = input.get(ip..ip + run)?;
            if out.len() + run > len {
                return None;
            }
            out.extend_from_slice(literal);
            ip += run;
        } else {
            let mut run = ctrl >> 5;
            if run == 7 {
                run += usize::from(*input.get(ip)?);
                ip += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + usize::from(*input.get(ip)?) + 1;
            ip += 1;
            run += 2;
            if back > out.len() || out.len() + run > len {
                return None;
            }
            let from = out.len() - back;
            for i in 0..run {
                let b = out[from + i];
                out.push(b);
            }
        }
    }
    (out.len() == len).then_some(out)
}

// ---- writing ----

/// Redis's `rdbSaveLen`.
pub(crate) fn put_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// A canonical decimal integer, as Redis's `string2ll` reads one.
fn canonical_int(s: &[u8]) -> Option<i64> {
    crate::resp::number::parse_i64(s)
}

/// Redis's `rdbSaveRawString`: an integer encoding, LZF, or the bytes.
pub(crate) fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11
        && let Some(v) = canonical_int(s)
    {
        if let Ok(v) = i8::try_from(v) {
            out.extend_from_slice(&[0xc0 | ENC_INT8, v as u8]);
            return;
        }
        if let Ok(v) = i16::try_from(v) {
            out.push(0xc0 | ENC_INT16);
            out.extend_from_slice(&v.to_le_bytes());
            return;
        }
        if let Ok(v) = i32::try_from(v) {
            out.push(0xc0 | ENC_INT32);
            out.extend_from_slice(&v.to_le_bytes());
            return;
        }
    }
    if s.len() > 20
        && let Some(compressed) = lzf_compress(s, s.len() - 4)
    {
        out.push(0xc0 | ENC_LZF);
        put_len(out, compressed.len() as u64);
        put_len(out, s.len() as u64);
        out.extend_from_slice(&compressed);
        return;
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// A listpack being built, as Redis's `lpAppend` builds one.
pub(crate) struct Listpack {
    bytes: Vec<u8>,
    count: usize,
}

impl Listpack {
    pub(crate) fn new() -> Listpack {
        let mut bytes = Vec::with_capacity(64);
        bytes.extend_from_slice(&[0; LP_HEADER]);
        Listpack { bytes, count: 0 }
    }

    /// Appends an element: an integer encoding when it is a canonical integer, else its
    /// length and bytes; then its back length.
    pub(crate) fn push(&mut self, e: &[u8]) {
        let start = self.bytes.len();
        let out = &mut self.bytes;
        match canonical_int(e) {
            Some(v) if (0..=127).contains(&v) => out.push(v as u8),
            Some(v) if (-4096..4096).contains(&v) => {
                let u = (v as u16) & 0x1fff;
                out.extend_from_slice(&[0xc0 | (u >> 8) as u8, u as u8]);
            }
            Some(v) if i16::try_from(v).is_ok() => {
                out.push(0xf1);
                out.extend_from_slice(&(v as i16).to_le_bytes());
            }
            Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => {
                out.push(0xf2);
                out.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
            }
            Some(v) if i32::try_from(v).is_ok() => {
                out.push(0xf3);
                out.extend_from_slice(&(v as i32).to_le_bytes());
            }
            Some(v) => {
                out.push(0xf4);
                out.extend_from_slice(&v.to_le_bytes());
            }
            None => {
                if e.len() < 64 {
                    out.push(0x80 | e.len() as u8);
                } else if e.len() < 4096 {
                    out.extend_from_slice(&[0xe0 | (e.len() >> 8) as u8, e.len() as u8]);
                } else {
                    out.push(0xf0);
                    out.extend_from_slice(&(e.len() as u32).to_le_bytes());
                }
                out.extend_from_slice(e);
            }
        }
        let (bytes, groups) = backlen(out.len() - start);
        out.extend_from_slice(&bytes[..groups]);
        self.count += 1;
    }

    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.bytes.push(LP_EOF);
        let total = self.bytes.len() as u32;
        self.bytes[..4].copy_from_slice(&total.to_le_bytes());
        let count = self.count.min(65535) as u16;
        self.bytes[4..6].copy_from_slice(&count.to_le_bytes());
        self.bytes
    }
}

/// A listpack entry's back length for an entry of `l` bytes (Redis's `lpEncodeBacklen`): 7
/// bits a byte, most significant first, every byte after the first flagged.
fn backlen(l: usize) -> ([u8; 5], usize) {
    let groups = match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    };
    let mut out = [0u8; 5];
    for (i, b) in out.iter_mut().take(groups).enumerate() {
        let part = ((l >> (7 * (groups - 1 - i))) & 127) as u8;
        *b = if i == 0 { part } else { part | 128 };
    }
    (out, groups)
}

/// How Redis would hold the value, which decides its RDB type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compact {
    /// The small encoding: a listpack (hash, sorted set) or an intset (set).
    Yes,
    /// The large one: a hash table or a skiplist.
    No,
}

/// A score as a sorted-set listpack holds it: Redis's `d2string`.
fn score_text(score: f64) -> Vec<u8> {
    if score.fract() == 0.0 && score > -4_503_599_627_370_495.0 && score < 4_503_599_627_370_496.0 {
        (score as i64).to_string().into_bytes()
    } else {
        crate::resp::format_double(score).into_bytes()
    }
}

/// The `DUMP` payload of `value` as `server` writes it, `compact` saying whether Redis would
/// hold it in its small encoding.
pub fn dump(value: &Value, compact: Compact, server: Version) -> Vec<u8> {
    let mut out = Vec::new();
    match value {
        Value::Str(s) => {
            out.push(TYPE_STRING);
            put_string(&mut out, s);
        }
        Value::List(list) => {
            out.push(TYPE_LIST_QUICKLIST_2);
            let nodes = quicklist_nodes(list);
            put_len(&mut out, nodes.len() as u64);
            for node in nodes {
                put_len(&mut out, CONTAINER_PACKED);
                put_string(&mut out, &node);
            }
        }
        Value::Set(set) => {
            let ints: Option<Vec<i64>> = set.iter().map(|m| canonical_int(m)).collect();
            match (compact, ints) {
                (Compact::Yes, Some(mut ints)) => {
                    out.push(TYPE_SET_INTSET);
                    ints.sort_unstable();
                    put_string(&mut out, &intset(&ints));
                }
                _ => {
                    out.push(TYPE_SET);
                    put_len(&mut out, set.len() as u64);
                    for m in set {
                        put_string(&mut out, m);
                    }
                }
            }
        }
        Value::Hash(hash) => {
            if hash.had_field_ttls()
                && super::hash_ttl::dump_hash(&mut out, hash, compact == Compact::Yes).is_some()
            {
            } else if compact == Compact::Yes {
                put_listpack(&mut out, TYPE_HASH_LISTPACK, |lp| {
                    for (f, v) in hash.iter() {
                        lp.push(f);
                        lp.push(v);
                    }
                });
            } else {
                out.push(TYPE_HASH);
                put_len(&mut out, hash.len() as u64);
                for (f, v) in hash.iter() {
                    put_string(&mut out, f);
                    put_string(&mut out, v);
                }
            }
        }
        Value::ZSet(zset) => {
            if compact == Compact::Yes {
                put_listpack(&mut out, TYPE_ZSET_LISTPACK, |lp| {
                    for (score, member) in zset.iter() {
                        lp.push(member);
                        lp.push(&score_text(score));
                    }
                });
            } else {
                // A skiplist is written from its tail: the highest score first.
                out.push(TYPE_ZSET_2);
                put_len(&mut out, zset.len() as u64);
                for (score, member) in zset.iter().rev() {
                    put_string(&mut out, member);
                    out.extend_from_slice(&score.to_le_bytes());
                }
            }
        }
        Value::Stream(stream) => {
            let kind = match server {
                Version::V7_0 => TYPE_STREAM_LISTPACKS_2,
                _ => TYPE_STREAM_LISTPACKS_3,
            };
            out.push(kind);
            stream.put_rdb(&mut out, StreamLayout::of(kind));
        }
    }
    let version = footer_version(server, out.first().copied().unwrap_or(TYPE_STRING));
    out.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A value of type `kind` held as one listpack, which `fill` writes.
fn put_listpack(out: &mut Vec<u8>, kind: u8, fill: impl FnOnce(&mut Listpack)) {
    out.push(kind);
    let mut lp = Listpack::new();
    fill(&mut lp);
    put_string(out, &lp.finish());
}

/// A list's quicklist nodes, cut as Redis cuts a list pushed element by element at its tail:
/// a node takes an element while its listpack's size, the element's length and 8 stay within
/// 8 KB.
fn quicklist_nodes(list: &List) -> Vec<Vec<u8>> {
    let mut nodes = Vec::new();
    let mut node = Listpack::new();
    for e in list {
        if node.count > 0
            && node.bytes.len() + 1 + e.len() + SIZE_ESTIMATE_OVERHEAD > QUICKLIST_NODE_BYTES
        {
            nodes.push(std::mem::replace(&mut node, Listpack::new()).finish());
        }
        node.push(e);
    }
    if node.count > 0 {
        nodes.push(node.finish());
    }
    nodes
}

/// An intset of sorted integers, in the narrowest width that holds them all.
fn intset(ints: &[i64]) -> Vec<u8> {
    let width: usize = if ints.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if ints.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * ints.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(ints.len() as u32).to_le_bytes());
    for &v in ints {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

// ---- reading ----

/// Why a payload does not load: Redis answers every case `ERR Bad data format`.
#[derive(Debug, PartialEq, Eq)]
pub struct BadData;

/// A cursor over payload bytes; every read checks what is left.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// A string as RDB stores it.
pub(crate) enum Loaded<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
}

impl Loaded<'_> {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            Loaded::Borrowed(b) => b,
            Loaded::Owned(v) => v,
        }
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Loaded::Borrowed(b) => Bytes::copy_from_slice(b),
            Loaded::Owned(v) => Bytes::from(v),
        }
    }
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], BadData> {
        let end = self.at.checked_add(n).ok_or(BadData)?;
        let taken = self.bytes.get(self.at..end).ok_or(BadData)?;
        self.at = end;
        Ok(taken)
    }

    /// Whether every byte has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.at == self.bytes.len()
    }

    pub(crate) fn byte(&mut self) -> Result<u8, BadData> {
        Ok(self.take(1)?[0])
    }

    /// Redis's `rdbLoadLenByRef`: a length, or (`Err(Ok(enc))`) a string's special encoding.
    fn len_or_encoding(&mut self) -> Result<Result<u64, u8>, BadData> {
        let first = self.byte()?;
        Ok(match first >> 6 {
            0 => Ok(u64::from(first & 0x3f)),
            1 => Ok((u64::from(first & 0x3f) << 8) | u64::from(self.byte()?)),
            2 => match first {
                0x80 => Ok(u64::from(u32::from_be_bytes(
                    self.take(4)?.try_into().map_err(|_| BadData)?,
                ))),
                0x81 => Ok(u64::from_be_bytes(
                    self.take(8)?.try_into().map_err(|_| BadData)?,
                )),
                _ => return Err(BadData),
            },
            _ => Err(first & 0x3f),
        })
    }

    pub(crate) fn len(&mut self) -> Result<u64, BadData> {
        self.len_or_encoding()?.map_err(|_| BadData)
    }

    /// A length that counts things each at least one byte long: no more than the bytes left.
    fn count(&mut self) -> Result<usize, BadData> {
        let n = self.len()?;
        if n > (self.bytes.len() - self.at) as u64 {
            return Err(BadData);
        }
        Ok(n as usize)
    }

    pub(crate) fn string(&mut self) -> Result<Loaded<'a>, BadData> {
        match self.len_or_encoding()? {
            Ok(len) => {
                let len = usize::try_from(len).map_err(|_| BadData)?;
                Ok(Loaded::Borrowed(self.take(len)?))
            }
            Err(ENC_INT8) => Ok(Loaded::Owned((self.byte()? as i8).to_string().into_bytes())),
            Err(ENC_INT16) => {
                let v = i16::from_le_bytes(self.take(2)?.try_into().map_err(|_| BadData)?);
                Ok(Loaded::Owned(v.to_string().into_bytes()))
            }
            Err(ENC_INT32) => {
                let v = i32::from_le_bytes(self.take(4)?.try_into().map_err(|_| BadData)?);
                Ok(Loaded::Owned(v.to_string().into_bytes()))
            }
            Err(ENC_LZF) => {
                let compressed = usize::try_from(self.len()?).map_err(|_| BadData)?;
                let len = usize::try_from(self.len()?).map_err(|_| BadData)?;
                let input = self.take(compressed)?;
                lzf_decompress(input, len).map(Loaded::Owned).ok_or(BadData)
            }
            Err(_) => Err(BadData),
        }
    }

    pub(crate) fn bytes(&mut self) -> Result<Bytes, BadData> {
        Ok(self.string()?.into_bytes())
    }

    fn binary_double(&mut self) -> Result<f64, BadData> {
        Ok(f64::from_le_bytes(
            self.take(8)?.try_into().map_err(|_| BadData)?,
        ))
    }

    /// Redis's `rdbLoadDoubleValue`: a length byte (253 NaN, 254 +inf, 255 -inf) and text.
    fn text_double(&mut self) -> Result<f64, BadData> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = std::str::from_utf8(self.take(usize::from(n))?).map_err(|_| BadData)?;
                text.trim().parse().map_err(|_| BadData)
            }
        }
    }
}

/// The elements of a listpack, checked whole: its header's size, its terminator, every entry
/// inside it.
pub(crate) fn listpack_entries(lp: &[u8]) -> Result<Vec<Bytes>, BadData> {
    if lp.len() < LP_HEADER + 1
        || u32::from_le_bytes(lp[..4].try_into().map_err(|_| BadData)?) as usize != lp.len()
        || lp[lp.len() - 1] != LP_EOF
    {
        return Err(BadData);
    }
    let declared = u16::from_le_bytes([lp[4], lp[5]]);
    let body = &lp[LP_HEADER..lp.len() - 1];
    let mut r = Reader::new(body);
    let mut out = Vec::new();
    while r.at < body.len() {
        let start = r.at;
        let b = r.byte()?;
        let element: Bytes = match b {
            0x00..=0x7f => Bytes::from(b.to_string()),
            0x80..=0xbf => Bytes::copy_from_slice(r.take(usize::from(b & 0x3f))?),
            0xc0..=0xdf => {
                let u = (u16::from(b & 0x1f) << 8) | u16::from(r.byte()?);
                let v = if u >= 1 << 12 {
                    i32::from(u) - (1 << 13)
                } else {
                    i32::from(u)
                };
                Bytes::from(v.to_string())
            }
            0xe0..=0xef => {
                let len = (usize::from(b & 0x0f) << 8) | usize::from(r.byte()?);
                Bytes::copy_from_slice(r.take(len)?)
            }
            0xf0 => {
                let len = u32::from_le_bytes(r.take(4)?.try_into().map_err(|_| BadData)?);
                Bytes::copy_from_slice(r.take(len as usize)?)
            }
            0xf1 => {
                let v = i16::from_le_bytes(r.take(2)?.try_into().map_err(|_| BadData)?);
                Bytes::from(v.to_string())
            }
            0xf2 => {
                let t = r.take(3)?;
                let v = i32::from_le_bytes([0, t[0], t[1], t[2]]) >> 8;
                Bytes::from(v.to_string())
            }
            0xf3 => {
                let v = i32::from_le_bytes(r.take(4)?.try_into().map_err(|_| BadData)?);
                Bytes::from(v.to_string())
            }
            0xf4 => {
                let v = i64::from_le_bytes(r.take(8)?.try_into().map_err(|_| BadData)?);
                Bytes::from(v.to_string())
            }
            _ => return Err(BadData),
        };
        // The back length must say the entry's size.
        let l = r.at - start;
        let (expected, groups) = backlen(l);
        if r.take(groups)? != &expected[..groups] {
            return Err(BadData);
        }
        out.push(element);
    }
    if declared != 65535 && usize::from(declared) != out.len() {
        return Err(BadData);
    }
    Ok(out)
}

/// The members of an intset, checked whole.
fn intset_members(is: &[u8]) -> Result<Vec<i64>, BadData> {
    if is.len() < 8 {
        return Err(BadData);
    }
    let width = u32::from_le_bytes(is[..4].try_into().map_err(|_| BadData)?) as usize;
    let count = u32::from_le_bytes(is[4..8].try_into().map_err(|_| BadData)?) as usize;
    if !matches!(width, 2 | 4 | 8) || count.checked_mul(width).map(|n| n + 8) != Some(is.len()) {
        return Err(BadData);
    }
    Ok(is[8..]
        .chunks_exact(width)
        .map(|c| match width {
            2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
            4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            _ => i64::from_le_bytes(c.try_into().unwrap_or([0; 8])),
        })
        .collect())
}

/// Whether a payload's footer holds for `server` (an RDB version it reads, CRC64), Redis's
/// `verifyDumpPayload`.
pub fn verify(payload: &[u8], server: Version) -> bool {
    if payload.len() < 10 {
        return false;
    }
    let footer = payload.len() - 10;
    let version = u16::from_le_bytes([payload[footer], payload[footer + 1]]);
    let crc = crc64(&payload[..payload.len() - 8]);
    reads_version(server, payload[0], version) && crc.to_le_bytes() == payload[payload.len() - 8..]
}

/// The value of a payload (after [`verify`]) on `server`. As in Redis, the value is read from
/// the whole payload, so a length that runs into the footer reads the footer's bytes.
pub fn load(payload: &[u8], server: Version) -> Result<Value, BadData> {
    let mut r = Reader::new(payload);
    let kind = r.byte()?;
    let value = match kind {
        TYPE_STRING => Value::Str(r.bytes()?),
        TYPE_LIST => {
            let n = r.count()?;
            let mut list = List::new();
            for _ in 0..n {
                list.push_back(&r.bytes()?);
            }
            Value::List(list)
        }
        TYPE_LIST_QUICKLIST_2 => {
            let nodes = r.count()?;
            let mut list = List::new();
            for _ in 0..nodes {
                match r.len()? {
                    CONTAINER_PLAIN => list.push_back(&r.bytes()?),
                    CONTAINER_PACKED => {
                        let lp = r.string()?;
                        list.extend(listpack_entries(lp.as_slice())?);
                    }
                    _ => return Err(BadData),
                }
            }
            Value::List(list)
        }
        TYPE_SET => {
            let n = r.count()?;
            let mut set = super::set::Set::default();
            for _ in 0..n {
                if !set.insert(r.bytes()?) {
                    return Err(BadData);
                }
            }
            Value::Set(set)
        }
        TYPE_SET_INTSET => {
            let is = r.string()?;
            let mut set = super::set::Set::default();
            for v in intset_members(is.as_slice())? {
                set.insert(Bytes::from(v.to_string()));
            }
            Value::Set(set)
        }
        TYPE_HASH => {
            let n = r.count()?;
            let mut hash = Hash::default();
            for _ in 0..n {
                let (f, v) = (r.bytes()?, r.bytes()?);
                if !hash.insert(f, v) {
                    return Err(BadData);
                }
            }
            Value::Hash(hash)
        }
        ht::TYPE_HASH_METADATA | ht::TYPE_HASH_LISTPACK_EX => {
            Value::Hash(ht::load_hash(&mut r, kind)?)
        }
        TYPE_HASH_LISTPACK => {
            let lp = r.string()?;
            let entries = listpack_entries(lp.as_slice())?;
            if entries.len() % 2 != 0 {
                return Err(BadData);
            }
            let mut hash = Hash::default();
            let mut it = entries.into_iter();
            while let (Some(f), Some(v)) = (it.next(), it.next()) {
                if !hash.insert(f, v) {
                    return Err(BadData);
                }
            }
            Value::Hash(hash)
        }
        TYPE_ZSET | TYPE_ZSET_2 => {
            let n = r.count()?;
            let mut zset = ZSet::default();
            for _ in 0..n {
                let member = r.bytes()?;
                let score = if kind == TYPE_ZSET_2 {
                    r.binary_double()?
                } else {
                    r.text_double()?
                };
                if score.is_nan() || !zset.insert(member, score) {
                    return Err(BadData);
                }
            }
            Value::ZSet(Box::new(zset))
        }
        TYPE_ZSET_LISTPACK => {
            let lp = r.string()?;
            let entries = listpack_entries(lp.as_slice())?;
            if entries.len() % 2 != 0 {
                return Err(BadData);
            }
            let mut zset = ZSet::default();
            let mut it = entries.into_iter();
            while let (Some(member), Some(score)) = (it.next(), it.next()) {
                let score = std::str::from_utf8(&score)
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|s| !s.is_nan())
                    .ok_or(BadData)?;
                if !zset.insert(member, score) {
                    return Err(BadData);
                }
            }
            Value::ZSet(Box::new(zset))
        }
        // Redis 7.0 knows no type past its own.
        TYPE_STREAM_LISTPACKS_3 if server == Version::V7_0 => return Err(BadData),
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 | TYPE_STREAM_LISTPACKS_3 => {
            Value::Stream(Box::new(Stream::load_rdb(&mut r, StreamLayout::of(kind))?))
        }
        _ => return Err(BadData),
    };
    let empty = match &value {
        Value::Str(_) | Value::Stream(_) => false,
        Value::List(l) => l.is_empty(),
        Value::Set(s) => s.is_empty(),
        Value::Hash(h) => h.is_empty(),
        Value::ZSet(z) => z.is_empty(),
    };
    if empty {
        return Err(BadData);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_is_jones_reflected() {
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn lzf_round_trips() {
        let input =
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabcabcabcabc".repeat(9);
        let packed = lzf_compress(&input, input.len() - 4).expect("it compresses");
        assert!(packed.len() < input.len());
        assert_eq!(
            lzf_decompress(&packed, input.len()).as_deref(),
            Some(&input[..])
        );
        assert_eq!(lzf_decompress(&packed, input.len() + 1), None);
        // A valid stream that makes one byte more than Redis's largest string: a literal zero,
        // then back references of the longest run (264 bytes, 3 input bytes each). It is
        // refused before anything is made, however little input claims it.
        let mut bomb = vec![0, 0];
        let (full, rest) = (MAX_STRING / 264, MAX_STRING % 264);
        for _ in 0..full {
            bomb.extend_from_slice(&[0xe0, (264 - 9) as u8, 0]);
        }
        bomb.extend_from_slice(&[0xe0, (rest - 9) as u8, 0]);
        assert_eq!(lzf_decompress(&bomb, MAX_STRING + 1), None);
    }

    #[test]
    fn listpack_entries_read_what_push_writes() {
        let elements: Vec<Bytes> = [
            "0",
            "127",
            "128",
            "-1",
            "-4096",
            "4095",
            "4096",
            "-32768",
            "32767",
            "40000",
            "-8388608",
            "8388608",
            "2147483647",
            "-2147483649",
            "9223372036854775807",
            "",
            "a",
            "01",
            "-0",
            "+1",
        ]
        .iter()
        .map(|s| Bytes::from_static(s.as_bytes()))
        .chain([Bytes::from(vec![b'x'; 100]), Bytes::from(vec![b'y'; 5000])])
        .collect();
        let mut lp = Listpack::new();
        for e in &elements {
            lp.push(e);
        }
        assert_eq!(listpack_entries(&lp.finish()), Ok(elements));
    }
}
