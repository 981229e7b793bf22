//! Any script on the fake against a real redis-server 7.0, byte for byte, in RESP2 and RESP3.
//!
//! Each case is a few commands run on a redis-server of the test's own (so `FLUSHALL` and
//! `SCRIPT FLUSH` touch nothing shared) and on a fresh engine; every reply's bytes must be the
//! same. The cases cover what a script sees: `KEYS` and `ARGV`, `redis.call` and `redis.pcall`
//! and their error tables, the helpers of the `redis` table, the globals Redis gives and takes
//! away and their protection, the conversions both ways (with and without `redis.setresp(3)`),
//! error texts and their ` script: <sha>, on @user_script:<line>.` suffix, shebang flags,
//! read-only scripts, commands a script may not call, and `math.random`'s sequence.

use crate::support;

use support::raw::{self, eval};

/// A case of one `EVAL` of `script`, with no keys.
macro_rules! eval_case {
    ($script:literal) => {
        &[eval!($script)]
    };
}

/// What the test's redis-server forgets before each case.
const RESET: &[&[&[u8]]] = &[&[b"FLUSHALL"], &[b"SCRIPT", b"FLUSH"]];

const CASES: &[raw::Case] = &[
    // KEYS, ARGV and the basic conversions.
    &[&[
        "EVAL",
        "return {KEYS[1], ARGV[1], #KEYS, #ARGV}",
        "1",
        "k",
        "a",
    ]],
    eval_case!("return 3.99"),
    eval_case!("return -3.99"),
    eval_case!("return {1,2,3,nil,4}"),
    eval_case!("return true"),
    eval_case!("return false"),
    eval_case!("return nil"),
    eval_case!("return {1,'a',{true,false,{}}}"),
    eval_case!("return 'x'"),
    eval_case!("return {ok='fine'}"),
    eval_case!("return {err='boom'}"),
    eval_case!("return {err='MY boom'}"),
    eval_case!("return {ok=1}"),
    eval_case!("return {err={}}"),
    eval_case!("return {double=1.5}"),
    eval_case!("return {big_number='123456789012345678901234567890'}"),
    eval_case!("return {map={a=1}}"),
    eval_case!("return {set={a=true}}"),
    eval_case!("return {verbatim_string={format='txt', string='hi'}}"),
    // setresp(3): booleans, nulls and RESP3 shapes out, and RESP3 replies in.
    eval_case!("redis.setresp(3) return true"),
    eval_case!("redis.setresp(3) return false"),
    eval_case!("redis.setresp(3) return {double=1.5}"),
    eval_case!("redis.setresp(3) return {map={a=1}}"),
    eval_case!("redis.setresp(3) return {set={a=true}}"),
    eval_case!("redis.setresp(3) return {big_number='12345'}"),
    &[
        &["HSET h f v"],
        &[
            "EVAL",
            "redis.setresp(3) return redis.call('hgetall', KEYS[1])",
            "1",
            "h",
        ],
        &[
            "EVAL",
            "redis.setresp(3) local m = redis.call('hgetall', KEYS[1]) return m.map.f",
            "1",
            "h",
        ],
        &["EVAL", "return redis.call('hgetall', KEYS[1])", "1", "h"],
    ],
    &[
        eval!("redis.setresp(3) return type(redis.call('get', 'nokey'))"),
        eval!("return type(redis.call('get', 'nokey'))"),
        eval!("return redis.call('get', 'nokey')"),
        eval!("redis.setresp(3) return redis.call('get', 'nokey')"),
    ],
    &[
        &["ZADD z 1.5 m"],
        eval!(
            "redis.setresp(3) local d = redis.call('zscore', 'z', 'm') return {type(d), tostring(d.double)}"
        ),
        eval!("return redis.call('zscore', 'z', 'm')"),
        eval!("redis.setresp(3) return redis.call('zscore', 'z', 'm')"),
    ],
    &[
        &["SADD s a"],
        eval!("redis.setresp(3) local s = redis.call('smembers', 's') return s.set.a"),
    ],
    eval_case!("return redis.setresp(4)"),
    eval_case!("return redis.setresp()"),
    // redis.call and redis.pcall.
    &[
        &[
            "EVAL",
            "redis.call('set', KEYS[1], ARGV[1]) return redis.call('get', KEYS[1])",
            "1",
            "k",
            "v",
        ],
        &["EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "k"],
        &["EVAL", "return redis.call('del', KEYS[1])", "1", "k"],
    ],
    eval_case!("return redis.call('incr')"),
    eval_case!("return redis.call('set', 'k', 'a', 'b')"),
    eval_case!("return redis.pcall('set', 'k', 'a', 'b')"),
    eval_case!("local t = redis.pcall('set', 'k', 'a', 'b') return {type(t), t.err}"),
    eval_case!("return redis.call('nosuch')"),
    eval_case!("return redis.call()"),
    eval_case!("return redis.pcall()"),
    eval_case!("return redis.call(1)"),
    eval_case!("return redis.call('get', {})"),
    eval_case!("return redis.call('get', nil)"),
    &[
        eval!("redis.call('set', 'n', 0.1) return redis.call('get', 'n')"),
        eval!("redis.call('set', 'n', 1e20) return redis.call('get', 'n')"),
        eval!("redis.call('set', 'n', 42) return redis.call('get', 'n')"),
    ],
    &[
        &["SET str x"],
        eval!("return redis.call('hget', 'str', 'f')"),
        eval!("return redis.pcall('hget', 'str', 'f')"),
    ],
    eval_case!("local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), type(e), e}"),
    eval_case!("local ok, e = pcall(error, {err='X y'}) return {tostring(ok), type(e), e}"),
    eval_case!("local ok, e = pcall(error, 'plain') return {tostring(ok), e}"),
    // Text replies are verbatim strings to a RESP3 script, bulk strings to a RESP2 one.
    eval_case!(
        "redis.setresp(3) local r = redis.call('info', 'cluster') \
         return {type(r), r.verbatim_string.format, r.verbatim_string.string}"
    ),
    eval_case!("return redis.call('info', 'cluster')"),
    // A library's error, caught, uncaught and handled, reads as the string a C library raises.
    eval_case!("local ok, e = pcall(cjson.decode, '{') return {tostring(ok), type(e), e}"),
    eval_case!("return cjson.decode('{')"),
    eval_case!("return struct.pack('q')"),
    eval_case!(
        "local ok, e = xpcall(function() return cjson.decode('{') end, \
         function(m) return 'h:' .. tostring(m) end) return {tostring(ok), e}"
    ),
    eval_case!(
        "local ok, e = xpcall(function() return redis.call('nosuch') end, \
         function(m) return type(m) end) return {tostring(ok), e}"
    ),
    eval_case!("return redis.call('ping')"),
    eval_case!("return redis.call('echo', 'hi')"),
    &[
        eval!("redis.call('select', 1) redis.call('set', 'in1', 'v') return redis.call('dbsize')"),
        &["DBSIZE"],
        &["EXISTS in1"],
    ],
    &[
        eval!("return redis.call('rpush', 'l', 'a', 'b', 'c')"),
        eval!("return redis.call('lrange', 'l', 0, -1)"),
    ],
    // Commands a script may not call.
    eval_case!("return redis.call('multi')"),
    eval_case!("return redis.call('exec')"),
    eval_case!("return redis.call('subscribe', 'x')"),
    eval_case!("return redis.call('eval', 'return 1', '0')"),
    eval_case!("return redis.call('client', 'id')"),
    eval_case!("return redis.call('watch', 'x')"),
    eval_case!("return redis.call('script', 'flush')"),
    eval_case!("return redis.call('wait', '0', '0')"),
    eval_case!("return redis.pcall('auth', 'x')"),
    // Read-only scripts.
    &[&[
        "EVAL_RO",
        "return redis.call('set', KEYS[1], '1')",
        "1",
        "k",
    ]],
    &[&["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k"]],
    &[&["EVAL_RO", "return redis.pcall('publish', 'c', 'm')", "0"]],
    &[&[
        "EVAL",
        "#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], '1')",
        "1",
        "k",
    ]],
    &[&[
        "EVAL",
        "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])",
        "1",
        "k",
    ]],
    &[&["EVAL_RO", "#!lua\nreturn 1", "0"]],
    &[&["EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"]],
    // Shebangs.
    eval_case!("#!lua flags=bogus\nreturn 1"),
    eval_case!("#!lua name=x\nreturn 1"),
    eval_case!("#!lua\nreturn 1"),
    eval_case!("#!luax\nreturn 1"),
    eval_case!("#!lua"),
    eval_case!("#!lua flags=allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\nreturn 2"),
    eval_case!("#!lua flags=\nreturn 3"),
    eval_case!("#!lua\nerror('on line two')"),
    // Errors and their suffix.
    eval_case!("error('boom')"),
    eval_case!("error({err='MYERR boom'})"),
    eval_case!("error()"),
    eval_case!("error(42)"),
    eval_case!("local x = nil\nreturn x + 1"),
    eval_case!("\n\nredis.call('nosuch')"),
    eval_case!("return 1 +"),
    eval_case!("return redis.error_reply('MY boom')"),
    eval_case!("return redis.error_reply('boom')"),
    eval_case!("return redis.error_reply('-X y')"),
    eval_case!("return redis.error_reply()"),
    eval_case!("return redis.status_reply('fine')"),
    eval_case!("return redis.status_reply(1)"),
    &[&["EVAL", "return 1", "-1"]],
    &[&["EVAL", "return 1", "x"]],
    &[&["EVAL", "return 1", "2", "a"]],
    &[&["EVALSHA", "abc", "0"]],
    &[&["EVALSHA", "0000000000000000000000000000000000000000", "0"]],
    // The helpers.
    eval_case!("return redis.sha1hex('')"),
    eval_case!("return redis.sha1hex('abc')"),
    eval_case!("return redis.sha1hex()"),
    eval_case!("return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}"),
    eval_case!("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}"),
    eval_case!(
        "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}"
    ),
    eval_case!("return redis.log(redis.LOG_WARNING, 'x')"),
    eval_case!("return redis.log(99, 'x')"),
    eval_case!("return redis.log(1)"),
    eval_case!("return redis.log('a', 'x')"),
    eval_case!("return redis.set_repl(9)"),
    eval_case!("return redis.set_repl()"),
    eval_case!("return {redis.set_repl(redis.REPL_ALL)}"),
    eval_case!("return redis.replicate_commands()"),
    eval_case!("return {redis.breakpoint()}"),
    eval_case!("return {redis.debug('x')}"),
    eval_case!("return redis.acl_check_cmd('get', 'x')"),
    eval_case!("return redis.acl_check_cmd('nosuch')"),
    // Every argument is converted before the command is looked up, as `redis.call` does.
    eval_case!("return redis.acl_check_cmd('get', 1, {})"),
    eval_case!("return redis.acl_check_cmd('get', 1.5)"),
    eval_case!("return redis.acl_check_cmd('get', true)"),
    eval_case!("return redis.acl_check_cmd({})"),
    eval_case!("return redis.acl_check_cmd('nosuch', {})"),
    // Redis's `noscript` commands, by their full names: a container's HELP is allowed.
    eval_case!("return redis.call('debug', 'sleep', '0')"),
    eval_case!("return redis.call('role')"),
    eval_case!("return redis.call('save')"),
    eval_case!("return redis.call('bgsave')"),
    eval_case!("return redis.call('config', 'get', 'maxmemory')"),
    eval_case!("return redis.call('acl', 'whoami')"),
    eval_case!("return redis.call('latency', 'latest')"),
    eval_case!("return redis.call('client', 'id')"),
    eval_case!("return redis.pcall('script', 'exists', 'x')"),
    eval_case!("return type(redis.call('client', 'help'))"),
    eval_case!("return type(redis.call('config', 'help'))"),
    eval_case!("print('x')"),
    eval_case!("local ok, e = pcall(function() print('x') end) return e"),
    eval_case!("local t = {} for k in pairs(redis) do t[#t+1] = k end table.sort(t) return t"),
    // Globals: what exists, what does not, and their protection.
    // (Without the four libraries of `lua/libs/`, which their own tests cover.)
    eval_case!(
        "local skip = {bit=1, cjson=1, cmsgpack=1, struct=1} local t = {} for k in pairs(_G) do if not skip[k] then t[#t+1] = k end end table.sort(t) return t"
    ),
    eval_case!("return {type(os), type(io)}"),
    eval_case!("return loadfile"),
    eval_case!("return dofile"),
    eval_case!("return print"),
    eval_case!("return debug"),
    eval_case!("return {type(loadstring), type(coroutine), type(unpack), type(gcinfo)}"),
    eval_case!("return _VERSION"),
    eval_case!("x = 1"),
    eval_case!("return y"),
    eval_case!("string.x = 1"),
    eval_case!("redis.call = 1"),
    eval_case!("math.floor = nil"),
    eval_case!("rawset(_G, 'x', 1)"),
    eval_case!("setmetatable(_G, {})"),
    eval_case!("_G.x = 1"),
    eval_case!("return loadstring('x = 1')()"),
    // Bytecode is never loaded: Redis's Lua parses every chunk as text.
    eval_case!(
        "local f, e = loadstring(string.dump(function() return 1 end)) return {tostring(f), e}"
    ),
    eval_case!("return {loadstring(string.char(27) .. 'Lua', 'mychunk')}"),
    eval_case!("return {loadstring(string.char(27))}"),
    eval_case!(
        "local s = string.dump(function() return 1 end) \
         local f, e = load(function() local p = s s = nil return p end) return {tostring(f), e}"
    ),
    eval_case!(
        "local n = 0 local f = load(function() n = n + 1 if n == 1 then return 'return ' \
         elseif n == 2 then return '42' end end) return f()"
    ),
    eval_case!("KEYS[1] = 'x' return KEYS[1]"),
    eval_case!("local n = 0 for k in pairs(string) do n = n + 1 end return n"),
    eval_case!("local n = 0 for k in pairs(math) do n = n + 1 end return n"),
    eval_case!("return rawget(_G, 'nosuch') == nil"),
    eval_case!("return ('x'):rep(3) .. string.upper('a') .. table.concat({1,2}, ',')"),
    eval_case!("return tostring(1/3)"),
    eval_case!("return tostring(tonumber('0x10'))"),
    // Randomness: the sequence a fresh server gives, and seeding.
    &[
        eval!("return {tostring(math.random()), math.random(100), math.random(5, 10)}"),
        eval!("return {tostring(math.random()), math.random(100), math.random(5, 10)}"),
        eval!("math.randomseed(1) return tostring(math.random())"),
        eval!("return tostring(math.random())"),
        eval!("return math.random(0)"),
        eval!("return math.random(3, 1)"),
    ],
    // Time is the command's.
    eval_case!("local t = redis.call('time') return #t"),
    // The cache.
    &[
        &["SCRIPT", "LOAD", "return 'loaded'"],
        &["EVALSHA d2bdd7d0e7d76e1e6fd9f02b19e79c00c95c5fb4 0"],
        &[
            "SCRIPT",
            "EXISTS",
            "d2bdd7d0e7d76e1e6fd9f02b19e79c00c95c5fb4",
            "ffffffffffffffffffffffffffffffffffffffff",
        ],
        &["SCRIPT FLUSH"],
        &[
            "SCRIPT",
            "EXISTS",
            "d2bdd7d0e7d76e1e6fd9f02b19e79c00c95c5fb4",
        ],
        &["EVALSHA d2bdd7d0e7d76e1e6fd9f02b19e79c00c95c5fb4 0"],
        &["SCRIPT", "LOAD", "return 1 +"],
        &["SCRIPT FLUSH ASYNC"],
        &["SCRIPT FLUSH SYNC"],
        &["SCRIPT FLUSH BOGUS"],
        &["SCRIPT KILL"],
    ],
    &[
        eval!("return 'cached by eval'"),
        &[
            "EVALSHA_RO",
            "6d2a1b4b7b8ff1a5d8d6f4d3b7b4b8e1d3a6c0f7",
            "0",
        ],
        &[
            "SCRIPT",
            "EXISTS",
            "b3bbf1bb2e0c9ee05c0b5ba1cd5a6d7e3d54e3a8",
        ],
    ],
    // An error reply that echoes non-UTF-8 bytes: `redis.call` raises it (the script stops
    // there) and `redis.pcall` returns it, the bytes as they came.
    &[&[
        "EVAL",
        "redis.call('expire', KEYS[1], 10, 'x\\255') return 'after'",
        "1",
        "k",
    ]],
    &[&[
        "EVAL",
        "local e = redis.pcall('expire', KEYS[1], 10, 'x\\255') return {e.err, 'after'}",
        "1",
        "k",
    ]],
    // A redis-py style lock release.
    &[
        &["SET lock token"],
        &[
            "EVAL",
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
            "1",
            "lock",
            "other",
        ],
        &[
            "EVAL",
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
            "1",
            "lock",
            "token",
        ],
        &["EXISTS lock"],
    ],
];

raw::same_as_redis!(
    CASES,
    RESET,
    every_case_replies_as_redis_does_in_resp2,
    every_case_replies_as_redis_does_in_resp3
);
