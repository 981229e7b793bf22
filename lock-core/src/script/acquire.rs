//! `acquire`: take the lock or re-enter it, once per request id.
//!
//! `KEYS[1]` the lock, `KEYS[2]` the acquire latch of this request; `ARGV[1]` the lease in ms,
//! `ARGV[2]` the owner, `ARGV[3]` the latch's TTL in ms.
//!
//! Redisson's `tryLockInnerAsync` plus a latch: an attempt whose reply was lost can be sent again
//! with the same request id, and if the first attempt was applied the repeat is a no-op (a second
//! `HINCRBY` would count one hold twice). Replies nil when the lock is held by this owner now
//! (first time, reentry or replay), otherwise the holder's `PTTL` (-1 when it has no TTL).

use super::{DecodeError, Script, ScriptCall, ScriptCtx, ScriptFailure, Store, int_arg};
use crate::keys::{LockKeys, Owner, RequestId};
use crate::reply::Reply;
use crate::time::{Lease, Millis};

/// The script.
pub static SCRIPT: Script = Script::new("acquire", BODY, native);

const BODY: &str = "\
if redis.call('exists', KEYS[2]) == 1 then
  return nil
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  redis.call('set', KEYS[2], 1, 'px', ARGV[3])
  return nil
end
return redis.call('pttl', KEYS[1])
";

fn native(cx: &mut ScriptCtx<'_>, store: &mut dyn Store) -> Result<Reply, ScriptFailure> {
    if cx.at(1, store.exists(cx.key(2, 1)?))? {
        return Ok(Reply::Nil);
    }
    let lock = cx.key(1, 4)?;
    if !cx.at(4, store.exists(lock))? || cx.at(4, store.hexists(lock, cx.arg(2, 4)?))? {
        cx.at(5, store.hincrby(lock, cx.arg(2, 5)?, 1))?;
        cx.at(6, store.pexpire(lock, cx.arg(1, 6)?))?;
        cx.at(7, store.set_px(cx.key(2, 7)?, b"1", cx.arg(3, 7)?))?;
        return Ok(Reply::Nil);
    }
    Ok(Reply::Int(cx.at(10, store.pttl(lock))?))
}

/// The call that acquires `keys` for `owner` with `lease`, idempotent under `request`.
pub fn call(
    keys: &LockKeys,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    latch_ttl: Millis,
) -> ScriptCall {
    ScriptCall {
        script: &SCRIPT,
        keys: vec![keys.lock.clone(), keys.acquire_latch(request)],
        args: vec![
            int_arg(lease.millis().as_u64() as i64),
            owner.as_bytes().clone(),
            int_arg(latch_ttl.as_u64().max(1) as i64),
        ],
    }
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
    match reply {
        Reply::Nil => Ok(AcquireReply::Acquired),
        Reply::Int(n) => HolderTtl::from_pttl(*n)
            .map(AcquireReply::Held)
            .ok_or_else(|| DecodeError::new(SCRIPT.name, reply)),
        _ => Err(DecodeError::new(SCRIPT.name, reply)),
    }
}
