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

use support::raw;

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
    &[&["EVAL", "return 3.99", "0"]],
    &[&["EVAL", "return -3.99", "0"]],
    &[&["EVAL", "return {1,2,3,nil,4}", "0"]],
    &[&["EVAL", "return true", "0"]],
    &[&["EVAL", "return false", "0"]],
    &[&["EVAL", "return nil", "0"]],
    &[&["EVAL", "return {1,'a',{true,false,{}}}", "0"]],
    &[&["EVAL", "return 'x'", "0"]],
    &[&["EVAL", "return {ok='fine'}", "0"]],
    &[&["EVAL", "return {err='boom'}", "0"]],
    &[&["EVAL", "return {err='MY boom'}", "0"]],
    &[&["EVAL", "return {ok=1}", "0"]],
    &[&["EVAL", "return {err={}}", "0"]],
    &[&["EVAL", "return {double=1.5}", "0"]],
    &[&[
        "EVAL",
        "return {big_number='123456789012345678901234567890'}",
        "0",
    ]],
    &[&["EVAL", "return {map={a=1}}", "0"]],
    &[&["EVAL", "return {set={a=true}}", "0"]],
    &[&[
        "EVAL",
        "return {verbatim_string={format='txt', string='hi'}}",
        "0",
    ]],
    // setresp(3): booleans, nulls and RESP3 shapes out, and RESP3 replies in.
    &[&["EVAL", "redis.setresp(3) return true", "0"]],
    &[&["EVAL", "redis.setresp(3) return false", "0"]],
    &[&["EVAL", "redis.setresp(3) return {double=1.5}", "0"]],
    &[&["EVAL", "redis.setresp(3) return {map={a=1}}", "0"]],
    &[&["EVAL", "redis.setresp(3) return {set={a=true}}", "0"]],
    &[&["EVAL", "redis.setresp(3) return {big_number='12345'}", "0"]],
    &[
        &["HSET", "h", "f", "v"],
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
        &[
            "EVAL",
            "redis.setresp(3) return type(redis.call('get', 'nokey'))",
            "0",
        ],
        &["EVAL", "return type(redis.call('get', 'nokey'))", "0"],
        &["EVAL", "return redis.call('get', 'nokey')", "0"],
        &[
            "EVAL",
            "redis.setresp(3) return redis.call('get', 'nokey')",
            "0",
        ],
    ],
    &[
        &["ZADD", "z", "1.5", "m"],
        &[
            "EVAL",
            "redis.setresp(3) local d = redis.call('zscore', 'z', 'm') return {type(d), tostring(d.double)}",
            "0",
        ],
        &["EVAL", "return redis.call('zscore', 'z', 'm')", "0"],
        &[
            "EVAL",
            "redis.setresp(3) return redis.call('zscore', 'z', 'm')",
            "0",
        ],
    ],
    &[
        &["SADD", "s", "a"],
        &[
            "EVAL",
            "redis.setresp(3) local s = redis.call('smembers', 's') return s.set.a",
            "0",
        ],
    ],
    &[&["EVAL", "return redis.setresp(4)", "0"]],
    &[&["EVAL", "return redis.setresp()", "0"]],
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
    &[&["EVAL", "return redis.call('incr')", "0"]],
    &[&["EVAL", "return redis.call('set', 'k', 'a', 'b')", "0"]],
    &[&["EVAL", "return redis.pcall('set', 'k', 'a', 'b')", "0"]],
    &[&[
        "EVAL",
        "local t = redis.pcall('set', 'k', 'a', 'b') return {type(t), t.err}",
        "0",
    ]],
    &[&["EVAL", "return redis.call('nosuch')", "0"]],
    &[&["EVAL", "return redis.call()", "0"]],
    &[&["EVAL", "return redis.pcall()", "0"]],
    &[&["EVAL", "return redis.call(1)", "0"]],
    &[&["EVAL", "return redis.call('get', {})", "0"]],
    &[&["EVAL", "return redis.call('get', nil)", "0"]],
    &[
        &[
            "EVAL",
            "redis.call('set', 'n', 0.1) return redis.call('get', 'n')",
            "0",
        ],
        &[
            "EVAL",
            "redis.call('set', 'n', 1e20) return redis.call('get', 'n')",
            "0",
        ],
        &[
            "EVAL",
            "redis.call('set', 'n', 42) return redis.call('get', 'n')",
            "0",
        ],
    ],
    &[
        &["SET", "str", "x"],
        &["EVAL", "return redis.call('hget', 'str', 'f')", "0"],
        &["EVAL", "return redis.pcall('hget', 'str', 'f')", "0"],
    ],
    &[&[
        "EVAL",
        "local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), type(e), e}",
        "0",
    ]],
    &[&[
        "EVAL",
        "local ok, e = pcall(error, {err='X y'}) return {tostring(ok), type(e), e}",
        "0",
    ]],
    &[&[
        "EVAL",
        "local ok, e = pcall(error, 'plain') return {tostring(ok), e}",
        "0",
    ]],
    // Text replies are verbatim strings to a RESP3 script, bulk strings to a RESP2 one.
    &[&[
        "EVAL",
        "redis.setresp(3) local r = redis.call('info', 'cluster') \
         return {type(r), r.verbatim_string.format, r.verbatim_string.string}",
        "0",
    ]],
    &[&["EVAL", "return redis.call('info', 'cluster')", "0"]],
    // A library's error, caught, uncaught and handled, reads as the string a C library raises.
    &[&[
        "EVAL",
        "local ok, e = pcall(cjson.decode, '{') return {tostring(ok), type(e), e}",
        "0",
    ]],
    &[&["EVAL", "return cjson.decode('{')", "0"]],
    &[&["EVAL", "return struct.pack('q')", "0"]],
    &[&[
        "EVAL",
        "local ok, e = xpcall(function() return cjson.decode('{') end, \
         function(m) return 'h:' .. tostring(m) end) return {tostring(ok), e}",
        "0",
    ]],
    &[&[
        "EVAL",
        "local ok, e = xpcall(function() return redis.call('nosuch') end, \
         function(m) return type(m) end) return {tostring(ok), e}",
        "0",
    ]],
    &[&["EVAL", "return redis.call('ping')", "0"]],
    &[&["EVAL", "return redis.call('echo', 'hi')", "0"]],
    &[
        &[
            "EVAL",
            "redis.call('select', 1) redis.call('set', 'in1', 'v') return redis.call('dbsize')",
            "0",
        ],
        &["DBSIZE"],
        &["EXISTS", "in1"],
    ],
    &[
        &[
            "EVAL",
            "return redis.call('rpush', 'l', 'a', 'b', 'c')",
            "0",
        ],
        &["EVAL", "return redis.call('lrange', 'l', 0, -1)", "0"],
    ],
    // Commands a script may not call.
    &[&["EVAL", "return redis.call('multi')", "0"]],
    &[&["EVAL", "return redis.call('exec')", "0"]],
    &[&["EVAL", "return redis.call('subscribe', 'x')", "0"]],
    &[&["EVAL", "return redis.call('eval', 'return 1', '0')", "0"]],
    &[&["EVAL", "return redis.call('client', 'id')", "0"]],
    &[&["EVAL", "return redis.call('watch', 'x')", "0"]],
    &[&["EVAL", "return redis.call('script', 'flush')", "0"]],
    &[&["EVAL", "return redis.call('wait', '0', '0')", "0"]],
    &[&["EVAL", "return redis.pcall('auth', 'x')", "0"]],
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
    &[&["EVAL", "#!lua flags=bogus\nreturn 1", "0"]],
    &[&["EVAL", "#!lua name=x\nreturn 1", "0"]],
    &[&["EVAL", "#!lua\nreturn 1", "0"]],
    &[&["EVAL", "#!luax\nreturn 1", "0"]],
    &[&["EVAL", "#!lua", "0"]],
    &[&[
        "EVAL",
        "#!lua flags=allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\nreturn 2",
        "0",
    ]],
    &[&["EVAL", "#!lua flags=\nreturn 3", "0"]],
    &[&["EVAL", "#!lua\nerror('on line two')", "0"]],
    // Errors and their suffix.
    &[&["EVAL", "error('boom')", "0"]],
    &[&["EVAL", "error({err='MYERR boom'})", "0"]],
    &[&["EVAL", "error()", "0"]],
    &[&["EVAL", "error(42)", "0"]],
    &[&["EVAL", "local x = nil\nreturn x + 1", "0"]],
    &[&["EVAL", "\n\nredis.call('nosuch')", "0"]],
    &[&["EVAL", "return 1 +", "0"]],
    &[&["EVAL", "return redis.error_reply('MY boom')", "0"]],
    &[&["EVAL", "return redis.error_reply('boom')", "0"]],
    &[&["EVAL", "return redis.error_reply('-X y')", "0"]],
    &[&["EVAL", "return redis.error_reply()", "0"]],
    &[&["EVAL", "return redis.status_reply('fine')", "0"]],
    &[&["EVAL", "return redis.status_reply(1)", "0"]],
    &[&["EVAL", "return 1", "-1"]],
    &[&["EVAL", "return 1", "x"]],
    &[&["EVAL", "return 1", "2", "a"]],
    &[&["EVALSHA", "abc", "0"]],
    &[&["EVALSHA", "0000000000000000000000000000000000000000", "0"]],
    // The helpers.
    &[&["EVAL", "return redis.sha1hex('')", "0"]],
    &[&["EVAL", "return redis.sha1hex('abc')", "0"]],
    &[&["EVAL", "return redis.sha1hex()", "0"]],
    &[&[
        "EVAL",
        "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}",
        "0",
    ]],
    &[&[
        "EVAL",
        "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
        "0",
    ]],
    &[&[
        "EVAL",
        "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
        "0",
    ]],
    &[&["EVAL", "return redis.log(redis.LOG_WARNING, 'x')", "0"]],
    &[&["EVAL", "return redis.log(99, 'x')", "0"]],
    &[&["EVAL", "return redis.log(1)", "0"]],
    &[&["EVAL", "return redis.log('a', 'x')", "0"]],
    &[&["EVAL", "return redis.set_repl(9)", "0"]],
    &[&["EVAL", "return redis.set_repl()", "0"]],
    &[&["EVAL", "return {redis.set_repl(redis.REPL_ALL)}", "0"]],
    &[&["EVAL", "return redis.replicate_commands()", "0"]],
    &[&["EVAL", "return {redis.breakpoint()}", "0"]],
    &[&["EVAL", "return {redis.debug('x')}", "0"]],
    &[&["EVAL", "return redis.acl_check_cmd('get', 'x')", "0"]],
    &[&["EVAL", "return redis.acl_check_cmd('nosuch')", "0"]],
    &[&[
        "EVAL",
        "local t = {} for k in pairs(redis) do t[#t+1] = k end table.sort(t) return t",
        "0",
    ]],
    // Globals: what exists, what does not, and their protection.
    // (Without the four libraries of `lua/libs/`, which their own tests cover.)
    &[&[
        "EVAL",
        "local skip = {bit=1, cjson=1, cmsgpack=1, struct=1} local t = {} for k in pairs(_G) do if not skip[k] then t[#t+1] = k end end table.sort(t) return t",
        "0",
    ]],
    &[&["EVAL", "return {type(os), type(io)}", "0"]],
    &[&["EVAL", "return loadfile", "0"]],
    &[&["EVAL", "return dofile", "0"]],
    &[&["EVAL", "return print", "0"]],
    &[&["EVAL", "return debug", "0"]],
    &[&[
        "EVAL",
        "return {type(loadstring), type(coroutine), type(unpack), type(gcinfo)}",
        "0",
    ]],
    &[&["EVAL", "return _VERSION", "0"]],
    &[&["EVAL", "x = 1", "0"]],
    &[&["EVAL", "return y", "0"]],
    &[&["EVAL", "string.x = 1", "0"]],
    &[&["EVAL", "redis.call = 1", "0"]],
    &[&["EVAL", "math.floor = nil", "0"]],
    &[&["EVAL", "rawset(_G, 'x', 1)", "0"]],
    &[&["EVAL", "setmetatable(_G, {})", "0"]],
    &[&["EVAL", "_G.x = 1", "0"]],
    &[&["EVAL", "return loadstring('x = 1')()", "0"]],
    // Bytecode is never loaded: Redis's Lua parses every chunk as text.
    &[&[
        "EVAL",
        "local f, e = loadstring(string.dump(function() return 1 end)) return {tostring(f), e}",
        "0",
    ]],
    &[&[
        "EVAL",
        "return {loadstring(string.char(27) .. 'Lua', 'mychunk')}",
        "0",
    ]],
    &[&["EVAL", "return {loadstring(string.char(27))}", "0"]],
    &[&[
        "EVAL",
        "local s = string.dump(function() return 1 end) \
         local f, e = load(function() local p = s s = nil return p end) return {tostring(f), e}",
        "0",
    ]],
    &[&[
        "EVAL",
        "local n = 0 local f = load(function() n = n + 1 if n == 1 then return 'return ' \
         elseif n == 2 then return '42' end end) return f()",
        "0",
    ]],
    &[&["EVAL", "KEYS[1] = 'x' return KEYS[1]", "0"]],
    &[&[
        "EVAL",
        "local n = 0 for k in pairs(string) do n = n + 1 end return n",
        "0",
    ]],
    &[&[
        "EVAL",
        "local n = 0 for k in pairs(math) do n = n + 1 end return n",
        "0",
    ]],
    &[&["EVAL", "return rawget(_G, 'nosuch') == nil", "0"]],
    &[&[
        "EVAL",
        "return ('x'):rep(3) .. string.upper('a') .. table.concat({1,2}, ',')",
        "0",
    ]],
    &[&["EVAL", "return tostring(1/3)", "0"]],
    &[&["EVAL", "return tostring(tonumber('0x10'))", "0"]],
    // Randomness: the sequence a fresh server gives, and seeding.
    &[
        &[
            "EVAL",
            "return {tostring(math.random()), math.random(100), math.random(5, 10)}",
            "0",
        ],
        &[
            "EVAL",
            "return {tostring(math.random()), math.random(100), math.random(5, 10)}",
            "0",
        ],
        &[
            "EVAL",
            "math.randomseed(1) return tostring(math.random())",
            "0",
        ],
        &["EVAL", "return tostring(math.random())", "0"],
        &["EVAL", "return math.random(0)", "0"],
        &["EVAL", "return math.random(3, 1)", "0"],
    ],
    // Time is the command's.
    &[&["EVAL", "local t = redis.call('time') return #t", "0"]],
    // The cache.
    &[
        &["SCRIPT", "LOAD", "return 'loaded'"],
        &["EVALSHA", "d2bdd7d0e7d76e1e6fd9f02b19e79c00c95c5fb4", "0"],
        &[
            "SCRIPT",
            "EXISTS",
            "d2bdd7d0e7d76e1e6fd9f02b19e79c00c95c5fb4",
            "ffffffffffffffffffffffffffffffffffffffff",
        ],
        &["SCRIPT", "FLUSH"],
        &[
            "SCRIPT",
            "EXISTS",
            "d2bdd7d0e7d76e1e6fd9f02b19e79c00c95c5fb4",
        ],
        &["EVALSHA", "d2bdd7d0e7d76e1e6fd9f02b19e79c00c95c5fb4", "0"],
        &["SCRIPT", "LOAD", "return 1 +"],
        &["SCRIPT", "FLUSH", "ASYNC"],
        &["SCRIPT", "FLUSH", "SYNC"],
        &["SCRIPT", "FLUSH", "BOGUS"],
        &["SCRIPT", "KILL"],
    ],
    &[
        &["EVAL", "return 'cached by eval'", "0"],
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
        &["SET", "lock", "token"],
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
        &["EXISTS", "lock"],
    ],
];

#[test]
fn every_case_replies_as_redis_does_in_resp2() {
    let mismatches = raw::compare(CASES, RESET, 2);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn every_case_replies_as_redis_does_in_resp3() {
    let mismatches = raw::compare(CASES, RESET, 3);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
