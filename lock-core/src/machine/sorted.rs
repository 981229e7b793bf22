//! A small ordered map over one ring buffer, for the machine's tables that churn.
//!
//! Operations, calls and deadlines come and go at every input, usually a handful at a time and
//! usually in the order they were made: ids only grow, and what was made first tends to end
//! first. A `BTreeMap` allocated a node each time such a table went from empty to one entry and
//! freed it on the way back, which was most of an uncontended lock cycle's allocations. Here the
//! entries sit sorted in a `VecDeque`, which keeps its room once grown: a lookup is a binary
//! search, and an insertion or removal shifts the entries on the nearer side, which at either end
//! is none. Iteration is in key order, as a `BTreeMap`'s, so nothing that walks a table changes
//! order.

use std::collections::VecDeque;

/// An ordered map of few entries at a time, whose keys mostly arrive in increasing order.
#[derive(Debug)]
pub(crate) struct SortedMap<K, V> {
    entries: VecDeque<(K, V)>,
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap {
            entries: VecDeque::new(),
        }
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    /// Where `key` is, or where it would go.
    fn find(&self, key: &K) -> Result<usize, usize> {
        // The newest key is the likeliest one to be asked for, and the place of a new one.
        match self.entries.back() {
            None => return Err(0),
            Some((last, _)) if last < key => return Err(self.entries.len()),
            Some((last, _)) if last == key => return Ok(self.entries.len() - 1),
            Some(_) => {}
        }
        self.entries.binary_search_by(|(k, _)| k.cmp(key))
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        let at = self.find(key).ok()?;
        self.entries.get(at).map(|(_, v)| v)
    }

    /// Puts `value` at `key`; gives back the value it replaced.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(at) => Some(std::mem::replace(&mut self.entries[at].1, value)),
            // At either end (nearly always the back), without the general insert's shifting.
            Err(at) if at == self.entries.len() => {
                self.entries.push_back((key, value));
                None
            }
            Err(0) => {
                self.entries.push_front((key, value));
                None
            }
            Err(at) => {
                self.entries.insert(at, (key, value));
                None
            }
        }
    }

    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let at = self.find(key).ok()?;
        // At either end (the oldest call, the newest timer), without the general removal's
        // shifting.
        let entry = if at == 0 {
            self.entries.pop_front()
        } else if at + 1 == self.entries.len() {
            self.entries.pop_back()
        } else {
            self.entries.remove(at)
        };
        entry.map(|(_, v)| v)
    }

    /// The entry of the smallest key.
    pub(crate) fn first(&self) -> Option<(&K, &V)> {
        self.entries.front().map(|(k, v)| (k, v))
    }

    /// Removes and gives back the entry of the smallest key.
    pub(crate) fn pop_first(&mut self) -> Option<(K, V)> {
        self.entries.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::SortedMap;
    use std::collections::BTreeMap;

    #[test]
    fn it_answers_as_a_btree_map_does_whatever_the_order_of_keys() {
        let mut ours = SortedMap::default();
        let mut theirs = BTreeMap::new();
        // A fixed walk of inserts and removals: mostly rising keys, some out of order.
        let mut x: u64 = 7;
        for step in 0..5_000u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let key = if x.is_multiple_of(4) {
                (x >> 33) % 64
            } else {
                step / 3
            };
            if (x >> 20).is_multiple_of(3) {
                assert_eq!(ours.remove(&key), theirs.remove(&key), "remove {key}");
            } else {
                assert_eq!(
                    ours.insert(key, step),
                    theirs.insert(key, step),
                    "insert {key}"
                );
            }
            assert_eq!(ours.get(&key), theirs.get(&key));
            assert_eq!(ours.len(), theirs.len());
            assert_eq!(
                ours.first().map(|(k, v)| (*k, *v)),
                theirs.first_key_value().map(|(k, v)| (*k, *v))
            );
        }
        while let Some(entry) = ours.pop_first() {
            assert_eq!(Some(entry), theirs.pop_first());
        }
        assert!(theirs.is_empty() && ours.len() == 0);
    }
}
