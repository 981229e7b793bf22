//! `acquire`: take the lock or re-enter it, once per request id.
//!
//! `KEYS[1]` the lock, `KEYS[2]` the acquire latch of this request; `ARGV[1]` the lease in ms,
//! `ARGV[2]` the owner, `ARGV[3]` the latch's TTL in ms, and optionally `ARGV[4]` the hold count
//! the client believes the owner has (`0` for a first acquire).
//!
//! Redisson's `tryLockInnerAsync` plus a latch: an attempt whose reply was lost can be sent again
//! with the same request id, and if the first attempt was applied the repeat is a no-op (a second
//! `HINCRBY` would count one hold twice). Replies nil when the lock is held by this owner now
//! (first time, reentry or replay), otherwise the holder's `PTTL` (-1 when it has no TTL).
//!
//! The latch lives `ARGV[3]`; a copy of the request delivered later still finds the lock. With
//! `ARGV[4]`, such a copy cannot count twice: a reentry adds its count only when the owner's count
//! is still the one the client sent (a copy of an attempt that was applied finds it one higher);
//! otherwise it confirms the hold, re-applying the lease, without counting. Without `ARGV[4]` the
//! script counts every reentry, as Redisson's does.
//!
//! Every step that can fail on its arguments comes before the first write: the lease and the
//! latch TTL are tried first, by `PEXPIRE` and `SET … PX … XX` on the latch, which the script has
//! just found missing, so they write nothing. A refused lease or TTL leaves no key behind.

use super::{DecodeError, Latch, Script, ScriptCall, ScriptCtx, ScriptFailure, Store};
use crate::keys::{LockKeys, Owner, RequestId};
use crate::reply::Reply;
use crate::time::{Lease, Millis};

/// The script.
pub static SCRIPT: Script = Script::new("acquire", BODY, twin!(native));

const BODY: &str = "\
if redis.call('exists', KEYS[2]) == 1 then
  return nil
end
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false and redis.call('exists', KEYS[1]) == 1 then
  return redis.call('pttl', KEYS[1])
end
redis.call('pexpire', KEYS[2], ARGV[1])
redis.call('set', KEYS[2], 1, 'px', ARGV[3], 'xx')
if count == false or ARGV[4] == nil or count == ARGV[4] then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
end
redis.call('pexpire', KEYS[1], ARGV[1])
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
    let count = cx.at(4, store.hget(lock, cx.arg(2, 4)?))?;
    if count.is_none() && cx.at(5, store.exists(lock))? {
        return Ok(Reply::Int(cx.at(6, store.pttl(lock))?));
    }
    latch.try_pexpire(cx, store, 1, 8)?;
    latch.try_set(cx, store, 3, 9)?;
    if counts(count.as_deref(), cx.opt_arg(4)) {
        cx.at(11, store.hincrby(lock, cx.arg(2, 11)?, 1))?;
    }
    cx.at(13, store.pexpire(lock, cx.arg(1, 13)?))?;
    latch.set(cx, store, b"1", 14)?;
    Ok(Reply::Nil)
}

/// Whether an acquire adds a count: a first grant always does, a reentry when the owner's count
/// is the one the client sent (or when it sent none).
pub(crate) fn counts(count: Option<&[u8]>, expected: Option<&[u8]>) -> bool {
    match (count, expected) {
        (None, _) | (_, None) => true,
        (Some(count), Some(expected)) => count == expected,
    }
}

/// The call that acquires `keys` for `owner` with `lease`, idempotent under `request`, counting
/// every reentry (Redisson's rule). The lock client sends [`call_from`] instead.
pub fn call(
    keys: &LockKeys,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    latch_ttl: Millis,
) -> ScriptCall {
    ScriptCall::of(
        &SCRIPT,
        vec![keys.lock.clone(), keys.acquire_latch(request)],
    )
    .lease(lease)
    .owner(owner)
    .latch_ttl(latch_ttl)
}

/// [`call`] for an owner that holds the lock `held` times as far as the client knows: a copy of
/// the request that arrives after its latch expired finds the count moved and does not count again.
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

/// What an acquire attempt learned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcquireReply {
    /// The owner holds the lock now (taken, re-entered, or this request had already taken it).
    Acquired,
    /// Another owner holds it.
    Held(HolderTtl),
}

/// How long the current holder's lease has left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HolderTtl {
    /// The key expires in this many milliseconds (0 in its deadline millisecond).
    Remaining(Millis),
    /// The key has no TTL (someone persisted it): it will not expire by itself.
    NoTtl,
}

impl HolderTtl {
    pub(crate) fn from_pttl(pttl: i64) -> Option<HolderTtl> {
        match pttl {
            -1 => Some(HolderTtl::NoTtl),
            n if n >= 0 => Some(HolderTtl::Remaining(Millis(n as u64))),
            // -2: the key vanished between EXISTS and PTTL, which a script cannot see.
            _ => None,
        }
    }
}

/// Decodes the script's reply.
pub fn decode(reply: &Reply) -> Result<AcquireReply, DecodeError> {
    decode_as(SCRIPT.name, reply)
}

/// An acquire's reply, nil or the holder's `PTTL`, decoded for the script `name` (the read-write
/// lock's acquires answer as this one does).
pub(crate) fn decode_as(name: &'static str, reply: &Reply) -> Result<AcquireReply, DecodeError> {
    match reply {
        Reply::Nil => Ok(AcquireReply::Acquired),
        Reply::Int(n) => HolderTtl::from_pttl(*n)
            .map(AcquireReply::Held)
            .ok_or_else(|| DecodeError::new(name, reply)),
        _ => Err(DecodeError::new(name, reply)),
    }
}
