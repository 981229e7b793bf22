//! What a command propagates to the command stream a `SYNC` client reads
//! (`engine/repl_stream.rs`), in the form redis-server 7.4.1 streams it.
//!
//! A write command that changed the dataset propagates; one that changed nothing (a `DEL` of a
//! missing key, a `SET NX` that did not set) does not, as Redis counts its dirty keys. A few
//! propagate whatever they changed (`FLUSHALL`, `PUBLISH`, `FUNCTION LOAD`). `EXEC` and the
//! scripting commands propagate nothing of their own: the commands they run do, one by one.
//! `XREADGROUP` propagates from inside its run, stream by stream, what it did to the group
//! ([`group_read`]), as Redis does.
//! Redis rewrites what would read differently on a replica later: every relative or
//! second-granular time becomes an absolute `PXAT`/`PEXPIREAT` in milliseconds (or a `DEL`
//! when it is already past), `GETDEL` a `DEL`, a float increment the value it made, a random
//! or blocking pop the pop it made.

use super::{Spec, WRITE};
use crate::engine::Engine;
use crate::resp::Frame;
use bytes::Bytes;

/// Before a command runs: the writes so far, when a client reads the stream.
#[inline]
pub(crate) fn mark(engine: &Engine) -> Option<u64> {
    engine.stream_writes()
}

/// After a command ran in database `db` at `now`: what it propagates joins the stream.
#[cold]
pub(crate) fn after(
    engine: &mut Engine,
    db: usize,
    now: i64,
    spec: &'static Spec,
    argv: &[Bytes],
    reply: &Frame,
    mark: u64,
) {
    let wrote = engine.stream_writes().is_some_and(|n| n > mark);
    let name = spec.name;
    if matches!(
        name,
        "exec"
            | "eval"
            | "evalsha"
            | "eval_ro"
            | "evalsha_ro"
            | "fcall"
            | "fcall_ro"
            | "xreadgroup"
    ) {
        return;
    }
    let failed = matches!(reply, Frame::Error(_) | Frame::ErrorBytes(_));
    let always = !failed
        && (matches!(
            name,
            "flushall" | "flushdb" | "publish" | "spublish" | "swapdb"
        ) || (name == "function"
            && argv.get(1).is_some_and(|sub| {
                ["load", "delete", "flush", "restore"]
                    .iter()
                    .any(|s| sub.eq_ignore_ascii_case(s.as_bytes()))
            })));
    if !(always || (wrote && spec.has(WRITE))) {
        return;
    }
    let lazy = engine
        .config()
        .settings
        .get("lazyfree-lazy-server-del")
        .is_some_and(|v| v == "yes");
    let commands = rewrite(name, argv, reply, now, lazy);
    engine.stream_commands(db, commands);
}

/// What one stream's part of an `XREADGROUP` in database `cx.db` propagates, while a client
/// reads the stream, as Redis's `streamReplyWithRange` does: the consumer's creation as `XGROUP
/// CREATECONSUMER` when `NOACK` made it (otherwise the claims make it), then for new entries
/// (`delivered`, the reply's entries; None for a read of the consumer's own history, which
/// propagates nothing) an `XCLAIM` of each to the consumer (none with `NOACK`) and the group's
/// last ID and read counter as `XGROUP SETID`.
pub(crate) fn group_read(
    cx: &mut super::Cx<'_>,
    key: &[u8],
    group: &Bytes,
    consumer: &Bytes,
    created: bool,
    delivered: Option<&Frame>,
    noack: bool,
) {
    let (db, now) = (cx.db, cx.now);
    let key = Bytes::copy_from_slice(key);
    let mut out = Vec::new();
    if created && noack {
        out.push(vec![
            b("XGROUP"),
            b("CREATECONSUMER"),
            key.clone(),
            group.clone(),
            consumer.clone(),
        ]);
    }
    let ids: Vec<Bytes> = match delivered {
        Some(Frame::Array(entries)) => (entries.iter())
            .filter_map(|entry| match entry {
                Frame::Array(e) => match e.first() {
                    Some(Frame::Bulk(id)) => Some(id.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    if !noack {
        for id in &ids {
            out.push(vec![
                b("XCLAIM"),
                key.clone(),
                group.clone(),
                consumer.clone(),
                b("0"),
                id.clone(),
                b("TIME"),
                num(now),
                b("RETRYCOUNT"),
                b("1"),
                b("FORCE"),
                b("JUSTID"),
                b("LASTID"),
                id.clone(),
            ]);
        }
    }
    let group_now = match cx.node().db_mut(db).stored(&key).map(|e| &e.value) {
        Some(crate::engine::db::Value::Stream(s)) => s.groups.get(group),
        _ => None,
    };
    if let (false, Some(g)) = (ids.is_empty(), group_now) {
        out.push(vec![
            b("XGROUP"),
            b("SETID"),
            key.clone(),
            group.clone(),
            Bytes::from(g.last_id.to_string()),
            b("ENTRIESREAD"),
            num(g.entries_read),
        ]);
    }
    if !out.is_empty() {
        cx.node().stream_commands(db, out);
    }
}

fn b(s: &'static str) -> Bytes {
    Bytes::from_static(s.as_bytes())
}

fn num(n: i64) -> Bytes {
    Bytes::from(n.to_string())
}

fn int(arg: Option<&Bytes>) -> Option<i64> {
    std::str::from_utf8(arg?).ok()?.parse().ok()
}

fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// An absolute time in ms from a time option's word and number, relative to `now`.
fn absolute(unit: &[u8], n: i64, now: i64) -> i64 {
    match () {
        _ if is(unit, "ex") || is(unit, "expire") => now.saturating_add(n.saturating_mul(1000)),
        _ if is(unit, "px") || is(unit, "pexpire") => now.saturating_add(n),
        _ if is(unit, "exat") || is(unit, "expireat") => n.saturating_mul(1000),
        _ => n,
    }
}

/// The commands `argv` propagates as (see the module docs).
/// `lazy`: `lazyfree-lazy-server-del`, which makes a deletion Redis decides an `UNLINK`.
fn rewrite(name: &str, argv: &[Bytes], reply: &Frame, now: i64, lazy: bool) -> Vec<Vec<Bytes>> {
    let key = || argv.get(1).cloned().unwrap_or_default();
    let same = || vec![argv.to_vec()];
    match name {
        "set" => {
            let at = argv
                .iter()
                .skip(3)
                .position(|a| ["ex", "px", "exat"].iter().any(|w| is(a, w)));
            match at.map(|i| i + 3) {
                Some(i) => match int(argv.get(i + 1)) {
                    Some(n) => {
                        let ms = absolute(&argv[i], n, now);
                        vec![vec![b("SET"), key(), argv[2].clone(), b("PXAT"), num(ms)]]
                    }
                    None => same(),
                },
                None => same(),
            }
        }
        "setex" | "psetex" => {
            let unit = if name == "setex" { "ex" } else { "px" };
            match (int(argv.get(2)), argv.get(3)) {
                (Some(n), Some(value)) => {
                    let ms = absolute(unit.as_bytes(), n, now);
                    vec![vec![b("SET"), key(), value.clone(), b("PXAT"), num(ms)]]
                }
                _ => same(),
            }
        }
        "expire" | "pexpire" | "expireat" | "pexpireat" => match int(argv.get(2)) {
            Some(n) => {
                let ms = absolute(name.as_bytes(), n, now);
                if ms <= now {
                    vec![vec![b("DEL"), key()]]
                } else if name == "pexpireat" {
                    same()
                } else {
                    let mut out = vec![b("PEXPIREAT"), key(), num(ms)];
                    out.extend(argv.iter().skip(3).cloned());
                    vec![out]
                }
            }
            None => same(),
        },
        "getex" => match argv.get(2) {
            Some(opt) if is(opt, "persist") => vec![vec![b("PERSIST"), key()]],
            Some(opt) => match int(argv.get(3)) {
                Some(n) => {
                    let ms = absolute(opt, n, now);
                    if ms <= now {
                        vec![vec![b("DEL"), key()]]
                    } else {
                        vec![vec![b("PEXPIREAT"), key(), num(ms)]]
                    }
                }
                None => same(),
            },
            None => same(),
        },
        "getdel" => vec![vec![b("DEL"), key()]],
        "incrbyfloat" => match reply {
            Frame::Bulk(value) => vec![vec![b("SET"), key(), value.clone(), b("KEEPTTL")]],
            _ => same(),
        },
        "hincrbyfloat" => match (reply, argv.get(2)) {
            (Frame::Bulk(value), Some(field)) => {
                vec![vec![b("HSET"), key(), field.clone(), value.clone()]]
            }
            _ => same(),
        },
        "spop" => match reply {
            Frame::Bulk(member) => vec![vec![b("SREM"), key(), member.clone()]],
            Frame::Array(members) | Frame::Set(members) if !members.is_empty() => {
                let mut out = vec![b("SREM"), key()];
                out.extend(members.iter().filter_map(|m| match m {
                    Frame::Bulk(m) => Some(m.clone()),
                    _ => None,
                }));
                vec![out]
            }
            _ => same(),
        },
        "blpop" | "brpop" | "bzpopmin" | "bzpopmax" => match reply {
            Frame::Array(items) => match items.first() {
                Some(Frame::Bulk(popped)) => {
                    let pop = match name {
                        "blpop" => "LPOP",
                        "brpop" => "RPOP",
                        "bzpopmin" => "ZPOPMIN",
                        _ => "ZPOPMAX",
                    };
                    vec![vec![b(pop), popped.clone()]]
                }
                _ => same(),
            },
            _ => same(),
        },
        "blmove" if argv.len() == 6 => {
            let mut out = vec![b("LMOVE")];
            out.extend(argv[1..5].iter().cloned());
            vec![out]
        }
        "brpoplpush" if argv.len() == 4 => {
            vec![vec![b("RPOPLPUSH"), argv[1].clone(), argv[2].clone()]]
        }
        "restore" => {
            let absttl = argv.iter().skip(4).any(|a| is(a, "absttl"));
            match int(argv.get(2)) {
                // Already past: the key it replaced is deleted instead.
                Some(at) if at > 0 && absttl && at <= now => {
                    vec![vec![b(if lazy { "UNLINK" } else { "DEL" }), key()]]
                }
                Some(ttl) if ttl > 0 && !absttl => {
                    let mut out = argv.to_vec();
                    out[2] = num(now.saturating_add(ttl));
                    out.push(b("ABSTTL"));
                    vec![out]
                }
                _ => same(),
            }
        }
        _ => same(),
    }
}
