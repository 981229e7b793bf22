//! The `fake-redis-server` binary itself: it serves on the port it logs, stops gracefully on
//! SIGTERM, refuses contradictory flags, and prints the lock's script bodies for `SCRIPT LOAD`.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use support::binary::{BIN, PATIENCE, start, wait_for_exit};

#[test]
fn the_binary_serves_the_virtual_clock_and_stops_on_sigterm() {
    let (mut child, port) = start(&["--clock", "virtual", "--epoch-ms", "1000"]);
    let mut client = TcpStream::connect(("127.0.0.1", port)).expect("it listens");
    client.set_read_timeout(Some(PATIENCE)).unwrap();
    client.write_all(b"FAKE.ADVANCE 5\r\n").unwrap();
    let mut reply = [0u8; 7];
    client.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b":1005\r\n");
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    assert!(
        wait_for_exit(&mut child).success(),
        "a graceful stop exits 0"
    );
    // The open connection was closed by the server.
    let mut rest = Vec::new();
    assert_eq!(
        client.read_to_end(&mut rest).map(|_| rest.len()).ok(),
        Some(0)
    );
}

#[test]
fn epoch_ms_without_the_virtual_clock_is_refused() {
    let out = Command::new(BIN)
        .args(["--epoch-ms", "5"])
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--clock virtual"));
}

#[test]
fn print_script_prints_the_lock_s_lua_body_exactly() {
    for script in lock_core::script::all() {
        let out = Command::new(BIN)
            .args(["--print-script", script.name])
            .output()
            .expect("the binary runs");
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), script.body);
    }
    let out = Command::new(BIN)
        .args(["--print-script", "nope"])
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(2));
}
