//! Which key lookups of a command are reads, in Redis's sense: `lookupKeyRead`, which counts a hit
//! or a miss (`INFO stats`'s `keyspace_hits` and `keyspace_misses`) and announces a miss as a
//! `keymiss` event (class `m`), against `lookupKeyWrite`, which does neither.
//!
//! Redis decides this per call site. The fake's commands share their lookups between reading and
//! writing (a write looks its key up through the same [`Cx::lookup`](super::Cx::lookup)), so the
//! decision is made per command instead, from its arguments, before it runs: every lookup of a
//! read-only command is a read, none of a write's, with Redis's exceptions declared beside the
//! commands as their [`Spec`]'s [`ReadRule`] (`grep -rn 'with_reads' fake-redis/src/cmd`; checked
//! event by event against Redis in `fake-redis/tests/suite/notify_events.rs`).
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

/// How a command's lookups are reads: a field of its [`Spec`], so that deciding costs a match
/// on a small enum, not on the command's name.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ReadRule {
    /// Every lookup of a read-only command, none of a write's: all but Redis's exceptions.
    ByFlags,
    /// None: each command a script or a transaction runs says for itself, and lookups Redis
    /// makes with `LOOKUP_NONOTIFY | LOOKUP_NOSTATS` or as writes.
    Never,
    /// Every lookup: a write that looks its key up with `lookupKeyRead`.
    Always,
    /// Counted but never announced (`OBJECT`, Redis's `LOOKUP_NONOTIFY`).
    Unannounced,
    /// Every lookup but those of the key at this argument (a `…STORE` command's destination,
    /// which it reads as a write).
    Except(usize),
    /// Decided from the arguments.
    Decide(fn(&[Bytes]) -> Reads),
}

/// The reads of `spec` run with `argv` (its name first).
pub(crate) fn reads_of(spec: &Spec, argv: &[Bytes]) -> Reads {
    match spec.reads {
        ReadRule::ByFlags if spec.has(WRITE) => Reads::None,
        ReadRule::ByFlags | ReadRule::Always => Reads::All,
        ReadRule::Never => Reads::None,
        ReadRule::Unannounced => Reads::Unannounced,
        ReadRule::Except(at) => except(argv, at),
        ReadRule::Decide(decide) => decide(argv),
    }
}

/// Every lookup but those of `argv[at]`.
fn except(argv: &[Bytes], at: usize) -> Reads {
    argv.get(at)
        .map_or(Reads::All, |key| Reads::Except(key.clone()))
}

/// `SET … GET` reads its key with `lookupKeyRead`; a plain `SET` writes.
pub(crate) fn set_reads(argv: &[Bytes]) -> Reads {
    match argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get")) {
        true => Reads::All,
        false => Reads::None,
    }
}

/// A `BITFIELD` that only gets reads its key; one that sets or increments writes it.
pub(crate) fn bitfield_reads(argv: &[Bytes]) -> Reads {
    match bitfield_writes(argv) {
        true => Reads::None,
        false => Reads::All,
    }
}

/// `SORT`, `GEORADIUS` and `GEORADIUSBYMEMBER` read their sources, and a `STORE` or
/// `STOREDIST` destination as a write.
pub(crate) fn store_option_reads(argv: &[Bytes]) -> Reads {
    let store = argv
        .iter()
        .skip(2)
        .position(|a| a.eq_ignore_ascii_case(b"store") || a.eq_ignore_ascii_case(b"storedist"));
    store.map_or(Reads::All, |at| except(argv, at + 3))
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
