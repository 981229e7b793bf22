//! The simulator's modules point one way (the arrows in the crate doc): the history names neither
//! the world nor the checkers, the checkers do not name the world, and the servers name neither.
//!
//! A circle between them is easy to close by one `use` and hard to see afterwards, so this test
//! reads the sources and names the line that closes one.

use std::path::{Path, PathBuf};

/// Each layer's files (relative to `src/`; a folder stands for every file in it) and the modules
/// (and their main types) it must not name.
const RULES: &[(&[&str], &[&str])] = &[
    (&["history.rs", "history"], &["world", "World", "checkers"]),
    (&["checkers.rs"], &["world", "World"]),
    (
        &[
            "server.rs",
            "on_engine.rs",
            "engine_server.rs",
            "cluster_server.rs",
        ],
        &["world", "World", "checkers"],
    ),
];

/// Every `.rs` file at `path`: the file itself, or those below the folder.
fn sources(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(path) {
        let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for entry in entries {
            out.extend(sources(&entry));
        }
    }
    out.retain(|p| p.extension().is_some_and(|e| e == "rs"));
    out
}

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

/// Every line of the layer's files that names one of `forbidden`, as `file:line: name`.
fn offences(src: &Path, files: &[&str], forbidden: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for file in files {
        let paths = sources(&src.join(file));
        assert!(!paths.is_empty(), "{file} is gone: move its rule with it");
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("a source file reads");
            for (n, line) in text.lines().enumerate() {
                for name in names(line).into_iter().filter(|w| forbidden.contains(w)) {
                    let shown = path.strip_prefix(src).unwrap_or(&path).display();
                    out.push(format!("src/{shown}:{}: names `{name}`", n + 1));
                }
            }
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
