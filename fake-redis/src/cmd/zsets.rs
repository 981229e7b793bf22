//! Sorted-set commands: adding with Redis's flags (NX XX GT LT CH INCR), scores, ranks, ranges by
//! rank, score and (in `ZRANGE`) lexicographic order, counting, removing ranges, popping.
//!
//! Scores are `f64`, as in Redis, ordered by score then member bytes; `-0` is stored as `0`.
//! They reply as doubles (a bulk string in RESP2, formatted like Redis 7.0's `%.17g`, so `1.1`
//! reads `1.1000000000000001`). Ranges take `(` for an exclusive bound and `-inf`/`+inf`. Errors
//! are Redis's words: `ERR min or max is not a float`, `ERR value is not a valid float`,
//! `ERR resulting score is not a number (NaN)`. As everywhere, an emptied sorted set is deleted.

use super::{
    Args, CmdResult, Cx, NOT_FLOAT, NOT_INTEGER, SYNTAX, Spec, WRITE, WRONGTYPE, double_reply, int,
    is,
};
use crate::engine::Version;
use crate::engine::db::{Value, ZSet};
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::BTreeMap;

pub(crate) static ZADD: Spec = Spec::new("zadd", -4, WRITE, zadd_command);
pub(crate) static ZINCRBY: Spec = Spec::new("zincrby", 4, WRITE, zincrby_command);
pub(crate) static ZREM: Spec = Spec::new("zrem", -3, WRITE, zrem_command);
pub(crate) static ZSCORE: Spec = Spec::new("zscore", 3, 0, zscore_command);
pub(crate) static ZMSCORE: Spec = Spec::new("zmscore", -3, 0, zmscore_command);
pub(crate) static ZCARD: Spec = Spec::new("zcard", 2, 0, zcard_command);
pub(crate) static ZCOUNT: Spec = Spec::new("zcount", 4, 0, zcount_command);
// Redis 7.2 added `WITHSCORE`: arity 3 on 7.0, at least 3 from 7.2 on.
pub(crate) static ZRANK: Spec = Spec::new("zrank", 3, 0, zrank_command).with_later_arity(-3);
pub(crate) static ZREVRANK: Spec = Spec::new("zrevrank", 3, 0, zrank_command).with_later_arity(-3);
pub(crate) static ZRANGE: Spec = Spec::new("zrange", -4, 0, zrange_command);
pub(crate) static ZRANGEBYSCORE: Spec = Spec::new("zrangebyscore", -4, 0, zrange_command);
pub(crate) static ZREVRANGE: Spec = Spec::new("zrevrange", -4, 0, zrange_command);
pub(crate) static ZREVRANGEBYSCORE: Spec = Spec::new("zrevrangebyscore", -4, 0, zrange_command);
pub(crate) static ZREMRANGEBYSCORE: Spec =
    Spec::new("zremrangebyscore", 4, WRITE, zremrange_command);
pub(crate) static ZREMRANGEBYRANK: Spec = Spec::new("zremrangebyrank", 4, WRITE, zremrange_command);
pub(crate) static ZPOPMIN: Spec = Spec::new("zpopmin", -2, WRITE, zpop_command);
pub(crate) static ZPOPMAX: Spec = Spec::new("zpopmax", -2, WRITE, zpop_command);
pub(crate) static ZSCAN: Spec = Spec::new("zscan", -3, 0, zscan_command);
pub(crate) static ZUNIONSTORE: Spec =
    Spec::new("zunionstore", -4, WRITE, algebra_command).with_reads(super::ReadRule::Except(1));
pub(crate) static ZINTERSTORE: Spec =
    Spec::new("zinterstore", -4, WRITE, algebra_command).with_reads(super::ReadRule::Except(1));
pub(crate) static ZDIFFSTORE: Spec =
    Spec::new("zdiffstore", -4, WRITE, algebra_command).with_reads(super::ReadRule::Except(1));
pub(crate) static ZUNION: Spec = Spec::new("zunion", -3, 0, algebra_command);
pub(crate) static ZINTER: Spec = Spec::new("zinter", -3, 0, algebra_command);
pub(crate) static ZDIFF: Spec = Spec::new("zdiff", -3, 0, algebra_command);
pub(crate) static ZINTERCARD: Spec = Spec::new("zintercard", -3, 0, algebra_command);
pub(crate) static ZRANGEBYLEX: Spec = Spec::new("zrangebylex", -4, 0, zrange_command);
pub(crate) static ZREVRANGEBYLEX: Spec = Spec::new("zrevrangebylex", -4, 0, zrange_command);
pub(crate) static ZRANGESTORE: Spec =
    Spec::new("zrangestore", -5, WRITE, zrange_command).with_reads(super::ReadRule::Except(1));
pub(crate) static ZLEXCOUNT: Spec = Spec::new("zlexcount", 4, 0, zlexcount_command);
pub(crate) static ZREMRANGEBYLEX: Spec = Spec::new("zremrangebylex", 4, WRITE, zremrange_command);
pub(crate) static ZRANDMEMBER: Spec = Spec::new("zrandmember", -2, 0, zrandmember_command);
pub(crate) static ZMPOP: Spec = Spec::new("zmpop", -4, WRITE, zmpop_command);

const NOT_A_RANGE: Frame = Frame::error("ERR min or max is not a float");

/// A score bound as Redis's `zslParseRange` reads it: C's `strtod` over the whole argument, NaN
/// refused. So leading white space is skipped, hexadecimal (`0x1p3`) is read, and the empty
/// argument is 0 (`strtod` converts nothing and stops at its end).
pub(super) fn strtod(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() {
        return Some(0.0);
    }
    let start = arg
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    let text = std::str::from_utf8(&arg[start..]).ok()?;
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let value = match unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        Some(hex) => hex_float(hex)?,
        // Rust reads what `strtod` reads in decimal, `inf`, `infinity` and `nan` included; a
        // second sign is refused by both.
        None if unsigned.starts_with(['+', '-']) => return None,
        None => unsigned.parse::<f64>().ok()?,
    };
    let value = if negative { -value } else { value };
    (!value.is_nan()).then_some(value)
}

/// The digits of a C hexadecimal float after its `0x`: hex digits with an optional point, at
/// least one digit, then an optional binary exponent `p[+-]digits`.
fn hex_float(text: &str) -> Option<f64> {
    let (digits, exponent) = match text.find(['p', 'P']) {
        Some(i) => (&text[..i], Some(&text[i + 1..])),
        None => (text, None),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut value = 0f64;
    for c in whole.chars().chain(fraction.chars()) {
        value = value * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut exp = -4 * i32::try_from(fraction.len()).ok()?;
    if let Some(e) = exponent {
        let unsigned = e.strip_prefix(['+', '-']).unwrap_or(e);
        if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        exp = exp.saturating_add(e.parse::<i32>().unwrap_or(if e.starts_with('-') {
            i32::MIN / 2
        } else {
            i32::MAX / 2
        }));
    }
    Some(value * 2f64.powi(exp))
}
const NOT_A_LEX_RANGE: Frame = Frame::error("ERR min or max not valid string range item");
const NAN: Frame = Frame::error("ERR resulting score is not a number (NaN)");

super::aggregate!(ZSet, ZSet, wrap: |z| Value::ZSet(Box::new(z)), is_empty: ZSet::is_empty);

/// The sorted set at `key` (None when missing), WRONGTYPE for another type.
fn read<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<Option<&'a ZSet>, Frame> {
    super::read_aggregate(cx, key)
}

/// The sorted set at `key` for writing, created empty when missing and `create` is set; finish with
/// [`done`].
fn write<'a>(cx: &'a mut Cx<'_>, key: &[u8], create: bool) -> Result<Option<&'a mut ZSet>, Frame> {
    super::write_aggregate(cx, key, create)
}

/// After a write: deletes the key if its sorted set is empty and signals the change to `WATCH`.
fn done(cx: &mut Cx<'_>, key: &[u8]) {
    super::finish_aggregate::<ZSet>(cx, key);
}

/// [`done`] for a write that may have changed nothing: `WATCH` hears of it only if it did.
fn done_if(cx: &mut Cx<'_>, key: &[u8], changed: bool) {
    super::finish_aggregate_if::<ZSet>(cx, key, changed);
}

/// A score argument (`ERR value is not a valid float`). Redis's `string2d` also refuses a
/// literal that overflows to infinity or underflows to zero (`strtod`'s `ERANGE`), though it
/// takes `inf` itself; range bounds (`ScoreRange`) have no such check, as in Redis.
fn score(arg: &[u8]) -> Result<f64, Frame> {
    super::strict_double(arg).ok_or(NOT_FLOAT)
}

/// One bound of a score range: `(` makes it exclusive.
#[derive(Clone, Copy)]
struct Bound {
    value: f64,
    exclusive: bool,
}

/// A score range, Redis's `zslParseRange`.
#[derive(Clone, Copy)]
struct ScoreRange {
    min: Bound,
    max: Bound,
}

impl ScoreRange {
    fn parse(min: &[u8], max: &[u8]) -> Result<ScoreRange, Frame> {
        fn bound(arg: &[u8]) -> Option<Bound> {
            match arg.strip_prefix(b"(") {
                Some(rest) => Some(Bound {
                    value: strtod(rest)?,
                    exclusive: true,
                }),
                None => Some(Bound {
                    value: strtod(arg)?,
                    exclusive: false,
                }),
            }
        }
        match (bound(min), bound(max)) {
            (Some(min), Some(max)) => Ok(ScoreRange { min, max }),
            _ => Err(NOT_A_RANGE),
        }
    }

    fn above_min(&self, s: f64) -> bool {
        if self.min.exclusive {
            s > self.min.value
        } else {
            s >= self.min.value
        }
    }

    fn below_max(&self, s: f64) -> bool {
        if self.max.exclusive {
            s < self.max.value
        } else {
            s <= self.max.value
        }
    }

    /// The ranks `start..end` of the members in the range, found in O(log n) (empty when
    /// `end <= start`).
    fn ranks(&self, z: &ZSet) -> (usize, usize) {
        (
            z.count_while(|s, _| !self.above_min(s)),
            z.count_while(|s, _| self.below_max(s)),
        )
    }
}

/// A lexicographic range, Redis's `zslParseLexRange`: `-`, `+`, `[x` or `(x`.
struct LexRange {
    min: LexBound,
    max: LexBound,
}

enum LexBound {
    Min,
    Max,
    Inclusive(Bytes),
    Exclusive(Bytes),
}

impl LexRange {
    fn parse(min: &Bytes, max: &Bytes) -> Result<LexRange, Frame> {
        fn bound(arg: &Bytes) -> Option<LexBound> {
            match arg.first() {
                Some(b'-') if arg.len() == 1 => Some(LexBound::Min),
                Some(b'+') if arg.len() == 1 => Some(LexBound::Max),
                Some(b'[') => Some(LexBound::Inclusive(arg.slice(1..))),
                Some(b'(') => Some(LexBound::Exclusive(arg.slice(1..))),
                _ => None,
            }
        }
        match (bound(min), bound(max)) {
            (Some(min), Some(max)) => Ok(LexRange { min, max }),
            _ => Err(NOT_A_LEX_RANGE),
        }
    }

    fn gte_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(b) => m >= &b[..],
            LexBound::Exclusive(b) => m > &b[..],
        }
    }

    fn lte_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Inclusive(b) => m <= &b[..],
            LexBound::Exclusive(b) => m < &b[..],
        }
    }

    /// The ranks `start..end` a walk over a set in lexicographic order covers: from the first
    /// member at or past the start bound to the last one within the end bound (empty when
    /// `end <= start`), found in O(log n). Exact when the members are in lexicographic order
    /// (all scores equal, the case `BYLEX` is for); otherwise Redis's own walk gives no
    /// meaningful answer either.
    fn ranks(&self, z: &ZSet) -> (usize, usize) {
        if self.is_empty() {
            return (0, 0);
        }
        (
            z.count_while(|_, m| !self.gte_min(m)),
            z.count_while(|_, m| self.lte_max(m)),
        )
    }

    /// Redis's check before any walk: min past max, or equal with either side exclusive (`-`
    /// and `+` count as exclusive).
    fn is_empty(&self) -> bool {
        fn key(b: &LexBound) -> (u8, &[u8], bool) {
            match b {
                LexBound::Min => (0, &[], true),
                LexBound::Inclusive(v) => (1, v, false),
                LexBound::Exclusive(v) => (1, v, true),
                LexBound::Max => (2, &[], true),
            }
        }
        let (min, max) = (key(&self.min), key(&self.max));
        match (min.0, min.1).cmp(&(max.0, max.1)) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => min.2 || max.2,
            std::cmp::Ordering::Less => false,
        }
    }
}

/// An inclusive rank range clamped as Redis clamps it; None when empty.
fn clamp_ranks(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { start + len } else { start }.max(0);
    let end = if end < 0 { end + len } else { end };
    if start > end || start >= len {
        None
    } else {
        Some((start as usize, end.min(len - 1) as usize))
    }
}

/// `ZADD` flags.
#[derive(Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What one element's add did (Redis's `zsetAdd` out flags).
enum Added {
    New(f64),
    Updated(f64),
    Unchanged(f64),
    Skipped,
}

/// Redis's `zsetAdd`: adds or updates one member under the flags.
fn add(z: &mut ZSet, flags: &AddFlags, score: f64, member: &Bytes) -> Result<Added, Frame> {
    match z.score(member) {
        Some(current) => {
            if flags.nx {
                return Ok(Added::Skipped);
            }
            let score = if flags.incr {
                let s = score + current;
                if s.is_nan() {
                    return Err(NAN);
                }
                s
            } else {
                score
            };
            if (flags.lt && score >= current) || (flags.gt && score <= current) {
                return Ok(Added::Skipped);
            }
            if score == current {
                Ok(Added::Unchanged(score))
            } else {
                z.insert(member.clone(), score);
                Ok(Added::Updated(score))
            }
        }
        None if flags.xx => Ok(Added::Skipped),
        None => {
            z.insert(member.clone(), score);
            Ok(Added::New(score))
        }
    }
}

fn zadd_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let mut flags = AddFlags::default();
    loop {
        if args.eat("nx") {
            flags.nx = true;
        } else if args.eat("xx") {
            flags.xx = true;
        } else if args.eat("ch") {
            flags.ch = true;
        } else if args.eat("incr") {
            flags.incr = true;
        } else if args.eat("gt") {
            flags.gt = true;
        } else if args.eat("lt") {
            flags.lt = true;
        } else {
            break;
        }
    }
    let pairs = args.rest();
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(SYNTAX);
    }
    if flags.nx && flags.xx {
        return Err(Frame::error(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Err(Frame::error(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && pairs.len() > 2 {
        return Err(Frame::error(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let scores = pairs
        .iter()
        .step_by(2)
        .map(|s| score(s))
        .collect::<Result<Vec<f64>, Frame>>()?;
    let members = pairs.iter().skip(1).step_by(2);
    zadd(cx, key, &flags, scores.into_iter().zip(members))
}

/// Adds `(score, member)` pairs under `flags`: the reply of `ZADD` (or of `ZINCRBY`, which is
/// `ZADD INCR`).
fn zadd<'m>(
    cx: &mut Cx<'_>,
    key: &[u8],
    flags: &AddFlags,
    pairs: impl Iterator<Item = (f64, &'m Bytes)>,
) -> CmdResult {
    let Some(z) = write(cx, key, !flags.xx)? else {
        return Ok(if flags.incr {
            Frame::Null
        } else {
            Frame::Integer(0)
        });
    };
    let (mut added, mut updated) = (0, 0);
    let mut last = None;
    let mut failed = None;
    for (s, member) in pairs {
        match add(z, flags, s, member) {
            Ok(Added::New(s)) => {
                added += 1;
                last = Some(s);
            }
            Ok(Added::Updated(s)) => {
                updated += 1;
                last = Some(s);
            }
            Ok(Added::Unchanged(s)) => last = Some(s),
            Ok(Added::Skipped) => last = None,
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    if added + updated > 0 {
        let event = if flags.incr { "zincr" } else { "zadd" };
        cx.notify(super::class::ZSET, event, key);
    }
    done_if(cx, key, added + updated > 0);
    if let Some(e) = failed {
        return Err(e);
    }
    let version = cx.engine().version();
    Ok(if flags.incr {
        last.map_or(Frame::Null, |s| double_reply(version, s))
    } else if flags.ch {
        Frame::Integer(added + updated)
    } else {
        Frame::Integer(added)
    })
}

fn zincrby_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let incr = score(args.next_bytes()?)?;
    let member = args.next_bytes()?;
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    zadd(cx, key, &flags, std::iter::once((incr, member)))
}

fn zrem_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    // A sorted set past the listpack's limits stays a skiplist when it shrinks.
    super::server::note_shrink(cx, key);
    let Some(z) = write(cx, key, false)? else {
        return Ok(Frame::Integer(0));
    };
    let removed = args.filter(|m| z.remove(m)).count();
    if removed > 0 {
        cx.notify(super::class::ZSET, "zrem", key);
        done(cx, key);
    }
    Ok(Frame::Integer(removed as i64))
}

fn zscore_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, member) = (args.next_bytes()?, args.next_bytes()?);
    let version = cx.engine().version();
    let z = read(cx, key)?;
    Ok(z.and_then(|z| z.score(member))
        .map_or(Frame::Null, |s| double_reply(version, s)))
}

fn zmscore_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let version = cx.engine().version();
    let z = read(cx, args.next_bytes()?)?;
    Ok(Frame::Array(
        args.map(|m| {
            z.and_then(|z| z.score(m))
                .map_or(Frame::Null, |s| double_reply(version, s))
        })
        .collect(),
    ))
}

fn zcard_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let z = read(cx, args.next_bytes()?)?;
    Ok(Frame::Integer(z.map_or(0, |z| z.len() as i64)))
}

fn zcount_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let range = ScoreRange::parse(args.next_bytes()?, args.next_bytes()?)?;
    let z = read(cx, key)?;
    Ok(Frame::Integer(z.map_or(0, |z| {
        let (start, end) = range.ranks(z);
        end.saturating_sub(start)
    }) as i64))
}

/// `ZRANK key member [WITHSCORE]` and `ZREVRANK key member [WITHSCORE]`: the rank, or from Redis
/// 7.2 on with `WITHSCORE` `[rank, score]` (a null array for a missing member or key). Redis 7.0
/// takes no option: its arity is exact.
fn zrank_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let reverse = is(args.name(), "zrevrank");
    let version = cx.engine().version();
    let (key, member) = (args.next_bytes()?, args.next_bytes()?);
    let withscore = match args.next() {
        None => false,
        Some(_) if version == Version::V7_0 => {
            return Err(super::wrong_arity(if reverse {
                "zrevrank"
            } else {
                "zrank"
            }));
        }
        Some(_) if args.peek().is_some() => {
            return Err(super::wrong_arity(if reverse {
                "zrevrank"
            } else {
                "zrank"
            }));
        }
        Some(word) if is(word, "withscore") => true,
        Some(_) => return Err(SYNTAX),
    };
    let missing = if withscore {
        Frame::NullArray
    } else {
        Frame::Null
    };
    let Some(z) = read(cx, key)? else {
        return Ok(missing);
    };
    let (Some(i), Some(score)) = (z.rank(member), z.score(member)) else {
        return Ok(missing);
    };
    let rank = Frame::Integer(if reverse { z.len() - 1 - i } else { i } as i64);
    Ok(match withscore {
        false => rank,
        true => Frame::Array(vec![rank, double_reply(version, score)]),
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeBy {
    Auto,
    Rank,
    Score,
    Lex,
}

/// A range, its bounds parsed as its kind needs.
enum Range {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// `ZRANGE`, `ZRANGEBYSCORE`, `ZREVRANGE`, `ZREVRANGEBYSCORE` parsed, as Redis's
/// `zrangeGenericCommand` parses them: the options, then the range, and only then is the key
/// looked up.
struct ZRange<'a> {
    /// `ZRANGESTORE`'s destination.
    store: Option<&'a Bytes>,
    key: &'a Bytes,
    range: Range,
    reverse: bool,
    withscores: bool,
    offset: i64,
    limit: i64,
}

impl<'a> ZRange<'a> {
    fn parse(args: &mut Args<'a>) -> Result<ZRange<'a>, Frame> {
        let name = args.name().to_ascii_lowercase();
        let (mut by, mut reverse) = match &name[..] {
            b"zrangebyscore" => (RangeBy::Score, Some(false)),
            b"zrevrange" => (RangeBy::Rank, Some(true)),
            b"zrevrangebyscore" => (RangeBy::Score, Some(true)),
            b"zrangebylex" => (RangeBy::Lex, Some(false)),
            b"zrevrangebylex" => (RangeBy::Lex, Some(true)),
            _ => (RangeBy::Auto, None),
        };
        let store = if name == b"zrangestore" {
            Some(args.next_bytes()?)
        } else {
            None
        };
        let key = args.next_bytes()?;
        let (start, stop) = (args.next_bytes()?, args.next_bytes()?);
        let mut withscores = false;
        let (mut offset, mut limit) = (0i64, -1i64);
        while let Some(opt) = args.next() {
            if store.is_none() && is(opt, "withscores") {
                withscores = true;
            } else if is(opt, "limit") && args.remaining() >= 2 {
                let (o, l) = (args.next_bytes()?, args.next_bytes()?);
                match (int(o), int(l)) {
                    (Ok(o), Ok(l)) => (offset, limit) = (o, l),
                    _ => return Err(NOT_INTEGER),
                }
            } else if reverse.is_none() && is(opt, "rev") {
                reverse = Some(true);
            } else if by == RangeBy::Auto && is(opt, "bylex") {
                by = RangeBy::Lex;
            } else if by == RangeBy::Auto && is(opt, "byscore") {
                by = RangeBy::Score;
            } else {
                return Err(SYNTAX);
            }
        }
        let reverse = reverse.unwrap_or(false);
        if by == RangeBy::Auto {
            by = RangeBy::Rank;
        }
        if limit != -1 && by == RangeBy::Rank {
            return Err(Frame::error(
                "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or \
                 BYLEX",
            ));
        }
        if withscores && by == RangeBy::Lex {
            return Err(Frame::error(
                "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
            ));
        }
        // A reversed score or lex range names its bounds high first.
        let (lo, hi) = if reverse && by != RangeBy::Rank {
            (stop, start)
        } else {
            (start, stop)
        };
        let range = match by {
            RangeBy::Score => Range::Score(ScoreRange::parse(lo, hi)?),
            RangeBy::Lex => Range::Lex(LexRange::parse(lo, hi)?),
            _ => Range::Rank(int(lo)?, int(hi)?),
        };
        Ok(ZRange {
            store,
            key,
            range,
            reverse,
            withscores,
            offset,
            limit,
        })
    }

    fn apply(self, cx: &mut Cx<'_>) -> CmdResult {
        let resp3 = cx.client().protocol >= 3;
        let version = cx.engine().version();
        let Some(z) = read(cx, self.key)? else {
            return Ok(match self.store {
                Some(destination) => store_result(cx, destination, ZSet::default(), "zrangestore"),
                None => Frame::Array(Vec::new()),
            });
        };
        let (offset, limit) = (self.offset, self.limit);
        let picked: Vec<(f64, &Bytes)> = match self.range {
            Range::Rank(start, end) => match clamp_ranks(start, end, z.len()) {
                None => Vec::new(),
                Some((a, b)) if self.reverse => {
                    let len = z.len();
                    z.range(len - 1 - b, len - a).rev().collect()
                }
                Some((a, b)) => z.range(a, b + 1).collect(),
            },
            Range::Score(range) => {
                let (start, end) = range.ranks(z);
                limited(z, start, end, self.reverse, offset, limit)
            }
            Range::Lex(range) if z.is_indexed() => {
                let (start, end) = range.ranks(z);
                limited(z, start, end, self.reverse, offset, limit)
            }
            Range::Lex(range) => {
                let mut ordered: Vec<(f64, &Bytes)> = z.iter().collect();
                if self.reverse {
                    ordered.reverse();
                }
                lex_scan(&ordered, &range, self.reverse, offset, limit)
            }
        };
        if let Some(destination) = self.store {
            let mut result = ZSet::default();
            for (s, m) in picked {
                result.insert(m.clone(), s);
            }
            return Ok(store_result(cx, destination, result, "zrangestore"));
        }
        Ok(scored_reply(
            picked.into_iter(),
            self.withscores,
            resp3,
            version,
        ))
    }
}

fn zrange_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    ZRange::parse(args)?.apply(cx)
}

/// A `BYLEX` range over a small set as Redis walks its listpack (`zzlFirstInLexRange` and the
/// loop after it): the members are in score order, which is lexicographic only when all scores
/// are equal, so Redis finds the first member at or past the start bound, skips `offset`
/// members, and stops at the first one past the end bound. `ordered` is already reversed for
/// `REV`. A large set's range is found by rank instead ([`LexRange::ranks`]), as Redis's skiplist
/// finds it by descending its levels.
fn lex_scan<'a>(
    ordered: &[(f64, &'a Bytes)],
    range: &LexRange,
    reverse: bool,
    offset: i64,
    limit: i64,
) -> Vec<(f64, &'a Bytes)> {
    if range.is_empty() || ordered.is_empty() {
        return Vec::new();
    }
    let (first, last) = if reverse {
        (ordered[ordered.len() - 1].1, ordered[0].1)
    } else {
        (ordered[0].1, ordered[ordered.len() - 1].1)
    };
    if !range.gte_min(last) || !range.lte_max(first) {
        return Vec::new();
    }
    // From the walk's start, the first member on the near side of the far bound…
    type Test<'t> = &'t dyn Fn(&[u8]) -> bool;
    let (near, far): (Test<'_>, Test<'_>) = if reverse {
        (&|m| range.lte_max(m), &|m| range.gte_min(m))
    } else {
        (&|m| range.gte_min(m), &|m| range.lte_max(m))
    };
    let Some(start) = ordered.iter().position(|(_, m)| near(m)) else {
        return Vec::new();
    };
    // …which must also be within the other bound.
    if !far(ordered[start].1) || offset < 0 {
        return Vec::new();
    }
    let take = if limit < 0 {
        usize::MAX
    } else {
        limit as usize
    };
    ordered[start..]
        .iter()
        .skip(offset as usize)
        .take(take)
        .take_while(|(_, m)| far(m))
        .copied()
        .collect()
}

/// The members of ranks `start..end` under `LIMIT offset count` as Redis applies it (a negative
/// offset skips everything, a negative count takes the rest), from the low end or, `reverse`,
/// the high one: O(log n) to find the first, then the members returned.
fn limited(
    z: &ZSet,
    start: usize,
    end: usize,
    reverse: bool,
    offset: i64,
    limit: i64,
) -> Vec<(f64, &Bytes)> {
    if offset < 0 || end <= start {
        return Vec::new();
    }
    let offset = usize::try_from(offset).unwrap_or(usize::MAX);
    let take = usize::try_from(limit).unwrap_or(usize::MAX);
    if reverse {
        let to = end.saturating_sub(offset).max(start);
        let from = to.saturating_sub(take).max(start);
        z.range(from, to).rev().collect()
    } else {
        let from = start.saturating_add(offset).min(end);
        let to = from.saturating_add(take).min(end);
        z.range(from, to).collect()
    }
}

/// Members, with their scores if asked: flat in RESP2, `[member, score]` pairs in RESP3.
fn scored_reply<'a>(
    items: impl Iterator<Item = (f64, &'a Bytes)>,
    withscores: bool,
    resp3: bool,
    version: Version,
) -> Frame {
    Frame::Array(if !withscores {
        items.map(|(_, m)| Frame::Bulk(m.clone())).collect()
    } else if resp3 {
        items
            .map(|(s, m)| Frame::Array(vec![Frame::Bulk(m.clone()), double_reply(version, s)]))
            .collect()
    } else {
        items
            .flat_map(|(s, m)| [Frame::Bulk(m.clone()), double_reply(version, s)])
            .collect()
    })
}

/// `ZREMRANGEBYRANK key start stop`, `ZREMRANGEBYSCORE key min max` and `ZREMRANGEBYLEX key
/// min max`: how many were removed.
fn zremrange_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.name().to_ascii_lowercase();
    let key = args.next_bytes()?;
    let (start, stop) = (args.next_bytes()?, args.next_bytes()?);
    let range = match &name[..] {
        b"zremrangebyrank" => Range::Rank(int(start)?, int(stop)?),
        b"zremrangebylex" => Range::Lex(LexRange::parse(start, stop)?),
        _ => Range::Score(ScoreRange::parse(start, stop)?),
    };
    let Some(z) = write(cx, key, false)? else {
        return Ok(Frame::Integer(0));
    };
    let (start, end) = match &range {
        Range::Rank(a, b) => clamp_ranks(*a, *b, z.len()).map_or((0, 0), |(a, b)| (a, b + 1)),
        Range::Score(range) => range.ranks(z),
        Range::Lex(range) if z.is_indexed() => range.ranks(z),
        Range::Lex(_) => (0, 0),
    };
    let doomed: Vec<Bytes> = match range {
        Range::Lex(range) if !z.is_indexed() => {
            let ordered: Vec<(f64, &Bytes)> = z.iter().collect();
            lex_scan(&ordered, &range, false, 0, -1)
                .into_iter()
                .map(|(_, m)| m.clone())
                .collect()
        }
        _ => z.range(start, end).map(|(_, m)| m.clone()).collect(),
    };
    for m in &doomed {
        z.remove(m);
    }
    let removed = doomed.len();
    if removed > 0 {
        cx.notify(super::class::ZSET, &String::from_utf8_lossy(&name), key);
        done(cx, key);
    }
    Ok(Frame::Integer(removed as i64))
}

/// `ZPOPMIN`/`ZPOPMAX key [count]`: members and scores, lowest (highest) first. A count of
/// 0 still meets WRONGTYPE first, as in Redis 7.0.
fn zpop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    if args.remaining() > 2 {
        return Err(SYNTAX);
    }
    let max = is(args.name(), "zpopmax");
    let key = args.next_bytes()?;
    let counted = args.peek().is_some();
    let count = match args.next() {
        None => 1,
        Some(arg) => match int(arg) {
            Ok(n) if n >= 0 => n as usize,
            _ => return Err(Frame::error("ERR value is out of range, must be positive")),
        },
    };
    let popped: Vec<(f64, Bytes)> = match write(cx, key, false)? {
        None => return Ok(Frame::Array(Vec::new())),
        Some(_) if count == 0 => return Ok(Frame::Array(Vec::new())),
        Some(z) => pop_ends(z, max, count),
    };
    cx.notify(super::class::ZSET, pop_event(max), key);
    done(cx, key);
    // RESP3 nests `[member, score]` pairs when a count was given, as Redis 7.0 does.
    let nested = counted && cx.client().protocol >= 3;
    let version = cx.engine().version();
    Ok(Frame::Array(if nested {
        popped
            .into_iter()
            .map(|(s, m)| Frame::Array(vec![Frame::Bulk(m), double_reply(version, s)]))
            .collect()
    } else {
        popped
            .into_iter()
            .flat_map(|(s, m)| [Frame::Bulk(m), double_reply(version, s)])
            .collect()
    }))
}

/// The keyspace event of a pop from the low end (the high end when `max`).
fn pop_event(max: bool) -> &'static str {
    if max { "zpopmax" } else { "zpopmin" }
}

/// Removes up to `count` members from the low end (the high end when `max`): them, in the order
/// taken.
fn pop_ends(z: &mut ZSet, max: bool, count: usize) -> Vec<(f64, Bytes)> {
    let len = z.len();
    let taken: Vec<(f64, Bytes)> = if max {
        z.range(len.saturating_sub(count), len)
            .rev()
            .map(|(s, m)| (s, m.clone()))
            .collect()
    } else {
        z.range(0, count).map(|(s, m)| (s, m.clone())).collect()
    };
    for (_, m) in &taken {
        z.remove(m);
    }
    taken
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: members and scores. A sorted set Redis
/// would keep as a listpack comes whole with cursor 0, lowest score first, as Redis sends it; a
/// large one in pages of about `COUNT` members from a resuming cursor ([`ZSet::scan`]), so a call
/// costs in proportion to `COUNT`.
fn zscan_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let whole = args
        .peek()
        .is_some_and(|key| super::server::compact_encoding(cx, key));
    let version = cx.engine().version();
    super::keys::scan_collection(
        cx,
        args,
        super::keys::ScanOf::Members,
        read,
        |z, cursor, count| {
            let (next, page) = if whole {
                (0, z.iter().collect())
            } else {
                z.scan(cursor, count)
            };
            let items = page
                .into_iter()
                .map(|(s, m)| {
                    // Bulk strings even in RESP3: Redis's scan reply formats the score as text.
                    let text = match version {
                        Version::V7_0 => crate::resp::format_double(s),
                        _ => crate::resp::format_double_shortest(s),
                    };
                    let score = Frame::Bulk(Bytes::from(text));
                    (m.clone(), vec![Frame::Bulk(m.clone()), score])
                })
                .collect();
            (next, items)
        },
    )
}

/// Writes a `…STORE` result at `destination` (see [`store_or_delete`](super::store_or_delete)),
/// announced as keyspace event `event`: the reply, the result's size.
fn store_result(cx: &mut Cx<'_>, destination: &[u8], result: ZSet, event: &str) -> Frame {
    let len = result.len();
    let value = (!result.is_empty()).then(|| Value::ZSet(Box::new(result)));
    super::store_or_delete(cx, destination, value, (super::class::ZSET, event));
    Frame::Integer(len as i64)
}

/// How the sorted-set algebra combines the scores of a member found in several inputs.
#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis's `zunionInterAggregate`: `inf + -inf` is 0, not NaN.
    fn combine(self, target: &mut f64, value: f64) {
        match self {
            Aggregate::Sum => {
                *target += value;
                if target.is_nan() {
                    *target = 0.0;
                }
            }
            Aggregate::Min => *target = target.min(value),
            Aggregate::Max => *target = target.max(value),
        }
    }
}

/// One input of the algebra, as Redis reads it: a sorted set's members with their scores, a
/// set's members at score 1, nothing for a missing key; WRONGTYPE for another type.
fn algebra_input(cx: &mut Cx<'_>, key: &[u8]) -> Result<Vec<(f64, Bytes)>, Frame> {
    match cx.lookup(key) {
        None => Ok(Vec::new()),
        Some(e) => match &e.value {
            Value::ZSet(z) => Ok(z.iter().map(|(s, m)| (s, m.clone())).collect()),
            Value::Set(members) => Ok(members.iter().map(|m| (1.0, m.clone())).collect()),
            _ => Err(WRONGTYPE),
        },
    }
}

/// A weight of `WEIGHTS`: C's `strtod` over the whole argument (so hexadecimal is read), no
/// leading space, no NaN, as Redis's `getDoubleFromObject`.
fn weight(arg: &[u8]) -> Result<f64, Frame> {
    const NOT_A_WEIGHT: Frame = Frame::error("ERR weight value is not a float");
    if arg.is_empty() || arg[0].is_ascii_whitespace() {
        return Err(NOT_A_WEIGHT);
    }
    strtod(arg).ok_or(NOT_A_WEIGHT)
}

/// `ZUNION`/`ZINTER`/`ZDIFF numkeys key… [WEIGHTS w…] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`,
/// their `…STORE destination` forms and `ZINTERCARD numkeys key… [LIMIT n]`, as Redis's
/// `zunionInterDiffGenericCommand`: the inputs are type-checked before the options are read, and
/// sets count as sorted sets of score 1.
fn algebra_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let name = args.name().to_ascii_lowercase();
    let name = std::str::from_utf8(&name).unwrap_or_default().to_owned();
    let (union, diff, card) = (
        name.starts_with("zunion"),
        name.starts_with("zdiff"),
        name == "zintercard",
    );
    let destination = if name.ends_with("store") {
        Some(args.next_bytes()?)
    } else {
        None
    };
    let numkeys = args.next_int()?;
    if numkeys < 1 {
        return Err(Frame::error_owned(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    if numkeys as u64 > args.remaining() as u64 {
        return Err(SYNTAX);
    }
    let keys = args.take(numkeys as usize);
    let mut inputs = Vec::with_capacity(keys.len());
    for key in keys {
        inputs.push((algebra_input(cx, key)?, 1.0f64));
    }
    let (mut aggregate, mut withscores, mut limit) = (Aggregate::Sum, false, 0usize);
    while let Some(opt) = args.next() {
        let left = args.remaining();
        if !diff && !card && left >= inputs.len() && is(opt, "weights") {
            for (_, w) in inputs.iter_mut() {
                *w = weight(args.next_bytes()?)?;
            }
        } else if !diff && !card && left >= 1 && is(opt, "aggregate") {
            let kind = args.next_bytes()?;
            aggregate = super::keyword(
                kind,
                &[
                    ("sum", Aggregate::Sum),
                    ("min", Aggregate::Min),
                    ("max", Aggregate::Max),
                ],
            )?;
        } else if destination.is_none() && !card && is(opt, "withscores") {
            withscores = true;
        } else if card && left >= 1 && is(opt, "limit") {
            limit = match int(args.next_bytes()?) {
                Ok(n) if n >= 0 => n as usize,
                _ => return Err(Frame::error("ERR LIMIT can't be negative")),
            };
        } else {
            return Err(SYNTAX);
        }
    }
    let mut result = ZSet::default();
    if diff {
        let mut inputs = inputs.into_iter();
        let first = inputs
            .next()
            .map(|(members, _)| members)
            .unwrap_or_default();
        let others: Vec<Vec<(f64, Bytes)>> = inputs.map(|(members, _)| members).collect();
        for (s, m) in first {
            if !others.iter().any(|o| o.iter().any(|(_, n)| *n == m)) {
                result.insert(m, s);
            }
        }
    } else {
        // Redis orders the inputs smallest first (a stable sort), which decides the order in
        // which scores are summed.
        inputs.sort_by_key(|(members, _)| members.len());
        let weighted = |s: f64, w: f64| {
            let v = s * w;
            if v.is_nan() { 0.0 } else { v }
        };
        if union {
            for (members, w) in &inputs {
                for (s, m) in members {
                    let v = weighted(*s, *w);
                    match result.score(m) {
                        None => {
                            result.insert(m.clone(), v);
                        }
                        Some(mut acc) => {
                            aggregate.combine(&mut acc, v);
                            result.insert(m.clone(), acc);
                        }
                    }
                }
            }
        } else {
            let mut count = 0usize;
            let (first, others) = inputs.split_first().expect("at least one input");
            'members: for (s, m) in &first.0 {
                let mut acc = weighted(*s, first.1);
                for (members, w) in others {
                    let Some((s, _)) = members.iter().find(|(_, n)| n == m) else {
                        continue 'members;
                    };
                    aggregate.combine(&mut acc, *s * *w);
                }
                if card {
                    count += 1;
                    if limit > 0 && count >= limit {
                        break;
                    }
                } else {
                    result.insert(m.clone(), acc);
                }
            }
            if card {
                return Ok(Frame::Integer(count as i64));
            }
        }
    }
    if let Some(destination) = destination {
        return Ok(store_result(cx, destination, result, &name));
    }
    let resp3 = cx.client().protocol >= 3;
    let version = cx.engine().version();
    Ok(scored_reply(result.iter(), withscores, resp3, version))
}

/// `ZLEXCOUNT key min max`: how many members a `BYLEX` range walks over.
fn zlexcount_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let range = LexRange::parse(args.next_bytes()?, args.next_bytes()?)?;
    let Some(z) = read(cx, key)? else {
        return Ok(Frame::Integer(0));
    };
    if z.is_indexed() {
        let (start, end) = range.ranks(z);
        return Ok(Frame::Integer(end.saturating_sub(start) as i64));
    }
    let ordered: Vec<(f64, &Bytes)> = z.iter().collect();
    Ok(Frame::Integer(
        lex_scan(&ordered, &range, false, 0, -1).len() as i64,
    ))
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`: one random member, or with a positive count up to
/// `count` distinct members (the whole set, in order, when it has no more), with a negative one
/// exactly `-count` members that may repeat. Draws come from the engine's seeded generator.
fn zrandmember_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let Some(count) = args.next() else {
        let Some(z) = read(cx, key)? else {
            return Ok(Frame::Null);
        };
        let len = z.len() as u64;
        let i = (cx.random() % len) as usize;
        let Some(z) = read(cx, key)? else {
            return Ok(Frame::Null);
        };
        return Ok(z.at(i).map_or(Frame::Null, |(_, m)| Frame::Bulk(m.clone())));
    };
    let (count, withscores) = random_count(count, args, "withscores")?;
    let resp3 = cx.client().protocol >= 3;
    let version = cx.engine().version();
    let len = match read(cx, key)? {
        None => return Ok(Frame::Array(Vec::new())),
        Some(z) => z.len(),
    };
    // The whole set comes highest score first, as Redis 7.0 walks it.
    let picks = random_picks(cx, len, count, true);
    let Some(z) = read(cx, key)? else {
        return Ok(Frame::Array(Vec::new()));
    };
    if picks.len() == len && count > 0 {
        return Ok(scored_reply(z.iter().rev(), withscores, resp3, version));
    }
    Ok(scored_reply(
        picks.into_iter().filter_map(|i| z.at(i)),
        withscores,
        resp3,
        version,
    ))
}

/// The count of `ZRANDMEMBER` or `HRANDFIELD` and whether `word` (`WITHSCORES`, `WITHVALUES`)
/// follows it, checked as Redis checks them before the key is looked up.
pub(super) fn random_count(
    count: &[u8],
    args: &mut Args<'_>,
    word: &str,
) -> Result<(i64, bool), Frame> {
    let count = match int(count)? {
        i64::MIN => {
            return Err(Frame::error(
                "ERR value is out of range, value must between -9223372036854775807 and \
                 9223372036854775807",
            ));
        }
        n => n,
    };
    let with = match args.next() {
        None => false,
        Some(opt) if is(opt, word) && args.remaining() == 0 => {
            if !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&count) {
                return Err(Frame::error("ERR value is out of range"));
            }
            true
        }
        Some(_) => return Err(SYNTAX),
    };
    Ok((count, with))
}

/// The positions a `count` of `ZRANDMEMBER` or `HRANDFIELD` picks among `len` (at least one)
/// entries, as Redis picks them: a negative count draws `-count` with repeats (as does a count
/// of 1), a count of the size or more takes everything in order (`reversed` for a sorted set), a
/// smaller one draws that many distinct entries.
pub(super) fn random_picks(cx: &mut Cx<'_>, len: usize, count: i64, reversed: bool) -> Vec<usize> {
    if count == 0 || len == 0 {
        return Vec::new();
    }
    if count < 0 || count == 1 {
        // Bounded by the client's own count, as in Redis: its reply is that long.
        return (0..count.unsigned_abs())
            .map(|_| (cx.random() % len as u64) as usize)
            .collect();
    }
    let count = count as u64;
    if count >= len as u64 {
        return if reversed {
            (0..len).rev().collect()
        } else {
            (0..len).collect()
        };
    }
    distinct_positions(cx, len, count as usize)
}

/// `count` distinct positions of `0..len` (`count < len`), drawn from the engine's seeded
/// generator: a Fisher-Yates shuffle of the first `count` positions, with only the swapped
/// positions kept (`moved[p]` is what position `p` holds once swapped), so the same draws as
/// shuffling the whole range, in O(count).
pub(super) fn distinct_positions(cx: &mut Cx<'_>, len: usize, count: usize) -> Vec<usize> {
    sparse_shuffle(len, count, || cx.random())
}

/// [`distinct_positions`] with the draws from `next_random`.
fn sparse_shuffle(len: usize, count: usize, mut next_random: impl FnMut() -> u64) -> Vec<usize> {
    let mut moved: BTreeMap<usize, usize> = BTreeMap::new();
    let mut positions = Vec::with_capacity(count.min(len));
    for i in 0..count.min(len) {
        let j = i + (next_random() % (len - i) as u64) as usize;
        let at_j = moved.get(&j).copied().unwrap_or(j);
        let at_i = moved.get(&i).copied().unwrap_or(i);
        moved.insert(j, at_i);
        positions.push(at_j);
    }
    positions
}

/// `ZMPOP numkeys key… MIN|MAX [COUNT count]`: from the first non-empty sorted set, up to
/// `count` members and scores as `[key, [[member, score]…]]`; nil when all are empty.
fn zmpop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (keys, max, count) = super::lists::mpop_arguments(args, "min", "max")?;
    let version = cx.engine().version();
    for key in keys {
        let Some(z) = write(cx, key, false)? else {
            continue;
        };
        let popped = pop_ends(z, max, count);
        cx.notify(super::class::ZSET, pop_event(max), key);
        done(cx, key);
        return Ok(Frame::Array(vec![
            Frame::Bulk(key.clone()),
            Frame::Array(
                popped
                    .into_iter()
                    .map(|(s, m)| Frame::Array(vec![Frame::Bulk(m), double_reply(version, s)]))
                    .collect(),
            ),
        ]));
    }
    Ok(Frame::NullArray)
}

/// For the blocking pops (`cmd/blocking.rs`): up to `count` members with their scores popped
/// from the low end (the high end when `max`) of the sorted set at `key`; None when it is
/// missing, WRONGTYPE for another type.
pub(crate) fn pop_members(
    cx: &mut Cx<'_>,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Vec<(f64, Bytes)>>, Frame> {
    let Some(z) = write(cx, key, false)? else {
        return Ok(None);
    };
    let popped = pop_ends(z, max, count);
    cx.notify(super::class::ZSET, pop_event(max), key);
    done(cx, key);
    Ok(Some(popped))
}

#[cfg(test)]
mod tests {
    use super::sparse_shuffle;
    use proptest::prelude::*;

    proptest! {
        /// The positions drawn are distinct, within the collection, as many as asked (at most
        /// all), and the same as a full Fisher-Yates shuffle's first positions with the same
        /// draws: the sparse form only saves the work.
        #[test]
        fn drawn_positions_are_distinct_in_range_and_a_shuffles_prefix(
            len in 1usize..300,
            count in 0usize..320,
            seed in any::<u64>(),
        ) {
            let mut x = seed;
            let mut draw = move || {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                x >> 11
            };
            let mut replay = draw;
            let picks = sparse_shuffle(len, count, &mut draw);
            prop_assert_eq!(picks.len(), count.min(len));
            let distinct: std::collections::BTreeSet<usize> = picks.iter().copied().collect();
            prop_assert_eq!(distinct.len(), picks.len());
            prop_assert!(picks.iter().all(|&p| p < len));
            let mut dense: Vec<usize> = (0..len).collect();
            for i in 0..count.min(len) {
                let j = i + (replay() % (len - i) as u64) as usize;
                dense.swap(i, j);
            }
            prop_assert_eq!(&picks[..], &dense[..count.min(len)]);
        }
    }
}
