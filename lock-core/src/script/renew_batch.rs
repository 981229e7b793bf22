//! `renew_batch`: extend many holds in one round trip, the watchdog's one call per batch.
//!
//! `KEYS[1..n]` the locks; `ARGV[1]` the lease in ms, `ARGV[2..n+1]` the owner of each lock. For
//! each lock still held by its owner, re-applies the lease and answers 1; for one that is not (it
//! expired, or was force-unlocked and maybe taken by another), answers 0 and leaves it untouched.
//! Redisson 3.44's `LockTask` batches renewals the same way. Every lock is looked at before any is
//! renewed, so a lock key of the wrong type fails the call before it writes; after that only the
//! lease can fail, at the first renewal, before anything was written.

use super::{DecodeError, Script, ScriptCall, ScriptCtx, ScriptFailure, Store};
use crate::keys::Owner;
use crate::reply::Reply;
use crate::time::Lease;
use bytes::Bytes;

/// The script.
pub static SCRIPT: Script = Script::new("renew_batch", BODY, twin!(native));

const BODY: &str = "\
local result = {}
for i = 1, #KEYS do
  result[i] = redis.call('hexists', KEYS[i], ARGV[i + 1])
end
for i = 1, #KEYS do
  if result[i] == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
  end
end
return result
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let mut result = Vec::with_capacity(cx.key_count());
    for i in 1..=cx.key_count() {
        let held = cx.at(3, store.hexists(cx.key(i, 3)?, cx.arg(i + 1, 3)?))?;
        result.push(Reply::Int(i64::from(held)));
    }
    for (i, held) in result.iter().enumerate() {
        if *held == Reply::Int(1) {
            cx.at(7, store.pexpire(cx.key(i + 1, 7)?, cx.arg(1, 7)?))?;
        }
    }
    Ok(Reply::Array(result))
}

/// The call that renews each `(lock key, owner)` with `lease`.
pub fn call<'a>(
    lease: Lease,
    holds: impl IntoIterator<Item = (&'a Bytes, &'a Owner)>,
) -> ScriptCall {
    let mut call = ScriptCall::of(&SCRIPT, Vec::new()).lease(lease);
    for (key, owner) in holds {
        call.keys.push(key.clone());
        call = call.owner(owner);
    }
    call
}

/// The part of a `renew_batch` call that renews only the holds at `positions` (indices into its
/// keys, in order): how a cluster backend splits a batch whose locks live in several slots.
pub fn subset(call: &ScriptCall, positions: &[usize]) -> ScriptCall {
    let mut args = Vec::with_capacity(positions.len() + 1);
    args.push(call.args[0].clone());
    args.extend(positions.iter().map(|&at| call.args[at + 1].clone()));
    ScriptCall {
        script: &SCRIPT,
        sync: call.sync,
        keys: positions.iter().map(|&at| call.keys[at].clone()).collect(),
        args,
    }
}

/// Decodes the reply: for each lock in call order, whether it is still held and was renewed.
pub fn decode(reply: &Reply, expected: usize) -> Result<Vec<bool>, DecodeError> {
    let err = || DecodeError::new(SCRIPT.name, reply);
    match reply {
        Reply::Array(items) if items.len() == expected => items
            .iter()
            .map(|r| match r {
                Reply::Int(1) => Ok(true),
                Reply::Int(0) => Ok(false),
                _ => Err(err()),
            })
            .collect(),
        _ => Err(err()),
    }
}
