//! The world a script sees: Redis 7.0's globals, its `redis` table, and the protection that keeps a
//! script from changing either.
//!
//! Redis 7.0 loads base, table, string and math (plus its own four libraries), drops what could
//! reach the machine (`loadfile`, `dofile`, `print`, the debugger), replaces `math.random` with a
//! generator of its own, and then makes the globals read-only: setting any global fails with
//! `Attempt to modify a readonly table`, reading one that does not exist fails with `Script
//! attempted to access nonexistent global variable`. Redis does that with a read-only flag it
//! patched into its Lua; the stock Lua 5.1 here has none, so the same errors come from proxies: the
//! thread's globals and each library table are empty tables whose metatable reads through to the
//! real one and refuses writes, and `rawset`, `setmetatable`, `rawget`, `next` and `pairs` see
//! through a proxy as Redis's do through a read-only table.
//!
//! The functions a script calls are Rust functions, as Redis's are C: a Lua wrapper called in tail
//! position (`return redis.call(…)`) would take the script's frame, and with it the line an error
//! names. An error they raise carries Redis's error table inside mlua's error value; the error
//! handler and `pcall` take it out again.

use super::rand48::Rand48;
use crate::engine::Version;
use mlua::state::{GcIncParams, GcMode};
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value, Variadic};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

/// The chunk name of the environment's own Lua code. The error handler skips its frames, so an
/// error raised by a wrapper names the script's line, as Redis's C functions do.
pub(super) const ENV_SOURCE: &str = "=redis";

/// Where [`build`] keeps Lua's own `xpcall` (the registry), for the engine's calls into scripts.
pub(super) const RAW_XPCALL: &str = "fake_redis.raw_xpcall";

/// The Lua half of the environment, run once per state with the real globals, the hook table and
/// the names of the library tables to protect. It returns the globals' proxy.
const PROTECT: &str = r##"
local G, libraries, error_value = ...
local rawget, rawset, error, type, tostring = rawget, rawset, error, type, tostring
local setmetatable, getmetatable, next = setmetatable, getmetatable, next

-- Redis's pcall hands back an error table's message, not the table.
local raw_pcall = pcall
local function unwrap(ok, ...)
  if ok then return ok, ... end
  local e = error_value((...))
  if type(e) == "table" then
    local m = rawget(e, "err")
    if type(m) == "string" or type(m) == "number" then return false, m end
  end
  return false, e
end
G.pcall = function(...) return unwrap(raw_pcall(...)) end
-- and its xpcall hands the handler what a C library raised: the message, not mlua's wrapper.
local raw_xpcall = xpcall
G.xpcall = function(f, handler)
  return raw_xpcall(f, function(e) return handler(error_value(e)) end)
end

-- Redis's Lua parses every chunk as text: it never loads bytecode, which Lua 5.1 does not verify,
-- so a chunk that starts with the bytecode signature's first byte (ESC) fails in the lexer there.
-- Lua's own loadstring and load would run it; these give Redis's reply instead.
local raw_loadstring, raw_load = loadstring, load
local function binary_refused(chunkname)
  local _, e = raw_loadstring("\1", chunkname)
  return nil, (string.gsub(e, "char%(1%)", "char(27)"))
end
G.loadstring = function(s, chunkname)
  if type(s) == "string" and string.byte(s, 1) == 27 then
    return binary_refused(chunkname or s)
  end
  return raw_loadstring(s, chunkname)
end
G.load = function(reader, chunkname)
  if type(reader) ~= "function" then return raw_load(reader, chunkname) end
  local first, refused = true, false
  local f, e = raw_load(function()
    local piece = reader()
    if first and type(piece) == "string" and piece ~= "" then
      first = false
      if string.byte(piece, 1) == 27 then
        refused = true
        return nil
      end
    end
    return piece
  end, chunkname)
  if refused then return binary_refused(chunkname or "=(load)") end
  return f, e
end

-- Read-only proxies.
local real = setmetatable({}, {__mode = "k"})
local function readonly() error("Attempt to modify a readonly table", 2) end
local function protect(t, index)
  local p = setmetatable({}, {__index = index or t, __newindex = readonly, __metatable = false})
  real[p] = t
  return p
end
for _, name in ipairs(libraries) do
  local t = rawget(G, name)
  if type(t) == "table" then rawset(G, name, protect(t)) end
end
local G_meta = {__index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end}
setmetatable(G, G_meta)
local proxy = protect(G)
-- The globals' metatable is read-only too, as Redis's: a script that reaches it through
-- getmetatable(_G) gets a read-only view of it.
local meta_views = {[G_meta] = protect(G_meta)}

G.rawset = function(t, k, v)
  if real[t] then error("Attempt to modify a readonly table", 0) end
  return rawset(t, k, v)
end
G.setmetatable = function(t, m)
  if real[t] then error("Attempt to modify a readonly table", 0) end
  return setmetatable(t, m)
end
G.getmetatable = function(t)
  if real[t] then
    local m = getmetatable(real[t])
    return meta_views[m] or m
  end
  return getmetatable(t)
end
G.rawget = function(t, k) return rawget(real[t] or t, k) end
G.next = function(t, k) return next(real[t] or t, k) end
G.pairs = function(t) return next, real[t] or t, nil end
local raw_ipairs = ipairs
G.ipairs = function(t) return raw_ipairs(real[t] or t) end
rawset(G, "_G", proxy)
setfenv(0, proxy)
return proxy
"##;

/// Globals Lua's base library defines that Redis 7.0 does not give a script.
const REMOVED: &[&str] = &[
    "dofile", "loadfile", "print", "getfenv", "setfenv", "newproxy",
];

/// Lua instructions per second of `os.clock()` (Redis 7.4): about what a loop runs at.
const OS_CLOCK_RATE: f64 = 100_000_000.0;

/// The library tables a script may read and never change.
const LIBRARIES: &[&str] = &[
    "string",
    "table",
    "math",
    "coroutine",
    "redis",
    "cjson",
    "bit",
    "cmsgpack",
    "struct",
];

/// How much a state may hold while a script's own code runs: a script may build big values, as
/// in Redis, but not without bound.
pub(super) const SCRIPT_MEMORY: usize = 1 << 30;

/// The state's memory limit, set to a value until dropped and then put back.
///
/// The limit is on only while Lua code runs ([`SCRIPT_MEMORY`]), and off while the engine's own
/// Rust code builds values in the state (`KEYS`, `ARGV`, a command's reply: bounded by the
/// engine's data, not by the script): mlua runs every value it makes under a protected call of
/// its own when an allocation may fail, and with the limit off none can, so those calls (and
/// the two C closures Lua 5.1 allocates for each) are skipped.
pub(super) struct MemoryLimit<'l> {
    lua: &'l Lua,
    before: usize,
}

impl<'l> MemoryLimit<'l> {
    /// Sets `lua`'s limit to `limit` bytes (0: none) until the guard drops.
    pub(super) fn set(lua: &'l Lua, limit: usize) -> MemoryLimit<'l> {
        // The state is the engine's own, so it always has mlua's allocator and its limit.
        let before = lua.set_memory_limit(limit).unwrap_or(0);
        MemoryLimit { lua, before }
    }
}

impl Drop for MemoryLimit<'_> {
    fn drop(&mut self) {
        let _ = self.lua.set_memory_limit(self.before);
    }
}

/// A fresh state with Redis 7.0's environment. Returns the state, the real globals (where `KEYS`
/// and `ARGV` go), the globals' proxy (every script's environment) and the real `redis` table
/// (where the VM puts `call` and `pcall`).
pub(super) fn build(
    rand: Rand48,
    resp: Arc<AtomicU8>,
    version: Version,
    executed: &Arc<AtomicU64>,
) -> mlua::Result<(Lua, Table, Table, Table)> {
    let lua = Lua::new_with(
        StdLib::TABLE | StdLib::STRING | StdLib::MATH,
        LuaOptions::default(),
    )?;
    // Redis steps its collector between scripts; here Lua's incremental collector runs as the state
    // allocates, and a cycle starts once the heap is four times what the last one kept rather
    // than Lua's default of two: what a script leaves (`KEYS`, `ARGV`, replies) is small and dies
    // young, while every cycle marks the whole environment again.
    lua.gc_set_mode(GcMode::Incremental(GcIncParams::default().pause(400)));
    let globals = lua.globals();
    let redis = redis_table(&lua, version)?;
    redis.raw_set("setresp", setresp(&lua, resp)?)?;
    globals.raw_set("redis", &redis)?;
    globals.raw_set("__redis__err__handler", error_handler(&lua)?)?;
    let math: Table = globals.raw_get("math")?;
    math.raw_set("random", random(&lua, rand.clone())?)?;
    math.raw_set(
        "randomseed",
        lua.create_function(move |lua, args: Variadic<Value>| {
            let seed = int_arg(lua, args.first(), 1, "randomseed")?;
            rand.seed(seed);
            Ok(())
        })?,
    )?;
    super::libs::open_all(&lua)?;
    let error_value = lua.create_function(|lua, v: Value| {
        Ok(match &v {
            Value::Error(e) => match find_error_value(e) {
                Some(t) => Value::Table(t),
                // A library raised it: Redis's C libraries raise the message as a string.
                None => Value::String(lua.create_string(error_message(e))?),
            },
            _ => v,
        })
    })?;
    let mut libraries = LIBRARIES.to_vec();
    if version != Version::V7_0 {
        // Redis 7.4 and Valkey give scripts `os` with `clock` alone, read-only as the other
        // libraries. Redis's counts the process's CPU time; the fake's counts the Lua
        // instructions its scripts ran (`executed`, the budget's count), at a fixed rate, so a
        // script reads the same times on every run.
        let os = lua.create_table()?;
        let count = executed.clone();
        let clock = lua.create_function(move |_, ()| {
            Ok(count.load(Ordering::Relaxed) as f64 / OS_CLOCK_RATE)
        })?;
        os.raw_set("clock", clock)?;
        globals.raw_set("os", os)?;
        libraries.push("os");
    }
    let libraries = lua.create_sequence_from(libraries)?;
    // The engine runs scripts through Lua's own xpcall: the one scripts see is a Lua wrapper,
    // whose instructions the budget hook would count, and kill, inside the error handling.
    lua.set_named_registry_value(RAW_XPCALL, globals.raw_get::<Function>("xpcall")?)?;
    let protect: Function = lua.load(PROTECT).set_name(ENV_SOURCE).into_function()?;
    let proxy: Table = protect.call((&globals, libraries, error_value))?;
    for name in REMOVED {
        globals.raw_remove(*name)?;
    }
    // Valkey's scripts see the same (protected) table as `server` too.
    if version.is_valkey() {
        globals.raw_set("server", globals.raw_get::<Value>("redis")?)?;
    }
    Ok((lua, globals, proxy, redis))
}

/// Redis's `math.random`: Lua's own over Redis's generator.
fn random(lua: &Lua, rand: Rand48) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: Variadic<Value>| {
        let r = rand.next_f64();
        match args.len() {
            0 => Ok(r),
            1 => {
                let u = int_arg(lua, args.first(), 1, "random")?;
                if u < 1 {
                    return Err(arg_error(lua, 1, "random", "interval is empty"));
                }
                Ok((r * f64::from(u)).floor() + 1.0)
            }
            2 => {
                let l = int_arg(lua, args.first(), 1, "random")?;
                let u = int_arg(lua, args.get(1), 2, "random")?;
                if l > u {
                    return Err(arg_error(lua, 2, "random", "interval is empty"));
                }
                Ok((r * (f64::from(u) - f64::from(l) + 1.0)).floor() + f64::from(l))
            }
            _ => Err(raise(
                lua,
                &format!("ERR {}wrong number of arguments", position(lua)),
            )),
        }
    })
}

/// `luaL_checkint`: a number (or a string that reads as one), rounded as Lua rounds it.
fn int_arg(lua: &Lua, v: Option<&Value>, n: usize, name: &str) -> mlua::Result<i32> {
    let number = match v {
        Some(Value::Integer(i)) => Some(*i as f64),
        Some(Value::Number(x)) => Some(*x),
        Some(Value::String(s)) => s.to_str().ok().and_then(|s| s.trim().parse::<f64>().ok()),
        _ => None,
    };
    match number {
        Some(x) => Ok(x.round_ties_even() as i32),
        None => {
            let got = v.map_or("no value", Value::type_name);
            Err(arg_error(
                lua,
                n,
                name,
                &format!("number expected, got {got}"),
            ))
        }
    }
}

/// `luaL_argerror`'s error, positioned at the calling line.
fn arg_error(lua: &Lua, n: usize, name: &str, what: &str) -> mlua::Error {
    raise(
        lua,
        &format!(
            "ERR {}bad argument #{n} to '{name}' ({what})",
            position(lua)
        ),
    )
}

/// `luaL_where(L, 1)`: `chunk:line: ` of the Lua function calling the running one, if any.
fn position(lua: &Lua) -> String {
    lua.inspect_stack(1, |d| {
        let line = d.current_line()?;
        let src = d.source().short_src?.into_owned();
        Some(format!("{src}:{line}: "))
    })
    .flatten()
    .unwrap_or_default()
}

/// `redis.setresp(2|3)`: the protocol the script's calls reply in, and its reply is read in.
fn setresp(lua: &Lua, resp: Arc<AtomicU8>) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: Variadic<Value>| {
        let [v] = &args[..] else {
            return Err(raise(lua, "ERR redis.setresp() requires one argument."));
        };
        let n = match v {
            Value::Integer(n) => *n,
            Value::Number(n) => *n as i64,
            Value::String(s) => s
                .to_str()
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0),
            _ => 0,
        };
        if n != 2 && n != 3 {
            return Err(raise(lua, "ERR RESP version must be 2 or 3."));
        }
        resp.store(n as u8, Ordering::Relaxed);
        Ok(())
    })
}

/// The `redis` table without `call`, `pcall` and `acl_check_cmd` (the VM adds those, once per
/// state: they reach the running script's engine context).
fn redis_table(lua: &Lua, version: Version) -> mlua::Result<Table> {
    let redis = lua.create_table()?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|lua, args: Variadic<Value>| {
            let [arg] = &args[..] else {
                return Err(raise(lua, "ERR wrong number of arguments"));
            };
            let text = lua.coerce_string(arg.clone())?;
            let bytes = text
                .as_ref()
                .map(|s| s.as_bytes().to_vec())
                .unwrap_or_default();
            Ok(crate::cmd::sha1_hex(&bytes))
        })?,
    )?;
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, args: Variadic<Value>| {
            let text = match &args[..] {
                [Value::String(s)] => s.as_bytes().to_vec(),
                _ => return error_table(lua, "ERR wrong number or type of arguments"),
            };
            let text = String::from_utf8_lossy(&text);
            let with_code = if let Some(rest) = text.strip_prefix('-') {
                error_text_of(rest)
            } else {
                error_text_of(&text)
            };
            error_table(lua, &with_code)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, args: Variadic<Value>| {
            let t = lua.create_table()?;
            match &args[..] {
                [Value::String(s)] => t.raw_set("ok", s.clone())?,
                _ => return error_table(lua, "ERR wrong number or type of arguments"),
            }
            Ok(t)
        })?,
    )?;
    redis.raw_set(
        "log",
        lua.create_function(|lua, args: Variadic<Value>| {
            if args.len() < 2 {
                return Err(raise(
                    lua,
                    "ERR redis.log() requires two arguments or more.",
                ));
            }
            let level = match &args[0] {
                Value::Integer(n) => *n as f64,
                Value::Number(n) => *n,
                Value::String(s) => match s.to_str().ok().and_then(|s| s.trim().parse().ok()) {
                    Some(n) => n,
                    None => {
                        return Err(raise(
                            lua,
                            "ERR First argument must be a number (log level).",
                        ));
                    }
                },
                _ => {
                    return Err(raise(
                        lua,
                        "ERR First argument must be a number (log level).",
                    ));
                }
            };
            if !(0.0..4.0).contains(&level.trunc()) {
                return Err(raise(lua, "ERR Invalid debug level."));
            }
            // The fake keeps no server log; a script's lines go to tracing.
            let mut line = String::new();
            for v in &args[1..] {
                if let Some(s) = lua.coerce_string(v.clone())? {
                    if !line.is_empty() {
                        line.push(' ');
                    }
                    line.push_str(&s.to_string_lossy());
                }
            }
            tracing::debug!(target: "fake_redis::script", level = level as i64, "{line}");
            Ok(())
        })?,
    )?;
    redis.raw_set(
        "set_repl",
        lua.create_function(|lua, args: Variadic<Value>| {
            let [flags] = &args[..] else {
                return Err(raise(lua, "ERR redis.set_repl() requires two arguments."));
            };
            let flags = match flags {
                Value::Integer(n) => *n,
                Value::Number(n) => *n as i64,
                _ => 0,
            };
            if flags & !3 != 0 {
                return Err(raise(
                    lua,
                    "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or \
                     REPL_NONE.",
                ));
            }
            // One node: there is nothing to replicate to.
            Ok(())
        })?,
    )?;
    redis.raw_set(
        "replicate_commands",
        lua.create_function(|_, _: Variadic<Value>| Ok(true))?,
    )?;
    // No debugger: `breakpoint` says none is attached, `debug` logs nothing.
    redis.raw_set(
        "breakpoint",
        lua.create_function(|_, _: Variadic<Value>| Ok(false))?,
    )?;
    redis.raw_set(
        "debug",
        lua.create_function(|_, _: Variadic<Value>| Ok(()))?,
    )?;
    for (name, value) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, value)?;
    }
    // The release scripts see (`redis.REDIS_VERSION`, and as `0x00MMmmpp`); Valkey adds its
    // name and its own release.
    redis.raw_set("REDIS_VERSION", version.redis_version())?;
    redis.raw_set("REDIS_VERSION_NUM", version.redis_version_num())?;
    if let Some(valkey) = version.valkey_version() {
        redis.raw_set("SERVER_NAME", version.server_name())?;
        redis.raw_set("VALKEY_VERSION", valkey)?;
        redis.raw_set("VALKEY_VERSION_NUM", version.server_version_num())?;
    }
    Ok(redis)
}

/// An error text with a code: `CODE msg` stays, a bare message gets `ERR` (Redis's
/// `luaPushErrorBuff`), trailing line breaks trimmed.
pub(super) fn error_text_of(text: &str) -> String {
    String::from_utf8(error_bytes_of(text.as_bytes()))
        .expect("trimming ASCII line breaks and adding ASCII keeps UTF-8")
}

/// [`error_text_of`] on bytes, for a reply that echoes a client's non-UTF-8 bytes: a script sees
/// them as they came.
pub(super) fn error_bytes_of(text: &[u8]) -> Vec<u8> {
    let line_break = |b: &&u8| matches!(**b, b'\r' | b'\n');
    let text = &text[..text.len() - text.iter().rev().take_while(line_break).count()];
    match text.iter().position(|&b| b == b' ') {
        Some(space) => {
            let msg = &text[space + 1..];
            let msg = &msg[msg.iter().take_while(line_break).count()..];
            [&text[..=space], msg].concat()
        }
        None => [b"ERR ".as_slice(), text].concat(),
    }
}

/// `{err = text}`.
pub(super) fn error_table(lua: &Lua, text: impl AsRef<[u8]>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(text.as_ref())?)?;
    Ok(t)
}

/// A Lua error whose value is `{err = text}`, raised from a Rust function.
pub(super) fn raise(lua: &Lua, text: &str) -> mlua::Error {
    match error_table(lua, text) {
        Ok(t) => mlua::Error::external(ErrorValue(t)),
        Err(e) => e,
    }
}

/// An error table carried through a Rust callback's `Err`; the handler unwraps it.
#[derive(Debug)]
pub(super) struct ErrorValue(pub Table);

impl std::fmt::Display for ErrorValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text: Option<String> = self.0.raw_get("err").ok();
        f.write_str(text.as_deref().unwrap_or("ERR"))
    }
}

impl std::error::Error for ErrorValue {}

/// Redis's `__redis__err__handler`: turns any error into `{err=, source=, line=}`, naming the
/// script's own line (not a C function's, nor the environment's wrappers').
fn error_handler(lua: &Lua) -> mlua::Result<Function> {
    lua.create_function(|lua, err: Value| {
        let table = match err {
            Value::Table(t) => t,
            Value::Error(e) => match find_error_value(&e) {
                Some(t) => t,
                None => error_table(lua, format!("ERR {}", error_message(&e)))?,
            },
            other => {
                let text = lua
                    .coerce_string(other.clone())?
                    .map(|s| s.to_string_lossy())
                    .unwrap_or_else(|| other.type_name().to_owned());
                let text = if matches!(other, Value::Nil) {
                    "nil".to_owned()
                } else {
                    text
                };
                error_table(lua, format!("ERR {text}"))?
            }
        };
        for level in 1..8 {
            let Some(found) = lua.inspect_stack(level, |d| {
                let source = d.source();
                let skip = source.what == "C" || source.source.as_deref() == Some(ENV_SOURCE);
                (!skip).then(|| (source.source.map(|s| s.into_owned()), d.current_line()))
            }) else {
                break;
            };
            if let Some((source, line)) = found {
                if let Some(source) = source {
                    table.raw_set("source", source)?;
                }
                if let Some(line) = line {
                    table.raw_set("line", line)?;
                }
                break;
            }
        }
        Ok(table)
    })
}

/// The message of an error a Rust callback raised (a library's `user_script:N: ...`), as the
/// string a C library would have raised: without mlua's wrapping, its prefix or its traceback.
pub(crate) fn error_message(error: &mlua::Error) -> String {
    match error {
        mlua::Error::CallbackError { cause, .. } => error_message(cause),
        mlua::Error::WithContext { cause, .. } => error_message(cause),
        mlua::Error::RuntimeError(text) => text
            .split("\nstack traceback:")
            .next()
            .unwrap_or_default()
            .to_owned(),
        other => other.to_string(),
    }
}

/// The error table a Rust callback raised, inside whatever mlua wrapped it in.
fn find_error_value(e: &mlua::Error) -> Option<Table> {
    match e {
        mlua::Error::ExternalError(inner) => {
            inner.downcast_ref::<ErrorValue>().map(|v| v.0.clone())
        }
        mlua::Error::CallbackError { cause, .. } => find_error_value(cause),
        mlua::Error::WithContext { cause, .. } => find_error_value(cause),
        _ => None,
    }
}
