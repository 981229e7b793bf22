//! Redis 7.0's Functions on the fake against a real redis-server 7.0, byte for byte, in RESP2 and
//! RESP3.
//!
//! Each case is a few commands run on a redis-server of the test's own (so `FUNCTION FLUSH`
//! touches nothing shared) and on a fresh engine; every reply's bytes must be the same. The cases
//! cover `FUNCTION LOAD` and its errors, the library API while a library loads, `FCALL` and
//! `FCALL_RO` with their key counts and flags, what a function sees when it runs and its errors'
//! function-call suffix, and the admin subcommands. Listings hold one library of one function:
//! Redis lists in the order of its hash tables, which is not the same from one server to the
//! next. `FUNCTION DUMP`'s payload is compared by what it restores, on both servers. The fake
//! alone: what a restart and a failover leave, and a function that never ends.

use crate::support;

use bytes::{Bytes, BytesMut};
use fake_redis::resp::encode;
use fake_redis::{Engine, ManualClock};
use support::OwnServer;
use support::raw::{self, Real};

/// A library `lib` with the function `f` whose body is `body` (`k` and `a` are its arguments).
macro_rules! lib {
    ($body:literal) => {
        concat!(
            "#!lua name=lib\nredis.register_function('f', function(k, a)\n",
            $body,
            "\nend)"
        )
    };
}

/// A case of one `FUNCTION LOAD` of `code`.
macro_rules! load {
    ($code:literal) => {
        &[&["FUNCTION", "LOAD", $code]]
    };
}

/// A case that loads `lib!(body)` and calls its `f` without keys or arguments.
macro_rules! load_and_call {
    ($body:literal) => {
        &[&["FUNCTION", "LOAD", lib!($body)], &["FCALL f 0"]]
    };
}

/// What the test's redis-server forgets before each case.
const RESET: &[&[&[u8]]] = &[&[b"FLUSHALL"], &[b"FUNCTION", b"FLUSH"]];

const CASES: &[raw::Case] = &[
    // Loading: the header, the registrations and their errors.
    &[
        &["FUNCTION", "LOAD", lib!("return {k[1], a[1], #k, #a}")],
        &["FCALL f 1 key arg"],
    ],
    load!("return 1"),
    load!("#!lua"),
    load!("#!lua\n"),
    load!("#!foo name=x\n"),
    load!("#!lua name=x b=c\n"),
    load!("#!lua name=x name=y\n"),
    load!("#!lua name=x-y\n"),
    // A deleted or replaced library's function names are free again; another's are not.
    &[
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=x\nredis.register_function('f', function() return 1 end)",
        ],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=y\nredis.register_function('F', function() return 2 end)",
        ],
        &["FUNCTION", "DELETE", "x"],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=y\nredis.register_function('F', function() return 2 end)",
        ],
        &[
            "FUNCTION",
            "LOAD",
            "REPLACE",
            "#!lua name=x\nredis.register_function('g', function() return 3 end)",
        ],
        &[
            "FUNCTION",
            "LOAD",
            "REPLACE",
            "#!lua name=x\nredis.register_function('h', function() return 4 end)",
        ],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=z\nredis.register_function('G', function() return 5 end)",
        ],
        &["FCALL g 0"],
        &["FCALL h 0"],
    ],
    // The header is split as an inline request is: quotes group, and a name's key has any case.
    load!("#!lua name=\"x\"\nredis.register_function('g', function() return 1 end)"),
    load!("#!LUA NAME='x'\nredis.register_function('g', function() return 1 end)"),
    load!("#!\"lua\" name=x\nredis.register_function('g', function() return 1 end)"),
    load!("#!lua name=\"x\n"),
    load!("#!lua name=\"x\"y\n"),
    load!("#!lua name=\"x y\"\n"),
    &[
        &[
            "FUNCTION",
            "LOAD",
            "#!lua  name=x\nredis.register_function('g', function() return 1 end)",
        ],
        &["FCALL g 0"],
    ],
    load!("#!lua name=x\nreturn 1"),
    load!("#!lua name=x\nsyntax error here"),
    &[&["FUNCTION", "LOAD"]],
    &[&["FUNCTION", "LOAD", "x", "y"]],
    &[&["FUNCTION", "LOAD", "REPLACE"]],
    &[
        &["FUNCTION", "LOAD", lib!("return 1")],
        &["FUNCTION", "LOAD", lib!("return 2")],
        &["FUNCTION", "LOAD", "REPLACE", lib!("return 2")],
        &["FCALL f 0"],
        &[
            "FUNCTION",
            "LOAD",
            "replace",
            "#!lua name=other\nredis.register_function('f', function() end)",
        ],
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=other\nredis.register_function('F', function() end)",
        ],
    ],
    load!(
        "#!lua name=x\nredis.register_function('a', function() end)\nredis.register_function('a', function() end)"
    ),
    load!("#!lua name=x\nredis.register_function('a b', function() end)"),
    load!("#!lua name=x\nredis.register_function('', function() end)"),
    load!("#!lua name=x\nredis.register_function()"),
    load!("#!lua name=x\nredis.register_function('a')"),
    load!("#!lua name=x\nredis.register_function('a', 1)"),
    load!("#!lua name=x\nredis.register_function({}, 1)"),
    load!("#!lua name=x\nredis.register_function('a', function() end, 1)"),
    &[
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=x\nredis.register_function(1, function() return 7 end)",
        ],
        &["FCALL 1 0"],
    ],
    load!("#!lua name=x\nredis.register_function{function_name='a'}"),
    load!("#!lua name=x\nredis.register_function{callback=function() end}"),
    load!("#!lua name=x\nredis.register_function{function_name='a', callback=1}"),
    load!(
        "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, flags='no-writes'}"
    ),
    load!(
        "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, flags={'bogus'}}"
    ),
    load!(
        "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, flags={1}}"
    ),
    load!(
        "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, bogus=1}"
    ),
    load!("#!lua name=x\nredis.register_function{'a', function() end}"),
    // The library API while loading: nothing but register_function, log and the constants.
    load!("#!lua name=x\nredis.call('ping')"),
    load!("#!lua name=x\nlocal t = type(1)"),
    load!("#!lua name=x\nlocal s = string.len('a')"),
    load!("#!lua name=x\nredis.setresp(3)"),
    load!("#!lua name=x\nlocal m = redis.math"),
    load!("#!lua name=x\nredis.log()"),
    load!("#!lua name=x\nx = 1"),
    load!(
        "#!lua name=x\nredis.log(redis.LOG_WARNING, 'loading', redis.REDIS_VERSION, redis.REDIS_VERSION_NUM, redis.LOG_DEBUG)\nredis.register_function('a', function() return 1 end)"
    ),
    // FCALL and FCALL_RO: key counts, flags, the no-writes rule.
    &[
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function('w', function(k, a) return redis.call('set', k[1], a[1]) end)\nredis.register_function{function_name='r', callback=function(k, a) return redis.call('get', k[1]) end, flags={'no-writes'}}\nredis.register_function{function_name='rw', callback=function(k, a) return redis.call('set', k[1], 'x') end, flags={'no-writes', 'allow-oom'}}",
        ],
        &["FCALL w 1 k v"],
        &["FCALL r 1 k"],
        &["FCALL_RO r 1 k"],
        &["FCALL_RO w 1 k v"],
        &["FCALL rw 1 k"],
        &["FCALL_RO rw 1 k"],
        &["FCALL nope 0"],
        &["FCALL nope x"],
        &["FCALL w x"],
        &["FCALL w 5 k"],
        &["FCALL w -1"],
        &["FCALL W 1 k v2"],
        &["FCALL w"],
        &["GET k"],
    ],
    // What a function sees at run time, and its errors with the function-call suffix.
    load_and_call!("return type(KEYS)"),
    load_and_call!("return redis.sha1hex('a')"),
    load_and_call!("return redis.error_reply('x')"),
    load_and_call!("return {err='boom'}"),
    load_and_call!("return redis.status_reply('fine')"),
    load_and_call!("return redis.register_function('q', function() end)"),
    load_and_call!("return cjson.encode({1, 'a'})"),
    &[
        &["FUNCTION", "LOAD", lib!("return math.random(10)")],
        &["FCALL f 0"],
        &["FCALL f 0"],
    ],
    load_and_call!("return redis.call('nosuch')"),
    load_and_call!("return redis.pcall('nosuch')"),
    load_and_call!("error('plain')"),
    load_and_call!("error({err='MY tbl'})"),
    load_and_call!("return redis.call('get')"),
    load_and_call!("x = 1"),
    load_and_call!("return unknownglobal"),
    load_and_call!("return getfenv"),
    load_and_call!("return type(_G)"),
    load_and_call!("return redis.call('fcall', 'f', 0)"),
    load_and_call!("return redis.call('function', 'list')"),
    load_and_call!("return redis.call('eval', 'return 1', 0)"),
    &[
        &[
            "FUNCTION",
            "LOAD",
            lib!("redis.setresp(3) return redis.call('hgetall', k[1])"),
        ],
        &["HSET h a 1"],
        &["FCALL f 1 h"],
    ],
    load_and_call!("return {1, 2.5, 'x', {true, false}, nil, 3}"),
    load_and_call!("redis.setresp(3) return {map={a=1}, double=nil}"),
    &[
        &["FUNCTION", "LOAD", lib!("return redis.call('select', 1)")],
        &["FCALL f 0"],
        &["SET stay 0"],
        &["SELECT 0"],
        &["GET stay"],
    ],
    // The admin subcommands.
    &[
        &[
            "FUNCTION",
            "LOAD",
            "#!lua name=lib\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'allow-stale', 'no-writes', 'allow-oom', 'no-cluster', 'allow-cross-slot-keys'}, description='what f does'}",
        ],
        &["FUNCTION LIST"],
        &["FUNCTION LIST WITHCODE"],
        &["FUNCTION LIST withcode libraryname l*"],
        &["FUNCTION LIST LIBRARYNAME zz"],
        &["FUNCTION LIST LIBRARYNAME"],
        &["FUNCTION LIST WITHCODE WITHCODE"],
        &["FUNCTION LIST LIBRARYNAME a LIBRARYNAME b"],
        &["FUNCTION LIST foo"],
        &["FUNCTION STATS"],
        &["FUNCTION STATS x"],
        &["FUNCTION DELETE LIB"],
        &["FUNCTION DELETE lib"],
        &["FUNCTION DELETE lib"],
        &["FUNCTION DELETE"],
        &["FUNCTION LIST"],
        &["FUNCTION STATS"],
        &["FCALL f 0"],
    ],
    &[&["FUNCTION", "LOAD", lib!("return 1")], &["FUNCTION LIST"]],
    &[
        &["FUNCTION", "LOAD", lib!("return 1")],
        &["FUNCTION FLUSH foo"],
        &["FUNCTION FLUSH sync async"],
        &["FUNCTION FLUSH ASYNC"],
        &["FUNCTION LIST"],
        &["FUNCTION", "LOAD", lib!("return 1")],
        &["FUNCTION FLUSH sync"],
        &["FUNCTION", "LOAD", lib!("return 1")],
        &["FUNCTION FLUSH"],
        &["FCALL f 0"],
    ],
    &[&["FUNCTION", "KILL"], &["FUNCTION", "KILL", "x"]],
    &[
        &["FUNCTION"],
        &["FUNCTION BOGUS"],
        &["FUNCTION HELP"],
        &["FUNCTION HELP x"],
    ],
    &[
        &["FUNCTION DUMP x"],
        &["FUNCTION RESTORE"],
        &["FUNCTION RESTORE a b c"],
    ],
    &[&["FUNCTION RESTORE bogus"], &["FUNCTION RESTORE bogus FOO"]],
    load!("#!lua name=x\nredis.register_function{[true]=1}"),
    // A library that never ends loading is stopped.
    load!("#!lua name=x\nwhile true do end"),
    // No libraries: the payload is the version and checksum alone, the same bytes.
    &[&["FUNCTION", "DUMP"]],
    // SCRIPT FLUSH leaves the libraries alone.
    &[
        &["FUNCTION", "LOAD", lib!("return 1")],
        &["SCRIPT FLUSH"],
        &["FCALL f 0"],
    ],
];

raw::same_as_redis!(
    CASES,
    RESET,
    every_case_replies_as_redis_does_in_resp2,
    every_case_replies_as_redis_does_in_resp3
);

/// Two libraries long enough for Redis to compress their code in a payload.
const LIBRARIES: [&str; 2] = [
    "#!lua name=first\n-- a comment so that the code is long enough to be compressed, compressed\nredis.register_function('one', function(keys, args) return 'first library, first function' end)",
    "#!lua name=second\nredis.register_function{function_name='two', callback=function(keys, args) return 2 end, flags={'no-writes'}, description='the second library'}",
];

/// One fake engine and its client, with replies as bytes in `protocol`.
struct Fake {
    engine: Engine,
    client: fake_redis::ClientId,
}

impl Fake {
    fn new() -> Fake {
        let mut engine = Engine::new(ManualClock::default());
        let client = engine.connect();
        Fake { engine, client }
    }

    fn call(&mut self, argv: &[&[u8]]) -> Vec<u8> {
        let argv: Vec<Bytes> = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let mut out = BytesMut::new();
        encode(&self.engine.execute(self.client, &argv), 2, &mut out);
        out.to_vec()
    }
}

/// The payload inside a bulk reply's bytes.
fn bulk_body(reply: &[u8]) -> Vec<u8> {
    let start = reply.iter().position(|&b| b == b'\n').unwrap() + 1;
    reply[start..reply.len() - 2].to_vec()
}

#[test]
fn each_server_restores_the_other_s_dump() {
    let server = OwnServer::start();
    let mut real = Real::connect(server.port);
    let mut fake = Fake::new();
    for code in LIBRARIES {
        real.call(&[b"FUNCTION", b"LOAD", code.as_bytes()]);
        fake.call(&[b"FUNCTION", b"LOAD", code.as_bytes()]);
    }
    let list = |call: &mut dyn FnMut(&[&[u8]]) -> Vec<u8>, name: &[u8]| {
        call(&[b"FUNCTION", b"LIST", b"WITHCODE", b"LIBRARYNAME", name])
    };
    let real_dump = bulk_body(&real.call(&[b"FUNCTION", b"DUMP"]));
    let fake_dump = bulk_body(&fake.call(&[b"FUNCTION", b"DUMP"]));

    let mut restored = Fake::new();
    assert_eq!(
        restored.call(&[b"FUNCTION", b"RESTORE", &real_dump]),
        b"+OK\r\n"
    );
    real.call(&[b"FUNCTION", b"FLUSH"]);
    assert_eq!(
        real.call(&[b"FUNCTION", b"RESTORE", &fake_dump]),
        b"+OK\r\n"
    );
    for name in [&b"first"[..], b"second"] {
        let want = list(&mut |a| fake.call(a), name);
        assert_eq!(list(&mut |a| restored.call(a), name), want);
        assert_eq!(list(&mut |a| real.call(a), name), want);
    }
    assert_eq!(
        restored.call(&[b"FCALL", b"one", b"0"]),
        fake.call(&[b"FCALL", b"one", b"0"])
    );
}

#[test]
fn restore_policies_reply_as_redis_does() {
    let server = OwnServer::start();
    let mut real = Real::connect(server.port);
    real.call(&[b"FUNCTION", b"FLUSH"]);
    for code in LIBRARIES {
        real.call(&[b"FUNCTION", b"LOAD", code.as_bytes()]);
    }
    let payload = bulk_body(&real.call(&[b"FUNCTION", b"DUMP"]));
    let mut corrupt = payload.clone();
    corrupt[3] ^= 1;
    let other = b"#!lua name=second\nredis.register_function('other', function() return 3 end)";
    let clash = b"#!lua name=third\nredis.register_function('one', function() return 3 end)";
    let steps: &[&[&[u8]]] = &[
        &[b"FUNCTION", b"RESTORE", &payload],
        // With two libraries in the way Redis names the one its dict meets first, an order that
        // changes with each server's hash seed: one collision at a time keeps the reply fixed.
        &[b"FUNCTION", b"DELETE", b"first"],
        &[b"FUNCTION", b"RESTORE", &payload, b"APPEND"],
        &[b"FUNCTION", b"RESTORE", &payload, b"REPLACE"],
        &[b"FUNCTION", b"RESTORE", &corrupt],
        &[b"FUNCTION", b"RESTORE", &payload, b"bogus"],
        &[b"FUNCTION", b"FLUSH"],
        &[b"FUNCTION", b"LOAD", other],
        &[b"FUNCTION", b"RESTORE", &payload],
        &[b"FCALL", b"other", b"0"],
        &[b"FUNCTION", b"RESTORE", &payload, b"replace"],
        &[b"FCALL", b"other", b"0"],
        &[b"FCALL", b"two", b"0"],
        &[b"FUNCTION", b"FLUSH"],
        &[b"FUNCTION", b"LOAD", clash],
        &[b"FUNCTION", b"RESTORE", &payload, b"REPLACE"],
        &[b"FUNCTION", b"RESTORE", &payload, b"FLUSH"],
        &[b"FCALL", b"one", b"0"],
        &[b"FCALL", b"two", b"0"],
        &[b"FUNCTION", b"LIST", b"LIBRARYNAME", b"third"],
        &[b"FUNCTION", b"STATS"],
    ];
    real.call(&[b"FUNCTION", b"FLUSH"]);
    let mut fake = Fake::new();
    let mut mismatches = Vec::new();
    for step in steps {
        let (want, got) = (real.call(step), fake.call(step));
        if want != got {
            mismatches.push(raw::mismatch(
                &format!("{:?}", String::from_utf8_lossy(step[1])),
                &want,
                &got,
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

impl Fake {
    fn with_config(config: fake_redis::EngineConfig) -> Fake {
        let mut engine = Engine::with_config(ManualClock::default(), config);
        let client = engine.connect();
        Fake { engine, client }
    }

    /// Reconnects after a restart or failover closed the connection.
    fn reconnect(&mut self) {
        self.client = self.engine.connect();
    }
}

const ONE: &[u8] = b"#!lua name=lib\nredis.register_function('one', function() return 1 end)";

#[test]
fn a_failover_keeps_the_libraries_as_a_replica_has_them() {
    let mut fake = Fake::new();
    fake.call(&[b"FUNCTION", b"LOAD", ONE]);
    fake.engine.failover(0);
    fake.reconnect();
    assert_eq!(fake.call(&[b"FCALL", b"one", b"0"]), b":1\r\n");
}

#[test]
fn a_restart_loses_the_libraries_unless_the_engine_persists() {
    let mut fake = Fake::new();
    fake.call(&[b"FUNCTION", b"LOAD", ONE]);
    fake.engine.restart();
    fake.reconnect();
    assert_eq!(
        fake.call(&[b"FCALL", b"one", b"0"]),
        b"-ERR Function not found\r\n"
    );

    let config = fake_redis::EngineConfig {
        persistence: true,
        ..Default::default()
    };
    let mut fake = Fake::with_config(config);
    fake.call(&[b"FUNCTION", b"LOAD", ONE]);
    fake.engine.restart();
    fake.reconnect();
    assert_eq!(fake.call(&[b"FCALL", b"one", b"0"]), b":1\r\n");
}

#[test]
fn a_function_that_never_ends_is_ended_by_its_budget_and_the_engine_serves_on() {
    let mut fake = Fake::new();
    let spin = b"#!lua name=spin\nredis.register_function('spin', function() while true do end end)\nredis.register_function('fine', function() return 'still here' end)";
    fake.call(&[b"FUNCTION", b"LOAD", spin]);
    let first = fake.call(&[b"FCALL", b"spin", b"0"]);
    // Redis's text for a killed function, checked on redis-server with FUNCTION KILL.
    assert_eq!(
        String::from_utf8_lossy(&first),
        "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n"
    );
    // Deterministic: the budget counts instructions, so the same call ends the same way.
    assert_eq!(fake.call(&[b"FCALL", b"spin", b"0"]), first);
    assert_eq!(
        fake.call(&[b"FCALL", b"fine", b"0"]),
        b"$10\r\nstill here\r\n"
    );
    assert_eq!(
        fake.call(&[b"FUNCTION", b"KILL"]),
        b"-NOTBUSY No scripts in execution right now.\r\n"
    );
}

#[test]
fn command_list_names_the_functions_commands() {
    let mut fake = Fake::new();
    let list = String::from_utf8_lossy(&fake.call(&[b"COMMAND", b"LIST"])).into_owned();
    for name in ["fcall", "fcall_ro", "function"] {
        assert!(list.contains(&format!("\r\n{name}\r\n")), "{list}");
    }
}

/// The number `field` reads in an `INFO` reply.
fn info_number(reply: &[u8], field: &str) -> u64 {
    let text = String::from_utf8_lossy(reply);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {text}"));
    line.trim().parse().unwrap()
}

impl Fake {
    /// `used_memory_vm_functions`: what the Functions state holds.
    fn functions_state(&mut self) -> u64 {
        info_number(
            &self.call(&[b"INFO", b"memory"]),
            "used_memory_vm_functions",
        )
    }
}

/// More libraries load and run than mlua's handles could hold (each took a slot of one Lua
/// stack, which Lua 5.1 caps at 8,000: the 7,983rd load failed with `ERR Error registering
/// functions: ERR error in error handling`), and the Functions state's size grows with them as
/// Redis's does, and is back to a fresh state's after `FUNCTION FLUSH`.
#[test]
fn ten_thousand_libraries_load_run_and_are_counted() {
    let mut fake = Fake::new();
    let fresh = fake.functions_state();
    for i in 0..10_000 {
        let code = format!(
            "#!lua name=lib{i}\nredis.register_function('f{i}', function() return {i} end)"
        );
        let name = format!("lib{i}");
        assert_eq!(
            fake.call(&[b"FUNCTION", b"LOAD", code.as_bytes()]),
            format!("${}\r\n{name}\r\n", name.len()).into_bytes()
        );
    }
    assert_eq!(fake.call(&[b"FCALL", b"f0", b"0"]), b":0\r\n");
    assert_eq!(fake.call(&[b"FCALL", b"f9999", b"0"]), b":9999\r\n");
    let info = fake.call(&[b"INFO", b"memory"]);
    assert_eq!(info_number(&info, "number_of_libraries"), 10_000);
    assert_eq!(info_number(&info, "number_of_functions"), 10_000);
    // Redis 7.4.1's state holds about 2.7 MB for these, and its suite holds 50,000 to 14.5 MB.
    let used = fake.functions_state();
    assert!(
        (1 << 20..4 << 20).contains(&used),
        "the Functions state holds {used} bytes for 10,000 libraries"
    );
    fake.call(&[b"FUNCTION", b"FLUSH"]);
    assert_eq!(fake.functions_state(), fresh);
}

/// A library replaced ten thousand times still runs, and the Functions state stays the size of
/// one library's: each replaced library's callbacks leave the state's registry, and its
/// collector frees them.
#[test]
fn replacing_a_library_ten_thousand_times_frees_what_each_held() {
    let mut fake = Fake::new();
    let fresh = fake.functions_state();
    let mut largest = 0;
    for i in 0..10_000 {
        let code =
            format!("#!lua name=lib\nredis.register_function('f', function() return {i} end)");
        let loaded = fake.call(&[b"FUNCTION", b"LOAD", b"REPLACE", code.as_bytes()]);
        assert_eq!(loaded, b"$3\r\nlib\r\n");
        if i % 500 == 499 {
            largest = largest.max(fake.functions_state());
        }
    }
    assert_eq!(fake.call(&[b"FCALL", b"f", b"0"]), b":9999\r\n");
    // Kept, the 10,000 libraries would take some 3 MB.
    assert!(
        largest < fresh + (256 << 10),
        "the Functions state grew to {largest} bytes (fresh: {fresh})"
    );
    let stats = fake.call(&[b"FUNCTION", b"STATS"]);
    let stats = String::from_utf8_lossy(&stats);
    assert!(
        stats.contains("libraries_count\r\n:1\r\n") && stats.contains("functions_count\r\n:1\r\n"),
        "{stats}"
    );
}

/// More scripts load and run than mlua's handles could hold (see above), each cached script's
/// function kept in the state's registry.
#[test]
fn ten_thousand_cached_scripts_run() {
    let mut fake = Fake::new();
    let mut shas = Vec::new();
    for i in 0..10_000 {
        let body = format!("return {i}");
        shas.push(bulk_body(&fake.call(&[
            b"SCRIPT",
            b"LOAD",
            body.as_bytes(),
        ])));
    }
    assert_eq!(fake.call(&[b"EVALSHA", &shas[0], b"0"]), b":0\r\n");
    assert_eq!(fake.call(&[b"EVALSHA", &shas[9_999], b"0"]), b":9999\r\n");
    let info = fake.call(&[b"INFO", b"memory"]);
    assert_eq!(info_number(&info, "number_of_cached_scripts"), 10_000);
}
