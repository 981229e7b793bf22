//! BENCHMARKS.md has one section per writer (`scripts/bench`, `interop/redisson/bench`), and each
//! writer replaces only its own: `scripts/bench --splice` is the part of `scripts/bench` that does
//! it, run here on files in a temporary folder.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const OURS: &str =
    "<!-- scripts/bench: begin -->\n# Benchmarks\n\nnew figures\n<!-- scripts/bench: end -->\n";

const REDISSON: &str = "<!-- interop/redisson/bench: begin -->\n## Redisson against ours\n\nits figures\n<!-- interop/redisson/bench: end -->\n";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bench-sections-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("BENCHMARKS.md")
}

/// Runs `scripts/bench --splice scripts/bench FILE` with `section` on its standard input.
fn splice(file: &Path, section: &str) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/bench");
    let mut child = Command::new("bash")
        .arg(script)
        .args(["--splice", "scripts/bench"])
        .arg(file)
        .stdin(Stdio::piped())
        .spawn()
        .expect("bash runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(section.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let text = std::fs::read_to_string(file).unwrap();
    std::fs::remove_dir_all(file.parent().unwrap()).unwrap();
    text
}

#[test]
fn a_file_from_before_the_markers_keeps_only_the_other_writers_sections() {
    let file = scratch("old");
    let old = format!("# Benchmarks\n\nold figures\n\n{REDISSON}");
    std::fs::write(&file, old).unwrap();
    assert_eq!(splice(&file, OURS), format!("{OURS}\n{REDISSON}"));
}

#[test]
fn our_section_is_replaced_in_place_and_the_others_are_untouched() {
    let file = scratch("marked");
    let old =
        "<!-- scripts/bench: begin -->\n# Benchmarks\n\nold figures\n<!-- scripts/bench: end -->\n";
    std::fs::write(&file, format!("{REDISSON}\n{old}\nafter\n")).unwrap();
    assert_eq!(splice(&file, OURS), format!("{REDISSON}\n{OURS}\nafter\n"));
}

#[test]
fn a_missing_file_gets_our_section_alone() {
    let file = scratch("missing");
    assert_eq!(splice(&file, OURS), OURS);
}
