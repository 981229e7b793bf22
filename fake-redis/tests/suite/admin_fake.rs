//! The `FAKE.*` admin commands as a client's pipeline meets them: inside `MULTI` they queue and
//! run in order at `EXEC` (redis-py's default pipeline is a transaction), and `FAKE.HELP` lists
//! them. Connections are in-memory pipes on tokio's paused clock; the server's clock is virtual.

use bytes::BytesMut;
use fake_redis::resp::ReplyParser;
use fake_redis::server::{ClockChoice, Server, ServerConfig};
use fake_redis::{DEFAULT_EPOCH_MS, Frame};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// One connection to `server` and what it has read but not parsed yet.
struct Conn {
    io: DuplexStream,
    parser: ReplyParser,
    buf: BytesMut,
}

impl Conn {
    fn open(server: &Server) -> Conn {
        let (io, server_side) = tokio::io::duplex(1 << 16);
        let server = server.clone();
        tokio::spawn(async move { server.serve_connection(server_side).await });
        Conn {
            io,
            parser: ReplyParser::new(),
            buf: BytesMut::new(),
        }
    }

    /// Sends `args` as one request and returns the reply.
    async fn call(&mut self, args: &[&str]) -> Frame {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        self.io.write_all(&out).await.expect("the pipe is open");
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(frame) = self.parser.parse(&mut self.buf).expect("valid RESP") {
                return frame;
            }
            let read = tokio::time::timeout(Duration::from_secs(1), self.io.read(&mut chunk));
            match read.await {
                Ok(Ok(n)) if n > 0 => self.buf.extend_from_slice(&chunk[..n]),
                other => panic!("no reply to {args:?}: {other:?}"),
            }
        }
    }
}

fn virtual_server() -> Server {
    Server::new(&ServerConfig {
        clock: ClockChoice::Virtual {
            epoch_ms: DEFAULT_EPOCH_MS,
        },
        ..ServerConfig::default()
    })
}

fn queued() -> Frame {
    Frame::simple("QUEUED")
}

#[tokio::test(start_paused = true)]
async fn fake_commands_queue_in_multi_and_run_in_order_at_exec() {
    let server = virtual_server();
    let mut c = Conn::open(&server);
    assert_eq!(c.call(&["MULTI"]).await, Frame::OK);
    assert_eq!(c.call(&["SET", "k", "v", "PX", "1000"]).await, queued());
    assert_eq!(c.call(&["FAKE.TIME"]).await, queued());
    assert_eq!(c.call(&["FAKE.ADVANCE", "1500"]).await, queued());
    assert_eq!(c.call(&["FAKE.TIME"]).await, queued());
    // The transaction's commands keep its frozen time: the key is still there inside it.
    assert_eq!(c.call(&["PTTL", "k"]).await, queued());
    assert_eq!(c.call(&["FAKE.NODE", "7"]).await, queued());
    assert_eq!(
        c.call(&["EXEC"]).await,
        Frame::Array(vec![
            Frame::OK,
            Frame::Integer(DEFAULT_EPOCH_MS),
            Frame::Integer(DEFAULT_EPOCH_MS + 1500),
            Frame::Integer(DEFAULT_EPOCH_MS + 1500),
            Frame::Integer(1000),
            Frame::OK,
        ])
    );
    // After it, the clock has moved and the key has expired.
    assert_eq!(c.call(&["EXISTS", "k"]).await, Frame::Integer(0));
    assert_eq!(c.call(&["FAKE.NODE"]).await, Frame::Integer(7));
    assert_eq!(
        c.call(&["FAKE.TIME"]).await,
        Frame::Integer(DEFAULT_EPOCH_MS + 1500)
    );
}

#[tokio::test(start_paused = true)]
async fn a_bad_fake_command_in_multi_aborts_the_transaction_as_redis_does() {
    let server = virtual_server();
    let mut c = Conn::open(&server);
    assert_eq!(c.call(&["MULTI"]).await, Frame::OK);
    assert_eq!(
        c.call(&["FAKE.ADVANCE"]).await,
        Frame::error("ERR wrong number of arguments for 'fake.advance' command")
    );
    assert_eq!(c.call(&["SET", "k", "v"]).await, queued());
    assert_eq!(
        c.call(&["EXEC"]).await,
        Frame::error("EXECABORT Transaction discarded because of previous errors.")
    );
    assert_eq!(c.call(&["EXISTS", "k"]).await, Frame::Integer(0));
    // A FAKE.* error at run time fails only itself.
    assert_eq!(c.call(&["MULTI"]).await, Frame::OK);
    assert_eq!(c.call(&["FAKE.ADVANCE", "-1"]).await, queued());
    assert_eq!(c.call(&["SET", "k", "v"]).await, queued());
    let Frame::Array(replies) = c.call(&["EXEC"]).await else {
        panic!("EXEC replies an array");
    };
    assert!(replies[0].error_text().is_some(), "{replies:?}");
    assert_eq!(replies[1], Frame::OK);
}

#[tokio::test(start_paused = true)]
async fn a_discarded_transaction_runs_none_of_its_fake_commands() {
    let server = virtual_server();
    let mut c = Conn::open(&server);
    assert_eq!(c.call(&["MULTI"]).await, Frame::OK);
    assert_eq!(c.call(&["FAKE.ADVANCE", "1000"]).await, queued());
    assert_eq!(c.call(&["DISCARD"]).await, Frame::OK);
    assert_eq!(
        c.call(&["FAKE.TIME"]).await,
        Frame::Integer(DEFAULT_EPOCH_MS)
    );
}

#[tokio::test(start_paused = true)]
async fn fake_help_lists_every_admin_command_with_its_arguments() {
    let server = virtual_server();
    let mut c = Conn::open(&server);
    let Frame::Array(lines) = c.call(&["FAKE.HELP"]).await else {
        panic!("FAKE.HELP replies an array");
    };
    let text: Vec<String> = lines
        .iter()
        .map(|l| match l {
            Frame::Simple(s) => s.to_string(),
            other => panic!("a help line is a status: {other:?}"),
        })
        .collect();
    for usage in [
        "AUTH <admin-password>",
        "TIME",
        "ADVANCE <ms>",
        "NODE [<node>]",
        "EVENTS",
        "FAULT CLEAR",
        "FAULT CRASH <node> [<when>]",
        "FAULT RESTART [<when>]",
        "FAULT FAILOVER <lag-ms> [<when>]",
        "FAULT CLOCK-JUMP <delta-ms> [<when>]",
        "HELP",
    ] {
        assert!(text.iter().any(|l| l == usage), "{usage} missing: {text:?}");
    }
    for kind in fake_redis::server::admin::FAULT_KINDS {
        assert!(
            text.iter()
                .any(|l| l.to_ascii_lowercase().contains(&kind.to_string())),
            "{kind} missing"
        );
    }
    assert_eq!(
        c.call(&["FAKE.HELP", "x"]).await,
        Frame::error("ERR wrong number of arguments for 'fake.help' command")
    );
}
