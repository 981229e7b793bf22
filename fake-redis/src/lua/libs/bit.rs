//! `bit`: LuaBitOp 1.0, the 32-bit integer operations Redis gives scripts.
//!
//! Every argument becomes a 32-bit word the way LuaBitOp does it: add 2^52 + 2^51 to the double
//! and keep the low 32 bits of its representation, which rounds to the nearest integer (ties to
//! even) and wraps modulo 2^32. Results come back as signed 32-bit numbers, so
//! `bit.tobit(0xffffffff)` is `-1`. Shift counts use their low five bits.

use mlua::{Lua, MultiValue, Table};

use super::check_number;

/// The `bit` table.
pub(super) fn library(lua: &Lua) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    bit.set("tobit", unary(lua, |word| word)?)?;
    bit.set("bnot", unary(lua, |word| !word)?)?;
    bit.set("bswap", unary(lua, u32::swap_bytes)?)?;
    bit.set("band", fold(lua, |a, b| a & b)?)?;
    bit.set("bor", fold(lua, |a, b| a | b)?)?;
    bit.set("bxor", fold(lua, |a, b| a ^ b)?)?;
    bit.set("lshift", shift(lua, |word, count| word << count)?)?;
    bit.set("rshift", shift(lua, |word, count| word >> count)?)?;
    bit.set(
        "arshift",
        shift(lua, |word, count| ((word as i32) >> count) as u32)?,
    )?;
    bit.set("rol", shift(lua, u32::rotate_left)?)?;
    bit.set("ror", shift(lua, u32::rotate_right)?)?;
    bit.set("tohex", lua.create_function(tohex)?)?;
    Ok(bit)
}

/// LuaBitOp's `barg`: argument `position` as a 32-bit word.
fn word(lua: &Lua, args: &MultiValue, position: usize) -> mlua::Result<u32> {
    check_number(lua, args, position).map(to_word)
}

/// The low 32 bits of `number + 2^52 + 2^51`, LuaBitOp's conversion of a double to a word.
fn to_word(number: f64) -> u32 {
    (number + 6_755_399_441_055_744.0).to_bits() as u32
}

/// A word handed back to Lua: signed, as LuaBitOp's `BRET` pushes it.
fn to_number(word: u32) -> f64 {
    f64::from(word as i32)
}

fn unary(lua: &Lua, op: fn(u32) -> u32) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: MultiValue| Ok(to_number(op(word(lua, &args, 1)?))))
}

/// `band`, `bor`, `bxor`: the first argument, then the others from the last one down.
fn fold(lua: &Lua, op: fn(u32, u32) -> u32) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let mut acc = word(lua, &args, 1)?;
        for position in (2..=args.len()).rev() {
            acc = op(acc, word(lua, &args, position)?);
        }
        Ok(to_number(acc))
    })
}

fn shift(lua: &Lua, op: fn(u32, u32) -> u32) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let value = word(lua, &args, 1)?;
        let count = word(lua, &args, 2)? & 31;
        Ok(to_number(op(value, count)))
    })
}

/// `bit.tohex(x [, n])`: the low `|n|` hex digits (at most 8, default 8), upper case for a
/// negative `n`.
fn tohex(lua: &Lua, args: MultiValue) -> mlua::Result<mlua::LuaString> {
    let mut value = word(lua, &args, 1)?;
    let width = if args.len() < 2 {
        8
    } else {
        word(lua, &args, 2)? as i32
    };
    let (width, digits) = if width < 0 {
        (width.unsigned_abs(), b"0123456789ABCDEF")
    } else {
        (width.unsigned_abs(), b"0123456789abcdef")
    };
    let width = width.min(8) as usize;
    let mut text = [0u8; 8];
    for slot in text[..width].iter_mut().rev() {
        *slot = digits[(value & 15) as usize];
        value >>= 4;
    }
    lua.create_string(&text[..width])
}
