//! The lock's server-side scripts, each twice: Lua for a real Redis, native Rust for the fake.
//!
//! Every script is one module holding, side by side, the Lua body, a native function that does
//! exactly what the body does (over the [`Store`] trait, at one frozen time), the typed decoding of
//! its reply, and a builder for its call. The native function reads like the Lua, line by line, so
//! that the two can be compared by eye; a differential property test holds them equal against a real
//! Redis, errors included. It is generic over its store, and built both for any `dyn Store` and, on
//! the fake, for the engine's own keyspace, so that there each command is one call into the engine.
//!
//! Errors follow Redis 7.0: when a `redis.call` fails inside a script, the reply is that command's
//! error followed by ` script: <sha>, on @user_script:<line>.`, and the writes the script made
//! before the failing call stay. The native twins reproduce this through [`ScriptCtx`].

/// The [`Twin`] of a script module's `native`, a function generic over its store
/// (`fn native<S: Store + ?Sized>(cx: &mut ScriptCtx<'_>, store: &mut S)`): built for `dyn Store`,
/// and with the `fake` feature for the fake's `dyn Keyspace` too.
macro_rules! twin {
    ($native:ident) => {
        $crate::script::Twin {
            store: |cx, store| $native(cx, store),
            #[cfg(feature = "fake")]
            keyspace: |cx, keyspace| $native(cx, keyspace),
        }
    };
}

pub mod acquire;
pub mod acquire_fenced;
pub mod fair;
pub mod force_unlock;
pub mod reference;
pub mod release;
pub mod renew_batch;
pub mod rw;

use crate::keys::Owner;
use crate::reply::Reply;
use crate::time::{Lease, Millis};
use bytes::Bytes;
use std::sync::OnceLock;

/// The error text of a command that failed, exactly as Redis words it
/// (`WRONGTYPE Operation against a key holding the wrong kind of value`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CommandError(pub String);

impl CommandError {
    /// Redis's reply to a command on a key of another type.
    pub fn wrong_type() -> CommandError {
        CommandError("WRONGTYPE Operation against a key holding the wrong kind of value".into())
    }

    /// Redis's reply to an argument that is not a 64-bit integer.
    pub fn not_an_integer() -> CommandError {
        CommandError("ERR value is not an integer or out of range".into())
    }
}

/// The commands the lock scripts call, at one frozen `now` chosen by the implementation.
///
/// Arguments that a script takes from `ARGV` and hands to Redis as strings stay bytes here, so the
/// store parses them with Redis's own rules and errors. Implemented for the fake's engine (its
/// `dyn Keyspace`, with the `fake` feature) and by [`reference::ReferenceStore`].
pub trait Store {
    /// `EXISTS key` for one key.
    fn exists(&mut self, key: &[u8]) -> Result<bool, CommandError>;
    /// `HEXISTS key field`.
    fn hexists(&mut self, key: &[u8], field: &[u8]) -> Result<bool, CommandError>;
    /// `HINCRBY key field delta`: the new value. Keeps the key's TTL.
    fn hincrby(&mut self, key: &[u8], field: &[u8], delta: i64) -> Result<i64, CommandError>;
    /// `HGET key field`.
    fn hget(&mut self, key: &[u8], field: &[u8]) -> Result<Option<Bytes>, CommandError>;
    /// `PEXPIRE key ms`: whether a timeout was set (a deadline at or before now deletes the key).
    fn pexpire(&mut self, key: &[u8], ms: &[u8]) -> Result<bool, CommandError>;
    /// `PTTL key`: -2 missing, -1 no TTL, else the remaining milliseconds.
    fn pttl(&mut self, key: &[u8]) -> Result<i64, CommandError>;
    /// `DEL key` for one key: whether it was removed.
    fn del(&mut self, key: &[u8]) -> Result<bool, CommandError>;
    /// `PUBLISH channel message`: how many clients received it.
    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64, CommandError>;
    /// `SPUBLISH shardchannel message` (Redis 7.0's sharded pub/sub): how many clients received
    /// it.
    fn spublish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64, CommandError>;
    /// `SET key value PX ms`.
    fn set_px(&mut self, key: &[u8], value: &[u8], ms: &[u8]) -> Result<(), CommandError>;
    /// `GET key`.
    fn get(&mut self, key: &[u8]) -> Result<Option<Bytes>, CommandError>;
    /// `INCR key`: the new value.
    fn incr(&mut self, key: &[u8]) -> Result<i64, CommandError> {
        self.incrby(key, 1)
    }
    /// `INCRBY key delta`: the new value.
    fn incrby(&mut self, key: &[u8], delta: i64) -> Result<i64, CommandError>;
    /// `TIME`: the store's frozen time as unix seconds and the microseconds within that second.
    fn time(&mut self) -> (i64, i64);
    /// `HSET key field value` for one field: how many fields were added.
    fn hset(&mut self, key: &[u8], field: &[u8], value: &[u8]) -> Result<i64, CommandError>;
    /// `HDEL key field` for one field: whether it was removed (the last field's removal deletes
    /// the key).
    fn hdel(&mut self, key: &[u8], field: &[u8]) -> Result<bool, CommandError>;
    /// `HLEN key`.
    fn hlen(&mut self, key: &[u8]) -> Result<i64, CommandError>;
    /// `HKEYS key`: every field, in the hash's order.
    fn hkeys(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CommandError>;
    /// `LINDEX key index`.
    fn lindex(&mut self, key: &[u8], index: i64) -> Result<Option<Bytes>, CommandError>;
    /// `LPOP key` (one element).
    fn lpop(&mut self, key: &[u8]) -> Result<Option<Bytes>, CommandError>;
    /// `RPUSH key element` for one element: the list's new length.
    fn rpush(&mut self, key: &[u8], element: &[u8]) -> Result<i64, CommandError>;
    /// `LRANGE key 0 -1`: the whole list.
    fn lrange_all(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CommandError>;
    /// `LREM key 0 element`: how many were removed.
    fn lrem_all(&mut self, key: &[u8], element: &[u8]) -> Result<i64, CommandError>;
    /// `ZSCORE key member`, the score as the number Redis's reply spells.
    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Result<Option<f64>, CommandError>;
    /// `ZADD key score member` for one member: whether it was added (not only updated).
    fn zadd(&mut self, key: &[u8], score: &[u8], member: &[u8]) -> Result<bool, CommandError>;
    /// `ZINCRBY key increment member`: the new score.
    fn zincrby(&mut self, key: &[u8], increment: &[u8], member: &[u8])
    -> Result<f64, CommandError>;
    /// `ZREM key member` for one member: whether it was removed.
    fn zrem(&mut self, key: &[u8], member: &[u8]) -> Result<bool, CommandError>;
    /// `ZRANGE key 0 -1`: every member, lowest score first.
    fn zrange_all(&mut self, key: &[u8]) -> Result<Vec<Bytes>, CommandError>;
}

/// A server-side script: its name, Lua body, and the SHA1 Redis knows it by.
#[derive(Debug)]
pub struct Script {
    /// A short name for logs and errors (`acquire`, `release`, …).
    pub name: &'static str,
    /// The Lua body sent to a real Redis.
    pub body: &'static str,
    native: Twin,
    sha: OnceLock<String>,
    /// The index in `ARGV` (0-based) of the publish command, for a script that publishes.
    publish_arg: Option<usize>,
}

/// A native twin: runs over `keys` and `args` as `EVALSHA` would hand them to the Lua body.
pub type NativeFn = fn(&mut ScriptCtx<'_>, &mut dyn Store) -> Result<Reply, ScriptFailure>;

/// A native twin over the fake's keyspace itself (the `fake` feature): the same function as the
/// [`NativeFn`], built for `dyn Keyspace`, so that each command the twin calls is one dynamic call
/// into the engine rather than a call into a `dyn Store` that calls the engine in turn.
#[cfg(feature = "fake")]
type KeyspaceFn =
    fn(&mut ScriptCtx<'_>, &mut dyn fake_redis::native::Keyspace) -> Result<Reply, ScriptFailure>;

/// A script's native twin, one generic function (`fn native<S: Store + ?Sized>`) built once for
/// each kind of store it runs over: see the `twin!` macro.
#[derive(Clone, Copy, Debug)]
struct Twin {
    /// Over any [`Store`] ([`Script::run_native`]).
    store: NativeFn,
    /// Over the fake's keyspace (`fake::twin`).
    #[cfg(feature = "fake")]
    keyspace: KeyspaceFn,
}

impl Script {
    const fn new(name: &'static str, body: &'static str, native: Twin) -> Script {
        Script {
            name,
            body,
            native,
            sha: OnceLock::new(),
            publish_arg: None,
        }
    }

    /// A script that publishes with the command at `ARGV[publish_arg + 1]`.
    const fn publishing(
        name: &'static str,
        body: &'static str,
        native: Twin,
        publish_arg: usize,
    ) -> Script {
        Script {
            name,
            body,
            native,
            sha: OnceLock::new(),
            publish_arg: Some(publish_arg),
        }
    }

    /// The lowercase hex SHA1 of the body, as `SCRIPT LOAD` replies it.
    pub fn sha(&self) -> &str {
        self.sha
            .get_or_init(|| sha1_smol::Sha1::from(self.body).digest().to_string())
    }

    /// The command that puts the script in a server's cache: `SCRIPT LOAD body`.
    pub fn load_argv(&self) -> Vec<Bytes> {
        vec![
            Bytes::from_static(b"SCRIPT"),
            Bytes::from_static(b"LOAD"),
            Bytes::from_static(self.body.as_bytes()),
        ]
    }

    /// Runs the native twin, atomically over `store`, as `EVALSHA sha numkeys keys… args…` would.
    ///
    /// A failing call comes back as [`Reply::Error`] with Redis 7.0's script suffix.
    pub fn run_native(&self, store: &mut dyn Store, keys: &[Bytes], args: &[Bytes]) -> Reply {
        let mut ctx = ScriptCtx {
            sha: self.sha(),
            keys,
            args,
        };
        match (self.native.store)(&mut ctx, store) {
            Ok(reply) => reply,
            Err(ScriptFailure(text)) => Reply::Error(text),
        }
    }

    /// [`run_native`](Self::run_native) over the fake's keyspace, with no [`Store`] between the
    /// twin and the engine (the lock's `Store` is implemented for `dyn Keyspace` itself).
    #[cfg(feature = "fake")]
    #[inline]
    pub(crate) fn run_on_keyspace(
        &self,
        keyspace: &mut dyn fake_redis::native::Keyspace,
        keys: &[Bytes],
        args: &[Bytes],
    ) -> Reply {
        let mut ctx = ScriptCtx {
            sha: self.sha(),
            keys,
            args,
        };
        match (self.native.keyspace)(&mut ctx, keyspace) {
            Ok(reply) => reply,
            Err(ScriptFailure(text)) => Reply::Error(text),
        }
    }
}

/// Every script the lock uses, for lookup by SHA (the fake's script cache) and for loading.
pub fn all() -> [&'static Script; 15] {
    [
        &acquire::SCRIPT,
        &acquire_fenced::SCRIPT,
        &release::SCRIPT,
        &renew_batch::SCRIPT,
        &force_unlock::SCRIPT,
        &fair::acquire::SCRIPT,
        &fair::release::SCRIPT,
        &fair::force_unlock::SCRIPT,
        &fair::give_up::SCRIPT,
        &rw::read_acquire::SCRIPT,
        &rw::read_release::SCRIPT,
        &rw::write_acquire::SCRIPT,
        &rw::write_release::SCRIPT,
        &rw::renew::SCRIPT,
        &rw::force_unlock::SCRIPT,
    ]
}

/// The script with this SHA1 (lowercase or uppercase hex), if the lock has one.
pub fn by_sha(sha: &[u8]) -> Option<&'static Script> {
    all()
        .into_iter()
        .find(|s| s.sha().as_bytes().eq_ignore_ascii_case(sha))
}

/// The script with exactly this body, if the lock has one.
pub fn by_body(body: &[u8]) -> Option<&'static Script> {
    all().into_iter().find(|s| s.body.as_bytes() == body)
}

/// The command a script publishes its unlock messages with. Scripts take it as an argument, as
/// Redisson's do (`PublishSubscribeService.getPublishCommand`): `PUBLISH`, or on a cluster that has
/// it `SPUBLISH`, whose message stays within the channel's shard instead of crossing every node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PublishCommand {
    /// `PUBLISH`: every subscriber of the channel on any node (a cluster relays it to all).
    #[default]
    Publish,
    /// `SPUBLISH`: the subscribers of the shard channel, on the shard that serves its slot.
    SPublish,
}

impl PublishCommand {
    /// The command's name as a script argument (`publish`, `spublish`).
    pub fn as_arg(self) -> Bytes {
        Bytes::from_static(match self {
            PublishCommand::Publish => b"publish",
            PublishCommand::SPublish => b"spublish",
        })
    }
}

/// `redis.call(command, channel, message)` where `command` is the argument a script was handed:
/// `PUBLISH` or `SPUBLISH` in any case. Any other name is refused as Redis refuses a command it
/// does not know; a twin does not run other commands (the lock never hands it one).
#[inline]
pub fn publish_with<S: Store + ?Sized>(
    store: &mut S,
    command: &[u8],
    channel: &[u8],
    message: &[u8],
) -> Result<i64, CommandError> {
    // The lock hands the names in lowercase (`PublishCommand::as_arg`): an exact match first, no
    // byte-by-byte folding.
    if command == b"publish" || command.eq_ignore_ascii_case(b"publish") {
        store.publish(channel, message)
    } else if command == b"spublish" || command.eq_ignore_ascii_case(b"spublish") {
        store.spublish(channel, message)
    } else {
        Err(CommandError(
            "ERR Unknown Redis command called from script".into(),
        ))
    }
}

/// A script call ready to send: which script, its `KEYS` and its `ARGV`, and whether to wait for
/// replicas behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptCall {
    /// The script.
    pub script: &'static Script,
    /// `WAIT` to send in the same round trip, right behind the script, when the lock's replica
    /// check is on (see [`SyncReplicas`](crate::config::SyncReplicas)); the backend reports the
    /// count through [`Backend::eval_synced`](crate::Backend::eval_synced).
    pub sync: Option<ReplicaWait>,
    /// `KEYS[1..]`.
    pub keys: Vec<Bytes>,
    /// `ARGV[1..]`.
    pub args: Vec<Bytes>,
}

/// `WAIT <replicas> <timeout>`: block until that many replicas acknowledge the connection's writes
/// so far, or the timeout passes, and reply how many did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaWait {
    /// How many replicas to wait for.
    pub replicas: u32,
    /// How long the server waits at most.
    pub timeout: crate::time::Millis,
    /// Whether the backend may send `WAITAOF` instead, where the primary's AOF is on (see
    /// [`SyncMode`](crate::config::SyncMode)).
    pub mode: crate::config::SyncMode,
}

impl ReplicaWait {
    /// The command: `WAIT replicas timeout`.
    pub fn argv(&self) -> Vec<Bytes> {
        vec![
            Bytes::from_static(b"WAIT"),
            int_arg(i64::from(self.replicas)),
            int_arg(i64::try_from(self.timeout.as_u64()).unwrap_or(i64::MAX)),
        ]
    }

    /// The AOF form: `WAITAOF 1 replicas timeout`, the local AOF and `replicas` replicas' AOFs
    /// (Redisson's `syncAOF(1, replicas, timeout)`).
    pub fn aof_argv(&self) -> Vec<Bytes> {
        vec![
            Bytes::from_static(b"WAITAOF"),
            Bytes::from_static(b"1"),
            Bytes::from(self.replicas.to_string()),
            Bytes::from(self.timeout.as_u64().to_string()),
        ]
    }
}

/// How many replicas had a synced call's writes when its `WAIT` returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaAcks {
    /// The replicas that acknowledged (`WAIT`'s reply).
    pub acked: u32,
    /// The replicas the backend knows the primary has connected; 0 means no `WAIT` was sent,
    /// since there is nothing to wait for.
    pub connected: u32,
}

impl PartialEq for Script {
    fn eq(&self, other: &Script) -> bool {
        self.body == other.body
    }
}
impl Eq for Script {}

impl ScriptCall {
    /// The call publishing with `command` instead, if its script publishes (builders hand
    /// `PUBLISH`); any other call is returned as it is.
    pub fn with_publish(mut self, command: PublishCommand) -> ScriptCall {
        self.set_publish(command);
        self
    }

    /// [`with_publish`](Self::with_publish) in place.
    pub(crate) fn set_publish(&mut self, command: PublishCommand) {
        if let Some(slot) = self.script.publish_arg.and_then(|at| self.args.get_mut(at)) {
            *slot = command.as_arg();
        }
    }

    /// A call of `script` on `keys`, with no argument yet: the builders below add them in the
    /// order the script takes them, so a script's `call` reads like its `ARGV` list.
    pub(crate) fn of(script: &'static Script, keys: Vec<Bytes>) -> ScriptCall {
        ScriptCall {
            script,
            sync: None,
            keys,
            // Room for every script's arguments at once (seven at most), rather than the
            // reallocations of growing from empty.
            args: Vec::with_capacity(8),
        }
    }

    /// Adds an argument as it is.
    pub(crate) fn arg(mut self, arg: Bytes) -> ScriptCall {
        self.args.push(arg);
        self
    }

    /// Adds an integer argument.
    pub(crate) fn int(self, n: i64) -> ScriptCall {
        self.arg(int_arg(n))
    }

    /// Adds a lease, in ms.
    pub(crate) fn lease(self, lease: Lease) -> ScriptCall {
        self.int(lease.millis().as_u64() as i64)
    }

    /// Adds an owner (a hold's field).
    pub(crate) fn owner(self, owner: &Owner) -> ScriptCall {
        self.arg(owner.as_bytes().clone())
    }

    /// Adds the TTL of the request's latch, in ms: 1 at least, since a latch must be set.
    pub(crate) fn latch_ttl(self, latch_ttl: Millis) -> ScriptCall {
        self.int(latch_ttl.as_u64().max(1) as i64)
    }

    /// Adds the message a release publishes.
    pub(crate) fn message(self, message: &'static [u8]) -> ScriptCall {
        self.arg(Bytes::from_static(message))
    }

    /// Adds the publish command, `PUBLISH` until [`set_publish`](Self::set_publish) says otherwise.
    pub(crate) fn publish(self) -> ScriptCall {
        self.arg(PublishCommand::Publish.as_arg())
    }

    /// Adds the owner's count as the client knows it, when given: the optional last argument of
    /// an acquire or release (`None` counts every delivery, as Redisson does).
    pub(crate) fn held(self, held: Option<u32>) -> ScriptCall {
        match held {
            Some(held) => self.int(i64::from(held)),
            None => self,
        }
    }

    /// Runs the call's native twin over `store`.
    pub fn run_native(&self, store: &mut dyn Store) -> Reply {
        self.script.run_native(store, &self.keys, &self.args)
    }

    /// The command that runs the call on a server that has the script cached:
    /// `EVALSHA sha numkeys keys… args…`.
    pub fn evalsha_argv(&self) -> Vec<Bytes> {
        let mut argv = Vec::with_capacity(3 + self.keys.len() + self.args.len());
        argv.push(Bytes::from_static(b"EVALSHA"));
        argv.push(Bytes::from_static(self.script.sha().as_bytes()));
        argv.push(int_arg(self.keys.len() as i64));
        argv.extend(self.keys.iter().cloned());
        argv.extend(self.args.iter().cloned());
        argv
    }
}

/// A script that stopped at a failing `redis.call`: the full error text, suffix included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptFailure(pub String);

/// What a native twin sees while it runs: `KEYS`, `ARGV`, and how to word an error at a Lua line.
pub struct ScriptCtx<'a> {
    sha: &'a str,
    keys: &'a [Bytes],
    args: &'a [Bytes],
}

impl<'a> ScriptCtx<'a> {
    /// The error a `redis.call` on Lua line `line` raises when it fails with `err`.
    #[cold]
    pub fn fail(&self, line: u32, err: CommandError) -> ScriptFailure {
        ScriptFailure(format!(
            "{} script: {}, on @user_script:{line}.",
            err.0, self.sha
        ))
    }

    /// The result of the `redis.call` on Lua line `line`, its error worded as Redis words it.
    pub fn at<T>(&self, line: u32, result: Result<T, CommandError>) -> Result<T, ScriptFailure> {
        result.map_err(|e| self.fail(line, e))
    }

    /// `KEYS[i]` (1-based) as an argument of the call on `line`; missing, it is Lua's `nil`, which
    /// `redis.call` refuses.
    // Inlined across the crate boundary: a native twin names a key or an argument in every call.
    #[inline]
    pub fn key(&self, i: usize, line: u32) -> Result<&'a [u8], ScriptFailure> {
        self.nth(self.keys, i, line)
    }

    /// `ARGV[i]` (1-based) as an argument of the call on `line`.
    #[inline]
    pub fn arg(&self, i: usize, line: u32) -> Result<&'a [u8], ScriptFailure> {
        self.nth(self.args, i, line)
    }

    /// `list[i]` (1-based, as Lua counts `KEYS` and `ARGV`) as an argument of the call on `line`;
    /// missing, it is the `nil` `redis.call` refuses.
    #[inline]
    fn nth(&self, list: &'a [Bytes], i: usize, line: u32) -> Result<&'a [u8], ScriptFailure> {
        list.get(i.wrapping_sub(1))
            .map(|b| &b[..])
            .ok_or_else(|| self.fail(line, nil_argument()))
    }

    /// `ARGV[i]` (1-based) where the script tests it for `nil`: `None` when it was not given.
    #[inline]
    pub fn opt_arg(&self, i: usize) -> Option<&'a [u8]> {
        self.args.get(i.wrapping_sub(1)).map(|b| &b[..])
    }

    /// `redis.call(ARGV[command], KEYS[channel], ARGV[message])` on `line`: a publish with the
    /// command the script was handed (`publish` or `spublish`), as every unlock's last call is.
    #[inline]
    pub(crate) fn publish<S: Store + ?Sized>(
        &self,
        store: &mut S,
        line: u32,
        command: usize,
        channel: usize,
        message: usize,
    ) -> Result<i64, ScriptFailure> {
        let command = self.arg(command, line)?;
        let channel = self.key(channel, line)?;
        self.at(
            line,
            publish_with(store, command, channel, self.arg(message, line)?),
        )
    }

    /// `#KEYS`.
    pub fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// The error Lua raises on line `line` itself (arithmetic or a comparison on `nil`), worded
    /// as Redis words a script's runtime error.
    pub fn lua_error(&self, line: u32, message: &str) -> ScriptFailure {
        self.fail(
            line,
            CommandError(format!("ERR user_script:{line}: {message}")),
        )
    }

    /// `tonumber(ARGV[i])` where the script does arithmetic on it at `line`: a `nil` (missing or
    /// not a number) raises Lua's error there.
    pub fn number_arg(&self, i: usize, line: u32) -> Result<f64, ScriptFailure> {
        self.opt_arg(i)
            .and_then(lua_tonumber)
            .ok_or_else(|| self.lua_error(line, "attempt to perform arithmetic on a nil value"))
    }
}

/// A request's latch as a native twin handles it: `KEYS[key]`, set for `ARGV[ttl]` ms.
///
/// Every acquire and release script runs one pattern on it: look for it first (an earlier
/// attempt of the same request was applied, so this one replays it), try the TTL arguments on it
/// while it is still missing (which writes nothing, so a refused argument leaves no key behind),
/// and set it last, to the answer a repeat replays. Each method is one line of the Lua body, whose
/// number it takes.
pub(crate) struct Latch<'a> {
    key: &'a [u8],
    ttl: usize,
}

impl<'a> Latch<'a> {
    /// `KEYS[key]`, as the Lua line `line` first names it, with its TTL at `ARGV[ttl]`.
    pub(crate) fn new(
        cx: &ScriptCtx<'a>,
        key: usize,
        ttl: usize,
        line: u32,
    ) -> Result<Latch<'a>, ScriptFailure> {
        Ok(Latch {
            key: cx.key(key, line)?,
            ttl,
        })
    }

    /// The latch's key.
    pub(crate) fn key(&self) -> &'a [u8] {
        self.key
    }

    /// `redis.call('exists', KEYS[key]) == 1`: whether an attempt of this request was applied.
    #[inline]
    pub(crate) fn exists<S: Store + ?Sized>(
        &self,
        cx: &ScriptCtx<'_>,
        store: &mut S,
        line: u32,
    ) -> Result<bool, ScriptFailure> {
        cx.at(line, store.exists(self.key))
    }

    /// `local val = redis.call('get', KEYS[key])`, and `tonumber(val)` when it is there: the
    /// answer an applied attempt of this request left, which a repeat replies.
    #[inline]
    pub(crate) fn replay<S: Store + ?Sized>(
        &self,
        cx: &ScriptCtx<'_>,
        store: &mut S,
        line: u32,
    ) -> Result<Option<Reply>, ScriptFailure> {
        let stored = cx.at(line, store.get(self.key))?;
        Ok(stored.map(|val| lua_tonumber_reply(&val).map_or(Reply::Nil, Reply::Int)))
    }

    /// `redis.call('pexpire', KEYS[key], ARGV[arg])` on the missing latch: tries `ARGV[arg]` as
    /// a TTL, and writes nothing.
    #[inline]
    pub(crate) fn try_pexpire<S: Store + ?Sized>(
        &self,
        cx: &ScriptCtx<'_>,
        store: &mut S,
        arg: usize,
        line: u32,
    ) -> Result<(), ScriptFailure> {
        cx.at(line, store.pexpire(self.key, cx.arg(arg, line)?))
            .map(|_| ())
    }

    /// `redis.call('set', KEYS[key], 1, 'px', ARGV[arg], 'xx')` on the missing latch: tries
    /// `ARGV[arg]` as a TTL, and writes nothing.
    #[inline]
    pub(crate) fn try_set<S: Store + ?Sized>(
        &self,
        cx: &ScriptCtx<'_>,
        store: &mut S,
        arg: usize,
        line: u32,
    ) -> Result<(), ScriptFailure> {
        cx.at(line, check_set_px(store, self.key, cx.arg(arg, line)?))
    }

    /// `redis.call('set', KEYS[key], value, 'px', ARGV[ttl])`: the latch, holding the answer a
    /// repeat of the request replays.
    #[inline]
    pub(crate) fn set<S: Store + ?Sized>(
        &self,
        cx: &ScriptCtx<'_>,
        store: &mut S,
        value: &[u8],
        line: u32,
    ) -> Result<(), ScriptFailure> {
        cx.at(line, store.set_px(self.key, value, cx.arg(self.ttl, line)?))
    }
}

/// `SET key 1 PX ms XX` on a key the script has just found missing: it writes nothing, and fails
/// exactly as `SET` fails on a bad `ms`, so a script tries its TTL argument before its first write.
#[inline]
pub fn check_set_px<S: Store + ?Sized>(
    store: &mut S,
    missing: &[u8],
    ms: &[u8],
) -> Result<(), CommandError> {
    let invalid = || CommandError("ERR invalid expire time in 'set' command".into());
    match parse_i64(ms) {
        None => Err(CommandError::not_an_integer()),
        Some(n) if n <= 0 => Err(invalid()),
        // `PEXPIRE` of a missing key applies `SET`'s overflow rule (now + ms within `i64`) and
        // touches nothing.
        Some(_) => store
            .pexpire(missing, ms)
            .map(|_| ())
            .map_err(|_| invalid()),
    }
}

fn nil_argument() -> CommandError {
    CommandError("ERR Lua redis lib command arguments must be strings or integers".into())
}

/// Lua 5.1's `tonumber` on a string, as far as the scripts need it: a decimal or `0x` hex integer,
/// or a decimal float, with surrounding whitespace allowed; anything else is `nil`.
///
/// A number becomes an integer reply truncated toward zero, as Redis converts Lua numbers.
pub fn lua_tonumber_reply(s: &[u8]) -> Option<i64> {
    lua_tonumber(s).map(float_to_reply)
}

/// Lua 5.1's `tonumber` on a string (see [`lua_tonumber_reply`]), as the Lua number itself.
pub fn lua_tonumber(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    let t = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if t.is_empty() {
        return None;
    }
    let (neg, body) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        let v = u64::from_str_radix(hex, 16).ok()? as f64;
        return Some(if neg { -v } else { v });
    }
    if !body
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    t.parse().ok()
}

/// A Lua number as a script's reply: Redis's integer reply, truncated toward zero.
pub fn float_to_reply(v: f64) -> i64 {
    // Redis converts a Lua number with a C cast to long long; Rust's `as` truncates and saturates.
    v as i64
}

/// Parses an integer as Redis's `string2ll` does: an optional `-`, digits, no leading zeros, no
/// `+`, no spaces, no `-0`, within `i64`. Redis reads command arguments, stored counters and the
/// protocol's lengths by this one rule, so the fake's commands and codec share this parser.
#[inline]
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    match digits {
        [b'0'] if !negative => return Some(0),
        // Redis refuses 21 bytes or more (`LONG_STR_SIZE`), so a `-` and 19 digits at most; 20
        // digits would not fit anyway.
        [b'1'..=b'9', ..] if digits.len() <= 19 => {}
        _ => return None,
    }
    // 19 digits stay below `u64::MAX`: no overflow check until the sign is applied.
    let mut magnitude: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude * 10 + u64::from(b - b'0');
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Bytes of an integer argument, as a Lua number becomes a string for `redis.call`.
pub(crate) fn int_arg(n: i64) -> Bytes {
    // A hold count is one of these nearly always: no allocation for them.
    const DIGITS: &[u8; 10] = b"0123456789";
    if let Ok(digit) = usize::try_from(n)
        && digit < DIGITS.len()
    {
        return Bytes::from_static(&DIGITS[digit..digit + 1]);
    }
    RECENT_INTS.with(|recent| {
        let mut recent = recent.borrow_mut();
        if let Some((_, arg)) = recent.slots.iter().flatten().find(|(m, _)| *m == n) {
            return arg.clone();
        }
        let mut buf = [0u8; 20];
        let arg = Bytes::copy_from_slice(decimal(n, &mut buf));
        let at = recent.next;
        recent.slots[at] = Some((n, arg.clone()));
        recent.next = (at + 1) % recent.slots.len();
        arg
    })
}

/// The last few numbers [`int_arg`] wrote, with their text: a client sends the same lease and
/// latch TTL in every call, and sharing their bytes saves an allocation per argument. Per thread,
/// so no lock is taken; what it holds depends only on the numbers asked for, never on the order
/// of anything else.
struct RecentInts {
    slots: [Option<(i64, Bytes)>; 4],
    next: usize,
}

thread_local! {
    static RECENT_INTS: std::cell::RefCell<RecentInts> = const {
        std::cell::RefCell::new(RecentInts {
            slots: [None, None, None, None],
            next: 0,
        })
    };
}

/// `n` in decimal, written at the end of `buf` (20 bytes hold any `i64`): the digits
/// `n.to_string()` gives, without the formatting machinery, which was most of the cost of
/// building a call's arguments.
pub(crate) fn decimal(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        buf[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// A Lua number as Redis 7.0 hands it to a command inside a script (`%.17g`): an integral
/// number plainly, any other with 17 significant digits, trailing zeros dropped.
pub fn lua_number_arg(n: f64) -> Bytes {
    match integral(n) {
        Some(i) => int_arg(i),
        None => Bytes::from(format_g17(n)),
    }
}

/// `n` as an `i64` when `%.14g` and `%.17g` both write it as that integer's digits: a whole number
/// below 10^14 in magnitude, exactly representable, and not the negative zero they write as `-0`.
fn integral(n: f64) -> Option<i64> {
    (n.fract() == 0.0 && n.abs() < 1e14 && !(n == 0.0 && n.is_sign_negative())).then_some(n as i64)
}

/// C's `%.17g`, which Redis 7.0's Lua bridge and its double replies both use.
pub fn format_g17(n: f64) -> String {
    format_g(n, 17)
}

/// A Lua number as Lua 5.1 writes it into a string it concatenates (`%.14g`), as the read-write
/// lock's scripts build the names of read holds' timeout keys.
pub fn lua_concat_number(n: f64) -> String {
    format_g(n, 14)
}

/// C's `%.<digits>g`.
fn format_g(n: f64, digits: i32) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan" } else { "nan" }.to_owned();
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    if n == 0.0 {
        return if n.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    if digits >= 14
        && let Some(i) = integral(n)
    {
        let mut buf = [0u8; 20];
        return String::from_utf8_lossy(decimal(i, &mut buf)).into_owned();
    }
    format_g_general(n, digits)
}

/// C's `%.<digits>g` of a finite, non-zero `n`, through the standard formatting.
fn format_g_general(n: f64, digits: i32) -> String {
    let sci = format!("{n:.prec$e}", prec = (digits - 1) as usize);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if !(-4..digits).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim(mantissa), exp.abs());
    }
    let decimals = (digits - 1 - exp).max(0) as usize;
    trim(&format!("{n:.decimals$}"))
}

/// An error decoding a script's reply: the server answered something the lock does not expect.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unexpected reply to the {script} script: {reply}")]
pub struct DecodeError {
    /// The script's name.
    pub script: &'static str,
    /// The reply, as text.
    pub reply: String,
}

impl DecodeError {
    pub(crate) fn new(script: &'static str, reply: &Reply) -> DecodeError {
        DecodeError {
            script,
            reply: reply.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shas_match_redis() {
        // `SCRIPT LOAD "return 1"` replies this SHA on Redis 7.0.
        assert_eq!(
            sha1_smol::Sha1::from("return 1").digest().to_string(),
            "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"
        );
        for s in all() {
            assert_eq!(by_sha(s.sha().as_bytes()).map(|f| f.name), Some(s.name));
            assert_eq!(by_body(s.body.as_bytes()).map(|f| f.name), Some(s.name));
        }
    }

    #[test]
    fn integers_parse_as_redis_does() {
        assert_eq!(parse_i64(b"30000"), Some(30000));
        assert_eq!(parse_i64(b"-5"), Some(-5));
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-1"), Some(-1));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"00",
            b"01",
            b" 1",
            b"1a",
            b"1.0",
            b"-0",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"99999999999999999999",
            b"x",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        // 21 bytes is too long even when the value would fit.
        assert_eq!(parse_i64(b"-00000000000000000001"), None);
    }

    #[test]
    fn lua_numbers_reach_commands_as_redis_prints_them() {
        assert_eq!(format_g17(1_700_000_015_000.0), "1700000015000");
        assert_eq!(format_g17(-5000.0), "-5000");
        assert_eq!(format_g17(0.1), "0.10000000000000001");
        assert_eq!(format_g17(1e20), "1e+20");
        assert_eq!(format_g17(-1e20), "-1e+20");
        assert_eq!(format_g17(1.5), "1.5");
        assert_eq!(lua_concat_number(3.0), "3");
        assert_eq!(lua_concat_number(2.5), "2.5");
        assert_eq!(lua_concat_number(1e15), "1e+15");
        assert_eq!(
            lua_concat_number(9_223_372_036_854_775_807.0),
            "9.2233720368548e+18"
        );
    }

    #[test]
    fn whole_numbers_are_written_as_the_general_formatting_writes_them() {
        let mut n = 1i64;
        while n < 1_000_000_000_000_000 {
            for m in [n - 1, n, n + 1, n * 7 / 3] {
                for v in [m, -m] {
                    assert_eq!(&int_arg(v)[..], v.to_string().as_bytes());
                    let f = v as f64;
                    for digits in [14, 17] {
                        if f != 0.0 {
                            assert_eq!(format_g(f, digits), format_g_general(f, digits), "{v}");
                        }
                    }
                    if f != 0.0 {
                        assert_eq!(lua_number_arg(f), Bytes::from(format_g_general(f, 17)));
                    }
                }
            }
            n *= 10;
        }
        for v in [i64::MIN, i64::MAX, 0] {
            assert_eq!(&int_arg(v)[..], v.to_string().as_bytes());
        }
        assert_eq!(lua_number_arg(0.0), "0");
        assert_eq!(lua_number_arg(-0.0), "-0");
    }

    #[test]
    fn tonumber_follows_lua() {
        assert_eq!(lua_tonumber_reply(b"1"), Some(1));
        assert_eq!(lua_tonumber_reply(b" 7 "), Some(7));
        assert_eq!(lua_tonumber_reply(b"2.9"), Some(2));
        assert_eq!(lua_tonumber_reply(b"0x10"), Some(16));
        assert_eq!(lua_tonumber_reply(b"x"), None);
        assert_eq!(lua_tonumber_reply(b""), None);
    }
}
