//! Stream commands: `XADD` and its trims, ranges, `XREAD`, consumer groups and their pending
//! entries, `XINFO`.
//!
//! The value lives in `engine/stream.rs`; this file parses and replies as Redis 7.0's
//! `t_stream.c` does, in its order of checks, so a bad call sees Redis's error. IDs that `XADD *`
//! makes come from the command's frozen time, and, as in Redis, from the stream's last ID when
//! the clock is behind it (its sequence is incremented). Idle and delivery times are measured on
//! the same frozen time, so on the virtual clock they are exact.
//!
//! `BLOCK` answers at once when there is data, and inside `MULTI` never waits (a script may not
//! use it), as in Redis. A call that has to wait blocks its client in the engine's registry
//! (`engine/blocking.rs`), `$` resolved then; `cmd/blocking.rs` serves it with
//! [`serve_reader`] after the command that added to one of its streams.

use super::{
    Args, CONTAINER, CmdResult, Cx, Spec, WRITE, class, int, is, subcommand_syntax,
    unknown_subcommand,
};
use crate::engine::blocking::{GroupRead, Waiter};
use crate::engine::db::Value;
use crate::engine::stream::{
    ENTRIES_READ_UNKNOWN, Group, NodeLimits, Pending, Stream, StreamId, Trim,
};
use crate::resp::Frame;
use bytes::Bytes;

mod pending;

pub(crate) static XADD: Spec = Spec::new("xadd", -5, WRITE, xadd_command);
pub(crate) static XTRIM: Spec = Spec::new("xtrim", -4, WRITE, xtrim_command);
pub(crate) static XDEL: Spec = Spec::new("xdel", -3, WRITE, xdel_command);
pub(crate) static XLEN: Spec = Spec::new("xlen", 2, 0, xlen_command);
pub(crate) static XRANGE: Spec = Spec::new("xrange", -4, 0, xrange_command);
pub(crate) static XREVRANGE: Spec = Spec::new("xrevrange", -4, 0, xrange_command);
pub(crate) static XREAD: Spec = Spec::new("xread", -4, 0, xread_command);
pub(crate) static XREADGROUP: Spec =
    Spec::new("xreadgroup", -7, WRITE, xread_command).with_reads(super::ReadRule::Always);
pub(crate) static XSETID: Spec = Spec::new("xsetid", -3, WRITE, xsetid_command);
pub(crate) static XGROUP: Spec = Spec::new("xgroup", -2, WRITE | CONTAINER, xgroup_command);
pub(crate) static XACK: Spec =
    Spec::new("xack", -4, WRITE, pending::xack_command).with_reads(super::ReadRule::Always);
pub(crate) static XPENDING: Spec = Spec::new("xpending", -3, 0, pending::xpending_command);
pub(crate) static XCLAIM: Spec =
    Spec::new("xclaim", -6, WRITE, pending::xclaim_command).with_reads(super::ReadRule::Always);
pub(crate) static XAUTOCLAIM: Spec =
    Spec::new("xautoclaim", -6, WRITE, pending::xautoclaim_command)
        .with_reads(super::ReadRule::Always);
pub(crate) static XINFO: Spec = Spec::new("xinfo", -2, CONTAINER, xinfo_command);

const INVALID_ID: Frame =
    Frame::error("ERR Invalid stream ID specified as stream command argument");
const NO_SUCH_KEY: Frame = Frame::error("ERR no such key");
/// A blocked `XREADGROUP`'s answer when its group is gone.
const LOST_GROUP: Frame =
    Frame::error("NOGROUP the consumer group this client was blocked on no longer exists");

// ---- IDs ----

/// C's `strtoull` on a whole argument: leading spaces and a sign allowed (a `-` negates, as C
/// does), overflow refused.
fn strtoull(text: &[u8]) -> Option<u64> {
    let text = match text.iter().position(|b| !b" \t\n\x0b\x0c\r".contains(b)) {
        Some(at) => &text[at..],
        None => return None,
    };
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { v.wrapping_neg() } else { v })
}

/// Redis's `string2ull`: a non-negative `string2ll`, else `strtoull`.
fn string2ull(text: &[u8]) -> Option<u64> {
    if let Some(v) = crate::resp::number::parse_i64(text) {
        return u64::try_from(v).ok();
    }
    strtoull(text)
}

/// An ID as a command gives it (Redis's `streamGenericParseIDOrReply`): `ms-seq`, `ms` (the
/// sequence is `missing_seq`), `-` and `+` unless `strict`. With `seq_star`, `ms-*` is taken
/// too and the second value says whether the sequence was given.
fn parse_id_full(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    seq_star: bool,
) -> Result<(StreamId, bool), Frame> {
    if arg.len() > 127 {
        return Err(INVALID_ID);
    }
    // C reads the argument up to its first NUL.
    let arg = super::c_text(arg, 127);
    match arg {
        b"-" | b"+" if strict => return Err(INVALID_ID),
        b"-" => return Ok((StreamId::MIN, true)),
        b"+" => return Ok((StreamId::MAX, true)),
        _ => {}
    }
    let (ms, seq) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (&arg[..dash], Some(&arg[dash + 1..])),
        None => (arg, None),
    };
    let ms = string2ull(ms).ok_or(INVALID_ID)?;
    match seq {
        None => Ok((
            StreamId {
                ms,
                seq: missing_seq,
            },
            true,
        )),
        Some(b"*") if seq_star => Ok((StreamId { ms, seq: 0 }, false)),
        Some(seq) => {
            let seq = string2ull(seq).ok_or(INVALID_ID)?;
            Ok((StreamId { ms, seq }, true))
        }
    }
}

/// An ID, `-` and `+` refused (Redis's `streamParseStrictIDOrReply`).
fn strict_id(arg: &[u8]) -> Result<StreamId, Frame> {
    parse_id_full(arg, 0, true, false).map(|(id, _)| id)
}

/// A range bound (Redis's `streamParseIntervalIDOrReply`): `(` makes it exclusive, which moves
/// it one ID inwards.
fn interval_id(arg: &[u8], missing_seq: u64, start: bool) -> Result<StreamId, Frame> {
    if arg.len() > 1 && arg[0] == b'(' {
        let id = parse_id_full(&arg[1..], missing_seq, true, false)?.0;
        let moved = if start { id.next() } else { id.prev() };
        moved.ok_or(if start {
            Frame::error("ERR invalid start ID for the interval")
        } else {
            Frame::error("ERR invalid end ID for the interval")
        })
    } else {
        Ok(parse_id_full(arg, missing_seq, false, false)?.0)
    }
}

fn id_frame(id: StreamId) -> Frame {
    Frame::Bulk(Bytes::from(id.to_string()))
}

/// An entry in a reply, from its fields as the stream decoded them.
fn entry_frame(id: StreamId, fields: Vec<Bytes>) -> Frame {
    Frame::Array(vec![
        id_frame(id),
        Frame::Array(fields.into_iter().map(Frame::Bulk).collect()),
    ])
}

fn entries_frame(entries: Vec<(StreamId, Vec<Bytes>)>) -> Frame {
    Frame::Array(
        entries
            .into_iter()
            .map(|(id, f)| entry_frame(id, f))
            .collect(),
    )
}

// ---- the value ----

// A stream is read and written as the collections are, but an empty one stays: nothing here
// finishes a write with `super::finish_aggregate`, and it would keep the key anyway.
super::aggregate!(Stream, Stream, wrap: |s| Value::Stream(Box::new(s)), is_empty: |_: &Stream| false);

/// The stream at `key` (None when missing), WRONGTYPE for another type.
fn read<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<Option<&'a Stream>, Frame> {
    super::read_aggregate(cx, key)
}

/// The stream at `key` for writing (None when missing), WRONGTYPE for another type.
fn write<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<Option<&'a mut Stream>, Frame> {
    super::write_aggregate(cx, key, false)
}

/// The stream at `key` for writing, created empty when missing.
fn write_or_create<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<&'a mut Stream, Frame> {
    Ok(super::write_aggregate(cx, key, true)?.expect("created when missing"))
}

/// The stream at `key`, which the command has seen exists, for writing.
fn write_existing<'a>(cx: &'a mut Cx<'_>, key: &[u8]) -> Result<&'a mut Stream, Frame> {
    Ok(write(cx, key)?.expect("the command checked that the stream exists"))
}

/// A write that changed `key`: `WATCH` hears of it, and the keyspace event goes out.
fn changed(cx: &mut Cx<'_>, key: &[u8], event: &str) {
    cx.keyspace().touch(key);
    cx.notify(class::STREAM, event, key);
}

fn nogroup_for_key(key: &[u8], group: &[u8]) -> Frame {
    super::error_echoing(&[
        b"NOGROUP No such key '",
        key,
        b"' or consumer group '",
        group,
        b"'",
    ])
}

// ---- XADD, XTRIM ----

/// `MAXLEN`/`MINID` with `=`/`~` and `LIMIT`, as `XADD` and `XTRIM` share them.
#[derive(Default)]
struct TrimArgs {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    no_mkstream: bool,
    /// `XADD`'s ID: None for `*`; with whether its sequence was given.
    id: Option<(StreamId, bool)>,
}

impl TrimArgs {
    /// Redis's `streamParseAddOrTrimArgsOrReply`. For `XADD` it stops at the ID (taken).
    /// `nodes` gives an approximate trim its default work bound.
    fn parse(args: &mut Args<'_>, xadd: bool, nodes: NodeLimits) -> Result<TrimArgs, Frame> {
        let mut t = TrimArgs::default();
        let mut limit_given = false;
        while let Some(opt) = args.next() {
            let more = args.remaining();
            if xadd && &opt[..] == b"*" {
                break;
            } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
                if t.trim.is_some() {
                    return Err(Frame::error(
                        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                    ));
                }
                t.approx = false;
                if more >= 2 {
                    match args.peek().map(|a| &a[..]) {
                        Some(b"~") => {
                            t.approx = true;
                            args.next();
                        }
                        Some(b"=") => {
                            args.next();
                        }
                        _ => {}
                    }
                }
                let arg = args.next_bytes()?;
                t.trim = Some(if is(opt, "maxlen") {
                    let max = int(arg)?;
                    if max < 0 {
                        return Err(Frame::error("ERR The MAXLEN argument must be >= 0."));
                    }
                    Trim::MaxLen(max as u64)
                } else {
                    Trim::MinId(strict_id(arg)?)
                });
            } else if is(opt, "limit") && more > 0 {
                let limit = int(args.next_bytes()?)?;
                if limit < 0 {
                    return Err(Frame::error("ERR The LIMIT argument must be >= 0."));
                }
                t.limit = limit as u64;
                limit_given = true;
            } else if xadd && is(opt, "nomkstream") {
                t.no_mkstream = true;
            } else if xadd {
                t.id = Some(parse_id_full(opt, 0, true, true)?);
                break;
            } else {
                return Err(super::SYNTAX);
            }
        }
        if t.limit != 0 && t.trim.is_none() {
            return Err(Frame::error(
                "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
            ));
        }
        if !xadd && t.trim.is_none() {
            return Err(Frame::error(
                "ERR syntax error, XTRIM must be called with a trimming strategy",
            ));
        }
        if limit_given {
            if !t.approx {
                return Err(Frame::error(
                    "ERR syntax error, LIMIT cannot be used without the special ~ option",
                ));
            }
        } else if t.approx {
            t.limit = nodes.default_trim_limit();
        } else {
            t.limit = 0;
        }
        Ok(t)
    }
}

/// The ID `XADD` gives a new entry (Redis's `streamAppendItem`), or its error.
fn next_id(s: &Stream, given: Option<(StreamId, bool)>, now: i64) -> Result<StreamId, Frame> {
    const SMALLER: Frame = Frame::error(
        "ERR The ID specified in XADD is equal or smaller than the target stream top item",
    );
    let last = s.last_id;
    let id = match given {
        Some((id, true)) => id,
        Some((id, false)) if id.ms == last.ms => {
            if last.seq == u64::MAX {
                return Err(SMALLER);
            }
            StreamId {
                ms: last.ms,
                seq: last.seq + 1,
            }
        }
        Some((id, false)) => id,
        None => {
            let ms = u64::try_from(now).unwrap_or(0);
            if ms > last.ms {
                StreamId { ms, seq: 0 }
            } else {
                last.next().unwrap_or(StreamId::MAX)
            }
        }
    };
    if id <= last {
        return Err(SMALLER);
    }
    Ok(id)
}

fn xadd_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let nodes = cx.server_state().encodings.stream_nodes;
    let t = TrimArgs::parse(args, true, nodes)?;
    let pairs = args.rest();
    if pairs.len() < 2 || !pairs.len().is_multiple_of(2) {
        return Err(super::wrong_arity("xadd"));
    }
    if let Some((id, true)) = t.id
        && id.is_zero()
    {
        return Err(Frame::error(
            "ERR The ID specified in XADD must be greater than 0-0",
        ));
    }
    if t.no_mkstream && read(cx, key)?.is_none() {
        return Ok(Frame::Null);
    }
    let now = cx.now;
    let s = write_or_create(cx, key)?;
    if s.last_id == StreamId::MAX {
        return Err(Frame::error(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let id = next_id(s, t.id, now)?;
    s.append(id, pairs, nodes);
    let trimmed = t
        .trim
        .is_some_and(|trim| s.trim(trim, t.approx, t.limit) > 0);
    changed(cx, key, "xadd");
    // A stream that grows serves its blocked readers, as a new one does (Redis's
    // `signalKeyAsReady` at every XADD).
    cx.keyspace().waiters.signal(key);
    if trimmed {
        cx.notify(class::STREAM, "xtrim", key);
    }
    Ok(id_frame(id))
}

fn xtrim_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let nodes = cx.server_state().encodings.stream_nodes;
    let t = TrimArgs::parse(args, false, nodes)?;
    let Some(s) = write(cx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let trim = t.trim.expect("XTRIM's arguments always have a strategy");
    let deleted = s.trim(trim, t.approx, t.limit);
    if deleted > 0 {
        changed(cx, key, "xtrim");
    }
    Ok(Frame::Integer(deleted as i64))
}

// ---- XDEL, XLEN, XRANGE, XSETID ----

fn xdel_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    if read(cx, key)?.is_none() {
        return Ok(Frame::Integer(0));
    }
    let ids = args.map(|a| strict_id(a)).collect::<Result<Vec<_>, _>>()?;
    let s = write_existing(cx, key)?;
    let mut deleted = 0;
    for id in ids {
        if s.delete(id) {
            s.max_deleted_id = s.max_deleted_id.max(id);
            deleted += 1;
        }
    }
    if deleted > 0 {
        changed(cx, key, "xdel");
    }
    Ok(Frame::Integer(deleted))
}

fn xlen_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let s = read(cx, args.next_bytes()?)?;
    Ok(Frame::Integer(s.map_or(0, |s| s.len() as i64)))
}

/// `XRANGE key start end [COUNT n]` and `XREVRANGE key end start [COUNT n]`.
fn xrange_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let rev = is(args.name(), "xrevrange");
    let key = args.next_bytes()?;
    let (a, b) = (args.next_bytes()?, args.next_bytes()?);
    let (start_arg, end_arg) = if rev { (b, a) } else { (a, b) };
    let start = interval_id(start_arg, 0, true)?;
    let end = interval_id(end_arg, u64::MAX, false)?;
    let mut count = -1;
    while let Some(opt) = args.next() {
        if is(opt, "count") && args.remaining() > 0 {
            count = args.next_int()?.max(0);
        } else {
            return Err(super::SYNTAX);
        }
    }
    let Some(s) = read(cx, key)? else {
        return Ok(Frame::Array(Vec::new()));
    };
    if count == 0 {
        return Ok(Frame::NullArray);
    }
    let count = usize::try_from(count).unwrap_or(0);
    Ok(entries_frame(s.range(start, end, rev, count)))
}

fn xsetid_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let id = strict_id(args.next_bytes()?)?;
    let mut entries_added = -1;
    let mut max_deleted = StreamId::MIN;
    while let Some(opt) = args.next() {
        let more = args.remaining() > 0;
        if is(opt, "entriesadded") && more {
            entries_added = args.next_int()?;
            if entries_added < 0 {
                return Err(Frame::error("ERR entries_added must be positive"));
            }
        } else if is(opt, "maxdeletedid") && more {
            max_deleted = strict_id(args.next_bytes()?)?;
            if id < max_deleted {
                return Err(Frame::error(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
        } else {
            return Err(super::SYNTAX);
        }
    }
    let s = write(cx, key)?.ok_or(NO_SUCH_KEY)?;
    if !s.is_empty() {
        if id < s.last_entry_id() {
            return Err(Frame::error(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added != -1 && s.len() > entries_added as u64 {
            return Err(Frame::error(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    if id < s.max_deleted_id {
        return Err(Frame::error(
            "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id",
        ));
    }
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if !max_deleted.is_zero() {
        s.max_deleted_id = max_deleted;
    }
    changed(cx, key, "xsetid");
    Ok(Frame::OK)
}

// ---- XREAD, XREADGROUP ----

/// What `XREAD` or `XREADGROUP` asks for one stream.
#[derive(Clone, Copy)]
enum ReadFrom {
    /// Entries after this ID.
    After(StreamId),
    /// `>`: entries never delivered to the group.
    New,
}

/// `BLOCK`'s timeout (Redis's `getTimeoutFromObjectOrReply` in milliseconds): the deadline on
/// the engine's clock, None for 0 (forever).
fn block_deadline(cx: &Cx<'_>, arg: &[u8]) -> Result<Option<i64>, Frame> {
    let t = int(arg).map_err(|_| Frame::error("ERR timeout is not an integer or out of range"))?;
    if t < 0 {
        return Err(Frame::error("ERR timeout is negative"));
    }
    if cx.engine().version() != crate::engine::Version::V7_0 && t > i64::MAX.saturating_sub(cx.now)
    {
        return Err(super::blocking::TIMEOUT_OUT_OF_RANGE);
    }
    Ok((t > 0).then(|| cx.now.saturating_add(t)))
}

/// `XREAD`'s reply: each served stream with its entries, an array of pairs in RESP2, a map in
/// RESP3.
fn streams_reply(cx: &mut Cx<'_>, served: Vec<(Frame, Frame)>) -> Frame {
    if cx.client().protocol >= 3 {
        Frame::Map(served)
    } else {
        Frame::Array(
            served
                .into_iter()
                .map(|(k, v)| Frame::Array(vec![k, v]))
                .collect(),
        )
    }
}

/// `XREAD [COUNT n] [BLOCK ms] STREAMS key… id…` and `XREADGROUP GROUP g c [COUNT n] [BLOCK ms]
/// [NOACK] STREAMS key… id…`.
fn xread_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let group_read = is(args.name(), "xreadgroup");
    let mut timeout = None;
    let mut count = 0usize;
    let mut noack = false;
    let mut group: Option<(&Bytes, &Bytes)> = None;
    let mut streams: Option<&[Bytes]> = None;
    while let Some(opt) = args.next() {
        let more = args.remaining();
        if is(opt, "block") && more > 0 {
            // Redis 7.4 and Valkey read without blocking in a script, as in a transaction.
            if cx.in_script() && cx.engine().version() == crate::engine::Version::V7_0 {
                return Err(Frame::error_owned(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(args.name())
                )));
            }
            timeout = Some(block_deadline(cx, args.next_bytes()?)?);
        } else if is(opt, "count") && more > 0 {
            count = usize::try_from(args.next_int()?.max(0)).unwrap_or(0);
        } else if is(opt, "streams") && more > 0 {
            let rest = args.rest();
            if !rest.len().is_multiple_of(2) {
                // Redis 7.2 names the command and the ID it takes.
                return Err(Frame::error(match (cx.engine().version(), group_read) {
                    (crate::engine::Version::V7_0, _) => {
                        "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
                    }
                    (_, false) => {
                        "ERR Unbalanced 'xread' list of streams: for each stream key an ID or '$' must be specified."
                    }
                    (_, true) => {
                        "ERR Unbalanced 'xreadgroup' list of streams: for each stream key an ID or '>' must be specified."
                    }
                }));
            }
            streams = Some(rest);
            break;
        } else if is(opt, "group") && more >= 2 {
            if !group_read {
                return Err(Frame::error(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            group = Some((args.next_bytes()?, args.next_bytes()?));
        } else if is(opt, "noack") {
            if !group_read {
                return Err(Frame::error(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            noack = true;
        } else {
            return Err(super::SYNTAX);
        }
    }
    let Some(streams) = streams else {
        return Err(super::SYNTAX);
    };
    if group_read && group.is_none() {
        return Err(Frame::error("ERR Missing GROUP option for XREADGROUP"));
    }
    let (keys, ids) = streams.split_at(streams.len() / 2);
    let plus_reads_last = cx.engine().version() != crate::engine::Version::V7_0;
    let mut from = Vec::with_capacity(keys.len());
    for (key, id) in keys.iter().zip(ids) {
        let s = read(cx, key)?;
        if let Some((name, _)) = group
            && s.is_none_or(|s| !s.groups.contains_key(&name[..]))
        {
            return Err(super::error_echoing(&[
                b"NOGROUP No such key '",
                key,
                b"' or consumer group '",
                name,
                b"' in XREADGROUP with GROUP option",
            ]));
        }
        from.push(match &id[..] {
            b"$" if group_read => {
                return Err(Frame::error(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ));
            }
            b"$" => ReadFrom::After(s.map_or(StreamId::MIN, |s| s.last_id)),
            // `+`, from Redis 7.4 on: the last entry, read as the entries after the one before it.
            b"+" if plus_reads_last && group_read => {
                return Err(Frame::error(
                    "ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set.",
                ));
            }
            b"+" if plus_reads_last => match s {
                None => ReadFrom::After(StreamId::MIN),
                Some(s) => ReadFrom::After(s.last_id.prev().ok_or(Frame::error(
                    "ERR the stream last element ID is 0-0",
                ))?),
            },
            b">" if !group_read => {
                return Err(Frame::error(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ));
            }
            b">" => ReadFrom::New,
            // `>` is the largest ID inside Redis, so that ID given explicitly reads new entries
            // too.
            _ => match strict_id(id)? {
                StreamId::MAX if group_read => ReadFrom::New,
                id => ReadFrom::After(id),
            },
        });
    }
    let mut served = Vec::new();
    for (key, from) in keys.iter().zip(from.iter().copied()) {
        let reply = match group {
            None => read_plain(cx, key, from, count)?,
            Some((name, consumer)) => read_group(cx, key, name, consumer, from, count, noack),
        };
        if let Some(reply) = reply {
            served.push((Frame::Bulk(key.clone()), reply));
        }
    }
    if !served.is_empty() {
        return Ok(streams_reply(cx, served));
    }
    let Some(deadline) = timeout else {
        return Ok(Frame::NullArray);
    };
    // Blocking: every ID is `>` for a group (another ID answers its history at once), and an
    // ID, `$` resolved, for a plain read.
    let after = from
        .iter()
        .map(|f| match f {
            ReadFrom::After(id) => *id,
            ReadFrom::New => StreamId::MIN,
        })
        .collect();
    let waiter = Waiter::StreamRead {
        after,
        group: group.map(|(group, consumer)| {
            Box::new(GroupRead {
                group: group.clone(),
                consumer: consumer.clone(),
                noack,
            })
        }),
        count,
    };
    super::blocking::block_or(cx, keys, deadline, waiter, Frame::NullArray)
}

/// The reply of a reader blocked on stream `key` (see `engine/blocking.rs`), if the stream has
/// something for it, as Redis's `serveClientsBlockedOnStreamKey`: a plain reader wants entries
/// after `after`, a group reader those after the group's last delivered ID as it is now, which
/// it takes as `XREADGROUP >` does. The stream's last ID decides, so an entry added and deleted
/// since answers the stream with no entries, as in Redis.
pub(super) fn serve_reader(
    cx: &mut Cx<'_>,
    key: &Bytes,
    after: StreamId,
    group: Option<&GroupRead>,
    count: usize,
) -> Option<Frame> {
    let s = read(cx, key).ok()??;
    let entries = match group {
        None => {
            if s.last_id <= after {
                return None;
            }
            entries_frame(s.range(after.next()?, StreamId::MAX, false, count))
        }
        Some(read) => {
            let Some(g) = s.groups.get(&read.group[..]) else {
                return Some(LOST_GROUP);
            };
            if s.last_id <= g.last_id {
                return None;
            }
            let start = g.last_id.next()?;
            let now = cx.now;
            let s = write(cx, key).ok()??;
            let g = s.groups.get_mut(&read.group[..])?;
            let created = touch_consumer(g, &read.consumer, now);
            let entries = deliver(
                s,
                &read.group,
                &read.consumer,
                start,
                count,
                read.noack,
                now,
            );
            cx.keyspace().touch(key);
            if created {
                cx.notify(class::STREAM, "xgroup-createconsumer", key);
            }
            entries
        }
    };
    Some(streams_reply(cx, vec![(Frame::Bulk(key.clone()), entries)]))
}

/// Answers each blocked `XREADGROUP` whose key is no longer a stream (deleted, expired, or of
/// another type now) or no longer has its group, with its release's error for it (Redis 7.0's
/// own words, or from 7.2 on the error the command gives when run again); run after each
/// command while a client is blocked.
pub(super) fn answer_lost_group_readers(engine: &mut crate::engine::Engine, now: i64) {
    for db in 0..crate::engine::DATABASES {
        if !engine.db_mut(db).waiters.has_group_readers() {
            continue;
        }
        for id in engine.db_mut(db).waiters.group_readers() {
            let Some(blocked) = engine.blocked(id) else {
                continue;
            };
            let Waiter::StreamRead {
                group: Some(read), ..
            } = &blocked.waiter
            else {
                continue;
            };
            let keyspace = &engine.dbs()[db];
            // Redis 7.2 runs the command again, which fails as a fresh call would.
            let rerun = engine.version() != crate::engine::Version::V7_0;
            let lost = blocked.keys.iter().find_map(|key| {
                match keyspace.peek(key, now).map(|e| &e.value) {
                    Some(Value::Stream(s)) if s.groups.contains_key(&read.group[..]) => None,
                    Some(Value::Stream(_)) | None if rerun => Some(super::error_echoing(&[
                        b"NOGROUP No such key '",
                        key,
                        b"' or consumer group '",
                        &read.group,
                        b"' in XREADGROUP with GROUP option",
                    ])),
                    Some(_) if rerun => Some(super::WRONGTYPE),
                    Some(Value::Stream(_)) => Some(LOST_GROUP),
                    _ => Some(Frame::error("UNBLOCKED the stream key no longer exists")),
                }
            });
            if let Some(reply) = lost {
                engine.unblock(id, reply);
            }
        }
    }
}

/// `XREAD` of one stream: its entries after `from`, if there are any.
fn read_plain(
    cx: &mut Cx<'_>,
    key: &[u8],
    from: ReadFrom,
    count: usize,
) -> Result<Option<Frame>, Frame> {
    let ReadFrom::After(after) = from else {
        return Ok(None);
    };
    let Some(s) = read(cx, key)? else {
        return Ok(None);
    };
    if s.is_empty() || s.last_entry_id() <= after {
        return Ok(None);
    }
    let Some(start) = after.next() else {
        return Ok(None);
    };
    Ok(Some(entries_frame(s.range(
        start,
        StreamId::MAX,
        false,
        count,
    ))))
}

/// `XREADGROUP` of one stream whose group exists: new entries (delivered and made pending
/// unless `noack`), or the consumer's own pending history after an ID.
fn read_group(
    cx: &mut Cx<'_>,
    key: &[u8],
    name: &Bytes,
    consumer: &Bytes,
    from: ReadFrom,
    count: usize,
    noack: bool,
) -> Option<Frame> {
    let now = cx.now;
    // From Redis 7.2 the read makes its consumer first, whether or not it finds anything.
    let consumer_first = cx.engine().version() != crate::engine::Version::V7_0;
    let mut created = false;
    // Redis's serving loop reads each stream again (a second keyspace hit or miss) before it
    // writes the group.
    cx.lookup(key)?;
    let reply = 'read: {
        let s = write(cx, key).ok()??;
        if consumer_first && let Some(group) = s.groups.get_mut(&name[..]) {
            created = touch_consumer(group, consumer, now);
        }
        let group = s.groups.get(&name[..])?;
        let start = match from {
            ReadFrom::After(id) => id.next().unwrap_or(StreamId::MAX),
            ReadFrom::New => {
                if s.is_empty() || s.last_entry_id() <= group.last_id {
                    break 'read None;
                }
                group.last_id.next().unwrap_or(StreamId::MAX)
            }
        };
        let group = s.groups.get_mut(&name[..])?;
        if !consumer_first {
            created = touch_consumer(group, consumer, now);
        }
        match from {
            ReadFrom::After(_) => Some(history(s, name, consumer, start, count, now)),
            ReadFrom::New => Some(deliver(s, name, consumer, start, count, noack, now)),
        }
    };
    if reply.is_none() && !created {
        return None;
    }
    cx.keyspace().touch(key);
    if created {
        cx.notify(class::STREAM, "xgroup-createconsumer", key);
    }
    if cx.engine().stream_writes().is_some() {
        let delivered = reply.as_ref().filter(|_| matches!(from, ReadFrom::New));
        super::propagate::group_read(cx, key, name, consumer, created, delivered, noack);
    }
    reply
}

/// Looks up `consumer` in `group`, creating it, and marks it seen now: whether it was created.
fn touch_consumer(group: &mut Group, consumer: &Bytes, now: i64) -> bool {
    match group.consumers.get_mut(&consumer[..]) {
        Some(c) => {
            c.seen_time = now;
            false
        }
        None => {
            group.consumers.insert(
                consumer.clone(),
                crate::engine::stream::Consumer {
                    seen_time: now,
                    active_time: -1,
                    pel: Default::default(),
                },
            );
            true
        }
    }
}

/// New entries from `start` for `consumer`: the group's last ID moves, and each becomes
/// pending (re-assigned if another consumer had it).
fn deliver(
    s: &mut Stream,
    name: &Bytes,
    consumer: &Bytes,
    start: StreamId,
    count: usize,
    noack: bool,
    now: i64,
) -> Frame {
    let entries = s.range(start, StreamId::MAX, false, count);
    for (id, _) in &entries {
        s.advance_group(name, *id);
        if noack {
            continue;
        }
        let Some(group) = s.groups.get_mut(&name[..]) else {
            continue;
        };
        let pending = Pending {
            consumer: consumer.clone(),
            delivery_time: now,
            delivery_count: 1,
        };
        if let Some(old) = group.pel.insert(*id, pending)
            && let Some(c) = group.consumers.get_mut(&old.consumer)
        {
            c.pel.remove(id);
        }
        if let Some(c) = group.consumers.get_mut(&consumer[..]) {
            c.pel.insert(*id);
            c.active_time = now;
        }
    }
    entries_frame(entries)
}

/// The consumer's pending entries from `start`: each delivered once more; one the stream no
/// longer has comes with a null for its fields.
fn history(
    s: &mut Stream,
    name: &Bytes,
    consumer: &Bytes,
    start: StreamId,
    count: usize,
    now: i64,
) -> Frame {
    let Some(group) = s.groups.get(&name[..]) else {
        return Frame::Array(Vec::new());
    };
    let ids: Vec<StreamId> = group
        .consumers
        .get(&consumer[..])
        .map(|c| {
            c.pel
                .range(start..)
                .take(if count == 0 { usize::MAX } else { count })
                .copied()
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::with_capacity(ids.len());
    let mut delivered = Vec::new();
    for id in ids {
        match s.get(id) {
            Some(fields) => {
                out.push(entry_frame(id, fields));
                delivered.push(id);
            }
            None => out.push(Frame::Array(vec![id_frame(id), Frame::NullArray])),
        }
    }
    if let Some(group) = s.groups.get_mut(&name[..]) {
        for id in delivered {
            if let Some(p) = group.pel.get_mut(&id) {
                p.delivery_time = now;
                p.delivery_count += 1;
            }
        }
    }
    Frame::Array(out)
}

// ---- XGROUP ----

const XGROUP_HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

fn help(lines: &[&'static str]) -> Frame {
    Frame::Array(lines.iter().map(|&l| Frame::simple(l)).collect())
}

/// A subcommand's name checked against the container's list and its arity: the lowercase name.
fn subcommand(
    cx: &Cx<'_>,
    container: &str,
    subs: &[&str],
    args: &mut Args<'_>,
) -> Result<String, Frame> {
    let sub = args.next_bytes()?;
    let name = String::from_utf8_lossy(sub).to_ascii_lowercase();
    if !subs.contains(&name.as_str()) {
        return Err(unknown_subcommand(container, sub));
    }
    let full = format!("{}|{name}", container.to_ascii_lowercase());
    super::command_docs::check_subcommand_arity(
        cx.engine().version(),
        &full,
        args.remaining() + 2,
    )?;
    Ok(name)
}

fn xgroup_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub_arg = args.peek().cloned().unwrap_or_default();
    let sub = subcommand(
        cx,
        "XGROUP",
        &[
            "create",
            "setid",
            "destroy",
            "createconsumer",
            "delconsumer",
            "help",
        ],
        args,
    )?;
    if sub == "help" {
        return Ok(help(XGROUP_HELP));
    }
    let key = args.next_bytes()?;
    let name = args.next_bytes()?;
    // The arity check gave `CREATE` and `SETID` their ID.
    let id_arg: &[u8] = if sub == "create" || sub == "setid" {
        args.next_bytes()?
    } else {
        b""
    };
    let mut mkstream = false;
    let mut entries_read = ENTRIES_READ_UNKNOWN;
    if sub == "create" || sub == "setid" {
        while let Some(opt) = args.next() {
            if sub == "create" && is(opt, "mkstream") {
                mkstream = true;
            } else if is(opt, "entriesread") && args.remaining() > 0 {
                entries_read = args.next_int()?;
                if entries_read < 0 && entries_read != ENTRIES_READ_UNKNOWN {
                    return Err(Frame::error(
                        "ERR value for ENTRIESREAD must be positive or -1",
                    ));
                }
            } else {
                return Err(subcommand_syntax("XGROUP", &sub_arg));
            }
        }
    }
    let exists = read(cx, key)?.is_some();
    if !exists && !mkstream {
        return Err(Frame::error(
            "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
        ));
    }
    let has_group = read(cx, key)?.is_some_and(|s| s.groups.contains_key(&name[..]));
    if !has_group && matches!(sub.as_str(), "setid" | "createconsumer" | "delconsumer") {
        return Err(super::error_echoing(&[
            b"NOGROUP No such consumer group '",
            name,
            b"' for key name '",
            key,
            b"'",
        ]));
    }
    let now = cx.now;
    match sub.as_str() {
        "create" => {
            let last = read(cx, key)?.map_or(StreamId::MIN, |s| s.last_id);
            let id = if id_arg == b"$" {
                last
            } else {
                strict_id(id_arg)?
            };
            let s = write_or_create(cx, key)?;
            if s.groups.contains_key(&name[..]) {
                return Err(Frame::error("BUSYGROUP Consumer Group name already exists"));
            }
            s.groups.insert(name.clone(), Group::new(id, entries_read));
            changed(cx, key, "xgroup-create");
            Ok(Frame::OK)
        }
        "setid" => {
            let s = write_existing(cx, key)?;
            let id = if id_arg == b"$" {
                s.last_id
            } else {
                parse_id_full(id_arg, 0, false, false)?.0
            };
            if let Some(g) = s.groups.get_mut(&name[..]) {
                g.last_id = id;
                g.entries_read = entries_read;
            }
            changed(cx, key, "xgroup-setid");
            Ok(Frame::OK)
        }
        "destroy" => {
            let s = write_existing(cx, key)?;
            if s.groups.remove(&name[..]).is_none() {
                return Ok(Frame::Integer(0));
            }
            changed(cx, key, "xgroup-destroy");
            Ok(Frame::Integer(1))
        }
        "createconsumer" => {
            let consumer = args.next_bytes()?;
            let s = write_existing(cx, key)?;
            let group = s
                .groups
                .get_mut(&name[..])
                .expect("the command checked that the group exists");
            if group.consumers.contains_key(&consumer[..]) {
                return Ok(Frame::Integer(0));
            }
            touch_consumer(group, consumer, now);
            changed(cx, key, "xgroup-createconsumer");
            Ok(Frame::Integer(1))
        }
        _ => {
            let consumer = args.next_bytes()?;
            let s = write_existing(cx, key)?;
            let group = s
                .groups
                .get_mut(&name[..])
                .expect("the command checked that the group exists");
            let Some(c) = group.consumers.remove(&consumer[..]) else {
                return Ok(Frame::Integer(0));
            };
            for id in &c.pel {
                group.pel.remove(id);
            }
            changed(cx, key, "xgroup-delconsumer");
            Ok(Frame::Integer(c.pel.len() as i64))
        }
    }
}

// ---- XINFO ----

const XINFO_HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

fn text(s: &'static str) -> Frame {
    Frame::Bulk(Bytes::from_static(s.as_bytes()))
}

fn entries_read_frame(group: &Group) -> Frame {
    if group.entries_read == ENTRIES_READ_UNKNOWN {
        Frame::Null
    } else {
        Frame::Integer(group.entries_read)
    }
}

fn lag_frame(s: &Stream, group: &Group) -> Frame {
    s.lag(group).map_or(Frame::Null, Frame::Integer)
}

fn xinfo_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub_arg = args.peek().cloned().unwrap_or_default();
    let sub = subcommand(
        cx,
        "XINFO",
        &["consumers", "groups", "stream", "help"],
        args,
    )?;
    if sub == "help" {
        return Ok(help(XINFO_HELP));
    }
    let key = args.next_bytes()?;
    let now = cx.now;
    let active_times = cx.engine().version() != crate::engine::Version::V7_0;
    let s = read(cx, key)?.ok_or(NO_SUCH_KEY)?;
    match sub.as_str() {
        "consumers" => {
            let name = args.next_bytes()?;
            let group = s.groups.get(&name[..]).ok_or_else(|| {
                super::error_echoing(&[
                    b"NOGROUP No such consumer group '",
                    name,
                    b"' for key name '",
                    key,
                    b"'",
                ])
            })?;
            Ok(Frame::Array(
                group
                    .consumers
                    .iter()
                    .map(|(n, c)| {
                        let mut fields = vec![
                            (text("name"), Frame::Bulk(n.clone())),
                            (text("pending"), Frame::Integer(c.pel.len() as i64)),
                            (text("idle"), Frame::Integer((now - c.seen_time).max(0))),
                        ];
                        // Redis 7.2's `inactive`: since it was last given an entry, or -1.
                        if active_times {
                            let inactive = match c.active_time {
                                -1 => -1,
                                at => now - at,
                            };
                            fields.push((text("inactive"), Frame::Integer(inactive)));
                        }
                        Frame::Map(fields)
                    })
                    .collect(),
            ))
        }
        "groups" => Ok(Frame::Array(
            s.groups
                .iter()
                .map(|(n, g)| {
                    Frame::Map(vec![
                        (text("name"), Frame::Bulk(n.clone())),
                        (text("consumers"), Frame::Integer(g.consumers.len() as i64)),
                        (text("pending"), Frame::Integer(g.pel.len() as i64)),
                        (text("last-delivered-id"), id_frame(g.last_id)),
                        (text("entries-read"), entries_read_frame(g)),
                        (text("lag"), lag_frame(s, g)),
                    ])
                })
                .collect(),
        )),
        _ => {
            let full = match args.remaining() {
                0 => None,
                1 if args.eat("full") => Some(10),
                3 if args.eat("full") && args.eat("count") => {
                    let count = args.next_int()?;
                    Some(if count < 0 { 10 } else { count as usize })
                }
                _ => return Err(subcommand_syntax("XINFO", &sub_arg)),
            };
            Ok(stream_info(s, full, active_times))
        }
    }
}

/// `XINFO STREAM key`, or with `FULL` (`Some(count)`, 0 for everything) its entries and groups.
fn stream_info(s: &Stream, full: Option<usize>, active_times: bool) -> Frame {
    let mut fields = vec![
        (text("length"), Frame::Integer(s.len() as i64)),
        (
            text("radix-tree-keys"),
            Frame::Integer(s.node_count() as i64),
        ),
        (
            text("radix-tree-nodes"),
            Frame::Integer(s.radix_tree_nodes() as i64),
        ),
        (text("last-generated-id"), id_frame(s.last_id)),
        (text("max-deleted-entry-id"), id_frame(s.max_deleted_id)),
        (
            text("entries-added"),
            Frame::Integer(s.entries_added as i64),
        ),
        (text("recorded-first-entry-id"), id_frame(s.first_id())),
    ];
    let Some(count) = full else {
        let edge = |rev| {
            s.range(StreamId::MIN, StreamId::MAX, rev, 1)
                .pop()
                .map_or(Frame::Null, |(id, f)| entry_frame(id, f))
        };
        fields.push((text("groups"), Frame::Integer(s.groups.len() as i64)));
        fields.push((text("first-entry"), edge(false)));
        fields.push((text("last-entry"), edge(true)));
        return Frame::Map(fields);
    };
    let take = if count == 0 { usize::MAX } else { count };
    fields.push((
        text("entries"),
        entries_frame(s.range(StreamId::MIN, StreamId::MAX, false, count)),
    ));
    let groups = s
        .groups
        .iter()
        .map(|(n, g)| {
            let pel = g
                .pel
                .iter()
                .take(take)
                .map(|(id, p)| pending_frame(*id, Some(&p.consumer), p))
                .collect();
            let consumers = g
                .consumers
                .iter()
                .map(|(cn, c)| {
                    let pending = c
                        .pel
                        .iter()
                        .take(take)
                        .filter_map(|id| g.pel.get(id).map(|p| (id, p)))
                        .map(|(id, p)| pending_frame(*id, None, p))
                        .collect();
                    let mut fields = vec![
                        (text("name"), Frame::Bulk(cn.clone())),
                        (text("seen-time"), Frame::Integer(c.seen_time)),
                    ];
                    if active_times {
                        fields.push((text("active-time"), Frame::Integer(c.active_time)));
                    }
                    fields.push((text("pel-count"), Frame::Integer(c.pel.len() as i64)));
                    fields.push((text("pending"), Frame::Array(pending)));
                    Frame::Map(fields)
                })
                .collect();
            Frame::Map(vec![
                (text("name"), Frame::Bulk(n.clone())),
                (text("last-delivered-id"), id_frame(g.last_id)),
                (text("entries-read"), entries_read_frame(g)),
                (text("lag"), lag_frame(s, g)),
                (text("pel-count"), Frame::Integer(g.pel.len() as i64)),
                (text("pending"), Frame::Array(pel)),
                (text("consumers"), Frame::Array(consumers)),
            ])
        })
        .collect();
    fields.push((text("groups"), Frame::Array(groups)));
    Frame::Map(fields)
}

/// A pending entry as `XINFO STREAM FULL` lists it: its ID, its consumer where the list is the
/// group's (not one consumer's own), when it was last delivered and how many times.
fn pending_frame(id: StreamId, consumer: Option<&Bytes>, p: &Pending) -> Frame {
    let mut fields = vec![id_frame(id)];
    fields.extend(consumer.map(|c| Frame::Bulk(c.clone())));
    fields.push(Frame::Integer(p.delivery_time));
    fields.push(Frame::Integer(p.delivery_count as i64));
    Frame::Array(fields)
}
