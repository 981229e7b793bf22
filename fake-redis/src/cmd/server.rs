//! The server commands a test suite calls around its data: `OBJECT`, and the state they read
//! that no keyspace holds (the encoding thresholds `CONFIG SET` changes).
//!
//! `OBJECT ENCODING` answers what Redis 7.0 would have chosen for the value, not what the fake
//! stores: the fake keeps every collection in one Rust structure, and Redis picks a compact
//! encoding (`listpack`, `intset`, `embstr`, `int`) while a value is small and converts it, once
//! and for good, when it grows past a threshold. So the answer is worked out from the value's
//! contents, the thresholds in force, and what the value went through: an entry keeps a byte of
//! encoding history ([`Entry::encoding_marks`]) that the writes which can shrink a value set
//! before it shrinks. `OBJECT IDLETIME` reads the entry's 24-bit access clock, Redis's own
//! `lru` field, counted on the engine's clock.

use super::{Args, Cx, Reply, Spec, int, is, unknown_subcommand};
use crate::engine::db::{Entry, LRU_CLOCK_MAX, Value, lru_clock};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static OBJECT: Spec = Spec::new("object", -2, 0, object_command);

/// The bits of [`Entry::encoding_marks`].
pub(crate) mod marks {
    /// A collection converted to its large encoding (`hashtable`, `skiplist`).
    pub const CONVERTED: u8 = 1;
    /// A string built in place (`APPEND`, `SETRANGE`): Redis keeps it `raw` whatever its size.
    pub const RAW: u8 = 2;
}

/// The encoding thresholds of Redis 7.0 (`CONFIG SET` changes them): past them a value converts.
#[derive(Clone, Debug)]
pub(crate) struct Encodings {
    /// `hash-max-listpack-entries`.
    pub hash_entries: usize,
    /// `hash-max-listpack-value`.
    pub hash_value: usize,
    /// `zset-max-listpack-entries`.
    pub zset_entries: usize,
    /// `zset-max-listpack-value`.
    pub zset_value: usize,
    /// `set-max-intset-entries`.
    pub set_intset_entries: usize,
}

impl Default for Encodings {
    fn default() -> Encodings {
        // Redis 7.0.15's defaults, as `CONFIG GET` shows them.
        Encodings {
            hash_entries: 512,
            hash_value: 64,
            zset_entries: 128,
            zset_value: 64,
            set_intset_entries: 512,
        }
    }
}

/// What the server commands keep beside the keyspace.
#[derive(Debug, Default)]
pub(crate) struct ServerState {
    /// The encoding thresholds.
    pub encodings: Encodings,
}

/// Follows a `CONFIG SET` of a parameter this file reads (by canonical name).
pub(crate) fn config_changed(cx: &mut Cx<'_>, name: &str, value: &str) {
    let Ok(n) = value.parse::<usize>() else {
        return;
    };
    let e = &mut cx.server_state().encodings;
    match name {
        "hash-max-listpack-entries" => e.hash_entries = n,
        "hash-max-listpack-value" => e.hash_value = n,
        "zset-max-listpack-entries" => e.zset_entries = n,
        "zset-max-listpack-value" => e.zset_value = n,
        "set-max-intset-entries" => e.set_intset_entries = n,
        _ => {}
    }
}

/// After a write that may have grown the collection at `key`: marks it converted when its size
/// is past its threshold, so it stays converted after it shrinks. Only the count is checked
/// here (constant time on every write); the sizes and kinds of members are read when `OBJECT`
/// asks.
pub(crate) fn note_size(cx: &mut Cx<'_>, entry_key: &[u8]) {
    let e = cx.server_state().encodings.clone();
    let Some(entry) = cx.lookup(entry_key) else {
        return;
    };
    let over = match &entry.value {
        Value::Hash(h) => h.len() > e.hash_entries,
        Value::Set(s) => s.len() > e.set_intset_entries,
        Value::ZSet(z) => z.len() > e.zset_entries,
        Value::Str(_) | Value::List(_) => false,
    };
    if over {
        entry.mark_encoding(marks::CONVERTED);
    }
}

/// Before a removal from the collection at `key`: marks it converted when it is past any of its
/// thresholds (count, member sizes, a set's non-integer member), so it keeps the large encoding
/// after the removal, as Redis's does. Reads every member: only removals (`HDEL`, `SREM`,
/// `ZREM`) pay for it.
pub(crate) fn note_shrink(cx: &mut Cx<'_>, key: &[u8]) {
    let e = cx.server_state().encodings.clone();
    let Some(entry) = cx.lookup(key) else {
        return;
    };
    if matches!(encoding(entry, &e), "hashtable" | "skiplist") {
        entry.mark_encoding(marks::CONVERTED);
    }
}

/// Marks the string at `key` as built in place (`raw` from now on).
pub(crate) fn note_raw(cx: &mut Cx<'_>, key: &[u8]) {
    if let Some(entry) = cx.lookup(key) {
        entry.mark_encoding(marks::RAW);
    }
}

/// Redis's `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`.
const EMBSTR_SIZE_LIMIT: usize = 44;
/// Redis's `OBJ_SHARED_INTEGERS`: integers below it are one shared object.
const SHARED_INTEGERS: i64 = 10_000;
/// Redis's `OBJ_SHARED_REFCOUNT`.
const SHARED_REFCOUNT: i64 = i32::MAX as i64;

/// A string's value as Redis's `tryObjectEncoding` reads it: an integer when it is one (at most
/// 20 bytes, canonical).
fn as_int(s: &[u8]) -> Option<i64> {
    if s.len() > 20 {
        return None;
    }
    int(s).ok()
}

/// The name `OBJECT ENCODING` gives the value of `entry`.
fn encoding(entry: &Entry, e: &Encodings) -> &'static str {
    let converted = entry.encoding_marks() & marks::CONVERTED != 0;
    match &entry.value {
        Value::Str(s) => {
            // HyperLogLogs are made as raw strings and edited in place.
            if entry.encoding_marks() & marks::RAW != 0 || s.starts_with(b"HYLL") {
                "raw"
            } else if as_int(s).is_some() {
                "int"
            } else if s.len() <= EMBSTR_SIZE_LIMIT {
                "embstr"
            } else {
                "raw"
            }
        }
        Value::List(_) => "quicklist",
        Value::Hash(h) => {
            let big = converted
                || h.len() > e.hash_entries
                || h.iter()
                    .any(|(f, v)| f.len() > e.hash_value || v.len() > e.hash_value);
            if big { "hashtable" } else { "listpack" }
        }
        Value::Set(s) => {
            let big = converted
                || s.len() > e.set_intset_entries
                || s.iter().any(|m| as_int(m).is_none());
            if big { "hashtable" } else { "intset" }
        }
        Value::ZSet(z) => {
            let big = converted
                || z.len() > e.zset_entries
                || z.iter().any(|(_, m)| m.len() > e.zset_value);
            if big { "skiplist" } else { "listpack" }
        }
    }
}

/// Whether `maxmemory-policy` is one of the LFU policies (then Redis tracks frequency, not idle
/// time, in the same 24 bits).
fn lfu_policy(cx: &Cx<'_>) -> bool {
    cx.engine()
        .config()
        .settings
        .get("maxmemory-policy")
        .is_some_and(|p| p.ends_with("-lfu"))
}

const OBJECT_HELP: &[&str] = &[
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

/// A help reply: one status line each.
pub(crate) fn help_reply(lines: &[&'static str]) -> Frame {
    Frame::Array(lines.iter().map(|&l| Frame::simple(l)).collect())
}

/// The subcommand of a container command (`OBJECT`, `MEMORY`, ...), lowercased, after checking
/// it is one of `known` and has its arity: Redis's unknown-subcommand error first, then the
/// subcommand's arity error.
pub(crate) fn subcommand(
    container: &str,
    known: &[&'static str],
    args: &Args<'_>,
    sub: &[u8],
) -> Result<&'static str, Frame> {
    let Some(name) = known.iter().copied().find(|k| is(sub, k)) else {
        return Err(unknown_subcommand(container, sub));
    };
    let full = format!("{}|{name}", container.to_ascii_lowercase());
    super::command_docs::check_subcommand_arity(&full, args.remaining() + 2)?;
    Ok(name)
}

/// `OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT <key>` and `OBJECT HELP`.
fn object_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Reply {
    let sub = args.next_bytes()?;
    let name = subcommand(
        "OBJECT",
        &["encoding", "freq", "idletime", "refcount", "help"],
        args,
        sub,
    )?;
    if name == "help" {
        return Ok(help_reply(OBJECT_HELP));
    }
    let key = args.next_bytes()?;
    let now = cx.now;
    let lfu = lfu_policy(cx);
    let encodings = cx.server_state().encodings.clone();
    // Redis looks the key up without touching its access time.
    let Some(entry) = cx.keyspace().peek(key, now) else {
        return Ok(Frame::Null);
    };
    match name {
        "encoding" => Ok(Frame::Bulk(Bytes::from_static(
            encoding(entry, &encodings).as_bytes(),
        ))),
        "refcount" => {
            let shared = matches!(&entry.value, Value::Str(s)
                if encoding(entry, &encodings) == "int"
                    && as_int(s).is_some_and(|n| (0..SHARED_INTEGERS).contains(&n)));
            Ok(Frame::Integer(if shared { SHARED_REFCOUNT } else { 1 }))
        }
        "idletime" => {
            if lfu {
                return Err(Frame::error(
                    "ERR An LFU maxmemory policy is selected, idle time not tracked. Please \
                     note that when switching between policies at runtime LRU and LFU data \
                     will take some time to adjust.",
                ));
            }
            // Redis's `estimateObjectIdleTime`, in seconds: the clock wraps at 24 bits.
            let (clock, at) = (lru_clock(now), entry.accessed());
            let idle = if clock >= at {
                clock - at
            } else {
                clock + (LRU_CLOCK_MAX - at)
            };
            Ok(Frame::Integer(i64::from(idle)))
        }
        _ => {
            if !lfu {
                return Err(Frame::error(
                    "ERR An LFU maxmemory policy is not selected, access frequency not \
                     tracked. Please note that when switching between policies at runtime LRU \
                     and LFU data will take some time to adjust.",
                ));
            }
            // The fake counts no frequency: every key reads as a new one does (`LFU_INIT_VAL`).
            Ok(Frame::Integer(5))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_access_clock_fits_in_the_entry_s_padding() {
        // The entry was 64 bytes before it kept an access time; it must stay so, as every key
        // of the keyspace pays for it.
        assert_eq!(std::mem::size_of::<Entry>(), 64);
    }
}
