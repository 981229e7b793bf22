//! The four C libraries Redis 7.0 links into its Lua, written again in Rust: `cjson`, `cmsgpack`,
//! `bit` and `struct`.
//!
//! Scripts use them to move structured data through keys and replies, and a script that works on
//! Redis must get the same bytes here: a JSON text that another client compares, a msgpack blob
//! stored in a key, a `struct.pack` header. No crate gives Redis's encodings exactly (its `cjson`
//! prints numbers with `%.14g` and escapes `/`; its `cmsgpack` picks a float over a double
//! whenever the value survives the round trip), so each library is a port of its behaviour over
//! `mlua`'s safe API, one file each, and `tests.rs` holds every case equal to a real Redis.
//!
//! What the C functions share lives here:
//!
//! - **Errors** carry the text `luaL_error` would build: the calling Lua line
//!   (`user_script:1: `) and, for a bad argument, the name the caller used (`bad argument #1 to
//!   'encode' (...)`). Both come from the Lua stack when the error is raised, so aliases, method
//!   calls and tail calls read as they do on Redis.
//! - **Argument checks** follow Lua 5.1's `luaL_check*`: a string that reads as a number is a
//!   number, a number is a string, and a float argument to an integer parameter is truncated.
//! - **The stack budget.** A C function may hold at most 8000 Lua stack slots
//!   (`LUAI_MAXCSTACK`); deep tables fail on Redis where that budget runs out, with the library's
//!   own error. The ports keep the same count instead of recursing on the Rust stack, so a deep
//!   input fails where Redis fails and never overflows the thread.
//! - **Read-only library tables.** Redis 7.0 refuses any assignment into them with "Attempt to
//!   modify a readonly table", so no script can change a library for the scripts after it. Each
//!   global here is an empty table whose metatable reads through to the library and refuses
//!   writes.
//!
//! For the script VM that installs them: an error is raised as an `mlua::Error::RuntimeError`
//! holding Redis's exact text (inside mlua's `CallbackError`). A script's `pcall` receives it as
//! mlua's error userdata, where Redis gives the message string; the VM's `pcall` and `xpcall`
//! hand scripts the message (`tests.rs` shows the conversion).
//!
//! Where these differ from Redis, knowingly:
//!
//! - The read-only view is empty to raw access: `pairs(cjson)`, `next`, `rawget` and
//!   `cjson.encode(cjson)` see no entries, `rawset(cjson, k, v)` writes to the view instead of
//!   failing, and `getmetatable(cjson)` is `false` rather than `nil`.
//! - mlua keeps a callback's arguments and one slot of its own on the Lua stack, so an `unpack`
//!   returning within a few values of the 8000-slot limit (7997 to 7999 values) fails on the fake
//!   with mlua's "stack overflow" where Redis still succeeds; past the limit both give Redis's
//!   error.
//! - An error text that would hold a byte that is not UTF-8 (`struct.pack('\200')`) carries it
//!   as U+FFFD.

mod bit;
mod cjson;
mod cmsgpack;
mod structlib;
#[cfg(test)]
mod tests;

use mlua::{Lua, MultiValue, Table, Value};

/// How many stack slots a C function may use (`LUAI_MAXCSTACK` in Lua 5.1's `luaconf.h`); past
/// it, `lua_checkstack` fails and the libraries report their nesting errors.
const C_STACK_SLOTS: usize = 8000;

/// Installs `cjson`, `cmsgpack`, `bit` and `struct` as the globals Redis 7.0 gives a script.
pub(crate) fn open_all(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    globals.set("cjson", read_only(lua, cjson::library(lua)?)?)?;
    globals.set("cmsgpack", read_only(lua, cmsgpack::library(lua)?)?)?;
    globals.set("bit", read_only(lua, bit::library(lua)?)?)?;
    globals.set("struct", read_only(lua, structlib::library(lua)?)?)?;
    Ok(())
}

/// A view of `library` that reads through and refuses every assignment, as Redis 7.0's
/// read-only tables do (`cjson.encode = nil` fails on the assigning line).
fn read_only(lua: &Lua, library: Table) -> mlua::Result<Table> {
    let view = lua.create_table()?;
    let guard = lua.create_table()?;
    guard.set("__index", library)?;
    guard.set(
        "__newindex",
        lua.create_function(|lua, _: MultiValue| -> mlua::Result<()> {
            Err(raise(lua, "Attempt to modify a readonly table"))
        })?,
    )?;
    // Keeps a script from fetching the guard and lifting it.
    guard.set("__metatable", false)?;
    view.set_metatable(Some(guard))?;
    Ok(view)
}

/// The error `luaL_error(L, msg)` raises from a C function: `msg` after the position of the Lua
/// code that called it, when that code has one.
fn raise(lua: &Lua, msg: impl std::fmt::Display) -> mlua::Error {
    mlua::Error::RuntimeError(format!("{}{msg}", caller_position(lua)))
}

/// `luaL_where(L, 1)`: `"<short_src>:<line>: "` of the caller, or nothing for a C caller.
fn caller_position(lua: &Lua) -> String {
    lua.inspect_stack(1, |frame| {
        let line = frame.current_line().filter(|&line| line > 0)?;
        let source = frame.source().short_src?.into_owned();
        Some(format!("{source}:{line}: "))
    })
    .flatten()
    .unwrap_or_default()
}

/// `luaL_argerror`: a complaint about argument `position`, naming the function as its caller
/// spelled it (`'?'` when it cannot be known, as through `pcall`).
fn arg_error(lua: &Lua, position: i64, complaint: impl std::fmt::Display) -> mlua::Error {
    let (name, is_method) = lua
        .inspect_stack(0, |frame| {
            let names = frame.names();
            let name = names.name.map(|name| name.into_owned());
            (name, names.name_what == Some("method"))
        })
        .unwrap_or((None, false));
    let name = name.unwrap_or_else(|| "?".to_owned());
    if is_method {
        if position == 1 {
            return raise(lua, format!("calling '{name}' on bad self ({complaint})"));
        }
        return raise(
            lua,
            format!("bad argument #{} to '{name}' ({complaint})", position - 1),
        );
    }
    raise(
        lua,
        format!("bad argument #{position} to '{name}' ({complaint})"),
    )
}

/// The name `lua_typename` gives a value; light and full userdata are both `userdata`.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nil",
        Value::Boolean(_) => "boolean",
        Value::Integer(_) | Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Table(_) => "table",
        Value::Function(_) => "function",
        Value::Thread(_) => "thread",
        _ => "userdata",
    }
}

/// `luaL_typerror`: `"<expected> expected, got <type>"`, with "no value" past the last argument.
fn type_error(lua: &Lua, args: &MultiValue, position: usize, expected: &str) -> mlua::Error {
    let got = args.get(position - 1).map_or("no value", type_name);
    arg_error(
        lua,
        position as i64,
        format!("{expected} expected, got {got}"),
    )
}

/// Argument `position` (from 1), or `nil` past the end.
fn arg(args: &MultiValue, position: usize) -> Value {
    args.get(position - 1).cloned().unwrap_or(Value::Nil)
}

/// `luaL_checknumber`: a number, or a string that reads as one.
fn check_number(lua: &Lua, args: &MultiValue, position: usize) -> mlua::Result<f64> {
    match args.get(position - 1) {
        Some(Value::Number(number)) => Ok(*number),
        Some(Value::Integer(integer)) => Ok(*integer as f64),
        Some(value @ Value::String(_)) => lua
            .coerce_number(value.clone())?
            .ok_or_else(|| type_error(lua, args, position, "number")),
        _ => Err(type_error(lua, args, position, "number")),
    }
}

/// `luaL_checkinteger`: `luaL_checknumber` truncated toward zero into a `lua_Integer`.
fn check_integer(lua: &Lua, args: &MultiValue, position: usize) -> mlua::Result<i64> {
    check_number(lua, args, position).map(truncate_to_integer)
}

/// `luaL_optinteger`: `default` for an absent or `nil` argument.
fn opt_integer(lua: &Lua, args: &MultiValue, position: usize, default: i64) -> mlua::Result<i64> {
    match args.get(position - 1) {
        None | Some(Value::Nil) => Ok(default),
        Some(_) => check_integer(lua, args, position),
    }
}

/// `luaL_checklstring`: a string, or a number in Lua's `%.14g` spelling.
fn check_bytes(lua: &Lua, args: &MultiValue, position: usize) -> mlua::Result<mlua::LuaString> {
    match args.get(position - 1) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(value @ (Value::Number(_) | Value::Integer(_))) => lua
            .coerce_string(value.clone())?
            .ok_or_else(|| type_error(lua, args, position, "string")),
        _ => Err(type_error(lua, args, position, "string")),
    }
}

/// C's `(lua_Integer)d` on x86-64: truncation, and the "integer indefinite" value (`INT64_MIN`)
/// for NaN and for doubles outside the range.
fn truncate_to_integer(number: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(-LIMIT..LIMIT).contains(&number) {
        i64::MIN
    } else {
        number as i64
    }
}
