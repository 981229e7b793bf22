//! Hash commands: the lock key is a hash of owner → hold count.
//!
//! Writes to a hash keep the key's TTL (the lease), unlike `SET`; a hash whose last field is
//! deleted disappears; `HINCRBY` on a missing key creates it *without* a TTL, which is why the
//! lock scripts `PEXPIRE` right after. Small hashes reply in insertion order, as Redis's listpack
//! encoding does.

use super::{OVERFLOW, Spec, WRITE, float, human_float, int, int_bytes, wrong_arity};
use crate::db::{Hash, Value};
use crate::engine::Cx;
use crate::frame::Frame;
use bytes::Bytes;

pub(crate) static HSET: Spec = Spec::new("hset", -4, WRITE, hset_command);
pub(crate) static HMSET: Spec = Spec::new("hmset", -4, WRITE, hset_command);
pub(crate) static HSETNX: Spec = Spec::new("hsetnx", 4, WRITE, hsetnx_command);
pub(crate) static HGET: Spec = Spec::new("hget", 3, 0, hget_command);
pub(crate) static HMGET: Spec = Spec::new("hmget", -3, 0, hmget_command);
pub(crate) static HDEL: Spec = Spec::new("hdel", -3, WRITE, hdel_command);
pub(crate) static HEXISTS: Spec = Spec::new("hexists", 3, 0, hexists_command);
pub(crate) static HGETALL: Spec = Spec::new("hgetall", 2, 0, hgetall_command);
pub(crate) static HKEYS: Spec = Spec::new("hkeys", 2, 0, hgetall_command);
pub(crate) static HVALS: Spec = Spec::new("hvals", 2, 0, hgetall_command);
pub(crate) static HLEN: Spec = Spec::new("hlen", 2, 0, hlen_command);
pub(crate) static HINCRBY: Spec = Spec::new("hincrby", 4, WRITE, hincrby_command);
pub(crate) static HINCRBYFLOAT: Spec = Spec::new("hincrbyfloat", 4, WRITE, hincrbyfloat_command);
pub(crate) static HSTRLEN: Spec = Spec::new("hstrlen", 3, 0, hstrlen_command);
pub(crate) static HSCAN: Spec = Spec::new("hscan", -3, 0, hscan_command);

/// The hash at `key` (None when missing), WRONGTYPE for another type.
fn read<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<Option<&'a Hash>, Frame> {
    match cx.lookup(key) {
        None => Ok(None),
        Some(e) => match &e.value {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(super::WRONGTYPE),
        },
    }
}

/// The hash at `key` for writing, created empty (no TTL) when missing; WRONGTYPE for another type.
/// The caller must leave it non-empty or remove the key.
fn write<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<&'a mut Hash, Frame> {
    read(cx, key)?;
    let now = cx.now;
    let db = cx.db();
    if db.peek(key, now).is_none() {
        db.insert(key, Value::Hash(Hash::default()), None, now);
    }
    match db.write(key, now).map(|e| &mut e.value) {
        Some(Value::Hash(h)) => Ok(h),
        _ => Err(super::WRONGTYPE),
    }
}

// ---- operations shared with the native scripts ----

/// `HEXISTS key field`.
pub(crate) fn hexists(cx: &mut Cx<'_>, key: &[u8], field: &[u8]) -> Result<bool, Frame> {
    Ok(read(cx, key)?.is_some_and(|h| h.get(field).is_some()))
}

/// `HGET key field`.
pub(crate) fn hget(cx: &mut Cx<'_>, key: &[u8], field: &[u8]) -> Result<Option<Bytes>, Frame> {
    Ok(read(cx, key)?.and_then(|h| h.get(field).cloned()))
}

/// `HINCRBY key field delta`: the new value. Keeps the TTL; a new key has none.
pub(crate) fn hincrby(cx: &mut Cx<'_>, key: &[u8], field: &[u8], delta: i64) -> Result<i64, Frame> {
    let (now, h) = (cx.now, cx.hash(key));
    let db = cx.db();
    let new = match db.write_h(key, h, now) {
        None => {
            let hash = Hash::single(Bytes::copy_from_slice(field), int_bytes(delta));
            db.insert_absent_h(key, h, Value::Hash(hash), now);
            delta
        }
        Some(entry) => {
            let Value::Hash(hash) = &mut entry.value else {
                return Err(super::WRONGTYPE);
            };
            let old = match hash.get(field) {
                None => 0,
                Some(v) => lock_core::script::parse_i64(v)
                    .ok_or(Frame::error("ERR hash value is not an integer"))?,
            };
            let new = old.checked_add(delta).ok_or(OVERFLOW)?;
            hash.set(field, int_bytes(new));
            new
        }
    };
    db.touch(key);
    Ok(new)
}

// ---- commands ----

fn hset_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let hmset = super::is(&argv[0], "hmset");
    if !argv.len().is_multiple_of(2) {
        return wrong_arity(if hmset { "hmset" } else { "hset" });
    }
    let hash = match write(cx, &argv[1]) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let mut created = 0;
    for fv in argv[2..].chunks(2) {
        if hash.insert(fv[0].clone(), fv[1].clone()) {
            created += 1;
        }
    }
    cx.db().touch(&argv[1]);
    if hmset {
        Frame::OK
    } else {
        Frame::Integer(created)
    }
}

fn hsetnx_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Err(e) => return e,
        Ok(Some(h)) if h.get(&argv[2]).is_some() => return Frame::Integer(0),
        Ok(_) => {}
    }
    match write(cx, &argv[1]) {
        Ok(h) => h.insert(argv[2].clone(), argv[3].clone()),
        Err(e) => return e,
    };
    cx.db().touch(&argv[1]);
    Frame::Integer(1)
}

fn hget_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match hget(cx, &argv[1], &argv[2]) {
        Ok(v) => v.map_or(Frame::Null, Frame::Bulk),
        Err(e) => e,
    }
}

fn hmget_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Ok(h) => Frame::Array(
            argv[2..]
                .iter()
                .map(|f| {
                    h.and_then(|h| h.get(f))
                        .map_or(Frame::Null, |v| Frame::Bulk(v.clone()))
                })
                .collect(),
        ),
        Err(e) => e,
    }
}

fn hdel_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let key = &argv[1];
    match read(cx, key) {
        Err(e) => return e,
        Ok(None) => return Frame::Integer(0),
        Ok(Some(_)) => {}
    }
    let now = cx.now;
    let Ok(hash) = write(cx, key) else {
        return super::WRONGTYPE;
    };
    let removed = argv[2..].iter().filter(|f| hash.remove(f)).count();
    let empty = hash.is_empty();
    let db = cx.db();
    if empty {
        db.remove(key, now);
    }
    if removed > 0 {
        db.touch(key);
    }
    Frame::Integer(removed as i64)
}

fn hexists_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match hexists(cx, &argv[1], &argv[2]) {
        Ok(b) => Frame::Integer(i64::from(b)),
        Err(e) => e,
    }
}

fn hgetall_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let which = argv[0].to_ascii_lowercase();
    let hash = match read(cx, &argv[1]) {
        Ok(h) => h,
        Err(e) => return e,
    };
    let pairs = hash.into_iter().flat_map(|h| h.iter());
    match &which[..] {
        b"hkeys" => Frame::Array(pairs.map(|(f, _)| Frame::Bulk(f.clone())).collect()),
        b"hvals" => Frame::Array(pairs.map(|(_, v)| Frame::Bulk(v.clone())).collect()),
        _ => Frame::Map(
            pairs
                .map(|(f, v)| (Frame::Bulk(f.clone()), Frame::Bulk(v.clone())))
                .collect(),
        ),
    }
}

fn hlen_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Ok(h) => Frame::Integer(h.map_or(0, |h| h.len() as i64)),
        Err(e) => e,
    }
}

fn hincrby_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let delta = match int(&argv[3]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    match hincrby(cx, &argv[1], &argv[2], delta) {
        Ok(n) => Frame::Integer(n),
        Err(e) => e,
    }
}

fn hincrbyfloat_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let Some(incr) = float(&argv[3]) else {
        return super::NOT_FLOAT;
    };
    if !incr.is_finite() {
        return Frame::error("ERR value is NaN or Infinity");
    }
    let old = match read(cx, &argv[1]) {
        Err(e) => return e,
        Ok(h) => match h.and_then(|h| h.get(&argv[2])) {
            None => 0.0,
            Some(v) => match float(v) {
                Some(v) => v,
                None => return Frame::error("ERR hash value is not a float"),
            },
        },
    };
    let new = old + incr;
    if !new.is_finite() {
        return Frame::error("ERR increment would produce NaN or Infinity");
    }
    let text = human_float(new);
    match write(cx, &argv[1]) {
        Ok(h) => h.insert(argv[2].clone(), text.clone()),
        Err(e) => return e,
    };
    cx.db().touch(&argv[1]);
    Frame::Bulk(text)
}

fn hstrlen_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match hget(cx, &argv[1], &argv[2]) {
        Ok(v) => Frame::Integer(v.map_or(0, |v| v.len() as i64)),
        Err(e) => e,
    }
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`: fields and values (see
/// [`scan_collection`](super::keys::scan_collection)).
fn hscan_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    super::keys::scan_collection(cx, argv, read, |h| {
        h.iter()
            .map(|(f, v)| {
                (
                    f.clone(),
                    vec![Frame::Bulk(f.clone()), Frame::Bulk(v.clone())],
                )
            })
            .collect()
    })
}
