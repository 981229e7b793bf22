//! Set commands: membership, cardinality, random draws, the algebra (union, intersection,
//! difference, with and without a destination), moving a member between sets, and `SSCAN`.
//!
//! A set is an [`engine::set::Set`](crate::engine::set::Set): members in a vector with a hash
//! index, so that iteration is deterministic (the order members came in), a random draw is one
//! position, and `SSCAN` pages from a cursor. Redis leaves a hash-table set's order unspecified, so
//! the differential tests compare these replies as multisets. Random draws (`SPOP`,
//! `SRANDMEMBER`) come from the engine's seeded generator, one draw per member picked: one seed,
//! one run, at a cost in proportion to the count, not to the set. As in Redis, a set left empty
//! is deleted, a write keeps the key's TTL, and a `…STORE` replaces its destination (of any
//! type, dropping its TTL) or deletes it when the result is empty.

use super::{Args, CmdResult, Cx, Spec, WRITE, WRONGTYPE, int};
use crate::engine::db::Value;
use crate::engine::set::Set;
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static SADD: Spec = Spec::new("sadd", -3, WRITE, sadd_command);
pub(crate) static SREM: Spec = Spec::new("srem", -3, WRITE, srem_command);
pub(crate) static SMEMBERS: Spec = Spec::new("smembers", 2, 0, smembers_command);
pub(crate) static SISMEMBER: Spec = Spec::new("sismember", 3, 0, sismember_command);
pub(crate) static SMISMEMBER: Spec = Spec::new("smismember", -3, 0, smismember_command);
pub(crate) static SCARD: Spec = Spec::new("scard", 2, 0, scard_command);
pub(crate) static SPOP: Spec = Spec::new("spop", -2, WRITE, spop_command);
pub(crate) static SRANDMEMBER: Spec = Spec::new("srandmember", -2, 0, srandmember_command);
pub(crate) static SUNION: Spec = Spec::new("sunion", -2, 0, algebra_command);
pub(crate) static SINTER: Spec = Spec::new("sinter", -2, 0, algebra_command);
pub(crate) static SDIFF: Spec = Spec::new("sdiff", -2, 0, algebra_command);
pub(crate) static SUNIONSTORE: Spec =
    Spec::new("sunionstore", -3, WRITE, algebra_command).with_reads(super::ReadRule::Except(1));
pub(crate) static SINTERSTORE: Spec =
    Spec::new("sinterstore", -3, WRITE, algebra_command).with_reads(super::ReadRule::Except(1));
pub(crate) static SDIFFSTORE: Spec =
    Spec::new("sdiffstore", -3, WRITE, algebra_command).with_reads(super::ReadRule::Except(1));
pub(crate) static SMOVE: Spec = Spec::new("smove", 4, WRITE, smove_command);
pub(crate) static SSCAN: Spec = Spec::new("sscan", -3, 0, sscan_command);
pub(crate) static SINTERCARD: Spec = Spec::new("sintercard", -3, 0, sintercard_command);

type Members = Set;

super::aggregate!(Members, Set, wrap: Value::Set, is_empty: Members::is_empty);

/// The set at `key` (None when missing), WRONGTYPE for another type.
fn read<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<Option<&'a Members>, Frame> {
    super::read_aggregate(cx, key)
}

/// The set at `key` for writing, created empty when missing and `create` is set; finish with
/// [`done`].
fn write<'a>(
    cx: &'a mut Cx<'_>,
    key: &[u8],
    create: bool,
) -> Result<Option<&'a mut Members>, Frame> {
    super::write_aggregate(cx, key, create)
}

/// After a write: deletes the key if its set is empty and signals the change to `WATCH`.
fn done(cx: &mut Cx<'_>, key: &[u8]) {
    super::finish_aggregate::<Members>(cx, key);
}

/// [`done`] for a write that may have changed nothing: `WATCH` hears of it only if it did.
fn done_if(cx: &mut Cx<'_>, key: &[u8], changed: bool) {
    super::finish_aggregate_if::<Members>(cx, key, changed);
}

fn set_reply<'a>(members: impl IntoIterator<Item = &'a Bytes>) -> Frame {
    Frame::Set(
        members
            .into_iter()
            .map(|m| Frame::Bulk(m.clone()))
            .collect(),
    )
}

fn sadd_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let added = match write(cx, key, true)? {
        Some(set) => args.filter(|m| set.insert((*m).clone())).count(),
        None => 0,
    };
    if added > 0 {
        cx.notify(super::class::SET, "sadd", key);
    }
    done_if(cx, key, added > 0);
    Ok(Frame::Integer(added as i64))
}

fn srem_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    // A set that went past the intset's limits stays a hash table when it shrinks.
    super::server::note_shrink(cx, key);
    let Some(set) = write(cx, key, false)? else {
        return Ok(Frame::Integer(0));
    };
    let removed = args.filter(|m| set.remove(&m[..])).count();
    if removed > 0 {
        cx.notify(super::class::SET, "srem", key);
        done(cx, key);
    }
    Ok(Frame::Integer(removed as i64))
}

fn smembers_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let set = read(cx, args.next_bytes()?)?;
    Ok(set_reply(set.into_iter().flatten()))
}

fn sismember_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, member) = (args.next_bytes()?, args.next_bytes()?);
    let set = read(cx, key)?;
    Ok(Frame::Integer(i64::from(
        set.is_some_and(|s| s.contains(&member[..])),
    )))
}

fn smismember_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let set = read(cx, args.next_bytes()?)?;
    Ok(Frame::Array(
        args.map(|m| Frame::Integer(i64::from(set.is_some_and(|s| s.contains(&m[..])))))
            .collect(),
    ))
}

fn scard_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let set = read(cx, args.next_bytes()?)?;
    Ok(Frame::Integer(set.map_or(0, |s| s.len() as i64)))
}

/// `SPOP key [count]`: one random member (nil for a missing key), or with a count a set of up to
/// `count` distinct members, removed.
fn spop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() > 2 {
        return Err(super::SYNTAX);
    }
    let key = args.next_bytes()?;
    let count = match args.next() {
        None => None,
        Some(arg) => match int(arg) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return Err(Frame::error("ERR value is out of range, must be positive")),
        },
    };
    let len = match read(cx, key)? {
        None => {
            return Ok(match count {
                None => Frame::Null,
                Some(_) => Frame::Set(Vec::new()),
            });
        }
        Some(set) => set.len(),
    };
    if count == Some(0) {
        return Ok(Frame::Set(Vec::new()));
    }
    // The whole set goes, in its order, with no draw (Redis's first case); otherwise each
    // member is one draw.
    let picks = match count {
        Some(n) if n >= len => {
            // Redis hands this case to SUNION's code, which reads the key (a keyspace hit).
            cx.reading(|cx| cx.lookup(key).is_some());
            None
        }
        _ => Some(super::zsets::distinct_positions(
            cx,
            len,
            count.unwrap_or(1),
        )),
    };
    let Ok(Some(set)) = write(cx, key, false) else {
        return Err(WRONGTYPE);
    };
    let chosen: Vec<Bytes> = match picks {
        None => std::mem::take(set).into_iter().collect(),
        Some(picks) => {
            let chosen: Vec<Bytes> = picks.iter().filter_map(|&i| set.at(i).cloned()).collect();
            for m in &chosen {
                set.remove(m);
            }
            chosen
        }
    };
    cx.notify(super::class::SET, "spop", key);
    done(cx, key);
    Ok(match count {
        None => Frame::Bulk(
            chosen
                .into_iter()
                .next()
                .expect("a stored set is never empty"),
        ),
        Some(_) => Frame::Set(chosen.into_iter().map(Frame::Bulk).collect()),
    })
}

/// `SRANDMEMBER key [count]`: one random member, or with a positive count up to `count` distinct
/// members, with a negative one exactly `-count` members that may repeat.
fn srandmember_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() > 2 {
        return Err(super::SYNTAX);
    }
    let key = args.next_bytes()?;
    let count = match args.next() {
        None => None,
        Some(arg) => match int(arg)? {
            i64::MIN => {
                return Err(Frame::error(
                    "ERR value is out of range, value must between -9223372036854775807 and \
                     9223372036854775807",
                ));
            }
            n => Some(n),
        },
    };
    let len = match read(cx, key)? {
        None => {
            return Ok(match count {
                None => Frame::Null,
                Some(_) => Frame::Array(Vec::new()),
            });
        }
        Some(set) => set.len(),
    };
    let picks: Vec<usize> = match count {
        None => vec![(cx.random() % len as u64) as usize],
        Some(n) if n < 0 => (0..n.unsigned_abs())
            .map(|_| (cx.random() % len as u64) as usize)
            .collect(),
        // The whole set, as an array (not a RESP3 set), as Redis 7.0 replies it.
        Some(n) if n as usize >= len => (0..len).collect(),
        Some(n) => super::zsets::distinct_positions(cx, len, n as usize),
    };
    let Some(set) = read(cx, key)? else {
        return Err(WRONGTYPE);
    };
    let mut picked = picks.into_iter().filter_map(|i| set.at(i).cloned());
    Ok(match count {
        None => Frame::Bulk(picked.next().expect("a stored set is never empty")),
        Some(_) => Frame::Array(picked.map(Frame::Bulk).collect()),
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

/// `SUNION`/`SINTER`/`SDIFF key…` and their `…STORE destination key…` forms. Every source key is
/// type-checked; a missing one is an empty set.
fn algebra_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.name().to_ascii_lowercase();
    let op = match &name[..5] {
        b"sunio" => Op::Union,
        b"sinte" => Op::Inter,
        _ => Op::Diff,
    };
    let destination = if name.ends_with(b"store") {
        Some(args.next_bytes()?)
    } else {
        None
    };
    let keys = args.rest();
    let mut sets: Vec<Option<Members>> = Vec::with_capacity(keys.len());
    for key in keys {
        sets.push(read(cx, key)?.cloned());
    }
    let result: Members = match op {
        Op::Union => sets.iter().flatten().flatten().cloned().collect(),
        Op::Inter => {
            if sets.iter().any(Option::is_none) {
                Members::default()
            } else {
                let mut sets = sets.into_iter().flatten();
                let first = sets.next().unwrap_or_default();
                sets.fold(first, |acc, s| {
                    acc.iter().filter(|m| s.contains(m)).cloned().collect()
                })
            }
        }
        Op::Diff => {
            let mut sets = sets.into_iter();
            let first = sets.next().flatten().unwrap_or_default();
            sets.flatten().fold(first, |acc, s| {
                acc.iter().filter(|m| !s.contains(m)).cloned().collect()
            })
        }
    };
    let Some(destination) = destination else {
        return Ok(set_reply(&result));
    };
    let len = result.len();
    let now = cx.now;
    let db = cx.keyspace();
    // An empty result deletes the destination, a change only if it was there.
    let changed = if result.is_empty() {
        db.remove(destination, now).is_some()
    } else {
        db.insert(destination, Value::Set(result), None, now);
        true
    };
    if changed {
        db.touch(destination);
        // An empty result announces `del`; a stored one the command's name (`sunionstore`).
        if len == 0 {
            cx.notify(super::class::GENERIC, "del", destination);
        } else {
            cx.notify(
                super::class::SET,
                &String::from_utf8_lossy(&name),
                destination,
            );
        }
    }
    Ok(Frame::Integer(len as i64))
}

/// `SMOVE source destination member`: 1 if moved. Both keys are type-checked once the source
/// exists; moving within one set only checks membership.
fn smove_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (source, destination, member) =
        (args.next_bytes()?, args.next_bytes()?, args.next_bytes()?);
    let Some(set) = read(cx, source)? else {
        return Ok(Frame::Integer(0));
    };
    let present = set.contains(&member[..]);
    read(cx, destination)?;
    if source == destination || !present {
        return Ok(Frame::Integer(i64::from(present)));
    }
    if let Ok(Some(set)) = write(cx, source, false) {
        set.remove(&member[..]);
    }
    cx.notify(super::class::SET, "srem", source);
    done(cx, source);
    let added = match write(cx, destination, true) {
        Ok(Some(set)) => set.insert(member.clone()),
        _ => false,
    };
    if added {
        cx.notify(super::class::SET, "sadd", destination);
    }
    done_if(cx, destination, added);
    Ok(Frame::Integer(1))
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`: a set Redis would keep as an intset comes
/// whole with cursor 0, as Redis sends it; a hash-table one in pages of `COUNT` members from a
/// resuming cursor ([`Set::scan`]), so a call costs in proportion to `COUNT`.
fn sscan_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let whole = args
        .peek()
        .is_some_and(|key| super::server::compact_encoding(cx, key));
    super::keys::scan_collection(
        cx,
        args,
        super::keys::ScanOf::Members,
        read,
        |set, cursor, count| {
            let (next, page) = if whole {
                (0, set.iter().as_slice())
            } else {
                set.scan(cursor, count)
            };
            let items = page
                .iter()
                .map(|m| (m.clone(), vec![Frame::Bulk(m.clone())]))
                .collect();
            (next, items)
        },
    )
}

/// `SINTERCARD numkeys key… [LIMIT limit]`: the size of the intersection, counting stopped at
/// `limit` (0: no limit). Every key is type-checked.
fn sintercard_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let numkeys = match int(args.next_bytes()?) {
        Ok(n) if n >= 1 => n as u64,
        _ => return Err(Frame::error("ERR numkeys should be greater than 0")),
    };
    if numkeys > args.remaining() as u64 {
        return Err(Frame::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let keys = args.take(numkeys as usize);
    let mut limit = 0usize;
    while let Some(opt) = args.next() {
        if super::is(opt, "limit") && args.remaining() > 0 {
            limit = match int(args.next_bytes()?) {
                Ok(n) if n >= 0 => n as usize,
                _ => return Err(Frame::error("ERR LIMIT can't be negative")),
            };
        } else {
            return Err(super::SYNTAX);
        }
    }
    let mut sets: Vec<Members> = Vec::with_capacity(keys.len());
    let mut missing = false;
    for key in keys {
        match read(cx, key)? {
            Some(set) => sets.push(set.clone()),
            None => missing = true,
        }
    }
    if missing {
        return Ok(Frame::Integer(0));
    }
    sets.sort_by_key(Members::len);
    let (first, others) = sets.split_first().expect("at least one key");
    let mut count = 0usize;
    for m in first {
        if others.iter().all(|s| s.contains(m)) {
            count += 1;
            if limit > 0 && count >= limit {
                break;
            }
        }
    }
    Ok(Frame::Integer(count as i64))
}
