//! String commands: `GET`/`SET` and their variants, counters, `APPEND`, `STRLEN`.
//!
//! `SET` is the one with real parsing: Redis 7.0 accepts NX/XX, GET, KEEPTTL and one of
//! EX/PX/EXAT/PXAT in any order, with a few exact incompatibilities (a repeated `EX` is fine, `EX`
//! with `PX` is a syntax error), validates the expire time before looking at the key, and replies
//! nil rather than OK when NX/XX stops it. Overwriting clears the TTL unless KEEPTTL; `INCR` and
//! `APPEND` keep it.

use super::keys::as_str;
use super::long_double::LongDouble;
use super::{
    Args, CmdResult, Cx, NOT_FLOAT, NOT_INTEGER, OVERFLOW, SYNTAX, Spec, WRITE, int, int_bytes,
    invalid_expire, is,
};
use crate::engine::db::{MAX_STRING, Value};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static GET: Spec = Spec::new("get", 2, 0, get_command);
pub(crate) static SET: Spec = Spec::new("set", -3, WRITE, set_command)
    .with_reads(super::ReadRule::Decide(super::reads::set_reads));
pub(crate) static SETNX: Spec = Spec::new("setnx", 3, WRITE, setnx_command);
pub(crate) static SETEX: Spec = Spec::new("setex", 4, WRITE, setex_command);
pub(crate) static PSETEX: Spec = Spec::new("psetex", 4, WRITE, setex_command);
pub(crate) static GETSET: Spec =
    Spec::new("getset", 3, WRITE, getset_command).with_reads(super::ReadRule::Always);
pub(crate) static GETDEL: Spec =
    Spec::new("getdel", 2, WRITE, getdel_command).with_reads(super::ReadRule::Always);
pub(crate) static GETEX: Spec =
    Spec::new("getex", -2, WRITE, getex_command).with_reads(super::ReadRule::Always);
pub(crate) static MGET: Spec = Spec::new("mget", -2, 0, mget_command);
pub(crate) static MSET: Spec = Spec::new("mset", -3, WRITE, mset_command);
pub(crate) static MSETNX: Spec = Spec::new("msetnx", -3, WRITE, mset_command);
/// Valkey 9.1's `MSETEX numkeys key value… [NX|XX] [EX|PX|EXAT|PXAT time|KEEPTTL]`.
pub(crate) static MSETEX: Spec = Spec::new("msetex", -4, WRITE, msetex_command);
pub(crate) static INCR: Spec = Spec::new("incr", 2, WRITE, incr_command);
pub(crate) static DECR: Spec = Spec::new("decr", 2, WRITE, decr_command);
pub(crate) static INCRBY: Spec = Spec::new("incrby", 3, WRITE, incrby_command);
pub(crate) static DECRBY: Spec = Spec::new("decrby", 3, WRITE, decrby_command);
pub(crate) static INCRBYFLOAT: Spec = Spec::new("incrbyfloat", 3, WRITE, incrbyfloat_command);
pub(crate) static APPEND: Spec = Spec::new("append", 3, WRITE, append_command);
pub(crate) static STRLEN: Spec = Spec::new("strlen", 2, 0, strlen_command);
pub(crate) static GETRANGE: Spec = Spec::new("getrange", 4, 0, getrange_command);
/// `SUBSTR key start end`: the old name of `GETRANGE`.
pub(crate) static SUBSTR: Spec = Spec::new("substr", 4, 0, getrange_command);
pub(crate) static LCS: Spec = Spec::new("lcs", -3, 0, lcs_command);
pub(crate) static SETRANGE: Spec = Spec::new("setrange", 4, WRITE, setrange_command);

// ---- operations shared with the native scripts ----

/// `GET`: the string at `key`, WRONGTYPE for another type.
pub(crate) fn get(cx: &mut Cx<'_>, key: &[u8]) -> Result<Option<Bytes>, Frame> {
    match cx.lookup(key) {
        None => Ok(None),
        Some(e) => as_str(&e.value).cloned().map(Some),
    }
}

/// Writes a string at `key` with `deadline` (a plain `SET`: the old TTL is gone).
pub(crate) fn set(cx: &mut Cx<'_>, key: &[u8], value: Bytes, deadline: Option<i64>) {
    set_at(cx, key, value, deadline, false);
}

/// [`set`] on a key the caller knows is `missing` (it looked, at the same frozen time), which
/// skips the search for an old entry.
fn set_at(cx: &mut Cx<'_>, key: &[u8], value: Bytes, deadline: Option<i64>, missing: bool) {
    let (now, h) = (cx.now, cx.hash(key));
    let db = cx.keyspace();
    match missing {
        true => db.insert_absent_h(key, h, Value::Str(value), deadline, now),
        false => db.insert_h(key, h, Value::Str(value), deadline, now),
    }
    db.touch(key);
    cx.notify(super::class::STRING, "set", key);
    if deadline.is_some() {
        cx.notify(super::class::GENERIC, "expire", key);
    }
}

/// `SET key value PX ms`, validated as Redis validates it, on a key known to be `missing` or not.
#[inline]
pub(crate) fn set_px(
    cx: &mut Cx<'_>,
    key: &[u8],
    value: Bytes,
    ms: &[u8],
    missing: bool,
) -> Result<(), Frame> {
    let deadline = px_deadline(cx.now, ms)?;
    set_at(cx, key, value, Some(deadline), missing);
    Ok(())
}

/// The deadline `SET … PX ms` sets at `now`, or its error for a bad `ms`.
#[inline]
pub(crate) fn px_deadline(now: i64, ms: &[u8]) -> Result<i64, Frame> {
    Expiry::Px(int(ms)?).deadline(now, "set")
}

/// `INCRBY key delta`: the new value. Keeps the TTL.
pub(crate) fn incr_by(cx: &mut Cx<'_>, key: &[u8], delta: i64) -> Result<i64, Frame> {
    let now = cx.now;
    let old = match cx.lookup(key) {
        None => None,
        Some(e) => Some(crate::resp::number::parse_i64(as_str(&e.value)?).ok_or(NOT_INTEGER)?),
    };
    let new = old.unwrap_or(0).checked_add(delta).ok_or(OVERFLOW)?;
    let db = cx.keyspace();
    match (old, db.write(key, now)) {
        (Some(_), Some(entry)) => {
            entry.value = Value::Str(int_bytes(new));
            // Redis's result is an integer object whatever the old value was built as.
            entry.set_encoding_marks(0);
        }
        _ => db.insert(key, Value::Str(int_bytes(new)), None, now),
    }
    db.touch(key);
    cx.notify(super::class::STRING, "incrby", key);
    Ok(new)
}

// ---- SET and its options ----

/// A relative or absolute expiry, as `SET` and `GETEX` take it.
#[derive(Clone, Copy)]
enum Expiry {
    Ex(i64),
    Px(i64),
    ExAt(i64),
    PxAt(i64),
}

impl Expiry {
    /// The absolute deadline, or `invalid expire time in '<cmd>' command` (Redis's
    /// `getExpireMillisecondsOrReply`: not positive, or overflowing).
    fn deadline(self, now: i64, cmd: &str) -> Result<i64, Frame> {
        let (n, seconds, relative) = match self {
            Expiry::Ex(n) => (n, true, true),
            Expiry::Px(n) => (n, false, true),
            Expiry::ExAt(n) => (n, true, false),
            Expiry::PxAt(n) => (n, false, false),
        };
        let invalid = || invalid_expire(cmd);
        if n <= 0 {
            return Err(invalid());
        }
        let ms = if seconds {
            n.checked_mul(1000).ok_or_else(invalid)?
        } else {
            n
        };
        if relative {
            ms.checked_add(now).ok_or_else(invalid)
        } else {
            Ok(ms)
        }
    }

    fn is_absolute(self) -> bool {
        matches!(self, Expiry::ExAt(_) | Expiry::PxAt(_))
    }
}

/// The options of `SET` (after the value) or `GETEX` (after the key), as Redis 7.0's
/// `parseExtendedStringArgumentsOrReply` reads them.
#[derive(Default)]
struct StringOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keepttl: bool,
    persist: bool,
    expiry: Option<(ExpiryKind, &'a [u8])>,
    /// Valkey's `IFEQ value`: set only over a string equal to it (excludes `NX` and `XX`).
    ifeq: Option<&'a [u8]>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpiryKind {
    Ex,
    Px,
    ExAt,
    PxAt,
}

impl<'a> StringOptions<'a> {
    /// Reads every argument left; `ifeq`: the release takes `SET`'s `IFEQ` (Valkey).
    fn parse(args: &mut Args<'a>, for_set: bool, ifeq: bool) -> Result<StringOptions<'a>, Frame> {
        let mut o = StringOptions::default();
        while let Some(opt) = args.next() {
            let other_expiry = |o: &StringOptions<'_>, kind: ExpiryKind| {
                o.keepttl || o.persist || o.expiry.as_ref().is_some_and(|(k, _)| *k != kind)
            };
            let conditional = o.nx || o.xx || o.ifeq.is_some();
            // A condition may repeat (`NX NX`), but not meet another.
            if for_set && is(opt, "nx") && !o.xx && o.ifeq.is_none() {
                o.nx = true;
            } else if for_set && is(opt, "xx") && !o.nx && o.ifeq.is_none() {
                o.xx = true;
            } else if for_set
                && ifeq
                && is(opt, "ifeq")
                && !conditional
                && let Some(value) = args.next()
            {
                o.ifeq = Some(value);
            } else if for_set && is(opt, "get") {
                o.get = true;
            } else if for_set && is(opt, "keepttl") && !o.persist && o.expiry.is_none() {
                o.keepttl = true;
            } else if !for_set && is(opt, "persist") && !o.keepttl && o.expiry.is_none() {
                o.persist = true;
            } else if let Some(kind) = expiry_kind(opt)
                && !other_expiry(&o, kind)
                && let Some(value) = args.next()
            {
                o.expiry = Some((kind, value));
            } else {
                return Err(SYNTAX);
            }
        }
        Ok(o)
    }

    /// The expiry, its number parsed (`ERR value is not an integer or out of range`).
    fn expiry(&self) -> Result<Option<Expiry>, Frame> {
        let Some((kind, value)) = self.expiry else {
            return Ok(None);
        };
        let n = int(value)?;
        Ok(Some(match kind {
            ExpiryKind::Ex => Expiry::Ex(n),
            ExpiryKind::Px => Expiry::Px(n),
            ExpiryKind::ExAt => Expiry::ExAt(n),
            ExpiryKind::PxAt => Expiry::PxAt(n),
        }))
    }
}

fn expiry_kind(opt: &[u8]) -> Option<ExpiryKind> {
    if is(opt, "ex") {
        Some(ExpiryKind::Ex)
    } else if is(opt, "px") {
        Some(ExpiryKind::Px)
    } else if is(opt, "exat") {
        Some(ExpiryKind::ExAt)
    } else if is(opt, "pxat") {
        Some(ExpiryKind::PxAt)
    } else {
        None
    }
}

/// `SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT n|KEEPTTL]`, parsed.
struct Set<'a> {
    key: &'a Bytes,
    value: &'a Bytes,
    options: StringOptions<'a>,
    deadline: Option<i64>,
}

impl<'a> Set<'a> {
    fn parse(cx: &Cx<'_>, args: &mut Args<'a>) -> Result<Set<'a>, Frame> {
        let key = args.next_bytes()?;
        let value = args.next_bytes()?;
        let options = StringOptions::parse(args, true, cx.engine().version().is_valkey())?;
        let deadline = match options.expiry()? {
            Some(e) => Some(e.deadline(cx.now, "set")?),
            None => None,
        };
        Ok(Set {
            key,
            value,
            options,
            deadline,
        })
    }

    fn apply(self, cx: &mut Cx<'_>) -> CmdResult {
        let now = cx.now;
        // One hash of the key, for its lookup and its write.
        let h = cx.hash(self.key);
        if !self.options.get && self.options.ifeq.is_none() {
            return Ok(self.put(cx, h));
        }
        let old = match cx.lookup_hashed(self.key, h) {
            None => None,
            Some(e) => {
                let keep = e.deadline();
                let needs_old = self.options.get || self.options.ifeq.is_some();
                match (&e.value, needs_old) {
                    // The old value is only a `GET`'s reply or an `IFEQ`'s comparison: no clone
                    // without one.
                    (Value::Str(s), needs) => Some((needs.then(|| s.clone()), keep)),
                    (_, true) => return Err(super::WRONGTYPE),
                    (_, false) => Some((None, keep)),
                }
            }
        };
        let found = old.is_some();
        let get_reply = || match &old {
            Some((Some(s), _)) => Frame::Bulk(s.clone()),
            _ => Frame::Null,
        };
        let unequal = self.options.ifeq.is_some_and(|want| match &old {
            Some((Some(s), _)) => s.as_ref() != want,
            _ => true,
        });
        if (self.options.nx && found) || (self.options.xx && !found) || unequal {
            return Ok(if self.options.get {
                get_reply()
            } else {
                Frame::Null
            });
        }
        let deadline = if self.options.keepttl {
            old.as_ref().and_then(|(_, d)| *d)
        } else {
            self.deadline
        };
        let reply = if self.options.get {
            get_reply()
        } else {
            Frame::OK
        };
        let db = cx.keyspace();
        db.insert_h(self.key, h, Value::Str(self.value.clone()), deadline, now);
        db.touch(self.key);
        cx.notify(super::class::STRING, "set", self.key);
        if self.deadline.is_some() && !self.options.keepttl {
            cx.notify(super::class::GENERIC, "expire", self.key);
        }
        Ok(reply)
    }
}

impl Set<'_> {
    /// [`Set::apply`] without `GET` or `IFEQ`, whose old value nothing reads: the lookup and the
    /// write by one probe where the keyspace allows it ([`Db::upsert_h`]).
    ///
    /// [`Db::upsert_h`]: crate::engine::db::Db::upsert_h
    fn put(self, cx: &mut Cx<'_>, h: u64) -> Frame {
        let (options, value, now) = (&self.options, self.value, cx.now);
        let wrote = cx.keyspace().upsert_h(self.key, h, now, |old| {
            let found = old.is_some();
            if (options.nx && found) || (options.xx && !found) {
                return None;
            }
            let deadline = match options.keepttl {
                true => old.and_then(|e| e.deadline()),
                false => self.deadline,
            };
            Some((Value::Str(value.clone()), deadline))
        });
        if !wrote {
            return Frame::Null;
        }
        cx.keyspace().touch(self.key);
        cx.notify(super::class::STRING, "set", self.key);
        if self.deadline.is_some() && !self.options.keepttl {
            cx.notify(super::class::GENERIC, "expire", self.key);
        }
        Frame::OK
    }
}

fn set_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    Set::parse(cx, args)?.apply(cx)
}

fn setnx_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, value) = (args.next_bytes()?, args.next_bytes()?);
    if cx.lookup(key).is_some() {
        return Ok(Frame::Integer(0));
    }
    set(cx, key, value.clone(), None);
    Ok(Frame::Integer(1))
}

/// `SETEX key seconds value` and `PSETEX key milliseconds value`.
fn setex_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let millis = is(args.name(), "psetex");
    let name = if millis { "psetex" } else { "setex" };
    let key = args.next_bytes()?;
    let n = args.next_int()?;
    let value = args.next_bytes()?;
    let expiry = if millis { Expiry::Px(n) } else { Expiry::Ex(n) };
    let deadline = expiry.deadline(cx.now, name)?;
    set(cx, key, value.clone(), Some(deadline));
    Ok(Frame::OK)
}

fn get_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(get(cx, args.next_bytes()?)?.map_or(Frame::Null, Frame::Bulk))
}

fn getset_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, value) = (args.next_bytes()?, args.next_bytes()?);
    let old = get(cx, key)?;
    set(cx, key, value.clone(), None);
    Ok(old.map_or(Frame::Null, Frame::Bulk))
}

fn getdel_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    match get(cx, key)? {
        Some(v) => {
            super::keys::del(cx, key);
            Ok(Frame::Bulk(v))
        }
        None => Ok(Frame::Null),
    }
}

fn getex_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let options = StringOptions::parse(args, false, false)?;
    let now = cx.now;
    let Some(value) = get(cx, key)? else {
        return Ok(Frame::Null);
    };
    let expiry = options.expiry()?;
    let deadline = match expiry {
        Some(e) => Some(e.deadline(now, "getex")?),
        None => None,
    };
    let db = cx.keyspace();
    let event = match (expiry, deadline) {
        (Some(e), Some(d)) if e.is_absolute() && d <= now => {
            db.remove(key, now);
            db.touch(key);
            Some("del")
        }
        (_, Some(d)) => {
            db.set_deadline(key, Some(d), now);
            db.touch(key);
            Some("expire")
        }
        _ if options.persist && db.peek(key, now).is_some_and(|e| e.deadline().is_some()) => {
            db.set_deadline(key, None, now);
            db.touch(key);
            Some("persist")
        }
        _ => None,
    };
    if let Some(event) = event {
        cx.notify(super::class::GENERIC, event, key);
    }
    Ok(Frame::Bulk(value))
}

fn mget_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    // Keys of another type read as nil, not WRONGTYPE.
    let values = args
        .map(|k| match cx.lookup(k).map(|e| &e.value) {
            Some(Value::Str(s)) => Frame::Bulk(s.clone()),
            _ => Frame::Null,
        })
        .collect();
    Ok(Frame::Array(values))
}

/// `MSET key value…` and `MSETNX key value…` (which sets nothing if any key exists).
fn mset_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let nx = is(args.name(), "msetnx");
    let pairs = args.rest();
    if !pairs.len().is_multiple_of(2) {
        return Err(super::wrong_arity(if nx { "msetnx" } else { "mset" }));
    }
    if nx && pairs.iter().step_by(2).any(|k| cx.lookup(k).is_some()) {
        return Ok(Frame::Integer(0));
    }
    for pair in pairs.chunks_exact(2) {
        if let [key, value] = pair {
            set(cx, key, value.clone(), None);
        }
    }
    Ok(if nx { Frame::Integer(1) } else { Frame::OK })
}

/// `MSETEX numkeys key value… [NX|XX] [EX|PX|EXAT|PXAT time|KEEPTTL]` (Valkey 9.1): sets every
/// key, or none when `NX` finds one of them or `XX` misses one (`1` or `0`). Its checks, in
/// Valkey 9.1.2's order: the count (`1..=2^31-1`, digits only), the pairs it names, the options
/// (a word may repeat; a time is past the pairs), the time as `SET` checks it; then the keys.
/// A deadline already past is set as it is (`set`, `expire`), and the key expires when next
/// looked at, as on Valkey.
fn msetex_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let count = args.next_bytes()?;
    let count = crate::resp::number::parse_i64(count)
        .filter(|n| (1..=i64::from(i32::MAX)).contains(n))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or(Frame::error("ERR invalid numkeys value or out of range"))?;
    let rest = args.rest();
    let Some(pairs) = count.checked_mul(2).and_then(|n| rest.get(..n)) else {
        return Err(SYNTAX);
    };
    let (mut nx, mut xx, mut keepttl) = (false, false, false);
    let mut expiry: Option<(ExpiryKind, &[u8])> = None;
    let mut words = rest[pairs.len()..].iter();
    while let Some(word) = words.next() {
        if is(word, "nx") && !xx {
            nx = true;
        } else if is(word, "xx") && !nx {
            xx = true;
        } else if is(word, "keepttl") && expiry.is_none() {
            keepttl = true;
        } else if let Some(kind) = expiry_kind(word)
            && !keepttl
            && expiry.is_none_or(|(k, _)| k == kind)
            && let Some(value) = words.next()
        {
            expiry = Some((kind, value));
        } else {
            return Err(SYNTAX);
        }
    }
    let options = StringOptions {
        expiry,
        ..StringOptions::default()
    };
    let deadline = match options.expiry()? {
        Some(e) => Some(e.deadline(cx.now, "msetex")?),
        None => None,
    };
    let keys = || pairs.iter().step_by(2);
    if nx && keys().any(|k| cx.lookup(k).is_some()) {
        return Ok(Frame::Integer(0));
    }
    if xx && !keys().all(|k| cx.lookup(k).is_some()) {
        return Ok(Frame::Integer(0));
    }
    for pair in pairs.chunks_exact(2) {
        let [key, value] = pair else { continue };
        let deadline = match keepttl {
            true => cx.lookup(key).and_then(|e| e.deadline()),
            false => deadline,
        };
        let (now, h) = (cx.now, cx.hash(key));
        let db = cx.keyspace();
        db.insert_h(key, h, Value::Str(value.clone()), deadline, now);
        db.touch(key);
        cx.notify(super::class::STRING, "set", key);
        if deadline.is_some() && !keepttl {
            cx.notify(super::class::GENERIC, "expire", key);
        }
    }
    Ok(Frame::Integer(1))
}

fn incr_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(incr_by(cx, args.next_bytes()?, 1)?))
}

fn decr_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    Ok(Frame::Integer(incr_by(cx, args.next_bytes()?, -1)?))
}

fn incrby_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, delta) = (args.next_bytes()?, args.next_int()?);
    Ok(Frame::Integer(incr_by(cx, key, delta)?))
}

fn decrby_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, n) = (args.next_bytes()?, args.next_int()?);
    if n == i64::MIN {
        return Err(Frame::error("ERR decrement would overflow"));
    }
    Ok(Frame::Integer(incr_by(cx, key, -n)?))
}

fn incrbyfloat_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let now = cx.now;
    let old = match cx.lookup(key) {
        None => None,
        Some(e) => Some(LongDouble::parse(as_str(&e.value)?).ok_or(NOT_FLOAT)?),
    };
    let incr = args.next_float()?;
    let Ok(new) = old.unwrap_or(LongDouble::ZERO).add(incr) else {
        return Err(Frame::error("ERR increment would produce NaN or Infinity"));
    };
    let text = Bytes::from(new.to_human());
    let db = cx.keyspace();
    match (old, db.write(key, now)) {
        (Some(_), Some(entry)) => entry.value = Value::Str(text.clone()),
        _ => db.insert(key, Value::Str(text.clone()), None, now),
    }
    db.touch(key);
    // Redis makes the result with `createStringObject`, which never tries the integer encoding.
    let here = cx.db;
    super::server::set_marks(cx, here, key, super::server::marks::NOT_INT);
    cx.notify(super::class::STRING, "incrbyfloat", key);
    Ok(Frame::Bulk(text))
}

fn append_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, tail) = (args.next_bytes()?, args.next_bytes()?);
    let now = cx.now;
    let old = get(cx, key)?;
    if let Some(old) = &old {
        check_length(old.len() as i64 + tail.len() as i64)?;
    }
    let db = cx.keyspace();
    let existed = old.is_some();
    let len = match (old, db.write(key, now)) {
        (Some(old), Some(entry)) => {
            let mut joined = Vec::with_capacity(old.len() + tail.len());
            joined.extend_from_slice(&old);
            joined.extend_from_slice(tail);
            let len = joined.len();
            entry.value = Value::Str(Bytes::from(joined));
            len
        }
        _ => {
            db.insert(key, Value::Str(tail.clone()), None, now);
            tail.len()
        }
    };
    db.touch(key);
    // Appending edits the string in place; a new key is the argument, encoded as `SET`'s is.
    if existed {
        super::server::note_raw(cx, key);
    }
    cx.notify(super::class::STRING, "append", key);
    Ok(Frame::Integer(len as i64))
}

fn strlen_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let value = get(cx, args.next_bytes()?)?;
    Ok(Frame::Integer(value.map_or(0, |v| v.len() as i64)))
}

/// `GETRANGE key start end`: a substring, both ends inclusive, negative counting from the end,
/// clamped as Redis's `getrangeCommand` clamps them (indexes are parsed before the lookup).
fn getrange_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let (start, end) = (args.next_int()?, args.next_int()?);
    let Some(s) = get(cx, key)? else {
        return Ok(Frame::Bulk(Bytes::new()));
    };
    if start < 0 && end < 0 && start > end {
        return Ok(Frame::Bulk(Bytes::new()));
    }
    let len = s.len() as i64;
    let start = if start < 0 { start + len } else { start }.max(0);
    let end = if end < 0 { end + len } else { end }.max(0).min(len - 1);
    Ok(if start > end || len == 0 {
        Frame::Bulk(Bytes::new())
    } else {
        Frame::Bulk(s.slice(start as usize..=end as usize))
    })
}

/// Redis's `checkStringLength`: a command that grows a string to `len` bytes fails first if
/// that is past [`MAX_STRING`].
fn check_length(len: i64) -> Result<(), Frame> {
    if len > MAX_STRING as i64 {
        return Err(Frame::error(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

/// `SETRANGE key offset value`: overwrites from `offset`, zero-padding a short string; the new
/// length. Keeps the TTL; an empty value changes nothing (and creates nothing).
fn setrange_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let offset = args.next_int()?;
    if offset < 0 {
        return Err(Frame::error("ERR offset is out of range"));
    }
    let value = args.next_bytes()?;
    let old = get(cx, key)?;
    if value.is_empty() {
        return Ok(Frame::Integer(old.map_or(0, |s| s.len() as i64)));
    }
    check_length(offset.saturating_add(value.len() as i64))?;
    let offset = offset as usize;
    let mut new = old.as_deref().unwrap_or_default().to_vec();
    if new.len() < offset + value.len() {
        new.resize(offset + value.len(), 0);
    }
    new[offset..offset + value.len()].copy_from_slice(value);
    let len = new.len();
    let now = cx.now;
    let db = cx.keyspace();
    match (old, db.write(key, now)) {
        (Some(_), Some(entry)) => entry.value = Value::Str(Bytes::from(new)),
        _ => db.insert(key, Value::Str(Bytes::from(new)), None, now),
    }
    db.touch(key);
    super::server::note_raw(cx, key);
    cx.notify(super::class::STRING, "setrange", key);
    Ok(Frame::Integer(len as i64))
}

/// The most cells of the table `LCS` builds (a `u32` each): past it the fake replies Redis's
/// error for a failed allocation instead of trying, so two large strings cannot exhaust memory.
const LCS_MAX_CELLS: u64 = 64 * 1024 * 1024;

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`: the longest common subsequence
/// of two strings (missing keys are empty), its length, or its matching ranges, walked and
/// emitted as Redis's `lcsCommand` does (from the end of both strings).
fn lcs_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (ka, kb) = (args.next_bytes()?, args.next_bytes()?);
    let string = |cx: &mut Cx<'_>, key: &[u8]| match cx.lookup(key) {
        None => Ok(Bytes::new()),
        Some(e) => match &e.value {
            Value::Str(s) => Ok(s.clone()),
            _ => Err(Frame::error(
                "ERR The specified keys must contain string values",
            )),
        },
    };
    let (a, b) = match (string(cx, ka), string(cx, kb)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    let (mut getlen, mut getidx, mut withmatchlen, mut minmatchlen) = (false, false, false, 0i64);
    while let Some(opt) = args.next() {
        if is(opt, "idx") {
            getidx = true;
        } else if is(opt, "len") {
            getlen = true;
        } else if is(opt, "withmatchlen") {
            withmatchlen = true;
        } else if is(opt, "minmatchlen") && args.remaining() > 0 {
            minmatchlen = args.next_int()?.max(0);
        } else {
            return Err(SYNTAX);
        }
    }
    if getidx && getlen {
        return Err(Frame::error(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    let (alen, blen) = (a.len(), b.len());
    if (alen as u64 + 1) * (blen as u64 + 1) > LCS_MAX_CELLS {
        return Err(Frame::error(
            "ERR Insufficient memory, failed allocating transient memory for LCS",
        ));
    }
    let width = blen + 1;
    let mut table = vec![0u32; (alen + 1) * width];
    for i in 1..=alen {
        for j in 1..=blen {
            table[i * width + j] = if a[i - 1] == b[j - 1] {
                table[(i - 1) * width + j - 1] + 1
            } else {
                table[(i - 1) * width + j].max(table[i * width + j - 1])
            };
        }
    }
    let total = table[alen * width + blen];
    if getlen {
        return Ok(Frame::Integer(i64::from(total)));
    }
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut matches = Vec::new();
    // The current range, `None` until a match starts one.
    let mut range: Option<(usize, usize, usize, usize)> = None;
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            match &mut range {
                None => range = Some((i - 1, i - 1, j - 1, j - 1)),
                Some((a_start, _, b_start, _)) => {
                    if *a_start == i && *b_start == j {
                        *a_start -= 1;
                        *b_start -= 1;
                    } else {
                        emit = true;
                    }
                }
            }
            if range.is_some_and(|(a_start, _, b_start, _)| a_start == 0 || b_start == 0) {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table[(i - 1) * width + j] > table[i * width + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if range.is_some() {
                emit = true;
            }
        }
        if emit && let Some((a_start, a_end, b_start, b_end)) = range.take() {
            let len = a_end - a_start + 1;
            if minmatchlen == 0 || len as i64 >= minmatchlen {
                let pair = |x: usize, y: usize| {
                    Frame::Array(vec![Frame::Integer(x as i64), Frame::Integer(y as i64)])
                };
                let mut m = vec![pair(a_start, a_end), pair(b_start, b_end)];
                if withmatchlen {
                    m.push(Frame::Integer(len as i64));
                }
                matches.push(Frame::Array(m));
            }
        }
    }
    if getidx {
        return Ok(Frame::Map(vec![
            (
                Frame::Bulk(Bytes::from_static(b"matches")),
                Frame::Array(matches),
            ),
            (
                Frame::Bulk(Bytes::from_static(b"len")),
                Frame::Integer(i64::from(total)),
            ),
        ]));
    }
    Ok(Frame::Bulk(Bytes::from(result)))
}
