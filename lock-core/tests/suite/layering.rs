//! The layers of lock-core, held by reading its sources: the machine (`src/machine/`) decides
//! everything and does no I/O, so it names no driver, runtime, clock or backend; the scripts
//! (`src/script/`) are what the server runs, so they name neither the machine nor the client.
//!
//! A rule in a document is kept by whoever remembers it; this test keeps it on every run. It
//! reads the code as tokens, without comments and string literals (a comment may say "the
//! client", an error text may too), but with the targets of doc links, which are references as
//! real as a `use`. A failure names each file and line.

use std::path::Path;

#[path = "../../../scripts/layering.rs"]
mod sources;

/// What the machine must not name: the tokio client and its runtime, a clock read, the backends
/// (I/O), the fake.
const MACHINE_FORBIDS: &[&str] = &[
    "client",
    "tokio",
    "Instant",
    "SystemTime",
    "redis_backend",
    "cluster_backend",
    "sentinel_backend",
    "fake",
    "fake_redis",
];

/// What the scripts must not name: the layers that use them.
const SCRIPT_FORBIDS: &[&str] = &["machine", "client"];

#[test]
fn the_machine_names_no_driver_runtime_clock_or_backend() {
    assert_names_none(
        "machine",
        MACHINE_FORBIDS,
        "the machine must stay sans-IO (docs/ARCHITECTURE.md, \"Pure cores\")",
    );
}

#[test]
fn the_scripts_name_neither_the_machine_nor_the_client() {
    assert_names_none(
        "script",
        SCRIPT_FORBIDS,
        "the scripts sit below the machine and the client",
    );
}

#[test]
fn the_reader_sees_code_and_doc_links_but_not_prose_or_strings() {
    let source = "//! the client (prose), [`x`](crate::client::X)\n\
                  // tokio in a comment\n\
                  /* Instant in /* a nested */ block */\n\
                  let s = \"fake\"; let r = r#\"SystemTime\"#; let c = '\"'; let l: &'static str;\n\
                  use tokio::time::Instant;\n";
    let names: Vec<(usize, String)> = names(source);
    assert_eq!(
        names
            .iter()
            .filter(
                |(_, n)| ["client", "tokio", "Instant", "fake", "SystemTime"].contains(&n.as_str())
            )
            .collect::<Vec<_>>(),
        [
            &(1, "client".to_owned()),
            &(5, "tokio".to_owned()),
            &(5, "Instant".to_owned())
        ]
    );
}

/// Fails, saying `why` and naming every place, if anything under `src/<dir>/` names one of
/// `forbidden`.
fn assert_names_none(dir: &str, forbidden: &[&str], why: &str) {
    let found = violations(dir, forbidden);
    assert!(found.is_empty(), "{why}:\n{}", found.join("\n"));
}

/// Every place under `src/<dir>/` that names one of `forbidden`, as `file:line: names `x``.
fn violations(dir: &str, forbidden: &[&str]) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    sources::offences(&root, dir, forbidden, names)
        .into_iter()
        .map(|o| format!("src/{}:{}: names `{}`", o.file, o.line, o.name))
        .collect()
}

/// The identifiers of `source` with their 1-based lines: those of its code, and those of the
/// targets of its doc comments' links (`[text](path)`); comments and literals are skipped.
fn names(source: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            let end = chars[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |n| i + n);
            let comment: String = chars[i..end].iter().collect();
            if comment.starts_with("///") || comment.starts_with("//!") {
                for target in link_targets(&comment) {
                    out.extend(identifiers(&target).into_iter().map(|n| (line, n)));
                }
            }
            i = end;
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'r' || c == 'b') && starts_string(&chars, i)) {
            i = skip_string(&chars, i, &mut line);
        } else if c == '\'' {
            // A char literal ('x', '\n', '"'), or a lifetime ('a), whose name is read on.
            if at(i + 1) == '\\' {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((line, chars[start..i].iter().collect()));
        } else {
            i += 1;
        }
    }
    out
}

/// Whether a string literal with a prefix (`r"`, `r#"`, `b"`, `br"`, `br#"`) starts at `i`.
fn starts_string(chars: &[char], i: usize) -> bool {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return false;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) == Some(&'r') {
        j += 1;
        while chars.get(j) == Some(&'#') {
            j += 1;
        }
    }
    j > i && chars.get(j) == Some(&'"')
}

/// Skips the string literal starting at `i` (a prefix, hashes, the quoted text), counting lines.
fn skip_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut raw = false;
    while chars[i] != '"' && chars[i] != '#' {
        raw |= chars[i] == 'r';
        i += 1;
    }
    let mut hashes = 0;
    while chars[i] == '#' {
        hashes += 1;
        i += 1;
    }
    i += 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if !raw => {
                *line += usize::from(chars.get(i + 1) == Some(&'\n'));
                i += 2;
            }
            '"' if chars[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes =>
            {
                return i + 1 + hashes;
            }
            c => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    i
}

/// The targets of the Markdown links in a doc comment: `[text](target)`.
fn link_targets(comment: &str) -> Vec<String> {
    comment
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')').map(|(target, _)| target.to_owned()))
        .collect()
}

fn identifiers(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|s| s.starts_with(|c: char| c.is_alphabetic() || c == '_'))
        .map(str::to_owned)
        .collect()
}
