//! A hash value: its fields packed into one allocation while it is small, as Redis's listpack
//! keeps them, and fields and values of their own with an index past the listpack limits.
//!
//! It sits beside the other collections (`list.rs`, `set.rs`, `zset.rs`) rather than in the
//! keyspace (`db.rs`), which stores it as one [`Value`](super::db::Value) among others. Its
//! index hashes with the keyspace's fixed hash, so two runs of one case behave identically.

use super::db::hash_key;
use bytes::Bytes;
use hashbrown::HashTable;

/// Past this many fields, or a field or value longer than [`HASH_MAX_LISTPACK_VALUE`], Redis
/// converts a hash from its compact listpack encoding to a hash table (Redis 7.0.15's
/// `hash-max-listpack-entries`, as `CONFIG GET` shows it). Below both, the fake keeps a hash packed
/// in one allocation, as a listpack is, and a field is found by a linear scan. (`OBJECT ENCODING`
/// follows the configured limits and the value's history, in `cmd/server.rs`.)
pub const HASH_MAX_LISTPACK_ENTRIES: usize = 512;
/// See [`HASH_MAX_LISTPACK_ENTRIES`].
pub const HASH_MAX_LISTPACK_VALUE: usize = 64;

/// A field of a hash and its value, as the hash gives them out.
pub type FieldValue<'a> = (&'a [u8], &'a [u8]);

/// A hash value: while small, its fields in insertion order packed into one allocation (as Redis's
/// listpack keeps them); past the listpack limits, fields and values of their own with an index.
/// A large hash still iterates in a fixed order (the order of its vector); Redis leaves that
/// order unspecified.
/// The second part is the fields' TTLs (`engine/hash_ttl.rs`): `None`, and never looked at,
/// until a field gets one.
#[derive(Clone, Debug)]
pub struct Hash(HashRepr, pub(super) Option<Box<super::hash_ttl::FieldTtls>>);

#[derive(Clone, Debug)]
enum HashRepr {
    /// A count (`u16`, little-endian), then each field and value as a length byte and its bytes;
    /// empty (no allocation) for a hash of no field. Every field and value is at most
    /// [`HASH_MAX_LISTPACK_VALUE`] bytes, and there are at most [`HASH_MAX_LISTPACK_ENTRIES`].
    Packed(Box<[u8]>),
    /// Boxed, to keep a value (and so every slot of the keyspace) small.
    Table(Box<HashTableRepr>),
}

#[derive(Clone, Debug)]
struct HashTableRepr {
    fields: Vec<(Bytes, Bytes)>,
    index: HashTable<usize>,
}

impl Default for Hash {
    fn default() -> Hash {
        Hash(HashRepr::Packed(Box::default()), None)
    }
}

impl PartialEq for Hash {
    fn eq(&self, other: &Hash) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

/// The fields of a packed hash, in order: (offset of the entry, field, value).
struct PackedIter<'a> {
    packed: &'a [u8],
    at: usize,
}

impl<'a> Iterator for PackedIter<'a> {
    type Item = (usize, &'a [u8], &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let p = self.packed;
        let start = self.at;
        if start >= p.len() {
            return None;
        }
        let flen = usize::from(p[start]);
        let field = &p[start + 1..start + 1 + flen];
        let vat = start + 1 + flen;
        let vlen = usize::from(p[vat]);
        let value = &p[vat + 1..vat + 1 + vlen];
        self.at = vat + 1 + vlen;
        Some((start, field, value))
    }
}

/// Bytes a packed hash's count takes.
const PACKED_HEADER: usize = 2;

fn packed_iter(packed: &[u8]) -> PackedIter<'_> {
    PackedIter {
        packed,
        at: PACKED_HEADER,
    }
}

fn packed_len(packed: &[u8]) -> usize {
    match packed {
        [lo, hi, ..] => usize::from(u16::from_le_bytes([*lo, *hi])),
        _ => 0,
    }
}

/// A packed hash with `count` fields, of `head` and `tail` of an old one around one entry of
/// `field` and `value` (no entry when `None`).
fn repack(count: usize, head: &[u8], entry: Option<(&[u8], &[u8])>, tail: &[u8]) -> Box<[u8]> {
    if count == 0 {
        return Box::default();
    }
    let extra = entry.map_or(0, |(f, v)| 2 + f.len() + v.len());
    let mut out = Vec::with_capacity(PACKED_HEADER + head.len() + extra + tail.len());
    out.extend_from_slice(&(count as u16).to_le_bytes());
    out.extend_from_slice(head);
    if let Some((f, v)) = entry {
        out.push(f.len() as u8);
        out.extend_from_slice(f);
        out.push(v.len() as u8);
        out.extend_from_slice(v);
    }
    out.extend_from_slice(tail);
    out.into_boxed_slice()
}

/// Whether `bytes` may sit in a packed hash.
fn fits_packed(bytes: &[u8]) -> bool {
    bytes.len() <= HASH_MAX_LISTPACK_VALUE
}

impl Hash {
    /// A hash with these fields, in order (later duplicates overwrite earlier ones).
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Bytes, Bytes)>) -> Hash {
        let mut h = Hash::default();
        for (f, v) in pairs {
            h.insert(f, v);
        }
        h
    }

    /// A hash of one field, as `HSET` or `HINCRBY` on a missing key makes (the lock's hash):
    /// while it is small, one allocation and one copy of each.
    pub fn single(field: &[u8], value: &[u8]) -> Hash {
        if fits_packed(field) && fits_packed(value) {
            return Hash(
                HashRepr::Packed(repack(1, &[], Some((field, value)), &[])),
                None,
            );
        }
        let mut hash = Hash::default();
        hash.insert(Bytes::copy_from_slice(field), Bytes::copy_from_slice(value));
        hash
    }

    /// The number of fields.
    pub fn len(&self) -> usize {
        match &self.0 {
            HashRepr::Packed(p) => packed_len(p),
            HashRepr::Table(t) => t.fields.len(),
        }
    }

    /// Whether the hash has no field (Redis deletes such a key).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the hash uses the hash-table encoding (`OBJECT ENCODING` would say `hashtable`).
    pub fn is_hashtable(&self) -> bool {
        matches!(self.0, HashRepr::Table(_))
    }

    /// Fields and values in iteration order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let (packed, table) = match &self.0 {
            HashRepr::Packed(p) => (Some(packed_iter(p)), None),
            HashRepr::Table(t) => (None, Some(t.fields.iter())),
        };
        packed
            .into_iter()
            .flatten()
            .map(|(_, f, v)| (f, v))
            .chain(table.into_iter().flatten().map(|(f, v)| (&f[..], &v[..])))
    }

    /// The field and value at `position` of the iteration order (`position < len`): a random
    /// draw's pick, a walk of the fields while the hash is packed (as in a listpack).
    pub fn at(&self, position: usize) -> Option<(&[u8], &[u8])> {
        match &self.0 {
            HashRepr::Packed(_) => self.iter().nth(position),
            HashRepr::Table(t) => t.fields.get(position).map(|(f, v)| (&f[..], &v[..])),
        }
    }

    /// One step of `HSCAN` from `cursor`: the fields of the next `count` positions and the cursor
    /// to resume at (0 once done). A listpack hash comes whole with cursor 0, as Redis sends it.
    ///
    /// A hash-table hash is walked from its last position down, and the cursor is the position
    /// below which nothing was returned yet. A removal moves only the last field into the hole
    /// (an unreturned field stays below the cursor, a returned one may come twice), and an insert
    /// appends, so every field present for the whole scan is returned, as SCAN's contract asks,
    /// and a call costs in proportion to `count`.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<FieldValue<'_>>) {
        let HashRepr::Table(t) = &self.0 else {
            return (0, self.iter().collect());
        };
        let len = t.fields.len();
        let top = match usize::try_from(cursor) {
            Ok(0) => len,
            Ok(c) => c.min(len),
            Err(_) => len,
        };
        let from = top.saturating_sub(count);
        let page = t.fields[from..top]
            .iter()
            .map(|(f, v)| (&f[..], &v[..]))
            .collect();
        (from as u64, page)
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.0 {
            HashRepr::Packed(p) => packed_iter(p).find(|(_, f, _)| *f == field).map(|e| e.2),
            HashRepr::Table(t) => t.position(field).map(|i| &t.fields[i].1[..]),
        }
    }

    /// Sets `field` to `value`: whether the field is new.
    pub fn insert(&mut self, field: Bytes, value: Bytes) -> bool {
        match &mut self.0 {
            HashRepr::Packed(p) => {
                if fits_packed(&field)
                    && fits_packed(&value)
                    && let Some(new) = Self::packed_put(p, &field, &value)
                {
                    return new;
                }
                self.convert();
                self.insert(field, value)
            }
            HashRepr::Table(t) => t.insert(field, value),
        }
    }

    /// Sets `field` to `value`, copying the field's bytes only when it is new.
    pub fn set(&mut self, field: &[u8], value: Bytes) {
        match &mut self.0 {
            HashRepr::Packed(p) if fits_packed(field) && fits_packed(&value) => {
                if Self::packed_put(p, field, &value).is_none() {
                    self.convert();
                    self.set(field, value);
                }
            }
            HashRepr::Packed(_) => {
                self.convert();
                self.set(field, value);
            }
            HashRepr::Table(t) => match t.position(field) {
                Some(i) => t.fields[i].1 = value,
                None => {
                    t.insert(Bytes::copy_from_slice(field), value);
                }
            },
        }
    }

    /// Sets `field` to `value` in a packed hash (both fit): whether the field is new, or `None`
    /// when a new field would pass the count limit (nothing changed then).
    fn packed_put(p: &mut Box<[u8]>, field: &[u8], value: &[u8]) -> Option<bool> {
        let count = packed_len(p);
        match packed_iter(p).find(|(_, f, _)| *f == field) {
            Some((start, _, old)) => {
                let vat = start + 1 + field.len();
                if old.len() == value.len() {
                    p[vat + 1..vat + 1 + value.len()].copy_from_slice(value);
                } else {
                    let end = vat + 1 + old.len();
                    *p = repack(
                        count,
                        &p[PACKED_HEADER..start],
                        Some((field, value)),
                        &p[end..],
                    );
                }
                Some(false)
            }
            None if count >= HASH_MAX_LISTPACK_ENTRIES => None,
            None => {
                let body = p.get(PACKED_HEADER..).unwrap_or_default();
                *p = repack(count + 1, body, Some((field, value)), &[]);
                Some(true)
            }
        }
    }

    /// Removes `field`: whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        if self.1.is_some() {
            self.forget_field_ttl(field);
        }
        match &mut self.0 {
            HashRepr::Packed(p) => {
                // Listpack: keep insertion order.
                let Some((start, _, value)) = packed_iter(p).find(|(_, f, _)| *f == field) else {
                    return false;
                };
                let end = start + 2 + field.len() + value.len();
                *p = repack(packed_len(p) - 1, &p[PACKED_HEADER..start], None, &p[end..]);
                true
            }
            HashRepr::Table(t) => t.remove(field),
        }
    }

    /// Converts a packed hash to the hash-table form, for good (as Redis never converts back).
    fn convert(&mut self) {
        let fields: Vec<(Bytes, Bytes)> = self
            .iter()
            .map(|(f, v)| (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v)))
            .collect();
        let mut index = HashTable::with_capacity(fields.len());
        for (i, (f, _)) in fields.iter().enumerate() {
            index.insert_unique(hash_key(f), i, |&j| hash_key(&fields[j].0));
        }
        self.0 = HashRepr::Table(Box::new(HashTableRepr { fields, index }));
    }
}

impl HashTableRepr {
    fn position(&self, field: &[u8]) -> Option<usize> {
        self.index
            .find(hash_key(field), |&i| self.fields[i].0 == field)
            .copied()
    }

    fn insert(&mut self, field: Bytes, value: Bytes) -> bool {
        match self.position(&field) {
            Some(i) => {
                self.fields[i].1 = value;
                false
            }
            None => {
                let i = self.fields.len();
                self.fields.push((field, value));
                let HashTableRepr { fields, index } = self;
                index.insert_unique(hash_key(&fields[i].0), i, |&j| hash_key(&fields[j].0));
                true
            }
        }
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        let Some(i) = self.position(field) else {
            return false;
        };
        let HashTableRepr { fields, index } = self;
        // Order is unspecified, so the last field moves into the hole, and only the two index
        // entries concerned change (the scan's cursor relies on this move).
        if let Ok(entry) = index.find_entry(hash_key(field), |&j| j == i) {
            entry.remove();
        }
        let last = fields.len() - 1;
        fields.swap_remove(i);
        if i < last {
            let moved = hash_key(&fields[i].0);
            if let Some(slot) = index.find_mut(moved, |&j| j == last) {
                *slot = i;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn field(i: usize) -> Bytes {
        Bytes::from(format!("f{i}"))
    }

    #[test]
    fn a_listpack_hash_comes_whole_with_cursor_0() {
        let h = Hash::from_pairs((0..10).map(|i| (field(i), field(i))));
        let (next, page) = h.scan(0, 3);
        assert_eq!((next, page.len()), (0, 10));
    }

    #[test]
    fn a_hash_table_pages_by_count_and_returns_every_field_present_throughout() {
        let mut h = Hash::from_pairs((0..600).map(|i| (field(i), field(i))));
        assert!(h.is_hashtable());
        let mut seen = BTreeSet::new();
        let (mut cursor, mut steps, mut added) = (0, 0, 600);
        loop {
            let (next, page) = h.scan(cursor, 7);
            assert!(page.len() <= 7);
            seen.extend(page.iter().map(|(f, _)| Bytes::copy_from_slice(f)));
            steps += 1;
            // Between steps, fields below 100 leave (in turn) and new ones arrive.
            h.remove(&field(steps));
            h.insert(field(added), field(added));
            added += 1;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert!(steps > 10, "{steps} steps");
        for i in 100..600 {
            assert!(seen.contains(&field(i)), "f{i} was never returned");
        }
    }

    #[test]
    fn small_hashes_keep_insertion_order_and_big_ones_convert() {
        let mut h = Hash::default();
        for f in ["z", "a", "m"] {
            h.insert(b(f), b("1"));
        }
        let order: Vec<&[u8]> = h.iter().map(|(f, _)| f).collect();
        assert_eq!(order, [b"z", b"a", b"m"]);
        h.remove(b"a");
        let order: Vec<&[u8]> = h.iter().map(|(f, _)| f).collect();
        assert_eq!(order, [b"z", b"m"]);
        for i in 0..600 {
            h.insert(Bytes::from(format!("f{i}")), b("v"));
        }
        assert!(h.is_hashtable());
        assert_eq!(h.len(), 602);
        for i in 0..600 {
            assert_eq!(h.get(format!("f{i}").as_bytes()), Some(&b"v"[..]));
        }
        assert!(h.remove(b"f7"));
        assert!(h.get(b"f7").is_none());
        assert_eq!(h.get(b"f599"), Some(&b"v"[..]));
        // Every field is still found through the index after removals anywhere.
        for i in (0..600).step_by(3) {
            assert!(h.remove(format!("f{i}").as_bytes()) || i == 7);
        }
        for i in 0..600 {
            let there = i % 3 != 0 && i != 7;
            assert_eq!(h.get(format!("f{i}").as_bytes()).is_some(), there, "f{i}");
        }
    }
}
