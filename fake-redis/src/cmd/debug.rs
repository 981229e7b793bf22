//! `DEBUG`, behind Redis's own switch (`enable-debug-command`, [`DebugCommand`]): refused by
//! default, as Redis 7.0 refuses it (dispatch refuses it before authentication, as Redis's
//! `CMD_PROTECTED` check does), and served when a server or a test handle turns it on, because
//! Redis's own test suite and many client suites set up with it.
//!
//! The subcommands served are the ones tests reach: `SLEEP` (on a virtual clock it moves the
//! clock; on a clock that moves by itself the server is busy until the time has passed, which
//! the front doors wait out without holding the engine, see [`ScriptWatch::sleep_until`]),
//! `RELOAD` (every key through the RDB encoding `DUMP` writes and back, `engine/rdb.rs`), `OBJECT`,
//! `LISTPACK`, `SET-ACTIVE-EXPIRE`, `CHANGE-REPL-ID`, `QUICKLIST-PACKED-THRESHOLD`,
//! `SET-DISABLE-DENY-SCRIPTS`, `STRINGMATCH-TEST`, `PROTOCOL`, `DIGEST` and `DIGEST-VALUE`
//! (`digest.rs`). The others (crashes, allocator and hash-table internals, AOF, replication
//! plumbing) answer Redis's unknown-subcommand error; the book lists them and why.
//!
//! [`DebugCommand`]: crate::engine::DebugCommand
//! [`ScriptWatch::sleep_until`]: crate::engine::script_watch::ScriptWatch::sleep_until

use super::digest::{dataset_digest, hex, value_digest};
use super::server::{encoding, help_reply, note_size};
use super::{Args, CmdResult, Cx, Spec, is, subcommand_syntax};
use crate::engine::ClientId;
use crate::engine::db::{Entry, LRU_CLOCK_MAX, Value, lru_clock};
use crate::engine::rdb::{self, Compact};
use crate::resp::Frame;
use bytes::Bytes;
use std::borrow::Cow;

// Not `NO_AUTH`: once the switch lets it through, `DEBUG` needs authentication as any command.
pub(crate) static DEBUG: Spec =
    Spec::new("debug", -2, 0, debug_command).with_reads(super::ReadRule::Never);

/// Redis's refusal while `enable-debug-command` is `no`.
pub(crate) fn refused() -> Frame {
    Frame::error(
        "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", \
         you can run it from a local connection, otherwise you need to set this option in the \
         configuration file, and then restart the server.",
    )
}

const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes.",
    "RELOAD [option ...]",
    "    Save the RDB and reload it back to memory.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Disable (0) or enable (1) expiring keys in the background.",
    "SET-DISABLE-DENY-SCRIPTS <0|1>",
    "    Let scripts call commands flagged noscript (1), or not (0).",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "HELP",
    "    Prints this help.",
];

/// `DEBUG <subcommand> ...`: each subcommand with the argument count Redis's `debugCommand`
/// matches it with; any other form gets Redis's unknown-subcommand error.
fn debug_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let n = args.remaining();
    let arg = |args: &mut Args<'_>| args.next_bytes().cloned();
    match () {
        _ if is(sub, "help") && n == 0 => Ok(help_reply(HELP)),
        _ if is(sub, "sleep") && n == 1 => Ok(sleep(cx, &arg(args)?)),
        _ if is(sub, "reload") => reload(cx, args.rest()),
        _ if is(sub, "loadaof") && n == 0 && loadaof_known(cx) => loadaof(cx),
        _ if is(sub, "object") && n == 1 => object(cx, &arg(args)?),
        _ if is(sub, "listpack") && n == 1 => listpack(cx, &arg(args)?),
        _ if is(sub, "set-active-expire") && n == 1 => {
            let on = c_atoi(&arg(args)?) != 0;
            cx.node().set_active_expire(on);
            Ok(Frame::OK)
        }
        _ if is(sub, "pause-cron") && n == 1 => {
            cx.server_state().debug.pause_cron = c_atoi(&arg(args)?) != 0;
            Ok(Frame::OK)
        }
        _ if is(sub, "change-repl-id") && n == 0 => {
            cx.node().change_replication_id();
            Ok(Frame::OK)
        }
        _ if is(sub, "quicklist-packed-threshold") && n == 1 => packed_threshold(cx, &arg(args)?),
        _ if is(sub, "set-disable-deny-scripts") && n == 1 => {
            let off = c_atoi(&arg(args)?) != 0;
            cx.server_state().debug.deny_scripts_disabled = off;
            Ok(Frame::OK)
        }
        _ if is(sub, "stringmatch-test") && n == 0 => {
            Ok(Frame::simple("Apparently Redis did not crash: test passed"))
        }
        _ if is(sub, "protocol") && n == 1 => protocol(cx, &arg(args)?),
        _ if is(sub, "digest") && n == 0 => Ok(Frame::Simple(Cow::Owned(hex(&digest_all(cx))))),
        _ if is(sub, "digest-value") => Ok(digest_values(cx, args.rest())),
        _ => Err(subcommand_syntax("DEBUG", sub)),
    }
}

/// C's `atoi`: optional blanks, an optional sign, then digits as far as they go (0 for none).
fn c_atoi(arg: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(arg);
    let text = text.trim_start();
    let (sign, digits) = match text.as_bytes().first() {
        Some(b'-') => (-1, &text[1..]),
        Some(b'+') => (1, &text[1..]),
        _ => (1, text),
    };
    let end = digits
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    sign * digits[..end].parse::<i64>().unwrap_or(0)
}

/// C's `strtod` as `atof` uses it: the longest leading number (0 for none).
fn c_atof(arg: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(arg);
    let text = text.trim_start();
    let end = text
        .bytes()
        .position(|b| !(b.is_ascii_digit() || b"+-.eE".contains(&b)))
        .unwrap_or(text.len());
    (1..=end)
        .rev()
        .find_map(|len| text[..len].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// `DEBUG SLEEP <seconds>`: on a virtual clock the clock moves on by that long (nothing else
/// runs meanwhile, as nothing runs on a sleeping Redis); on a clock that moves by itself the
/// server is busy until then: the caller's reply and every other client's next command wait.
fn sleep(cx: &mut Cx<'_>, seconds: &[u8]) -> Frame {
    let ms = (c_atof(seconds) * 1000.0).clamp(0.0, i64::MAX as f64 / 2.0) as i64;
    if ms > 0 && !cx.node().advance_clock_by(ms) {
        let until = cx.now.saturating_add(ms);
        cx.script_watch().sleep_until(until);
    }
    Frame::OK
}

/// `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`: every key saved as `DUMP` saves it and loaded
/// back, as Redis's save, flush and load: encodings are chosen afresh from the values, access
/// times start over, keys past their time are not loaded, and every watcher of a key is
/// touched. The fake keeps no file, so the options are checked and each form reloads what
/// it holds; `NOFLUSH` without `MERGE` fails as Redis's does when a function library is loaded
/// (its load meets the library already there). Redis kills itself on a key loaded over
/// another under `NOFLUSH`; the fake reloads it.
fn reload(cx: &mut Cx<'_>, options: &[Bytes]) -> CmdResult {
    if !options
        .iter()
        .all(|o| is(o, "merge") || is(o, "noflush") || is(o, "nosave"))
    {
        return Err(Frame::error(
            "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
        ));
    }
    let (noflush, merge) = (
        options.iter().any(|o| is(o, "noflush")),
        options.iter().any(|o| is(o, "merge")),
    );
    if noflush && !merge && has_functions(cx) {
        // Loading a library over itself fails, as loading Redis's RDB over its own does.
        return Err(Frame::error("ERR Error trying to load the RDB dump"));
    }
    reload_keys(cx);
    let now = cx.now;
    cx.server_state().last_save = Some(now.div_euclid(1000));
    Ok(Frame::OK)
}

/// `DEBUG LOADAOF`: with `appendonly yes`, the data set as Redis's append-only file holds it,
/// which is what memory holds (a reload, as `DEBUG RELOAD`'s, without its save); the same after
/// a `BGREWRITEAOF`, whose file Redis loads with `appendonly no` too. With `appendonly no` and no
/// file, Redis 7.4 empties its databases, finds nothing to load and says so (Redis 7.0 exits;
/// the fake's 7.0 mode knows no `LOADAOF` then).
fn loadaof(cx: &mut Cx<'_>) -> CmdResult {
    let appendonly = cx.engine().config().appendonly();
    // The fake's append-only file is its dataset as it stands: with `appendonly yes`, or once
    // `BGREWRITEAOF` has written one, loading it back is a reload, encodings chosen afresh.
    if appendonly || cx.server_state().aof_written {
        reload_keys(cx);
        return Ok(Frame::OK);
    }
    let now = cx.now;
    for db in 0..crate::engine::DATABASES {
        cx.keyspace_at(db).flush(now);
    }
    Err(Frame::error(
        "ERR Error trying to load the AOF files, check server logs.",
    ))
}

/// Every key saved as `DUMP` saves it and loaded back (see [`reload`]).
fn reload_keys(cx: &mut Cx<'_>) {
    let now = cx.now;
    let encodings = cx.server_state().encodings.clone();
    let version = cx.engine().version();
    for db in 0..crate::engine::DATABASES {
        let saved: Vec<(Bytes, Option<i64>, Vec<u8>)> = cx
            .keyspace_at(db)
            .live_iter(now)
            .map(|(key, entry)| {
                let compact = match encoding(entry, &encodings) {
                    "listpack" | "listpackex" | "intset" => Compact::Yes,
                    _ => Compact::No,
                };
                let payload = rdb::dump(&entry.value, compact, version);
                (Bytes::copy_from_slice(key), entry.deadline(), payload)
            })
            .collect();
        cx.keyspace_at(db).flush(now);
        let current = cx.db;
        cx.db = db;
        for (key, deadline, payload) in saved {
            // The fake wrote these bytes a moment ago: a load cannot fail.
            if let Ok(value) = rdb::load(&payload, version) {
                cx.keyspace().insert(&key, value, deadline, now);
                note_size(cx, &key);
            }
        }
        cx.db = current;
    }
}

/// Whether `DEBUG LOADAOF` answers: always from Redis 7.4 on; in 7.0 mode only with
/// `appendonly yes` (Redis 7.0 exits on it otherwise).
fn loadaof_known(cx: &Cx<'_>) -> bool {
    let config = cx.engine().config();
    config.version != crate::engine::Version::V7_0 || config.appendonly()
}

/// Whether a function library is loaded.
fn has_functions(cx: &mut Cx<'_>) -> bool {
    #[cfg(feature = "lua")]
    return !cx.functions().is_empty();
    #[cfg(not(feature = "lua"))]
    {
        let _ = cx;
        false
    }
}

/// The entry at `key` as stored, live or not (Redis's debug lookups ignore expiry), or
/// `ERR no such key`.
fn stored<'c>(cx: &'c mut Cx<'_>, key: &[u8]) -> Result<&'c Entry, Frame> {
    cx.keyspace()
        .stored(key)
        .ok_or_else(|| Frame::error("ERR no such key"))
}

/// `DEBUG OBJECT <key>`: Redis's one line about the value (an address made up from the key,
/// since the fake's values have none worth showing).
fn object(cx: &mut Cx<'_>, key: &[u8]) -> CmdResult {
    let now = cx.now;
    let encodings = cx.server_state().encodings.clone();
    let (list_size, compress) = list_settings(cx);
    let version = cx.engine().version();
    let entry = stored(cx, key)?;
    let enc = encoding(entry, &encodings);
    let payload = rdb::dump(
        &entry.value,
        match enc {
            "listpack" | "listpackex" | "intset" => Compact::Yes,
            _ => Compact::No,
        },
        version,
    );
    // The RDB body: the payload less its type byte and its footer (version and CRC).
    let serialized = payload.len().saturating_sub(11);
    let (lru, idle) = (entry.accessed(), idle_seconds(entry.accessed(), now));
    let address = 0x7f00_0000_0000u64 | (crate::engine::db::hash_key(key) & 0xff_ffff_fff0);
    let refcount = super::server::refcount(entry, &encodings);
    let mut line = format!(
        "Value at:{address:#x} refcount:{refcount} encoding:{enc} \
         serializedlength:{serialized} lru:{lru} lru_seconds_idle:{idle}"
    );
    if let Value::List(list) = &entry.value {
        let bytes: usize = list.iter().map(crate::engine::memory::listpack_entry).sum();
        let nodes = bytes.div_ceil(8192).max(1);
        line.push_str(&format!(
            " ql_nodes:{nodes} ql_avg_node:{:.2} ql_listpack_max:{list_size} \
             ql_compressed:{} ql_uncompressed_size:{}",
            list.len() as f64 / nodes as f64,
            i32::from(compress != 0),
            bytes + nodes * 7,
        ));
    }
    Ok(Frame::Simple(Cow::Owned(line)))
}

/// `list-max-listpack-size` and `list-compress-depth`, as `CONFIG GET` shows them.
fn list_settings(cx: &Cx<'_>) -> (i64, i64) {
    let settings = &cx.engine().config().settings;
    let read = |name: &str, default: i64| {
        settings
            .get(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    (
        read("list-max-listpack-size", -2),
        read("list-compress-depth", 0),
    )
}

/// Redis's `estimateObjectIdleTime` in seconds: the 24-bit access clock wraps.
fn idle_seconds(at: u32, now: i64) -> u32 {
    let clock = lru_clock(now);
    if clock >= at {
        clock - at
    } else {
        clock + (LRU_CLOCK_MAX - at)
    }
}

/// `DEBUG LISTPACK <key>`: Redis prints the listpack on its standard output and says so; the
/// fake says so too (and prints nothing).
fn listpack(cx: &mut Cx<'_>, key: &[u8]) -> CmdResult {
    let encodings = cx.server_state().encodings.clone();
    let entry = stored(cx, key)?;
    if encoding(entry, &encodings) != "listpack" {
        return Err(Frame::error("ERR Not a listpack encoded object."));
    }
    Ok(Frame::simple("Listpack structure printed on stdout"))
}

/// `DEBUG QUICKLIST-PACKED-THRESHOLD <size>`: a memory value up to Redis's bound (4 GB less
/// 1 MB), 0 for the default. The fake keeps it; its lists have no nodes to make plain.
fn packed_threshold(cx: &mut Cx<'_>, size: &[u8]) -> CmdResult {
    const MAX: u64 = (1 << 32) - (1 << 20);
    let parsed = super::config::memory(&String::from_utf8_lossy(size)).filter(|&n| n <= MAX);
    let Some(bytes) = parsed else {
        return Err(Frame::error(
            "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
        ));
    };
    cx.server_state().debug.quicklist_packed_threshold = bytes;
    Ok(Frame::OK)
}

/// `DEBUG PROTOCOL <type>`: a reply of each of RESP3's types, with Redis's values (`attrib`'s
/// attribute reaches a RESP3 client only, as Redis sends it).
fn protocol(cx: &mut Cx<'_>, name: &[u8]) -> CmdResult {
    let ints = || (0..3).map(Frame::Integer).collect::<Vec<_>>();
    let frame = match () {
        _ if is(name, "string") => Frame::Bulk(Bytes::from_static(b"Hello World")),
        _ if is(name, "integer") => Frame::Integer(12345),
        // Redis's test value, not an approximation of pi.
        #[allow(clippy::approx_constant)]
        _ if is(name, "double") => Frame::Double(3.141),
        _ if is(name, "bignum") => Frame::BigNumber("1234567999999999999999999999999999999".into()),
        _ if is(name, "null") => Frame::Null,
        _ if is(name, "array") => Frame::Array(ints()),
        _ if is(name, "set") => Frame::Set(ints()),
        _ if is(name, "map") => Frame::Map(
            (0..3)
                .map(|j| (Frame::Integer(j), Frame::Boolean(j == 1)))
                .collect(),
        ),
        _ if is(name, "attrib") => Frame::Attribute {
            attributes: vec![(
                Frame::Bulk(Bytes::from_static(b"key-popularity")),
                Frame::Array(vec![
                    Frame::Bulk(Bytes::from_static(b"key:123")),
                    Frame::Integer(90),
                ]),
            )],
            value: Box::new(Frame::Bulk(Bytes::from_static(
                b"Some real reply following the attribute",
            ))),
        },
        _ if is(name, "push") => return push(cx),
        _ if is(name, "true") => Frame::Boolean(true),
        _ if is(name, "false") => Frame::Boolean(false),
        _ if is(name, "verbatim") => Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"This is a verbatim\nstring"),
        },
        _ => {
            return Err(Frame::error(
                "ERR Wrong protocol type name. Please use one of the following: \
                 string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ));
        }
    };
    Ok(frame)
}

/// `DEBUG PROTOCOL push`: a push message, then a reply. The push is the command's reply and
/// the reply that follows it waits in the client's outbox, which is written after the reply.
fn push(cx: &mut Cx<'_>) -> CmdResult {
    let resp3 = cx.engine().protocol(ClientId(cx.client)) >= 3;
    if !resp3 || cx.caller != super::Caller::Client {
        return Err(Frame::error("ERR RESP2 is not supported by this command"));
    }
    let now = cx.now;
    cx.client().push(
        now,
        Frame::Bulk(Bytes::from_static(
            b"Some real reply following the push reply",
        )),
    );
    Ok(Frame::Push(vec![
        Frame::Bulk(Bytes::from_static(b"server-cpu-usage")),
        Frame::Integer(42),
    ]))
}

/// The dataset's signature over every database, keys live or not as stored.
fn digest_all(cx: &mut Cx<'_>) -> [u8; 20] {
    let dbs = cx.keyspaces();
    dataset_digest(dbs.iter().enumerate().map(|(i, db)| (i, db.stored_iter())))
}

/// `DEBUG DIGEST-VALUE <key> ...`: one signature per key, zeros for a missing one.
fn digest_values(cx: &mut Cx<'_>, keys: &[Bytes]) -> Frame {
    let db = cx.keyspace();
    Frame::Array(
        keys.iter()
            .map(|k| Frame::Simple(Cow::Owned(hex(&value_digest(db.stored(k))))))
            .collect(),
    )
}
