//! A stream value: entries by ID, the counters Redis keeps beside them, and consumer groups.
//!
//! Redis stores a stream as a radix tree of listpack nodes, and that layout shows through its
//! replies: `XTRIM ~` removes whole nodes only, and `XINFO STREAM` reports how many nodes and
//! radix-tree nodes there are. So the entries here are kept in the same nodes, split where
//! Redis splits them (100 entries, deleted ones included, or 4096 bytes of listpack), with the
//! listpack's size counted by its encoding rules; an entry `XDEL` removes stays in its node,
//! marked, until the node empties, as in Redis. A small stream is one node.
//!
//! Each node packs its entries into one buffer as a listpack does (see [`Node`]): an entry is
//! its ID's deltas from the node's master ID, a flags byte and its values, with its field names
//! only when they are not the master entry's. About a dozen bytes for a small entry, against
//! three heap blocks an entry as separate values. Reads decode a node: [`Stream::get`] and
//! [`Stream::range`] hand out the fields as owned [`Bytes`].
//!
//! Consumer groups, their pending entries (PEL) and consumers are ordered maps by name and by
//! ID, as Redis's radix trees order them, so every listing is in Redis's order.

use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;

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

/// How large a node may grow before an append starts the next one: Redis's
/// `stream-node-max-bytes` and `stream-node-max-entries`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLimits {
    /// Bytes of a node's listpack; 0 for Redis's own cap.
    pub bytes: usize,
    /// Entries of a node, deleted ones included; 0 for no count.
    pub entries: usize,
}

/// Redis's cap on a node's listpack, whatever `stream-node-max-bytes` says.
const NODE_BYTES_CAP: usize = 1 << 30;

impl Default for NodeLimits {
    /// Redis's defaults.
    fn default() -> NodeLimits {
        NodeLimits {
            bytes: 4096,
            entries: 100,
        }
    }
}

impl NodeLimits {
    /// Redis's `streamAppendItem` test: whether `node` takes `more` bytes of fields.
    fn fits(self, node: &Node, more: usize) -> bool {
        let max = match self.bytes {
            0 => NODE_BYTES_CAP,
            b => b.min(NODE_BYTES_CAP),
        };
        node.bytes.saturating_add(more) < max && (self.entries == 0 || node.count < self.entries)
    }

    /// The work bound of an approximate trim without `LIMIT`: a hundred nodes' entries,
    /// within Redis's bounds.
    pub fn default_trim_limit(self) -> u64 {
        match (self.entries as u64).saturating_mul(100) {
            0 => 10_000,
            n => n.min(1_000_000),
        }
    }
}

/// An entry's flag: `XDEL` (or an exact trim) removed it; it stays until its node empties.
const FLAG_DELETED: u8 = 1;
/// An entry's flag: its field names are the master entry's, so only its values are stored.
const FLAG_SAMEFIELDS: u8 = 2;

/// Appends `v` as a LEB128 varint: 7 bits a byte, low first, the high bit set on all but the
/// last.
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Reads the varint at `*pos` and moves past it.
fn get_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// A varint's length, then the bytes.
fn put_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    put_varint(buf, s.len() as u64);
    buf.extend_from_slice(s);
}

/// The range in `buf` of the length-prefixed bytes at `*pos`, moving past them.
fn get_bytes(buf: &[u8], pos: &mut usize) -> Range<usize> {
    let len = get_varint(buf, pos) as usize;
    let start = *pos;
    *pos += len;
    start..*pos
}

/// A signed delta folded so that small magnitudes of either sign make small varints.
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

/// One entry of a node as its header decodes: where it starts (its flags byte), its ID, its
/// flags, and where its fields start.
#[derive(Clone, Copy, Debug)]
struct Raw {
    at: usize,
    id: StreamId,
    flags: u8,
    body: usize,
}

impl Raw {
    fn deleted(&self) -> bool {
        self.flags & FLAG_DELETED != 0
    }
}

/// One listpack node, packed as Redis's listpack packs it, in one buffer:
///
/// - the master entry's field names: their count, then each, length-prefixed (varints);
/// - then each entry, in ID order (the first is the master entry, at the node's master ID): a
///   flags byte ([`FLAG_DELETED`], [`FLAG_SAMEFIELDS`]), the ID's deltas from the master ID (the
///   ms part's as a varint, the seq part's zigzagged, as it may go down when ms goes up), then
///   either the values alone (same field names as the master entry) or the pair count and each
///   field and value, each length-prefixed.
///
/// Beside the buffer: the master and last IDs, how many entries there are, deleted ones
/// included, how many are live, and the size Redis's listpack of these entries would have,
/// which decides the splits.
#[derive(Clone, Debug, PartialEq)]
struct Node {
    master: StreamId,
    last: StreamId,
    count: usize,
    live: usize,
    bytes: usize,
    /// Where the first entry starts in `buf`.
    start: usize,
    buf: Vec<u8>,
}

impl Node {
    /// An empty node at master ID `master` whose master field names are those of `fields`
    /// (fields and values alternating).
    fn new(master: StreamId, fields: &[Bytes]) -> Node {
        let mut buf = Vec::new();
        put_varint(&mut buf, fields.len().div_ceil(2) as u64);
        for f in fields.iter().step_by(2) {
            put_bytes(&mut buf, f);
        }
        Node {
            master,
            last: master,
            count: 0,
            live: 0,
            bytes: 0,
            start: buf.len(),
            buf,
        }
    }

    fn master(&self) -> StreamId {
        self.master
    }

    /// The master field names' ranges in `buf`.
    fn master_names(&self) -> Vec<Range<usize>> {
        let mut pos = 0;
        let n = get_varint(&self.buf, &mut pos);
        (0..n).map(|_| get_bytes(&self.buf, &mut pos)).collect()
    }

    /// Whether `fields` has the master entry's field names, in order.
    fn same_fields(&self, fields: &[Bytes]) -> bool {
        let mut pos = 0;
        let n = get_varint(&self.buf, &mut pos) as usize;
        fields.len() == 2 * n
            && fields.iter().step_by(2).all(|f| {
                let name = get_bytes(&self.buf, &mut pos);
                self.buf[name] == f[..]
            })
    }

    /// Appends entry `id` (above the node's last) with `fields`, whose names are the master
    /// entry's if `same`.
    fn push(&mut self, id: StreamId, fields: &[Bytes], same: bool, deleted: bool) {
        let buf = &mut self.buf;
        let mut flags = if same { FLAG_SAMEFIELDS } else { 0 };
        if deleted {
            flags |= FLAG_DELETED;
        }
        buf.push(flags);
        put_varint(buf, id.ms.wrapping_sub(self.master.ms));
        put_varint(buf, zigzag(id.seq.wrapping_sub(self.master.seq) as i64));
        if same {
            for v in fields.iter().skip(1).step_by(2) {
                put_bytes(buf, v);
            }
        } else {
            put_varint(buf, (fields.len() / 2) as u64);
            for f in fields {
                put_bytes(buf, f);
            }
        }
        self.count += 1;
        if !deleted {
            self.live += 1;
        }
        self.last = id;
    }

    /// The entries' headers, in order.
    fn entries(&self) -> Entries<'_> {
        let mut pos = 0;
        let names = get_varint(&self.buf, &mut pos) as usize;
        Entries {
            node: self,
            names,
            pos: self.start,
        }
    }

    /// The entry `id`, if the node has it (deleted or not).
    fn find(&self, id: StreamId) -> Option<Raw> {
        if id < self.master || id > self.last {
            return None;
        }
        self.entries()
            .take_while(|e| e.id <= id)
            .find(|e| e.id == id)
    }

    /// Calls `f` with the range in `buf` of each of entry `e`'s fields and values, alternating;
    /// `names` are the master entry's ([`Node::master_names`]).
    fn each_field(&self, e: &Raw, names: &[Range<usize>], mut f: impl FnMut(Range<usize>)) {
        let mut pos = e.body;
        if e.flags & FLAG_SAMEFIELDS != 0 {
            for name in names {
                f(name.clone());
                f(get_bytes(&self.buf, &mut pos));
            }
        } else {
            let n = get_varint(&self.buf, &mut pos) as usize;
            for _ in 0..2 * n {
                f(get_bytes(&self.buf, &mut pos));
            }
        }
    }

    /// The ranges in `buf` of entry `e`'s fields and values, alternating.
    fn field_ranges(&self, e: &Raw, names: &[Range<usize>]) -> Vec<Range<usize>> {
        let mut out = Vec::with_capacity(2 * names.len());
        self.each_field(e, names, |r| out.push(r));
        out
    }

    /// Entry `e`'s fields and values, alternating, each an exact-size copy.
    fn fields(&self, e: &Raw) -> Vec<Bytes> {
        let names = self.master_names();
        let mut out = Vec::with_capacity(2 * names.len());
        self.each_field(e, &names, |r| {
            out.push(Bytes::copy_from_slice(&self.buf[r]))
        });
        out
    }

    /// Marks entry `e` deleted (it was live).
    fn mark_deleted(&mut self, e: &Raw) {
        self.buf[e.at] |= FLAG_DELETED;
        self.live -= 1;
    }
}

/// The iterator of [`Node::entries`].
struct Entries<'a> {
    node: &'a Node,
    /// How many master field names there are (the values a same-fields entry has).
    names: usize,
    pos: usize,
}

impl Iterator for Entries<'_> {
    type Item = Raw;

    fn next(&mut self) -> Option<Raw> {
        let buf = &self.node.buf;
        if self.pos >= buf.len() {
            return None;
        }
        let at = self.pos;
        let mut pos = at + 1;
        let flags = buf[at];
        let master = self.node.master;
        let ms = master.ms.wrapping_add(get_varint(buf, &mut pos));
        let seq = master
            .seq
            .wrapping_add(unzigzag(get_varint(buf, &mut pos)) as u64);
        let body = pos;
        let values = if flags & FLAG_SAMEFIELDS != 0 {
            self.names
        } else {
            2 * get_varint(buf, &mut pos) as usize
        };
        for _ in 0..values {
            get_bytes(buf, &mut pos);
        }
        self.pos = pos;
        Some(Raw {
            at,
            id: StreamId { ms, seq },
            flags,
            body,
        })
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
    if let Some(v) = crate::resp::number::parse_i64(s) {
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
    /// When it was last given an entry (delivered without `NOACK`, or claimed), unix ms; -1
    /// while never (Redis 7.2's `active-time`).
    pub active_time: i64,
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

    /// The first live entry's ID, if any.
    fn first_live(&self) -> Option<StreamId> {
        let node = self.nodes.iter().find(|n| n.live > 0)?;
        node.entries().find(|e| !e.deleted()).map(|e| e.id)
    }

    /// The first entry's ID, `0-0` when empty (Redis's recorded first ID).
    pub fn first_id(&self) -> StreamId {
        self.first_live().unwrap_or(StreamId::MIN)
    }

    /// The last entry's ID, `0-0` when empty.
    pub fn last_entry_id(&self) -> StreamId {
        self.nodes
            .iter()
            .rev()
            .find(|n| n.live > 0)
            .and_then(|n| n.entries().filter(|e| !e.deleted()).last())
            .map_or(StreamId::MIN, |e| e.id)
    }

    /// Appends an entry with an ID the caller checked is above `last_id`.
    ///
    /// The entry goes into its node's buffer: its values as exact-size bytes, and its field
    /// names too unless they are the node's master entry's, which the node holds once (as
    /// Redis's listpack does).
    pub fn append(&mut self, id: StreamId, fields: &[Bytes], limits: NodeLimits) {
        let total: usize = fields.iter().map(|f| f.len()).sum();
        let fits = self.nodes.last().is_some_and(|n| limits.fits(n, total));
        if fits {
            let node = self.nodes.last_mut().expect("checked");
            let same = node.same_fields(fields);
            node.bytes += item_bytes(node.master(), id, fields, same);
            node.push(id, fields, same, false);
        } else {
            // A node that is full takes no more entries: its spare room goes.
            if let Some(full) = self.nodes.last_mut() {
                full.buf.shrink_to_fit();
            }
            let mut node = Node::new(id, fields);
            node.bytes = new_node_bytes(fields);
            node.push(id, fields, true, false);
            self.nodes.push(node);
        }
        self.length += 1;
        self.entries_added = self.entries_added.wrapping_add(1);
        self.last_id = id;
    }

    /// The node that would hold `id`, by index.
    fn node_of(&self, id: StreamId) -> Option<usize> {
        self.nodes
            .partition_point(|n| n.master() <= id)
            .checked_sub(1)
    }

    /// Whether entry `id` is there.
    pub fn contains(&self, id: StreamId) -> bool {
        self.node_of(id)
            .and_then(|n| self.nodes[n].find(id))
            .is_some_and(|e| !e.deleted())
    }

    /// The fields and values of entry `id` (alternating, decoded from its node), if it is there.
    pub fn get(&self, id: StreamId) -> Option<Vec<Bytes>> {
        let node = &self.nodes[self.node_of(id)?];
        let e = node.find(id).filter(|e| !e.deleted())?;
        Some(node.fields(&e))
    }

    /// Live entries from `start` to `end` (inclusive), reversed if `rev`, at most `count` (0
    /// for all), each with its fields and values (alternating).
    ///
    /// Each node read is copied once into a shared buffer, which the entries' fields slice.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
        count: usize,
    ) -> Vec<(StreamId, Vec<Bytes>)> {
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
        let take = if count == 0 { usize::MAX } else { count };
        let read = |node: &Node, out: &mut Vec<(StreamId, Vec<Bytes>)>| {
            if node.live == 0 || node.last < start {
                return;
            }
            let mut entries: Vec<Raw> = node
                .entries()
                .filter(|e| !e.deleted() && e.id >= start && e.id <= end)
                .collect();
            if entries.is_empty() {
                return;
            }
            if rev {
                entries.reverse();
            }
            entries.truncate(take - out.len());
            let shared = Bytes::copy_from_slice(&node.buf);
            let names = node.master_names();
            for e in &entries {
                let mut fields = Vec::with_capacity(2 * names.len());
                node.each_field(e, &names, |r| fields.push(shared.slice(r)));
                out.push((e.id, fields));
            }
        };
        if rev {
            for node in nodes.iter().rev() {
                if out.len() >= take {
                    break;
                }
                read(node, &mut out);
            }
        } else {
            for node in nodes {
                if out.len() >= take {
                    break;
                }
                read(node, &mut out);
            }
        }
        out
    }

    /// Deletes entry `id`: whether it was there. `max_deleted_id` is the caller's.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some(ni) = self.node_of(id) else {
            return false;
        };
        let node = &mut self.nodes[ni];
        let Some(e) = node.find(id).filter(|e| !e.deleted()) else {
            return false;
        };
        node.mark_deleted(&e);
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
                Trim::MinId(min) => node.last < min,
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
            let all: Vec<Raw> = node.entries().collect();
            for e in &all {
                let stop = match trim {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => e.id >= min,
                };
                if stop {
                    break;
                }
                if !e.deleted() {
                    node.mark_deleted(e);
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
            s.append(id(i, 0), &fv("a", "1"), NodeLimits::default());
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
        s.append(id(1, 0), &fv("a", "1"), NodeLimits::default());
        s.append(id(2, 0), &fv("b", "2"), NodeLimits::default());
        assert!(s.delete(id(1, 0)));
        assert!(!s.delete(id(1, 0)));
        assert_eq!(s.get(id(2, 0)).map(|f| f.len()), Some(2));
        assert!(s.delete(id(2, 0)));
        assert_eq!((s.node_count(), s.radix_tree_nodes()), (0, 1));
    }

    #[test]
    fn an_entry_keeps_its_values_in_its_nodes_buffer_not_the_requests() {
        let mut s = Stream::default();
        let request = Bytes::from_static(b"XADD s 2-0 a 1 b 2");
        s.append(
            id(1, 0),
            &fv("a", "0")
                .into_iter()
                .chain(fv("b", "0"))
                .collect::<Vec<_>>(),
            NodeLimits::default(),
        );
        let fields = [11..12, 13..14, 15..16, 17..18].map(|r| request.slice(r));
        s.append(id(2, 0), &fields, NodeLimits::default());
        let entry = s.get(id(2, 0)).expect("the second entry");
        assert_eq!(entry, &fields[..]);
        for value in &entry {
            assert!(!request.as_ptr_range().contains(&value.as_ptr()));
        }
        // The master's names once, then per entry: flags, two ID deltas, two one-byte values
        // with their lengths.
        assert_eq!(s.nodes[0].buf.len(), 5 + 7 + 7);
    }

    #[test]
    fn varints_and_zigzag_round_trip() {
        for v in [
            0,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut buf = vec![0xaa];
            put_varint(&mut buf, v);
            let mut pos = 1;
            assert_eq!(get_varint(&buf, &mut pos), v);
            assert_eq!(pos, buf.len());
        }
        for v in [0, 1, -1, 63, -64, 64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }

    #[test]
    fn a_node_decodes_what_it_encodes() {
        let master = id(5, 10);
        let shared: Vec<Bytes> = ["a", "1", "b", ""]
            .iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect();
        let other: Vec<Bytes> = ["x", "long value", "a", "9"]
            .iter()
            .map(|s| Bytes::copy_from_slice(s.as_bytes()))
            .collect();
        let mut node = Node::new(master, &shared);
        node.push(master, &shared, true, false);
        // The seq part goes down as the ms part goes up: a negative delta.
        node.push(id(6, 0), &other, node.same_fields(&other), true);
        node.push(
            id(u64::MAX, u64::MAX),
            &shared,
            node.same_fields(&shared),
            false,
        );
        assert!(node.same_fields(&shared));
        assert!(!node.same_fields(&other));
        assert!(!node.same_fields(&shared[..2]));
        let entries: Vec<Raw> = node.entries().collect();
        let ids: Vec<StreamId> = entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, [master, id(6, 0), id(u64::MAX, u64::MAX)]);
        let deleted: Vec<bool> = entries.iter().map(Raw::deleted).collect();
        assert_eq!(deleted, [false, true, false]);
        assert_eq!(node.fields(&entries[0]), shared);
        assert_eq!(node.fields(&entries[1]), other);
        assert_eq!(node.fields(&entries[2]), shared);
        assert_eq!(
            (node.count, node.live, node.last),
            (3, 2, id(u64::MAX, u64::MAX))
        );
        assert!(node.find(id(6, 0)).is_some_and(|e| e.deleted()));
        assert!(node.find(id(6, 1)).is_none());
        assert!(node.find(id(5, 9)).is_none());
        let e = node.find(master).expect("the master entry");
        node.mark_deleted(&e);
        assert!(node.find(master).is_some_and(|e| e.deleted()));
        assert_eq!(node.live, 1);
    }

    #[test]
    fn one_key_makes_two_rax_nodes() {
        let mut s = Stream::default();
        s.append(id(1, 1), &fv("a", "1"), NodeLimits::default());
        assert_eq!(s.radix_tree_nodes(), 2);
    }

    mod model {
        use super::*;
        use crate::engine::rdb::{Reader, StreamLayout};
        use proptest::prelude::*;

        /// The live entries a stream should hold, in ID order.
        type Model = Vec<(StreamId, Vec<Bytes>)>;

        fn fields(layout: u8, value: usize, len: usize) -> Vec<Bytes> {
            let names: &[&str] = match layout % 4 {
                0 => &["f"],
                1 => &["f", "g"],
                2 => &["g", "f"],
                _ => &["123", ""],
            };
            names
                .iter()
                .enumerate()
                .flat_map(|(k, n)| {
                    let v = format!("{value}:{k}").repeat(1 + len / 4);
                    [Bytes::copy_from_slice(n.as_bytes()), Bytes::from(v)]
                })
                .collect()
        }

        fn check(s: &Stream, model: &Model, probes: &[(u64, u64, bool, usize)]) {
            assert_eq!(s.len(), model.len() as u64);
            assert_eq!(s.first_id(), model.first().map_or(StreamId::MIN, |e| e.0));
            assert_eq!(
                s.last_entry_id(),
                model.last().map_or(StreamId::MIN, |e| e.0)
            );
            assert_eq!(&s.range(StreamId::MIN, StreamId::MAX, false, 0), model);
            for (id, fields) in model {
                assert!(s.contains(*id));
                assert_eq!(s.get(*id).as_ref(), Some(fields));
            }
            for &(a, b, rev, count) in probes {
                let (start, end) = (id(a, 0), id(b, 1));
                let mut want: Model = model
                    .iter()
                    .filter(|e| e.0 >= start && e.0 <= end)
                    .cloned()
                    .collect();
                if rev {
                    want.reverse();
                }
                if count > 0 {
                    want.truncate(count);
                }
                assert_eq!(s.range(start, end, rev, count), want);
                let missing = id(a, 7);
                if !model.iter().any(|e| e.0 == missing) {
                    assert!(!s.contains(missing) && s.get(missing).is_none());
                }
            }
            let nodes_live: usize = s.nodes.iter().map(|n| n.live).sum();
            assert_eq!(nodes_live as u64, s.len());
            for n in &s.nodes {
                assert_eq!(n.entries().count(), n.count);
                assert_eq!(n.entries().filter(|e| !e.deleted()).count(), n.live);
                assert_eq!(n.entries().last().map(|e| e.id), Some(n.last));
            }
            // DUMP's payload restores to a stream with the same entries and the same payload,
            // a node that an exact trim left without live entries included.
            let mut dump = Vec::new();
            s.put_rdb(&mut dump, StreamLayout::V3);
            let loaded = Stream::load_rdb(&mut Reader::new(&dump), StreamLayout::V3)
                .expect("a valid payload");
            let mut again = Vec::new();
            loaded.put_rdb(&mut again, StreamLayout::V3);
            assert_eq!(dump, again);
            assert_eq!(&loaded.range(StreamId::MIN, StreamId::MAX, false, 0), model);
            assert_eq!(loaded.node_count(), s.node_count());
        }

        proptest! {
            /// Whatever the appends (same or other field names than the node's master entry,
            /// small and large values), deletions and trims, the stream holds a model's entries:
            /// gets, ranges both ways with counts, first and last IDs, and a DUMP round trip
            /// agree; exact trims keep what the model keeps, approximate ones a prefix of it.
            #[test]
            fn entries_match_a_model(
                ops in prop::collection::vec(
                    (0u8..10, 0u8..4, 0usize..700, 0u64..3, 0u64..4),
                    1..600,
                ),
                probes in prop::collection::vec((0u64..400, 0u64..400, any::<bool>(), 0usize..5), 6),
            ) {
                let mut s = Stream::default();
                let mut model: Model = Vec::new();
                let mut next = id(1, 0);
                for (step, (op, layout, len, a, b)) in ops.into_iter().enumerate() {
                    match op {
                        0..=5 => {
                            let fields = fields(layout, step, if a == 0 { len } else { len % 8 });
                            s.append(next, &fields, NodeLimits::default());
                            model.push((next, fields));
                            next = if b == 0 { id(next.ms + a, 0) } else { id(next.ms + a, next.seq + b) };
                            if next <= s.last_id {
                                next = s.last_id.next().expect("small IDs");
                            }
                        }
                        6 | 7 => {
                            let target = if model.is_empty() {
                                id(len as u64, 0)
                            } else {
                                model[len % model.len()].0
                            };
                            let was = model.iter().position(|e| e.0 == target);
                            prop_assert_eq!(s.delete(target), was.is_some());
                            if let Some(k) = was {
                                model.remove(k);
                            }
                        }
                        _ => {
                            let approx = a == 1;
                            let limit = if b == 3 { 150 } else { 0 };
                            let trim = if op == 8 {
                                Trim::MaxLen(len as u64 % 250)
                            } else {
                                Trim::MinId(id(len as u64 / 2, 0))
                            };
                            let exact = match trim {
                                Trim::MaxLen(max) => model.len().saturating_sub(max as usize),
                                Trim::MinId(min) => model.iter().take_while(|e| e.0 < min).count(),
                            };
                            let went = s.trim(trim, approx, if approx { limit } else { 0 }) as usize;
                            if approx {
                                prop_assert!(went <= exact);
                            } else {
                                prop_assert_eq!(went, exact);
                            }
                            model.drain(..went);
                        }
                    }
                }
                check(&s, &model, &probes);
            }
        }
    }
}
