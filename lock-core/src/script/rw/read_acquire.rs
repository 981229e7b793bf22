//! `rw_read_acquire`: take a read hold of a read-write lock, or one more, once per request id.
//!
//! `KEYS[1]` the lock, `KEYS[2]` the owner's timeout-key prefix
//! (`<key prefix>:<owner>:rwlock_timeout`), `KEYS[3]` the acquire latch of this request; `ARGV[1]`
//! the lease in ms, `ARGV[2]` the owner (its read field), `ARGV[3]` the same owner as a writer
//! (`<owner>:write`), `ARGV[4]` the latch's TTL in ms, and optionally `ARGV[5]` the owner's read
//! count as the client knows it.
//!
//! Redisson's `RedissonReadLock.tryLockInnerAsync` plus the plain acquire's latch and count. A
//! read hold is granted when the lock is free (its `mode` becomes `read`), when it is in read
//! mode, or when it is in write mode and this owner holds the write (a writer may read: the
//! downgrade, since its read holds outlive its write release). Each count `n` gets a key of its
//! own, `KEYS[2]:n`, with the lease as TTL, and the lock's TTL is raised to the lease if lower,
//! never lowered: other readers' holds may last longer. Replies nil when the owner holds a read
//! hold now, otherwise the lock's `PTTL`. A hash that is not a read-write lock (no `mode`) is
//! someone else's plain lock, and held.
//!
//! With `ARGV[5]`, a copy of an attempt delivered after its latch expired finds the count moved
//! and only confirms the hold. The lease and the latch TTL are tried on the missing latch before
//! the first write.

use crate::keys::{Owner, ReadWriteKeys, RequestId};
use crate::reply::Reply;
use crate::script::acquire::{AcquireReply, counts, decode_as};
use crate::script::{
    DecodeError, Latch, Script, ScriptCall, ScriptCtx, ScriptFailure, Store, lua_concat_number,
};
use crate::time::{Lease, Millis};
use bytes::Bytes;

/// The script.
pub static SCRIPT: Script = Script::new("rw_read_acquire", BODY, twin!(native));

const BODY: &str = "\
if redis.call('exists', KEYS[3]) == 1 then
  return nil
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  if redis.call('exists', KEYS[1]) == 1 then
    return redis.call('pttl', KEYS[1])
  end
elseif mode ~= 'read' and (mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
  return redis.call('pttl', KEYS[1])
end
redis.call('set', KEYS[3], 1, 'px', ARGV[1], 'xx')
redis.call('set', KEYS[3], 1, 'px', ARGV[4], 'xx')
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false or ARGV[5] == nil or count == ARGV[5] then
  if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
  end
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
end
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[1], ARGV[1])
end
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return nil
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let latch = Latch::new(cx, 3, 4, 1)?;
    if latch.exists(cx, store, 1)? {
        return Ok(Reply::Nil);
    }
    let lock = cx.key(1, 4)?;
    let mode = cx.at(4, store.hget(lock, b"mode"))?;
    let held_by_another = match mode.as_deref() {
        None => cx.at(6, store.exists(lock))?,
        Some(b"read") => false,
        Some(b"write") => !cx.at(9, store.hexists(lock, cx.arg(3, 9)?))?,
        Some(_) => true,
    };
    if held_by_another {
        let line = if mode.is_none() { 7 } else { 10 };
        return Ok(Reply::Int(cx.at(line, store.pttl(lock))?));
    }
    latch.try_set(cx, store, 1, 12)?;
    latch.try_set(cx, store, 4, 13)?;
    let owner = cx.arg(2, 14)?;
    let count = cx.at(14, store.hget(lock, owner))?;
    if counts(count.as_deref(), cx.opt_arg(5)) {
        if mode.is_none() {
            cx.at(17, store.hset(lock, b"mode", b"read"))?;
        }
        let n = cx.at(19, store.hincrby(lock, owner, 1))?;
        let key = count_key(cx.key(2, 20)?, n as f64);
        cx.at(20, store.set_px(&key, b"1", cx.arg(1, 20)?))?;
    }
    lengthen_and_latch(cx, store, lock, &latch, 22)
}

/// The close both read-write acquires share, from Lua line `line` on: the lock's TTL grows to the
/// lease `ARGV[1]` when it is shorter (never shrinks, since other holds may need more), and the
/// request's latch is set.
pub(crate) fn lengthen_and_latch<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
    lock: &[u8],
    latch: &Latch<'_>,
    line: u32,
) -> Result<Reply, ScriptFailure> {
    if (cx.at(line, store.pttl(lock))? as f64) < cx.number_arg(1, line)? {
        cx.at(line + 1, store.pexpire(lock, cx.arg(1, line + 1)?))?;
    }
    latch.set(cx, store, b"1", line + 3)?;
    Ok(Reply::Nil)
}

/// `prefix .. ':' .. n`: the timeout key of read count `n`, the count written as Lua writes a
/// number it concatenates.
pub(crate) fn count_key(prefix: &[u8], n: f64) -> Vec<u8> {
    let n = lua_concat_number(n);
    let mut key = Vec::with_capacity(prefix.len() + 1 + n.len());
    key.extend_from_slice(prefix);
    key.push(b':');
    key.extend_from_slice(n.as_bytes());
    key
}

/// The call by which `owner` takes a read hold of `keys` with `lease`, idempotent under
/// `request`; `held` is the owner's read count as the client knows it, `None` to count every
/// delivery as Redisson does.
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
        keys.timeout_prefix(owner),
        keys.lock.acquire_latch(request),
    ];
    ScriptCall::of(&SCRIPT, keys)
        .lease(lease)
        .owner(owner)
        .owner(&owner.writer())
        .latch_ttl(latch_ttl)
        .held(held)
}

/// Decodes the script's reply: held by this owner now, or the lock's `PTTL`.
pub fn decode(reply: &Reply) -> Result<AcquireReply, DecodeError> {
    decode_as(SCRIPT.name, reply)
}

/// The bytes of `count` as a read count's suffix, for tests that name a timeout key.
pub fn timeout_key(keys: &ReadWriteKeys, owner: &Owner, count: u32) -> Bytes {
    Bytes::from(count_key(&keys.timeout_prefix(owner), f64::from(count)))
}
