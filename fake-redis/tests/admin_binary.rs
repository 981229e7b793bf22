//! `fake-redis-server --clock virtual` starts at the host's time unless `--epoch-ms` pins it,
//! and logs the epoch either way, so a run can be replayed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Runs the binary with `args` until it listens: the epoch its log names, and `FAKE.TIME`.
fn epoch_and_time(args: &[&str]) -> (i64, i64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-redis-server"))
        .args(["--port", "0", "--clock", "virtual"])
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let mut epoch = None;
    let port: u16 = loop {
        let line = lines.next().expect("a log line").expect("readable");
        if let Some(rest) = line.split("--epoch-ms ").nth(1) {
            epoch = rest
                .trim_end_matches(')')
                .split(')')
                .next()
                .map(|e| e.trim().parse::<i64>().expect("the epoch is a number"));
        }
        if let Some(addr) = line.split("addr=").nth(1) {
            break addr.trim().rsplit(':').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("it listens");
    conn.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
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
    (epoch.expect("the log names the epoch"), time)
}

#[test]
fn the_virtual_clock_starts_at_the_host_s_time_and_the_log_names_it() {
    let before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let (epoch, time) = epoch_and_time(&[]);
    let after = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
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
