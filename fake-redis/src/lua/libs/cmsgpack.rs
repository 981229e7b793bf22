//! `cmsgpack`: lua-cmsgpack 0.4.0, the MessagePack codec Redis gives scripts.
//!
//! Its choices are not msgpack's only possible ones, and stored blobs depend on them:
//!
//! - A number that a 64-bit integer holds exactly is the smallest integer encoding that fits;
//!   any other number is a 32-bit float when converting to `float` and back loses nothing, and
//!   a 64-bit double otherwise (so `0.5` is `ca 3f000000`, `0.1` is `cb ...`).
//! - A table whose keys are exactly `1..n` is an array (the empty table too); anything else is a
//!   map, in `next` order. A table inside 16 others, functions, userdata and `cjson.null` encode as
//!   nil.
//! - Strings are `fixstr`/`str8`/`str16`/`str32`; there is no bin or ext type, and decoding one
//!   is "Bad data format in input.".
//! - A `uint64` above 2^63 decodes through a signed `lua_Integer`, so it comes back negative.
//!
//! Decoding keeps the Lua stack count Redis keeps, so a stream of too many values or a structure
//! nested too deep fails with Redis's "stack overflow (...)" text, and the decoder never recurses.

use mlua::{Lua, MultiValue, Table, Value};

use super::{C_STACK_SLOTS, arg_error, check_bytes, check_integer, opt_integer, raise};

/// Tables nested deeper than this encode as nil (`LUACMSGPACK_MAX_NESTING`).
const MAX_NESTING: usize = 16;

/// The `cmsgpack` table.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.set("pack", lua.create_function(pack)?)?;
    table.set("unpack", lua.create_function(unpack)?)?;
    table.set("unpack_one", lua.create_function(unpack_one)?)?;
    table.set("unpack_limit", lua.create_function(unpack_limit)?)?;
    table.set("_NAME", "cmsgpack")?;
    table.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    table.set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    table.set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(table)
}

/// `cmsgpack.pack(v1, v2, ...)`: the values' encodings, one after another.
fn pack(lua: &Lua, args: MultiValue) -> mlua::Result<mlua::LuaString> {
    if args.is_empty() {
        return Err(arg_error(lua, 0, "MessagePack pack needs input."));
    }
    if args.len() * 2 > C_STACK_SLOTS {
        return Err(arg_error(
            lua,
            0,
            "Too many arguments for MessagePack pack.",
        ));
    }
    let mut out = Vec::new();
    for value in args.iter() {
        encode(&mut out, value, 0)?;
    }
    lua.create_string(&out)
}

fn encode(out: &mut Vec<u8>, value: &Value, level: usize) -> mlua::Result<()> {
    match value {
        Value::String(text) => encode_bytes(out, &text.as_bytes()),
        Value::Boolean(flag) => out.push(if *flag { 0xc3 } else { 0xc2 }),
        Value::Integer(integer) => encode_integer(out, *integer),
        Value::Number(number) => encode_number(out, *number),
        Value::Table(table) if level < MAX_NESTING => encode_table(out, table, level)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_number(out: &mut Vec<u8>, number: f64) {
    let integer = super::truncate_to_integer(number);
    if number.is_finite() && integer as f64 == number {
        encode_integer(out, integer);
    } else if f64::from(number as f32) == number {
        out.push(0xca);
        out.extend_from_slice(&(number as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&number.to_be_bytes());
    }
}

fn encode_integer(out: &mut Vec<u8>, n: i64) {
    match n {
        0..=127 => out.push(n as u8),
        128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        0x1_0000_0000.. => {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
        -32..=-1 => out.push(n as i8 as u8),
        -128..=-33 => out.extend_from_slice(&[0xd0, n as i8 as u8]),
        -32768..=-129 => {
            out.push(0xd1);
            out.extend_from_slice(&(n as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.push(0xd2);
            out.extend_from_slice(&(n as i32).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

fn encode_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = bytes.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(bytes);
}

/// The array or map header: `fix` up to 15 entries, then 16 and 32 bits.
fn encode_header(out: &mut Vec<u8>, len: usize, fix: u8, wide16: u8) {
    if len <= 15 {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(wide16);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(wide16 + 1);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn encode_table(out: &mut Vec<u8>, table: &Table, level: usize) -> mlua::Result<()> {
    if is_array(table)? {
        let len = table.raw_len();
        encode_header(out, len, 0x90, 0xdc);
        for index in 1..=len {
            // Redis reads elements with `lua_gettable`, so `__index` applies.
            let element: Value = table.get(index as f64)?;
            encode(out, &element, level + 1)?;
        }
    } else {
        let mut len = 0;
        table.for_each(|_: Value, _: Value| {
            len += 1;
            Ok(())
        })?;
        encode_header(out, len, 0x80, 0xde);
        table.for_each(|key: Value, value: Value| {
            encode(out, &key, level + 1)?;
            encode(out, &value, level + 1)
        })?;
    }
    Ok(())
}

/// `table_is_an_array`: every key a positive number that a C `int` holds, and as many keys as
/// the largest one.
fn is_array(table: &Table) -> mlua::Result<bool> {
    let mut count: i64 = 0;
    let mut max: i64 = 0;
    for entry in table.pairs::<Value, Value>() {
        let (key, _) = entry?;
        let number = match key {
            Value::Number(number) => number,
            Value::Integer(integer) => integer as f64,
            _ => return Ok(false),
        };
        if number <= 0.0 || number.is_infinite() || number != f64::from(number as i32) {
            return Ok(false);
        }
        max = max.max(number as i64);
        count += 1;
    }
    Ok(max == count)
}

/// `cmsgpack.unpack(blob)`: every value in the blob.
fn unpack(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let blob = check_bytes(lua, &args, 1)?;
    // The arguments stay on the stack under the results.
    unpack_from(lua, &blob.as_bytes(), Request::All, args.len())
}

/// `cmsgpack.unpack_one(blob [, offset])`: the offset after one value (-1 at the end), the value.
fn unpack_one(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let offset = opt_integer(lua, &args, 2, 0)? as i32;
    let blob = check_bytes(lua, &args, 1)?;
    unpack_from(lua, &blob.as_bytes(), Request::Some { limit: 1, offset }, 1)
}

/// `cmsgpack.unpack_limit(blob, limit [, offset])`: the offset after at most `limit` values,
/// then the values.
fn unpack_limit(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let limit = check_integer(lua, &args, 2)? as i32;
    let offset = opt_integer(lua, &args, 3, 0)? as i32;
    let blob = check_bytes(lua, &args, 1)?;
    let request = if limit == 0 && offset == 0 {
        Request::All
    } else {
        Request::Some { limit, offset }
    };
    unpack_from(lua, &blob.as_bytes(), request, 1)
}

/// What `mp_unpack_full` was asked for; a zero limit and offset mean everything.
enum Request {
    All,
    Some { limit: i32, offset: i32 },
}

/// Why decoding stopped short.
enum DecodeError {
    /// The blob ended inside a value.
    MissingBytes,
    /// A type byte lua-cmsgpack does not decode.
    BadFormat,
    /// The Lua stack budget ran out; the text is the `luaL_checkstack` message.
    StackOverflow(&'static str),
    /// Lua refused a map key (nil or NaN); Lua's own text, without a position.
    BadKey(&'static str),
    Lua(mlua::Error),
}

impl From<mlua::Error> for DecodeError {
    fn from(error: mlua::Error) -> Self {
        DecodeError::Lua(error)
    }
}

fn unpack_from(
    lua: &Lua,
    blob: &[u8],
    request: Request,
    base_slots: usize,
) -> mlua::Result<MultiValue> {
    let (limit, offset) = match request {
        Request::All => (i32::MAX, 0),
        Request::Some { limit, offset } => {
            if offset < 0 || limit < 0 {
                return Err(raise(
                    lua,
                    format!(
                        "Invalid request to unpack with offset of {offset} and limit of {}.",
                        blob.len() as i32
                    ),
                ));
            }
            if offset as usize > blob.len() {
                return Err(raise(
                    lua,
                    format!(
                        "Start offset {offset} greater than input length {}.",
                        blob.len() as i32
                    ),
                ));
            }
            (limit, offset)
        }
    };
    let mut cursor = Cursor {
        bytes: blob,
        at: offset as usize,
    };
    let mut values = MultiValue::new();
    while cursor.left() > 0 && (values.len() as i64) < i64::from(limit) {
        match decode(lua, &mut cursor, base_slots + values.len()) {
            Ok(value) => values.push_back(value),
            Err(DecodeError::MissingBytes) => return Err(raise(lua, "Missing bytes in input.")),
            Err(DecodeError::BadFormat) => return Err(raise(lua, "Bad data format in input.")),
            Err(DecodeError::StackOverflow(context)) => {
                return Err(raise(lua, format!("stack overflow ({context})")));
            }
            Err(DecodeError::BadKey(text)) => return Err(mlua::Error::RuntimeError(text.into())),
            Err(DecodeError::Lua(error)) => return Err(error),
        }
    }
    if matches!(request, Request::Some { .. }) {
        if base_slots + values.len() + 1 > C_STACK_SLOTS {
            return Err(raise(lua, "stack overflow (in function mp_unpack_full)"));
        }
        let next = if cursor.left() == 0 {
            -1.0
        } else {
            cursor.at as f64
        };
        values.push_front(Value::Number(next));
    }
    Ok(values)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// The next `len` bytes, consumed.
    fn take(&mut self, len: usize) -> Result<&[u8], DecodeError> {
        if self.left() < len {
            return Err(DecodeError::MissingBytes);
        }
        let taken = &self.bytes[self.at..self.at + len];
        self.at += len;
        Ok(taken)
    }

    fn length(&mut self, width: usize) -> Result<usize, DecodeError> {
        Ok(self
            .take(width)?
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b)))
    }
}

/// A container being filled while the decoder reads its elements.
enum Open {
    Array {
        remaining: usize,
        next_index: f64,
    },
    /// `key_read`: the entry's key is decoded and waits for its value.
    Map {
        remaining: usize,
        key_read: bool,
    },
}

/// What one type byte starts.
enum Item {
    Done(Value),
    Array(usize),
    Map(usize),
}

const TOO_MANY_VALUES: &str =
    "too many return values at once; use unpack_one or unpack_limit instead.";

/// One top-level value; `slots` is the Lua stack already in use under it.
fn decode(lua: &Lua, cursor: &mut Cursor<'_>, mut slots: usize) -> Result<Value, DecodeError> {
    // The containers being filled and their pending keys, by depth, live in Lua tables: mlua's
    // handles share one Lua stack, which deep input would exhaust before Redis's limit applies.
    let tables = lua.create_table()?;
    let keys = lua.create_table()?;
    let mut open: Vec<Open> = Vec::new();
    'value: loop {
        if cursor.left() < 1 {
            return Err(DecodeError::MissingBytes);
        }
        if slots + 1 > C_STACK_SLOTS {
            return Err(DecodeError::StackOverflow(TOO_MANY_VALUES));
        }
        let mut value = match decode_item(lua, cursor)? {
            Item::Done(value) => value,
            Item::Array(len) => {
                let table = lua.create_table()?;
                slots += 1;
                if slots + 1 > C_STACK_SLOTS {
                    return Err(DecodeError::StackOverflow(
                        "in function mp_decode_to_lua_array",
                    ));
                }
                if len > 0 {
                    open.push(Open::Array {
                        remaining: len,
                        next_index: 1.0,
                    });
                    tables.raw_set(open.len(), table)?;
                    slots += 1;
                    continue 'value;
                }
                slots -= 1;
                Value::Table(table)
            }
            Item::Map(len) => {
                let table = lua.create_table()?;
                if len > 0 {
                    open.push(Open::Map {
                        remaining: len,
                        key_read: false,
                    });
                    tables.raw_set(open.len(), table)?;
                    slots += 1;
                    continue 'value;
                }
                Value::Table(table)
            }
        };
        // Hand the finished value to its container, closing every container it completes.
        loop {
            let depth = open.len();
            let Some(container) = open.last_mut() else {
                return Ok(value);
            };
            let table: Table = tables.raw_get(depth)?;
            match container {
                Open::Array {
                    remaining,
                    next_index,
                } => {
                    table.raw_set(*next_index, value)?;
                    *next_index += 1.0;
                    *remaining -= 1;
                    if *remaining > 0 {
                        continue 'value;
                    }
                    slots -= 2;
                }
                Open::Map {
                    remaining,
                    key_read,
                } => {
                    if !*key_read {
                        keys.raw_set(depth, value)?;
                        *key_read = true;
                        slots += 1;
                        continue 'value;
                    }
                    let key: Value = keys.raw_get(depth)?;
                    match key {
                        Value::Nil => return Err(DecodeError::BadKey("table index is nil")),
                        Value::Number(n) if n.is_nan() => {
                            return Err(DecodeError::BadKey("table index is NaN"));
                        }
                        _ => {}
                    }
                    keys.raw_set(depth, Value::Nil)?;
                    table.raw_set(key, value)?;
                    *key_read = false;
                    slots -= 1;
                    *remaining -= 1;
                    if *remaining > 0 {
                        continue 'value;
                    }
                    slots -= 1;
                }
            }
            open.pop();
            tables.raw_set(depth, Value::Nil)?;
            value = Value::Table(table);
        }
    }
}

/// Reads one type byte and whatever scalar it holds; containers only report their length.
fn decode_item(lua: &Lua, cursor: &mut Cursor<'_>) -> Result<Item, DecodeError> {
    let number = |n: f64| Ok(Item::Done(Value::Number(n)));
    let string = |cursor: &mut Cursor<'_>, len: usize| -> Result<Item, DecodeError> {
        let bytes = cursor.take(len)?;
        Ok(Item::Done(Value::String(lua.create_string(bytes)?)))
    };
    let first = cursor.take(1)?[0];
    match first {
        0x00..=0x7f => number(f64::from(first)),
        0xe0..=0xff => number(f64::from(first as i8)),
        0xa0..=0xbf => string(cursor, usize::from(first & 0x1f)),
        0x90..=0x9f => Ok(Item::Array(usize::from(first & 0x0f))),
        0x80..=0x8f => Ok(Item::Map(usize::from(first & 0x0f))),
        0xc0 => Ok(Item::Done(Value::Nil)),
        0xc2 => Ok(Item::Done(Value::Boolean(false))),
        0xc3 => Ok(Item::Done(Value::Boolean(true))),
        0xcc => number(f64::from(cursor.take(1)?[0])),
        0xcd => number(f64::from(u16::from_be_bytes(fixed(cursor)?))),
        0xce => number(f64::from(u32::from_be_bytes(fixed(cursor)?))),
        // Pushed as a signed `lua_Integer`: values past 2^63 come back negative.
        0xcf => number(u64::from_be_bytes(fixed(cursor)?) as i64 as f64),
        0xd0 => number(f64::from(cursor.take(1)?[0] as i8)),
        0xd1 => number(f64::from(i16::from_be_bytes(fixed(cursor)?))),
        0xd2 => number(f64::from(i32::from_be_bytes(fixed(cursor)?))),
        0xd3 => number(i64::from_be_bytes(fixed(cursor)?) as f64),
        0xca => number(f64::from(f32::from_be_bytes(fixed(cursor)?))),
        0xcb => number(f64::from_be_bytes(fixed(cursor)?)),
        0xd9 => {
            let len = cursor.length(1)?;
            string(cursor, len)
        }
        0xda => {
            let len = cursor.length(2)?;
            string(cursor, len)
        }
        0xdb => {
            let len = cursor.length(4)?;
            string(cursor, len)
        }
        0xdc => Ok(Item::Array(cursor.length(2)?)),
        0xdd => Ok(Item::Array(cursor.length(4)?)),
        0xde => Ok(Item::Map(cursor.length(2)?)),
        0xdf => Ok(Item::Map(cursor.length(4)?)),
        _ => Err(DecodeError::BadFormat),
    }
}

/// The next `N` bytes as an array, for `from_be_bytes`.
fn fixed<const N: usize>(cursor: &mut Cursor<'_>) -> Result<[u8; N], DecodeError> {
    let mut bytes = [0u8; N];
    bytes.copy_from_slice(cursor.take(N)?);
    Ok(bytes)
}
