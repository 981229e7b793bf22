//! A set value: members in a vector, found through a hash index once there are more than a few.
//!
//! Redis keeps a set as an intset (sorted integers) while it is small and all integers, and as a
//! hash table otherwise; both leave the order of `SMEMBERS` to the encoding. The fake keeps one
//! structure for both (which encoding Redis would use is decided from the members and thresholds
//! by `OBJECT ENCODING`, in `cmd/server.rs`) and chooses it for the costs Redis's commands have:
//!
//! - a member is found in constant time (the index, a `hashbrown` table of positions hashed with
//!   the keyspace's fixed hash, so two runs of one case behave identically);
//! - a random member is one position of the vector, so `SRANDMEMBER` and `SPOP` cost in
//!   proportion to the members they draw, not to the set;
//! - `SSCAN` pages the vector from a cursor ([`Set::scan`]), so a page costs in proportion to
//!   `COUNT`.
//!
//! The order is the vector's: members in the order they came, except that a removal moves the
//! last member into the hole (Redis's order is its table's, unspecified; the tests compare these
//! replies as multisets). Nothing iterates the index.

use super::db::hash_key;
use bytes::Bytes;
use hashbrown::HashTable;

/// Up to this many members, a member is found by comparing each (a few cache lines, no index).
const LINEAR_MAX: usize = 16;

/// A set of byte strings (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Set {
    members: Vec<Bytes>,
    /// Positions in `members`, past [`LINEAR_MAX`] members. Boxed, to keep a value (and so every
    /// slot of the keyspace) small.
    index: Option<Box<HashTable<u32>>>,
}

impl PartialEq for Set {
    /// The same members, whatever their order.
    fn eq(&self, other: &Set) -> bool {
        self.len() == other.len() && self.members.iter().all(|m| other.contains(m))
    }
}

impl FromIterator<Bytes> for Set {
    fn from_iter<I: IntoIterator<Item = Bytes>>(members: I) -> Set {
        let mut set = Set::default();
        set.extend(members);
        set
    }
}

impl Extend<Bytes> for Set {
    fn extend<I: IntoIterator<Item = Bytes>>(&mut self, members: I) {
        for m in members {
            self.insert(m);
        }
    }
}

impl IntoIterator for Set {
    type Item = Bytes;
    type IntoIter = std::vec::IntoIter<Bytes>;
    fn into_iter(self) -> Self::IntoIter {
        self.members.into_iter()
    }
}

impl<'a> IntoIterator for &'a Set {
    type Item = &'a Bytes;
    type IntoIter = std::slice::Iter<'a, Bytes>;
    fn into_iter(self) -> Self::IntoIter {
        self.members.iter()
    }
}

impl Set {
    /// The number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the set has no member (Redis deletes such a key).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The members, in the set's order (see the module docs).
    pub fn iter(&self) -> std::slice::Iter<'_, Bytes> {
        self.members.iter()
    }

    /// The member at `position` of the set's order (`position < len`): a random draw's pick.
    pub fn at(&self, position: usize) -> Option<&Bytes> {
        self.members.get(position)
    }

    fn position(&self, member: &[u8]) -> Option<usize> {
        match &self.index {
            None => self.members.iter().position(|m| m == member),
            Some(index) => index
                .find(hash_key(member), |&i| self.members[i as usize] == member)
                .map(|&i| i as usize),
        }
    }

    /// Whether `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        self.position(member).is_some()
    }

    /// Adds `member`: whether it is new.
    pub fn insert(&mut self, member: Bytes) -> bool {
        if self.contains(&member) {
            return false;
        }
        self.members.push(member);
        let Set { members, index } = self;
        match index {
            Some(index) => {
                let i = members.len() - 1;
                index.insert_unique(hash_key(&members[i]), i as u32, |&j| {
                    hash_key(&members[j as usize])
                });
            }
            None if members.len() > LINEAR_MAX => self.rebuild_index(),
            None => {}
        }
        true
    }

    /// Removes `member`: whether it was there. The last member moves into its place.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        let Some(i) = self.position(member) else {
            return false;
        };
        let Set { members, index } = self;
        let last = members.len() - 1;
        if let Some(index) = index {
            if let Ok(entry) = index.find_entry(hash_key(member), |&j| j as usize == i) {
                entry.remove();
            }
            if i < last {
                let moved = hash_key(&members[last]);
                if let Some(slot) = index.find_mut(moved, |&j| j as usize == last) {
                    *slot = i as u32;
                }
            }
        }
        members.swap_remove(i);
        // A set that shrank to a quarter of its room gives the rest back.
        if members.capacity() > 64 && members.len() < members.capacity() / 4 {
            members.shrink_to(members.len() * 2);
            if members.len() > LINEAR_MAX {
                self.rebuild_index();
            }
        }
        true
    }

    /// One step of `SSCAN` from `cursor` over a hash-table set: the members of the next `count`
    /// positions and the cursor to resume at (0 once done).
    ///
    /// The set is walked from its last position down, and the cursor is the position below which
    /// nothing was returned yet. A removal moves only the last member into the hole (an unreturned
    /// member stays below the cursor, a returned one may come twice), and an insert appends, so
    /// every member present for the whole scan is returned, as SCAN's contract asks, and a call
    /// costs in proportion to `count`. A set no larger than `count` comes whole, with cursor 0.
    pub fn scan(&self, cursor: u64, count: usize) -> (u64, &[Bytes]) {
        let len = self.members.len();
        let top = match usize::try_from(cursor) {
            Ok(0) | Err(_) => len,
            Ok(c) => c.min(len),
        };
        let from = top.saturating_sub(count.max(1));
        (from as u64, &self.members[from..top])
    }

    fn rebuild_index(&mut self) {
        let members = &self.members;
        let mut index = HashTable::with_capacity(members.len());
        for (i, m) in members.iter().enumerate() {
            index.insert_unique(hash_key(m), i as u32, |&j| hash_key(&members[j as usize]));
        }
        self.index = Some(Box::new(index));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn member(i: usize) -> Bytes {
        Bytes::from(format!("m{i}"))
    }

    #[test]
    fn a_large_set_pages_by_count_and_returns_every_member_present_throughout() {
        let mut set: Set = (0..1_000).map(member).collect();
        let mut seen = BTreeSet::new();
        let (mut cursor, mut steps, mut added) = (0, 0, 1_000);
        loop {
            let (next, page) = set.scan(cursor, 10);
            assert!(page.len() <= 10);
            seen.extend(page.iter().cloned());
            steps += 1;
            // Between steps, members below 100 leave (in turn) and new ones arrive.
            set.remove(&member(steps));
            set.insert(member(added));
            added += 1;
            if next == 0 {
                break;
            }
            cursor = next;
        }
        assert!(steps >= 100, "{steps} steps");
        for i in 100..1_000 {
            assert!(seen.contains(&member(i)), "m{i} was never returned");
        }
    }

    #[test]
    fn a_set_no_larger_than_count_comes_whole_with_cursor_0() {
        let set: Set = (0..10).map(member).collect();
        let (next, page) = set.scan(0, 10);
        assert_eq!((next, page.len()), (0, 10));
    }

    proptest! {
        /// Whatever the adds and removals, the set holds exactly a model `BTreeSet`'s members,
        /// each once, each found, and each at one position.
        #[test]
        fn a_set_holds_what_a_model_holds(ops in prop::collection::vec((any::<bool>(), 0usize..60), 1..400)) {
            let mut set = Set::default();
            let mut model = BTreeSet::new();
            for (add, i) in ops {
                if add {
                    prop_assert_eq!(set.insert(member(i)), model.insert(member(i)));
                } else {
                    prop_assert_eq!(set.remove(&member(i)), model.remove(&member(i)));
                }
                prop_assert_eq!(set.len(), model.len());
            }
            let listed: BTreeSet<Bytes> = set.iter().cloned().collect();
            prop_assert_eq!(listed.len(), set.len());
            prop_assert_eq!(&listed, &model);
            for i in 0..60 {
                prop_assert_eq!(set.contains(&member(i)), model.contains(&member(i)));
            }
            for p in 0..set.len() {
                let m = set.at(p).unwrap();
                prop_assert_eq!(set.position(m), Some(p));
            }
        }
    }
}
