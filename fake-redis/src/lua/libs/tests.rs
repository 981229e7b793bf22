//! The four libraries held equal to a real Redis 7.0, snippet by snippet.
//!
//! Each case is a script body. It runs once through `EVAL` on a real Redis (`REDIS_URL`, or one
//! the test starts) and once on a bare Lua with [`open_all`](super::open_all) applied, loaded
//! under Redis's chunk name (`@user_script`) so error positions read the same. Bodies return strings (bytes as hex, values
//! rendered by a small Lua printer), so the comparison does not depend on how a script's reply
//! becomes RESP; an error compares by its message, without the ` script: <sha>, on ...` suffix
//! Redis adds around every script error. Settings are changed only on `cjson.new()` copies: the
//! global `cjson` of the shared Redis keeps its defaults.

use mlua::{Lua, Value};
use proptest::prelude::*;

/// Helpers every body may call: `hex(bytes)`, and `show(...)`, which renders any values.
const PRELUDE: &str = "local function hex(s) return (string.gsub(s, '.', function(c) \
    return string.format('%02x', string.byte(c)) end)) end \
    local function dump(v) local t = type(v) \
    if t == 'string' then return 's:' .. hex(v) \
    elseif t == 'number' then return 'n:' .. string.format('%.17g', v) \
    elseif v == cjson.null then return 'null' \
    elseif t == 'table' then local parts = {} \
    for k, x in pairs(v) do parts[#parts + 1] = dump(k) .. '=' .. dump(x) end \
    return '{' .. table.concat(parts, ',') .. '}' \
    else return t .. ':' .. tostring(v) end end \
    local function show(...) local parts = {} for i = 1, select('#', ...) do \
    parts[i] = dump((select(i, ...))) end return table.concat(parts, ' ') end\n";

/// What a body gave: its string, or its error message.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Reply(String),
    Error(String),
    /// A reply that was not a string: the test body is wrong.
    NotAString(String),
}

fn oracle() -> redis::Connection {
    redis::Client::open(crate::test_servers::standalone_url())
        .and_then(|client| client.get_connection())
        .expect("connect to the real Redis")
}

fn on_redis(con: &mut redis::Connection, body: &str) -> Outcome {
    let script = format!("{PRELUDE}{body}");
    match redis::cmd("EVAL")
        .arg(&script)
        .arg(0)
        .query::<redis::Value>(con)
    {
        Ok(redis::Value::BulkString(bytes)) => {
            Outcome::Reply(String::from_utf8_lossy(&bytes).into())
        }
        Ok(other) => Outcome::NotAString(format!("{other:?}")),
        Err(error) => {
            let detail = error.detail().unwrap_or_default();
            let message = detail.rfind(" script: ").map_or(detail, |at| &detail[..at]);
            Outcome::Error(message.to_owned())
        }
    }
}

/// A Lua with the base libraries and the four, as a script sees them.
fn fake_lua() -> Lua {
    let lua = Lua::new();
    super::open_all(&lua).expect("install the libraries");
    // Errors raised from Rust reach a script's `pcall` as userdata; the script VM hands scripts
    // their message, as Redis's C libraries raise strings, and so does this harness.
    let text = lua
        .create_function(|lua, value: Value| match value {
            Value::Error(error) => Ok(Value::String(
                lua.create_string(crate::lua::env::error_message(&error))?,
            )),
            other => Ok(other),
        })
        .expect("create the error converter");
    let pcall: mlua::Function = lua.globals().get("pcall").expect("pcall");
    lua.load(
        "local raw, text = ... \
         pcall = function(...) return (function(ok, ...) \
         if ok then return true, ... end return false, text((...)) end)(raw(...)) end",
    )
    .call::<()>((pcall, text))
    .expect("wrap pcall");
    lua
}

fn on_fake(lua: &Lua, body: &str) -> Outcome {
    let script = format!("{PRELUDE}{body}");
    match lua.load(&script).set_name("@user_script").eval::<Value>() {
        Ok(Value::String(text)) => Outcome::Reply(text.to_string_lossy()),
        Ok(other) => Outcome::NotAString(format!("{other:?}")),
        Err(error) => Outcome::Error(crate::lua::env::error_message(&error)),
    }
}

/// Runs every body on both sides and fails listing each one that differs.
fn compare_all(bodies: &[&str]) {
    let mut con = oracle();
    let lua = fake_lua();
    let mut differences = Vec::new();
    for body in bodies {
        let expected = on_redis(&mut con, body);
        assert!(
            !matches!(expected, Outcome::NotAString(_)),
            "{body}: Redis gave {expected:?}"
        );
        let actual = on_fake(&lua, body);
        if actual != expected {
            differences.push(format!(
                "{body}\n    redis: {expected:?}\n    fake:  {actual:?}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} differ:\n{}",
        differences.len(),
        bodies.len(),
        differences.join("\n")
    );
}

#[test]
fn cjson_encodes_as_redis_does() {
    compare_all(&[
        "return cjson.encode({1, 2, 3})",
        "return cjson.encode({a = 1})",
        "return cjson.encode({})",
        "return cjson.encode({a = {b = {c = {}}}, d = {1, {2}}})",
        "return cjson.encode('a/b\"c\\\\d\\n\\t\\r\\b\\f' .. string.char(0, 1, 31, 127, 128, 255))",
        "return cjson.encode(0.1)",
        "return cjson.encode(1/3)",
        "return cjson.encode(-2/3)",
        "return cjson.encode(1e20)",
        "return cjson.encode(1e15)",
        "return cjson.encode(123456789012345678)",
        "return cjson.encode(12345678901234)",
        "return cjson.encode(-0.0)",
        "return cjson.encode(1e-5)",
        "return cjson.encode(0.0001)",
        "return cjson.encode(0.00001234)",
        "return cjson.encode(3.14159265358979)",
        "return cjson.encode(99999999999999.5)",
        "return cjson.encode(2^53)",
        "return cjson.encode(1.7976931348623157e308)",
        "return cjson.encode(5e-324)",
        "return cjson.encode(true) .. cjson.encode(false) .. cjson.encode(nil)",
        "return cjson.encode(cjson.null)",
        "return cjson.encode({cjson.null, 1})",
        "return cjson.encode({1, nil, 3})",
        "return cjson.encode({[10] = 1})",
        "return cjson.encode({[0] = 1})",
        "return cjson.encode({[1.5] = 1})",
        "return cjson.encode({[-1] = 'x'})",
        "return cjson.encode({[1] = 1, a = 2})",
        "return cjson.encode({1, 2, 3, nil, 5, nil, nil, 8})",
        "return cjson.encode({[1] = 1, [2] = 2, [12] = 3})",
        "return cjson.encode({[11] = 1})",
        "return cjson.encode({[true] = 1})",
        "return cjson.encode({[{}] = 1})",
        "return cjson.encode(function() end)",
        "return cjson.encode({f = tostring})",
        "return cjson.encode(1/0)",
        "return cjson.encode({-1/0})",
        "return cjson.encode(0/0)",
        "return cjson.encode({[1/0] = 1})",
        "return cjson.encode()",
        "return cjson.encode(1, 2)",
        "return cjson:decode(1)",
        "local e = cjson.encode return e(1, 2)",
        "return cjson.encode(coroutine.create(function() end))",
        "local t = {} local c = t for i = 1, 1000 do c[1] = {} c = c[1] end return cjson.encode(t)",
        "local t = {} local c = t for i = 1, 999 do c[1] = {} c = c[1] end \
         return tostring(#cjson.encode(t))",
        "local j = cjson.new() j.encode_max_depth(100000) local t = {} local c = t \
         for i = 1, 5000 do c.k = {} c = c.k end return j.encode(t)",
        "local j = cjson.new() j.encode_max_depth(100000) local t = {} local c = t \
         for i = 1, 9000 do c[1] = {} c = c[1] end return j.encode(t)",
        "local t = {} local c = t for i = 1, 100 do local n = {x = i, y = {i, 'a', {}}} \
         c[1] = n c[2] = 'z' c = n.y[3] end local j = cjson.encode(t) \
         return j .. cjson.encode(cjson.decode(j))",
        "local t = {} local c = t for i = 1, 100 do c[1] = {} c[2] = {1/0} c = c[1] end \
         return cjson.encode(t)",
        "local t = {} local c = t for i = 1, 100 do c.k = {} c = c.k end c.f = tostring \
         return cjson.encode(t)",
        "local j = cjson.new() j.encode_max_depth(3) return j.encode({{{}}})",
        "local j = cjson.new() j.encode_max_depth(3) return j.encode({{{{}}}})",
        "local j = cjson.new() j.encode_number_precision(3) return j.encode({math.pi, 1234567})",
        "local j = cjson.new() j.encode_number_precision(1) return j.encode({0.15, 0.25, 95})",
        "local j = cjson.new() return j.encode_number_precision(15)",
        "local j = cjson.new() return j.encode_number_precision(0)",
        "local j = cjson.new() return j.encode_number_precision('x')",
        "local j = cjson.new() return j.encode_number_precision('7') .. ''",
        "local j = cjson.new() return j.encode_number_precision(1, 2)",
        "local j = cjson.new() j.encode_sparse_array(true) return j.encode({[20] = 1})",
        "local j = cjson.new() j.encode_sparse_array(false, 0) return j.encode({[20] = 1})",
        "local j = cjson.new() j.encode_sparse_array('on', 3, 1) return j.encode({[3] = 1, [4] = 2})",
        "local j = cjson.new() return show(j.encode_sparse_array('maybe'))",
        "local j = cjson.new() return show(j.encode_sparse_array(nil, -1))",
        "local j = cjson.new() return show(j.encode_sparse_array(nil, nil, 'x'))",
        "local j = cjson.new() return show(j.encode_sparse_array(1, 2, 3, 4))",
        "return show(cjson.encode_sparse_array())",
        "local j = cjson.new() return show(j.encode_keep_buffer(false), j.encode_keep_buffer())",
        "local j = cjson.new() return show(j.encode_keep_buffer('on'))",
        "local j = cjson.new() return show(j.encode_keep_buffer({}))",
        "local j = cjson.new() j.encode_invalid_numbers('on') return j.encode({1/0, -1/0, 0/0})",
        "local j = cjson.new() j.encode_invalid_numbers('null') return j.encode({1/0, 0/0})",
        "local j = cjson.new() return show(j.encode_invalid_numbers('null'), j.encode_invalid_numbers(true), j.encode_invalid_numbers())",
        "local j = cjson.new() return show(j.encode_invalid_numbers('yes'))",
        "local j = cjson.new() j.encode_invalid_numbers(true) return j.encode({[1/0] = 1})",
        "return show(cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision())",
        "return show(pcall(cjson.encode, function() end))",
        "return show(pcall(cjson.encode))",
    ]);
}

#[test]
fn cjson_decodes_as_redis_does() {
    compare_all(&[
        "return show(cjson.decode('[1,2,3]'))",
        "return show(cjson.decode('{\"a\":[1,{\"b\":null}],\"c\":true,\"d\":false}'))",
        "return show(cjson.decode('\"\\\\u00e9\\\\ud83d\\\\ude00\\\\/\\\\\\\\\\\\b\\\\f\\\\n\\\\r\\\\t\\\\u0000x\"'))",
        "return show(cjson.decode('  123.5e2  '))",
        "return show(cjson.decode('-0'))",
        "return show(cjson.decode('0.1'))",
        "return show(cjson.decode('1E+2'))",
        "return show(cjson.decode('1.'))",
        "return show(cjson.decode('-.5'))",
        "return show(cjson.decode('0x1F'))",
        "return show(cjson.decode('-0x10'))",
        "return show(cjson.decode('0x'))",
        "return show(cjson.decode('[0x1p4, 0x.8, 0xA.8p-1, 0X1P+2, 0x1p, 0xffffffffffffffffff]'))",
        "return show(cjson.decode('[-nan, nan(123), nan(x, infinity, -Infinity]'))",
        "return show(cjson.decode('Infinityx'))",
        "return show(cjson.decode('[1e5, 1e-5, 1e, 1e+, 12.5E-3, 0.000001, 123456789012345678901234567890]'))",
        "return show(cjson.decode('1e400'))",
        "return show(cjson.decode('01'))",
        "return show(cjson.decode('NaN'))",
        "return show(cjson.decode('-Infinity'))",
        "return show(cjson.decode('inf'))",
        "return show(cjson.decode('+1'))",
        "return show(cjson.decode('true'))",
        "return show(cjson.decode('null'))",
        "return show(cjson.decode('[]'), cjson.decode('{}'))",
        "return show(cjson.decode('[[],[[]]]'))",
        "return show(cjson.decode('{\"a\":1,\"a\":2}'))",
        "return show(cjson.decode('[1]' .. string.char(0) .. 'garbage'))",
        "return show(cjson.decode('\"a' .. string.char(1, 200) .. 'b\"'))",
        "return show(cjson.decode(123))",
        "return show(cjson.decode(''))",
        "return show(cjson.decode('   '))",
        "return show(cjson.decode('[1,2'))",
        "return show(cjson.decode('{\"a\" 1}'))",
        "return show(cjson.decode('{1:2}'))",
        "return show(cjson.decode('{\"a\":1,}'))",
        "return show(cjson.decode('{\"a\":1 \"b\"}'))",
        "return show(cjson.decode('[1,]'))",
        "return show(cjson.decode('[1 2]'))",
        "return show(cjson.decode(']'))",
        "return show(cjson.decode('\"abc'))",
        "return show(cjson.decode('\"a\\\\x\"'))",
        "return show(cjson.decode('\"\\\\u12\"'))",
        "return show(cjson.decode('\"\\\\udc00\"'))",
        "return show(cjson.decode('\"\\\\ud800x\"'))",
        "return show(cjson.decode('\"\\\\ud800\\\\u0041\"'))",
        "return show(cjson.decode('nul'))",
        "return show(cjson.decode('truex'))",
        "return show(cjson.decode('1 2'))",
        "return show(cjson.decode('-'))",
        "return show(cjson.decode('- 1'))",
        "return show(cjson.decode('@'))",
        "return show(cjson.decode(string.char(0) .. 'a'))",
        "return show(cjson.decode('a' .. string.char(0)))",
        "return show(cjson.decode({}))",
        "return show(cjson.decode())",
        "return show(cjson.decode('1', '2'))",
        "return show(cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001)))",
        "return tostring(#cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000)))",
        "return show(cjson.decode(string.rep('{\"a\":', 1001) .. '1' .. string.rep('}', 1001)))",
        "local j = cjson.new() j.decode_max_depth(100000) \
         return show(j.decode(string.rep('[', 9000) .. string.rep(']', 9000)))",
        "local j = cjson.new() j.decode_max_depth(100000) \
         return show(j.decode(string.rep('{\"a\":', 5000) .. '1' .. string.rep('}', 5000)))",
        "local j = cjson.new() j.decode_max_depth(2) return show(j.decode('[[1]]'), pcall(j.decode, '[[[1]]]'))",
        "local j = cjson.new() j.decode_invalid_numbers(false) return show(j.decode('[1, -2.5e3]'))",
        "local j = cjson.new() j.decode_invalid_numbers(false) return show(j.decode('01'))",
        "local j = cjson.new() j.decode_invalid_numbers(false) return show(j.decode('0x10'))",
        "local j = cjson.new() j.decode_invalid_numbers(false) return show(j.decode('NaN'))",
        "local j = cjson.new() j.decode_invalid_numbers(false) return show(j.decode('-inf'))",
        "local j = cjson.new() j.decode_invalid_numbers(false) return show(j.decode('+1'))",
        "local j = cjson.new() return show(j.decode_invalid_numbers(), j.decode_invalid_numbers('off'))",
        "return show(pcall(cjson.decode, 'x'))",
        "return show(pcall(cjson.decode, '[1]'))",
        "return show(cjson.decode(cjson.encode({a = {1, 2, {b = 'x'}}, c = 0.5})))",
    ]);
}

#[test]
fn cjson_tables_are_read_only_as_on_redis() {
    compare_all(&[
        "cjson.encode = nil return 'changed'",
        "cjson.x = 1 return 'changed'",
        "cjson.null = 1 return 'changed'",
        "local ok, err = pcall(function() cjson.decode = tostring end) return show(ok, err)",
        "return show(cjson._NAME, cjson._VERSION, type(cjson.null), tostring(cjson.null))",
        "return show(cjson.null == cjson.decode('null'), #cjson)",
        "local j = cjson.new() j.x = 1 return show(j.x, type(j.new), j._VERSION)",
        "return show(type(cjson.encode), type(cjson.new), type(cjson.encode_keep_buffer))",
    ]);
}

#[test]
fn cmsgpack_packs_as_redis_does() {
    compare_all(&[
        "return hex(cmsgpack.pack(0, 1, 127, 128, 255, 256, 65535, 65536))",
        "return hex(cmsgpack.pack(2^32 - 1, 2^32, 2^53, 2^63 - 1024, 2^63, 2^64))",
        "return hex(cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769))",
        "return hex(cmsgpack.pack(-2^31, -2^31 - 1, -2^53, -2^63, -2^63 - 4096))",
        "return hex(cmsgpack.pack(0.5, 0.1, -1.5, 1e300, 1e-300, 3.4028234663852886e38))",
        "return hex(cmsgpack.pack(1/0, -1/0, -0.0, 2^100))",
        "return string.sub(hex(cmsgpack.pack(0/0)), 1, 2)",
        "return hex(cmsgpack.pack(''))",
        "return hex(cmsgpack.pack(string.rep('a', 31), string.rep('b', 32)))",
        "return hex(string.sub(cmsgpack.pack(string.rep('c', 255)), 1, 4))",
        "return hex(string.sub(cmsgpack.pack(string.rep('c', 256)), 1, 4))",
        "return hex(string.sub(cmsgpack.pack(string.rep('c', 65535)), 1, 4))",
        "return hex(string.sub(cmsgpack.pack(string.rep('c', 65536)), 1, 6))",
        "return hex(cmsgpack.pack(true, false, nil))",
        "return hex(cmsgpack.pack({}))",
        "return hex(cmsgpack.pack({1, 2, 3}))",
        "return hex(cmsgpack.pack({1, nil, 3}))",
        "return hex(cmsgpack.pack({a = 1}))",
        "return hex(cmsgpack.pack({a = 1, b = {c = 'd'}, [1] = 2}))",
        "return hex(cmsgpack.pack({[1] = 1, [2] = 2, [4] = 4}))",
        "return hex(cmsgpack.pack({[1.5] = 1, [0] = 2, [-1] = 3}))",
        "return hex(cmsgpack.pack({[2^31] = 1}))",
        "return hex(cmsgpack.pack({[true] = false}))",
        "return hex(cmsgpack.pack(cjson.null, tostring, coroutine.create(function() end)))",
        "local t = {} for i = 1, 16 do t[i] = i end return hex(cmsgpack.pack(t))",
        "local t = {} for i = 1, 70000 do t[i] = 0 end return hex(string.sub(cmsgpack.pack(t), 1, 6))",
        "local t = {} for i = 1, 16 do t['k' .. i] = i end return hex(cmsgpack.pack(t))",
        "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return hex(cmsgpack.pack(t))",
        "local t = {} t[1] = t return hex(cmsgpack.pack(t))",
        "local t = setmetatable({1, 2}, {__index = function(_, k) return k * 10 end}) \
         return hex(cmsgpack.pack(t))",
        "return hex(cmsgpack.pack(1, 'two', {3}))",
        "return hex(cmsgpack.pack())",
        "return hex(cmsgpack.pack(unpack((function() local t = {} for i = 1, 4001 do t[i] = i end return t end)())))",
        "return tostring(#cmsgpack.pack(unpack((function() local t = {} for i = 1, 4000 do t[i] = i end return t end)())))",
        "return show(cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION)",
        "cmsgpack.pack = nil return 'changed'",
    ]);
}

#[test]
fn cmsgpack_unpacks_as_redis_does() {
    compare_all(&[
        "return show(cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, 2}, {x = 1}, true, 0.5)))",
        "return show(cmsgpack.unpack(''))",
        "return show(cmsgpack.unpack(string.char(0xc0, 0xc2, 0xc3)))",
        "return show(cmsgpack.unpack(string.char(0xcc, 0xff, 0xd0, 0x80, 0xcd, 0xff, 0xff, 0xd1, 0x80, 0x01)))",
        "return show(cmsgpack.unpack(string.char(0xce, 0xff, 0xff, 0xff, 0xff, 0xd2, 0x80, 0, 0, 1)))",
        "return show(cmsgpack.unpack(string.char(0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)))",
        "return show(cmsgpack.unpack(string.char(0xcf, 0, 0x20, 0, 0, 0, 0, 0, 1)))",
        "return show(cmsgpack.unpack(string.char(0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0)))",
        "return show(cmsgpack.unpack(string.char(0xca, 0x3f, 0xc0, 0, 0, 0xcb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a)))",
        "return show(cmsgpack.unpack(string.char(0xd9, 2, 65, 66, 0xda, 0, 1, 67, 0xdb, 0, 0, 0, 1, 68)))",
        "return show(cmsgpack.unpack(string.char(0xdc, 0, 2, 1, 2, 0xde, 0, 1, 1, 2)))",
        "return show(cmsgpack.unpack(string.char(0xdd, 0, 0, 0, 1, 7, 0xdf, 0, 0, 0, 1, 0xa1, 65, 0xc0)))",
        "return show(cmsgpack.unpack(string.char(0x93, 1, 0xc0, 3)))",
        "return show(cmsgpack.unpack(string.char(0x82, 0xa1, 97, 1, 0xa1, 97, 0xc0)))",
        "return show(cmsgpack.unpack(string.char(0x81, 0x91, 1, 2)))",
        "return show(cmsgpack.unpack(string.char(0xe0, 0xff, 0x7f)))",
        "return show(cmsgpack.unpack(string.char(0xc1)))",
        "return show(cmsgpack.unpack(string.char(0xc4, 1, 65)))",
        "return show(cmsgpack.unpack(string.char(0xd4, 1, 65)))",
        "return show(cmsgpack.unpack(string.char(0xcc)))",
        "return show(cmsgpack.unpack(string.char(0x92, 1)))",
        "return show(cmsgpack.unpack(string.char(0xa5, 65)))",
        "return show(cmsgpack.unpack(string.char(0xdb, 0xff, 0xff, 0xff, 0xff)))",
        "return show(cmsgpack.unpack(string.char(0xdd, 0xff, 0xff, 0xff, 0xff, 1)))",
        "return show(cmsgpack.unpack(string.char(0x81, 0xc0, 1)))",
        "return show(cmsgpack.unpack(string.char(0x81, 0xcb, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0, 1)))",
        "return show(cmsgpack.unpack(string.char(0x81, 1, 0xc0)))",
        "return show(cmsgpack.unpack(123))",
        "return show(cmsgpack.unpack({}))",
        "return show(cmsgpack.unpack())",
        "return show(cmsgpack.unpack(string.char(1, 2), 'ignored', 3))",
        "return tostring(select('#', cmsgpack.unpack(string.rep(string.char(1), 7998))))",
        "return tostring(select('#', cmsgpack.unpack(string.rep(string.char(1), 8000))))",
        "return tostring(select('#', cmsgpack.unpack(string.rep(string.char(1), 7900), 'x')))",
        "return tostring(select('#', cmsgpack.unpack(string.rep(string.char(1), 7999), 'x')))",
        "return show(cmsgpack.unpack(string.rep(string.char(0x91), 5000) .. string.char(1)))",
        "return show(#cmsgpack.unpack(string.rep(string.char(0x91), 3000) .. string.char(1)))",
        "return show(cmsgpack.unpack(string.rep(string.char(0x81, 1), 5000) .. string.char(1)))",
        "return show(cmsgpack.unpack(string.rep(string.char(0x81), 4000) .. string.char(1)))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_one(s))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_one(s, 1))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_one(s, 2))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_one(s, 3))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_one(s, 4))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_one(s, -1))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_one(s, 1.9))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_one(s, 'x'))",
        "return show(cmsgpack.unpack_one(''))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_limit(s, 2))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_limit(s, 2, 1))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_limit(s, 0))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_limit(s, 0, 1))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_limit(s, 9))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_limit(s, -1))",
        "local s = cmsgpack.pack(1, 2, 3) return show(cmsgpack.unpack_limit(s))",
        "return show(cmsgpack.unpack_limit(string.char(0x92, 1), 1))",
        "return show(pcall(cmsgpack.unpack, string.char(0xc1)))",
    ]);
}

#[test]
fn bit_computes_as_redis_does() {
    compare_all(&[
        "return show(bit.tobit(0xffffffff), bit.tobit(2^32 + 1), bit.tobit(-1), bit.tobit(2^31))",
        "return show(bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-2.5), bit.tobit(0.5), bit.tobit(-0.5))",
        "return show(bit.tobit(2^52), bit.tobit(2^52 + 3), bit.tobit(2^53 + 2), bit.tobit(2^60 + 7), bit.tobit(-2^62))",
        "return show(bit.tobit(1/0), bit.tobit(-1/0), bit.tobit(0/0), bit.tobit(1e300))",
        "return show(bit.tobit('10'), bit.tobit('0x10'), bit.tobit(' 7 '), bit.tobit('1e3'))",
        "return show(bit.tohex(1), bit.tohex(-1), bit.tohex(255, 2), bit.tohex(255, -2))",
        "return show(bit.tohex(0x12345678, 4), bit.tohex(1, 0), bit.tohex(1, 10), bit.tohex(1, -10))",
        "return show(bit.tohex(0xabcdef, -8), bit.tohex(2^32 + 10), bit.tohex(-1, 3))",
        "return show(bit.bnot(0), bit.bnot(-1), bit.bnot(0x7fffffff))",
        "return show(bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4), bit.bxor(5, 3), bit.band(1))",
        "return show(bit.band(-1, 2^32 + 5), bit.bor(), 1)",
        "return show(bit.bxor(1, 2, 4, 8, 16, 32))",
        "return show(bit.lshift(1, 31), bit.lshift(1, 32), bit.lshift(1, 33), bit.lshift(3, -1))",
        "return show(bit.rshift(-1, 1), bit.rshift(0x80000000, 31), bit.rshift(-1, 0), bit.rshift(256, 36))",
        "return show(bit.arshift(-256, 4), bit.arshift(256, 4), bit.arshift(-1, 31), bit.arshift(0x80000000, 1))",
        "return show(bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.rol(1, -1), bit.ror(1, 0), bit.rol(-1, 7))",
        "return show(bit.bswap(0x12345678), bit.bswap(-1), bit.bswap(0xff))",
        "return show(bit.tobit())",
        "return show(bit.tobit('x'))",
        "return show(bit.tobit(nil))",
        "return show(bit.band(1, {}))",
        "return show(bit.band({}, 1))",
        "return show(bit.bor(1, 'x', {}))",
        "return show(bit.lshift(1))",
        "return show(bit.tohex('z'))",
        "return show(bit.tohex(1, 'z'))",
        "return show(bit:tobit())",
        "return show(pcall(bit.bnot))",
        "bit.band = nil return 'changed'",
        "return show(type(bit.tobit), type(bit.bswap))",
    ]);
}

#[test]
fn struct_packs_and_unpacks_as_redis_does() {
    compare_all(&[
        "return hex(struct.pack('>i', 1) .. struct.pack('<i', 1) .. struct.pack('i', -2))",
        "return hex(struct.pack('bBhHlLT', -1, 255, -2, 65535, -3, 2^40, 7))",
        "return hex(struct.pack('i8', -5) .. struct.pack('I3', 0x123456) .. struct.pack('>I3', 0x123456))",
        "return hex(struct.pack('i16', -1) .. struct.pack('>i16', 1) .. struct.pack('i0', 5))",
        "return hex(struct.pack('b', 200) .. struct.pack('B', -1) .. struct.pack('h', 70000))",
        "return hex(struct.pack('>I2', 65535) .. struct.pack('B', 1.9) .. struct.pack('b', -1.9))",
        "return hex(struct.pack('i', 2^31) .. struct.pack('I', 2^32) .. struct.pack('i', 2^31 - 1))",
        "return hex(struct.pack('l', -2^63) .. struct.pack('L', 2^63) .. struct.pack('L', 2^64))",
        "return hex(struct.pack('l', 0/0) .. struct.pack('l', -1/0) .. struct.pack('L', 1/0))",
        "return hex(struct.pack('f', 0.1) .. struct.pack('>f', 0.1) .. struct.pack('d', math.pi))",
        "return hex(struct.pack('>d', -0.0) .. struct.pack('f', 1e300) .. struct.pack('<d', 1/0))",
        "return hex(struct.pack('c5', 'abcdef') .. struct.pack('c0', 'abc') .. struct.pack('c', 'q'))",
        "return hex(struct.pack('s', 'abc') .. struct.pack('s', '') .. struct.pack('x'))",
        "return hex(struct.pack('xxbx', 1))",
        "return hex(struct.pack('!4 b i', 1, 2))",
        "return hex(struct.pack('!b i', 1, 2))",
        "return hex(struct.pack('! b d', 1, 2))",
        "return hex(struct.pack('!2 b i', 1, 2))",
        "return hex(struct.pack('!8 bhid', 1, 2, 3, 4))",
        "return hex(struct.pack('>!4 b i b i', 1, 2, 3, 4))",
        "return hex(struct.pack('!4 b c3 i', 1, 'abc', 2))",
        "return hex(struct.pack('!4 b i3 b', 1, 2, 3))",
        "return hex(struct.pack('!4 b s i', 1, 'ab', 2))",
        "return hex(struct.pack('i', '12'))",
        "return hex(struct.pack('c', 7))",
        "return hex(struct.pack(12, 1))",
        "return hex(struct.pack('b' .. string.char(0) .. 'z', 1))",
        "return hex(struct.pack(''))",
        "return hex(struct.pack('  '))",
        "return hex(struct.pack('z'))",
        "return hex(struct.pack('b3', 1))",
        "return hex(struct.pack('='))",
        "return hex(struct.pack('i33', 1))",
        "return hex(struct.pack('i99999999999', 1))",
        "return hex(struct.pack('!3'))",
        "return hex(struct.pack('!0'))",
        "return hex(struct.pack('i'))",
        "return hex(struct.pack('bi', 1))",
        "return hex(struct.pack('i', 'x'))",
        "return hex(struct.pack('c5', 'ab'))",
        "return hex(struct.pack('bc5', 1, 'ab'))",
        "return hex(struct.pack('s', {}))",
        "return hex(struct.pack())",
        "return hex(struct.pack({}))",
        "return show(struct.unpack('>i', string.char(0, 0, 0, 1)))",
        "return show(struct.unpack('<h', string.char(255, 255)), struct.unpack('H', string.char(255, 255)))",
        "return show(struct.unpack('i3', string.char(1, 2, 0x80)), struct.unpack('I3', string.char(1, 2, 0x80)))",
        "return show(struct.unpack('>l', string.rep(string.char(255), 8)), struct.unpack('L', string.rep(string.char(255), 8)))",
        "return show(struct.unpack('i16', string.rep(string.char(255), 16)))",
        "return show(struct.unpack('I9', string.char(1, 2, 3, 4, 5, 6, 7, 8, 9)))",
        "return show(struct.unpack('i9', string.char(0, 0, 0, 0, 0, 0, 0, 0x80, 9)))",
        "return show(struct.unpack('>i9', string.char(0x80, 0, 0, 0, 0, 0, 0, 0, 9)))",
        "return show(struct.unpack('i0', 'abc'))",
        "return show(struct.unpack('bc0', string.char(2) .. 'abcd'))",
        "return show(struct.unpack('c1c0', '3abcd'))",
        "return show(struct.unpack('c2c0', 'xxabcd'))",
        "return show(struct.unpack('bc0', string.char(9) .. 'abcd'))",
        "return show(struct.unpack('bc0', string.char(255) .. 'abcd'))",
        "return show(struct.unpack('c0', 'abc'))",
        "return show(struct.unpack('xc0', 'abc'))",
        "return show(struct.unpack('s', 'ab' .. string.char(0) .. 'cd'))",
        "return show(struct.unpack('ss', 'ab' .. string.char(0) .. string.char(0)))",
        "return show(struct.unpack('s', 'ab'))",
        "return show(struct.unpack('i', 'ab'))",
        "return show(struct.unpack('i', 'abcdabcd', 5))",
        "return show(struct.unpack('i', 'abcdabcd', 6))",
        "return show(struct.unpack('i', 'abcd', 0))",
        "return show(struct.unpack('i', 'abcd', -1))",
        "return show(struct.unpack('', 'abcd', -1))",
        "return show(struct.unpack('', 'abcd', 3.7))",
        "return show(struct.unpack('b', 'abcd', 'x'))",
        "return show(struct.unpack('f', struct.pack('f', 0.1)), struct.unpack('>d', struct.pack('>d', 1/3)))",
        "return show(struct.unpack('!4 b i', struct.pack('!4 b i', 7, -9)))",
        "return show(struct.unpack('!4 b i', string.char(1, 0, 0, 0)))",
        "return show(struct.unpack('>!8 b x d', struct.pack('>!8 b x d', 1, 2.5)))",
        "return show(struct.unpack('c3 c3', 'abcdef'))",
        "return show(struct.unpack('bz', 'ab'))",
        "return show(struct.unpack('b#', 'ab'))",
        "return show(struct.unpack('i'))",
        "return show(struct.unpack('i', {}))",
        "return show(struct.unpack(nil, 'x'))",
        "return tostring(select('#', struct.unpack(string.rep('b', 7900), string.rep('a', 8000))))",
        "return tostring(select('#', struct.unpack(string.rep('b', 7998), string.rep('a', 8000))))",
        "return show(struct.size('i'), struct.size('!4 bi'), struct.size('c3'), struct.size(''))",
        "return show(struct.size('>!8 b d'), struct.size('bhilfdx'), struct.size('i16 i0'))",
        "return show(struct.size('z'), struct.size('b3'))",
        "return show(struct.size('s'))",
        "return show(struct.size('c0'))",
        "return show(struct.size('#'))",
        "return show(struct.size('!5'))",
        "return show(struct.size())",
        "return show(struct:size())",
        "return show(pcall(struct.pack, 'z'))",
        "struct.pack = nil return 'changed'",
    ]);
}

/// A Lua value drawn for the round-trip properties, rendered as Lua source.
fn lua_value() -> impl Strategy<Value = String> {
    let string = proptest::collection::vec(any::<u8>(), 0..12).prop_map(|bytes| {
        let escaped: String = bytes.iter().map(|b| format!("\\{b}")).collect();
        format!("'{escaped}'")
    });
    let leaf = prop_oneof![
        Just("true".to_owned()),
        Just("false".to_owned()),
        (-70_000i64..70_000).prop_map(|n| format!("({n})")),
        any::<i64>().prop_map(|n| format!("({n})")),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(|x| format!("({x:e})")),
        (-1000i32..1000, 1i32..64).prop_map(|(n, d)| format!("({n}/{d})")),
        string.clone(),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        let key = prop_oneof![
            string.clone(),
            (1i64..12).prop_map(|n| format!("{n}")),
            (-3i64..3).prop_map(|n| format!("{n}")),
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6)
                .prop_map(|items| format!("{{{}}}", items.join(", "))),
            proptest::collection::vec((key, inner), 0..6).prop_map(|entries| {
                let fields: Vec<String> = entries
                    .iter()
                    .map(|(k, v)| format!("[{k}] = {v}"))
                    .collect();
                format!("{{{}}}", fields.join(", "))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Packing any value, and packing what unpacking gives back, yields Redis's bytes.
    #[test]
    fn cmsgpack_round_trips_as_on_redis(value in lua_value()) {
        let body = format!(
            "local p = cmsgpack.pack({value}) \
             return hex(p) .. ' ' .. hex(cmsgpack.pack(cmsgpack.unpack(p))) .. ' ' .. \
             show(cmsgpack.unpack(p))"
        );
        let expected = on_redis(&mut oracle(), &body);
        prop_assert_eq!(on_fake(&fake_lua(), &body), expected);
    }

    /// Encoding any value gives Redis's text or Redis's error, and so does encoding it again
    /// after a decode.
    #[test]
    fn cjson_round_trips_as_on_redis(value in lua_value()) {
        let body = format!(
            "local ok, j = pcall(cjson.encode, {value}) if not ok then return 'error: ' .. j end \
             return j .. ' ' .. cjson.encode(cjson.decode(j)) .. ' ' .. show(cjson.decode(j))"
        );
        let expected = on_redis(&mut oracle(), &body);
        prop_assert_eq!(on_fake(&fake_lua(), &body), expected);
    }
}

/// `bytes` as a Lua string literal.
fn lua_literal(bytes: &[u8]) -> String {
    let escaped: String = bytes.iter().map(|b| format!("\\{b}")).collect();
    format!("'{escaped}'")
}

/// Short texts over the bytes JSON's tokenizer cares about, with an occasional other byte.
fn json_like_text() -> impl Strategy<Value = Vec<u8>> {
    let alphabet = b"[]{}\":, 0123456789-+.eExXabfilnrstuINy\\/\t\n";
    let byte = prop_oneof![
        9 => proptest::sample::select(alphabet.to_vec()),
        1 => any::<u8>(),
    ];
    proptest::collection::vec(byte, 0..24)
}

/// Short byte strings that lean on msgpack's type bytes.
fn msgpack_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        3 => 0xc0u8..=0xdf,
        2 => 0x80u8..=0x9f,
        2 => 0u8..=3,
        1 => 0xa0u8..=0xa3,
        1 => any::<u8>(),
    ];
    proptest::collection::vec(byte, 0..24)
}

/// Short `struct` formats over its options, counts and controls.
fn struct_format() -> impl Strategy<Value = Vec<u8>> {
    let alphabet = b"<>! bBhHlLTiIcsfdx0123489z";
    proptest::collection::vec(proptest::sample::select(alphabet.to_vec()), 0..8)
}

/// Doubles of every kind `%.14g` treats differently: integers, tiny and huge magnitudes,
/// round decimals, and any bit pattern.
fn any_number() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |x| x.is_finite()),
        (-1_000_000i64..1_000_000).prop_map(|n| n as f64),
        (-99_999i64..99_999, -30i32..30).prop_map(|(n, e)| n as f64 * 10f64.powi(e)),
        any::<i64>().prop_map(|n| n as f64),
        (1u32..16, any::<bool>()).prop_map(|(d, up)| {
            let x = 10f64.powi(d as i32);
            if up { x - 0.5 } else { x + 0.5 }
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any text decodes to Redis's value, or fails with Redis's message.
    #[test]
    fn cjson_decodes_any_text_as_redis_does(text in json_like_text()) {
        let body = format!("return show(pcall(cjson.decode, {}))", lua_literal(&text));
        let expected = on_redis(&mut oracle(), &body);
        prop_assert_eq!(on_fake(&fake_lua(), &body), expected);
    }

    /// Any number prints as Redis prints it, at any precision.
    #[test]
    fn cjson_prints_any_number_as_redis_does(
        numbers in proptest::collection::vec(any_number(), 1..24),
        precision in 1i64..=14,
    ) {
        let list: Vec<String> = numbers.iter().map(|x| format!("{x:e}")).collect();
        let body = format!(
            "local j = cjson.new() j.encode_number_precision({precision}) \
             return cjson.encode({{{list}}}) .. ' ' .. j.encode({{{list}}})",
            list = list.join(", ")
        );
        let expected = on_redis(&mut oracle(), &body);
        prop_assert_eq!(on_fake(&fake_lua(), &body), expected);
    }

    /// Any bytes unpack to Redis's values, or fail with Redis's message.
    #[test]
    fn cmsgpack_unpacks_any_bytes_as_redis_does(bytes in msgpack_like_bytes()) {
        let blob = lua_literal(&bytes);
        let body = format!(
            "return show(pcall(cmsgpack.unpack, {blob})) .. ' | ' .. \
             show(pcall(cmsgpack.unpack_limit, {blob}, 2, 1))"
        );
        let expected = on_redis(&mut oracle(), &body);
        prop_assert_eq!(on_fake(&fake_lua(), &body), expected);
    }

    /// Any format packs, unpacks and sizes as on Redis, errors included.
    #[test]
    fn struct_handles_any_format_as_redis_does(
        format in struct_format(),
        data in proptest::collection::vec(any::<u8>(), 0..40),
    ) {
        let format = lua_literal(&format);
        let data = lua_literal(&data);
        let body = format!(
            "return show(pcall(struct.pack, {format}, 1, -2, 300.7, 'abc', 2.5, 'xy', 7, 70000)) \
             .. ' | ' .. show(pcall(struct.unpack, {format}, {data})) \
             .. ' | ' .. show(pcall(struct.size, {format}))"
        );
        let expected = on_redis(&mut oracle(), &body);
        prop_assert_eq!(on_fake(&fake_lua(), &body), expected);
    }

    /// Every operation gives Redis's word for any pair of numbers.
    #[test]
    fn bit_computes_any_numbers_as_redis_does(
        x in any_number(),
        y in any_number(),
        width in -12i32..12,
    ) {
        let body = format!(
            "local x, y = {x:e}, {y:e} \
             return show(bit.tobit(x), bit.tohex(x), bit.tohex(x, {width}), bit.bnot(x), \
             bit.band(x, y), bit.bor(x, y), bit.bxor(x, y), bit.lshift(x, y), bit.rshift(x, y), \
             bit.arshift(x, y), bit.rol(x, y), bit.ror(x, y), bit.bswap(x))"
        );
        let expected = on_redis(&mut oracle(), &body);
        prop_assert_eq!(on_fake(&fake_lua(), &body), expected);
    }
}
