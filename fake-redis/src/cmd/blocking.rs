//! The blocking commands (`BLPOP`, `BRPOP`, `BRPOPLPUSH`, `BLMOVE`, `BLMPOP`, `BZPOPMIN`,
//! `BZPOPMAX`, `BZMPOP`), `CLIENT UNBLOCK`, and the serving of blocked clients, stream readers
//! (`XREAD … BLOCK`, which `streams.rs` blocks and reads) included.
//!
//! Each command first does what its non-blocking form does, through the pop helpers of
//! `lists.rs` and `zsets.rs`: with something to take it answers at once, exactly as Redis 7.0
//! (the timeout is parsed first, then the keys are looked at in order, the first of another type
//! answering `WRONGTYPE`). With nothing to take it blocks its client in the engine's registry
//! (`engine/blocking.rs`), unless it runs inside `MULTI`, a script, or for a driver that does not
//! wait ([`Engine::execute`](crate::Engine::execute)): there it answers as a timeout would, at
//! once. [`serve_blocked`] runs after every command, transaction or script while any client is
//! blocked, and serves the keys that became ready in Redis's order.
//!
//! A timeout is seconds as C's `long double`, turned into milliseconds as Redis does, rounding up
//! (`0.0001` waits 1 ms, `-0.0001` rounds up to 0, which waits forever; `inf` and `1e400`
//! overflow to a negative timeout).

use super::long_double::{LongDouble, Parsed};
use super::{Args, Caller, CmdResult, Cx, Spec, WRITE, int, is, lists, streams, zsets};
use crate::engine::blocking::{Blocked, Waiter};
use crate::engine::{DATABASES, Engine, Version};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static BLPOP: Spec = Spec::new("blpop", -3, WRITE, blpop_command);
pub(crate) static BRPOP: Spec = Spec::new("brpop", -3, WRITE, blpop_command);
pub(crate) static BRPOPLPUSH: Spec = Spec::new("brpoplpush", 4, WRITE, brpoplpush_command);
pub(crate) static BLMOVE: Spec = Spec::new("blmove", 6, WRITE, blmove_command);
pub(crate) static BLMPOP: Spec = Spec::new("blmpop", -5, WRITE, blmpop_command);
pub(crate) static BZPOPMIN: Spec = Spec::new("bzpopmin", -3, WRITE, bzpop_command);
pub(crate) static BZPOPMAX: Spec = Spec::new("bzpopmax", -3, WRITE, bzpop_command);
pub(crate) static BZMPOP: Spec = Spec::new("bzmpop", -5, WRITE, bzmpop_command);

/// A timeout argument as Redis's `getTimeoutFromObjectOrReply` reads it in seconds: the deadline
/// on the engine's clock, None for 0 (forever).
fn deadline(cx: &Cx<'_>, arg: &[u8]) -> Result<Option<i64>, Frame> {
    let ms = match LongDouble::parse(arg) {
        None => return Err(Frame::error("ERR timeout is not a float or out of range")),
        // Converting an infinite product to an integer gives the "integer indefinite".
        Some(Parsed::Infinite) => i64::MIN,
        Some(Parsed::Finite(seconds)) => seconds.thousandfold_ceiling(),
    };
    let v7_0 = cx.engine().version() == Version::V7_0;
    // From Redis 7.2 on, a positive timeout past the 64-bit range (infinity included), or one
    // whose deadline would be, is an error; 7.0 converts it to the "integer indefinite".
    if !v7_0 && ms == i64::MIN && !arg.starts_with(b"-") {
        return Err(TIMEOUT_OUT_OF_RANGE);
    }
    if ms < 0 {
        return Err(Frame::error("ERR timeout is negative"));
    }
    if !v7_0 && ms > i64::MAX.saturating_sub(cx.now) {
        return Err(TIMEOUT_OUT_OF_RANGE);
    }
    // Redis 7.0's sum wraps for a timeout near i64::MAX and lands in its timeout table as a huge
    // unsigned time: forever, as the saturated sum is here.
    Ok((ms > 0).then(|| cx.now.saturating_add(ms)))
}

/// Redis 7.2 and later's error for a timeout whose deadline is past the 64-bit range.
pub(super) const TIMEOUT_OUT_OF_RANGE: Frame = Frame::error("ERR timeout is out of range");

/// Blocks the calling client on `keys` for `waiter`, or answers `denied` at once where Redis does
/// not block (see the [module docs](self)).
pub(super) fn block_or(
    cx: &mut Cx<'_>,
    keys: &[Bytes],
    deadline: Option<i64>,
    waiter: Waiter,
    denied: Frame,
) -> CmdResult {
    // Blocking needs a door that waits for the reply, and a client's own command: a
    // transaction's or a script's never blocks.
    if !cx.may_block || cx.caller != Caller::Client {
        if cx.caller == Caller::Client {
            // Redis would have blocked it, and a block that ends is not slow-logged.
            cx.node().stats_mut().skip_slowlog = true;
        }
        return Ok(denied);
    }
    let db = cx.db;
    cx.block(Blocked {
        db,
        keys: keys.to_vec(),
        deadline,
        waiter,
    });
    // Not a reply: the driver sees the client blocked and waits for the real one.
    Ok(Frame::NullArray)
}

/// `LEFT` or `RIGHT` (true for `LEFT`).
fn direction(arg: &[u8]) -> Result<bool, Frame> {
    super::keyword(arg, &[("left", true), ("right", false)])
}

/// `[key, element]`, `BLPOP`'s reply.
fn key_and_element(key: &Bytes, element: Bytes) -> Frame {
    Frame::Array(vec![Frame::Bulk(key.clone()), Frame::Bulk(element)])
}

/// `[key, [element…]]`, `BLMPOP`'s reply.
fn key_and_elements(key: &Bytes, elements: Vec<Bytes>) -> Frame {
    let elements = elements.into_iter().map(Frame::Bulk).collect();
    Frame::Array(vec![Frame::Bulk(key.clone()), Frame::Array(elements)])
}

/// `[key, member, score]`, `BZPOPMIN`'s reply.
fn key_member_score(version: Version, key: &Bytes, (score, member): (f64, Bytes)) -> Frame {
    Frame::Array(vec![
        Frame::Bulk(key.clone()),
        Frame::Bulk(member),
        super::double_reply(version, score),
    ])
}

/// `[key, [[member, score]…]]`, `BZMPOP`'s reply.
fn key_and_members(version: Version, key: &Bytes, members: Vec<(f64, Bytes)>) -> Frame {
    let members = members
        .into_iter()
        .map(|(s, m)| Frame::Array(vec![Frame::Bulk(m), super::double_reply(version, s)]))
        .collect();
    Frame::Array(vec![Frame::Bulk(key.clone()), Frame::Array(members)])
}

/// `BLPOP`/`BRPOP key… timeout`.
fn blpop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let left = is(args.name(), "blpop");
    let (timeout, keys) = args.rest().split_last().expect("checked by the arity");
    let deadline = deadline(cx, timeout)?;
    for key in keys {
        if let Some(mut popped) = lists::pop_elements(cx, key, left, 1)? {
            let element = popped.pop().expect("a stored list is never empty");
            return Ok(key_and_element(key, element));
        }
    }
    let waiter = Waiter::ListPop { left, count: None };
    block_or(cx, keys, deadline, waiter, Frame::NullArray)
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`: the directions are read before the
/// timeout, as in Redis.
fn blmove_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (source, destination) = (args.next_bytes()?, args.next_bytes()?);
    let from_left = direction(args.next_bytes()?)?;
    let to_left = direction(args.next_bytes()?)?;
    let deadline = deadline(cx, args.next_bytes()?)?;
    blmove(cx, source, destination, from_left, to_left, deadline)
}

/// `BRPOPLPUSH source destination timeout`: `BLMOVE … RIGHT LEFT`.
fn brpoplpush_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (source, destination) = (args.next_bytes()?, args.next_bytes()?);
    let deadline = deadline(cx, args.next_bytes()?)?;
    blmove(cx, source, destination, false, true, deadline)
}

/// The move now when `source` has elements (`LMOVE`'s checks and reply), else the block; a null
/// bulk where Redis does not block.
fn blmove(
    cx: &mut Cx<'_>,
    source: &Bytes,
    destination: &Bytes,
    from_left: bool,
    to_left: bool,
    deadline: Option<i64>,
) -> CmdResult {
    let moved = lists::move_element(cx, source, destination, from_left, to_left)?;
    if moved != Frame::Null {
        return Ok(moved);
    }
    let waiter = Waiter::ListMove {
        left: from_left,
        destination: destination.clone(),
        to_left,
    };
    block_or(
        cx,
        std::slice::from_ref(source),
        deadline,
        waiter,
        Frame::Null,
    )
}

/// `BLMPOP timeout numkeys key… LEFT|RIGHT [COUNT count]`: the timeout is read after the rest,
/// as in Redis.
fn blmpop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let timeout = args.next_bytes()?;
    let (keys, right, count) = lists::mpop_arguments(args, "left", "right")?;
    let deadline = deadline(cx, timeout)?;
    for key in keys {
        if let Some(popped) = lists::pop_elements(cx, key, !right, count)? {
            return Ok(key_and_elements(key, popped));
        }
    }
    let waiter = Waiter::ListPop {
        left: !right,
        count: Some(count),
    };
    block_or(cx, keys, deadline, waiter, Frame::NullArray)
}

/// `BZPOPMIN`/`BZPOPMAX key… timeout`.
fn bzpop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let max = is(args.name(), "bzpopmax");
    let (timeout, keys) = args.rest().split_last().expect("checked by the arity");
    let deadline = deadline(cx, timeout)?;
    for key in keys {
        if let Some(mut popped) = zsets::pop_members(cx, key, max, 1)? {
            let first = popped.pop().expect("a stored sorted set is never empty");
            return Ok(key_member_score(cx.engine().version(), key, first));
        }
    }
    let waiter = Waiter::ZSetPop { max, count: None };
    block_or(cx, keys, deadline, waiter, Frame::NullArray)
}

/// `BZMPOP timeout numkeys key… MIN|MAX [COUNT count]`: the timeout is read after the rest.
fn bzmpop_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let timeout = args.next_bytes()?;
    let (keys, max, count) = lists::mpop_arguments(args, "min", "max")?;
    let deadline = deadline(cx, timeout)?;
    for key in keys {
        if let Some(popped) = zsets::pop_members(cx, key, max, count)? {
            return Ok(key_and_members(cx.engine().version(), key, popped));
        }
    }
    let waiter = Waiter::ZSetPop {
        max,
        count: Some(count),
    };
    block_or(cx, keys, deadline, waiter, Frame::NullArray)
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]`: 1 when it ended a block, 0 when `id` was not blocked.
/// The reason is checked before the id, as in Redis; `sub` is the subcommand as the client
/// wrote it, which Redis's error for too many arguments echoes.
pub(super) fn client_unblock(cx: &mut Cx<'_>, sub: &[u8], args: &mut Args<'_>) -> CmdResult {
    if args.remaining() == 0 {
        return Err(super::wrong_arity("client|unblock"));
    }
    if args.remaining() > 2 {
        return Err(super::subcommand_syntax("CLIENT", sub));
    }
    let id = args.next_bytes()?;
    let as_error = match args.next() {
        None => false,
        Some(reason) if is(reason, "timeout") => false,
        Some(reason) if is(reason, "error") => true,
        Some(_) => {
            return Err(Frame::error(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ));
        }
    };
    let id = int(id)? as u64;
    let Some(blocked) = cx.engine().blocked(id) else {
        return Ok(Frame::Integer(0));
    };
    if let crate::engine::blocking::Waiter::Postponed { .. } = blocked.waiter {
        // Held by `CLIENT PAUSE`, not blocked by its command: not unblocked (redis-server
        // 7.0.15 crashes here; later versions answer 0).
        return Ok(Frame::Integer(0));
    }
    let reply = if as_error {
        Frame::error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    } else {
        blocked.waiter.timed_out()
    };
    cx.unblock(id, reply);
    Ok(Frame::Integer(1))
}

/// Serves the clients blocked on the keys that became ready, as Redis's
/// `handleClientsBlockedOnKeys`: keys in the order they became ready (a served move's
/// destination joins the end), each key's clients in the order they blocked, until the key is
/// gone. A client whose waiter the key's type cannot serve stays blocked. First, a blocked
/// `XREADGROUP` whose key or group went away is answered its error.
pub(crate) fn serve_blocked(engine: &mut Engine, now: i64) {
    streams::answer_lost_group_readers(engine, now);
    loop {
        let mut served_any_key = false;
        for db in 0..DATABASES {
            for key in engine.db_mut(db).waiters.take_ready() {
                served_any_key = true;
                serve_key(engine, db, &key, now);
            }
        }
        if !served_any_key {
            return;
        }
    }
}

/// Serves the clients blocked on `key` of database `db`, first blocked first.
fn serve_key(engine: &mut Engine, db: usize, key: &Bytes, now: i64) {
    for id in engine.db_mut(db).waiters.waiting_on(key) {
        // Unblocked meanwhile (a served `BLMOVE` whose destination it also waited on).
        let Some((waiter, key_index)) = engine.blocked(id).map(|b| {
            let key_index = b.keys.iter().position(|k| k == key).unwrap_or(0);
            (b.waiter.clone(), key_index)
        }) else {
            continue;
        };
        let Some(entry) = engine.db_mut(db).lookup(key, now) else {
            return;
        };
        if !waiter.served_by(&entry.value) {
            continue;
        }
        if let Some(reply) = serve(&mut Cx::new(engine, id, db, now), key, key_index, &waiter) {
            engine.unblock(id, reply);
        }
    }
}

/// The reply of a client served by `key` (its `key_index`-th key), which holds a value of the
/// type its waiter wants; None when it has nothing for it (a stream with nothing new), so the
/// client stays blocked.
fn serve(cx: &mut Cx<'_>, key: &Bytes, key_index: usize, waiter: &Waiter) -> Option<Frame> {
    let reply = match waiter {
        Waiter::ListPop { left, count } => lists::pop_elements(cx, key, *left, count.unwrap_or(1))
            .map(|popped| {
                let mut popped = popped.unwrap_or_default();
                match count {
                    Some(_) => key_and_elements(key, popped),
                    None => popped
                        .pop()
                        .map_or(Frame::NullArray, |e| key_and_element(key, e)),
                }
            }),
        // A destination of another type answers WRONGTYPE and moves nothing, as in Redis.
        Waiter::ListMove {
            left,
            destination,
            to_left,
        } => lists::move_element(cx, key, destination, *left, *to_left),
        Waiter::ZSetPop { max, count } => zsets::pop_members(cx, key, *max, count.unwrap_or(1))
            .map(|popped| {
                let version = cx.engine().version();
                let mut popped = popped.unwrap_or_default();
                match count {
                    Some(_) => key_and_members(version, key, popped),
                    None => popped
                        .pop()
                        .map_or(Frame::NullArray, |m| key_member_score(version, key, m)),
                }
            }),
        Waiter::StreamRead {
            after,
            group,
            count,
        } => {
            let after = after.get(key_index).copied().unwrap_or_default();
            return streams::serve_reader(cx, key, after, group.as_deref(), *count);
        }
        // No key serves a `WAIT` (`served_by` says so): never reached.
        Waiter::Replicas { acked, local } => {
            Ok(crate::engine::blocking::wait_reply(*acked, *local))
        }
        // Nor a command a pause holds: it stays blocked until the pause ends.
        Waiter::Postponed { .. } => return None,
    };
    Some(reply.unwrap_or_else(|error| error))
}
