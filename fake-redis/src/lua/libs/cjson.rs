//! `cjson`: Lua CJSON 2.1.0, the JSON codec Redis gives scripts, with its settings.
//!
//! The encodings scripts see, and which other clients then compare byte for byte:
//!
//! - Numbers print as C's `%.14g` (the precision is `encode_number_precision`, 1 to 14): `0.1`,
//!   `1e+20`, `3.1415926535898`. NaN and the infinities are refused unless
//!   `encode_invalid_numbers` is `"on"` (`nan`, `inf`) or `"null"`.
//! - Strings escape `"`, `\`, `/`, DEL and the control bytes (`\b \t \n \f \r`, the rest as
//!   `\u00XX`); other bytes pass through, so invalid UTF-8 stays invalid.
//! - A table whose keys are all positive integers is an array up to its largest key, holes as
//!   `null`, unless it is "excessively sparse": largest key above `ratio` times the key count and
//!   above `safe` (defaults 2 and 10), which is an error, or an object when
//!   `encode_sparse_array(true)`. Every other table, the empty one included, is an object in
//!   `next` order, with number keys printed as strings.
//! - Decoding reads the text as C does, up to a zero byte; numbers go through `strtod`, so
//!   `0x10`, `inf` and `nan` decode unless `decode_invalid_numbers(false)`; `null` is
//!   `cjson.null`, a light userdata holding NULL.
//!
//! Nesting is bounded twice, as in C: by `encode_max_depth`/`decode_max_depth` (1000) and by the
//! Lua stack budget. Both directions walk the structure with an explicit stack.

use std::sync::{Arc, Mutex, PoisonError};

use mlua::{Function, LightUserData, Lua, MultiValue, Table, Value};

use super::{C_STACK_SLOTS, arg, arg_error, check_bytes, check_integer, raise, type_name};

/// `cjson.null`: what JSON's `null` decodes to, and encodes from.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// The settings one `cjson` table's functions share (`cjson.new()` makes a fresh set).
#[derive(Debug, Clone)]
struct Settings {
    sparse_convert: bool,
    sparse_ratio: i64,
    sparse_safe: i64,
    encode_max_depth: i64,
    decode_max_depth: i64,
    /// 0: refuse NaN and infinities; 1: print them; 2: print `null`.
    encode_invalid_numbers: i64,
    decode_invalid_numbers: bool,
    keep_buffer: bool,
    precision: i64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: true,
            keep_buffer: true,
            precision: 14,
        }
    }
}

/// What one `cjson` table's functions share.
struct Codec {
    settings: Mutex<Settings>,
    /// Lua's `next`, taken when the library is made, for walking objects.
    next: Function,
}

type Shared = Arc<Codec>;

impl Codec {
    fn settings(&self) -> std::sync::MutexGuard<'_, Settings> {
        self.settings.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn read(codec: &Shared) -> Settings {
    codec.settings().clone()
}

/// A `cjson` table with its own settings; the global is one, `cjson.new()` makes more.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let next: Function = lua.globals().raw_get("next")?;
    let settings: Shared = Arc::new(Codec {
        settings: Mutex::new(Settings::default()),
        next,
    });
    let table = lua.create_table()?;
    let bound = |f: fn(&Lua, &Shared, MultiValue) -> mlua::Result<MultiValue>| {
        let settings = settings.clone();
        lua.create_function(move |lua, args: MultiValue| f(lua, &settings, args))
    };
    table.set("encode", bound(encode)?)?;
    table.set("decode", bound(decode)?)?;
    table.set("encode_sparse_array", bound(encode_sparse_array)?)?;
    table.set("encode_max_depth", bound(encode_max_depth)?)?;
    table.set("decode_max_depth", bound(decode_max_depth)?)?;
    table.set("encode_number_precision", bound(encode_number_precision)?)?;
    table.set("encode_keep_buffer", bound(encode_keep_buffer)?)?;
    table.set("encode_invalid_numbers", bound(encode_invalid_numbers)?)?;
    table.set("decode_invalid_numbers", bound(decode_invalid_numbers)?)?;
    table.set(
        "new",
        lua.create_function(|lua, _: MultiValue| library(lua))?,
    )?;
    table.set("null", null())?;
    table.set("_NAME", "cjson")?;
    table.set("_VERSION", "2.1.0")?;
    Ok(table)
}

// ----- settings -----

/// `json_arg_init`: at most `most` arguments.
fn at_most(lua: &Lua, args: &MultiValue, most: usize) -> mlua::Result<()> {
    if args.len() > most {
        return Err(arg_error(lua, most as i64 + 1, "found too many arguments"));
    }
    Ok(())
}

/// `json_integer_option`: sets `setting` from argument `position` unless it is nil, and returns
/// it. The range complaint always names argument 1, as the C code does.
fn integer_option(
    lua: &Lua,
    args: &MultiValue,
    position: usize,
    setting: &mut i64,
    range: (i64, i64),
) -> mlua::Result<Value> {
    if !arg(args, position).is_nil() {
        // C keeps the value in an `int`.
        let value = i64::from(check_integer(lua, args, position)? as i32);
        if value < range.0 || value > range.1 {
            let complaint = format!("expected integer between {} and {}", range.0, range.1);
            return Err(arg_error(lua, 1, complaint));
        }
        *setting = value;
    }
    Ok(Value::Number(*setting as f64))
}

/// `json_enum_option`: argument `position` as a boolean or one of `options` (by index), then the
/// setting as a boolean when it is 0 or 1 and as its option name otherwise.
fn enum_option(
    lua: &Lua,
    args: &MultiValue,
    position: usize,
    setting: &mut i64,
    options: &[&str],
) -> mlua::Result<Value> {
    match arg(args, position) {
        Value::Nil => {}
        Value::Boolean(flag) => *setting = i64::from(flag),
        _ => {
            let name = check_bytes(lua, args, position)?;
            let index = options
                .iter()
                .position(|option| name.as_bytes() == option.as_bytes());
            match index {
                Some(index) => *setting = index as i64,
                None => {
                    let shown = name.to_string_lossy();
                    return Err(arg_error(
                        lua,
                        position as i64,
                        format!("invalid option '{shown}'"),
                    ));
                }
            }
        }
    }
    Ok(match *setting {
        0 | 1 => Value::Boolean(*setting == 1),
        other => Value::String(lua.create_string(options[other as usize])?),
    })
}

const OFF_ON: &[&str] = &["off", "on"];

fn boolean_setting(
    lua: &Lua,
    settings: &Shared,
    args: MultiValue,
    field: fn(&mut Settings) -> &mut bool,
) -> mlua::Result<MultiValue> {
    at_most(lua, &args, 1)?;
    let mut guard = settings.settings();
    let mut setting = i64::from(*field(&mut guard));
    let reply = enum_option(lua, &args, 1, &mut setting, OFF_ON)?;
    *field(&mut guard) = setting == 1;
    Ok(MultiValue::from_vec(vec![reply]))
}

fn integer_setting(
    lua: &Lua,
    settings: &Shared,
    args: MultiValue,
    field: fn(&mut Settings) -> &mut i64,
    range: (i64, i64),
) -> mlua::Result<MultiValue> {
    at_most(lua, &args, 1)?;
    let mut guard = settings.settings();
    let reply = integer_option(lua, &args, 1, field(&mut guard), range)?;
    Ok(MultiValue::from_vec(vec![reply]))
}

const INT_MAX: i64 = i32::MAX as i64;

fn encode_sparse_array(lua: &Lua, settings: &Shared, args: MultiValue) -> mlua::Result<MultiValue> {
    at_most(lua, &args, 3)?;
    let mut guard = settings.settings();
    let mut convert = i64::from(guard.sparse_convert);
    let convert_reply = enum_option(lua, &args, 1, &mut convert, OFF_ON)?;
    guard.sparse_convert = convert == 1;
    let ratio = integer_option(lua, &args, 2, &mut guard.sparse_ratio, (0, INT_MAX))?;
    let safe = integer_option(lua, &args, 3, &mut guard.sparse_safe, (0, INT_MAX))?;
    Ok(MultiValue::from_vec(vec![convert_reply, ratio, safe]))
}

fn encode_max_depth(lua: &Lua, settings: &Shared, args: MultiValue) -> mlua::Result<MultiValue> {
    integer_setting(
        lua,
        settings,
        args,
        |s| &mut s.encode_max_depth,
        (1, INT_MAX),
    )
}

fn decode_max_depth(lua: &Lua, settings: &Shared, args: MultiValue) -> mlua::Result<MultiValue> {
    integer_setting(
        lua,
        settings,
        args,
        |s| &mut s.decode_max_depth,
        (1, INT_MAX),
    )
}

fn encode_number_precision(
    lua: &Lua,
    settings: &Shared,
    args: MultiValue,
) -> mlua::Result<MultiValue> {
    integer_setting(lua, settings, args, |s| &mut s.precision, (1, 14))
}

fn encode_keep_buffer(lua: &Lua, settings: &Shared, args: MultiValue) -> mlua::Result<MultiValue> {
    boolean_setting(lua, settings, args, |s| &mut s.keep_buffer)
}

fn decode_invalid_numbers(
    lua: &Lua,
    settings: &Shared,
    args: MultiValue,
) -> mlua::Result<MultiValue> {
    boolean_setting(lua, settings, args, |s| &mut s.decode_invalid_numbers)
}

fn encode_invalid_numbers(
    lua: &Lua,
    settings: &Shared,
    args: MultiValue,
) -> mlua::Result<MultiValue> {
    at_most(lua, &args, 1)?;
    let mut guard = settings.settings();
    let reply = enum_option(
        lua,
        &args,
        1,
        &mut guard.encode_invalid_numbers,
        &["off", "on", "null"],
    )?;
    Ok(MultiValue::from_vec(vec![reply]))
}

// ----- encoding -----

/// How deep a walk is, counted as lua-cjson counts it: the tables open, and the Lua stack slots
/// C holds for them (the argument, then one per array and two per object: key and value).
struct Depth {
    tables: i64,
    slots: usize,
}

impl Default for Depth {
    fn default() -> Self {
        Depth {
            tables: 0,
            slots: 1,
        }
    }
}

impl Depth {
    /// Whether one more table stays within `max_tables` and finds `free_slots` on the stack.
    fn admits(&self, max_tables: i64, free_slots: usize) -> bool {
        self.tables < max_tables && self.slots + free_slots <= C_STACK_SLOTS
    }

    fn enter(&mut self, object: bool) {
        self.tables += 1;
        self.slots += if object { 2 } else { 1 };
    }

    fn leave(&mut self, object: bool) {
        self.tables -= 1;
        self.slots -= if object { 2 } else { 1 };
    }
}

fn encode(lua: &Lua, codec: &Shared, args: MultiValue) -> mlua::Result<MultiValue> {
    if args.len() != 1 {
        return Err(arg_error(lua, 1, "expected 1 argument"));
    }
    let next = &codec.next;
    let settings = read(codec);
    let mut out = Vec::new();
    let mut encoder = Encoder {
        lua,
        settings: &settings,
        next,
        out: &mut out,
    };
    encoder
        .write(&args[0], &mut Depth::default())
        .map_err(|error| match error.downcast_ref::<Refusal>() {
            Some(Refusal(complaint)) => raise(lua, complaint),
            None => error,
        })?;
    Ok(MultiValue::from_vec(vec![Value::String(
        lua.create_string(&out)?,
    )]))
}

/// Why a value cannot be encoded. It gets the caller's position only once the encoder is done:
/// while mlua walks a table for it, the Lua stack does not show the script's line.
#[derive(Debug)]
struct Refusal(String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refusal {}

fn refuse(complaint: impl Into<String>) -> mlua::Error {
    mlua::Error::external(Refusal(complaint.into()))
}

/// How many tables deep `Encoder::write` recurses before it walks with an explicit stack.
const RECURSION_LEVELS: i64 = 64;

/// A table being written: an array's next index, or whether an object has written an entry.
enum Open {
    Array { next: usize, len: usize },
    Object { first: bool },
}

struct Encoder<'a> {
    lua: &'a Lua,
    settings: &'a Settings,
    /// Lua's `next`, to walk an object one entry at a time.
    next: &'a Function,
    out: &'a mut Vec<u8>,
}

impl Encoder<'_> {
    /// Writes `value`: recursively for the first levels, the common case, and through `walk`
    /// below them, so that no input deepens the Rust stack past a fixed bound.
    fn write(&mut self, value: &Value, depth: &mut Depth) -> mlua::Result<()> {
        let Value::Table(table) = value else {
            return self.scalar(value);
        };
        if depth.tables >= RECURSION_LEVELS {
            return self.walk(value, depth);
        }
        self.admit(depth)?;
        match self.open_table(table)? {
            Open::Array { len, .. } => {
                depth.enter(false);
                for index in 1..=len {
                    if index > 1 {
                        self.out.push(b',');
                    }
                    self.write(&table.raw_get(index)?, depth)?;
                }
                self.out.push(b']');
                depth.leave(false);
            }
            Open::Object { .. } => {
                depth.enter(true);
                let mut first = true;
                table.for_each(|key: Value, element: Value| {
                    if !first {
                        self.out.push(b',');
                    }
                    first = false;
                    self.key(&key)?;
                    self.write(&element, depth)
                })?;
                self.out.push(b'}');
                depth.leave(true);
            }
        }
        Ok(())
    }

    /// lua-cjson's nesting check before a table is opened.
    fn admit(&self, depth: &Depth) -> mlua::Result<()> {
        if depth.admits(self.settings.encode_max_depth, 3) {
            return Ok(());
        }
        let nesting = depth.tables + 1;
        Err(refuse(format!(
            "Cannot serialise, excessive nesting ({nesting})"
        )))
    }

    /// Writes `root` without recursion, for tables nested past `RECURSION_LEVELS`.
    fn walk(&mut self, root: &Value, depth: &mut Depth) -> mlua::Result<()> {
        // The tables being written, by level, and each object's last key, are kept in Lua tables
        // rather than as Rust handles: mlua's handles share one Lua stack, which deep or wide
        // input would exhaust before Redis's own limits apply.
        let tables = self.lua.create_table()?;
        let keys = self.lua.create_table()?;
        let mut open: Vec<Open> = Vec::new();
        let mut pending = Some(root.clone());
        loop {
            if let Some(value) = pending.take() {
                if let Value::Table(table) = value {
                    self.admit(depth)?;
                    let frame = self.open_table(&table)?;
                    depth.enter(matches!(frame, Open::Object { .. }));
                    open.push(frame);
                    tables.raw_set(open.len(), table)?;
                } else {
                    self.scalar(&value)?;
                }
            }
            let level = open.len();
            let Some(frame) = open.last_mut() else {
                return Ok(());
            };
            let table: Table = tables.raw_get(level)?;
            match frame {
                Open::Array { next, len } => {
                    if *next <= *len {
                        if *next > 1 {
                            self.out.push(b',');
                        }
                        pending = Some(table.raw_get(*next)?);
                        *next += 1;
                        continue;
                    }
                    self.out.push(b']');
                }
                Open::Object { first } => {
                    let last: Value = keys.raw_get(level)?;
                    let (key, value): (Value, Value) = self.next.call((table, last))?;
                    if !key.is_nil() {
                        if !*first {
                            self.out.push(b',');
                        }
                        *first = false;
                        self.key(&key)?;
                        keys.raw_set(level, key)?;
                        pending = Some(value);
                        continue;
                    }
                    self.out.push(b'}');
                    keys.raw_set(level, Value::Nil)?;
                }
            }
            tables.raw_set(level, Value::Nil)?;
            let closed = open.pop().expect("a frame is open");
            depth.leave(matches!(closed, Open::Object { .. }));
        }
    }

    /// Writes the opening bracket and returns the frame that writes the rest.
    fn open_table(&mut self, table: &Table) -> mlua::Result<Open> {
        match self.array_length(table)? {
            Some(len) if len > 0 => {
                self.out.push(b'[');
                Ok(Open::Array { next: 1, len })
            }
            _ => {
                self.out.push(b'{');
                Ok(Open::Object { first: true })
            }
        }
    }

    /// `lua_array_length`: the largest key when every key is a positive integer (and the array
    /// is not excessively sparse), else `None` for an object.
    fn array_length(&self, table: &Table) -> mlua::Result<Option<usize>> {
        let mut max: f64 = 0.0;
        let mut items: i64 = 0;
        for entry in table.pairs::<Value, Value>() {
            let (key, _) = entry?;
            let k = match key {
                Value::Number(k) => k,
                Value::Integer(k) => k as f64,
                _ => return Ok(None),
            };
            if k == 0.0 || k.floor() != k || k < 1.0 {
                return Ok(None);
            }
            max = max.max(k);
            items += 1;
        }
        // C keeps the largest key in an `int`.
        let max = i64::from(super::truncate_to_integer(max) as i32);
        let settings = self.settings;
        if settings.sparse_ratio > 0
            && max > items * settings.sparse_ratio
            && max > settings.sparse_safe
        {
            if !settings.sparse_convert {
                return Err(refuse("Cannot serialise table: excessively sparse array"));
            }
            return Ok(None);
        }
        Ok(Some(max.max(0) as usize))
    }

    fn key(&mut self, key: &Value) -> mlua::Result<()> {
        match key {
            Value::Number(_) | Value::Integer(_) => {
                self.out.push(b'"');
                self.number(key)?;
                self.out.extend_from_slice(b"\":");
            }
            Value::String(text) => {
                write_string(self.out, &text.as_bytes());
                self.out.push(b':');
            }
            other => {
                let complaint = format!(
                    "Cannot serialise {}: table key must be a number or string",
                    type_name(other)
                );
                return Err(refuse(complaint));
            }
        }
        Ok(())
    }

    fn scalar(&mut self, value: &Value) -> mlua::Result<()> {
        match value {
            Value::String(text) => write_string(self.out, &text.as_bytes()),
            Value::Number(_) | Value::Integer(_) => self.number(value)?,
            Value::Boolean(true) => self.out.extend_from_slice(b"true"),
            Value::Boolean(false) => self.out.extend_from_slice(b"false"),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(pointer) if pointer.0.is_null() => {
                self.out.extend_from_slice(b"null");
            }
            other => {
                let complaint =
                    format!("Cannot serialise {}: type not supported", type_name(other));
                return Err(refuse(complaint));
            }
        }
        Ok(())
    }

    fn number(&mut self, value: &Value) -> mlua::Result<()> {
        let number = match value {
            Value::Integer(integer) => *integer as f64,
            Value::Number(number) => *number,
            _ => unreachable!("only numbers reach here"),
        };
        if !number.is_finite() {
            match self.settings.encode_invalid_numbers {
                0 => {
                    return Err(refuse("Cannot serialise number: must not be NaN or Inf"));
                }
                1 if number.is_nan() => {
                    self.out.extend_from_slice(b"nan");
                    return Ok(());
                }
                1 => {}
                _ => {
                    self.out.extend_from_slice(b"null");
                    return Ok(());
                }
            }
        }
        format_g(self.out, number, self.settings.precision as usize);
        Ok(())
    }
}

/// A JSON string: the bytes between quotes, with lua-cjson's escapes.
fn write_string(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    for &byte in bytes {
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 15)]);
            }
            _ => out.push(byte),
        }
    }
    out.push(b'"');
}

/// C's `printf("%.{precision}g", number)`.
fn format_g(out: &mut Vec<u8>, number: f64, precision: usize) {
    if number.is_nan() {
        out.extend_from_slice(if number.is_sign_negative() {
            b"-nan"
        } else {
            b"nan"
        });
        return;
    }
    if number.is_infinite() {
        out.extend_from_slice(if number < 0.0 { b"-inf" } else { b"inf" });
        return;
    }
    let precision = precision.max(1);
    if number == 0.0 {
        out.extend_from_slice(if number.is_sign_negative() {
            b"-0"
        } else {
            b"0"
        });
        return;
    }
    // The exponent %g decides by is that of the number rounded to `precision` digits.
    let scientific = format!("{:.*e}", precision - 1, number);
    let (mantissa, exponent) = scientific.split_once('e').expect("`{:e}` has an exponent");
    let exponent: i64 = exponent.parse().expect("`{:e}` exponent is an integer");
    if exponent < -4 || exponent >= precision as i64 {
        out.extend_from_slice(trim_fraction(mantissa).as_bytes());
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let digits = exponent.unsigned_abs();
        if digits < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(digits.to_string().as_bytes());
    } else {
        let decimals = (precision as i64 - 1 - exponent) as usize;
        let fixed = format!("{number:.decimals$}");
        out.extend_from_slice(trim_fraction(&fixed).as_bytes());
    }
}

/// `%g` drops trailing zeros after the point, and the point if nothing follows it.
fn trim_fraction(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

// ----- decoding -----

fn decode(lua: &Lua, settings: &Shared, args: MultiValue) -> mlua::Result<MultiValue> {
    if args.len() != 1 {
        return Err(arg_error(lua, 1, "expected 1 argument"));
    }
    let settings = read(settings);
    let text = check_bytes(lua, &args, 1)?;
    let bytes = text.as_bytes();
    if bytes.len() >= 2 && (bytes[0] == 0 || bytes[1] == 0) {
        return Err(raise(lua, "JSON parser does not support UTF-16 or UTF-32"));
    }
    let mut parser = Parser {
        lua,
        settings: &settings,
        data: &bytes,
        at: 0,
    };
    let value = parser.run()?;
    Ok(MultiValue::from_vec(vec![value]))
}

/// What the tokenizer found, with the names lua-cjson prints for them.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    ObjectBegin,
    ObjectEnd,
    ArrayBegin,
    ArrayEnd,
    Text(Vec<u8>),
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    /// A lexical error, with its description.
    Error(&'static str),
}

impl Token {
    fn describe(&self) -> &'static str {
        match self {
            Token::ObjectBegin => "T_OBJ_BEGIN",
            Token::ObjectEnd => "T_OBJ_END",
            Token::ArrayBegin => "T_ARR_BEGIN",
            Token::ArrayEnd => "T_ARR_END",
            Token::Text(_) => "T_STRING",
            Token::Number(_) => "T_NUMBER",
            Token::Boolean(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(what) => what,
        }
    }
}

/// A table being read: an array's next index, or the key awaiting its value in an object.
enum Filling {
    Array { next: usize },
    Object { key: Vec<u8> },
}

struct Parser<'a> {
    lua: &'a Lua,
    settings: &'a Settings,
    data: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    /// The byte at `index`, or 0 past the end: the text is read as a C string.
    fn byte(&self, index: usize) -> u8 {
        self.data.get(index).copied().unwrap_or(0)
    }

    fn run(&mut self) -> mlua::Result<Value> {
        // The tables being filled, by depth, live in a Lua table (see `Encoder::walk`).
        let tables = self.lua.create_table()?;
        let mut open: Vec<Filling> = Vec::new();
        let mut depth = Depth::default();
        let (mut token, mut token_at) = self.next_token();
        loop {
            let mut value = match token {
                Token::Text(bytes) => Value::String(self.lua.create_string(&bytes)?),
                Token::Number(number) => Value::Number(number),
                Token::Boolean(flag) => Value::Boolean(flag),
                Token::Null => null(),
                Token::ObjectBegin | Token::ArrayBegin => {
                    let is_object = token == Token::ObjectBegin;
                    let needed = if is_object { 3 } else { 2 };
                    if !depth.admits(self.settings.decode_max_depth, needed) {
                        return Err(raise(
                            self.lua,
                            format!(
                                "Found too many nested data structures ({}) at character {}",
                                depth.tables + 1,
                                self.at
                            ),
                        ));
                    }
                    let table = self.lua.create_table()?;
                    (token, token_at) = self.next_token();
                    let closer = if is_object {
                        Token::ObjectEnd
                    } else {
                        Token::ArrayEnd
                    };
                    if token == closer {
                        Value::Table(table)
                    } else {
                        let frame = if is_object {
                            let key = self.object_key(token, token_at)?;
                            (token, token_at) = self.next_token();
                            Filling::Object { key }
                        } else {
                            Filling::Array { next: 1 }
                        };
                        depth.enter(is_object);
                        open.push(frame);
                        tables.raw_set(open.len(), table)?;
                        continue;
                    }
                }
                other => return Err(self.expected("value", &other, token_at)),
            };
            // Store the value, then close every table it completes.
            loop {
                let level = open.len();
                let Some(frame) = open.last_mut() else {
                    let (token, token_at) = self.next_token();
                    if token != Token::End {
                        return Err(self.expected("the end", &token, token_at));
                    }
                    return Ok(value);
                };
                let table: Table = tables.raw_get(level)?;
                let (closer, what) = match frame {
                    Filling::Array { next } => {
                        table.raw_set(*next, value)?;
                        *next += 1;
                        (Token::ArrayEnd, "comma or array end")
                    }
                    Filling::Object { key } => {
                        table.raw_set(self.lua.create_string(&*key)?, value)?;
                        (Token::ObjectEnd, "comma or object end")
                    }
                };
                (token, token_at) = self.next_token();
                if token == closer {
                    let frame = open.pop().expect("a frame is open");
                    depth.leave(matches!(frame, Filling::Object { .. }));
                    tables.raw_set(level, Value::Nil)?;
                    value = Value::Table(table);
                    continue;
                }
                if token != Token::Comma {
                    return Err(self.expected(what, &token, token_at));
                }
                (token, token_at) = self.next_token();
                if let Some(Filling::Object { key }) = open.last_mut() {
                    *key = self.object_key(token, token_at)?;
                    (token, token_at) = self.next_token();
                }
                break;
            }
        }
    }

    /// An object's key and the colon after it.
    fn object_key(&mut self, token: Token, token_at: usize) -> mlua::Result<Vec<u8>> {
        let Token::Text(bytes) = token else {
            return Err(self.expected("object key string", &token, token_at));
        };
        let (colon, colon_at) = self.next_token();
        if colon != Token::Colon {
            return Err(self.expected("colon", &colon, colon_at));
        }
        Ok(bytes)
    }

    fn expected(&self, what: &str, found: &Token, at: usize) -> mlua::Error {
        raise(
            self.lua,
            format!(
                "Expected {what} but found {} at character {}",
                found.describe(),
                at + 1
            ),
        )
    }

    /// The next token and where it starts (for errors, where the error is).
    fn next_token(&mut self) -> (Token, usize) {
        while matches!(self.byte(self.at), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
        let start = self.at;
        let single = match self.byte(start) {
            0 => return (Token::End, start),
            b'{' => Token::ObjectBegin,
            b'}' => Token::ObjectEnd,
            b'[' => Token::ArrayBegin,
            b']' => Token::ArrayEnd,
            b',' => Token::Comma,
            b':' => Token::Colon,
            b'"' => return self.string_token(),
            b'-' | b'0'..=b'9' => {
                if !self.settings.decode_invalid_numbers && self.is_invalid_number() {
                    return (Token::Error("invalid number"), start);
                }
                return self.number_token();
            }
            b't' | b'f' | b'n' | b'i' | b'I' | b'N' | b'+' => return self.word_token(),
            _ => return (Token::Error("invalid token"), start),
        };
        self.at += 1;
        (single, start)
    }

    fn word_token(&mut self) -> (Token, usize) {
        let start = self.at;
        let rest = &self.data[start..];
        for (word, token) in [
            (&b"true"[..], Token::Boolean(true)),
            (b"false", Token::Boolean(false)),
            (b"null", Token::Null),
        ] {
            if rest.starts_with(word) {
                self.at += word.len();
                return (token, start);
            }
        }
        if self.settings.decode_invalid_numbers && self.is_invalid_number() {
            return self.number_token();
        }
        (Token::Error("invalid token"), start)
    }

    /// `json_is_invalid_number`: a number `strtod` reads but JSON does not allow (a leading
    /// `+` or zero, hex, `inf`, `nan`).
    fn is_invalid_number(&self) -> bool {
        let mut at = self.at;
        if self.byte(at) == b'+' {
            return true;
        }
        if self.byte(at) == b'-' {
            at += 1;
        }
        let first = self.byte(at);
        if first == b'0' {
            let second = self.byte(at + 1);
            return second | 0x20 == b'x' || second.is_ascii_digit();
        }
        if first <= b'9' {
            return false;
        }
        let word = self.data.get(at..at + 3).unwrap_or_default();
        word.eq_ignore_ascii_case(b"inf") || word.eq_ignore_ascii_case(b"nan")
    }

    fn number_token(&mut self) -> (Token, usize) {
        let start = self.at;
        match strtod(&self.data[start..]) {
            Some((number, len)) => {
                self.at += len;
                (Token::Number(number), start)
            }
            None => (Token::Error("invalid number"), start),
        }
    }

    fn string_token(&mut self) -> (Token, usize) {
        let start = self.at;
        self.at += 1;
        let mut text = Vec::new();
        loop {
            let byte = self.byte(self.at);
            match byte {
                b'"' => break,
                0 => return (Token::Error("unexpected end of string"), self.at),
                b'\\' => {
                    let escaped = match self.byte(self.at + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => b'\x08',
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => b'\x0c',
                        b'r' => b'\r',
                        b'u' => {
                            if self.unicode_escape(&mut text) {
                                continue;
                            }
                            return (Token::Error("invalid unicode escape code"), self.at);
                        }
                        _ => return (Token::Error("invalid escape code"), self.at),
                    };
                    text.push(escaped);
                    self.at += 2;
                }
                _ => {
                    text.push(byte);
                    self.at += 1;
                }
            }
        }
        self.at += 1;
        (Token::Text(text), start)
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        (0..4).try_fold(0u32, |acc, i| {
            let digit = (self.byte(at + i) as char).to_digit(16)?;
            Some(acc << 4 | digit)
        })
    }

    /// A `\uXXXX` escape (two for a surrogate pair) as UTF-8; false if it is malformed.
    fn unicode_escape(&mut self, text: &mut Vec<u8>) -> bool {
        let Some(mut codepoint) = self.hex4(self.at + 2) else {
            return false;
        };
        let mut len = 6;
        if codepoint & 0xf800 == 0xd800 {
            if codepoint & 0x400 != 0 {
                return false;
            }
            if self.byte(self.at + 6) != b'\\' || self.byte(self.at + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.at + 8) else {
                return false;
            };
            if low & 0xfc00 != 0xdc00 {
                return false;
            }
            codepoint = (((codepoint & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
            len = 12;
        }
        let mut utf8 = [0u8; 4];
        let written = match codepoint {
            0..=0x7f => {
                utf8[0] = codepoint as u8;
                1
            }
            0x80..=0x7ff => {
                utf8[0] = (codepoint >> 6) as u8 | 0xc0;
                utf8[1] = (codepoint & 0x3f) as u8 | 0x80;
                2
            }
            0x800..=0xffff => {
                utf8[0] = (codepoint >> 12) as u8 | 0xe0;
                utf8[1] = ((codepoint >> 6) & 0x3f) as u8 | 0x80;
                utf8[2] = (codepoint & 0x3f) as u8 | 0x80;
                3
            }
            _ => {
                utf8[0] = (codepoint >> 18) as u8 | 0xf0;
                utf8[1] = ((codepoint >> 12) & 0x3f) as u8 | 0x80;
                utf8[2] = ((codepoint >> 6) & 0x3f) as u8 | 0x80;
                utf8[3] = (codepoint & 0x3f) as u8 | 0x80;
                4
            }
        };
        text.extend_from_slice(&utf8[..written]);
        self.at += len;
        true
    }
}

/// C's `strtod` on the start of `text` (which stops at a zero byte): the number and how many
/// bytes it took, or `None` if no number starts there. Decimal, hexadecimal (`0x1p4`), `inf`,
/// `infinity` and `nan[(...)]`, each with an optional sign.
fn strtod(text: &[u8]) -> Option<(f64, usize)> {
    let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    let text = &text[..end];
    let (negative, at) = read_sign(text, 0);
    let sign = |value: f64| if negative { -value } else { value };
    let rest = &text[at..];
    let starts =
        |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
    if starts(b"infinity") {
        return Some((sign(f64::INFINITY), at + 8));
    }
    if starts(b"inf") {
        return Some((sign(f64::INFINITY), at + 3));
    }
    if starts(b"nan") {
        let mut len = at + 3;
        if text.get(len) == Some(&b'(') {
            let inner = text[len + 1..]
                .iter()
                .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'));
            if let Some(inner) = inner
                && text[len + 1 + inner] == b')'
            {
                len += inner + 2;
            }
        }
        return Some((sign(f64::NAN), len));
    }
    if rest.len() >= 3 && rest[0] == b'0' && rest[1] | 0x20 == b'x' {
        if let Some((value, len)) = hex_float(&rest[2..]) {
            return Some((sign(value), at + 2 + len));
        }
        // "0x" with no hex digit reads as the "0" alone.
        return Some((sign(0.0), at + 1));
    }
    let digits = |from: usize| {
        text[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let integer = digits(at);
    let mut len = at + integer;
    let mut fraction = 0;
    if text.get(len) == Some(&b'.') {
        fraction = digits(len + 1);
        if integer + fraction > 0 {
            len += 1 + fraction;
        }
    }
    if integer + fraction == 0 {
        return None;
    }
    if matches!(text.get(len), Some(b'e' | b'E')) {
        let mut exp_at = len + 1;
        if matches!(text.get(exp_at), Some(b'+' | b'-')) {
            exp_at += 1;
        }
        let exp_digits = digits(exp_at);
        if exp_digits > 0 {
            len = exp_at + exp_digits;
        }
    }
    let literal = std::str::from_utf8(&text[at..len]).ok()?;
    let value: f64 = literal.parse().ok()?;
    Some((sign(value), len))
}

/// An optional `+` or `-` at `at`: whether it is a minus, and where the digits start.
fn read_sign(text: &[u8], at: usize) -> (bool, usize) {
    match text.get(at) {
        Some(b'-') => (true, at + 1),
        Some(b'+') => (false, at + 1),
        _ => (false, at),
    }
}

/// The digits after `0x`: `h[.h][p[+-]d]`, and how many bytes they took.
fn hex_float(text: &[u8]) -> Option<(f64, usize)> {
    let mut mantissa: u64 = 0;
    let mut exponent: i64 = 0;
    let mut len = 0;
    let mut any = false;
    let mut seen_point = false;
    while let Some(&byte) = text.get(len) {
        if byte == b'.' && !seen_point {
            seen_point = true;
            len += 1;
            continue;
        }
        let Some(digit) = (byte as char).to_digit(16) else {
            break;
        };
        any = true;
        if mantissa >> 60 == 0 {
            mantissa = mantissa << 4 | u64::from(digit);
            if seen_point {
                exponent -= 4;
            }
        } else if !seen_point {
            exponent += 4;
        }
        len += 1;
    }
    if !any {
        return None;
    }
    if matches!(text.get(len), Some(b'p' | b'P')) {
        let (negative, at) = read_sign(text, len + 1);
        let count = text[at..].iter().take_while(|b| b.is_ascii_digit()).count();
        if count > 0 {
            let power: i64 = text[at..at + count]
                .iter()
                .fold(0i64, |acc, b| (acc * 10 + i64::from(b - b'0')).min(100_000));
            exponent += if negative { -power } else { power };
            len = at + count;
        }
    }
    Some((
        mantissa as f64 * 2f64.powi(exponent.clamp(-100_000, 100_000) as i32),
        len,
    ))
}
