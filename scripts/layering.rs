//! The part of the layering tests that every crate shares: finding a layer's Rust sources and
//! reporting each place one of them names what the layer must not.
//!
//! fake-redis, lock-core and sim-tests each hold their layers by reading their own sources, each
//! with its own reader of names (module paths, tokens with doc links, or the identifiers of a
//! line) and its own rules. The walk over the files and the shape of a finding were written three
//! times; the suites include this file (`#[path = …] mod`) so they are written once, and a fix to
//! the walk reaches every crate.

use std::path::{Path, PathBuf};

/// Every `.rs` file at `path`: the file itself, or every one below the folder, in name order;
/// nothing when `path` does not exist.
pub fn rust_files(path: &Path) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    if !path.exists() {
        return Vec::new();
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    let mut out = Vec::new();
    for entry in entries {
        if entry.is_dir() {
            out.extend(rust_files(&entry));
        } else if entry.extension().is_some_and(|e| e == "rs") {
            out.push(entry);
        }
    }
    out
}

/// One place a layer names what it must not: the file (relative to `src/`), the 1-based line and
/// the name.
pub struct Offence {
    pub file: String,
    pub line: usize,
    pub name: String,
}

/// Every place in the sources at `src/<layer>` (a file or a folder) where `names` reads one of
/// `forbidden`, in file and line order. A layer with no sources fails: its rule would hold
/// nothing, so it has to move with the files.
pub fn offences(
    src: &Path,
    layer: &str,
    forbidden: &[&str],
    names: fn(&str) -> Vec<(usize, String)>,
) -> Vec<Offence> {
    let files = rust_files(&src.join(layer));
    assert!(
        !files.is_empty(),
        "no sources at src/{layer}: move its rule with it"
    );
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a readable source");
        let file = path
            .strip_prefix(src)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (line, name) in names(&text) {
            if forbidden.contains(&name.as_str()) {
                out.push(Offence {
                    file: file.clone(),
                    line,
                    name,
                });
            }
        }
    }
    out
}
