//! The conversions at a script's edges, both ways, as Redis 7.0 makes them.
//!
//! A command's reply becomes a Lua value for `redis.call`: in RESP2 (the default) a nil bulk or
//! array is `false`, a status is `{ok=}`, an error `{err=}`; after `redis.setresp(3)` a null is
//! `nil` and maps, sets, doubles, booleans, big numbers and verbatim strings keep their own
//! shapes. That direction runs for every command a script calls, so it pushes the reply straight
//! onto the Lua stack, beside `redis.call` itself (`raw.rs`). A script's return value becomes the
//! reply here ([`lua_to_reply`]): numbers are truncated to integers, a table is an array cut at
//! its first nil unless it is one of the single-field tables (`err`, `ok`, `double`,
//! `big_number`, `verbatim_string`, `map`, `set`), and booleans follow the script's protocol.

use crate::resp::Frame;
use bytes::Bytes;
use mlua::{Table, Value};
use std::borrow::Cow;

/// How deep a returned table may nest before the reply says so instead (Redis stops where Lua's
/// stack runs out; a table that contains itself must end somewhere).
const MAX_DEPTH: usize = 200;

/// A script's return value as the reply, for a script that last spoke `resp`.
pub(super) fn lua_to_reply(value: &Value, resp: u8) -> Frame {
    to_reply(value, resp, 0)
}

/// A Lua number as Redis turns it into an integer reply, C's `(long long)` cast as x86-64 makes
/// it: toward zero, and the one value `i64::MIN` for NaN and for anything past 64 bits (Rust's
/// `as` would saturate instead, so `tonumber("9223372036854775808")` would come back positive).
fn c_long_long(n: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

fn to_reply(value: &Value, resp: u8, depth: usize) -> Frame {
    if depth > MAX_DEPTH {
        return Frame::error("ERR reached lua stack limit");
    }
    match value {
        Value::String(s) => Frame::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Boolean(b) => match (resp, b) {
            (2, true) => Frame::Integer(1),
            (2, false) => Frame::Null,
            (_, b) => Frame::Boolean(*b),
        },
        Value::Integer(n) => Frame::Integer(*n),
        Value::Number(n) => Frame::Integer(c_long_long(*n)),
        Value::Table(t) => table_to_reply(t, resp, depth),
        _ => Frame::Null,
    }
}

fn table_to_reply(t: &Table, resp: u8, depth: usize) -> Frame {
    let field = |name: &str| t.raw_get::<Value>(name).unwrap_or(Value::Nil);
    if let Value::String(e) = field("err") {
        return Frame::Error(Cow::Owned(e.to_string_lossy()));
    }
    if let Value::String(s) = field("ok") {
        return Frame::Simple(Cow::Owned(s.to_string_lossy()));
    }
    match field("double") {
        Value::Number(d) => return Frame::Double(d),
        Value::Integer(d) => return Frame::Double(d as f64),
        _ => {}
    }
    if let Value::String(s) = field("big_number") {
        return Frame::BigNumber(Cow::Owned(s.to_string_lossy().replace(['\r', '\n'], " ")));
    }
    if let Value::Table(v) = field("verbatim_string")
        && let (Ok(Value::String(format)), Ok(Value::String(text))) =
            (v.raw_get::<Value>("format"), v.raw_get::<Value>("string"))
    {
        let mut f = [b' '; 3];
        for (slot, b) in f.iter_mut().zip(format.as_bytes().iter()) {
            *slot = *b;
        }
        return Frame::Verbatim {
            format: f,
            text: Bytes::copy_from_slice(&text.as_bytes()),
        };
    }
    if let Value::Table(m) = field("map") {
        let pairs = m
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, v)| (to_reply(&k, resp, depth + 1), to_reply(&v, resp, depth + 1)))
            .collect();
        return Frame::Map(pairs);
    }
    if let Value::Table(s) = field("set") {
        let items = s
            .pairs::<Value, Value>()
            .filter_map(Result::ok)
            .map(|(k, _)| to_reply(&k, resp, depth + 1))
            .collect();
        return Frame::Set(items);
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(to_reply(&v, resp, depth + 1)),
        }
    }
    Frame::Array(items)
}
