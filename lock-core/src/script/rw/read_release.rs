//! `rw_read_release`: drop one read count of an owner, and the lock with the last hold of anyone,
//! once per request id.
//!
//! `KEYS[1]` the lock, `KEYS[2]` its channel, `KEYS[3]` the owner's timeout-key prefix,
//! `KEYS[4]` the lock's key prefix (`{name}`), `KEYS[5]` the unlock latch of this request;
//! `ARGV[1]` the unlock message (`0`), `ARGV[2]` the owner, `ARGV[3]` the latch's TTL in ms,
//! `ARGV[4]` the publish command (`publish` or `spublish`), and optionally `ARGV[5]` the owner's
//! read count before this release as the client knows it.
//!
//! Redisson's `RedissonReadLock.unlockInnerAsync`: the count goes down and its timeout key goes.
//! While other holds remain, the lock's TTL becomes the longest TTL of any reader's remaining
//! timeout keys (in write mode the writer's lease keeps it as it is); otherwise the lock is
//! deleted and `0` published, which wakes one waiter per client (a writer, since readers do not
//! wait for readers). A release that finds no lock at all publishes too, as Redisson's does, so
//! that no waiter stalls behind a lock that expired.
//!
//! Replies nil when the owner has no read hold, 0 when it keeps read counts, 1 when its last one
//! went (the lock may still be held by others; Redisson replies 0 then). A repeat of the same
//! request replies what the first did. With `ARGV[5]`, a copy whose count is stale releases
//! nothing and replies 0. The latch TTL is tried on the missing latch before the first write.

use super::read_acquire::count_key;
use crate::keys::{Owner, ReadWriteKeys, RequestId};
use crate::reply::Reply;
use crate::script::release::{ReleaseReply, UNLOCK_MESSAGE, decode_as};
use crate::script::{
    DecodeError, Latch, Script, ScriptCall, ScriptCtx, ScriptFailure, Store, int_arg,
    lua_number_arg, lua_tonumber,
};
use crate::time::Millis;
use bytes::Bytes;
use std::ops::ControlFlow;

/// The script.
pub static SCRIPT: Script = Script::publishing("rw_read_release", BODY, twin!(native), 3);

const BODY: &str = "\
local val = redis.call('get', KEYS[5])
if val ~= false then
  return tonumber(val)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  return nil
end
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false then
  return nil
end
redis.call('set', KEYS[5], 1, 'px', ARGV[3], 'xx')
if ARGV[5] ~= nil and count ~= ARGV[5] then
  return 0
end
local left = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if left == 0 then
  redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (left + 1))
local released = 0
if left == 0 then
  released = 1
end
if redis.call('hlen', KEYS[1]) > 1 then
  local remain = -3
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local n = tonumber(redis.call('hget', KEYS[1], field))
    if type(n) == 'number' then
      for i = n, 1, -1 do
        remain = math.max(remain, redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i))
      end
    end
  end
  if remain > 0 then
    redis.call('pexpire', KEYS[1], remain)
  end
  if remain > 0 or mode == 'write' then
    redis.call('set', KEYS[5], released, 'px', ARGV[3])
    return released
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[3])
return 1
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let latch = Latch::new(cx, 5, 3, 1)?;
    let lock = cx.key(1, 5)?;
    let mode = match replay_or_mode(cx, store, &latch, lock, 4)? {
        ControlFlow::Continue(mode) => mode,
        ControlFlow::Break(reply) => return Ok(reply),
    };
    let owner = cx.arg(2, 10)?;
    let Some(count) = cx.at(10, store.hget(lock, owner))? else {
        return Ok(Reply::Nil);
    };
    latch.try_set(cx, store, 3, 14)?;
    if cx.opt_arg(5).is_some_and(|expected| expected != &count[..]) {
        return Ok(Reply::Int(0));
    }
    let left = cx.at(18, store.hincrby(lock, owner, -1))?;
    if left == 0 {
        cx.at(20, store.hdel(lock, owner))?;
    }
    let gone = count_key(cx.key(3, 22)?, left as f64 + 1.0);
    cx.at(22, store.del(&gone))?;
    let released = i64::from(left == 0);
    if cx.at(27, store.hlen(lock))? > 1 {
        let mut remain: i64 = -3;
        let prefix = cx.key(4, 33)?;
        for field in cx.at(29, store.hkeys(lock))? {
            let Some(n) = cx
                .at(30, store.hget(lock, &field))?
                .and_then(|v| lua_tonumber(&v))
            else {
                continue;
            };
            let mut timeouts = Vec::with_capacity(prefix.len() + field.len() + 16);
            timeouts.extend_from_slice(prefix);
            timeouts.push(b':');
            timeouts.extend_from_slice(&field);
            timeouts.extend_from_slice(b":rwlock_timeout");
            let mut i = n;
            while i >= 1.0 {
                remain = remain.max(cx.at(33, store.pttl(&count_key(&timeouts, i)))?);
                i -= 1.0;
            }
        }
        if remain > 0 {
            cx.at(38, store.pexpire(lock, &lua_number_arg(remain as f64)))?;
        }
        if remain > 0 || &mode[..] == b"write" {
            latch.set(cx, store, &int_arg(released), 41)?;
            return Ok(Reply::Int(released));
        }
    }
    cx.at(45, store.del(lock))?;
    cx.publish(store, 46, 4, 2, 1)?;
    latch.set(cx, store, b"1", 47)?;
    Ok(Reply::Int(1))
}

/// The opening both read-write releases share: a repeat of the request replies what its latch
/// holds, and a lock that is gone publishes `ARGV[1]` with the publish command at `ARGV[command]`
/// (so that no waiter stalls behind a lock that
/// expired) and replies nil; otherwise the release goes on with the lock's mode.
pub(crate) fn replay_or_mode<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
    latch: &Latch<'_>,
    lock: &[u8],
    command: usize,
) -> Result<ControlFlow<Reply, Bytes>, ScriptFailure> {
    if let Some(reply) = latch.replay(cx, store, 1)? {
        return Ok(ControlFlow::Break(reply));
    }
    match cx.at(5, store.hget(lock, b"mode"))? {
        Some(mode) => Ok(ControlFlow::Continue(mode)),
        None => {
            cx.publish(store, 7, command, 2, 1)?;
            Ok(ControlFlow::Break(Reply::Nil))
        }
    }
}

/// The call that releases one read count of `owner` on `keys`, idempotent under `request`;
/// `held` is the owner's read count before this release as the client knows it, `None` to count
/// every delivery as Redisson does.
pub fn call(
    keys: &ReadWriteKeys,
    request: &RequestId,
    owner: &Owner,
    latch_ttl: Millis,
    held: Option<u32>,
) -> ScriptCall {
    let keys = vec![
        keys.lock.lock.clone(),
        keys.channel.clone(),
        keys.timeout_prefix(owner),
        keys.key_prefix.clone(),
        keys.lock.unlock_latch(request),
    ];
    ScriptCall::of(&SCRIPT, keys)
        .message(UNLOCK_MESSAGE)
        .owner(owner)
        .latch_ttl(latch_ttl)
        .publish()
        .held(held)
}

/// Decodes the script's reply: [`ReleaseReply::Released`] when the owner's last read count went,
/// whether or not others still hold the lock.
pub fn decode(reply: &Reply) -> Result<ReleaseReply, DecodeError> {
    decode_as(SCRIPT.name, reply)
}
