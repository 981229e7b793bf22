//! Key handles: what one probe of the table learned about a key, used again by later calls at
//! the same frozen time.
//!
//! A native script names its few keys in several calls (the lock's acquire reads its lock, then
//! counts a hold on it and sets its lease; its release reads the lock, gives a count back and
//! deletes it). Through the command functions each call hashes and probes the table again and
//! takes every layer of a command's lookup. A [`Probe`] keeps the answer of the first probe (the
//! key is missing, or lives in slot `n`) so that the next call on the key goes straight to its
//! slot or skips the search, and the calls here change the entry in place.
//!
//! A slot keeps its number while its key lives, and nothing changes the time inside a command,
//! so a live key stays live, in the same slot, until a call deletes it; the one exception is a
//! rebuild of the table, which renumbers every slot and moves the layout epoch, and a handle of
//! another epoch is not used. The caller keeps each handle up to date with what its own calls
//! do to the key, and forgets it for any call that does not go through here.
//!
//! These calls skip the bookkeeping that follows writes (watchers, client tracking, the key
//! event log, blocked clients, the write journal and the replicas' log, a replica's rule for
//! expired keys), so a caller uses them only while the database has none of it on
//! ([`Db::is_quiet`]); otherwise it takes the command functions.

use super::{Db, DeadlineChange, Entry, NOT_VOLATILE, Value, expire, insert_new, touch_entry};

/// What a probe of a key found, at the command's frozen time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Not searched yet (or forgotten).
    #[default]
    Unknown,
    /// Not in the table, or expired (and then deleted by the probe).
    Missing,
    /// Live, in this slot, while the table's layout stays this epoch.
    Live { slot: u32, epoch: u64 },
}

impl Db {
    /// Whether nothing but the table follows this database's writes: no write journal or
    /// replicas' log, no replica's rule for expired keys, no watched key, no tracked or logged
    /// key events, no blocked client. The calls on handles are exact only then.
    #[inline]
    pub(crate) fn is_quiet(&self) -> bool {
        !self.logs_writes()
            && !self.keep_expired
            && self.watches.keys.is_empty()
            && self.watches.tracked_log.is_none()
            && self.watches.key_events.is_none()
            && self.waiters.is_idle()
    }

    /// A live slot of `probe`, if it is still one of this layout.
    #[inline]
    fn live_slot(&self, probe: Probe) -> Option<u32> {
        match probe {
            Probe::Live { slot, epoch } if epoch == self.layout_epoch => Some(slot),
            _ => None,
        }
    }

    /// Probes for `key` (hash `h`) as a lookup does: a logically expired key is deleted first
    /// and is missing. A live key is marked accessed when `touch` is set.
    #[inline]
    pub(crate) fn probe(&mut self, key: &[u8], h: u64, now: i64, touch: bool) -> Probe {
        let Some(slot) = self.table.find_ix(h, key) else {
            return Probe::Missing;
        };
        if self.table.slot(slot).entry.expired(now) {
            let Db {
                table,
                volatile,
                watches,
                stats,
                ..
            } = self;
            expire(table, slot, volatile, watches, stats);
            self.shrink_if_sparse();
            return Probe::Missing;
        }
        if touch {
            touch_entry(&mut self.table.slot_mut(slot).entry, self.lfu.as_mut(), now);
        }
        Probe::Live {
            slot,
            epoch: self.layout_epoch,
        }
    }

    /// [`Db::probe`], unless `known` already says where the key is: the key's state, by one
    /// probe at most.
    #[inline]
    pub(crate) fn probe_again(
        &mut self,
        known: Probe,
        key: &[u8],
        h: u64,
        now: i64,
        touch: bool,
    ) -> Probe {
        if known == Probe::Missing {
            return known;
        }
        match self.live_slot(known) {
            Some(slot) => {
                debug_assert!(self.table.slot(slot).is(h, key), "a handle names its key");
                if touch {
                    let entry = &mut self.table.slot_mut(slot).entry;
                    touch_entry(entry, self.lfu.as_mut(), now);
                }
                known
            }
            None => self.probe(key, h, now, touch),
        }
    }

    /// The entry of the live key `probe` names, read in place.
    #[inline]
    pub(crate) fn entry_of(&self, probe: Probe) -> Option<&Entry> {
        let slot = self.live_slot(probe)?;
        Some(&self.table.slot(slot).entry)
    }

    /// The entry of the live key `probe` names, handed out for a change in place (its size is
    /// measured again when the memory estimate is kept).
    #[inline]
    pub(crate) fn entry_of_mut(&mut self, probe: Probe) -> Option<&mut Entry> {
        let slot = self.live_slot(probe)?;
        self.table.handed_out(slot, &self.encodings);
        Some(&mut self.table.slot_mut(slot).entry)
    }

    /// Puts a new key at `key` (hash `h`), which a probe at this frozen time found missing,
    /// with `value` and `deadline`: its handle.
    pub(crate) fn insert_probed(
        &mut self,
        key: &[u8],
        h: u64,
        value: Value,
        deadline: Option<i64>,
        now: i64,
    ) -> Probe {
        debug_assert!(self.is_quiet(), "handles serve a quiet database only");
        let entry = self.new_entry(value, deadline, now);
        super::note_layout(&self.table, &mut self.layout_epoch);
        let slot = insert_new(
            &mut self.table,
            &mut self.volatile,
            key,
            h,
            entry,
            &self.encodings,
        );
        Probe::Live {
            slot,
            epoch: self.layout_epoch,
        }
    }

    /// Changes the deadline of the live key `probe` names as `change` says, in place: what the
    /// key is after.
    pub(crate) fn change_deadline_of(&mut self, probe: Probe, change: DeadlineChange) -> Probe {
        let Some(slot) = self.live_slot(probe) else {
            return probe;
        };
        match change {
            DeadlineChange::Keep => probe,
            DeadlineChange::Delete => {
                let removed = self.table.remove_at(slot);
                super::unlist(
                    &mut self.table,
                    &mut self.volatile,
                    removed.entry.volatile_ix,
                );
                self.shrink_if_sparse();
                Probe::Missing
            }
            DeadlineChange::Set(d) => {
                let entry = &mut self.table.slot_mut(slot).entry;
                entry.put_deadline(Some(d));
                if entry.volatile_ix == NOT_VOLATILE {
                    entry.volatile_ix = self.volatile.len() as u32;
                    self.volatile.push(super::Candidate { deadline: d, slot });
                } else {
                    self.volatile[entry.volatile_ix as usize].deadline = d;
                }
                probe
            }
        }
    }
}
