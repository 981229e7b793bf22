//! `release`: drop one hold, and the lock with the last one, once per request id.
//!
//! `KEYS[1]` the lock, `KEYS[2]` its unlock channel, `KEYS[3]` the unlock latch of this request;
//! `ARGV[1]` the unlock message (`0`), `ARGV[2]` the lease to re-apply on a reentrant release,
//! `ARGV[3]` the owner, `ARGV[4]` the latch's TTL in ms, `ARGV[5]` the publish command (`publish`,
//! or `spublish` on a cluster: Redisson hands it to its scripts the same way), and optionally
//! `ARGV[6]` the hold count the client believes the owner has before this release.
//!
//! Redisson's `unlockInnerAsync` (its latch fixed issue #4871: an unlock whose reply was lost, sent
//! again, used to fail with "not locked by current thread"). Replies nil when the owner holds no
//! hold, 0 when holds remain (the lease is re-applied in full), 1 when the lock was deleted and
//! waiters were told; a repeat of the same request replies what the first attempt did.
//!
//! The latch lives `ARGV[4]`; a copy of the request delivered later still finds the lock. With
//! `ARGV[5]`, such a copy cannot release a count the owner still has: the release applies only
//! when the owner's count is the one the client sent (a copy of a release that was applied finds
//! it one lower); otherwise the owner still holds the lock, and the script only re-applies the
//! lease and replies 0, so that the reply's promise (held, lease re-applied) stays true. Without `ARGV[5]` every release
//! counts, as Redisson's does. As in [`acquire`](super::acquire), the lease and the latch TTL are
//! tried on the missing latch before the first write, so a refused argument leaves no trace.

use super::{
    DecodeError, Latch, Script, ScriptCall, ScriptCtx, ScriptFailure, Store, lua_tonumber_reply,
};
use crate::keys::{LockKeys, Owner, RequestId};
use crate::reply::Reply;
use crate::time::{Lease, Millis};

/// The script.
pub static SCRIPT: Script = Script::publishing("release", BODY, twin!(native), 4);

/// The message an unlock publishes (Redisson's `UNLOCK_MESSAGE`).
pub const UNLOCK_MESSAGE: &[u8] = b"0";

const BODY: &str = "\
if redis.call('exists', KEYS[3]) == 1 then
  return tonumber(redis.call('get', KEYS[3]))
end
local count = redis.call('hget', KEYS[1], ARGV[3])
if count == false then
  return nil
end
redis.call('pexpire', KEYS[3], ARGV[2])
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
redis.call('del', KEYS[1])
redis.call(ARGV[5], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let latch = Latch::new(cx, 3, 4, 1)?;
    if latch.exists(cx, store, 1)? {
        let stored = cx.at(2, store.get(latch.key()))?;
        return Ok(match stored.as_deref().and_then(lua_tonumber_reply) {
            Some(n) => Reply::Int(n),
            None => Reply::Nil,
        });
    }
    let lock = cx.key(1, 4)?;
    let Some(count) = cx.at(4, store.hget(lock, cx.arg(3, 4)?))? else {
        return Ok(Reply::Nil);
    };
    latch.try_pexpire(cx, store, 2, 8)?;
    latch.try_set(cx, store, 4, 9)?;
    if cx.opt_arg(6).is_some_and(|expected| expected != &count[..]) {
        cx.at(11, store.pexpire(lock, cx.arg(2, 11)?))?;
        return Ok(Reply::Int(0));
    }
    if cx.at(14, store.hincrby(lock, cx.arg(3, 14)?, -1))? > 0 {
        cx.at(15, store.pexpire(lock, cx.arg(2, 15)?))?;
        latch.set(cx, store, b"0", 16)?;
        return Ok(Reply::Int(0));
    }
    cx.at(19, store.del(lock))?;
    cx.publish(store, 20, 5, 2, 1)?;
    latch.set(cx, store, b"1", 21)?;
    Ok(Reply::Int(1))
}

/// The call that releases one hold of `owner` on `keys`, idempotent under `request`; a reentrant
/// release re-applies `lease`. Every delivery counts (Redisson's rule); the lock client sends
/// [`call_from`].
pub fn call(
    keys: &LockKeys,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    latch_ttl: Millis,
) -> ScriptCall {
    let keys = vec![
        keys.lock.clone(),
        keys.channel.clone(),
        keys.unlock_latch(request),
    ];
    ScriptCall::of(&SCRIPT, keys)
        .message(UNLOCK_MESSAGE)
        .lease(lease)
        .owner(owner)
        .latch_ttl(latch_ttl)
        .publish()
}

/// [`call`] for an owner that holds the lock `held` times (this count included) as far as the
/// client knows: a copy of the request that arrives after its latch expired finds the count moved
/// and releases nothing.
pub fn call_from(
    keys: &LockKeys,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    latch_ttl: Millis,
    held: u32,
) -> ScriptCall {
    call(keys, request, lease, owner, latch_ttl).held(Some(held))
}

/// What a release learned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseReply {
    /// The owner held no hold: the lock expired, was force-unlocked, or was never taken.
    NotHeld,
    /// One hold was released; others remain, and the lease was re-applied. Also the reply when
    /// the owner's count was not the one the release carried: nothing was released, and the
    /// lease was re-applied.
    StillHeld,
    /// The last hold was released: the key is gone and waiters were told.
    Released,
}

/// Decodes the script's reply.
pub fn decode(reply: &Reply) -> Result<ReleaseReply, DecodeError> {
    decode_as(SCRIPT.name, reply)
}

/// A release's reply (nil, 0 or 1) decoded for the script `name` (the fair lock's and the
/// read-write lock's releases answer as this one does).
pub(crate) fn decode_as(name: &'static str, reply: &Reply) -> Result<ReleaseReply, DecodeError> {
    match reply {
        Reply::Nil => Ok(ReleaseReply::NotHeld),
        Reply::Int(0) => Ok(ReleaseReply::StillHeld),
        Reply::Int(1) => Ok(ReleaseReply::Released),
        _ => Err(DecodeError::new(name, reply)),
    }
}
