//! The conversions at a script's edges, both ways, as Redis 7.0 makes them.
//!
//! A command's reply becomes a Lua value for `redis.call` ([`reply_to_lua`]): in RESP2 (the
//! default) a nil bulk or array is `false`, a status is `{ok=}`, an error `{err=}`; after
//! `redis.setresp(3)` a null is `nil` and maps, sets, doubles, booleans, big numbers and verbatim
//! strings keep their own shapes. A script's return value becomes the reply ([`lua_to_reply`]):
//! numbers are truncated to integers, a table is an array cut at its first nil unless it is one of
//! the single-field tables (`err`, `ok`, `double`, `big_number`, `verbatim_string`, `map`, `set`),
//! and booleans follow the script's protocol.

use crate::resp::Frame;
use bytes::Bytes;
use mlua::{Lua, Table, Value};
use std::borrow::Cow;

/// How deep a returned table may nest before the reply says so instead (Redis stops where Lua's
/// stack runs out; a table that contains itself must end somewhere).
const MAX_DEPTH: usize = 200;

/// A command's reply, already in the shapes of `resp` (2 or 3), as `redis.call` returns it to a
/// script speaking `resp`. An error reply is the `{err=}` table.
pub(super) fn reply_to_lua(lua: &Lua, frame: Frame, resp: u8) -> mlua::Result<Value> {
    let null = if resp == 2 {
        Value::Boolean(false)
    } else {
        Value::Nil
    };
    frame_to_lua(lua, frame, null)
}

/// `frame` as a Lua value, `null` standing for its nulls.
fn frame_to_lua(lua: &Lua, frame: Frame, null: Value) -> mlua::Result<Value> {
    let convert = |f: Frame| frame_to_lua(lua, f, null.clone());
    Ok(match frame {
        Frame::Simple(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", s.as_ref())?;
            Value::Table(t)
        }
        Frame::Error(e) => {
            let t = super::env::error_table(lua, super::env::error_text_of(&e))?;
            t.raw_set("ignore_error_stats_update", true)?;
            Value::Table(t)
        }
        // An error echoing a client's non-UTF-8 bytes: the script sees them as they came.
        Frame::ErrorBytes(e) => {
            let t = super::env::error_table(lua, super::env::error_bytes_of(&e))?;
            t.raw_set("ignore_error_stats_update", true)?;
            Value::Table(t)
        }
        Frame::Integer(n) => Value::Number(n as f64),
        Frame::Bulk(b) => Value::String(lua.create_string(&b)?),
        Frame::Null | Frame::NullArray => null,
        Frame::Array(items) | Frame::Push(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.into_iter().enumerate() {
                t.raw_set(i + 1, convert(item)?)?;
            }
            Value::Table(t)
        }
        Frame::Map(pairs) => {
            let inner = lua.create_table()?;
            for (k, v) in pairs {
                inner.raw_set(convert(k)?, convert(v)?)?;
            }
            single(lua, "map", inner)?
        }
        Frame::Set(items) => {
            let inner = lua.create_table()?;
            for item in items {
                inner.raw_set(convert(item)?, true)?;
            }
            single(lua, "set", inner)?
        }
        Frame::Double(d) => single(lua, "double", d)?,
        // Redis's script client reads the text back with `strtod`.
        Frame::DoubleText(text) => single(lua, "double", text.parse::<f64>().unwrap_or(f64::NAN))?,
        Frame::Boolean(b) => Value::Boolean(b),
        Frame::BigNumber(n) => single(lua, "big_number", n.as_ref())?,
        Frame::Verbatim { format, text } => {
            let inner = lua.create_table()?;
            inner.raw_set("format", lua.create_string(format)?)?;
            inner.raw_set("string", lua.create_string(&text)?)?;
            single(lua, "verbatim_string", inner)?
        }
    })
}

/// `{name = value}`.
fn single(lua: &Lua, name: &str, value: impl mlua::IntoLua) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(name, value)?;
    Ok(Value::Table(t))
}

/// A script's return value as the reply, for a script that last spoke `resp`.
pub(super) fn lua_to_reply(value: &Value, resp: u8) -> Frame {
    to_reply(value, resp, 0)
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
        Value::Number(n) => Frame::Integer(*n as i64),
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
