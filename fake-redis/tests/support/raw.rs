//! Replies compared byte for byte: a connection to a redis-server that returns each reply's bytes
//! as the server wrote them, and the runner of the tables of cases (the script and function
//! tables, the admin commands'), which sends each case to the server and to a fresh engine.
//! A table's command is written as its words in one string (`"SET k v"`) or, where an argument
//! holds white space or is a constant, as a list of arguments; [`words`] reads both.

use super::OwnServer;
use bytes::{Bytes, BytesMut};
use fake_redis::resp::{ReplyParser, encode};
use fake_redis::{ClientId, Engine, Frame, ManualClock};
use std::io::{Read, Write};
use std::net::TcpStream;

/// One case: commands, each a list of arguments, run in order on both servers.
pub type Case = &'static [&'static [&'static str]];

/// The reset of a table that needs nothing but empty databases before each case.
pub const FLUSHALL: &[&[&[u8]]] = &[&[b"FLUSHALL"]];

/// A command of a table as arguments: a single string is split on white space (`"SET k v"`),
/// several strings are the arguments as they are (`["EVAL", "return 1", "0"]`).
pub fn words<'a>(command: &[&'a str]) -> Vec<&'a str> {
    match command {
        [one] => one.split_whitespace().collect(),
        several => several.to_vec(),
    }
}

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

    /// Sends `argv`; the reply's bytes, or None when the server closed the connection (before
    /// the request or instead of a reply).
    pub fn call_or_closed(&mut self, argv: &[&[u8]]) -> Option<Vec<u8>> {
        let mut req = Vec::new();
        encode_request(argv, &mut req);
        self.stream.write_all(&req).ok()?;
        loop {
            let before = self.buf.clone();
            if self.parser.parse(&mut self.buf).unwrap().is_some() {
                return Some(before[..before.len() - self.buf.len()].to_vec());
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Sends `argv` without waiting for its reply.
    pub fn send(&mut self, argv: &[&[u8]]) {
        let mut req = Vec::new();
        encode_request(argv, &mut req);
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

/// `argv` as a RESP array of bulk strings, appended to `out`.
fn encode_request(argv: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", argv.len()).as_bytes());
    for a in argv {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// What differs: `what` was sent, then the server's reply and the fake's, each on a line.
pub fn mismatch(what: &str, want: &[u8], got: &[u8]) -> String {
    format!(
        "{what}\n   redis: {:?}\n    fake: {:?}",
        String::from_utf8_lossy(want),
        String::from_utf8_lossy(got)
    )
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
        for command in case.iter() {
            let raw: Vec<&[u8]> = words(command).iter().map(|a| a.as_bytes()).collect();
            let want = real.call(&raw);
            let argv: Vec<Bytes> = raw.iter().map(|a| Bytes::copy_from_slice(a)).collect();
            let mut got = BytesMut::new();
            encode(&engine.execute(client, &argv), protocol, &mut got);
            if got[..] != want[..] {
                mismatches.push(mismatch(&format!("RESP{protocol} {argv:?}"), &want, &got));
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

/// A command of a table: `EVAL` of `script` with no keys.
#[allow(unused_macros)] // not every test binary that includes this module uses it
macro_rules! eval {
    ($script:literal) => {
        &["EVAL", $script, "0"]
    };
}
#[allow(unused_imports)]
pub(crate) use eval;

/// Two tests, in RESP2 and in RESP3, each running a table's cases after `reset` as
/// [`assert_same`] does: `same_as_redis!(CASES, RESET, name_in_resp2, name_in_resp3);`.
#[allow(unused_macros)] // not every test binary that includes this module uses it
macro_rules! same_as_redis {
    ($cases:expr, $reset:expr, $resp2:ident, $resp3:ident) => {
        #[test]
        fn $resp2() {
            $crate::support::raw::assert_same($cases, $reset, 2);
        }

        #[test]
        fn $resp3() {
            $crate::support::raw::assert_same($cases, $reset, 3);
        }
    };
}
#[allow(unused_imports)]
pub(crate) use same_as_redis;

/// A redis-server of the test's own started with `--requirepass pw`, and an engine whose
/// client, returned, has set the same password: later clients of both must authenticate.
pub fn behind_requirepass() -> (OwnServer, Engine, ClientId) {
    let server = OwnServer::start_with(&["--requirepass".into(), "pw".into()]);
    let mut engine = Engine::new(ManualClock::default());
    let admin = engine.connect();
    let set = super::argv("CONFIG SET requirepass pw");
    assert_eq!(engine.execute(admin, &set), Frame::OK);
    (server, engine, admin)
}

/// What an unauthenticated client is told, on the server and on the fake, for every command the
/// fake's `COMMAND` lists.
pub struct Sweep {
    /// How many commands `COMMAND` listed.
    pub listed: usize,
    /// One line per command whose replies differ.
    pub mismatches: Vec<String>,
    /// The commands the server answered with something other than `NOAUTH`, sorted.
    pub allowed: Vec<String>,
}

/// Sends every command the fake's `COMMAND` lists (but `QUIT`, which closes the connection and
/// needs no authentication on either server) on a fresh connection to the server on `port` and
/// on a fresh client of `engine`, whose `admin` has already locked the `default` user as the
/// server's is locked.
pub fn sweep_unauthenticated(engine: &mut Engine, admin: ClientId, port: u16) -> Sweep {
    let Frame::Array(commands) = engine.execute(admin, &[Bytes::from_static(b"COMMAND")]) else {
        panic!("COMMAND replies an array");
    };
    let mut mismatches = Vec::new();
    let mut allowed = Vec::new();
    for entry in &commands {
        let Frame::Array(fields) = entry else {
            panic!("a COMMAND entry is an array");
        };
        let (Some(Frame::Bulk(name)), Some(Frame::Integer(arity))) =
            (fields.first(), fields.get(1))
        else {
            panic!("a COMMAND entry starts with its name and arity");
        };
        if &name[..] == b"quit" {
            continue;
        }
        let container = matches!(fields.get(9), Some(Frame::Array(subs)) if !subs.is_empty());
        let request = request_for(name, *arity, container);
        let raw: Vec<&[u8]> = request.iter().map(|a| &a[..]).collect();
        let want = Real::connect(port).call_or_closed(&raw).unwrap_or_default();
        let client = engine.connect();
        let mut got = BytesMut::new();
        encode(&engine.execute(client, &request), 2, &mut got);
        if !want.starts_with(b"-NOAUTH") {
            allowed.push(String::from_utf8_lossy(name).into_owned());
        }
        if got[..] != want[..] {
            mismatches.push(format!(
                "{}: redis {:?}, fake {:?}",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(&want),
                String::from_utf8_lossy(&got)
            ));
        }
    }
    allowed.sort();
    Sweep {
        listed: commands.len(),
        mismatches,
        allowed,
    }
}

impl Sweep {
    /// Fails, naming `what` was locked, unless every reply was the server's and only the
    /// commands Redis lets through ran: besides AUTH and RESET, DEBUG's refusal and EXEC's
    /// EXECABORT come before the check, and HELLO's own NOAUTH text starts with NOAUTH.
    #[track_caller]
    pub fn assert_as_redis(&self, what: &str) {
        assert!(self.listed > 150, "COMMAND lists the fake's commands");
        assert!(
            self.mismatches.is_empty(),
            "{what}\n{}",
            self.mismatches.join("\n")
        );
        assert_eq!(self.allowed, ["auth", "debug", "exec", "reset"], "{what}");
    }
}

/// A request for `name` with as many arguments as its arity asks, so that it reaches the
/// authentication check (Redis checks the arity first, and a container command's subcommand:
/// those get `HELP`).
fn request_for(name: &[u8], arity: i64, container: bool) -> Vec<Bytes> {
    let argc = arity.unsigned_abs().max(1) as usize;
    let mut argv = vec![Bytes::copy_from_slice(name)];
    if container {
        argv.push(Bytes::from_static(b"help"));
    }
    argv.resize(argc.max(argv.len()), Bytes::from_static(b"x"));
    argv
}
