//! Which key lookups of a command are reads, in Redis's sense: `lookupKeyRead`, which counts a hit
//! or a miss (`INFO stats`'s `keyspace_hits` and `keyspace_misses`) and announces a miss as a
//! `keymiss` event (class `m`), against `lookupKeyWrite`, which does neither.
//!
//! Redis decides this per call site. The fake's commands share their lookups between reading and
//! writing (a write looks its key up through the same [`Cx::lookup`](super::Cx::lookup)), so the
//! decision is made per command instead, from its name and arguments, before it runs: every
//! lookup of a read-only command is a read, none of a write's, with Redis's exceptions listed in
//! [`reads_of`] (checked event by event against Redis in `fake-redis/tests/notify_events.rs`).
//! A script's calls and a transaction's commands each decide for themselves; the native twins of
//! the lock's scripts mark their read-only calls ([`Cx::reading`](super::Cx::reading)).

use super::{Spec, WRITE};
use bytes::Bytes;

/// Which lookups of the running command are reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Reads {
    /// None: a write, or a command that reads no keys.
    #[default]
    None,
    /// Every lookup.
    All,
    /// Every lookup but those of this key, the destination of a `…STORE` command.
    Except(Bytes),
    /// Counted but never announced (`OBJECT`, Redis's `LOOKUP_NONOTIFY`).
    Unannounced,
}

/// The reads of `spec` run with `argv` (its name first).
pub(crate) fn reads_of(spec: &Spec, argv: &[Bytes]) -> Reads {
    let except = |i: usize| {
        argv.get(i)
            .map_or(Reads::All, |key| Reads::Except(key.clone()))
    };
    match spec.name {
        // Each command a script or a transaction runs says for itself.
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro" | "exec" => {
            Reads::None
        }
        // Lookups Redis makes with `LOOKUP_NONOTIFY | LOOKUP_NOSTATS`, or as writes.
        "memory" | "watch" | "pfdebug" | "debug" => Reads::None,
        "object" => Reads::Unannounced,
        // Writes that look their key up with `lookupKeyRead`.
        "getset" | "getdel" | "getex" | "pfmerge" | "xack" | "xclaim" | "xautoclaim"
        | "xreadgroup" => Reads::All,
        "set" if argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) => Reads::All,
        "bitfield" if !bitfield_writes(argv) => Reads::All,
        // Writes that read their sources with `lookupKeyRead` and their destination as a write.
        "sinterstore" | "sunionstore" | "sdiffstore" | "zunionstore" | "zinterstore"
        | "zdiffstore" | "zrangestore" | "geosearchstore" => except(1),
        "bitop" | "copy" => except(2),
        "sort" | "georadius" | "georadiusbymember" => {
            let store = argv.iter().skip(2).position(|a| {
                a.eq_ignore_ascii_case(b"store") || a.eq_ignore_ascii_case(b"storedist")
            });
            store.map_or(Reads::All, |at| except(at + 3))
        }
        _ if spec.has(WRITE) => Reads::None,
        _ => Reads::All,
    }
}

/// Whether a `BITFIELD` sets or increments (Redis reads the key as a write then), rather than
/// only getting.
fn bitfield_writes(argv: &[Bytes]) -> bool {
    let mut i = 2;
    while let Some(op) = argv.get(i) {
        if op.eq_ignore_ascii_case(b"get") {
            i += 3;
        } else if op.eq_ignore_ascii_case(b"overflow") {
            i += 2;
        } else {
            return op.eq_ignore_ascii_case(b"set") || op.eq_ignore_ascii_case(b"incrby");
        }
    }
    false
}
