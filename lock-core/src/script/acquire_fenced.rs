//! `acquire_fenced`: acquire, and draw a fencing token from the lock's counter.
//!
//! `KEYS[1]` the lock, `KEYS[2]` the token counter, `KEYS[3]` the acquire latch; `ARGV` as
//! [`acquire`](super::acquire), whose rules for a reentry's count (`ARGV[4]`) and for trying the
//! arguments before the first write hold here too. Every grant, reentry included, increments the
//! counter, and the latch stores the token, so a replayed request gets the same token back. The
//! counter is the first write: a hash field that is not a count fails the `HINCRBY` after it, and
//! leaves only the counter ahead, which a fencing token may always be. Replies `[-1, token]` on
//! success and `[pttl, -1]` otherwise: success is told by the token (≥ 1), since `pttl` can be -1
//! too. A resource that rejects writes with a token below the highest it has seen turns a lock that
//! expired under a paused holder from a correctness bug into a refused write.
//!
//! **Tokens survive data loss.** A restart without persistence forgets the counter, and a failover
//! to a lagging replica turns it back, so `INCR` alone would hand out again a token a resource has
//! seen. The token is therefore never below the server's clock in microseconds: when the
//! incremented counter is below `TIME`, the script raises it to that floor with `INCRBY` (Redis 7
//! replicates a script's effects, not the script, so a script may read the time; the native twin
//! reads the command's frozen time). The key and its meaning stay Redisson's: a Java
//! `RFencedLock` on the same lock `INCR`s the same counter and gets a token above every one issued
//! before.
//!
//! The bound that makes this safe: the last token issued before a loss must be below the clock of
//! the server that answers after it. A token is above the floor only by the grants of a burst that
//! outran the clock (more than one grant per microsecond since the counter last met the floor),
//! and the clock gains one per microsecond, so the rule holds while the time the loss takes (the
//! restart, the promotion) exceeds (a) the burst's excess, in microseconds, plus (b) how far the
//! clock of the server after the loss is behind the clock at that last grant (a clock stepped back
//! by NTP, a promoted replica whose clock lags). A step back larger than the loss takes breaks it
//! by that step. Nothing covers a Java client that draws first from a forgotten counter: its
//! `INCR` starts at 1.

use super::acquire::{HolderTtl, counts};
use super::{
    CommandError, DecodeError, Latch, Script, ScriptCall, ScriptCtx, ScriptFailure, Store,
    float_to_reply, lua_number_arg, lua_tonumber_reply, parse_i64,
};
use crate::keys::{LockKeys, Owner, RequestId};
use crate::reply::Reply;
use crate::time::{Lease, Millis};

/// The script.
pub static SCRIPT: Script = Script::new("acquire_fenced", BODY, twin!(native));

const BODY: &str = "\
if redis.call('exists', KEYS[3]) == 1 then
  return {-1, tonumber(redis.call('get', KEYS[3]))}
end
local count = redis.call('hget', KEYS[1], ARGV[2])
if count == false and redis.call('exists', KEYS[1]) == 1 then
  return {redis.call('pttl', KEYS[1]), -1}
end
redis.call('pexpire', KEYS[3], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[3], 'xx')
local token = redis.call('incr', KEYS[2])
local now = redis.call('time')
local floor = now[1] * 1000000 + now[2]
if token < floor then
  token = redis.call('incrby', KEYS[2], floor - token)
end
if count == false or ARGV[4] == nil or count == ARGV[4] then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
end
redis.call('pexpire', KEYS[1], ARGV[1])
redis.call('set', KEYS[3], token, 'px', ARGV[3])
return {-1, token}
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let latch = Latch::new(cx, 3, 3, 1)?;
    if latch.exists(cx, store, 1)? {
        let stored = cx.at(2, store.get(latch.key()))?;
        // `tonumber(false)` and `tonumber("x")` are nil, and a Lua array stops at its first nil.
        let mut reply = vec![Reply::Int(-1)];
        if let Some(token) = stored.as_deref().and_then(lua_tonumber_reply) {
            reply.push(Reply::Int(token));
        }
        return Ok(Reply::Array(reply));
    }
    let lock = cx.key(1, 4)?;
    let count = cx.at(4, store.hget(lock, cx.arg(2, 4)?))?;
    if count.is_none() && cx.at(5, store.exists(lock))? {
        let ttl = cx.at(6, store.pttl(lock))?;
        return Ok(Reply::Array(vec![Reply::Int(ttl), Reply::Int(-1)]));
    }
    latch.try_pexpire(cx, store, 1, 8)?;
    latch.try_set(cx, store, 3, 9)?;
    let counter = cx.key(2, 10)?;
    // The token and the floor are Lua numbers (doubles), and the difference reaches `INCRBY` as
    // `%.17g` text: a counter set far below the floor gives a difference `INCRBY` refuses, as on
    // Redis, and a counter beyond 2^53 is rounded as Lua rounds it.
    let mut token = cx.at(10, store.incr(counter))? as f64;
    let (secs, micros) = store.time();
    let floor = secs as f64 * 1_000_000.0 + micros as f64;
    if token < floor {
        let delta = parse_i64(&lua_number_arg(floor - token))
            .ok_or_else(|| cx.fail(14, CommandError::not_an_integer()))?;
        token = cx.at(14, store.incrby(counter, delta))? as f64;
    }
    if counts(count.as_deref(), cx.opt_arg(4)) {
        cx.at(17, store.hincrby(lock, cx.arg(2, 17)?, 1))?;
    }
    cx.at(19, store.pexpire(lock, cx.arg(1, 19)?))?;
    latch.set(cx, store, &lua_number_arg(token), 20)?;
    Ok(Reply::Array(vec![
        Reply::Int(-1),
        Reply::Int(float_to_reply(token)),
    ]))
}

/// The call that acquires `keys` for `owner` with `lease` and draws a token, idempotent under
/// `request`, counting every reentry (Redisson's rule). The lock client sends [`call_from`].
pub fn call(
    keys: &LockKeys,
    request: &RequestId,
    lease: Lease,
    owner: &Owner,
    latch_ttl: Millis,
) -> ScriptCall {
    let keys = vec![
        keys.lock.clone(),
        keys.token.clone(),
        keys.acquire_latch(request),
    ];
    ScriptCall::of(&SCRIPT, keys)
        .lease(lease)
        .owner(owner)
        .latch_ttl(latch_ttl)
}

/// [`call`] for an owner that holds the lock `held` times as far as the client knows (see
/// [`acquire::call_from`](super::acquire::call_from)).
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
