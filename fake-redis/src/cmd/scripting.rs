//! Scripting without Lua: `EVAL`, `EVALSHA` and `SCRIPT`, running the lock's native twins.
//!
//! The fake keeps Redis's protocol exactly (the cache starts empty; `EVAL` and `SCRIPT LOAD` put a
//! script in it; `EVALSHA` of anything else is `NOSCRIPT`; a restart or failover forgets it all)
//! but runs each script as the native function `lock-core` keeps beside its Lua body, over the
//! engine as a [`Store`] at the command's frozen time. Only bodies with a native twin can be
//! loaded; any other body is refused with an error naming its SHA, never run wrongly.

use super::{Spec, WRITE, int, is, unknown_subcommand, wrong_arity};
use crate::engine::{Cx, Engine, KeyHashes};
use crate::frame::Frame;
use bytes::Bytes;
use lock_core::script::{CommandError, Script, Store};

pub(crate) static EVAL: Spec = Spec::new("eval", -3, WRITE, eval_command);
pub(crate) static EVALSHA: Spec = Spec::new("evalsha", -3, WRITE, eval_command);
pub(crate) static EVAL_RO: Spec = Spec::new("eval_ro", -3, 0, eval_command);
pub(crate) static EVALSHA_RO: Spec = Spec::new("evalsha_ro", -3, 0, eval_command);
pub(crate) static SCRIPT: Spec = Spec::new("script", -2, 0, script_command);

const NOSCRIPT: Frame = Frame::error("NOSCRIPT No matching script. Please use EVAL.");

/// The error for a body the fake cannot run.
fn no_native_twin(body: &[u8]) -> Frame {
    let sha = sha1_hex(body);
    let names: Vec<&str> = lock_core::script::all().iter().map(|s| s.name).collect();
    Frame::error_owned(format!(
        "ERR fake-redis has no native implementation of the script with SHA1 {sha}; \
         only the lock's scripts ({}) can run on the fake",
        names.join(", ")
    ))
}

/// The lowercase hex SHA1 of `body`, as `SCRIPT LOAD` replies it.
pub(crate) fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

fn eval_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let name = &argv[0];
    let by_sha = is(name, "evalsha") || is(name, "evalsha_ro");
    let read_only = name.len() > 3 && is(&name[name.len() - 3..], "_ro");
    if by_sha && argv[1].len() != 40 {
        return NOSCRIPT;
    }
    let numkeys = match int(&argv[2]) {
        Ok(n) => n,
        Err(e) => return e,
    };
    if numkeys > (argv.len() - 3) as i64 {
        return Frame::error("ERR Number of keys can't be greater than number of args");
    }
    if numkeys < 0 {
        return Frame::error("ERR Number of keys can't be negative");
    }
    let script = if by_sha {
        match cx.engine.scripts.get(&argv[1]) {
            Some(s) => s,
            None => return NOSCRIPT,
        }
    } else {
        match lock_core::script::by_body(&argv[1]) {
            Some(s) => {
                cx.engine.scripts.insert(s);
                s
            }
            None => return no_native_twin(&argv[1]),
        }
    };
    let split = 3 + numkeys as usize;
    run(cx, script, &argv[3..split], &argv[split..], read_only)
}

fn run(cx: &mut Cx<'_>, script: &Script, keys: &[Bytes], args: &[Bytes], ro: bool) -> Frame {
    let outer = std::mem::replace(&mut cx.hashes, KeyHashes::of(keys));
    let mut store = ScriptStore { cx, read_only: ro };
    let reply = script.run_native(&mut store, keys, args);
    cx.hashes = outer;
    Frame::from_reply(reply)
}

/// Runs `script` natively in database `db` at `now`, outside any client (the engine's direct
/// entry point for simulators).
pub(crate) fn run_native(
    engine: &mut Engine,
    client: Option<u64>,
    db: usize,
    now: i64,
    script: &Script,
    keys: &[Bytes],
    args: &[Bytes],
) -> Frame {
    let reply = run(
        &mut Cx::new(engine, client.unwrap_or(0), db, now),
        script,
        keys,
        args,
        false,
    );
    if engine.watchers > 0 {
        engine.collect_dirty();
    }
    reply
}

fn script_command(cx: &mut Cx<'_>, argv: &[Bytes]) -> Frame {
    let sub = &argv[1];
    if is(sub, "load") {
        if argv.len() != 3 {
            return wrong_arity("script|load");
        }
        return match lock_core::script::by_body(&argv[2]) {
            Some(s) => {
                cx.engine.scripts.insert(s);
                Frame::Bulk(Bytes::from(s.sha().to_owned()))
            }
            None => no_native_twin(&argv[2]),
        };
    }
    if is(sub, "exists") {
        if argv.len() < 3 {
            return wrong_arity("script|exists");
        }
        let scripts = &cx.engine.scripts;
        return Frame::Array(
            argv[2..]
                .iter()
                .map(|sha| Frame::Integer(i64::from(scripts.get(sha).is_some())))
                .collect(),
        );
    }
    if is(sub, "flush") {
        match &argv[2..] {
            [] => {}
            [mode] if is(mode, "sync") || is(mode, "async") => {}
            [_] => return Frame::error("ERR SCRIPT FLUSH only support SYNC|ASYNC option"),
            _ => return wrong_arity("script|flush"),
        }
        cx.engine.scripts = Default::default();
        return Frame::OK;
    }
    if is(sub, "kill") {
        return Frame::error("NOTBUSY No scripts in execution right now.");
    }
    unknown_subcommand("SCRIPT", sub)
}

/// The engine as the native twins see it: the commands a lock script calls, at the frozen time of
/// the `EVALSHA` that runs it.
struct ScriptStore<'a, 'b> {
    cx: &'a mut Cx<'b>,
    read_only: bool,
}

fn err(frame: Frame) -> CommandError {
    CommandError(frame.error_text().unwrap_or("ERR").to_owned())
}

impl ScriptStore<'_, '_> {
    fn writable(&self) -> Result<(), CommandError> {
        if self.read_only {
            Err(CommandError(
                "ERR Write commands are not allowed from read-only scripts.".into(),
            ))
        } else {
            Ok(())
        }
    }
}

impl Store for ScriptStore<'_, '_> {
    fn exists(&mut self, key: &[u8]) -> Result<bool, CommandError> {
        Ok(super::keys::exists(self.cx, key))
    }

    fn hexists(&mut self, key: &[u8], field: &[u8]) -> Result<bool, CommandError> {
        super::hashes::hexists(self.cx, key, field).map_err(err)
    }

    fn hincrby(&mut self, key: &[u8], field: &[u8], delta: i64) -> Result<i64, CommandError> {
        self.writable()?;
        super::hashes::hincrby(self.cx, key, field, delta).map_err(err)
    }

    fn hget(&mut self, key: &[u8], field: &[u8]) -> Result<Option<Bytes>, CommandError> {
        super::hashes::hget(self.cx, key, field).map_err(err)
    }

    fn pexpire(&mut self, key: &[u8], ms: &[u8]) -> Result<bool, CommandError> {
        self.writable()?;
        super::keys::pexpire(self.cx, key, ms).map_err(err)
    }

    fn pttl(&mut self, key: &[u8]) -> Result<i64, CommandError> {
        Ok(super::keys::pttl(self.cx, key))
    }

    fn del(&mut self, key: &[u8]) -> Result<bool, CommandError> {
        self.writable()?;
        Ok(super::keys::del(self.cx, key))
    }

    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64, CommandError> {
        Ok(super::pubsub::publish(self.cx, channel, message))
    }

    fn set_px(&mut self, key: &[u8], value: &[u8], ms: &[u8]) -> Result<(), CommandError> {
        self.writable()?;
        super::strings::set_px(self.cx, key, super::value_bytes(value), ms).map_err(err)
    }

    fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, CommandError> {
        super::strings::get(self.cx, key).map_err(err)
    }

    fn incr(&mut self, key: &[u8]) -> Result<i64, CommandError> {
        self.writable()?;
        super::strings::incr_by(self.cx, key, 1).map_err(err)
    }
}
