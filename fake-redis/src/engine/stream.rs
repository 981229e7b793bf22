//! A stream value: entries by ID, the counters Redis keeps beside them, and consumer groups.
//!
//! Redis stores a stream as a radix tree of listpack nodes, and that layout shows through its
//! replies: `XTRIM ~` removes whole nodes only, and `XINFO STREAM` reports how many nodes and
//! radix-tree nodes there are. So the entries here are kept in the same nodes, split where
//! Redis splits them (100 entries, deleted ones included, or 4096 bytes of listpack), with the
//! listpack's size counted by its encoding rules; an entry `XDEL` removes stays in its node,
//! marked, until the node empties, as in Redis. A small stream is one node of one vector.
//!
//! Consumer groups, their pending entries (PEL) and consumers are ordered maps by name and by
//! ID, as Redis's radix trees order them, so every listing is in Redis's order.

use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

mod rdb;

/// A stream entry ID, `<ms>-<seq>`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence part.
    pub seq: u64,
}

impl StreamId {
    /// The smallest ID, `0-0`.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest ID.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The ID right after this one (None past the largest).
    pub fn next(self) -> Option<StreamId> {
        if self.seq < u64::MAX {
            Some(StreamId {
                seq: self.seq + 1,
                ..self
            })
        } else if self.ms < u64::MAX {
            Some(StreamId {
                ms: self.ms + 1,
                seq: 0,
            })
        } else {
            None
        }
    }

    /// The ID right before this one (None before the smallest).
    pub fn prev(self) -> Option<StreamId> {
        if self.seq > 0 {
            Some(StreamId {
                seq: self.seq - 1,
                ..self
            })
        } else if self.ms > 0 {
            Some(StreamId {
                ms: self.ms - 1,
                seq: u64::MAX,
            })
        } else {
            None
        }
    }

    /// Whether it is `0-0`.
    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The 16 big-endian bytes Redis keys its radix trees with.
    fn key(self) -> [u8; 16] {
        let mut k = [0; 16];
        k[..8].copy_from_slice(&self.ms.to_be_bytes());
        k[8..].copy_from_slice(&self.seq.to_be_bytes());
        k
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Redis's `stream-node-max-entries` default.
const NODE_MAX_ENTRIES: usize = 100;
/// Redis's `stream-node-max-bytes` default.
const NODE_MAX_BYTES: usize = 4096;

/// One entry: its ID and its fields and values, alternating.
#[derive(Clone, Debug, PartialEq)]
struct Item {
    id: StreamId,
    deleted: bool,
    fields: Box<[Bytes]>,
}

/// One listpack node: its entries in ID order (the first is the node's master entry, whose
/// fields later entries may share), how many are live, and the listpack's size in bytes.
#[derive(Clone, Debug, PartialEq)]
struct Node {
    items: Vec<Item>,
    live: usize,
    bytes: usize,
}

impl Node {
    fn master(&self) -> StreamId {
        self.items[0].id
    }

    /// Whether `fields` has the master entry's field names, in order.
    fn same_fields(&self, fields: &[Bytes]) -> bool {
        let master = &self.items[0].fields;
        master.len() == fields.len()
            && master
                .iter()
                .step_by(2)
                .zip(fields.iter().step_by(2))
                .all(|(a, b)| a == b)
    }
}

// ---- listpack sizes, by Redis's encoding rules ----

fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..16383 => 2,
        16383..2097151 => 3,
        2097151..268435455 => 4,
        _ => 5,
    }
}

fn int_size(v: i64) -> usize {
    let l = match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8388608..=8388607 => 4,
        -2147483648..=2147483647 => 5,
        _ => 9,
    };
    l + backlen_size(l)
}

fn element_size(s: &[u8]) -> usize {
    if let Some(v) = lock_core::script::parse_i64(s) {
        return int_size(v);
    }
    let l = match s.len() {
        0..64 => 1 + s.len(),
        64..4096 => 2 + s.len(),
        _ => 5 + s.len(),
    };
    l + backlen_size(l)
}

/// The listpack bytes of a new node holding `fields` as its master entry: the header, the
/// counters, the master fields and the entry itself.
fn new_node_bytes(fields: &[Bytes]) -> usize {
    let n = fields.len() / 2;
    let master: usize = fields.iter().step_by(2).map(|f| element_size(f)).sum();
    7 + int_size(1)
        + int_size(0)
        + int_size(n as i64)
        + master
        + int_size(0)
        + item_bytes(StreamId::MIN, StreamId::MIN, fields, true)
}

/// The listpack bytes of one entry in a node whose master ID is `master`.
fn item_bytes(master: StreamId, id: StreamId, fields: &[Bytes], same: bool) -> usize {
    let n = fields.len() / 2;
    let mut bytes = int_size(if same { 2 } else { 0 })
        + int_size(id.ms.wrapping_sub(master.ms) as i64)
        + int_size(id.seq.wrapping_sub(master.seq) as i64);
    if same {
        bytes += fields
            .iter()
            .skip(1)
            .step_by(2)
            .map(|v| element_size(v))
            .sum::<usize>();
        bytes + int_size(n as i64 + 3)
    } else {
        bytes += int_size(n as i64);
        bytes += fields.iter().map(|f| element_size(f)).sum::<usize>();
        bytes + int_size(2 * n as i64 + 4)
    }
}

/// How a trim chooses what goes (`XTRIM`, `XADD`'s `MAXLEN`/`MINID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop the entries below this ID.
    MinId(StreamId),
}

/// A pending entry of a group: who has it, when it was last delivered, how often.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    /// The consumer that holds it.
    pub consumer: Bytes,
    /// Its last delivery, unix ms.
    pub delivery_time: i64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, PartialEq)]
pub struct Consumer {
    /// When it last read or claimed, unix ms.
    pub seen_time: i64,
    /// The IDs it holds pending.
    pub pel: BTreeSet<StreamId>,
}

/// Redis's `SCG_INVALID_ENTRIES_READ`: a group's read counter is unknown.
pub const ENTRIES_READ_UNKNOWN: i64 = -1;

/// A consumer group.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The last ID delivered to the group.
    pub last_id: StreamId,
    /// How many entries the group has read (its logical counter), or
    /// [`ENTRIES_READ_UNKNOWN`].
    pub entries_read: i64,
    /// Pending entries by ID.
    pub pel: BTreeMap<StreamId, Pending>,
    /// Consumers by name.
    pub consumers: BTreeMap<Bytes, Consumer>,
}

impl Group {
    /// A group whose last delivered ID is `last_id`.
    pub fn new(last_id: StreamId, entries_read: i64) -> Group {
        Group {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Removes a pending entry from the group and its consumer: whether it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(pending) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(&pending.consumer) {
            c.pel.remove(&id);
        }
        true
    }

    /// Gives pending entry `id` to `consumer` (which exists).
    pub fn reassign(&mut self, id: StreamId, consumer: &Bytes) {
        let Some(pending) = self.pel.get_mut(&id) else {
            return;
        };
        if pending.consumer != *consumer {
            if let Some(old) = self.consumers.get_mut(&pending.consumer) {
                old.pel.remove(&id);
            }
            pending.consumer = consumer.clone();
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }
}

/// A stream. See the [module docs](self).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stream {
    nodes: Vec<Node>,
    length: u64,
    /// The last ID ever added (or set by `XSETID`).
    pub last_id: StreamId,
    /// The largest ID `XDEL` removed.
    pub max_deleted_id: StreamId,
    /// How many entries were ever added.
    pub entries_added: u64,
    /// Consumer groups by name.
    pub groups: BTreeMap<Bytes, Group>,
}

impl Stream {
    /// How many entries it holds.
    pub fn len(&self) -> u64 {
        self.length
    }

    /// Whether it holds no entry (a stream stays even then).
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    fn live(&self) -> impl DoubleEndedIterator<Item = &Item> {
        self.nodes
            .iter()
            .flat_map(|n| n.items.iter())
            .filter(|i| !i.deleted)
    }

    /// The first entry's ID, `0-0` when empty (Redis's recorded first ID).
    pub fn first_id(&self) -> StreamId {
        self.live().next().map_or(StreamId::MIN, |i| i.id)
    }

    /// The last entry's ID, `0-0` when empty.
    pub fn last_entry_id(&self) -> StreamId {
        self.live().next_back().map_or(StreamId::MIN, |i| i.id)
    }

    /// Appends an entry with an ID the caller checked is above `last_id`.
    ///
    /// The entry keeps exact-size copies of the values, and of the field names unless they are
    /// the node's master entry's, whose copies it shares (Redis's listpack stores such names once
    /// a node too). A clone of the request's arguments would keep each argument's buffer and a
    /// shared header alive: two allocations a field instead of one, or none.
    pub fn append(&mut self, id: StreamId, fields: &[Bytes]) {
        let total: usize = fields.iter().map(|f| f.len()).sum();
        let fits = self
            .nodes
            .last()
            .is_some_and(|n| n.bytes + total < NODE_MAX_BYTES && n.items.len() < NODE_MAX_ENTRIES);
        let master = self
            .nodes
            .last()
            .filter(|n| fits && n.same_fields(fields))
            .map(|n| &n.items[0].fields);
        let fields: Box<[Bytes]> = fields
            .iter()
            .enumerate()
            .map(|(k, f)| match master {
                Some(names) if k % 2 == 0 => names[k].clone(),
                _ => Bytes::copy_from_slice(f),
            })
            .collect();
        if fits {
            let node = self.nodes.last_mut().expect("checked");
            let same = node.same_fields(&fields);
            node.bytes += item_bytes(node.master(), id, &fields, same);
            node.live += 1;
            node.items.push(Item {
                id,
                deleted: false,
                fields,
            });
        } else {
            // A node that is full takes no more entries: its spare room goes.
            if let Some(full) = self.nodes.last_mut() {
                full.items.shrink_to_fit();
            }
            self.nodes.push(Node {
                bytes: new_node_bytes(&fields),
                live: 1,
                items: vec![Item {
                    id,
                    deleted: false,
                    fields,
                }],
            });
        }
        self.length += 1;
        self.entries_added = self.entries_added.wrapping_add(1);
        self.last_id = id;
    }

    /// The fields and values of entry `id`, if it is there.
    pub fn get(&self, id: StreamId) -> Option<&[Bytes]> {
        let n = self.nodes.partition_point(|n| n.master() <= id);
        let node = self.nodes.get(n.checked_sub(1)?)?;
        let i = node.items.binary_search_by(|i| i.id.cmp(&id)).ok()?;
        let item = &node.items[i];
        (!item.deleted).then_some(&*item.fields)
    }

    /// Live entries from `start` to `end` (inclusive), reversed if `rev`, at most `count` (0
    /// for all).
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        count: usize,
    ) -> Vec<(StreamId, &[Bytes])> {
        let mut out = Vec::new();
        if start > end {
            return out;
        }
        let first = self
            .nodes
            .partition_point(|n| n.master() <= start)
            .saturating_sub(1);
        let last = self.nodes.partition_point(|n| n.master() <= end);
        let nodes = self.nodes.get(first..last).unwrap_or_default();
        let items = nodes
            .iter()
            .flat_map(|n| n.items.iter())
            .filter(|i| !i.deleted && i.id >= start && i.id <= end);
        let take = if count == 0 { usize::MAX } else { count };
        if rev {
            out.extend(items.rev().take(take).map(|i| (i.id, &*i.fields)));
        } else {
            out.extend(items.take(take).map(|i| (i.id, &*i.fields)));
        }
        out
    }

    /// Deletes entry `id`: whether it was there. `max_deleted_id` is the caller's.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let n = self.nodes.partition_point(|n| n.master() <= id);
        let Some(ni) = n.checked_sub(1) else {
            return false;
        };
        let node = &mut self.nodes[ni];
        let Ok(i) = node.items.binary_search_by(|i| i.id.cmp(&id)) else {
            return false;
        };
        if node.items[i].deleted {
            return false;
        }
        node.items[i].deleted = true;
        node.live -= 1;
        if node.live == 0 {
            self.nodes.remove(ni);
        }
        self.length -= 1;
        true
    }

    /// Redis's `streamTrim`: how many entries went. `approx` removes whole nodes only; `limit`
    /// (0 for none) bounds the entries an approximate trim removes.
    pub fn trim(&mut self, trim: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        while !self.nodes.is_empty() {
            if let Trim::MaxLen(max) = trim
                && self.length <= max
            {
                break;
            }
            let node = &mut self.nodes[0];
            let entries = node.live as u64;
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let remove_node = match trim {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => node.items.last().is_some_and(|i| i.id < min),
            };
            if remove_node {
                self.nodes.remove(0);
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            for item in &mut node.items {
                let stop = match trim {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => item.id >= min,
                };
                if stop {
                    break;
                }
                if !item.deleted {
                    item.deleted = true;
                    node.live -= 1;
                    self.length -= 1;
                    deleted += 1;
                }
            }
            // A node emptied this way stays, as Redis leaves it.
            break;
        }
        deleted
    }

    /// How many listpack nodes hold it (`radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// How many nodes Redis's radix tree of the listpack nodes has (`radix-tree-nodes`): a
    /// compressed trie over the nodes' 16-byte master IDs.
    pub fn radix_tree_nodes(&self) -> usize {
        let keys: Vec<[u8; 16]> = self.nodes.iter().map(|n| n.master().key()).collect();
        let suffixes: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
        trie_nodes(&suffixes)
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: the read counter of `id`, if it can
    /// be known.
    /// `XSETID` may set the counter near the top of the range, so the arithmetic wraps as C's
    /// does, and the numbers are Redis's.
    pub fn estimate_entries_read(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        let added = self.entries_added as i64;
        if self.length == 0 && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        } else if id > self.last_id {
            return ENTRIES_READ_UNKNOWN;
        }
        let first = self.first_id();
        if self.max_deleted_id.is_zero() || self.max_deleted_id < first {
            if id < first {
                return added.wrapping_sub(self.length as i64);
            } else if id == first {
                return added.wrapping_sub(self.length as i64).wrapping_add(1);
            }
        }
        ENTRIES_READ_UNKNOWN
    }

    /// Redis's `streamRangeHasTombstones` from `start` to the end.
    pub fn has_tombstones_from(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id() > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// A group's lag (`XINFO GROUPS`), None when it cannot be known; wrapping, as Redis's is,
    /// for counters a client set near the ends of the range.
    pub fn lag(&self, group: &Group) -> Option<i64> {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            Some(0)
        } else if group.entries_read != ENTRIES_READ_UNKNOWN
            && !self.has_tombstones_from(group.last_id)
        {
            Some(added.wrapping_sub(group.entries_read))
        } else {
            let read = self.estimate_entries_read(group.last_id);
            (read != ENTRIES_READ_UNKNOWN).then_some(added.wrapping_sub(read))
        }
    }

    /// A group's bookkeeping as it is delivered entry `id` (Redis's `streamReplyWithRange`
    /// with a group).
    pub fn advance_group(&mut self, name: &[u8], id: StreamId) {
        let tombstones = self.has_tombstones_from(id);
        let estimate = self.estimate_entries_read(id);
        let added = self.entries_added;
        let Some(group) = self.groups.get_mut(name) else {
            return;
        };
        if id > group.last_id {
            if group.entries_read != ENTRIES_READ_UNKNOWN && !tombstones {
                // `ENTRIESREAD` may have set it to the largest value: it wraps, as in Redis.
                group.entries_read = group.entries_read.wrapping_add(1);
            } else if added != 0 {
                group.entries_read = estimate;
            }
            group.last_id = id;
        }
    }
}

/// Nodes of a rax holding `keys` (all of one length, distinct), below a node boundary.
fn trie_nodes(keys: &[&[u8]]) -> usize {
    match keys {
        [] => 1,
        [[]] => 1,
        _ => {
            let first = keys[0];
            let common = keys[1..].iter().fold(first.len(), |n, k| {
                n.min(
                    first
                        .iter()
                        .zip(k.iter())
                        .take_while(|(a, b)| a == b)
                        .count(),
                )
            });
            if common > 0 {
                let rest: Vec<&[u8]> = keys.iter().map(|k| &k[common..]).collect();
                return 1 + trie_nodes(&rest);
            }
            // A branching node, then each child below its first byte.
            let mut count = 1;
            let mut i = 0;
            while i < keys.len() {
                let b = keys[i][0];
                let j = i + keys[i..].iter().take_while(|k| k[0] == b).count();
                let rest: Vec<&[u8]> = keys[i..j].iter().map(|k| &k[1..]).collect();
                count += trie_nodes(&rest);
                i = j;
            }
            count
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    fn fv(f: &'static str, v: &'static str) -> Vec<Bytes> {
        vec![
            Bytes::from_static(f.as_bytes()),
            Bytes::from_static(v.as_bytes()),
        ]
    }

    #[test]
    fn nodes_split_at_a_hundred_entries_and_approximate_trims_take_whole_nodes() {
        let mut s = Stream::default();
        for i in 1..=250 {
            s.append(id(i, 0), &fv("a", "1"));
        }
        assert_eq!(s.node_count(), 3);
        assert_eq!(s.trim(Trim::MaxLen(180), true, 0), 0);
        assert_eq!(s.trim(Trim::MaxLen(150), true, 0), 100);
        assert_eq!(s.trim(Trim::MaxLen(120), false, 0), 30);
        assert_eq!(s.len(), 120);
        assert_eq!(s.first_id(), id(131, 0));
    }

    #[test]
    fn deleting_every_entry_of_a_node_removes_it() {
        let mut s = Stream::default();
        s.append(id(1, 0), &fv("a", "1"));
        s.append(id(2, 0), &fv("b", "2"));
        assert!(s.delete(id(1, 0)));
        assert!(!s.delete(id(1, 0)));
        assert_eq!(s.get(id(2, 0)).map(<[Bytes]>::len), Some(2));
        assert!(s.delete(id(2, 0)));
        assert_eq!((s.node_count(), s.radix_tree_nodes()), (0, 1));
    }

    #[test]
    fn an_entry_shares_its_masters_field_names_and_copies_its_values() {
        let mut s = Stream::default();
        let request = Bytes::from_static(b"XADD s 2-0 a 1 b 2");
        s.append(
            id(1, 0),
            &fv("a", "0")
                .into_iter()
                .chain(fv("b", "0"))
                .collect::<Vec<_>>(),
        );
        let fields = [11..12, 13..14, 15..16, 17..18].map(|r| request.slice(r));
        s.append(id(2, 0), &fields);
        let master = s.get(id(1, 0)).expect("the master entry");
        let entry = s.get(id(2, 0)).expect("the second entry");
        assert_eq!(entry, &fields[..]);
        assert_eq!(entry[0].as_ptr(), master[0].as_ptr());
        assert_eq!(entry[2].as_ptr(), master[2].as_ptr());
        for value in [&entry[1], &entry[3]] {
            assert!(!request.as_ptr_range().contains(&value.as_ptr()));
        }
    }

    #[test]
    fn one_key_makes_two_rax_nodes() {
        let mut s = Stream::default();
        s.append(id(1, 1), &fv("a", "1"));
        assert_eq!(s.radix_tree_nodes(), 2);
    }
}
