//! Set commands: membership, cardinality, random draws, the algebra (union, intersection,
//! difference, with and without a destination), and moving a member between sets.
//!
//! A set is a `BTreeSet`, so iteration is deterministic (sorted bytes). Redis leaves a hash-table
//! set's order unspecified, so the differential tests compare these replies as multisets. Random
//! draws (`SPOP`, `SRANDMEMBER`) come from the engine's seeded generator: one seed, one run. As
//! in Redis, a set left empty is deleted, a write keeps the key's TTL, and a `…STORE` replaces
//! its destination (of any type, dropping its TTL) or deletes it when the result is empty.

use super::{Spec, WRITE, WRONGTYPE, int};
use crate::db::Value;
use crate::engine::Cx;
use crate::frame::Frame;
use bytes::Bytes;
use std::collections::BTreeSet;

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
pub(crate) static SUNIONSTORE: Spec = Spec::new("sunionstore", -3, WRITE, algebra_command);
pub(crate) static SINTERSTORE: Spec = Spec::new("sinterstore", -3, WRITE, algebra_command);
pub(crate) static SDIFFSTORE: Spec = Spec::new("sdiffstore", -3, WRITE, algebra_command);
pub(crate) static SMOVE: Spec = Spec::new("smove", 4, WRITE, smove_command);
pub(crate) static SSCAN: Spec = Spec::new("sscan", -3, 0, sscan_command);

type Members = BTreeSet<Bytes>;

impl super::Aggregate for Members {
    fn of(value: &Value) -> Option<&Self> {
        match value {
            Value::Set(v) => Some(v),
            _ => None,
        }
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        match value {
            Value::Set(v) => Some(v),
            _ => None,
        }
    }
    fn wrap(self) -> Value {
        Value::Set(self)
    }
    fn is_empty(&self) -> bool {
        Members::is_empty(self)
    }
}

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

fn set_reply<'a>(members: impl IntoIterator<Item = &'a Bytes>) -> Frame {
    Frame::Set(
        members
            .into_iter()
            .map(|m| Frame::Bulk(m.clone()))
            .collect(),
    )
}

fn sadd_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let key = &argv[1];
    let added = match write(cx, key, true) {
        Ok(Some(set)) => argv[2..]
            .iter()
            .filter(|m| set.insert((*m).clone()))
            .count(),
        Ok(None) => 0,
        Err(e) => return e,
    };
    done(cx, key);
    Frame::Integer(added as i64)
}

fn srem_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let key = &argv[1];
    let removed = match write(cx, key, false) {
        Ok(Some(set)) => argv[2..].iter().filter(|m| set.remove(&m[..])).count(),
        Ok(None) => return Frame::Integer(0),
        Err(e) => return e,
    };
    if removed > 0 {
        done(cx, key);
    }
    Frame::Integer(removed as i64)
}

fn smembers_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Ok(set) => set_reply(set.into_iter().flatten()),
        Err(e) => e,
    }
}

fn sismember_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Ok(set) => Frame::Integer(i64::from(set.is_some_and(|s| s.contains(&argv[2][..])))),
        Err(e) => e,
    }
}

fn smismember_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Ok(set) => Frame::Array(
            argv[2..]
                .iter()
                .map(|m| Frame::Integer(i64::from(set.is_some_and(|s| s.contains(&m[..])))))
                .collect(),
        ),
        Err(e) => e,
    }
}

fn scard_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Ok(set) => Frame::Integer(set.map_or(0, |s| s.len() as i64)),
        Err(e) => e,
    }
}

/// `count` distinct positions of `0..len`, drawn from the engine's seeded generator.
fn distinct_draws(cx: &mut Cx<'_>, len: usize, count: usize) -> Vec<usize> {
    let mut positions: Vec<usize> = (0..len).collect();
    for i in 0..count.min(len) {
        let j = i + (cx.engine.random() % (len - i) as u64) as usize;
        positions.swap(i, j);
    }
    positions.truncate(count.min(len));
    positions
}

/// `SPOP key [count]`: one random member (nil for a missing key), or with a count a set of up to
/// `count` distinct members, removed.
fn spop_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() > 3 {
        return super::SYNTAX;
    }
    let count = match argv.get(2) {
        None => None,
        Some(arg) => match int(arg) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return Frame::error("ERR value is out of range, must be positive"),
        },
    };
    let key = &argv[1];
    let len = match read(cx, key) {
        Err(e) => return e,
        Ok(None) => {
            return match count {
                None => Frame::Null,
                Some(_) => Frame::Set(Vec::new()),
            };
        }
        Ok(Some(set)) => set.len(),
    };
    if count == Some(0) {
        return Frame::Set(Vec::new());
    }
    let picks = distinct_draws(cx, len, count.unwrap_or(1));
    let Ok(Some(set)) = write(cx, key, false) else {
        return WRONGTYPE;
    };
    let chosen: Vec<Bytes> = {
        let all: Vec<&Bytes> = set.iter().collect();
        picks.iter().map(|&i| all[i].clone()).collect()
    };
    for m in &chosen {
        set.remove(m);
    }
    done(cx, key);
    match count {
        None => Frame::Bulk(
            chosen
                .into_iter()
                .next()
                .expect("a stored set is never empty"),
        ),
        Some(_) => Frame::Set(chosen.into_iter().map(Frame::Bulk).collect()),
    }
}

/// `SRANDMEMBER key [count]`: one random member, or with a positive count up to `count` distinct
/// members, with a negative one exactly `-count` members that may repeat.
fn srandmember_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() > 3 {
        return super::SYNTAX;
    }
    let count = match argv.get(2) {
        None => None,
        Some(arg) => match int(arg) {
            Ok(i64::MIN) => {
                return Frame::error(
                    "ERR value is out of range, value must between -9223372036854775807 and \
                     9223372036854775807",
                );
            }
            Ok(n) => Some(n),
            Err(e) => return e,
        },
    };
    let members: Vec<Bytes> = match read(cx, &argv[1]) {
        Err(e) => return e,
        Ok(None) => {
            return match count {
                None => Frame::Null,
                Some(_) => Frame::Array(Vec::new()),
            };
        }
        Ok(Some(set)) => set.iter().cloned().collect(),
    };
    let len = members.len();
    match count {
        None => {
            let i = (cx.engine.random() % len as u64) as usize;
            Frame::Bulk(members[i].clone())
        }
        Some(n) if n < 0 => {
            let n = n.unsigned_abs() as usize;
            Frame::Array(
                (0..n)
                    .map(|_| {
                        let i = (cx.engine.random() % len as u64) as usize;
                        Frame::Bulk(members[i].clone())
                    })
                    .collect(),
            )
        }
        // The whole set, as an array (not a RESP3 set), as Redis 7.0 replies it.
        Some(n) if n as usize >= len => {
            Frame::Array(members.iter().map(|m| Frame::Bulk(m.clone())).collect())
        }
        Some(n) => Frame::Array(
            distinct_draws(cx, len, n as usize)
                .into_iter()
                .map(|i| Frame::Bulk(members[i].clone()))
                .collect(),
        ),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

/// `SUNION`/`SINTER`/`SDIFF key…` and their `…STORE destination key…` forms. Every source key is
/// type-checked; a missing one is an empty set.
fn algebra_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let name = argv[0].to_ascii_lowercase();
    let op = match &name[..5] {
        b"sunio" => Op::Union,
        b"sinte" => Op::Inter,
        _ => Op::Diff,
    };
    let store = name.ends_with(b"store");
    let keys = if store { &argv[2..] } else { &argv[1..] };
    let mut sets: Vec<Option<Members>> = Vec::with_capacity(keys.len());
    for key in keys {
        match read(cx, key) {
            Ok(set) => sets.push(set.cloned()),
            Err(e) => return e,
        }
    }
    let result: Members = match op {
        Op::Union => sets.iter().flatten().flatten().cloned().collect(),
        Op::Inter => {
            if sets.iter().any(Option::is_none) {
                Members::new()
            } else {
                let mut sets = sets.into_iter().flatten();
                let first = sets.next().unwrap_or_default();
                sets.fold(first, |acc, s| acc.intersection(&s).cloned().collect())
            }
        }
        Op::Diff => {
            let mut sets = sets.into_iter();
            let first = sets.next().flatten().unwrap_or_default();
            sets.flatten()
                .fold(first, |acc, s| acc.difference(&s).cloned().collect())
        }
    };
    if !store {
        return set_reply(&result);
    }
    let destination = &argv[1];
    let len = result.len();
    let now = cx.now;
    let db = cx.db();
    if result.is_empty() {
        db.remove(destination, now);
    } else {
        db.insert(destination, Value::Set(result), None, now);
    }
    db.touch(destination);
    Frame::Integer(len as i64)
}

/// `SMOVE source destination member`: 1 if moved. Both keys are type-checked once the source
/// exists; moving within one set only checks membership.
fn smove_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let (source, destination, member) = (&argv[1], &argv[2], &argv[3]);
    let present = match read(cx, source) {
        Err(e) => return e,
        Ok(None) => return Frame::Integer(0),
        Ok(Some(set)) => set.contains(&member[..]),
    };
    if let Err(e) = read(cx, destination) {
        return e;
    }
    if source == destination || !present {
        return Frame::Integer(i64::from(present));
    }
    if let Ok(Some(set)) = write(cx, source, false) {
        set.remove(&member[..]);
    }
    done(cx, source);
    if let Ok(Some(set)) = write(cx, destination, true) {
        set.insert(member.clone());
    }
    done(cx, destination);
    Frame::Integer(1)
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]` (see
/// [`scan_collection`](super::keys::scan_collection)).
fn sscan_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    super::keys::scan_collection(cx, argv, read, |set| {
        set.iter()
            .map(|m| (m.clone(), vec![Frame::Bulk(m.clone())]))
            .collect()
    })
}
