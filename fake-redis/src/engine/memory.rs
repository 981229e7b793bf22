//! The fake's memory estimate: what Redis 7.0 would allocate for a key and its value.
//!
//! The fake stores every value in its own Rust structures, so its process's memory says nothing
//! about Redis's. `MEMORY USAGE`, `INFO`'s `used_memory` and the eviction that `maxmemory` asks
//! for (`engine/evict.rs`) read this estimate instead: Redis's own sum (its `objectComputeSize`)
//! of the value as Redis would encode it (`OBJECT ENCODING`'s answer: `int`, `embstr` or `raw`
//! strings; listpack, intset or hashtable collections; quicklist lists; streams roughly), plus
//! what each key costs around its value (its dict entry and its key's sds), rounded up to
//! jemalloc's size classes. Large collections are sampled, as Redis samples them: the first few
//! elements' average times the count, so that measuring a key costs the same whatever its size.
//!
//! Each database keeps a running total of its keys' estimates (`engine/db.rs`): a key is measured
//! when it is written, never the whole keyspace, and the tables' own overhead (buckets, the
//! expires table's entries) comes from their counts. `used_memory` is that total plus the
//! memory of a server that has just started.

use super::db::{Entry, Value};
use super::server_state::Encodings;
use super::stream::StreamId;

/// The bits of [`Entry::encoding_marks`].
pub(crate) mod marks {
    /// A collection converted to its large encoding (`hashtable`, `skiplist`).
    pub const CONVERTED: u8 = 1;
    /// A string built in place (`APPEND`, `SETRANGE`): Redis keeps it `raw` whatever its size.
    pub const RAW: u8 = 2;
    /// A string Redis made without trying the integer encoding (`INCRBYFLOAT`'s result):
    /// `embstr` or `raw` by its length, even when it reads as an integer. On a set: a listpack
    /// (Redis 7.2 and later), which stays one when only integers are left.
    pub const NOT_INT: u8 = 4;
}

/// Redis's `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`.
const EMBSTR_SIZE_LIMIT: usize = 44;
/// Redis's `OBJ_SHARED_INTEGERS`: integers below it are one shared object.
pub(crate) const SHARED_INTEGERS: i64 = 10_000;
/// Redis's `OBJ_SHARED_REFCOUNT`.
pub(crate) const SHARED_REFCOUNT: i64 = i32::MAX as i64;

/// A string's value as Redis's `tryObjectEncoding` reads it: an integer when it is one (at most
/// 20 bytes, canonical).
pub(crate) fn as_int(s: &[u8]) -> Option<i64> {
    if s.len() > 20 {
        return None;
    }
    crate::resp::number::parse_i64(s)
}

/// The name `OBJECT ENCODING` gives the value of `entry`.
pub(crate) fn encoding(entry: &Entry, e: &Encodings) -> &'static str {
    let converted = entry.encoding_marks() & marks::CONVERTED != 0;
    match &entry.value {
        Value::Str(s) => {
            // HyperLogLogs are marked raw by the commands that make or edit them
            // (`hyperloglog::store`, `hyperloglog::read_unshared`), not by their bytes.
            if entry.encoding_marks() & marks::RAW != 0 {
                "raw"
            } else if entry.encoding_marks() & marks::NOT_INT == 0 && as_int(s).is_some() {
                "int"
            } else if s.len() <= EMBSTR_SIZE_LIMIT {
                "embstr"
            } else {
                "raw"
            }
        }
        Value::List(l) if e.list_listpack && l.is_one_chunk() && list_fits(l, e.list_size) => {
            "listpack"
        }
        Value::List(_) => "quicklist",
        Value::Hash(h) => {
            let big = converted
                || h.len() > e.hash_entries
                || h.iter()
                    .any(|(f, v)| f.len() > e.hash_value || v.len() > e.hash_value);
            match (big, h.had_field_ttls()) {
                (true, _) => "hashtable",
                (false, true) => "listpackex",
                (false, false) => "listpack",
            }
        }
        Value::Set(s) => {
            if converted {
                "hashtable"
            } else if entry.encoding_marks() & marks::NOT_INT == 0
                && s.len() <= e.set_intset_entries
                && s.iter().all(|m| as_int(m).is_some())
            {
                "intset"
            } else if e.set_listpack
                && s.len() <= e.set_listpack_entries
                && s.iter().all(|m| m.len() <= e.set_listpack_value)
            {
                "listpack"
            } else {
                "hashtable"
            }
        }
        Value::ZSet(z) => {
            let big = converted
                || z.len() > e.zset_entries
                || z.iter().any(|(_, m)| m.len() > e.zset_value);
            if big { "skiplist" } else { "listpack" }
        }
        Value::Stream(_) => "stream",
    }
}

/// Whether a list of one chunk fits in one listpack of Redis 7.2's `list-max-listpack-size`:
/// at most that many elements (and 8 KB) when positive, else at most 4 KB times 2 to the power
/// of `-size - 1` (up to 64 KB).
fn list_fits(l: &crate::engine::list::List, size: i64) -> bool {
    let bytes = 6 + l.iter().map(listpack_entry).sum::<usize>() + 1;
    if size >= 0 {
        l.len() as i64 <= size && bytes <= 8192
    } else {
        bytes <= 4096 << (-size - 1).min(4)
    }
}

/// The size jemalloc (Redis's allocator) gives a request of `n` bytes: its size classes are
/// 8, then multiples of 16 up to 128, then four classes per doubling.
pub(crate) fn jemalloc(n: usize) -> usize {
    if n <= 8 {
        return 8;
    }
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    let lg = usize::BITS - (n - 1).leading_zeros() - 1;
    let delta = 1usize << (lg - 2);
    n.div_ceil(delta) * delta
}

/// The allocation of an sds string of `len` bytes: its header (by Redis's `sdsReqType`), the
/// bytes and the NUL.
pub(crate) fn sds(len: usize) -> usize {
    let header = match len {
        0..32 => 1,
        32..256 => 3,
        256..65_536 => 5,
        _ => 9,
    };
    jemalloc(header + len + 1)
}

/// `sizeof(robj)`.
const ROBJ: usize = 16;
/// `sizeof(dictEntry)`.
pub(crate) const DICT_ENTRY: usize = 24;
/// `sizeof(dict)`.
pub(crate) const DICT: usize = 56;

/// The bytes one element takes in a listpack: its encoding, its data and its back length.
pub(crate) fn listpack_entry(e: &[u8]) -> usize {
    let body = match as_int(e) {
        Some(n) if (0..=127).contains(&n) => 1,
        Some(n) if (-4096..4096).contains(&n) => 2,
        Some(n) if i16::try_from(n).is_ok() => 3,
        Some(n) if (-(1 << 23)..(1 << 23)).contains(&n) => 4,
        Some(n) if i32::try_from(n).is_ok() => 5,
        Some(_) => 9,
        None if e.len() < 64 => 1 + e.len(),
        None if e.len() < 4096 => 2 + e.len(),
        None => 5 + e.len(),
    };
    let back = match body {
        0..128 => 1,
        128..16_384 => 2,
        16_384..2_097_152 => 3,
        2_097_152..268_435_456 => 4,
        _ => 5,
    };
    body + back
}

/// A listpack of these elements: its header, entries and end byte.
fn listpack<'a>(elements: impl Iterator<Item = &'a [u8]>) -> usize {
    jemalloc(6 + elements.map(listpack_entry).sum::<usize>() + 1)
}

/// The slots of a dict of `n` entries (a power of two, at least 4).
pub(crate) fn dict_slots(n: usize) -> usize {
    n.next_power_of_two().max(4)
}

/// A score as a listpack holds it: Redis's `d2string` (an integer when it is one).
fn score_text(score: f64) -> Vec<u8> {
    if score.fract() == 0.0 && score.abs() < 1e17 {
        format!("{}", score as i64).into_bytes()
    } else {
        // `%.17g`: Rust's shortest round-trip text is at most as long, close enough for a size.
        format!("{score}").into_bytes()
    }
}

/// How many elements of a list or entries of a stream stand for one sampled node of Redis's.
const ELEMENTS_PER_NODE: usize = 16;

/// `used_memory` of a server that holds no key (Redis 7.0.15's `startup.allocated`, near what
/// its `INFO` shows before any write).
pub(crate) const STARTUP: u64 = 876_096;

/// What `MEMORY USAGE` says of a key: its value ([`value_size`], five samples), its key's sds
/// and its dict entry. The keyspace's running total sums this over its keys.
pub(crate) fn key_size(key_len: usize, entry: &Entry, e: &Encodings) -> usize {
    value_size(entry, e, 5) + sds(key_len) + DICT_ENTRY
}

/// Redis's sampled average: the first `samples` elements' sizes (all of them when 0), times
/// the count.
fn sampled(sizes: impl Iterator<Item = usize>, len: usize, samples: usize) -> usize {
    let take = if samples == 0 { len } else { samples.min(len) };
    if take == 0 {
        return 0;
    }
    let total: usize = sizes.take(take).sum();
    // Redis's `(double)elesize / samples * count`, truncated.
    (total as f64 / take as f64 * len as f64) as usize
}

/// Redis's `objectComputeSize` for `value`, encoded as `OBJECT ENCODING` says.
pub(crate) fn value_size(entry: &Entry, e: &Encodings, samples: usize) -> usize {
    let encoding = encoding(entry, e);
    match &entry.value {
        Value::Str(s) => match encoding {
            "int" => ROBJ,
            "embstr" => jemalloc(ROBJ + 3 + s.len() + 1),
            _ => ROBJ + sds(s.len()),
        },
        Value::List(l) => {
            // One quicklist node per 8 kB of listpack (`list-max-listpack-size -2`). Redis
            // samples whole nodes; this samples elements, as many as a few small nodes hold.
            let bytes = sampled(
                l.iter().map(listpack_entry),
                l.len(),
                samples * ELEMENTS_PER_NODE,
            );
            let nodes = bytes.div_ceil(8192).max(1);
            ROBJ + 40 + nodes * (40 + jemalloc(6 + bytes / nodes + 1))
        }
        Value::Hash(h) => {
            if encoding == "listpack" {
                ROBJ + listpack(h.iter().flat_map(|(f, v)| [f, v]))
            } else if encoding == "listpackex" {
                // Each field's deadline is a third entry (about 9 bytes as an integer).
                ROBJ + listpack(h.iter().flat_map(|(f, v)| [f, v])) + 9 * h.len()
            } else {
                let each = h
                    .iter()
                    .map(|(f, v)| DICT_ENTRY + sds(f.len()) + sds(v.len()));
                ROBJ + DICT + 8 * dict_slots(h.len()) + sampled(each, h.len(), samples)
            }
        }
        Value::Set(set) => {
            if encoding == "listpack" {
                ROBJ + listpack(set.iter().map(|m| &m[..]))
            } else if encoding == "intset" {
                let width = set
                    .iter()
                    .filter_map(|m| as_int(m))
                    .map(|n| {
                        if i16::try_from(n).is_ok() {
                            2
                        } else if i32::try_from(n).is_ok() {
                            4
                        } else {
                            8
                        }
                    })
                    .max()
                    .unwrap_or(2);
                ROBJ + jemalloc(8 + width * set.len())
            } else {
                let each = set.iter().map(|m| DICT_ENTRY + sds(m.len()));
                ROBJ + DICT + 8 * dict_slots(set.len()) + sampled(each, set.len(), samples)
            }
        }
        Value::ZSet(z) => {
            if encoding == "listpack" {
                let texts: Vec<(Vec<u8>, &[u8])> =
                    z.iter().map(|(s, m)| (score_text(s), &m[..])).collect();
                ROBJ + listpack(texts.iter().flat_map(|(s, m)| [*m, &s[..]]))
            } else {
                // The zset, its skiplist and dict, the skiplist's 32-level header, and per
                // member its sds and a node of one level (the most likely).
                let each = z.iter().map(|(_, m)| sds(m.len()) + jemalloc(24 + 16));
                ROBJ + 16
                    + 32
                    + DICT
                    + 8 * dict_slots(z.len())
                    + jemalloc(24 + 32 * 16)
                    + sampled(each, z.len(), samples)
            }
        }
        Value::Stream(stream) => {
            // An estimate, not Redis's sum: the stream's struct, its radix tree's nodes and one
            // listpack per node holding every entry's fields.
            // Its first entries' average, times its length (all of them when `samples` is 0).
            let take = samples * ELEMENTS_PER_NODE;
            let entries = stream.range(StreamId::MIN, StreamId::MAX, false, take);
            let each = entries
                .iter()
                .map(|(_, fields)| 3 + fields.iter().map(|f| listpack_entry(f)).sum::<usize>());
            let len = usize::try_from(stream.len()).unwrap_or(usize::MAX);
            let bytes = sampled(each, len, take);
            let nodes = stream.node_count().max(1);
            ROBJ + 64 + stream.radix_tree_nodes() * 48 + nodes * jemalloc(6 + bytes / nodes + 1)
        }
    }
}
