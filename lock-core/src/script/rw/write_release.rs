//! `rw_write_release`: drop one write count, and with the last one the write mode, once per
//! request id.
//!
//! `KEYS[1]` the lock, `KEYS[2]` its channel, `KEYS[3]` the unlock latch of this request;
//! `ARGV[1]` the read-unlock message (`1`), `ARGV[2]` the lease to re-apply on a reentrant
//! release, `ARGV[3]` the owner as a writer (`<owner>:write`), `ARGV[4]` the latch's TTL in ms,
//! `ARGV[5]` the publish command (`publish` or `spublish`), and optionally `ARGV[6]` the owner's
//! write count before this release as the client knows it.
//!
//! Redisson's `RedissonWriteLock.unlockInnerAsync`. A reentrant release re-applies the lease. The
//! last one removes the write field: if nothing else is left the lock is deleted; if the writer
//! still has read holds (it took them while writing) the mode becomes `read` and they stay, the
//! downgrade. Either way `1` is published, Redisson's read-unlock message, which wakes every
//! waiter of every client (Redisson publishes nothing on a downgrade; readers that wait then retry
//! when their wait runs out). A release that finds no lock at all publishes too, as Redisson's
//! does.
//!
//! Replies nil when the owner holds no write, 0 when write counts remain, 1 when the last went; a
//! repeat of the same request replies what the first did. With `ARGV[6]`, a copy whose count is
//! stale releases nothing, re-applies the lease and replies 0. The lease and the latch TTL are
//! tried on the missing latch before the first write.

use super::read_release::replay_or_mode;
use crate::keys::{Owner, ReadWriteKeys, RequestId};
use crate::reply::Reply;
use crate::script::release::{ReleaseReply, decode_as};
use crate::script::{DecodeError, Latch, Script, ScriptCall, ScriptCtx, ScriptFailure, Store};
use crate::time::{Lease, Millis};
use std::ops::ControlFlow;

/// The script.
pub static SCRIPT: Script = Script::publishing("rw_write_release", BODY, twin!(native), 4);

/// The message a write release publishes (Redisson's `READ_UNLOCK_MESSAGE`): every waiter wakes.
pub const READ_UNLOCK_MESSAGE: &[u8] = b"1";

const BODY: &str = "\
local val = redis.call('get', KEYS[3])
if val ~= false then
  return tonumber(val)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[5], KEYS[2], ARGV[1])
  return nil
end
local count = redis.call('hget', KEYS[1], ARGV[3])
if mode ~= 'write' or count == false then
  return nil
end
redis.call('set', KEYS[3], 1, 'px', ARGV[2], 'xx')
redis.call('set', KEYS[3], 1, 'px', ARGV[4], 'xx')
if ARGV[6] ~= nil and count ~= ARGV[6] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call(ARGV[5], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let latch = Latch::new(cx, 3, 4, 1)?;
    let lock = cx.key(1, 5)?;
    let mode = match replay_or_mode(cx, store, &latch, lock, 5)? {
        ControlFlow::Continue(mode) => mode,
        ControlFlow::Break(reply) => return Ok(reply),
    };
    let owner = cx.arg(3, 10)?;
    let count = cx.at(10, store.hget(lock, owner))?;
    let Some(count) = count.filter(|_| &mode[..] == b"write") else {
        return Ok(Reply::Nil);
    };
    latch.try_set(cx, store, 2, 14)?;
    latch.try_set(cx, store, 4, 15)?;
    if cx.opt_arg(6).is_some_and(|expected| expected != &count[..]) {
        cx.at(17, store.pexpire(lock, cx.arg(2, 17)?))?;
        return Ok(Reply::Int(0));
    }
    if cx.at(20, store.hincrby(lock, owner, -1))? > 0 {
        cx.at(21, store.pexpire(lock, cx.arg(2, 21)?))?;
        latch.set(cx, store, b"0", 22)?;
        return Ok(Reply::Int(0));
    }
    cx.at(25, store.hdel(lock, owner))?;
    if cx.at(26, store.hlen(lock))? == 1 {
        cx.at(27, store.del(lock))?;
    } else {
        cx.at(29, store.hset(lock, b"mode", b"read"))?;
    }
    cx.publish(store, 31, 5, 2, 1)?;
    latch.set(cx, store, b"1", 32)?;
    Ok(Reply::Int(1))
}

/// The call that releases one write count of `owner` on `keys`, idempotent under `request`; a
/// reentrant release re-applies `lease`. `held` is the owner's write count before this release
/// as the client knows it, `None` to count every delivery as Redisson does.
pub fn call(
    keys: &ReadWriteKeys,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    latch_ttl: Millis,
    held: Option<u32>,
) -> ScriptCall {
    let keys = vec![
        keys.lock.lock.clone(),
        keys.channel.clone(),
        keys.lock.unlock_latch(request),
    ];
    ScriptCall::of(&SCRIPT, keys)
        .message(READ_UNLOCK_MESSAGE)
        .lease(lease)
        .owner(&owner.writer())
        .latch_ttl(latch_ttl)
        .publish()
        .held(held)
}

/// Decodes the script's reply.
pub fn decode(reply: &Reply) -> Result<ReleaseReply, DecodeError> {
    decode_as(SCRIPT.name, reply)
}
