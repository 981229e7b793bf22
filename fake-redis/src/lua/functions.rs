//! Redis 7.0's Functions: libraries loaded with `FUNCTION LOAD`, their functions called by `FCALL`
//! and `FCALL_RO`, on a Lua state of their own.
//!
//! Redis runs functions in a second Lua state beside the one `EVAL` uses, with the same script
//! environment, and so does the engine: a [`Vm`] of [`ScriptKind::Function`], built at the first
//! `FUNCTION LOAD`, with the same runner, conversions, instruction budget and determinism rules
//! as `EVAL`'s. Every library's code runs in one globals table whose lookups Redis points at a
//! small library API while the code loads (`redis.register_function`, `redis.log`, the log
//! levels and the version, nothing else: no `redis.call`, not even `type` or `pcall`) and at the
//! whole script environment once it has loaded. The callbacks a library registers keep that table,
//! so they see the full environment when `FCALL` runs them, and, as in Redis, a global they set is
//! refused as a write to a read-only table.
//!
//! What survives what: Redis keeps the libraries in its RDB (and AOF) and replicates them to its
//! replicas, unlike the script cache. So a failover keeps them (the replica that takes over has
//! them), and a restart keeps them only when the engine has persistence (as an AOF would); a
//! restart without persistence loses them, as a redis-server run with `--save ''` does. `SCRIPT
//! FLUSH` does not touch them; `FUNCTION FLUSH` does.
//!
//! `FUNCTION DUMP`'s payload has Redis's layout: one function opcode and the library's code per
//! library, then RDB version 10 and Redis's CRC64. The fake writes the code uncompressed where
//! Redis compresses it with LZF, so the bytes differ from Redis's, but each server restores the
//! other's payload.

use super::env::{self, ENV_SOURCE};
use super::{Run, ScriptKind, Vm, Watching};
use crate::cmd::Cx;
use crate::engine::script_watch::RunningFunction;
use crate::resp::Frame;
use crate::resp::split_args;
use bytes::Bytes;
use mlua::state::{GcIncParams, GcMode};
use mlua::{Function, Lua, RegistryKey, Table, Value, Variadic};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// The flags `redis.register_function` takes, in the order Redis lists them.
const FLAG_NAMES: [&str; 5] = [
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];
const NO_WRITES: u8 = 1;
const ALLOW_OOM: u8 = 1 << 1;
const NO_CLUSTER: u8 = 1 << 3;

/// The error for a library or function name Redis refuses (7.0 says "library" for both).
const BAD_NAME: &str = "ERR Library names can only contain letters, numbers, or underscores(_) \
                        and must be at least one character long";

/// A share of the instruction budget a library's code may use while it loads (Redis gives a load
/// 500 ms, a tenth of a script's busy threshold).
const LOAD_BUDGET_SHARE: u64 = 10;

/// The collector's basic steps after each load. A load leaves garbage about as big as what it
/// keeps (its chunk beside the callbacks it registered); with the state's allocations alone
/// driving the collector, 50,000 loads left the state a tenth larger than Redis's, past the
/// bound Redis's suite holds it to. Stepping here, not during `FCALL`, costs the loads only.
const LOAD_GC_STEPS: usize = 4;

/// The Lua half of the library environment: the globals table every library's code runs in, and
/// a switch that points its lookups at the library API (while loading) or the script environment.
const LIBRARY_GLOBALS: &str = r##"
local env, redis, register = ...
local error, setmetatable, tostring = error, setmetatable, tostring
local function missing(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
local function readonly() error("Attempt to modify a readonly table", 2) end
local function protect(t)
  return setmetatable({}, {__index = setmetatable(t, {__index = missing}),
                           __newindex = readonly, __metatable = false})
end
local api_redis = protect({
  register_function = register, log = redis.log,
  LOG_DEBUG = redis.LOG_DEBUG, LOG_VERBOSE = redis.LOG_VERBOSE,
  LOG_NOTICE = redis.LOG_NOTICE, LOG_WARNING = redis.LOG_WARNING,
  REDIS_VERSION = redis.REDIS_VERSION, REDIS_VERSION_NUM = redis.REDIS_VERSION_NUM,
})
local api = protect({redis = api_redis})
local meta = {__index = env, __newindex = readonly, __metatable = false}
local globals = setmetatable({}, meta)
return globals, function(loading) meta.__index = loading and api or env end
"##;

/// One function a library registered.
struct Registered {
    /// The callback, in the state's registry: mlua's own handles (`Function`) take a slot each of
    /// one auxiliary Lua stack, which Lua 5.1 caps at 8,000 (`LUAI_MAXCSTACK`), and Redis's suite
    /// loads 50,000 libraries. Dropping the key frees the slot for the next registration, and
    /// [`LibraryVm::release`] lets Lua collect the callback.
    callback: RegistryKey,
    description: Option<Bytes>,
    flags: u8,
}

/// One library: its code as loaded and its functions by name.
struct Library {
    code: Bytes,
    functions: BTreeMap<String, Registered>,
}

/// A library's code compiled and run, not yet in the registry.
struct Compiled {
    name: String,
    library: Library,
}

/// The registrations of the library that is loading; None while none loads (a function that
/// kept `redis.register_function` calls it in vain).
type Pending = Arc<Mutex<Option<Vec<(String, Registered)>>>>;

/// The state the libraries live in, built at the first load.
struct LibraryVm {
    vm: Box<Vm>,
    globals: Table,
    switch: Function,
    pending: Pending,
}

/// The engine's libraries and the Lua state their functions run in.
#[derive(Default)]
pub(crate) struct Functions {
    vm: Option<LibraryVm>,
    libraries: BTreeMap<String, Library>,
    /// Every function name of the libraries, lowercased: a load checks its names here, not
    /// library by library (50,000 loads stay linear).
    names: BTreeSet<String>,
}

impl Functions {
    /// How many libraries and functions are loaded (`FUNCTION STATS`).
    fn counts(&self) -> (usize, usize) {
        let functions = self.libraries.values().map(|l| l.functions.len()).sum();
        (self.libraries.len(), functions)
    }

    /// The library holding the function `name` (names compare without case, as in Redis).
    fn find(&self, name: &str) -> Option<(&str, &Registered)> {
        self.libraries.iter().find_map(|(lib, l)| {
            l.functions
                .iter()
                .find(|(f, _)| f.eq_ignore_ascii_case(name))
                .map(|(_, r)| (lib.as_str(), r))
        })
    }

    /// Adds `new` to the libraries. A library of the same name is an error unless `replace`;
    /// a function name another library has is always one. Nothing changes on an error.
    fn add(&mut self, new: Vec<Compiled>, replace: bool) -> Result<(), Frame> {
        for c in &new {
            if !replace && self.libraries.contains_key(&c.name) {
                // `FUNCTION LOAD` quotes the name (it checks before this); `RESTORE` does not.
                return Err(Frame::error_owned(format!(
                    "ERR Library {} already exists",
                    c.name
                )));
            }
        }
        let lower = |l: &Library| -> Vec<String> {
            l.functions.keys().map(|f| f.to_ascii_lowercase()).collect()
        };
        let replaced: BTreeSet<String> = new
            .iter()
            .filter_map(|c| self.libraries.get(&c.name))
            .flat_map(lower)
            .collect();
        let mut added = BTreeSet::new();
        for c in &new {
            for f in c.library.functions.keys() {
                let name = f.to_ascii_lowercase();
                let taken = self.names.contains(&name) && !replaced.contains(&name);
                if taken || !added.insert(name) {
                    return Err(Frame::error_owned(format!(
                        "ERR Function {f} already exists"
                    )));
                }
            }
        }
        for name in &replaced {
            self.names.remove(name);
        }
        self.names.extend(added);
        for c in new {
            self.libraries.insert(c.name, c.library);
        }
        self.release();
        Ok(())
    }

    /// Deletes library `name` and its functions' names; false if there is none.
    fn remove(&mut self, name: &str) -> bool {
        let Some(library) = self.libraries.remove(name) else {
            return false;
        };
        for f in library.functions.keys() {
            self.names.remove(&f.to_ascii_lowercase());
        }
        drop(library);
        self.release();
        true
    }

    /// Lets Lua collect the callbacks of the libraries dropped since the last call (replaced,
    /// deleted, or compiled and then refused): their registry entries go, as Redis's go with
    /// the library, and the state's collector frees them. Without it a dropped key's entry stays
    /// until a later registration reuses it.
    fn release(&self) {
        if let Some(lvm) = &self.vm {
            lvm.vm.lua.expire_registry_values();
        }
    }

    /// Puts `libraries` in place of the loaded ones.
    fn set_libraries(&mut self, libraries: BTreeMap<String, Library>) {
        self.names = libraries
            .values()
            .flat_map(|l| l.functions.keys().map(|f| f.to_ascii_lowercase()))
            .collect();
        self.libraries = libraries;
    }

    /// What `INFO memory` tells: libraries, functions, the bytes of the state they live in
    /// (None until the first load builds it), and an estimate of what Redis 7.4's structures
    /// take for them (`used_memory_functions`: its empty dictionaries, then each library's
    /// code and entries and each function's name, description and entries).
    pub fn memory(&self) -> (usize, usize, Option<u64>, u64) {
        let (libraries, functions) = self.counts();
        let state = self.vm.as_ref().map(|lvm| lvm.vm.reported_memory());
        let round = |n: usize| (n as u64).next_multiple_of(16);
        let overhead = self.libraries.iter().map(|(name, l)| {
            let entries = l.functions.iter().map(|(f, r)| {
                160 + round(f.len()) + r.description.as_ref().map_or(0, |d| round(d.len()))
            });
            400 + round(name.len()) + round(l.code.len()) + entries.sum::<u64>()
        });
        (libraries, functions, state, 232 + overhead.sum::<u64>())
    }

    /// Whether no library is loaded (`DEBUG RELOAD NOFLUSH` fails over one).
    pub fn is_empty(&self) -> bool {
        self.libraries.is_empty()
    }

    /// `FUNCTION FLUSH`: every library, and the state they ran in.
    pub fn flush(&mut self) {
        *self = Functions::default();
    }
}

impl LibraryVm {
    fn new(cx: &mut Cx<'_>) -> Result<LibraryVm, Frame> {
        let rand = super::scripts(cx.scripts()).rand.clone();
        // One watch for both states: the front doors see whichever script runs.
        let watch = cx.scripts().watch();
        let version = cx.engine().version();
        let build = || -> mlua::Result<LibraryVm> {
            let mut vm = Box::new(Vm::new(rand, watch, ScriptKind::Function, version)?);
            let pending: Pending = Arc::default();
            let register = register_function(&vm.lua, pending.clone())?;
            let make: Function = vm
                .lua
                .load(LIBRARY_GLOBALS)
                .set_name(ENV_SOURCE)
                .into_function()?;
            let (globals, switch) = make.call((&vm.env, &vm.redis, register))?;
            drop(make);
            // Lua's own pause between cycles, which Redis keeps (see `LOAD_GC_STEPS`).
            vm.lua
                .gc_set_mode(GcMode::Incremental(GcIncParams::default().pause(200)));
            vm.settle()?;
            Ok(LibraryVm {
                vm,
                globals,
                switch,
                pending,
            })
        };
        build().map_err(|e| Frame::error_owned(format!("ERR the fake's Lua failed to start: {e}")))
    }

    /// Compiles and runs a library's `code` under the library API, collecting what it registers.
    fn compile(&mut self, code: &Bytes) -> Result<Compiled, Frame> {
        let (name, body) = parse_metadata(code)?;
        let chunk = self.vm.compile(
            body,
            "@user_function",
            &self.globals,
            "Error compiling function",
        )?;
        let lua_error = |e: mlua::Error| Frame::error_owned(format!("ERR {e}"));
        self.vm.arm_budget().map_err(lua_error)?;
        let executed = &self.vm.executed;
        executed.store(
            super::INSTRUCTION_BUDGET - super::INSTRUCTION_BUDGET / LOAD_BUDGET_SHARE,
            Ordering::Relaxed,
        );
        *self.pending.lock().expect("not poisoned") = Some(Vec::new());
        self.switch.call::<()>(true).map_err(lua_error)?;
        self.vm.watch.begin_load();
        let ran = {
            let _limit = env::MemoryLimit::set(&self.vm.lua, self.vm.memory_limit);
            (self.vm.xpcall).call::<(bool, Value)>((&chunk, &self.vm.handler))
        };
        self.vm.watch.end_load();
        let timed_out = executed.load(Ordering::Relaxed) >= super::KILLED;
        // A budget that ran out fires at every instruction: end it before the switch runs.
        self.vm.arm_budget().map_err(lua_error)?;
        self.switch.call::<()>(false).map_err(lua_error)?;
        let registered = self
            .pending
            .lock()
            .expect("not poisoned")
            .take()
            .unwrap_or_default();
        for _ in 0..LOAD_GC_STEPS {
            let _ = self.vm.lua.gc_step();
        }
        match ran {
            Ok((true, _)) => {}
            _ if timed_out => {
                return Err(Frame::error(
                    "ERR Error registering functions: ERR FUNCTION LOAD timeout",
                ));
            }
            Ok((false, Value::Table(t))) => {
                let text: String = t.raw_get("err").unwrap_or_default();
                return Err(Frame::error_owned(format!(
                    "ERR Error registering functions: {text}"
                )));
            }
            // Redis's `luaExtractErrorInformation`: a string (or number) error is its message.
            Ok((false, Value::String(s))) => {
                let mut text = b"ERR Error registering functions: ERR ".to_vec();
                text.extend_from_slice(&s.as_bytes());
                return Err(Frame::error_from_bytes(text));
            }
            Ok((false, _)) => {
                return Err(Frame::error("ERR Error registering functions: ERR"));
            }
            Err(e) => return Err(lua_error(e)),
        }
        if registered.is_empty() {
            return Err(Frame::error("ERR No functions registered"));
        }
        Ok(Compiled {
            name,
            library: Library {
                code: code.clone(),
                functions: registered.into_iter().collect(),
            },
        })
    }
}

/// `redis.register_function(name, callback)` and `redis.register_function{function_name=,
/// callback=, flags=, description=}`, checked as Redis checks them.
fn register_function(lua: &Lua, pending: Pending) -> mlua::Result<Function> {
    const NOT_LOADING: &str =
        "ERR redis.register_function can only be called on FUNCTION LOAD command";
    lua.create_function(move |lua, args: Variadic<Value>| {
        let fail = |text: &str| Err(env::raise(lua, text));
        if pending.lock().expect("not poisoned").is_none() {
            return fail(NOT_LOADING);
        }
        let (name, registered) = match &args[..] {
            [Value::Table(t)] => named_registration(lua, t)?,
            [_] => {
                return fail(
                    "ERR calling redis.register_function with a single argument is only \
                     applicable to Lua table (representing named arguments).",
                );
            }
            [name, callback] => {
                let Some(name) = lua_string(name) else {
                    return fail("ERR first argument to redis.register_function must be a string");
                };
                let Value::Function(callback) = callback else {
                    return fail(
                        "ERR second argument to redis.register_function must be a function",
                    );
                };
                let registered = Registered {
                    callback: lua.create_registry_value(callback)?,
                    description: None,
                    flags: 0,
                };
                (String::from_utf8_lossy(&name).into_owned(), registered)
            }
            _ => return fail("ERR wrong number of arguments to redis.register_function"),
        };
        if !valid_name(name.as_bytes()) {
            return fail(BAD_NAME);
        }
        let mut pending = pending.lock().expect("not poisoned");
        // A load is on: checked on entry, before the arguments, as Redis checks it.
        let Some(pending) = pending.as_mut() else {
            return fail(NOT_LOADING);
        };
        if pending.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
            return fail("ERR Function already exists in the library");
        }
        pending.push((name, registered));
        Ok(())
    })
}

/// The table form of `redis.register_function`.
fn named_registration(lua: &Lua, t: &Table) -> mlua::Result<(String, Registered)> {
    let fail = |text: &str| Err(env::raise(lua, text));
    let (mut name, mut callback, mut description, mut flags) = (None, None, None, 0u8);
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, v) = pair?;
        // A number is a string to Lua's `lua_isstring`, and no argument's name.
        let key = match &k {
            Value::String(k) => k.as_bytes().to_vec(),
            Value::Integer(_) | Value::Number(_) => Vec::new(),
            _ => {
                return fail(
                    "ERR named argument key given to redis.register_function is not a string",
                );
            }
        };
        match &key[..] {
            b"function_name" => match lua_string(&v) {
                Some(s) => name = Some(String::from_utf8_lossy(&s).into_owned()),
                None => {
                    return fail(
                        "ERR function_name argument given to redis.register_function must be a \
                         string",
                    );
                }
            },
            b"description" => match lua_string(&v) {
                Some(s) => description = Some(Bytes::from(s)),
                None => {
                    return fail(
                        "ERR description argument given to redis.register_function must be a \
                         string",
                    );
                }
            },
            b"callback" => match v {
                Value::Function(f) => callback = Some(f),
                _ => {
                    return fail(
                        "ERR callback argument given to redis.register_function must be a \
                         function",
                    );
                }
            },
            b"flags" => {
                let Value::Table(list) = v else {
                    return fail(
                        "ERR flags argument to redis.register_function must be a table \
                         representing function flags",
                    );
                };
                for flag in list.sequence_values::<Value>() {
                    let flag = lua_string(&flag?);
                    let bit = flag.and_then(|f| FLAG_NAMES.iter().position(|n| n.as_bytes() == f));
                    match bit {
                        Some(bit) => flags |= 1 << bit,
                        None => return fail("ERR unknown flag given"),
                    }
                }
            }
            _ => return fail("ERR unknown argument given to redis.register_function"),
        }
    }
    let Some(name) = name else {
        return fail("ERR redis.register_function must get a function name argument");
    };
    let Some(callback) = callback else {
        return fail("ERR redis.register_function must get a callback argument");
    };
    Ok((
        name,
        Registered {
            callback: lua.create_registry_value(callback)?,
            description,
            flags,
        },
    ))
}

/// A string or a number as `lua_tostring` gives it; None for any other value.
fn lua_string(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(n) => Some(n.to_string().into_bytes()),
        Value::Number(n) => Some(super::lua_number_text(*n).into_bytes()),
        _ => None,
    }
}

/// Letters, digits and underscores, at least one.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// The library name in `code`'s `#!lua name=<lib>` line, and the code to compile: the line is
/// cut but its line break kept, so line numbers stay the user's.
fn parse_metadata(code: &[u8]) -> Result<(String, &[u8]), Frame> {
    if !code.starts_with(b"#!") {
        return Err(Frame::error("ERR Missing library metadata"));
    }
    let Some(end) = code.iter().position(|&b| b == b'\n') else {
        return Err(Frame::error("ERR Invalid library metadata"));
    };
    // Redis splits the line as it splits an inline request, quotes and all, so `name="foo"`
    // names `foo`; a line it cannot split is invalid metadata.
    let Some(parts) = split_args(&code[..end]).filter(|p| !p.is_empty()) else {
        return Err(Frame::error("ERR Invalid library metadata"));
    };
    let engine = String::from_utf8_lossy(parts[0].get(2..).unwrap_or_default());
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(Frame::error_owned(format!(
            "ERR Engine '{engine}' not found"
        )));
    }
    let mut name: Option<String> = None;
    for part in &parts[1..] {
        let named = part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=");
        if named && name.is_some() {
            return Err(Frame::error(
                "ERR Invalid metadata value, name argument was given multiple times",
            ));
        } else if named {
            name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
        } else {
            return Err(Frame::error_owned(format!(
                "ERR Invalid metadata value given: {}",
                String::from_utf8_lossy(part)
            )));
        }
    }
    let Some(name) = name else {
        return Err(Frame::error("ERR Library name was not given"));
    };
    if !valid_name(name.as_bytes()) {
        return Err(Frame::error(BAD_NAME));
    }
    Ok((name, &code[end..]))
}

/// `FUNCTION LOAD [REPLACE] code`: the library's name, or the error Redis gives.
pub(crate) fn load(cx: &mut Cx<'_>, code: &Bytes, replace: bool) -> Frame {
    let (name, _) = match parse_metadata(code) {
        Ok(parsed) => parsed,
        Err(e) => return e,
    };
    if !replace && cx.functions().libraries.contains_key(&name) {
        return Frame::error_owned(format!("ERR Library '{name}' already exists"));
    }
    let reply = match compile_all(cx, std::slice::from_ref(code)) {
        Ok(compiled) => match cx.functions().add(compiled, replace) {
            Ok(()) => Frame::Bulk(Bytes::from(name)),
            Err(e) => e,
        },
        Err(e) => e,
    };
    cx.functions().release();
    reply
}

/// Compiles every library of `codes`, building the state first if need be.
fn compile_all(cx: &mut Cx<'_>, codes: &[Bytes]) -> Result<Vec<Compiled>, Frame> {
    let mut lvm = match cx.functions().vm.take() {
        Some(lvm) => lvm,
        None => LibraryVm::new(cx)?,
    };
    let compiled: Result<Vec<Compiled>, Frame> = codes.iter().map(|c| lvm.compile(c)).collect();
    cx.functions().vm = Some(lvm);
    compiled
}

/// `FCALL`/`FCALL_RO name numkeys key… arg…`, the name and numkeys already read and checked.
pub(crate) fn fcall(
    cx: &mut Cx<'_>,
    name: &[u8],
    keys: &[Bytes],
    args: &[Bytes],
    read_only_command: bool,
    command: &[Bytes],
) -> Frame {
    let (libraries, functions) = cx.functions().counts();
    let running = RunningFunction {
        name: Bytes::copy_from_slice(name),
        command: command.to_vec(),
        libraries,
        functions,
    };
    let name = String::from_utf8_lossy(name);
    let functions = cx.functions();
    let Some((_, registered)) = functions.find(&name) else {
        return Frame::error("ERR Function not found");
    };
    let flags = registered.flags;
    // A function is registered only by a load, which builds the state first.
    let callback = functions
        .vm
        .as_ref()
        .map(|lvm| lvm.vm.lua.registry_value::<Function>(&registered.callback));
    let Some(Ok(callback)) = callback else {
        return Frame::error("ERR Function not found");
    };
    // Redis's `scriptPrepareForRun` checks `no-cluster` first.
    if flags & NO_CLUSTER != 0 && cx.engine().is_cluster_node() {
        return super::NO_CLUSTER;
    }
    // A function that may write, as a shebang's script: refused on a replica and short of
    // good replicas.
    if flags & NO_WRITES == 0 && cx.engine().is_read_only_replica() {
        return crate::engine::replication::READONLY;
    }
    if flags & NO_WRITES == 0 && !cx.engine().has_good_replicas() {
        return crate::engine::replication::NOREPLICAS;
    }
    if read_only_command && flags & NO_WRITES == 0 {
        return Frame::error("ERR Can not execute a script with write flag using *_ro command.");
    }
    let Some(lvm) = cx.functions().vm.take() else {
        return Frame::error("ERR Function not found");
    };
    let run = Run {
        read_only: read_only_command || flags & NO_WRITES != 0,
        allow_oom: flags & ALLOW_OOM != 0,
        caller_db: cx.db,
        watch: &lvm.vm.watch,
    };
    let watching = Watching::begin_function(run.watch, running);
    let reply = lvm.vm.run(cx, &callback, &name, keys, args, &run);
    drop(watching);
    cx.client().db = run.caller_db;
    cx.db = run.caller_db;
    cx.functions().vm = Some(lvm);
    reply
}

/// Whether a function named `name` is loaded (`FCALL` checks it before its key count).
pub(crate) fn exists(cx: &mut Cx<'_>, name: &[u8]) -> bool {
    cx.functions()
        .find(&String::from_utf8_lossy(name))
        .is_some()
}

/// `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]`, libraries in name order.
pub(crate) fn list(cx: &mut Cx<'_>, pattern: Option<&[u8]>, with_code: bool) -> Frame {
    let bulk = |s: &str| Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()));
    let libraries = cx.functions().libraries.iter();
    let matching = libraries.filter(|(name, _)| {
        pattern.is_none_or(|p| crate::engine::glob::glob_match(p, name.as_bytes()))
    });
    let entries = matching.map(|(name, library)| {
        let functions = library.functions.iter().map(|(f, r)| {
            let flags = FLAG_NAMES
                .iter()
                .enumerate()
                .filter(|(bit, _)| r.flags & (1 << bit) != 0)
                .map(|(_, n)| Frame::simple(n))
                .collect();
            Frame::Map(vec![
                (bulk("name"), bulk(f)),
                (
                    bulk("description"),
                    r.description.clone().map_or(Frame::Null, Frame::Bulk),
                ),
                (bulk("flags"), Frame::Set(flags)),
            ])
        });
        let mut fields = vec![
            (bulk("library_name"), bulk(name)),
            (bulk("engine"), bulk("LUA")),
            (bulk("functions"), Frame::Array(functions.collect())),
        ];
        if with_code {
            fields.push((bulk("library_code"), Frame::Bulk(library.code.clone())));
        }
        Frame::Map(fields)
    });
    Frame::Array(entries.collect())
}

/// `FUNCTION DELETE name`.
pub(crate) fn delete(cx: &mut Cx<'_>, name: &[u8]) -> Frame {
    let name = String::from_utf8_lossy(name);
    match cx.functions().remove(name.as_ref()) {
        true => Frame::OK,
        false => Frame::error("ERR Library not found"),
    }
}

/// `FUNCTION STATS`: nothing runs while the engine answers, so `running_script` is nil (while a
/// function is busy, the front door answers from the script watch).
pub(crate) fn stats(cx: &mut Cx<'_>) -> Frame {
    let (libraries, functions) = cx.functions().counts();
    crate::engine::script_watch::function_stats(Frame::Null, libraries, functions)
}

/// `FUNCTION DUMP`.
pub(crate) fn dump(cx: &mut Cx<'_>) -> Frame {
    let version = cx.engine().version();
    let codes: Vec<&[u8]> = cx
        .functions()
        .libraries
        .values()
        .map(|l| &l.code[..])
        .collect();
    Frame::Bulk(Bytes::from(payload::encode(&codes, version)))
}

/// What `FUNCTION RESTORE` does with the libraries already loaded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestorePolicy {
    /// Drops them first.
    Flush,
    /// Keeps them; a library of the same name is an error.
    Append,
    /// Keeps them; a library of the same name is replaced.
    Replace,
}

/// `FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]`: all the payload's libraries or none.
pub(crate) fn restore(cx: &mut Cx<'_>, payload: &[u8], policy: RestorePolicy) -> Frame {
    let codes = match payload::decode(payload, cx.engine().version()) {
        Ok(codes) => codes,
        Err(e) => return e,
    };
    let compiled = match compile_all(cx, &codes) {
        Ok(compiled) => compiled,
        Err(e) => return e,
    };
    let functions = cx.functions();
    let result = if policy == RestorePolicy::Flush {
        let kept = std::mem::take(&mut functions.libraries);
        functions.set_libraries(BTreeMap::new());
        let result = functions.add(compiled, false);
        if result.is_err() {
            functions.set_libraries(kept);
        }
        result
    } else {
        functions.add(compiled, policy == RestorePolicy::Replace)
    };
    functions.release();
    match result {
        Ok(()) => Frame::OK,
        Err(e) => e,
    }
}

/// `FUNCTION DUMP`'s payload: Redis's RDB function records, then the footer a key's `DUMP`
/// payload has, read and written by the same RDB code.
mod payload {
    use crate::engine::Version;
    use crate::engine::rdb::{self, BadData, Reader};
    use crate::resp::Frame;
    use bytes::Bytes;

    /// `RDB_OPCODE_FUNCTION2`: one library's code follows.
    const FUNCTION: u8 = 245;
    /// `RDB_OPCODE_FUNCTION_PRE_GA`: the format of Redis's release candidates.
    const FUNCTION_PRE_GA: u8 = 246;

    const BAD_PAYLOAD: Frame = Frame::error("ERR DUMP payload version or checksum are wrong");
    const BAD_DATA: Frame = Frame::error("ERR payload data is not valid");

    /// The payload of these libraries' codes, as `server` writes it.
    pub fn encode(codes: &[&[u8]], server: Version) -> Vec<u8> {
        let mut out = Vec::new();
        for code in codes {
            out.push(FUNCTION);
            rdb::put_len(&mut out, code.len() as u64);
            out.extend_from_slice(code);
        }
        out.extend_from_slice(&rdb::footer_version(server, FUNCTION).to_le_bytes());
        let crc = rdb::crc64(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// The libraries' codes in a payload, or the error `server` gives for it.
    pub fn decode(payload: &[u8], server: Version) -> Result<Vec<Bytes>, Frame> {
        if !rdb::verify(payload, server) {
            return Err(BAD_PAYLOAD);
        }
        let mut records = Reader::new(&payload[..payload.len() - 10]);
        let mut codes = Vec::new();
        while !records.is_empty() {
            match records.byte().map_err(|BadData| BAD_DATA)? {
                FUNCTION => codes.push(records.bytes().map_err(|BadData| BAD_DATA)?),
                FUNCTION_PRE_GA => {
                    return Err(Frame::error("ERR Pre-GA function format not supported"));
                }
                _ => return Err(Frame::error("ERR given type is not a function")),
            }
        }
        Ok(codes)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_payload_round_trips() {
            let codes: [&[u8]; 2] = [b"#!lua name=a\n", &[b'x'; 300]];
            for server in Version::ALL {
                let decoded = decode(&encode(&codes, server), server).unwrap();
                assert_eq!(decoded, codes.map(Bytes::copy_from_slice));
            }
            // Redis 7.0 refuses the footer of 7.4's RDB version.
            let newer = encode(&codes, Version::V7_4);
            assert!(decode(&newer, Version::V7_0).is_err());
        }
    }
}
