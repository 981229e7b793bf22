//! Scripting: `EVAL`, `EVALSHA`, their `_RO` forms and `SCRIPT`, the registered native scripts
//! as Rust functions and every other body on the embedded Lua.
//!
//! The fake keeps Redis's protocol exactly (the cache starts empty; `EVAL` and `SCRIPT LOAD` put a
//! script in it; `EVALSHA` of anything else is `NOSCRIPT`; a restart or failover forgets it all).
//! A body registered in the engine's config ([`crate::native`]) runs as its function, over the
//! engine as a [`Keyspace`] at the command's frozen time: that is the fast path, with no Lua at
//! all. Any other body runs on the engine's Lua state (`lua/`, the `lua` feature); without that
//! feature it is refused with an error naming its SHA, never run wrongly.

use super::{
    Args, CONTAINER, CmdResult, Cx, Spec, WRITE, is, lookup, unknown_subcommand, wrong_arity,
};
use crate::engine::ScriptCache;
use crate::engine::db::{DeadlineChange, Probe, Value};
use crate::native::{CallError as CommandError, Keyspace, NativeScript};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static EVAL: Spec =
    Spec::new("eval", -3, WRITE, eval_command::<false, false>).with_reads(super::ReadRule::Never);
pub(crate) static EVALSHA: Spec =
    Spec::new("evalsha", -3, WRITE, eval_command::<true, false>).with_reads(super::ReadRule::Never);
pub(crate) static EVAL_RO: Spec =
    Spec::new("eval_ro", -3, 0, eval_command::<false, true>).with_reads(super::ReadRule::Never);
pub(crate) static EVALSHA_RO: Spec =
    Spec::new("evalsha_ro", -3, 0, eval_command::<true, true>).with_reads(super::ReadRule::Never);
pub(crate) static SCRIPT: Spec = Spec::new("script", -2, CONTAINER, script_command);

const NOSCRIPT: Frame = Frame::error("NOSCRIPT No matching script. Please use EVAL.");

/// The error for a body the fake cannot run (without Lua).
#[cfg(not(feature = "lua"))]
fn no_native_twin(natives: &crate::native::NativeScripts, body: &[u8]) -> Frame {
    let sha = sha1_hex(body);
    let names: Vec<&str> = natives.iter().map(|s| s.name()).collect();
    Frame::error_owned(format!(
        "ERR fake-redis has no native implementation of the script with SHA1 {sha}; \
         only the registered native scripts ({}) can run on the fake",
        names.join(", ")
    ))
}

/// The lowercase hex SHA1 of `body`, as `SCRIPT LOAD` replies it.
pub(crate) fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// `EVAL body numkeys key… arg…`, `EVALSHA sha numkeys key… arg…` and their read-only `_RO`
/// forms: each command's handler is built with its own `BY_SHA` and `READ_ONLY`, so that no call
/// compares the command's name again.
fn eval_command<const BY_SHA: bool, const READ_ONLY: bool>(
    cx: &mut Cx<'_>,
    args: &mut Args<'_>,
) -> CmdResult {
    let (by_sha, read_only) = (BY_SHA, READ_ONLY);
    let script = args.next_bytes()?;
    if by_sha && script.len() != 40 {
        return Err(NOSCRIPT);
    }
    let numkeys = args.next_int()?;
    if numkeys > args.remaining() as i64 {
        return Err(Frame::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if numkeys < 0 {
        return Err(Frame::error("ERR Number of keys can't be negative"));
    }
    // A user whose rights are limited runs the native scripts on their Lua bodies, so each of
    // their calls is checked as Redis checks a script's calls.
    let on_lua = cx.engine().lock_scripts_run_on_lua()
        || !super::acl::may_run_everything(cx.engine(), cx.client);
    let native = if by_sha {
        cx.scripts().get(script).cloned()
    } else {
        let s = cx.engine().config().native_scripts.by_body(script).cloned();
        if let Some(s) = &s {
            cx.scripts().insert(s);
        }
        s
    };
    let keys = args.take(numkeys as usize);
    if let Some(native) = native.filter(|_| !on_lua) {
        return Ok(run(cx, &native, keys, args.rest(), read_only));
    }
    #[cfg(feature = "lua")]
    {
        let source = if by_sha {
            crate::lua::Source::Sha(script)
        } else {
            crate::lua::Source::Body(script)
        };
        Ok(crate::lua::eval(cx, source, keys, args.rest(), read_only))
    }
    #[cfg(not(feature = "lua"))]
    {
        let _ = on_lua;
        Err(if by_sha {
            NOSCRIPT
        } else {
            no_native_twin(&cx.engine().config().native_scripts, script)
        })
    }
}

/// Runs one command a script calls, as the script's client: the engine sees a script's command
/// (`Caller::Script`) in the script's protocol, `resp` (2 unless the script said
/// `redis.setresp(3)`), and the reply comes in that protocol's shapes. The native scripts' commands
/// and Lua's `redis.call` both run here, after their own checks of what a script may call.
pub(crate) fn call_from_script(
    cx: &mut Cx<'_>,
    spec: &'static Spec,
    argv: &[Bytes],
    resp: u8,
) -> Frame {
    let protocol = std::mem::replace(&mut cx.client().protocol, resp);
    let caller = std::mem::replace(&mut cx.caller, super::Caller::Script);
    let reads = std::mem::replace(&mut cx.reads, super::reads_of(spec, argv));
    let mark = super::propagate::mark(cx.engine());
    let reply = (spec.run)(cx, &mut Args::new(argv)).unwrap_or_else(|error| error);
    if let Some(mark) = mark {
        let (db, now) = (cx.db, cx.now);
        super::propagate::after(cx.node(), db, now, spec, argv, &reply, mark);
    }
    cx.reads = reads;
    cx.count_script_call(spec, argv, &reply);
    cx.caller = caller;
    cx.client().protocol = protocol;
    if cx.engine().has_monitors() || cx.engine().is_tracking() {
        super::client::after_script_call(cx, argv);
    }
    if resp == 2 { reply.to_resp2() } else { reply }
}

/// Whether a `FLUSH` without `SYNC` or `ASYNC` flushes asynchronously
/// (`lazyfree-lazy-user-flush`).
pub(super) fn flushes_lazily(cx: &Cx<'_>) -> bool {
    let settings = &cx.engine().config().settings;
    settings
        .get("lazyfree-lazy-user-flush")
        .is_some_and(|v| v.eq_ignore_ascii_case("yes"))
}

/// How many scripts the cache holds, native and Lua (`number_of_cached_scripts`).
fn cached_scripts(cx: &mut Cx<'_>) -> usize {
    #[cfg(feature = "lua")]
    return crate::lua::memory(cx).cached_scripts as usize;
    #[cfg(not(feature = "lua"))]
    cx.scripts().native_bodies().len()
}

/// Whether a script with this SHA is in the cache, native or on the Lua state.
fn is_loaded(scripts: &ScriptCache, sha: &[u8]) -> bool {
    #[cfg(feature = "lua")]
    if crate::lua::contains(scripts, sha) {
        return true;
    }
    scripts.get(sha).is_some()
}

/// Runs `script`'s function over the command's database at its frozen time.
pub(super) fn run(
    cx: &mut Cx<'_>,
    script: &NativeScript,
    keys: &[Bytes],
    args: &[Bytes],
    ro: bool,
) -> Frame {
    cx.with_script_keys(keys, |cx| {
        // On a replica a logically expired key stays in the table, and writing a key a lookup
        // missed must find it: nothing is taken as missing there.
        let missing = match cx.keyspace().keeps_expired() {
            false => Missing::of(keys),
            true => Missing::default(),
        };
        // Keys by handle (`engine/db/handle.rs`) only while nothing else follows the writes and
        // no hash field has a TTL of its own.
        let quiet = cx.engine().config().notify_keyspace_events == 0
            && cx.keyspace().is_quiet()
            && cx.engine().no_field_ttls();
        let store = &mut ScriptStore {
            cx,
            read_only: ro,
            missing,
            quiet,
            wrote: false,
        };
        script.run(store, keys, args)
    })
}

/// `SCRIPT LOAD body`, `SCRIPT EXISTS sha…`, `SCRIPT FLUSH [SYNC|ASYNC]`, `SCRIPT KILL`.
fn script_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let sub = args.next_bytes()?;
    if is(sub, "load") {
        let [body] = args.rest() else {
            return Err(wrong_arity("script|load"));
        };
        if let Some(s) = cx.engine().config().native_scripts.by_body(body).cloned() {
            cx.scripts().insert(&s);
            return Ok(Frame::Bulk(Bytes::copy_from_slice(s.sha_bytes())));
        }
        #[cfg(feature = "lua")]
        return Ok(crate::lua::script_load(cx, body));
        #[cfg(not(feature = "lua"))]
        return Err(no_native_twin(&cx.engine().config().native_scripts, body));
    }
    if is(sub, "exists") {
        if args.remaining() < 1 {
            return Err(wrong_arity("script|exists"));
        }
        let scripts = cx.scripts();
        return Ok(Frame::Array(
            args.map(|sha| Frame::Integer(i64::from(is_loaded(scripts, sha))))
                .collect(),
        ));
    }
    if is(sub, "flush") {
        let asynchronous = match args.rest() {
            [] => flushes_lazily(cx),
            [mode] if is(mode, "sync") => false,
            [mode] if is(mode, "async") => true,
            [_] => {
                return Err(Frame::error(
                    "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
                ));
            }
            _ => return Err(wrong_arity("script|flush")),
        };
        if asynchronous {
            let cached = cached_scripts(cx);
            cx.node().count_lazy_free(cached, cached);
        }
        let scripts = cx.scripts();
        scripts.clear_native();
        #[cfg(feature = "lua")]
        crate::lua::flush(scripts);
        return Ok(Frame::OK);
    }
    if is(sub, "kill") {
        return Err(Frame::error("NOTBUSY No scripts in execution right now."));
    }
    if is(sub, "help") {
        return Ok(super::server::help_reply(SCRIPT_HELP));
    }
    Err(unknown_subcommand("SCRIPT", sub))
}

/// `SCRIPT HELP`'s lines, as Redis 7.0 prints them (Valkey's: `valkey_help.rs`).
const SCRIPT_HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

/// The engine as a native script sees it ([`Keyspace`]): the commands it calls, at the frozen
/// time of the `EVALSHA` that runs it.
struct ScriptStore<'a, 'b, 'k> {
    cx: &'a mut Cx<'b>,
    read_only: bool,
    missing: Missing<'k>,
    /// The database is quiet ([`Db::is_quiet`](crate::engine::db::Db::is_quiet)) and no keyspace
    /// event is published: the script's calls on its own keys go by handle.
    quiet: bool,
    /// The script has called a write (Redis's `SCRIPT_WRITE_DIRTY`): from then on it may grow
    /// memory whatever `maxmemory` says, as Redis lets it finish what it started.
    wrote: bool,
}

/// Which of the script's keys a call found missing, with no write to them since.
///
/// A lock script asks about its latch several times (`EXISTS`, then `PEXPIRE` and `SET … XX` to
/// try its arguments, then the `SET` that writes it) and about a free lock twice (`HGET`, then
/// `EXISTS`). Nothing but the script runs between its calls, at one frozen time, so a key found
/// missing stays missing until the script writes it: a later call does what the command does on a
/// missing key (a read still counts its miss) without searching the table again.
///
/// A call's key is matched by the address and length of its bytes, as `Cx`'s remembered hashes
/// are: only the script's own keys, which live as long as the script runs and never change, are
/// tracked. A caller may name one key twice (`KEYS[1]` equal to `KEYS[2]`), and a write through
/// one name must not leave the other known missing: then nothing is tracked.
///
/// While the database is quiet, what a call learned is a [`Probe`]: a key found live is known by
/// its slot too, and the next call on it goes straight there. Each tracked key keeps its hash
/// too, computed at its first probe, so a call finds its key's record once and reads both there.
#[derive(Clone, Copy, Default)]
struct Missing<'k> {
    keys: [Tracked<'k>; 4],
    len: usize,
}

/// One of a script's keys as [`Missing`] tracks it.
#[derive(Clone, Copy, Default)]
struct Tracked<'k> {
    key: &'k [u8],
    probe: Probe,
    /// Its hash, 0 until computed (a key whose hash is 0 is hashed at each call: only slower).
    hash: u64,
}

impl<'k> Missing<'k> {
    /// (The first four of) `keys`, none known missing yet; none tracked if two are equal.
    fn of(keys: &'k [Bytes]) -> Missing<'k> {
        let mut missing = Missing::default();
        for (entry, key) in missing.keys.iter_mut().zip(keys) {
            if keys[..missing.len].contains(key) {
                return Missing::default();
            }
            entry.key = key;
            missing.len += 1;
        }
        missing
    }

    /// Whether `key` is known to be missing.
    #[inline]
    fn has(&self, key: &[u8]) -> bool {
        self.get(key) == Probe::Missing
    }

    /// What a call learned about `key`: it is missing, or (found, or written) it may not be.
    #[inline]
    fn set(&mut self, key: &[u8], missing: bool) {
        self.put(
            key,
            match missing {
                true => Probe::Missing,
                false => Probe::Unknown,
            },
        );
    }

    /// What is known of `key`: Unknown for a key that is not tracked.
    #[inline]
    fn get(&self, key: &[u8]) -> Probe {
        self.position(key)
            .map_or(Probe::Unknown, |i| self.keys[i].probe)
    }

    /// Records what a call learned about `key` (nothing, for a key that is not tracked).
    #[inline]
    fn put(&mut self, key: &[u8], probe: Probe) {
        if let Some(i) = self.position(key) {
            self.keys[i].probe = probe;
        }
    }

    /// Where `key` is tracked, if it is: by the address and length of its bytes.
    #[inline]
    fn position(&self, key: &[u8]) -> Option<usize> {
        self.keys[..self.len]
            .iter()
            .position(|t| std::ptr::eq(t.key, key))
    }
}

fn unexpected(command: &[u8], reply: &Frame) -> CommandError {
    CommandError(format!(
        "ERR fake-redis: unexpected reply to {} inside a script: {reply:?}",
        String::from_utf8_lossy(command)
    ))
}

fn err(frame: Frame) -> CommandError {
    CommandError(frame.error_text().unwrap_or("ERR").to_owned())
}

impl ScriptStore<'_, '_, '_> {
    /// Runs one of the fair lock's list and sorted-set commands through the command table as a
    /// script's `redis.call` does (in RESP2, as the Lua body's calls are); an error reply comes
    /// back as the call's error.
    fn command(&mut self, argv: &[&[u8]]) -> Result<Frame, CommandError> {
        let spec = lookup(argv[0]).expect("the scripts call commands the fake has");
        if spec.has(WRITE) {
            let grows = self.cx.engine().out_of_memory()
                && super::command_docs::redis_flags(self.cx.engine().version(), spec.name)
                    & super::command_docs::flag::DENYOOM
                    != 0;
            self.writable(grows)?;
        }
        if argv.len() > 1 {
            // Any command through the table may write its key.
            self.missing.set(argv[1], false);
        }
        let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        match call_from_script(self.cx, spec, &argv, 2) {
            Frame::Error(e) => Err(CommandError(e.into_owned())),
            frame => Ok(frame),
        }
    }

    fn int_command(&mut self, argv: &[&[u8]]) -> Result<i64, CommandError> {
        match self.command(argv)? {
            Frame::Integer(n) => Ok(n),
            other => Err(unexpected(argv[0], &other)),
        }
    }

    fn bulk_command(&mut self, argv: &[&[u8]]) -> Result<Option<Bytes>, CommandError> {
        match self.command(argv)? {
            Frame::Bulk(b) => Ok(Some(b)),
            Frame::Null | Frame::NullArray => Ok(None),
            Frame::Array(items) if items.is_empty() => Ok(None),
            other => Err(unexpected(argv[0], &other)),
        }
    }

    fn score_command(&mut self, argv: &[&[u8]]) -> Result<Option<f64>, CommandError> {
        match self.command(argv)? {
            Frame::Bulk(b) => Ok(crate::resp::number::lua_tonumber(&b)),
            Frame::Null => Ok(None),
            other => Err(unexpected(argv[0], &other)),
        }
    }

    fn array_command(&mut self, argv: &[&[u8]]) -> Result<Vec<Bytes>, CommandError> {
        match self.command(argv)? {
            Frame::Array(items) => Ok(items
                .into_iter()
                .filter_map(|f| match f {
                    Frame::Bulk(b) => Some(b),
                    _ => None,
                })
                .collect()),
            other => Err(unexpected(argv[0], &other)),
        }
    }

    /// Redis's checks of a script's write call, in its order: a read-only script writes
    /// nothing, and a first write that may grow memory (`grows`) is refused while the server is
    /// out of memory (`engine/evict.rs`).
    fn writable(&mut self, grows: bool) -> Result<(), CommandError> {
        if self.read_only {
            return Err(CommandError(
                "ERR Write commands are not allowed from read-only scripts.".into(),
            ));
        }
        if grows && !self.wrote && self.cx.engine().out_of_memory() {
            return Err(CommandError(
                super::dispatch::OOM
                    .error_text()
                    .unwrap_or("OOM")
                    .to_owned(),
            ));
        }
        self.wrote = true;
        Ok(())
    }
}

impl ScriptStore<'_, '_, '_> {
    /// A read of `key`, known to be missing, as a lookup that missed would count it: a script's
    /// read call counts every lookup as a read and announces a miss, so this goes to the engine
    /// directly rather than through `Cx::reading` and back.
    #[inline]
    fn read_missed(&mut self, key: &[u8]) {
        let db = self.cx.db;
        self.cx.node().read_missed(db, key, true);
    }

    /// On a quiet database: what `key` is now, by one probe at most (none when a call of this
    /// script found it before), a live key marked accessed when `touch` is set; and where the
    /// key is tracked, to record what the call does to it.
    #[inline]
    fn probe(&mut self, key: &[u8], touch: bool) -> (Probe, Option<usize>) {
        let at = self.missing.position(key);
        let known = at.map_or(Probe::Unknown, |i| self.missing.keys[i].probe);
        if known == Probe::Missing {
            return (known, at);
        }
        let (now, h) = (self.cx.now, self.hash_at(at, key));
        let found = self.cx.keyspace().probe_again(known, key, h, now, touch);
        if let Some(i) = at {
            self.missing.keys[i].probe = found;
        }
        (found, at)
    }

    /// The hash of `key`, tracked at `at`: computed once per script run.
    #[inline]
    fn hash_at(&mut self, at: Option<usize>, key: &[u8]) -> u64 {
        let Some(tracked) = at.map(|i| &mut self.missing.keys[i]) else {
            return self.cx.hash(key);
        };
        if tracked.hash == 0 {
            tracked.hash = crate::engine::db::hash_key(key);
        }
        tracked.hash
    }

    /// Records that a call of this script left the key tracked at `at` as `probe` says.
    #[inline]
    fn learned(&mut self, at: Option<usize>, probe: Probe) {
        if let Some(i) = at {
            self.missing.keys[i].probe = probe;
        }
    }

    /// On a quiet database: a read of `key` (`EXISTS`, `HGET`, `GET`), counted as a hit or a
    /// miss, and `read` of its entry when it is live.
    #[inline]
    fn read_probed<T>(
        &mut self,
        key: &[u8],
        touch: bool,
        read: impl FnOnce(&crate::engine::db::Entry) -> Result<T, Frame>,
    ) -> Result<Option<T>, CommandError> {
        let (found, _) = self.probe(key, touch);
        let Some(entry) = self.cx.keyspace().entry_of(found) else {
            self.read_missed(key);
            return Ok(None);
        };
        let value = read(entry);
        self.cx.node().read_hit();
        value.map(Some).map_err(err)
    }
}

impl Keyspace for ScriptStore<'_, '_, '_> {
    fn exists(&mut self, key: &[u8]) -> Result<bool, CommandError> {
        if self.quiet {
            return Ok(self.read_probed(key, false, |_| Ok(()))?.is_some());
        }
        if self.missing.has(key) {
            self.read_missed(key);
            return Ok(false);
        }
        let found = self.cx.reading(|cx| super::keys::exists(cx, key));
        self.missing.set(key, !found);
        Ok(found)
    }

    fn hexists(&mut self, key: &[u8], field: &[u8]) -> Result<bool, CommandError> {
        self.cx
            .reading(|cx| super::hashes::hexists(cx, key, field))
            .map_err(err)
    }

    fn hincrby(&mut self, key: &[u8], field: &[u8], delta: i64) -> Result<i64, CommandError> {
        self.writable(true)?;
        if self.quiet {
            // A lookup for writing: it touches the key, and counts no read.
            let (found, at) = self.probe(key, true);
            if let Some(entry) = self.cx.keyspace().entry_of_mut(found) {
                return super::hashes::hincrby_in(entry, field, delta).map_err(err);
            }
            let (now, h) = (self.cx.now, self.hash_at(at, key));
            let hash = crate::engine::db::Hash::single(field, &super::int_bytes(delta));
            let created = (self.cx.keyspace()).insert_probed(key, h, Value::Hash(hash), None, now);
            self.learned(at, created);
            return Ok(delta);
        }
        let missing = self.missing.has(key);
        let new = super::hashes::hincrby(self.cx, key, field, delta, missing).map_err(err)?;
        self.missing.set(key, false);
        Ok(new)
    }

    fn hget(&mut self, key: &[u8], field: &[u8]) -> Result<Option<Bytes>, CommandError> {
        if self.quiet {
            let value = self.read_probed(key, true, |entry| match &entry.value {
                Value::Hash(hash) => Ok(hash.get(field).map(super::value_bytes)),
                _ => Err(super::WRONGTYPE),
            })?;
            return Ok(value.flatten());
        }
        if self.missing.has(key) {
            self.read_missed(key);
            return Ok(None);
        }
        let hash = self
            .cx
            .reading(|cx| super::hashes::hget(cx, key, field))
            .map_err(err)?;
        self.missing.set(key, hash.is_none());
        Ok(hash.flatten())
    }

    fn pexpire(&mut self, key: &[u8], ms: &[u8]) -> Result<bool, CommandError> {
        self.writable(false)?;
        if self.quiet {
            // The argument first, then the key (a lookup for writing, which touches it); a
            // deadline at or before now deletes the key, and counts as set.
            let now = self.cx.now;
            let when = super::keys::pexpire_deadline(now, ms).map_err(err)?;
            let (found, at) = self.probe(key, true);
            if found == Probe::Missing {
                return Ok(false);
            }
            let change = match when <= now {
                true => DeadlineChange::Delete,
                false => DeadlineChange::Set(when),
            };
            let after = self.cx.keyspace().change_deadline_of(found, change);
            self.learned(at, after);
            return Ok(true);
        }
        if self.missing.has(key) {
            // `PEXPIRE` of a missing key checks its argument and changes nothing.
            return super::keys::pexpire_deadline(self.cx.now, ms)
                .map(|_| false)
                .map_err(err);
        }
        // A deadline in the past deletes the key.
        let set = super::keys::pexpire(self.cx, key, ms).map_err(err)?;
        self.missing.set(key, false);
        Ok(set)
    }

    fn pttl(&mut self, key: &[u8]) -> Result<i64, CommandError> {
        Ok(self.cx.reading(|cx| super::keys::pttl(cx, key)))
    }

    fn del(&mut self, key: &[u8]) -> Result<bool, CommandError> {
        self.writable(false)?;
        if self.quiet {
            let (found, at) = self.probe(key, false);
            if found == Probe::Missing {
                return Ok(false);
            }
            let after = self
                .cx
                .keyspace()
                .change_deadline_of(found, DeadlineChange::Delete);
            self.learned(at, after);
            return Ok(true);
        }
        if self.missing.has(key) {
            return Ok(false);
        }
        let removed = super::keys::del(self.cx, key);
        self.missing.set(key, true);
        Ok(removed)
    }

    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64, CommandError> {
        Ok(self.cx.publish(channel, message))
    }

    fn spublish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64, CommandError> {
        Ok(self.cx.spublish(channel, message))
    }

    fn set_px(&mut self, key: &[u8], value: &[u8], ms: &[u8]) -> Result<(), CommandError> {
        self.writable(true)?;
        let at = self.missing.position(key);
        let missing = at.is_some_and(|i| self.missing.keys[i].probe == Probe::Missing);
        if self.quiet && missing {
            let now = self.cx.now;
            let deadline = super::strings::px_deadline(now, ms).map_err(err)?;
            let h = self.hash_at(at, key);
            let value = Value::Str(super::value_bytes(value));
            let created = self
                .cx
                .keyspace()
                .insert_probed(key, h, value, Some(deadline), now);
            self.learned(at, created);
            return Ok(());
        }
        super::strings::set_px(self.cx, key, super::value_bytes(value), ms, missing)
            .map_err(err)?;
        self.missing.set(key, false);
        Ok(())
    }

    fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, CommandError> {
        if self.quiet {
            return self.read_probed(key, true, |entry| {
                super::keys::as_str(&entry.value).cloned()
            });
        }
        if self.missing.has(key) {
            self.read_missed(key);
            return Ok(None);
        }
        self.cx
            .reading(|cx| super::strings::get(cx, key))
            .map_err(err)
    }

    fn incrby(&mut self, key: &[u8], delta: i64) -> Result<i64, CommandError> {
        self.writable(true)?;
        self.missing.set(key, false);
        super::strings::incr_by(self.cx, key, delta).map_err(err)
    }

    fn time(&mut self) -> (i64, i64) {
        // As `TIME` answers: the clock's microseconds where it has them (the wall clock), never
        // before the command's own millisecond.
        let us = self
            .cx
            .engine()
            .now_us()
            .max(self.cx.now.saturating_mul(1000));
        (us.div_euclid(1_000_000), us.rem_euclid(1_000_000))
    }

    fn hset(&mut self, key: &[u8], field: &[u8], value: &[u8]) -> Result<i64, CommandError> {
        self.int_command(&[b"hset", key, field, value])
    }

    fn hdel(&mut self, key: &[u8], field: &[u8]) -> Result<bool, CommandError> {
        Ok(self.int_command(&[b"hdel", key, field])? == 1)
    }

    fn hlen(&mut self, key: &[u8]) -> Result<i64, CommandError> {
        self.int_command(&[b"hlen", key])
    }

    fn hkeys(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CommandError> {
        self.array_command(&[b"hkeys", key])
    }

    fn lindex(&mut self, key: &[u8], index: i64) -> Result<Option<Bytes>, CommandError> {
        self.bulk_command(&[b"lindex", key, index.to_string().as_bytes()])
    }

    fn lpop(&mut self, key: &[u8]) -> Result<Option<Bytes>, CommandError> {
        self.bulk_command(&[b"lpop", key])
    }

    fn rpush(&mut self, key: &[u8], element: &[u8]) -> Result<i64, CommandError> {
        self.int_command(&[b"rpush", key, element])
    }

    fn lrange_all(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CommandError> {
        self.array_command(&[b"lrange", key, b"0", b"-1"])
    }

    fn lrem_all(&mut self, key: &[u8], element: &[u8]) -> Result<i64, CommandError> {
        self.int_command(&[b"lrem", key, b"0", element])
    }

    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Result<Option<f64>, CommandError> {
        self.score_command(&[b"zscore", key, member])
    }

    fn zadd(&mut self, key: &[u8], score: &[u8], member: &[u8]) -> Result<bool, CommandError> {
        Ok(self.int_command(&[b"zadd", key, score, member])? == 1)
    }

    fn zincrby(
        &mut self,
        key: &[u8],
        increment: &[u8],
        member: &[u8],
    ) -> Result<f64, CommandError> {
        let score = self.score_command(&[b"zincrby", key, increment, member])?;
        score.ok_or_else(|| unexpected(b"zincrby", &Frame::Null))
    }

    fn zrem(&mut self, key: &[u8], member: &[u8]) -> Result<bool, CommandError> {
        Ok(self.int_command(&[b"zrem", key, member])? == 1)
    }

    fn zrange_all(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CommandError> {
        self.array_command(&[b"zrange", key, b"0", b"-1"])
    }
}
