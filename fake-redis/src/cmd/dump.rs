//! `DUMP`, `RESTORE` and `RESTORE-ASKING`: a key's value as Redis 7.0's serialized payload, and
//! back; and `MIGRATE`'s checks, which a lone server answers before it would send a payload.
//!
//! The payload itself (RDB encoding, version, CRC64) is `engine/rdb.rs`; this file decides what
//! Redis would have held the value as (`OBJECT ENCODING`'s answer, from `server.rs`) and runs
//! `RESTORE` in Redis's order: options, then `BUSYKEY`, then the TTL, then the payload's footer
//! and body, each with Redis's error. A restore whose TTL is already past creates nothing and
//! answers `OK` (deleting the old key under `REPLACE`), as Redis's `restoreCommand` does.

use super::server::{encoding, lfu_policy, note_size};
use super::{Args, CmdResult, Cx, NOT_INTEGER, SYNTAX, Spec, WRITE, class, int, is};
use crate::engine::db::{LRU_CLOCK_MAX, lru_clock};
use crate::engine::rdb::{self, Compact};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static DUMP: Spec = Spec::new("dump", 2, 0, dump_command);
pub(crate) static RESTORE: Spec = Spec::new("restore", -4, WRITE, restore_command);
pub(crate) static RESTORE_ASKING: Spec = Spec::new("restore-asking", -4, WRITE, restore_command);
/// Redis reads `MIGRATE`'s keys with `lookupKeyRead`, though the command is a write.
pub(crate) static MIGRATE: Spec =
    Spec::new("migrate", -6, WRITE, migrate_command).with_reads(super::ReadRule::Always);

/// `MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw | AUTH2 user pw] [KEYS key…]`,
/// checked in Redis's order: the options, the timeout and the database as numbers, then the
/// keys, `NOKEY` when none exists. The fake opens no connection to another server, so a call
/// with a key to move fails as Redis's does when it cannot write to the target, and nothing is
/// moved or deleted.
fn migrate_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.whole();
    let (mut first_key, mut keys) = (3, 1);
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        if is(&argv[j], "copy") || is(&argv[j], "replace") {
        } else if is(&argv[j], "auth") {
            if more == 0 {
                return Err(SYNTAX);
            }
            j += 1;
        } else if is(&argv[j], "auth2") {
            if more < 2 {
                return Err(SYNTAX);
            }
            j += 2;
        } else if is(&argv[j], "keys") {
            if !argv[3].is_empty() {
                return Err(Frame::error(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the \
                     empty string",
                ));
            }
            first_key = j + 1;
            keys = argv.len() - j - 1;
            break;
        } else {
            return Err(SYNTAX);
        }
        j += 1;
    }
    int(&argv[5])?;
    int(&argv[4])?;
    let mut found = false;
    for key in &argv[first_key..first_key + keys] {
        found |= cx.lookup(key).is_some();
    }
    if !found {
        return Ok(Frame::simple("NOKEY"));
    }
    Err(Frame::error(
        "IOERR error or timeout writing to target instance",
    ))
}

/// `DUMP key`: the payload, or nil for a missing key.
fn dump_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let encodings = cx.server_state().encodings.clone();
    let version = cx.engine().version();
    let Some(entry) = cx.lookup(key) else {
        return Ok(Frame::Null);
    };
    let compact = match encoding(entry, &encodings) {
        "listpack" | "listpackex" | "intset" => Compact::Yes,
        _ => Compact::No,
    };
    Ok(Frame::Bulk(Bytes::from(rdb::dump(
        &entry.value,
        compact,
        version,
    ))))
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]`.
fn restore_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (key, ttl, payload) = (args.next_bytes()?, args.next_bytes()?, args.next_bytes()?);
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (None, None);
    while let Some(opt) = args.next() {
        let has_value = args.remaining() >= 1;
        if is(opt, "replace") {
            replace = true;
        } else if is(opt, "absttl") {
            absttl = true;
        } else if is(opt, "idletime") && has_value && freq.is_none() {
            let seconds = args.next_int()?;
            if seconds < 0 {
                return Err(Frame::error("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(seconds);
        } else if is(opt, "freq") && has_value && idle.is_none() {
            let f = args.next_int()?;
            if !(0..=255).contains(&f) {
                return Err(Frame::error(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
            freq = Some(f);
        } else {
            return Err(SYNTAX);
        }
    }
    if !replace && cx.lookup(key).is_some() {
        return Err(Frame::error("BUSYKEY Target key name already exists."));
    }
    let ttl = int(ttl).map_err(|_| NOT_INTEGER)?;
    if ttl < 0 {
        return Err(Frame::error("ERR Invalid TTL value, must be >= 0"));
    }
    let version = cx.engine().version();
    if !rdb::verify(payload, version) {
        return Err(Frame::error(
            "ERR DUMP payload version or checksum are wrong",
        ));
    }
    let Ok(value) = rdb::load(payload, version) else {
        return Err(Frame::error("ERR Bad data format"));
    };
    let now = cx.now;
    let deleted = replace && cx.keyspace().remove(key, now).is_some();
    // Redis adds the TTL to the clock in C's wrapping arithmetic.
    let deadline = match ttl {
        0 => None,
        _ if absttl => Some(ttl),
        _ => Some(ttl.wrapping_add(now)),
    };
    if let Some(deadline) = deadline
        && deadline <= now
    {
        if deleted {
            cx.keyspace().touch(key);
            cx.notify(class::GENERIC, "del", key);
        }
        return Ok(Frame::OK);
    }
    cx.keyspace().insert(key, value, deadline, now);
    super::hash_ttl::track(cx, cx.db, key);
    note_size(cx, key);
    cx.keyspace().touch(key);
    cx.notify(class::GENERIC, "restore", key);
    if let Some(seconds) = idle
        && !lfu_policy(cx)
        && let Some(entry) = cx.keyspace().write(key, now)
    {
        // Redis's `objectSetLRUOrLFU`: an idle time past the wrapping clock's start lands half
        // its period ahead, to be evicted last.
        let clock = i64::from(lru_clock(now));
        let mut at = clock - seconds;
        if at < 0 {
            at = (clock + i64::from(LRU_CLOCK_MAX / 2)) % i64::from(LRU_CLOCK_MAX);
        }
        entry.set_accessed(at as u32);
    }
    // Under an LFU policy, the counter is set as given, decremented as of now.
    if let Some(f) = freq
        && lfu_policy(cx)
        && let Some(entry) = cx.keyspace().write(key, now)
    {
        entry.set_accessed(crate::engine::evict::lfu_bits(now, f.clamp(0, 255) as u32));
    }
    Ok(Frame::OK)
}
