//! List commands: pushes and pops at both ends, indexing, ranges, trimming, searching, moving.
//!
//! The lock never stores a list; these exist so that tests can place and read lists on the fake
//! with Redis 7.0's replies and error texts. Rules shared by every command here, as in Redis: a
//! write keeps the key's TTL, a push to a missing key creates it without one, a list left empty
//! is deleted, and each command parses its arguments in the order Redis does (some before the key
//! lookup, some after), because that order decides which error a bad call sees.

use super::{Args, CmdResult, Cx, Spec, WRITE, WRONGTYPE, class, int, is};
use crate::engine::db::Value;
use crate::engine::list::List;
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static LPUSH: Spec = Spec::new("lpush", -3, WRITE, push_command);
pub(crate) static RPUSH: Spec = Spec::new("rpush", -3, WRITE, push_command);
pub(crate) static LPUSHX: Spec = Spec::new("lpushx", -3, WRITE, push_command);
pub(crate) static RPUSHX: Spec = Spec::new("rpushx", -3, WRITE, push_command);
pub(crate) static LPOP: Spec = Spec::new("lpop", -2, WRITE, pop_command);
pub(crate) static RPOP: Spec = Spec::new("rpop", -2, WRITE, pop_command);
pub(crate) static RPOPLPUSH: Spec = Spec::new("rpoplpush", 3, WRITE, rpoplpush_command);
pub(crate) static LMPOP: Spec = Spec::new("lmpop", -4, WRITE, lmpop_command);
pub(crate) static LLEN: Spec = Spec::new("llen", 2, 0, llen_command);
pub(crate) static LRANGE: Spec = Spec::new("lrange", 4, 0, lrange_command);
pub(crate) static LINDEX: Spec = Spec::new("lindex", 3, 0, lindex_command);
pub(crate) static LSET: Spec = Spec::new("lset", 4, WRITE, lset_command);
pub(crate) static LREM: Spec = Spec::new("lrem", 4, WRITE, lrem_command);
pub(crate) static LTRIM: Spec = Spec::new("ltrim", 4, WRITE, ltrim_command);
pub(crate) static LINSERT: Spec = Spec::new("linsert", 5, WRITE, linsert_command);
pub(crate) static LPOS: Spec = Spec::new("lpos", -3, 0, lpos_command);
pub(crate) static LMOVE: Spec = Spec::new("lmove", 5, WRITE, lmove_command);

super::aggregate!(List, List, wrap: Value::List, is_empty: List::is_empty);

/// The list at `key` (None when missing), WRONGTYPE for another type.
fn read<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<Option<&'a List>, Frame> {
    super::read_aggregate(cx, key)
}

/// The list at `key` for writing, created empty when missing and `create` is set; finish with
/// [`done`].
fn write<'a>(cx: &'a mut Cx<'_>, key: &[u8], create: bool) -> Result<Option<&'a mut List>, Frame> {
    super::write_aggregate(cx, key, create)
}

/// After a write: deletes the key if its list is empty and signals the change to `WATCH`.
fn done(cx: &mut Cx<'_>, key: &[u8]) {
    super::finish_aggregate::<List>(cx, key);
}

/// Which end of a list: Redis's `LEFT`/`RIGHT` words.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Left,
    Right,
}

impl End {
    fn parse(arg: &[u8]) -> Result<End, Frame> {
        if is(arg, "left") {
            Ok(End::Left)
        } else if is(arg, "right") {
            Ok(End::Right)
        } else {
            Err(super::SYNTAX)
        }
    }
}

impl End {
    /// The keyspace event of a push at this end.
    fn push_event(self) -> &'static str {
        match self {
            End::Left => "lpush",
            End::Right => "rpush",
        }
    }

    /// The keyspace event of a pop at this end.
    fn pop_event(self) -> &'static str {
        match self {
            End::Left => "lpop",
            End::Right => "rpop",
        }
    }
}

fn push(list: &mut List, end: End, element: &[u8]) {
    match end {
        End::Left => list.push_front(element),
        End::Right => list.push_back(element),
    }
}

fn pop(list: &mut List, end: End) -> Option<Bytes> {
    match end {
        End::Left => list.pop_front(),
        End::Right => list.pop_back(),
    }
}

/// A list index as Redis resolves it: negative counts from the end; None when out of range.
fn resolve(index: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if index < 0 { index + len } else { index };
    (0..len).contains(&i).then_some(i as usize)
}

/// `LPUSH`/`RPUSH`/`LPUSHX`/`RPUSHX key element…`: the list's new length. `LPUSH a b` leaves
/// `b a`, as in Redis; the `X` forms do nothing to a missing key and reply 0.
fn push_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.name();
    let end = if name[0].eq_ignore_ascii_case(&b'l') {
        End::Left
    } else {
        End::Right
    };
    let create = name.len() == 5;
    let key = args.next_bytes()?;
    let Some(list) = write(cx, key, create)? else {
        return Ok(Frame::Integer(0));
    };
    for element in args {
        push(list, end, element);
    }
    let len = list.len();
    cx.notify(class::LIST, end.push_event(), key);
    done(cx, key);
    Ok(Frame::Integer(len as i64))
}

/// `LPOP`/`RPOP key [count]`: one element (or nil), or with a count an array of up to `count`
/// (nil for a missing key, an empty array for a count of 0).
fn pop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let end = if is(args.name(), "lpop") {
        End::Left
    } else {
        End::Right
    };
    if args.remaining() > 2 {
        return Err(super::wrong_arity(if end == End::Left {
            "lpop"
        } else {
            "rpop"
        }));
    }
    let key = args.next_bytes()?;
    let count = match args.next() {
        None => None,
        Some(arg) => match int(arg) {
            Ok(n) if n >= 0 => Some(n),
            _ => return Err(Frame::error("ERR value is out of range, must be positive")),
        },
    };
    let reply = match write(cx, key, false)? {
        None => {
            return Ok(if count.is_some() {
                Frame::NullArray
            } else {
                Frame::Null
            });
        }
        Some(list) => match count {
            None => Frame::Bulk(pop(list, end).expect("a stored list is never empty")),
            Some(0) => return Ok(Frame::Array(Vec::new())),
            Some(n) => {
                let n = (n as usize).min(list.len());
                Frame::Array(
                    (0..n)
                        .filter_map(|_| pop(list, end))
                        .map(Frame::Bulk)
                        .collect(),
                )
            }
        },
    };
    cx.notify(class::LIST, end.pop_event(), key);
    done(cx, key);
    Ok(reply)
}

fn llen_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let list = read(cx, args.next_bytes()?)?;
    Ok(Frame::Integer(list.map_or(0, |l| l.len() as i64)))
}

/// `LRANGE key start stop`: inclusive, negative indexes count from the end, out-of-range ones are
/// clamped (Redis's `addListRangeReply`).
fn lrange_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let (start, stop) = (args.next_int()?, args.next_int()?);
    let Some(list) = read(cx, key)? else {
        return Ok(Frame::Array(Vec::new()));
    };
    Ok(match clamp_range(start, stop, list.len()) {
        None => Frame::Array(Vec::new()),
        Some((start, stop)) => Frame::Array(
            list.range(start..stop + 1)
                .map(|e| Frame::Bulk(Bytes::copy_from_slice(e)))
                .collect(),
        ),
    })
}

/// An inclusive `start..=stop` range as `LRANGE` and `LTRIM` clamp it; None when empty.
fn clamp_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (start + len).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        stop + len
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        None
    } else {
        Some((start as usize, stop as usize))
    }
}

/// `LINDEX key index`: the key is looked up before the index is parsed, as in Redis.
fn lindex_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, index) = (args.next_bytes()?, args.next_bytes()?);
    let Some(list) = read(cx, key)? else {
        return Ok(Frame::Null);
    };
    let index = int(index)?;
    Ok(resolve(index, list.len())
        .and_then(|i| list.get(i))
        .map_or(Frame::Null, |e| Frame::Bulk(Bytes::copy_from_slice(e))))
}

/// `LSET key index element`: `ERR no such key` for a missing key, `ERR index out of range`.
fn lset_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, index, element) = (args.next_bytes()?, args.next_bytes()?, args.next_bytes()?);
    let Some(list) = write(cx, key, false)? else {
        return Err(Frame::error("ERR no such key"));
    };
    let index = int(index)?;
    let Some(i) = resolve(index, list.len()) else {
        return Err(Frame::error("ERR index out of range"));
    };
    list.set(i, element);
    cx.notify(class::LIST, "lset", key);
    done(cx, key);
    Ok(Frame::OK)
}

/// `LREM key count element`: removes up to `count` matches from the head (all for 0, from the
/// tail for a negative count); the number removed.
fn lrem_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, count, element) = (args.next_bytes()?, args.next_int()?, args.next_bytes()?);
    let Some(list) = write(cx, key, false)? else {
        return Ok(Frame::Integer(0));
    };
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.unsigned_abs() as usize
    };
    let removed = list.remove_matching(element, limit, count < 0);
    if removed > 0 {
        cx.notify(class::LIST, "lrem", key);
        done(cx, key);
    }
    Ok(Frame::Integer(removed as i64))
}

/// `LTRIM key start stop`: keeps the inclusive range (clamped as `LRANGE` clamps it).
fn ltrim_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let (start, stop) = (args.next_int()?, args.next_int()?);
    let Some(list) = write(cx, key, false)? else {
        return Ok(Frame::OK);
    };
    match clamp_range(start, stop, list.len()) {
        None => list.clear(),
        Some((start, stop)) => {
            list.remove_back(list.len() - 1 - stop);
            list.remove_front(start);
        }
    }
    cx.notify(class::LIST, "ltrim", key);
    done(cx, key);
    Ok(Frame::OK)
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 when the pivot is absent, 0 for
/// a missing key.
fn linsert_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let after = if args.eat("after") {
        true
    } else if args.eat("before") {
        false
    } else {
        return Err(super::SYNTAX);
    };
    let (pivot, element) = (args.next_bytes()?, args.next_bytes()?);
    let Some(list) = write(cx, key, false)? else {
        return Ok(Frame::Integer(0));
    };
    let Some(i) = list.position(pivot) else {
        return Ok(Frame::Integer(-1));
    };
    list.insert(if after { i + 1 } else { i }, element);
    let len = list.len();
    cx.notify(class::LIST, "linsert", key);
    done(cx, key);
    Ok(Frame::Integer(len as i64))
}

/// `LPOS key element [RANK rank] [COUNT num] [MAXLEN len]`, parsed: options are read before the
/// key is looked up.
struct Lpos<'a> {
    key: &'a Bytes,
    element: &'a Bytes,
    rank: i64,
    count: Option<i64>,
    maxlen: i64,
}

impl<'a> Lpos<'a> {
    /// `v7_0`: Redis 7.0 takes any 64-bit rank; later releases refuse `i64::MIN`, which has no
    /// positive counterpart.
    fn parse(args: &mut Args<'a>, v7_0: bool) -> Result<Lpos<'a>, Frame> {
        let mut lpos = Lpos {
            key: args.next_bytes()?,
            element: args.next_bytes()?,
            rank: 1,
            count: None,
            maxlen: 0,
        };
        while let Some(opt) = args.next() {
            let more = args.remaining() > 0;
            if is(opt, "rank") && more {
                lpos.rank = args.next_int()?;
                if lpos.rank == i64::MIN && !v7_0 {
                    return Err(Frame::error(
                        "ERR value is out of range, value must between -9223372036854775807 and \
                         9223372036854775807",
                    ));
                }
                if lpos.rank == 0 {
                    return Err(Frame::error(
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                         second ... or use negative to start from the end of the list",
                    ));
                }
            } else if is(opt, "count") && more {
                lpos.count = match args.next_int() {
                    Ok(n) if n >= 0 => Some(n),
                    _ => return Err(Frame::error("ERR COUNT can't be negative")),
                };
            } else if is(opt, "maxlen") && more {
                lpos.maxlen = match args.next_int() {
                    Ok(n) if n >= 0 => n,
                    _ => return Err(Frame::error("ERR MAXLEN can't be negative")),
                };
            } else {
                return Err(super::SYNTAX);
            }
        }
        Ok(lpos)
    }

    /// A negative rank searches from the tail; `RANK` of `i64::MIN` negates to itself in Redis
    /// 7.0 (C's wrapping negation), which still searches from the tail and takes the first match,
    /// so the fake does the same.
    fn apply(self, cx: &mut Cx<'_>) -> CmdResult {
        let from_tail = self.rank < 0;
        let rank = if from_tail {
            self.rank.wrapping_neg()
        } else {
            self.rank
        };
        let Some(list) = read(cx, self.key)? else {
            return Ok(if self.count.is_some() {
                Frame::Array(Vec::new())
            } else {
                Frame::Null
            });
        };
        let len = list.len();
        let mut matches: i64 = 0;
        let mut found = Vec::new();
        let want = match self.count {
            None => 1,
            Some(0) => usize::MAX,
            Some(n) => n as usize,
        };
        let scanned = match self.maxlen {
            0 => len,
            n => len.min(usize::try_from(n).unwrap_or(usize::MAX)),
        };
        let elements: Box<dyn Iterator<Item = &[u8]>> = if from_tail {
            Box::new(list.iter().rev())
        } else {
            Box::new(list.iter())
        };
        for (step, e) in elements.take(scanned).enumerate() {
            let index = if from_tail { len - 1 - step } else { step };
            if e == self.element {
                matches += 1;
                if matches >= rank {
                    found.push(Frame::Integer(index as i64));
                    if found.len() >= want {
                        break;
                    }
                }
            }
        }
        Ok(match self.count {
            Some(_) => Frame::Array(found),
            None => found.pop().unwrap_or(Frame::Null),
        })
    }
}

fn lpos_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let v7_0 = cx.engine().version() == crate::engine::Version::V7_0;
    Lpos::parse(args, v7_0)?.apply(cx)
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`: pops from one end of `source` and pushes to
/// one end of `destination` (the same list rotates); nil when `source` is missing. Both keys are
/// type-checked before anything moves.
fn lmove_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (source, destination) = (args.next_bytes()?, args.next_bytes()?);
    let from = End::parse(args.next_bytes()?)?;
    let to = End::parse(args.next_bytes()?)?;
    lmove(cx, source, destination, from, to)
}

/// `RPOPLPUSH source destination`: `LMOVE source destination RIGHT LEFT`.
fn rpoplpush_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (source, destination) = (args.next_bytes()?, args.next_bytes()?);
    lmove(cx, source, destination, End::Right, End::Left)
}

/// Pops from `from` of `source` and pushes to `to` of `destination`, both type-checked first.
fn lmove(cx: &mut Cx<'_>, source: &[u8], destination: &[u8], from: End, to: End) -> CmdResult {
    if read(cx, source)?.is_none() {
        return Ok(Frame::Null);
    }
    read(cx, destination)?;
    let element = match write(cx, source, false) {
        Ok(Some(list)) => pop(list, from).expect("a stored list is never empty"),
        Ok(None) | Err(_) => return Err(WRONGTYPE),
    };
    match write(cx, destination, true) {
        Ok(Some(list)) => push(list, to, &element),
        Ok(None) | Err(_) => return Err(WRONGTYPE),
    }
    // Redis announces the push before the pop.
    cx.notify(class::LIST, to.push_event(), destination);
    cx.notify(class::LIST, from.pop_event(), source);
    done(cx, source);
    done(cx, destination);
    Ok(Frame::Bulk(element))
}

/// The arguments of `LMPOP` and `ZMPOP` (`numkeys key… <first>|<second> [COUNT count]`), checked
/// as Redis's `mpop` parsers check them: the keys, whether the second word was given, and the
/// count (1 by default).
pub(super) fn mpop_arguments<'a>(
    args: &mut Args<'a>,
    first: &str,
    second: &str,
) -> Result<(&'a [Bytes], bool, usize), Frame> {
    let numkeys = match int(args.next_bytes()?) {
        Ok(n) if n >= 1 => n as u64,
        _ => return Err(Frame::error("ERR numkeys should be greater than 0")),
    };
    if numkeys >= args.remaining() as u64 {
        return Err(super::SYNTAX);
    }
    let keys = args.take(numkeys as usize);
    let word = args.next_bytes()?;
    let second = if is(word, first) {
        false
    } else if is(word, second) {
        true
    } else {
        return Err(super::SYNTAX);
    };
    let mut count = None;
    while let Some(opt) = args.next() {
        if count.is_none() && is(opt, "count") && args.remaining() > 0 {
            count = match int(args.next_bytes()?) {
                Ok(n) if n >= 1 => Some(n as usize),
                _ => return Err(Frame::error("ERR count should be greater than 0")),
            };
        } else {
            return Err(super::SYNTAX);
        }
    }
    Ok((keys, second, count.unwrap_or(1)))
}

/// `LMPOP numkeys key… LEFT|RIGHT [COUNT count]`: from the first non-empty list, up to `count`
/// elements as `[key, [element…]]`; nil when all are empty.
fn lmpop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (keys, right, count) = mpop_arguments(args, "left", "right")?;
    let end = if right { End::Right } else { End::Left };
    for key in keys {
        let Some(list) = write(cx, key, false)? else {
            continue;
        };
        let n = count.min(list.len());
        let popped: Vec<Frame> = (0..n)
            .filter_map(|_| pop(list, end))
            .map(Frame::Bulk)
            .collect();
        cx.notify(class::LIST, end.pop_event(), key);
        done(cx, key);
        return Ok(Frame::Array(vec![
            Frame::Bulk(key.clone()),
            Frame::Array(popped),
        ]));
    }
    Ok(Frame::NullArray)
}

/// For the blocking pops (`cmd/blocking.rs`): up to `count` elements popped from the head (the
/// tail unless `left`) of the list at `key`; None when it is missing, WRONGTYPE for another type.
pub(crate) fn pop_elements(
    cx: &mut Cx<'_>,
    key: &[u8],
    left: bool,
    count: usize,
) -> Result<Option<Vec<Bytes>>, Frame> {
    let end = if left { End::Left } else { End::Right };
    let Some(list) = write(cx, key, false)? else {
        return Ok(None);
    };
    let n = count.min(list.len());
    let popped = (0..n).filter_map(|_| pop(list, end)).collect();
    cx.notify(class::LIST, end.pop_event(), key);
    done(cx, key);
    Ok(Some(popped))
}

/// For the blocking moves (`cmd/blocking.rs`): `LMOVE source destination` from the head (the
/// tail unless `from_left`) to the head (the tail unless `to_left`).
pub(crate) fn move_element(
    cx: &mut Cx<'_>,
    source: &[u8],
    destination: &[u8],
    from_left: bool,
    to_left: bool,
) -> CmdResult {
    let end = |left| if left { End::Left } else { End::Right };
    lmove(cx, source, destination, end(from_left), end(to_left))
}
