//! `fair_force_unlock`: delete the fair lock whoever holds it, and wake the queue's head.
//!
//! `KEYS[1]` the lock, `KEYS[2]` its queue, `KEYS[3]` its timeouts, `KEYS[4]` its channel;
//! `ARGV[1]` the unlock message, `ARGV[2]` the client's clock in unix ms, `ARGV[3]` the publish
//! command (`publish` or `spublish`). Redisson's
//! `RedissonFairLock.forceUnlockAsync`: the stale-waiter purge, then the delete, which publishes
//! to the head waiter's own channel. Replies 1 when a lock was deleted, 0 when there was none.

use super::queue::{PURGE_LINES, lock_and_queue, publish_to_waiter, purge_stale, purge_stale_lua};
use crate::keys::FairKeys;
use crate::reply::Reply;
use crate::script::force_unlock::decode_as;
use crate::script::release::UNLOCK_MESSAGE;
use crate::script::{DecodeError, Script, ScriptCall, ScriptCtx, ScriptFailure, Store};

/// The script.
pub static SCRIPT: Script = Script::publishing("fair_force_unlock", BODY, twin!(native), 2);

const BODY: &str = concat!(
    purge_stale_lua!(2),
    "if redis.call('del', KEYS[1]) == 1 then
  local nextOwner = redis.call('lindex', KEYS[2], 0)
  if nextOwner ~= false then
    redis.call(ARGV[3], KEYS[4] .. ':' .. nextOwner, ARGV[1])
  end
  return 1
end
return 0
"
);

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    purge_stale(cx, store, 0, 2)?;
    let at = |line: u32| line + PURGE_LINES;
    if !cx.at(at(1), store.del(cx.key(1, at(1))?))? {
        return Ok(Reply::Int(0));
    }
    if let Some(next) = cx.at(at(2), store.lindex(cx.key(2, at(2))?, 0))? {
        publish_to_waiter(cx, store, at(4), &next, 1, 3)?;
    }
    Ok(Reply::Int(1))
}

/// The call that deletes the fair lock `keys`, by the client's clock `now_ms`.
pub fn call(keys: &FairKeys, now_ms: i64) -> ScriptCall {
    let keys = [lock_and_queue(keys), vec![keys.lock.channel.clone()]].concat();
    ScriptCall::of(&SCRIPT, keys)
        .message(UNLOCK_MESSAGE)
        .int(now_ms)
        .publish()
}

/// Decodes the reply: whether a lock was deleted.
pub fn decode(reply: &Reply) -> Result<bool, DecodeError> {
    decode_as(SCRIPT.name, reply)
}
