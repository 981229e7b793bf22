//! `rw_force_unlock`: delete a read-write lock held in one mode, whoever holds it, and wake its
//! waiters.
//!
//! `KEYS[1]` the lock, `KEYS[2]` its channel; `ARGV[1]` the mode to delete (`read` or `write`),
//! `ARGV[2]` the message to publish, `ARGV[3]` the publish command (`publish` or `spublish`).
//! Redisson's read lock and write lock each force-unlock only
//! the lock in their own mode, publishing `0` (read) or `1` (write); this script is both, by its
//! arguments. Replies 1 when the lock was deleted, 0 when it was not in that mode. Read holds'
//! timeout keys are left to expire, as Redisson leaves them.

use super::write_release::READ_UNLOCK_MESSAGE;
use crate::keys::ReadWriteKeys;
use crate::reply::Reply;
use crate::script::force_unlock::decode_as;
use crate::script::release::UNLOCK_MESSAGE;
use crate::script::{DecodeError, Script, ScriptCall, ScriptCtx, ScriptFailure, Store};
use bytes::Bytes;

/// The script.
pub static SCRIPT: Script = Script::publishing("rw_force_unlock", BODY, twin!(native), 2);

const BODY: &str = "\
if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[3], KEYS[2], ARGV[2])
  return 1
end
return 0
";

fn native<S: Store + ?Sized>(
    cx: &mut ScriptCtx<'_>,
    store: &mut S,
) -> Result<Reply, ScriptFailure> {
    let lock = cx.key(1, 1)?;
    let mode = cx.at(1, store.hget(lock, b"mode"))?;
    if mode.is_some_and(|mode| cx.opt_arg(1) == Some(&mode[..])) {
        cx.at(2, store.del(lock))?;
        cx.publish(store, 3, 3, 2, 2)?;
        return Ok(Reply::Int(1));
    }
    Ok(Reply::Int(0))
}

/// The call that deletes `keys`' lock if it is held for writing (`write`) or for reading.
pub fn call(keys: &ReadWriteKeys, write: bool) -> ScriptCall {
    let (mode, message) = if write {
        (&b"write"[..], READ_UNLOCK_MESSAGE)
    } else {
        (&b"read"[..], UNLOCK_MESSAGE)
    };
    ScriptCall::of(&SCRIPT, vec![keys.lock.lock.clone(), keys.channel.clone()])
        .arg(Bytes::from_static(mode))
        .message(message)
        .publish()
}

/// Decodes the reply: whether the lock was deleted.
pub fn decode(reply: &Reply) -> Result<bool, DecodeError> {
    decode_as(SCRIPT.name, reply)
}
