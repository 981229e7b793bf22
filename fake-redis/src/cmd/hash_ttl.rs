//! Hash-field expiration commands, as Redis 7.4 has them: `HEXPIRE`, `HPEXPIRE`, `HEXPIREAT`,
//! `HPEXPIREAT` set a deadline on fields, `HTTL`, `HPTTL`, `HEXPIRETIME`, `HPEXPIRETIME` read it,
//! `HPERSIST` clears it; and the lazy expiry the hash commands call before they read a field.
//!
//! They sit apart from `hashes.rs` so that a hash without field TTLs (the lock's) runs the same
//! code as before: the hash commands only test `Hash::field_expired`, which is one `None` test
//! for such a hash. The deadlines themselves are the engine's (`engine/hash_ttl.rs`).
//!
//! Replies and errors are Redis 7.4.1's, argument checks in its order: the key's type, the time
//! (`ERR invalid expire time …`), the condition, `FIELDS`, the count, then one reply per field:
//! `-2` no such field, `0` condition not met, `1` set, `2` deleted (a deadline already past).
//! On Valkey 9.1 the same commands read their arguments before the key, with Valkey's errors and
//! limits (any deadline within 64 bits), round `HTTL` to the nearest second, and leave a field
//! past its deadline to the active cycle rather than deleting it on a read.

use super::{Args, CmdResult, Cx, Spec, WRITE, invalid_expire, is};
use crate::engine::db::{Hash, Value};
use crate::engine::hash_ttl::MAX_FIELD_DEADLINE;
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static HEXPIRE: Spec = Spec::new("hexpire", -6, WRITE, hexpire_command);
pub(crate) static HPEXPIRE: Spec = Spec::new("hpexpire", -6, WRITE, hexpire_command);
pub(crate) static HEXPIREAT: Spec = Spec::new("hexpireat", -6, WRITE, hexpire_command);
pub(crate) static HPEXPIREAT: Spec = Spec::new("hpexpireat", -6, WRITE, hexpire_command);
pub(crate) static HTTL: Spec = Spec::new("httl", -5, 0, httl_command);
pub(crate) static HPTTL: Spec = Spec::new("hpttl", -5, 0, httl_command);
pub(crate) static HEXPIRETIME: Spec = Spec::new("hexpiretime", -5, 0, httl_command);
pub(crate) static HPEXPIRETIME: Spec = Spec::new("hpexpiretime", -5, 0, httl_command);
pub(crate) static HPERSIST: Spec = Spec::new("hpersist", -5, WRITE, hpersist_command);

/// A field the command names is not in the hash (or the key is missing).
const NO_FIELD: i64 = -2;

/// The hash at `key`, `WRONGTYPE` for another type.
fn hash_at<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<Option<&'a mut Hash>, Frame> {
    match cx.lookup(key) {
        None => Ok(None),
        Some(e) => match &mut e.value {
            Value::Hash(h) => Ok(Some(h)),
            _ => Err(super::WRONGTYPE),
        },
    }
}

/// `FIELDS numfields field…` from `args`, with Redis 7.4's errors: `count_error` for a count
/// that is not a positive integer.
fn fields<'a>(args: &mut Args<'a>, count_error: &'static str) -> Result<&'a [Bytes], Frame> {
    if !args.peek().is_some_and(|a| is(a, "fields")) {
        return Err(Frame::error(
            "ERR Mandatory argument FIELDS is missing or not at the right position",
        ));
    }
    args.next();
    let count = match args.next().map(|a| super::int(a)) {
        Some(Ok(n)) if n >= 1 => n,
        _ => return Err(Frame::error(count_error)),
    };
    let rest = args.rest();
    if usize::try_from(count).ok() != Some(rest.len()) {
        return Err(Frame::error(
            "ERR The `numfields` parameter must match the number of arguments",
        ));
    }
    Ok(rest)
}

/// The condition of `HEXPIRE … NX|XX|GT|LT`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cond {
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
    /// Valkey's `XX LT` together: a TTL, and a later one.
    XxLt,
}

impl Cond {
    /// Whether a field whose deadline is `old` takes `new` (no deadline counts as infinite).
    fn allows(self, old: Option<i64>, new: i64) -> bool {
        match (self, old) {
            (Cond::Always, _) => true,
            (Cond::Nx, old) => old.is_none(),
            (Cond::Xx, old) => old.is_some(),
            (Cond::Gt, None) => false,
            (Cond::Gt, Some(old)) => new > old,
            (Cond::Lt, None) => true,
            (Cond::Lt, Some(old)) => new < old,
            (Cond::XxLt, old) => old.is_some_and(|old| new < old),
        }
    }
}

/// The canonical name of the command `args` runs (one of `names`; the last by default).
fn name_of(args: &Args<'_>, names: &[&'static str]) -> &'static str {
    let sent = args.name();
    let found = names.iter().find(|n| is(sent, n));
    found.or(names.last()).copied().unwrap_or_default()
}

/// `HEXPIRE key seconds [NX|XX|GT|LT] FIELDS numfields field…` and its three siblings.
fn hexpire_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = name_of(args, &["hexpire", "hpexpire", "hexpireat", "hpexpireat"]);
    let (seconds, absolute) = match name {
        "hexpire" => (true, false),
        "hpexpire" => (false, false),
        "hexpireat" => (true, true),
        _ => (false, true),
    };
    let key = args.next_bytes()?;
    let now = cx.now;
    if cx.engine().version().is_valkey() {
        let (deadline, cond, fields) = valkey_hexpire_args(args, name, seconds, absolute, now)?;
        let exists = hash_at(cx, key)?.is_some();
        return set_deadlines(cx, key, exists, deadline, cond, fields);
    }
    let found = hash_at(cx, key)?;
    let mut when = args.next_int()?;
    if when < 0 {
        return Err(Frame::error("ERR invalid expire time, must be >= 0"));
    }
    if seconds {
        if when > MAX_FIELD_DEADLINE / 1000 {
            return Err(invalid_expire(name));
        }
        when *= 1000;
    }
    let base = if absolute { 0 } else { now };
    if when > MAX_FIELD_DEADLINE - base {
        return Err(invalid_expire(name));
    }
    let deadline = when + base;
    let cond = match args.peek() {
        Some(a) if is(a, "nx") => Cond::Nx,
        Some(a) if is(a, "xx") => Cond::Xx,
        Some(a) if is(a, "gt") => Cond::Gt,
        Some(a) if is(a, "lt") => Cond::Lt,
        _ => Cond::Always,
    };
    if cond != Cond::Always {
        args.next();
    }
    let fields = fields(args, "ERR Parameter `numFields` should be greater than 0")?;
    let exists = found.is_some();
    set_deadlines(cx, key, exists, deadline, cond, fields)
}

/// The fields' part of `HEXPIRE`, once its arguments are read: one reply per field, the
/// events, and the hash deleted when the deadline was past for its last fields.
fn set_deadlines(
    cx: &mut Cx<'_>,
    key: &[u8],
    exists: bool,
    deadline: i64,
    cond: Cond,
    fields: &[Bytes],
) -> CmdResult {
    let now = cx.now;
    let found = if exists { hash_at(cx, key)? } else { None };
    let Some(hash) = found else {
        return Ok(Frame::Array(vec![Frame::Integer(NO_FIELD); fields.len()]));
    };
    let (mut updated, mut deleted) = (0, 0);
    let replies = fields
        .iter()
        .map(|f| {
            if hash.get(f).is_none() {
                return NO_FIELD;
            }
            if !cond.allows(hash.field_deadline(f), deadline) {
                return 0;
            }
            if deadline <= now {
                hash.remove(f);
                deleted += 1;
                return 2;
            }
            hash.set_field_deadline(f, Some(deadline));
            updated += 1;
            1
        })
        .map(Frame::Integer)
        .collect();
    let empty = hash.is_empty();
    if updated + deleted > 0 {
        let db = cx.selected_db();
        if empty {
            cx.keyspace().remove(key, now);
        } else if updated > 0 {
            cx.node().register_field_deadline(db, key, deadline);
        }
        cx.keyspace().touch(key);
        // Valkey announces the fields a past deadline deleted as expired, Redis as deleted.
        let event = match (deleted > 0, cx.engine().version().is_valkey()) {
            (true, true) => "hexpired",
            (true, false) => "hdel",
            (false, _) => "hexpire",
        };
        cx.notify(super::class::HASH, event, key);
        if empty {
            cx.notify(super::class::GENERIC, "del", key);
        }
    }
    Ok(Frame::Array(replies))
}

/// `HTTL key FIELDS numfields field…`, `HPTTL`, `HEXPIRETIME` and `HPEXPIRETIME`: per field its
/// time to live (or its deadline), `-1` without one, `-2` when missing.
fn httl_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = name_of(args, &["httl", "hpttl", "hexpiretime", "hpexpiretime"]);
    let key = args.next_bytes()?;
    let now = cx.now;
    let valkey = cx.engine().version().is_valkey();
    let fields = match valkey {
        true => valkey_fields(args, super::SYNTAX, super::SYNTAX)?,
        false => &[][..],
    };
    let found = hash_at(cx, key)?;
    let fields = match valkey {
        true => fields,
        false => self::fields(args, "ERR Number of fields must be a positive integer")?,
    };
    let Some(hash) = found else {
        return Ok(Frame::Array(vec![Frame::Integer(NO_FIELD); fields.len()]));
    };
    // A listpack compares `<=`, a hash table `<` (Redis 7.4.1 has both).
    let table = hash.is_hashtable();
    let replies = fields.iter().map(|f| {
        if hash.get(f).is_none() {
            return NO_FIELD;
        }
        let Some(d) = hash.field_deadline(f) else {
            return -1;
        };
        if d < now || (d == now && !table) {
            return NO_FIELD;
        }
        if valkey {
            // Valkey rounds to the nearest second, as its `TTL` and `EXPIRETIME` do.
            let round = |ms: i64| ms / 1000 + i64::from(ms % 1000 >= 500);
            return match name {
                "httl" => round(d - now),
                "hpttl" => d - now,
                "hexpiretime" => round(d),
                _ => d,
            };
        }
        match name {
            "httl" => (d + 999 - now) / 1000,
            "hpttl" => d - now,
            "hexpiretime" => (d + 999) / 1000,
            _ => d,
        }
    });
    Ok(Frame::Array(replies.map(Frame::Integer).collect()))
}

/// `HPERSIST key FIELDS numfields field…`: per field `1` when its TTL was removed, `-1` when it
/// had none, `-2` when missing.
fn hpersist_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let now = cx.now;
    let valkey = cx.engine().version().is_valkey();
    let fields = match valkey {
        true => valkey_fields(args, super::SYNTAX, VALKEY_NUMFIELDS)?,
        false => &[][..],
    };
    let found = hash_at(cx, key)?;
    let fields = match valkey {
        true => fields,
        false => self::fields(args, "ERR Number of fields must be a positive integer")?,
    };
    let Some(hash) = found else {
        return Ok(Frame::Array(vec![Frame::Integer(NO_FIELD); fields.len()]));
    };
    let mut changed = false;
    let replies: Vec<Frame> = fields
        .iter()
        .map(|f| {
            if hash.get(f).is_none() {
                return NO_FIELD;
            }
            match hash.field_deadline(f) {
                None => -1,
                Some(d) if d < now => NO_FIELD,
                Some(_) => {
                    hash.set_field_deadline(f, None);
                    changed = true;
                    1
                }
            }
        })
        .map(Frame::Integer)
        .collect();
    if changed {
        cx.keyspace().touch(key);
        cx.notify(super::class::HASH, "hpersist", key);
    }
    Ok(Frame::Array(replies))
}

// ---- Valkey 9.1's forms ----

/// Valkey's error for a `FIELDS` part it cannot read.
pub(super) const VALKEY_NUMFIELDS: Frame =
    Frame::error("ERR numfields should be greater than 0 and match the provided number of fields");

/// Valkey 9.1's `FIELDS numfields field…`, read before the key is looked at: a count that is not
/// an integer is `ERR value is not an integer or out of range`, no `FIELDS` is `missing`, and a
/// count that is not that of the fields is `wrong` (`HTTL` says syntax error for both).
pub(super) fn valkey_fields<'a>(
    args: &mut Args<'a>,
    missing: Frame,
    wrong: Frame,
) -> Result<&'a [Bytes], Frame> {
    if !args.eat("fields") {
        return Err(missing);
    }
    let count = args.next_int()?;
    let rest = args.rest();
    if count < 1 || usize::try_from(count).ok() != Some(rest.len()) {
        return Err(wrong);
    }
    Ok(rest)
}

/// Valkey 9.1's `HEXPIRE` arguments after the key, read before the key is looked at: the
/// deadline (any that fits in 64 bits; a negative time is an invalid one), the conditions in
/// any order before `FIELDS` (NX with another, or GT with LT, refused), then the fields.
fn valkey_hexpire_args<'a>(
    args: &mut Args<'a>,
    name: &str,
    seconds: bool,
    absolute: bool,
    now: i64,
) -> Result<(i64, Cond, &'a [Bytes]), Frame> {
    let when = args.next_int()?;
    let ms = match seconds {
        true => when.checked_mul(1000),
        false => Some(when),
    };
    let deadline = ms.and_then(|ms| {
        if absolute {
            Some(ms)
        } else {
            ms.checked_add(now)
        }
    });
    let deadline = match deadline {
        Some(d) if when >= 0 => d,
        _ => return Err(invalid_expire(name)),
    };
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    loop {
        match args.peek() {
            Some(a) if is(a, "nx") => nx = true,
            Some(a) if is(a, "xx") => xx = true,
            Some(a) if is(a, "gt") => gt = true,
            Some(a) if is(a, "lt") => lt = true,
            _ => break,
        }
        args.next();
    }
    if nx && (xx || gt || lt) {
        return Err(Frame::error(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Frame::error(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    let cond = match (nx, xx, gt, lt) {
        (true, ..) => Cond::Nx,
        (_, _, true, _) => Cond::Gt,
        (_, true, _, true) => Cond::XxLt,
        (_, _, _, true) => Cond::Lt,
        (_, true, ..) => Cond::Xx,
        _ => Cond::Always,
    };
    let fields = valkey_fields(args, VALKEY_NUMFIELDS, VALKEY_NUMFIELDS)?;
    Ok((deadline, cond, fields))
}

// ---- lazy expiry, for the hash commands ----

/// Deletes those of `fields` of the hash at `key` that are past their deadline, as a read of
/// them does in Redis 7.4: one `hexpired` for the hash, and `del` when it lost its last field.
/// Whether the key was deleted. Valkey 9.1 leaves them to the active cycle (a read finds them
/// missing all the same).
pub(crate) fn expire_fields(cx: &mut Cx<'_>, key: &[u8], fields: &[&[u8]]) -> bool {
    !cx.engine().version().is_valkey() && expire_for_write(cx, key, fields)
}

/// [`expire_fields`] for a write about to set one of `fields`, on every release.
pub(crate) fn expire_for_write(cx: &mut Cx<'_>, key: &[u8], fields: &[&[u8]]) -> bool {
    let now = cx.now;
    let any = match cx.keyspace().peek(key, now).map(|e| &e.value) {
        Some(Value::Hash(h)) => fields.iter().any(|f| h.field_expired(f, now)),
        _ => false,
    };
    if !any {
        return false;
    }
    let Some(Value::Hash(hash)) = cx.keyspace().write(key, now).map(|e| &mut e.value) else {
        return false;
    };
    let mut removed = 0;
    for f in fields {
        if hash.field_expired(f, now) && hash.remove(f) {
            removed += 1;
        }
    }
    let empty = hash.is_empty();
    finish_expiry(cx, key, removed, empty)
}

/// Deletes every field of the hash at `key` past its deadline (`HRANDFIELD`'s first step in
/// Redis 7.4). Whether the key was deleted.
pub(crate) fn expire_all_fields(cx: &mut Cx<'_>, key: &[u8]) -> bool {
    if cx.engine().version().is_valkey() {
        return false;
    }
    let now = cx.now;
    let Some(Value::Hash(hash)) = cx.keyspace().write(key, now).map(|e| &mut e.value) else {
        return false;
    };
    let removed = hash.remove_expired_fields(now, usize::MAX);
    let empty = hash.is_empty();
    finish_expiry(cx, key, removed, empty)
}

fn finish_expiry(cx: &mut Cx<'_>, key: &[u8], removed: usize, empty: bool) -> bool {
    if removed == 0 {
        return false;
    }
    let now = cx.now;
    if empty {
        cx.keyspace().remove(key, now);
    }
    cx.keyspace().touch(key);
    cx.notify(super::class::HASH, "hexpired", key);
    if empty {
        cx.notify(super::class::GENERIC, "del", key);
    }
    empty
}

/// Registers the value now at `key` with the field cycle, if it is a hash with field TTLs (it
/// moved there: `RENAME`, `COPY`, `MOVE`, `RESTORE`).
pub(crate) fn track(cx: &mut Cx<'_>, db: usize, key: &[u8]) {
    let now = cx.now;
    cx.node().track_field_ttls(db, key, now);
}

/// `HMGET`'s lazy expiry: deletes those of `fields` past their deadline, then the hash as it is
/// left (None when it was deleted), looked at without counting a second read.
pub(crate) fn expire_named<'a>(
    cx: &'a mut Cx<'_>,
    key: &[u8],
    fields: &[Bytes],
) -> Option<&'a Hash> {
    let named: Vec<&[u8]> = fields.iter().map(|f| &f[..]).collect();
    expire_fields(cx, key, &named);
    let now = cx.now;
    match cx.keyspace().peek(key, now).map(|e| &e.value) {
        Some(Value::Hash(h)) => Some(h),
        _ => None,
    }
}

/// `HSET`'s rule for a field it writes: the field loses its TTL (`HINCRBY` keeps it).
pub(crate) fn persist_written(hash: &mut Hash, pair: &[Bytes]) {
    if let Some(field) = pair.first() {
        hash.set_field_deadline(field, None);
    }
}
