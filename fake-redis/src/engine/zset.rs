//! A sorted set value: members ordered by (score, member bytes), as Redis orders them, with ranks.
//!
//! Redis keeps a small sorted set as one listpack (score order, found by a walk) and a large one
//! as a skiplist whose links carry spans (so a rank is found in O(log n)) plus a dict from member
//! to score. The fake does the same in its own shapes:
//!
//! - the order is a list of sorted *chunks* of at most [`CHUNK_MAX`] entries, with a Fenwick tree
//!   of the chunks' sizes: a rank, a member's rank, the first member past a score or a lex bound,
//!   and so `ZRANK`, `ZRANGE` by rank or with a `LIMIT` offset, `ZCOUNT`, `ZLEXCOUNT` and the
//!   pops cost O(log n) to find their place plus the entries they return. A change moves entries
//!   within one chunk; a chunk that overflows splits and one that empties (or that a neighbour
//!   can take in) merges, which rebuilds the tree of sizes, one entry per chunk;
//! - a small set is one chunk, and a member is found by comparing each, as in a listpack; past
//!   [`INDEX_PAST`] members an index from member to score is built (Redis's dict), and kept.
//!
//! Scores are never NaN, and `-0` is stored as `0`. The index is a `hashbrown` table hashed with
//! the keyspace's fixed hash, walked by bucket for `ZSCAN` ([`ZSet::scan`]); nothing else iterates
//! it.
//!
//! What a member costs. In Redis, about 110 bytes at 1M members: a skiplist node, the member's
//! own string, a dict entry and a slot of the dict's table (`scripts/bench-memory` measures it).
//! Here the chunks hold the member as an exact-size copy of what the command gave (as Redis's
//! `sdsnew` copies it; a clone of the request's argument would keep its buffer and a shared
//! header alive), and the index holds a second copy of its own, boxed, beside the score. A bucket of the index is then 24 bytes, not
//! the 40 of a shared `Bytes` and a score, which counts at 1M members: hashbrown keeps at most
//! 7/8 of its buckets full, so 1M members take 2^21 buckets. A chunk never grows past
//! [`CHUNK_MAX`] entries: a full chunk splits before an insert (one that split after it would
//! double its buffer to hold the one extra entry, and keep that doubled buffer).

use super::db::hash_key;
use bytes::Bytes;
use hashbrown::HashTable;
use std::cmp::Ordering;

/// The most entries one chunk holds; a chunk past it splits in two.
const CHUNK_MAX: usize = 256;
/// Past this many members, an index finds a member's score (below, a walk of at most this many).
const INDEX_PAST: usize = 128;

/// A score with a total order (no NaN is ever stored).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Score(f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Score) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Score) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

type Chunk = Vec<(Score, Bytes)>;

/// The index from member to score: the member as a copy of its own (see the module docs).
type Index = HashTable<(Box<[u8]>, f64)>;

/// Where (score, member) sits relative to an entry.
fn cmp_entry(entry: &(Score, Bytes), score: Score, member: &[u8]) -> Ordering {
    entry.0.cmp(&score).then_with(|| entry.1[..].cmp(member))
}

/// A sorted set (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct ZSet {
    chunks: Vec<Chunk>,
    /// A Fenwick tree over the chunks' sizes (1-based: `sizes[i - 1]` covers chunks
    /// `i - (i & -i) .. i`).
    sizes: Vec<usize>,
    len: usize,
    /// Member to score, once the set went past [`INDEX_PAST`] members.
    index: Option<Box<Index>>,
    /// Changes whenever the index's entries may have moved between buckets (it grew, rehashed
    /// or shrank): the stamp on a `ZSCAN` cursor.
    layout_epoch: u32,
}

impl PartialEq for ZSet {
    /// The same members with the same scores.
    fn eq(&self, other: &ZSet) -> bool {
        self.len == other.len && self.iter().all(|(s, m)| other.score(m) == Some(s))
    }
}

/// Bits of a `ZSCAN` cursor that hold the bucket to resume at; the bits above hold the layout
/// epoch it was issued in.
const CURSOR_POSITION_BITS: u32 = 40;

impl ZSet {
    /// The number of members.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no member (Redis deletes such a key).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.index {
            Some(index) => index
                .find(hash_key(member), |(m, _)| **m == *member)
                .map(|&(_, s)| s),
            None => self
                .chunks
                .iter()
                .flatten()
                .find(|(_, m)| m == member)
                .map(|&(s, _)| s.0),
        }
    }

    /// Sets `member`'s score: whether the member is new.
    pub fn insert(&mut self, member: Bytes, score: f64) -> bool {
        let score = score + 0.0; // -0 becomes 0
        let old = self.score(&member);
        match old {
            Some(old) if old.to_bits() == score.to_bits() => return false,
            Some(old) => {
                self.remove_ordered(Score(old), &member);
                if let Some(index) = &mut self.index
                    && let Some(entry) = index.find_mut(hash_key(&member), |(m, _)| **m == *member)
                {
                    entry.1 = score;
                }
            }
            None => {
                if let Some(index) = &mut self.index {
                    if index.capacity() == index.len() {
                        self.layout_epoch = self.layout_epoch.wrapping_add(1);
                    }
                    index.insert_unique(
                        hash_key(&member),
                        (Box::from(&member[..]), score),
                        |(m, _)| hash_key(m),
                    );
                }
            }
        }
        self.insert_ordered(Score(score), member);
        if self.index.is_none() && self.len > INDEX_PAST {
            self.build_index();
        }
        old.is_none()
    }

    /// Removes `member`: whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        let Some(score) = self.score(member) else {
            return false;
        };
        self.remove_ordered(Score(score), member);
        if let Some(index) = &mut self.index {
            if let Ok(entry) = index.find_entry(hash_key(member), |(m, _)| **m == *member) {
                entry.remove();
            }
            // Redis's dict resize down: under 10% full, the index is rebuilt for what it holds.
            if index.num_buckets() > 64 && index.len() * 10 < index.num_buckets() {
                index.shrink_to(index.len(), |(m, _)| hash_key(m));
                self.layout_epoch = self.layout_epoch.wrapping_add(1);
            }
        }
        true
    }

    /// Scores and members, lowest score first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (f64, &Bytes)> {
        self.range(0, self.len)
    }

    /// Scores and members from the first whose score is at least `min`, lowest first: a
    /// score range is found by rank, not by a walk from the lowest score.
    pub fn iter_from(&self, min: f64) -> impl DoubleEndedIterator<Item = (f64, &Bytes)> {
        let from = self.count_while(|s, _| s < min);
        self.range(from, self.len)
    }

    /// The entries of ranks `from..to` (clamped to the set), lowest first; reversible.
    pub fn range(&self, from: usize, to: usize) -> impl DoubleEndedIterator<Item = (f64, &Bytes)> {
        let to = to.min(self.len);
        let from = from.min(to);
        let (first, last, start, end) = if from == to {
            (0, 0, 0, 0)
        } else {
            let (first, start) = self.locate(from);
            let (last, end) = self.locate(to - 1);
            (first, last + 1, start, end + 1)
        };
        let span = last - first;
        self.chunks[first..last]
            .iter()
            .enumerate()
            .flat_map(move |(k, chunk)| {
                let lo = if k == 0 { start } else { 0 };
                let hi = if k + 1 == span { end } else { chunk.len() };
                chunk[lo..hi].iter()
            })
            .map(|(s, m)| (s.0, m))
    }

    /// The entry at `rank` (0 is the lowest score).
    pub fn at(&self, rank: usize) -> Option<(f64, &Bytes)> {
        if rank >= self.len {
            return None;
        }
        let (c, offset) = self.locate(rank);
        let (s, m) = &self.chunks[c][offset];
        Some((s.0, m))
    }

    /// The rank of `member` (0 is the lowest score), Redis's `ZRANK`.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let (c, offset) = self.position(Score(self.score(member)?), member)?;
        Some(self.before(c) + offset)
    }

    /// The chunk and offset of (score, member), if the set holds it.
    fn position(&self, score: Score, member: &[u8]) -> Option<(usize, usize)> {
        let c = self.chunk_for(score, member);
        let offset = self
            .chunks
            .get(c)?
            .binary_search_by(|e| cmp_entry(e, score, member))
            .ok()?;
        Some((c, offset))
    }

    /// How many entries, from the lowest, satisfy `below` (which must hold for a prefix of the
    /// order and then never again, as "score under a bound" does): the rank of the first entry
    /// that does not. O(log n).
    pub fn count_while(&self, below: impl Fn(f64, &[u8]) -> bool) -> usize {
        let c = self
            .chunks
            .partition_point(|chunk| chunk.last().is_some_and(|(s, m)| below(s.0, m)));
        if c == self.chunks.len() {
            return self.len;
        }
        self.before(c) + self.chunks[c].partition_point(|(s, m)| below(s.0, m))
    }

    /// Whether members are found through an index (a set that went past [`INDEX_PAST`]
    /// members); only such a set is paged by [`ZSet::scan`].
    pub fn is_indexed(&self) -> bool {
        self.index.is_some()
    }

    /// One step of `ZSCAN` from `cursor`: the members of the index's next buckets, until `count`
    /// members or `10 × count` buckets, and the cursor to resume at (0 once done). A set without
    /// an index comes whole, lowest score first, with cursor 0.
    ///
    /// As `SCAN`'s cursor over the keyspace (`Db::scan`): a bucket position stamped with the
    /// index's layout epoch. A member stays in its bucket while it stays (a removal or a score
    /// change moves no other member; an insert fills a free bucket) unless the index grows,
    /// rehashes or shrinks, which changes the epoch; a cursor of another epoch starts over. So
    /// every member present for the whole scan is returned, and a call costs in proportion to
    /// `count`.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, Vec<(f64, &Bytes)>) {
        let Some(index) = &self.index else {
            return (0, self.iter().collect());
        };
        let epoch = u64::from(self.layout_epoch);
        let mut at = if cursor >> CURSOR_POSITION_BITS == epoch {
            (cursor & ((1 << CURSOR_POSITION_BITS) - 1)) as usize
        } else {
            0
        };
        let count = count.max(1);
        let buckets = index.num_buckets();
        let budget = at.saturating_add(count.saturating_mul(10));
        let mut found = Vec::with_capacity(count.min(1024));
        while at < buckets && at < budget && found.len() < count {
            // The member the order holds: the index's copy is not a `Bytes`.
            if let Some((m, s)) = index.get_bucket(at)
                && let Some((c, offset)) = self.position(Score(*s), m)
            {
                found.push((*s, &self.chunks[c][offset].1));
            }
            at += 1;
        }
        let next = if at >= buckets {
            0
        } else {
            epoch << CURSOR_POSITION_BITS | at as u64
        };
        (next, found)
    }

    // ---- the order ----

    /// The chunk that holds (score, member), or where it goes: the first whose last entry is not
    /// below it, else the last chunk.
    fn chunk_for(&self, score: Score, member: &[u8]) -> usize {
        let c = self.chunks.partition_point(|chunk| {
            chunk
                .last()
                .is_some_and(|e| cmp_entry(e, score, member) == Ordering::Less)
        });
        c.min(self.chunks.len().saturating_sub(1))
    }

    fn insert_ordered(&mut self, score: Score, member: Bytes) {
        // An exact-size copy (see the module docs).
        let member = Bytes::copy_from_slice(&member);
        self.len += 1;
        if self.chunks.is_empty() {
            self.chunks.push(vec![(score, member)]);
            self.rebuild_sizes();
            return;
        }
        let mut c = self.chunk_for(score, &member);
        let split = self.chunks[c].len() == CHUNK_MAX;
        if split {
            let chunk = &mut self.chunks[c];
            let tail = chunk.split_off(CHUNK_MAX / 2);
            chunk.shrink_to_fit();
            let goes_right = tail
                .first()
                .is_some_and(|e| cmp_entry(e, score, &member) == Ordering::Less);
            self.chunks.insert(c + 1, tail);
            c += usize::from(goes_right);
        }
        let chunk = &mut self.chunks[c];
        let at = chunk.partition_point(|e| cmp_entry(e, score, &member) == Ordering::Less);
        chunk.insert(at, (score, member));
        if split {
            self.rebuild_sizes();
        } else {
            self.add_size(c, 1);
        }
    }

    fn remove_ordered(&mut self, score: Score, member: &[u8]) {
        let c = self.chunk_for(score, member);
        let Ok(at) = self.chunks[c].binary_search_by(|e| cmp_entry(e, score, member)) else {
            return;
        };
        self.chunks[c].remove(at);
        self.len -= 1;
        let len = self.chunks[c].len();
        let merge_with = [c.checked_sub(1), Some(c + 1)]
            .into_iter()
            .flatten()
            .find(|&n| n < self.chunks.len() && self.chunks[n].len() + len <= CHUNK_MAX / 2);
        if len == 0 {
            self.chunks.remove(c);
            self.rebuild_sizes();
        } else if let Some(n) = merge_with {
            let (left, right) = (c.min(n), c.max(n));
            let moved = self.chunks.remove(right);
            self.chunks[left].extend(moved);
            self.rebuild_sizes();
        } else {
            self.add_size(c, -1);
        }
        if self.len == 0 {
            self.chunks = Vec::new();
            self.sizes = Vec::new();
        }
    }

    // ---- the Fenwick tree of chunk sizes ----

    fn rebuild_sizes(&mut self) {
        let n = self.chunks.len();
        self.sizes.clear();
        self.sizes.extend(self.chunks.iter().map(Vec::len));
        for i in 1..=n {
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                self.sizes[parent - 1] += self.sizes[i - 1];
            }
        }
        if self.sizes.capacity() > 4 * n.max(4) {
            self.sizes.shrink_to_fit();
        }
        if self.chunks.capacity() > 4 * n.max(4) {
            self.chunks.shrink_to_fit();
        }
    }

    fn add_size(&mut self, chunk: usize, delta: isize) {
        let mut i = chunk + 1;
        while i <= self.sizes.len() {
            self.sizes[i - 1] = self.sizes[i - 1].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// The entries in chunks before `chunk`.
    fn before(&self, chunk: usize) -> usize {
        let (mut i, mut sum) = (chunk, 0);
        while i > 0 {
            sum += self.sizes[i - 1];
            i -= i & i.wrapping_neg();
        }
        sum
    }

    /// The chunk holding `rank` (`rank < len`), and the offset within it.
    fn locate(&self, rank: usize) -> (usize, usize) {
        let n = self.sizes.len();
        let (mut at, mut left) = (0, rank);
        let mut step = if n == 0 { 0 } else { 1 << n.ilog2() };
        while step > 0 {
            let next = at + step;
            if next <= n && self.sizes[next - 1] <= left {
                at = next;
                left -= self.sizes[next - 1];
            }
            step >>= 1;
        }
        (at, left)
    }

    fn build_index(&mut self) {
        let mut index = HashTable::with_capacity(self.len);
        for (s, m) in self.chunks.iter().flatten() {
            index.insert_unique(hash_key(m), (Box::from(&m[..]), s.0), |(m, _)| hash_key(m));
        }
        self.index = Some(Box::new(index));
        self.layout_epoch = self.layout_epoch.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn member(i: u32) -> Bytes {
        Bytes::from(format!("m{i}"))
    }

    /// The model: (score, member) pairs in Redis's order.
    type Model = BTreeSet<(Score, Bytes)>;

    fn check(z: &ZSet, model: &Model) -> Result<(), TestCaseError> {
        let listed: Vec<(f64, Bytes)> = z.iter().map(|(s, m)| (s, m.clone())).collect();
        let want: Vec<(f64, Bytes)> = model.iter().map(|(s, m)| (s.0, m.clone())).collect();
        prop_assert_eq!(&listed, &want);
        prop_assert_eq!(z.len(), want.len());
        let reversed: Vec<(f64, Bytes)> = z.iter().rev().map(|(s, m)| (s, m.clone())).collect();
        let mut want_reversed = want.clone();
        want_reversed.reverse();
        prop_assert_eq!(reversed, want_reversed);
        for (rank, (s, m)) in want.iter().enumerate() {
            prop_assert_eq!(z.rank(m), Some(rank));
            prop_assert_eq!(z.score(m), Some(*s));
            prop_assert_eq!(
                z.at(rank).map(|(s, m)| (s, m.clone())),
                Some((*s, m.clone()))
            );
        }
        prop_assert_eq!(z.at(want.len()), None);
        Ok(())
    }

    proptest! {
        /// Whatever the adds, score changes and removals, the set lists exactly a model's (score,
        /// member) pairs in Redis's order (both ways), and each member's rank, score and the
        /// entry at each rank agree with the model; ranges by rank and counts under a score
        /// bound are the model's slices and counts.
        #[test]
        fn ranks_ranges_and_counts_match_an_ordered_model(
            ops in prop::collection::vec((0u8..3, 0u32..700, -20i32..20), 1..1_500),
            bounds in prop::collection::vec((0usize..800, 0usize..800, -21i32..21), 8),
        ) {
            let mut z = ZSet::default();
            let mut model = Model::new();
            for (op, i, score) in ops {
                let (m, score) = (member(i), f64::from(score));
                let old = model.iter().find(|(_, n)| *n == m).cloned();
                if op < 2 {
                    if let Some(old) = &old {
                        model.remove(old);
                    }
                    model.insert((Score(score), m.clone()));
                    prop_assert_eq!(z.insert(m, score), old.is_none());
                } else {
                    if let Some(old) = &old {
                        model.remove(old);
                    }
                    prop_assert_eq!(z.remove(&m), old.is_some());
                }
            }
            check(&z, &model)?;
            let want: Vec<(f64, Bytes)> = model.iter().map(|(s, m)| (s.0, m.clone())).collect();
            for (a, b, bound) in bounds {
                let (from, to) = (a.min(b), a.max(b));
                let got: Vec<(f64, Bytes)> = z.range(from, to).map(|(s, m)| (s, m.clone())).collect();
                let slice = want.get(from.min(want.len())..to.min(want.len())).unwrap_or(&[]).to_vec();
                prop_assert_eq!(got, slice);
                let bound = f64::from(bound);
                prop_assert_eq!(z.count_while(|s, _| s < bound), want.iter().filter(|(s, _)| *s < bound).count());
            }
        }

        /// Popping from either end takes the model's lowest (highest) entries, in order, and
        /// leaves the rest ranked as before.
        #[test]
        fn pops_take_the_ends(scores in prop::collection::vec(-50i32..50, 1..700), takes in prop::collection::vec((any::<bool>(), 1usize..40), 1..30)) {
            let mut z = ZSet::default();
            let mut model = Model::new();
            for (i, s) in scores.into_iter().enumerate() {
                let m = member(i as u32);
                z.insert(m.clone(), f64::from(s));
                model.insert((Score(f64::from(s)), m));
            }
            for (max, count) in takes {
                let taken: Vec<(f64, Bytes)> = if max {
                    z.iter().rev().take(count).map(|(s, m)| (s, m.clone())).collect()
                } else {
                    z.range(0, count).map(|(s, m)| (s, m.clone())).collect()
                };
                for (s, m) in &taken {
                    prop_assert!(z.remove(m));
                    let expected = if max { model.pop_last() } else { model.pop_first() };
                    prop_assert_eq!(expected, Some((Score(*s), m.clone())));
                }
            }
            check(&z, &model)?;
        }
    }

    #[test]
    fn a_zscan_of_an_indexed_set_returns_every_member_present_throughout() {
        let mut z = ZSet::default();
        for i in 0..5_000 {
            z.insert(member(i), f64::from(i % 7));
        }
        assert!(z.is_indexed());
        let mut seen = BTreeSet::new();
        let (mut cursor, mut calls, mut churn) = (0u64, 0, 10_000);
        loop {
            let (next, page) = z.scan(cursor, 20);
            assert!(page.len() <= 20);
            seen.extend(page.into_iter().map(|(_, m)| m.clone()));
            calls += 1;
            // Between calls: members come and go, scores change, and once the index grows.
            z.insert(member(churn), 1.0);
            z.remove(&member(churn - 3));
            z.insert(member(calls % 5_000), f64::from(calls));
            churn += 1;
            if calls == 20 {
                for i in 20_000..26_000 {
                    z.insert(member(i), 0.5);
                }
            }
            if next == 0 {
                break;
            }
            cursor = next;
            assert!(calls < 100_000, "the scan must end");
        }
        for i in 0..5_000 {
            assert!(seen.contains(&member(i)), "m{i} missed");
        }
        // A page costs at most 10 × COUNT buckets: without writes, a scan is about
        // buckets / count calls, never one reply of everything.
        let (mut cursor, mut calls) = (0u64, 0);
        loop {
            let (next, page) = z.scan(cursor, 100);
            assert!(page.len() <= 100);
            calls += 1;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert!(calls > z.len() / 100 / 2, "{calls} calls");
    }

    #[test]
    fn a_score_range_starts_at_its_first_member_ties_included() {
        let mut z = ZSet::default();
        for (m, score) in [("a", -5.0), ("b", 2.0), ("c", 2.0), ("d", 3.5), ("e", 9.0)] {
            z.insert(Bytes::from(m), score);
        }
        let from = |min: f64| -> Vec<(f64, Bytes)> {
            z.iter_from(min).map(|(s, m)| (s, m.clone())).collect()
        };
        assert_eq!(
            from(2.0),
            [
                (2.0, Bytes::from("b")),
                (2.0, Bytes::from("c")),
                (3.5, Bytes::from("d")),
                (9.0, Bytes::from("e"))
            ]
        );
        assert_eq!(
            from(2.5),
            [(3.5, Bytes::from("d")), (9.0, Bytes::from("e"))]
        );
        assert_eq!(from(-1e300).len(), 5);
        assert!(from(10.0).is_empty());
    }

    #[test]
    fn a_chunk_never_holds_room_for_more_than_chunk_max_entries() {
        let mut z = ZSet::default();
        // Scores in no order, then in rising order (each insert at the end of the last chunk).
        for i in 0..20_000u32 {
            z.insert(member(i), f64::from(i.wrapping_mul(0x9e37_79b1)));
        }
        for i in 20_000..30_000u32 {
            z.insert(member(i), 1e10 + f64::from(i));
        }
        assert_eq!(z.len(), 30_000);
        for chunk in &z.chunks {
            assert!(chunk.len() <= CHUNK_MAX, "{} entries", chunk.len());
            assert!(
                chunk.capacity() <= CHUNK_MAX,
                "room for {}",
                chunk.capacity()
            );
        }
    }

    #[test]
    fn the_order_keeps_its_own_copy_of_a_member_not_the_request_buffer() {
        let request = Bytes::from(b"ZADD key 1 member".to_vec());
        let mut z = ZSet::default();
        z.insert(request.slice(11..), 1.0);
        let (_, stored) = z.at(0).expect("one member");
        assert_eq!(&stored[..], b"member");
        assert!(!request.as_ptr_range().contains(&stored.as_ptr()));
    }

    #[test]
    fn a_small_set_is_one_chunk_without_an_index_and_scans_whole() {
        let mut z = ZSet::default();
        for i in 0..INDEX_PAST as u32 {
            z.insert(member(i), 1.0);
        }
        assert_eq!((z.chunks.len(), z.is_indexed()), (1, false));
        assert_eq!(z.scan(0, 10).1.len(), INDEX_PAST);
        z.insert(member(1_000), 2.0);
        assert!(z.is_indexed());
    }
}
