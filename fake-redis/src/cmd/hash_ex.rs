//! Valkey's hash commands that read or write fields together with their TTLs: `HGETEX` (read
//! fields, and set, clear or end their TTLs), `HSETEX` (write fields with a TTL, under key and
//! field conditions) and `HGETDEL` (read fields and delete them). Valkey 9.1 has them; no Redis
//! the fake imitates does, so the table knows them only in that mode.
//!
//! Replies, errors and their order are Valkey 9.1.2's. Each command finds its `FIELDS` word by
//! scanning from the key on (a key named `fields` is that word), reads the options between the
//! key and it, then the count, then looks the key up; `HGETEX` and `HSETEX` read the time after
//! the key's type. A deadline at or before the command's time ends the fields at once: `HGETEX`
//! deletes them (`hexpired`), `HSETEX` writes them and then deletes them (`hset`, `hexpire`,
//! `hexpired`, and `del` when the hash is left empty, even one the command created). A field past
//! its deadline that the active cycle has not removed yet reads as missing and is neither
//! changed nor deleted, except that `HSETEX` writes over it (`hexpired` first).
//!
//! The TTLs themselves and the field cycle are the engine's (`engine/hash_ttl.rs`); replicas
//! and the journal take the key's state after the command, so nothing is rewritten here.

use super::hash_ttl::{VALKEY_NUMFIELDS as NUMFIELDS, valkey_fields};
use super::{Args, CmdResult, Cx, ReadRule, SYNTAX, Spec, WRITE, invalid_expire, is};
use crate::engine::db::{Hash, Value};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static HGETEX: Spec =
    Spec::new("hgetex", -5, WRITE, hgetex_command).with_reads(ReadRule::Always);
pub(crate) static HSETEX: Spec = Spec::new("hsetex", -6, WRITE, hsetex_command);
pub(crate) static HGETDEL: Spec = Spec::new("hgetdel", -5, WRITE, hgetdel_command);

/// The unit and base of a time option.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    Ex,
    Px,
    ExAt,
    PxAt,
}

fn unit_of(word: &[u8]) -> Option<Unit> {
    [
        ("ex", Unit::Ex),
        ("px", Unit::Px),
        ("exat", Unit::ExAt),
        ("pxat", Unit::PxAt),
    ]
    .into_iter()
    .find(|(w, _)| is(word, w))
    .map(|(_, u)| u)
}

/// The options of `HGETEX` and `HSETEX`, as Valkey reads them: a word may repeat (a repeated
/// time option takes the last value), two of one group may not meet.
#[derive(Default)]
struct Options<'a> {
    time: Option<(Unit, &'a Bytes)>,
    persist: bool,
    keepttl: bool,
    nx: bool,
    xx: bool,
    fnx: bool,
    fxx: bool,
}

impl<'a> Options<'a> {
    /// Reads `words` (those between the key and `FIELDS`); `set`: `HSETEX`'s words, else
    /// `HGETEX`'s.
    fn parse(words: &'a [Bytes], set: bool) -> Result<Options<'a>, Frame> {
        let mut o = Options::default();
        let mut i = 0;
        while let Some(word) = words.get(i) {
            i += 1;
            if let Some(unit) = unit_of(word) {
                let other = o.time.is_some_and(|(u, _)| u != unit);
                match words.get(i) {
                    Some(value) if !other && !o.persist && !o.keepttl => {
                        o.time = Some((unit, value));
                        i += 1;
                    }
                    _ => return Err(SYNTAX),
                }
            } else if !set && is(word, "persist") && o.time.is_none() {
                o.persist = true;
            } else if set && is(word, "keepttl") && o.time.is_none() {
                o.keepttl = true;
            } else if set && is(word, "nx") && !o.xx {
                o.nx = true;
            } else if set && is(word, "xx") && !o.nx {
                o.xx = true;
            } else if set && is(word, "fnx") && !o.fxx {
                o.fnx = true;
            } else if set && is(word, "fxx") && !o.fnx {
                o.fxx = true;
            } else {
                return Err(SYNTAX);
            }
        }
        Ok(o)
    }

    /// The deadline the time option names, unix ms, with Valkey's errors: not an integer, or
    /// negative or past 64 bits (`invalid expire time`).
    fn deadline(&self, now: i64, name: &str) -> Result<Option<i64>, Frame> {
        let Some((unit, value)) = self.time else {
            return Ok(None);
        };
        let when = super::int(value)?;
        let ms = match unit {
            Unit::Ex | Unit::ExAt => when.checked_mul(1000),
            Unit::Px | Unit::PxAt => Some(when),
        };
        let deadline = match unit {
            Unit::Ex | Unit::Px => ms.and_then(|ms| ms.checked_add(now)),
            Unit::ExAt | Unit::PxAt => ms,
        };
        match deadline {
            Some(d) if when >= 0 => Ok(Some(d)),
            _ => Err(invalid_expire(name)),
        }
    }
}

/// The arguments after the key split at the first `FIELDS` (looked for from the key on, so a
/// key named `fields` is taken for it, and never as the last argument): the options before it,
/// its count, and the fields after the count. None without one.
fn split_fields<'a>(args: &Args<'a>) -> Option<(&'a [Bytes], &'a Bytes, &'a [Bytes])> {
    let all = args.whole();
    let at = (1..all.len().saturating_sub(1)).find(|&i| is(&all[i], "fields"))?;
    let options = all.get(2..at).unwrap_or_default();
    Some((options, &all[at + 1], &all[at + 2..]))
}

/// The hash at `key`, `WRONGTYPE` for another type; whether it is there.
fn check_hash(cx: &mut Cx<'_>, key: &[u8]) -> Result<bool, Frame> {
    match cx.lookup(key).map(|e| &e.value) {
        None => Ok(false),
        Some(Value::Hash(_)) => Ok(true),
        Some(_) => Err(super::WRONGTYPE),
    }
}

/// The hash at `key` for a change in place (journaled), if it is one.
fn hash_mut<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Option<&'a mut Hash> {
    let now = cx.now;
    match cx.keyspace().write(key, now).map(|e| &mut e.value) {
        Some(Value::Hash(h)) => Some(h),
        _ => None,
    }
}

/// The value of `field` if it is there and not past its deadline.
fn live_value(hash: &Hash, field: &[u8], now: i64) -> Option<Bytes> {
    match hash.field_expired(field, now) {
        true => None,
        false => hash.get(field).map(super::value_bytes),
    }
}

/// After a change of the hash at `key`: watchers told, `events` in order, and the key deleted
/// (`del`) when the hash was left without fields.
fn finish(cx: &mut Cx<'_>, key: &[u8], events: &[&str]) {
    let now = cx.now;
    let empty = matches!(
        cx.keyspace().peek(key, now).map(|e| &e.value),
        Some(Value::Hash(h)) if h.is_empty()
    );
    cx.keyspace().touch(key);
    for event in events {
        cx.notify(super::class::HASH, event, key);
    }
    if empty {
        cx.keyspace().remove(key, now);
        cx.notify(super::class::GENERIC, "del", key);
    }
}

/// What `HGETEX` does to each field it reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GetEx {
    Nothing,
    Delete,
    Expire(i64),
    Persist,
}

/// `HGETEX key [EX|PX|EXAT|PXAT time|PERSIST] FIELDS numfields field…`: the fields' values
/// (nil for a missing one), each read before its TTL changes.
fn hgetex_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let (options, count, fields) = split_fields(args).ok_or(NUMFIELDS)?;
    let options = Options::parse(options, false)?;
    let count = super::int(count)?;
    if count < 1 || usize::try_from(count).ok() != Some(fields.len()) {
        return Err(NUMFIELDS);
    }
    let exists = check_hash(cx, key)?;
    let now = cx.now;
    let action = match options.deadline(now, "hgetex")? {
        _ if options.persist => GetEx::Persist,
        Some(d) if d <= now => GetEx::Delete,
        Some(d) => GetEx::Expire(d),
        None => GetEx::Nothing,
    };
    if exists && action == GetEx::Nothing {
        let hash = match cx.keyspace().peek(key, now).map(|e| &e.value) {
            Some(Value::Hash(h)) => Some(h),
            _ => None,
        };
        let replies = fields.iter().map(|f| {
            let value = hash.and_then(|h| live_value(h, f, now));
            value.map_or(Frame::Null, Frame::Bulk)
        });
        return Ok(Frame::Array(replies.collect()));
    }
    let hash = match exists {
        true => hash_mut(cx, key),
        false => None,
    };
    let Some(hash) = hash else {
        return Ok(Frame::Array(vec![Frame::Null; fields.len()]));
    };
    let mut changes = 0;
    let mut replies = Vec::with_capacity(fields.len());
    for field in fields {
        let value = live_value(hash, field, now);
        let live = value.is_some();
        replies.push(value.map_or(Frame::Null, Frame::Bulk));
        let changed = match action {
            GetEx::Delete if live => hash.remove(field),
            GetEx::Expire(d) if live => {
                hash.set_field_deadline(field, Some(d));
                true
            }
            GetEx::Persist if live && hash.field_deadline(field).is_some() => {
                hash.set_field_deadline(field, None);
                true
            }
            _ => false,
        };
        changes += usize::from(changed);
    }
    if changes > 0 {
        let event = match action {
            GetEx::Delete => "hexpired",
            GetEx::Expire(d) => {
                let db = cx.selected_db();
                cx.node().register_field_deadline(db, key, d);
                "hexpire"
            }
            _ => "hpersist",
        };
        finish(cx, key, &[event]);
    }
    Ok(Frame::Array(replies))
}

/// `HSETEX key [NX|XX] [FNX|FXX] [EX|PX|EXAT|PXAT time|KEEPTTL] FIELDS numfields field value…`:
/// `1` when the fields were written, `0` when a condition held them back.
fn hsetex_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let (options, count, pairs) = split_fields(args).ok_or(NUMFIELDS)?;
    let options = Options::parse(options, true)?;
    let count = super::int(count)?;
    let fits = (1..=i64::MAX / 2).contains(&count);
    if !fits || usize::try_from(count * 2).ok() != Some(pairs.len()) {
        return Err(NUMFIELDS);
    }
    let exists = check_hash(cx, key)?;
    if (options.nx && exists) || (options.xx && !exists) {
        return Ok(Frame::Integer(0));
    }
    let now = cx.now;
    let deadline = match options.keepttl {
        true => None,
        false => options.deadline(now, "hsetex")?,
    };
    let fields = || pairs.iter().step_by(2);
    if options.fnx || options.fxx {
        let present = |f: &Bytes| match cx.keyspace().peek(key, now).map(|e| &e.value) {
            Some(Value::Hash(h)) => live_value(h, f, now).is_some(),
            _ => false,
        };
        let held = match options.fnx {
            true => fields().any(present),
            false => !exists || !fields().all(present),
        };
        if held {
            return Ok(Frame::Integer(0));
        }
    }
    if !exists {
        cx.keyspace()
            .insert(key, Value::Hash(Hash::default()), None, now);
    }
    let Some(hash) = hash_mut(cx, key) else {
        return Ok(Frame::Integer(0));
    };
    // A field past its deadline is expired as it is written over, in its place.
    let mut expired = false;
    for field in fields() {
        if hash.field_expired(field, now) {
            hash.set_field_deadline(field, None);
            expired = true;
        }
    }
    for pair in pairs.chunks_exact(2) {
        let [field, value] = pair else { continue };
        hash.insert(field.clone(), value.clone());
        if !options.keepttl {
            hash.set_field_deadline(field, deadline);
        }
    }
    let past = deadline.is_some_and(|d| d <= now);
    if past {
        for field in fields() {
            hash.remove(field);
        }
    }
    if expired {
        cx.notify(super::class::HASH, "hexpired", key);
    }
    let mut events = vec!["hset"];
    if let Some(d) = deadline {
        events.push("hexpire");
        if past {
            events.push("hexpired");
        } else {
            let db = cx.selected_db();
            cx.node().register_field_deadline(db, key, d);
        }
    }
    finish(cx, key, &events);
    Ok(Frame::Integer(1))
}

/// `HGETDEL key FIELDS numfields field…`: the fields' values (nil for a missing one), each
/// deleted once read; the key goes with its last field.
fn hgetdel_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let fields = valkey_fields(args, SYNTAX, NUMFIELDS)?;
    if !check_hash(cx, key)? {
        return Ok(Frame::Array(vec![Frame::Null; fields.len()]));
    }
    let now = cx.now;
    let Some(hash) = hash_mut(cx, key) else {
        return Ok(Frame::Array(vec![Frame::Null; fields.len()]));
    };
    let mut deleted = 0;
    let mut replies = Vec::with_capacity(fields.len());
    for field in fields {
        let value = live_value(hash, field, now);
        if value.is_some() && hash.remove(field) {
            deleted += 1;
        }
        replies.push(value.map_or(Frame::Null, Frame::Bulk));
    }
    if deleted > 0 {
        finish(cx, key, &["hdel"]);
    }
    Ok(Frame::Array(replies))
}
