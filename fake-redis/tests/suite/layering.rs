//! Which of fake-redis's layers may name which: every arrow points one way, down.
//!
//! | layer (`src/…`) | may name                                      | must never name                                     |
//! |-----------------|-----------------------------------------------|-----------------------------------------------------|
//! | `resp/`         | nothing of the crate's but itself             | `engine`, `cmd`, `lua`, `inprocess`, `server`, `fixture` |
//! | `engine/`       | `resp`, `clock`, `fault`                      | `cmd`, `lua`, `inprocess`, `server`, `fixture`      |
//! | `cmd/`          | `engine`, `resp`, `lua` (for `EVAL`, `FCALL`) | `inprocess`, `server`, `fixture`                    |
//! | `lua/`          | `cmd` (`redis.call`), `engine`, `resp`        | `inprocess`, `server`, `fixture`                    |
//! | `inprocess/`    | `engine`, `resp`, `fault`, `clock`            | `server`, `fixture`                                 |
//! | `server/`       | everything below it                           | `fixture`                                           |
//! | `fixture/`      | everything below it (the test handle, on top) |                                                     |
//!
//! The engine is the server's state; it never calls up into the layer that runs commands. What
//! it needs from that layer (the end of a command, the users a server starts with) it is handed
//! when it is built, and the Lua states it keeps for the scripts are opaque to it. This test
//! enforces each row's last column by reading the sources: no file under a layer's folder names
//! a module it must never name, as a module path. One exception: `cmd/` has a `server` module of
//! its own (the server commands), which a path does not tell from the crate's, so under `cmd/`
//! the test holds `inprocess` and `fixture` only. Doc links count: a link is an arrow a reader
//! follows. (The compiler does not forbid `cmd` and `lua` naming each other: they call each
//! other by design, `EVAL` down into Lua and `redis.call` back.)

use std::path::Path;

#[path = "../../../scripts/layering.rs"]
mod sources;

/// The layers `dir` (under `src/`) may not name.
const RULES: &[(&str, &[&str])] = &[
    ("engine", &["cmd", "lua", "inprocess", "server", "fixture"]),
    (
        "resp",
        &["engine", "cmd", "lua", "inprocess", "server", "fixture"],
    ),
    // `cmd` has a `server` module of its own (the server commands), so only the others count.
    ("cmd", &["inprocess", "fixture"]),
    ("lua", &["inprocess", "server", "fixture"]),
    ("inprocess", &["server", "fixture"]),
    ("server", &["fixture"]),
];

#[test]
fn the_engine_and_the_wire_protocol_name_nothing_above_them() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for &(dir, forbidden) in RULES {
        for o in sources::offences(&src, dir, forbidden, named_modules) {
            found.push(format!(
                "src/{}:{}: names `{}` (src/{dir}/ may not)",
                o.file, o.line, o.name
            ));
        }
    }
    assert!(
        found.is_empty(),
        "arrows pointing up:\n{}",
        found.join("\n")
    );
}

/// The crate's top-level modules `text` names, each with the (1-based) line it is named on:
/// `crate::m`, `fake_redis::m`, `super::super::m` (any number of `super`s: a file's parents
/// hold no module of those names, so any such path leaves its layer), and each `m` of a group,
/// `crate::{m, n::x}`, across lines too. Comments and doc links are read like code.
fn named_modules(text: &str) -> Vec<(usize, String)> {
    let bytes = text.as_bytes();
    let line_of = |at: usize| 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
    let mut out = Vec::new();
    for root in ["crate::", "fake_redis::", "super::"] {
        let mut from = 0;
        while let Some(found) = text[from..].find(root) {
            let start = from + found;
            from = start + root.len();
            // `super::` preceded by `super::` was seen as part of the first; `my_crate::` is
            // not `crate::`.
            if start > 0 && is_word(bytes[start - 1]) || text[..start].ends_with("::") {
                continue;
            }
            let mut at = start + root.len();
            if root == "super::" {
                while text[at..].starts_with("super::") {
                    at += "super::".len();
                }
            }
            if bytes.get(at) == Some(&b'{') {
                for (offset, name) in group_heads(&text[at + 1..]) {
                    out.push((line_of(at + 1 + offset), name));
                }
            } else {
                let end = at + text[at..].bytes().take_while(|&b| is_word(b)).count();
                if end > at {
                    out.push((line_of(start), text[at..end].to_owned()));
                }
            }
        }
    }
    out.sort_by_key(|&(line, _)| line);
    out
}

/// The first segment of each item of a `{…}` group whose `{` was just before `group`, with its
/// offset in `group`: `cmd` and `lua` in `cmd, lua::LuaScripts}`.
fn group_heads(group: &str) -> Vec<(usize, String)> {
    let bytes = group.as_bytes();
    let mut heads = Vec::new();
    let (mut depth, mut item_start) = (0usize, true);
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' if depth == 0 => break,
            b'}' => depth -= 1,
            b',' if depth == 0 => item_start = true,
            _ if item_start && is_word(b) && depth == 0 => {
                item_start = false;
                let len = bytes[i..].iter().take_while(|&&c| is_word(c)).count();
                heads.push((i, group[i..i + len].to_owned()));
            }
            _ => {}
        }
    }
    heads
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[test]
fn the_reader_finds_every_form_of_a_path() {
    let text = "use crate::cmd::Cx;\n/// [`x`](crate::lua::X)\nuse crate::{\n    clock, lua::Y,\n};\nsuper::super::server::Z;\nuse super::db;\nmy_crate::cmd;\n";
    let named = named_modules(text);
    assert_eq!(
        named,
        [
            (1, "cmd".to_owned()),
            (2, "lua".to_owned()),
            (4, "clock".to_owned()),
            (4, "lua".to_owned()),
            (6, "server".to_owned()),
            (7, "db".to_owned()),
        ]
    );
}
