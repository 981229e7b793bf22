//! Replies compared byte for byte: a connection to a redis-server that returns each reply's bytes
//! as the server wrote them, and the runner of the script and function tables (`lua_scripts.rs`,
//! `lua_functions.rs`), which sends each case to the server and to a fresh engine.

use super::OwnServer;
use bytes::{Bytes, BytesMut};
use fake_redis::resp::{ReplyParser, encode};
use fake_redis::{Engine, ManualClock};
use std::io::{Read, Write};
use std::net::TcpStream;

/// One case: commands, each a list of arguments, run in order on both servers.
pub type Case = &'static [&'static [&'static str]];

/// A connection to the test's redis-server.
pub struct Real {
    stream: TcpStream,
    buf: BytesMut,
    parser: ReplyParser,
}

impl Real {
    pub fn connect(port: u16) -> Real {
        for _ in 0..200 {
            if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) {
                // A reply that never comes fails the test instead of hanging it.
                stream
                    .set_read_timeout(Some(std::time::Duration::from_secs(30)))
                    .unwrap();
                return Real {
                    stream,
                    buf: BytesMut::new(),
                    parser: ReplyParser::new(),
                };
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("redis-server did not start on port {port}");
    }

    /// Sends `argv` and returns the reply's bytes, exactly as the server wrote them.
    pub fn call(&mut self, argv: &[&[u8]]) -> Vec<u8> {
        self.send(argv);
        self.reply()
    }

    /// Sends `argv` without waiting for its reply.
    pub fn send(&mut self, argv: &[&[u8]]) {
        let mut req = format!("*{}\r\n", argv.len()).into_bytes();
        for a in argv {
            req.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            req.extend_from_slice(a);
            req.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&req).unwrap();
    }

    /// The next reply's bytes, exactly as the server wrote them.
    pub fn reply(&mut self) -> Vec<u8> {
        loop {
            let before = self.buf.clone();
            if self.parser.parse(&mut self.buf).unwrap().is_some() {
                return before[..before.len() - self.buf.len()].to_vec();
            }
            self.read_more();
        }
    }

    /// Every byte the server writes before `end`, which is read too (a marker's reply).
    pub fn read_until(&mut self, end: &[u8]) -> Vec<u8> {
        loop {
            if let Some(at) = self.buf.windows(end.len()).position(|w| w == end) {
                let out = self.buf.split_to(at + end.len());
                return out[..at].to_vec();
            }
            self.read_more();
        }
    }

    /// Every byte the server writes until it closes the connection.
    pub fn read_to_close(&mut self) -> Vec<u8> {
        let mut rest = Vec::new();
        self.stream.read_to_end(&mut rest).unwrap();
        let mut all = self.buf.split().to_vec();
        all.extend_from_slice(&rest);
        all
    }

    fn read_more(&mut self) {
        let mut chunk = [0u8; 4096];
        let n = self.stream.read(&mut chunk).unwrap_or_else(|e| {
            panic!(
                "no reply from redis-server ({e}); received {:?}",
                String::from_utf8_lossy(&self.buf)
            )
        });
        assert!(n > 0, "redis-server closed the connection");
        self.buf.extend_from_slice(&chunk[..n]);
    }
}

/// Runs every case on a redis-server of its own and on a fresh engine, in `protocol`, after the
/// `reset` commands on the server; one line per reply whose bytes differ.
pub fn compare(cases: &[Case], reset: &[&[&[u8]]], protocol: u8) -> Vec<String> {
    let server = OwnServer::start();
    let mut real = Real::connect(server.port);
    let mut mismatches = Vec::new();
    for case in cases {
        for command in reset {
            real.call(command);
        }
        let mut engine = Engine::new(ManualClock::default());
        let client = engine.connect();
        if protocol == 3 {
            real.call(&[b"HELLO", b"3"]);
            engine.execute(
                client,
                &[Bytes::from_static(b"HELLO"), Bytes::from_static(b"3")],
            );
        }
        for argv in case.iter() {
            let raw: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
            let want = real.call(&raw);
            let argv: Vec<Bytes> = raw.iter().map(|a| Bytes::copy_from_slice(a)).collect();
            let mut got = BytesMut::new();
            encode(&engine.execute(client, &argv), protocol, &mut got);
            if got[..] != want[..] {
                mismatches.push(format!(
                    "RESP{protocol} {argv:?}\n   redis: {:?}\n    fake: {:?}",
                    String::from_utf8_lossy(&want),
                    String::from_utf8_lossy(&got)
                ));
            }
        }
        if protocol == 3 {
            real.call(&[b"HELLO", b"2"]);
        }
    }
    mismatches
}

/// Runs every case as `compare` does and fails with each reply whose bytes differ.
#[track_caller]
pub fn assert_same(cases: &[Case], reset: &[&[&[u8]]], protocol: u8) {
    let mismatches = compare(cases, reset, protocol);
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
