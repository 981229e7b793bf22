//! Hash commands: the lock key is a hash of owner → hold count.
//!
//! Writes to a hash keep the key's TTL (the lease), unlike `SET`; a hash whose last field is
//! deleted disappears; `HINCRBY` on a missing key creates it *without* a TTL, which is why the
//! lock scripts `PEXPIRE` right after. Small hashes reply in insertion order, as Redis's listpack
//! encoding does.

use super::long_double::{LongDouble, Parsed};
use super::{Args, CmdResult, Cx, OVERFLOW, Spec, WRITE, int_bytes, is, wrong_arity};
use crate::engine::db::{Hash, Value};
use crate::resp::Frame;
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
pub(crate) static HRANDFIELD: Spec = Spec::new("hrandfield", -2, 0, hrandfield_command);

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
    let db = cx.keyspace();
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
    let now = cx.now;
    let hash = read(cx, key)?;
    if hash.is_some_and(|h| h.field_expired(field, now)) {
        super::hash_ttl::expire_fields(cx, key, &[field]);
        return Ok(false);
    }
    Ok(hash.is_some_and(|h| h.get(field).is_some()))
}

/// `HGET key field`: None when the key is missing, else the field's value if it has one.
pub(crate) fn hget(
    cx: &mut Cx<'_>,
    key: &[u8],
    field: &[u8],
) -> Result<Option<Option<Bytes>>, Frame> {
    let now = cx.now;
    let hash = read(cx, key)?;
    if hash.is_some_and(|h| h.field_expired(field, now)) {
        super::hash_ttl::expire_fields(cx, key, &[field]);
        return Ok(Some(None));
    }
    // A lock's count is `1` nearly always: shared bytes then, not an allocation.
    Ok(hash.map(|h| h.get(field).map(super::value_bytes)))
}

/// `HINCRBY key field delta`: the new value. Keeps the TTL; a new key has none. A key the caller
/// knows is `missing` (it looked, at the same frozen time) is created without a search.
pub(crate) fn hincrby(
    cx: &mut Cx<'_>,
    key: &[u8],
    field: &[u8],
    delta: i64,
    missing: bool,
) -> Result<i64, Frame> {
    let (now, h) = (cx.now, cx.hash(key));
    let db = cx.keyspace();
    let found = match missing {
        true => None,
        false => db.write_h(key, h, now),
    };
    let new = match found {
        None => {
            let hash = Hash::single(field, &int_bytes(delta));
            db.insert_absent_h(key, h, Value::Hash(hash), None, now);
            delta
        }
        Some(entry) => {
            if let Value::Hash(hash) = &entry.value
                && hash.field_expired(field, now)
            {
                super::hash_ttl::expire_for_write(cx, key, &[field]);
                return hincrby(cx, key, field, delta, false);
            }
            hincrby_in(entry, field, delta)?
        }
    };
    db.touch(key);
    cx.notify(super::class::HASH, "hincrby", key);
    Ok(new)
}

/// `HINCRBY`'s change to the live entry of its key: the new value, or the error that leaves the
/// entry as it was.
pub(crate) fn hincrby_in(
    entry: &mut crate::engine::db::Entry,
    field: &[u8],
    delta: i64,
) -> Result<i64, Frame> {
    let Value::Hash(hash) = &mut entry.value else {
        return Err(super::WRONGTYPE);
    };
    let old = match hash.get(field).map(crate::resp::number::parse_i64) {
        None => 0,
        Some(Some(n)) => n,
        Some(None) => return Err(Frame::error("ERR hash value is not an integer")),
    };
    let Some(new) = old.checked_add(delta) else {
        return Err(OVERFLOW);
    };
    hash.set(field, int_bytes(new));
    Ok(new)
}

// ---- commands ----

/// `HSET key field value…` (how many fields are new) and `HMSET` (`OK`).
fn hset_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let hmset = is(args.name(), "hmset");
    let key = args.next_bytes()?;
    let pairs = args.rest();
    if !pairs.len().is_multiple_of(2) {
        return Err(wrong_arity(if hmset { "hmset" } else { "hset" }));
    }
    let hash = write(cx, key)?;
    let mut created = 0;
    for pair in pairs.chunks_exact(2) {
        if let [field, value] = pair
            && hash.insert(field.clone(), value.clone())
        {
            created += 1;
        }
        if hash.had_field_ttls() {
            super::hash_ttl::persist_written(hash, pair);
        }
    }
    cx.keyspace().touch(key);
    cx.notify(super::class::HASH, "hset", key);
    Ok(if hmset {
        Frame::OK
    } else {
        Frame::Integer(created)
    })
}

fn hsetnx_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, field, value) = (args.next_bytes()?, args.next_bytes()?, args.next_bytes()?);
    let now = cx.now;
    if read(cx, key)?.is_some_and(|h| h.field_expired(field, now)) {
        super::hash_ttl::expire_for_write(cx, key, &[field]);
    }
    if read(cx, key)?.is_some_and(|h| h.get(field).is_some()) {
        return Ok(Frame::Integer(0));
    }
    write(cx, key)?.insert(field.clone(), value.clone());
    cx.keyspace().touch(key);
    cx.notify(super::class::HASH, "hset", key);
    Ok(Frame::Integer(1))
}

fn hget_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, field) = (args.next_bytes()?, args.next_bytes()?);
    Ok(hget(cx, key, field)?
        .flatten()
        .map_or(Frame::Null, Frame::Bulk))
}

fn hmget_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let mut h = read(cx, key)?;
    if h.is_some_and(Hash::had_field_ttls) {
        h = super::hash_ttl::expire_named(cx, key, args.whole().get(2..).unwrap_or_default());
    }
    Ok(Frame::Array(
        args.map(|f| {
            h.and_then(|h| h.get(f))
                .map_or(Frame::Null, |v| Frame::Bulk(Bytes::copy_from_slice(v)))
        })
        .collect(),
    ))
}

fn hdel_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    if read(cx, key)?.is_none() {
        return Ok(Frame::Integer(0));
    }
    let now = cx.now;
    // A hash past its threshold stays a hash table when it shrinks.
    super::server::note_shrink(cx, key);
    let Ok(hash) = write(cx, key) else {
        return Err(super::WRONGTYPE);
    };
    let removed = args.filter(|f| hash.remove(f)).count();
    let empty = hash.is_empty();
    let db = cx.keyspace();
    if empty {
        db.remove(key, now);
    }
    if removed > 0 {
        db.touch(key);
        cx.notify(super::class::HASH, "hdel", key);
    }
    if empty {
        cx.notify(super::class::GENERIC, "del", key);
    }
    Ok(Frame::Integer(removed as i64))
}

fn hexists_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, field) = (args.next_bytes()?, args.next_bytes()?);
    Ok(Frame::Integer(i64::from(hexists(cx, key, field)?)))
}

/// `HGETALL` (a map of fields to values), `HKEYS` and `HVALS`.
fn hgetall_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (name, now) = (args.name(), cx.now);
    let hash = read(cx, args.next_bytes()?)?;
    let pairs = hash.into_iter().flat_map(|h| h.live_iter(now));
    Ok(if is(name, "hkeys") {
        Frame::Array(pairs.map(|(f, _)| bulk(f)).collect())
    } else if is(name, "hvals") {
        Frame::Array(pairs.map(|(_, v)| bulk(v)).collect())
    } else {
        Frame::Map(pairs.map(|(f, v)| (bulk(f), bulk(v))).collect())
    })
}

fn hlen_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let hash = read(cx, args.next_bytes()?)?;
    Ok(Frame::Integer(hash.map_or(0, |h| h.len() as i64)))
}

fn hincrby_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, field, delta) = (args.next_bytes()?, args.next_bytes()?, args.next_int()?);
    Ok(Frame::Integer(hincrby(cx, key, field, delta, false)?))
}

fn hincrbyfloat_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, field) = (args.next_bytes()?, args.next_bytes()?);
    let incr = args.next_float()?;
    let now = cx.now;
    if read(cx, key)?.is_some_and(|h| h.field_expired(field, now)) {
        super::hash_ttl::expire_for_write(cx, key, &[field]);
    }
    if incr == Parsed::Infinite {
        return Err(Frame::error("ERR value is NaN or Infinity"));
    }
    let old = match read(cx, key)?.and_then(|h| h.get(field)) {
        None => LongDouble::ZERO,
        Some(v) => LongDouble::parse(v).ok_or(Frame::error("ERR hash value is not a float"))?,
    };
    let Ok(new) = old.add(incr) else {
        return Err(Frame::error("ERR increment would produce NaN or Infinity"));
    };
    let text = Bytes::from(new.to_human());
    write(cx, key)?.insert(field.clone(), text.clone());
    cx.keyspace().touch(key);
    cx.notify(super::class::HASH, "hincrbyfloat", key);
    Ok(Frame::Bulk(text))
}

fn hstrlen_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, field) = (args.next_bytes()?, args.next_bytes()?);
    let value = hget(cx, key, field)?.flatten();
    Ok(Frame::Integer(value.map_or(0, |v| v.len() as i64)))
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]`: fields and values (the fields
/// alone with `NOVALUES`, from 7.4), a page at a time once the hash is a hash table
/// ([`Hash::scan`]; see [`scan_collection`](super::keys::scan_collection)).
fn hscan_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let now = cx.now;
    super::keys::scan_collection(
        cx,
        args,
        super::keys::ScanOf::Hash,
        read,
        |h, cursor, count| {
            let (next, fields) = h.scan(cursor, count);
            let items = fields
                .into_iter()
                .filter(|(f, _)| !h.field_expired(f, now))
                .map(|(f, v)| (Bytes::copy_from_slice(f), vec![bulk(f), bulk(v)]))
                .collect();
            (next, items)
        },
    )
}

/// `HRANDFIELD key [count [WITHVALUES]]`: one random field, or with a count the fields (and
/// values) [`random_picks`](super::zsets::random_picks) chooses, from the engine's seeded
/// generator; the whole hash comes in its order.
fn hrandfield_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let now = cx.now;
    let Some(count) = args.next() else {
        let Some(h) = read(cx, key)? else {
            return Ok(Frame::Null);
        };
        if h.expired_fields(now, 1).len() == 1 && super::hash_ttl::expire_all_fields(cx, key) {
            return Ok(Frame::Null);
        }
        let Some(h) = read(cx, key)? else {
            return Ok(Frame::Null);
        };
        let len = h.len() as u64;
        let i = (cx.random() % len) as usize;
        let field = read(cx, key)?.and_then(|h| h.at(i)).map(|(f, _)| bulk(f));
        return Ok(field.unwrap_or(Frame::Null));
    };
    let (count, withvalues) = super::zsets::random_count(count, args, "withvalues")?;
    let resp3 = cx.client().protocol >= 3;
    let len = match read(cx, key)? {
        None => return Ok(Frame::Array(Vec::new())),
        Some(h) if h.expired_fields(now, 1).len() == 1 => {
            match super::hash_ttl::expire_all_fields(cx, key) {
                true => return Ok(Frame::Array(Vec::new())),
                false => read(cx, key)?.map_or(0, Hash::len),
            }
        }
        Some(h) => h.len(),
    };
    let picks = super::zsets::random_picks(cx, len, count, false);
    let Some(h) = read(cx, key)? else {
        return Ok(Frame::Array(Vec::new()));
    };
    // One walk of the fields, then each pick in constant time (a packed hash has no index).
    let pairs: Vec<(&[u8], &[u8])> = h.iter().collect();
    let picked = picks.into_iter().filter_map(|i| pairs.get(i));
    Ok(Frame::Array(if !withvalues {
        picked.map(|(f, _)| bulk(f)).collect()
    } else if resp3 {
        picked
            .map(|(f, v)| Frame::Array(vec![bulk(f), bulk(v)]))
            .collect()
    } else {
        picked.flat_map(|(f, v)| [bulk(f), bulk(v)]).collect()
    }))
}

/// A reply of a field's or a value's bytes (a hash keeps them packed, so they are copied).
fn bulk(bytes: &[u8]) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(bytes))
}
