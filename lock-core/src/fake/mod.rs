//! The lock on the in-process fake of the `fake-redis` crate (the `fake` feature).
//!
//! The fake knows nothing of the lock: it runs any script body on its embedded Lua, and runs a
//! body as a Rust function only where its user registered one (`fake_redis::native`). This module
//! is the lock's side of that arrangement, so that every arrow points from the lock to the fake:
//!
//! - [`twins`]: the fifteen scripts of [`crate::script::all`] as the fake's native scripts, each
//!   running the script's own twin (the function [`Script::run_native`] runs) over the engine, the
//!   lock's [`Store`] being implemented for the fake's `dyn` [`Keyspace`] itself;
//! - [`config`] and [`engine`]: an engine set up with the twins, for every test, simulation and
//!   benchmark that runs the lock on the fake (without them the fake would run the Lua bodies:
//!   the same replies, far slower);
//! - [`frame_to_reply`] and [`reply_to_frame`] (also as `From` impls and [`FrameExt`]): the fake's
//!   reply type and the lock's;
//! - [`FakeBackend`] and [`FakeSubscriber`]: the lock's [`Backend`](crate::Backend) and
//!   [`Subscriber`](crate::backend::Subscriber) on the fake's in-process doors (its `Link` and
//!   `SubscriberDoor`, which carry out the fault plan).
//!
//! The fake's script cache still starts empty as Redis's does: registering the twins decides only
//! how a body runs once a client loaded it.

mod backend;
mod subscriber;

pub use backend::FakeBackend;
pub use subscriber::FakeSubscriber;

use crate::reply::Reply;
use crate::script::{CommandError, Script, ScriptCall, Store};
use bytes::Bytes;
use fake_redis::native::{CallError, Keyspace, NativeScript, NativeScripts};
use fake_redis::{Clock, Engine, EngineConfig, Frame};
use std::borrow::Cow;
use std::sync::OnceLock;

/// The lock's fifteen scripts as native scripts of the fake, to register in an
/// [`EngineConfig`]. Built once; clones share it.
pub fn twins() -> NativeScripts {
    static TWINS: OnceLock<NativeScripts> = OnceLock::new();
    TWINS
        .get_or_init(|| {
            let mut scripts = NativeScripts::new();
            for script in crate::script::all() {
                scripts.register(twin(script));
            }
            scripts
        })
        .clone()
}

/// `script` as a native script of the fake: its Lua body, run by its twin.
pub fn twin(script: &'static Script) -> NativeScript {
    NativeScript::new(script.name, script.body, move |keyspace, keys, args| {
        reply_to_frame(script.run_on_keyspace(keyspace, keys, args))
    })
}

/// The default engine config with the lock's twins registered.
pub fn config() -> EngineConfig {
    with_twins(EngineConfig::default())
}

/// `config` with the lock's twins registered too (beside any native scripts it has).
pub fn with_twins(mut config: EngineConfig) -> EngineConfig {
    if config.native_scripts.is_empty() {
        config.native_scripts = twins();
    } else {
        for script in crate::script::all() {
            config.native_scripts.register(twin(script));
        }
    }
    config
}

/// An engine on `clock` with the lock's twins registered ([`config`]).
pub fn engine(clock: impl Clock) -> Engine {
    Engine::with_config(clock, config())
}

/// Runs `call`'s twin in database `db` of `engine`, as `EVALSHA` would, whether or not the
/// script is loaded (for simulators that skip the protocol).
pub fn run_call(engine: &mut Engine, db: usize, call: &ScriptCall) -> Frame {
    let twins = twins();
    let script = twins
        .by_body(call.script.body.as_bytes())
        .expect("every lock script has a twin");
    engine.run_script(db, script, &call.keys, &call.args)
}

#[inline]
fn lift<T>(result: Result<T, CallError>) -> Result<T, CommandError> {
    result.map_err(|CallError(text)| CommandError(text))
}

/// The [`Store`] methods that hand their arguments on to the [`Keyspace`] method of the same
/// name and lift its error: one line each, instead of a body each written the same way.
macro_rules! lifted {
    ($(fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(
            #[inline]
            fn $name(&mut self, $($arg: $ty),*) -> Result<$ret, CommandError> {
                lift(Keyspace::$name(self, $($arg),*))
            }
        )*
    };
}

/// The lock's [`Store`] on the fake's [`Keyspace`]: the same commands, the fake's errors taken
/// as the lock's. Implemented for `dyn Keyspace` itself, so that a twin built for it calls the
/// engine's methods directly, one dynamic call each.
impl Store for dyn Keyspace + '_ {
    lifted! {
        fn exists(key: &[u8]) -> bool;
        fn hexists(key: &[u8], field: &[u8]) -> bool;
        fn hincrby(key: &[u8], field: &[u8], delta: i64) -> i64;
        fn hget(key: &[u8], field: &[u8]) -> Option<Bytes>;
        fn pexpire(key: &[u8], ms: &[u8]) -> bool;
        fn pttl(key: &[u8]) -> i64;
        fn del(key: &[u8]) -> bool;
        fn publish(channel: &[u8], message: &[u8]) -> i64;
        fn spublish(channel: &[u8], message: &[u8]) -> i64;
        fn set_px(key: &[u8], value: &[u8], ms: &[u8]) -> ();
        fn get(key: &[u8]) -> Option<Bytes>;
        fn incrby(key: &[u8], delta: i64) -> i64;
        fn hset(key: &[u8], field: &[u8], value: &[u8]) -> i64;
        fn hdel(key: &[u8], field: &[u8]) -> bool;
        fn hlen(key: &[u8]) -> i64;
        fn hkeys(key: &[u8]) -> Vec<Bytes>;
        fn lindex(key: &[u8], index: i64) -> Option<Bytes>;
        fn lpop(key: &[u8]) -> Option<Bytes>;
        fn rpush(key: &[u8], element: &[u8]) -> i64;
        fn lrange_all(key: &[u8]) -> Vec<Bytes>;
        fn lrem_all(key: &[u8], element: &[u8]) -> i64;
        fn zscore(key: &[u8], member: &[u8]) -> Option<f64>;
        fn zadd(key: &[u8], score: &[u8], member: &[u8]) -> bool;
        fn zincrby(key: &[u8], increment: &[u8], member: &[u8]) -> f64;
        fn zrem(key: &[u8], member: &[u8]) -> bool;
        fn zrange_all(key: &[u8]) -> Vec<Bytes>;
    }
    #[inline]
    fn time(&mut self) -> (i64, i64) {
        Keyspace::time(self)
    }
}

/// The fake's reply as the lock's (RESP2's shape; nulls become `Nil`).
pub fn frame_to_reply(frame: &Frame) -> Reply {
    match frame {
        Frame::Simple(s) => Reply::Status(s.to_string()),
        Frame::Error(e) => Reply::Error(e.to_string()),
        Frame::ErrorBytes(e) => Reply::Error(String::from_utf8_lossy(e).into_owned()),
        Frame::Integer(n) => Reply::Int(*n),
        Frame::Bulk(b) | Frame::Verbatim { text: b, .. } => Reply::Bulk(b.clone()),
        Frame::Null | Frame::NullArray => Reply::Nil,
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            Reply::Array(items.iter().map(frame_to_reply).collect())
        }
        Frame::Map(pairs) => Reply::Array(
            pairs
                .iter()
                .flat_map(|(k, v)| [frame_to_reply(k), frame_to_reply(v)])
                .collect(),
        ),
        Frame::Boolean(b) => Reply::Int(i64::from(*b)),
        // RESP2 has no attributes: the reply alone.
        Frame::Attribute { value, .. } => frame_to_reply(value),
        // A double and the big numbers are bulk strings in RESP2, spelled as the wire spells them.
        other @ (Frame::Double(_) | Frame::BigNumber(_) | Frame::DoubleText(_)) => {
            match other.clone().to_resp2() {
                Frame::Bulk(b) => Reply::Bulk(b),
                resp2 => frame_to_reply(&resp2),
            }
        }
    }
}

/// A reply of the lock's (a twin's result) as the fake's.
pub fn reply_to_frame(reply: Reply) -> Frame {
    match reply {
        Reply::Nil => Frame::Null,
        Reply::Int(n) => Frame::Integer(n),
        Reply::Bulk(b) => Frame::Bulk(b),
        Reply::Status(s) => Frame::Simple(Cow::Owned(s)),
        Reply::Error(e) => Frame::Error(Cow::Owned(e)),
        Reply::Array(items) => Frame::Array(items.into_iter().map(reply_to_frame).collect()),
    }
}

impl From<Reply> for Frame {
    fn from(reply: Reply) -> Frame {
        reply_to_frame(reply)
    }
}

impl From<&Frame> for Reply {
    fn from(frame: &Frame) -> Reply {
        frame_to_reply(frame)
    }
}

impl From<Frame> for Reply {
    fn from(frame: Frame) -> Reply {
        frame_to_reply(&frame)
    }
}

/// [`frame_to_reply`] as a method of the fake's frame.
pub trait FrameExt {
    /// The frame as the lock's reply (see [`frame_to_reply`]).
    fn to_reply(&self) -> Reply;
}

impl FrameExt for Frame {
    fn to_reply(&self) -> Reply {
        frame_to_reply(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_doors_print_doubles_as_the_wire_does() {
        let nan = Frame::Double(-f64::NAN);
        assert_eq!(nan.to_reply(), Reply::Bulk(Bytes::from("-nan")));
        let info = Frame::Verbatim {
            format: *b"txt",
            text: Bytes::from_static(b"id=1 resp=3"),
        };
        assert_eq!(info.to_reply(), Reply::Bulk(Bytes::from("id=1 resp=3")));
        let big = Frame::BigNumber("-12345678901234567890".into());
        assert_eq!(big.to_reply(), Reply::bulk("-12345678901234567890"));
    }

    #[test]
    fn replies_convert_both_ways() {
        let reply = Reply::Array(vec![
            Reply::Nil,
            Reply::Int(-3),
            Reply::bulk("b"),
            Reply::Status("OK".into()),
            Reply::Error("ERR x".into()),
        ]);
        assert_eq!(Reply::from(Frame::from(reply.clone())), reply);
        let map = Frame::Map(vec![(Frame::bulk("f"), Frame::Boolean(true))]);
        assert_eq!(
            map.to_reply(),
            Reply::Array(vec![Reply::bulk("f"), Reply::Int(1)])
        );
    }

    #[test]
    fn every_script_has_its_twin() {
        let twins = twins();
        assert_eq!(twins.len(), crate::script::all().len());
        for script in crate::script::all() {
            let twin = twins.by_sha(script.sha().as_bytes()).expect("registered");
            assert_eq!(twin.name(), script.name);
            assert_eq!(&twin.body()[..], script.body.as_bytes());
        }
    }
}
