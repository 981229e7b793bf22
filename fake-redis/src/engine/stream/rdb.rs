//! A stream in Redis's RDB layouts, for `DUMP` and `RESTORE`: 7.0's
//! (`RDB_TYPE_STREAM_LISTPACKS_2`) and 7.2's (`_3`, which adds each consumer's active time) both
//! ways, and 5.0's (`RDB_TYPE_STREAM_LISTPACKS`, without the counters) read as Redis reads it;
//! beside the stream because it reads and builds the nodes the stream keeps private.
//!
//! Each node is written as Redis's listpack: a master entry (live count, deleted count, the
//! master field names, a zero), then each entry as flags, ID deltas from the node's master ID,
//! its fields (values only when its field names are the master's) and its element count. The
//! fake keeps the nodes Redis would have (same splits, deleted entries kept and flagged), so the
//! bytes are Redis's. After the nodes come the counters and the consumer groups with their
//! pending entries and consumers, in name and ID order, as Redis's radix trees iterate.

use super::{Consumer, FLAG_DELETED, FLAG_SAMEFIELDS, Group, Node, Pending, Stream, StreamId};
use crate::engine::rdb::{
    BadData, Listpack, Reader, StreamLayout, listpack_entries, put_len, put_string,
};
use bytes::Bytes;
use std::collections::BTreeSet;

fn push_int(lp: &mut Listpack, v: i64) {
    lp.push(v.to_string().as_bytes());
}

/// The listpack of one node.
fn node_listpack(node: &Node) -> Vec<u8> {
    let mut lp = Listpack::new();
    let master = node.master();
    let names = node.master_names();
    push_int(&mut lp, node.live as i64);
    push_int(&mut lp, (node.count - node.live) as i64);
    push_int(&mut lp, names.len() as i64);
    for f in &names {
        lp.push(&node.buf[f.clone()]);
    }
    push_int(&mut lp, 0);
    for e in node.entries() {
        let same = e.flags & FLAG_SAMEFIELDS != 0;
        let fields = node.field_ranges(&e, &names);
        let n = (fields.len() / 2) as i64;
        push_int(&mut lp, i64::from(e.flags));
        push_int(&mut lp, e.id.ms.wrapping_sub(master.ms) as i64);
        push_int(&mut lp, e.id.seq.wrapping_sub(master.seq) as i64);
        if same {
            for v in fields.iter().skip(1).step_by(2) {
                lp.push(&node.buf[v.clone()]);
            }
            push_int(&mut lp, n + 3);
        } else {
            push_int(&mut lp, n);
            for f in &fields {
                lp.push(&node.buf[f.clone()]);
            }
            push_int(&mut lp, 2 * n + 4);
        }
    }
    lp.finish()
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

impl Stream {
    /// Writes the stream's RDB body (after its type byte) in `layout`, 7.0's or 7.2's.
    pub(crate) fn put_rdb(&self, out: &mut Vec<u8>, layout: StreamLayout) {
        put_len(out, self.nodes.len() as u64);
        for node in &self.nodes {
            put_string(out, &node.master().key());
            put_string(out, &node_listpack(node));
        }
        put_len(out, self.length);
        put_id(out, self.last_id);
        put_id(out, self.first_id());
        put_id(out, self.max_deleted_id);
        put_len(out, self.entries_added);
        put_len(out, self.groups.len() as u64);
        for (name, group) in &self.groups {
            put_string(out, name);
            put_id(out, group.last_id);
            // An unknown read counter is -1, written as the 64-bit length it casts to.
            put_len(out, group.entries_read as u64);
            put_len(out, group.pel.len() as u64);
            for (id, pending) in &group.pel {
                out.extend_from_slice(&id.key());
                out.extend_from_slice(&pending.delivery_time.to_le_bytes());
                put_len(out, pending.delivery_count);
            }
            put_len(out, group.consumers.len() as u64);
            for (name, consumer) in &group.consumers {
                put_string(out, name);
                out.extend_from_slice(&consumer.seen_time.to_le_bytes());
                if layout >= StreamLayout::V3 {
                    out.extend_from_slice(&consumer.active_time.to_le_bytes());
                }
                put_len(out, consumer.pel.len() as u64);
                for id in &consumer.pel {
                    out.extend_from_slice(&id.key());
                }
            }
        }
    }

    /// Reads a stream's RDB body in `layout`: every node and counter checked, anything
    /// inconsistent an error.
    pub(crate) fn load_rdb(r: &mut Reader<'_>, layout: StreamLayout) -> Result<Stream, BadData> {
        let mut stream = Stream::default();
        let nodes = r.len()?;
        for _ in 0..nodes {
            let key = r.string()?;
            let key = key.as_slice();
            if key.len() != 16 {
                return Err(BadData);
            }
            let master = raw_id(key)?;
            let lp = r.string()?;
            let node = parse_node(master, lp.as_slice())?;
            if stream.nodes.last().is_some_and(|last| last.last >= master) {
                return Err(BadData);
            }
            stream.length += node.live as u64;
            stream.nodes.push(node);
        }
        let length = r.len()?;
        if length != stream.length {
            return Err(BadData);
        }
        stream.last_id = read_id(r)?;
        // New IDs are drawn above the last one, so no entry may lie past it.
        if stream.nodes.last().is_some_and(|n| n.last > stream.last_id) {
            return Err(BadData);
        }
        if layout >= StreamLayout::V2 {
            let _first = read_id(r)?;
            stream.max_deleted_id = read_id(r)?;
            stream.entries_added = r.len()?;
        } else {
            // Redis's start for a stream saved before the counters: as many added as it holds,
            // nothing known deleted.
            stream.entries_added = stream.length;
        }
        let groups = r.len()?;
        for _ in 0..groups {
            let name = r.bytes()?;
            let last_id = read_id(r)?;
            let entries_read = if layout >= StreamLayout::V2 {
                r.len()? as i64
            } else {
                stream.estimate_entries_read(last_id)
            };
            let mut group = Group::new(last_id, entries_read);
            let pel = r.len()?;
            for _ in 0..pel {
                let id = raw_id(r.take(16)?)?;
                let delivery_time = read_ms(r)?;
                let delivery_count = r.len()?;
                group.pel.insert(
                    id,
                    Pending {
                        consumer: Bytes::new(),
                        delivery_time,
                        delivery_count,
                    },
                );
            }
            let consumers = r.len()?;
            for _ in 0..consumers {
                let cname = r.bytes()?;
                let seen_time = read_ms(r)?;
                // Without it, Redis takes the seen time as the best guess.
                let active_time = if layout >= StreamLayout::V3 {
                    read_ms(r)?
                } else {
                    seen_time
                };
                let mut owned = BTreeSet::new();
                let n = r.len()?;
                for _ in 0..n {
                    let id = raw_id(r.take(16)?)?;
                    // A consumer's pending entry must be one of its group's.
                    let pending = group.pel.get_mut(&id).ok_or(BadData)?;
                    pending.consumer = cname.clone();
                    owned.insert(id);
                }
                group.consumers.insert(
                    cname,
                    Consumer {
                        seen_time,
                        active_time,
                        pel: owned,
                    },
                );
            }
            if stream.groups.insert(name, group).is_some() {
                return Err(BadData);
            }
        }
        Ok(stream)
    }
}

/// A time in milliseconds, eight bytes little-endian.
fn read_ms(r: &mut Reader<'_>) -> Result<i64, BadData> {
    Ok(i64::from_le_bytes(
        r.take(8)?.try_into().map_err(|_| BadData)?,
    ))
}

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, BadData> {
    Ok(StreamId {
        ms: r.len()?,
        seq: r.len()?,
    })
}

/// An ID in its 16-byte big-endian key form.
fn raw_id(key: &[u8]) -> Result<StreamId, BadData> {
    if key.len() != 16 {
        return Err(BadData);
    }
    Ok(StreamId {
        ms: u64::from_be_bytes(key[..8].try_into().map_err(|_| BadData)?),
        seq: u64::from_be_bytes(key[8..].try_into().map_err(|_| BadData)?),
    })
}

/// A node from its master ID and listpack.
fn parse_node(master: StreamId, lp: &[u8]) -> Result<Node, BadData> {
    let elements = listpack_entries(lp)?;
    let mut rest: Vec<&Bytes> = elements.iter().collect();
    rest.reverse();
    let mut pop = || rest.pop().ok_or(BadData);
    let as_int = |e: &Bytes| crate::resp::number::parse_i64(e).ok_or(BadData);
    let count = |e: &Bytes| usize::try_from(as_int(e)?).map_err(|_| BadData);
    let live = count(pop()?)?;
    let deleted = count(pop()?)?;
    let master_count = count(pop()?)?;
    let mut master_fields = Vec::new();
    for _ in 0..master_count {
        master_fields.push(pop()?.clone());
    }
    if as_int(pop()?)? != 0 {
        return Err(BadData);
    }
    let mut node: Option<Node> = None;
    while let Ok(flags) = pop() {
        let flags = as_int(flags)?;
        let ms = master.ms.wrapping_add(as_int(pop()?)? as u64);
        let seq = master.seq.wrapping_add(as_int(pop()?)? as u64);
        let id = StreamId { ms, seq };
        let mut fields = Vec::new();
        if flags & i64::from(FLAG_SAMEFIELDS) != 0 {
            for f in &master_fields {
                fields.push(f.clone());
                fields.push(pop()?.clone());
            }
        } else {
            let n = usize::try_from(as_int(pop()?)?).map_err(|_| BadData)?;
            for _ in 0..n.checked_mul(2).ok_or(BadData)? {
                fields.push(pop()?.clone());
            }
        }
        let _count = pop()?;
        let deleted = flags & i64::from(FLAG_DELETED) != 0;
        match &mut node {
            None if id == master => {
                // The first entry's field names are the node's master ones from here on.
                let mut first = Node::new(id, &fields);
                first.push(id, &fields, true, deleted);
                node = Some(first);
            }
            Some(node) if node.last < id => {
                let same = node.same_fields(&fields);
                node.push(id, &fields, same, deleted);
            }
            _ => return Err(BadData),
        }
    }
    let Some(mut node) = node else {
        return Err(BadData);
    };
    // A node may hold no live entry: an exact trim by MINID stops at the node's last ID even when
    // XDEL had already marked it, and Redis keeps such a node and loads it back.
    if node.live != live || node.count - live != deleted {
        return Err(BadData);
    }
    node.bytes = lp.len();
    node.buf.shrink_to_fit();
    Ok(node)
}
