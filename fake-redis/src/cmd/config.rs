//! `CONFIG GET/SET/RESETSTAT/REWRITE/HELP` over Redis 7.0.15's own parameter table.
//!
//! Test suites read and set parameters before their first assertion (`notify-keyspace-events`,
//! `maxmemory`, `requirepass`), so every parameter of Redis 7.0 is here with its default, and
//! `CONFIG SET` checks a value as Redis does, with its error. The table is not written by hand:
//! `fake-redis/data/redis-7.0/config.tsv` (written by `fake-redis/scripts/capture-redis-tables.py`
//! from a fresh redis-server) holds each parameter's default and what Redis answered when set to a
//! word and to a number below every range, which gives its type (yes/no, integer and range,
//! memory, one of a list) and the exact error texts.
//!
//! What a parameter does in the fake: `requirepass` is the password new connections must `AUTH`
//! with; `busy-reply-threshold` (alias `lua-time-limit`) is the engine's
//! [`busy_reply_threshold_ms`](crate::engine::EngineConfig::busy_reply_threshold_ms);
//! `notify-keyspace-events` turns keyspace notifications on; `timeout` closes idle clients (the
//! TCP server's connections, `server/connection.rs`); `hz` and `active-expire-effort` tune the
//! active expiry cycle (`engine/expiry.rs`); `client-output-buffer-limit` bounds what a client
//! that does not read may have waiting; the encoding thresholds decide
//! `OBJECT ENCODING` and the memory estimate (`engine/memory.rs`); `maxmemory`,
//! `maxmemory-policy`, `maxmemory-samples`, `lfu-log-factor` and `lfu-decay-time` drive eviction
//! (`engine/evict.rs`) against that estimate. The others (persistence, replication)
//! are kept and shown but change nothing; the README lists them among the differences.

use super::{Args, CONTAINER, CmdResult, Cx, Spec};
use crate::engine::Version;
use crate::engine::glob::glob_match;
use crate::engine::notify::class;
use crate::engine::output_limits::OutputLimits;
use crate::resp::Frame;
use bytes::Bytes;
use std::sync::OnceLock;

pub(crate) static CONFIG: Spec = Spec::new("config", -2, CONTAINER, config_command);

/// One line per parameter: name, default, `CONFIG SET`'s answer to `x-bogus` and to
/// `-9223372036854775807`.
static TABLE_TSV: &str = include_str!("../../data/redis-7.0/config.tsv");
/// Redis 7.4.1's table, in the same form: 7.2 added parameters (`set-max-listpack-entries`,
/// `locale-collate`, ...), which a 7.4 server takes.
static TABLE_TSV_7_4: &str = include_str!("../../data/redis-7.4/config.tsv");

/// What values a parameter takes, read off Redis's answers.
#[derive(Debug)]
enum Kind {
    /// `yes` or `no`.
    Bool,
    /// An integer from `min` to `max`.
    Int { min: i64, max: i64 },
    /// A memory amount (`100mb`), shown in bytes; `percent`: or a percentage (`10%`).
    Memory { percent: bool },
    /// One of these words.
    OneOf(Vec<&'static str>),
    /// Not settable at run time, with Redis's reason.
    Refused(&'static str),
    /// Checked by its own rule (see [`check_special`]).
    Special,
    /// Any text.
    Text,
}

struct Param {
    name: &'static str,
    default: &'static str,
    kind: Kind,
}

/// The parameters `version` has: Redis 7.4's for 7.4, Redis 7.0's otherwise.
fn params(version: Version) -> &'static [Param] {
    static PARAMS: [OnceLock<Vec<Param>>; 2] = [OnceLock::new(), OnceLock::new()];
    let (slot, table) = match version {
        Version::V7_4 => (1, TABLE_TSV_7_4),
        _ => (0, TABLE_TSV),
    };
    PARAMS[slot].get_or_init(|| {
        table
            .lines()
            .filter_map(|line| {
                let mut f = line.split('\t');
                let (name, default) = (f.next()?, f.next()?);
                let (word, low) = (f.next()?, f.next()?);
                Some(Param {
                    name,
                    default,
                    kind: kind_of(word, low),
                })
            })
            .collect()
    })
}

/// The reason in one of Redis's `CONFIG SET failed (...) - <reason>` errors.
fn reason(answer: &'static str) -> &'static str {
    answer.split_once(" - ").map_or(answer, |(_, r)| r)
}

fn kind_of(word: &'static str, low: &'static str) -> Kind {
    let (word, low) = (reason(word), reason(low));
    if word == "OK" {
        return Kind::Text;
    }
    if word == "argument must be 'yes' or 'no'" {
        return Kind::Bool;
    }
    if word.starts_with("can't set") {
        return Kind::Refused(word);
    }
    if word == "argument must be a memory value" {
        return Kind::Memory { percent: false };
    }
    if word == "argument must be a memory or percent value" {
        return Kind::Memory { percent: true };
    }
    if let Some(list) = word.strip_prefix("argument(s) must be one of the following: ") {
        return Kind::OneOf(list.split(", ").collect());
    }
    if word == "argument couldn't be parsed into an integer"
        && let Some(range) = low
            .strip_prefix("argument must be between ")
            .and_then(|r| r.strip_suffix(" inclusive"))
        && let Some((min, max)) = range.split_once(" and ")
        && let (Ok(min), Ok(max)) = (min.parse(), max.parse())
    {
        return Kind::Int { min, max };
    }
    Kind::Special
}

/// The name a parameter's value is kept under: aliases (`slave-*`, `*-ziplist-*`,
/// `lua-time-limit`, and Valkey's `slowlog-*` for its `commandlog-*`) share their parameter's
/// value, as in Redis.
fn canonical(name: &str) -> String {
    match name {
        "lua-time-limit" => "busy-reply-threshold".to_owned(),
        "commandlog-execution-slower-than" => "slowlog-log-slower-than".to_owned(),
        "commandlog-slow-execution-max-len" => "slowlog-max-len".to_owned(),
        _ => name
            .replace("slave", "replica")
            .replace("ziplist", "listpack"),
    }
}

fn find(version: Version, name: &[u8]) -> Option<&'static Param> {
    params(version)
        .iter()
        .find(|p| p.name.as_bytes().eq_ignore_ascii_case(name))
}

/// The value a parameter has now.
fn value_of(cx: &Cx<'_>, param: &Param) -> String {
    let settings = &cx.engine().config().settings;
    match settings.get(&canonical(param.name)) {
        Some(v) => v.clone(),
        None if param.name == "requirepass" => cx
            .engine()
            .config()
            .requirepass
            .as_ref()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .unwrap_or_default(),
        None if canonical(param.name) == canonical("busy-reply-threshold") => {
            cx.engine().config().busy_reply_threshold_ms.to_string()
        }
        None if param.name == "maxclients" => cx.engine().client_limit().maxclients().to_string(),
        None if param.name == "enable-debug-command" => cx
            .engine()
            .config()
            .enable_debug_command
            .as_str()
            .to_owned(),
        None => param.default.to_owned(),
    }
}

const HELP: &[&str] = &[
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Prints this help.",
];

fn config_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    let name = super::server::subcommand(
        "CONFIG",
        &["get", "set", "resetstat", "rewrite", "help"],
        sub,
    )?;
    match name {
        "get" => Ok(get(cx, args)),
        "set" => set(cx, args),
        "resetstat" => {
            cx.reset_stats();
            Ok(Frame::OK)
        }
        "rewrite" => Err(Frame::error(
            "ERR The server is running without a config file",
        )),
        _ => Ok(Frame::Array(
            HELP.iter().map(|&l| Frame::simple(l)).collect(),
        )),
    }
}

/// `CONFIG GET <pattern> [<pattern> ...]`: a map of every matching parameter to its value, each
/// once. (Redis orders the map by its hash table, which is seeded at random: no order is its.)
fn get(cx: &mut Cx<'_>, args: &mut Args<'_>) -> Frame {
    // Each parameter once, under the name asked for when it was asked by name (as Redis does).
    let mut found: Vec<(&'static Param, Bytes)> = Vec::new();
    for pattern in args {
        let lower = pattern.to_ascii_lowercase();
        let glob = lower.iter().any(|b| b"*?[\\".contains(b));
        for param in params(cx.engine().version()) {
            let (matches, shown) = if glob {
                let name = Bytes::from_static(param.name.as_bytes());
                (glob_match(&lower, param.name.as_bytes()), name)
            } else {
                (param.name.as_bytes() == &lower[..], pattern.clone())
            };
            if matches && !found.iter().any(|(p, _)| std::ptr::eq(*p, param)) {
                found.push((param, shown));
            }
        }
    }
    Frame::Map(
        found
            .into_iter()
            .map(|(p, shown)| {
                (
                    Frame::Bulk(shown),
                    Frame::Bulk(Bytes::from(value_of(cx, p))),
                )
            })
            .collect(),
    )
}

fn failed(name: &str, why: &str) -> Frame {
    Frame::error_owned(format!(
        "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
    ))
}

/// `CONFIG SET <name> <value> [<name> <value> ...]`: every pair is checked before any is
/// applied, as Redis applies them all or none.
fn set(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let argv = args.rest();
    if !argv.len().is_multiple_of(2) {
        return Err(super::SYNTAX);
    }
    let mut changes: Vec<(&'static Param, String, &[u8])> = Vec::new();
    for pair in argv.chunks(2) {
        let Some(param) = find(cx.engine().version(), &pair[0]) else {
            return Err(super::error_echoing(&[
                b"ERR Unknown option or number of arguments for CONFIG SET - '",
                super::c_text(&pair[0], 128),
                b"'",
            ]));
        };
        // An alias and its parameter are not duplicates: the later one wins, as in Redis.
        if changes.iter().any(|(p, _, _)| std::ptr::eq(*p, param)) {
            return Err(failed(
                &String::from_utf8_lossy(&pair[0]),
                "duplicate parameter",
            ));
        }
        let value = check(param, &pair[1]).map_err(|why| failed(param.name, &why))?;
        if param.name == "maxclients"
            && let Some(ceiling) = cx.engine().client_limit().ceiling()
            && value.parse::<usize>().is_ok_and(|n| n > ceiling)
        {
            // Redis tries to raise the open-file limit, and refuses what it cannot serve.
            return Err(failed(
                param.name,
                &format!(
                    "The operating system is not able to handle the specified number of \
                     clients, try with {ceiling}"
                ),
            ));
        }
        changes.push((param, value, &pair[1]));
    }
    for (param, value, given) in changes {
        apply(cx, param, value, given);
    }
    Ok(Frame::OK)
}

/// The value a parameter takes from `raw`, as `CONFIG GET` will show it, or why not.
fn check(param: &Param, raw: &[u8]) -> Result<String, String> {
    let text = String::from_utf8_lossy(raw).into_owned();
    match &param.kind {
        Kind::Text => Ok(text),
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            v @ ("yes" | "no") => Ok(v.to_owned()),
            _ => Err("argument must be 'yes' or 'no'".to_owned()),
        },
        Kind::Refused(why) => Err((*why).to_owned()),
        Kind::OneOf(words) => {
            let lower = text.to_ascii_lowercase();
            if words.contains(&lower.as_str()) {
                Ok(lower)
            } else {
                Err(format!(
                    "argument(s) must be one of the following: {}",
                    words.join(", ")
                ))
            }
        }
        Kind::Int { min, max } => {
            let n = super::int(raw).map_err(|_| "argument couldn't be parsed into an integer")?;
            if n < *min || n > *max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            // Redis keeps `hz` within 1..=500 whatever it is set to.
            if param.name == "hz" {
                return Ok(n.clamp(1, 500).to_string());
            }
            Ok(n.to_string())
        }
        Kind::Memory { percent } => {
            if *percent && let Some(p) = text.strip_suffix('%') {
                return match p.parse::<u64>() {
                    Ok(_) => Ok(text),
                    Err(_) => Err("argument must be a memory or percent value".to_owned()),
                };
            }
            let why = if *percent {
                "argument must be a memory or percent value"
            } else {
                "argument must be a memory value"
            };
            let bytes = memory(&text).ok_or(why)?;
            Ok(bytes.to_string())
        }
        Kind::Special => check_special(param.name, &text),
    }
}

/// A memory amount as Redis's `memtoull` reads it: digits with an optional unit (`k` is 1000,
/// `kb` 1024, and so on up to `gb`), in any case.
pub(crate) fn memory(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = match &lower[digits.len()..] {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// The parameters with a rule of their own.
fn check_special(name: &str, text: &str) -> Result<String, String> {
    match name {
        "notify-keyspace-events" => keyspace_events(text)
            .map(keyspace_events_text)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_owned()),
        "save" => {
            let words: Vec<&str> = text.split_whitespace().collect();
            let numbers = words.iter().all(|w| w.parse::<i64>().is_ok_and(|n| n >= 0));
            if words.len().is_multiple_of(2) && numbers {
                Ok(words.join(" "))
            } else {
                Err("Invalid save parameters".to_owned())
            }
        }
        "bind" => Err("Failed to bind to specified addresses.".to_owned()),
        // Checked here, merged into the classes it leaves alone when applied.
        "client-output-buffer-limit" => OutputLimits::default()
            .updated(text, memory)
            .map(|_| text.to_owned())
            .map_err(str::to_owned),
        _ => Ok(text.to_owned()),
    }
}

/// The letters of the classes `A` stands for and `n`, in the order Redis writes them back.
const CLASS_LETTERS: [(u8, u16); 11] = [
    (b'g', class::GENERIC),
    (b'$', class::STRING),
    (b'l', class::LIST),
    (b's', class::SET),
    (b'h', class::HASH),
    (b'z', class::ZSET),
    (b'x', class::EXPIRED),
    (b'e', class::EVICTED),
    (b't', class::STREAM),
    (b'd', class::MODULE),
    (b'n', class::NEW),
];

/// Redis's `keyspaceEventsStringToFlags`: None for a letter it does not know.
pub(crate) fn keyspace_events(text: &str) -> Option<u16> {
    let mut flags = 0;
    for b in text.bytes() {
        flags |= match b {
            b'A' => class::ALL,
            b'K' => class::KEYSPACE,
            b'E' => class::KEYEVENT,
            b'm' => class::KEY_MISS,
            _ => CLASS_LETTERS.iter().find(|(l, _)| *l == b)?.1,
        };
    }
    Some(flags)
}

/// Redis 7.0's `keyspaceEventsFlagsToString`: `A` for all its classes (then `n` is not
/// written), `K`, `E`, and `m` last.
fn keyspace_events_text(flags: u16) -> String {
    let mut out = String::new();
    if flags & class::ALL == class::ALL {
        out.push('A');
    } else {
        for (letter, bit) in CLASS_LETTERS {
            if flags & bit != 0 {
                out.push(char::from(letter));
            }
        }
    }
    for (letter, bit) in [
        ('K', class::KEYSPACE),
        ('E', class::KEYEVENT),
        ('m', class::KEY_MISS),
    ] {
        if flags & bit != 0 {
            out.push(letter);
        }
    }
    out
}

/// Applies a checked value (`given` as the client wrote it).
fn apply(cx: &mut Cx<'_>, param: &Param, value: String, given: &[u8]) {
    let config = cx.config_mut();
    match param.name {
        "requirepass" => {
            config.requirepass = (!value.is_empty()).then(|| Bytes::from(value.clone()));
            // The `default` user's password, as Redis's `ACLUpdateDefaultUserPassword` sets it.
            cx.acl_mut()
                .users
                .set_default_password(Some(value.as_bytes()));
        }
        "timeout" => config.idle_timeout_s = value.parse().unwrap_or(0),
        "maxclients" => {
            // Checked against the ceiling in `set`; kept where the server admits by it.
            let _ = cx
                .engine()
                .client_limit()
                .set_maxclients(value.parse().unwrap_or(usize::MAX));
            return;
        }
        "busy-reply-threshold" | "lua-time-limit" => {
            config.busy_reply_threshold_ms = value.parse().unwrap_or(0);
            // On the wall clock the watch times scripts; under the instruction budget (virtual
            // clocks) the value is only kept, as nothing there is measured in time.
            let ms = config.busy_reply_threshold_ms;
            let watch = cx.script_watch();
            if watch.on_wall_clock() {
                watch.measure_on_wall_clock(std::time::Duration::from_millis(ms));
            }
        }
        _ => {}
    }
    let value = if param.name == "client-output-buffer-limit" {
        // Only the classes named change; `CONFIG GET` shows all three.
        let config = cx.config_mut();
        let limits = config
            .output_limits
            .updated(&value, memory)
            .unwrap_or(config.output_limits);
        config.output_limits = limits;
        limits.to_string()
    } else {
        value
    };
    super::server::config_changed(cx, &canonical(param.name), &value);
    let config = cx.config_mut();
    config.settings.insert(canonical(param.name), value.clone());
    if param.name == "notify-keyspace-events" {
        // From the letters given: the value shown leaves `n` out after `A`, as Redis's does,
        // while the flag stays on.
        let flags = keyspace_events(&String::from_utf8_lossy(given)).unwrap_or(0);
        cx.set_keyspace_events(flags);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_parameter_has_a_kind_and_the_known_ones_are_read_right() {
        assert_eq!(params(Version::V7_0).len(), 192);
        assert_eq!(params(Version::V7_4).len(), 202);
        let kind = |n: &str| format!("{:?}", find(Version::V7_0, n.as_bytes()).unwrap().kind);
        assert_eq!(kind("appendonly"), "Bool");
        assert_eq!(kind("timeout"), "Int { min: 0, max: 2147483647 }");
        assert_eq!(kind("maxmemory"), "Memory { percent: false }");
        assert!(kind("maxmemory-policy").starts_with("OneOf"));
        assert!(kind("daemonize").starts_with("Refused"));
        assert_eq!(kind("requirepass"), "Text");
    }

    #[test]
    fn keyspace_event_flags_read_back_as_redis_writes_them() {
        for (set, shown) in [
            ("KEA", "AKE"),
            ("Kx", "xK"),
            ("", ""),
            ("Am", "Am"),
            ("AnK", "AK"),
            ("g$lshzxetdm", "Am"),
            ("Kmn", "nKm"),
            ("EA", "AE"),
        ] {
            assert_eq!(keyspace_events_text(keyspace_events(set).unwrap()), shown);
        }
        assert_eq!(keyspace_events("Q"), None);
    }
}
