//! The command table and what every command shares: name lookup, arity, flags, error texts.
//!
//! Each family lives in its own file (`keys`, `strings`, `hashes`, `lists`, `sets`, `zsets`, `sort`,
//! `bitmaps`, `hyperloglog`, `streams`, `geo`, `blocking`, `pubsub`, `scripting`, `functions`,
//! `transactions`, `connection`, `client` for `MONITOR` and the `CLIENT` modes that act around
//! every command (`PAUSE`, `REPLY`, `TRACKING`), `server` for `OBJECT`, `MEMORY`, `SHUTDOWN` and
//! the other server commands,
//! `acl`, `debug` for `DEBUG` behind its switch (`digest` for its signatures), `dump` for `DUMP`
//! and `RESTORE`, `cluster` for the cluster, module and debugging
//! commands a standalone server refuses (`cluster_mode` answers `CLUSTER` on a cluster node,
//! `redirect` routes its calls), `replication` for `WAIT` and `REPLICAOF`, `sentinel` for the
//! table a Sentinel's engine answers from instead of this one), mini-redis
//! style: a handler reads its arguments through one cursor ([`Args`](parse::Args), in
//! `parse.rs`), a command with options parses them into a small struct first (`Set::parse`,
//! `Expire::parse`) and then applies it; a simple one is a
//! short function. Argument parsing and the error texts live here and in `parse.rs` once, so
//! `ERR syntax error` and `ERR value is not an integer or out of range` read the same everywhere,
//! as in Redis. `dispatch.rs` runs a command through the table; `context.rs` is what a handler
//! sees of the engine.
//!
//! Lookup is allocation-free: the name is hashed case-insensitively and matched in a fixed index.
//! The table holds every command the fake implements; which of them a server knows depends on the
//! release it imitates ([`lookup_in`]: a flag per command and version, read off each version's
//! `COMMAND` once).

mod acl;
mod bitmaps;
mod blocking;
mod client;
mod cluster;
mod cluster_mode;
mod command_docs;
mod config;
mod connection;
mod context;
mod debug;
mod digest;
mod dispatch;
mod dump;
mod functions;
mod geo;
mod hash_ex;
mod hash_ttl;
mod hashes;
mod hyperloglog;
mod info_valkey;
mod keys;
mod lists;
mod long_double;
mod parse;
mod propagate;
mod pubsub;
mod reads;
mod redirect;
mod replication;
mod scripting;
mod sentinel;
mod server;
mod sets;
pub(crate) mod shebang;
mod sort;
mod streams;
mod strings;
mod transactions;
mod valkey_help;
mod zsets;

pub(crate) use crate::engine::acl::{Acl, DEFAULT_USER};
pub(crate) use crate::engine::notify::class;
pub(crate) use acl::check_script_call as acl_check_script_call;
pub(crate) use acl::script_may_call as acl_script_may_call;
pub(crate) use blocking::serve_blocked;
pub(crate) use client::resume_postponed;
pub(crate) use command_docs::{Refusal, command_name};

/// Whether `version`'s server flags the command named `full_name` `denyoom`: a script's call of
/// it is refused while the server is out of memory (`engine/evict.rs`).
pub(crate) fn denies_oom_in_script(version: Version, full_name: &str) -> bool {
    command_docs::redis_flags(version, full_name) & command_docs::flag::DENYOOM != 0
}
pub(crate) use context::{Caller, Cx};
pub(crate) use parse::Args;
pub(crate) use reads::{ReadRule, Reads, reads_of};
pub(crate) use redirect::route_script_call;
pub(crate) use replication::psync_refusal;
#[cfg(feature = "lua")]
pub(crate) use scripting::{call_from_script, sha1_hex};

use crate::engine::Version;
use crate::engine::db::Value;
use crate::resp::Frame;
use bytes::Bytes;

/// A handler's reply: `Err` carries an error reply, so a handler can stop at the first bad
/// argument with `?`.
pub(crate) type CmdResult = Result<Frame, Frame>;

/// A command handler: its context and its arguments after the name.
pub(crate) type Handler = fn(&mut Cx<'_>, &mut Args<'_>) -> CmdResult;

/// May run before `AUTH`.
pub(crate) const NO_AUTH: u8 = 1;
/// May run while a RESP2 client is subscribed.
pub(crate) const PUBSUB_CONTEXT: u8 = 2;
/// Runs at once inside `MULTI` instead of being queued.
pub(crate) const NOT_QUEUED: u8 = 4;
/// Writes to the keyspace.
pub(crate) const WRITE: u8 = 8;
/// Has subcommands (`CONFIG GET`): dispatch looks the subcommand up and checks its arity, as
/// Redis's `lookupCommand` and `commandCheckArity` do, before anything else about the call.
pub(crate) const CONTAINER: u8 = 16;

/// One command: its canonical (lowercase) name, Redis's arity (exact when positive, a minimum when
/// negative, counting the name), flags, and handler.
pub(crate) struct Spec {
    pub name: &'static str,
    pub arity: i32,
    pub flags: u8,
    pub run: Handler,
    /// Which of its lookups are reads (`reads.rs`).
    pub reads: ReadRule,
    /// The arity every call is checked against: `arity`, or a later release's where that takes
    /// more forms (`ZRANK`'s `WITHSCORE`, Redis 7.2); the handler then holds each release to its
    /// own.
    pub loose_arity: i32,
}

impl Spec {
    pub const fn new(name: &'static str, arity: i32, flags: u8, run: Handler) -> Spec {
        Spec {
            name,
            arity,
            flags,
            run,
            reads: ReadRule::ByFlags,
            loose_arity: arity,
        }
    }

    /// The command with the arity of a later release that takes more forms of it (see
    /// [`Spec::loose_arity`]).
    pub const fn with_later_arity(self, arity: i32) -> Spec {
        Spec {
            loose_arity: arity,
            ..self
        }
    }

    /// The command with `rule` for its reads: one of Redis's exceptions to "a read-only
    /// command's lookups are reads, a write's are not" (`reads.rs`).
    pub const fn with_reads(self, rule: ReadRule) -> Spec {
        Spec {
            reads: rule,
            ..self
        }
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        arity_allows(self.loose_arity, argc)
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Whether Redis's `arity` (exact when positive, a minimum when negative) allows `argc`
/// arguments, the name counted.
pub(crate) fn arity_allows(arity: i32, argc: usize) -> bool {
    let argc = i32::try_from(argc).unwrap_or(i32::MAX);
    if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    }
}

macro_rules! command_table {
    ($($upper:literal => $spec:path,)*) => {
        /// Every command by its upper-cased name.
        static NAMED: &[(&[u8], &Spec)] = &[$(($upper, &$spec)),*];

        /// Every command, for `COMMAND COUNT` and `COMMAND LIST`.
        pub(crate) static ALL: &[&Spec] = &[$(&$spec),*];
    };
}

/// Slots of the name index: a power of two well above the number of commands, so probes are short.
const INDEX_SLOTS: usize = 512;

fn name_hash(name: &[u8]) -> usize {
    // FNV-1a over the bytes with bit 5 set: that folds the case of letters (the lookup then
    // compares names case-insensitively) in one instruction a byte, and every name is short.
    let mut h: u32 = 0x811c_9dc5;
    for &b in name {
        h = (h ^ u32::from(b | 0x20)).wrapping_mul(0x0100_0193);
    }
    h as usize
}

/// The spec of the command named `name` (any case), without allocating: an open-addressing index
/// over the upper-cased names, built once.
pub(crate) fn lookup(name: &[u8]) -> Option<&'static Spec> {
    index_of(name).map(|i| NAMED[i].1)
}

/// The spec of the command named `name` (any case) if `version`'s server knows it: what a
/// client's call, a script's and a transaction's find. A command the fake implements but the
/// release lacks (`WAITAOF` on Redis 7.0) gets the unknown-command error there.
#[inline]
pub(crate) fn lookup_in(version: Version, name: &[u8]) -> Option<&'static Spec> {
    let i = index_of(name)?;
    known_in(version)[i].then(|| NAMED[i].1)
}

/// Whether `version` knows each command of [`NAMED`], by its index there, worked out once.
fn known_in(version: Version) -> &'static [bool] {
    static KNOWN: [std::sync::OnceLock<Box<[bool]>>; 3] = [const { std::sync::OnceLock::new() }; 3];
    KNOWN[version.index()].get_or_init(|| {
        NAMED
            .iter()
            .map(|(_, spec)| command_docs::has_command(version, spec.name))
            .collect()
    })
}

/// The index in [`NAMED`] of the command named `name` (any case).
fn index_of(name: &[u8]) -> Option<usize> {
    static INDEX: std::sync::OnceLock<Vec<Option<u16>>> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index = vec![None; INDEX_SLOTS];
        for (i, (name, _)) in NAMED.iter().enumerate() {
            let mut slot = name_hash(name) % INDEX_SLOTS;
            while index[slot].is_some() {
                slot = (slot + 1) % INDEX_SLOTS;
            }
            index[slot] = Some(i as u16);
        }
        index
    });
    let mut slot = name_hash(name) % INDEX_SLOTS;
    while let Some(i) = index[slot] {
        let (upper, _) = NAMED[usize::from(i)];
        // Clients nearly always send names in upper case: compare bytes first.
        if upper == name || upper.eq_ignore_ascii_case(name) {
            return Some(usize::from(i));
        }
        slot = (slot + 1) % INDEX_SLOTS;
    }
    None
}

command_table! {
    b"ACL" => acl::ACL,
    b"APPEND" => strings::APPEND,
    b"ASKING" => cluster::ASKING,
    b"AUTH" => connection::AUTH,
    b"BGREWRITEAOF" => server::BGREWRITEAOF,
    b"BGSAVE" => server::BGSAVE,
    b"BITCOUNT" => bitmaps::BITCOUNT,
    b"BITFIELD" => bitmaps::BITFIELD,
    b"BITFIELD_RO" => bitmaps::BITFIELD_RO,
    b"BITOP" => bitmaps::BITOP,
    b"BITPOS" => bitmaps::BITPOS,
    b"BLMOVE" => blocking::BLMOVE,
    b"BLMPOP" => blocking::BLMPOP,
    b"BLPOP" => blocking::BLPOP,
    b"BRPOP" => blocking::BRPOP,
    b"BRPOPLPUSH" => blocking::BRPOPLPUSH,
    b"BZMPOP" => blocking::BZMPOP,
    b"BZPOPMAX" => blocking::BZPOPMAX,
    b"BZPOPMIN" => blocking::BZPOPMIN,
    b"CLIENT" => connection::CLIENT,
    b"CLUSTER" => cluster::CLUSTER,
    b"CLUSTERSCAN" => cluster::CLUSTERSCAN,
    b"COMMAND" => command_docs::COMMAND,
    b"COMMANDLOG" => server::COMMANDLOG,
    b"CONFIG" => config::CONFIG,
    b"COPY" => keys::COPY,
    b"DBSIZE" => keys::DBSIZE,
    b"DEBUG" => debug::DEBUG,
    b"DECR" => strings::DECR,
    b"DECRBY" => strings::DECRBY,
    b"DEL" => keys::DEL,
    b"DELIFEQ" => keys::DELIFEQ,
    b"DISCARD" => transactions::DISCARD,
    b"DUMP" => dump::DUMP,
    b"ECHO" => connection::ECHO,
    b"EVAL" => scripting::EVAL,
    b"EVALSHA" => scripting::EVALSHA,
    b"EVALSHA_RO" => scripting::EVALSHA_RO,
    b"EVAL_RO" => scripting::EVAL_RO,
    b"EXEC" => transactions::EXEC,
    b"EXISTS" => keys::EXISTS,
    b"EXPIRE" => keys::EXPIRE,
    b"EXPIREAT" => keys::EXPIREAT,
    b"EXPIRETIME" => keys::EXPIRETIME,
    b"FAILOVER" => replication::FAILOVER,
    b"FCALL" => functions::FCALL,
    b"FCALL_RO" => functions::FCALL_RO,
    b"FLUSHALL" => keys::FLUSHALL,
    b"FLUSHDB" => keys::FLUSHDB,
    b"FUNCTION" => functions::FUNCTION,
    b"GET" => strings::GET,
    b"GETBIT" => bitmaps::GETBIT,
    b"GETDEL" => strings::GETDEL,
    b"GETEX" => strings::GETEX,
    b"GETRANGE" => strings::GETRANGE,
    b"GETSET" => strings::GETSET,
    b"HDEL" => hashes::HDEL,
    b"HELLO" => connection::HELLO,
    b"HEXISTS" => hashes::HEXISTS,
    b"HEXPIRE" => hash_ttl::HEXPIRE,
    b"HEXPIREAT" => hash_ttl::HEXPIREAT,
    b"HEXPIRETIME" => hash_ttl::HEXPIRETIME,
    b"HGET" => hashes::HGET,
    b"HGETALL" => hashes::HGETALL,
    b"HGETDEL" => hash_ex::HGETDEL,
    b"HGETEX" => hash_ex::HGETEX,
    b"HINCRBY" => hashes::HINCRBY,
    b"HINCRBYFLOAT" => hashes::HINCRBYFLOAT,
    b"HKEYS" => hashes::HKEYS,
    b"HLEN" => hashes::HLEN,
    b"HMGET" => hashes::HMGET,
    b"HMSET" => hashes::HMSET,
    b"HPERSIST" => hash_ttl::HPERSIST,
    b"HPEXPIRE" => hash_ttl::HPEXPIRE,
    b"HPEXPIREAT" => hash_ttl::HPEXPIREAT,
    b"HPEXPIRETIME" => hash_ttl::HPEXPIRETIME,
    b"HPTTL" => hash_ttl::HPTTL,
    b"HRANDFIELD" => hashes::HRANDFIELD,
    b"HSCAN" => hashes::HSCAN,
    b"HSET" => hashes::HSET,
    b"HSETEX" => hash_ex::HSETEX,
    b"HSETNX" => hashes::HSETNX,
    b"HSTRLEN" => hashes::HSTRLEN,
    b"HTTL" => hash_ttl::HTTL,
    b"HVALS" => hashes::HVALS,
    b"INCR" => strings::INCR,
    b"INCRBY" => strings::INCRBY,
    b"INCRBYFLOAT" => strings::INCRBYFLOAT,
    b"INFO" => connection::INFO,
    b"KEYS" => keys::KEYS,
    b"LASTSAVE" => server::LASTSAVE,
    b"LATENCY" => server::LATENCY,
    b"LCS" => strings::LCS,
    b"LINDEX" => lists::LINDEX,
    b"LINSERT" => lists::LINSERT,
    b"LLEN" => lists::LLEN,
    b"LMOVE" => lists::LMOVE,
    b"LMPOP" => lists::LMPOP,
    b"LOLWUT" => cluster::LOLWUT,
    b"LPOP" => lists::LPOP,
    b"LPOS" => lists::LPOS,
    b"LPUSH" => lists::LPUSH,
    b"LPUSHX" => lists::LPUSHX,
    b"LRANGE" => lists::LRANGE,
    b"LREM" => lists::LREM,
    b"LSET" => lists::LSET,
    b"LTRIM" => lists::LTRIM,
    b"MEMORY" => server::MEMORY,
    b"MGET" => strings::MGET,
    b"MIGRATE" => dump::MIGRATE,
    b"MODULE" => cluster::MODULE,
    b"MONITOR" => client::MONITOR,
    b"MOVE" => server::MOVE,
    b"MSET" => strings::MSET,
    b"MSETEX" => strings::MSETEX,
    b"MSETNX" => strings::MSETNX,
    b"MULTI" => transactions::MULTI,
    b"OBJECT" => server::OBJECT,
    b"PERSIST" => keys::PERSIST,
    b"PEXPIRE" => keys::PEXPIRE,
    b"PEXPIREAT" => keys::PEXPIREAT,
    b"PEXPIRETIME" => keys::PEXPIRETIME,
    b"PFADD" => hyperloglog::PFADD,
    b"PFCOUNT" => hyperloglog::PFCOUNT,
    b"PFDEBUG" => cluster::PFDEBUG,
    b"PFMERGE" => hyperloglog::PFMERGE,
    b"PFSELFTEST" => cluster::PFSELFTEST,
    b"PING" => connection::PING,
    b"PSETEX" => strings::PSETEX,
    b"PSYNC" => replication::PSYNC,
    b"PSUBSCRIBE" => pubsub::PSUBSCRIBE,
    b"PTTL" => keys::PTTL,
    b"PUBLISH" => pubsub::PUBLISH,
    b"PUBSUB" => pubsub::PUBSUB,
    b"PUNSUBSCRIBE" => pubsub::PUNSUBSCRIBE,
    b"QUIT" => connection::QUIT,
    b"RANDOMKEY" => keys::RANDOMKEY,
    b"READONLY" => cluster::READONLY,
    b"READWRITE" => cluster::READWRITE,
    b"RENAME" => keys::RENAME,
    b"RENAMENX" => keys::RENAMENX,
    b"REPLCONF" => replication::REPLCONF,
    b"REPLICAOF" => replication::REPLICAOF,
    b"RESET" => connection::RESET,
    b"RESTORE" => dump::RESTORE,
    b"RESTORE-ASKING" => dump::RESTORE_ASKING,
    b"ROLE" => server::ROLE,
    b"RPOP" => lists::RPOP,
    b"RPOPLPUSH" => lists::RPOPLPUSH,
    b"RPUSH" => lists::RPUSH,
    b"RPUSHX" => lists::RPUSHX,
    b"SADD" => sets::SADD,
    b"SAVE" => server::SAVE,
    b"SCAN" => keys::SCAN,
    b"SCARD" => sets::SCARD,
    b"SCRIPT" => scripting::SCRIPT,
    b"SDIFF" => sets::SDIFF,
    b"SDIFFSTORE" => sets::SDIFFSTORE,
    b"SELECT" => connection::SELECT,
    b"SET" => strings::SET,
    b"SETBIT" => bitmaps::SETBIT,
    b"SETEX" => strings::SETEX,
    b"SETNX" => strings::SETNX,
    b"SETRANGE" => strings::SETRANGE,
    b"SHUTDOWN" => server::SHUTDOWN,
    b"SINTER" => sets::SINTER,
    b"SINTERCARD" => sets::SINTERCARD,
    b"SINTERSTORE" => sets::SINTERSTORE,
    b"SISMEMBER" => sets::SISMEMBER,
    b"SLAVEOF" => replication::SLAVEOF,
    b"SLOWLOG" => server::SLOWLOG,
    b"SMEMBERS" => sets::SMEMBERS,
    b"SMISMEMBER" => sets::SMISMEMBER,
    b"SMOVE" => sets::SMOVE,
    b"SORT" => sort::SORT,
    b"SORT_RO" => sort::SORT_RO,
    b"SPOP" => sets::SPOP,
    b"SPUBLISH" => pubsub::SPUBLISH,
    b"SRANDMEMBER" => sets::SRANDMEMBER,
    b"SREM" => sets::SREM,
    b"SSCAN" => sets::SSCAN,
    b"SSUBSCRIBE" => pubsub::SSUBSCRIBE,
    b"STRLEN" => strings::STRLEN,
    b"SUBSCRIBE" => pubsub::SUBSCRIBE,
    b"SUBSTR" => strings::SUBSTR,
    b"SUNION" => sets::SUNION,
    b"SUNIONSTORE" => sets::SUNIONSTORE,
    b"SUNSUBSCRIBE" => pubsub::SUNSUBSCRIBE,
    b"SYNC" => replication::SYNC,
    b"SWAPDB" => server::SWAPDB,
    b"TIME" => connection::TIME,
    b"TOUCH" => keys::TOUCH,
    b"TTL" => keys::TTL,
    b"TYPE" => keys::TYPE,
    b"UNLINK" => keys::UNLINK,
    b"UNSUBSCRIBE" => pubsub::UNSUBSCRIBE,
    b"UNWATCH" => transactions::UNWATCH,
    b"WAIT" => replication::WAIT,
    b"WAITAOF" => replication::WAITAOF,
    b"WATCH" => transactions::WATCH,
    b"ZADD" => zsets::ZADD,
    b"ZCARD" => zsets::ZCARD,
    b"ZCOUNT" => zsets::ZCOUNT,
    b"ZDIFF" => zsets::ZDIFF,
    b"ZDIFFSTORE" => zsets::ZDIFFSTORE,
    b"ZINCRBY" => zsets::ZINCRBY,
    b"ZINTER" => zsets::ZINTER,
    b"ZINTERCARD" => zsets::ZINTERCARD,
    b"ZINTERSTORE" => zsets::ZINTERSTORE,
    b"ZLEXCOUNT" => zsets::ZLEXCOUNT,
    b"ZMPOP" => zsets::ZMPOP,
    b"ZMSCORE" => zsets::ZMSCORE,
    b"ZPOPMAX" => zsets::ZPOPMAX,
    b"ZPOPMIN" => zsets::ZPOPMIN,
    b"ZRANDMEMBER" => zsets::ZRANDMEMBER,
    b"ZRANGE" => zsets::ZRANGE,
    b"ZRANGEBYLEX" => zsets::ZRANGEBYLEX,
    b"ZRANGEBYSCORE" => zsets::ZRANGEBYSCORE,
    b"ZRANGESTORE" => zsets::ZRANGESTORE,
    b"ZRANK" => zsets::ZRANK,
    b"ZREM" => zsets::ZREM,
    b"ZREMRANGEBYLEX" => zsets::ZREMRANGEBYLEX,
    b"ZREMRANGEBYRANK" => zsets::ZREMRANGEBYRANK,
    b"ZREMRANGEBYSCORE" => zsets::ZREMRANGEBYSCORE,
    b"ZREVRANGE" => zsets::ZREVRANGE,
    b"ZREVRANGEBYLEX" => zsets::ZREVRANGEBYLEX,
    b"ZREVRANGEBYSCORE" => zsets::ZREVRANGEBYSCORE,
    b"ZREVRANK" => zsets::ZREVRANK,
    b"ZSCAN" => zsets::ZSCAN,
    b"ZSCORE" => zsets::ZSCORE,
    b"ZUNION" => zsets::ZUNION,
    b"ZUNIONSTORE" => zsets::ZUNIONSTORE,
    // ---- streams ----
    b"XACK" => streams::XACK,
    b"XADD" => streams::XADD,
    b"XAUTOCLAIM" => streams::XAUTOCLAIM,
    b"XCLAIM" => streams::XCLAIM,
    b"XDEL" => streams::XDEL,
    b"XGROUP" => streams::XGROUP,
    b"XINFO" => streams::XINFO,
    b"XLEN" => streams::XLEN,
    b"XPENDING" => streams::XPENDING,
    b"XRANGE" => streams::XRANGE,
    b"XREAD" => streams::XREAD,
    b"XREADGROUP" => streams::XREADGROUP,
    b"XREVRANGE" => streams::XREVRANGE,
    b"XSETID" => streams::XSETID,
    b"XTRIM" => streams::XTRIM,
    // ---- geo ----
    b"GEOADD" => geo::GEOADD,
    b"GEODIST" => geo::GEODIST,
    b"GEOHASH" => geo::GEOHASH,
    b"GEOPOS" => geo::GEOPOS,
    b"GEORADIUS" => geo::GEORADIUS,
    b"GEORADIUSBYMEMBER" => geo::GEORADIUSBYMEMBER,
    b"GEORADIUSBYMEMBER_RO" => geo::GEORADIUSBYMEMBER_RO,
    b"GEORADIUS_RO" => geo::GEORADIUS_RO,
    b"GEOSEARCH" => geo::GEOSEARCH,
    b"GEOSEARCHSTORE" => geo::GEOSEARCHSTORE,
}

// ---- errors, worded as Redis words them ----

pub(crate) const SYNTAX: Frame = Frame::error("ERR syntax error");
pub(crate) const NOT_INTEGER: Frame = Frame::error("ERR value is not an integer or out of range");
pub(crate) const NOT_FLOAT: Frame = Frame::error("ERR value is not a valid float");
/// A collection value that Redis deletes when it becomes empty (a list, a set, a sorted set), so
/// the families share one way to read, write-or-create, and finish a write.
pub(crate) trait Aggregate: Default {
    /// The collection, if `value` holds this type.
    fn of(value: &Value) -> Option<&Self>;
    /// The same, mutable.
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
    /// An empty collection as a value.
    fn wrap(self) -> Value;
    /// Whether it holds nothing.
    fn is_empty(&self) -> bool;
}

/// Implements [`Aggregate`] for a collection held as `Value::$variant`: every family matches
/// its variant the same way, and differs only in how it wraps itself (boxed or not) and in what
/// counts as empty.
macro_rules! aggregate {
    ($ty:ty, $variant:ident, wrap: $wrap:expr, is_empty: $is_empty:expr) => {
        impl super::Aggregate for $ty {
            fn of(value: &Value) -> Option<&Self> {
                match value {
                    Value::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn of_mut(value: &mut Value) -> Option<&mut Self> {
                match value {
                    Value::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn wrap(self) -> Value {
                ($wrap)(self)
            }
            fn is_empty(&self) -> bool {
                ($is_empty)(self)
            }
        }
    };
}
pub(crate) use aggregate;

/// The collection at `key` (None when missing), WRONGTYPE for another type.
pub(crate) fn read_aggregate<'a, T: Aggregate>(
    cx: &'a mut Cx<'_>,
    key: &[u8],
) -> Result<Option<&'a T>, Frame> {
    match cx.lookup(key) {
        None => Ok(None),
        Some(e) => T::of(&e.value).map(Some).ok_or(WRONGTYPE),
    }
}

/// The collection at `key` for writing, created empty (no TTL) when missing and `create` is set.
/// The caller finishes with [`finish_aggregate`].
pub(crate) fn write_aggregate<'a, T: Aggregate>(
    cx: &'a mut Cx<'_>,
    key: &[u8],
    create: bool,
) -> Result<Option<&'a mut T>, Frame> {
    // Redis's `lookupKeyWrite`: not a read, whatever the command reads elsewhere.
    let exists = cx.writing(|cx| read_aggregate::<T>(cx, key).map(|v| v.is_some()))?;
    let now = cx.now;
    let db = cx.keyspace();
    if !exists {
        if !create {
            return Ok(None);
        }
        db.insert(key, T::default().wrap(), None, now);
    }
    match db.write(key, now) {
        Some(e) => T::of_mut(&mut e.value).map(Some).ok_or(WRONGTYPE),
        None => Err(WRONGTYPE),
    }
}

/// After a write: deletes the key if its collection is empty (as Redis does, announcing it as a
/// `del` event after the write's own) and signals the change to `WATCH`.
pub(crate) fn finish_aggregate<T: Aggregate>(cx: &mut Cx<'_>, key: &[u8]) {
    finish_aggregate_if::<T>(cx, key, true);
}

/// [`finish_aggregate`] for a write that may have changed nothing (a member already there, a
/// score left as it was): `WATCH` hears of it only if it `changed` the key, as Redis calls
/// `signalModifiedKey` only then.
pub(crate) fn finish_aggregate_if<T: Aggregate>(cx: &mut Cx<'_>, key: &[u8], changed: bool) {
    let now = cx.now;
    let db = cx.keyspace();
    if db
        .peek(key, now)
        .and_then(|e| T::of(&e.value))
        .is_some_and(T::is_empty)
    {
        db.remove(key, now);
        if changed {
            cx.notify(class::GENERIC, "del", key);
        }
    } else if changed {
        server::note_size(cx, key);
    }
    let db = cx.keyspace();
    if changed {
        db.touch(key);
    }
}

/// The end of a command that stores its result at `destination` (`…STORE`, `BITOP`): the
/// value replaces whatever was there, TTL included, and is announced as the keyspace event
/// `stored` (its class and name); no value (an empty result) deletes the destination, a change `WATCH` hears
/// of, and a `del` event announces, only if it was there.
pub(crate) fn store_or_delete(
    cx: &mut Cx<'_>,
    destination: &[u8],
    value: Option<Value>,
    stored: (u16, &str),
) {
    let now = cx.now;
    let db = cx.keyspace();
    let change = match value {
        None => db
            .remove(destination, now)
            .is_some()
            .then_some((class::GENERIC, "del")),
        Some(value) => {
            db.insert(destination, value, None, now);
            server::note_size(cx, destination);
            Some(stored)
        }
    };
    if let Some((class, event)) = change {
        cx.keyspace().touch(destination);
        cx.notify(class, event, destination);
    }
}

pub(crate) const WRONGTYPE: Frame =
    Frame::error("WRONGTYPE Operation against a key holding the wrong kind of value");
pub(crate) const OVERFLOW: Frame = Frame::error("ERR increment or decrement would overflow");

/// `ERR unknown command 'foo', with args beginning with: 'bar' ` (Redis's `processCommand`):
/// the client's bytes as they came, each cut where C's `printf` cuts it.
pub(crate) fn unknown_command(argv: &[Bytes]) -> Frame {
    let mut args = Vec::new();
    for a in argv.iter().skip(1) {
        if args.len() >= 128 {
            break;
        }
        let room = 128 - args.len();
        args.push(b'\'');
        args.extend_from_slice(c_text(a, room));
        args.extend_from_slice(b"' ");
    }
    let name = argv.first().map_or(&[][..], |n| c_text(n, 128));
    error_echoing(&[
        b"ERR unknown command '",
        name,
        b"', with args beginning with: ",
        &args,
    ])
}

/// The part of a client's argument that C's `%.Ns` prints: up to its first NUL, at most `max`
/// bytes.
pub(crate) fn c_text(arg: &[u8], max: usize) -> &[u8] {
    let arg = &arg[..arg.len().min(max)];
    match arg.iter().position(|&b| b == 0) {
        Some(nul) => &arg[..nul],
        None => arg,
    }
}

/// An error whose text echoes a client's bytes (`parts` joined), kept as they came: Redis
/// writes them unchanged, only line breaks become spaces.
pub(crate) fn error_echoing(parts: &[&[u8]]) -> Frame {
    let mut text = parts.concat();
    for b in &mut text {
        if matches!(*b, b'\r' | b'\n') {
            *b = b' ';
        }
    }
    Frame::error_from_bytes(text)
}

/// A double reply (a score) as `version` prints it: Redis 7.0's `%.17g` (`1.1000000000000001`),
/// or, from Redis 7.2 on and in Valkey, the shortest text that reads back to it (`1.1`).
pub(crate) fn double_reply(version: Version, d: f64) -> Frame {
    match version {
        Version::V7_0 => Frame::Double(d),
        _ => Frame::DoubleText(crate::resp::format_double_shortest(d).into()),
    }
}

/// `ERR wrong number of arguments for 'get' command`.
pub(crate) fn wrong_arity(name: &str) -> Frame {
    Frame::error_owned(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

/// `ERR unknown subcommand 'foo'. Try CLIENT HELP.`
pub(crate) fn unknown_subcommand(container: &str, sub: &[u8]) -> Frame {
    error_echoing(&[
        b"ERR unknown subcommand '",
        c_text(sub, 128),
        b"'. Try ",
        container.as_bytes(),
        b" HELP.",
    ])
}

/// `ERR unknown subcommand or wrong number of arguments for 'CAT'. Try ACL HELP.` (Redis's
/// `addReplySubcommandSyntaxError`): a subcommand whose arguments its handler counts itself.
pub(crate) fn subcommand_syntax(container: &str, sub: &[u8]) -> Frame {
    error_echoing(&[
        b"ERR unknown subcommand or wrong number of arguments for '",
        c_text(sub, 128),
        b"'. Try ",
        container.as_bytes(),
        b" HELP.",
    ])
}

/// `ERR invalid expire time in 'set' command`.
pub(crate) fn invalid_expire(name: &str) -> Frame {
    Frame::error_owned(format!("ERR invalid expire time in '{name}' command"))
}

// ---- argument parsing ----

/// A command argument as a 64-bit integer, by Redis's `string2ll` rules.
pub(crate) fn int(arg: &[u8]) -> Result<i64, Frame> {
    // A `match`, not `ok_or`: that would build the error (and drop it) on every call.
    match crate::resp::number::parse_i64(arg) {
        Some(n) => Ok(n),
        None => Err(NOT_INTEGER),
    }
}

/// A command argument as a float, by Redis's `string2ld` rules (no spaces, no NaN).
pub(crate) fn float(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.is_empty() || text.len() > 5120 || text.starts_with(char::is_whitespace) {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    if v.is_nan() {
        return None;
    }
    Some(v)
}

/// A command argument as a double, as Redis's `getDoubleFromObject` reads it: C's `strtod` over
/// the whole argument (so hexadecimal, `0x1p3`, is read too), refusing the empty argument, a
/// leading space, NaN, and a value out of range, as `strtod`'s `ERANGE` is, whether it overflows
/// to infinity or underflows to zero (`1e-400`). Callers answer their own error.
pub(crate) fn strict_double(arg: &[u8]) -> Option<f64> {
    if arg
        .first()
        .is_none_or(|c| c.is_ascii_whitespace() || *c == 0x0b)
    {
        return None;
    }
    let v = zsets::strtod(arg)?;
    let text = arg.to_ascii_lowercase();
    let unsigned = text
        .strip_prefix(b"-")
        .or(text.strip_prefix(b"+"))
        .unwrap_or(&text);
    let mantissa = match unsigned.strip_prefix(b"0x") {
        Some(hex) => hex.split(|&b| b == b'p').next(),
        None => unsigned.split(|&b| b == b'e').next(),
    }
    .unwrap_or_default();
    let overflow = v.is_infinite() && !unsigned.starts_with(b"inf");
    let underflow = v == 0.0 && mantissa.iter().any(|b| b.is_ascii_hexdigit() && *b != b'0');
    (!overflow && !underflow).then_some(v)
}

/// Whether `arg` equals `word`, ignoring ASCII case.
pub(crate) fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// The value paired with the first of `words` that `arg` is (ignoring ASCII case), else a syntax
/// error: how Redis reads an argument that must be one of a few keywords.
pub(crate) fn keyword<T: Copy>(arg: &[u8], words: &[(&str, T)]) -> Result<T, Frame> {
    words
        .iter()
        .find(|(word, _)| is(arg, word))
        .map(|&(_, value)| value)
        .ok_or(SYNTAX)
}

/// The decimal text of `n`, without allocating for the small counts lock hashes hold.
pub(crate) fn int_bytes(n: i64) -> Bytes {
    const SMALL: &[u8; 10] = b"0123456789";
    if (0..10).contains(&n) {
        let i = n as usize;
        Bytes::from_static(&SMALL[i..i + 1])
    } else {
        Bytes::from(n.to_string())
    }
}

/// Bytes for a stored value: shared for the tiny values latches hold, copied otherwise.
pub(crate) fn value_bytes(v: &[u8]) -> Bytes {
    match v {
        b"0" => Bytes::from_static(b"0"),
        b"1" => Bytes::from_static(b"1"),
        _ => Bytes::copy_from_slice(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_ignores_case_and_long_names() {
        assert_eq!(lookup(b"get").map(|s| s.name), Some("get"));
        assert_eq!(lookup(b"EvalSha").map(|s| s.name), Some("evalsha"));
        assert!(lookup(b"this-name-is-far-too-long-for-any-command").is_none());
        assert!(lookup(b"").is_none());
    }

    #[test]
    fn unknown_command_text_is_redis_s() {
        let argv = [Bytes::from_static(b"foo"), Bytes::from_static(b"bar")];
        assert_eq!(
            unknown_command(&argv),
            Frame::error("ERR unknown command 'foo', with args beginning with: 'bar' ")
        );
    }
}
