//! `struct`: Roberto Ierusalimschy's binary packing library (struct.c 1.7), as Redis ships it.
//!
//! A format is a string of options read left to right: `<` and `>` pick little or big endian
//! (little, x86's, by default), `![n]` caps alignment at `n` (default 8), `b/B h/H l/L T i[n]/I[n]`
//! are signed/unsigned integers of 1, 2, 8, 8 and `n` (default 4, at most 32) bytes, `f` and `d`
//! floats, `x` a zero byte, `c[n]` `n` raw bytes (`c0`: the whole string when packing, the
//! previous number as the length when unpacking), `s` a zero-terminated string, and a space
//! nothing. Integers go through C's conversions of a double, so out-of-range values wrap as
//! they do on Redis; alignment pads with zeros up to `min(size, cap)`.

use mlua::{Lua, MultiValue, Table, Value};

use super::{
    C_STACK_SLOTS, arg_error, check_bytes, check_number, opt_integer, raise, truncate_to_integer,
};

/// The widest integer option, in bytes (`MAXINTSIZE`).
const MAX_INT_SIZE: i64 = 32;

/// The alignment `!` means without a number: that of a double on x86-64.
const MAX_ALIGN: i64 = 8;

/// The `struct` table.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let table = lua.create_table()?;
    table.set("pack", lua.create_function(pack)?)?;
    table.set("unpack", lua.create_function(unpack)?)?;
    table.set("size", lua.create_function(size)?)?;
    Ok(table)
}

/// The byte order and alignment cap a format has set so far.
struct Header {
    big_endian: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            big_endian: false,
            align: 1,
        }
    }
}

/// A format string read as C reads it: up to its first zero byte.
struct Format<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Format<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Format {
            bytes: &bytes[..end],
            at: 0,
        }
    }

    fn next_option(&mut self) -> Option<u8> {
        let option = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(option)
    }

    /// `getnum`: the decimal count after an option, or `default` when none follows.
    fn count(&mut self, lua: &Lua, default: i64) -> mlua::Result<i64> {
        let mut count: i64 = 0;
        let mut any = false;
        while let Some(&digit) = self.bytes.get(self.at).filter(|b| b.is_ascii_digit()) {
            let digit = i64::from(digit - b'0');
            if count > i64::from(i32::MAX) / 10 || count * 10 > i64::from(i32::MAX) - digit {
                return Err(raise(lua, "integral size overflow"));
            }
            count = count * 10 + digit;
            self.at += 1;
            any = true;
        }
        Ok(if any { count } else { default })
    }

    /// `optsize`: how many bytes `option` takes (0 for the control options).
    fn size_of(&mut self, lua: &Lua, option: u8) -> mlua::Result<usize> {
        Ok(match option {
            b'b' | b'B' | b'x' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.count(lua, 1)? as usize,
            b'i' | b'I' => {
                let size = self.count(lua, 4)?;
                if size > MAX_INT_SIZE {
                    return Err(raise(
                        lua,
                        format!("integral size {size} is larger than limit of {MAX_INT_SIZE}"),
                    ));
                }
                size as usize
            }
            _ => 0,
        })
    }

    /// `controloptions`: endianness, alignment and spaces; anything else is not an option.
    fn control(&mut self, lua: &Lua, option: u8, header: &mut Header) -> mlua::Result<()> {
        match option {
            b' ' => {}
            b'>' => header.big_endian = true,
            b'<' => header.big_endian = false,
            b'!' => {
                let align = self.count(lua, MAX_ALIGN)?;
                if align <= 0 || align & (align - 1) != 0 {
                    return Err(raise(lua, format!("alignment {align} is not a power of 2")));
                }
                header.align = align as usize;
            }
            _ => {
                let shown = String::from_utf8_lossy(&[option]).into_owned();
                return Err(arg_error(
                    lua,
                    1,
                    format!("invalid format option '{shown}'"),
                ));
            }
        }
        Ok(())
    }
}

/// `gettoalign`: zero bytes that bring `offset` to the alignment of an item of `size` bytes.
fn padding(offset: usize, header: &Header, option: u8, size: usize) -> usize {
    if size == 0 || option == b'c' {
        return 0;
    }
    let size = size.min(header.align);
    size.wrapping_sub(offset & size.wrapping_sub(1)) & size.wrapping_sub(1)
}

fn is_integer_option(option: u8) -> bool {
    matches!(
        option,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

/// C's conversion of a double to `unsigned long`, as `putinteger` does it: negatives through
/// `long`, the rest as gcc's x86-64 code converts (0 from 2^64 up, `2^63` for NaN).
fn to_word(number: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if number < 0.0 || number.is_nan() {
        truncate_to_integer(number) as u64
    } else if number < TWO_63 {
        number as u64
    } else if number < 2.0 * TWO_63 {
        (number - TWO_63) as u64 ^ (1 << 63)
    } else {
        0
    }
}

/// Appends `bytes` (in little-endian order) in the header's byte order.
fn put_ordered(out: &mut Vec<u8>, bytes: &[u8], big_endian: bool) {
    if big_endian {
        out.extend(bytes.iter().rev());
    } else {
        out.extend_from_slice(bytes);
    }
}

/// `struct.pack(fmt, v1, v2, ...)`.
fn pack(lua: &Lua, mut args: MultiValue) -> mlua::Result<mlua::LuaString> {
    let format_text = check_bytes(lua, &args, 1)?;
    // C pushes a nil after the arguments before it starts, so the first missing value is a nil
    // rather than "no value" in its complaint.
    args.push_back(Value::Nil);
    let format_bytes = format_text.as_bytes();
    let mut format = Format::new(&format_bytes);
    let mut header = Header::default();
    let mut next_arg = 2;
    let mut out = Vec::new();
    while let Some(option) = format.next_option() {
        let mut size = format.size_of(lua, option)?;
        let pad = padding(out.len(), &header, option, size);
        out.resize(out.len() + pad, 0);
        match option {
            _ if is_integer_option(option) => {
                let word = to_word(check_number(lua, &args, next_arg)?);
                next_arg += 1;
                let mut bytes = [0u8; MAX_INT_SIZE as usize];
                bytes[..8].copy_from_slice(&word.to_le_bytes());
                put_ordered(&mut out, &bytes[..size], header.big_endian);
            }
            b'x' => out.push(0),
            b'f' => {
                let number = check_number(lua, &args, next_arg)? as f32;
                next_arg += 1;
                put_ordered(&mut out, &number.to_le_bytes(), header.big_endian);
            }
            b'd' => {
                let number = check_number(lua, &args, next_arg)?;
                next_arg += 1;
                put_ordered(&mut out, &number.to_le_bytes(), header.big_endian);
            }
            b'c' | b's' => {
                let text = check_bytes(lua, &args, next_arg)?;
                next_arg += 1;
                let text = text.as_bytes();
                if size == 0 {
                    size = text.len();
                }
                if text.len() < size {
                    // Redis names the argument after the string, as `arg++` ran first.
                    return Err(arg_error(lua, next_arg as i64, "string too short"));
                }
                out.extend_from_slice(&text[..size]);
                if option == b's' {
                    out.push(0);
                }
            }
            _ => format.control(lua, option, &mut header)?,
        }
    }
    lua.create_string(&out)
}

/// `struct.unpack(fmt, data [, init])`: the values, then the position after the last byte read.
fn unpack(lua: &Lua, args: MultiValue) -> mlua::Result<MultiValue> {
    let format_text = check_bytes(lua, &args, 1)?;
    let format_bytes = format_text.as_bytes();
    let data_text = check_bytes(lua, &args, 2)?;
    let data = data_text.as_bytes();
    let init = opt_integer(lua, &args, 3, 1)?;
    if init == 0 {
        return Err(arg_error(lua, 3, "offset must be 1 or greater"));
    }
    // `size_t` arithmetic: a negative start wraps to a huge offset and fails the length check.
    let mut pos = (init as u64).wrapping_sub(1) as usize;
    let mut format = Format::new(&format_bytes);
    let mut header = Header::default();
    let mut results: Vec<Value> = Vec::new();
    let too_short = |lua: &Lua| arg_error(lua, 2, "data string too short");
    let fits = |pos: usize, size: usize| size <= data.len() && pos <= data.len() - size;
    while let Some(option) = format.next_option() {
        let mut size = format.size_of(lua, option)?;
        pos = pos.wrapping_add(padding(pos, &header, option, size));
        if !fits(pos, size) {
            return Err(too_short(lua));
        }
        if args.len() + results.len() + 2 > C_STACK_SLOTS {
            return Err(raise(lua, "stack overflow (too many results)"));
        }
        match option {
            _ if is_integer_option(option) => {
                let signed = option.is_ascii_lowercase();
                results.push(Value::Number(read_integer(
                    &data[pos..pos + size],
                    &header,
                    signed,
                )));
            }
            b'x' => {}
            b'f' => {
                let mut bytes: [u8; 4] = data[pos..pos + 4].try_into().expect("4 bytes");
                if header.big_endian {
                    bytes.reverse();
                }
                results.push(Value::Number(f64::from(f32::from_le_bytes(bytes))));
            }
            b'd' => {
                let mut bytes: [u8; 8] = data[pos..pos + 8].try_into().expect("8 bytes");
                if header.big_endian {
                    bytes.reverse();
                }
                results.push(Value::Number(f64::from_le_bytes(bytes)));
            }
            b'c' => {
                if size == 0 {
                    let previous = match results.last() {
                        Some(value) => lua.coerce_number(value.clone())?,
                        None => None,
                    };
                    let Some(length) = previous else {
                        return Err(raise(lua, "format 'c0' needs a previous size"));
                    };
                    results.pop();
                    size = to_word(length) as usize;
                    if !fits(pos, size) {
                        return Err(too_short(lua));
                    }
                }
                results.push(Value::String(lua.create_string(&data[pos..pos + size])?));
            }
            b's' => {
                let Some(length) = data[pos..].iter().position(|&b| b == 0) else {
                    return Err(raise(lua, "unfinished string in data"));
                };
                size = length + 1;
                results.push(Value::String(lua.create_string(&data[pos..pos + length])?));
            }
            _ => format.control(lua, option, &mut header)?,
        }
        pos = pos.wrapping_add(size);
    }
    results.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(MultiValue::from_vec(results))
}

/// `getinteger`: the low 64 bits of the bytes in the header's order, sign-extended from the
/// item's top bit for a signed option.
fn read_integer(bytes: &[u8], header: &Header, signed: bool) -> f64 {
    let mut word: u64 = 0;
    let mut take = |byte: &u8| word = (word << 8) | u64::from(*byte);
    if header.big_endian {
        bytes.iter().for_each(&mut take);
    } else {
        bytes.iter().rev().for_each(&mut take);
    }
    if !signed {
        return word as f64;
    }
    // C shifts by `size * 8 - 1`, which x86 takes modulo 64.
    let mask = u64::MAX.wrapping_shl((bytes.len() * 8).wrapping_sub(1) as u32);
    if word & mask != 0 {
        word |= mask;
    }
    word as i64 as f64
}

/// `struct.size(fmt)`: the bytes `pack` would produce, for formats of fixed size.
fn size(lua: &Lua, args: MultiValue) -> mlua::Result<f64> {
    let format_text = check_bytes(lua, &args, 1)?;
    let format_bytes = format_text.as_bytes();
    let mut format = Format::new(&format_bytes);
    let mut header = Header::default();
    let mut pos: usize = 0;
    while let Some(option) = format.next_option() {
        let size = format.size_of(lua, option)?;
        pos = pos.wrapping_add(padding(pos, &header, option, size));
        if option == b's' {
            return Err(arg_error(lua, 1, "option 's' has no fixed size"));
        } else if option == b'c' && size == 0 {
            return Err(arg_error(lua, 1, "option 'c0' has no fixed size"));
        }
        if !option.is_ascii_alphanumeric() {
            format.control(lua, option, &mut header)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos as i64 as f64)
}
