//! `force_unlock`: delete the lock whoever holds it, and wake the waiters.
//!
//! `KEYS[1]` the lock, `KEYS[2]` its unlock channel; `ARGV[1]` the unlock message, `ARGV[2]` the
//! publish command (`publish` or `spublish`). Replies 1 when a
//! lock was deleted, 0 when there was none. The holder learns it lost the lock at its next renewal.

use super::release::UNLOCK_MESSAGE;
use super::{DecodeError, Script, ScriptCall, ScriptCtx, ScriptFailure, Store};
use crate::keys::LockKeys;
use crate::reply::Reply;

/// The script.
pub static SCRIPT: Script = Script::publishing("force_unlock", BODY, twin!(native), 1);

const BODY: &str = "\
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    if cx.at(1, store.del(cx.key(1, 1)?))? {
        cx.publish(store, 2, 2, 2, 1)?;
        return Ok(Reply::Int(1));
    }
    Ok(Reply::Int(0))
}

/// The call that deletes `keys`' lock.
pub fn call(keys: &LockKeys) -> ScriptCall {
    ScriptCall::of(&SCRIPT, vec![keys.lock.clone(), keys.channel.clone()])
        .message(UNLOCK_MESSAGE)
        .publish()
}

/// Decodes the reply: whether a lock was deleted.
pub fn decode(reply: &Reply) -> Result<bool, DecodeError> {
    decode_as(SCRIPT.name, reply)
}

/// A force unlock's reply (1 deleted, 0 not) decoded for the script `name` (the fair lock's and
/// the read-write lock's answer as this one does).
pub(crate) fn decode_as(name: &'static str, reply: &Reply) -> Result<bool, DecodeError> {
    match reply {
        Reply::Int(1) => Ok(true),
        Reply::Int(0) => Ok(false),
        _ => Err(DecodeError::new(name, reply)),
    }
}
