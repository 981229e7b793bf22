//! `fair_release`: drop one hold of the fair lock, and with the last one wake the queue's head.
//!
//! `KEYS[1]` the lock, `KEYS[2]` its queue, `KEYS[3]` its timeouts, `KEYS[4]` its channel (each
//! waiter listens on `<channel>:<owner>`), `KEYS[5]` the unlock latch of this request; `ARGV[1]`
//! the unlock message (`0`), `ARGV[2]` the lease to re-apply on a reentrant release, `ARGV[3]` the
//! owner, `ARGV[4]` the client's clock in unix ms, `ARGV[5]` the latch's TTL in ms, `ARGV[6]` the
//! publish command (`publish` or `spublish`), and optionally `ARGV[7]` the hold count the client
//! believes the owner has before this release.
//!
//! Redisson's `RedissonFairLock.unlockInnerAsync`: the latch, the stale-waiter purge, then a plain
//! release whose last hold publishes only to the head waiter's own channel, so exactly the next in
//! line wakes. As in Redisson, a release that finds the lock gone (it expired, or was
//! force-unlocked) still wakes the head and replies 1: the queue must not stall behind a lock
//! nobody holds. Replies nil when another owner holds it and this one has no hold, 0 when holds
//! remain, 1 otherwise; a repeat of the same request replies what the first did. `ARGV[7]` has
//! the plain release's rule: a copy whose count is stale releases nothing and replies 0.

use super::queue::{PURGE_LINES, lock_and_queue, publish_to_waiter, purge_stale, purge_stale_lua};
use crate::keys::{FairKeys, Owner, RequestId};
use crate::reply::Reply;
use crate::script::release::{self, ReleaseReply, UNLOCK_MESSAGE};
use crate::script::{DecodeError, Latch, Script, ScriptCall, ScriptCtx, ScriptFailure, Store};
use crate::time::{Lease, Millis};

/// The script.
pub static SCRIPT: Script = Script::publishing("fair_release", BODY, twin!(native), 5);

const BODY: &str = concat!(
    "local val = redis.call('get', KEYS[5])
if val ~= false then
  return tonumber(val)
end
",
    purge_stale_lua!(4),
    "if redis.call('exists', KEYS[1]) == 0 then
  local nextOwner = redis.call('lindex', KEYS[2], 0)
  if nextOwner ~= false then
    redis.call(ARGV[6], KEYS[4] .. ':' .. nextOwner, ARGV[1])
  end
  redis.call('set', KEYS[5], 1, 'px', ARGV[5])
  return 1
end
local count = redis.call('hget', KEYS[1], ARGV[3])
if count == false then
  return nil
end
if ARGV[7] ~= nil and count ~= ARGV[7] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[5], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[5])
local nextOwner = redis.call('lindex', KEYS[2], 0)
if nextOwner ~= false then
  redis.call(ARGV[6], KEYS[4] .. ':' .. nextOwner, ARGV[1])
end
return 1
"
);

/// The lines before the purge.
const LATCH_LINES: u32 = 4;

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let latch = Latch::new(cx, 5, 5, 1)?;
    if let Some(reply) = latch.replay(cx, store, 1)? {
        return Ok(reply);
    }
    purge_stale(cx, store, LATCH_LINES, 4)?;
    let at = |line: u32| line + LATCH_LINES + PURGE_LINES;
    let lock = cx.key(1, at(1))?;
    let queue = cx.key(2, at(2))?;
    if !cx.at(at(1), store.exists(lock))? {
        if let Some(next) = cx.at(at(2), store.lindex(queue, 0))? {
            publish_to_waiter(cx, store, at(4), &next, 1, 6)?;
        }
        latch.set(cx, store, b"1", at(6))?;
        return Ok(Reply::Int(1));
    }
    let owner = cx.arg(3, at(9))?;
    let Some(count) = cx.at(at(9), store.hget(lock, owner))? else {
        return Ok(Reply::Nil);
    };
    if cx.opt_arg(7).is_some_and(|expected| expected != &count[..]) {
        cx.at(at(14), store.pexpire(lock, cx.arg(2, at(14))?))?;
        return Ok(Reply::Int(0));
    }
    if cx.at(at(17), store.hincrby(lock, owner, -1))? > 0 {
        cx.at(at(18), store.pexpire(lock, cx.arg(2, at(18))?))?;
        latch.set(cx, store, b"0", at(19))?;
        return Ok(Reply::Int(0));
    }
    cx.at(at(22), store.del(lock))?;
    latch.set(cx, store, b"1", at(23))?;
    if let Some(next) = cx.at(at(24), store.lindex(queue, 0))? {
        publish_to_waiter(cx, store, at(26), &next, 1, 6)?;
    }
    Ok(Reply::Int(1))
}

/// The call that releases one hold of `owner` on the fair lock `keys`, idempotent under
/// `request`, by the client's clock `now_ms`; a reentrant release re-applies `lease`. `held` is
/// the owner's count before this release as the client knows it, `None` to count every delivery
/// as Redisson does.
pub fn call(
    keys: &FairKeys,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    now_ms: i64,
    latch_ttl: Millis,
    held: Option<u32>,
) -> ScriptCall {
    let keys = [
        lock_and_queue(keys),
        vec![keys.lock.channel.clone(), keys.lock.unlock_latch(request)],
    ]
    .concat();
    ScriptCall::of(&SCRIPT, keys)
        .message(UNLOCK_MESSAGE)
        .lease(lease)
        .owner(owner)
        .int(now_ms)
        .latch_ttl(latch_ttl)
        .publish()
        .held(held)
}

/// Decodes the script's reply: a plain release's outcomes, [`ReleaseReply::Released`] also when
/// the lock was already gone.
pub fn decode(reply: &Reply) -> Result<ReleaseReply, DecodeError> {
    release::decode_as(SCRIPT.name, reply)
}
