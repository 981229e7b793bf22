//! Operations in progress, in slots reused once they end.
//!
//! An operation is a few hundred bytes. Kept in slots, it is written once when it starts and read
//! in place until it ends: no ordered container moves it on every insert and removal, and a slot
//! freed by one operation takes the next, so a steady stream of operations allocates nothing.
//! Nothing reads operations in key order (timers and calls carry their keys), so none is kept.

/// Values in reused slots, each found by the key its insert gave back.
///
/// A key is the slot's index in its low 32 bits and the slot's generation in the high ones; the
/// generation moves on at every insert into the slot, so the key of an ended value finds nothing
/// even after its slot was reused (until the same slot has been reused 2³² times, far more than
/// the lifetime of any call or timer that still carries an old key).
#[derive(Debug)]
pub(crate) struct Slab<V> {
    slots: Vec<Slot<V>>,
    /// Indices of the empty slots, the most recently emptied last.
    free: Vec<u32>,
    len: usize,
}

#[derive(Debug)]
struct Slot<V> {
    generation: u32,
    value: Option<V>,
}

impl<V> Default for Slab<V> {
    fn default() -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<V> Slab<V> {
    fn slot(key: u64) -> (usize, u32) {
        ((key & u64::from(u32::MAX)) as usize, (key >> 32) as u32)
    }

    /// Puts `value` in a free slot (a new one if none is free); gives back its key.
    pub(crate) fn insert(&mut self, value: V) -> u64 {
        self.len += 1;
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                let index = u32::try_from(self.slots.len()).expect("fewer than 2^32 operations");
                self.slots.push(Slot {
                    generation: 0,
                    value: None,
                });
                index
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        slot.value = Some(value);
        (u64::from(slot.generation) << 32) | u64::from(index)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn get(&self, key: u64) -> Option<&V> {
        let (index, generation) = Self::slot(key);
        let slot = self.slots.get(index)?;
        if slot.generation != generation {
            return None;
        }
        slot.value.as_ref()
    }

    pub(crate) fn get_mut(&mut self, key: u64) -> Option<&mut V> {
        let (index, generation) = Self::slot(key);
        let slot = self.slots.get_mut(index)?;
        if slot.generation != generation {
            return None;
        }
        slot.value.as_mut()
    }

    /// Takes the value out of its slot, which the next insert may reuse.
    pub(crate) fn remove(&mut self, key: u64) -> Option<V> {
        let (index, generation) = Self::slot(key);
        let slot = self.slots.get_mut(index)?;
        if slot.generation != generation {
            return None;
        }
        let value = slot.value.take()?;
        self.len -= 1;
        self.free.push((key & u64::from(u32::MAX)) as u32);
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::Slab;
    use std::collections::BTreeMap;

    #[test]
    fn it_finds_what_a_map_finds_and_no_ended_value_by_its_old_key() {
        let mut slab = Slab::default();
        let mut map = BTreeMap::new();
        let mut ended = Vec::new();
        let mut peak = 0;
        let mut x: u64 = 11;
        for step in 0..5_000u64 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            if (x >> 40).is_multiple_of(3) && !map.is_empty() {
                let nth = ((x >> 20) as usize) % map.len();
                let key = *map.keys().nth(nth).expect("within len");
                assert_eq!(slab.remove(key), map.remove(&key), "remove {key}");
                assert_eq!(slab.remove(key), None, "a second remove of {key}");
                ended.push(key);
            } else {
                let key = slab.insert(step);
                assert_eq!(map.insert(key, step), None, "key {key} given twice");
            }
            assert_eq!(slab.len(), map.len());
            peak = peak.max(map.len());
        }
        for (key, value) in &map {
            assert_eq!(slab.get(*key), Some(value));
        }
        for key in ended {
            assert_eq!(slab.get(key), None, "ended key {key}");
            assert_eq!(slab.get_mut(key), None, "ended key {key}");
        }
        // A freed slot is taken before a new one: as many slots as values were ever alive at once.
        assert_eq!(slab.slots.len(), peak);
    }
}
