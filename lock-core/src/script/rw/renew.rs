//! `rw_renew`: extend many read holds in one round trip, the watchdog's call for read holds.
//!
//! `KEYS[2i-1]` a read-write lock and `KEYS[2i]` its key prefix (`{name}`); `ARGV[1]` the lease
//! in ms, `ARGV[i+1]` the reader whose hold of lock `i` to renew. For each reader that still has a
//! read count and every one of its timeout keys (`<key prefix>:<owner>:rwlock_timeout:<n>`, `n`
//! from its count down to 1), re-applies the lease to each of them and to the lock, and answers
//! 1; for one that has no count (the lock expired, or was force-unlocked) or has lost a timeout key
//! (it expired while the reader was silent, a GC pause, and other readers kept the lock alive),
//! answers 0 and touches nothing. A count whose timeout key is gone is no longer held: the next
//! read release, whoever sends it, sets the lock's TTL from the timeout keys that remain and
//! deletes the lock when none does, which lets a writer in; renewing the field would promise the
//! reader a hold a writer may already have. Redisson's `ReadLockTask` renews the same keys, all owners of
//! one client per lock at once; this script names one owner per lock, as the plain
//! `renew_batch` does, so that the watchdog learns of each hold. Every lock is looked at before
//! any is renewed, so a lock key of the wrong type fails the call before it writes; after that
//! only the lease can fail, at the first renewal, before anything was written.

use super::read_acquire::count_key;
use crate::keys::Owner;
use crate::reply::Reply;
use crate::script::{DecodeError, Script, ScriptCall, ScriptCtx, ScriptFailure, Store};
use crate::script::{lua_tonumber, renew_batch};
use crate::time::Lease;
use bytes::Bytes;

/// The script.
pub static SCRIPT: Script = Script::new("rw_renew", BODY, twin!(native));

const BODY: &str = "\
local result = {}
for i = 1, #KEYS, 2 do
  result[(i + 1) / 2] = redis.call('hget', KEYS[i], ARGV[(i + 1) / 2 + 1])
end
for i = 1, #KEYS, 2 do
  local count = result[(i + 1) / 2]
  result[(i + 1) / 2] = 0
  if count ~= false then
    local prefix = KEYS[i + 1] .. ':' .. ARGV[(i + 1) / 2 + 1] .. ':rwlock_timeout:'
    local alive = true
    for c = tonumber(count) or 0, 1, -1 do
      alive = alive and redis.call('exists', prefix .. c) == 1
    end
    if alive then
      for c = tonumber(count) or 0, 1, -1 do
        redis.call('pexpire', prefix .. c, ARGV[1])
      end
      redis.call('pexpire', KEYS[i], ARGV[1])
      result[(i + 1) / 2] = 1
    end
  end
end
return result
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let locks = cx.key_count().div_ceil(2);
    let mut counts = Vec::with_capacity(locks);
    for at in 1..=locks {
        let lock = cx.key(2 * at - 1, 3)?;
        counts.push(cx.at(3, store.hget(lock, cx.arg(at + 1, 3)?))?);
    }
    let mut result = Vec::with_capacity(locks);
    for (at, count) in (1..=locks).zip(counts) {
        let Some(count) = count else {
            result.push(Reply::Int(0));
            continue;
        };
        let mut timeouts = cx.key(2 * at, 9)?.to_vec();
        timeouts.push(b':');
        timeouts.extend_from_slice(cx.arg(at + 1, 9)?);
        timeouts.extend_from_slice(b":rwlock_timeout");
        let count = lua_tonumber(&count).unwrap_or(0.0);
        let counts =
            std::iter::successors(Some(count), |c| Some(c - 1.0)).take_while(|c| *c >= 1.0);
        let mut alive = true;
        for c in counts.clone() {
            alive = alive && cx.at(12, store.exists(&count_key(&timeouts, c)))?;
        }
        if !alive {
            result.push(Reply::Int(0));
            continue;
        }
        let lease = cx.arg(1, 16)?;
        for c in counts {
            cx.at(16, store.pexpire(&count_key(&timeouts, c), lease))?;
        }
        cx.at(18, store.pexpire(cx.key(2 * at - 1, 18)?, cx.arg(1, 18)?))?;
        result.push(Reply::Int(1));
    }
    Ok(Reply::Array(result))
}

/// The call that renews each read hold `(lock key, key prefix, owner)` with `lease`.
pub fn call<'a>(
    lease: Lease,
    holds: impl IntoIterator<Item = (&'a Bytes, &'a Bytes, &'a Owner)>,
) -> ScriptCall {
    let mut call = ScriptCall::of(&SCRIPT, Vec::new()).lease(lease);
    for (lock, key_prefix, owner) in holds {
        call.keys.push(lock.clone());
        call.keys.push(key_prefix.clone());
        call = call.owner(owner);
    }
    call
}

/// Decodes the reply: for each hold in call order, whether it is still held and was renewed.
pub fn decode(reply: &Reply, expected: usize) -> Result<Vec<bool>, DecodeError> {
    renew_batch::decode(reply, expected).map_err(|e| DecodeError {
        script: SCRIPT.name,
        reply: e.reply,
    })
}
