//! `rw_write_acquire`: take the write hold of a read-write lock, or re-enter it, once per
//! request id.
//!
//! `KEYS[1]` the lock, `KEYS[2]` the acquire latch of this request; `ARGV[1]` the lease in ms,
//! `ARGV[2]` the owner as a writer (`<owner>:write`), `ARGV[3]` the latch's TTL in ms, and
//! optionally `ARGV[4]` the owner's write count as the client knows it.
//!
//! Redisson's `RedissonWriteLock.tryLockInnerAsync` plus the plain acquire's latch and count.
//! The write hold is granted when the lock is free (its `mode` becomes `write`) or when this
//! owner already holds it (reentry). There is no upgrade: a reader of the lock, this owner
//! included, holds it in read mode, which a writer waits out. The lock's TTL is raised to the
//! lease if lower, never lowered, since the writer's own read holds may last longer (Redisson
//! adds the lease to the TTL instead). Replies nil when the owner holds the write now, otherwise
//! the lock's `PTTL`.

use super::read_acquire::lengthen_and_latch;
use crate::keys::{Owner, ReadWriteKeys, RequestId};
use crate::reply::Reply;
use crate::script::acquire::{AcquireReply, counts, decode_as};
use crate::script::{DecodeError, Latch, Script, ScriptCall, ScriptCtx, ScriptFailure, Store};
use crate::time::{Lease, Millis};

/// The script.
pub static SCRIPT: Script = Script::new("rw_write_acquire", BODY, twin!(native));

const BODY: &str = "\
if redis.call('exists', KEYS[2]) == 1 then
  return nil
end
local mode = redis.call('hget', KEYS[1], 'mode')
local count = redis.call('hget', KEYS[1], ARGV[2])
if mode == false and redis.call('exists', KEYS[1]) == 1
    or mode ~= false and (mode ~= 'write' or count == false) then
  return redis.call('pttl', KEYS[1])
end
redis.call('set', KEYS[2], 1, 'px', ARGV[1], 'xx')
redis.call('set', KEYS[2], 1, 'px', ARGV[3], 'xx')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
end
if count == false or ARGV[4] == nil or count == ARGV[4] then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
end
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[1])
end
redis.call('set', KEYS[2], 1, 'px', ARGV[3])
return nil
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let latch = Latch::new(cx, 2, 3, 1)?;
    if latch.exists(cx, store, 1)? {
        return Ok(Reply::Nil);
    }
    let lock = cx.key(1, 4)?;
    let mode = cx.at(4, store.hget(lock, b"mode"))?;
    let owner = cx.arg(2, 5)?;
    let count = cx.at(5, store.hget(lock, owner))?;
    let held_by_another = match mode.as_deref() {
        None => cx.at(6, store.exists(lock))?,
        Some(b"write") => count.is_none(),
        Some(_) => true,
    };
    if held_by_another {
        return Ok(Reply::Int(cx.at(8, store.pttl(lock))?));
    }
    latch.try_set(cx, store, 1, 10)?;
    latch.try_set(cx, store, 3, 11)?;
    if mode.is_none() {
        cx.at(13, store.hset(lock, b"mode", b"write"))?;
    }
    if counts(count.as_deref(), cx.opt_arg(4)) {
        cx.at(16, store.hincrby(lock, owner, 1))?;
    }
    lengthen_and_latch(cx, store, lock, &latch, 18)
}

/// The call by which `owner` takes the write hold of `keys` with `lease`, idempotent under
/// `request`; `held` is the owner's write count as the client knows it, `None` to count every
/// delivery as Redisson does.
pub fn call(
    keys: &ReadWriteKeys,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    latch_ttl: Millis,
    held: Option<u32>,
) -> ScriptCall {
    let keys = vec![keys.lock.lock.clone(), keys.lock.acquire_latch(request)];
    ScriptCall::of(&SCRIPT, keys)
        .lease(lease)
        .owner(&owner.writer())
        .latch_ttl(latch_ttl)
        .held(held)
}

/// Decodes the script's reply: held by this owner now, or the lock's `PTTL`.
pub fn decode(reply: &Reply) -> Result<AcquireReply, DecodeError> {
    decode_as(SCRIPT.name, reply)
}
