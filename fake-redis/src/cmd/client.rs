//! What the server does around a connection's commands beyond running them: `MONITOR`'s feed,
//! `CLIENT PAUSE` holding commands, `CLIENT REPLY`, and the `CLIENT` subcommands that set them.
//!
//! Redis's `processCommand` makes two checks right before a command runs or is queued, after
//! authentication and the pub/sub context: a monitor may not touch the keyspace (`ERR Replica
//! can't interact with the keyspace`, as a monitor is a replica to Redis), and a paused server
//! postpones the command. [`gate`] makes them, once, for every client command; what Redis's
//! command table flags (`readonly`, `write`, `may-replicate`, `admin`) decides which commands
//! each rule takes. Then `call` shows the command to the monitors ([`Feed`]): after it ran, or
//! before for `EVAL` and `FCALL`, so that the commands their script calls come after them.

use super::command_docs::{flag, redis_flags};
use super::{Args, CmdResult, Cx, Spec, is, lookup_in};
use crate::engine::monitor::Source;
use crate::engine::pause::PauseMode;
use crate::engine::reply::ReplyMode;
use crate::engine::tracking::Tracking;
use crate::engine::{ClientId, Engine, Version};
use crate::resp::Frame;
use bytes::Bytes;

/// What becomes of a command at [`gate`].
pub(super) enum Gate {
    /// It runs (or is queued in the open transaction).
    Run,
    /// It is refused with this error, as a command refused before it runs.
    Refuse(Frame),
    /// A pause holds it: its client is blocked until the pause ends, and the command runs then.
    Postponed,
}

/// Redis's last checks before a command of client `id` runs (see the [module docs](self)):
/// `name` is its full name (`client|pause`), `may_block` whether its door can wait.
#[inline]
// `monitor` and `in_multi` are the client's, which its caller has already read.
#[allow(clippy::too_many_arguments)]
pub(super) fn gate(
    engine: &mut Engine,
    id: u64,
    monitor: bool,
    in_multi: bool,
    name: &'static str,
    argv: &[Bytes],
    may_block: bool,
    now: i64,
) -> Gate {
    let pause = engine.pause_at(now);
    if !monitor && !in_multi && pause.is_none() {
        return Gate::Run;
    }
    let flags = redis_flags(engine.version(), name);
    if in_multi && flags & flag::NO_MULTI != 0 {
        // Valkey names the command.
        return Gate::Refuse(match engine.version().is_valkey() {
            true => Frame::error_owned(format!(
                "ERR Command '{name}' not allowed inside a transaction"
            )),
            false => Frame::error("ERR Command not allowed inside a transaction"),
        });
    }
    if monitor {
        if flags & (flag::READONLY | flag::WRITE | flag::MAY_REPLICATE) != 0 {
            return Gate::Refuse(Frame::error("ERR Replica can't interact with the keyspace"));
        }
        // A monitor is a replica to Redis, and replicas are never paused.
        return Gate::Run;
    }
    let Some(pause) = pause else {
        return Gate::Run;
    };
    let held = match pause.mode {
        // Redis answers QUIT before it looks the command up: no pause holds it.
        PauseMode::All => name != "quit",
        PauseMode::Write => may_write(engine, id, name, argv, flags),
    };
    if !held || !may_block {
        return Gate::Run;
    }
    engine.postpone(id, argv.to_vec());
    Gate::Postponed
}

/// Whether a command may write or replicate, as `CLIENT PAUSE WRITE` judges it (Redis's
/// `is_may_replicate_command`): its table flags, an `EXEC` by its queued commands', and an
/// `EVAL` whose script declares its flags by them (`no-writes` or not) instead.
fn may_write(engine: &mut Engine, id: u64, name: &str, argv: &[Bytes], flags: u16) -> bool {
    const WRITES: u16 = flag::WRITE | flag::MAY_REPLICATE;
    if matches!(name, "eval" | "eval_ro")
        && let Some(declared) = argv
            .get(1)
            .and_then(|body| super::shebang::declared_flags(body))
    {
        return !declared.no_writes;
    }
    if name == "exec" {
        return super::command_docs::queued_with_flag(engine, id, WRITES);
    }
    flags & WRITES != 0
}

/// Runs again the commands the pause that just ended held (see `engine/pause.rs`), in the order
/// it held them, each through all of Redis's checks again; its reply ends its client's block.
pub(crate) fn resume_postponed(engine: &mut Engine, now: i64) {
    for id in engine.end_pause() {
        let Some(argv) = engine.take_postponed(id) else {
            continue;
        };
        let client = ClientId(id);
        let reply = super::dispatch::run_resumed(engine, id, &argv, now);
        // Blocked again (a `BLPOP`, or a new pause): its reply comes later.
        if !engine.is_blocked(client) {
            engine.settle_reply(client, &reply);
            engine.give_unblocked_reply(id, reply);
        }
        engine.end_command(client, now);
    }
}

/// How a command is shown to the monitors (see the [module docs](self)).
pub(super) struct Feed {
    /// Shown before it runs (`EVAL`, `FCALL`): their script's commands come after them.
    first: bool,
    /// Shown at all.
    shown: bool,
}

impl Feed {
    /// How `name` (a full name) is shown.
    pub fn of(version: crate::engine::Version, name: &str) -> Feed {
        let flags = redis_flags(version, name);
        let first = SCRIPTS.contains(&name);
        Feed {
            first,
            shown: first || flags & (flag::ADMIN | flag::SKIP_MONITOR) == 0,
        }
    }

    /// Before the command runs.
    pub fn before(&self, engine: &mut Engine, source: Source, db: usize, argv: &[Bytes], now: i64) {
        if self.first {
            engine.feed_monitors(source, db, &redact(argv), now);
        }
    }

    /// After it ran, in database `db` (the one the client has then).
    pub fn after(&self, engine: &mut Engine, source: Source, db: usize, argv: &[Bytes], now: i64) {
        if self.shown && !self.first {
            engine.feed_monitors(source, db, &redact(argv), now);
        }
    }
}

/// After a command a script called ran: the monitors see it (`[<db> lua]`), and a tracking
/// caller remembers the keys it read.
pub(crate) fn after_script_call(cx: &mut Cx<'_>, argv: &[Bytes]) {
    let version = cx.engine().version();
    let Some(spec) = argv.first().and_then(|n| lookup_in(version, n)) else {
        return;
    };
    let name = super::command_name(version, spec, argv).unwrap_or(spec.name);
    let (id, db, now) = (cx.client, cx.db, cx.now);
    let engine = cx.node();
    if engine.has_monitors() {
        let feed = Feed::of(version, name);
        feed.before(engine, Source::Script, db, argv, now);
        feed.after(engine, Source::Script, db, argv, now);
    }
    if engine.is_tracking() && remembers(engine, id, name) {
        engine.invalidate_logged(Some(id), now);
        // Redis 7.0 remembers the script's own keys; 7.2 on (so 7.4, and Valkey) the keys of
        // the command the script called.
        let keys = if version == Version::V7_0 {
            engine.script_keys()
        } else {
            super::command_docs::keys_of(version, argv)
        };
        engine.remember_tracked_keys(id, &keys);
    }
}

/// The arguments as the monitors see them: Redis redacts the password arguments of `AUTH` and
/// of `HELLO`'s `AUTH` option once the command has read them (a call it refused first shows
/// them, as Redis does).
fn redact(argv: &[Bytes]) -> Vec<Bytes> {
    const REDACTED: Bytes = Bytes::from_static(b"(redacted)");
    let mut shown = argv.to_vec();
    let name = argv.first().map_or(&[][..], |n| &n[..]);
    if is(name, "auth") && argv.len() <= 3 {
        for arg in &mut shown[1..] {
            *arg = REDACTED;
        }
    } else if is(name, "hello") && argv.len() >= 2 {
        let protover = super::int(&argv[1]);
        if !matches!(protover, Ok(2 | 3)) {
            return shown;
        }
        let mut j = 2;
        while j < argv.len() {
            let more = argv.len() - 1 - j;
            if is(&argv[j], "auth") && more >= 2 {
                shown[j + 1] = REDACTED;
                shown[j + 2] = REDACTED;
                j += 3;
            } else if is(&argv[j], "setname") && more >= 1 {
                j += 2;
            } else {
                break;
            }
        }
    }
    shown
}

// ---- MONITOR ----

pub(crate) static MONITOR: Spec = Spec::new("monitor", 1, 0, monitor_command);

/// `MONITOR`: from now on the connection sees every command the server runs.
fn monitor_command(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    if cx.caller != super::Caller::Client {
        // A transaction (and a script) expects one reply per command.
        return Err(Frame::error(
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    let id = cx.client;
    if !cx.node().add_monitor(id) {
        // Already a monitor: Redis ignores the command and answers nothing.
        cx.client().no_reply = true;
    }
    Ok(Frame::OK)
}

// ---- CLIENT REPLY, PAUSE, UNPAUSE ----

/// `CLIENT REPLY ON|OFF|SKIP` (see `engine/reply.rs`).
pub(super) fn client_reply(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let mode = args.next_bytes()?;
    let client = cx.client();
    if is(mode, "on") {
        client.reply_mode = ReplyMode::On;
        Ok(Frame::OK)
    } else if is(mode, "off") {
        client.reply_mode = ReplyMode::Off;
        Ok(Frame::OK)
    } else if is(mode, "skip") {
        if client.reply_mode != ReplyMode::Off {
            client.reply_mode = ReplyMode::SkipNext;
        }
        client.no_reply = true;
        Ok(Frame::OK)
    } else {
        Err(super::SYNTAX)
    }
}

/// `CLIENT PAUSE timeout [WRITE|ALL]`: the timeout in milliseconds from the command's time.
pub(super) fn client_pause(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let timeout = args.next_bytes()?;
    let mode = match args.next() {
        None => PauseMode::All,
        Some(m) if is(m, "write") => PauseMode::Write,
        Some(m) if is(m, "all") => PauseMode::All,
        Some(_) => return Err(Frame::error("ERR CLIENT PAUSE mode must be WRITE or ALL")),
    };
    let ms = super::int(timeout)
        .map_err(|_| Frame::error("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(Frame::error("ERR timeout is negative"));
    }
    // Redis's `getTimeoutFromObjectOrReply`: 0 means no time at all, so the pause is over at once.
    let until = if ms == 0 {
        0
    } else {
        cx.now
            .checked_add(ms)
            .ok_or_else(|| Frame::error("ERR timeout is out of range"))?
    };
    cx.node().pause_clients(until, mode);
    Ok(Frame::OK)
}

/// `CLIENT UNPAUSE`: the pause ends now, and the commands it held run once this one is done.
pub(super) fn client_unpause(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    cx.node().unpause();
    Ok(Frame::OK)
}

/// What `RESET` undoes here: monitoring, `CLIENT REPLY OFF` and tracking.
pub(super) fn reset(cx: &mut Cx<'_>) {
    let id = cx.client;
    cx.node().remove_monitor(id);
    cx.node().disable_tracking(id);
    cx.client().reply_mode = ReplyMode::On;
}

/// `CLIENT LIST`'s `flags`, in Redis's order (`N` for none).
pub(super) fn client_flags(c: &crate::engine::Client) -> String {
    let mut flags = String::new();
    if c.monitor {
        flags.push('O');
    }
    if c.is_subscriber() {
        flags.push('P');
    }
    if c.multi.is_some() {
        flags.push('x');
    }
    if c.is_blocked() {
        flags.push('b');
    }
    if let Some(t) = c.tracking.as_deref() {
        flags.push('t');
        if t.broken_redirect {
            flags.push('R');
        }
        if t.bcast {
            flags.push('B');
        }
    }
    if flags.is_empty() {
        flags.push('N');
    }
    flags
}

// ---- CLIENT TRACKING, CACHING, TRACKINGINFO, GETREDIR ----

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX prefix ...] [OPTIN] [OPTOUT]
/// [NOLOOP]`, checked in Redis 7.0's order (`engine/tracking.rs` does the tracking).
pub(super) fn client_tracking(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let on_off = args.next_bytes()?;
    let mut mode = Tracking::default();
    let mut prefixes: Vec<Bytes> = Vec::new();
    while let Some(option) = args.next() {
        let more = args.remaining() > 0;
        if is(option, "redirect") && more {
            if mode.redirect != 0 {
                return Err(Frame::error(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = args.next_int()?;
            let exists = u64::try_from(id)
                .ok()
                .is_some_and(|id| cx.engine().is_connected(ClientId(id)));
            if !exists {
                return Err(Frame::error(
                    "ERR The client ID you want redirect to does not exist",
                ));
            }
            mode.redirect = id as u64;
        } else if is(option, "bcast") {
            mode.bcast = true;
        } else if is(option, "optin") {
            mode.optin = true;
        } else if is(option, "optout") {
            mode.optout = true;
        } else if is(option, "noloop") {
            mode.noloop = true;
        } else if is(option, "prefix") && more {
            prefixes.push(args.next_bytes()?.clone());
        } else {
            return Err(super::SYNTAX);
        }
    }
    let id = cx.client;
    if is(on_off, "off") {
        cx.node().disable_tracking(id);
        return Ok(Frame::OK);
    }
    if !is(on_off, "on") {
        return Err(super::SYNTAX);
    }
    if !mode.bcast && !prefixes.is_empty() {
        return Err(Frame::error(
            "ERR PREFIX option requires BCAST mode to be enabled",
        ));
    }
    let current = cx.engine().tracking_of(ClientId(id)).cloned();
    if let Some(current) = &current
        && current.bcast != mode.bcast
    {
        return Err(Frame::error(
            "ERR You can't switch BCAST mode on/off before disabling tracking for this client, \
             and then re-enabling it with a different mode.",
        ));
    }
    if mode.bcast && (mode.optin || mode.optout) {
        return Err(Frame::error(
            "ERR OPTIN and OPTOUT are not compatible with BCAST",
        ));
    }
    if mode.optin && mode.optout {
        return Err(Frame::error(
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if let Some(current) = &current
        && ((mode.optin && current.optout) || (mode.optout && current.optin))
    {
        return Err(Frame::error(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, \
             and then re-enabling it with a different mode.",
        ));
    }
    if mode.bcast {
        let existing = current.map(|t| t.prefixes).unwrap_or_default();
        check_prefix_collisions(&existing, &prefixes)?;
    }
    cx.node().enable_tracking(id, mode, &prefixes);
    Ok(Frame::OK)
}

/// Redis's `checkPrefixCollisionsOrReply`: no two prefixes of a client may both match one key
/// (one may not start the other), among the new ones or against those it has.
fn check_prefix_collisions(
    existing: &std::collections::BTreeSet<Bytes>,
    new: &[Bytes],
) -> Result<(), Frame> {
    let overlap = |a: &[u8], b: &[u8]| {
        let n = a.len().min(b.len());
        a[..n] == b[..n]
    };
    for (i, prefix) in new.iter().enumerate() {
        let overlapping = |whose: &[u8], other: &[u8]| {
            super::error_echoing(&[
                b"ERR Prefix '",
                super::c_text(prefix, usize::MAX),
                whose,
                super::c_text(other, usize::MAX),
                b"'. Prefixes for a single client must not overlap.",
            ])
        };
        if let Some(old) = existing.iter().find(|old| overlap(old, prefix)) {
            return Err(overlapping(b"' overlaps with an existing prefix '", old));
        }
        if let Some(other) = new[i + 1..].iter().find(|other| overlap(prefix, other)) {
            return Err(overlapping(
                b"' overlaps with another provided prefix '",
                other,
            ));
        }
    }
    Ok(())
}

/// `CLIENT CACHING YES|NO`: the next command's reads are remembered (`OPTIN`), or not
/// (`OPTOUT`).
pub(super) fn client_caching(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let answer = args.next_bytes()?;
    let client = cx.client();
    let Some(t) = client.tracking.as_deref_mut() else {
        return Err(Frame::error(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with \
             OPTIN or OPTOUT mode enabled",
        ));
    };
    if is(answer, "yes") {
        if !t.optin {
            return Err(Frame::error(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if is(answer, "no") {
        if !t.optout {
            return Err(Frame::error(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(super::SYNTAX);
    }
    t.caching = true;
    Ok(Frame::OK)
}

/// `CLIENT TRACKINGINFO`: the flags, the redirect and the prefixes, as a map.
pub(super) fn client_trackinginfo(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let bulk = |s: &'static str| Frame::Bulk(Bytes::from_static(s.as_bytes()));
    let tracking = cx.engine().tracking_of(ClientId(cx.client));
    let mut flags = vec![bulk(if tracking.is_some() { "on" } else { "off" })];
    let (mut redirect, mut prefixes) = (-1, Vec::new());
    if let Some(t) = tracking {
        let named = [
            (t.bcast, "bcast"),
            (t.optin, "optin"),
            (t.optin && t.caching, "caching-yes"),
            (t.optout, "optout"),
            (t.optout && t.caching, "caching-no"),
            (t.noloop, "noloop"),
            (t.broken_redirect, "broken_redirect"),
        ];
        flags.extend(named.iter().filter(|(on, _)| *on).map(|&(_, f)| bulk(f)));
        redirect = t.redirect as i64;
        prefixes = t.prefixes.iter().cloned().map(Frame::Bulk).collect();
    }
    Ok(Frame::Map(vec![
        (bulk("flags"), Frame::Set(flags)),
        (bulk("redirect"), Frame::Integer(redirect)),
        (bulk("prefixes"), Frame::Array(prefixes)),
    ]))
}

/// `CLIENT GETREDIR`: the client tracking sends to (0 for itself), -1 when not tracking.
pub(super) fn client_getredir(cx: &mut Cx<'_>, _args: &mut Args<'_>) -> CmdResult {
    let redirect = cx
        .engine()
        .tracking_of(ClientId(cx.client))
        .map_or(-1, |t| t.redirect as i64);
    Ok(Frame::Integer(redirect))
}

/// After a command a client or its transaction or script ran, read-only and named `name`:
/// the tracking caller `id` remembers the keys it read, once the changes before it have sent
/// their invalidations. Redis remembers the keys of the commands a read-only script calls, not
/// the script's own.
pub(super) fn track_read(engine: &mut Engine, id: u64, name: &str, argv: &[Bytes], now: i64) {
    if remembers(engine, id, name) {
        engine.invalidate_logged(Some(id), now);
        let keys = super::command_docs::keys_of(engine.version(), argv);
        engine.remember_tracked_keys(id, &keys);
    }
}

/// Whether client `id` remembers what the read-only command `name` read.
fn remembers(engine: &Engine, id: u64, name: &str) -> bool {
    redis_flags(engine.version(), name) & flag::READONLY != 0
        && !matches!(name, "eval_ro" | "evalsha_ro" | "fcall_ro")
        && engine.tracking_of(ClientId(id)).is_some_and(|t| !t.bcast)
}

/// Before a command runs, while a client tracks: a script command's keys are noted, as Redis
/// 7.0 remembers them for the script's reads (`engine/tracking.rs`).
pub(super) fn before_call(engine: &mut Engine, name: &str, argv: &[Bytes]) {
    if SCRIPTS.contains(&name) {
        engine.set_script_keys(super::command_docs::keys_of(engine.version(), argv));
    }
}

/// The commands that run a script.
const SCRIPTS: &[&str] = &[
    "eval",
    "evalsha",
    "eval_ro",
    "evalsha_ro",
    "fcall",
    "fcall_ro",
];

/// After a client's own command: `CLIENT CACHING` covers only the next command (a whole
/// transaction, and no `CLIENT` command counts), as Redis's `resetClient` rules.
pub(super) fn end_client_command(engine: &mut Engine, id: u64, spec: &Spec) {
    if std::ptr::eq(spec, &super::connection::CLIENT) {
        return;
    }
    if let Some(c) = engine.client_mut(id)
        && c.multi.is_none()
        && let Some(t) = c.tracking.as_deref_mut()
    {
        t.caching = false;
    }
}
