//! Sorted-set commands: adding with Redis's flags (NX XX GT LT CH INCR), scores, ranks, ranges by
//! rank, score and (in `ZRANGE`) lexicographic order, counting, removing ranges, popping.
//!
//! Scores are `f64`, as in Redis, ordered by score then member bytes; `-0` is stored as `0`.
//! They reply as doubles (a bulk string in RESP2, formatted like Redis 7.0's `%.17g`, so `1.1`
//! reads `1.1000000000000001`). Ranges take `(` for an exclusive bound and `-inf`/`+inf`. Errors
//! are Redis's words: `ERR min or max is not a float`, `ERR value is not a valid float`,
//! `ERR resulting score is not a number (NaN)`. As everywhere, an emptied sorted set is deleted.

use super::{NOT_FLOAT, NOT_INTEGER, SYNTAX, Spec, WRITE, float, int, is};
use crate::db::{Value, ZSet};
use crate::engine::Cx;
use crate::frame::Frame;
use bytes::Bytes;

pub(crate) static ZADD: Spec = Spec::new("zadd", -4, WRITE, zadd_command);
pub(crate) static ZINCRBY: Spec = Spec::new("zincrby", 4, WRITE, zincrby_command);
pub(crate) static ZREM: Spec = Spec::new("zrem", -3, WRITE, zrem_command);
pub(crate) static ZSCORE: Spec = Spec::new("zscore", 3, 0, zscore_command);
pub(crate) static ZMSCORE: Spec = Spec::new("zmscore", -3, 0, zmscore_command);
pub(crate) static ZCARD: Spec = Spec::new("zcard", 2, 0, zcard_command);
pub(crate) static ZCOUNT: Spec = Spec::new("zcount", 4, 0, zcount_command);
pub(crate) static ZRANK: Spec = Spec::new("zrank", 3, 0, zrank_command);
pub(crate) static ZREVRANK: Spec = Spec::new("zrevrank", 3, 0, zrank_command);
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

const NOT_A_RANGE: Frame = Frame::error("ERR min or max is not a float");
const NOT_A_LEX_RANGE: Frame = Frame::error("ERR min or max not valid string range item");
const NAN: Frame = Frame::error("ERR resulting score is not a number (NaN)");

impl super::Aggregate for ZSet {
    fn of(value: &Value) -> Option<&Self> {
        match value {
            Value::ZSet(v) => Some(v),
            _ => None,
        }
    }
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        match value {
            Value::ZSet(v) => Some(v),
            _ => None,
        }
    }
    fn wrap(self) -> Value {
        Value::ZSet(Box::new(self))
    }
    fn is_empty(&self) -> bool {
        ZSet::is_empty(self)
    }
}

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

/// A score argument (`ERR value is not a valid float`). Redis's `string2d` also refuses a
/// literal that overflows to infinity or underflows to zero (`strtod`'s `ERANGE`), though it
/// takes `inf` itself; range bounds (`ScoreRange`) have no such check, as in Redis.
fn score(arg: &[u8]) -> Result<f64, Frame> {
    let v = float(arg).ok_or(NOT_FLOAT)?;
    let text = arg.to_ascii_lowercase();
    let unsigned = text
        .strip_prefix(b"-")
        .or(text.strip_prefix(b"+"))
        .unwrap_or(&text);
    let mantissa = unsigned.split(|&b| b == b'e').next().unwrap_or_default();
    let overflow = v.is_infinite() && !unsigned.starts_with(b"inf");
    let underflow = v == 0.0 && mantissa.iter().any(|b| (b'1'..=b'9').contains(b));
    if overflow || underflow {
        return Err(NOT_FLOAT);
    }
    Ok(v)
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
                    value: float(rest)?,
                    exclusive: true,
                }),
                None => Some(Bound {
                    value: float(arg)?,
                    exclusive: false,
                }),
            }
        }
        match (bound(min), bound(max)) {
            (Some(min), Some(max)) => Ok(ScoreRange { min, max }),
            _ => Err(NOT_A_RANGE),
        }
    }

    fn contains(&self, s: f64) -> bool {
        let above = if self.min.exclusive {
            s > self.min.value
        } else {
            s >= self.min.value
        };
        let below = if self.max.exclusive {
            s < self.max.value
        } else {
            s <= self.max.value
        };
        above && below
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

fn zadd_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let mut flags = AddFlags::default();
    let mut i = 2;
    while i < argv.len() {
        let opt = &argv[i];
        if is(opt, "nx") {
            flags.nx = true;
        } else if is(opt, "xx") {
            flags.xx = true;
        } else if is(opt, "ch") {
            flags.ch = true;
        } else if is(opt, "incr") {
            flags.incr = true;
        } else if is(opt, "gt") {
            flags.gt = true;
        } else if is(opt, "lt") {
            flags.lt = true;
        } else {
            break;
        }
        i += 1;
    }
    let pairs = &argv[i..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return SYNTAX;
    }
    if flags.nx && flags.xx {
        return Frame::error("ERR XX and NX options at the same time are not compatible");
    }
    if (flags.nx && (flags.gt || flags.lt)) || (flags.gt && flags.lt) {
        return Frame::error("ERR GT, LT, and/or NX options at the same time are not compatible");
    }
    if flags.incr && pairs.len() > 2 {
        return Frame::error("ERR INCR option supports a single increment-element pair");
    }
    let mut scores = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks(2) {
        match score(&pair[0]) {
            Ok(s) => scores.push(s),
            Err(e) => return e,
        }
    }
    zadd(cx, &argv[1], &flags, &scores, pairs)
}

fn zadd(cx: &mut Cx<'_>, key: &Bytes, flags: &AddFlags, scores: &[f64], pairs: &[Bytes]) -> Frame {
    let z = match write(cx, key, !flags.xx) {
        Err(e) => return e,
        Ok(None) => {
            return if flags.incr {
                Frame::Null
            } else {
                Frame::Integer(0)
            };
        }
        Ok(Some(z)) => z,
    };
    let (mut added, mut updated) = (0, 0);
    let mut last = None;
    let mut failed = None;
    for (s, pair) in scores.iter().zip(pairs.chunks(2)) {
        match add(z, flags, *s, &pair[1]) {
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
    done(cx, key);
    if let Some(e) = failed {
        return e;
    }
    if flags.incr {
        last.map_or(Frame::Null, Frame::Double)
    } else if flags.ch {
        Frame::Integer(added + updated)
    } else {
        Frame::Integer(added)
    }
}

fn zincrby_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let incr = match score(&argv[2]) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    zadd(
        cx,
        &argv[1],
        &flags,
        &[incr],
        &[argv[2].clone(), argv[3].clone()],
    )
}

fn zrem_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let key = &argv[1];
    let removed = match write(cx, key, false) {
        Err(e) => return e,
        Ok(None) => return Frame::Integer(0),
        Ok(Some(z)) => argv[2..].iter().filter(|m| z.remove(m)).count(),
    };
    if removed > 0 {
        done(cx, key);
    }
    Frame::Integer(removed as i64)
}

fn zscore_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Err(e) => e,
        Ok(z) => z
            .and_then(|z| z.score(&argv[2]))
            .map_or(Frame::Null, Frame::Double),
    }
}

fn zmscore_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Err(e) => e,
        Ok(z) => Frame::Array(
            argv[2..]
                .iter()
                .map(|m| {
                    z.and_then(|z| z.score(m))
                        .map_or(Frame::Null, Frame::Double)
                })
                .collect(),
        ),
    }
}

fn zcard_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    match read(cx, &argv[1]) {
        Err(e) => e,
        Ok(z) => Frame::Integer(z.map_or(0, |z| z.len() as i64)),
    }
}

fn zcount_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let range = match ScoreRange::parse(&argv[2], &argv[3]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    match read(cx, &argv[1]) {
        Err(e) => e,
        Ok(z) => Frame::Integer(
            z.map_or(0, |z| z.iter().filter(|(s, _)| range.contains(*s)).count()) as i64,
        ),
    }
}

fn zrank_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let reverse = is(&argv[0], "zrevrank");
    match read(cx, &argv[1]) {
        Err(e) => e,
        Ok(None) => Frame::Null,
        Ok(Some(z)) => match z.iter().position(|(_, m)| *m == argv[2]) {
            None => Frame::Null,
            Some(i) => Frame::Integer(if reverse { z.len() - 1 - i } else { i } as i64),
        },
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RangeBy {
    Auto,
    Rank,
    Score,
    Lex,
}

/// `ZRANGE`, `ZRANGEBYSCORE`, `ZREVRANGE`, `ZREVRANGEBYSCORE`: Redis's `zrangeGenericCommand`,
/// which parses the options, then the range, then looks the key up.
fn zrange_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let name = argv[0].to_ascii_lowercase();
    let (mut by, mut reverse) = match &name[..] {
        b"zrangebyscore" => (RangeBy::Score, Some(false)),
        b"zrevrange" => (RangeBy::Rank, Some(true)),
        b"zrevrangebyscore" => (RangeBy::Score, Some(true)),
        _ => (RangeBy::Auto, None),
    };
    let mut withscores = false;
    let (mut offset, mut limit) = (0i64, -1i64);
    let mut j = 4;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let opt = &argv[j];
        if is(opt, "withscores") {
            withscores = true;
        } else if is(opt, "limit") && left >= 2 {
            match (int(&argv[j + 1]), int(&argv[j + 2])) {
                (Ok(o), Ok(l)) => (offset, limit) = (o, l),
                _ => return NOT_INTEGER,
            }
            j += 2;
        } else if reverse.is_none() && is(opt, "rev") {
            reverse = Some(true);
        } else if by == RangeBy::Auto && is(opt, "bylex") {
            by = RangeBy::Lex;
        } else if by == RangeBy::Auto && is(opt, "byscore") {
            by = RangeBy::Score;
        } else {
            return SYNTAX;
        }
        j += 1;
    }
    let reverse = reverse.unwrap_or(false);
    if by == RangeBy::Auto {
        by = RangeBy::Rank;
    }
    if limit != -1 && by == RangeBy::Rank {
        return Frame::error(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if withscores && by == RangeBy::Lex {
        return Frame::error(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        );
    }
    let (lo, hi) = if reverse && by != RangeBy::Rank {
        (&argv[3], &argv[2])
    } else {
        (&argv[2], &argv[3])
    };
    enum Parsed {
        Rank(i64, i64),
        Score(ScoreRange),
        Lex(LexRange),
    }
    let parsed = match by {
        RangeBy::Score => match ScoreRange::parse(lo, hi) {
            Ok(r) => Parsed::Score(r),
            Err(e) => return e,
        },
        RangeBy::Lex => match LexRange::parse(lo, hi) {
            Ok(r) => Parsed::Lex(r),
            Err(e) => return e,
        },
        _ => match (int(lo), int(hi)) {
            (Ok(a), Ok(b)) => Parsed::Rank(a, b),
            (Err(e), _) | (_, Err(e)) => return e,
        },
    };
    let resp3 = cx.client().protocol >= 3;
    let z = match read(cx, &argv[1]) {
        Err(e) => return e,
        Ok(None) => return Frame::Array(Vec::new()),
        Ok(Some(z)) => z,
    };
    let mut ordered: Vec<(f64, &Bytes)> = z.iter().collect();
    if reverse {
        ordered.reverse();
    }
    let picked: Vec<(f64, &Bytes)> = match parsed {
        Parsed::Rank(start, end) => match clamp_ranks(start, end, ordered.len()) {
            None => Vec::new(),
            Some((a, b)) => ordered[a..=b].to_vec(),
        },
        Parsed::Score(range) => limited(
            ordered.into_iter().filter(|(s, _)| range.contains(*s)),
            offset,
            limit,
        ),
        Parsed::Lex(range) => lex_scan(&ordered, &range, reverse, offset, limit),
    };
    scored_reply(picked.into_iter(), withscores, resp3)
}

/// A `BYLEX` range as Redis walks it (`zzlFirstInLexRange` and the loop after it): the members
/// are in score order, which is lexicographic only when all scores are equal, so Redis finds the
/// first member at or past the start bound, skips `offset` members, and stops at the first one past
/// the end bound. `ordered` is already reversed for `REV`.
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

/// `LIMIT offset count` as Redis applies it: a negative offset skips everything, a negative
/// count takes the rest.
fn limited<'a>(
    items: impl Iterator<Item = (f64, &'a Bytes)>,
    offset: i64,
    limit: i64,
) -> Vec<(f64, &'a Bytes)> {
    if offset < 0 {
        return Vec::new();
    }
    let take = if limit < 0 {
        usize::MAX
    } else {
        limit as usize
    };
    items.skip(offset as usize).take(take).collect()
}

/// Members, with their scores if asked: flat in RESP2, `[member, score]` pairs in RESP3.
fn scored_reply<'a>(
    items: impl Iterator<Item = (f64, &'a Bytes)>,
    withscores: bool,
    resp3: bool,
) -> Frame {
    Frame::Array(if !withscores {
        items.map(|(_, m)| Frame::Bulk(m.clone())).collect()
    } else if resp3 {
        items
            .map(|(s, m)| Frame::Array(vec![Frame::Bulk(m.clone()), Frame::Double(s)]))
            .collect()
    } else {
        items
            .flat_map(|(s, m)| [Frame::Bulk(m.clone()), Frame::Double(s)])
            .collect()
    })
}

fn zremrange_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let by_rank = is(&argv[0], "zremrangebyrank");
    let (ranks, scores) = if by_rank {
        match (int(&argv[2]), int(&argv[3])) {
            (Ok(a), Ok(b)) => (Some((a, b)), None),
            (Err(e), _) | (_, Err(e)) => return e,
        }
    } else {
        match ScoreRange::parse(&argv[2], &argv[3]) {
            Ok(r) => (None, Some(r)),
            Err(e) => return e,
        }
    };
    let key = &argv[1];
    let removed = match write(cx, key, false) {
        Err(e) => return e,
        Ok(None) => return Frame::Integer(0),
        Ok(Some(z)) => {
            let doomed: Vec<Bytes> = match (ranks, scores) {
                (Some((a, b)), _) => match clamp_ranks(a, b, z.len()) {
                    None => Vec::new(),
                    Some((a, b)) => z
                        .iter()
                        .skip(a)
                        .take(b - a + 1)
                        .map(|(_, m)| m.clone())
                        .collect(),
                },
                (_, Some(range)) => z
                    .iter()
                    .filter(|(s, _)| range.contains(*s))
                    .map(|(_, m)| m.clone())
                    .collect(),
                (None, None) => Vec::new(),
            };
            for m in &doomed {
                z.remove(m);
            }
            doomed.len()
        }
    };
    if removed > 0 {
        done(cx, key);
    }
    Frame::Integer(removed as i64)
}

/// `ZPOPMIN`/`ZPOPMAX key [count]`: members and scores, lowest (highest) first. A count of
/// 0 still meets WRONGTYPE first, as in Redis 7.0.
fn zpop_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    if argv.len() > 3 {
        return SYNTAX;
    }
    let max = is(&argv[0], "zpopmax");
    let count = match argv.get(2) {
        None => 1,
        Some(arg) => match int(arg) {
            Ok(n) if n >= 0 => n as usize,
            _ => return Frame::error("ERR value is out of range, must be positive"),
        },
    };
    let key = &argv[1];
    let popped: Vec<(f64, Bytes)> = match write(cx, key, false) {
        Err(e) => return e,
        Ok(None) => return Frame::Array(Vec::new()),
        Ok(Some(_)) if count == 0 => return Frame::Array(Vec::new()),
        Ok(Some(z)) => {
            let mut all: Vec<(f64, Bytes)> = z.iter().map(|(s, m)| (s, m.clone())).collect();
            if max {
                all.reverse();
            }
            all.truncate(count);
            for (_, m) in &all {
                z.remove(m);
            }
            all
        }
    };
    done(cx, key);
    // RESP3 nests `[member, score]` pairs when a count was given, as Redis 7.0 does.
    let nested = argv.len() == 3 && cx.client().protocol >= 3;
    Frame::Array(if nested {
        popped
            .into_iter()
            .map(|(s, m)| Frame::Array(vec![Frame::Bulk(m), Frame::Double(s)]))
            .collect()
    } else {
        popped
            .into_iter()
            .flat_map(|(s, m)| [Frame::Bulk(m), Frame::Double(s)])
            .collect()
    })
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: members and scores (see
/// [`scan_collection`](super::keys::scan_collection)).
fn zscan_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    super::keys::scan_collection(cx, argv, read, |z| {
        z.iter()
            .map(|(s, m)| {
                // Bulk strings even in RESP3: Redis's scan reply formats the score as text.
                let score = Frame::Bulk(Bytes::from(crate::resp::format_double(s)));
                (m.clone(), vec![Frame::Bulk(m.clone()), score])
            })
            .collect()
    })
}
