//! What the fair lock's scripts share: the queue's stale-waiter purge, in Lua and native.
//!
//! Redisson's fair lock keeps its waiters in a list (`redisson_lock_queue:{name}`, arrival order)
//! and a sorted set (`redisson_lock_timeout:{name}`, each waiter's deadline to come back, unix
//! ms by the client's clock). Every script but the give-up first drops the waiters at the head of
//! the queue whose deadline has passed: a waiter that stopped asking (it crashed, or its process
//! paused) must not hold up the ones behind it for longer than its thread-wait time. Only the head
//! is looked at, as in Redisson: a stale waiter behind a live one waits its turn to be dropped.

use crate::keys::FairKeys;
use crate::script::{ScriptCtx, ScriptFailure, Store, lua_tonumber};
use bytes::Bytes;

/// `KEYS[1..3]` of the fair scripts that see the lock: the lock, its queue, its timeouts.
pub(crate) fn lock_and_queue(keys: &FairKeys) -> Vec<Bytes> {
    vec![
        keys.lock.lock.clone(),
        keys.queue.clone(),
        keys.timeouts.clone(),
    ]
}

/// The purge loop of the Lua bodies, its `now` in `ARGV[$now]`; `KEYS[2]` is the queue and
/// `KEYS[3]` the timeouts. Thirteen lines, so the bodies' later lines number from 14.
macro_rules! purge_stale_lua {
    ($now:literal) => {
        concat!(
            "while true do
  local first = redis.call('lindex', KEYS[2], 0)
  if first == false then
    break
  end
  local timeout = redis.call('zscore', KEYS[3], first)
  if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[",
            $now,
            "]) then
    redis.call('zrem', KEYS[3], first)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
"
        )
    };
}
pub(crate) use purge_stale_lua;

/// The Lua lines the purge takes.
pub(crate) const PURGE_LINES: u32 = 13;

/// The purge's native twin: the loop that starts on the line after `before`, its `now` in
/// `ARGV[now]`.
pub(crate) fn purge_stale<S: Store + ?Sized>(
    cx: &ScriptCtx<'_>,
    store: &mut S,
    before: u32,
    now: usize,
) -> Result<(), ScriptFailure> {
    let queue = cx.key(2, before + 2)?;
    loop {
        let Some(first) = cx.at(before + 2, store.lindex(queue, 0))? else {
            return Ok(());
        };
        let timeouts = cx.key(3, before + 6)?;
        let Some(deadline) = cx.at(before + 6, store.zscore(timeouts, &first))? else {
            return Ok(());
        };
        let Some(now) = cx.opt_arg(now).and_then(lua_tonumber) else {
            return Err(cx.lua_error(before + 7, "attempt to compare number with nil"));
        };
        if deadline > now {
            return Ok(());
        }
        cx.at(before + 8, store.zrem(timeouts, &first))?;
        cx.at(before + 9, store.lpop(cx.key(2, before + 9)?))?;
    }
}

/// `redis.call(ARGV[command], KEYS[4] .. ':' .. owner, ARGV[message])`: the unlock message to one
/// waiter's own channel, `<lock's channel>:<owner>`, with the publish command the script was
/// handed.
pub(crate) fn publish_to_waiter<S: Store + ?Sized>(
    cx: &ScriptCtx<'_>,
    store: &mut S,
    line: u32,
    owner: &[u8],
    message: usize,
    command: usize,
) -> Result<(), ScriptFailure> {
    let base = cx.key(4, line)?;
    let mut channel = Vec::with_capacity(base.len() + 1 + owner.len());
    channel.extend_from_slice(base);
    channel.push(b':');
    channel.extend_from_slice(owner);
    let command = cx.arg(command, line)?;
    cx.at(
        line,
        crate::script::publish_with(store, command, &channel, cx.arg(message, line)?),
    )?;
    Ok(())
}
