//! An embedded Lua 5.1, so that any script runs on the fake, not only the lock's.
//!
//! Redis keeps one Lua state per server; so does each engine, built the first time a script
//! without a native twin runs (an engine that only ever runs the lock's scripts never pays for
//! one), dropped by `SCRIPT FLUSH`, a restart and a failover, which forget the script cache too.
//! The state has Redis 7.0's environment (`env.rs`), and a script's calls go through the same
//! command table as a client's, at the `EVAL`'s frozen time, with Redis's checks for scripts
//! first: unknown commands, arity, commands a script may not call, writes in read-only scripts.
//! A run and `redis.call` themselves, the paths every script takes, are written against Lua's C
//! API (`raw.rs`, the crate's only unsafe code, which pushes a command's reply onto the Lua
//! stack); a script's return value becomes the reply in `convert.rs`; `math.random` is
//! `rand48.rs`. Redis 7.0's Functions run on a second state of the same kind (`functions.rs`).
//!
//! A script never reads the wall clock: time is the command's, and the only randomness is the
//! generator Redis gives every script. A runaway script cannot hang the engine: past a budget of
//! Lua instructions (counted, so a run replays) it is stopped with the error Redis gives a script
//! ended by `SCRIPT KILL`. A server on the wall clock measures running time as Redis does
//! instead: the same hook marks the script busy in the engine's
//! [`ScriptWatch`](crate::engine::script_watch::ScriptWatch) past the threshold, and ends it when
//! another client's `SCRIPT KILL` asks, through the watch, without the engine's lock.

mod convert;
mod env;
pub(crate) mod functions;
pub(crate) mod libs;
mod rand48;
mod raw;

use crate::cmd::shebang::{self, Flags};
use crate::cmd::{Cx, lookup_in};
use crate::engine::ScriptCache;
use crate::engine::script_watch::{RunningFunction, ScriptKind, ScriptWatch};
use crate::resp::Frame;
use bytes::Bytes;
use mlua::{Function, HookTriggers, Lua, RegistryKey, Table, Value, VmState};
use rand48::Rand48;
use raw::{Calls, Tables};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

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
fn not_in_scripts(name: &str, version: crate::engine::Version) -> bool {
    // Redis 7.0 flags every subcommand of these containers `noscript` but their HELP, and of
    // CLUSTER only RESET.
    if let Some((container, sub)) = name.split_once('|') {
        return match container {
            "acl" | "client" | "config" | "function" | "latency" | "module" | "script" => {
                sub != "help"
            }
            "cluster" => sub == "reset",
            _ => false,
        };
    }
    // Redis 7.0 flags these blocking commands and WAIT `noscript`; BLMPOP and BZMPOP it does
    // not, and in a script they answer at once as their non-blocking forms. Redis 7.4 and Valkey
    // let a script call them all, and each answers at once.
    if matches!(
        name,
        "blmove" | "blpop" | "brpop" | "brpoplpush" | "bzpopmax" | "bzpopmin" | "wait"
    ) {
        return version == crate::engine::Version::V7_0;
    }
    matches!(
        name,
        "auth"
            | "bgrewriteaof"
            | "bgsave"
            | "debug"
            | "discard"
            | "eval"
            | "eval_ro"
            | "evalsha"
            | "evalsha_ro"
            | "exec"
            | "failover"
            | "fcall"
            | "fcall_ro"
            | "hello"
            | "monitor"
            | "multi"
            | "psubscribe"
            | "psync"
            | "punsubscribe"
            | "quit"
            | "replconf"
            | "replicaof"
            | "reset"
            | "role"
            | "save"
            | "shutdown"
            | "slaveof"
            | "ssubscribe"
            | "subscribe"
            | "sunsubscribe"
            | "sync"
            | "unsubscribe"
            | "unwatch"
            | "watch"
    )
}

/// Whether `DEBUG SET-DISABLE-DENY-SCRIPTS 1` lets a script call `name`, which Redis flags
/// `noscript`. Redis then lets every such command through; the fake lets through the ones that
/// leave the script's own machinery alone (no transaction, script, subscription or connection
/// command).
fn allowed_by_debug(running: &mut Running<'_, '_>, name: &str) -> bool {
    matches!(
        name,
        "debug" | "client" | "blmove" | "blpop" | "brpop" | "brpoplpush" | "bzpopmax" | "bzpopmin"
    ) && running.cx.server_state().debug.deny_scripts_disabled
}

/// Commands that are not writes yet are refused in read-only scripts (Redis's `may-replicate`).
fn may_replicate(name: &str) -> bool {
    matches!(name, "publish" | "spublish")
}

/// A loaded body: its compiled function, flags and SHA (as text, for its errors).
struct Loaded {
    /// The function, in the state's registry rather than held by an mlua handle: each handle
    /// takes a slot of one auxiliary Lua stack, which Lua 5.1 caps at 8,000 slots, and a cache
    /// may hold many more scripts (Redis's suite loads 50,000).
    function: RegistryKey,
    flags: Flags,
    sha: String,
    /// The body's length, for `INFO`'s estimate of what Redis's cache keeps of it.
    body_len: usize,
}

/// The scripting half of the script cache: the Lua state (built on first use) and what survives
/// `SCRIPT FLUSH`. The engine keeps it in the cache's [`Slot`](crate::engine::Slot), made at
/// its first use and dropped by a restart or a failover; [`scripts`] reaches it.
#[derive(Default)]
pub(crate) struct LuaScripts {
    vm: Option<Box<Vm>>,
    rand: Rand48,
}

/// The Lua half of `cache`, made empty if nothing used it since the cache started over.
pub(crate) fn scripts(cache: &mut ScriptCache) -> &mut LuaScripts {
    cache.lua.get_or_default()
}

/// Whether a body with this SHA (lowercase hex) is loaded on the Lua state of `cache`.
pub(crate) fn contains(cache: &ScriptCache, sha: &[u8]) -> bool {
    cache
        .lua
        .get::<LuaScripts>()
        .is_some_and(|lua| lua.contains(sha))
}

/// `SCRIPT FLUSH` of the Lua half of `cache`.
pub(crate) fn flush(cache: &mut ScriptCache) {
    if let Some(lua) = cache.lua.get_mut::<LuaScripts>() {
        lua.flush();
    }
}

impl LuaScripts {
    /// Whether a body with this SHA (lowercase hex) is loaded.
    pub fn contains(&self, sha: &[u8]) -> bool {
        self.vm.as_ref().is_some_and(|vm| vm.get(sha).is_some())
    }

    /// `SCRIPT FLUSH`: every body and the state go; the random generator stays, as in Redis.
    pub fn flush(&mut self) {
        self.vm = None;
    }
}

/// One Lua state with Redis's environment and the bodies loaded into it.
pub(crate) struct Vm {
    lua: Lua,
    env: Table,
    redis: Table,
    handler: Function,
    xpcall: Function,
    resp: Arc<AtomicU8>,
    executed: Arc<AtomicU64>,
    main: mlua::Thread,
    watch: Arc<ScriptWatch>,
    /// How a script runs, and what `redis.call` and `redis.pcall` share (the running script
    /// among it). An `EVAL` script's `KEYS` and `ARGV` are two tables made once per state,
    /// emptied and filled again for every run (see `raw::refill`).
    calls: Box<Calls>,
    scripts: BTreeMap<[u8; 40], Loaded>,
    /// How many bytes the state may hold while a script's own code runs.
    memory_limit: usize,
    /// The state's `loadstring`, which gives a syntax error's text as Lua's bytes (mlua's error
    /// holds it as UTF-8, with any other byte of the offending token replaced).
    loadstring: Function,
    /// What a fresh state of this kind holds in the release the engine speaks as, and what this
    /// one held once built: `INFO` reports the first plus what the state grew by since.
    fresh: u64,
    built: usize,
}

impl Vm {
    fn new(
        rand: Rand48,
        watch: Arc<ScriptWatch>,
        kind: ScriptKind,
        version: crate::engine::Version,
    ) -> mlua::Result<Vm> {
        let resp = Arc::new(AtomicU8::new(2));
        let executed = Arc::new(AtomicU64::new(0));
        let (lua, globals, env, redis) = env::build(rand, resp.clone(), version, &executed)?;
        let handler: Function = globals.raw_get("__redis__err__handler")?;
        let loadstring: Function = globals.raw_get("loadstring")?;
        let xpcall: Function = lua.named_registry_value(env::RAW_XPCALL)?;
        let main = lua.current_thread();
        lua.set_global_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY),
            budget_hook(executed.clone(), main.clone(), watch.clone()),
        )?;
        let (keys, argv) = (lua.create_table()?, lua.create_table()?);
        let tables = match kind {
            ScriptKind::Eval => {
                globals.raw_set("KEYS", &keys)?;
                globals.raw_set("ARGV", &argv)?;
                Tables::Reused {
                    keys: &keys,
                    argv: &argv,
                }
            }
            // A function gets its keys and arguments as parameters: no `KEYS` or `ARGV` global.
            ScriptKind::Function => Tables::Arguments,
        };
        let calls = Box::new(Calls::new(lua.clone(), resp.clone(), &handler, tables)?);
        redis.raw_set("call", calls.function(true)?)?;
        redis.raw_set("pcall", calls.function(false)?)?;
        redis.raw_set("acl_check_cmd", calls.acl_check_function()?)?;
        let mut vm = Vm {
            lua,
            env,
            redis,
            handler,
            xpcall,
            resp,
            executed,
            main,
            watch,
            calls,
            scripts: BTreeMap::new(),
            memory_limit: env::SCRIPT_MEMORY,
            loadstring,
            fresh: fresh_state(version, kind),
            built: 0,
        };
        vm.settle()?;
        Ok(vm)
    }

    /// Marks the state as built: what it holds now (its environment, after a full collection)
    /// is what `INFO` reports as Redis's fresh state.
    fn settle(&mut self) -> mlua::Result<()> {
        self.lua.gc_collect()?;
        self.built = self.lua.used_memory();
        Ok(())
    }

    /// The state's size as `INFO memory` reports it: Redis's fresh state of this kind plus what
    /// this one grew by since it was built (what its scripts, libraries and garbage hold), in
    /// whole kilobytes, as Redis reads Lua's count.
    fn reported_memory(&self) -> u64 {
        let grown = self.lua.used_memory().saturating_sub(self.built) as u64;
        (self.fresh + grown) / 1024 * 1024
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
        let (flags, code) = shebang::parse(body)?;
        let function = self.compile(
            code,
            "@user_script",
            &self.env,
            "Error compiling script (new function)",
        )?;
        let function = self.lua.create_registry_value(function).map_err(|e| {
            Frame::error_owned(format!("ERR Error compiling script (new function): {e}"))
        })?;
        self.scripts.insert(
            key,
            Loaded {
                function,
                flags,
                sha,
                body_len: body.len(),
            },
        );
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
                    mlua::Error::SyntaxError { message, .. } => self
                        .syntax_error(code, name)
                        .unwrap_or_else(|| message.clone().into_bytes()),
                    other => other.to_string().into_bytes(),
                };
                let mut reply = format!("ERR {what}: ").into_bytes();
                reply.extend_from_slice(&text);
                Frame::error_from_bytes(reply)
            })
    }

    /// Lua's own text of `code`'s syntax error, byte for byte as Redis echoes it (the offending
    /// token may be any bytes); `None` if `loadstring` compiles it after all.
    fn syntax_error(&self, code: &[u8], name: &str) -> Option<Vec<u8>> {
        let code = self.lua.create_string(code).ok()?;
        let (function, error): (Value, Option<mlua::LuaString>) =
            self.loadstring.call((code, name)).ok()?;
        if !function.is_nil() {
            return None;
        }
        Some(error?.as_bytes().to_vec())
    }
}

/// What `INFO memory` tells of the scripts: the two Lua states' sizes, what they hold, and what
/// Redis's own structures would take for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScriptMemory {
    /// Bytes the `EVAL` state holds (`used_memory_vm_eval`).
    pub eval_vm: u64,
    /// Scripts in the cache, native and Lua (`number_of_cached_scripts`).
    pub cached_scripts: u64,
    /// Redis's cache of them (`used_memory_scripts_eval`).
    pub eval_overhead: u64,
    /// Bytes the Functions state holds (`used_memory_vm_functions`).
    pub functions_vm: u64,
    /// Functions and libraries loaded.
    pub functions: u64,
    pub libraries: u64,
    /// Redis's structures for them (`used_memory_functions`).
    pub functions_overhead: u64,
}

/// What `INFO memory` tells of the engine's scripts. A state not built yet counts as a fresh
/// one, as Redis's always exist.
pub(crate) fn memory(cx: &mut Cx<'_>) -> ScriptMemory {
    let version = cx.engine().version();
    let cache = cx.scripts();
    let native = cache.native_bodies();
    let vm = cache.lua.get::<LuaScripts>().and_then(|l| l.vm.as_deref());
    // A native script's body is loaded on Lua when it runs there: its SHA counts once.
    let native_only = native
        .iter()
        .filter(|(sha, _)| vm.is_none_or(|vm| vm.get(sha.as_bytes()).is_none()));
    let mut bodies: Vec<usize> = native_only.map(|(_, len)| *len).collect();
    bodies.extend(
        vm.iter()
            .flat_map(|vm| vm.scripts.values().map(|l| l.body_len)),
    );
    let eval_vm = vm.map_or_else(
        || fresh_state(version, ScriptKind::Eval),
        Vm::reported_memory,
    );
    let (libraries, functions, functions_vm, functions_overhead) = cx.functions().memory();
    ScriptMemory {
        eval_vm,
        cached_scripts: bodies.len() as u64,
        eval_overhead: bodies.iter().map(|&len| script_overhead(len)).sum(),
        functions_vm: functions_vm.unwrap_or_else(|| fresh_state(version, ScriptKind::Function)),
        functions: functions as u64,
        libraries: libraries as u64,
        functions_overhead,
    }
}

/// What Redis 7.4's script cache takes for a body of `len` bytes: the SHA, the body's string
/// and the entry, list node and dictionary slot that index them (fitted to its
/// `used_memory_scripts_eval`, to within the dictionary's growth).
fn script_overhead(len: usize) -> u64 {
    144 + (len as u64 + 4).next_multiple_of(16)
}

/// What each release reports of a fresh state of each kind (`used_memory_vm_eval` and
/// `used_memory_vm_functions` of a server that has run nothing): Lua's count of Redis's
/// environment, which the fake's (mlua's own tables, the proxies that make it read-only) does
/// not match.
fn fresh_state(version: crate::engine::Version, kind: ScriptKind) -> u64 {
    use crate::engine::Version;
    match (version, kind) {
        (Version::V7_0, ScriptKind::Eval) => 32_768,
        (Version::V7_0, ScriptKind::Function) => 33_792,
        (Version::V7_4, ScriptKind::Eval) => 31_744,
        (Version::V7_4, ScriptKind::Function) => 32_768,
        (Version::Valkey9_1, ScriptKind::Eval) => 33_792,
        (Version::Valkey9_1, ScriptKind::Function) => 35_840,
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

/// The VM of the engine's script cache, built if need be; `None` only if Lua cannot start.
fn take_vm(cx: &mut Cx<'_>) -> Result<Box<Vm>, Frame> {
    let watch = cx.scripts().watch();
    let version = cx.engine().version();
    let cache = scripts(cx.scripts());
    match cache.vm.take() {
        Some(vm) => Ok(vm),
        None => Vm::new(cache.rand.clone(), watch, ScriptKind::Eval, version)
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
    scripts(cx.scripts()).vm = Some(vm);
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
    let watch = Arc::clone(&vm.watch);
    let watching = Watching::begin(&watch, ScriptKind::Eval);
    let reply = eval_on(cx, &mut vm, source, keys, args, read_only_command);
    drop(watching);
    scripts(cx.scripts()).vm = Some(vm);
    reply
}

/// A script's run as the engine's [`ScriptWatch`] sees it: begun, and ended however the run ends,
/// so that a panic in a command the script called (resumed once the script has returned) does
/// not leave the other connections waiting for a script that no longer runs.
pub(crate) struct Watching<'w>(&'w ScriptWatch);

impl<'w> Watching<'w> {
    pub(crate) fn begin(watch: &'w ScriptWatch, kind: ScriptKind) -> Watching<'w> {
        watch.begin(kind);
        Watching(watch)
    }

    /// [`begin`](Self::begin) for a function, with what `FUNCTION STATS` says of it.
    pub(crate) fn begin_function(watch: &'w ScriptWatch, running: RunningFunction) -> Watching<'w> {
        watch.begin_function(running);
        Watching(watch)
    }
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
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
                // A loaded native script (run on Lua here: see `lock_scripts_run_on_lua`).
                let native = cx.scripts().get(sha).cloned();
                match native.map(|s| vm.load(s.body())) {
                    Some(Ok(sha)) => sha,
                    _ => return Frame::error("NOSCRIPT No matching script. Please use EVAL."),
                }
            }
        },
    };
    let vm: &Vm = vm;
    let Some(loaded) = vm.scripts.get(&sha) else {
        return Frame::error("NOSCRIPT No matching script. Please use EVAL.");
    };
    let flags = loaded.flags;
    // Redis's `scriptPrepareForRun`: `no-cluster` first; then a script that may write (a shebang without `no-writes`) is
    // refused on a replica before it runs, and before the `_RO` rule.
    if flags.no_cluster && cx.engine().is_cluster_node() {
        return NO_CLUSTER;
    }
    if flags.shebang && !flags.no_writes && cx.engine().is_read_only_replica() {
        return crate::engine::replication::READONLY;
    }
    // Redis counts such a script a write: short of good replicas it is refused too.
    if flags.shebang && !flags.no_writes && !cx.engine().has_good_replicas() {
        return crate::engine::replication::NOREPLICAS;
    }
    if read_only_command && flags.shebang && !flags.no_writes {
        return Frame::error("ERR Can not execute a script with write flag using *_ro command.");
    }
    let run = Run {
        read_only: read_only_command || flags.no_writes,
        allow_oom: flags.allow_oom,
        caller_db: cx.db,
        watch: &vm.watch,
    };
    let function = match vm.lua.registry_value::<Function>(&loaded.function) {
        Ok(function) => function,
        Err(e) => return running_error(&loaded.sha, &e.to_string()),
    };
    let reply = vm.run(cx, &function, &loaded.sha, keys, args, &run);
    // A script's SELECT is its own: the caller's database is as it was.
    cx.client().db = run.caller_db;
    cx.db = run.caller_db;
    reply
}

/// Redis's refusal of a script or function flagged `no-cluster` on a cluster node.
pub(crate) const NO_CLUSTER: Frame =
    Frame::error("ERR Can not run script on cluster, 'no-cluster' flag is set.");

/// What a running script's calls are checked against.
struct Run<'w> {
    read_only: bool,
    /// Declared `allow-oom`: exempt from the out-of-memory check of its calls.
    allow_oom: bool,
    caller_db: usize,
    /// Told when the script writes (it can no longer be killed).
    watch: &'w ScriptWatch,
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
        run: &Run<'_>,
    ) -> Frame {
        self.resp.store(2, Ordering::Relaxed);
        if let Err(e) = self.arm_budget() {
            return running_error(sha, &e.to_string());
        }
        let valkey = cx.engine().version().is_valkey();
        let started = cx.engine().now_us().max(cx.now.saturating_mul(1000));
        let outer = cx.script_us.replace(started);
        let result = self.call(cx, function, keys, args, run);
        cx.script_us = outer;
        let reply = match result {
            Ok((true, value)) => convert::lua_to_reply(&value, self.resp.load(Ordering::Relaxed)),
            Ok((false, err)) => self.script_error(&err, sha, valkey),
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
        run: &Run<'_>,
    ) -> mlua::Result<(bool, Value)> {
        let mut running = Running { cx, run };
        self.calls.lend(&mut running, || {
            (self.calls).run(function, keys, args, self.memory_limit)
        })
    }
}

/// What `redis.call` and `redis.pcall` act on: the running script's engine context and checks.
struct Running<'r, 'e> {
    cx: &'r mut Cx<'e>,
    run: &'r Run<'r>,
}

impl Vm {
    /// The reply of a script that raised `err`: an error table, as the handler made it, with
    /// Redis's ` script: <sha>, on <source>:<line>.` suffix; or, for the errors Lua raises
    /// without calling the handler (running out of memory), Redis's reply for an error that is
    /// not a table.
    /// Valkey 9.1 names neither the script nor the function there: ` script: on <source>:<line>.`
    fn script_error(&self, err: &Value, sha: &str, valkey: bool) -> Frame {
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
            match valkey {
                false => msg.extend_from_slice(format!(" script: {sha}, on ").as_bytes()),
                true => msg.extend_from_slice(b" script: on "),
            }
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

/// `redis.acl_check_cmd(command, arg…)`: whether the user running the script may call it (its
/// keys and channels among its arguments), or the error Redis raises for a command it does not
/// know. A container without its subcommand is checked as the container, as Redis looks it up.
fn acl_check(running: &mut Running<'_, '_>, command: &[Bytes]) -> Result<bool, &'static str> {
    const INVALID: &str = "ERR Invalid command passed to redis.acl_check_cmd()";
    let version = running.cx.engine().version();
    let spec = lookup_in(version, &command[0]).ok_or(INVALID)?;
    let name = match crate::cmd::command_name(version, spec, command) {
        Ok(name) => name,
        Err(crate::cmd::Refusal::Arity(_)) => spec.name,
        Err(crate::cmd::Refusal::Unknown) => return Err(INVALID),
    };
    Ok(crate::cmd::acl_script_may_call(running.cx, name, command))
}

/// The command a script's `redis.call` or `redis.pcall` made of its arguments, checked as Redis
/// checks a script's commands and run: its reply (an error reply among them), or the error the
/// call gets instead when a check refuses it. A refusal counts as Redis's `scriptCall` counts
/// it: a rejected call of the command (when there is one by that name) and an error reply, which
/// the script's own error then repeats.
fn run_command(
    running: &mut Running<'_, '_>,
    command: &[Bytes],
    resp: u8,
) -> Result<Frame, &'static str> {
    match check_command(running, command) {
        Ok(spec) => Ok(crate::cmd::call_from_script(
            running.cx, spec, command, resp,
        )),
        Err((name, error)) => {
            running
                .cx
                .node()
                .count_script_rejection(name, error.as_bytes());
            Err(error)
        }
    }
}

/// What [`run_command`] checks before the command runs, in `scriptCall`'s order: the command,
/// or the refusal and the name of the command refused (none if it is unknown).
fn check_command(
    running: &mut Running<'_, '_>,
    command: &[Bytes],
) -> Result<&'static crate::cmd::Spec, (Option<&'static str>, &'static str)> {
    let run = running.run;
    let version = running.cx.engine().version();
    // Valkey's texts name no server, or itself.
    let (unknown, arity, not_allowed) = match version.is_valkey() {
        false => (
            "ERR Unknown Redis command called from script",
            "ERR Wrong number of args calling Redis command from script",
            "ERR This Redis command is not allowed from script",
        ),
        true => (
            "ERR Unknown command called from script",
            "ERR Wrong number of args calling command from script",
            "ERR This Valkey command is not allowed from script",
        ),
    };
    let Some(spec) = lookup_in(version, &command[0]) else {
        return Err((None, unknown));
    };
    let name = match crate::cmd::command_name(version, spec, command) {
        _ if !spec.arity_ok(command.len()) => return Err((Some(spec.name), arity)),
        Err(crate::cmd::Refusal::Unknown) => return Err((None, unknown)),
        Err(crate::cmd::Refusal::Arity(_)) => return Err((Some(spec.name), arity)),
        Ok(name) => name,
    };
    let refused = |error| Err((Some(name), error));
    // A container's subcommand (`client|list`) is let through by its container's name.
    let container = name
        .split_once('|')
        .map_or(name, |(container, _)| container);
    if not_in_scripts(name, version) && !allowed_by_debug(running, container) {
        return refused(not_allowed);
    }
    if let Err(error) = crate::cmd::acl_check_script_call(running.cx, name, command) {
        return refused(error);
    }
    if run.read_only && (spec.has(crate::cmd::WRITE) || may_replicate(spec.name)) {
        return refused("ERR Write commands are not allowed from read-only scripts.");
    }
    if spec.has(crate::cmd::WRITE) && running.cx.engine().is_read_only_replica() {
        return refused("READONLY You can't write against a read only replica.");
    }
    // Redis's `scriptVerifyWriteCommandAllow`: short of good replicas, a script's first write is
    // refused (one that has written already goes on: it cannot be undone halfway).
    if spec.has(crate::cmd::WRITE)
        && !run.watch.has_written()
        && !running.cx.engine().has_good_replicas()
    {
        return refused("NOREPLICAS Not enough good replicas to write.");
    }
    // Redis's `scriptVerifyOOM`: out of memory, a script's first write that may grow memory is
    // refused (`engine/evict.rs`).
    if running.cx.engine().out_of_memory()
        && !run.allow_oom
        && !run.watch.has_written()
        && crate::cmd::denies_oom_in_script(version, name)
    {
        return refused("OOM command not allowed when used memory > 'maxmemory'.");
    }
    if spec.has(crate::cmd::WRITE) {
        run.watch.wrote();
    }
    // After the write checks, as Redis's `scriptCall` orders them.
    let cx = &mut *running.cx;
    if cx.engine().is_cluster_node() {
        let (id, now) = (cx.client, cx.now);
        if let Err(error) = crate::cmd::route_script_call(cx.node(), id, spec, name, command, now) {
            return refused(error);
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::number::format_g17;

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
        let watch = ScriptWatch::default();
        let run = Run {
            read_only: false,
            allow_oom: false,
            caller_db: 0,
            watch: &watch,
        };
        let mut running = Running {
            cx: &mut cx,
            run: &run,
        };
        let slot = raw::Slot::default();
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
        let mut vm = Vm::new(
            Rand48::default(),
            watch,
            ScriptKind::Eval,
            Default::default(),
        )
        .unwrap();
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
}
