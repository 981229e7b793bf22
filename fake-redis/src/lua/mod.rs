//! An embedded Lua 5.1, so that any script runs on the fake, not only the lock's.
//!
//! Redis keeps one Lua state per server; so does each engine, built the first time a script
//! without a native twin runs (an engine that only ever runs the lock's scripts never pays for
//! one), dropped by `SCRIPT FLUSH`, a restart and a failover, which forget the script cache too.
//! The state has Redis 7.0's environment (`env.rs`), and a script's calls go through the same
//! command table as a client's, at the `EVAL`'s frozen time, with Redis's checks for scripts
//! first: unknown commands, arity, commands a script may not call, writes in read-only scripts.
//! Conversions in and out are `convert.rs`; `math.random` is `rand48.rs`. Redis 7.0's Functions
//! run on a second state of the same kind (`functions.rs`).
//!
//! A script never reads the wall clock: time is the command's, and the only randomness is the
//! generator Redis gives every script. A runaway script cannot hang the engine: past a budget of
//! Lua instructions (counted, so a run replays) it is stopped with the error Redis gives a script
//! ended by `SCRIPT KILL`. A server on the wall clock measures running time as Redis does
//! instead: the same hook marks the script busy in the engine's
//! [`ScriptWatch`](crate::inprocess::link::ScriptWatch) past the threshold, and ends it when
//! another client's `SCRIPT KILL` asks, through the watch, without the engine's lock.

mod convert;
mod env;
pub(crate) mod functions;
pub(crate) mod libs;
mod rand48;

use crate::cmd::{Cx, lookup};
use crate::inprocess::link::{ScriptKind, ScriptWatch};
use crate::resp::Frame;
use bytes::Bytes;
use lock_core::script::format_g17;
use mlua::{Function, HookTriggers, Lua, Table, Value, Variadic, VmState};
use rand48::Rand48;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, Ordering};

/// Lua instructions between two looks at the budget (Redis's count hook runs as often).
const HOOK_EVERY: u32 = 100_000;
/// How many Lua instructions a script may run: far past anything a real script needs, a few
/// seconds of a loop that never ends.
const INSTRUCTION_BUDGET: u64 = 500_000_000;
/// The count once the budget has ended a script: the hook then fires at every instruction.
const KILLED: u64 = u64::MAX / 2;

/// Whether a script may not call the command named `name` (Redis's `noscript` flag, by the
/// command table's names), or may not in a read-only script though it is no write
/// (`may-replicate`). A match, not a list: it is asked at every `redis.call`.
fn not_in_scripts(name: &str) -> bool {
    matches!(
        name,
        "auth"
        // Redis 7.0 flags these blocking commands `noscript`; BLMPOP and BZMPOP it does not, and
        // in a script they answer at once as their non-blocking forms.
            | "blmove"
            | "blpop"
            | "brpop"
            | "brpoplpush"
            | "bzpopmax"
            | "bzpopmin"
            | "client"
            | "discard"
            | "eval"
            | "eval_ro"
            | "evalsha"
            | "evalsha_ro"
            | "exec"
            | "fcall"
            | "fcall_ro"
            | "function"
            | "hello"
            | "multi"
            | "psubscribe"
            | "punsubscribe"
            | "quit"
            | "replicaof"
            | "reset"
            | "script"
            | "slaveof"
            | "ssubscribe"
            | "subscribe"
            | "sunsubscribe"
            | "unsubscribe"
            | "unwatch"
            | "wait"
            | "watch"
    )
}

/// Commands that are not writes yet are refused in read-only scripts (Redis's `may-replicate`).
fn may_replicate(name: &str) -> bool {
    matches!(name, "publish" | "spublish")
}

/// The shebang flags of a script (`#!lua flags=…`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Flags {
    /// The body starts with `#!lua`: flags are declared rather than implied.
    pub shebang: bool,
    /// `no-writes`.
    pub no_writes: bool,
}

/// A loaded body: its compiled function and flags.
struct Loaded {
    function: Function,
    flags: Flags,
}

/// The scripting half of the script cache: the Lua state (built on first use) and what survives
/// `SCRIPT FLUSH`.
#[derive(Default)]
pub(crate) struct LuaScripts {
    vm: Option<Box<Vm>>,
    rand: Rand48,
    /// What front doors see of the running script; it outlives the state.
    watch: Arc<ScriptWatch>,
}

impl LuaScripts {
    /// Whether a body with this SHA (lowercase hex) is loaded.
    pub fn contains(&self, sha: &[u8]) -> bool {
        self.vm.as_ref().is_some_and(|vm| vm.get(sha).is_some())
    }

    /// The watch on the running script.
    pub fn watch(&self) -> Arc<ScriptWatch> {
        Arc::clone(&self.watch)
    }

    /// Puts back the watch a new cache replaced (see `ScriptCache::start_over`).
    pub fn keep_watch(&mut self, watch: Arc<ScriptWatch>) {
        self.watch = watch;
    }

    /// `SCRIPT FLUSH`: every body and the state go; the random generator stays, as in Redis.
    pub fn flush(&mut self) {
        self.vm = None;
    }
}

/// One Lua state with Redis's environment and the bodies loaded into it.
pub(crate) struct Vm {
    kind: ScriptKind,
    /// `function(f, keys, args)` returning a closure that calls `f(keys, args)`: Lua 5.1's
    /// `xpcall` passes no arguments.
    bind: Function,
    lua: Lua,
    env: Table,
    redis: Table,
    handler: Function,
    xpcall: Function,
    resp: Arc<AtomicU8>,
    executed: Arc<AtomicU64>,
    main: mlua::Thread,
    watch: Arc<ScriptWatch>,
    /// Where `redis.call` finds the running script.
    slot: Arc<Slot>,
    /// The `KEYS` and `ARGV` of `EVAL` scripts: two tables made once per state, emptied and
    /// filled again for every run (see [`Vm::fill`]).
    keys: Table,
    argv: Table,
    scripts: BTreeMap<[u8; 40], Loaded>,
    /// How many bytes the state may hold while a script's own code runs.
    memory_limit: usize,
}

impl Vm {
    fn new(rand: Rand48, watch: Arc<ScriptWatch>, kind: ScriptKind) -> mlua::Result<Vm> {
        let resp = Arc::new(AtomicU8::new(2));
        let (lua, globals, env, redis) = env::build(rand, resp.clone())?;
        let handler: Function = globals.raw_get("__redis__err__handler")?;
        let xpcall: Function = lua.named_registry_value(env::RAW_XPCALL)?;
        let executed = Arc::new(AtomicU64::new(0));
        let main = lua.current_thread();
        let bind = lua
            .load("local f, k, a = ... return function() return f(k, a) end")
            .set_name(env::ENV_SOURCE)
            .into_function()?;
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY),
            budget_hook(executed.clone(), main.clone(), watch.clone()),
        )?;
        let slot = Arc::new(Slot::default());
        let (keys, argv) = (lua.create_table()?, lua.create_table()?);
        // A function gets its keys and arguments as parameters: no `KEYS` or `ARGV` global.
        if matches!(kind, ScriptKind::Eval) {
            globals.raw_set("KEYS", &keys)?;
            globals.raw_set("ARGV", &argv)?;
        }
        let call = call_function(&lua, slot.clone(), resp.clone(), true)?;
        redis.raw_set("call", call)?;
        redis.raw_set(
            "pcall",
            call_function(&lua, slot.clone(), resp.clone(), false)?,
        )?;
        Ok(Vm {
            kind,
            bind,
            lua,
            env,
            redis,
            handler,
            xpcall,
            resp,
            executed,
            main,
            watch,
            slot,
            keys,
            argv,
            scripts: BTreeMap::new(),
            memory_limit: env::SCRIPT_MEMORY,
        })
    }

    fn get(&self, sha: &[u8]) -> Option<&Loaded> {
        self.scripts.get(&cache_key(sha)?)
    }

    /// Compiles `body` (once) and returns its SHA, or the error `EVAL` and `SCRIPT LOAD` reply.
    fn load(&mut self, body: &[u8]) -> Result<[u8; 40], Frame> {
        let sha = crate::cmd::sha1_hex(body);
        let mut key = [0u8; 40];
        key.copy_from_slice(sha.as_bytes());
        if self.scripts.contains_key(&key) {
            return Ok(key);
        }
        let (flags, code) = parse_shebang(body)?;
        let function = self.compile(
            code,
            "@user_script",
            &self.env,
            "Error compiling script (new function)",
        )?;
        self.scripts.insert(key, Loaded { function, flags });
        Ok(key)
    }

    /// Compiles `code` as text (never bytecode) into a function of the environment `env`, or the
    /// error Redis replies, `ERR <what>: <Lua's message>`.
    fn compile(&self, code: &[u8], name: &str, env: &Table, what: &str) -> Result<Function, Frame> {
        self.lua
            .load(code)
            .set_name(name)
            .set_mode(mlua::chunk::ChunkMode::Text)
            .set_environment(env.clone())
            .into_function()
            .map_err(|e| {
                let text = match &e {
                    mlua::Error::SyntaxError { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                Frame::error_owned(format!("ERR {what}: {text}"))
            })
    }
}

/// The key of a SHA in a state's scripts: its lowercase hex, if it is 40 bytes long.
fn cache_key(sha: &[u8]) -> Option<[u8; 40]> {
    let key: [u8; 40] = sha.try_into().ok()?;
    Some(key.map(|b| b.to_ascii_lowercase()))
}

/// The hook that ends a script past its instruction budget, or (on the wall clock) killed
/// through the watch. It is global, so the coroutines a script makes count too. Once it has
/// fired, it fires at every instruction of the running thread and of the main one, so a script
/// that catches the error (`pcall`, a coroutine) ends at its next instruction outside the catch,
/// as Redis's every-line hook ends a killed script.
fn budget_hook(
    executed: Arc<AtomicU64>,
    main: mlua::Thread,
    watch: Arc<ScriptWatch>,
) -> impl Fn(&Lua, &mlua::debug::Debug<'_>) -> mlua::Result<VmState> + Send + 'static {
    move |lua, _| {
        let n = executed.fetch_add(u64::from(HOOK_EVERY), Ordering::Relaxed);
        if n < KILLED {
            let killed = watch.check(n);
            if !killed && (n < INSTRUCTION_BUDGET || watch.on_wall_clock()) {
                return Ok(VmState::Continue);
            }
            executed.store(KILLED, Ordering::Relaxed);
            let every = HookTriggers::new().every_nth_instruction(1);
            let hook = || budget_hook(executed.clone(), main.clone(), watch.clone());
            lua.set_global_hook(every, hook())?;
            main.set_hook(every, hook())?;
        }
        Err(env::raise(
            lua,
            "ERR Script killed by user with SCRIPT KILL...",
        ))
    }
}

/// The flags of `body`'s shebang and the code to compile: the shebang line is cut but its line
/// break kept, so line numbers stay the user's.
fn parse_shebang(body: &[u8]) -> Result<(Flags, &[u8]), Frame> {
    if !body.starts_with(b"#!") {
        return Ok((Flags::default(), body));
    }
    let Some(end) = body.iter().position(|&b| b == b'\n') else {
        return Err(Frame::error("ERR Invalid script shebang"));
    };
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().unwrap_or("");
    if engine != "#!lua" {
        return Err(Frame::error_owned(format!(
            "ERR Unexpected engine in script shebang: {engine}"
        )));
    }
    let mut flags = Flags {
        shebang: true,
        no_writes: false,
    };
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(Frame::error_owned(format!(
                "ERR Unknown lua shebang option: {part}"
            )));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            match flag {
                "no-writes" => flags.no_writes = true,
                // One node, no cluster, no memory limit: the others change nothing it can see.
                "allow-oom" | "allow-stale" | "no-cluster" | "allow-cross-slot-keys" => {}
                _ => {
                    return Err(Frame::error_owned(format!(
                        "ERR Unexpected flag in script shebang: {flag}"
                    )));
                }
            }
        }
    }
    Ok((flags, &body[end..]))
}

/// The VM of the engine's script cache, built if need be; `None` only if Lua cannot start.
fn take_vm(cx: &mut Cx<'_>) -> Result<Box<Vm>, Frame> {
    let cache = &mut cx.scripts().lua;
    match cache.vm.take() {
        Some(vm) => Ok(vm),
        None => Vm::new(cache.rand.clone(), cache.watch.clone(), ScriptKind::Eval)
            .map(Box::new)
            .map_err(|e| Frame::error_owned(format!("ERR the fake's Lua failed to start: {e}"))),
    }
}

/// `SCRIPT LOAD body`: compiles it into the state, replying its SHA.
pub(crate) fn script_load(cx: &mut Cx<'_>, body: &[u8]) -> Frame {
    let mut vm = match take_vm(cx) {
        Ok(vm) => vm,
        Err(e) => return e,
    };
    let reply = match vm.load(body) {
        Ok(sha) => Frame::Bulk(Bytes::copy_from_slice(&sha)),
        Err(e) => e,
    };
    cx.scripts().lua.vm = Some(vm);
    reply
}

/// How a script was called.
#[derive(Clone, Copy)]
pub(crate) enum Source<'a> {
    /// `EVAL body …`: loaded first.
    Body(&'a [u8]),
    /// `EVALSHA sha …`: `NOSCRIPT` unless loaded (a lock script's body is loaded on the way if
    /// its native twin is cached).
    Sha(&'a [u8]),
}

/// `EVAL`/`EVALSHA` (and their `_RO` forms) of a script on the VM.
pub(crate) fn eval(
    cx: &mut Cx<'_>,
    source: Source<'_>,
    keys: &[Bytes],
    args: &[Bytes],
    read_only_command: bool,
) -> Frame {
    let mut vm = match take_vm(cx) {
        Ok(vm) => vm,
        Err(e) => return e,
    };
    vm.watch.begin(ScriptKind::Eval);
    let reply = eval_on(cx, &mut vm, source, keys, args, read_only_command);
    vm.watch.end();
    cx.scripts().lua.vm = Some(vm);
    reply
}

fn eval_on(
    cx: &mut Cx<'_>,
    vm: &mut Vm,
    source: Source<'_>,
    keys: &[Bytes],
    args: &[Bytes],
    read_only_command: bool,
) -> Frame {
    let sha = match source {
        Source::Body(body) => match vm.load(body) {
            Ok(sha) => sha,
            Err(e) => return e,
        },
        Source::Sha(sha) => match cache_key(sha).filter(|key| vm.scripts.contains_key(key)) {
            Some(key) => key,
            None => {
                let native = lock_core::script::by_sha(&sha.to_ascii_lowercase())
                    .filter(|_| cx.scripts().get(sha).is_some());
                match native.map(|s| vm.load(s.body.as_bytes())) {
                    Some(Ok(sha)) => sha,
                    _ => return Frame::error("NOSCRIPT No matching script. Please use EVAL."),
                }
            }
        },
    };
    let vm: &Vm = vm;
    let loaded = vm.scripts.get(&sha).expect("loaded above");
    let flags = loaded.flags;
    // Redis's `scriptPrepareForRun`: a script that may write (a shebang without `no-writes`) is
    // refused on a replica before it runs, and before the `_RO` rule.
    if flags.shebang && !flags.no_writes && cx.engine().is_read_only_replica() {
        return crate::engine::replication::READONLY;
    }
    if read_only_command && flags.shebang && !flags.no_writes {
        return Frame::error("ERR Can not execute a script with write flag using *_ro command.");
    }
    let run = Run {
        read_only: read_only_command || flags.no_writes,
        caller_db: cx.db,
        watch: vm.watch.clone(),
    };
    let sha_text = std::str::from_utf8(&sha).unwrap_or("");
    let reply = vm.run(cx, &loaded.function, sha_text, keys, args, &run);
    // A script's SELECT is its own: the caller's database is as it was.
    cx.client().db = run.caller_db;
    cx.db = run.caller_db;
    reply
}

/// What a running script's calls are checked against.
struct Run {
    read_only: bool,
    caller_db: usize,
    /// Told when the script writes (it can no longer be killed).
    watch: Arc<ScriptWatch>,
}

impl Vm {
    /// Runs `function` as the script `sha` with `keys` and `args`: its reply, or its error with
    /// Redis's ` script: <sha>, on <source>:<line>.` suffix.
    fn run(
        &self,
        cx: &mut Cx<'_>,
        function: &Function,
        sha: &str,
        keys: &[Bytes],
        args: &[Bytes],
        run: &Run,
    ) -> Frame {
        self.resp.store(2, Ordering::Relaxed);
        if let Err(e) = self.arm_budget() {
            return running_error(sha, &e.to_string());
        }
        let result = self.call(cx, function, keys, args, run);
        let reply = match result {
            Ok((true, value)) => convert::lua_to_reply(&value, self.resp.load(Ordering::Relaxed)),
            Ok((false, err)) => self.script_error(&err, sha),
            Err(e) => running_error(sha, &e.to_string()),
        };
        // Lua's incremental collector keeps the state small as it allocates; a step forced after
        // every script on top of it redid the marking of the whole environment each time.
        reply
    }

    /// Starts a fresh instruction budget, putting back the every-100k-instructions hook if the
    /// last run was ended by the budget.
    fn arm_budget(&self) -> mlua::Result<()> {
        if self.executed.swap(0, Ordering::Relaxed) >= KILLED {
            let hook = budget_hook(self.executed.clone(), self.main.clone(), self.watch.clone());
            self.lua
                .set_global_hook(HookTriggers::new().every_nth_instruction(HOOK_EVERY), hook)?;
        }
        Ok(())
    }

    fn call(
        &self,
        cx: &mut Cx<'_>,
        function: &Function,
        keys: &[Bytes],
        args: &[Bytes],
        run: &Run,
    ) -> mlua::Result<(bool, Value)> {
        let lua = &self.lua;
        let bound;
        let body = match self.kind {
            ScriptKind::Eval => {
                fill(lua, &self.keys, keys)?;
                fill(lua, &self.argv, args)?;
                function
            }
            ScriptKind::Function => {
                bound = self.bind.call::<Function>((
                    function,
                    strings(lua, keys)?,
                    strings(lua, args)?,
                ))?;
                &bound
            }
        };
        let mut running = Running { cx, run };
        self.slot.lend(&mut running, || {
            let _limit = env::MemoryLimit::set(lua, self.memory_limit);
            self.xpcall.call::<(bool, Value)>((body, &self.handler))
        })
    }
}

/// What `redis.call` and `redis.pcall` act on: the running script's engine context and checks.
struct Running<'r, 'e> {
    cx: &'r mut Cx<'e>,
    run: &'r Run,
}

/// Where `redis.call` and `redis.pcall` find the [`Running`] script.
///
/// The two functions are made once per state (making and dropping them for every script cost
/// more than many scripts do), so they cannot borrow one run's context; each run lends it here
/// instead, for the duration of a closure ([`Slot::lend`]). The safety argument is at the one
/// `unsafe` block, in [`Slot::with`].
#[derive(Default)]
struct Slot(AtomicPtr<()>);

impl Slot {
    /// Runs `f` with `running` lent to the state's calls; the loan ends when `f` returns or
    /// unwinds, before `running`'s borrow does.
    fn lend<R>(&self, running: &mut Running<'_, '_>, f: impl FnOnce() -> R) -> R {
        /// Empties the slot however `f` ends. It is this function's own local, so no caller can
        /// forget it and leave the pointer behind.
        struct Clear<'s>(&'s Slot);
        impl Drop for Clear<'_> {
            fn drop(&mut self) {
                self.0.0.store(std::ptr::null_mut(), Ordering::Release);
            }
        }
        let pointer: *mut Running<'_, '_> = running;
        self.0.store(pointer.cast(), Ordering::Release);
        let _clear = Clear(self);
        f()
    }

    /// `f` on the lent `Running`, or `None` if nothing is lent now.
    #[allow(unsafe_code)]
    fn with<R>(&self, f: impl FnOnce(&mut Running<'_, '_>) -> R) -> Option<R> {
        /// Puts the pointer back when the call ends, however it ends.
        struct Back<'s>(&'s Slot, *mut ());
        impl Drop for Back<'_> {
            fn drop(&mut self) {
                self.0.0.store(self.1, Ordering::Release);
            }
        }
        let pointer = self.0.swap(std::ptr::null_mut(), Ordering::Acquire);
        if pointer.is_null() {
            return None;
        }
        let _back = Back(self, pointer);
        // SAFETY: the slot holds a non-null pointer only inside `lend`, which stored it from a
        // `&mut Running` it borrows for its whole call and empties the slot before it returns
        // or unwinds (a guard local to `lend`, which no caller can forget); so the pointer is to
        // a live `Running` that nothing else uses while `lend`'s closure runs. Taking it out of
        // the slot makes this the only use of it until `_back` puts it back: a call made outside
        // a run, or from inside another call (scripts may not call `EVAL` or `FCALL`, so none
        // does today), finds the slot empty and is a Lua error, never a dangling or aliased
        // reference. `f` cannot keep the reference past its return.
        let running = unsafe { &mut *pointer.cast::<Running<'_, '_>>() };
        Some(f(running))
    }
}

/// `redis.call` (`raises`: an error reply is raised) or `redis.pcall` (it is returned), for the
/// runs lent through `slot`.
fn call_function(
    lua: &Lua,
    slot: Arc<Slot>,
    resp: Arc<AtomicU8>,
    raises: bool,
) -> mlua::Result<Function> {
    // The command's arguments, kept from call to call so that a call allocates only its
    // arguments' bytes. Calls never nest (a script cannot call `EVAL`), and one that did would
    // find the slot empty before it borrowed this.
    let command = std::cell::RefCell::new(Vec::new());
    lua.create_function(move |lua, argv: Variadic<Value>| {
        let _limit = env::MemoryLimit::set(lua, 0);
        let called = slot.with(|r| {
            let mut command = command.borrow_mut();
            let called = redis_call(lua, r, &argv, &mut command, resp.load(Ordering::Relaxed));
            command.clear();
            called
        });
        match called {
            None => Err(env::raise(
                lua,
                "ERR redis.call and redis.pcall can only be used while a script runs",
            )),
            Some(result) => match result? {
                (false, Value::Table(err)) if raises => {
                    Err(mlua::Error::external(env::ErrorValue(err)))
                }
                (_, reply) => Ok(reply),
            },
        }
    })
}

/// Empties `table` (whatever the last script put in it, its metatable too) and fills it with
/// `items`, so that a script finds a `KEYS` or `ARGV` as fresh as the new table Redis makes for
/// every run, without a table's two allocations (and their collection) per run.
fn fill(lua: &Lua, table: &Table, items: &[Bytes]) -> mlua::Result<()> {
    table.clear()?;
    if table.metatable().is_some() {
        table.set_metatable(None)?;
    }
    for (i, item) in items.iter().enumerate() {
        table.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(())
}

/// A Lua array of strings (`KEYS`, `ARGV`).
fn strings(lua: &Lua, items: &[Bytes]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(t)
}

impl Vm {
    /// The reply of a script that raised `err`: an error table, as the handler made it, with
    /// Redis's ` script: <sha>, on <source>:<line>.` suffix; or, for the errors Lua raises
    /// without calling the handler (running out of memory), Redis's reply for an error that is
    /// not a table.
    fn script_error(&self, err: &Value, sha: &str) -> Frame {
        let Value::Table(t) = err else {
            let text = match err {
                Value::String(s) if s.as_bytes().as_ref() == LUA_MEMORY_ERROR => format!(
                    "{}: the script's Lua state may hold at most {} MiB",
                    String::from_utf8_lossy(LUA_MEMORY_ERROR),
                    self.memory_limit >> 20
                ),
                Value::String(s) => s.to_string_lossy(),
                Value::Integer(n) => n.to_string(),
                Value::Number(n) => lua_number_text(*n),
                _ => "execution failure".to_owned(),
            };
            return running_error(sha, &text);
        };
        // Bytes, not text: an error can echo a client's non-UTF-8 bytes, and Redis sends them on.
        let text = |name: &str| -> Option<Vec<u8>> {
            match t.raw_get::<Value>(name).ok()? {
                Value::String(s) => Some(s.as_bytes().to_vec()),
                Value::Integer(n) => Some(n.to_string().into_bytes()),
                Value::Number(n) => Some(lua_number_text(n).into_bytes()),
                _ => None,
            }
        };
        let mut msg = text("err").unwrap_or_default();
        if let (Some(source), Some(line)) = (text("source"), text("line")) {
            msg.extend_from_slice(format!(" script: {sha}, on ").as_bytes());
            msg.extend_from_slice(&source);
            msg.push(b':');
            msg.extend_from_slice(&line);
            msg.push(b'.');
        }
        Frame::error_from_bytes(msg)
    }
}

/// The message Lua 5.1 gives a protected call that ran out of memory.
const LUA_MEMORY_ERROR: &[u8] = b"not enough memory";

/// Redis's reply for a script that failed without an error table: `ERR Error running script
/// <sha>, <text>`, the text cut at 100 bytes and kept on one line.
fn running_error(sha: &str, text: &str) -> Frame {
    let mut cut = text.len().min(100);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let text = text[..cut]
        .trim_end_matches(['\r', '\n'])
        .replace(['\r', '\n'], " ");
    Frame::error_owned(format!("ERR Error running script {sha}, {text}"))
}

/// A number as Lua's `tostring` prints it (`%.14g`), for the integral numbers error tables hold.
fn lua_number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// `redis.call(...)` and `redis.pcall(...)` with `argv`, made into `command` (empty):
/// `(true, reply)` or `(false, error table)`.
fn redis_call(
    lua: &Lua,
    running: &mut Running<'_, '_>,
    argv: &[Value],
    command: &mut Vec<Bytes>,
    resp: u8,
) -> mlua::Result<(bool, Value)> {
    let run = running.run;
    let fail = |text: &str| -> mlua::Result<(bool, Value)> {
        let t = env::error_table(lua, text)?;
        t.raw_set("ignore_error_stats_update", true)?;
        Ok((false, Value::Table(t)))
    };
    if argv.is_empty() {
        return fail("ERR Please specify at least one argument for this redis lib call");
    }
    for v in argv {
        match v {
            Value::Integer(n) => command.push(Bytes::from(format_g17(*n as f64))),
            Value::Number(n) => command.push(Bytes::from(format_g17(*n))),
            Value::String(s) => command.push(Bytes::copy_from_slice(&s.as_bytes())),
            _ => return fail("ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    let Some(spec) = lookup(&command[0]) else {
        return fail("ERR Unknown Redis command called from script");
    };
    let name = match crate::cmd::command_name(spec, command) {
        _ if !spec.arity_ok(command.len()) => {
            return fail("ERR Wrong number of args calling Redis command from script");
        }
        Err(crate::cmd::Refusal::Unknown) => {
            return fail("ERR Unknown Redis command called from script");
        }
        Err(crate::cmd::Refusal::Arity(_)) => {
            return fail("ERR Wrong number of args calling Redis command from script");
        }
        Ok(name) => name,
    };
    if not_in_scripts(spec.name) {
        return fail("ERR This Redis command is not allowed from script");
    }
    if let Err(denied) = crate::cmd::acl_check_script_call(running.cx, name, command) {
        return fail(denied);
    }
    if run.read_only && (spec.has(crate::cmd::WRITE) || may_replicate(spec.name)) {
        return fail("ERR Write commands are not allowed from read-only scripts.");
    }
    if spec.has(crate::cmd::WRITE) && running.cx.engine().is_read_only_replica() {
        return fail("READONLY You can't write against a read only replica.");
    }
    if spec.has(crate::cmd::WRITE) {
        run.watch.wrote();
    }
    let reply = crate::cmd::call_from_script(running.cx, spec, command, resp);
    let is_error = reply.is_error();
    Ok((!is_error, convert::reply_to_lua(lua, reply, resp)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_reach_commands_as_redis_prints_them() {
        assert_eq!(format_g17(1.0), "1");
        assert_eq!(format_g17(-42.0), "-42");
        assert_eq!(format_g17(0.1), "0.10000000000000001");
        assert_eq!(format_g17(1e20), "1e+20");
        assert_eq!(format_g17(1.5), "1.5");
        assert_eq!(format_g17(0.0001), "0.0001");
        assert_eq!(format_g17(0.00001), "1.0000000000000001e-05");
    }

    #[test]
    fn a_loan_ends_however_its_closure_ends() {
        let clock = crate::ManualClock::new(crate::DEFAULT_EPOCH_MS);
        let mut engine = crate::Engine::new(clock);
        let client = engine.connect();
        let mut cx = Cx::new(&mut engine, client.0, 0, 0);
        let run = Run {
            read_only: false,
            caller_db: 0,
            watch: Arc::new(ScriptWatch::default()),
        };
        let mut running = Running {
            cx: &mut cx,
            run: &run,
        };
        let slot = Slot::default();
        assert_eq!(slot.lend(&mut running, || slot.with(|r| r.cx.db)), Some(0));
        assert_eq!(
            slot.with(|_| ()),
            None,
            "the loan ends when the closure returns"
        );
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            slot.lend(&mut running, || slot.with(|_| panic!("a call panics")))
        }));
        assert!(unwound.is_err());
        assert_eq!(
            slot.with(|_| ()),
            None,
            "the loan ends when the closure unwinds"
        );
    }

    #[test]
    fn a_script_past_the_memory_limit_is_told_so() {
        let clock = crate::ManualClock::new(crate::DEFAULT_EPOCH_MS);
        let mut engine = crate::Engine::new(clock);
        let client = engine.connect();
        let mut cx = Cx::new(&mut engine, client.0, 0, 0);
        let watch = Arc::new(ScriptWatch::default());
        let mut vm = Vm::new(Rand48::default(), watch, ScriptKind::Eval).unwrap();
        vm.memory_limit = 4 << 20;
        let body = b"local t = {} for i = 1, 1e7 do t[i] = i end return #t";
        let sha = crate::cmd::sha1_hex(body);
        assert_eq!(
            eval_on(&mut cx, &mut vm, Source::Body(body), &[], &[], false),
            Frame::error_owned(format!(
                "ERR Error running script {sha}, not enough memory: the script's Lua state may \
                 hold at most 4 MiB"
            ))
        );
        let small = eval_on(&mut cx, &mut vm, Source::Body(b"return 7"), &[], &[], false);
        assert_eq!(small, Frame::Integer(7), "the state runs the next script");
    }

    #[test]
    fn shebangs_parse_as_redis_s() {
        assert_eq!(parse_shebang(b"return 1").unwrap().0, Flags::default());
        let (flags, code) = parse_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(flags.shebang && flags.no_writes);
        assert_eq!(code, b"\nreturn 1");
        assert_eq!(
            parse_shebang(b"#!lua flags=bogus\nreturn 1").unwrap_err(),
            Frame::error("ERR Unexpected flag in script shebang: bogus")
        );
        assert_eq!(
            parse_shebang(b"#!lua").unwrap_err(),
            Frame::error("ERR Invalid script shebang")
        );
    }
}
