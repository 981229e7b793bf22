//! Redis 7.0's Functions as commands: `FCALL`, `FCALL_RO` and `FUNCTION` with its subcommands.
//!
//! This file reads the arguments and gives Redis's errors for them; the libraries and the Lua
//! state they run on are `lua/functions.rs`. Without the `lua` feature there is nothing to run a
//! library on: `FUNCTION LOAD` and `FUNCTION RESTORE` are refused with an error saying so, and the
//! fake has no libraries to list, call or dump.

use super::{Args, CONTAINER, CmdResult, Cx, Spec, WRITE, is, unknown_subcommand, wrong_arity};
#[cfg(feature = "lua")]
use crate::lua::functions::{self as lib, RestorePolicy};
use crate::resp::Frame;
use bytes::Bytes;

pub(crate) static FCALL: Spec =
    Spec::new("fcall", -3, WRITE, fcall_command).with_reads(super::ReadRule::Never);
pub(crate) static FCALL_RO: Spec =
    Spec::new("fcall_ro", -3, 0, fcall_command).with_reads(super::ReadRule::Never);
pub(crate) static FUNCTION: Spec = Spec::new("function", -2, CONTAINER, function_command);

/// `FUNCTION HELP`'s lines, as Redis 7.0 prints them.
const HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

/// `ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION HELP.`
fn subcommand_syntax(sub: &[u8]) -> Frame {
    super::error_echoing(&[
        b"ERR unknown subcommand or wrong number of arguments for '",
        super::c_text(sub, 128),
        b"'. Try FUNCTION HELP.",
    ])
}

/// `FCALL name numkeys key… arg…` and `FCALL_RO`: the function is looked up before the key
/// count is read, as in Redis.
fn fcall_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    let read_only = is(args.name(), "fcall_ro");
    let name = args.next_bytes()?;
    if !function_exists(cx, name) {
        return Err(Frame::error("ERR Function not found"));
    }
    let numkeys = super::int(args.next_bytes()?)
        .map_err(|_| Frame::error("ERR Bad number of keys provided"))?;
    if numkeys > args.remaining() as i64 {
        return Err(Frame::error(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    if numkeys < 0 {
        return Err(Frame::error("ERR Number of keys can't be negative"));
    }
    let command = args.whole();
    let keys = args.take(numkeys as usize);
    let name = std::slice::from_ref(name);
    Ok(call(cx, [name, keys, args.rest(), command], read_only))
}

#[cfg(feature = "lua")]
fn function_exists(cx: &mut Cx<'_>, name: &[u8]) -> bool {
    lib::exists(cx, name)
}

#[cfg(not(feature = "lua"))]
fn function_exists(_: &mut Cx<'_>, _: &[u8]) -> bool {
    false
}

#[cfg(feature = "lua")]
/// Runs the function: `parts` are its name, keys, arguments and the whole command.
fn call(cx: &mut Cx<'_>, parts: [&[Bytes]; 4], read_only: bool) -> Frame {
    let [name, keys, args, command] = parts;
    lib::fcall(cx, &name[0], keys, args, read_only, command)
}

#[cfg(not(feature = "lua"))]
fn call(_: &mut Cx<'_>, _: [&[Bytes]; 4], _: bool) -> Frame {
    Frame::error("ERR Function not found")
}

/// `FUNCTION LOAD|LIST|DELETE|FLUSH|STATS|KILL|DUMP|RESTORE|HELP`.
fn function_command(cx: &mut Cx<'_>, args: &mut Args<'_>) -> CmdResult {
    #[cfg(not(feature = "lua"))]
    let _ = &cx;
    let sub = args.next_bytes()?;
    let rest = args.rest();
    let exact = |n: usize, name: &str| {
        if rest.len() == n {
            Ok(())
        } else {
            Err(wrong_arity(name))
        }
    };
    if is(sub, "load") {
        let Some((code, options)) = rest.split_last() else {
            return Err(wrong_arity("function|load"));
        };
        let mut replace = false;
        for option in options {
            if !is(option, "replace") {
                return Err(super::error_echoing(&[
                    b"ERR Unknown option given: ",
                    super::c_text(option, 128),
                ]));
            }
            replace = true;
        }
        #[cfg(feature = "lua")]
        return Ok(lib::load(cx, code, replace));
        #[cfg(not(feature = "lua"))]
        return Err(no_lua(code, replace));
    }
    if is(sub, "list") {
        let (mut with_code, mut pattern) = (false, None);
        let mut words = rest.iter();
        while let Some(word) = words.next() {
            if !with_code && is(word, "withcode") {
                with_code = true;
            } else if pattern.is_none() && is(word, "libraryname") {
                let Some(p) = words.next() else {
                    return Err(Frame::error("ERR library name argument was not given"));
                };
                pattern = Some(&p[..]);
            } else {
                return Err(super::error_echoing(&[
                    b"ERR Unknown argument ",
                    super::c_text(word, 128),
                ]));
            }
        }
        #[cfg(feature = "lua")]
        return Ok(lib::list(cx, pattern, with_code));
        #[cfg(not(feature = "lua"))]
        return Ok(Frame::Array(Vec::new()));
    }
    if is(sub, "delete") {
        exact(1, "function|delete")?;
        #[cfg(feature = "lua")]
        return Ok(lib::delete(cx, &rest[0]));
        #[cfg(not(feature = "lua"))]
        return Err(Frame::error("ERR Library not found"));
    }
    if is(sub, "flush") {
        let asynchronous = match rest {
            [] => super::scripting::flushes_lazily(cx),
            [mode] if is(mode, "sync") => false,
            [mode] if is(mode, "async") => true,
            [_] => {
                return Err(Frame::error(
                    "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
                ));
            }
            _ => return Err(subcommand_syntax(sub)),
        };
        #[cfg(feature = "lua")]
        {
            // Redis frees the functions and the engines' table (its one engine, Lua).
            let (_, functions, _, _) = cx.functions().memory();
            if asynchronous {
                cx.node().count_lazy_free(functions, functions + 1);
            }
            cx.functions().flush();
        }
        #[cfg(not(feature = "lua"))]
        let _ = asynchronous;
        return Ok(Frame::OK);
    }
    if is(sub, "stats") {
        exact(0, "function|stats")?;
        #[cfg(feature = "lua")]
        return Ok(lib::stats(cx));
    }
    if is(sub, "kill") {
        exact(0, "function|kill")?;
        // Nothing else runs while the engine answers a command.
        return Err(Frame::error("NOTBUSY No scripts in execution right now."));
    }
    if is(sub, "dump") {
        exact(0, "function|dump")?;
        #[cfg(feature = "lua")]
        return Ok(lib::dump(cx));
    }
    if is(sub, "restore") {
        let (payload, policy) = match rest {
            [payload] => (payload, None),
            [payload, policy] => (payload, Some(policy)),
            [] => return Err(wrong_arity("function|restore")),
            _ => return Err(subcommand_syntax(sub)),
        };
        #[cfg(feature = "lua")]
        let policy = match policy {
            None => RestorePolicy::Append,
            Some(p) if is(p, "flush") => RestorePolicy::Flush,
            Some(p) if is(p, "append") => RestorePolicy::Append,
            Some(p) if is(p, "replace") => RestorePolicy::Replace,
            Some(_) => {
                return Err(Frame::error(
                    "ERR Wrong restore policy given, value should be either FLUSH, APPEND or \
                     REPLACE.",
                ));
            }
        };
        #[cfg(feature = "lua")]
        return Ok(lib::restore(cx, payload, policy));
        #[cfg(not(feature = "lua"))]
        return Err(no_lua(payload, policy.is_some()));
    }
    if is(sub, "help") {
        exact(0, "function|help")?;
        return Ok(Frame::Array(
            HELP.iter().map(|l| Frame::simple(l)).collect(),
        ));
    }
    Err(unknown_subcommand("FUNCTION", sub))
}

/// The error for loading a library into a fake built without Lua.
#[cfg(not(feature = "lua"))]
fn no_lua(_: &[u8], _: bool) -> Frame {
    Frame::error("ERR fake-redis was built without its lua feature: no library can be loaded")
}
