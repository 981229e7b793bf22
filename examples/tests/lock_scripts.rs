//! The `lock-scripts` binary prints each of the lock's Lua bodies exactly, and lists their names.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_lock-scripts");

#[test]
fn prints_the_lock_s_lua_body_exactly() {
    for script in lock_core::script::all() {
        let out = Command::new(BIN)
            .arg(script.name)
            .output()
            .expect("the binary runs");
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), script.body);
    }
    let out = Command::new(BIN)
        .arg("nope")
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn lists_every_script_by_name_when_given_none() {
    let out = Command::new(BIN).output().expect("the binary runs");
    assert!(out.status.success());
    let names: Vec<&str> = lock_core::script::all().iter().map(|s| s.name).collect();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        names.join("\n") + "\n"
    );
}
