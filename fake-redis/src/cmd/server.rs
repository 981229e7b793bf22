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

use super::{Args, CONTAINER, CmdResult, Cx, Spec, int, is, unknown_subcommand};
use crate::engine::db::{LRU_CLOCK_MAX, Value, lru_clock};
use crate::engine::memory::{
    DICT, DICT_ENTRY, SHARED_INTEGERS, SHARED_REFCOUNT, as_int, dict_slots, sds, value_size,
};
pub(crate) use crate::engine::memory::{encoding, marks};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static OBJECT: Spec =
    Spec::new("object", -2, CONTAINER, object_command).with_reads(super::ReadRule::Unannounced);
pub(crate) static MEMORY: Spec =
    Spec::new("memory", -2, CONTAINER, memory_command).with_reads(super::ReadRule::Never);
pub(crate) static SLOWLOG: Spec = Spec::new("slowlog", -2, CONTAINER, slowlog_command);
pub(crate) static COMMANDLOG: Spec = Spec::new("commandlog", -2, CONTAINER, commandlog_command);
pub(crate) static LATENCY: Spec = Spec::new("latency", -2, CONTAINER, latency_command);
pub(crate) static LASTSAVE: Spec = Spec::new("lastsave", 1, 0, lastsave_command);
pub(crate) static SAVE: Spec = Spec::new("save", 1, 0, save_command);
pub(crate) static BGSAVE: Spec = Spec::new("bgsave", -1, 0, bgsave_command);
pub(crate) static BGREWRITEAOF: Spec = Spec::new("bgrewriteaof", 1, 0, bgrewriteaof_command);
pub(crate) static MOVE: Spec = Spec::new("move", 3, super::WRITE, move_command);
pub(crate) static ROLE: Spec = Spec::new("role", 1, 0, role_command);
pub(crate) static SWAPDB: Spec = Spec::new("swapdb", 3, super::WRITE, swapdb_command);
pub(crate) static SHUTDOWN: Spec = Spec::new("shutdown", -1, 0, shutdown_command);

/// Follows a `CONFIG SET` of a parameter this file reads (by canonical name).
pub(crate) fn config_changed(cx: &mut Cx<'_>, name: &str, value: &str) {
    let slowlog = &mut cx.node().stats_mut().slowlog;
    match (name, value.parse::<i64>()) {
        ("slowlog-log-slower-than", Ok(us)) => slowlog.set_slower_than(us),
        ("slowlog-max-len", Ok(len)) => slowlog.set_max_len(usize::try_from(len).unwrap_or(0)),
        _ => {}
    }
    if matches!(name, "hz" | "active-expire-effort") {
        let read = |cx: &Cx<'_>, param: &str, default: u32| {
            let settings = &cx.engine().config().settings;
            let given = if param == name {
                Some(value)
            } else {
                settings.get(param).map(String::as_str)
            };
            given.and_then(|v| v.parse().ok()).unwrap_or(default)
        };
        let (hz, effort) = (read(cx, "hz", 10), read(cx, "active-expire-effort", 1));
        cx.node().tune_active_expiry(hz, effort);
    }
    if matches!(
        name,
        "maxmemory"
            | "maxmemory-policy"
            | "maxmemory-samples"
            | "lfu-log-factor"
            | "lfu-decay-time"
    ) {
        let now = cx.now;
        cx.node().set_eviction_param(name, value, now);
    }
    if matches!(name, "min-replicas-to-write" | "min-replicas-max-lag") {
        let read = |cx: &Cx<'_>, param: &str, default: i64| {
            let settings = &cx.engine().config().settings;
            let given = if param == name {
                Some(value)
            } else {
                settings.get(param).map(String::as_str)
            };
            given.and_then(|v| v.parse().ok()).unwrap_or(default)
        };
        let to_write = read(cx, "min-replicas-to-write", 0);
        let max_lag = read(cx, "min-replicas-max-lag", 10);
        cx.node()
            .set_min_replicas(usize::try_from(to_write).unwrap_or(0), max_lag);
    }
    if name == "list-max-listpack-size"
        && let Ok(size) = value.parse::<i64>()
    {
        cx.server_state().encodings.list_size = size;
        return;
    }
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
        "set-max-listpack-entries" => e.set_listpack_entries = n,
        "set-max-listpack-value" => e.set_listpack_value = n,
        _ => return,
    }
    // The memory estimate reads the thresholds too: every key is measured again by them.
    let e = e.clone();
    for db in cx.node().dbs_mut() {
        db.set_encodings(&e);
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
        // Past every threshold a set is a hash table; below, its members decide.
        Value::Set(s) => {
            s.len() > e.set_intset_entries && (!e.set_listpack || s.len() > e.set_listpack_entries)
        }
        Value::ZSet(z) => z.len() > e.zset_entries,
        Value::Str(_) | Value::List(_) | Value::Stream(_) => false,
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
    match encoding(entry, &e) {
        "hashtable" | "skiplist" => entry.mark_encoding(marks::CONVERTED),
        "listpack" if matches!(entry.value, Value::Set(_)) => entry.mark_encoding(marks::NOT_INT),
        _ => {}
    }
}

/// Gives the value at `key` in database `db` the encoding history `marks`: a value moved or
/// copied keeps its source's (Redis moves the object, or duplicates it in its encoding), a
/// value made anew gets the marks of how Redis made it.
pub(crate) fn set_marks(cx: &mut Cx<'_>, db: usize, key: &[u8], marks: u8) {
    let now = cx.now;
    if let Some(entry) = cx.keyspace_at(db).lookup(key, now) {
        entry.set_encoding_marks(marks);
    }
    super::hash_ttl::track(cx, db, key);
}

/// Marks the string at `key` as built in place (`raw` from now on). Not an access of the key:
/// no keyspace hit, no read announced, no touch of its access clock.
pub(crate) fn note_raw(cx: &mut Cx<'_>, key: &[u8]) {
    cx.writing(|cx| {
        if let Some(entry) = cx.lookup_untouched(key) {
            entry.mark_encoding(marks::RAW);
        }
    });
}

/// Whether the collection at `key` has one of Redis's compact encodings (a listpack or an
/// intset), which `HSCAN`, `SSCAN` and `ZSCAN` send whole. Constant time for a collection past
/// its count threshold.
pub(crate) fn compact_encoding(cx: &mut Cx<'_>, key: &[u8]) -> bool {
    let e = cx.server_state().encodings.clone();
    cx.lookup(key)
        .is_some_and(|entry| matches!(encoding(entry, &e), "listpack" | "listpackex" | "intset"))
}

/// Whether `maxmemory-policy` is one of the LFU policies (then Redis tracks frequency, not idle
/// time, in the same 24 bits).
pub(crate) fn lfu_policy(cx: &Cx<'_>) -> bool {
    cx.engine().maxmemory_policy().lfu()
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

/// The subcommand of a container command (`OBJECT`, `MEMORY`, ...) as one of its handler's
/// `known` names. Dispatch has checked it is Redis's and has its arity; a subcommand the fake
/// does not serve gets Redis's unknown-subcommand error.
pub(crate) fn subcommand(
    container: &str,
    known: &[&'static str],
    sub: &[u8],
) -> Result<&'static str, Frame> {
    known
        .iter()
        .copied()
        .find(|k| is(sub, k))
        .ok_or_else(|| unknown_subcommand(container, sub))
}

/// `OBJECT REFCOUNT`'s answer: Redis shares one object for each small integer.
pub(crate) fn refcount(
    entry: &crate::engine::db::Entry,
    encodings: &crate::engine::server_state::Encodings,
) -> i64 {
    let shared = matches!(&entry.value, Value::Str(s)
        if encoding(entry, encodings) == "int"
            && as_int(s.as_ref()).is_some_and(|n| (0..SHARED_INTEGERS).contains(&n)));
    if shared { SHARED_REFCOUNT } else { 1 }
}

/// `OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT <key>` and `OBJECT HELP`.
fn object_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let name = subcommand(
        "OBJECT",
        &["encoding", "freq", "idletime", "refcount", "help"],
        sub,
    )?;
    if name == "help" {
        return Ok(help_reply(OBJECT_HELP));
    }
    let key = args.next_bytes()?;
    let now = cx.now;
    let (lfu, decay) = (lfu_policy(cx), cx.engine().lfu_decay_time());
    let encodings = cx.server_state().encodings.clone();
    // Redis looks the key up without touching its access time, as a read it does not announce.
    let Some(entry) = cx.lookup_untouched(key) else {
        return Ok(Frame::Null);
    };
    match name {
        "encoding" => Ok(Frame::Bulk(Bytes::from_static(
            encoding(entry, &encodings).as_bytes(),
        ))),
        "refcount" => Ok(Frame::Integer(refcount(entry, &encodings))),
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
            // Redis's `LFUDecrAndReturn`: the counter, decayed to now but not stored.
            let freq = crate::engine::evict::lfu_decayed(entry.accessed(), now, decay);
            Ok(Frame::Integer(i64::from(freq)))
        }
    }
}

// ---- MEMORY ----

const MEMORY_HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

/// `MEMORY USAGE|STATS|DOCTOR|MALLOC-STATS|PURGE|HELP`. USAGE is Redis's own sum (the value as
/// Redis would encode it, its key's sds, its dict entry) over jemalloc's size classes: exact for
/// small values, close for large ones (a skiplist's levels are random in Redis, one here).
fn memory_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let name = subcommand(
        "MEMORY",
        &["usage", "stats", "doctor", "malloc-stats", "purge", "help"],
        sub,
    )?;
    match name {
        "help" => Ok(help_reply(MEMORY_HELP)),
        "usage" => {
            let key = args.next_bytes()?;
            let mut samples = 5;
            while let Some(option) = args.next() {
                if is(option, "samples") && args.remaining() > 0 {
                    let n = args.next_int()?;
                    if n < 0 {
                        return Err(super::SYNTAX);
                    }
                    samples = if n == 0 { 0 } else { n as usize };
                } else {
                    return Err(super::SYNTAX);
                }
            }
            let (now, e) = (cx.now, cx.server_state().encodings.clone());
            let Some(entry) = cx.keyspace().peek(key, now) else {
                return Ok(Frame::Null);
            };
            let size = value_size(entry, &e, samples) + sds(key.len()) + DICT_ENTRY;
            Ok(Frame::Integer(size as i64))
        }
        "doctor" => Ok(Frame::text(
            "Hi Sam, this instance is empty or is using very little memory, my issues detector \
             can't be used in these conditions. Please, leave for your mission on Earth and \
             fill it with some data. The new Sam and I will be back to our programming as soon \
             as I finished rebooting.\n",
        )),
        "malloc-stats" => Ok(Frame::text("Stats not supported for the current allocator")),
        "purge" => Ok(Frame::OK),
        _ => Ok(memory_stats(cx)),
    }
}

/// `MEMORY STATS`: Redis 7.0's fields, from the fake's key counts; the allocator's figures are
/// those of a server that has allocated nothing past its start.
fn memory_stats(cx: &mut Cx<'_>) -> Frame {
    const STARTUP: i64 = crate::engine::memory::STARTUP as i64;
    let now = cx.now;
    let e = cx.server_state().encodings.clone();
    let field = |k: &'static str| Frame::Bulk(Bytes::from_static(k.as_bytes()));
    let mut dataset = 0i64;
    let mut keys = 0i64;
    let mut per_db = Vec::new();
    for (i, db) in cx.keyspaces().iter().enumerate() {
        if db.len() == 0 {
            continue;
        }
        keys += db.len() as i64;
        for (key, entry) in db.live_iter(now) {
            dataset += (value_size(entry, &e, 5) + sds(key.len()) + DICT_ENTRY) as i64;
        }
        per_db.push((
            Frame::Bulk(Bytes::from(format!("db.{i}"))),
            Frame::Map(vec![
                (
                    field("overhead.hashtable.main"),
                    Frame::Integer((8 * dict_slots(db.len()) + DICT) as i64),
                ),
                (
                    field("overhead.hashtable.expires"),
                    Frame::Integer(if db.volatile_len() > 0 {
                        (8 * dict_slots(db.volatile_len()) + DICT) as i64
                    } else {
                        0
                    }),
                ),
                (field("overhead.hashtable.slot-to-keys"), Frame::Integer(0)),
            ]),
        ));
    }
    let total = STARTUP + dataset;
    let percent = |a: i64, b: i64| {
        if b == 0 {
            0.0
        } else {
            a as f64 * 100.0 / b as f64
        }
    };
    let mut fields = vec![
        (field("peak.allocated"), Frame::Integer(total)),
        (field("total.allocated"), Frame::Integer(total)),
        (field("startup.allocated"), Frame::Integer(STARTUP)),
        (field("replication.backlog"), Frame::Integer(0)),
        (field("clients.slaves"), Frame::Integer(0)),
        (field("clients.normal"), Frame::Integer(0)),
        (field("cluster.links"), Frame::Integer(0)),
        (field("aof.buffer"), Frame::Integer(0)),
        (field("lua.caches"), Frame::Integer(0)),
        (field("functions.caches"), Frame::Integer(200)),
    ];
    fields.extend(per_db);
    fields.extend([
        (field("overhead.total"), Frame::Integer(STARTUP)),
        (field("keys.count"), Frame::Integer(keys)),
        (
            field("keys.bytes-per-key"),
            Frame::Integer(if keys == 0 { 0 } else { dataset / keys }),
        ),
        (field("dataset.bytes"), Frame::Integer(dataset)),
        (
            field("dataset.percentage"),
            Frame::Double(percent(dataset, total - STARTUP)),
        ),
        (field("peak.percentage"), Frame::Double(100.0)),
        (field("allocator.allocated"), Frame::Integer(total)),
        (field("allocator.active"), Frame::Integer(total)),
        (field("allocator.resident"), Frame::Integer(total)),
        (field("allocator-fragmentation.ratio"), Frame::Double(1.0)),
        (field("allocator-fragmentation.bytes"), Frame::Integer(0)),
        (field("allocator-rss.ratio"), Frame::Double(1.0)),
        (field("allocator-rss.bytes"), Frame::Integer(0)),
        (field("rss-overhead.ratio"), Frame::Double(1.0)),
        (field("rss-overhead.bytes"), Frame::Integer(0)),
        (field("fragmentation"), Frame::Double(1.0)),
        (field("fragmentation.bytes"), Frame::Integer(0)),
    ]);
    Frame::Map(fields)
}

// ---- SLOWLOG, LATENCY, persistence, ROLE ----

const SLOWLOG_HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

/// `SLOWLOG GET|LEN|RESET|HELP`, over the log `engine/stats.rs` keeps. A command's duration is
/// measured on the engine's clock, which stands still while a command runs: every command took
/// 0 µs, so `slowlog-log-slower-than 0` logs each one and a larger threshold none.
fn slowlog_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let name = subcommand("SLOWLOG", &["get", "len", "reset", "help"], sub)?;
    let slowlog = &mut cx.node().stats_mut().slowlog;
    match name {
        "get" => {
            if args.remaining() > 1 {
                return Err(super::subcommand_syntax("SLOWLOG", sub));
            }
            let count = match args.next().map(|c| int(c)) {
                None => Some(10),
                Some(Ok(-1)) => None,
                Some(Ok(n)) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                Some(_) => {
                    return Err(Frame::error(
                        "ERR count should be greater than or equal to -1",
                    ));
                }
            };
            Ok(slowlog.newest(count))
        }
        "len" => Ok(Frame::Integer(slowlog.len() as i64)),
        "reset" => {
            slowlog.reset();
            Ok(Frame::OK)
        }
        _ => Ok(help_reply(SLOWLOG_HELP)),
    }
}

const COMMANDLOG_HELP: &[&str] = &[
    "COMMANDLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <count> <type>",
    "    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).",
    "    Entries are made of:",
    "    id, timestamp,",
    "        time in microseconds for type of slow,",
    "        or size in bytes for type of large-request,",
    "        or size in bytes for type of large-reply",
    "    arguments array, client IP and port,",
    "    client name",
    "LEN <type>",
    "    Return the length of the specified type of commandlog.",
    "RESET <type>",
    "    Reset the specified type of commandlog.",
    "HELP",
    "    Print this help.",
];

/// `COMMANDLOG GET|LEN|RESET <type>` and `COMMANDLOG HELP` (Valkey 9.1). Its `slow` log is the
/// slow log `SLOWLOG` reads, as on Valkey, where one is the other under two names. The
/// `large-request` and `large-reply` logs take commands whose request or reply is larger than
/// `commandlog-request-larger-than` or `commandlog-reply-larger-than` (1 MiB by default), which
/// the fake does not measure: they stay empty.
fn commandlog_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let name = subcommand("COMMANDLOG", &["get", "len", "reset", "help"], sub)?;
    if name == "help" {
        return Ok(help_reply(COMMANDLOG_HELP));
    }
    let count = match name {
        "get" => match int(args.next_bytes()?) {
            Ok(-1) => Some(None),
            Ok(n) if n >= 0 => Some(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => {
                return Err(Frame::error(
                    "ERR count should be greater than or equal to -1",
                ));
            }
        },
        _ => None,
    };
    let kind = args.next_bytes()?;
    let slow = match ["slow", "large-request", "large-reply"]
        .iter()
        .position(|k| is(kind, k))
    {
        Some(i) => i == 0,
        None => {
            return Err(Frame::error(
                "ERR type should be one of the following: slow, large-request, large-reply",
            ));
        }
    };
    let slowlog = &mut cx.node().stats_mut().slowlog;
    Ok(match (name, slow) {
        ("get", true) => slowlog.newest(count.flatten()),
        ("get", false) => Frame::Array(Vec::new()),
        ("len", true) => Frame::Integer(slowlog.len() as i64),
        ("len", false) => Frame::Integer(0),
        (_, true) => {
            slowlog.reset();
            Frame::OK
        }
        (_, false) => Frame::OK,
    })
}

/// `INFO latencystats`, as `latency-tracking` and `latency-tracking-info-percentiles` say.
pub(crate) fn latencystats_section(engine: &crate::engine::Engine) -> String {
    let settings = &engine.config().settings;
    let tracking = settings.get("latency-tracking").is_none_or(|v| v == "yes");
    let percentiles = settings
        .get("latency-tracking-info-percentiles")
        .map_or("50 99 99.9", String::as_str);
    engine.stats().latencystats_section(tracking, percentiles)
}

const LATENCY_HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the \
     specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Prints this help.",
];

/// `LATENCY`: the answers of a server whose latency monitor is off (its default), which has
/// no samples; `HISTOGRAM` gives each called command's calls, all in the first bucket (every
/// command takes 0 µs on the engine's clock, `engine/stats.rs`).
fn latency_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let name = subcommand(
        "LATENCY",
        &[
            "doctor",
            "graph",
            "history",
            "latest",
            "reset",
            "histogram",
            "help",
        ],
        sub,
    )?;
    match name {
        "doctor" => Ok(Frame::text(
            "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis \
             instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in \
             order to enable it. If we weren't in a deep space mission I'd suggest to take a \
             look at https://redis.io/topics/latency-monitor.\n",
        )),
        "graph" => Err(super::error_echoing(&[
            b"ERR No samples available for event '",
            super::c_text(args.next_bytes()?, 128),
            b"'",
        ])),
        "history" | "latest" => Ok(Frame::Array(Vec::new())),
        "reset" => Ok(Frame::Integer(0)),
        "histogram" => {
            let names: Vec<String> = args
                .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            Ok(cx.engine().stats().latency_histogram(&names))
        }
        _ => Ok(help_reply(LATENCY_HELP)),
    }
}

/// The unix second of the last save: the server's start until `SAVE` or `BGSAVE` runs.
fn lastsave_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let started = cx.engine().started_at().div_euclid(1000);
    Ok(Frame::Integer(
        cx.server_state().last_save.unwrap_or(started),
    ))
}

/// `SAVE`: the fake writes no file (its persistence is a fault-plan switch); it answers as a
/// server whose save succeeded, and `LASTSAVE` moves.
fn save_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let now = cx.now.div_euclid(1000);
    cx.server_state().last_save = Some(now);
    Ok(Frame::OK)
}

/// `BGSAVE [SCHEDULE]`: as `SAVE`, with Redis's reply for a background save.
fn bgsave_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    match args.next() {
        None => {}
        Some(a) if is(a, "schedule") && args.remaining() == 0 => {}
        Some(_) => return Err(super::SYNTAX),
    }
    save_command(cx, args)?;
    Ok(Frame::simple("Background saving started"))
}

fn bgrewriteaof_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    cx.server_state().aof_written = true;
    Ok(Frame::simple(
        "Background append only file rewriting started",
    ))
}

/// `ROLE`: the node's place in its topology (`cmd/replication.rs`).
fn role_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    Ok(super::replication::role(cx))
}

/// `MOVE key db`: the key, its value and TTL, to database `db`; 0 when it is missing or `db`
/// has the key already.
fn move_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let key = args.next_bytes()?;
    let db = i64::from(args.next_i32()?);
    if !(0..crate::engine::DATABASES as i64).contains(&db) {
        return Err(Frame::error("ERR DB index is out of range"));
    }
    let target = db as usize;
    if target == cx.db {
        return Err(Frame::error(
            "ERR source and destination objects are the same",
        ));
    }
    let now = cx.now;
    if cx.lookup(key).is_none() || cx.keyspace_at(target).lookup(key, now).is_some() {
        return Ok(Frame::Integer(0));
    }
    let Some(entry) = cx.keyspace().remove(key, now) else {
        return Ok(Frame::Integer(0));
    };
    let (deadline, marks) = (entry.deadline(), entry.encoding_marks());
    cx.keyspace_at(target)
        .insert(key, entry.value, deadline, now);
    set_marks(cx, target, key, marks);
    cx.keyspace().touch(key);
    cx.keyspace_at(target).touch(key);
    cx.notify(super::class::GENERIC, "move_from", key);
    cx.notify_at(target, super::class::GENERIC, "move_to", key);
    Ok(Frame::Integer(1))
}

/// `SWAPDB index1 index2`: the two databases trade their keys (`Db::swap` says what stays).
fn swapdb_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let index = |arg: &[u8], which: &str| {
        int(arg)
            .ok()
            .and_then(|i| i32::try_from(i).ok())
            .map(i64::from)
            .ok_or_else(|| Frame::error_owned(format!("ERR invalid {which} DB index")))
    };
    let first = index(args.next_bytes()?, "first")?;
    let second = index(args.next_bytes()?, "second")?;
    let databases = 0..crate::engine::DATABASES as i64;
    if !databases.contains(&first) || !databases.contains(&second) {
        return Err(Frame::error("ERR DB index is out of range"));
    }
    let (low, high) = (first.min(second) as usize, first.max(second) as usize);
    if low != high {
        let now = cx.now;
        let (below, above) = cx.keyspaces().split_at_mut(high);
        crate::engine::db::Db::swap(&mut below[low], &mut above[0], now);
        cx.node().rescan_field_ttls();
    }
    Ok(Frame::OK)
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]` (Redis's `shutdownCommand`): the server
/// stops (`engine/shutdown.rs`) and the caller gets no reply. The fake has nothing to wait for
/// (no lagging replica is waited on) and its saves cannot fail, so every valid form but `ABORT`
/// stops at once, and `ABORT` finds no shutdown in progress.
fn shutdown_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let (mut nosave, mut save, mut now, mut force, mut abort) = (false, false, false, false, false);
    for arg in args.by_ref() {
        if is(arg, "nosave") {
            nosave = true;
        } else if is(arg, "save") {
            save = true;
        } else if is(arg, "now") {
            now = true;
        } else if is(arg, "force") {
            force = true;
        } else if is(arg, "abort") {
            abort = true;
        } else {
            return Err(super::SYNTAX);
        }
    }
    if (abort && (nosave || save || now || force)) || (nosave && save) {
        return Err(super::SYNTAX);
    }
    if abort {
        return Err(Frame::error("ERR No shutdown in progress."));
    }
    if !now && cx.caller != super::Caller::Client {
        return Err(Frame::error(
            "ERR SHUTDOWN without NOW or ABORT isn't allowed for DENY BLOCKING client",
        ));
    }
    let id = cx.client;
    cx.node().shut_down(id);
    Ok(Frame::OK)
}

#[cfg(test)]
mod tests {
    use crate::engine::db::Entry;

    #[test]
    fn the_access_clock_fits_in_the_entry_s_padding() {
        // The entry was 64 bytes before it kept an access time, and 56 once its deadline lost
        // its option tag; it must stay so, as every key of the keyspace pays for it.
        assert_eq!(std::mem::size_of::<Entry>(), 56);
    }
}
