//! `acquire_fenced`: acquire, and draw a fencing token from the lock's counter.
//!
//! `KEYS[1]` the lock, `KEYS[2]` the token counter, `KEYS[3]` the acquire latch; `ARGV` as
//! [`acquire`](super::acquire). Every grant, reentry included, increments the counter, and the
//! latch stores the token, so a replayed request gets the same token back. Replies `[-1, token]` on
//! success and `[pttl, -1]` otherwise: success is told by the token (≥ 1), since `pttl` can be -1
//! too. A resource that rejects writes with a token below the highest it has seen turns a lock that
//! expired under a paused holder from a correctness bug into a refused write.

use super::acquire::HolderTtl;
use super::{
    DecodeError, Script, ScriptCall, ScriptCtx, ScriptFailure, Store, int_arg, lua_tonumber_reply,
};
use crate::keys::{LockKeys, Owner, RequestId};
use crate::reply::Reply;
use crate::time::{Lease, Millis};

/// The script.
pub static SCRIPT: Script = Script::new("acquire_fenced", BODY, native);

const BODY: &str = "\
if redis.call('exists', KEYS[3]) == 1 then
  return {-1, tonumber(redis.call('get', KEYS[3]))}
end
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  local token = redis.call('incr', KEYS[2])
  redis.call('set', KEYS[3], token, 'px', ARGV[3])
  return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
";

fn native(cx: &mut ScriptCtx<'_>, store: &mut dyn Store) -> Result<Reply, ScriptFailure> {
    let latch = cx.key(3, 1)?;
    if cx.at(1, store.exists(latch))? {
        let stored = cx.at(2, store.get(latch))?;
        // `tonumber(false)` and `tonumber("x")` are nil, and a Lua array stops at its first nil.
        let mut reply = vec![Reply::Int(-1)];
        if let Some(token) = stored.as_deref().and_then(lua_tonumber_reply) {
            reply.push(Reply::Int(token));
        }
        return Ok(Reply::Array(reply));
    }
    let lock = cx.key(1, 4)?;
    if !cx.at(4, store.exists(lock))? || cx.at(4, store.hexists(lock, cx.arg(2, 4)?))? {
        cx.at(5, store.hincrby(lock, cx.arg(2, 5)?, 1))?;
        cx.at(6, store.pexpire(lock, cx.arg(1, 6)?))?;
        let token = cx.at(7, store.incr(cx.key(2, 7)?))?;
        cx.at(8, store.set_px(latch, &int_arg(token), cx.arg(3, 8)?))?;
        return Ok(Reply::Array(vec![Reply::Int(-1), Reply::Int(token)]));
    }
    let ttl = cx.at(11, store.pttl(lock))?;
    Ok(Reply::Array(vec![Reply::Int(ttl), Reply::Int(-1)]))
}

/// The call that acquires `keys` for `owner` with `lease` and draws a token, idempotent under
/// `request`.
pub fn call(
    keys: &LockKeys,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    latch_ttl: Millis,
) -> ScriptCall {
    ScriptCall {
        script: &SCRIPT,
        keys: vec![
            keys.lock.clone(),
            keys.token.clone(),
            keys.acquire_latch(request),
        ],
        args: vec![
            int_arg(lease.millis().as_u64() as i64),
            owner.as_bytes().clone(),
            int_arg(latch_ttl.as_u64().max(1) as i64),
        ],
    }
}

/// What a fenced acquire attempt learned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FencedReply {
    /// The owner holds the lock, and this is its token (the same one for every attempt of a request).
    Acquired {
        /// The fencing token of this grant.
        token: u64,
    },
    /// Another owner holds it.
    Held(HolderTtl),
}

/// Decodes the script's reply.
pub fn decode(reply: &Reply) -> Result<FencedReply, DecodeError> {
    let err = || DecodeError::new(SCRIPT.name, reply);
    match reply {
        Reply::Array(items) => match items.as_slice() {
            [Reply::Int(-1), Reply::Int(token)] if *token >= 1 => Ok(FencedReply::Acquired {
                token: *token as u64,
            }),
            [Reply::Int(pttl), Reply::Int(-1)] => HolderTtl::from_pttl(*pttl)
                .map(FencedReply::Held)
                .ok_or_else(err),
            _ => Err(err()),
        },
        _ => Err(err()),
    }
}
