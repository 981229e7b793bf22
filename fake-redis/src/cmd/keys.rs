//! Commands on keys whatever their type: existence, deletion, TTLs, listing, renaming, flushing.
//!
//! The TTL commands carry most of Redis's subtlety, all of which a lock depends on: a key lives
//! through its deadline millisecond (`PTTL` replies 0 there), a deadline at or before now deletes
//! the key and still replies 1, `TTL` rounds to the nearest second, -2 means missing and -1 means
//! no TTL, and NX/XX/GT/LT compare against the current deadline (none counts as infinite).

use super::{Args, CmdResult, Cx, Spec, WRITE, int, invalid_expire, is};
use crate::engine::db::{DeadlineChange, Value};
use crate::engine::glob::glob_match;
use crate::engine::{DATABASES, Version};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static DEL: Spec = Spec::new("del", -2, WRITE, del_command);
pub(crate) static DELIFEQ: Spec = Spec::new("delifeq", 3, WRITE, delifeq_command);
pub(crate) static UNLINK: Spec = Spec::new("unlink", -2, WRITE, del_command);
pub(crate) static EXISTS: Spec = Spec::new("exists", -2, 0, exists_command);
/// `TOUCH key…`: how many of the keys exist, as `EXISTS` counts them, each marked accessed.
pub(crate) static TOUCH: Spec = Spec::new("touch", -2, 0, touch_command);
pub(crate) static TYPE: Spec = Spec::new("type", 2, 0, type_command);
pub(crate) static EXPIRE: Spec = Spec::new("expire", -3, WRITE, expire_command);
pub(crate) static PEXPIRE: Spec = Spec::new("pexpire", -3, WRITE, expire_command);
pub(crate) static EXPIREAT: Spec = Spec::new("expireat", -3, WRITE, expire_command);
pub(crate) static PEXPIREAT: Spec = Spec::new("pexpireat", -3, WRITE, expire_command);
pub(crate) static TTL: Spec = Spec::new("ttl", 2, 0, ttl_command);
pub(crate) static PTTL: Spec = Spec::new("pttl", 2, 0, ttl_command);
pub(crate) static EXPIRETIME: Spec = Spec::new("expiretime", 2, 0, ttl_command);
pub(crate) static PEXPIRETIME: Spec = Spec::new("pexpiretime", 2, 0, ttl_command);
pub(crate) static PERSIST: Spec = Spec::new("persist", 2, WRITE, persist_command);
pub(crate) static KEYS: Spec = Spec::new("keys", 2, 0, keys_command);
pub(crate) static SCAN: Spec = Spec::new("scan", -2, 0, scan_command);
pub(crate) static RENAME: Spec = Spec::new("rename", 3, WRITE, rename_command);
pub(crate) static RENAMENX: Spec = Spec::new("renamenx", 3, WRITE, rename_command);
pub(crate) static COPY: Spec =
    Spec::new("copy", -3, WRITE, copy_command).with_reads(super::ReadRule::Except(2));
pub(crate) static RANDOMKEY: Spec = Spec::new("randomkey", 1, 0, randomkey_command);
pub(crate) static DBSIZE: Spec = Spec::new("dbsize", 1, 0, dbsize_command);
pub(crate) static FLUSHDB: Spec = Spec::new("flushdb", -1, WRITE, flush_command);
pub(crate) static FLUSHALL: Spec = Spec::new("flushall", -1, WRITE, flush_command);

// ---- operations shared with the native scripts ----

/// `EXISTS` of one key (which leaves its idle time, as Redis's does).
pub(crate) fn exists(cx: &mut Cx<'_>, key: &[u8]) -> bool {
    cx.lookup_untouched(key).is_some()
}

/// `DEL` of one key: whether a live key was removed (an expired one is expired first, uncounted).
pub(crate) fn del(cx: &mut Cx<'_>, key: &[u8]) -> bool {
    let (now, h) = (cx.now, cx.hash(key));
    let db = cx.keyspace();
    let removed = db.change_deadline_h(key, h, now, |_| DeadlineChange::Delete);
    if removed {
        db.touch(key);
        cx.notify(super::class::GENERIC, "del", key);
    }
    removed
}

/// `PTTL`: -2 missing, -1 no TTL, else the milliseconds left (0 in the deadline millisecond).
pub(crate) fn pttl(cx: &mut Cx<'_>, key: &[u8]) -> i64 {
    let now = cx.now;
    match cx.lookup_untouched(key).map(|e| e.deadline()) {
        None => -2,
        Some(None) => -1,
        Some(Some(d)) => (d - now).max(0),
    }
}

/// How an `EXPIRE`-family command constrains the new deadline (Redis 7.0's NX/XX/GT/LT).
#[derive(Clone, Copy, Default)]
pub(crate) struct ExpireCondition {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl ExpireCondition {
    /// Reads every argument left.
    fn parse(args: &mut Args<'_>) -> Result<ExpireCondition, Frame> {
        let mut c = ExpireCondition::default();
        for o in args {
            if is(o, "nx") {
                c.nx = true;
            } else if is(o, "xx") {
                c.xx = true;
            } else if is(o, "gt") {
                c.gt = true;
            } else if is(o, "lt") {
                c.lt = true;
            } else {
                return Err(super::error_echoing(&[
                    b"ERR Unsupported option ",
                    super::c_text(o, usize::MAX),
                ]));
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(Frame::error(
                "ERR NX and XX, GT or LT options at the same time are not compatible",
            ));
        }
        if c.gt && c.lt {
            return Err(Frame::error(
                "ERR GT and LT options at the same time are not compatible",
            ));
        }
        Ok(c)
    }

    /// Whether a key whose deadline is `current` may get `new`.
    fn allows(&self, current: Option<i64>, new: i64) -> bool {
        if self.nx && current.is_some() {
            return false;
        }
        if self.xx && current.is_none() {
            return false;
        }
        // No deadline counts as infinite: GT always fails, LT always passes.
        if self.gt && current.is_none_or(|c| new <= c) {
            return false;
        }
        if self.lt && current.is_some_and(|c| new >= c) {
            return false;
        }
        true
    }
}

/// Sets `key`'s deadline to `when` (absolute unix ms) under `cond`: whether it was set. A
/// deadline at or before now deletes the key and counts as set (Redis's `checkAlreadyExpired`).
pub(crate) fn expire_at(cx: &mut Cx<'_>, key: &[u8], when: i64, cond: ExpireCondition) -> bool {
    let now = cx.now;
    let h = cx.hash(key);
    let db = cx.keyspace();
    let mut set = false;
    db.change_deadline_h(key, h, now, |current| {
        if !cond.allows(current, when) {
            return DeadlineChange::Keep;
        }
        set = true;
        if when <= now {
            DeadlineChange::Delete
        } else {
            DeadlineChange::Set(when)
        }
    });
    if set {
        db.touch(key);
        let event = if when <= now { "del" } else { "expire" };
        cx.notify(super::class::GENERIC, event, key);
    }
    set
}

/// `PEXPIRE key ms` as the native scripts call it.
pub(crate) fn pexpire(cx: &mut Cx<'_>, key: &[u8], ms: &[u8]) -> Result<bool, Frame> {
    let when = pexpire_deadline(cx.now, ms)?;
    Ok(expire_at(cx, key, when, ExpireCondition::default()))
}

/// The deadline `PEXPIRE … ms` sets at `now`, or its error for a bad `ms`: all that `PEXPIRE`
/// of a missing key does.
pub(crate) fn pexpire_deadline(now: i64, ms: &[u8]) -> Result<i64, Frame> {
    int(ms)?
        .checked_add(now)
        .ok_or_else(|| invalid_expire("pexpire"))
}

// ---- commands ----

fn del_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let removed = args.filter(|k| del(cx, k)).count();
    Ok(Frame::Integer(removed as i64))
}

/// `DELIFEQ key value` (Valkey 9): deletes the key if it holds a string equal to `value`: 1 if
/// it did, 0 if the key is missing or holds another string.
fn delifeq_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let want = args.next_bytes()?;
    let equal = match cx.lookup(key).map(|e| &e.value) {
        None => false,
        Some(Value::Str(s)) => s == want,
        Some(_) => return Err(super::WRONGTYPE),
    };
    Ok(Frame::Integer(i64::from(equal && del(cx, key))))
}

fn exists_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    // Every occurrence counts: `EXISTS k k` is 2.
    let found = args.filter(|k| exists(cx, k)).count();
    Ok(Frame::Integer(found as i64))
}

fn touch_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let found = args.filter(|k| cx.lookup(k).is_some()).count();
    Ok(Frame::Integer(found as i64))
}

fn type_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    Ok(Frame::simple(
        cx.lookup_untouched(key)
            .map_or("none", |e| e.value.type_name()),
    ))
}

/// `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` parsed: the key, the absolute deadline and the
/// condition.
struct Expire<'a> {
    key: &'a Bytes,
    when: i64,
    cond: ExpireCondition,
}

impl<'a> Expire<'a> {
    /// The condition is read before the time, so a bad option wins over a bad number, as in
    /// Redis.
    fn parse(cx: &Cx<'_>, args: &mut Args<'a>) -> Result<Expire<'a>, Frame> {
        let name = args.name().to_ascii_lowercase();
        let name = std::str::from_utf8(&name).unwrap_or("expire");
        let key = args.next_bytes()?;
        let when = args.next_bytes()?;
        let cond = ExpireCondition::parse(args)?;
        let mut when = int(when)?;
        let seconds = name == "expire" || name == "expireat";
        let base = if name.ends_with("at") { 0 } else { cx.now };
        if seconds {
            when = when.checked_mul(1000).ok_or_else(|| invalid_expire(name))?;
        }
        let when = when.checked_add(base).ok_or_else(|| invalid_expire(name))?;
        Ok(Expire { key, when, cond })
    }

    fn apply(self, cx: &mut Cx<'_>) -> CmdResult {
        Ok(Frame::Integer(i64::from(expire_at(
            cx, self.key, self.when, self.cond,
        ))))
    }
}

fn expire_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    Expire::parse(cx, args)?.apply(cx)
}

/// `TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME`.
fn ttl_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let now = cx.now;
    let name = args.name();
    let ms = is(name, "pttl") || is(name, "pexpiretime");
    let absolute = is(name, "expiretime") || is(name, "pexpiretime");
    let deadline = match cx.lookup_untouched(args.next_bytes()?) {
        None => return Ok(Frame::Integer(-2)),
        Some(e) => e.deadline(),
    };
    let Some(deadline) = deadline else {
        return Ok(Frame::Integer(-1));
    };
    let t = if absolute { deadline } else { deadline - now }.max(0);
    // Seconds round to nearest: (ms + 500) / 1000, as `ttlGenericCommand` does.
    Ok(Frame::Integer(if ms { t } else { (t + 500) / 1000 }))
}

fn persist_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let now = cx.now;
    let key = args.next_bytes()?;
    Ok(match cx.lookup(key) {
        Some(e) if e.deadline().is_some() => {
            let db = cx.keyspace();
            db.set_deadline(key, None, now);
            db.touch(key);
            cx.notify(super::class::GENERIC, "persist", key);
            Frame::Integer(1)
        }
        _ => Frame::Integer(0),
    })
}

fn keys_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let now = cx.now;
    let pattern = args.next_bytes()?;
    let all = &pattern[..] == b"*";
    let db = cx.keyspace();
    let keys = db
        .keys_in_scan_order()
        .into_iter()
        .filter(|(_, k)| all || glob_match(pattern, k))
        // KEYS skips logically expired keys without deleting them.
        .filter(|(_, k)| db.peek(k, now).is_some())
        .map(|(_, k)| Frame::Bulk(k))
        .collect();
    Ok(Frame::Array(keys))
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]` parsed.
struct Scan<'a> {
    cursor: u64,
    pattern: Option<&'a Bytes>,
    count: usize,
    type_name: Option<&'a Bytes>,
    /// `HSCAN`'s `NOVALUES` (Redis 7.4 and later): the fields without their values.
    no_values: bool,
}

/// What a scan walks, which decides the options it takes: `TYPE` only for `SCAN` itself,
/// `NOVALUES` only for `HSCAN`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanOf {
    Keys,
    Hash,
    /// A set or a sorted set.
    Members,
}

impl<'a> Scan<'a> {
    fn parse(args: &mut Args<'a>, version: Version) -> Result<Scan<'a>, Frame> {
        let cursor = parse_cursor(args.next_bytes()?)?;
        Scan::parse_options(cursor, args, ScanOf::Keys, version)
    }

    /// The options after the cursor (every argument left). Before 7.4 `NOVALUES` is no option
    /// at all (a syntax error); from 7.4 it is refused by name outside `HSCAN`.
    fn parse_options(
        cursor: u64,
        args: &mut Args<'a>,
        of: ScanOf,
        version: Version,
    ) -> Result<Scan<'a>, Frame> {
        let mut scan = Scan {
            cursor,
            pattern: None,
            count: 10,
            type_name: None,
            no_values: false,
        };
        let with_type = of == ScanOf::Keys;
        while let Some(opt) = args.next() {
            if is(opt, "count") {
                let n = args.next_int()?;
                if n < 1 {
                    return Err(super::SYNTAX);
                }
                scan.count = n as usize;
            } else if is(opt, "match") {
                scan.pattern = Some(args.next_bytes()?);
            } else if with_type && is(opt, "type") {
                scan.type_name = Some(args.next_bytes()?);
            } else if version != Version::V7_0 && is(opt, "novalues") {
                if of != ScanOf::Hash {
                    return Err(Frame::error(
                        "ERR NOVALUES option can only be used in HSCAN",
                    ));
                }
                scan.no_values = true;
            } else {
                return Err(super::SYNTAX);
            }
        }
        Ok(scan)
    }

    /// Walks the table's buckets from the cursor ([`Db::scan`](crate::engine::db::Db::scan)),
    /// so a call costs in proportion to `COUNT` and a key present for the whole scan is
    /// returned (at least once), as Redis guarantees.
    fn apply(self, cx: &mut Cx<'_>) -> CmdResult {
        let (next, keys) = cx.keyspace().scan(self.cursor, self.count);
        let mut found = Vec::new();
        for key in keys {
            let Some(entry) = cx.lookup(&key) else {
                continue;
            };
            if let Some(t) = self.type_name
                && !is(t, entry.value.type_name())
            {
                continue;
            }
            if let Some(p) = self.pattern
                && !glob_match(p, &key)
            {
                continue;
            }
            found.push(Frame::Bulk(key));
        }
        Ok(Frame::Array(vec![
            Frame::Bulk(Bytes::from(next.to_string())),
            Frame::Array(found),
        ]))
    }
}

/// A `SCAN` cursor (`ERR invalid cursor`), read as C's `strtoul` reads it: a sign is allowed,
/// `-1` wraps to `u64::MAX`, and the empty cursor is 0 (nothing converted, and nothing left), as
/// in Redis.
pub(crate) fn parse_cursor(arg: &[u8]) -> Result<u64, Frame> {
    if arg.is_empty() {
        return Ok(0);
    }
    let text = std::str::from_utf8(arg).ok();
    let parsed = text.and_then(|s| match s.strip_prefix('-') {
        Some(rest) if !rest.starts_with(['+', '-']) => {
            rest.parse::<u64>().ok().map(u64::wrapping_neg)
        }
        _ => s.parse::<u64>().ok(),
    });
    parsed.ok_or(Frame::error("ERR invalid cursor"))
}

/// `HSCAN`/`SSCAN`/`ZSCAN key cursor [MATCH pattern] [COUNT count]` over the collection `read`
/// finds at the key (WRONGTYPE for another type). `page` takes the collection, the cursor and
/// `COUNT`, and gives the cursor to resume at (0 when done) and the elements of this step, each
/// element's name (what MATCH sees) with the frames it replies; MATCH filters a step after it is
/// taken, as in Redis, so a step may reply fewer than `COUNT`, or none. As in Redis, the cursor
/// is checked first and a missing key replies an empty scan before the options are.
pub(crate) fn scan_collection<V: ?Sized>(
    cx: &mut Cx<'_>,
    args: &mut Args<'_>,
    of: ScanOf,
    read: for<'a, 'b> fn(&'a mut Cx<'b>, &[u8]) -> Result<Option<&'a V>, Frame>,
    page: impl FnOnce(&V, u64, usize) -> (u64, Vec<(Bytes, Vec<Frame>)>),
) -> CmdResult {
    let key = args.next_bytes()?;
    let cursor = parse_cursor(args.next_bytes()?)?;
    let reply = |next: u64, found| {
        Frame::Array(vec![
            Frame::Bulk(Bytes::from(next.to_string())),
            Frame::Array(found),
        ])
    };
    let version = cx.engine().version();
    let Some(value) = read(cx, key)? else {
        return Ok(reply(0, Vec::new()));
    };
    let scan = Scan::parse_options(cursor, args, of, version)?;
    let (next, items) = page(value, cursor, scan.count);
    // A hash's element is its field and value; `NOVALUES` keeps the field.
    let keep = if scan.no_values { 1 } else { usize::MAX };
    let found = items
        .into_iter()
        .filter(|(name, _)| scan.pattern.is_none_or(|p| glob_match(p, name)))
        .flat_map(|(_, frames)| frames.into_iter().take(keep))
        .collect();
    Ok(reply(next, found))
}

fn scan_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let version = cx.engine().version();
    Scan::parse(args, version)?.apply(cx)
}

/// `RENAME source destination` and `RENAMENX`, which does nothing if the destination exists.
fn rename_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let nx = is(args.name(), "renamenx");
    let (src, dst) = (args.next_bytes()?, args.next_bytes()?);
    let now = cx.now;
    if cx.lookup(src).is_none() {
        return Err(Frame::error("ERR no such key"));
    }
    if src == dst {
        return Ok(if nx { Frame::Integer(0) } else { Frame::OK });
    }
    if nx && cx.lookup(dst).is_some() {
        return Ok(Frame::Integer(0));
    }
    let db = cx.keyspace();
    let Some(entry) = db.remove(src, now) else {
        return Err(Frame::error("ERR no such key"));
    };
    let (deadline, marks) = (entry.deadline(), entry.encoding_marks());
    // Redis deletes a destination that exists and adds the key anew (`dbDelete`, then `dbAdd`:
    // a `new` event either way), so a client blocked on the destination finds it ready even when
    // it existed before.
    db.remove(dst, now);
    db.insert(dst, entry.value, deadline, now);
    db.touch(src);
    db.touch(dst);
    let here = cx.db;
    super::server::set_marks(cx, here, dst, marks);
    cx.notify(super::class::GENERIC, "rename_from", src);
    cx.notify(super::class::GENERIC, "rename_to", dst);
    Ok(if nx { Frame::Integer(1) } else { Frame::OK })
}

/// `COPY source destination [DB destination-db] [REPLACE]`: 1 if copied, with the source's TTL;
/// 0 when the source is missing or the destination exists without `REPLACE`.
fn copy_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (src, dst) = (args.next_bytes()?, args.next_bytes()?);
    let mut replace = false;
    let mut target = cx.db;
    while let Some(opt) = args.next() {
        if is(opt, "replace") {
            replace = true;
        } else if is(opt, "db") && args.remaining() > 0 {
            let id = i64::from(args.next_i32()?);
            if !(0..DATABASES as i64).contains(&id) {
                return Err(Frame::error("ERR DB index is out of range"));
            }
            target = id as usize;
        } else {
            return Err(super::SYNTAX);
        }
    }
    if target == cx.db && src == dst {
        return Err(Frame::error(
            "ERR source and destination objects are the same",
        ));
    }
    let now = cx.now;
    let Some(entry) = cx.lookup(src) else {
        return Ok(Frame::Integer(0));
    };
    let (value, deadline) = (entry.value.clone(), entry.deadline());
    let marks = entry.encoding_marks();
    let db = cx.keyspace_at(target);
    if db.lookup(dst, now).is_some() {
        if !replace {
            return Ok(Frame::Integer(0));
        }
        db.remove(dst, now);
    }
    db.insert(dst, value, deadline, now);
    db.touch(dst);
    super::server::set_marks(cx, target, dst, marks);
    cx.notify_at(target, super::class::GENERIC, "copy_to", dst);
    Ok(Frame::Integer(1))
}

/// `RANDOMKEY`: a key drawn with the engine's seeded generator; a drawn key that turns out to be
/// logically expired is deleted and the draw repeats, as Redis's `dbRandomKey` does.
fn randomkey_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    loop {
        let picked = cx.random_key();
        let Some(key) = picked else {
            return Ok(Frame::Null);
        };
        // An expired key is deleted by the lookup, and another drawn, as in Redis.
        if cx.lookup(&key).is_some() {
            return Ok(Frame::Bulk(key));
        }
    }
}

fn dbsize_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(cx.keyspace().len() as i64))
}

/// `FLUSHDB [SYNC|ASYNC]` and `FLUSHALL [SYNC|ASYNC]`.
fn flush_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let all = is(args.name(), "flushall");
    match args.rest() {
        [] => {}
        [mode] if is(mode, "sync") || is(mode, "async") => {}
        _ => return Err(super::SYNTAX),
    }
    let now = cx.now;
    if all {
        for db in cx.keyspaces() {
            db.flush(now);
        }
    } else {
        cx.keyspace().flush(now);
    }
    Ok(Frame::OK)
}

/// The type of a value, for `WRONGTYPE` checks: its string, if it is one.
pub(crate) fn as_str(value: &Value) -> Result<&Bytes, Frame> {
    match value {
        Value::Str(s) => Ok(s),
        _ => Err(super::WRONGTYPE),
    }
}
