//! Native scripts: a Rust function that runs in place of a Lua body, registered per engine.
//!
//! A program that sends the same few scripts millions of times (a lock's, in a simulator or a
//! benchmark) wants them fast and without Lua, yet unchanged on the wire: the same `EVAL`,
//! `SCRIPT LOAD` and `EVALSHA`, the same SHA1, the same replies. So a [`NativeScript`] pairs a
//! Lua body with a function that does what the body does, over the engine as a [`Keyspace`] (the
//! commands such scripts call, at the command's frozen time). The owner of the scripts writes the
//! function; the fake knows nothing of any lock.
//!
//! Registration decides only *how* a loaded body runs, never what is loaded: the script cache
//! starts empty as Redis's does, `EVAL` and `SCRIPT LOAD` put a body in it, `EVALSHA` of anything
//! else is `NOSCRIPT`, and a restart, a failover or `SCRIPT FLUSH` empties it. Wherever the engine
//! would run a registered body (`EVAL` of it, `EVALSHA` after it was loaded, inside `MULTI`), it
//! calls the function instead. Every other body runs on the embedded Lua (the `lua` feature);
//! an engine with nothing registered runs every body there.
//!
//! The registry, [`NativeScripts`], is carried by [`EngineConfig`](crate::EngineConfig), so every
//! engine made from one config runs the same functions: a replica and a cluster's nodes copy their
//! config, and a restart keeps it. It is an [`Arc`] inside, cheap to clone; an engine looks a body
//! up in it only when a body is loaded, and `EVALSHA` finds the script among the loaded ones
//! without allocating.

use crate::resp::Frame;
use bytes::Bytes;
use std::fmt;
use std::sync::Arc;

/// The error of a command a native script called, exactly as Redis words it
/// (`WRONGTYPE Operation against a key holding the wrong kind of value`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallError(pub String);

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CallError {}

/// The commands a native script may call, on the engine, at the frozen time of the command that
/// runs the script, with the script's rights (a read-only `EVAL_RO` refuses the writes).
///
/// Arguments that a Lua body would hand to Redis as strings stay bytes here, so the engine parses
/// them with Redis's own rules and errors.
pub trait Keyspace {
    /// `EXISTS key` for one key.
    fn exists(&mut self, key: &[u8]) -> Result<bool, CallError>;
    /// `HEXISTS key field`.
    fn hexists(&mut self, key: &[u8], field: &[u8]) -> Result<bool, CallError>;
    /// `HINCRBY key field delta`: the new value. Keeps the key's TTL.
    fn hincrby(&mut self, key: &[u8], field: &[u8], delta: i64) -> Result<i64, CallError>;
    /// `HGET key field`.
    fn hget(&mut self, key: &[u8], field: &[u8]) -> Result<Option<Bytes>, CallError>;
    /// `PEXPIRE key ms`: whether a timeout was set (a deadline at or before now deletes the key).
    fn pexpire(&mut self, key: &[u8], ms: &[u8]) -> Result<bool, CallError>;
    /// `PTTL key`: -2 missing, -1 no TTL, else the remaining milliseconds.
    fn pttl(&mut self, key: &[u8]) -> Result<i64, CallError>;
    /// `DEL key` for one key: whether it was removed.
    fn del(&mut self, key: &[u8]) -> Result<bool, CallError>;
    /// `PUBLISH channel message`: how many clients received it.
    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64, CallError>;
    /// `SPUBLISH shardchannel message`: how many clients received it.
    fn spublish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64, CallError>;
    /// `SET key value PX ms`.
    fn set_px(&mut self, key: &[u8], value: &[u8], ms: &[u8]) -> Result<(), CallError>;
    /// `GET key`.
    fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, CallError>;
    /// `INCRBY key delta`: the new value.
    fn incrby(&mut self, key: &[u8], delta: i64) -> Result<i64, CallError>;
    /// `TIME`: unix seconds and the microseconds within that second, as `TIME` answers (the
    /// clock's microseconds where it has them).
    fn time(&mut self) -> (i64, i64);
    /// `HSET key field value` for one field: how many fields were added.
    fn hset(&mut self, key: &[u8], field: &[u8], value: &[u8]) -> Result<i64, CallError>;
    /// `HDEL key field` for one field: whether it was removed (the last field's removal deletes
    /// the key).
    fn hdel(&mut self, key: &[u8], field: &[u8]) -> Result<bool, CallError>;
    /// `HLEN key`.
    fn hlen(&mut self, key: &[u8]) -> Result<i64, CallError>;
    /// `HKEYS key`: every field, in the hash's order.
    fn hkeys(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CallError>;
    /// `LINDEX key index`.
    fn lindex(&mut self, key: &[u8], index: i64) -> Result<Option<Bytes>, CallError>;
    /// `LPOP key` (one element).
    fn lpop(&mut self, key: &[u8]) -> Result<Option<Bytes>, CallError>;
    /// `RPUSH key element` for one element: the list's new length.
    fn rpush(&mut self, key: &[u8], element: &[u8]) -> Result<i64, CallError>;
    /// `LRANGE key 0 -1`: the whole list.
    fn lrange_all(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CallError>;
    /// `LREM key 0 element`: how many were removed.
    fn lrem_all(&mut self, key: &[u8], element: &[u8]) -> Result<i64, CallError>;
    /// `ZSCORE key member`, the score as the number Redis's reply spells.
    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Result<Option<f64>, CallError>;
    /// `ZADD key score member` for one member: whether it was added (not only updated).
    fn zadd(&mut self, key: &[u8], score: &[u8], member: &[u8]) -> Result<bool, CallError>;
    /// `ZINCRBY key increment member`: the new score.
    fn zincrby(&mut self, key: &[u8], increment: &[u8], member: &[u8]) -> Result<f64, CallError>;
    /// `ZREM key member` for one member: whether it was removed.
    fn zrem(&mut self, key: &[u8], member: &[u8]) -> Result<bool, CallError>;
    /// `ZRANGE key 0 -1`: every member, lowest score first.
    fn zrange_all(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CallError>;
}

/// What a native script runs: the keyspace, `KEYS` and `ARGV` as `EVALSHA` hands them to the
/// body; the reply is the script's. A failing call's error is the function's to word (Redis 7.0
/// adds ` script: <sha>, on @user_script:<line>.`).
pub type NativeFn = dyn Fn(&mut dyn Keyspace, &[Bytes], &[Bytes]) -> Frame + Send + Sync;

/// A Lua body and the Rust function that runs in its place. See the [module docs](self).
pub struct NativeScript {
    name: String,
    body: Bytes,
    sha: [u8; 40],
    run: Box<NativeFn>,
}

impl NativeScript {
    /// The script `name` (for errors and listings) whose Lua body is `body`, run by `run`.
    pub fn new(
        name: impl Into<String>,
        body: impl Into<Bytes>,
        run: impl Fn(&mut dyn Keyspace, &[Bytes], &[Bytes]) -> Frame + Send + Sync + 'static,
    ) -> NativeScript {
        let body = body.into();
        let mut sha = [0u8; 40];
        sha.copy_from_slice(
            sha1_smol::Sha1::from(&body[..])
                .digest()
                .to_string()
                .as_bytes(),
        );
        NativeScript {
            name: name.into(),
            body,
            sha,
            run: Box::new(run),
        }
    }

    /// The name it was registered with.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Lua body it stands for.
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The body's SHA1 in lowercase hex, as `SCRIPT LOAD` replies it.
    pub fn sha(&self) -> &str {
        std::str::from_utf8(&self.sha).expect("hex digits")
    }

    /// [`sha`](Self::sha) as bytes.
    #[inline]
    pub fn sha_bytes(&self) -> &[u8] {
        &self.sha
    }

    /// Whether `sha` names this script, in either case.
    #[inline]
    pub fn has_sha(&self, sha: &[u8]) -> bool {
        self.sha[..].eq_ignore_ascii_case(sha)
    }

    /// Runs the function over `keyspace`.
    #[inline]
    pub fn run(&self, keyspace: &mut dyn Keyspace, keys: &[Bytes], args: &[Bytes]) -> Frame {
        (self.run)(keyspace, keys, args)
    }
}

impl fmt::Debug for NativeScript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NativeScript")
            .field("name", &self.name)
            .field("sha", &self.sha())
            .finish_non_exhaustive()
    }
}

/// The native scripts an engine runs in place of their bodies: none by default. Clones share
/// the scripts. See the [module docs](self).
#[derive(Clone, Default)]
pub struct NativeScripts {
    scripts: Arc<Vec<Arc<NativeScript>>>,
}

impl NativeScripts {
    /// A registry with nothing registered: every body runs on Lua.
    pub fn new() -> NativeScripts {
        NativeScripts::default()
    }

    /// Registers `script`, in place of one registered before with the same body.
    pub fn register(&mut self, script: NativeScript) {
        let scripts = Arc::make_mut(&mut self.scripts);
        scripts.retain(|s| s.body != script.body);
        scripts.push(Arc::new(script));
    }

    /// The registry with `script` registered too (see [`register`](Self::register)).
    pub fn with(mut self, script: NativeScript) -> NativeScripts {
        self.register(script);
        self
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.scripts.is_empty()
    }

    /// How many scripts are registered.
    pub fn len(&self) -> usize {
        self.scripts.len()
    }

    /// The registered scripts, in the order they were registered.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<NativeScript>> {
        self.scripts.iter()
    }

    /// The script whose body is exactly `body`.
    pub fn by_body(&self, body: &[u8]) -> Option<&Arc<NativeScript>> {
        self.scripts.iter().find(|s| s.body[..] == *body)
    }

    /// The script with this SHA1 (either case).
    pub fn by_sha(&self, sha: &[u8]) -> Option<&Arc<NativeScript>> {
        self.scripts.iter().find(|s| s.has_sha(sha))
    }
}

impl fmt::Debug for NativeScripts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.scripts.iter().map(|s| s.name()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_is_known_by_its_bodys_sha1() {
        let one = NativeScript::new("one", "return 1", |_, _, _| Frame::Integer(1));
        // `SCRIPT LOAD "return 1"` replies this SHA on Redis 7.0.
        assert_eq!(one.sha(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
        assert!(one.has_sha(b"E0E1F9FABFC9D4800C877A703B823AC0578FF8DB"));
        let scripts = NativeScripts::new().with(one);
        assert!(scripts.by_body(b"return 1").is_some());
        assert!(scripts.by_body(b"return 2").is_none());
        assert_eq!(
            scripts
                .by_sha(b"e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
                .map(|s| s.name()),
            Some("one")
        );
        // A second registration of a body replaces the first.
        let scripts = scripts.with(NativeScript::new("uno", "return 1", |_, _, _| Frame::Null));
        assert_eq!(scripts.len(), 1);
        assert_eq!(format!("{scripts:?}"), r#"["uno"]"#);
    }
}
