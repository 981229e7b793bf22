//! The `fake-redis-server` binary itself: it serves on the port it logs, stops gracefully on
//! SIGTERM, refuses contradictory flags, and prints the lock's script bodies for `SCRIPT LOAD`.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;
use support::binary::{BIN, PATIENCE, exit_within, start, start_logging, wait_for_exit};

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

/// Reads one `+OK`-sized simple reply line.
fn read_line(conn: &mut TcpStream) -> Vec<u8> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while !line.ends_with(b"\r\n") {
        conn.read_exact(&mut byte).unwrap();
        line.push(byte[0]);
    }
    line
}

#[test]
fn sigterm_stops_the_server_while_a_client_leaves_its_replies_unread() {
    let (mut child, port) = start(&[]);
    let mut client = TcpStream::connect(("127.0.0.1", port)).expect("it listens");
    client.set_read_timeout(Some(PATIENCE)).unwrap();
    let value = vec![b'x'; 1 << 20];
    let mut set = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n", value.len()).into_bytes();
    set.extend_from_slice(&value);
    set.extend_from_slice(b"\r\n");
    client.write_all(&set).unwrap();
    assert_eq!(read_line(&mut client), b"+OK\r\n");
    // 64 MiB of replies, far beyond what the sockets' buffers hold, and never read: the server's
    // write to this client blocks.
    client.write_all(&b"GET big\r\n".repeat(64)).unwrap();
    let mut admin = TcpStream::connect(("127.0.0.1", port)).expect("it listens");
    admin.set_read_timeout(Some(PATIENCE)).unwrap();
    // Once a GET has run, the server is writing replies the client does not read.
    for _ in 0..3000 {
        admin.write_all(b"CLIENT LIST\r\n").unwrap();
        let header = read_line(&mut admin);
        let len: usize = std::str::from_utf8(&header[1..header.len() - 2])
            .unwrap()
            .parse()
            .unwrap();
        let mut list = vec![0u8; len + 2];
        admin.read_exact(&mut list).unwrap();
        if String::from_utf8_lossy(&list).contains("cmd=get") {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    // Redis stops in a few tens of milliseconds here; the fake used to wait out a 5 s grace for
    // the blocked write. The bound is loose for a loaded machine, and tight against the grace.
    let status = exit_within(&mut child, Duration::from_secs(3));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(
        status.is_some_and(|s| s.success()),
        "SIGTERM must stop the server within 3 s whatever its clients leave unread: {status:?}"
    );
    drop(client);
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

/// Runs the binary on the virtual clock with `args`: the epoch its log names, and `FAKE.TIME`.
fn epoch_and_time(args: &[&str]) -> (i64, i64) {
    let mut all = vec!["--clock", "virtual"];
    all.extend_from_slice(args);
    let (mut child, port, log) = start_logging(&all);
    let epoch = log
        .iter()
        .find_map(|line| line.split("--epoch-ms ").nth(1))
        .and_then(|rest| rest.split(')').next())
        .map(|e| e.trim().parse::<i64>().expect("the epoch is a number"))
        .expect("the log names the epoch");
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("it listens");
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    conn.write_all(b"FAKE.TIME\r\n").unwrap();
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"\r\n") {
        conn.read_exact(&mut byte).unwrap();
        reply.push(byte[0]);
    }
    child.kill().expect("the server stops");
    let _ = child.wait();
    let time = std::str::from_utf8(&reply[1..reply.len() - 2])
        .unwrap()
        .parse()
        .unwrap();
    (epoch, time)
}

#[test]
fn the_virtual_clock_starts_at_the_host_s_time_and_the_log_names_it() {
    let unix_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    };
    let before = unix_ms();
    let (epoch, time) = epoch_and_time(&[]);
    let after = unix_ms();
    assert!(
        (before..=after).contains(&epoch),
        "{before} <= {epoch} <= {after}"
    );
    assert_eq!(
        time, epoch,
        "nothing moves the virtual clock but FAKE.ADVANCE"
    );
}

#[test]
fn epoch_ms_pins_the_virtual_clock_and_is_logged() {
    assert_eq!(epoch_and_time(&["--epoch-ms", "1000"]), (1000, 1000));
}

#[test]
fn server_version_picks_the_release_and_refuses_another_word() {
    let (mut child, port) = start(&["--server-version", "redis-7.4"]);
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("it listens");
    conn.set_read_timeout(Some(PATIENCE)).unwrap();
    // WAITAOF exists from Redis 7.2 on: the 7.4 server answers it, as redis-server 7.4.1 does.
    conn.write_all(b"WAITAOF 0 0 0\r\n").unwrap();
    let mut reply = [0u8; 12];
    conn.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"*2\r\n:0\r\n:0\r\n");
    child.kill().expect("the server stops");
    let _ = child.wait();
    let out = Command::new(BIN)
        .args(["--server-version", "redis-7.2"])
        .output()
        .expect("the binary runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("redis-7.0, redis-7.4, valkey-9.1"));
}
