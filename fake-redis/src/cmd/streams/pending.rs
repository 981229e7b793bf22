//! The pending entries of consumer groups: `XACK`, `XPENDING`, `XCLAIM` and `XAUTOCLAIM`, in
//! Redis 7.0's order of checks. A child of `streams.rs`, whose ID parsing, stream access and
//! reply helpers it uses.

use super::*;

pub(super) fn xack_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, name) = (args.next_bytes()?, args.next_bytes()?);
    let has_group = read(cx, key)?.is_some_and(|s| s.groups.contains_key(&name[..]));
    if !has_group {
        return Ok(Frame::Integer(0));
    }
    let ids = args.map(|a| strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let s = write_existing(cx, key)?;
    let group = s
        .groups
        .get_mut(&name[..])
        .expect("the command checked that the group exists");
    let acked = ids.into_iter().filter(|&id| group.ack(id)).count();
    if acked > 0 {
        cx.keyspace().touch(key);
    }
    Ok(Frame::Integer(acked as i64))
}

pub(super) fn xpending_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, name) = (args.next_bytes()?, args.next_bytes()?);
    let argc = args.remaining() + 3;
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(super::super::SYNTAX);
    }
    let mut extended = None;
    if argc >= 6 {
        let mut min_idle = 0;
        if args.eat("idle") {
            min_idle = args.next_int()?;
            if argc < 8 {
                return Err(super::super::SYNTAX);
            }
        }
        let rest = args.rest();
        let count = int(&rest[2])?.max(0) as usize;
        let start = interval_id(&rest[0], 0, true)?;
        let end = interval_id(&rest[1], u64::MAX, false)?;
        extended = Some((min_idle, start, end, count, rest.get(3)));
    }
    let now = cx.now;
    let group = read(cx, key)?.and_then(|s| s.groups.get(&name[..]));
    let Some(group) = group else {
        return Err(nogroup_for_key(key, name));
    };
    let Some((min_idle, start, end, count, consumer)) = extended else {
        if group.pel.is_empty() {
            return Ok(Frame::Array(vec![
                Frame::Integer(0),
                Frame::Null,
                Frame::Null,
                Frame::NullArray,
            ]));
        }
        let first = *group.pel.keys().next().expect("not empty");
        let last = *group.pel.keys().next_back().expect("not empty");
        let consumers = group
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .map(|(n, c)| {
                Frame::Array(vec![
                    Frame::Bulk(n.clone()),
                    Frame::Bulk(Bytes::from(c.pel.len().to_string())),
                ])
            })
            .collect();
        return Ok(Frame::Array(vec![
            Frame::Integer(group.pel.len() as i64),
            id_frame(first),
            id_frame(last),
            Frame::Array(consumers),
        ]));
    };
    if start > end {
        return Ok(Frame::Array(Vec::new()));
    }
    let rows = match consumer {
        Some(c) => match group.consumers.get(&c[..]) {
            None => Vec::new(),
            Some(c) => pending_rows(
                c.pel
                    .range(start..=end)
                    .filter_map(|id| group.pel.get_key_value(id)),
                now,
                min_idle,
                count,
            ),
        },
        None => pending_rows(group.pel.range(start..=end), now, min_idle, count),
    };
    Ok(Frame::Array(rows))
}

/// `XPENDING`'s extended rows of `pending` (a range of a PEL, in ID order): those idle at least
/// `min_idle` (0 for all), at most `count`, so the walk stops there.
fn pending_rows<'a>(
    pending: impl Iterator<Item = (&'a StreamId, &'a Pending)>,
    now: i64,
    min_idle: i64,
    count: usize,
) -> Vec<Frame> {
    pending
        .map(|(id, p)| (id, p, now - p.delivery_time))
        .filter(|&(_, _, idle)| min_idle == 0 || idle >= min_idle)
        .take(count)
        .map(|(id, p, idle)| {
            Frame::Array(vec![
                id_frame(*id),
                Frame::Bulk(p.consumer.clone()),
                Frame::Integer(idle.max(0)),
                Frame::Integer(p.delivery_count as i64),
            ])
        })
        .collect()
}

/// The stream at `key` with group `name` for writing, or Redis's `NOGROUP` error.
fn group_mut<'a>(cx: &'a mut Cx<'_>, key: &[u8], name: &[u8]) -> Result<&'a mut Stream, Frame> {
    let found = read(cx, key)?.is_some_and(|s| s.groups.contains_key(name));
    if !found {
        return Err(nogroup_for_key(key, name));
    }
    write_existing(cx, key)
}

/// A claimed entry in a reply: its ID alone, or the entry (a null array if it is gone).
fn claimed_frame(s: &Stream, id: StreamId, justid: bool) -> Frame {
    if justid {
        return id_frame(id);
    }
    match s.get(id) {
        Some(fields) => entry_frame(id, fields),
        None => Frame::NullArray,
    }
}

/// The claims of one `XCLAIM` or `XAUTOCLAIM` for one consumer, created (and so announced) at
/// its first claim, as Redis looks it up only then.
struct Claimer<'a> {
    consumer: &'a Bytes,
    now: i64,
    justid: bool,
    looked_up: bool,
    created: bool,
}

impl<'a> Claimer<'a> {
    fn new(consumer: &'a Bytes, now: i64, justid: bool) -> Claimer<'a> {
        Claimer {
            consumer,
            now,
            justid,
            looked_up: false,
            created: false,
        }
    }

    /// Gives pending entry `id` to the consumer, delivered at `delivery_time`; its delivery
    /// count set to `retry_count` or, unless `JUSTID`, incremented.
    fn claim(
        &mut self,
        group: &mut Group,
        id: StreamId,
        delivery_time: i64,
        retry_count: Option<u64>,
    ) {
        if !self.looked_up {
            self.created = touch_consumer(group, self.consumer, self.now);
            self.looked_up = true;
        }
        group.reassign(id, self.consumer);
        if let Some(c) = group.consumers.get_mut(&self.consumer[..]) {
            c.active_time = self.now;
        }
        if let Some(p) = group.pel.get_mut(&id) {
            p.delivery_time = delivery_time;
            match retry_count {
                Some(n) => p.delivery_count = n,
                None if !self.justid => p.delivery_count += 1,
                None => {}
            }
        }
    }

    /// The end of the command: `WATCH` hears of the change, and of a new consumer its event.
    fn finish(self, cx: &mut Cx<'_>, key: &[u8]) {
        cx.keyspace().touch(key);
        if self.created {
            cx.notify(class::STREAM, "xgroup-createconsumer", key);
        }
    }
}

pub(super) fn xclaim_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, name, consumer) = (args.next_bytes()?, args.next_bytes()?, args.next_bytes()?);
    let min_idle_arg = args.next_bytes()?;
    group_mut(cx, key, name)?;
    let min_idle = int(min_idle_arg)
        .map_err(|_| Frame::error("ERR Invalid min-idle-time argument for XCLAIM"))?
        .max(0);
    let mut ids = Vec::new();
    while let Some(arg) = args.peek() {
        let Ok(id) = strict_id(arg) else { break };
        ids.push(id);
        args.next();
    }
    let now = cx.now;
    let (mut force, mut justid) = (false, false);
    let (mut retry_count, mut delivery_time) = (-1i64, -1i64);
    let mut last_id = StreamId::MIN;
    while let Some(opt) = args.next() {
        let more = args.remaining() > 0;
        let option_int = |args: &mut Args<'_>, what: &str| {
            int(args.next_bytes()?).map_err(|_| {
                Frame::error_owned(format!("ERR Invalid {what} option argument for XCLAIM"))
            })
        };
        if is(opt, "force") {
            force = true;
        } else if is(opt, "justid") {
            justid = true;
        } else if is(opt, "idle") && more {
            // Any integer is taken, so this wraps as Redis's C does; a time out of range
            // becomes now below.
            delivery_time = now.wrapping_sub(option_int(args, "IDLE")?);
        } else if is(opt, "time") && more {
            delivery_time = option_int(args, "TIME")?;
        } else if is(opt, "retrycount") && more {
            retry_count = option_int(args, "RETRYCOUNT")?;
        } else if is(opt, "lastid") && more {
            last_id = strict_id(args.next_bytes()?)?;
        } else {
            return Err(super::super::error_echoing(&[
                b"ERR Unrecognized XCLAIM option '",
                opt,
                b"'",
            ]));
        }
    }
    if delivery_time < 0 || delivery_time > now {
        delivery_time = now;
    }
    let mut claimer = Claimer::new(consumer, now, justid);
    let mut out = Vec::new();
    {
        // The group was found above (the one read Redis counts).
        let s = write_existing(cx, key)?;
        let exists: Vec<bool> = ids.iter().map(|&id| s.contains(id)).collect();
        let group = s
            .groups
            .get_mut(&name[..])
            .expect("the command checked that the group exists");
        if last_id > group.last_id {
            group.last_id = last_id;
        }
        let mut claimed = Vec::new();
        for (&id, exists) in ids.iter().zip(exists) {
            if !exists {
                group.ack(id);
                continue;
            }
            let mut fresh = false;
            if force && !group.pel.contains_key(&id) {
                group.pel.insert(
                    id,
                    Pending {
                        consumer: Bytes::new(),
                        delivery_time: now,
                        delivery_count: 1,
                    },
                );
                fresh = true;
            }
            let Some(p) = group.pel.get(&id) else {
                continue;
            };
            if !fresh && min_idle != 0 && now - p.delivery_time < min_idle {
                continue;
            }
            claimer.claim(group, id, delivery_time, u64::try_from(retry_count).ok());
            claimed.push(id);
        }
        for id in claimed {
            out.push(claimed_frame(s, id, justid));
        }
    }
    claimer.finish(cx, key);
    Ok(Frame::Array(out))
}

pub(super) fn xautoclaim_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, name, consumer) = (args.next_bytes()?, args.next_bytes()?, args.next_bytes()?);
    let min_idle = int(args.next_bytes()?)
        .map_err(|_| Frame::error("ERR Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0);
    let start = interval_id(args.next_bytes()?, 0, true)?;
    let mut count = 100i64;
    let mut justid = false;
    while let Some(opt) = args.next() {
        if is(opt, "count") && args.remaining() > 0 {
            let max = i64::MAX / 16;
            count = match int(args.next_bytes()?) {
                Ok(c) if (1..=max).contains(&c) => c,
                _ => return Err(Frame::error("ERR COUNT must be > 0")),
            };
        } else if is(opt, "justid") {
            justid = true;
        } else {
            return Err(super::super::SYNTAX);
        }
    }
    let now = cx.now;
    let mut claimer = Claimer::new(consumer, now, justid);
    let reply = {
        let s = group_mut(cx, key, name)?;
        let mut attempts = count.saturating_mul(10);
        let mut claimed = Vec::new();
        let mut deleted = Vec::new();
        let mut next = StreamId::MIN;
        // The walk seeks from the ID after the last one looked at, as Redis's iterator does
        // after a removal, so it looks at `attempts` entries and the cursor, never the rest.
        let mut cursor = Some(start);
        loop {
            let id = cursor.and_then(|from| {
                let group = s.groups.get(&name[..])?;
                group.pel.range(from..).next().map(|(id, _)| *id)
            });
            if attempts == 0 || count == 0 {
                next = id.unwrap_or(StreamId::MIN);
                break;
            }
            attempts -= 1;
            let Some(id) = id else {
                break;
            };
            cursor = id.next();
            let exists = s.contains(id);
            let group = s
                .groups
                .get_mut(&name[..])
                .expect("the command checked that the group exists");
            if !exists {
                group.ack(id);
                deleted.push(id);
                count -= 1;
                continue;
            }
            let idle = group.pel.get(&id).map_or(0, |p| now - p.delivery_time);
            if min_idle != 0 && idle < min_idle {
                continue;
            }
            claimer.claim(group, id, now, None);
            claimed.push(id);
            count -= 1;
        }
        Frame::Array(vec![
            id_frame(next),
            Frame::Array(
                claimed
                    .into_iter()
                    .map(|id| claimed_frame(s, id, justid))
                    .collect(),
            ),
            Frame::Array(deleted.into_iter().map(id_frame).collect()),
        ])
    };
    claimer.finish(cx, key);
    Ok(reply)
}
