//! The simulator's modules point one way (the arrows in the crate doc): the history names neither
//! the world nor the checkers, the checkers do not name the world, and the servers name neither.
//!
//! A circle between them is easy to close by one `use` and hard to see afterwards, so this test
//! reads the sources and names the line that closes one.

use std::path::Path;

#[path = "../../../scripts/layering.rs"]
mod sources;

/// Each layer's files (relative to `src/`; a folder stands for every file in it) and the modules
/// (and their main types) it must not name.
const RULES: &[(&[&str], &[&str])] = &[
    (
        &["history.rs", "history"],
        &["world", "World", "checkers", "race"],
    ),
    (&["checkers.rs"], &["world", "World", "race"]),
    (
        &[
            "server.rs",
            "on_engine.rs",
            "engine_server.rs",
            "cluster_server.rs",
        ],
        &["world", "World", "checkers", "race"],
    ),
    // The simulator's world and the race harness are two drivers side by side: neither names
    // the other.
    (&["world"], &["race", "Race"]),
    (&["race"], &["world", "World"]),
    // The renderer knows nothing of locks or of who draws with it.
    (
        &["timeline"],
        &[
            "race",
            "world",
            "checkers",
            "history",
            "lock_core",
            "fake_redis",
        ],
    ),
];

/// The names a line of code uses: its identifiers, outside comments and string literals.
fn names(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or_default();
    let mut out = Vec::new();
    for (i, part) in code.split('"').enumerate() {
        if i % 2 == 1 {
            continue;
        }
        out.extend(
            part.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| !w.is_empty()),
        );
    }
    out
}

/// Each identifier of `text` outside comments and string literals, with its 1-based line.
fn names_by_line(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        out.extend(names(line).into_iter().map(|w| (n + 1, w.to_owned())));
    }
    out
}

/// Every line of the layer's files that names one of `forbidden`, as `file:line: name`.
fn offences(src: &Path, files: &[&str], forbidden: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for file in files {
        for o in sources::offences(src, file, forbidden, names_by_line) {
            out.push(format!("src/{}:{}: names `{}`", o.file, o.line, o.name));
        }
    }
    out
}

#[test]
fn every_arrow_between_the_simulators_modules_points_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (files, forbidden) in RULES {
        found.extend(offences(&src, files, forbidden));
    }
    assert!(
        found.is_empty(),
        "a lower layer names a higher one (see the arrows in sim-tests' crate doc):\n{}",
        found.join("\n")
    );
}
