//! A list value: its elements packed into chunks of about 8 KB, as Redis's quicklist packs them
//! into listpack nodes (`list-max-listpack-size -2`).
//!
//! A chunk is one byte buffer: a count (`u16`, little-endian), then each element as its length (a
//! LEB128 varint), its bytes, and its length again with the varint's bytes reversed, so that the
//! chunk can be walked from either end (a listpack's `backlen` does the same). An element of up to
//! 127 bytes costs its length plus 2, where a `Bytes` of its own cost about 100 bytes.
//!
//! A list of one chunk (every small list) is that chunk alone, one allocation; a longer one is a
//! deque of chunks. Elements are copied in (never a handle on the request's buffer, which would
//! keep it alive) and copied out ([`List::pop_front`] hands out a `Bytes`, reads hand out
//! `&[u8]`).
//!
//! Costs, as in Redis: a push or pop at either end moves at most one chunk's bytes; an index is
//! found by walking chunk counts from the nearer end, then elements within the chunk (at most one
//! chunk's worth), so `LINDEX`, `LSET` and `LRANGE` cost in chunks plus what they return. A chunk
//! that grows past the limit (an insertion or a replacement in its middle) is split in two; chunks
//! emptied are dropped, and after a removal in the middle (`LREM`) neighbours that fit in one
//! chunk are merged.

use bytes::Bytes;
use std::collections::VecDeque;
use std::fmt;

/// A chunk takes a new element while it stays within this many bytes (its count included); an
/// element too big for that gets a chunk of its own.
const CHUNK_BYTES: usize = 8192;

/// The chunk's count, before its elements.
const HEADER: usize = 2;

/// A list of byte strings (see the module docs).
#[derive(Clone, Default)]
pub struct List {
    /// The number of elements, in all chunks.
    len: usize,
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    /// The whole list in one chunk; empty (no allocation, no count) for an empty list.
    One(Chunk),
    /// Chunks, none empty (one only while it is more than half the limit, see
    /// [`List::settle`]). Boxed, so that a list stays the size of a `VecDeque` (and so every
    /// slot of the keyspace small): unboxed, its deque beside the length would not fit.
    #[allow(clippy::box_collection)]
    Many(Box<VecDeque<Chunk>>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::One(Chunk::default())
    }
}

/// The bytes of a chunk: its count, then its elements (see the module docs). Empty only for an
/// empty list's one chunk.
#[derive(Clone, Default)]
struct Chunk(Vec<u8>);

/// The bytes of `n` as a LEB128 varint.
fn varint_len(mut n: usize) -> usize {
    let mut k = 1;
    while n >= 0x80 {
        n >>= 7;
        k += 1;
    }
    k
}

/// The bytes an element takes in a chunk.
fn encoded_len(e: &[u8]) -> usize {
    e.len() + 2 * varint_len(e.len())
}

/// Writes `n` as a LEB128 varint into `out`, which is exactly its size.
fn put_varint(out: &mut [u8], mut n: usize) {
    let last = out.len() - 1;
    for (i, b) in out.iter_mut().enumerate() {
        *b = (n & 0x7f) as u8 | if i < last { 0x80 } else { 0 };
        n >>= 7;
    }
}

/// Writes element `e` into `out`, which is exactly [`encoded_len`] bytes.
fn put_element(out: &mut [u8], e: &[u8]) {
    let k = varint_len(e.len());
    put_varint(&mut out[..k], e.len());
    out[k..k + e.len()].copy_from_slice(e);
    let tail = &mut out[k + e.len()..];
    put_varint(tail, e.len());
    tail.reverse();
}

impl Chunk {
    /// An empty chunk (its count 0) with room for `capacity` bytes.
    fn with_capacity(capacity: usize) -> Chunk {
        let mut bytes = Vec::with_capacity(capacity.max(HEADER));
        bytes.extend_from_slice(&[0; HEADER]);
        Chunk(bytes)
    }

    /// The number of elements.
    fn count(&self) -> usize {
        match self.0.get(..HEADER) {
            Some(h) => usize::from(u16::from_le_bytes([h[0], h[1]])),
            None => 0,
        }
    }

    fn set_count(&mut self, n: usize) {
        // At most 4,096: 8 KB of two-byte empty elements, one more, then the split.
        let n = u16::try_from(n).expect("a chunk holds at most 4,096 elements");
        self.0[..HEADER].copy_from_slice(&n.to_le_bytes());
    }

    /// The element at byte offset `at` and the offset of the next one.
    fn element(&self, at: usize) -> (&[u8], usize) {
        let (mut n, mut shift, mut i) = (0, 0, at);
        loop {
            let b = self.0[i];
            n |= usize::from(b & 0x7f) << shift;
            i += 1;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let k = i - at;
        (&self.0[i..i + n], i + n + k)
    }

    /// The element that ends at byte offset `end` and the offset where it starts.
    fn element_before(&self, end: usize) -> (&[u8], usize) {
        let (mut n, mut shift, mut i) = (0, 0, end);
        loop {
            i -= 1;
            let b = self.0[i];
            n |= usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let k = end - i;
        let start = i - n;
        (&self.0[start..i], start - k)
    }

    /// The byte offset of element `i` (`count` for the chunk's end), walked from the nearer end.
    fn offset_of(&self, i: usize) -> usize {
        let count = self.count();
        if i <= count / 2 {
            (0..i).fold(HEADER, |at, _| self.element(at).1)
        } else {
            (i..count).fold(self.0.len(), |end, _| self.element_before(end).1)
        }
    }

    /// Inserts `e` at byte offset `at` (an element's start, or the chunk's end).
    fn insert_at(&mut self, at: usize, e: &[u8]) {
        if self.0.is_empty() {
            self.0.extend_from_slice(&[0; HEADER]);
        }
        let at = at.max(HEADER);
        let n = encoded_len(e);
        let old = self.0.len();
        self.0.resize(old + n, 0);
        self.0.copy_within(at..old, at + n);
        put_element(&mut self.0[at..at + n], e);
        self.set_count(self.count() + 1);
    }

    /// Removes the element at byte offset `at`, handing out a copy.
    fn remove_at(&mut self, at: usize) -> Bytes {
        let (e, next) = self.element(at);
        let e = Bytes::copy_from_slice(e);
        self.0.drain(at..next);
        self.set_count(self.count() - 1);
        e
    }

    /// Replaces the element at byte offset `at` with `e`.
    fn replace_at(&mut self, at: usize, e: &[u8]) {
        let next = self.element(at).1;
        let mut encoded = vec![0; encoded_len(e)];
        put_element(&mut encoded, e);
        self.0.splice(at..next, encoded);
    }

    /// Splits a chunk of two elements or more in two near its middle byte; the second half.
    fn split(&mut self) -> Chunk {
        let count = self.count();
        let middle = self.0.len() / 2;
        let (mut at, mut kept) = (HEADER, 0);
        while kept < count - 1 && (kept == 0 || at < middle) {
            at = self.element(at).1;
            kept += 1;
        }
        let mut rest = Chunk::with_capacity(HEADER + self.0.len() - at);
        rest.0.extend_from_slice(&self.0[at..]);
        rest.set_count(count - kept);
        self.0.truncate(at);
        self.0.shrink_to(CHUNK_BYTES);
        self.set_count(kept);
        rest
    }
}

impl List {
    /// An empty list.
    pub fn new() -> List {
        List::default()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is one chunk (every list of up to one chunk's bytes, and one that
    /// shrank back to half of that): Redis would hold it in one listpack.
    pub fn is_one_chunk(&self) -> bool {
        matches!(self.repr, Repr::One(_))
    }

    /// Whether the list has no element (Redis deletes such a key).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        *self = List::default();
    }

    /// The number of chunks (0 for an empty list).
    fn chunk_count(&self) -> usize {
        match &self.repr {
            Repr::One(c) => usize::from(!c.0.is_empty()),
            Repr::Many(chunks) => chunks.len(),
        }
    }

    fn chunk(&self, ci: usize) -> &Chunk {
        match &self.repr {
            Repr::One(c) => c,
            Repr::Many(chunks) => &chunks[ci],
        }
    }

    fn chunk_mut(&mut self, ci: usize) -> &mut Chunk {
        match &mut self.repr {
            Repr::One(c) => c,
            Repr::Many(chunks) => &mut chunks[ci],
        }
    }

    /// The chunks as a deque, the list made a [`Repr::Many`] (of one chunk, or none, until
    /// [`List::settle`]).
    fn chunks_mut(&mut self) -> &mut VecDeque<Chunk> {
        if let Repr::One(c) = &mut self.repr {
            let mut chunks = VecDeque::new();
            if !c.0.is_empty() {
                chunks.push_back(std::mem::take(c));
            }
            self.repr = Repr::Many(Box::new(chunks));
        }
        match &mut self.repr {
            Repr::Many(chunks) => chunks,
            Repr::One(_) => unreachable!("made a deque above"),
        }
    }

    /// After a removal: makes a list left with one chunk of at most half the limit a
    /// [`Repr::One`] again (not one of more, so that a list pushed and popped at a chunk's edge
    /// does not go back and forth), and an empty list one of no allocation.
    fn settle(&mut self) {
        match &mut self.repr {
            Repr::Many(chunks)
                if chunks.len() <= 1
                    && chunks.front().is_none_or(|c| c.0.len() <= CHUNK_BYTES / 2) =>
            {
                self.repr = Repr::One(chunks.pop_front().unwrap_or_default());
            }
            Repr::One(_) if self.len == 0 => self.repr = Repr::default(),
            _ => {}
        }
    }

    /// Drops chunk `ci`, emptied.
    fn drop_chunk(&mut self, ci: usize) {
        match &mut self.repr {
            Repr::One(c) => *c = Chunk::default(),
            Repr::Many(chunks) => {
                chunks.remove(ci);
            }
        }
    }

    /// The chunk and byte offset of element `i` (below the length), found from the nearer end.
    fn locate(&self, i: usize) -> (usize, usize) {
        debug_assert!(i < self.len);
        let n = self.chunk_count();
        if i < self.len / 2 {
            let mut base = 0;
            for ci in 0..n {
                let count = self.chunk(ci).count();
                if i < base + count {
                    return (ci, self.chunk(ci).offset_of(i - base));
                }
                base += count;
            }
        } else {
            let mut base = self.len;
            for ci in (0..n).rev() {
                base -= self.chunk(ci).count();
                if i >= base {
                    return (ci, self.chunk(ci).offset_of(i - base));
                }
            }
        }
        unreachable!("index {i} below the length {}", self.len)
    }

    /// Adds `e` at the head.
    pub fn push_front(&mut self, e: &[u8]) {
        self.push(e, false);
    }

    /// Adds `e` at the tail.
    pub fn push_back(&mut self, e: &[u8]) {
        self.push(e, true);
    }

    fn push(&mut self, e: &[u8], back: bool) {
        let need = encoded_len(e);
        let n = self.chunk_count();
        let ci = if back { n.saturating_sub(1) } else { 0 };
        if n == 0 || self.chunk(ci).0.len() + need <= CHUNK_BYTES {
            let c = self.chunk_mut(ci);
            let at = if back { c.0.len() } else { HEADER };
            c.insert_at(at, e);
        } else {
            let mut c = Chunk::with_capacity(CHUNK_BYTES.max(HEADER + need));
            c.insert_at(HEADER, e);
            let chunks = self.chunks_mut();
            if back {
                chunks.push_back(c);
            } else {
                chunks.push_front(c);
            }
        }
        self.len += 1;
    }

    /// Removes and hands out the head.
    pub fn pop_front(&mut self) -> Option<Bytes> {
        if self.len == 0 {
            return None;
        }
        let e = self.chunk_mut(0).remove_at(HEADER);
        self.removed(0);
        Some(e)
    }

    /// Removes and hands out the tail.
    pub fn pop_back(&mut self) -> Option<Bytes> {
        if self.len == 0 {
            return None;
        }
        let ci = self.chunk_count() - 1;
        let c = self.chunk_mut(ci);
        let at = c.element_before(c.0.len()).1;
        let e = c.remove_at(at);
        self.removed(ci);
        Some(e)
    }

    /// After an element left chunk `ci`: the length, and the chunk dropped if empty.
    fn removed(&mut self, ci: usize) {
        self.len -= 1;
        if self.chunk(ci).count() == 0 {
            self.drop_chunk(ci);
        }
        self.settle();
    }

    /// Element `i` (from 0 at the head), None past the end.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        (i < self.len).then(|| {
            let (ci, at) = self.locate(i);
            self.chunk(ci).element(at).0
        })
    }

    /// Replaces element `i` (below the length) with `e`.
    pub fn set(&mut self, i: usize, e: &[u8]) {
        assert!(i < self.len, "index {i} past the length {}", self.len);
        let (ci, at) = self.locate(i);
        self.chunk_mut(ci).replace_at(at, e);
        self.split_if_over(ci);
    }

    /// Inserts `e` before element `i` (at the tail when `i` is the length).
    pub fn insert(&mut self, i: usize, e: &[u8]) {
        assert!(i <= self.len, "index {i} past the length {}", self.len);
        if i == self.len {
            self.push_back(e);
        } else {
            let (ci, at) = self.locate(i);
            self.chunk_mut(ci).insert_at(at, e);
            self.len += 1;
            self.split_if_over(ci);
        }
    }

    /// Splits chunk `ci` in two if it has grown past the limit with more than one element.
    fn split_if_over(&mut self, ci: usize) {
        let c = self.chunk_mut(ci);
        if c.0.len() > CHUNK_BYTES && c.count() > 1 {
            let rest = c.split();
            self.chunks_mut().insert(ci + 1, rest);
        }
    }

    /// Removes `n` elements (at most the length) from the head.
    pub fn remove_front(&mut self, mut n: usize) {
        assert!(n <= self.len, "{n} elements past the length {}", self.len);
        self.len -= n;
        while n > 0 {
            let c = self.chunk_mut(0);
            let count = c.count();
            if count <= n {
                self.drop_chunk(0);
                n -= count;
            } else {
                let at = c.offset_of(n);
                c.0.drain(HEADER..at);
                c.set_count(count - n);
                n = 0;
            }
        }
        self.settle();
    }

    /// Removes `n` elements (at most the length) from the tail.
    pub fn remove_back(&mut self, mut n: usize) {
        assert!(n <= self.len, "{n} elements past the length {}", self.len);
        self.len -= n;
        while n > 0 {
            let ci = self.chunk_count() - 1;
            let c = self.chunk_mut(ci);
            let count = c.count();
            if count <= n {
                self.drop_chunk(ci);
                n -= count;
            } else {
                let at = c.offset_of(count - n);
                c.0.truncate(at);
                c.set_count(count - n);
                n = 0;
            }
        }
        self.settle();
    }

    /// Removes up to `limit` elements equal to `e`, the first ones from the head (from the tail
    /// when `from_tail`), as `LREM` does; the number removed. Chunks emptied are dropped and
    /// neighbours that fit in one chunk merged.
    pub fn remove_matching(&mut self, e: &[u8], limit: usize, from_tail: bool) -> usize {
        let mut removed = 0;
        let n = self.chunk_count();
        for step in 0..n {
            if removed == limit {
                break;
            }
            let ci = if from_tail { n - 1 - step } else { step };
            let c = self.chunk_mut(ci);
            // Each element's byte range, and whether it matches.
            let mut spans = Vec::new();
            let mut at = HEADER;
            while at < c.0.len() {
                let (x, next) = c.element(at);
                spans.push((at, next, x == e));
                at = next;
            }
            let matches = spans.iter().filter(|s| s.2).count();
            if matches == 0 {
                continue;
            }
            let take = matches.min(limit - removed);
            // The matches to drop: the first `take`, or the last ones from the tail.
            let skip = if from_tail { matches - take } else { 0 };
            let mut kept = Chunk::with_capacity(c.0.len());
            let mut seen = 0;
            for &(start, end, matched) in &spans {
                if matched {
                    seen += 1;
                    if seen > skip && seen <= skip + take {
                        continue;
                    }
                }
                kept.0.extend_from_slice(&c.0[start..end]);
            }
            kept.set_count(spans.len() - take);
            kept.0.shrink_to_fit();
            *c = kept;
            removed += take;
        }
        if removed > 0 {
            self.len -= removed;
            self.merge();
            self.settle();
        }
        removed
    }

    /// Drops empty chunks and merges neighbours that fit in one chunk.
    fn merge(&mut self) {
        let Repr::Many(chunks) = &mut self.repr else {
            return;
        };
        let mut merged: VecDeque<Chunk> = VecDeque::with_capacity(chunks.len());
        for c in chunks.drain(..) {
            if c.count() == 0 {
                continue;
            }
            match merged.back_mut() {
                Some(last) if last.0.len() + c.0.len() - HEADER <= CHUNK_BYTES => {
                    let count = last.count() + c.count();
                    last.0.extend_from_slice(&c.0[HEADER..]);
                    last.set_count(count);
                }
                _ => merged.push_back(c),
            }
        }
        **chunks = merged;
    }

    /// The elements from the head.
    pub fn iter(&self) -> Iter<'_> {
        self.range(0..self.len)
    }

    /// The elements `range` (within the length) from the head.
    pub fn range(&self, range: std::ops::Range<usize>) -> Iter<'_> {
        assert!(range.end <= self.len, "range past the length {}", self.len);
        if range.is_empty() {
            return Iter {
                list: self,
                front: (0, HEADER),
                back: (0, HEADER),
                left: 0,
            };
        }
        let front = self.locate(range.start);
        let (ci, at) = self.locate(range.end - 1);
        let end = self.chunk(ci).element(at).1;
        Iter {
            list: self,
            front,
            back: (ci, end),
            left: range.len(),
        }
    }

    /// The index of the first element equal to `e` from the head.
    pub fn position(&self, e: &[u8]) -> Option<usize> {
        self.iter().position(|x| x == e)
    }
}

/// The elements of a [`List`] in order, from either end, as `&[u8]`.
pub struct Iter<'a> {
    list: &'a List,
    /// The chunk and byte offset of the next element from the head.
    front: (usize, usize),
    /// The chunk and byte offset just past the next element from the tail.
    back: (usize, usize),
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        let (mut ci, mut at) = self.front;
        let mut c = self.list.chunk(ci);
        if at >= c.0.len() {
            ci += 1;
            c = self.list.chunk(ci);
            at = HEADER;
        }
        let (e, next) = c.element(at);
        self.front = (ci, next);
        self.left -= 1;
        Some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let (mut ci, mut end) = self.back;
        if end <= HEADER {
            ci -= 1;
            end = self.list.chunk(ci).0.len();
        }
        let (e, start) = self.list.chunk(ci).element_before(end);
        self.back = (ci, start);
        self.left -= 1;
        Some(e)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a List {
    type Item = &'a [u8];
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl IntoIterator for List {
    type Item = Bytes;
    type IntoIter = std::vec::IntoIter<Bytes>;
    fn into_iter(self) -> Self::IntoIter {
        let elements: Vec<Bytes> = self.iter().map(Bytes::copy_from_slice).collect();
        elements.into_iter()
    }
}

impl<B: AsRef<[u8]>> Extend<B> for List {
    fn extend<I: IntoIterator<Item = B>>(&mut self, elements: I) {
        for e in elements {
            self.push_back(e.as_ref());
        }
    }
}

impl<B: AsRef<[u8]>> FromIterator<B> for List {
    fn from_iter<I: IntoIterator<Item = B>>(elements: I) -> List {
        let mut list = List::new();
        list.extend(elements);
        list
    }
}

impl PartialEq for List {
    /// The same elements in the same order, however they are chunked.
    fn eq(&self, other: &List) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(Bytes::copy_from_slice))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn elements(list: &List) -> Vec<Vec<u8>> {
        list.iter().map(<[u8]>::to_vec).collect()
    }

    /// Checks the invariants: the length is the chunks' counts, no chunk is empty, each chunk's
    /// count is its elements, and iteration agrees from both ends.
    fn check(list: &List) {
        let n = list.chunk_count();
        let mut total = 0;
        for ci in 0..n {
            let c = list.chunk(ci);
            assert!(c.count() > 0, "chunk {ci} of {n} is empty");
            let mut at = HEADER;
            let mut count = 0;
            while at < c.0.len() {
                at = c.element(at).1;
                count += 1;
            }
            assert_eq!(at, c.0.len());
            assert_eq!(count, c.count());
            total += count;
        }
        if let Repr::Many(chunks) = &list.repr {
            assert!(!chunks.is_empty());
        }
        assert_eq!(total, list.len());
        let mut back: Vec<&[u8]> = list.iter().rev().collect();
        back.reverse();
        assert_eq!(back, list.iter().collect::<Vec<_>>());
    }

    fn item(i: usize) -> Vec<u8> {
        format!("item:{i}").into_bytes()
    }

    #[test]
    fn a_list_is_no_bigger_than_a_vecdeque() {
        assert_eq!(std::mem::size_of::<List>(), 32);
    }

    #[test]
    fn pushes_and_pops_at_both_ends() {
        let mut list = List::new();
        assert_eq!(list.pop_front(), None);
        assert_eq!(list.pop_back(), None);
        list.push_back(b"b");
        list.push_front(b"a");
        list.push_back(b"");
        list.push_back(b"c");
        check(&list);
        assert_eq!(elements(&list), [&b"a"[..], b"b", b"", b"c"]);
        assert_eq!(list.pop_front().as_deref(), Some(&b"a"[..]));
        assert_eq!(list.pop_back().as_deref(), Some(&b"c"[..]));
        assert_eq!(list.pop_back().as_deref(), Some(&b""[..]));
        assert_eq!(list.pop_back().as_deref(), Some(&b"b"[..]));
        assert!(list.is_empty());
        assert!(matches!(&list.repr, Repr::One(c) if c.0.capacity() == 0));
    }

    #[test]
    fn long_elements_have_long_varints() {
        let mut list = List::new();
        for n in [127, 128, 16_383, 16_384, 100_000] {
            list.push_back(&vec![b'x'; n]);
            list.push_front(&vec![b'y'; n]);
        }
        check(&list);
        let lens: Vec<usize> = list.iter().map(<[u8]>::len).collect();
        assert_eq!(
            lens,
            [
                100_000, 16_384, 16_383, 128, 127, 127, 128, 16_383, 16_384, 100_000
            ]
        );
        assert_eq!(list.get(9).map(<[u8]>::len), Some(100_000));
    }

    #[test]
    fn many_elements_fill_chunks_of_8_kb_and_pop_back_to_one() {
        let mut list = List::new();
        for i in 0..10_000 {
            list.push_back(&item(i));
        }
        check(&list);
        // 11 bytes for most of them: item:<4 digits> and two length bytes.
        let Repr::Many(chunks) = &list.repr else {
            panic!("one chunk")
        };
        assert!(chunks.len() >= 12 && chunks.len() <= 16, "{}", chunks.len());
        assert!(
            chunks
                .iter()
                .all(|c| c.0.len() <= CHUNK_BYTES && c.0.capacity() <= CHUNK_BYTES)
        );
        assert_eq!(list.get(0), Some(&item(0)[..]));
        assert_eq!(list.get(6_789), Some(&item(6_789)[..]));
        assert_eq!(list.get(9_999), Some(&item(9_999)[..]));
        assert_eq!(list.get(10_000), None);
        for i in 0..9_990 {
            assert_eq!(list.pop_front().as_deref(), Some(&item(i)[..]));
        }
        check(&list);
        assert!(matches!(list.repr, Repr::One(_)));
        assert_eq!(list.len(), 10);
    }

    #[test]
    fn pushes_at_the_head_make_chunks_there() {
        let mut list = List::new();
        for i in 0..3_000 {
            list.push_front(&item(i));
        }
        check(&list);
        assert_eq!(list.get(0), Some(&item(2_999)[..]));
        assert_eq!(list.get(2_999), Some(&item(0)[..]));
        for i in 0..3_000 {
            assert_eq!(list.pop_back().as_deref(), Some(&item(i)[..]));
        }
        assert!(list.is_empty());
        check(&list);
    }

    #[test]
    fn insertions_in_the_middle_split_a_chunk() {
        let mut list: List = (0..600).map(item).collect();
        assert!(matches!(list.repr, Repr::One(_)));
        for i in 0..200 {
            list.insert(300, &item(10_000 + i));
        }
        check(&list);
        assert!(matches!(&list.repr, Repr::Many(c) if c.len() >= 2));
        assert_eq!(list.get(300), Some(&item(10_199)[..]));
        assert_eq!(list.get(499), Some(&item(10_000)[..]));
        assert_eq!(list.get(500), Some(&item(300)[..]));
        list.set(0, &vec![b'z'; 9_000]);
        check(&list);
        assert_eq!(list.get(0).map(<[u8]>::len), Some(9_000));
        assert_eq!(list.get(1), Some(&item(1)[..]));
    }

    #[test]
    fn removals_merge_chunks_and_drop_empty_ones() {
        let mut list = List::new();
        for i in 0..5_000 {
            list.push_back(if i % 2 == 0 { b"even" } else { b"odd" });
        }
        let before = list.chunk_count();
        assert_eq!(list.remove_matching(b"even", 10, false), 10);
        assert_eq!(list.get(0), Some(&b"odd"[..]));
        assert_eq!(list.get(9), Some(&b"odd"[..]));
        assert_eq!(list.get(10), Some(&b"even"[..]));
        assert_eq!(list.get(11), Some(&b"odd"[..]));
        assert_eq!(list.remove_matching(b"odd", 3, true), 3);
        assert_eq!(list.get(list.len() - 1), Some(&b"even"[..]));
        check(&list);
        assert_eq!(list.remove_matching(b"even", usize::MAX, false), 2_490);
        check(&list);
        assert!(list.chunk_count() < before);
        assert_eq!(list.len(), 2_497);
        assert_eq!(list.remove_matching(b"odd", usize::MAX, true), 2_497);
        assert!(list.is_empty());
        check(&list);
    }

    #[test]
    fn trims_drop_whole_chunks_and_parts() {
        let mut list: List = (0..10_000).map(item).collect();
        list.remove_front(4_321);
        list.remove_back(1_234);
        check(&list);
        assert_eq!(list.len(), 10_000 - 4_321 - 1_234);
        assert_eq!(list.get(0), Some(&item(4_321)[..]));
        assert_eq!(list.iter().next_back(), Some(&item(10_000 - 1_235)[..]));
        let n = list.len();
        list.remove_back(n);
        assert!(list.is_empty());
        check(&list);
    }

    #[test]
    fn ranges_read_across_chunks_from_either_end() {
        let list: List = (0..5_000).map(item).collect();
        let forward: Vec<&[u8]> = list.range(1_000..4_000).collect();
        assert_eq!(forward.len(), 3_000);
        assert_eq!(forward[0], &item(1_000)[..]);
        assert_eq!(forward[2_999], &item(3_999)[..]);
        let backward: Vec<&[u8]> = list.range(1_000..4_000).rev().collect();
        assert_eq!(backward[0], &item(3_999)[..]);
        assert_eq!(list.range(7..7).count(), 0);
        let mut both = list.range(10..14);
        assert_eq!(both.next(), Some(&item(10)[..]));
        assert_eq!(both.next_back(), Some(&item(13)[..]));
        assert_eq!(both.next_back(), Some(&item(12)[..]));
        assert_eq!(both.next(), Some(&item(11)[..]));
        assert_eq!(both.next(), None);
        assert_eq!(list.position(&item(4_444)), Some(4_444));
        assert_eq!(list.position(b"nope"), None);
    }

    #[derive(Clone, Debug)]
    enum Op {
        PushFront(Vec<u8>),
        PushBack(Vec<u8>),
        PopFront,
        PopBack,
        Set(usize, Vec<u8>),
        Insert(usize, Vec<u8>),
        RemoveMatching(Vec<u8>, usize, bool),
        RemoveFront(usize),
        RemoveBack(usize),
        Range(usize, usize),
    }

    fn element() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            8 => prop::collection::vec(prop::sample::select(vec![b'a', b'b']), 0..3),
            3 => prop::collection::vec(any::<u8>(), 0..300),
            1 => prop::collection::vec(any::<u8>(), 5_000..12_000),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => element().prop_map(Op::PushFront),
            6 => element().prop_map(Op::PushBack),
            2 => Just(Op::PopFront),
            2 => Just(Op::PopBack),
            2 => (any::<usize>(), element()).prop_map(|(i, e)| Op::Set(i, e)),
            3 => (any::<usize>(), element()).prop_map(|(i, e)| Op::Insert(i, e)),
            1 => (element(), 0usize..4, any::<bool>())
                .prop_map(|(e, n, t)| Op::RemoveMatching(e, n, t)),
            1 => (0usize..50).prop_map(Op::RemoveFront),
            1 => (0usize..50).prop_map(Op::RemoveBack),
            1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Range(a, b)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn behaves_as_a_vecdeque(
            seed in prop::collection::vec(element(), 0..800),
            ops in prop::collection::vec(op(), 0..300),
        ) {
            let mut list: List = seed.iter().collect();
            let mut model: VecDeque<Vec<u8>> = seed.into_iter().collect();
            for op in ops {
                match op {
                    Op::PushFront(e) => {
                        list.push_front(&e);
                        model.push_front(e);
                    }
                    Op::PushBack(e) => {
                        list.push_back(&e);
                        model.push_back(e);
                    }
                    Op::PopFront => {
                        prop_assert_eq!(list.pop_front().map(|b| b.to_vec()), model.pop_front());
                    }
                    Op::PopBack => {
                        prop_assert_eq!(list.pop_back().map(|b| b.to_vec()), model.pop_back());
                    }
                    Op::Set(i, e) => {
                        if !model.is_empty() {
                            let i = i % model.len();
                            list.set(i, &e);
                            model[i] = e;
                        }
                    }
                    Op::Insert(i, e) => {
                        let i = i % (model.len() + 1);
                        list.insert(i, &e);
                        model.insert(i, e);
                    }
                    Op::RemoveMatching(e, n, from_tail) => {
                        let limit = if n == 0 { usize::MAX } else { n };
                        let mut removed = 0;
                        if from_tail {
                            let mut i = model.len();
                            while i > 0 && removed < limit {
                                i -= 1;
                                if model[i] == e {
                                    model.remove(i);
                                    removed += 1;
                                }
                            }
                        } else {
                            let mut i = 0;
                            while i < model.len() && removed < limit {
                                if model[i] == e {
                                    model.remove(i);
                                    removed += 1;
                                } else {
                                    i += 1;
                                }
                            }
                        }
                        prop_assert_eq!(list.remove_matching(&e, limit, from_tail), removed);
                    }
                    Op::RemoveFront(n) => {
                        let n = n.min(model.len());
                        list.remove_front(n);
                        model.drain(..n);
                    }
                    Op::RemoveBack(n) => {
                        let n = n.min(model.len());
                        list.remove_back(n);
                        model.truncate(model.len() - n);
                    }
                    Op::Range(a, b) => {
                        let len = model.len() + 1;
                        let (a, b) = (a % len, b % len);
                        let (a, b) = (a.min(b), a.max(b));
                        let got: Vec<&[u8]> = list.range(a..b).collect();
                        let want: Vec<&[u8]> = model.range(a..b).map(Vec::as_slice).collect();
                        prop_assert_eq!(got, want);
                        let got: Vec<&[u8]> = list.range(a..b).rev().collect();
                        let want: Vec<&[u8]> =
                            model.range(a..b).rev().map(Vec::as_slice).collect();
                        prop_assert_eq!(got, want);
                    }
                }
                check(&list);
                prop_assert_eq!(list.len(), model.len());
            }
            let got: Vec<Vec<u8>> = elements(&list);
            prop_assert_eq!(got, Vec::from(model.clone()));
            for (i, e) in model.iter().enumerate() {
                prop_assert_eq!(list.get(i), Some(e.as_slice()));
            }
        }
    }
}
