//! `fair_give_up`: take a waiter that stops waiting out of the fair lock's queue.
//!
//! `KEYS[1]` the queue, `KEYS[2]` the timeouts; `ARGV[1]` the owner, `ARGV[2]` its thread-wait
//! time in ms. Redisson's `RedissonFairLock.acquireFailedAsync`: every waiter behind the owner
//! moves its deadline earlier by the owner's thread-wait time (it no longer waits for the owner's
//! turn), then the owner leaves the list and the set. Replies nil; an owner not in the queue
//! changes nothing.

use crate::keys::{FairKeys, Owner};
use crate::reply::Reply;
use crate::script::{Script, ScriptCall, ScriptCtx, ScriptFailure, Store, lua_number_arg};
use crate::time::Millis;

/// The script.
pub static SCRIPT: Script = Script::new("fair_give_up", BODY, twin!(native));

const BODY: &str = "\
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
  i = i + 1
end
i = i + 1
while i <= #queue do
  redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
  i = i + 1
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return nil
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let queue_key = cx.key(1, 1)?;
    let queue = cx.at(1, store.lrange_all(queue_key))?;
    let owner = cx.opt_arg(1);
    let behind = queue
        .iter()
        .position(|waiter| Some(&waiter[..]) == owner)
        .map_or(queue.len(), |i| i + 1);
    if behind < queue.len() {
        let timeouts = cx.key(2, 8)?;
        let less = lua_number_arg(-cx.number_arg(2, 8)?);
        for waiter in &queue[behind..] {
            cx.at(8, store.zincrby(timeouts, &less, waiter))?;
        }
    }
    let owner = cx.arg(1, 11)?;
    cx.at(11, store.zrem(cx.key(2, 11)?, owner))?;
    cx.at(12, store.lrem_all(queue_key, owner))?;
    Ok(Reply::Nil)
}

/// The call that takes `owner`, which waited with `thread_wait`, out of the fair lock `keys`'s
/// queue.
pub fn call(keys: &FairKeys, owner: &Owner, thread_wait: Millis) -> ScriptCall {
    ScriptCall::of(&SCRIPT, vec![keys.queue.clone(), keys.timeouts.clone()])
        .owner(owner)
        .int(thread_wait.as_u64() as i64)
}
