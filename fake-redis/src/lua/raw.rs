//! The two paths every script takes, written against Lua's C API: the engine's call into a script
//! ([`Calls::run`], [`run_entry`]) and the script's calls back into the engine (`redis.call` and
//! `redis.pcall`, [`call_entry`]). The rest of the VM uses mlua's safe API; these two do not,
//! because they run for every script and every command a script calls, and through mlua each
//! value that crosses is a locked, stack-guarded API call and a registry reference made and
//! dropped (a script as short as a lock's release cost some twenty of them). Here a run is one
//! mlua call, of a C function made once, and `redis.call` is a C function that reads its
//! arguments off the Lua stack and pushes its reply onto it.
//!
//! This is the crate's only unsafe code, and these are the rules it keeps:
//!
//! 1. **Lua raises errors by `longjmp`.** A `longjmp` may cross only Rust frames that own
//!    nothing to drop. So every Lua API call here that can raise is made from a frame that holds
//!    references and numbers only, and the calls made while Rust values are alive (the command's
//!    arguments, its reply) are ones that cannot raise: with the state's memory limit off, Lua's
//!    allocations never fail (mlua's allocator aborts on a failed allocation, as Rust's does), and
//!    allocation is the only way the calls used there can raise (no `lua_rawset` is made with a
//!    nil or NaN key). `redis.call` turns the limit off while it pushes anything that allocates
//!    and back on before it returns or raises; the only `lua_error` it makes is its last act,
//!    with nothing left to drop.
//! 2. **A panic must not unwind through Lua's C frames.** `redis.call` runs the command under
//!    `catch_unwind`; a panic (a bug in a command) is kept, the script gets an error and every
//!    later call of the run fails too, and the panic is resumed once the script has returned to
//!    Rust, where the server's per-command `catch_unwind` turns it into an error reply as for any
//!    command. [`run_entry`] calls nothing that panics.
//! 3. **The running script's context is lent, never stored.** The functions are made once per
//!    state, so they find the running script's engine context through a [`Slot`], which holds a
//!    pointer only while [`Slot::lend`]'s closure runs.
//! 4. **The stack has room.** A C function is given `LUA_MINSTACK` (20) free slots; converting a
//!    nested reply checks for room at every level.
//!
//! The tests at the end exercise each rule: a command that panics, errors raised by
//! `redis.call` and caught by the script's `pcall`, a script ended by the instruction budget
//! while it calls commands, and a script that runs out of memory.

#![allow(unsafe_code)]

use super::Running;
use crate::resp::Frame;
use crate::resp::number::format_g17;
use bytes::Bytes;
use mlua::ffi::{self, lua_State};
use mlua::{Function, LightUserData, Lua, Table, Value};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// How deep a reply's conversion goes (Lua 5.1 allows a C function 8000 stack slots). Commands
/// build replies a few levels deep, so this is never reached.
const MAX_REPLY_DEPTH: usize = 500;

/// The stack slots one level of a reply's conversion may take: a map's outer and inner tables,
/// their keys, and a key and value being converted, which take up to three while they are built.
const LEVEL_SLOTS: c_int = 10;

/// Where a run's `KEYS` and `ARGV` go.
pub(super) enum Tables<'t> {
    /// Into these two tables (an `EVAL` script's globals), emptied first.
    Reused { keys: &'t Table, argv: &'t Table },
    /// Into two new tables, passed to the function as its two arguments (`FCALL`).
    Arguments,
}

/// What [`run_entry`] is handed (as a light userdata, its first argument) besides the body.
struct RunInput<'a> {
    lua: &'a Lua,
    keys: &'a [Bytes],
    args: &'a [Bytes],
    memory_limit: usize,
}

/// The C function a script's run is, `run_entry(input, body)`, a closure over the error handler
/// and, for `EVAL` scripts, the `KEYS` and `ARGV` tables (nil otherwise). It empties and fills
/// `KEYS` and `ARGV` (or, for a function, makes two new tables to pass it), runs `body` under
/// the handler as Lua's `xpcall` does, the memory limit on while it runs, and returns `ok` and
/// the body's return value or the handler's error value.
///
/// # Safety
/// Only [`Calls::run`] calls it (scripts never see it), with a [`RunInput`] that outlives the
/// call as its first argument and the body as its second.
unsafe extern "C-unwind" fn run_entry(state: *mut lua_State) -> c_int {
    const HANDLER: c_int = 2;
    // SAFETY: the input is `Calls::run`'s local, alive for this call, and only read. This frame
    // holds references and numbers only (rule 1); nothing here panics (rule 2); the stack holds
    // the two arguments and at most six more values at a time, of the twenty Lua guarantees
    // (rule 4). Everything before `lua_pcall` runs with the memory limit off, so cannot raise;
    // `lua_pcall` returns whatever the script does.
    unsafe {
        let input = &*ffi::lua_touserdata(state, 1).cast::<RunInput<'_>>();
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_insert(state, HANDLER);
        // [input, handler, body]
        let nargs = if ffi::lua_type(state, ffi::lua_upvalueindex(2)) == ffi::LUA_TTABLE {
            ffi::lua_pushvalue(state, ffi::lua_upvalueindex(2));
            ffi::lua_pushvalue(state, ffi::lua_upvalueindex(3));
            refill(state, 4, input.keys);
            refill(state, 5, input.args);
            ffi::lua_settop(state, 3);
            0
        } else {
            new_array(state, input.keys);
            new_array(state, input.args);
            2
        };
        let before = input.lua.set_memory_limit(input.memory_limit).unwrap_or(0);
        let status = ffi::lua_pcall(state, nargs, 1, HANDLER);
        let _ = input.lua.set_memory_limit(before);
        ffi::lua_pushboolean(state, c_int::from(status == ffi::LUA_OK));
        ffi::lua_replace(state, HANDLER);
        2
    }
}

/// Fills the table at `index` with `items` from 1 and empties it of anything else (its
/// metatable too: a script may have set either), so that a script finds it as fresh as the new
/// table Redis makes for every run, without the allocations (and their collection) of a new
/// one. The items are set first, so that an argument equal to the last run's is still interned
/// and is not made again.
///
/// # Safety
/// `index` is a positive index of a table on `state`'s stack, with three free slots above the
/// top. It may raise only if an allocation fails.
unsafe fn refill(state: *mut lua_State, index: c_int, items: &[Bytes]) {
    unsafe {
        if ffi::lua_getmetatable(state, index) != 0 {
            ffi::lua_pop(state, 1);
            ffi::lua_pushnil(state);
            ffi::lua_setmetatable(state, index);
        }
        for (i, item) in items.iter().enumerate() {
            push_bytes(state, item);
            ffi::lua_rawseti_(state, index, array_index(i));
        }
        // Setting a field that exists to nil during a traversal is allowed, and never allocates.
        let filled = items.len() as f64;
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, index) != 0 {
            ffi::lua_pop(state, 1);
            let item = ffi::lua_type(state, -1) == ffi::LUA_TNUMBER && {
                let n = ffi::lua_tonumber(state, -1);
                n >= 1.0 && n <= filled && n.fract() == 0.0
            };
            if !item {
                ffi::lua_pushvalue(state, -1);
                ffi::lua_pushnil(state);
                ffi::lua_rawset(state, index);
            }
        }
    }
}

/// Pushes a new array of `items`.
///
/// # Safety
/// Two free slots on `state`'s stack; may raise only if an allocation fails.
unsafe fn new_array(state: *mut lua_State, items: &[Bytes]) {
    unsafe {
        ffi::lua_createtable(state, c_int::try_from(items.len()).unwrap_or(0), 0);
        for (i, item) in items.iter().enumerate() {
            push_bytes(state, item);
            ffi::lua_rawseti_(state, -2, array_index(i));
        }
    }
}

/// The Lua index of the `i`th (from 0) item of an array. A request has far fewer arguments than
/// `c_int` counts.
fn array_index(i: usize) -> c_int {
    c_int::try_from(i + 1).unwrap_or(c_int::MAX)
}

/// Pushes `bytes` as a Lua string.
///
/// # Safety
/// One free slot; may raise only if an allocation fails.
unsafe fn push_bytes(state: *mut lua_State, bytes: &[u8]) {
    unsafe {
        ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
    }
}

/// What `redis.call` and `redis.pcall` share across calls: the running script (lent through
/// the slot), the state (to lift its memory limit), the protocol the script speaks, and the
/// argument vector, kept so that a call allocates only its arguments' bytes.
pub(super) struct Calls {
    slot: Slot,
    lua: Lua,
    /// [`run_entry`], made once.
    entry: Function,
    resp: Arc<AtomicU8>,
    command: RefCell<Vec<Bytes>>,
    /// A command's panic, resumed when the script returns (rule 2).
    panic: Cell<Option<Box<dyn Any + Send>>>,
}

/// What a call left on the Lua stack.
enum Outcome {
    /// Its reply, to return.
    Reply,
    /// An error table: `redis.call` raises it, `redis.pcall` returns it.
    ErrorReply,
    /// An error table both raise (no script runs, or a command panicked).
    Raise,
}

impl Calls {
    /// The calls of a state whose scripts run under `handler`, with their keys and arguments
    /// placed as `tables` says.
    pub(super) fn new(
        lua: Lua,
        resp: Arc<AtomicU8>,
        handler: &Function,
        tables: Tables<'_>,
    ) -> mlua::Result<Calls> {
        let (keys, argv) = match tables {
            Tables::Reused { keys, argv } => (Some(keys), Some(argv)),
            Tables::Arguments => (None, None),
        };
        // SAFETY: `run_entry` keeps the rules above, and only `Calls::run` calls it. Making the
        // closure only allocates, under `exec_raw`'s protection, from a closure that holds
        // nothing to drop.
        let entry = unsafe {
            lua.exec_raw::<Function>((handler, keys, argv), |state| {
                ffi::lua_pushcclosure(state, run_entry, 3);
            })?
        };
        Ok(Calls {
            slot: Slot::default(),
            lua,
            entry,
            resp,
            command: RefCell::new(Vec::new()),
            panic: Cell::new(None),
        })
    }

    /// Runs `body` with `keys` and `args`, the state's memory limit set to `memory_limit`
    /// while the script runs: `(true, its return value)` or `(false, the handler's error
    /// value)`. One mlua call: the rest is [`run_entry`]'s.
    pub(super) fn run(
        &self,
        body: &Function,
        keys: &[Bytes],
        args: &[Bytes],
        memory_limit: usize,
    ) -> mlua::Result<(bool, Value)> {
        let input = RunInput {
            lua: &self.lua,
            keys,
            args,
            memory_limit,
        };
        let input = LightUserData(std::ptr::from_ref(&input).cast_mut().cast());
        self.entry.call((input, body))
    }

    /// Makes the Lua function `redis.call` (`raises`) or `redis.pcall`, bound to `self`: it must
    /// be called only while `self` lives, which holds while the state does (both are the VM's).
    pub(super) fn function(&self, raises: bool) -> mlua::Result<Function> {
        let entry: ffi::lua_CFunction = if raises {
            call_entry::<true>
        } else {
            call_entry::<false>
        };
        let calls: *const Calls = self;
        // SAFETY: pushing a light userdata and a closure over it only allocates, and the closure
        // (run under `exec_raw`'s protection) holds nothing to drop. The pointer stays valid for
        // as long as the function can be called (see above), and is only ever read as `&Calls`.
        unsafe {
            self.lua.exec_raw::<Function>((), |state| {
                ffi::lua_pushlightuserdata(state, calls.cast_mut().cast());
                ffi::lua_pushcclosure(state, entry, 1);
            })
        }
    }

    /// Makes the Lua function `redis.acl_check_cmd`, bound to `self` as [`Calls::function`]'s
    /// are: whether the user running the script may call the command its arguments make.
    pub(super) fn acl_check_function(&self) -> mlua::Result<Function> {
        let calls: *const Calls = self;
        // SAFETY: as `function`'s.
        unsafe {
            self.lua.exec_raw::<Function>((), |state| {
                ffi::lua_pushlightuserdata(state, calls.cast_mut().cast());
                ffi::lua_pushcclosure(state, acl_check_entry, 1);
            })
        }
    }

    /// Runs `f` with `running` lent to the calls (see [`Slot::lend`]), then resumes the panic of
    /// a command the script called, if one panicked.
    pub(super) fn lend<R>(&self, running: &mut Running<'_, '_>, f: impl FnOnce() -> R) -> R {
        let result = self.slot.lend(running, f);
        if let Some(panic) = self.panic.take() {
            std::panic::resume_unwind(panic);
        }
        result
    }

    /// Whether a command of this run has panicked.
    fn panicked(&self) -> bool {
        let panic = self.panic.take();
        let panicked = panic.is_some();
        self.panic.set(panic);
        panicked
    }

    /// The work of one call, which leaves its result on top of the stack. Nothing here raises:
    /// what it pushes either allocates nothing or is pushed with the memory limit off (rule 1);
    /// nothing unwinds out of it (rule 2).
    ///
    /// # Safety
    /// `state` is the calling thread's, in the call of this C function.
    unsafe fn call(&self, state: *mut lua_State) -> Outcome {
        // SAFETY: `state` is in the call of a C function.
        let arguments = unsafe { ffi::lua_gettop(state) };
        // SAFETY: as this function's.
        let done = catch_unwind(AssertUnwindSafe(|| unsafe { self.call_unguarded(state) }));
        done.unwrap_or_else(|panic| {
            self.panic.set(Some(panic));
            // SAFETY: back to the arguments, the twenty slots Lua gave the call are free; the
            // limit is off while the table is made.
            self.limit_lifted(|| unsafe {
                ffi::lua_settop(state, arguments);
                push_error_table(state, PANICKED, false);
            });
            Outcome::Raise
        })
    }

    /// Runs `push` with the state's memory limit off, so that what it pushes cannot fail to be
    /// allocated (rule 1): the engine's replies and errors are not the script's allocations.
    fn limit_lifted(&self, push: impl FnOnce()) {
        let _limit = super::env::MemoryLimit::set(&self.lua, 0);
        push();
    }

    /// The work of one `redis.acl_check_cmd`: its boolean on top of the stack
    /// ([`Outcome::Reply`]) or the error table it raises ([`Outcome::Raise`]). Nothing here
    /// raises, nor unwinds out of it, as in [`Calls::call`].
    ///
    /// # Safety
    /// As [`Calls::call`]'s.
    unsafe fn acl_check(&self, state: *mut lua_State) -> Outcome {
        // SAFETY: `state` is in the call of a C function.
        let arguments = unsafe { ffi::lua_gettop(state) };
        let checked = catch_unwind(AssertUnwindSafe(|| {
            self.slot.with(|running| {
                let mut command = self.command.borrow_mut();
                command.clear();
                // SAFETY: as in `call_unguarded`.
                let checked = match unsafe { read_arguments(state, &mut command) } {
                    Ok(()) => super::acl_check(running, &command),
                    Err(text) => Err(text),
                };
                command.clear();
                checked
            })
        }));
        // SAFETY: back to the arguments, the twenty slots are free; a boolean takes no
        // allocation, and the error tables are made with the limit off.
        unsafe {
            ffi::lua_settop(state, arguments);
            match checked {
                Ok(Some(Ok(allowed))) => {
                    ffi::lua_pushboolean(state, c_int::from(allowed));
                    return Outcome::Reply;
                }
                Ok(Some(Err(text))) => {
                    self.limit_lifted(|| push_error_table(state, text.as_bytes(), false));
                }
                Ok(None) => {
                    let text =
                        b"ERR redis.acl_check_cmd can only be called inside a script invocation";
                    self.limit_lifted(|| push_error_table(state, text, false));
                }
                Err(panic) => {
                    self.panic.set(Some(panic));
                    self.limit_lifted(|| push_error_table(state, PANICKED, false));
                }
            }
        }
        Outcome::Raise
    }

    /// [`Calls::call`] without its guard against panics.
    ///
    /// # Safety
    /// As [`Calls::call`]'s.
    unsafe fn call_unguarded(&self, state: *mut lua_State) -> Outcome {
        if self.panicked() {
            // SAFETY: one slot of the twenty is taken; the limit is off.
            self.limit_lifted(|| unsafe { push_error_table(state, PANICKED, false) });
            return Outcome::Raise;
        }
        let called = self.slot.with(|running| {
            let mut command = self.command.borrow_mut();
            command.clear();
            // SAFETY: `state` is in the call of a C function; its arguments are only read.
            let called = match unsafe { read_arguments(state, &mut command) } {
                #[cfg(test)]
                Ok(()) if command[0].as_ref() == tests::PANIC => panic!("{}", tests::PANIC_TEXT),
                Ok(()) => {
                    let resp = self.resp.load(Ordering::Relaxed);
                    super::run_command(running, &command, resp).map(|reply| (reply, resp))
                }
                Err(text) => Err(text),
            };
            command.clear();
            called
        });
        // SAFETY (each push): the reply's conversion checks for room at every level, and the
        // rest take at most three of the twenty slots. A number, a boolean or a nil takes no
        // allocation; anything else is pushed with the limit off.
        match called {
            Some(Ok((reply, resp))) => {
                let null_is_false = resp == 2;
                match reply {
                    Frame::Integer(_) | Frame::Boolean(_) | Frame::Null | Frame::NullArray => unsafe {
                        push_reply(state, &reply, null_is_false, 0)
                    },
                    _ => {
                        self.limit_lifted(|| unsafe { push_reply(state, &reply, null_is_false, 0) })
                    }
                }
                if reply.is_error() {
                    Outcome::ErrorReply
                } else {
                    Outcome::Reply
                }
            }
            Some(Err(text)) => {
                self.limit_lifted(|| unsafe { push_error_table(state, text.as_bytes(), true) });
                Outcome::ErrorReply
            }
            None => {
                let text = b"ERR redis.call and redis.pcall can only be used while a script runs";
                self.limit_lifted(|| unsafe { push_error_table(state, text, false) });
                Outcome::Raise
            }
        }
    }
}

/// What a script's calls raise once a command it called has panicked.
const PANICKED: &[u8] = b"ERR a command this script called panicked (a bug in fake-redis)";

/// `redis.call` (`RAISES`) and `redis.pcall` as Lua sees them.
///
/// # Safety
/// Lua calls it, with the [`Calls`] made by [`Calls::function`] as its upvalue.
unsafe extern "C-unwind" fn call_entry<const RAISES: bool>(state: *mut lua_State) -> c_int {
    // SAFETY: the upvalue is the `Calls` the function was made with, alive while it can be
    // called. `call` returns having dropped everything it made, so the `lua_error` below (the
    // error table on top of the stack) crosses no frame with anything to drop.
    unsafe {
        let calls = &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(1)).cast::<Calls>();
        match calls.call(state) {
            Outcome::Reply => 1,
            Outcome::ErrorReply if !RAISES => 1,
            Outcome::ErrorReply | Outcome::Raise => ffi::lua_error(state),
        }
    }
}

/// `redis.acl_check_cmd` as Lua sees it.
///
/// # Safety
/// As [`call_entry`]'s, with the [`Calls`] made by [`Calls::acl_check_function`].
unsafe extern "C-unwind" fn acl_check_entry(state: *mut lua_State) -> c_int {
    // SAFETY: as in `call_entry`.
    unsafe {
        let calls = &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(1)).cast::<Calls>();
        match calls.acl_check(state) {
            Outcome::Reply => 1,
            Outcome::ErrorReply | Outcome::Raise => ffi::lua_error(state),
        }
    }
}

/// The call's arguments, as the command's: strings as they are, numbers as Redis prints them.
///
/// # Safety
/// `state` is in the call of a C function; its arguments are the whole stack.
unsafe fn read_arguments(
    state: *mut lua_State,
    command: &mut Vec<Bytes>,
) -> Result<(), &'static str> {
    // SAFETY: indices 1..=top are the arguments; `lua_tolstring` is only asked of strings, so it
    // neither converts nor allocates, and its bytes live while the argument is on the stack.
    unsafe {
        let top = ffi::lua_gettop(state);
        if top == 0 {
            return Err("ERR Please specify at least one argument for this redis lib call");
        }
        for i in 1..=top {
            match ffi::lua_type(state, i) {
                ffi::LUA_TSTRING => {
                    let mut len = 0;
                    let bytes = ffi::lua_tolstring(state, i, &mut len);
                    let bytes = std::slice::from_raw_parts(bytes.cast::<u8>(), len);
                    command.push(Bytes::copy_from_slice(bytes));
                }
                ffi::LUA_TNUMBER => {
                    command.push(Bytes::from(format_g17(ffi::lua_tonumber(state, i))));
                }
                _ => return Err("ERR Lua redis lib command arguments must be strings or integers"),
            }
        }
    }
    Ok(())
}

/// Pushes `{err = text}`, with `ignore_error_stats_update = true` if `ignored` (Redis's mark on
/// the errors `redis.call` returns).
///
/// # Safety
/// One free slot (the table takes two more while it is filled, within `LUA_MINSTACK`).
unsafe fn push_error_table(state: *mut lua_State, text: &[u8], ignored: bool) {
    unsafe {
        ffi::lua_createtable(state, 0, 2);
        push_field(state, b"err", |state| push_bytes(state, text));
        if ignored {
            push_field(state, b"ignore_error_stats_update", |state| {
                ffi::lua_pushboolean(state, 1)
            });
        }
    }
}

/// Sets `name` of the table on top of the stack to what `value` pushes.
///
/// # Safety
/// Two free slots; `value` pushes exactly one value.
unsafe fn push_field(state: *mut lua_State, name: &[u8], value: impl FnOnce(*mut lua_State)) {
    unsafe {
        push_bytes(state, name);
        value(state);
        ffi::lua_rawset(state, -3);
    }
}

/// Pushes `{name = <what value pushes>}`.
///
/// # Safety
/// Three free slots; `value` pushes exactly one value.
unsafe fn push_single(state: *mut lua_State, name: &[u8], value: impl FnOnce(*mut lua_State)) {
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        push_field(state, name, value);
    }
}

/// Pushes a command's reply as `redis.call` returns it to a script, Redis 7.0's conversion: in
/// RESP2 (`null_is_false`) a null is `false`, a status `{ok=}`, an error `{err=}`; after
/// `redis.setresp(3)` a null is `nil`, and maps, sets, doubles, booleans, big numbers and
/// verbatim strings keep their own shapes. The reply is already in the script's protocol's
/// shapes (`call_from_script`).
///
/// # Safety
/// One free slot; the memory limit is off, so that nothing raises. Deeper levels check for room.
unsafe fn push_reply(state: *mut lua_State, frame: &Frame, null_is_false: bool, depth: usize) {
    // SAFETY: each arm pushes exactly one value; the scalars take at most three slots, and
    // those that nest make sure of `LEVEL_SLOTS` before they do.
    unsafe {
        match frame {
            Frame::Simple(s) => push_single(state, b"ok", |state| push_bytes(state, s.as_bytes())),
            Frame::Error(e) => {
                let text = super::env::error_text_of(e);
                push_error_table(state, text.as_bytes(), true);
            }
            // An error echoing a client's non-UTF-8 bytes: the script sees them as they came.
            Frame::ErrorBytes(e) => {
                push_error_table(state, &super::env::error_bytes_of(e), true);
            }
            Frame::Integer(n) => ffi::lua_pushnumber(state, *n as f64),
            Frame::Bulk(b) => push_bytes(state, b),
            Frame::Null | Frame::NullArray if null_is_false => ffi::lua_pushboolean(state, 0),
            Frame::Null | Frame::NullArray => ffi::lua_pushnil(state),
            Frame::Boolean(b) => ffi::lua_pushboolean(state, c_int::from(*b)),
            Frame::Double(d) => {
                push_single(state, b"double", |state| ffi::lua_pushnumber(state, *d))
            }
            // Redis's script client reads a printed double back with `strtod`.
            Frame::DoubleText(text) => push_single(state, b"double", |state| {
                ffi::lua_pushnumber(state, text.parse().unwrap_or(f64::NAN))
            }),
            Frame::BigNumber(n) => push_single(state, b"big_number", |state| {
                push_bytes(state, n.as_bytes())
            }),
            _ if depth >= MAX_REPLY_DEPTH || ffi::lua_checkstack(state, LEVEL_SLOTS) == 0 => {
                ffi::lua_pushnil(state)
            }
            Frame::Array(items) | Frame::Push(items) => {
                ffi::lua_createtable(state, c_int::try_from(items.len()).unwrap_or(0), 0);
                for (i, item) in items.iter().enumerate() {
                    push_reply(state, item, null_is_false, depth + 1);
                    ffi::lua_rawseti_(state, -2, array_index(i));
                }
            }
            Frame::Map(pairs) => push_single(state, b"map", |state| {
                ffi::lua_createtable(state, 0, c_int::try_from(pairs.len()).unwrap_or(0));
                for (k, v) in pairs {
                    push_reply(state, k, null_is_false, depth + 1);
                    push_reply(state, v, null_is_false, depth + 1);
                    set_pair(state);
                }
            }),
            Frame::Set(items) => push_single(state, b"set", |state| {
                ffi::lua_createtable(state, 0, c_int::try_from(items.len()).unwrap_or(0));
                for item in items {
                    push_reply(state, item, null_is_false, depth + 1);
                    ffi::lua_pushboolean(state, 1);
                    set_pair(state);
                }
            }),
            Frame::Verbatim { format, text } => push_single(state, b"verbatim_string", |state| {
                ffi::lua_createtable(state, 0, 2);
                push_field(state, b"format", |state| push_bytes(state, format));
                push_field(state, b"string", |state| push_bytes(state, text));
            }),
            // Redis's reply reader skips attributes: the script sees the reply alone.
            Frame::Attribute { value, .. } => push_reply(state, value, null_is_false, depth),
        }
    }
}

/// Sets key (below the top) to value (the top) in the table below them, and pops both; a key
/// Lua cannot hold (nil, NaN), which no command's reply has, is dropped rather than raised on.
///
/// # Safety
/// A table, a key and a value on top of the stack.
unsafe fn set_pair(state: *mut lua_State) {
    unsafe {
        let unusable = match ffi::lua_type(state, -2) {
            ffi::LUA_TNIL => true,
            ffi::LUA_TNUMBER => ffi::lua_tonumber(state, -2).is_nan(),
            _ => false,
        };
        if unusable {
            ffi::lua_pop(state, 2);
        } else {
            ffi::lua_rawset(state, -3);
        }
    }
}

/// Where `redis.call` and `redis.pcall` find the [`Running`] script.
///
/// The two functions are made once per state (making and dropping them for every script cost
/// more than many scripts do), so they cannot borrow one run's context; each run lends it here
/// instead, for the duration of a closure ([`Slot::lend`]). The safety argument is at the
/// `unsafe` block in [`Slot::with`].
#[derive(Default)]
pub(super) struct Slot(AtomicPtr<()>);

impl Slot {
    /// Runs `f` with `running` lent to the state's calls; the loan ends when `f` returns or
    /// unwinds, before `running`'s borrow does.
    pub(super) fn lend<R>(&self, running: &mut Running<'_, '_>, f: impl FnOnce() -> R) -> R {
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
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Running<'_, '_>) -> R) -> Option<R> {
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

#[cfg(test)]
mod tests {
    use super::super::{Source, Vm, eval_on};
    use crate::cmd::Cx;
    use crate::engine::script_watch::{ScriptKind, ScriptWatch};
    use crate::resp::Frame;
    use bytes::Bytes;
    use std::sync::Arc;

    /// A command name that panics when a script calls it (these tests only).
    pub(super) const PANIC: &[u8] = b"test.panic";
    pub(super) const PANIC_TEXT: &str = "a command panicked on purpose";

    fn with_vm(test: impl FnOnce(&mut Cx<'_>, &mut Vm)) {
        let clock = crate::ManualClock::new(crate::DEFAULT_EPOCH_MS);
        let mut engine = crate::Engine::new(clock);
        let client = engine.connect();
        let mut cx = Cx::new(&mut engine, client.0, 0, 0);
        let watch = Arc::new(ScriptWatch::default());
        let mut vm = Vm::new(
            Default::default(),
            watch,
            ScriptKind::Eval,
            Default::default(),
        )
        .unwrap();
        test(&mut cx, &mut vm);
    }

    fn eval(cx: &mut Cx<'_>, vm: &mut Vm, body: &str, keys: &[&str], args: &[&str]) -> Frame {
        let bytes = |items: &[&str]| -> Vec<Bytes> {
            items
                .iter()
                .map(|s| Bytes::copy_from_slice(s.as_bytes()))
                .collect()
        };
        let source = Source::Body(body.as_bytes());
        eval_on(cx, vm, source, &bytes(keys), &bytes(args), false)
    }

    fn error_of(body: &str, line: u32, text: &str) -> Frame {
        let sha = crate::cmd::sha1_hex(body.as_bytes());
        Frame::error_owned(format!("{text} script: {sha}, on @user_script:{line}."))
    }

    /// The memory limit outside a run: none.
    fn limit_now(vm: &Vm) -> usize {
        vm.lua.set_memory_limit(0).unwrap()
    }

    #[test]
    fn a_command_s_panic_reaches_the_caller_after_the_script_and_later_calls_fail() {
        with_vm(|cx, vm| {
            let body = "local ok = pcall(redis.call, 'test.panic') \
                        redis.pcall('set', 'after', 'x') return 1";
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                eval(cx, vm, body, &[], &[])
            }));
            let panic = unwound.expect_err("the panic goes on to the caller");
            assert_eq!(
                panic.downcast_ref::<String>().map(String::as_str),
                Some(PANIC_TEXT)
            );
            assert_eq!(
                eval(cx, vm, "return redis.call('exists', 'after')", &[], &[]),
                Frame::Integer(0),
                "a call after the panic failed, and the state runs the next script"
            );
            assert_eq!(limit_now(vm), 0);
        });
    }

    #[test]
    fn an_error_reply_is_raised_by_call_returned_by_pcall_and_caught_by_lua_pcall() {
        with_vm(|cx, vm| {
            eval(
                cx,
                vm,
                "return redis.call('set', KEYS[1], 'text')",
                &["k"],
                &[],
            );
            let raised = "return redis.call('incr', KEYS[1])";
            assert_eq!(
                eval(cx, vm, raised, &["k"], &[]),
                error_of(raised, 1, "ERR value is not an integer or out of range")
            );
            let returned = "local e = redis.pcall('incr', KEYS[1]) return {type(e), e.err}";
            assert_eq!(
                eval(cx, vm, returned, &["k"], &[]),
                Frame::Array(vec![
                    Frame::bulk("table"),
                    Frame::bulk("ERR value is not an integer or out of range"),
                ])
            );
            let caught = "local ok, e = pcall(redis.call, 'incr', KEYS[1]) \
                          return {tostring(ok), e, redis.call('get', KEYS[1])}";
            assert_eq!(
                eval(cx, vm, caught, &["k"], &[]),
                Frame::Array(vec![
                    Frame::bulk("false"),
                    Frame::bulk("ERR value is not an integer or out of range"),
                    Frame::bulk("text"),
                ])
            );
            let refused = "return redis.call('nosuchcommand')";
            assert_eq!(
                eval(cx, vm, refused, &[], &[]),
                error_of(refused, 1, "ERR Unknown Redis command called from script")
            );
            let bad = "return redis.pcall({})";
            assert_eq!(
                eval(cx, vm, bad, &[], &[]),
                Frame::error("ERR Lua redis lib command arguments must be strings or integers")
            );
            assert_eq!(limit_now(vm), 0);
        });
    }

    #[test]
    fn keys_and_argv_are_fresh_for_every_run() {
        with_vm(|cx, vm| {
            let spoil = "KEYS.extra = 1 ARGV[5] = 'x' setmetatable(KEYS, {__index = \
                         function() return 'meta' end}) return #KEYS";
            assert_eq!(eval(cx, vm, spoil, &["a", "b"], &["c"]), Frame::Integer(2));
            let look = "return {#KEYS, #ARGV, tostring(KEYS.extra), tostring(KEYS[9]), \
                        tostring(ARGV[5]), KEYS[1], ARGV[1]}";
            assert_eq!(
                eval(cx, vm, look, &["x"], &["y"]),
                Frame::Array(
                    ["1", "1", "nil", "nil", "nil", "x", "y"]
                        .into_iter()
                        .map(|s| match s.parse() {
                            Ok(n) => Frame::Integer(n),
                            Err(_) => Frame::bulk(s),
                        })
                        .collect()
                )
            );
        });
    }

    #[test]
    fn the_budget_ends_a_script_that_keeps_calling_commands() {
        with_vm(|cx, vm| {
            let body = "while true do redis.call('ping') for i = 1, 2000 do end end";
            let killed = eval(cx, vm, body, &[], &[]);
            assert!(
                killed
                    .error_text()
                    .is_some_and(|t| t.starts_with("ERR Script killed by user with SCRIPT KILL")),
                "{killed:?}"
            );
            assert_eq!(limit_now(vm), 0);
            let ping = "return redis.call('ping')";
            assert_eq!(eval(cx, vm, ping, &[], &[]), Frame::simple("PONG"));
        });
    }

    #[test]
    fn the_memory_limit_is_lifted_for_a_reply_and_back_on_after_it() {
        with_vm(|cx, vm| {
            vm.memory_limit = 4 << 20;
            let big = "x".repeat(6 << 20);
            let set = "return redis.call('set', KEYS[1], ARGV[1])";
            assert_eq!(eval(cx, vm, set, &["big"], &[&big]), Frame::OK);
            let length = "return #redis.call('get', KEYS[1])";
            assert_eq!(
                eval(cx, vm, length, &["big"], &[]),
                Frame::Integer(6 << 20),
                "the engine's reply is not the script's allocation"
            );
            let grow = "redis.call('ping') local t = {} for i = 1, 1e7 do t[i] = i end return #t";
            let sha = crate::cmd::sha1_hex(grow.as_bytes());
            assert_eq!(
                eval(cx, vm, grow, &[], &[]),
                Frame::error_owned(format!(
                    "ERR Error running script {sha}, not enough memory: the script's Lua state \
                     may hold at most 4 MiB"
                ))
            );
            assert_eq!(limit_now(vm), 0);
        });
    }

    #[test]
    fn replies_convert_in_both_protocols() {
        with_vm(|cx, vm| {
            eval(cx, vm, "redis.call('hset', 'h', 'f', 'v')", &[], &[]);
            let resp2 = "local m = redis.call('hgetall', 'h') local n = redis.call('get', 'none') \
                         return {m[1], m[2], tostring(n), redis.call('set', 'k', 'v').ok}";
            assert_eq!(
                eval(cx, vm, resp2, &[], &[]),
                Frame::Array(vec![
                    Frame::bulk("f"),
                    Frame::bulk("v"),
                    Frame::bulk("false"),
                    Frame::bulk("OK"),
                ])
            );
            let resp3 = "redis.setresp(3) local m = redis.call('hgetall', 'h') \
                         local n = redis.call('get', 'none') \
                         return {m.map.f, tostring(n), type(redis.call('exists', 'h'))}";
            assert_eq!(
                eval(cx, vm, resp3, &[], &[]),
                Frame::Array(vec![
                    Frame::bulk("v"),
                    Frame::bulk("nil"),
                    Frame::bulk("number")
                ])
            );
        });
    }
}
