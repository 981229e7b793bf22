//! The keyspace's table: the slots that hold the keys, the index over them, and the memory
//! estimate of the keys (`engine/memory.rs`), apart from the database's bookkeeping (expiry
//! candidates, watches, the journal) so that each file stays one subject.

use super::{Candidate, Entry, NOT_VOLATILE};
use crate::engine::server_state::Encodings;
use bytes::Bytes;
use hashbrown::HashTable;

pub(super) struct Slot {
    pub(super) key: Key,
    pub(super) hash: u64,
    pub(super) entry: Entry,
}

impl Slot {
    #[inline]
    pub(super) fn is(&self, h: u64, key: &[u8]) -> bool {
        self.hash == h && self.key.as_bytes() == key
    }
}

/// The keyspace's table: a hash table of 4-byte slot numbers (`index`) over a vector of slots
/// (`slots`), whose freed places (`free`) new keys take again.
///
/// Kept apart, an empty bucket costs 5 bytes (the number and hashbrown's control byte) where a
/// bucket holding the slot itself cost a slot's 88 and more: a table stays at most 7/8 full and
/// doubles, so it holds up to twice as many buckets as keys. Growing moves 4-byte numbers, not
/// slots, so the two tables alive while it grows (Redis's incremental rehash keeps its two alive
/// too) cost a few bytes per key, and the vector of slots grows in place (a large allocation is
/// remapped, not copied). A slot keeps its number while its key lives, so the active expiry's
/// candidates name their slot directly (`Candidate::slot`).
///
/// The index receives the same inserts and removals, with the same hashes, as a table of slots
/// would: its buckets, and so `SCAN`'s order and cursors and `RANDOMKEY`'s draws, are the same.
///
/// While `maxmemory` is set (`keeps`), the table also keeps the memory estimate of its keys
/// (`engine/memory.rs`): each slot's size as last measured (`sizes`, by slot number) and their
/// sum (`bytes`). A key that goes in, or is handed out for a change in place, is taken out of the
/// sum and listed as unmeasured; the list is measured when the sum is read (or when it grows past
/// twice the keys), so a key written and deleted between two reads is never measured, and one
/// changed many times is measured once. Without a limit only `INFO` and `MEMORY STATS` read the
/// estimate, so nothing is kept: every key is measured when they ask ([`Table::bytes`]), and a
/// command pays nothing for it.
#[derive(Default)]
pub(super) struct Table {
    pub(super) index: HashTable<u32>,
    pub(super) slots: Vec<Option<Slot>>,
    pub(super) free: Vec<u32>,
    pub(super) sizes: Vec<u32>,
    pub(super) bytes: u64,
    pub(super) unmeasured: Vec<u32>,
    /// Whether `sizes`, `bytes` and `unmeasured` are kept (then `sizes` numbers every slot).
    pub(super) keeps: bool,
}

/// A slot's size while it waits in [`Table`]'s unmeasured list (not in the sum).
pub(super) const UNMEASURED: u32 = u32::MAX;

impl Table {
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub(super) fn num_buckets(&self) -> usize {
        self.index.num_buckets()
    }

    #[inline]
    pub(super) fn capacity(&self) -> usize {
        self.index.capacity()
    }

    /// The slot numbered `ix`, which holds a key.
    #[inline]
    pub(super) fn slot(&self, ix: u32) -> &Slot {
        held(&self.slots, ix)
    }

    /// [`Table::slot`], to change.
    #[inline]
    pub(super) fn slot_mut(&mut self, ix: u32) -> &mut Slot {
        self.slots[ix as usize].as_mut().expect(HELD)
    }

    /// The number of the slot of `key` (hash `h`): one probe of the index.
    #[inline]
    pub(super) fn find_ix(&self, h: u64, key: &[u8]) -> Option<u32> {
        let slots = &self.slots;
        self.index.find(h, |&i| holds(slots, i, h, key)).copied()
    }

    #[inline]
    pub(super) fn find(&self, h: u64, key: &[u8]) -> Option<&Slot> {
        self.find_ix(h, key).map(|ix| self.slot(ix))
    }

    /// Puts `slot` (a key not in the table) in a free place: its number.
    ///
    /// Numbers are 4 bytes, so a database holds at most 2^32 keys. Their slots alone would take
    /// about 400 GB, so a process runs out of memory first; reaching the cap without running out
    /// stops the process as a failed allocation does (as Redis's allocator stops Redis).
    #[inline]
    pub(super) fn insert_unique(&mut self, slot: Slot, e: &Encodings) -> u32 {
        let h = slot.hash;
        let ix = match self.free.pop() {
            Some(ix) => {
                self.slots[ix as usize] = Some(slot);
                ix
            }
            None => {
                let Ok(ix) = u32::try_from(self.slots.len()) else {
                    std::alloc::handle_alloc_error(std::alloc::Layout::new::<Slot>());
                };
                self.slots.push(Some(slot));
                if self.keeps {
                    self.sizes.push(0);
                }
                ix
            }
        };
        self.handed_out(ix, e);
        let slots = &self.slots;
        self.index.insert_unique(h, ix, |&i| held(slots, i).hash);
        ix
    }

    /// Takes the key of slot `ix` out: one probe of the index, comparing numbers only.
    #[inline]
    pub(super) fn remove_at(&mut self, ix: u32) -> Slot {
        let h = self.slot(ix).hash;
        let numbered = self
            .index
            .find_entry(h, |&i| i == ix)
            .map(|bucket| bucket.remove())
            .is_ok();
        debug_assert!(numbered, "slot {ix} holds a key the index does not number");
        self.vacate(ix)
    }

    /// Takes `key` (hash `h`) out, if present: one probe.
    #[inline]
    pub(super) fn take(&mut self, h: u64, key: &[u8]) -> Option<Slot> {
        let Table { index, slots, .. } = self;
        let bucket = index.find_entry(h, |&i| holds(slots, i, h, key)).ok()?;
        let (ix, _) = bucket.remove();
        Some(self.vacate(ix))
    }

    /// Takes the key out of slot `ix`, whose number the index no longer holds, frees the place
    /// and takes its size off the sum.
    #[inline]
    pub(super) fn vacate(&mut self, ix: u32) -> Slot {
        self.free.push(ix);
        if self.keeps {
            let size = std::mem::take(&mut self.sizes[ix as usize]);
            if size != UNMEASURED {
                self.bytes -= u64::from(size);
            }
        }
        self.slots[ix as usize].take().expect(HELD)
    }

    /// Takes slot `ix` (new, or handed out for a change in place) out of the sum, to be measured
    /// when the sum is next read.
    #[inline]
    pub(super) fn handed_out(&mut self, ix: u32, e: &Encodings) {
        if !self.keeps {
            return;
        }
        let size = &mut self.sizes[ix as usize];
        if *size == UNMEASURED {
            return;
        }
        self.bytes -= u64::from(std::mem::replace(size, UNMEASURED));
        self.unmeasured.push(ix);
        // Keys written and deleted without a read of the sum leave numbers behind: the list
        // stays within twice the keys.
        if self.unmeasured.len() > 2 * self.len() + 1024 {
            self.settle(e);
        }
    }

    /// Starts keeping the estimate (measuring every key once) or stops, dropping it.
    pub(super) fn keep_sizes(&mut self, on: bool, e: &Encodings) {
        if on == self.keeps {
            return;
        }
        self.keeps = on;
        self.unmeasured = Vec::new();
        self.sizes = Vec::new();
        self.bytes = 0;
        if on {
            self.sizes = self
                .slots
                .iter()
                .map(|s| s.as_ref().map_or(0, |s| measure(s, e)))
                .collect();
            self.bytes = self.sizes.iter().map(|&s| u64::from(s)).sum();
        }
    }

    /// The memory estimate of the keys: the kept sum, brought up to date, or every key measured
    /// now when none is kept.
    pub(super) fn bytes(&mut self, e: &Encodings) -> u64 {
        if self.keeps {
            self.settle(e);
            return self.bytes;
        }
        self.iter().map(|s| u64::from(measure(s, e))).sum()
    }

    /// Measures the slots waiting to be, and adds them to the sum.
    pub(super) fn settle(&mut self, e: &Encodings) {
        for ix in std::mem::take(&mut self.unmeasured) {
            if self.sizes[ix as usize] != UNMEASURED {
                continue;
            }
            if let Some(slot) = &self.slots[ix as usize] {
                let size = measure(slot, e);
                self.sizes[ix as usize] = size;
                self.bytes += u64::from(size);
            }
        }
    }

    /// Sets the size of slot `ix` (a key in it was replaced or changed).
    #[inline]
    pub(super) fn resize(&mut self, ix: u32, size: u32) {
        if !self.keeps {
            return;
        }
        let old = std::mem::replace(&mut self.sizes[ix as usize], size);
        debug_assert_ne!(old, UNMEASURED, "resized after a settle");
        self.bytes = self.bytes - u64::from(old) + u64::from(size);
    }

    /// Every slot with its number, in the order of the index's buckets.
    #[cfg(test)]
    pub(super) fn iter_ix(&self) -> impl Iterator<Item = (u32, &Slot)> {
        self.index.iter().map(|&i| (i, self.slot(i)))
    }

    /// Every slot, in the order of the index's buckets.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Slot> {
        self.index.iter().map(|&i| self.slot(i))
    }

    /// The slot in bucket `at` of the index, if it holds one.
    pub(super) fn get_bucket(&self, at: usize) -> Option<&Slot> {
        self.index.get_bucket(at).map(|&i| self.slot(i))
    }

    /// Shrinks the index to fit `len()` keys, and packs the slots at the front of their vector
    /// in the index's order, telling each moved key's candidate (in `volatile`) its new number.
    pub(super) fn shrink(&mut self, volatile: &mut [Candidate]) {
        let Table {
            index,
            slots,
            free,
            sizes,
            unmeasured,
            ..
        } = self;
        index.shrink_to(index.len(), |&i| held(slots, i).hash);
        let mut packed = Vec::with_capacity(index.len());
        let mut packed_sizes = Vec::with_capacity(index.len());
        for i in index.iter_mut() {
            let slot = slots[*i as usize].take().expect(HELD);
            let ix = packed.len() as u32;
            if slot.entry.volatile_ix != NOT_VOLATILE {
                volatile[slot.entry.volatile_ix as usize].slot = ix;
            }
            packed.push(Some(slot));
            if let Some(&size) = sizes.get(*i as usize) {
                packed_sizes.push(size);
            }
            *i = ix;
        }
        *slots = packed;
        // The slots waiting to be measured, by their new numbers.
        *unmeasured = (0..packed_sizes.len() as u32)
            .filter(|&ix| packed_sizes[ix as usize] == UNMEASURED)
            .collect();
        *sizes = packed_sizes;
        *free = Vec::new();
    }
}

/// What every number in the index, and every candidate's number, names: a slot that holds a key.
pub(super) const HELD: &str = "a numbered slot holds a key";

/// The slot numbered `ix`, which holds a key.
#[inline]
pub(super) fn held(slots: &[Option<Slot>], ix: u32) -> &Slot {
    slots[ix as usize].as_ref().expect(HELD)
}

/// Whether the slot numbered `ix` holds `key` (hash `h`): the index's test of a bucket.
#[inline]
pub(super) fn holds(slots: &[Option<Slot>], ix: u32, h: u64, key: &[u8]) -> bool {
    held(slots, ix).is(h, key)
}

/// The memory estimate of the key in `slot` (`engine/memory.rs`), capped below [`UNMEASURED`]
/// (a 4 GB value; the cap is added and taken off alike, so the sum stays right for every other
/// key).
pub(super) fn measure(slot: &Slot, e: &Encodings) -> u32 {
    let size = super::memory::key_size(slot.key.as_bytes().len(), &slot.entry, e);
    u32::try_from(size)
        .unwrap_or(UNMEASURED - 1)
        .min(UNMEASURED - 1)
}

/// The bytes of a key: in its slot when short, otherwise in one allocation of exactly its size
/// (no reference count, no shared header: freeing it when the active expiry cycle removes the key
/// touches nothing but the allocation). Small enough that a slot stays under 100 bytes.
pub(super) enum Key {
    Inline { len: u8, bytes: [u8; Key::INLINE] },
    Heap(Box<[u8]>),
}

impl Key {
    /// The longest key kept inline; with the length and the tag, a `Key` is 24 bytes, as large as
    /// the boxed form.
    const INLINE: usize = 22;

    pub(super) fn new(key: &[u8]) -> Key {
        if key.len() <= Key::INLINE {
            let mut bytes = [0; Key::INLINE];
            bytes[..key.len()].copy_from_slice(key);
            Key::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            Key::Heap(key.into())
        }
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Key::Heap(bytes) => bytes,
        }
    }

    pub(super) fn to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self.as_bytes())
    }
}
