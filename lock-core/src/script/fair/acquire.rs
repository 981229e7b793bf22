//! `fair_acquire`: take the fair lock in arrival order, or join (or stay in) its queue.
//!
//! `KEYS[1]` the lock, `KEYS[2]` its queue, `KEYS[3]` its timeouts; `ARGV[1]` the lease in ms,
//! `ARGV[2]` the owner, `ARGV[3]` the thread-wait time in ms (how long a waiter may stay silent
//! before it loses its place), `ARGV[4]` the client's clock in unix ms, and optionally `ARGV[5]`
//! the hold count the client believes the owner has.
//!
//! Redisson's `RedissonFairLock.tryLockInnerAsync` (its waiting form). After the stale-waiter
//! purge, the lock is granted when it is free and the queue is empty or starts with this owner;
//! the grant removes the owner from the queue and takes its thread-wait time off every other
//! waiter's deadline, since they now wait one lease less. An owner that holds it re-enters. A
//! waiter already queued gets the holder's `PTTL` (0 at least). Anyone else joins the tail,
//! with the deadline of the waiter before it (or the holder's `PTTL`) plus its thread-wait time,
//! and gets what it waits for in ms: that deadline's distance, or the holder's `PTTL` (-1 for a
//! lock without TTL, -2 for a free lock whose turn belongs to another waiter).
//!
//! `ARGV[5]` makes a repeat of an attempt whose reply was lost harmless: a reentry counts only
//! when the owner's count is still the one sent (the repeat of a first grant finds 1, not 0, and
//! confirms the hold without counting); a repeat of a join finds the owner queued.

use super::queue::{PURGE_LINES, lock_and_queue, purge_stale, purge_stale_lua};
use crate::keys::{FairKeys, Owner};
use crate::reply::Reply;
use crate::script::lua_number_arg;
use crate::script::{
    DecodeError, Script, ScriptCall, ScriptCtx, ScriptFailure, Store, float_to_reply,
};
use crate::time::{Lease, Millis};

/// The script.
pub static SCRIPT: Script = Script::new("fair_acquire", BODY, twin!(native));

const BODY: &str = concat!(
    purge_stale_lua!(4),
    "if redis.call('exists', KEYS[1]) == 0
    and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  local waiters = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #waiters, 1 do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), waiters[i])
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
local count = redis.call('hget', KEYS[1], ARGV[2])
if count ~= false then
  if ARGV[5] == nil or count == ARGV[5] then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
  end
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
  ttl = redis.call('pttl', KEYS[1])
end
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4])
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
"
);

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    purge_stale(cx, store, 0, 4)?;
    let at = |line: u32| line + PURGE_LINES;
    let lock = cx.key(1, at(1))?;
    let queue = cx.key(2, at(2))?;
    let timeouts = cx.key(3, at(4))?;
    let owner = cx.arg(2, at(2))?;
    let free = !cx.at(at(1), store.exists(lock))?;
    if free
        && (!cx.at(at(2), store.exists(queue))?
            || cx.at(at(2), store.lindex(queue, 0))?.as_deref() == Some(owner))
    {
        cx.at(at(3), store.lpop(queue))?;
        cx.at(at(4), store.zrem(timeouts, owner))?;
        let waiters = cx.at(at(5), store.zrange_all(timeouts))?;
        if !waiters.is_empty() {
            let less = lua_number_arg(-cx.number_arg(3, at(7))?);
            for waiter in &waiters {
                cx.at(at(7), store.zincrby(timeouts, &less, waiter))?;
            }
        }
        cx.at(at(9), store.hset(lock, owner, b"1"))?;
        cx.at(at(10), store.pexpire(lock, cx.arg(1, at(10))?))?;
        return Ok(Reply::Nil);
    }
    if let Some(count) = cx.at(at(13), store.hget(lock, owner))? {
        if cx.opt_arg(5).is_none_or(|expected| expected == &count[..]) {
            cx.at(at(16), store.hincrby(lock, owner, 1))?;
        }
        cx.at(at(18), store.pexpire(lock, cx.arg(1, at(18))?))?;
        return Ok(Reply::Nil);
    }
    if cx.at(at(21), store.zscore(timeouts, owner))?.is_some() {
        return Ok(Reply::Int(cx.at(at(22), store.pttl(lock))?.max(0)));
    }
    let last = cx.at(at(24), store.lindex(queue, -1))?;
    let last_deadline = match last.as_deref() {
        Some(last) if last != owner => cx.at(at(26), store.zscore(timeouts, last))?,
        _ => None,
    };
    let ttl = match last_deadline {
        Some(deadline) => deadline - cx.number_arg(4, at(27))?,
        None => cx.at(at(29), store.pttl(lock))? as f64,
    };
    let deadline = ttl + cx.number_arg(3, at(31))? + cx.number_arg(4, at(31))?;
    if cx.at(
        at(32),
        store.zadd(timeouts, &lua_number_arg(deadline), owner),
    )? {
        cx.at(at(33), store.rpush(queue, owner))?;
    }
    Ok(Reply::Int(float_to_reply(ttl)))
}

/// The call by which `owner` asks for the fair lock `keys` with `lease`, by the client's clock
/// `now_ms`, losing its place in the queue if it stays silent for `thread_wait`; `held` is the
/// owner's count as the client knows it (see the module's docs), `None` to count every reentry
/// as Redisson does.
pub fn call(
    keys: &FairKeys,
    lease: Lease,
    owner: &Owner,
    thread_wait: Millis,
    now_ms: i64,
    held: Option<u32>,
) -> ScriptCall {
    ScriptCall::of(&SCRIPT, lock_and_queue(keys))
        .lease(lease)
        .owner(owner)
        .int(thread_wait.as_u64() as i64)
        .int(now_ms)
        .held(held)
}

/// What a fair acquire attempt learned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FairAcquireReply {
    /// The owner holds the lock now (taken in its turn, or re-entered).
    Acquired,
    /// The owner waits in the queue. The number is how long the script expects it to wait, in
    /// ms: the holder's `PTTL` or the deadline of the waiter ahead; -1 when the holder has no TTL,
    /// -2 when the lock is free but another waiter's turn.
    Queued(i64),
}

/// Decodes the script's reply.
pub fn decode(reply: &Reply) -> Result<FairAcquireReply, DecodeError> {
    match reply {
        Reply::Nil => Ok(FairAcquireReply::Acquired),
        Reply::Int(n) => Ok(FairAcquireReply::Queued(*n)),
        _ => Err(DecodeError::new(SCRIPT.name, reply)),
    }
}
